//! The agent's transcripts under `<run_dir>/transcripts/`: bytes written as they arrive, redacted,
//! through a buffered writer, capped by `[supervisor] max_log_bytes` like every log (the head,
//! then a rolling tail: see [`crate::process::log_limit`]), and flushed with each write (a
//! SIGKILLed supervisor's transcripts hold the step in progress). Shared behind a mutex so a
//! drain task can keep writing while the agent is torn down; the lock is uncontended in the
//! normal case (one reader per stream).

use super::AgentError;
use crate::model::redact::{Secrets, StreamRedactor};
use crate::process::log_limit::{LimitedLog, LogCut, DEFAULT_MAX_LOG_BYTES};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug)]
pub struct Transcript {
    path: PathBuf,
    out: LimitedLog,
    redactor: StreamRedactor,
    /// The first write error: reported once by [`Transcript::take_error`], never fatal to a step.
    error: Option<std::io::Error>,
}

impl Transcript {
    /// A transcript capped at the default `max_log_bytes`.
    pub fn create(path: &Path, secrets: Arc<Secrets>) -> Result<Self, AgentError> {
        Self::create_capped(path, secrets, DEFAULT_MAX_LOG_BYTES)
    }

    /// A transcript that keeps `max_bytes` of head, then a rolling tail.
    pub fn create_capped(
        path: &Path,
        secrets: Arc<Secrets>,
        max_bytes: u64,
    ) -> Result<Self, AgentError> {
        let fail = |source| AgentError::Transcript {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let file = File::create(path).map_err(fail)?;
        Ok(Self {
            path: path.to_path_buf(),
            out: LimitedLog::new(file, path, max_bytes, Arc::new(LogCut::default())),
            redactor: StreamRedactor::new(secrets),
            error: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `bytes` (redacted) and flushes them at once: a supervisor SIGKILLed mid-step
    /// leaves the step's stream so far on disk, not in a buffer. The buffer only joins the
    /// pieces of one write (a line and its newline).
    pub fn write(&mut self, bytes: &[u8]) {
        let safe = self.redactor.push(bytes);
        if let Err(e) = self.out.write_all(&safe) {
            self.error.get_or_insert(e);
        }
        self.flush();
    }

    pub fn flush(&mut self) {
        if let Err(e) = self.out.flush() {
            self.error.get_or_insert(e);
        }
    }

    /// Writes whatever the redactor held back and flushes: the end of the stream.
    pub fn finish(&mut self) {
        let tail = self.redactor.finish();
        if let Err(e) = self.out.write_all(&tail) {
            self.error.get_or_insert(e);
        }
        self.flush();
    }

    pub fn take_error(&mut self) -> Option<std::io::Error> {
        self.error.take()
    }
}

/// A transcript several tasks write to.
#[derive(Debug, Clone)]
pub struct SharedTranscript(Arc<Mutex<Transcript>>);

impl SharedTranscript {
    pub fn create(path: &Path, secrets: Arc<Secrets>) -> Result<Self, AgentError> {
        Self::create_capped(path, secrets, DEFAULT_MAX_LOG_BYTES)
    }

    /// A shared transcript that keeps `max_bytes` of head, then a rolling tail.
    pub fn create_capped(
        path: &Path,
        secrets: Arc<Secrets>,
        max_bytes: u64,
    ) -> Result<Self, AgentError> {
        Ok(Self(Arc::new(Mutex::new(Transcript::create_capped(
            path, secrets, max_bytes,
        )?))))
    }

    pub fn lock(&self) -> MutexGuard<'_, Transcript> {
        // A writer that panicked mid-write leaves bytes, not broken invariants.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn write(&self, bytes: &[u8]) {
        self.lock().write(bytes);
    }

    pub fn flush(&self) {
        self.lock().flush();
    }

    pub fn finish(&self) {
        self.lock().finish();
    }
}

/// The three transcripts of a JSON-streaming agent CLI (claude-code, codex): its whole output as
/// read (`agent.log`), its JSON events (`agent.jsonl`) and its stderr (`agent.stderr.log`).
pub struct AgentTranscripts {
    pub log: SharedTranscript,
    pub jsonl: SharedTranscript,
    pub stderr: SharedTranscript,
}

impl AgentTranscripts {
    /// Creates them in the session's `transcripts/`, secrets redacted.
    pub fn create(facts: &super::SessionFacts) -> Result<Self, AgentError> {
        let paths = facts.run_paths();
        let open = |path: std::path::PathBuf| {
            SharedTranscript::create_capped(&path, facts.secrets.clone(), facts.max_log_bytes)
        };
        Ok(Self {
            log: open(paths.agent_log())?,
            jsonl: open(paths.agent_jsonl())?,
            stderr: open(paths.agent_stderr_log())?,
        })
    }
}
