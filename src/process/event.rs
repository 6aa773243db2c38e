//! What a running harness tells its session, as plain data over a channel the session owns (no
//! dependency on the session's message type). `GaveUp` is the one that fails the session.

use super::exit::ExitStatus;
use chrono::{DateTime, Utc};
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessEvent {
    pub command: String,
    pub at: DateTime<Utc>,
    pub kind: HarnessEventKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HarnessEventKind {
    /// A process was started (pid = its process group).
    Started { pid: i32 },
    /// A short-lived command finished successfully.
    Completed { status: ExitStatus },
    /// A short-lived command exited non-zero: the session fails. `reason` names the command,
    /// the status and the end of its log.
    SetupFailed { status: ExitStatus, reason: String },
    /// A short-lived command outlived its `timeout_secs` and was stopped: the session fails.
    SetupTimedOut { reason: String },
    /// A readiness probe passed (`probe` as in [`super::spec::ProbeSpec::describe`]).
    Ready { probe: String, detail: String },
    /// A long-lived command exited on its own; `restart_in` is set when a restart is scheduled.
    Exited {
        status: ExitStatus,
        restart_in: Option<Duration>,
    },
    /// A new process replaced the one that exited.
    Restarted { attempt: u32, pid: i32 },
    /// Every probe passed again after restart number `attempt`.
    ReadyAgain { attempt: u32 },
    /// No restart left, not allowed one, or readiness failed after a restart: the session fails.
    GaveUp { reason: String },
}

impl HarnessEvent {
    pub fn now(command: impl Into<String>, kind: HarnessEventKind) -> Self {
        Self {
            command: command.into(),
            at: Utc::now(),
            kind,
        }
    }
}

/// One line for the harness log: what happened, in words (no `Debug` dumps).
impl std::fmt::Display for HarnessEventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Started { pid } => write!(f, "started (process group {pid})"),
            Self::Completed { status } => write!(f, "finished: {status}"),
            Self::SetupFailed { reason, .. } => write!(f, "failed: {reason}"),
            Self::SetupTimedOut { reason } => write!(f, "timed out: {reason}"),
            Self::Ready { probe, detail } => write!(f, "ready ({probe}: {detail})"),
            Self::Exited { status, restart_in } => match restart_in {
                Some(delay) => write!(
                    f,
                    "exited: {status}; restarting in {:.1}s",
                    delay.as_secs_f64()
                ),
                None => write!(f, "exited: {status}"),
            },
            Self::Restarted { attempt, pid } => {
                write!(f, "restarted (#{attempt}, process group {pid})")
            }
            Self::ReadyAgain { attempt } => write!(f, "ready again after restart {attempt}"),
            Self::GaveUp { reason } => write!(f, "gave up: {reason}"),
        }
    }
}
