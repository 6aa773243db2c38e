//! `transcripts/console.jsonl`: one line per console call — tool, arguments, duration, exit code,
//! bytes — secrets redacted. Kept in memory too (a count per tool and the calls themselves), so
//! the session can put each step's calls in its report.

use super::Answer;
use crate::report::redact::Secrets;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// When it ended (RFC 3339).
    pub at: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub bytes: u64,
    pub is_error: bool,
}

#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    secrets: Arc<Secrets>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    file: Option<std::fs::File>,
    /// Calls not yet taken by [`Recorder::take_calls`].
    unreported: Vec<CallRecord>,
    failed: bool,
}

impl Recorder {
    pub fn new(path: PathBuf, secrets: Arc<Secrets>) -> Self {
        Self {
            path,
            secrets,
            state: Mutex::new(State::default()),
        }
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn record(
        &self,
        tool: &str,
        arguments: &serde_json::Value,
        took: Duration,
        answer: &Answer,
    ) {
        // Arguments carry what the agent typed: a secret it echoes must not reach the record.
        let arguments = serde_json::from_str(&self.secrets.redact_str(&arguments.to_string()))
            .unwrap_or(serde_json::Value::Null);
        let call = CallRecord {
            at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            tool: tool.to_string(),
            arguments,
            duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            exit_code: answer.exit_code,
            bytes: answer.bytes,
            is_error: answer.is_error,
        };
        let line = match serde_json::to_string(&call) {
            Ok(l) => l,
            Err(_) => return,
        };
        let mut state = self.lock();
        state.unreported.push(call);
        if state.failed {
            return;
        }
        if state.file.is_none() {
            let opened = self
                .path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| {
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&self.path)
                });
            match opened {
                Ok(f) => state.file = Some(f),
                Err(e) => {
                    tracing::warn!("cannot write {}: {e}", self.path.display());
                    state.failed = true;
                    return;
                }
            }
        }
        if let Some(file) = state.file.as_mut() {
            if writeln!(file, "{line}").is_err() {
                state.failed = true;
            }
        }
    }

    /// The calls since the last take (the session reports them with the step they belong to).
    pub fn take_calls(&self) -> Vec<CallRecord> {
        std::mem::take(&mut self.lock().unreported)
    }

    pub fn flush(&self) {
        if let Some(f) = self.lock().file.as_mut() {
            let _ = f.flush();
        }
    }
}
