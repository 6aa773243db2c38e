//! The one closed event enum: the contract between the runner (sessions, supervisor) and every
//! reporter (run.json, events.jsonl, report.md, console, suite summary).
//!
//! Each [`Event`] carries a wall-clock timestamp, the time elapsed since its run (or suite)
//! started, and an [`EventKind`]. Reporters match on `EventKind` without a catch-all arm, so a new
//! kind is a compile error everywhere it must be handled. Serialized, an event is one flat JSON
//! object tagged by `"type"` (one line of `events.jsonl`).

use crate::model::ids::{RunId, SessionId, StepId, SuiteId};
use crate::model::provider::ProviderName;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::outcome::{RunOutcome, StepStatus, TeardownState};

/// One thing that happened, with when it happened.
/// Setup was tried again with fresh `auto` ports: a command said its address was in use (one was
/// taken between its pick and the server's bind).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PortRetry {
    /// The first setup's error, with the command's last lines.
    pub reason: String,
    /// The `auto` ports that setup used and gave up.
    pub ports: std::collections::BTreeMap<String, u16>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Event {
    /// When it happened (`at`, the key every file of a run uses for an instant; runs written
    /// before schema 2 said `timestamp`).
    #[serde(rename = "at", alias = "timestamp")]
    pub timestamp: DateTime<Utc>,
    /// Milliseconds since the run (or, for suite events, the suite) started.
    pub elapsed_ms: u64,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Stamps events with the time since a fixed start. A session keeps one per run.
#[derive(Debug, Clone, Copy)]
pub struct EventClock {
    started: Instant,
    started_at: DateTime<Utc>,
}

impl EventClock {
    pub fn start() -> Self {
        Self {
            started: Instant::now(),
            started_at: Utc::now(),
        }
    }

    pub fn started_at(&self) -> DateTime<Utc> {
        self.started_at
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// An event of `kind`, stamped now.
    pub fn event(&self, kind: EventKind) -> Event {
        Event {
            timestamp: Utc::now(),
            elapsed_ms: millis(self.started.elapsed()),
            kind,
        }
    }
}

/// Whole milliseconds of a duration, saturating.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Where a planned step came from (docs/config.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Provenance {
    pub source_file: String,
    /// 1-based index of the step among the `[[steps]]` of its source file.
    pub source_index: usize,
    /// The files that included this one, outermost first.
    pub include_chain: Vec<String>,
}

/// Usage facts a provider reports for one step (Claude Code's `result` event).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Usage {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub turns: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub duration_ms: Option<u64>,
    /// What this step cost.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cost_usd: Option<f64>,
    /// The conversation's running total after this step (Claude Code's `total_cost_usd`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub total_cost_usd: Option<f64>,
    /// Tokens of this step, where the agent reports them (Codex).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub output_tokens: Option<u64>,
    /// What the CLI itself reported, kept beside `cost_usd` when it disagrees by more than 2× with
    /// the tokens × the price (docs/providers.md, "Cost").
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reported_cost_usd: Option<f64>,
}

/// What happened to a harness command during setup and while the session ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum SetupState {
    /// The process was spawned.
    Started,
    /// Its readiness probe answered (`probe` names it, e.g. `http://127.0.0.1:8000/health`).
    Ready { probe: String },
    /// Not launched (`--skip-cmd`).
    Skipped,
    /// It exited (a short-lived command finishing, or a long-lived one dying).
    Exited { exit_code: Option<i32> },
    /// It was restarted by its restart policy; `attempt` counts restarts from 1.
    Restarted { attempt: u32, exit_status: String },
    /// It failed the session: a non-zero setup exit, readiness timeout, no restarts left.
    Failed {
        reason: String,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        exit_code: Option<i32>,
    },
    /// A short-lived command outlived its `timeout_secs`, was stopped, and failed the session.
    TimedOut { reason: String },
}

/// Which `[checkpoint]` command ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointAction {
    /// `[checkpoint] save`, after the step carrying the checkpoint passed.
    Save,
    /// `[checkpoint] restore`, for `--from-checkpoint`, after setup and before the agent starts.
    Restore,
}

impl CheckpointAction {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Save => "save",
            Self::Restore => "restore",
        }
    }
}

/// How a `[checkpoint]` command went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CheckpointState {
    Started,
    /// Exited 0.
    Done {
        duration_ms: u64,
    },
    /// A non-zero exit, a timeout, or no start at all: the run ends as `error`.
    Failed {
        reason: String,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        exit_code: Option<i32>,
        duration_ms: u64,
    },
}

/// Totals of a suite, by outcome.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Totals {
    pub total: usize,
    pub passed: usize,
    pub warned: usize,
    pub failed: usize,
    pub error: usize,
    pub interrupted: usize,
    pub flaky: usize,
    /// Root tests that were never started (fail-fast, interruption).
    pub not_run: usize,
}

impl Totals {
    pub fn count(&mut self, outcome: RunOutcome) {
        self.total += 1;
        match outcome {
            RunOutcome::Passed => self.passed += 1,
            RunOutcome::Warned => self.warned += 1,
            RunOutcome::Failed => self.failed += 1,
            RunOutcome::Error => self.error += 1,
            RunOutcome::Interrupted => self.interrupted += 1,
        }
    }
}

/// What happened. Closed: reporters match it without a catch-all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    SuiteStarted {
        suite_id: SuiteId,
        root_tests: usize,
        jobs: usize,
    },
    RunStarted {
        run_id: RunId,
        session_id: SessionId,
        test_file: String,
        test_name: String,
        attempt: u32,
        provider: ProviderName,
        run_dir: String,
        /// A retry: how long it waited after the failure before it (`retries.delay`, docs/config.md).
        #[serde(default, skip_serializing_if = "is_zero")]
        retry_wait_ms: u64,
    },
    SetupStatus {
        command: String,
        #[serde(flatten)]
        state: SetupState,
    },
    StepStarted {
        step_id: StepId,
        /// One line, shortened, for the console.
        instruction: String,
        /// The whole instruction as the agent got it: `${NAME}` substituted, assets inlined
        /// (secrets are redacted when written, like everything else).
        #[serde(skip_serializing_if = "Option::is_none", default)]
        instruction_sent: Option<String>,
        #[serde(flatten)]
        provenance: Provenance,
    },
    AgentLog {
        step_id: StepId,
        message: String,
    },
    Evidence {
        step_id: StepId,
        kind: String,
        /// Relative to the run directory.
        path: String,
        /// Why the path is not a file inside the run directory, when it is not
        /// ([`crate::report::records::evidence::problem`]).
        #[serde(skip_serializing_if = "Option::is_none", default)]
        problem: Option<String>,
    },
    /// A call the agent made to its console (docs/console.md), sent before its step's `step_finished`
    /// (the whole call, arguments included, is in `transcripts/console.jsonl`).
    ConsoleCall {
        step_id: StepId,
        tool: String,
        /// The call in one line: its command, session, log or pattern (secrets redacted).
        summary: String,
        /// When the call began (absent in events written before it was kept): where it sits on
        /// the step's timeline.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        started_at: Option<DateTime<Utc>>,
        duration_ms: u64,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        exit_code: Option<i32>,
        bytes: u64,
        is_error: bool,
    },
    /// A tool the agent itself called during a step (its shell, a file read, a browser tool),
    /// as its stream showed it from the call to its result; sent before its step's
    /// `step_finished`. Its calls to the console are `console_call`s instead.
    AgentToolCall {
        step_id: StepId,
        /// As the provider names it: `Bash`, `Read`, `mcp__browser__browser_click`, …
        tool: String,
        /// The call in one line: its command, path, URL or input (secrets redacted, cut).
        summary: String,
        started_at: DateTime<Utc>,
        /// From the call to its result; absent when the stream showed no result.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        duration_ms: Option<u64>,
        is_error: bool,
    },
    StepFinished {
        step_id: StepId,
        status: StepStatus,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        message: Option<String>,
        duration_ms: u64,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        usage: Option<Usage>,
        /// For an agent provider with replay on (see docs/replay.md): replayed or by the agent, and why.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        replay: Option<Box<crate::model::replay::StepReplay>>,
    },
    /// The agent could not do its work for a reason outside the application (docs/providers.md):
    /// the kind of fault, as the CLI reported it, and what to do about it; sent before the
    /// step's `step_finished` (status `agent_error`).
    AgentFault {
        step_id: StepId,
        kind: crate::model::agent_fault::FaultKind,
        fix: String,
    },
    /// The watchdog stopped a hung or dead agent mid-step and started it again with its
    /// conversation resumed; the step is retried (docs/providers.md "Supervision").
    AgentRestarted {
        step_id: StepId,
        reason: String,
    },
    /// The step waited for its place at the model before the agent took it: fewer agents go at
    /// once while the model's API limits them, and sessions start staggered (docs/ci.md, "A
    /// rate-limited nightly"). Sent before the step's `step_finished`; the wait is not part of
    /// the step's `duration_ms`.
    ModelWait {
        step_id: StepId,
        waited_ms: u64,
        /// The agents the suite lets at the model at once as the step ends.
        agents_at_once: usize,
    },
    /// The session's places, once chosen: its workspace and its resolved `[ports]`. Sent again
    /// when setup is retried with fresh `auto` ports.
    SessionPrepared {
        workspace: String,
        ports: std::collections::BTreeMap<String, u16>,
        /// On the retry: why the first setup failed, and the ports it gave up.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        retried_after: Option<PortRetry>,
    },
    /// What each harness command wrote to its log while a step that did not pass ran (by byte
    /// offsets taken when the step started and ended), bounded; sent before its `step_finished`.
    HarnessLogExcerpt {
        step_id: StepId,
        /// Command name → the lines it wrote during the step.
        excerpt: std::collections::BTreeMap<String, String>,
    },
    CommandTornDown {
        name: String,
        teardown: TeardownState,
        /// Bytes of its output past `[supervisor] max_log_bytes` (kept only as a rolling tail in
        /// `logs/<name>.tail.log`); absent when the log is whole.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        log_truncated_bytes: Option<u64>,
    },
    /// A `[checkpoint]` save or restore command.
    Checkpoint {
        /// The checkpoint's name (`BUGATTI_CHECKPOINT_ID`).
        name: String,
        action: CheckpointAction,
        /// The step whose pass triggered a save.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        step_id: Option<StepId>,
        /// `BUGATTI_CHECKPOINT_PATH`, absolute.
        path: String,
        /// The command's output, relative to the run directory.
        log: String,
        #[serde(flatten)]
        state: CheckpointState,
    },
    RunFinished {
        outcome: RunOutcome,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        message: Option<String>,
    },
    SuiteFinished {
        totals: Totals,
        duration_ms: u64,
    },
}

impl EventKind {
    /// The snake_case name used as `"type"` in events.jsonl.
    pub fn name(&self) -> &'static str {
        match self {
            Self::SuiteStarted { .. } => "suite_started",
            Self::RunStarted { .. } => "run_started",
            Self::SetupStatus { .. } => "setup_status",
            Self::StepStarted { .. } => "step_started",
            Self::AgentLog { .. } => "agent_log",
            Self::Evidence { .. } => "evidence",
            Self::ConsoleCall { .. } => "console_call",
            Self::AgentToolCall { .. } => "agent_tool_call",
            Self::StepFinished { .. } => "step_finished",
            Self::HarnessLogExcerpt { .. } => "harness_log_excerpt",
            Self::AgentRestarted { .. } => "agent_restarted",
            Self::ModelWait { .. } => "model_wait",
            Self::AgentFault { .. } => "agent_fault",
            Self::SessionPrepared { .. } => "session_prepared",
            Self::CommandTornDown { .. } => "command_torn_down",
            Self::Checkpoint { .. } => "checkpoint",
            Self::RunFinished { .. } => "run_finished",
            Self::SuiteFinished { .. } => "suite_finished",
        }
    }
}

/// The first line of an instruction, cut to `max` characters (on a char boundary) with `…`.
pub fn summarize_instruction(instruction: &str, max: usize) -> String {
    let first = instruction
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let more_lines = instruction.trim().lines().count() > 1;
    if first.chars().count() > max {
        let cut: String = first.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else if more_lines {
        format!("{first} …")
    } else {
        first.to_string()
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialize_flat_and_tagged_and_round_trip() {
        let clock = EventClock::start();
        let ev = clock.event(EventKind::StepFinished {
            step_id: StepId::new(2),
            status: StepStatus::Warn,
            message: Some("slow".into()),
            duration_ms: 12,
            usage: Some(Usage {
                session_id: Some("abc".into()),
                turns: Some(3),
                duration_ms: Some(11),
                cost_usd: Some(0.25),
                total_cost_usd: Some(0.5),
                ..Usage::default()
            }),
            replay: None,
        });
        let json = serde_json::to_string(&ev).expect("serialize");
        assert!(json.contains("\"type\":\"step_finished\""), "{json}");
        assert!(json.contains("\"status\":\"warn\""), "{json}");
        assert!(json.contains("\"elapsed_ms\":"), "{json}");
        let back: Event = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, ev);

        let ev = clock.event(EventKind::SetupStatus {
            command: "server".into(),
            state: SetupState::Restarted {
                attempt: 1,
                exit_status: "exit 1".into(),
            },
        });
        let json = serde_json::to_string(&ev).expect("serialize");
        assert!(json.contains("\"state\":\"restarted\""), "{json}");
        let back: Event = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, ev);
        assert_eq!(back.kind.name(), "setup_status");
    }

    #[test]
    fn instruction_summary_is_one_short_line() {
        assert_eq!(
            summarize_instruction("  Open the page\nthen", 80),
            "Open the page …"
        );
        assert_eq!(summarize_instruction("abcdef", 4), "abc…");
        assert_eq!(summarize_instruction("ééééé", 5), "ééééé");
        assert_eq!(summarize_instruction("", 5), "");
    }
}
