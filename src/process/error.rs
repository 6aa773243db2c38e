//! Why a harness could not be brought up: each names the command (and probe) and what was last
//! seen, because that is all the user gets to debug a red run.

use super::exit::ExitStatus;
use super::spawn::SpawnError;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, thiserror::Error)]
pub enum HarnessError {
    #[error("command `{command}` depends on `{dependency}`, which is not a harness command")]
    UnknownDependency { command: String, dependency: String },
    #[error("harness commands depend on each other in a cycle: {}", chain.join(" -> "))]
    DependencyCycle { chain: Vec<String> },
    #[error("two harness commands are named `{0}`")]
    DuplicateName(String),
    #[error("{0}")]
    Spawn(String),
    #[error("setup command `{command}` failed with {status}; last lines of {}:\n{tail}", log.display())]
    SetupFailed {
        command: String,
        status: ExitStatus,
        log: PathBuf,
        tail: String,
    },
    #[error("setup command `{command}` did not finish within {timeout:?}{why} and was stopped; last lines of {}:\n{tail}", log.display())]
    SetupTimedOut {
        command: String,
        timeout: Duration,
        /// What the timeout was and what may have held the command: `` (the default for
        /// short-lived commands; set `timeout_secs`)``, `` — it may be waiting for input``.
        why: String,
        log: PathBuf,
        tail: String,
    },
    #[error("readiness of `{command}` failed: probe {probe} not ready after {timeout:?} (raise it with the command's `readiness_timeout_secs`, or `timeout_secs` inside `readiness = {{...}}`); last seen: {last_seen}")]
    Readiness {
        command: String,
        probe: String,
        timeout: Duration,
        last_seen: String,
    },
    #[error("readiness of `{command}`: probe {probe} is invalid: {reason}")]
    InvalidProbe {
        command: String,
        probe: String,
        reason: String,
    },
    #[error("command `{command}` died during startup: {reason}; last lines of {}:\n{tail}", log.display())]
    DiedDuringStartup {
        command: String,
        reason: String,
        log: PathBuf,
        tail: String,
    },
    #[error("harness actor failure ({what}): {reason}")]
    Actor { what: String, reason: String },
    #[error("harness startup was interrupted (command `{command}` still running)")]
    Interrupted { command: String },
}

impl From<SpawnError> for HarnessError {
    fn from(e: SpawnError) -> Self {
        Self::Spawn(e.to_string())
    }
}

impl HarnessError {
    /// The command the error is about, when there is one.
    pub fn command(&self) -> Option<&str> {
        match self {
            Self::UnknownDependency { command, .. }
            | Self::SetupFailed { command, .. }
            | Self::SetupTimedOut { command, .. }
            | Self::Readiness { command, .. }
            | Self::InvalidProbe { command, .. }
            | Self::DiedDuringStartup { command, .. }
            | Self::Interrupted { command } => Some(command),
            Self::DuplicateName(name) => Some(name),
            _ => None,
        }
    }
}
