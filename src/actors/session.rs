//! The SessionActor: one root-test attempt, from its run directory to its final report.
//!
//! Order (README "What a run leaves behind"): run directory and reporter record → workspace → ports
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
use crate::providers::{AgentEvent, ProviderKind, StepRequest, StepVerdict};
use crate::report::console::stderr_notice;
use crate::report::error::ReportError;
use crate::report::events::{
    millis, summarize_instruction, CheckpointAction, EventKind, PortRetry, Provenance, SetupState,
    Usage,
};
use crate::report::evidence::problem as evidence_problem;
use crate::report::excerpt::LogMarks;
use crate::report::run_record::{
    CommandRecord, ConfigRow, PlanEntry as ReportStep, PlannedCommand, RunPlan,
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
pub const FAULT_PANIC_ENV: &str = "BUGATTI_FAULT_PANIC_IN";

/// How long the agent gets to answer `Close` before the session moves on (its process group is
/// in the registry either way).
const AGENT_CLOSE_LIMIT: Duration = Duration::from_secs(30);

/// What every session of an invocation shares.
pub struct SuiteContext {
    pub suite_id: String,
    pub project_root: PathBuf,
    pub artifact_dir: PathBuf,
    pub reporter: ActorRef<crate::actors::reporter::ReporterMsg>,
    pub skip_cmd: Vec<String>,
    pub skip_readiness: Vec<String>,
    /// `--from-checkpoint NAME`: restore it after setup and skip the steps up to it.
    pub from_checkpoint: Option<String>,
    /// Ports of suite-scoped commands: every session sees the same value.
    pub shared_ports: BTreeMap<String, u16>,
    pub claude_bin: PathBuf,
    /// The suite-scoped commands as they stand (kept by the supervisor), for each run's record.
    pub suite_commands: SuiteCommands,
    /// What the suite has spent on agents, and its ceilings.
    pub budget: Arc<Budget>,
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
    Agent(AgentEvent),
    /// The driver is about to send step `step_id` (a point for fault injection).
    StepStarting(usize),
    /// The driver finished: the run's files are final.
    DriverDone(RunOutcome),
}

pub struct SessionState {
    /// This run's id (the same as `events.run_id()`); set at start, never changes.
    run_id: String,
    /// Asks the driver to stop; the first reason wins (set by interrupts, a command that gave up,
    /// the agent's death, a failed child actor).
    stop: watch::Sender<Option<StopReason>>,
    /// The run's event outlet, shared with the driver; events from harness and agent news go here.
    events: RunEvents,
    /// Last exit status seen per command, to report with its restart.
    last_exit: HashMap<String, String>,
    /// `BUGATTI_FAULT_PANIC` matched this test: panic before a step (fault tests only).
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
        let run_id = args.events.run_id().to_string();
        let fault_panic = std::env::var(FAULT_PANIC_ENV).is_ok_and(|needle| {
            !needle.is_empty() && args.test.rel_path.to_string_lossy().contains(&needle)
        });
        let agent_restartable = matches!(
            ProviderKind::parse(&args.test.effective.provider.name.value),
            Some(ProviderKind::ClaudeCode | ProviderKind::Codex)
        );
        let driver = Driver {
            test: Arc::clone(&args.test),
            attempt: args.attempt,
            suite: Arc::clone(&args.suite),
            run_id: run_id.clone(),
            session_id: uuid::Uuid::now_v7().to_string(),
            events: args.events.clone(),
            myself: myself.clone(),
            stop: stop_rx,
        };
        // A root span: ractor carries the sender's span with each message, so a span created while
        // handling the previous session's end would nest every session inside the one before.
        let span = tracing::info_span!(parent: None, "run", run_id = %run_id);
        let handle = tokio::spawn(
            async move {
                let outcome = driver.run().await;
                let _ = driver.myself.cast(SessionMsg::DriverDone(outcome));
            }
            .instrument(span),
        );
        Ok(SessionState {
            run_id,
            stop,
            events: args.events,
            last_exit: HashMap::new(),
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
            SessionMsg::Agent(event) => state.on_agent_event(event),
            SessionMsg::StepStarting(step_id) => {
                if state.fault_panic {
                    panic!("injected fault: session panicked before step {step_id}");
                }
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
    run_id: String,
    session_id: String,
    /// The run's event outlet (shared with the session actor).
    events: RunEvents,
    myself: ActorRef<SessionMsg>,
    stop: watch::Receiver<Option<StopReason>>,
}

/// How a phase of the run ended, when not by going on.
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

/// What the session started, for teardown.
#[derive(Default)]
struct Started {
    harness: Option<Harness>,
    agent: Option<ActorRef<AgentMsg>>,
    /// The agent's live news (logs, evidence, its death). The driver reads it itself, so that a
    /// step's logs are reported before that step's verdict.
    agent_news: Option<mpsc::UnboundedReceiver<AgentEvent>>,
    workdir: Option<PathBuf>,
    /// The agent console's MCP server (`[provider] console`), stopped with the session.
    console: Option<ConsoleServer>,
}

impl Driver {
    fn emit(&self, kind: EventKind) {
        let _ = self.events.emit(kind);
    }

    fn run_dir(&self) -> PathBuf {
        self.suite.artifact_dir.join("runs").join(&self.run_id)
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
        let secrets = Arc::new(crate::report::redact::Secrets::new(
            self.test.effective.secret_pairs(),
        ));
        match self.events.open(plan, secrets).await {
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
        self.teardown(started, &ending).await;
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
            run_id: self.run_id.clone(),
            session_id: self.session_id.clone(),
            suite_id: self.suite.suite_id.clone(),
            test_file: self.test.rel_path.display().to_string(),
            test_name: self.test.name.clone(),
            project_root: self.suite.project_root.display().to_string(),
            provider: effective.provider.name.value.clone(),
            run_dir: self.run_dir().display().to_string(),
            attempt: self.attempt.number,
            started_at: self.events.clock().started_at(),
            skipped_commands: skipped_commands(&self.test, &self.suite.skip_cmd),
            steps: self
                .test
                .plan
                .iter()
                .map(|s| ReportStep {
                    step_id: step_id(s),
                    provenance: provenance(s),
                    instruction: s.instruction.clone(),
                })
                .collect(),
            commands: effective
                .commands
                .values()
                .filter(|c| c.scope == CommandScope::Test)
                .map(|c| PlannedCommand {
                    name: c.name.clone(),
                    kind: c.kind.as_str().to_string(),
                    log: format!("logs/{}.log", c.name),
                })
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

    async fn setup_and_steps(&self, started: &mut Started) -> Ending {
        match self.setup(started).await {
            Ok(vars) => self.steps(started, &vars).await,
            Err(ending) => ending,
        }
    }

    /// Workspace, variables, harness, agent. Returns the session variables.
    async fn setup(&self, started: &mut Started) -> Result<SessionVars, Ending> {
        let workdir = tempfile::Builder::new()
            .prefix("bugatti-ws-")
            .tempdir()
            .map_err(|e| Ending::error(format!("cannot create the session workspace: {e}")))?
            .keep();
        started.workdir = Some(workdir.clone());
        let id = SessionIdentity {
            run_id: self.run_id.clone(),
            session_id: self.session_id.clone(),
            run_dir: self.run_dir(),
            workdir: workdir.clone(),
            project_root: self.suite.project_root.clone(),
        };
        let effective = &self.test.effective;
        let mut retry = None;
        let (vars, log_sources, harness) = loop {
            match self.start_harness(started, &id, retry.take()).await? {
                HarnessUp::Up(up) => break *up,
                HarnessUp::PortTaken(given_up) => retry = Some(given_up),
            }
        };
        let agent = agent_spec(effective, &id, &vars, self.suite.claude_bin.clone())
            .map_err(|e| Ending::error(e.to_string()))?;

        // Resuming: the saved state comes back once the harness is up, before the agent starts.
        if let Some(name) = &self.suite.from_checkpoint {
            self.checkpoint(CheckpointAction::Restore, name, None, &vars)
                .await?;
        }

        // The console: served before the agent starts, so that its first turn finds it.
        // `shell` runs no model: nothing would call it.
        let wanted = effective.provider.console.value
            && agent.provider != crate::providers::ProviderKind::Shell;
        let console = if wanted {
            let mut logs = log_sources;
            for log in &mut logs {
                log.hub = harness.output(&log.name).await;
            }
            let console = Arc::new(Console::new(ConsoleSetup {
                run_id: self.run_id.clone(),
                run_dir: self.run_dir(),
                // SPEC §9: where the agent itself runs, so a command means the same through the
                // console as through the agent's own shell.
                workdir: agent.cwd.clone(),
                env: vars.env.clone(),
                secrets: Arc::clone(&vars.secrets),
                logs,
            }));
            let server = ConsoleServer::start(console)
                .await
                .map_err(|e| Ending::error(e.to_string()))?;
            let endpoint = server.endpoint().clone();
            started.console = Some(server);
            Some(endpoint)
        } else {
            None
        };

        // The agent: one conversation for the whole session.
        let (agent_tx, agent_rx) = mpsc::unbounded_channel();
        started.agent_news = Some(agent_rx);
        let facts = crate::providers::SessionFacts {
            run_id: self.run_id.clone(),
            session_id: self.session_id.clone(),
            suite_id: self.suite.suite_id.clone(),
            test_name: self.test.name.clone(),
            test_file: self.test.rel_path.clone(),
            project_root: self.suite.project_root.clone(),
            run_dir: self.run_dir(),
            workdir,
            env: vars.env.clone(),
            secrets: Arc::clone(&vars.secrets),
            console,
        };
        let args = AgentArgs {
            spec: agent,
            facts,
            events: agent_tx,
        };
        let (actor, _) = Actor::spawn_linked(None, AgentActor, args, self.myself.get_cell())
            .await
            .map_err(|e| Ending::error(format!("cannot start the agent actor: {e}")))?;
        started.agent = Some(actor.clone());
        for phase in ["start", "bootstrap"] {
            let call = async {
                if phase == "start" {
                    ractor::call!(actor, AgentMsg::Start)
                } else {
                    ractor::call!(actor, AgentMsg::Bootstrap)
                }
            };
            tokio::select! {
                answer = call => match answer {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => return Err(Ending::error(e.to_string())),
                    Err(e) => return Err(Ending::error(format!("the agent actor did not answer {phase}: {e}"))),
                },
                reason = Self::until_stopped(self.stop.clone()) => return Err(Ending::from_stop(reason)),
            }
        }
        Ok(vars)
    }

    async fn steps(&self, started: &mut Started, vars: &SessionVars) -> Ending {
        let Some(agent) = started.agent.clone() else {
            return Ending::error("no agent was started");
        };
        let Some(workdir) = started.workdir.clone() else {
            return Ending::error("no workspace was created");
        };
        let strict = self.test.effective.provider.strict_warnings.value;
        let mut warnings = Vec::new();
        // Resuming from a checkpoint: the steps up to and including its step were restored, not
        // run (but `setup = true` steps still run), and no checkpoint is saved among them.
        let resumed_through = self.suite.from_checkpoint.as_deref().and_then(|name| {
            self.test
                .plan
                .iter()
                .find(|s| s.checkpoint.as_deref() == Some(name))
                .map(|s| (s.step_id, name))
        });
        for step in &self.test.plan {
            if let Some(reason) = self.stopped() {
                return Ending::from_stop(reason);
            }
            let id = step_id(step);
            let _ = self.myself.cast(SessionMsg::StepStarting(step.step_id));
            let instruction = match self.render(step, vars, &workdir) {
                Ok(text) => text,
                Err(message) => return Ending::error(message),
            };
            let restored = resumed_through.filter(|(last, _)| step.step_id <= *last);
            let skipped = if step.skip {
                Some("skip = true".to_string())
            } else {
                restored
                    .filter(|_| !step.setup)
                    .map(|(_, name)| format!("restored from checkpoint `{name}`"))
            };
            self.emit(EventKind::StepStarted {
                step_id: id,
                instruction: summarize_instruction(&instruction, 100),
                // A skipped step sends nothing.
                instruction_sent: skipped.is_none().then(|| instruction.clone()),
                provenance: provenance(step),
            });
            if let Some(message) = skipped {
                self.emit(step_finished(
                    id,
                    StepStatus::Skipped,
                    Some(message),
                    Duration::ZERO,
                    None,
                ));
                continue;
            }
            let max_cost = self.test.effective.provider.max_cost_usd.value;
            if let Some(why) = self.suite.budget.exhausted(&self.test.rel_path, max_cost) {
                let message = format!("not sent to the agent: {why}");
                self.emit(step_finished(
                    id,
                    StepStatus::OverBudget,
                    Some(message.clone()),
                    Duration::ZERO,
                    None,
                ));
                return Ending {
                    outcome: RunOutcome::Failed,
                    message: Some(format!("step {id} over_budget: {message}")),
                };
            }
            let request = StepRequest {
                step_id: id,
                source_file: step.source_file.display().to_string(),
                source_index: step.source_index,
                include_chain: step
                    .include_chain
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect(),
                instruction,
                timeout: Duration::from_secs(
                    step.timeout_secs
                        .unwrap_or(self.test.effective.provider.step_timeout_secs.value),
                ),
            };
            let marks = LogMarks::take(&self.run_dir().join("logs"));
            let verdict = self
                .run_step(&agent, request, &mut started.agent_news)
                .await;
            self.emit_console_calls(started, id);
            let mut verdict = match verdict {
                Ok(v) => v,
                Err(message) => {
                    self.emit_excerpt(id, &marks);
                    self.emit(step_finished(
                        id,
                        StepStatus::Error,
                        Some(message.clone()),
                        Duration::ZERO,
                        None,
                    ));
                    return Ending::error(message);
                }
            };
            let usage = verdict.usage.as_ref().map(|u| Usage {
                session_id: Some(u.session_id.clone()),
                turns: u32::try_from(u.num_turns).ok(),
                duration_ms: Some(u.duration_ms),
                cost_usd: u.cost_reported.then_some(u.step_cost_usd),
                total_cost_usd: u.cost_reported.then_some(u.total_cost_usd),
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
            });
            if let Some(u) = verdict.usage.as_ref().filter(|u| u.cost_reported) {
                self.suite.budget.add(&self.test.rel_path, u.step_cost_usd);
            }
            if matches!(verdict.status, StepStatus::Ok | StepStatus::Warn) && !verdict.interrupted {
                // The step whose cost crossed a ceiling is the one that stops.
                if let Some(why) = self.suite.budget.exhausted(&self.test.rel_path, max_cost) {
                    verdict.status = StepStatus::OverBudget;
                    verdict.message = format!("over budget after this step: {why}");
                }
            }
            let message = (!verdict.message.is_empty()).then(|| verdict.message.clone());
            if verdict.interrupted || !matches!(verdict.status, StepStatus::Ok | StepStatus::Warn) {
                self.emit_excerpt(id, &marks);
            }
            if verdict.interrupted {
                let reason = self
                    .stopped()
                    .unwrap_or_else(|| StopReason::Interrupted("the session is stopping".into()));
                self.emit(step_finished(
                    id,
                    StepStatus::Interrupted,
                    Some(reason.cut_off_message()),
                    verdict.duration,
                    usage,
                ));
                return Ending::from_stop(reason);
            }
            self.emit(step_finished(
                id,
                verdict.status,
                message.clone(),
                verdict.duration,
                usage,
            ));
            if let Some(fault) = &verdict.fault {
                let again = if verdict.restarts > 0 {
                    ", again after a restart"
                } else {
                    " and could not be restarted"
                };
                return Ending::error(format!(
                    "the agent {fault} during step {id}{again}; the session gave up"
                ));
            }
            if let Some(death) = &verdict.agent_died {
                return Ending::error(format!("the agent died during step {id}: {death}"));
            }
            if let Some(reason) = self.stopped() {
                return Ending::from_stop(reason);
            }
            match verdict.status {
                StepStatus::Ok
                | StepStatus::Skipped
                | StepStatus::NotRun
                | StepStatus::Interrupted => {}
                StepStatus::Warn => {
                    warnings.push(format!("step {id} warned: {}", message.unwrap_or_default()))
                }
                StepStatus::Error
                | StepStatus::ProtocolError
                | StepStatus::Timeout
                | StepStatus::OverBudget => {
                    return Ending {
                        outcome: RunOutcome::Failed,
                        message: Some(format!(
                            "step {id} {}: {}",
                            verdict.status.as_str(),
                            message.unwrap_or_default()
                        )),
                    };
                }
            }
            // A passed step with a checkpoint saves it (not while replaying a resumed prefix).
            if let (Some(name), None) = (&step.checkpoint, restored) {
                if matches!(verdict.status, StepStatus::Ok | StepStatus::Warn) {
                    if let Err(ending) = self
                        .checkpoint(CheckpointAction::Save, name, Some(id), vars)
                        .await
                    {
                        return ending;
                    }
                }
            }
        }
        match (warnings.is_empty(), strict) {
            (true, _) => Ending {
                outcome: RunOutcome::Passed,
                message: None,
            },
            (false, false) => Ending {
                outcome: RunOutcome::Warned,
                message: Some(warnings.join("; ")),
            },
            (false, true) => Ending {
                outcome: RunOutcome::Failed,
                message: Some(format!("strict warnings: {}", warnings.join("; "))),
            },
        }
    }

    /// Runs `[checkpoint] save` or `restore` for checkpoint `name`; a failure ends the run.
    async fn checkpoint(
        &self,
        action: CheckpointAction,
        name: &str,
        step_id: Option<u32>,
        vars: &SessionVars,
    ) -> Result<(), Ending> {
        let Some(config) = &self.test.effective.checkpoint else {
            return Err(Ending::error(format!(
                "checkpoint `{name}`: the config has no [checkpoint] table"
            )));
        };
        let run_dir = self.run_dir();
        let job = CheckpointJob {
            config: &config.value,
            action,
            name,
            step_id,
            paths: CheckpointPaths::new(&self.suite.artifact_dir, &self.test.rel_path, name),
            project_root: &self.suite.project_root,
            run_dir: &run_dir,
            run_id: &self.run_id,
            test_file: &self.test.rel_path,
            vars,
        };
        tracing::info!("{} checkpoint `{name}`", action.as_str());
        match job
            .run(
                |kind| self.emit(kind),
                Self::until_stopped(self.stop.clone()),
            )
            .await
        {
            Ok(()) => Ok(()),
            Err(CheckpointFailure::Failed(message)) => Err(Ending::error(message)),
            Err(CheckpointFailure::Stopped(reason)) => Err(Ending::from_stop(reason)),
        }
    }

    /// Sends one step; on a stop request, cancels it and waits for the (interrupted) verdict.
    /// The agent's news is passed on as it comes, and what it sent before its verdict is passed
    /// on before the verdict is returned: a step's logs always precede its `step_finished`.
    async fn run_step(
        &self,
        agent: &ActorRef<AgentMsg>,
        request: StepRequest,
        news: &mut Option<mpsc::UnboundedReceiver<AgentEvent>>,
    ) -> Result<StepVerdict, String> {
        let limit = request.timeout + Duration::from_secs(60);
        let (reply, answer) = ractor::concurrency::oneshot();
        agent
            .cast(AgentMsg::RunStep(request, reply.into()))
            .map_err(|e| format!("the agent actor is gone: {e}"))?;
        let mut answer = answer;
        // Set once a stop was asked for: the interrupted verdict must come by then.
        let mut cancelled_until: Option<tokio::time::Instant> = None;
        // The agent's death during the step is the step's own news: its provider sees it (the
        // end of its output) and says how it died in the verdict. Stopping the session on it
        // here would race that verdict and cut the step off as `interrupted`.
        let mut died: Option<AgentEvent> = None;
        let verdict = loop {
            tokio::select! {
                verdict = &mut answer => break verdict.map_err(|_| "the agent actor stopped without a verdict".to_string()),
                Some(event) = next_news(news) => self.take_news(event, &mut died),
                _ = Self::until_stopped(self.stop.clone()), if cancelled_until.is_none() => {
                    let _ = agent.cast(AgentMsg::Cancel);
                    cancelled_until = Some(tokio::time::Instant::now() + limit);
                }
                _ = sleep_until_opt(cancelled_until), if cancelled_until.is_some() => {
                    break Err("the agent did not end the step after it was cancelled".to_string());
                }
            }
        };
        if let Some(rx) = news.as_mut() {
            while let Ok(event) = rx.try_recv() {
                self.take_news(event, &mut died);
            }
        }
        // A death the verdict names, or one the watchdog already answered with a restart, is
        // not news for the session.
        let told = match &verdict {
            Ok(v) => v.agent_died.is_some() || v.fault.is_some() || v.restarts > 0,
            Err(_) => false,
        };
        if let (Some(death), false) = (died, told) {
            self.pass_on(death);
        }
        verdict
    }

    /// News that came while a step ran: passed on at once, but the agent's death is held for
    /// after the verdict (see `run_step`).
    fn take_news(&self, event: AgentEvent, died: &mut Option<AgentEvent>) {
        match event {
            AgentEvent::Exited(_) => *died = Some(event),
            other => self.pass_on(other),
        }
    }

    /// For a step that did not pass: what each harness command logged while it ran.
    /// The console calls made since the last step ended, reported with this step.
    fn emit_console_calls(&self, started: &Started, step_id: u32) {
        let Some(server) = &started.console else {
            return;
        };
        for call in server.console().recorder().take_calls() {
            self.emit(EventKind::ConsoleCall {
                step_id,
                summary: call.summary(),
                tool: call.tool,
                duration_ms: call.duration_ms,
                exit_code: call.exit_code,
                bytes: call.bytes,
                is_error: call.is_error,
            });
        }
    }

    fn emit_excerpt(&self, step_id: u32, marks: &LogMarks) {
        let excerpt = marks.excerpt_since(&self.run_dir().join("logs"));
        if !excerpt.is_empty() {
            self.emit(EventKind::HarnessLogExcerpt { step_id, excerpt });
        }
    }

    /// A step's log and evidence become run events; the rest (bootstrap notes, the agent's
    /// death) is the session actor's to judge.
    fn pass_on(&self, event: AgentEvent) {
        match event {
            AgentEvent::Log { step_id, message } if step_id > 0 => {
                self.emit(EventKind::AgentLog { step_id, message });
            }
            AgentEvent::Restarted { step_id, reason } => {
                self.emit(EventKind::AgentRestarted { step_id, reason });
            }
            AgentEvent::Evidence { step_id, evidence } if step_id > 0 => {
                let problem = evidence_problem(&self.run_dir(), &evidence.path);
                self.emit(EventKind::Evidence {
                    step_id,
                    kind: evidence.kind.to_string(),
                    path: evidence.path.clone(),
                    problem,
                });
            }
            other => {
                let _ = self.myself.cast(SessionMsg::Agent(other));
            }
        }
    }

    /// The instruction as the agent gets it: variables substituted, assets inlined or copied.
    fn render(
        &self,
        step: &PlannedStep,
        vars: &SessionVars,
        workdir: &Path,
    ) -> Result<String, String> {
        let rendered = prepare_instruction(
            step,
            &self.suite.project_root,
            &step_vars(vars, step.step_id),
            workdir,
        )
        .map_err(|e| format!("{e} ({})", step.provenance()))?;
        for copy in &rendered.copies {
            if let Some(parent) = copy.to.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            std::fs::copy(&copy.from, &copy.to).map_err(|e| {
                format!(
                    "cannot copy asset {} to {}: {e}",
                    copy.from.display(),
                    copy.to.display()
                )
            })?;
        }
        Ok(rendered.text)
    }

    /// Stops the agent and every command (concurrently), records how each went, sweeps what
    /// escaped, and keeps or removes the workspace.
    async fn teardown(&self, mut started: Started, ending: &Ending) {
        let skip_grace = grace_is_over();
        let console_down = async {
            if let Some(server) = started.console.as_mut() {
                server.shutdown().await;
            }
        };
        let agent_close = async {
            if let Some(agent) = &started.agent {
                let limit = u64::try_from(AGENT_CLOSE_LIMIT.as_millis()).unwrap_or(u64::MAX);
                match ractor::call_t!(agent, AgentMsg::Close, limit) {
                    Ok(state) => tracing::info!("agent teardown: {}", state.as_str()),
                    Err(e) => tracing::warn!("agent teardown did not answer: {e}"),
                }
            }
        };
        let harness_down = async {
            match &started.harness {
                Some(harness) => harness.teardown_all(skip_grace).await,
                None => Vec::new(),
            }
        };
        let ((), records, ()) = tokio::join!(agent_close, harness_down, console_down);
        for record in records.iter().filter(|r| !r.skipped) {
            self.report_teardown(record);
        }
        let escaped = sweep_run(&Scope::run(self.run_id.clone()));
        if !escaped.is_empty() {
            tracing::warn!(
                "processes of run {} outlived teardown and were killed: {escaped:?}",
                self.run_id
            );
        }
        if let Some(workdir) = started.workdir {
            let keep = match self.test.effective.supervisor.keep_workspace.value {
                KeepWorkspace::Always => true,
                KeepWorkspace::Never => false,
                KeepWorkspace::OnFailure => {
                    !matches!(ending.outcome, RunOutcome::Passed | RunOutcome::Warned)
                }
            };
            if keep {
                tracing::info!("workspace kept at {}", workdir.display());
            } else if let Err(e) = std::fs::remove_dir_all(&workdir) {
                tracing::warn!("cannot remove workspace {}: {e}", workdir.display());
            }
        }
    }

    /// Picks the session's ports, tells them, and brings the harness up. When a command says its
    /// address is in use while the session has `auto` ports (one was taken between its pick and
    /// the server's bind), that harness is torn down and, unless this already is the retry
    /// (`retry`: what the first try said and the ports it gave up), the caller tries once more.
    async fn start_harness(
        &self,
        started: &mut Started,
        id: &SessionIdentity,
        retry: Option<PortRetry>,
    ) -> Result<HarnessUp, Ending> {
        let effective = &self.test.effective;
        let is_retry = retry.is_some();
        let vars = session_vars(effective, id, &self.suite.shared_ports)
            .map_err(|e| Ending::error(e.to_string()))?;
        self.emit(EventKind::SessionPrepared {
            workspace: id.workdir.display().to_string(),
            ports: vars.ports.clone(),
            retried_after: retry,
        });
        let mut specs = command_specs(
            effective,
            CommandScope::Test,
            &vars,
            &self.suite.project_root,
            &self.run_dir().join("logs"),
            &self.suite.skip_cmd,
        )
        .map_err(|e| Ending::error(e.to_string()))?;
        for spec in &mut specs {
            if self.suite.skip_readiness.contains(&spec.name) {
                spec.probes.clear();
            }
            if spec.skipped {
                self.emit(EventKind::SetupStatus {
                    command: spec.name.clone(),
                    state: SetupState::Skipped,
                });
            }
        }

        let auto_ports: BTreeMap<String, u16> = vars
            .ports
            .iter()
            .filter(|(name, _)| {
                !self.suite.shared_ports.contains_key(*name)
                    && effective
                        .ports
                        .get(*name)
                        .is_some_and(|p| p.value == PortSpec::Auto)
            })
            .map(|(name, port)| (name.clone(), *port))
            .collect();
        let may_retry = !is_retry && !auto_ports.is_empty();

        // The harness: its events come back through the session's mailbox. While a setup that
        // may be retried runs, a command giving up is held back (start reports it anyway): it
        // must not stop the session before the retry is decided.
        let gate = Arc::new(std::sync::Mutex::new(if may_retry {
            GiveUpGate::Hold(Vec::new())
        } else {
            GiveUpGate::Forward
        }));
        let (harness_tx, mut harness_rx) = mpsc::unbounded_channel();
        let me = self.myself.clone();
        let forwarder_gate = Arc::clone(&gate);
        tokio::spawn(async move {
            while let Some(event) = harness_rx.recv().await {
                let event = forwarder_gate
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .pass(event);
                if let Some(event) = event {
                    if me.cast(SessionMsg::Harness(event)).is_err() {
                        break;
                    }
                }
            }
        });
        let log_sources: Vec<LogSource> = specs
            .iter()
            .filter(|spec| !spec.skipped)
            .map(|spec| LogSource {
                name: spec.name.clone(),
                kind: spec.kind.as_str().to_string(),
                path: spec.log_path.clone(),
                hub: None,
            })
            .collect();
        let harness = Harness::spawn(
            self.myself.get_cell(),
            Scope::run(self.run_id.clone()),
            harness_tx,
        )
        .await
        .map_err(|e| Ending::error(e.to_string()))?;
        started.harness = Some(harness.clone());
        if !specs.is_empty() {
            let result = tokio::select! {
                result = harness.start(specs) => result,
                reason = Self::until_stopped(self.stop.clone()) => return Err(Ending::from_stop(reason)),
            };
            let retrying =
                matches!(&result, Err(e) if may_retry && says_address_in_use(&e.to_string()));
            let held = std::mem::replace(
                &mut *gate.lock().unwrap_or_else(|poisoned| poisoned.into_inner()),
                if retrying {
                    GiveUpGate::Drop
                } else {
                    GiveUpGate::Forward
                },
            );
            if let GiveUpGate::Hold(held) = held {
                if !retrying {
                    for event in held {
                        let _ = self.myself.cast(SessionMsg::Harness(event));
                    }
                }
            }
            if let Err(e) = result {
                if !retrying {
                    return Err(Ending::error(e.to_string()));
                }
                // What the first try started goes down before fresh ports are picked.
                for record in harness.teardown_all(grace_is_over()).await {
                    if !record.skipped {
                        self.report_teardown(&record);
                    }
                }
                started.harness = None;
                return Ok(HarnessUp::PortTaken(PortRetry {
                    reason: e.to_string(),
                    ports: auto_ports,
                }));
            }
        }
        Ok(HarnessUp::Up(Box::new((vars, log_sources, harness))))
    }

    fn report_teardown(&self, record: &HarnessRecord) {
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

/// How [`Session::start_harness`] went, short of an error that ends the run.
enum HarnessUp {
    Up(Box<(SessionVars, Vec<LogSource>, Harness)>),
    /// An `auto` port was taken before its server bound it: try once more with fresh ones.
    PortTaken(PortRetry),
}

/// What becomes of a harness's `GaveUp` events on their way to the session.
enum GiveUpGate {
    Forward,
    /// Setup may yet be retried: kept until that is decided.
    Hold(Vec<HarnessEvent>),
    /// Setup is retried: that harness's give-ups are the failure being retried.
    Drop,
}

impl GiveUpGate {
    fn pass(&mut self, event: HarnessEvent) -> Option<HarnessEvent> {
        if !matches!(event.kind, HarnessEventKind::GaveUp { .. }) {
            return Some(event);
        }
        match self {
            Self::Forward => Some(event),
            Self::Hold(held) => {
                held.push(event);
                None
            }
            Self::Drop => None,
        }
    }
}

/// What a server says when its port is taken (Python, Node, Go, Rust, C, Java wordings).
fn says_address_in_use(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    ["address already in use", "eaddrinuse", "address in use"]
        .iter()
        .any(|s| text.contains(s))
}

async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The next piece of news, or never when there is no receiver (or it is closed).
async fn next_news(news: &mut Option<mpsc::UnboundedReceiver<AgentEvent>>) -> Option<AgentEvent> {
    match news.as_mut() {
        Some(rx) => match rx.recv().await {
            Some(event) => Some(event),
            None => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}

fn step_id(step: &PlannedStep) -> u32 {
    u32::try_from(step.step_id).unwrap_or(u32::MAX)
}

fn provenance(step: &PlannedStep) -> Provenance {
    Provenance {
        source_file: step.source_file.display().to_string(),
        source_index: step.source_index,
        include_chain: step
            .include_chain
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
    }
}

fn step_finished(
    step_id: u32,
    status: StepStatus,
    message: Option<String>,
    duration: Duration,
    usage: Option<Usage>,
) -> EventKind {
    EventKind::StepFinished {
        step_id,
        status,
        message,
        duration_ms: millis(duration),
        usage,
    }
}
