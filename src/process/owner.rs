#![warn(missing_docs)]
//! Who a process group belongs to: a scope (a run, or a suite for suite-scoped harness commands)
//! and a role within it. The registry and the on-disk ledger are keyed by this, never by matching
//! human-readable labels; the label shown in messages is derived from it ([`Owner`]'s `Display`).

use crate::model::ids::{RunId, StepId, SuiteId};
use std::fmt;

/// The run or suite whose teardown is responsible for a group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    /// One run of a root test.
    Run(RunId),
    /// Suite-scoped harness commands (`scope = "suite"`), started once for every run.
    Suite(SuiteId),
}

impl Scope {
    /// A run's scope.
    pub fn run(id: impl Into<RunId>) -> Self {
        Self::Run(id.into())
    }
    /// A suite's scope.
    pub fn suite(id: impl Into<SuiteId>) -> Self {
        Self::Suite(id.into())
    }
    /// The run id, for a run scope.
    pub fn run_id(&self) -> Option<&RunId> {
        match self {
            Self::Run(id) => Some(id),
            Self::Suite(_) => None,
        }
    }
    /// The id text, run or suite.
    pub fn id(&self) -> &str {
        match self {
            Self::Run(id) => id.as_str(),
            Self::Suite(id) => id.as_str(),
        }
    }
}

/// What the group is for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Role {
    /// A harness command, by name.
    Command(String),
    /// One attempt of a readiness `exec` probe (its command line).
    ExecProbe(String),
    /// A `[checkpoint]` save or restore (`checkpoint save`).
    Checkpoint(String),
    /// The agent process of a provider (`claude-code`, `command`).
    Agent(String),
    /// One command of a `shell` provider step.
    ShellStep(StepId),
    /// A session of the agent console (`exec_command`), by its session id.
    Console(u32),
    /// The session's browser (`[browser]`).
    Browser,
    /// Anything else (tests).
    Other(String),
}

/// A process group's owner: registry key, ledger entry and message label in one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner {
    /// The run or suite whose teardown answers for the group.
    pub scope: Scope,
    /// What the group is for.
    pub role: Role,
}

impl Owner {
    /// `role` within `scope`.
    pub fn new(scope: Scope, role: Role) -> Self {
        Self { scope, role }
    }
    /// The run this group belongs to, if run-scoped.
    pub fn run_id(&self) -> Option<&RunId> {
        self.scope.run_id()
    }
}

impl fmt::Display for Owner {
    /// The labels the registry used to store: `command server (0190…)`, `agent claude-code (run
    /// 0190…)`, `shell step 2 (run 0190…)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = self.scope.id();
        match &self.role {
            Role::Command(name) => write!(f, "command {name} ({id})"),
            Role::ExecProbe(cmd) => write!(f, "exec probe `{cmd}` ({id})"),
            Role::Checkpoint(what) => write!(f, "{what} (run {id})"),
            Role::Agent(provider) => write!(f, "agent {provider} (run {id})"),
            Role::ShellStep(step) => write!(f, "shell step {step} (run {id})"),
            Role::Console(session) => write!(f, "console session {session} (run {id})"),
            Role::Browser => write!(f, "browser (run {id})"),
            Role::Other(what) => write!(f, "{what} ({id})"),
        }
    }
}
