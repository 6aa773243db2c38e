//! A step's pipeline on its own: a session kit whose agent is a stub actor answering each step
//! with a set verdict, the session's events caught by a stub reporter. No process is started.

use super::*;
use crate::actors::breaker::FaultBreaker;
use crate::actors::budget::Budget;
use crate::actors::reporter::ReporterMsg;
use crate::model::layers::{EffectiveConfig, Sourced};
use crate::model::redact::Secrets;

/// An agent that answers every step with its `StepStatus`, quoting the instruction it got.
struct StubAgent;

impl Actor for StubAgent {
    type Msg = AgentMsg;
    type State = StepStatus;
    type Arguments = StepStatus;

    async fn pre_start(
        &self,
        _: ActorRef<AgentMsg>,
        status: StepStatus,
    ) -> Result<StepStatus, ActorProcessingErr> {
        Ok(status)
    }

    async fn handle(
        &self,
        _: ActorRef<AgentMsg>,
        message: AgentMsg,
        status: &mut StepStatus,
    ) -> Result<(), ActorProcessingErr> {
        if let AgentMsg::RunStep(request, reply) = message {
            let said = format!("stub saw: {}", request.instruction);
            let _ = reply.send(StepVerdict::new(request.step_id, *status, said));
        }
        Ok(())
    }
}

type Seen = Arc<std::sync::Mutex<Vec<EventKind>>>;

/// A reporter that keeps the run events it is sent.
struct StubReporter;

impl Actor for StubReporter {
    type Msg = ReporterMsg;
    type State = Seen;
    type Arguments = Seen;

    async fn pre_start(
        &self,
        _: ActorRef<ReporterMsg>,
        seen: Seen,
    ) -> Result<Seen, ActorProcessingErr> {
        Ok(seen)
    }

    async fn handle(
        &self,
        _: ActorRef<ReporterMsg>,
        message: ReporterMsg,
        seen: &mut Seen,
    ) -> Result<(), ActorProcessingErr> {
        if let ReporterMsg::Event { event, .. } = message {
            seen.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(event.kind);
        }
        Ok(())
    }
}

/// The session actor's place: the pipeline casts to it (`StepStarting`); nothing is done.
struct StubSession;

impl Actor for StubSession {
    type Msg = SessionMsg;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<SessionMsg>, (): ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

fn planned(index: usize, instruction: &str) -> PlannedStep {
    PlannedStep {
        step_id: StepId::from_index(index),
        source_file: PathBuf::from("t.test.toml"),
        source_index: index + 1,
        include_chain: Vec::new(),
        instruction: instruction.to_string(),
        timeout_secs: None,
        timeout: Sourced::default_value(Duration::from_secs(30)),
        checkpoint: None,
        setup: false,
        skip: false,
        replay: true,
        source_span: 0..0,
    }
}

/// Runs `plan`'s steps against an agent answering `status`; the ending and the events reported.
async fn run_steps(plan: Vec<PlannedStep>, status: StepStatus) -> (Ending, Vec<EventKind>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let seen = Seen::default();
    let (reporter, _) = Actor::spawn(None, StubReporter, Arc::clone(&seen))
        .await
        .expect("reporter");
    let (myself, _) = Actor::spawn(None, StubSession, ()).await.expect("session");
    let (agent, _) = Actor::spawn(None, StubAgent, status).await.expect("agent");
    let run_id = RunId::fresh();
    let suite = SuiteContext {
        suite_id: SuiteId::fresh(),
        traceparent: None,
        project_root: dir.path().to_path_buf(),
        artifact_dir: dir.path().join(".bugatti"),
        reporter: reporter.clone(),
        skip_cmd: Vec::new(),
        skip_readiness: Vec::new(),
        from_checkpoint: None,
        shared_ports: BTreeMap::new(),
        suite_commands: SuiteCommands::default(),
        budget: Arc::new(Budget::new(None)),
        agent_faults: Arc::new(FaultBreaker::default()),
        model_gate: crate::actors::model_gate::ModelGate::new(1),
        browser_pool: crate::browser::pool::BrowserPool::new(crate::process::owner::Scope::suite(
            SuiteId::fresh(),
        )),
    };
    let test = RootTest {
        path: dir.path().join("t.test.toml"),
        rel_path: PathBuf::from("t.test.toml"),
        name: "t".to_string(),
        tags: Vec::new(),
        plan,
        effective: EffectiveConfig::default(),
        quarantined: false,
    };
    let secrets = Arc::new(Secrets::new(Vec::<(String, String)>::new()));
    let (_stop, stop) = watch::channel(None);
    let session = Driver {
        test: Arc::new(test),
        attempt: Attempt {
            test: 0,
            number: 1,
            repeat: 1,
            waited_ms: 0,
        },
        suite: Arc::new(suite),
        run_id: run_id.clone(),
        session_id: SessionId::fresh(),
        tokens: SessionTokens::new(),
        secrets: Arc::clone(&secrets),
        events: RunEvents::start(reporter.clone(), run_id.clone()),
        myself: myself.clone(),
        stop,
        held_events: std::sync::Mutex::default(),
        #[cfg(feature = "fault-injection")]
        fault_driver_panic: false,
    };
    let (harness_tx, _harness_rx) = mpsc::unbounded_channel();
    let harness = Harness::spawn(myself.get_cell(), Scope::run(run_id), harness_tx)
        .await
        .expect("harness");
    let (_news_tx, news) = mpsc::unbounded_channel();
    let mut kit = SessionKit {
        workdir: dir.path().to_path_buf(),
        vars: SessionVars {
            vars: BTreeMap::new(),
            env: Vec::new(),
            secrets,
            ports: BTreeMap::new(),
        },
        harness,
        console: None,
        browser: None,
        agent: AgentSlot::Spawned {
            actor: agent.clone(),
            news,
        },
        replay: None,
        kept_replay: None,
        harness_flush: mpsc::unbounded_channel().0,
    };
    let ending = Steps::new(&session, &mut kit).run().await;
    // Every event sent is handled before the reporter stops.
    reporter
        .drain_and_wait(None)
        .await
        .expect("the reporter drains");
    agent.stop(None);
    myself.stop(None);
    let events = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    (ending, events)
}

fn finished(events: &[EventKind]) -> Vec<(StepId, StepStatus, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            EventKind::StepFinished {
                step_id,
                status,
                message,
                ..
            } => Some((*step_id, *status, message.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn each_step_goes_to_the_agent_and_its_verdict_is_the_steps_end() {
    let plan = vec![planned(0, "open the page"), planned(1, "check the basket")];
    let (ending, events) = run_steps(plan, StepStatus::Ok).await;
    assert_eq!(ending.outcome, RunOutcome::Passed, "{ending:?}");
    assert_eq!(
        finished(&events),
        vec![
            (
                StepId::new(1),
                StepStatus::Ok,
                Some("stub saw: open the page".into())
            ),
            (
                StepId::new(2),
                StepStatus::Ok,
                Some("stub saw: check the basket".into())
            ),
        ]
    );
}

#[tokio::test]
async fn a_failed_step_ends_the_session_before_the_next_is_sent() {
    let plan = vec![planned(0, "open the page"), planned(1, "check the basket")];
    let (ending, events) = run_steps(plan, StepStatus::Error).await;
    assert_eq!(ending.outcome, RunOutcome::Failed, "{ending:?}");
    assert_eq!(
        finished(&events),
        vec![(
            StepId::new(1),
            StepStatus::Error,
            Some("stub saw: open the page".into())
        )]
    );
    let started = events
        .iter()
        .filter(|e| matches!(e, EventKind::StepStarted { .. }))
        .count();
    assert_eq!(started, 1, "the second step is never sent");
}
