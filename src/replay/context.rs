//! What every replayed action is checked with: the session's side of a replay (its console,
//! values, environment, clock) and the action's place in its step ([`ActionAt`]), with the one
//! comparison of an output against its recording ([`ReplayContext::check`]). Each action kind's
//! file (`console`, `shell`, `files`, `browser/action`) builds on this; the step's order is `replayer`'s.

use super::browser::client::BrowserReplay;
use super::compare::Checked;
use super::domains::{Learned, Relation};
use super::masks::{Position, Rules};
use super::normalize::Normalizer;
use super::placeholders::Placeholders;
use super::verdict::Fallback;
use crate::console::Console;
use crate::model::ids::{RunId, StepId};
use crate::model::provider::AgentShell;
use chrono::{DateTime, Utc};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The agent's own tools a replay runs again as the agent ran them.
#[derive(Clone, Copy)]
pub struct AgentTools<'a> {
    /// How the agent's own shell tool ran its commands.
    pub shell: AgentShell,
    /// The session's browser, through the supervisor's own Playwright MCP client (`None`
    /// without `[browser] mcp = true`: a recording with browser actions then falls back).
    pub browser: Option<&'a BrowserReplay>,
}

/// What a replay needs from its session.
pub struct ReplayContext<'a> {
    /// The session's console: console actions run through it (`None` when `[provider] console`
    /// is off: a recording with console actions then falls back to the agent).
    pub console: Option<&'a Console>,
    pub placeholders: &'a Placeholders,
    pub normalizer: &'a Normalizer,
    /// The run: owner of shell actions' groups.
    pub run_id: RunId,
    pub step_id: StepId,
    /// A shell action's whole environment (the agent's, without the agent's marker).
    pub env: Vec<(String, String)>,
    /// The step's timeout: the longest an action may run when the agent's own tool set no
    /// bound of its own (Codex's and pi's shell, a file check), before the replay falls back.
    pub action_timeout: Duration,
    /// The step's instruction as sent: a value it names is never masked.
    pub instruction: String,
    /// When this replay's session started: a timestamp since then (± 10 minutes) is current.
    pub session_started: DateTime<Utc>,
    /// Where the agent's own tools ran: file checks look from here.
    pub agent_cwd: PathBuf,
}

/// What the step's outputs were seen to be so far (for ties between them), and which learned
/// positions varied (for their expiry).
#[derive(Default)]
pub(super) struct StepSeen {
    pub(super) outputs: Vec<Option<String>>,
    /// The same outputs before normalisation (session values as placeholders), a console
    /// answer's with its status lines: what the agent's stated facts are checked on, as
    /// they were on the recording ([`super::action::fact_outputs`]).
    pub(super) comparable: Vec<Option<super::facts::Shown>>,
    pub(super) varied: Vec<(usize, Position)>,
}

/// The action being replayed: its place, its words, and what its comparison needs.
pub struct ActionAt<'a> {
    pub(super) index: usize,
    pub(super) what: String,
    pub(super) recorded: Option<(DateTime<Utc>, DateTime<Utc>)>,
    pub(super) volatile: &'a [Learned],
    /// The step's relations between timestamps (this action's are checked).
    pub(super) relations: &'a [Relation],
    /// The step's outputs seen so far.
    pub(super) seen: &'a Mutex<StepSeen>,
    /// When the replay's previous action (of any kind) began.
    pub(super) previous_began: Option<Instant>,
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
            step.comparable[at.index] = Some(super::facts::Shown::plain(comparable));
            step.varied
                .extend(varied.into_iter().map(|p| (at.index, p)));
        }
        checked
    }

    /// Puts a console answer's status lines above the output a fact about action `at` reads
    /// (see `ConsoleAction::fact_header`), once that output matched.
    pub(super) fn note_fact_header(&self, at: &ActionAt<'_>, header: &str) {
        let mut step = at.seen.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(Some(shown)) = step.comparable.get_mut(at.index) {
            shown.header = self.comparable(header);
        }
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
