//! The SupervisorActor: one per invocation. Owns the queue of root-test attempts, starts suite-
//! scoped commands, spawns a linked SessionActor per attempt (at most `jobs` at once, a slot
//! refilled as soon as it frees), turns signals and the deadline into an orderly shutdown, and
//! answers with the exit reason once every report is on disk.
//!
//! A session that panics reaches us as a supervision event: its test fails with `error` and the
//! panic message, its processes are killed through the registry, and the others run on.

use crate::actors::budget::{Admission, Budget};
use crate::actors::harness::{setup_state, Harness};
use crate::actors::model_gate::ModelGate;
use crate::actors::queue::{AfterAttempt, Attempt, Halt, SuiteQueue};
use crate::actors::reporter::{Notices, ReporterMsg, RunEvents};
use crate::actors::root_tests::RootTests;
use crate::actors::session::{SessionActor, SessionArgs, SessionMsg, SuiteCommands, SuiteContext};
use crate::actors::session_plan::{command_specs, session_vars, SessionIdentity};
use crate::model::artifacts::{self, RunPaths, SuitePaths};
use crate::model::config::{CommandScope, FlakyPolicy};
use crate::model::ids::SessionId;
use crate::model::ids::{RunId, SuiteId};
use crate::model::layers::ProbeKind;
use crate::model::load::{RootTest, Suite};
use crate::model::outcome::{ExitReason, InterruptSignal, RunOutcome};
use crate::model::substitute::references;
use crate::process::cost_ledger::{CostLedger, Reserved};
use crate::process::event::{relay, wait_for_flush, HarnessEvent, HarnessEventKind};
use crate::process::owner::Scope;
use crate::process::ports::allocate_loopback_port;
use crate::process::signals::ShutdownRequest;
use crate::process::teardown::{end_grace, grace_is_over, kill_scope};
use crate::report::live::console::stderr_notice;
use crate::report::records::events::{EventKind, SetupState};
use crate::report::records::run_record::CommandRecord;
use chrono::{DateTime, Utc};
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

/// Test-only fault injection: the supervisor actor panics on hearing that a session of a test
/// whose file path contains this value is done (proves that a panic of the supervisor itself
/// still leaves every run's records, the suite's files and exit 3; see `actors::run`).
#[cfg(feature = "fault-injection")]
pub const FAULT_SUPERVISOR_PANIC_ENV: &str = "BUGATTI_FAULT_SUPERVISOR_PANIC_IN";

pub enum SupervisorMsg {
    /// Start suite-scoped commands, then dispatch.
    Begin,
    SessionDone {
        attempt: Attempt,
        run_id: RunId,
        outcome: RunOutcome,
    },
    Shutdown(ShutdownRequest),
    /// A retry waited out its backoff (`retries.delay`): it may start.
    RetryDue(Attempt),
    /// `--timeout` expired: a shutdown like SIGTERM's, said to be the deadline's.
    DeadlineReached {
        secs: u64,
    },
    /// A suite-scoped command's status changed: passed on to every run that was running then.
    SuiteCommand {
        command: String,
        state: SetupState,
        at: DateTime<Utc>,
    },
}

pub struct SupervisorArgs {
    pub suite: Suite,
    pub suite_id: SuiteId,
    pub artifact_dir: PathBuf,
    pub reporter: ActorRef<ReporterMsg>,
    pub skip_cmd: Vec<String>,
    pub skip_readiness: Vec<String>,
    /// `--from-checkpoint NAME`: every session restores it and skips the steps up to it.
    pub from_checkpoint: Option<String>,
    /// `--cost-ledger FILE`: the CI run's spend, shared with the other shards.
    pub cost_ledger: Option<CostLedger>,
    /// Answered once, when every report is written.
    pub done: oneshot::Sender<ExitReason>,
}

/// A session the supervisor started and has not heard the end of.
struct RunningSession {
    attempt: Attempt,
    run_id: RunId,
    /// The run's event outlet (shared with the session), to close the run should it panic.
    events: RunEvents,
    actor: ActorRef<SessionMsg>,
}

pub struct SupervisorState {
    /// The root tests, indexed by `Attempt::test`: each one's plan until it is settled.
    tests: RootTests,
    /// Which attempts start next (`-j`, retries, fail-fast, shutdown).
    queue: SuiteQueue,
    /// Sessions started and not yet done, by actor id (removed on `SessionDone` or a panic).
    running: HashMap<ActorId, RunningSession>,
    /// What every session shares; set once suite-scoped commands are up, `None` before.
    context: Option<Arc<SuiteContext>>,
    /// `--skip-cmd` names, as given.
    args_skip_cmd: Vec<String>,
    /// `--skip-readiness` names, as given.
    args_skip_readiness: Vec<String>,
    /// `--from-checkpoint`, as given.
    from_checkpoint: Option<String>,
    /// The validated suite, its root tests taken into `tests`; fixed.
    suite: Suite,
    /// This invocation's id (suite directory, ledger, suite-scoped commands' owner).
    suite_id: SuiteId,
    /// Where every artifact goes (created by `run`).
    artifact_dir: PathBuf,
    /// The one writer of artifacts and console lines.
    reporter: ActorRef<ReporterMsg>,
    /// Suite-scoped commands, torn down when the suite finishes.
    suite_harness: Option<Harness>,
    /// Their records as they stand, copied into each run's record when it starts.
    suite_commands: SuiteCommands,
    /// Set when the suite harness could not start: nothing runs, exit 3.
    harness_error: Option<String>,
    /// Set when `[supervisor] max_cost_usd` kept the next root test from starting: why.
    budget_stop: Option<String>,
    /// The first shutdown signal (or the deadline), once one came.
    shutdown: Option<InterruptSignal>,
    /// `--cost-ledger`: the CI run's spend, and the runs of ours reserved in it.
    cost_ledger: Option<CostLedger>,
    ledger_runs: BTreeSet<RunId>,
    /// The agents at the model at once (docs/ci.md, "A rate-limited nightly"): `-j` at most.
    model_gate: ModelGate,
    /// Answered once, when the suite's files are written; taken by `finish`.
    done: Option<oneshot::Sender<ExitReason>>,
}

pub struct SupervisorActor;

impl Actor for SupervisorActor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = SupervisorArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<SupervisorMsg>,
        mut args: SupervisorArgs,
    ) -> Result<SupervisorState, ActorProcessingErr> {
        let tests = RootTests::new(std::mem::take(&mut args.suite.tests));
        let base = &args.suite.base.supervisor;
        let strict = args.suite.base.provider.strict_warnings.value;
        let queue = SuiteQueue::new(
            tests.len(),
            base.repeat.value,
            base.jobs.value,
            base.retries.value.count,
            base.failures_allowed(),
            strict,
        )
        .with_retries(tests.retry_counts());
        if let Some(secs) = base.timeout_secs.value {
            myself.send_after(Duration::from_secs(secs), move || {
                SupervisorMsg::DeadlineReached { secs }
            });
        }
        myself.cast(SupervisorMsg::Begin)?;
        let model_gate = ModelGate::new(base.jobs.value);
        Ok(SupervisorState {
            tests,
            queue,
            running: HashMap::new(),
            context: None,
            args_skip_cmd: args.skip_cmd,
            args_skip_readiness: args.skip_readiness,
            from_checkpoint: args.from_checkpoint,
            suite: args.suite,
            suite_id: args.suite_id,
            artifact_dir: args.artifact_dir,
            reporter: args.reporter,
            suite_harness: None,
            suite_commands: SuiteCommands::default(),
            harness_error: None,
            budget_stop: None,
            shutdown: None,
            cost_ledger: args.cost_ledger,
            ledger_runs: BTreeSet::new(),
            model_gate,
            done: Some(args.done),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<SupervisorMsg>,
        message: SupervisorMsg,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        state
            .on_message(&myself, message)
            .instrument(suite_span())
            .await;
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<SupervisorMsg>,
        message: SupervisionEvent,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        // Never ractor's default (which would stop us when a session ends).
        if let SupervisionEvent::ActorFailed(who, err) = message {
            state
                .on_session_failed(&myself, who.get_id(), err.to_string())
                .instrument(suite_span())
                .await;
        }
        Ok(())
    }
}

/// The supervisor's own span, a root: ractor runs a handler inside the span of the message's
/// sender, so without it a session's `SessionDone` would put the supervisor's lines (dispatch,
/// retries, signals) into that run's harness.log instead of the suite's.
fn suite_span() -> tracing::Span {
    tracing::info_span!(parent: None, "suite")
}

impl SupervisorState {
    async fn on_message(&mut self, myself: &ActorRef<SupervisorMsg>, message: SupervisorMsg) {
        match message {
            SupervisorMsg::Begin => {
                let shared_ports = self.start_suite_commands(myself).await;
                self.context = Some(Arc::new(SuiteContext {
                    suite_id: self.suite_id.clone(),
                    traceparent: crate::model::trace_context::inherited_traceparent(),
                    project_root: self.suite.project_root.clone(),
                    artifact_dir: self.artifact_dir.clone(),
                    reporter: self.reporter.clone(),
                    skip_cmd: self.args_skip_cmd.clone(),
                    skip_readiness: self.args_skip_readiness.clone(),
                    from_checkpoint: self.from_checkpoint.clone(),
                    shared_ports,
                    suite_commands: Arc::clone(&self.suite_commands),
                    budget: Arc::new(
                        Budget::new(self.shard_cost_cap())
                            .with_history(self.suite.expected_costs.clone()),
                    ),
                    agent_faults: Arc::default(),
                    model_gate: self.model_gate.clone(),
                    browser_pool: crate::browser::pool::BrowserPool::new(
                        crate::process::owner::Scope::suite(self.suite_id.clone()),
                    ),
                }));
                if self.harness_error.is_some() {
                    self.queue.halt(Halt::Shutdown);
                }
                self.dispatch(myself).await;
            }
            SupervisorMsg::SessionDone {
                attempt,
                run_id,
                outcome,
            } => {
                #[cfg(feature = "fault-injection")]
                {
                    let test = self.tests.rel_path(attempt.test).to_string_lossy();
                    if std::env::var(FAULT_SUPERVISOR_PANIC_ENV)
                        .is_ok_and(|needle| !needle.is_empty() && test.contains(&needle))
                    {
                        panic!("fault injection: {FAULT_SUPERVISOR_PANIC_ENV}");
                    }
                }
                self.running.retain(|_, r| r.run_id != run_id);
                self.release_budget(&run_id);
                self.attempt_finished(myself, attempt, &run_id, outcome);
                self.dispatch(myself).await;
            }
            SupervisorMsg::RetryDue(retry) => {
                self.queue.release(retry);
                self.dispatch(myself).await;
            }
            SupervisorMsg::Shutdown(request) => {
                let (signal, message) = match request {
                    ShutdownRequest::Graceful(s) => (
                        s,
                        format!(
                            "{}: stopping — no new tests; {} running test(s) are stopping their agents and tearing down their harness (grace periods apply); a second signal skips them",
                            s.name(),
                            self.running.len()
                        ),
                    ),
                    ShutdownRequest::SkipGrace(s) => {
                        // Every ladder, wherever it is (harness, agent, shell step, checkpoint).
                        end_grace();
                        (s, format!("{}: second signal — skipping the grace periods", s.name()))
                    }
                };
                tracing::warn!("signal {} received: {message}", signal.name());
                self.shut_down(myself, signal, signal.name().to_string(), message)
                    .await;
            }
            SupervisorMsg::SuiteCommand { command, state, at } => {
                // Runs that started later copied the command's state into their plan.
                for running in self.running.values() {
                    if running.events.clock().started_at() < at {
                        let _ = running.events.emit(EventKind::SetupStatus {
                            command: command.clone(),
                            state: state.clone(),
                        });
                    }
                }
            }
            SupervisorMsg::DeadlineReached { secs } => {
                let message = format!(
                    "--timeout: the {secs}s deadline passed — stopping like SIGTERM: no new tests; \
                     {} running test(s) are tearing down",
                    self.running.len()
                );
                tracing::warn!("deadline: {message}");
                let cause = format!("the --timeout deadline ({secs}s) passed");
                self.shut_down(myself, InterruptSignal::Terminate, cause, message)
                    .await;
            }
        }
    }

    /// A session's actor failed (a panic): its test is an `error`, its processes die, the
    /// others run on.
    async fn on_session_failed(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        who: ActorId,
        err: String,
    ) {
        let Some(running) = self.running.remove(&who) else {
            tracing::error!("a child of the supervisor failed: {err}");
            return;
        };
        let message = format!("the session panicked: {err}");
        Notices::new(self.reporter.clone()).send(format!(
            "{} (run {}): {message}",
            self.tests.rel_path(running.attempt.test).display(),
            running.run_id
        ));
        // Whatever the dead session left: its registered groups and every process of its run.
        kill_scope(&Scope::run(running.run_id.clone()));
        let _ = running.events.emit(EventKind::RunFinished {
            outcome: RunOutcome::Error,
            message: Some(message),
        });
        let _ = running.events.close().await;
        self.release_budget(&running.run_id);
        self.attempt_finished(myself, running.attempt, &running.run_id, RunOutcome::Error);
        self.dispatch(myself).await;
    }

    /// A run ended: its reserved expected cost is given back to the suite's budget, and what it
    /// spent is settled in the CI run's ledger.
    fn release_budget(&mut self, run_id: &RunId) {
        let Some(context) = &self.context else {
            return;
        };
        let spent = context.budget.release(run_id);
        if self.ledger_runs.remove(run_id) {
            if let Some(ledger) = &self.cost_ledger {
                if let Err(e) = ledger.settle(run_id.as_str(), spent) {
                    Notices::new(self.reporter.clone()).send(e.to_string());
                }
            }
        }
    }

    /// This invocation's own cap: `[supervisor] max_cost_usd` is the whole CI run's, so a shard
    /// without a shared ledger gets its share, cap / N, and says so.
    fn shard_cost_cap(&self) -> Option<f64> {
        let cap = self.suite.base.supervisor.max_cost_usd.value?;
        let shard = self.suite.shard.as_ref();
        match shard.and_then(|s| s.count()) {
            Some(n) if n > 1 && self.cost_ledger.is_none() => {
                let share = cap / n as f64;
                Notices::new(self.reporter.clone()).send(format!(
                    "cost cap: [supervisor] max_cost_usd ${cap:.4} is the whole run's; without \
                     --cost-ledger shard {} gets 1/{n} of it, ${share:.4}",
                    shard.map_or("", |s| s.shard.as_str())
                ));
                Some(share)
            }
            _ => Some(cap),
        }
    }

    /// With `--cost-ledger`: reserves the next test's expected cost in the CI run's ledger under
    /// a fresh run id, or halts the queue when the run's total would pass the cap.
    fn reserve_in_ledger(&mut self, context: &SuiteContext, test: usize) -> Option<RunId> {
        let ledger = self.cost_ledger.as_ref()?;
        let cap = self.suite.base.supervisor.max_cost_usd.value?;
        let limit = self.tests.max_cost_usd(test);
        let expected = context
            .budget
            .expected_cost(self.tests.rel_path(test), limit)
            .unwrap_or(0.0);
        let key = RunId::fresh();
        let refused = match ledger.reserve(key.as_str(), expected, cap) {
            Ok(Reserved::Yes { .. }) => {
                self.ledger_runs.insert(key.clone());
                return Some(key);
            }
            Ok(Reserved::CapReached { total }) => format!(
                "cost cap reached: CI run {} has spent or reserved ${total:.4} (--cost-ledger), \
                 and the next test is expected to cost ${expected:.4}: it would pass \
                 [supervisor] max_cost_usd = ${cap:.4}",
                ledger.ci_run()
            ),
            Err(e) => format!("cost cap: the ledger cannot be read: {e}"),
        };
        Notices::new(self.reporter.clone()).send(format!("no further root test starts: {refused}"));
        self.queue.halt(Halt::OverBudget);
        self.budget_stop = Some(refused);
        None
    }

    /// Books a finished attempt in the queue and says in the suite log what follows from it.
    fn attempt_finished(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        attempt: Attempt,
        run_id: &RunId,
        outcome: RunOutcome,
    ) {
        let test = self.tests.rel_path(attempt.test).display().to_string();
        tracing::info!(
            "finished: {test} attempt {} (run {run_id}): {}",
            attempt.number,
            outcome.as_str()
        );
        match self.queue.finished(attempt, outcome) {
            AfterAttempt::Done => {}
            AfterAttempt::Retry(next) => {
                let policy = self.tests.retries(attempt.test);
                let wait = policy.delay_before(attempt.number, random_fraction());
                tracing::info!(
                    "retry: {test} failed ({}); attempt {} of {} queued next, after {}ms",
                    outcome.as_str(),
                    next.number,
                    self.queue.max_attempts(attempt.test),
                    wait.as_millis()
                );
                if !wait.is_zero() {
                    self.queue.defer(next);
                    let due = Attempt {
                        waited_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                        ..next
                    };
                    myself.send_after(wait, move || SupervisorMsg::RetryDue(due));
                }
            }
            AfterAttempt::FailFast => tracing::info!(
                "fail-fast: {test} failed ({}); no new test starts",
                outcome.as_str()
            ),
        }
        self.settle_if_done(attempt.test);
    }

    /// Lets go of a test's plan once nothing of it will start again.
    fn settle_if_done(&mut self, test: usize) {
        if self.queue.settled(test) {
            self.tests.settle(test);
        }
    }

    /// The suite's own harness failed: no test can run. Said on the console now, and kept for
    /// the summaries and JUnit, where the tests it kept from running are errors with this reason.
    fn suite_harness_failed(&mut self, reason: String) {
        Notices::new(self.reporter.clone()).send(reason.clone());
        self.harness_error.get_or_insert(reason);
    }

    /// The one shutdown path (signals and the deadline): say so on the console, stop
    /// dispatching, interrupt every running session.
    async fn shut_down(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        signal: InterruptSignal,
        cause: String,
        message: String,
    ) {
        let _ = self.reporter.cast(ReporterMsg::Notice { message });
        self.shutdown.get_or_insert(signal);
        self.queue.halt(Halt::Shutdown);
        for running in self.running.values() {
            let _ = running.actor.cast(SessionMsg::Interrupt(cause.clone()));
        }
        self.dispatch(myself).await;
    }

    /// Starts as many sessions as the queue allows; finishes the suite when nothing is left.
    async fn dispatch(&mut self, myself: &ActorRef<SupervisorMsg>) {
        let Some(context) = self.context.clone() else {
            return;
        };
        loop {
            if self.queue.halted().is_none() {
                if let Some(why) = context.agent_faults.tripped() {
                    Notices::new(self.reporter.clone())
                        .send(format!("no further root test starts: {why}"));
                    self.queue.halt(Halt::AgentUnavailable);
                    self.budget_stop = Some(why);
                }
            }
            if let Some(next) = self.queue.peek_next() {
                let limit = self.tests.max_cost_usd(next.test);
                match context.budget.admit(self.tests.rel_path(next.test), limit) {
                    Admission::Start => {}
                    // Tests are running whose cost decides: asked again when one ends.
                    Admission::Wait => break,
                    Admission::Refuse(why) => {
                        Notices::new(self.reporter.clone())
                            .send(format!("no further root test starts: {why}"));
                        self.queue.halt(Halt::OverBudget);
                        self.budget_stop = Some(format!("over budget: {why}"));
                    }
                }
            }
            let reserved = match self.queue.peek_next() {
                Some(next) if self.cost_ledger.is_some() => {
                    let Some(key) = self.reserve_in_ledger(&context, next.test) else {
                        continue;
                    };
                    Some(key)
                }
                _ => None,
            };
            let Some(attempt) = self.queue.next_to_start() else {
                break;
            };
            let run_id = reserved.unwrap_or_else(RunId::fresh);
            let Some(plan) = self
                .tests
                .plan(attempt.test)
                .map(|p| repeat_of(p, attempt.repeat))
            else {
                // Never: a queued attempt keeps its test's plan. Said, and counted as an error.
                tracing::error!(
                    "dispatch: {} has no plan left; attempt {} not started",
                    self.tests.rel_path(attempt.test).display(),
                    attempt.number
                );
                self.queue.finished(attempt, RunOutcome::Error);
                continue;
            };
            context.budget.reserve(
                &run_id,
                self.tests.rel_path(attempt.test),
                self.tests.max_cost_usd(attempt.test),
            );
            tracing::info!(
                "dispatch: {} attempt {} → run {run_id} in {} ({} running)",
                self.tests.rel_path(attempt.test).display(),
                attempt.number,
                RunPaths::under(&self.artifact_dir, &run_id).dir.display(),
                self.queue.running()
            );
            let events = RunEvents::start(self.reporter.clone(), run_id.clone());
            let args = SessionArgs {
                test: plan,
                attempt,
                events: events.clone(),
                suite: Arc::clone(&context),
                supervisor: myself.clone(),
            };
            match Actor::spawn_linked(None, SessionActor, args, myself.get_cell()).await {
                Ok((actor, _)) => {
                    self.running.insert(
                        actor.get_id(),
                        RunningSession {
                            attempt,
                            run_id,
                            events,
                            actor,
                        },
                    );
                }
                Err(e) => {
                    self.release_budget(&run_id);
                    Notices::new(self.reporter.clone())
                        .send(format!("cannot start a session: {e}"));
                    self.queue.finished(attempt, RunOutcome::Error);
                    self.settle_if_done(attempt.test);
                }
            }
        }
        if self.queue.is_done() {
            self.finish(myself).await;
        }
    }

    /// Suite-scoped commands: started once, with the ports they name shared by every session.
    async fn start_suite_commands(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
    ) -> BTreeMap<String, u16> {
        let base = &self.suite.base;
        let suite_commands: Vec<_> = base
            .commands
            .values()
            .filter(|c| c.scope == CommandScope::Suite)
            .collect();
        if suite_commands.is_empty() {
            return BTreeMap::new();
        }
        let mut named = BTreeSet::new();
        for c in &suite_commands {
            let probe_texts = c.readiness.iter().map(|p| match &p.kind {
                ProbeKind::Http(t) | ProbeKind::Tcp(t) | ProbeKind::Log(t) | ProbeKind::Exec(t) => {
                    t.as_str()
                }
            });
            for text in std::iter::once(c.cmd.as_str())
                .chain(c.cwd.as_deref())
                .chain(probe_texts)
            {
                named.extend(references(text).unwrap_or_default());
            }
        }
        let mut shared = BTreeMap::new();
        for name in named.into_iter().filter(|n| base.ports.contains_key(n)) {
            match allocate_loopback_port() {
                Ok(port) => {
                    shared.insert(name, port);
                }
                Err(e) => {
                    self.suite_harness_failed(format!("no free port for suite port `{name}`: {e}"));
                    return shared;
                }
            }
        }
        let suite = SuitePaths::under(&self.artifact_dir, &self.suite_id);
        let workdir = suite.workspace();
        let _ = std::fs::create_dir_all(&workdir);
        // Suite-scoped commands belong to no run: their `BUGATTI_RUN_ID` and
        // `BUGATTI_SESSION_ID` are the suite's id (as they always were).
        let id = SessionIdentity {
            run_id: RunId::new(self.suite_id.as_str()),
            session_id: SessionId::new(self.suite_id.as_str()),
            run_dir: suite.dir.clone(),
            workdir,
            project_root: self.suite.project_root.clone(),
        };
        let specs = session_vars(base, &id, &shared).and_then(|vars| {
            command_specs(
                base,
                CommandScope::Suite,
                &vars,
                &self.suite.project_root,
                &suite.logs_dir(),
                &self.args_skip_cmd,
            )
        });
        let specs = match specs {
            Ok(specs) => specs,
            Err(e) => {
                self.suite_harness_failed(format!("suite-scoped commands: {e}"));
                return shared;
            }
        };
        {
            let mut records = self
                .suite_commands
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            for c in &suite_commands {
                let log = artifacts::suite_command_log_rel(&self.suite_id, &c.name);
                records.push(CommandRecord::pending(
                    &c.name,
                    c.kind.as_str(),
                    "suite",
                    log,
                ));
            }
        }
        let (tx, rx) = mpsc::unbounded_channel::<HarnessEvent>();
        let records = Arc::clone(&self.suite_commands);
        let reporter = self.reporter.clone();
        let supervisor = myself.clone();
        let mut last_exit: HashMap<String, String> = HashMap::new();
        let forward = move |event: HarnessEvent| {
            tracing::info!("suite command `{}`: {}", event.command, event.kind);
            let state = setup_state(
                &event.kind,
                last_exit.get(&event.command).map(String::as_str),
            );
            if let HarnessEventKind::Exited { status, .. } = &event.kind {
                last_exit.insert(event.command.clone(), status.to_string());
            }
            if let Some(record) = records
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter_mut()
                .find(|r| r.name == event.command)
            {
                record.apply_setup(&state, event.at);
            }
            let _ = reporter.cast(ReporterMsg::SuiteEvent {
                kind: EventKind::SetupStatus {
                    command: event.command.clone(),
                    state: state.clone(),
                },
            });
            let _ = supervisor.cast(SupervisorMsg::SuiteCommand {
                command: event.command,
                state,
                at: event.at,
            });
            // On until the harness is gone: the record and the reporter hear of every event.
            true
        };
        // A flush waited for in vain (its wait timed out) must not end the relay either.
        let flush = relay(rx, forward, |done| {
            let _ = done.send(());
            true
        });
        match Harness::spawn(
            myself.get_cell(),
            crate::process::owner::Scope::suite(self.suite_id.clone()),
            tx,
        )
        .await
        {
            Ok(harness) => {
                self.suite_harness = Some(harness.clone());
                if let Err(e) = harness.start(specs).await {
                    self.suite_harness_failed(format!(
                        "suite-scoped commands failed to start: {e}"
                    ));
                }
                // Their `ready` goes to the reporter ahead of the first run's start, so the
                // console says it as setup, not as something that happened while tests ran.
                wait_for_flush(&flush).await;
            }
            Err(e) => {
                self.suite_harness_failed(format!("cannot start the suite harness: {e}"));
            }
        }
        shared
    }

    async fn finish(&mut self, myself: &ActorRef<SupervisorMsg>) {
        let Some(done) = self.done.take() else {
            return;
        };
        // The browsers kept for the suite's sessions: every session is over.
        if let Some(context) = &self.context {
            for report in context.browser_pool.shutdown(grace_is_over()).await {
                if !report.leaked.is_empty() {
                    tracing::warn!(
                        "a pooled browser leaked processes {:?} (killed)",
                        report.leaked
                    );
                }
            }
        }
        if let Some(harness) = self.suite_harness.take() {
            for record in harness.teardown_all(grace_is_over()).await {
                let how = record.teardown.map_or("not running", |t| t.as_str());
                tracing::info!("suite command `{}` torn down: {how}", record.name);
            }
        }
        let tallies = self.queue.tallies();
        let not_run: Vec<String> = tallies
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.was_started())
            .map(|(i, _)| self.tests.rel_path(i).display().to_string())
            .collect();
        let mut reason = ExitReason::Success;
        let strict = self.suite.base.provider.strict_warnings.value;
        let fail_on_flaky = self.suite.base.supervisor.flaky.value == FlakyPolicy::Fail;
        for (i, tally) in tallies.iter().enumerate() {
            if let Some(outcome) = tally.final_outcome(strict) {
                let contributes = match (outcome, self.shutdown) {
                    (RunOutcome::Interrupted, Some(signal)) => ExitReason::Interrupted(signal),
                    // A quarantined test's failure never changes the exit code (docs/ci.md), but a
                    // harness that could not run it does: quarantine hides a test's flakiness,
                    // not a broken machine.
                    (RunOutcome::Error, _) => ExitReason::HarnessError,
                    _ if self.tests.quarantined(i) => ExitReason::Success,
                    _ if fail_on_flaky && tally.is_flaky(strict) => ExitReason::TestFailed,
                    _ => ExitReason::for_outcome(outcome, false),
                };
                reason = reason.max(contributes);
            }
        }
        if self.harness_error.is_some() || self.queue.halted() == Some(Halt::AgentUnavailable) {
            reason = reason.max(ExitReason::HarnessError);
        }
        // A root test the suite's budget kept from starting did not pass (docs/signals.md: over budget).
        if self.queue.halted() == Some(Halt::OverBudget) && !not_run.is_empty() {
            reason = reason.max(ExitReason::TestFailed);
        }
        if let Some(signal) = self.shutdown {
            reason = reason.max(ExitReason::Interrupted(signal));
        }
        tracing::info!("suite finished: exit code {}", reason.code());
        let harness_error = self.harness_error.clone();
        let not_run_reason = self.budget_stop.clone();
        // A record that could not be written is a harness error (docs/signals.md); the reporter has
        // said which and why.
        let written = match ractor::call!(self.reporter, |reply| ReporterMsg::SuiteFinished {
            not_run,
            harness_error,
            not_run_reason,
            reply
        }) {
            Ok(Ok(files)) => files.lost.is_empty(),
            // The reporter's last word is out: these go straight to stderr.
            Ok(Err(e)) => {
                stderr_notice(&format!("the suite summary is incomplete: {e}"));
                false
            }
            Err(e) => {
                stderr_notice(&format!("the reporter is gone: {e}"));
                false
            }
        };
        if !written {
            reason = reason.max(ExitReason::HarnessError);
        }
        let _ = done.send(reason);
        myself.stop(None);
    }
}

/// A random number in 0..1 for a retry's jitter (a v4 uuid's random bits: no other source is
/// needed for spreading waits).
fn random_fraction() -> f64 {
    let bits = uuid::Uuid::new_v4().as_u128() as u64;
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// The test as a `--repeat` run after the first runs it: without replay unless `--replay` said
/// otherwise, so each repeat asks the agent again (a replayed verdict cannot flip, and the
/// classes of docs/ci.md are about the agent's runs).
fn repeat_of(test: &Arc<RootTest>, repeat: u32) -> Arc<RootTest> {
    if repeat <= 1 || test.effective.replay.mode.source == crate::model::layers::Layer::Flag {
        return Arc::clone(test);
    }
    let mut again = RootTest::clone(test);
    again.effective.replay.mode.value = crate::model::replay::ReplayMode::Off;
    Arc::new(again)
}
