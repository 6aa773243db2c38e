//! Replay as a stage of a session's steps (see docs/replay.md). Before a step goes to the agent,
//! [`ReplaySession::before`] replays its recording: the step passed without the model, or it goes
//! to the agent and the session is told why. After the agent's turn, [`ReplaySession::after`]
//! decides whether its pass can be recorded, and [`ReplaySession::record`] writes it with the
//! facts the agent said it rested on. The recording is loaded once per session and written back
//! after each step it gained, so a run cut short keeps what it learnt.
//!
//! The session actor calls this and nothing else of replay: a new kind of replayed action is
//! [`super::calls`], [`super::record`] and [`super::replayer`]'s business.

use super::browser::client::BrowserReplay;
use super::browser_refs::Snapshot;
use super::calls::{actions_of, last_snapshot, CallsContext};
use super::context::ReplayContext;
use super::error::LoadError;
use super::format::{Action, RecordedStep, Recording};
use super::harness_watch::{watched, WatchRecheck, CAP};
use super::masks::Position;
use super::normalize::Normalizer;
use super::placeholders::{instruction_hash, Placeholders};
use super::record::{learn, relations, Learning};
use super::replayer::{replay_step, AgentTools};
use super::step_report::{add_note, by_the_agent, replayed};
use super::store::{self, StepKey};
use super::told::Told;
use super::verdict::{Fallback, Miss, ReplayVerdict};
use crate::atomic::WriteError;
use crate::console::record::CallRecord;
use crate::console::Console;
use crate::model::ids::{RunId, StepId};
use crate::model::load::RootTest;
use crate::model::outcome::StepStatus;
use crate::model::plan::PlannedStep;
use crate::model::provider::ProviderKind;
use crate::model::replay::{ReplayMode, StepMode, StepReplay};
use crate::model::tool_call::ToolCall;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A session's replay: its recording, and how this session's values are masked.
pub struct ReplaySession {
    mode: ReplayMode,
    provider: ProviderKind,
    test: String,
    path: PathBuf,
    /// The recording as loaded (a fresh one when there is none), or why it cannot be used.
    recording: Result<Recording, LoadError>,
    /// The test's re-recordings waiting for review (docs/replay.md, "A recording never weakens
    /// in silence"), and their file.
    pending: Recording,
    pending_path: PathBuf,
    placeholders: Placeholders,
    normalizer: Normalizer,
    max_age_days: u32,
    /// The agent's environment: what a replayed shell action runs with.
    env: Vec<(String, String)>,
    /// Where the agent's own shell tool runs (`[provider] cwd`).
    agent_cwd: PathBuf,
    /// What the replayed steps did, for the agent's first message.
    told: Told,
    /// When the session started: a timestamp since then is current.
    started_at: chrono::DateTime<chrono::Utc>,
    /// `[replay] audit`.
    audit: crate::model::replay::AuditShare,
    /// The supervisor's own Playwright MCP client (`[browser] mcp = true`), started when a
    /// browser action first replays.
    browser: Option<BrowserReplay>,
    /// The last page snapshot the agent was shown in an earlier step: a ref it names in the
    /// next step may come from there.
    last_snapshot: Option<Snapshot>,
    /// The test's watch of its harness, begun when the harness was ready (at its first step
    /// where the session did not say when; `Some(None)`: nothing long-lived to watch).
    harness: Option<Option<HarnessWatch>>,
    /// The replayed steps whose passes wait for the end of their watch, in order
    /// ([`Self::settle`]).
    held: Vec<HeldStep>,
    /// When the current step began: a timestamp its output showed came after that.
    step_began: Option<chrono::DateTime<chrono::Utc>>,
    /// How long after the harness was ready the agent first acted in the step being recorded.
    first_look: Option<Duration>,
}

/// Whether the browser actions of `recording` need the page in the client's action answers.
fn action_pages(recording: &Recording) -> bool {
    super::browser::tools::needs_action_pages(recording.steps.iter().flat_map(|s| {
        s.actions.iter().filter_map(|a| match a {
            Action::Browser(call) => Some(call.tool.as_str()),
            _ => None,
        })
    }))
}

/// Whether `recording` has a browser action.
fn has_browser_actions(recording: &Recording) -> bool {
    recording
        .steps
        .iter()
        .any(|s| s.actions.iter().any(|a| matches!(a, Action::Browser(_))))
}

/// The session's own values, masked as placeholders in what is recorded.
pub struct SessionValues<'a> {
    /// The session's variables (`BUGATTI_*` and the config's).
    pub vars: &'a BTreeMap<String, String>,
    /// The session's `[ports]`, resolved.
    pub ports: &'a BTreeMap<String, u16>,
    /// The agent's environment: what a replayed shell action runs with.
    pub env: Vec<(String, String)>,
    /// Where the agent's own shell tool runs (`[provider] cwd`).
    pub agent_cwd: &'a Path,
}

/// A session's replay settings, read from its config.
struct ReplaySettings<'a> {
    mode: ReplayMode,
    provider: ProviderKind,
    /// The root test, as its recording names it.
    test: String,
    /// The recording's file.
    path: PathBuf,
    /// The file of its re-recordings waiting for review.
    pending_path: PathBuf,
    placeholders: Placeholders,
    /// `[replay] ignore`.
    ignore: &'a [String],
    max_age_days: u32,
    audit: crate::model::replay::AuditShare,
    env: Vec<(String, String)>,
    agent_cwd: PathBuf,
}

/// One step as the replay stage is given it.
pub struct StepAsked<'a> {
    pub step: &'a PlannedStep,
    /// The step's id in events and reports.
    pub id: StepId,
    /// The instruction as the agent would get it.
    pub instruction: &'a str,
    /// The session's console (`None` when `[provider] console` is off).
    pub console: Option<&'a Console>,
    pub run_id: &'a RunId,
    /// The step's timeout: an action the agent's tool set no bound for is bound as the agent's
    /// step was.
    pub step_timeout: Duration,
}

/// What a step's replay stage came to.
pub enum Before {
    /// The step passed without the model: every recorded action ran again and matched, every
    /// stated fact held.
    Replayed(Replayed),
    /// `[replay] mode = "only"` and the step could not replay: it fails, and no agent is asked.
    NoAgent { message: String, info: StepReplay },
    /// The agent takes the step; what the recording stage needs of it.
    ToAgent(AgentTurn),
}

/// A step that replayed.
pub struct Replayed {
    /// What the step's record says ("replayed: all 3 recorded actions ran again and matched…").
    pub message: String,
    pub info: StepReplay,
    pub took: Duration,
    /// The pass came before the harness watch ended: it stands only once
    /// [`ReplaySession::settle`] says so, and its record waits until then (the next steps may
    /// replay meanwhile).
    pub held: bool,
}

/// A replayed step whose pass waits for the end of its watch.
struct HeldStep {
    check: WatchRecheck,
    key: StepKey,
    instruction: String,
    recorded: RecordedStep,
    pending: Option<String>,
}

/// What a held step came to when the harness watch ended ([`ReplaySession::settle`]).
#[allow(clippy::large_enum_variant)]
pub enum Settled {
    /// Its pass stands.
    Stands,
    /// The harness drifted (at or before the step): the agent takes it, told that its actions
    /// and those replayed after it ran.
    ToAgent(AgentTurn),
    /// As [`Settled::ToAgent`] under `[replay] mode = "only"`: the step fails.
    NoAgent { message: String, info: StepReplay },
}

/// What recording an agent's step needs from its replay stage.
pub struct AgentTurn {
    key: StepKey,
    instruction: String,
    /// Why the step was not replayed (`None`: `record` mode, or an audit).
    fallback: Option<Fallback>,
    /// The recording the step had (a drift, an audit): what varied while the agent passed is
    /// learned from it.
    previous: Option<RecordedStep>,
    /// `[replay] audit` sent it to the agent although it could replay.
    audited: bool,
    /// A re-recording of the step waits for review (what it would drop).
    pending: Option<String>,
}

/// What the agent's step came to, as the recording stage reads it.
pub struct AgentStep<'a> {
    /// The step's status after budgets and the browser's console.
    pub status: StepStatus,
    /// The agent's own verdict, before the browser's console errors made it a warning: a step
    /// the agent passed is recorded, and its replay warns the same way.
    pub judged: StepStatus,
    pub console_calls: &'a [CallRecord],
    pub tool_calls: &'a [ToolCall],
}

/// What the recording stage came to. (Once per step, moved at once: its size does not matter.)
#[allow(clippy::large_enum_variant)]
pub enum After {
    /// Nothing (more) to record: what the step's record says of replay.
    Done(StepReplay),
    /// The pass can be recorded once the agent said which facts it rested on
    /// ([`PendingRecord::question`], then [`ReplaySession::record`]).
    AskFacts(PendingRecord),
}

/// A pass about to be recorded.
pub struct PendingRecord {
    turn: AgentTurn,
    actions: Vec<Action>,
    info: StepReplay,
    /// The actions as the agent is asked about them (this session's values filled in).
    described: Vec<String>,
    /// The agent CLI's version, as its stream named it.
    agent_version: Option<String>,
}

/// What the agent answered to the facts question.
pub enum FactsAnswer {
    /// Its `BUGATTI_FACT` lines (with this session's values, as it saw them); none stated: the
    /// step is compared exactly.
    Stated(Vec<String>),
    /// The question was not answered (why): the step is recorded as if no facts were stated.
    NotAnswered(String),
    /// The agent answered `RESULT ERROR` (its words): it withdrew its pass. The step fails and
    /// nothing is recorded.
    Withdrawn(String),
}

impl PendingRecord {
    /// The facts question about this step.
    pub fn question(&self) -> String {
        super::facts::question(&self.described)
    }
}

/// What the replay's Playwright MCP client runs: the agent's own Playwright MCP command, in the
/// agent's directory with the agent's environment, its processes the run's.
#[derive(Debug, Clone)]
pub struct BrowserClientSpec {
    pub command: crate::browser::mcp::McpCommand,
    pub run_id: RunId,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub run_dir: PathBuf,
    /// With a pooled browser: the client kept with it across sessions.
    pub kept: Option<KeptSlot>,
}

pub use super::browser::client::KeptSlot;
/// The test's watch of its harness, begun by the session's setup when the harness is ready.
pub use super::harness_watch::HarnessWatch;

impl BrowserClientSpec {
    fn client(&self, action_pages: bool) -> BrowserReplay {
        use crate::process::owner::{Owner, Role, Scope};
        let (scope, env) = match &self.kept {
            // A client kept across sessions is the suite's, as its browser: it carries no
            // session's identity (a session's sweep kills what carries its run id) nor token.
            Some(slot) => (
                slot.scope.clone(),
                self.env
                    .iter()
                    .filter(|(name, _)| !name.starts_with("BUGATTI_"))
                    .cloned()
                    .collect(),
            ),
            None => (Scope::run(self.run_id.clone()), self.env.clone()),
        };
        BrowserReplay::new(
            self.command.clone(),
            Owner::new(scope, Role::Other("playwright-mcp (replay)".into())),
            self.cwd.clone(),
            env,
            self.run_dir.clone(),
            action_pages,
        )
        .kept_in(self.kept.clone())
    }
}

/// The replay's Playwright MCP client started ahead, beside the browser's and the harness's
/// start (Node and Playwright MCP take about a second to come up), for a session that will
/// replay browser actions ([`ReplaySession::browser_replay_ahead`]). The session's replay takes
/// it over when it is the client it would run ([`ReplaySession::with_browser_client`]); else it
/// is stopped.
pub struct BrowserAhead(BrowserReplay);

impl BrowserAhead {
    /// Starts the client for `spec` now; with `browser_up`, it attaches once that says the
    /// browser is up (dropped unsent: never).
    pub fn start(
        spec: &BrowserClientSpec,
        action_pages: bool,
        browser_up: Option<tokio::sync::oneshot::Receiver<()>>,
    ) -> Self {
        let client = spec.client(action_pages);
        client.prestart_before_browser(browser_up);
        Self(client)
    }

    pub async fn stop(self) {
        self.0.stop().await;
    }

    /// Ends the client, or hands it back to be kept with the pooled browser when it is sound.
    pub async fn hand_back(self) -> Option<crate::browser::pool::KeptClient> {
        self.0.hand_back().await
    }
}

impl ReplaySession {
    /// `None` where replay does not apply: `[replay] mode = "off"`, or the `shell` provider (it
    /// is deterministic already).
    pub fn new(test: &RootTest, project_root: &Path, values: SessionValues<'_>) -> Option<Self> {
        let effective = &test.effective;
        let mode = effective.replay.mode.value;
        let provider = effective.provider.name.value;
        if !crate::model::replay::applies(mode, provider) {
            return None;
        }
        let mut volatile: Vec<(String, String)> = values
            .vars
            .iter()
            .filter(|(name, _)| is_volatile_builtin(name))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        volatile.extend(values.ports.iter().map(|(n, p)| (n.clone(), p.to_string())));
        volatile.extend(
            values
                .env
                .iter()
                // The console's and the browser's addresses carry a token of the session's.
                .filter(|(name, _)| {
                    name.starts_with("BUGATTI_MCP_") || name == crate::browser::CDP_URL_ENV
                })
                .cloned(),
        );
        let dir = effective.replay.dir_in(project_root);
        Some(Self::open(ReplaySettings {
            mode,
            provider,
            test: test.rel_path.to_string_lossy().into_owned(),
            path: store::recording_path(&dir, &test.rel_path),
            pending_path: store::pending_path(&dir, &test.rel_path),
            placeholders: Placeholders::new(volatile, effective.secret_pairs()),
            ignore: &effective.replay.ignore.value,
            max_age_days: effective.replay.max_age_days.value,
            audit: effective.replay.audit.value,
            env: values.env,
            agent_cwd: values.agent_cwd.to_path_buf(),
        }))
    }

    /// The session's replay from its settings, its recording loaded.
    fn open(setup: ReplaySettings<'_>) -> Self {
        let recording = match store::load(&setup.path, &setup.test) {
            Ok(Some(recording)) => Ok(recording),
            Ok(None) => Ok(Recording::new(setup.test.clone())),
            Err(e) => Err(e),
        };
        // A pending file that cannot be read holds nothing to review here: `replay review` says
        // why; the session goes on with the recording in force.
        let pending = match store::load(&setup.pending_path, &setup.test) {
            Ok(Some(pending)) => pending,
            Ok(None) => Recording::new(setup.test.clone()),
            Err(e) => {
                tracing::warn!("replay: pending recordings not read: {e}");
                Recording::new(setup.test.clone())
            }
        };
        let volatiles = setup.placeholders.volatiles();
        let normalizer = match Normalizer::new(volatiles, setup.ignore) {
            Ok(n) => n,
            // Checked when the config was loaded; should it fail here, mask nothing extra.
            Err(e) => {
                tracing::warn!("[replay] ignore: {e}");
                Normalizer::new(setup.placeholders.volatiles(), &[])
                    .unwrap_or_else(|_| Normalizer::generic())
            }
        };
        Self {
            mode: setup.mode,
            provider: setup.provider,
            test: setup.test,
            path: setup.path,
            recording,
            pending,
            pending_path: setup.pending_path,
            placeholders: setup.placeholders,
            normalizer,
            max_age_days: setup.max_age_days,
            env: setup.env,
            agent_cwd: setup.agent_cwd,
            told: Told::default(),
            started_at: chrono::Utc::now(),
            audit: setup.audit,
            browser: None,
            last_snapshot: None,
            harness: None,
            held: Vec::new(),
            step_began: None,
            first_look: None,
        }
    }

    /// Browser actions replay through `browser`, the client for the agent's own Playwright MCP
    /// command (its output folder and secrets), run in the agent's directory; it may have been
    /// started ahead ([`Self::replays_browser_actions`]).
    pub fn with_browser(mut self, browser: BrowserReplay) -> Self {
        // Started now, beside the rest of the setup, when a browser action may replay.
        if self.replays() && self.has_browser_actions() {
            browser.prestart();
        }
        self.browser = Some(browser);
        self
    }

    /// The harness watch, begun when the harness was ready (`None`: nothing long-lived runs, or
    /// the agent console is off): replayed steps are watched from then, and the agent's first
    /// look is measured from then.
    pub fn with_harness_watch(mut self, watch: Option<HarnessWatch>) -> Self {
        self.harness = Some(watch);
        self
    }

    /// Browser actions replay through the client for `spec`: `ahead`'s, taken over, when it is
    /// that client (see [`BrowserAhead`]), else a new one; `ahead` is left with one that is not.
    pub fn with_browser_client(
        self,
        spec: &BrowserClientSpec,
        ahead: &mut Option<BrowserAhead>,
    ) -> Self {
        let wanted = spec.client(self.browser_action_pages());
        let browser = match ahead.take() {
            Some(BrowserAhead(started)) if started.same_client_as(&wanted) => started,
            other => {
                *ahead = other;
                wanted
            }
        };
        self.with_browser(browser)
    }

    /// Whether `test`'s session will replay browser actions (replay tries steps first and its
    /// recording has some), and if so whether the client's action answers must show the page
    /// ([`super::browser::tools::needs_action_pages`]): its Playwright MCP client is then worth
    /// starting as soon as the browser is up, before this session's replay is set up. A
    /// recording that cannot be read says no (the session's replay reports why).
    pub fn browser_replay_ahead(test: &RootTest, project_root: &Path) -> Option<bool> {
        let effective = &test.effective;
        let mode = effective.replay.mode.value;
        if !crate::model::replay::applies(mode, effective.provider.name.value)
            || !matches!(mode, ReplayMode::Auto | ReplayMode::Only)
        {
            return None;
        }
        let path = store::recording_path(&effective.replay.dir_in(project_root), &test.rel_path);
        let name = test.rel_path.to_string_lossy();
        match store::load(&path, &name) {
            Ok(Some(recording)) if has_browser_actions(&recording) => {
                Some(action_pages(&recording))
            }
            _ => None,
        }
    }

    /// Whether every step `test` sends to the agent has a current recording under `--replay
    /// auto`: its session may never need the agent, so the login pre-check warns instead of
    /// refusing (docs/replay.md). The instruction is not compared here (its `${NAME}`s are the
    /// session's): a step whose instruction changed misses, and goes to the agent.
    pub fn every_step_recorded(test: &RootTest, project_root: &Path) -> bool {
        let effective = &test.effective;
        let mode = effective.replay.mode.value;
        let provider = effective.provider.name.value;
        if mode != ReplayMode::Auto || !crate::model::replay::applies(mode, provider) {
            return false;
        }
        let path = store::recording_path(&effective.replay.dir_in(project_root), &test.rel_path);
        let Ok(Some(recording)) = store::load(&path, &test.rel_path.to_string_lossy()) else {
            return false;
        };
        let now = chrono::Utc::now();
        let max_age_days = effective.replay.max_age_days.value;
        test.plan.iter().filter(|s| !s.skip).all(|s| {
            let Some(recorded) = recording.steps.iter().find(|r| r.step == s.step_id) else {
                return false;
            };
            let key = StepKey {
                step: s.step_id,
                provenance: s.provenance(),
                instruction_hash: recorded.instruction_hash.clone(),
                provider,
            };
            s.replay && recording.lookup(&key, now, max_age_days).is_ok()
        })
    }

    /// Whether the replay's Playwright MCP client must show the page in its action answers
    /// ([`super::browser::tools::needs_action_pages`]); with no recording, as Playwright MCP does.
    pub fn browser_action_pages(&self) -> bool {
        self.recording.as_ref().map_or(true, action_pages)
    }

    /// Whether the recording has a browser action to replay.
    fn has_browser_actions(&self) -> bool {
        self.recording.as_ref().is_ok_and(has_browser_actions)
    }

    /// The screenshots a replay took again (the agent had taken them), relative to the run
    /// directory: the step's evidence.
    pub fn take_screenshots(&self) -> Vec<String> {
        self.browser
            .as_ref()
            .map(BrowserReplay::take_screenshots)
            .unwrap_or_default()
    }

    /// Ends the supervisor's Playwright MCP client, if a replay started it.
    pub async fn stop_browser(&mut self) {
        if let Some(browser) = self.browser.take() {
            browser.stop().await;
        }
    }

    /// As [`Self::stop_browser`], its client handed back to be kept with the pooled browser
    /// when it is sound ([`BrowserReplay::hand_back`]).
    pub async fn hand_back_browser(&mut self) -> Option<crate::browser::pool::KeptClient> {
        match self.browser.take() {
            Some(browser) => browser.hand_back().await,
            None => None,
        }
    }

    /// Replayed steps are tried first (`auto`, `only`): the agent starts only when a step needs it.
    pub fn replays(&self) -> bool {
        matches!(self.mode, ReplayMode::Auto | ReplayMode::Only)
    }

    /// For the agent's first step after replayed ones: what those did, so that it knows the
    /// state it finds. Empty once told.
    pub fn take_summary(&mut self) -> Vec<crate::model::replay::ReplayedStep> {
        self.told.take()
    }

    /// Whether a replayed step's pass may yet be held ([`Replayed::held`]): steps are held, or
    /// the harness watch has not ended (or not begun).
    pub fn may_hold(&self) -> bool {
        if !self.held.is_empty() {
            return true;
        }
        self.replays()
            && match &self.harness {
                None => true,
                Some(None) => false,
                Some(Some(watch)) => std::time::Instant::now() < watch.until(CAP),
            }
    }

    /// Whether steps are held and the watch has ended for all of them: [`Self::settle`] would
    /// not wait.
    pub fn settle_due(&self) -> bool {
        self.held
            .iter()
            .map(|h| h.check.until)
            .max()
            .is_some_and(|until| std::time::Instant::now() >= until)
    }

    /// The held steps' passes, once their watch has ended (it waits until then; `stop`
    /// resolving ends the wait, the steps left as they replayed): each one's check again, in
    /// order. From the first that drifts on, every held step goes to the agent (under `only`:
    /// fails), told which actions ran: the ones after it replayed on a harness the agent had
    /// not yet looked at.
    pub async fn settle<T>(
        &mut self,
        console: Option<&Console>,
        stop: impl Future<Output = T>,
    ) -> Result<Vec<Settled>, T> {
        let held = std::mem::take(&mut self.held);
        if let Some(until) = held.iter().map(|h| h.check.until).max() {
            tokio::select! {
                () = tokio::time::sleep_until(until.into()) => {}
                stopped = stop => return Err(stopped),
            }
        }
        let watch = self.harness.as_ref().and_then(Option::as_ref);
        let mut drift: Option<(StepId, String)> = None;
        let mut settled = Vec::with_capacity(held.len());
        for step in held {
            let why = match (&drift, watch, console) {
                (Some((first, reason)), ..) => Some(Fallback::Failed {
                    action: step.check.last_action,
                    reason: format!(
                        "replayed while the harness was watched, after step {first}, which \
                         drifted: {reason}"
                    ),
                }),
                (None, Some(watch), Some(console)) => step.check.check(watch, console).err(),
                (None, ..) => None,
            };
            let Some(why) = why else {
                settled.push(Settled::Stands);
                continue;
            };
            if drift.is_none() {
                drift = Some((step.check.step, why.to_string()));
            }
            self.told.retaken(step.check.step, &why.to_string());
            settled.push(if self.mode == ReplayMode::Only {
                Settled::NoAgent {
                    message: format!(
                        "not replayed ([replay] mode = \"only\" asks no agent): {why}"
                    ),
                    info: not_replayed(&why, step.pending),
                }
            } else {
                Settled::ToAgent(AgentTurn {
                    key: step.key,
                    instruction: step.instruction,
                    fallback: Some(why),
                    previous: Some(step.recorded),
                    audited: false,
                    pending: step.pending,
                })
            });
        }
        Ok(settled)
    }

    /// The replay stage: the step's recording first; the agent only on a miss, a drift, an
    /// opt-out or an audit. `stop` resolving ends a replay at once, as it ends an agent's step
    /// (`Err` with its output: what the replay started is dropped here and swept with the
    /// session).
    pub async fn before<T>(
        &mut self,
        asked: &StepAsked<'_>,
        stop: impl Future<Output = T>,
    ) -> Result<Before, T> {
        self.step_began = Some(chrono::Utc::now());
        let key = self.key(asked.step, asked.instruction);
        let pending = self.pending_note(&key);
        let turn = |fallback, previous, audited| AgentTurn {
            key: key.clone(),
            instruction: asked.instruction.to_string(),
            fallback,
            previous,
            audited,
            pending: pending.clone(),
        };
        if !self.replays() {
            return Ok(Before::ToAgent(turn(None, None, false)));
        }
        // Where the session did not say when the harness was ready: it is when the first step
        // begins.
        if self.harness.is_none() {
            self.harness = asked.console.map(|c| HarnessWatch::begin(c.harness_logs()));
        }
        let only = self.mode == ReplayMode::Only;
        let (outcome, recorded, held) = if !asked.step.replay {
            (
                ReplayVerdict::Fallback(Fallback::Miss(Miss::OptedOut)),
                None,
                None,
            )
        } else if let (Some(what), false) = (&pending, only) {
            // Until a person decides, the agent takes the step (`--replay only` replays the one
            // in force, and warns).
            let why = Fallback::Miss(Miss::PendingReview(what.clone()));
            return Ok(Before::ToAgent(turn(Some(why), None, false)));
        } else if let Some(previous) = self
            .usable(&key)
            .filter(|_| !only && self.audits(asked.step.step_id))
        {
            return Ok(Before::ToAgent(turn(None, Some(previous), true)));
        } else {
            tokio::select! {
                tried = self.try_step(&key, asked) => tried,
                stopped = stop => return Err(stopped),
            }
        };
        Ok(match (outcome, recorded) {
            (outcome @ ReplayVerdict::Replayed { .. }, Some(recorded)) => {
                let (message, info) = replayed(&recorded, &outcome, &self.placeholders);
                let (took, varied) = match outcome {
                    ReplayVerdict::Replayed { took, varied, .. } => (took, varied),
                    ReplayVerdict::Fallback(_) => (Duration::ZERO, Vec::new()),
                };
                self.told
                    .replayed(&self.placeholders, asked.id, asked.instruction, &recorded);
                self.age(recorded.step, &varied);
                let mut info = info;
                warn_pending(&mut info, pending.clone());
                let is_held = held.is_some();
                if let Some(check) = held {
                    self.held.push(HeldStep {
                        check,
                        key: key.clone(),
                        instruction: asked.instruction.to_string(),
                        recorded,
                        pending,
                    });
                }
                Before::Replayed(Replayed {
                    message,
                    info,
                    took,
                    held: is_held,
                })
            }
            (ReplayVerdict::Fallback(why), _) if only => {
                // A drift is not "no recording": say what stopped the replay.
                let message = match &why {
                    Fallback::Miss(_) | Fallback::Unreadable(_) => format!(
                        "no usable recording ([replay] mode = \"only\" asks no agent): {why}"
                    ),
                    _ => format!("not replayed ([replay] mode = \"only\" asks no agent): {why}"),
                };
                Before::NoAgent {
                    message,
                    info: not_replayed(&why, pending),
                }
            }
            (ReplayVerdict::Fallback(why), previous) => {
                // A drift mid-step: the agent is told which of its actions already ran.
                let stopped = match &why {
                    // An element not found on the page: that action never ran.
                    Fallback::Drift(d) | Fallback::SoftDrift { drift: d, .. } => {
                        Some((d.action, d.field != "element"))
                    }
                    Fallback::Failed { action, .. } => Some((*action, false)),
                    _ => None,
                };
                if let (Some((at, drifted)), Some(recorded)) = (stopped, previous.as_ref()) {
                    self.told
                        .partial(&self.placeholders, asked.id, recorded, at, drifted);
                }
                Before::ToAgent(turn(Some(why), previous, false))
            }
            (ReplayVerdict::Replayed { .. }, None) => Before::ToAgent(turn(None, None, false)),
        })
    }

    /// The recording stage, after the agent's turn: an audited failure's recording deleted (its
    /// `message` says so), and whether the pass can be recorded.
    pub fn after(&mut self, turn: AgentTurn, step: AgentStep<'_>, message: &mut String) -> After {
        let after = self.decide(turn, &step, message);
        // The last page the agent was shown, for the refs of the next step.
        if let Some(last) = last_snapshot(step.tool_calls, self.browser_output_dir()) {
            self.last_snapshot = Some(last);
        }
        after
    }

    fn decide(&mut self, turn: AgentTurn, step: &AgentStep<'_>, message: &mut String) -> After {
        let mut info = by_the_agent(turn.fallback.as_ref());
        info.audited = turn.audited;
        info.pending_review = turn.pending.clone();
        let failed = !matches!(step.status, StepStatus::Ok | StepStatus::Warn);
        // The agent judged the app failing (`RESULT ERROR`): not a timeout, a budget or a fault
        // of the agent's own, none of which says the recording would pass a failing step.
        let judged_failing = step.judged == StepStatus::Error;
        if turn.audited && judged_failing {
            info.audit_disagreed = true;
            let retired = self.retire_words(&turn.key, "an audit");
            *message =
                format!("{message} (audit: replay would have passed a failing step; {retired})");
            add_note(&mut info, format!("audit: {retired}"));
        } else if judged_failing && self.mode == ReplayMode::Record {
            // The recording from before would pass the step the agent just failed.
            if self.in_force(&turn.key).is_some() {
                let retired = self.retire_words(&turn.key, "--replay record");
                add_note(&mut info, retired);
            }
        }
        if !matches!(self.mode, ReplayMode::Auto | ReplayMode::Record) {
            return After::Done(info);
        }
        if step.judged != StepStatus::Ok || failed {
            add_note(
                &mut info,
                format!(
                    "not recorded: the step ended {}, and only a step the agent passed (RESULT OK) \
                     is recorded",
                    step.status.as_str()
                ),
            );
            return After::Done(info);
        }
        let harness = self.harness.as_ref().and_then(Option::as_ref);
        self.first_look = harness.and_then(|w| w.first_look(step.console_calls, step.tool_calls));
        let ctx = CallsContext {
            placeholders: &self.placeholders,
            agent_cwd: &self.agent_cwd,
            last_snapshot: self.last_snapshot.as_ref(),
            browser_output_dir: self.browser_output_dir(),
        };
        match actions_of(&ctx, step.console_calls, step.tool_calls) {
            Ok(actions) => {
                let described = actions
                    .iter()
                    .map(|a| self.placeholders.fill(&a.describe()))
                    .collect();
                let agent_version = step
                    .tool_calls
                    .iter()
                    .find_map(|c| c.shell.as_ref()?.cli_version.clone());
                After::AskFacts(PendingRecord {
                    turn,
                    actions,
                    info,
                    described,
                    agent_version,
                })
            }
            Err(why) => {
                add_note(&mut info, format!("not recorded: {why}"));
                After::Done(info)
            }
        }
    }

    /// Writes the agent's pass with the facts it stated (each must hold on the outputs it saw,
    /// else the step is not recorded). `cost_usd`: what the step cost, kept as what a replay saves.
    pub fn record(
        &mut self,
        pending: PendingRecord,
        answer: FactsAnswer,
        cost_usd: Option<f64>,
    ) -> StepReplay {
        let PendingRecord {
            turn,
            actions,
            mut info,
            agent_version,
            ..
        } = pending;
        let facts = match answer {
            FactsAnswer::Withdrawn(why) => {
                add_note(
                    &mut info,
                    format!(
                        "not recorded: the agent withdrew its pass when asked its facts ({why})"
                    ),
                );
                return info;
            }
            FactsAnswer::NotAnswered(note) => {
                add_note(&mut info, note);
                Vec::new()
            }
            // Stored as the outputs are: with this session's values as placeholders.
            FactsAnswer::Stated(stated) if stated.is_empty() => {
                add_note(
                    &mut info,
                    "the agent stated no facts its pass rested on: its replays compare exactly"
                        .into(),
                );
                Vec::new()
            }
            FactsAnswer::Stated(stated) => {
                let stated: Vec<String> =
                    stated.iter().map(|f| self.placeholders.insert(f)).collect();
                match held_on_recording(&stated, &actions, turn.previous.as_ref()) {
                    Ok(facts) => facts,
                    Err(why) => {
                        add_note(&mut info, format!("not recorded: {why}"));
                        return info;
                    }
                }
            }
        };
        info.facts = facts.clone();
        let soft: &[(usize, Position)] = match &turn.fallback {
            Some(Fallback::SoftDrift { learn, .. }) => learn,
            _ => &[],
        };
        let previous = turn.previous.as_ref().map(|p| (p, soft));
        match self.write(&turn, actions, cost_usd, previous, facts, agent_version) {
            Ok(Written::InForce) => {
                info.recorded = true;
                info.pending_review = None;
            }
            Ok(Written::Pending(note)) => {
                add_note(&mut info, note.clone());
                info.pending_review = Some(note);
            }
            Err(why) => add_note(&mut info, format!("not recorded: {why}")),
        }
        info
    }
}

/// The built-in variables whose values differ every session.
fn is_volatile_builtin(name: &str) -> bool {
    matches!(
        name,
        "BUGATTI_RUN_ID"
            | "BUGATTI_SESSION_ID"
            | "BUGATTI_RUN_DIR"
            | "BUGATTI_WORKDIR"
            | "BUGATTI_PROJECT_ROOT"
    )
}

/// `stated` when every fact parses and holds on the outputs of `actions` as recorded; else why
/// not (the step is then not recorded). `differs from the recording` is checked against
/// `previous` (the recording this pass renews, when it has the same actions) and otherwise
/// left to the replays.
fn held_on_recording(
    stated: &[String],
    actions: &[Action],
    previous: Option<&RecordedStep>,
) -> Result<Vec<String>, String> {
    let refs_masked = super::action::refs_masked(actions);
    let facts = super::facts::parse(stated, &refs_masked).map_err(|e| match e {
        super::facts::FactsRefused::Bad(e) => format!("a fact the agent stated is not one: {e}"),
        refused => format!("the facts the agent stated are refused: {refused}"),
    })?;
    let outputs = super::action::fact_outputs(actions);
    let before = previous
        .filter(|p| {
            p.actions.len() == actions.len()
                && p.actions.iter().zip(actions).all(|(a, b)| a.same_input(b))
        })
        .map(|p| super::action::fact_outputs(&p.actions));
    let now = chrono::Utc::now();
    match super::facts::first_false_when_recorded(&facts, &outputs, before.as_deref(), now) {
        Some((fact, why)) => Err(format!(
            "the fact `{}` the agent stated does not hold on the outputs it saw: {why}",
            fact.text
        )),
        None => Ok(stated.to_vec()),
    }
}

/// Where an agent's pass was written.
enum Written {
    /// In force: the recording the next run replays.
    InForce,
    /// Kept for review: it would drop what the note says.
    Pending(String),
}

/// A `--replay only` step whose re-recording waits for review: the one in force ran, and the
/// step's record says what waits.
/// The record of a step that could not replay under `[replay] mode = "only"`: it fails.
fn not_replayed(why: &Fallback, pending: Option<String>) -> StepReplay {
    let mut info = by_the_agent(Some(why));
    info.mode = StepMode::NotReplayed;
    warn_pending(&mut info, pending);
    info
}

fn warn_pending(info: &mut StepReplay, pending: Option<String>) {
    if let Some(what) = pending {
        add_note(info, format!("replayed the recording in force; {what}"));
        info.pending_review = Some(what);
    }
}

mod in_force;

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
