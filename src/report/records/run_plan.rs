//! The plan of one run, handed over by its session before anything is launched: the steps,
//! commands and effective config a [`crate::report::records::run_record::RunRecord`] starts from (docs/reports.md).

use crate::model::ids::{RunId, SessionId, StepId, SuiteId};
use crate::model::provider::ProviderName;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::outcome::TeardownState;
use crate::report::records::events::{Event, EventKind, Provenance, SetupState};

/// Which run this is: the fields a plan and its record (run.json) share, in the order both write
/// them (flattened, so the JSON is as before). Plain comments on the fields, not doc comments:
/// run.json's schema (`schemas/run.schema.json`) describes them as before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunIdentity {
    pub run_id: RunId,
    pub session_id: SessionId,
    pub suite_id: SuiteId,
    // As the user names it: relative to the project root.
    pub test_file: String,
    pub test_name: String,
    /// The test is quarantined: run and reported, never deciding the exit code (docs/ci.md).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quarantined: bool,
    pub project_root: String,
    pub provider: ProviderName,
    // `.bugatti/runs/<run_id>`, absolute.
    pub run_dir: String,
    // 1 for the first attempt, 2 for the first retry, ...
    pub attempt: u32,
    /// With `--repeat N`: which of the N runs of the test this is (1-based); 1 otherwise.
    #[serde(default = "first_repeat", skip_serializing_if = "is_first_repeat")]
    pub repeat: u32,
    /// 1 + the test's retries; 0 in records written before it was kept.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub max_attempts: u32,
    /// A retry: how long it waited after the failure before it (`retries.delay`), in ms.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub retry_wait_ms: u64,
    pub started_at: DateTime<Utc>,
    /// The W3C `traceparent` the supervisor was started under (`TRACEPARENT`, docs/reports.md,
    /// "OpenTelemetry"): the suite's spans join that trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

impl RunIdentity {
    /// The run's first event (`run_started`): the one way it is made, for events.jsonl and the
    /// console alike.
    pub fn started_event(&self) -> Event {
        Event {
            timestamp: self.started_at,
            elapsed_ms: 0,
            kind: EventKind::RunStarted {
                run_id: self.run_id.clone(),
                session_id: self.session_id.clone(),
                test_file: self.test_file.clone(),
                test_name: self.test_name.clone(),
                attempt: self.attempt,
                provider: self.provider.clone(),
                run_dir: self.run_dir.clone(),
                retry_wait_ms: self.retry_wait_ms,
            },
        }
    }
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn first_repeat() -> u32 {
    1
}

fn is_first_repeat(n: &u32) -> bool {
    *n <= 1
}

/// What a session knows about its run before it launches anything.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunPlan {
    #[serde(flatten)]
    pub identity: RunIdentity,
    pub skipped_commands: Vec<String>,
    pub steps: Vec<PlanEntry>,
    pub commands: Vec<PlannedCommand>,
    /// The suite-scoped commands as they stand when the run starts (shared by every run; their
    /// `log` is relative to the run directory too, `../../suites/<suite_id>/logs/<name>.log`).
    #[serde(default)]
    pub suite_commands: Vec<CommandRecord>,
    pub effective_config: Vec<ConfigRow>,
}

/// One step of the plan as run.json records it (the planned step itself is
/// [`crate::model::plan::PlannedStep`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanEntry {
    pub step_id: StepId,
    #[serde(flatten)]
    pub provenance: Provenance,
    /// The instruction as sent to the agent (after substitution).
    pub instruction: String,
    /// The step's timeout in seconds, as the loader resolved it (absent in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedCommand {
    pub name: String,
    /// `short_lived` | `long_lived`.
    pub kind: String,
    /// The command's log file, relative to the run directory (`logs/<name>.log`).
    pub log: String,
}

/// One effective configuration value and the layer it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConfigRow {
    pub key: String,
    pub value: String,
    /// `default` | `global` | `project` | `env` | `test` | `cli` (or a file path).
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandRecord {
    pub name: String,
    pub kind: String,
    /// `test` (the run's own) | `suite` (started once, shared by every run of the suite).
    #[serde(default = "test_scope")]
    pub scope: String,
    pub status: CommandStatus,
    pub exit_code: Option<i32>,
    pub restarts: Vec<Restart>,
    pub log: String,
    pub teardown: Option<TeardownState>,
    /// Why it failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    /// The readiness probe that answered.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ready_probe: Option<String>,
    /// Bytes of output past `[supervisor] max_log_bytes`: the log holds the head, and only a
    /// rolling tail of the rest is kept (`logs/<name>.tail.log`, `.tail.log.1`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub log_truncated_bytes: Option<u64>,
}

/// What the record knows about one harness command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CommandStatus {
    Pending,
    Running,
    Ready,
    Skipped,
    Exited,
    Failed,
    /// A short-lived command stopped at its `timeout_secs`.
    TimedOut,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Restart {
    pub attempt: u32,
    pub exit_status: String,
    pub at: DateTime<Utc>,
}

fn test_scope() -> String {
    "test".to_string()
}

impl CommandRecord {
    /// A command not started yet.
    pub fn pending(name: &str, kind: &str, scope: &str, log: String) -> Self {
        Self {
            name: name.to_string(),
            kind: kind.to_string(),
            scope: scope.to_string(),
            status: CommandStatus::Pending,
            exit_code: None,
            restarts: Vec::new(),
            log,
            teardown: None,
            error: None,
            ready_probe: None,
            log_truncated_bytes: None,
        }
    }

    /// Brings the command up to date with one of its setup statuses (`at`: when it happened).
    pub fn apply_setup(&mut self, state: &SetupState, at: DateTime<Utc>) {
        match state {
            SetupState::Started => {
                // A setup retried with fresh ports starts its commands again: the first try's
                // failure is in `port_retries`, not this command's state.
                self.status = CommandStatus::Running;
                self.error = None;
                self.exit_code = None;
            }
            SetupState::Ready { probe } => {
                // A skipped command's probe still runs; it stays `skipped`.
                if self.status != CommandStatus::Skipped {
                    self.status = CommandStatus::Ready;
                }
                self.ready_probe = Some(probe.clone());
            }
            SetupState::Skipped => self.status = CommandStatus::Skipped,
            SetupState::Exited { exit_code } => {
                self.status = CommandStatus::Exited;
                self.exit_code = *exit_code;
            }
            SetupState::Restarted {
                attempt,
                exit_status,
            } => {
                self.status = CommandStatus::Running;
                self.restarts.push(Restart {
                    attempt: *attempt,
                    exit_status: exit_status.clone(),
                    at,
                });
            }
            SetupState::Failed { reason, exit_code } => {
                self.status = CommandStatus::Failed;
                self.error = Some(reason.clone());
                if exit_code.is_some() {
                    self.exit_code = *exit_code;
                }
            }
            SetupState::TimedOut { reason } => {
                self.status = CommandStatus::TimedOut;
                self.error = Some(reason.clone());
            }
        }
    }
}
