//! The built-in `shell` provider: the instruction's backticked and fenced commands run with `sh -c`
//! in the workspace with the session's environment; real processes, real exit codes.

use crate::common::rig::{step, Rig};
use bugatti::actors::agent::{AgentActor, AgentArgs, AgentMsg};
use bugatti::model::outcome::{StepStatus, TeardownState};
use bugatti::providers::{self, AgentContext, AgentEvent, Provider, StepVerdict};
use ractor::{call, Actor};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(60);

async fn shell(rig: &Rig) -> Box<dyn Provider> {
    let mut spec = rig.shell_spec();
    spec.stop_timeout = Duration::from_secs(2);
    let mut p = providers::create(AgentContext {
        spec,
        facts: rig.facts.clone(),
        events: rig.events.clone(),
    });
    p.start().await.expect("start");
    p.bootstrap().await.expect("bootstrap");
    p
}

async fn run(
    p: &mut Box<dyn Provider>,
    id: u32,
    instruction: &str,
    timeout: Duration,
) -> StepVerdict {
    let (_keep, cancel) = tokio::sync::watch::channel(false);
    p.run_step(&step(id, instruction, timeout), cancel).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_run_in_the_workspace_with_the_session_env() {
    let mut rig = Rig::new(&[]);
    rig.facts.env.push(("APP_PORT".into(), "4242".into()));
    let mut p = shell(&rig).await;
    let v = run(
        &mut p,
        7,
        "Write the facts with `printf '%s %s' \"$APP_PORT\" \"$BUGATTI_STEP_ID\" > facts.txt` and then\n\
         ```sh\n\
         echo BUGATTI_LOG port is $APP_PORT\n\
         echo BUGATTI_EVIDENCE cli facts.txt\n\
         test \"$(pwd)\" = \"$BUGATTI_WORKDIR\"\n\
         ```",
        LONG,
    )
    .await;
    assert_eq!(v.status, StepStatus::Ok, "{v:?}");
    assert_eq!(v.logs, vec!["port is 4242".to_string()]);
    assert_eq!(v.evidence.len(), 1);
    let facts = std::fs::read_to_string(rig.facts.workdir.join("facts.txt")).expect("facts.txt");
    assert_eq!(facts, "4242 7");
    let events = rig.drain_events();
    assert!(
        matches!(&events[0], AgentEvent::Log { step_id, message } if *step_id == 7 && message == "port is 4242")
    );
    assert_eq!(p.close().await, TeardownState::Clean);
    let log = String::from_utf8_lossy(&rig.transcript("agent.log")).into_owned();
    assert!(
        log.contains("$ printf") && log.contains("RESULT OK"),
        "{log}"
    );
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_failing_command_is_the_error_with_its_output_tail() {
    let rig = Rig::new(&[]);
    let mut p = shell(&rig).await;
    let v = run(
        &mut p,
        1,
        "Run `echo fine` then `sh -c 'echo the page said 500; echo details >&2; exit 3'` then `touch never.txt`.",
        LONG,
    )
    .await;
    assert_eq!(v.status, StepStatus::Error);
    assert!(
        v.message
            .starts_with("sh -c 'echo the page said 500; echo details >&2; exit 3' exited 3\n"),
        "{}",
        v.message
    );
    assert!(
        v.message.contains("the page said 500") && v.message.contains("details"),
        "{}",
        v.message
    );
    assert!(
        !rig.facts.workdir.join("never.txt").exists(),
        "later commands do not run"
    );
    p.close().await;
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_printed_marker_decides_when_every_command_passes() {
    let rig = Rig::new(&[]);
    let mut p = shell(&rig).await;
    let warn = run(&mut p, 1, "`echo 'RESULT WARN: slow answer'`", LONG).await;
    assert_eq!(
        (warn.status, warn.message.as_str()),
        (StepStatus::Warn, "slow answer")
    );
    let error = run(
        &mut p,
        2,
        "`echo 'RESULT ERROR: wrong total'` and `true`",
        LONG,
    )
    .await;
    assert_eq!(
        (error.status, error.message.as_str()),
        (StepStatus::Error, "wrong total")
    );
    let exit_wins = run(&mut p, 3, "`echo RESULT OK; exit 4`", LONG).await;
    assert_eq!(exit_wins.status, StepStatus::Error);
    p.close().await;
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instruction_without_commands_is_a_protocol_error() {
    let rig = Rig::new(&[]);
    let mut p = shell(&rig).await;
    let v = run(&mut p, 1, "Open the home page and check the title.", LONG).await;
    assert_eq!(v.status, StepStatus::ProtocolError);
    p.close().await;
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_past_the_timeout_is_killed_with_its_group() {
    let rig = Rig::new(&[]);
    let mut p = shell(&rig).await;
    let v = run(
        &mut p,
        1,
        "```\nsleep 300 &\nsleep 300\n```",
        Duration::from_secs(1),
    )
    .await;
    assert_eq!(v.status, StepStatus::Timeout, "{v:?}");
    rig.assert_no_survivors();
    p.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_and_escaped_processes_do_not_outlive_their_step() {
    let rig = Rig::new(&[]);
    let mut p = shell(&rig).await;
    let v = run(&mut p, 1, "`sleep 300 & echo started`", LONG).await;
    assert_eq!(v.status, StepStatus::Ok, "{v:?}");
    rig.assert_no_survivors();
    let v = run(
        &mut p,
        2,
        "```\nsetsid sh -c 'echo $$ > escaped.pid; exec sleep 300' > /dev/null 2>&1 &\n\
             while [ ! -s escaped.pid ]; do sleep 0.05; done\necho started\n```",
        LONG,
    )
    .await;
    assert_eq!(v.status, StepStatus::Ok, "{v:?}");
    rig.assert_no_survivors();
    assert_eq!(p.close().await, TeardownState::Leaked);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_redacted_from_messages_and_transcript() {
    let rig = Rig::new(&[("DB_PASSWORD", "hunter2-very-secret")]);
    let mut p = shell(&rig).await;
    let v = run(
        &mut p,
        1,
        "`echo \"login with $DB_PASSWORD failed\"; exit 1`",
        LONG,
    )
    .await;
    assert_eq!(v.status, StepStatus::Error);
    assert!(
        v.message
            .contains("login with [REDACTED:DB_PASSWORD] failed"),
        "{}",
        v.message
    );
    p.close().await;
    let log = String::from_utf8_lossy(&rig.transcript("agent.log")).into_owned();
    assert!(
        !log.contains("hunter2") && log.contains("[REDACTED:DB_PASSWORD]"),
        "{log}"
    );
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_actor_runs_shell_steps_and_closes() {
    let rig = Rig::new(&[]);
    let args = AgentArgs {
        spec: rig.shell_spec(),
        facts: rig.facts.clone(),
        events: rig.events.clone(),
        gate: None,
    };
    let (agent, handle) = Actor::spawn(None, AgentActor, args).await.expect("spawn");
    call!(agent, AgentMsg::Start).expect("call").expect("start");
    call!(agent, AgentMsg::Bootstrap)
        .expect("call")
        .expect("bootstrap");
    let v = call!(agent, AgentMsg::RunStep, step(1, "`true`", LONG)).expect("step");
    assert_eq!(v.status, StepStatus::Ok);
    assert_eq!(
        call!(agent, AgentMsg::Close).expect("close"),
        TeardownState::Clean
    );
    handle.await.expect("actor ends");
    rig.assert_no_survivors();
}

/// A stand-in for the session actor: a parent that keeps running when its agent child ends.
struct Parent;

impl Actor for Parent {
    type Msg = ();
    type State = tokio::sync::mpsc::UnboundedSender<String>;
    type Arguments = tokio::sync::mpsc::UnboundedSender<String>;

    async fn pre_start(
        &self,
        _myself: ractor::ActorRef<()>,
        seen: Self::Arguments,
    ) -> Result<Self::State, ractor::ActorProcessingErr> {
        Ok(seen)
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ractor::ActorRef<()>,
        event: ractor::SupervisionEvent,
        seen: &mut Self::State,
    ) -> Result<(), ractor::ActorProcessingErr> {
        if let ractor::SupervisionEvent::ActorTerminated(_, _, reason) = event {
            let _ = seen.send(reason.unwrap_or_default());
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_spawned_under_a_session_ends_without_stopping_it() {
    let rig = Rig::new(&[]);
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let (parent, parent_handle) = Actor::spawn(None, Parent, seen_tx).await.expect("parent");
    let args = AgentArgs {
        spec: rig.shell_spec(),
        facts: rig.facts.clone(),
        events: rig.events.clone(),
        gate: None,
    };
    let (agent, handle) = AgentActor::spawn_under(parent.get_cell(), args)
        .await
        .expect("spawn under parent");
    call!(agent, AgentMsg::Start).expect("call").expect("start");
    let v = call!(
        agent,
        AgentMsg::RunStep,
        step(1, "`echo BUGATTI_LOG hi`", LONG)
    )
    .expect("step");
    assert_eq!(
        (v.status, v.logs.clone()),
        (StepStatus::Ok, vec!["hi".to_string()])
    );
    call!(agent, AgentMsg::Close).expect("close");
    handle.await.expect("agent ends");
    let reason = tokio::time::timeout(LONG, seen.recv())
        .await
        .expect("in time");
    assert_eq!(reason.as_deref(), Some("agent closed"));
    assert_eq!(parent.get_status(), ractor::ActorStatus::Running);
    parent.stop(None);
    parent_handle.await.expect("parent ends");
    rig.assert_no_survivors();
}
