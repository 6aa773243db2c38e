//! The SupervisorActor: one per invocation. Owns the queue of root-test attempts, starts suite-
//! scoped commands, spawns a linked SessionActor per attempt (at most `jobs` at once, a slot
//! refilled as soon as it frees), turns signals and the deadline into an orderly shutdown, and
//! answers with the exit reason once every report is on disk.
//!
//! A session that panics reaches us as a supervision event: its test fails with `error` and the
//! panic message, its processes are killed through the registry, and the others run on.

use crate::actors::budget::Budget;
use crate::actors::harness::Harness;
use crate::actors::queue::{Attempt, Halt, SuiteQueue};
use crate::actors::reporter::{Notices, ReporterMsg, RunEvents};
use crate::actors::session::{SessionActor, SessionArgs, SessionMsg, SuiteContext};
use crate::actors::session_plan::{command_specs, session_vars, SessionIdentity};
use crate::model::config::CommandScope;
use crate::model::layers::ProbeKind;
use crate::model::load::{RootTest, Suite};
use crate::model::outcome::{ExitReason, InterruptSignal, RunOutcome};
use crate::model::substitute::references;
use crate::process::owner::Scope;
use crate::process::ports::allocate_loopback_port;
use crate::process::signals::ShutdownRequest;
use crate::process::teardown::kill_scope;
use crate::report::console::stderr_notice;
use crate::report::events::EventKind;
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};

pub enum SupervisorMsg {
    /// Start suite-scoped commands, then dispatch.
    Begin,
    SessionDone {
        attempt: Attempt,
        run_id: String,
        outcome: RunOutcome,
    },
    Shutdown(ShutdownRequest),
    /// `--timeout` expired: a shutdown like SIGTERM's, said to be the deadline's.
    DeadlineReached {
        secs: u64,
    },
}

pub struct SupervisorArgs {
    pub suite: Suite,
    pub suite_id: String,
    pub artifact_dir: PathBuf,
    pub reporter: ActorRef<ReporterMsg>,
    pub skip_cmd: Vec<String>,
    pub skip_readiness: Vec<String>,
    /// `--from-checkpoint NAME`: every session restores it and skips the steps up to it.
    pub from_checkpoint: Option<String>,
    pub claude_bin: PathBuf,
    /// Answered once, when every report is written.
    pub done: oneshot::Sender<ExitReason>,
}

/// A session the supervisor started and has not heard the end of.
struct RunningSession {
    attempt: Attempt,
    run_id: String,
    /// The run's event outlet (shared with the session), to close the run should it panic.
    events: RunEvents,
    actor: ActorRef<SessionMsg>,
}

pub struct SupervisorState {
    /// The root tests, indexed by `Attempt::test`; fixed.
    tests: Vec<Arc<RootTest>>,
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
    /// `provider.claude_bin` of the effective config.
    claude_bin: PathBuf,
    /// The validated suite; fixed.
    suite: Suite,
    /// This invocation's id (suite directory, ledger, suite-scoped commands' owner).
    suite_id: String,
    /// Where every artifact goes (created by `run`).
    artifact_dir: PathBuf,
    /// The one writer of artifacts and console lines.
    reporter: ActorRef<ReporterMsg>,
    /// Suite-scoped commands, torn down when the suite finishes.
    suite_harness: Option<Harness>,
    /// Set when the suite harness could not start: nothing runs, exit 3.
    harness_error: Option<String>,
    /// Set when `[supervisor] max_cost_usd` kept the next root test from starting: why.
    budget_stop: Option<String>,
    /// The first shutdown signal (or the deadline), once one came.
    shutdown: Option<InterruptSignal>,
    /// Becomes true on a second signal: every teardown skips its grace periods.
    skip_grace: watch::Sender<bool>,
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
        args: SupervisorArgs,
    ) -> Result<SupervisorState, ActorProcessingErr> {
        let base = &args.suite.base.supervisor;
        let tests: Vec<Arc<RootTest>> = args.suite.tests.iter().cloned().map(Arc::new).collect();
        let strict = args.suite.base.provider.strict_warnings.value;
        let queue = SuiteQueue::new(
            tests.len(),
            base.jobs.value,
            base.retries.value,
            base.fail_fast.value,
            strict,
        );
        if let Some(secs) = base.timeout_secs.value {
            myself.send_after(Duration::from_secs(secs), move || {
                SupervisorMsg::DeadlineReached { secs }
            });
        }
        let (skip_grace, _) = watch::channel(false);
        myself.cast(SupervisorMsg::Begin)?;
        Ok(SupervisorState {
            tests,
            queue,
            running: HashMap::new(),
            context: None,
            args_skip_cmd: args.skip_cmd,
            args_skip_readiness: args.skip_readiness,
            from_checkpoint: args.from_checkpoint,
            claude_bin: args.claude_bin,
            suite: args.suite,
            suite_id: args.suite_id,
            artifact_dir: args.artifact_dir,
            reporter: args.reporter,
            suite_harness: None,
            harness_error: None,
            budget_stop: None,
            shutdown: None,
            skip_grace,
            done: Some(args.done),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<SupervisorMsg>,
        message: SupervisorMsg,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SupervisorMsg::Begin => {
                let shared_ports = state.start_suite_commands(&myself).await;
                state.context = Some(Arc::new(SuiteContext {
                    suite_id: state.suite_id.clone(),
                    project_root: state.suite.project_root.clone(),
                    artifact_dir: state.artifact_dir.clone(),
                    reporter: state.reporter.clone(),
                    skip_cmd: state.args_skip_cmd.clone(),
                    skip_readiness: state.args_skip_readiness.clone(),
                    from_checkpoint: state.from_checkpoint.clone(),
                    shared_ports,
                    claude_bin: state.claude_bin.clone(),
                    skip_grace: state.skip_grace.subscribe(),
                    budget: Arc::new(Budget::new(state.suite.base.supervisor.max_cost_usd.value)),
                }));
                if state.harness_error.is_some() {
                    state.queue.halt(Halt::Shutdown);
                }
                state.dispatch(&myself).await;
            }
            SupervisorMsg::SessionDone {
                attempt,
                run_id,
                outcome,
            } => {
                state.running.retain(|_, r| r.run_id != run_id);
                state.queue.finished(attempt, outcome);
                state.dispatch(&myself).await;
            }
            SupervisorMsg::Shutdown(request) => {
                let (signal, message) = match request {
                    ShutdownRequest::Graceful(s) => (
                        s,
                        format!(
                            "{}: stopping — no new tests; {} running test(s) are stopping their agents and tearing down their harness (grace periods apply); a second signal skips them",
                            s.name(),
                            state.running.len()
                        ),
                    ),
                    ShutdownRequest::SkipGrace(s) => {
                        state.skip_grace.send_replace(true);
                        (s, format!("{}: second signal — skipping the grace periods", s.name()))
                    }
                };
                state
                    .shut_down(&myself, signal, signal.name().to_string(), message)
                    .await;
            }
            SupervisorMsg::DeadlineReached { secs } => {
                let message = format!(
                    "--timeout: the {secs}s deadline passed — stopping like SIGTERM: no new tests; \
                     {} running test(s) are tearing down",
                    state.running.len()
                );
                let cause = format!("the --timeout deadline ({secs}s) passed");
                state
                    .shut_down(&myself, InterruptSignal::Terminate, cause, message)
                    .await;
            }
        }
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
            let Some(running) = state.running.remove(&who.get_id()) else {
                tracing::error!("a child of the supervisor failed: {err}");
                return Ok(());
            };
            let message = format!("the session panicked: {err}");
            Notices::new(state.reporter.clone()).send(format!(
                "{} (run {}): {message}",
                state.tests[running.attempt.test].rel_path.display(),
                running.run_id
            ));
            // Whatever the dead session left: its registered groups and every process of its run.
            kill_scope(&Scope::run(running.run_id.clone()));
            let _ = running.events.emit(EventKind::RunFinished {
                outcome: RunOutcome::Error,
                message: Some(message),
            });
            let _ = running.events.close().await;
            state.queue.finished(running.attempt, RunOutcome::Error);
            state.dispatch(&myself).await;
        }
        Ok(())
    }
}

impl SupervisorState {
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
            if self.queue.has_pending() && self.queue.halted().is_none() {
                if let Some(why) = context.budget.next_test_refused() {
                    Notices::new(self.reporter.clone())
                        .send(format!("no further root test starts: {why}"));
                    self.queue.halt(Halt::OverBudget);
                    self.budget_stop = Some(format!("over budget: {why}"));
                }
            }
            let Some(attempt) = self.queue.next_to_start() else {
                break;
            };
            let run_id = uuid::Uuid::now_v7().to_string();
            let events = RunEvents::start(self.reporter.clone(), run_id.clone());
            let args = SessionArgs {
                test: Arc::clone(&self.tests[attempt.test]),
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
                    Notices::new(self.reporter.clone())
                        .send(format!("cannot start a session: {e}"));
                    self.queue.finished(attempt, RunOutcome::Error);
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
        let suite_dir = self.artifact_dir.join("suites").join(&self.suite_id);
        let workdir = suite_dir.join("workspace");
        let _ = std::fs::create_dir_all(&workdir);
        let id = SessionIdentity {
            run_id: self.suite_id.clone(),
            session_id: self.suite_id.clone(),
            run_dir: suite_dir.clone(),
            workdir,
            project_root: self.suite.project_root.clone(),
        };
        let specs = session_vars(base, &id, &shared).and_then(|vars| {
            command_specs(
                base,
                CommandScope::Suite,
                &vars,
                &self.suite.project_root,
                &suite_dir.join("logs"),
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
        let (tx, mut rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                tracing::info!("suite command event: {event:?}");
            }
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
        if let Some(harness) = self.suite_harness.take() {
            let skip_grace = *self.skip_grace.borrow();
            for record in harness.teardown_all(skip_grace).await {
                tracing::info!(
                    "suite command {} teardown: {:?}",
                    record.name,
                    record.teardown
                );
            }
        }
        let tallies = self.queue.tallies();
        let not_run: Vec<String> = tallies
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.was_started())
            .map(|(i, _)| self.tests[i].rel_path.display().to_string())
            .collect();
        let mut reason = ExitReason::Success;
        for tally in tallies {
            if let Some(outcome) = tally.final_outcome() {
                let contributes = match (outcome, self.shutdown) {
                    (RunOutcome::Interrupted, Some(signal)) => ExitReason::Interrupted(signal),
                    _ => ExitReason::for_outcome(outcome, false),
                };
                reason = reason.max(contributes);
            }
        }
        if self.harness_error.is_some() {
            reason = reason.max(ExitReason::HarnessError);
        }
        // A root test the suite's budget kept from starting did not pass (SPEC §6: over budget).
        if self.queue.halted() == Some(Halt::OverBudget) && !not_run.is_empty() {
            reason = reason.max(ExitReason::TestFailed);
        }
        if let Some(signal) = self.shutdown {
            reason = reason.max(ExitReason::Interrupted(signal));
        }
        let harness_error = self.harness_error.clone();
        let not_run_reason = self.budget_stop.clone();
        match ractor::call!(self.reporter, |reply| ReporterMsg::SuiteFinished {
            not_run,
            harness_error,
            not_run_reason,
            reply
        }) {
            Ok(Ok(_files)) => {}
            // The reporter's last word is out: these go straight to stderr.
            Ok(Err(e)) => stderr_notice(&format!("the suite summary is incomplete: {e}")),
            Err(e) => stderr_notice(&format!("the reporter is gone: {e}")),
        }
        let _ = done.send(reason);
        myself.stop(None);
    }
}
