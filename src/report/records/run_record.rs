//! The record of one run: what `run.json` holds (docs/reports.md).
//!
//! A [`RunRecord`] starts from the [`RunPlan`] a session hands over before anything is launched
//! (every step `not_run`, every command `pending`) and is brought up to date by [`RunRecord::apply`]
//! with each [`Event`] of the run, in order. It is pure data: writing it is `writers`' job.

use crate::model::ids::StepId;
use crate::model::replay::{Drift, StepMode};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::model::outcome::{RunOutcome, StepStatus};
use crate::report::records::events::{
    CheckpointAction, CheckpointState, Event, EventKind, PortRetry, Provenance, Usage,
};

use crate::model::agent_fault::AgentFaultRecord;
pub use crate::report::records::run_plan::{
    CommandRecord, CommandStatus, ConfigRow, PlanEntry, PlannedCommand, Restart, RunIdentity,
    RunPlan,
};

/// How a `[checkpoint]` command of the run went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointStatus {
    Running,
    Done,
    Failed,
}

impl CheckpointStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }
}

/// One `[checkpoint]` save or restore of the run, in the order they ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckpointRecord {
    pub name: String,
    pub action: CheckpointAction,
    /// The step whose pass triggered a save.
    pub step_id: Option<StepId>,
    /// `BUGATTI_CHECKPOINT_PATH`: where the checkpoint's data lives.
    pub path: String,
    /// The command's output, relative to the run directory.
    pub log: String,
    pub status: CheckpointStatus,
    pub exit_code: Option<i32>,
    pub duration_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// One restart of the agent by the watchdog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentRestart {
    pub step_id: StepId,
    /// What the watchdog saw: silence, or the agent's death.
    pub reason: String,
    pub at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvidenceRecord {
    pub kind: String,
    /// Relative to the run directory.
    pub path: String,
    /// Why the path is not a file inside the run directory, when it is not.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub problem: Option<String>,
}

/// One call the agent made to its console during a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConsoleCallRecord {
    pub tool: String,
    pub summary: String,
    /// When the call began (absent in records written before it was kept).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub started_at: Option<DateTime<Utc>>,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub exit_code: Option<i32>,
    pub bytes: u64,
    pub is_error: bool,
}

/// One tool the agent itself called during a step, from the call to its result (docs/reports.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolCallRecord {
    pub tool: String,
    pub summary: String,
    pub started_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub duration_ms: Option<u64>,
    pub is_error: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepRecord {
    pub step_id: StepId,
    #[serde(flatten)]
    pub provenance: Provenance,
    /// As written in the test file.
    pub instruction: String,
    /// The step's timeout in seconds: its own `timeout_secs`, else the provider's
    /// `step_timeout_secs` (absent in records written before it was recorded).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub timeout_secs: Option<u64>,
    /// As the agent got it (variables substituted, assets inlined); set once the step started.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub instruction_sent: Option<String>,
    pub status: StepStatus,
    pub message: Option<String>,
    pub duration_ms: Option<u64>,
    pub started_at: Option<DateTime<Utc>>,
    /// `BUGATTI_LOG` messages, in order.
    pub logs: Vec<String>,
    pub evidence: Vec<EvidenceRecord>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub usage: Option<Usage>,
    /// Model turns of this step, where the agent reports them (docs/reports.md).
    #[serde(default)]
    pub agent_turns: Option<u32>,
    /// What this step cost, where the agent reports it.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// With status `agent_error`: the kind of fault and its fix.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub agent_fault: Option<AgentFaultRecord>,
    /// For a step that did not pass: command name → the lines it wrote while the step ran.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub harness_log_excerpt: BTreeMap<String, String>,
    /// The agent console calls made during the step, in order (docs/console.md).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub console_calls: Vec<ConsoleCallRecord>,
    /// The tools the agent itself called during the step, in order, each at its time
    /// (its console calls are `console_calls`).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub tool_calls: Vec<ToolCallRecord>,
    /// docs/replay.md: `replayed` (passed without the model) or `agent`; unset where replay does not
    /// apply (the `shell` provider, `[replay] mode = "off"`, a step that never ran).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mode: Option<StepMode>,
    /// Why the step was not replayed, or why the agent's pass was not recorded.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub replay_note: Option<String>,
    /// The first difference the replay found; the step then went to the agent.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub replay_drift: Option<Drift>,
    /// The agent's pass was written to the recording.
    #[serde(default)]
    pub recorded: bool,
    /// `[replay] audit` sent this replayable step to the agent anyway.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub replay_audited: bool,
    /// For a replayed step: each action it ran and its recorded output (cut).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub replay_actions: Vec<crate::model::replay::ReplayedAction>,
    /// For a replayed step: when its recording was made, and by which provider's agent.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub replay_recorded_at: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub replay_recorded_by: Option<String>,
    /// The facts the pass rests on (docs/replay.md): those that held for a replayed step, those
    /// the agent stated for a recorded one.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub replay_facts: Vec<String>,
    /// A re-recording that would weaken the step's recording waits for review (docs/replay.md):
    /// what it would drop.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub replay_pending: Option<String>,
    /// How long the step waited for its place at the model (docs/ci.md, "A rate-limited
    /// nightly"); not part of `duration_ms`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub model_wait_ms: Option<u64>,
}

/// The version of the layout of run.json, summary.json, events.jsonl and history.jsonl (their
/// JSON Schemas are in `schemas/`); bumped on an incompatible change. 2: events say `at` (was
/// `timestamp`) and name their run.
pub const SCHEMA_VERSION: u32 = 2;

fn schema_version() -> u32 {
    SCHEMA_VERSION
}

/// Everything `run.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunRecord {
    #[serde(default = "schema_version")]
    pub schema_version: u32,
    #[serde(flatten)]
    pub identity: RunIdentity,
    pub finished_at: Option<DateTime<Utc>>,
    pub duration_ms: Option<u64>,
    /// `None` while the run goes on.
    pub outcome: Option<RunOutcome>,
    /// Why the run failed, errored or was interrupted, in one message.
    pub error: Option<String>,
    pub skipped_commands: Vec<String>,
    /// The session workspace (`BUGATTI_WORKDIR`), once created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The session's resolved `[ports]` (auto ones as allocated).
    #[serde(default)]
    pub ports: BTreeMap<String, u16>,
    /// Setup retried with fresh `auto` ports (at most once): why, and the ports given up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub port_retries: Vec<PortRetry>,
    pub steps: Vec<StepRecord>,
    pub commands: Vec<CommandRecord>,
    /// `[checkpoint]` saves and restores, in order.
    #[serde(default)]
    pub checkpoints: Vec<CheckpointRecord>,
    pub effective_config: Vec<ConfigRow>,
    /// The steps' reported cost, summed; `None` when no step reported one.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Model turns, summed over the steps that reported them.
    #[serde(default)]
    pub agent_turns: u64,
    /// Tokens, summed over the steps that reported them.
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// Each time the watchdog restarted the agent, in order.
    #[serde(default)]
    pub agent_restarts: Vec<AgentRestart>,
    /// How long the run's steps waited for their place at the model, summed (docs/ci.md, "A
    /// rate-limited nightly").
    #[serde(default)]
    pub model_wait_ms: u64,
    /// The agent fault that ended the run (docs/providers.md): the run is an `error` of the agent,
    /// never a failure of the app.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub agent_fault: Option<AgentFaultRecord>,
    /// docs/replay.md: steps passed by replay, steps carried out by the agent (replay on), steps that
    /// drifted, and what the replayed steps cost when recorded.
    #[serde(default)]
    pub replayed_steps: u32,
    #[serde(default)]
    pub agent_steps: u32,
    #[serde(default)]
    pub replay_drift_steps: u32,
    /// Of the drifts, those only in timestamps, UUIDs, durations or hex values not learned yet.
    #[serde(default)]
    pub replay_soft_drift_steps: u32,
    /// Agent steps with no usable recording; audited steps; audited steps the agent failed;
    /// `--replay only` steps without a recording.
    #[serde(default)]
    pub replay_no_recording_steps: u32,
    #[serde(default)]
    pub replay_audited_steps: u32,
    #[serde(default)]
    pub replay_audit_disagreements: u32,
    #[serde(default)]
    pub not_replayed_steps: u32,
    #[serde(default)]
    pub cost_saved_usd: Option<f64>,
    /// Events that named a step or command the plan does not have: kept, not dropped.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub anomalies: Vec<String>,
}

impl StepRecord {
    /// What replay did for this step, as run.json keeps it.
    fn take_replay(&mut self, r: &crate::model::replay::StepReplay) {
        self.mode = Some(r.mode);
        self.replay_note = r.note.clone();
        self.replay_drift = r.drift.clone();
        self.recorded = r.recorded;
        self.replay_audited = r.audited;
        self.replay_actions = r.actions.clone();
        self.replay_recorded_at = r.recorded_at;
        self.replay_recorded_by = r.recorded_by.clone();
        self.replay_facts = r.facts.clone();
        self.replay_pending = r.pending_review.clone();
    }
}

impl RunRecord {
    /// A step's replay in the run's counts.
    fn count_replay(&mut self, r: &crate::model::replay::StepReplay) {
        match r.mode {
            StepMode::Replayed => {
                self.replayed_steps += 1;
                if let Some(saved) = r.cost_saved_usd {
                    self.cost_saved_usd = Some(self.cost_saved_usd.unwrap_or(0.0) + saved);
                }
            }
            StepMode::Agent => self.agent_steps += 1,
            StepMode::NotReplayed => self.not_replayed_steps += 1,
        }
        if let Some(d) = &r.drift {
            self.replay_drift_steps += 1;
            self.replay_soft_drift_steps += u32::from(d.soft);
        }
        let agent = r.mode == StepMode::Agent;
        self.replay_no_recording_steps += u32::from(agent && r.no_recording);
        self.replay_audited_steps += u32::from(r.audited);
        self.replay_audit_disagreements += u32::from(r.audit_disagreed);
    }

    /// How this run's steps went through replay.
    pub fn replay_counts(&self) -> crate::model::replay::ReplayCounts {
        crate::model::replay::ReplayCounts {
            replayed: u64::from(self.replayed_steps),
            agent: u64::from(self.agent_steps),
            drift: u64::from(self.replay_drift_steps),
            soft_drift: u64::from(self.replay_soft_drift_steps),
            audited: u64::from(self.replay_audited_steps),
            disagreed: u64::from(self.replay_audit_disagreements),
            not_replayed: u64::from(self.not_replayed_steps),
            no_recording: u64::from(self.replay_no_recording_steps),
        }
    }

    pub fn from_plan(plan: &RunPlan) -> Self {
        let skipped = |name: &str| plan.skipped_commands.iter().any(|s| s == name);
        Self {
            schema_version: SCHEMA_VERSION,
            identity: plan.identity.clone(),
            finished_at: None,
            duration_ms: None,
            outcome: None,
            error: None,
            skipped_commands: plan.skipped_commands.clone(),
            workspace: None,
            ports: BTreeMap::new(),
            port_retries: Vec::new(),
            steps: plan
                .steps
                .iter()
                .map(|s| StepRecord {
                    step_id: s.step_id,
                    provenance: s.provenance.clone(),
                    instruction: s.instruction.clone(),
                    timeout_secs: s.timeout_secs,
                    instruction_sent: None,
                    status: StepStatus::NotRun,
                    message: None,
                    duration_ms: None,
                    started_at: None,
                    logs: Vec::new(),
                    evidence: Vec::new(),
                    console_calls: Vec::new(),
                    tool_calls: Vec::new(),
                    usage: None,
                    agent_turns: None,
                    cost_usd: None,
                    harness_log_excerpt: BTreeMap::new(),
                    agent_fault: None,
                    mode: None,
                    replay_note: None,
                    replay_drift: None,
                    recorded: false,
                    replay_audited: false,
                    replay_actions: Vec::new(),
                    replay_recorded_at: None,
                    replay_recorded_by: None,
                    replay_facts: Vec::new(),
                    replay_pending: None,
                    model_wait_ms: None,
                })
                .collect(),
            commands: plan
                .commands
                .iter()
                .map(|c| {
                    let mut cmd = CommandRecord::pending(&c.name, &c.kind, "test", c.log.clone());
                    if skipped(&c.name) {
                        cmd.status = CommandStatus::Skipped;
                    }
                    cmd
                })
                .chain(plan.suite_commands.iter().cloned())
                .collect(),
            checkpoints: Vec::new(),
            effective_config: plan.effective_config.clone(),
            cost_usd: None,
            agent_turns: 0,
            input_tokens: 0,
            output_tokens: 0,
            agent_restarts: Vec::new(),
            model_wait_ms: 0,
            agent_fault: None,
            replayed_steps: 0,
            agent_steps: 0,
            replay_drift_steps: 0,
            replay_soft_drift_steps: 0,
            replay_no_recording_steps: 0,
            replay_audited_steps: 0,
            replay_audit_disagreements: 0,
            not_replayed_steps: 0,
            cost_saved_usd: None,
            anomalies: Vec::new(),
        }
    }

    /// A step's wait for its place at the model, on the step and the run.
    fn model_waited(&mut self, step_id: StepId, waited_ms: u64) {
        if let Some(step) = self.step_mut(step_id, "model_wait") {
            step.model_wait_ms = Some(step.model_wait_ms.unwrap_or(0) + waited_ms);
        }
        self.model_wait_ms += waited_ms;
    }

    pub fn is_finished(&self) -> bool {
        self.outcome.is_some()
    }

    /// The plan this record was made from (what `from_plan` reads), for rebuilding a record
    /// from its events (a run whose supervisor was SIGKILLed).
    pub fn plan(&self) -> RunPlan {
        RunPlan {
            identity: self.identity.clone(),
            skipped_commands: self.skipped_commands.clone(),
            steps: self
                .steps
                .iter()
                .map(|s| PlanEntry {
                    step_id: s.step_id,
                    provenance: s.provenance.clone(),
                    instruction: s.instruction.clone(),
                    timeout_secs: s.timeout_secs,
                })
                .collect(),
            commands: self
                .commands
                .iter()
                .filter(|c| c.scope != "suite")
                .map(|c| PlannedCommand {
                    name: c.name.clone(),
                    kind: c.kind.clone(),
                    log: c.log.clone(),
                })
                .collect(),
            suite_commands: self
                .commands
                .iter()
                .filter(|c| c.scope == "suite")
                .cloned()
                .collect(),
            effective_config: self.effective_config.clone(),
        }
    }

    /// The step that decided a failed run: the first failing step.
    pub fn failing_step(&self) -> Option<&StepRecord> {
        self.steps.iter().find(|s| s.status.is_failure())
    }

    /// The message that explains a non-passing outcome: the failing step's, else the run's error.
    pub fn failure_message(&self) -> Option<String> {
        if let Some(step) = self.failing_step() {
            let what = step.message.as_deref().unwrap_or(step.status.as_str());
            return Some(format!("step {}: {}", step.step_id, what));
        }
        self.error.clone()
    }

    fn step_mut(&mut self, step_id: StepId, event: &str) -> Option<&mut StepRecord> {
        let found = self.steps.iter().position(|s| s.step_id == step_id);
        match found {
            Some(i) => self.steps.get_mut(i),
            None => {
                self.anomalies.push(format!(
                    "{event} for step {step_id}, which is not in the plan"
                ));
                None
            }
        }
    }

    fn command_mut(&mut self, name: &str) -> &mut CommandRecord {
        // A command the plan did not list (a suite-scoped one, say) is added, not dropped.
        let index = match self.commands.iter().position(|c| c.name == name) {
            Some(i) => i,
            None => {
                self.commands.push(CommandRecord::pending(
                    name,
                    "unknown",
                    "test",
                    crate::model::artifacts::command_log_rel(name),
                ));
                self.commands.len() - 1
            }
        };
        &mut self.commands[index]
    }

    /// A console call or a tool call of the agent: one more action of its step.
    fn apply_action(&mut self, kind: &EventKind) {
        match kind {
            EventKind::ConsoleCall {
                step_id,
                tool,
                summary,
                started_at,
                duration_ms,
                exit_code,
                bytes,
                is_error,
            } => {
                if let Some(step) = self.step_mut(*step_id, "console_call") {
                    step.console_calls.push(ConsoleCallRecord {
                        tool: tool.clone(),
                        summary: summary.clone(),
                        started_at: *started_at,
                        duration_ms: *duration_ms,
                        exit_code: *exit_code,
                        bytes: *bytes,
                        is_error: *is_error,
                    });
                }
            }
            EventKind::AgentToolCall {
                step_id,
                tool,
                summary,
                started_at,
                duration_ms,
                is_error,
            } => {
                if let Some(step) = self.step_mut(*step_id, "agent_tool_call") {
                    step.tool_calls.push(ToolCallRecord {
                        tool: tool.clone(),
                        summary: summary.clone(),
                        started_at: *started_at,
                        duration_ms: *duration_ms,
                        is_error: *is_error,
                    });
                }
            }
            _ => {}
        }
    }

    /// Brings the record up to date with one event of this run.
    pub fn apply(&mut self, event: &Event) {
        match &event.kind {
            // Suite events do not change a run.
            EventKind::SuiteStarted { .. } | EventKind::SuiteFinished { .. } => {}
            EventKind::RunStarted { attempt, .. } => {
                self.identity.attempt = *attempt;
            }
            EventKind::SetupStatus { command, state } => {
                self.command_mut(command)
                    .apply_setup(state, event.timestamp);
            }
            EventKind::StepStarted {
                step_id,
                instruction_sent,
                ..
            } => {
                if let Some(step) = self.step_mut(*step_id, "step_started") {
                    step.started_at = Some(event.timestamp);
                    step.instruction_sent = instruction_sent.clone();
                }
            }
            EventKind::AgentLog { step_id, message } => {
                if let Some(step) = self.step_mut(*step_id, "agent_log") {
                    step.logs.push(message.clone());
                }
            }
            EventKind::ConsoleCall { .. } | EventKind::AgentToolCall { .. } => {
                self.apply_action(&event.kind);
            }
            EventKind::Evidence {
                step_id,
                kind,
                path,
                problem,
            } => {
                if let Some(step) = self.step_mut(*step_id, "evidence") {
                    step.evidence.push(EvidenceRecord {
                        kind: kind.clone(),
                        path: path.clone(),
                        problem: problem.clone(),
                    });
                }
            }
            EventKind::StepFinished {
                step_id,
                status,
                message,
                duration_ms,
                usage,
                replay,
            } => {
                if let Some(step) = self.step_mut(*step_id, "step_finished") {
                    step.status = *status;
                    step.message = message.clone();
                    step.duration_ms = Some(*duration_ms);
                    step.usage = usage.clone();
                    step.agent_turns = usage.as_ref().and_then(|u| u.turns);
                    step.cost_usd = usage.as_ref().and_then(|u| u.cost_usd);
                    if let Some(r) = replay {
                        step.take_replay(r);
                    }
                }
                if let Some(r) = replay {
                    self.count_replay(r);
                }
                if let Some(u) = usage {
                    if let Some(cost) = u.cost_usd {
                        self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
                    }
                    self.agent_turns += u64::from(u.turns.unwrap_or(0));
                    self.input_tokens += u.input_tokens.unwrap_or(0);
                    self.output_tokens += u.output_tokens.unwrap_or(0);
                }
            }
            EventKind::AgentFault { step_id, kind, fix } => {
                let fault = AgentFaultRecord {
                    kind: *kind,
                    fix: fix.clone(),
                };
                if let Some(step) = self.step_mut(*step_id, "agent_fault") {
                    step.agent_fault = Some(fault.clone());
                }
                self.agent_fault = Some(fault);
            }
            EventKind::ModelWait {
                step_id, waited_ms, ..
            } => self.model_waited(*step_id, *waited_ms),
            EventKind::AgentRestarted { step_id, reason } => {
                self.agent_restarts.push(AgentRestart {
                    step_id: *step_id,
                    reason: reason.clone(),
                    at: event.timestamp,
                });
            }
            EventKind::SessionPrepared {
                workspace,
                ports,
                retried_after,
            } => {
                self.workspace = Some(workspace.clone());
                self.ports = ports.clone();
                self.port_retries.extend(retried_after.clone());
            }
            EventKind::HarnessLogExcerpt { step_id, excerpt } => {
                if let Some(step) = self.step_mut(*step_id, "harness_log_excerpt") {
                    step.harness_log_excerpt = excerpt.clone();
                }
            }
            EventKind::CommandTornDown {
                name,
                teardown,
                log_truncated_bytes,
            } => {
                let command = self.command_mut(name);
                command.teardown = Some(*teardown);
                command.log_truncated_bytes = *log_truncated_bytes;
            }
            EventKind::Checkpoint {
                name,
                action,
                step_id,
                path,
                log,
                state,
            } => self.apply_checkpoint(name, *action, *step_id, path, log, state),
            EventKind::RunFinished { outcome, message } => {
                self.finish(*outcome, message.clone(), event.timestamp);
            }
        }
    }

    fn apply_checkpoint(
        &mut self,
        name: &str,
        action: CheckpointAction,
        step_id: Option<StepId>,
        path: &str,
        log: &str,
        state: &CheckpointState,
    ) {
        let open = self.checkpoints.iter().rposition(|c| {
            c.name == name && c.action == action && c.status == CheckpointStatus::Running
        });
        let index = match (state, open) {
            (CheckpointState::Started, _) | (_, None) => {
                self.checkpoints.push(CheckpointRecord {
                    name: name.to_string(),
                    action,
                    step_id,
                    path: path.to_string(),
                    log: log.to_string(),
                    status: CheckpointStatus::Running,
                    exit_code: None,
                    duration_ms: None,
                    error: None,
                });
                self.checkpoints.len() - 1
            }
            (_, Some(i)) => i,
        };
        let record = &mut self.checkpoints[index];
        match state {
            CheckpointState::Started => {}
            CheckpointState::Done { duration_ms } => {
                record.status = CheckpointStatus::Done;
                record.exit_code = Some(0);
                record.duration_ms = Some(*duration_ms);
            }
            CheckpointState::Failed {
                reason,
                exit_code,
                duration_ms,
            } => {
                record.status = CheckpointStatus::Failed;
                record.exit_code = *exit_code;
                record.duration_ms = Some(*duration_ms);
                record.error = Some(reason.clone());
            }
        }
    }

    /// Closes the record: outcome, end time, and a note on a step that started but never finished.
    pub fn finish(&mut self, outcome: RunOutcome, message: Option<String>, at: DateTime<Utc>) {
        self.outcome = Some(outcome);
        self.finished_at = Some(at);
        let ms = (at - self.identity.started_at).num_milliseconds();
        self.duration_ms = Some(u64::try_from(ms).unwrap_or(0));
        if message.is_some() {
            self.error = message;
        }
        for step in &mut self.steps {
            // Started, never finished (no step_finished, so no duration): the run was cut off
            // under it. A step finished as not_run (never sent to an agent that failed to
            // start) stays not_run.
            if step.status == StepStatus::NotRun
                && step.started_at.is_some()
                && step.duration_ms.is_none()
            {
                step.status = StepStatus::Interrupted;
                step.message.get_or_insert_with(|| {
                    format!("started but did not finish: run {}", outcome.as_str())
                });
            }
        }
    }
}

#[cfg(test)]
#[path = "run_record_tests.rs"]
pub(crate) mod tests;
