//! The SessionActor: one root-test attempt, from its run directory to its final report.
//!
//! Order (docs/reports.md "What a run leaves behind"): run directory and reporter record → workspace → ports
//! and env → short-lived commands → long-lived commands → readiness → `[checkpoint] restore`
//! (`--from-checkpoint`) → agent start and bootstrap → steps in order (a passed checkpoint step's
//! save right after it) → teardown (agent and every command, concurrently) → final report →
//! workspace kept or removed.
//!
//! The actor's mailbox must stay free while a step runs, so that a shutdown, a dying server or a
//! dying agent is seen at once: the linear flow above runs in a *driver* task the actor owns, and
//! the actor steers it through a stop signal. Harness and agent news arrive as messages; the
//! actor turns them into report events. If the actor dies (a panic), the driver is aborted with
//! it and the supervisor, told by ractor's supervision, cleans up the run's processes.

mod agent_stage;
mod checkpoints;
mod facts;
mod kit;
mod policy;
mod replay_stage;
mod setup;
mod step_events;
mod steps;
mod teardown;

use crate::model::ids::StepId;
use crate::model::ids::{RunId, SessionId, SuiteId};
use agent_stage::*;
use kit::{AgentNews, AgentSlot, SessionKit};
use replay_stage::*;
use steps::*;

use crate::actors::agent::{AgentActor, AgentArgs, AgentMsg};
use crate::actors::budget::Budget;
use crate::actors::checkpoint::{CheckpointFailure, CheckpointJob};
use crate::actors::harness::{setup_state, Harness};
use crate::actors::queue::Attempt;
use crate::actors::reporter::{Notices, RunEvents};
use crate::actors::session_plan::{
    agent_spec, command_specs, session_vars, skipped_commands, step_vars, SessionIdentity,
    SessionVars,
};
use crate::actors::supervisor::SupervisorMsg;
use crate::console::logs::LogSource;
use crate::console::server::ConsoleServer;
use crate::console::{Console, ConsoleSetup};
use crate::model::artifacts::{self, RunPaths};
use crate::model::assets::prepare_instruction;
use crate::model::checkpoint::CheckpointPaths;
use crate::model::config::{CommandScope, KeepWorkspace, PortSpec};
use crate::model::load::RootTest;
use crate::model::outcome::{RunOutcome, StepStatus};
use crate::model::plan::PlannedStep;
use crate::process::event::{HarnessEvent, HarnessEventKind};
use crate::process::owner::Scope;
use crate::process::record::HarnessRecord;
use crate::process::teardown::{grace_is_over, sweep_run};
use crate::providers::{AgentEvent, StepRequest, StepVerdict};
use crate::report::ground::error::ReportError;
use crate::report::live::console::stderr_notice;
use crate::report::records::events::{
    millis, summarize_instruction, CheckpointAction, EventKind, PortRetry, Provenance, SetupState,
    Usage,
};
use crate::report::records::evidence::problem as evidence_problem;
use crate::report::records::excerpt::LogMarks;
use crate::report::records::run_record::{
    CommandRecord, ConfigRow, PlanEntry as ReportStep, PlannedCommand, RunIdentity, RunPlan,
};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tracing::Instrument;

/// Test-only fault injection: a session whose test file path contains this value panics when its
/// first step starts (proves that one session's panic fails only that test).
#[cfg(feature = "fault-injection")]
pub const FAULT_PANIC_ENV: &str = "BUGATTI_FAULT_PANIC_IN";

/// Test-only fault injection: a session whose test file path contains this value has its driver
/// (the task that runs the steps) panic mid-step (proves that a panic outside the actor's own
/// handler still ends that run with its records).
#[cfg(feature = "fault-injection")]
pub const FAULT_DRIVER_PANIC_ENV: &str = "BUGATTI_FAULT_DRIVER_PANIC_IN";

/// How long the agent gets to answer `Close` before the session moves on (its process group is
/// in the registry either way).
const AGENT_CLOSE_LIMIT: Duration = Duration::from_secs(30);

/// What every session of an invocation shares.
pub struct SuiteContext {
    pub suite_id: SuiteId,
    /// The `TRACEPARENT` the supervisor was started under, if valid: the suite's trace.
    pub traceparent: Option<String>,
    pub project_root: PathBuf,
    pub artifact_dir: PathBuf,
    pub reporter: ActorRef<crate::actors::reporter::ReporterMsg>,
    pub skip_cmd: Vec<String>,
    pub skip_readiness: Vec<String>,
    /// `--from-checkpoint NAME`: restore it after setup and skip the steps up to it.
    pub from_checkpoint: Option<String>,
    /// Ports of suite-scoped commands: every session sees the same value.
    pub shared_ports: BTreeMap<String, u16>,
    /// The suite-scoped commands as they stand (kept by the supervisor), for each run's record.
    pub suite_commands: SuiteCommands,
    /// What the suite has spent on agents, and its ceilings.
    pub budget: Arc<Budget>,
    /// The lasting agent faults that ended root tests (the circuit breaker).
    pub agent_faults: Arc<crate::actors::breaker::FaultBreaker>,
    /// How many agents go to the model at once (`-j` at most, fewer while the API limits them).
    pub model_gate: crate::actors::model_gate::ModelGate,
    /// The browsers kept across sessions (docs/browser.md, "One browser per worker").
    pub browser_pool: crate::browser::pool::BrowserPool,
}

/// The suite-scoped commands' records, updated as their events come.
pub type SuiteCommands = Arc<std::sync::Mutex<Vec<CommandRecord>>>;

pub struct SessionArgs {
    pub test: Arc<RootTest>,
    pub attempt: Attempt,
    /// The run's event outlet (its id and clock), made by the supervisor.
    pub events: RunEvents,
    pub suite: Arc<SuiteContext>,
    pub supervisor: ActorRef<SupervisorMsg>,
}

/// Why the driver must stop early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// A signal or the deadline; what it was (`SIGINT`, `the --timeout deadline (60s) passed`).
    Interrupted(String),
    /// A long-lived command died with no restart left (or its readiness failed after one).
    HarnessGaveUp(String),
    AgentDied(String),
}

impl StopReason {
    /// The message of the step this stop cut off.
    fn cut_off_message(&self) -> String {
        match self {
            Self::Interrupted(cause) => format!("interrupted: {cause}"),
            Self::HarnessGaveUp(why) | Self::AgentDied(why) => format!("interrupted: {why}"),
        }
    }
}

pub enum SessionMsg {
    /// Shutdown: stop the running step, tear down, report `interrupted`, naming the cause.
    Interrupt(String),
    Harness(HarnessEvent),
    /// Every harness event forwarded before this one has been reported: the driver waits for it
    /// before the run's last events, so a setup's own failure (its `timed_out`, its exit code)
    /// is never recorded after the run it failed has finished.
    HarnessFlushed(tokio::sync::oneshot::Sender<()>),
    Agent(AgentEvent),
    /// The driver is about to send step `step_id` (a point for fault injection).
    StepStarting(StepId),
    /// The driver finished: the run's files are final.
    DriverDone(RunOutcome),
    /// The driver's task panicked: the session fails, as if it had panicked itself, so the
    /// supervisor ends the run as an `error` with its records (`on_session_failed`).
    DriverPanicked(String),
}

pub struct SessionState {
    /// This run's id (the same as `events.run_id()`); set at start, never changes.
    run_id: RunId,
    /// Asks the driver to stop; the first reason wins (set by interrupts, a command that gave up,
    /// the agent's death, a failed child actor).
    stop: watch::Sender<Option<StopReason>>,
    /// The run's event outlet, shared with the driver; events from harness and agent news go here.
    events: RunEvents,
    /// Last exit status seen per command, to report with its restart.
    last_exit: HashMap<String, String>,
    /// `BUGATTI_FAULT_PANIC` matched this test: panic before a step (fault tests only).
    #[cfg(feature = "fault-injection")]
    fault_panic: bool,
    /// The provider resumes a dead agent at its next step (claude-code, codex): its death
    /// between steps is the watchdog's to answer, not a reason to stop the session.
    agent_restartable: bool,
    /// The driver task; `None` once it reported `DriverDone`. Dropping it aborts the driver.
    driver: Option<AbortOnDrop>,
    /// Told `SessionDone` when the driver finishes.
    supervisor: ActorRef<SupervisorMsg>,
    /// Which root test and attempt this is, for the supervisor's queue.
    attempt: Attempt,
}

/// Aborts the driver task when the session's state is dropped (also after a panic).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub struct SessionActor;

impl Actor for SessionActor {
    type Msg = SessionMsg;
    type State = SessionState;
    type Arguments = SessionArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<SessionMsg>,
        args: SessionArgs,
    ) -> Result<SessionState, ActorProcessingErr> {
        let (stop, stop_rx) = watch::channel(None);
        let run_id = args.events.run_id().clone();
        // Before any process of the run starts: its final sweep looks among later ones only.
        crate::process::teardown::run_begins(run_id.as_str());
        #[cfg(feature = "fault-injection")]
        let fault_panic = std::env::var(FAULT_PANIC_ENV).is_ok_and(|needle| {
            !needle.is_empty() && args.test.rel_path.to_string_lossy().contains(&needle)
        });
        let agent_restartable = args.test.effective.provider.name.value.info().resumes;
        #[cfg(feature = "fault-injection")]
        let fault_driver_panic = std::env::var(FAULT_DRIVER_PANIC_ENV).is_ok_and(|needle| {
            !needle.is_empty() && args.test.rel_path.to_string_lossy().contains(&needle)
        });
        let tokens = SessionTokens::new();
        let secrets = Arc::new(crate::model::redact::Secrets::new(secret_pairs(
            &args.test, &tokens,
        )));
        let driver = Driver {
            #[cfg(feature = "fault-injection")]
            fault_driver_panic,
            test: Arc::clone(&args.test),
            attempt: args.attempt,
            suite: Arc::clone(&args.suite),
            run_id: run_id.clone(),
            session_id: SessionId::fresh(),
            tokens,
            secrets,
            events: args.events.clone(),
            myself: myself.clone(),
            stop: stop_rx,
            held_events: std::sync::Mutex::default(),
        };
        // A root span: ractor carries the sender's span with each message, so a span created while
        // handling the previous session's end would nest every session inside the one before.
        let span = tracing::info_span!(parent: None, "run", run_id = %run_id);
        let session = myself.clone();
        let handle = tokio::spawn(
            async move {
                // A panic in the driver would otherwise end only this task: no `DriverDone`, the
                // session waiting for ever, the run never finalised.
                use futures::FutureExt;
                let ran = std::panic::AssertUnwindSafe(driver.run())
                    .catch_unwind()
                    .await;
                let _ = session.cast(match ran {
                    Ok(outcome) => SessionMsg::DriverDone(outcome),
                    Err(panic) => SessionMsg::DriverPanicked(panic_text(panic.as_ref())),
                });
            }
            .instrument(span),
        );
        Ok(SessionState {
            run_id,
            stop,
            events: args.events,
            last_exit: HashMap::new(),
            #[cfg(feature = "fault-injection")]
            fault_panic,
            agent_restartable,
            driver: Some(AbortOnDrop(handle)),
            supervisor: args.supervisor,
            attempt: args.attempt,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<SessionMsg>,
        message: SessionMsg,
        state: &mut SessionState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SessionMsg::Interrupt(cause) => {
                state.stop_with(StopReason::Interrupted(cause));
            }
            SessionMsg::Harness(event) => state.on_harness_event(event),
            SessionMsg::HarnessFlushed(done) => {
                let _ = done.send(());
            }
            SessionMsg::Agent(event) => state.on_agent_event(event),
            #[cfg_attr(not(feature = "fault-injection"), allow(unused_variables))]
            SessionMsg::StepStarting(step_id) =>
            {
                #[cfg(feature = "fault-injection")]
                if state.fault_panic {
                    panic!("injected fault: session panicked before step {step_id}");
                }
            }
            SessionMsg::DriverPanicked(why) => {
                state.driver = None;
                return Err(format!("its driver panicked: {why}").into());
            }
            SessionMsg::DriverDone(outcome) => {
                state.driver = None;
                let _ = state.supervisor.cast(SupervisorMsg::SessionDone {
                    attempt: state.attempt,
                    run_id: state.run_id.clone(),
                    outcome,
                });
                myself.stop(None);
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<SessionMsg>,
        message: SupervisionEvent,
        state: &mut SessionState,
    ) -> Result<(), ActorProcessingErr> {
        // The harness and the agent are linked children; their ends must not stop the session
        // (ractor's default). A child that *fails* is reported and ends the run.
        if let SupervisionEvent::ActorFailed(who, err) = message {
            tracing::error!("session child {who:?} failed: {err}");
            state.stop_with(StopReason::AgentDied(format!(
                "an actor of the session failed: {err}"
            )));
        }
        Ok(())
    }
}

impl SessionState {
    fn stop_with(&self, reason: StopReason) {
        self.stop.send_if_modified(|current| {
            let fresh = current.is_none();
            if fresh {
                *current = Some(reason);
            }
            fresh
        });
    }

    fn emit(&self, kind: EventKind) {
        let _ = self.events.emit(kind);
    }

    fn on_harness_event(&mut self, event: HarnessEvent) {
        let command = event.command;
        let state = setup_state(
            &event.kind,
            self.last_exit.get(&command).map(String::as_str),
        );
        match event.kind {
            HarnessEventKind::Exited { status, .. } => {
                self.last_exit.insert(command.clone(), status.to_string());
            }
            HarnessEventKind::GaveUp { reason } => {
                self.stop_with(StopReason::HarnessGaveUp(format!(
                    "long-lived command `{command}` failed: {reason}"
                )));
            }
            _ => {}
        }
        self.emit(EventKind::SetupStatus { command, state });
    }

    /// What the driver hands over from the agent's news: bootstrap notes and the agent's death
    /// (a step's logs and evidence it reports itself, in order with the step's verdict).
    fn on_agent_event(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::Log { message, .. } => {
                tracing::info!("agent log during bootstrap: {message}");
            }
            AgentEvent::Evidence { evidence, .. } => {
                tracing::info!(
                    "agent evidence during bootstrap: {} {}",
                    evidence.kind,
                    evidence.path
                );
            }
            AgentEvent::Exited(death) if self.agent_restartable => {
                // The next step finds it dead and the watchdog restarts it; after the last
                // step it is gone already, and that harms nothing.
                tracing::warn!("the agent exited between steps: {death}");
            }
            AgentEvent::Exited(death) => {
                self.stop_with(StopReason::AgentDied(format!(
                    "the agent exited during the run: {death}"
                )));
            }
            AgentEvent::Restarted { step_id, reason } => {
                self.emit(EventKind::AgentRestarted { step_id, reason });
            }
        }
    }
}

/// The linear flow of one session, run in its own task.
struct Driver {
    test: Arc<RootTest>,
    attempt: Attempt,
    suite: Arc<SuiteContext>,
    run_id: RunId,
    session_id: SessionId,
    tokens: SessionTokens,
    /// `[secrets]` and the tokens, searched in one automaton built once per run: the run's
    /// records and its harness's output redact with the same set.
    secrets: Arc<crate::model::redact::Secrets>,
    /// The run's event outlet (shared with the session actor).
    events: RunEvents,
    myself: ActorRef<SessionMsg>,
    stop: watch::Receiver<Option<StopReason>>,
    /// The events of steps whose record waits (a replayed pass held until the harness watch
    /// ends, docs/replay.md): stamped when they happened, sent when the steps settle
    /// (`None`: events go out at once).
    held_events: std::sync::Mutex<Option<Vec<crate::report::records::events::Event>>>,
    /// `BUGATTI_FAULT_DRIVER_PANIC_IN` matched this test: panic once a step has started (fault
    /// tests only).
    #[cfg(feature = "fault-injection")]
    fault_driver_panic: bool,
}

/// The session's own secrets: the browser's DevTools token and the console's bearer token. Made
/// before anything runs, so that every redaction of the run (its logs, transcripts, run.json)
/// knows them before any process could print them.
#[derive(Debug, Clone)]
struct SessionTokens {
    cdp: String,
    console: String,
}

impl SessionTokens {
    fn new() -> Self {
        Self {
            cdp: crate::browser::endpoint::new_token(),
            console: crate::browser::endpoint::new_token(),
        }
    }
}

/// `[secrets]` and the session's own tokens: everything the run's records redact.
fn secret_pairs(test: &RootTest, tokens: &SessionTokens) -> Vec<(String, String)> {
    let mut pairs = test.effective.secret_pairs();
    pairs.push(("BUGATTI_CDP_TOKEN".into(), tokens.cdp.clone()));
    pairs.push(("BUGATTI_MCP_TOKEN".into(), tokens.console.clone()));
    pairs
}

/// How a phase of the run ended, when not by going on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ending {
    outcome: RunOutcome,
    message: Option<String>,
}

impl Ending {
    fn error(message: impl Into<String>) -> Self {
        Self {
            outcome: RunOutcome::Error,
            message: Some(message.into()),
        }
    }

    fn from_stop(reason: StopReason) -> Self {
        match reason {
            StopReason::Interrupted(cause) => Self {
                outcome: RunOutcome::Interrupted,
                message: Some(format!("interrupted: {cause}")),
            },
            StopReason::HarnessGaveUp(m) | StopReason::AgentDied(m) => Self::error(m),
        }
    }
}

/// What a setup has started so far (all of it, once it is done: the [`SessionKit`] given
/// back), for teardown.
#[derive(Default)]
struct Started {
    harness: Option<Harness>,
    agent: Option<ActorRef<AgentMsg>>,
    workdir: Option<PathBuf>,
    /// The agent console's MCP server (`[provider] console`), stopped with the session.
    console: Option<ConsoleServer>,
    /// Replay and recording (see docs/replay.md), where they apply.
    replay: Option<crate::replay::session::ReplaySession>,
    /// The session's browser (`[browser]`, docs/browser.md), ended with the harness.
    browser: Option<crate::browser::SessionBrowser>,
    /// The agent's Playwright MCP command for the browser, with the `PATH` it was found on: its
    /// config and secrets files are written once, and a client started ahead reads them.
    browser_mcp: Option<(Option<String>, crate::browser::mcp::McpCommand)>,
    /// The replay's Playwright MCP client, started ahead beside the harness's start; the
    /// session's replay takes it over (or it is stopped with the session).
    replay_browser: Option<crate::replay::session::BrowserAhead>,
    /// The browser's `BUGATTI_CDP_URL`, known before it is up (its endpoint's listener is bound
    /// ahead): the replay's client starts beside the browser.
    early_cdp_url: Option<String>,
    /// Where the replay's client kept with a pooled browser is found and handed back.
    kept_replay: Option<crate::replay::session::KeptSlot>,
    /// Asks the harness's event forwarder to hand the session everything it holds, then answer.
    harness_flush: Option<crate::process::event::HarnessFlush>,
    /// The harness watch of replay (docs/replay.md, "What replay watches"), begun the moment
    /// the harness was ready (`Some(None)`: nothing long-lived runs).
    harness_watch: Option<Option<crate::replay::session::HarnessWatch>>,
}

impl Started {
    /// The browser's `BUGATTI_CDP_URL`: the running browser's, else the one its endpoint's
    /// listener, bound ahead, will serve.
    fn cdp_url(&self) -> Option<String> {
        match &self.browser {
            Some(browser) => Some(browser.cdp_url()),
            None => self.early_cdp_url.clone(),
        }
    }
}

/// Waits until the session has reported every harness event sent so far (see
/// [`SessionMsg::HarnessFlushed`]); a forwarder or session already gone has nothing to flush.
async fn flush_harness_events(flush: Option<crate::process::event::HarnessFlush>) {
    if let Some(flush) = flush {
        crate::process::event::wait_for_flush(&flush).await;
    }
}

impl Driver {
    fn emit(&self, kind: EventKind) {
        let mut held = self
            .held_events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match held.as_mut() {
            Some(held) => held.push(self.events.clock().event(kind)),
            None => {
                let _ = self.events.emit(kind);
            }
        }
    }

    /// From now on the session's events wait, until [`Self::take_held_events`].
    fn hold_events(&self) {
        let mut held = self
            .held_events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        held.get_or_insert_with(Vec::new);
    }

    /// The events that waited, in order; events go out at once again.
    fn take_held_events(&self) -> Vec<crate::report::records::events::Event> {
        self.held_events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .unwrap_or_default()
    }

    /// Sends events that waited.
    fn send_events(&self, events: Vec<crate::report::records::events::Event>) {
        for event in events {
            let _ = self.events.send(event);
        }
    }

    fn run_dir(&self) -> PathBuf {
        self.run_paths().dir
    }

    fn run_paths(&self) -> RunPaths {
        RunPaths::under(&self.suite.artifact_dir, &self.run_id)
    }

    fn stopped(&self) -> Option<StopReason> {
        self.stop.borrow().clone()
    }

    /// Waits until a stop is requested.
    async fn until_stopped(mut stop: watch::Receiver<Option<StopReason>>) -> StopReason {
        loop {
            if let Some(reason) = stop.borrow_and_update().clone() {
                return reason;
            }
            if stop.changed().await.is_err() {
                // The session is gone: nothing will ask again.
                std::future::pending::<()>().await;
            }
        }
    }

    async fn run(&self) -> RunOutcome {
        let plan = self.run_plan();
        let notices = Notices::new(self.events.reporter().clone());
        match self.events.open(plan, Arc::clone(&self.secrets)).await {
            Ok(_paths) => {}
            Err(e @ ReportError::ReporterGone(_)) => {
                stderr_notice(&e.to_string());
                return RunOutcome::Error;
            }
            Err(e) => {
                notices.send(format!(
                    "cannot create the run directory {}: {e}",
                    self.run_dir().display()
                ));
                return RunOutcome::Error;
            }
        }
        tracing::info!(
            test = %self.test.rel_path.display(),
            attempt = self.attempt.number,
            "session started"
        );
        let mut started = Started::default();
        let spent_before = self.suite.budget.test_spent(&self.test.rel_path);
        let ending = self.setup_and_steps(&mut started).await;
        self.suite
            .budget
            .run_finished(self.suite.budget.test_spent(&self.test.rel_path) - spent_before);
        let harness_flush = started.harness_flush.take();
        started.tear_down(self, &ending).await;
        flush_harness_events(harness_flush).await;
        let outcome = ending.outcome;
        tracing::info!(outcome = outcome.as_str(), "session finished");
        self.emit(EventKind::RunFinished {
            outcome,
            message: ending.message,
        });
        match self.events.close().await {
            Ok(_) => {}
            Err(e @ ReportError::ReporterGone(_)) => stderr_notice(&e.to_string()),
            Err(e) => notices.send(format!(
                "the report of run {} is incomplete: {e}",
                self.run_id
            )),
        }
        outcome
    }

    fn run_plan(&self) -> RunPlan {
        let effective = &self.test.effective;
        RunPlan {
            identity: RunIdentity {
                run_id: self.run_id.clone(),
                session_id: self.session_id.clone(),
                suite_id: self.suite.suite_id.clone(),
                test_file: self.test.rel_path.display().to_string(),
                test_name: self.test.name.clone(),
                quarantined: self.test.quarantined,
                project_root: self.suite.project_root.display().to_string(),
                provider: effective.provider.name.value.into(),
                run_dir: self.run_dir().display().to_string(),
                attempt: self.attempt.number,
                repeat: self.attempt.repeat,
                max_attempts: effective.supervisor.retries.value.count.saturating_add(1),
                retry_wait_ms: self.attempt.waited_ms,
                started_at: self.events.clock().started_at(),
                traceparent: self.suite.traceparent.clone(),
            },
            skipped_commands: skipped_commands(&self.test, &self.suite.skip_cmd),
            steps: self
                .test
                .plan
                .iter()
                .map(|s| ReportStep {
                    step_id: s.step_id,
                    provenance: provenance(s),
                    instruction: s.instruction.clone(),
                    timeout_secs: Some(s.timeout.value.as_secs()),
                })
                .collect(),
            commands: effective
                .commands
                .values()
                .filter(|c| c.scope == CommandScope::Test)
                .map(|c| PlannedCommand {
                    name: c.name.clone(),
                    kind: c.kind.as_str().to_string(),
                    log: artifacts::command_log_rel(&c.name),
                })
                // docs/browser.md: the session's browser is one of its harness processes.
                .chain(effective.browser.as_ref().map(|_| PlannedCommand {
                    name: setup::BROWSER.to_string(),
                    kind: "browser".to_string(),
                    log: artifacts::command_log_rel(setup::BROWSER),
                }))
                .collect(),
            // A poisoned lock still holds plain records: use them.
            suite_commands: self
                .suite
                .suite_commands
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            effective_config: effective
                .rows()
                .into_iter()
                .map(|(key, value, source)| ConfigRow {
                    key,
                    value,
                    source: source.as_str().to_string(),
                })
                .collect(),
        }
    }

    /// Setup, then the agent (unless replay tries steps first: it starts when a step needs
    /// it, docs/replay.md), then the steps; `started` is what teardown has to end.
    async fn setup_and_steps(&self, started: &mut Started) -> Ending {
        let mut kit = match setup::Setup::new(self, started).kit().await {
            Ok(kit) => kit,
            Err(ending) => return ending,
        };
        let replays_first = kit.replay.as_ref().is_some_and(|r| r.replays());
        let ending = match replays_first {
            false => match ready_agent(self, &mut kit.agent).await {
                Ok(_) => Steps::new(self, &mut kit).run().await,
                Err(failure) => failure.ending,
            },
            true => Steps::new(self, &mut kit).run().await,
        };
        *started = Started::from(kit);
        ending
    }

    fn report_browser_teardown(&self, report: &crate::process::teardown::TeardownReport) {
        self.emit(EventKind::CommandTornDown {
            name: setup::BROWSER.to_string(),
            teardown: report.state,
            log_truncated_bytes: None,
        });
        if !report.leaked.is_empty() {
            tracing::warn!("the browser leaked processes {:?} (killed)", report.leaked);
        }
    }

    pub(super) fn report_teardown(&self, record: &HarnessRecord) {
        if let Some(teardown) = record.teardown {
            self.emit(EventKind::CommandTornDown {
                name: record.name.clone(),
                teardown,
                log_truncated_bytes: (record.log_truncated_bytes > 0)
                    .then_some(record.log_truncated_bytes),
            });
        }
        if !record.leaked_pids.is_empty() {
            tracing::warn!(
                "command `{}` leaked processes {:?} (killed)",
                record.name,
                record.leaked_pids
            );
        }
    }
}

/// What a panic said (its `&str` or `String` payload).
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}
