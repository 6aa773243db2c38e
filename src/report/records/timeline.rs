//! When each thing of a run happened, on the run's own clock: the setup commands from start to
//! ready, each step and how it was decided, and inside a step the agent's turns, its console
//! calls and its browser actions. report.html draws it as swimlanes and `supervisor report
//! --chrome-trace` writes it as Chrome trace events (docs/reports.md).
//!
//! Built from run.json, and from the run's events.jsonl when it is there (the exact times of the
//! setup statuses; without it, setup spans the start to the first step). A step's ticks are
//! measured: the agent's own tool calls from the call to its result and its console calls, at
//! the times they happened (run.json keeps them). A record written before those times were kept
//! has its console calls placed by their events, or laid end to end from the step's start; the
//! actions a replay ran outside the console are spread over their step, and say so. Each action
//! is one tick: a replayed console action is its console call.

use crate::model::ids::StepId;
use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};

use crate::model::artifacts;
use crate::model::outcome::StepStatus;
use crate::model::replay::StepMode;
use crate::report::ground::confined;
use crate::report::records::run_record::{RunRecord, StepRecord};

/// How a step was decided: the colour of its bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// Every recorded action ran again and matched: no model.
    Replayed,
    /// The agent carried it out (replay off or no recording, or no replay at all).
    Agent,
    /// The replay drifted and the agent took the step over.
    Drift,
    /// The replay drifted only in timestamps, UUIDs, durations or hex values.
    SoftDrift,
    /// `[replay] audit` sent a replayable step to the agent anyway.
    Audited,
    /// The step never ran.
    NotRun,
}

impl Decided {
    pub fn of(step: &StepRecord) -> Self {
        if step.status == StepStatus::NotRun || step.mode == Some(StepMode::NotReplayed) {
            return Self::NotRun;
        }
        if step.replay_audited {
            return Self::Audited;
        }
        match (&step.replay_drift, step.mode) {
            (Some(d), _) if d.soft => Self::SoftDrift,
            (Some(_), _) => Self::Drift,
            (None, Some(StepMode::Replayed)) => Self::Replayed,
            _ => Self::Agent,
        }
    }

    /// The CSS class suffix and the word of the legend.
    pub fn key(self) -> &'static str {
        match self {
            Self::Replayed => "replayed",
            Self::Agent => "agent",
            Self::Drift => "drift",
            Self::SoftDrift => "soft-drift",
            Self::Audited => "audited",
            Self::NotRun => "not-run",
        }
    }

    /// What a reader is told: "step 3: drift → agent, 4.1s".
    pub fn words(self) -> &'static str {
        match self {
            Self::Replayed => "replayed",
            Self::Agent => "agent",
            Self::Drift => "drift → agent",
            Self::SoftDrift => "soft drift → agent",
            Self::Audited => "audited by the agent",
            Self::NotRun => "not run",
        }
    }

    pub const ALL: [Decided; 6] = [
        Self::Replayed,
        Self::Agent,
        Self::Drift,
        Self::SoftDrift,
        Self::Audited,
        Self::NotRun,
    ];
}

/// A mark inside a step's bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickKind {
    /// A tool the agent itself called (its shell, a file read, …), from the call to its result.
    Tool,
    /// A call to the agent console.
    Console,
    /// A browser action (Playwright MCP, or a replayed one).
    Browser,
}

impl TickKind {
    pub fn key(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Console => "console",
            Self::Browser => "browser",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Tick {
    pub kind: TickKind,
    /// From the run's start.
    pub at_ms: u64,
    pub dur_ms: u64,
    pub label: String,
    /// The time is measured (false: spread evenly over the step).
    pub measured: bool,
}

#[derive(Debug, Clone)]
pub struct Span {
    pub name: String,
    /// From the run's start.
    pub start_ms: u64,
    pub dur_ms: u64,
}

#[derive(Debug, Clone)]
pub struct StepSpan {
    pub step_id: StepId,
    pub start_ms: u64,
    pub dur_ms: u64,
    pub decided: Decided,
    pub status: StepStatus,
    pub cost_usd: Option<f64>,
    /// The model turns the agent reported for the step (they carry no times of their own).
    pub turns: Option<u32>,
    /// In time order.
    pub ticks: Vec<Tick>,
}

/// One run's lane.
#[derive(Debug, Clone)]
pub struct Lane {
    pub started_at: DateTime<Utc>,
    pub total_ms: u64,
    pub setup: Vec<Span>,
    pub steps: Vec<StepSpan>,
}

fn since(start: DateTime<Utc>, at: DateTime<Utc>) -> u64 {
    u64::try_from((at - start).num_milliseconds()).unwrap_or(0)
}

/// What events.jsonl adds: setup spans by command and console calls' ends by step.
#[derive(Default)]
struct FromEvents {
    setup: Vec<Span>,
    /// step id → (end ms, duration ms) of each console call, in order.
    calls: BTreeMap<StepId, Vec<(u64, u64)>>,
}

fn from_events(run_dir: &Path) -> Option<FromEvents> {
    let bytes = confined::read(run_dir, artifacts::EVENTS_JSONL).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut out = FromEvents::default();
    let mut started: BTreeMap<String, u64> = BTreeMap::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let elapsed = v["elapsed_ms"].as_u64().unwrap_or(0);
        match v["type"].as_str() {
            Some("setup_status") => {
                let name = v["command"].as_str().unwrap_or("?").to_string();
                match v["state"].as_str() {
                    Some("started") => {
                        started.insert(name, elapsed);
                    }
                    Some("ready" | "exited" | "failed" | "timed_out" | "skipped") => {
                        if let Some(start) = started.remove(&name) {
                            out.setup.push(Span {
                                name,
                                start_ms: start,
                                dur_ms: elapsed.saturating_sub(start),
                            });
                        }
                    }
                    _ => {}
                }
            }
            Some("console_call") => {
                if let Some(step) = v["step_id"]
                    .as_u64()
                    .and_then(|s| u32::try_from(s).ok())
                    .map(StepId::new)
                {
                    let dur = v["duration_ms"].as_u64().unwrap_or(0);
                    out.calls.entry(step).or_default().push((elapsed, dur));
                }
            }
            _ => {}
        }
    }
    Some(out)
}

/// Whether a replayed action or console tool is the browser's.
fn is_browser(what: &str) -> bool {
    what.starts_with("browser_")
        || what.contains(" browser_")
        || what.starts_with("mcp__browser__")
        || what.starts_with("mcp__playwright")
}

/// The lane of `record`, its run directory read for events.jsonl.
pub fn lane(record: &RunRecord) -> Lane {
    let run_dir = Path::new(&record.identity.run_dir);
    let start = record.identity.started_at;
    let events = from_events(run_dir);
    let mut steps: Vec<StepSpan> = Vec::new();
    for step in &record.steps {
        let Some(at) = step.started_at else {
            // A step that never ran: a mark where the run stopped, so the lane shows it.
            let after = steps.last().map_or(0, |s| s.start_ms + s.dur_ms);
            steps.push(StepSpan {
                step_id: step.step_id,
                start_ms: after,
                dur_ms: 0,
                decided: Decided::NotRun,
                status: step.status,
                cost_usd: None,
                turns: None,
                ticks: Vec::new(),
            });
            continue;
        };
        let start_ms = since(start, at);
        let dur_ms = step.duration_ms.unwrap_or(0);
        let mut ticks = Vec::new();
        let measured = events.as_ref().and_then(|e| e.calls.get(&step.step_id));
        let mut cursor = start_ms;
        for (k, call) in step.console_calls.iter().enumerate() {
            let (at_ms, measured) = match (call.started_at, measured.and_then(|m| m.get(k))) {
                (Some(began), _) => (since(start, began).max(start_ms), true),
                (None, Some((end, d))) => (end.saturating_sub(*d).max(start_ms), true),
                (None, None) => (cursor, false),
            };
            cursor = at_ms + call.duration_ms;
            let kind = if is_browser(&call.tool) {
                TickKind::Browser
            } else {
                TickKind::Console
            };
            ticks.push(Tick {
                kind,
                at_ms,
                dur_ms: call.duration_ms,
                label: format!("{} {}", call.tool, call.summary),
                measured,
            });
        }
        let spread = |n: usize, k: usize| start_ms + dur_ms * (k as u64 + 1) / (n as u64 + 1);
        for call in &step.tool_calls {
            ticks.push(Tick {
                kind: if is_browser(&call.tool) {
                    TickKind::Browser
                } else {
                    TickKind::Tool
                },
                at_ms: since(start, call.started_at).max(start_ms),
                dur_ms: call.duration_ms.unwrap_or(0),
                label: format!("{} {}", call.tool, call.summary),
                measured: true,
            });
        }
        let turns = step
            .agent_turns
            .or(step.usage.as_ref().and_then(|u| u.turns));
        // A replayed console action ran through the console: it is one of the console calls
        // above already, measured. The others (the agent's own tools replayed) are ticks here.
        let mut console_labels: Vec<String> = step
            .console_calls
            .iter()
            .map(|c| format!("{} {}", c.tool, c.summary))
            .collect();
        let actions: Vec<_> = step
            .replay_actions
            .iter()
            .filter(|a| {
                match console_labels
                    .iter()
                    .position(|l| l.trim() == a.what.trim())
                {
                    Some(at) => {
                        console_labels.remove(at);
                        false
                    }
                    None => true,
                }
            })
            .collect();
        for (k, action) in actions.iter().enumerate() {
            ticks.push(Tick {
                kind: if is_browser(&action.what) {
                    TickKind::Browser
                } else {
                    TickKind::Console
                },
                at_ms: spread(actions.len(), k),
                dur_ms: 0,
                label: format!("ran again: {}", action.what),
                measured: false,
            });
        }
        // Stable: actions at the same millisecond keep the order they were recorded in.
        ticks.sort_by_key(|t| t.at_ms);
        // The bar holds its actions: a step's duration is its agent's turn, which an agent
        // started for this step (its start, its bootstrap) does not count.
        let dur_ms = ticks
            .iter()
            .filter(|t| t.measured)
            .map(|t| (t.at_ms + t.dur_ms).saturating_sub(start_ms))
            .fold(dur_ms, u64::max);
        steps.push(StepSpan {
            step_id: step.step_id,
            start_ms,
            dur_ms,
            decided: Decided::of(step),
            status: step.status,
            cost_usd: step
                .cost_usd
                .or(step.usage.as_ref().and_then(|u| u.cost_usd)),
            turns,
            ticks,
        });
    }
    let first_step = steps
        .iter()
        .find(|s| s.decided != Decided::NotRun)
        .map(|s| s.start_ms);
    let setup = match events.map(|e| e.setup) {
        Some(setup) if !setup.is_empty() => setup,
        _ => first_step
            .filter(|ms| *ms > 0)
            .map(|ms| Span {
                name: "setup".to_string(),
                start_ms: 0,
                dur_ms: ms,
            })
            .into_iter()
            .collect(),
    };
    let ends = steps
        .iter()
        .map(|s| s.start_ms + s.dur_ms)
        .chain(setup.iter().map(|s| s.start_ms + s.dur_ms));
    let total_ms = record.duration_ms.unwrap_or(0).max(ends.max().unwrap_or(0));
    Lane {
        started_at: start,
        total_ms,
        setup,
        steps,
    }
}
