//! The `command` provider against a real scripted agent process (tests/support/scripted_agent.py):
//! verdicts, last-marker-wins, chunk boundaries, protocol errors, timeouts, crashes, 64 MiB replies,
//! invalid UTF-8, startup failures, escaped processes. Every test checks that nothing survives.

use crate::common::rig::{scripted, Rig};
use bugatti::actors::agent::{AgentActor, AgentArgs, AgentMsg};
use bugatti::actors::model_gate::{ModelGate, ModelPermit};
use bugatti::model::agent_fault::FaultKind;
use bugatti::model::ids::StepId;
use bugatti::model::outcome::{StepStatus, TeardownState};
use bugatti::process::group;
use bugatti::providers::{
    self, AgentContext, AgentError, AgentEvent, Provider, StepVerdict, AGENT_MARKER_ENV,
};
use ractor::{call, Actor, ActorRef};
use serde_json::json;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(60);

fn provider(rig: &Rig, spec: bugatti::providers::AgentSpec) -> Box<dyn Provider> {
    providers::create(AgentContext {
        spec,
        facts: rig.facts.clone(),
        events: rig.events.clone(),
    })
}

async fn started(rig: &Rig, spec: bugatti::providers::AgentSpec) -> Box<dyn Provider> {
    let mut p = provider(rig, spec);
    p.start().await.expect("start");
    p.bootstrap().await.expect("bootstrap");
    p
}

async fn step(p: &mut Box<dyn Provider>, id: u32, actions: serde_json::Value) -> StepVerdict {
    let (_keep, cancel) = tokio::sync::watch::channel(false);
    p.run_step(&scripted(id, actions, LONG), cancel).await
}

async fn actor_step(
    agent: &ActorRef<AgentMsg>,
    id: u32,
    actions: serde_json::Value,
) -> StepVerdict {
    call!(agent, AgentMsg::RunStep, scripted(id, actions, LONG)).expect("step call")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ok_warn_error_over_one_session_through_the_actor() {
    let mut rig = Rig::new(&[]);
    let args = AgentArgs {
        spec: rig.command_spec(),
        facts: rig.facts.clone(),
        events: rig.events.clone(),
        gate: None,
    };
    let (agent, handle) = Actor::spawn(None, AgentActor, args)
        .await
        .expect("spawn actor");
    call!(agent, AgentMsg::Start).expect("call").expect("start");
    call!(agent, AgentMsg::Bootstrap)
        .expect("call")
        .expect("bootstrap");

    let absolute = rig.facts.run_dir.join("logs/console.txt");
    let reply = format!(
        "looking\nBUGATTI_LOG opened the page\nBUGATTI_EVIDENCE screenshot screenshots/home.png\n\
         BUGATTI_EVIDENCE console {}\nall good\nRESULT OK\n",
        absolute.display()
    );
    let ok = actor_step(&agent, 1, json!([{ "say": reply }])).await;
    assert_eq!(ok.status, StepStatus::Ok, "{ok:?}");
    assert_eq!(ok.logs, vec!["opened the page".to_string()]);
    assert_eq!(ok.evidence.len(), 2);
    assert_eq!(ok.evidence[0].path, "screenshots/home.png");
    assert_eq!(
        (ok.evidence[1].kind.as_str(), ok.evidence[1].path.as_str()),
        ("console", "logs/console.txt"),
        "absolute paths inside the run directory become relative"
    );
    let warn = actor_step(
        &agent,
        2,
        json!([{"say": "RESULT WARN: the list is slow\n"}]),
    )
    .await;
    assert_eq!(
        (warn.status, warn.message.as_str()),
        (StepStatus::Warn, "the list is slow")
    );
    let error = actor_step(
        &agent,
        3,
        json!([{"say": "RESULT ERROR: no checkout button\n"}]),
    )
    .await;
    assert_eq!(
        (error.status, error.message.as_str()),
        (StepStatus::Error, "no checkout button")
    );

    let teardown = call!(agent, AgentMsg::Close).expect("close");
    assert_eq!(teardown, TeardownState::Clean);
    handle.await.expect("actor ends after close");

    // Live events arrived as the lines did, in order.
    let events = rig.drain_events();
    assert!(
        matches!(&events[0], AgentEvent::Log { step_id: StepId::FIRST, message } if message == "opened the page")
    );
    assert!(matches!(
        &events[1],
        AgentEvent::Evidence {
            step_id: StepId::FIRST,
            ..
        }
    ));
    // The agent got the docs/providers.md lines.
    let received =
        std::fs::read_to_string(rig.facts.workdir.join("received.jsonl")).expect("received");
    let lines: Vec<AgentLine> =
        crate::common::read_jsonl(&rig.facts.workdir.join("received.jsonl"));
    assert_eq!(lines.len(), 4, "{received}");
    assert_eq!(lines[0].kind, "bootstrap");
    assert_eq!(lines[0].run_id, rig.facts.run_id.as_str());
    assert!(lines[0]
        .system_prompt
        .as_deref()
        .expect("prompt")
        .contains("RESULT WARN"));
    assert_eq!(lines[3].kind, "step");
    assert_eq!(lines[3].step_id, Some(3));
    assert_eq!(
        lines[3].session_id.as_deref(),
        Some(rig.facts.session_id.as_str())
    );
    assert_eq!(
        lines[3].include_chain,
        ["root.test.toml", "agent.test.toml"]
    );
    let transcript = String::from_utf8(rig.transcript("agent.log")).expect("utf8");
    assert!(
        transcript.contains("BUGATTI_LOG opened the page")
            && transcript.contains("no checkout button")
    );
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_marker_line_ends_the_reply_and_what_follows_starts_the_next() {
    let rig = Rig::new(&[]);
    let mut p = started(&rig, rig.command_spec()).await;
    // One write holding two markers: the first ends this reply, however the reads are cut.
    let one_burst = step(
        &mut p,
        1,
        json!([{"say": "thinking\nRESULT WARN: first\nRESULT ERROR: second\n"}]),
    )
    .await;
    assert_eq!(
        (one_burst.status, one_burst.message.as_str()),
        (StepStatus::Warn, "first")
    );
    // What came after it is the start of the next reply (the protocol has no turn ids).
    let next = step(&mut p, 2, json!([])).await;
    assert_eq!(
        (next.status, next.message.as_str()),
        (StepStatus::Error, "second")
    );
    // The marker line ends the reply at once (no quiet period).
    let second_thoughts = step(
        &mut p,
        3,
        json!([{"say": "RESULT OK\n"}, {"pause": 0.3}, {"say": "wait, no\nRESULT ERROR: changed my mind\n"}]),
    )
    .await;
    assert_eq!(
        second_thoughts.status,
        StepStatus::Ok,
        "{second_thoughts:?}"
    );
    assert!(
        second_thoughts.duration < Duration::from_millis(300),
        "the reply ended at its marker, before the pause: {:?}",
        second_thoughts.duration
    );
    let late = step(&mut p, 4, json!([])).await;
    assert_eq!(
        (late.status, late.message.as_str()),
        (StepStatus::Error, "changed my mind")
    );
    assert_eq!(p.close().await, TeardownState::Clean);
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markers_split_across_chunk_boundaries() {
    let rig = Rig::new(&[]);
    let mut p = started(&rig, rig.command_spec()).await;
    let v = step(&mut p, 1, json!([
        {"say": "BUGATTI_LO"}, {"pause": 0.05}, {"say": "G half a line\nRES"}, {"pause": 0.05},
        {"say": "ULT WA"}, {"pause": 0.05}, {"say": "RN: split"}, {"pause": 0.05}, {"say": " marker\n"},
    ])).await;
    assert_eq!(
        (v.status, v.message.as_str()),
        (StepStatus::Warn, "split marker")
    );
    assert_eq!(v.logs, vec!["half a line".to_string()]);
    p.close().await;
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_without_a_marker_is_a_protocol_error() {
    let rig = Rig::new(&[]);
    let mut spec = rig.command_spec();
    spec.no_output_timeout = Some(Duration::from_secs(2));
    let mut p = started(&rig, spec).await;
    let v = step(
        &mut p,
        1,
        json!([{"say": "I looked around and it seems fine\n"}]),
    )
    .await;
    assert_eq!(v.status, StepStatus::ProtocolError, "{v:?}");
    assert!(
        v.message.contains("but no RESULT line") && v.message.contains("no_output_timeout_secs"),
        "{}",
        v.message
    );
    p.close().await;
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_past_its_timeout_is_timeout_and_the_agent_is_stopped() {
    let rig = Rig::new(&[]);
    let mut p = started(&rig, rig.command_spec()).await;
    let (_keep, cancel) = tokio::sync::watch::channel(false);
    let request = scripted(1, json!([{"pause": 120}]), Duration::from_secs(1));
    let v = p.run_step(&request, cancel).await;
    assert_eq!(v.status, StepStatus::Timeout, "{v:?}");
    assert!(v.message.contains("wrote nothing"), "{}", v.message);
    // Stopped right away, not at close.
    rig.assert_no_survivors();
    let after = step(&mut p, 2, json!([{"say": "RESULT OK\n"}])).await;
    assert_eq!(after.status, StepStatus::Error);
    let state = p.close().await;
    assert!(matches!(
        state,
        TeardownState::Clean | TeardownState::Killed
    ));
    rig.assert_no_survivors();
}

/// An agent that something outside stopped (here itself, `kill -STOP`) is said to be stopped,
/// the agent fault `stopped`: neither a reply without a marker (`protocol_error`, once it has
/// written and gone silent) nor a slow agent (`timeout`, when the step's time runs out first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_stopped_by_a_signal_is_reported_as_stopped() {
    let rig = Rig::new(&[]);
    let mut spec = rig.command_spec();
    spec.no_output_timeout = Some(Duration::from_secs(2));
    let mut p = started(&rig, spec).await;
    let v = step(
        &mut p,
        1,
        json!([{"say": "checking the page\n"}, {"stop": true}]),
    )
    .await;
    assert_eq!(v.status, StepStatus::AgentError, "{v:?}");
    assert_eq!(v.agent_fault, Some(FaultKind::Stopped), "{v:?}");
    assert!(
        v.message.contains("stopped by a signal") && v.message.contains("state T"),
        "{}",
        v.message
    );
    p.close().await;
    rig.assert_no_survivors();

    // Stopped before it wrote anything, until the step's timeout.
    let mut p = started(&rig, rig.command_spec()).await;
    let (_keep, cancel) = tokio::sync::watch::channel(false);
    let request = scripted(1, json!([{"stop": true}]), Duration::from_secs(1));
    let v = p.run_step(&request, cancel).await;
    assert_eq!(v.status, StepStatus::AgentError, "{v:?}");
    assert_eq!(v.agent_fault, Some(FaultKind::Stopped), "{v:?}");
    p.close().await;
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_without_a_marker_at_the_step_timeout_is_a_timeout() {
    let rig = Rig::new(&[]);
    let mut p = started(&rig, rig.command_spec()).await;
    let (_keep, cancel) = tokio::sync::watch::channel(false);
    let request = scripted(
        1,
        json!([{"say": "working\n"}, {"pause": 120}]),
        Duration::from_secs(1),
    );
    let v = p.run_step(&request, cancel).await;
    // docs/providers.md: past its timeout a step is `timeout`, even after output (a slow agent).
    assert_eq!(v.status, StepStatus::Timeout, "{v:?}");
    assert!(
        v.message.contains("timed out after 1s") && v.message.contains("no RESULT line"),
        "{}",
        v.message
    );
    rig.assert_no_survivors();
    p.close().await;
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_crash_mid_step_fails_with_its_status_and_stderr() {
    let rig = Rig::new(&[]);
    let mut p = started(&rig, rig.command_spec()).await;
    let v = step(
        &mut p,
        1,
        json!([{"say": "partial reply\n"}, {"stderr": "fatal: database gone\n"}, {"exit": 3}]),
    )
    .await;
    assert_eq!(v.status, StepStatus::Error);
    let death = v.agent_died.expect("death recorded");
    assert_eq!(death.status, "exit code 3");
    assert!(death.stderr_tail.contains("database gone"), "{death:?}");
    assert!(
        v.message.contains("exit code 3") && v.message.contains("scripted_agent.py"),
        "{}",
        v.message
    );
    let stderr = String::from_utf8_lossy(&rig.transcript("agent.stderr.log")).into_owned();
    assert!(stderr.contains("fatal: database gone"));
    p.close().await;
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_exit_between_steps_is_reported_and_fails_the_next_step() {
    let mut rig = Rig::new(&[]);
    let mut p = started(&rig, rig.command_spec()).await;
    let first = step(
        &mut p,
        1,
        json!([{"say": "RESULT OK\n"}, {"pause": 1.0}, {"stderr": "bye\n"}, {"exit": 0}]),
    )
    .await;
    assert_eq!(first.status, StepStatus::Ok);
    let event = tokio::time::timeout(LONG, rig.received.recv())
        .await
        .expect("exit event in time");
    match event {
        Some(AgentEvent::Exited(death)) => assert_eq!(death.status, "exit code 0"),
        other => panic!("expected an exit event, got {other:?}"),
    }
    let second = step(&mut p, 2, json!([{"say": "RESULT OK\n"}])).await;
    assert_eq!(second.status, StepStatus::Error);
    assert!(second.agent_died.is_some());
    assert!(
        second.message.contains("already exited"),
        "{}",
        second.message
    );
    p.close().await;
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_mib_in_one_reply() {
    let rig = Rig::new(&[]);
    let mut p = started(&rig, rig.command_spec()).await;
    let size = 64 * 1024 * 1024;
    let v = step(
        &mut p,
        1,
        json!([{"say": "BUGATTI_LOG start\n"}, {"bulk": size}, {"say": "\nRESULT OK\n"}]),
    )
    .await;
    assert_eq!(v.status, StepStatus::Ok, "{}", v.message);
    assert_eq!(v.logs, vec!["start".to_string()]);
    p.close().await;
    let len = std::fs::metadata(rig.facts.run_dir.join("transcripts/agent.log"))
        .expect("log")
        .len();
    assert!(len >= size as u64, "transcript has {len} bytes");
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_is_tolerated_and_kept_raw() {
    let rig = Rig::new(&[]);
    let mut p = started(&rig, rig.command_spec()).await;
    // ff fe, a lone continuation byte, then a marker whose text has invalid bytes.
    let v = step(
        &mut p,
        1,
        json!([{"raw": "fffe80410a"}, {"raw": "524553554c54205741524e3a20636166c3a920ff0a"}]),
    )
    .await;
    assert_eq!(v.status, StepStatus::Warn);
    assert!(v.message.starts_with("café"), "{}", v.message);
    p.close().await;
    let transcript = rig.transcript("agent.log");
    let needle = b"\xff\xfe\x80A\nRESULT WARN: caf\xc3\xa9 \xff\n";
    assert!(
        transcript.windows(needle.len()).any(|w| w == needle),
        "raw bytes kept"
    );
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_failures_name_the_command_line() {
    let rig = Rig::new(&[]);
    let mut spec = rig.command_spec();
    spec.cmd = Some("/nonexistent/agent --flag".into());
    let mut p = provider(&rig, spec);
    let err = p.start().await.expect_err("missing binary");
    assert!(matches!(err, AgentError::Spawn { .. }));
    assert!(
        err.to_string().contains("/nonexistent/agent --flag"),
        "{err}"
    );
    p.close().await;

    let mut spec = rig.command_spec();
    spec.cmd = Some("sh -c 'echo unknown option --bogus >&2; exit 2'".into());
    let mut p = provider(&rig, spec);
    p.start().await.expect("spawned");
    let err = p.bootstrap().await.expect_err("immediate exit");
    assert!(matches!(err, AgentError::ExitedAtStart { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("sh -c") && text.contains("exit code 2") && text.contains("unknown option"),
        "{text}"
    );
    p.close().await;

    let mut spec = rig.command_spec();
    spec.cmd = None;
    let err = provider(&rig, spec).start().await.expect_err("no cmd");
    assert!(err.to_string().contains("[provider] cmd"), "{err}");
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bootstrap_answered_with_an_error_fails_the_start() {
    let mut rig = Rig::new(&[]);
    rig.facts.env.push((
        "SCRIPTED_BOOTSTRAP_REPLY".into(),
        "RESULT ERROR: I refuse\n".into(),
    ));
    let mut p = provider(&rig, rig.command_spec());
    p.start().await.expect("start");
    let err = p.bootstrap().await.expect_err("bootstrap refused");
    assert!(err.to_string().contains("I refuse"), "{err}");
    p.close().await;
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_escaped_the_group_is_found_and_killed() {
    let rig = Rig::new(&[]);
    let mut p = started(&rig, rig.command_spec()).await;
    let v = step(&mut p, 1, json!([{"escape": 300}, {"say": "RESULT OK\n"}])).await;
    assert_eq!(v.status, StepStatus::Ok);
    assert_eq!(p.close().await, TeardownState::Leaked);
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_reach_transcripts_or_verdicts() {
    let rig = Rig::new(&[("API_TOKEN", "s3cr3t-t0ken-value")]);
    let mut p = started(&rig, rig.command_spec()).await;
    let v = step(&mut p, 1, json!([{"say": "token is s3cr3t-"}, {"pause": 0.05}, {"say": "t0ken-value\nBUGATTI_LOG used s3cr3t-t0ken-value\nRESULT ERROR: bad s3cr3t-t0ken-value\n"}, {"stderr": "s3cr3t-t0ken-value\n"}])).await;
    assert_eq!(v.message, "bad [REDACTED:API_TOKEN]");
    assert_eq!(v.logs, vec!["used [REDACTED:API_TOKEN]".to_string()]);
    p.close().await;
    for name in ["agent.log", "agent.stderr.log"] {
        let text = String::from_utf8_lossy(&rig.transcript(name)).into_owned();
        assert!(!text.contains("s3cr3t"), "{name}: {text}");
    }
    assert!(String::from_utf8_lossy(&rig.transcript("agent.log"))
        .contains("token is [REDACTED:API_TOKEN]"));
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_interrupts_a_running_step_through_the_actor() {
    let rig = Rig::new(&[]);
    let args = AgentArgs {
        spec: rig.command_spec(),
        facts: rig.facts.clone(),
        events: rig.events.clone(),
        gate: None,
    };
    let (agent, handle) = Actor::spawn(None, AgentActor, args)
        .await
        .expect("spawn actor");
    call!(agent, AgentMsg::Start).expect("call").expect("start");
    call!(agent, AgentMsg::Bootstrap)
        .expect("call")
        .expect("bootstrap");
    let running = {
        let agent = agent.clone();
        tokio::spawn(async move {
            actor_step(&agent, 1, json!([{"say": "busy\n"}, {"pause": 120}])).await
        })
    };
    // The actor's mailbox stays free while the step runs.
    tokio::time::sleep(Duration::from_millis(300)).await;
    agent.cast(AgentMsg::Cancel).expect("cast");
    let v = tokio::time::timeout(LONG, running)
        .await
        .expect("ends in time")
        .expect("join");
    assert!(v.interrupted);
    assert_eq!(v.status, StepStatus::Error);
    call!(agent, AgentMsg::Close).expect("close");
    handle.await.expect("actor ends");
    rig.assert_no_survivors();
}

/// A line the supervisor sends a `command` agent (docs/providers.md): the bootstrap, then a step.
#[derive(Debug, serde::Deserialize)]
struct AgentLine {
    #[serde(rename = "type")]
    kind: String,
    run_id: String,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    system_prompt: Option<String>,
    #[serde(default)]
    step_id: Option<u32>,
    #[serde(default)]
    include_chain: Vec<String>,
}

/// No process of the run carries the agent marker.
fn no_agent_process(rig: &Rig) -> bool {
    let run_id = rig.facts.run_id.as_str();
    group::live_processes_with_env(AGENT_MARKER_ENV, run_id).is_empty()
}

/// Whether the agent's process shows, looked for a few times: `python3` may be a shim that
/// execs its way to Python (pyenv's runs `expr` and `find` first), and a process in the middle
/// of an exec shows no environment for that moment.
async fn agent_process_seen(rig: &Rig) -> bool {
    for _ in 0..50 {
        if !no_agent_process(rig) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// A `command` agent's actor asked to start behind a model gate of one place, which another
/// session (`elsewhere`) holds: its start waits.
struct GatedStart {
    gate: ModelGate,
    elsewhere: ModelPermit,
    agent: ActorRef<AgentMsg>,
    handle: tokio::task::JoinHandle<()>,
    start: tokio::task::JoinHandle<Result<Result<(), AgentError>, ractor::RactorErr<AgentMsg>>>,
}

async fn start_behind_a_full_gate(rig: &Rig) -> GatedStart {
    let gate = ModelGate::with_stagger(1, Duration::ZERO);
    let (elsewhere, _) = gate.enter(false).await;
    let args = AgentArgs {
        spec: rig.command_spec(),
        facts: rig.facts.clone(),
        events: rig.events.clone(),
        gate: Some(gate.clone()),
    };
    let (agent, handle) = Actor::spawn(None, AgentActor, args)
        .await
        .expect("spawn actor");
    let start = {
        let agent = agent.clone();
        tokio::spawn(async move { call!(agent, AgentMsg::Start) })
    };
    GatedStart {
        gate,
        elsewhere,
        agent,
        handle,
        start,
    }
}

/// A session the model gate holds back has not started its agent (docs/ci.md, "A rate-limited
/// nightly"): the actor starts the process once the first step has its place, and that step
/// counts the wait as time waited for the model. A `command` agent stands in for the CLI: the
/// gate is the actor's, whatever agent it was given for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_held_by_the_model_gate_starts_its_agent_once_it_has_a_place() {
    let rig = Rig::new(&[]);
    let GatedStart {
        gate,
        elsewhere,
        agent,
        handle,
        start,
    } = start_behind_a_full_gate(&rig).await;
    let held = Duration::from_millis(500);
    tokio::time::sleep(held).await;
    assert!(
        !start.is_finished(),
        "the start waits for a place at the model"
    );
    assert!(no_agent_process(&rig), "the agent started while held back");
    elsewhere.release(None, false);
    start.await.expect("join").expect("call").expect("start");
    assert!(
        agent_process_seen(&rig).await,
        "the agent started once it had its place"
    );
    call!(agent, AgentMsg::Bootstrap)
        .expect("call")
        .expect("bootstrap");
    let v = actor_step(&agent, 1, json!([{"say": "RESULT OK\n"}])).await;
    assert_eq!(v.status, StepStatus::Ok, "{v:?}");
    assert!(v.model_wait >= held, "{:?}", v.model_wait);
    // The step went with the place taken before the start, and gave it back.
    let (again, waited) = tokio::time::timeout(LONG, gate.enter(false))
        .await
        .expect("the one place is free again");
    assert_eq!(waited, Duration::ZERO);
    again.release(None, false);
    call!(agent, AgentMsg::Close).expect("close");
    handle.await.expect("actor ends");
    rig.assert_no_survivors();
}

/// A session closed while its agent waits for a place at the model: the start answers that the
/// session is stopping, and no agent process was ever started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_closed_while_it_waits_for_the_model_never_starts() {
    let rig = Rig::new(&[]);
    let GatedStart {
        gate,
        elsewhere,
        agent,
        handle,
        start,
    } = start_behind_a_full_gate(&rig).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    call!(agent, AgentMsg::Close).expect("close");
    let answer = tokio::time::timeout(LONG, start)
        .await
        .expect("the start answers")
        .expect("join")
        .expect("call");
    assert!(matches!(answer, Err(AgentError::Stopped)), "{answer:?}");
    handle.await.expect("actor ends");
    assert!(no_agent_process(&rig));
    // The start that gave up waiting took no place: the one place is free once given back.
    elsewhere.release(None, false);
    let (again, waited) = tokio::time::timeout(LONG, gate.enter(false))
        .await
        .expect("the one place is free again");
    assert_eq!(waited, Duration::ZERO);
    again.release(None, false);
    rig.assert_no_survivors();
}
