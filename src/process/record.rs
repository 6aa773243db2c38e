//! What the session keeps of each harness command once it is torn down: the `commands` entries of
//! run.json (name, kind, status, exit code, restarts, log, teardown).

use super::exit::ExitStatus;
use super::spec::CommandKind;
use crate::model::outcome::TeardownState;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HarnessStatus {
    /// `--skip-cmd`: never launched.
    Skipped,
    /// Never got to run (an earlier command failed, or startup was abandoned).
    NotStarted,
    /// Short-lived, still running when torn down (startup abandoned).
    Interrupted,
    /// Short-lived, exit code 0.
    Succeeded,
    /// Short-lived, non-zero exit or killed.
    Failed,
    /// Short-lived, ran past its timeout and was stopped.
    TimedOut,
    /// Long-lived, running until teardown stopped it.
    Stopped,
    /// Long-lived, exited on its own with no restart left (or not allowed one).
    Exited,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestartRecord {
    /// 1-based restart number over the command's life.
    pub attempt: u32,
    pub at: DateTime<Utc>,
    /// How the previous process ended.
    pub after: ExitStatus,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HarnessRecord {
    pub name: String,
    pub kind: CommandKind,
    pub status: HarnessStatus,
    /// The last process's exit code (none when killed by a signal or never started).
    pub exit_code: Option<i32>,
    /// The last process's exit, in words' form.
    pub exit: Option<ExitStatus>,
    pub restarts: Vec<RestartRecord>,
    pub log: PathBuf,
    /// None for skipped or never-started commands.
    pub teardown: Option<TeardownState>,
    /// Pids found alive after their group was gone, and killed.
    pub leaked_pids: Vec<i32>,
    pub skipped: bool,
    /// Bytes of output past `[supervisor] max_log_bytes`, kept only as a rolling tail.
    pub log_truncated_bytes: u64,
}

impl HarnessRecord {
    pub fn unstarted(spec: &super::spec::CommandSpec) -> Self {
        Self {
            name: spec.name.clone(),
            kind: spec.kind,
            status: if spec.skipped {
                HarnessStatus::Skipped
            } else {
                HarnessStatus::NotStarted
            },
            exit_code: None,
            exit: None,
            restarts: Vec::new(),
            log: spec.log_path.clone(),
            teardown: None,
            leaked_pids: Vec::new(),
            skipped: spec.skipped,
            log_truncated_bytes: 0,
        }
    }
}

/// The worse of two teardown results (leaked > killed > clean).
pub fn worse(a: Option<TeardownState>, b: Option<TeardownState>) -> Option<TeardownState> {
    fn rank(s: Option<TeardownState>) -> u8 {
        match s {
            None => 0,
            Some(TeardownState::Clean) => 1,
            Some(TeardownState::Killed) => 2,
            Some(TeardownState::Leaked) => 3,
        }
    }
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}
