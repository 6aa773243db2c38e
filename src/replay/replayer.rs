//! Running a recorded step again in a new session and comparing each output (see docs/replay.md).
//!
//! Each action kind has its file: console calls ([`super::console`], through the session's own
//! console, the same PTY or pipes, env and cwd the agent's calls get) and the provider's shell
//! tool ([`super::shell`], in a process group and with a marker of the replay's own, never the
//! agent's). Inputs are filled with this session's values; outputs on both sides have the
//! session's values as placeholders, are normalised, then compared under the learned masks
//! ([`super::masks`]). The first difference stops the replay: the step goes to the agent with the
//! drift (soft when only unlearned candidate tokens differ).

use super::compare::Checked;
use super::domains::{Learned, Relation};
use super::format::{Action, RecordedStep};
use super::masks::{Position, Rules};
use super::normalize::Normalizer;
use super::placeholders::Placeholders;
use super::shell::AgentShell;
use super::verdict::{Fallback, Verdict};
use crate::console::Console;
use chrono::{DateTime, Utc};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a replay needs from its session.
pub struct ReplayContext<'a> {
    /// The session's console: console actions run through it (`None` when `[provider] console`
    /// is off: a recording with console actions then falls back to the agent).
    pub console: Option<&'a Console>,
    pub placeholders: &'a Placeholders,
    pub normalizer: &'a Normalizer,
    /// The run: owner of shell actions' groups.
    pub run_id: String,
    pub step_id: u32,
    /// A shell action's whole environment (the agent's, without the agent's marker).
    pub env: Vec<(String, String)>,
    /// The step's timeout: the longest an action may run when the agent's own tool set no
    /// bound of its own (Codex's and pi's shell, a file check), before the replay falls back.
    pub action_timeout: Duration,
    /// The step's instruction as sent: a value it names is never masked.
    pub instruction: String,
    /// How the agent's own shell tool ran its commands.
    pub shell: AgentShell,
    /// When this replay's session started: a timestamp since then (± 10 minutes) is current.
    pub session_started: DateTime<Utc>,
    /// Where the agent's own tools ran: file checks look from here.
    pub agent_cwd: PathBuf,
    /// The session's browser, through the supervisor's own Playwright MCP client (`None`
    /// without `[browser] mcp = true`: a recording with browser actions then falls back).
    pub browser: Option<&'a super::browser::BrowserReplay>,
}

/// What one step's replay carries from action to action.
#[derive(Default)]
pub(super) struct StepState {
    pub(super) sessions: super::console::Sessions,
    /// The shell's working directory as the last shell action left it (Claude Code's Bash keeps
    /// it between calls).
    pub(super) cwd: Option<PathBuf>,
}

/// What the step's outputs were seen to be so far (for ties between them), and which learned
/// positions varied (for their expiry).
#[derive(Default)]
pub(super) struct StepSeen {
    outputs: Vec<Option<String>>,
    /// The same outputs before normalisation (session values as placeholders): what the
    /// agent's stated facts are checked on, as they were on the recording.
    comparable: Vec<Option<String>>,
    varied: Vec<(usize, Position)>,
}

/// Replays `step`: [`Verdict::Replayed`] only when every action ran and matched.
pub async fn replay_step(ctx: &ReplayContext<'_>, step: &RecordedStep) -> Verdict {
    let started = Instant::now();
    let mut state = StepState::default();
    let recorded = Some((
        step.run_started_at.unwrap_or(step.recorded_at),
        step.recorded_at,
    ));
    // An older recording says nothing of its relations: those its outputs show are checked.
    let derived;
    let relations: &[Relation] = match &step.relations {
        Some(r) => r,
        None => {
            derived = relations_of(&step.actions, ctx.normalizer, &ctx.instruction);
            &derived
        }
    };
    let seen = Mutex::new(StepSeen::default());
    // An agent that stated no facts its pass rested on gets exact comparison only: nothing it
    // was seen to let vary is let vary without it (docs/replay.md, "The facts a pass rests on").
    let exact = step.facts.as_ref().is_some_and(Vec::is_empty);
    for (i, action) in step.actions.iter().enumerate() {
        let began = Instant::now();
        let at = ActionAt {
            index: i,
            what: action.describe(),
            recorded,
            volatile: if exact { &[] } else { action.volatile() },
            relations,
            seen: &seen,
        };
        let result = match action {
            Action::Console {
                tool,
                arguments,
                output,
                exit_code,
                is_error,
                after_ms,
                ..
            } => {
                let recorded = super::console::Recorded {
                    output,
                    exit_code: *exit_code,
                    is_error: *is_error,
                    after_ms: *after_ms,
                };
                super::console::replay(ctx, &mut state.sessions, &at, *tool, arguments, recorded)
                    .await
            }
            Action::Shell {
                command,
                cwd,
                exit_code,
                output,
                timeout_ms,
                ..
            } => {
                let recorded = super::shell::Recorded {
                    command,
                    cwd,
                    exit_code: *exit_code,
                    output,
                    timeout_ms: *timeout_ms,
                };
                super::shell::replay(ctx, &mut state.cwd, &at, recorded).await
            }
            Action::File { check, .. } => replay_file(ctx, &at, check).await,
            Action::Browser {
                tool,
                arguments,
                elements,
                output,
                is_error,
                ..
            } => {
                let recorded = super::browser::Recorded {
                    tool,
                    arguments,
                    elements,
                    output,
                    is_error: *is_error,
                };
                super::browser::replay(ctx, &at, recorded).await
            }
        };
        if let Err(fallback) = result {
            return Verdict::Fallback(fallback);
        }
        state.sessions.previous_began = Some(began);
    }
    let seen = seen.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(fallback) = false_fact(step, &seen.comparable) {
        return Verdict::Fallback(fallback);
    }
    let varied = seen.varied;
    Verdict::Replayed {
        actions: step.actions.len(),
        took: started.elapsed(),
        cost_saved_usd: step.cost_usd,
        varied,
    }
}

/// The first of the step's recorded facts that does not hold on today's outputs, as the
/// fallback to the agent (a fact is what the agent's pass rested on: one false, the pass is
/// the agent's to give again).
fn false_fact(step: &RecordedStep, today: &[Option<String>]) -> Option<Fallback> {
    let stated = step.facts.as_deref().filter(|f| !f.is_empty())?;
    let facts = match super::facts::parse(stated, step.actions.len()) {
        Ok(facts) => facts,
        Err(e) => {
            return Some(Fallback::Failed {
                action: 0,
                reason: format!("a recorded fact is not one ({e}): the agent decides"),
            })
        }
    };
    let recorded = compared_outputs(&step.actions);
    let (fact, why) = super::facts::first_false(&facts, today, &recorded, Utc::now())?;
    Some(Fallback::Failed {
        action: fact.action,
        reason: format!(
            "the fact `{}` the agent's pass rested on no longer holds: {why}",
            fact.text
        ),
    })
}

/// The relations between timestamps that hold in `actions`' outputs as the replay compares them.
pub fn relations_of(
    actions: &[Action],
    normalizer: &Normalizer,
    instruction: &str,
) -> Vec<Relation> {
    compared_outputs(actions)
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.as_ref().map(|t| (i, t)))
        .flat_map(|(i, t)| {
            super::domains::relations_in(i, &normalizer.normalize_with(t, instruction))
        })
        .collect()
}

/// A file check run again over today's files (its paths filled with this session's values), off
/// the runtime's threads and within the action timeout: a walk of a huge tree never holds the
/// session (or its signals) up.
async fn replay_file(
    ctx: &ReplayContext<'_>,
    at: &ActionAt<'_>,
    check: &super::files::FileCheck,
) -> Result<(), Fallback> {
    let filled = check.map_paths(|p| ctx.placeholders.fill(p));
    let cwd = ctx.agent_cwd.clone();
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = cancel.clone();
    let work = tokio::task::spawn_blocking(move || super::files::observe(&filled, &cwd, &cancel));
    let seen = match tokio::time::timeout(ctx.action_timeout, work).await {
        Ok(Ok(Ok(observed))) => observed.text,
        Ok(Ok(Err(e))) => e,
        Ok(Err(e)) => format!("the file check failed: {e}"),
        Err(_) => {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            return Err(Fallback::Failed {
                action: at.index,
                reason: format!(
                    "{} still running after {}s",
                    at.what,
                    ctx.action_timeout.as_secs()
                ),
            });
        }
    };
    ctx.check(at, &super::files::seen(check), &seen)
}

/// The action being replayed: its place, its words, and what its comparison needs.
pub(super) struct ActionAt<'a> {
    pub(super) index: usize,
    pub(super) what: String,
    pub(super) recorded: Option<(DateTime<Utc>, DateTime<Utc>)>,
    pub(super) volatile: &'a [Learned],
    /// The step's relations between timestamps (this action's are checked).
    pub(super) relations: &'a [Relation],
    /// The step's outputs seen so far.
    pub(super) seen: &'a Mutex<StepSeen>,
}

impl ReplayContext<'_> {
    /// An output in the form both sides are compared in: this session's values as placeholders
    /// (the recording's were written so), secrets redacted.
    pub(super) fn comparable(&self, text: &str) -> String {
        self.placeholders.insert(text)
    }

    pub(super) fn rules<'a>(
        &'a self,
        at: &'a ActionAt<'a>,
        earlier: &'a [Option<String>],
    ) -> Rules<'a> {
        Rules {
            volatile: at.volatile,
            instruction: &self.instruction,
            recorded: at.recorded,
            now: (self.session_started, Utc::now()),
            action: at.index,
            earlier,
            relations: at.relations,
        }
    }

    /// Compares one output; a difference is the step's fallback.
    pub(super) fn compare(&self, at: &ActionAt<'_>, expected: &str, seen: &str) -> Checked {
        self.compare_noting(at, expected, seen, false)
    }

    /// [`Self::compare`]; with `note`, a match is kept as what the step's output was seen to be.
    fn compare_noting(&self, at: &ActionAt<'_>, expected: &str, seen: &str, note: bool) -> Checked {
        let mut step = at.seen.lock().unwrap_or_else(|e| e.into_inner());
        let (checked, varied) = super::compare::compare_output_noting(
            self.normalizer,
            &self.rules(at, &step.outputs),
            at.index,
            &at.what,
            &self.comparable(expected),
            &self.comparable(seen),
        );
        if note && checked == Checked::Same {
            let comparable = self.comparable(seen);
            let text = self
                .normalizer
                .normalize_with(&comparable, &self.instruction);
            if step.outputs.len() <= at.index {
                step.outputs.resize(at.index + 1, None);
                step.comparable.resize(at.index + 1, None);
            }
            step.outputs[at.index] = Some(text);
            step.comparable[at.index] = Some(comparable);
            step.varied
                .extend(varied.into_iter().map(|p| (at.index, p)));
        }
        checked
    }

    /// [`Self::compare`] as the replay's result.
    pub(super) fn check(
        &self,
        at: &ActionAt<'_>,
        expected: &str,
        seen: &str,
    ) -> Result<(), Fallback> {
        match self.compare_noting(at, expected, seen, true) {
            Checked::Same => Ok(()),
            Checked::Soft(drift, positions) => Err(Fallback::SoftDrift {
                drift: Box::new(drift),
                learn: positions.into_iter().map(|p| (at.index, p)).collect(),
            }),
            Checked::Hard(drift) => Err(Fallback::hard(drift)),
        }
    }
}

/// Each action's output in the form its replay compares it (a console session's output
/// accumulated up to the action; `None` for an action whose output is not compared): the text
/// in which learned positions count lines and tokens.
pub fn compared_outputs(actions: &[Action]) -> Vec<Option<String>> {
    let mut sessions = super::console::Sessions::default();
    actions
        .iter()
        .map(|action| match action {
            Action::Shell { output, .. } => Some(output.trim_end().to_string()),
            Action::File { check, .. } => Some(super::files::seen(check)),
            Action::Browser { tool, output, .. } => {
                (tool != "browser_take_screenshot").then(|| super::browser::compared(output))
            }
            Action::Console {
                tool,
                arguments,
                output,
                exit_code,
                is_error,
                ..
            } => sessions.compared(*tool, arguments, output, *exit_code, *is_error),
        })
        .collect()
}
