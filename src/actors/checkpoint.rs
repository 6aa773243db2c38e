//! `[checkpoint]` save and restore for a session (docs/checkpoints.md "Checkpoints").
//!
//! The command runs like a short-lived harness command ([`run_once`]): `sh -c` in the project root,
//! in its own process group, with the session's environment plus `BUGATTI_CHECKPOINT_ID` and
//! `BUGATTI_CHECKPOINT_PATH` (also usable as `${...}` in the command), bounded by
//! `[checkpoint] timeout_secs`; its output goes to `logs/checkpoint.log` of the run, each save or
//! restore under a header line. A save first removes `<NAME>.saved.json` beside the checkpoint's
//! folder, creates the folder, and writes the file again only when the command exited 0, so a
//! failed save can never be resumed from.

use crate::actors::session_plan::SessionVars;
use crate::model::checkpoint::CheckpointPaths;
use crate::model::ids::RunId;
use crate::model::ids::StepId;
use crate::model::layers::CheckpointConfig;
use crate::model::substitute::substitute;
use crate::process::oneshot::{run_once, OneShotEnd};
use crate::process::owner::{Owner, Role, Scope};
use crate::process::spec::{CommandKind, CommandSpec};
use crate::report::records::events::{millis, CheckpointAction, CheckpointState, EventKind};
use std::future::Future;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::model::artifacts::{RunPaths, CHECKPOINT_LOG};

/// Lines of the command's output quoted when it fails.
const TAIL_LINES: usize = 20;

/// One save or restore to run.
pub struct CheckpointJob<'a> {
    pub config: &'a CheckpointConfig,
    pub action: CheckpointAction,
    pub name: &'a str,
    /// The step whose pass triggered a save.
    pub step_id: Option<StepId>,
    pub paths: CheckpointPaths,
    pub project_root: &'a Path,
    pub run_dir: &'a Path,
    pub run_id: &'a RunId,
    pub test_file: &'a Path,
    pub vars: &'a SessionVars,
    /// `[supervisor] max_log_bytes` for `logs/checkpoint.log`, capped like every log.
    pub max_log_bytes: u64,
}

/// Why a checkpoint command did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointFailure<R> {
    /// It could not run or did not succeed: the run ends as `error` with this message.
    Failed(String),
    /// The session was asked to stop while it ran.
    Stopped(R),
}

impl CheckpointJob<'_> {
    fn what(&self) -> String {
        format!("checkpoint {} `{}`", self.action.as_str(), self.name)
    }

    fn command(&self) -> &str {
        match self.action {
            CheckpointAction::Save => &self.config.save,
            CheckpointAction::Restore => &self.config.restore,
        }
    }

    /// Runs the job, reporting through `emit`; `stop` resolves when the session must stop.
    pub async fn run<R>(
        &self,
        emit: impl Fn(EventKind),
        stop: impl Future<Output = R>,
    ) -> Result<(), CheckpointFailure<R>> {
        let event = |state: CheckpointState| EventKind::Checkpoint {
            name: self.name.to_string(),
            action: self.action,
            step_id: self.step_id,
            path: self.paths.dir.display().to_string(),
            log: CHECKPOINT_LOG.to_string(),
            state,
        };
        let failed = |reason: String, exit_code: Option<i32>, duration: Duration| {
            emit(event(CheckpointState::Failed {
                reason: reason.clone(),
                exit_code,
                duration_ms: millis(duration),
            }));
            CheckpointFailure::Failed(format!("{} failed: {reason}", self.what()))
        };
        let spec = match self.prepare() {
            Ok(spec) => spec,
            Err(reason) => return Err(failed(reason.to_string(), None, Duration::ZERO)),
        };
        let log_start = std::fs::metadata(&spec.log_path).map_or(0, |m| m.len());
        emit(event(CheckpointState::Started));
        let owner = Owner::new(Scope::run(self.run_id), Role::Checkpoint(self.what()));
        let done = match run_once(&spec, owner, stop).await {
            Ok(done) => done,
            Err(e) => return Err(failed(e.to_string(), None, Duration::ZERO)),
        };
        // The last line on the message's first line (what a console shows), then the tail.
        let tail = || {
            let tail = output_tail(&spec.log_path, log_start, TAIL_LINES);
            match tail.lines().last() {
                None => format!("it printed nothing (log: {CHECKPOINT_LOG})"),
                Some(last) => format!(
                    "its last line: {}; last lines of {CHECKPOINT_LOG}:\n{tail}",
                    last.trim()
                ),
            }
        };
        match done.end {
            OneShotEnd::Exited(status) if status.success() => {
                if self.action == CheckpointAction::Save {
                    if let Err(e) = self.mark_saved() {
                        return Err(failed(e.to_string(), Some(0), done.duration));
                    }
                }
                emit(event(CheckpointState::Done {
                    duration_ms: millis(done.duration),
                }));
                Ok(())
            }
            OneShotEnd::Exited(status) => Err(failed(
                format!("`{}` exited with {status}; {}", spec.cmd, tail()),
                status.code(),
                done.duration,
            )),
            OneShotEnd::TimedOut(limit) => Err(failed(
                format!(
                    "`{}` did not finish within [checkpoint] timeout_secs = {} and was stopped; {}",
                    spec.cmd,
                    limit.as_secs(),
                    tail()
                ),
                None,
                done.duration,
            )),
            OneShotEnd::Stopped(reason) => {
                emit(event(CheckpointState::Failed {
                    reason: "stopped: the run was interrupted".into(),
                    exit_code: None,
                    duration_ms: millis(done.duration),
                }));
                Err(CheckpointFailure::Stopped(reason))
            }
        }
    }

    /// The folder, the saved marker, the substituted command, the log header.
    fn prepare(&self) -> Result<CommandSpec, CheckpointFileError> {
        let dir = &self.paths.dir;
        match self.action {
            CheckpointAction::Save => {
                match std::fs::remove_file(&self.paths.saved) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(source) => {
                        return Err(CheckpointFileError::Remove {
                            path: self.paths.saved.clone(),
                            source,
                        })
                    }
                }
                std::fs::create_dir_all(dir).map_err(|source| CheckpointFileError::Create {
                    path: dir.clone(),
                    source,
                })?;
            }
            CheckpointAction::Restore => {
                if !dir.is_dir() {
                    return Err(CheckpointFileError::Gone(dir.clone()));
                }
            }
        }
        let path = dir.display().to_string();
        let mut vars = self.vars.vars.clone();
        vars.insert("BUGATTI_CHECKPOINT_ID".into(), self.name.to_string());
        vars.insert("BUGATTI_CHECKPOINT_PATH".into(), path.clone());
        let field = format!("[checkpoint] {}", self.action.as_str());
        let cmd = substitute(self.command(), &vars)
            .map_err(|source| CheckpointFileError::Substitute { field, source })?;
        let log_path = RunPaths::new(self.run_dir).file(CHECKPOINT_LOG);
        let mut spec = CommandSpec::new(
            "checkpoint",
            CommandKind::ShortLived,
            cmd,
            self.project_root,
            &log_path,
        );
        spec.env = self.vars.env.clone();
        spec.env
            .push(("BUGATTI_CHECKPOINT_ID".into(), self.name.to_string()));
        spec.env.push(("BUGATTI_CHECKPOINT_PATH".into(), path));
        spec.timeout = Some(Duration::from_secs(self.config.timeout_secs));
        spec.secrets = Arc::clone(&self.vars.secrets);
        spec.max_log_bytes = self.max_log_bytes;
        let header = match self.step_id {
            Some(step) => format!("--- {} (after step {step}) ---\n", self.what()),
            None => format!("--- {} ---\n", self.what()),
        };
        if let Some(parent) = log_path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| CheckpointFileError::Create {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .and_then(|mut f| f.write_all(header.as_bytes()))
            .map_err(|source| CheckpointFileError::Write {
                path: log_path.clone(),
                source,
            })?;
        Ok(spec)
    }

    /// `<NAME>.saved.json`: which run saved it, when, after which step.
    fn mark_saved(&self) -> Result<(), CheckpointFileError> {
        let record = serde_json::json!({
            "checkpoint": self.name,
            "test_file": self.test_file.display().to_string(),
            "run_id": self.run_id,
            "step_id": self.step_id,
            "saved_at": chrono::Utc::now(),
            "path": self.paths.dir.display().to_string(),
        });
        let text = format!("{record:#}\n");
        std::fs::write(&self.paths.saved, text).map_err(|source| CheckpointFileError::Write {
            path: self.paths.saved.clone(),
            source,
        })
    }
}

/// Why a checkpoint's files could not be prepared or marked saved (its event's reason).
#[derive(Debug, thiserror::Error)]
enum CheckpointFileError {
    #[error("cannot remove {}: {source}", path.display())]
    Remove {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create {}: {source}", path.display())]
    Create {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{} does not exist any more", .0.display())]
    Gone(std::path::PathBuf),
    #[error("{field}: {source}")]
    Substitute {
        field: String,
        source: crate::model::substitute::SubstError,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// The last `max_lines` lines written to `path` after byte `from` (at most 8 KiB of them).
fn output_tail(path: &Path, from: u64, max_lines: usize) -> String {
    const WINDOW: u64 = 8 * 1024;
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let start = from.max(len.saturating_sub(WINDOW));
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(start)).is_err() || file.read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    // Cut inside the output: its first line is partial.
    let partial = usize::from(start > from);
    let lines: Vec<&str> = text.lines().skip(partial).collect();
    let skip = lines.len().saturating_sub(max_lines);
    lines[skip..].join("\n")
}
