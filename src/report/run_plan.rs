//! The plan of one run, handed over by its session before anything is launched: the steps,
//! commands and effective config a [`super::run_record::RunRecord`] starts from (docs/reports.md).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::report::events::Provenance;
use crate::report::run_record::CommandRecord;

/// Which run this is: the fields a plan and its record (run.json) share, in the order both write
/// them (flattened, so the JSON is as before). Plain comments on the fields, not doc comments:
/// run.json's schema (`schemas/run.schema.json`) describes them as before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunIdentity {
    pub run_id: String,
    pub session_id: String,
    pub suite_id: String,
    // As the user names it: relative to the project root.
    pub test_file: String,
    pub test_name: String,
    /// The test is quarantined: run and reported, never deciding the exit code (docs/ci.md).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quarantined: bool,
    pub project_root: String,
    pub provider: String,
    // `.bugatti/runs/<run_id>`, absolute.
    pub run_dir: String,
    // 1 for the first attempt, 2 for the first retry, ...
    pub attempt: u32,
    /// With `--repeat N`: which of the N runs of the test this is (1-based); 1 otherwise.
    #[serde(default = "first_repeat", skip_serializing_if = "is_first_repeat")]
    pub repeat: u32,
    pub started_at: DateTime<Utc>,
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
    pub step_id: u32,
    #[serde(flatten)]
    pub provenance: Provenance,
    /// The instruction as sent to the agent (after substitution).
    pub instruction: String,
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
