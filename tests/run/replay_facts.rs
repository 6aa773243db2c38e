//! The facts a pass rests on (see docs/replay.md, "The facts a pass rests on"): the real
//! supervisor asks the scripted `command` agent (tests/support/directive_agent.py), after each
//! pass it records, which facts in the outputs decided it; the answer is checked on those
//! outputs, kept in the recording, and evaluated on every replay. A value the learned domain
//! would pass but a stated fact does not goes to the agent.

use crate::common;

use bugatti::replay::format::Recording;
use common::records::*;
use common::{stdout, Project};

fn project() -> Project {
    Project::with_directive_agent("")
}

/// A one-step test that reads the app's latency through the console and judges it under 31 ms,
/// stating `fact` as what the pass rests on.
fn write_latency_check(p: &Project, fact: &str) {
    p.write(
        "latency.test.toml",
        &format!(
            "[[steps]]\ninstruction = '''\nCheck the endpoint answers within 30 ms.\n\
             mcp exec_command {{\"cmd\": \"sh ${{BUGATTI_PROJECT_ROOT}}/app.sh\", \"yield_time_ms\": 10000}}\n\
             below latency\\s(\\d+)ms 31\n{fact}\n'''\n"
        ),
    );
}

fn set_latency(p: &Project, ms: u32) {
    p.write("app.sh", &format!("echo 'latency {ms}ms'"));
}

/// Runs `start`; the exit code, the console, and the newest run's first step.
fn start(p: &Project) -> (Option<i32>, String, StepRecord) {
    let out = p.start();
    let console = format!("{}\n{}", stdout(&out), common::stderr(&out));
    let step = p.newest_record().steps[0].clone();
    (out.status.code(), console, step)
}

/// The newest run's directory.
fn newest_run_dir(p: &Project) -> std::path::PathBuf {
    p.newest_record().run_dir()
}

fn recording(p: &Project) -> Recording {
    common::read_json_file(&p.root().join("bugatti.replay/latency.replay.json"))
}

#[test]
fn a_stated_fact_sends_a_value_the_learned_range_would_pass_to_the_agent() {
    let p = project();
    let fact = "fact 1 /latency (\\d+)ms/ number in [0, 30]";
    write_latency_check(&p, fact);

    // 1. The agent passes and is asked its facts: the answer is recorded and shown.
    set_latency(&p, 20);
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    assert!(step.recorded, "{step:?}");
    assert_eq!(
        step.replay_facts,
        ["1 /latency (\\d+)ms/ number in [0, 30]"],
        "{step:?}"
    );
    let rec = recording(&p);
    assert_eq!(rec.schema, 5, "{rec:?}");
    assert_eq!(
        rec.steps[0].facts.as_deref(),
        Some(&step.replay_facts[..]),
        "{rec:?}"
    );
    let transcript = std::fs::read_to_string(newest_run_dir(&p).join("transcripts/agent.jsonl"))
        .expect("agent.jsonl");
    assert!(
        transcript.contains("\\\"question\\\":\\\"facts\\\"")
            || transcript.contains("\"question\":\"facts\""),
        "the question is in the transcript: {transcript}"
    );
    assert!(
        transcript.contains("BUGATTI_FACT 1 /latency"),
        "{transcript}"
    );

    // 2. Another latency: a soft drift the agent passes; the value's range is learned.
    set_latency(&p, 25);
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(step.mode, Some(StepMode::Agent), "{step:?}");
    assert!(step.recorded, "{step:?}");

    // 3. Inside what was learned and inside the fact: replayed, and the fact is named.
    set_latency(&p, 22);
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(step.mode, Some(StepMode::Replayed), "{step:?}");
    let message = step.message.as_deref().unwrap_or_default();
    assert!(message.contains("1 fact held"), "{message}");
    assert_eq!(
        step.replay_facts,
        ["1 /latency (\\d+)ms/ number in [0, 30]"],
        "{step:?}"
    );
    let report = std::fs::read_to_string(newest_run_dir(&p).join("report.md")).expect("report.md");
    assert!(report.contains("1 fact held"), "{report}");

    // 4. 45 ms is inside the learned range (up to twice the largest seen) but breaks the fact:
    // the agent decides, and fails it.
    set_latency(&p, 45);
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(1), "{console}");
    assert_eq!(step.mode, Some(StepMode::Agent), "{step:?}");
    assert_eq!(step.status, StepStatus::Error, "{step:?}");
    let note = step.replay_note.as_deref().unwrap_or_default();
    assert!(
        note.contains("no longer holds") && note.contains("45 is not in [0, 30]"),
        "{note}"
    );
    p.assert_nothing_survives();
}

#[test]
fn a_fact_that_does_not_hold_on_what_the_agent_saw_is_refused_and_nothing_is_recorded() {
    let p = project();
    write_latency_check(&p, "fact 1 contains \"latency 99ms\"");
    set_latency(&p, 20);
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(step.status, StepStatus::Ok, "{step:?}");
    assert!(!step.recorded, "{step:?}");
    let note = step.replay_note.as_deref().unwrap_or_default();
    assert!(
        note.contains("not recorded")
            && note.contains("does not hold on the outputs it saw")
            && note.contains("latency 99ms"),
        "{note}"
    );
    assert!(!p.root().join("bugatti.replay/latency.replay.json").exists());

    // A fact that is not one says why, too.
    write_latency_check(&p, "fact 3 contains \"x\"");
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    let note = step.replay_note.as_deref().unwrap_or_default();
    assert!(
        note.contains("not one") && note.contains("actions 1 to 1"),
        "{note}"
    );
    p.assert_nothing_survives();
}

#[test]
fn an_agent_that_states_no_facts_is_recorded_with_none_and_compared_exactly() {
    let p = project();
    write_latency_check(&p, "");
    set_latency(&p, 20);
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    assert!(step.recorded, "{step:?}");
    assert!(
        step.replay_note
            .as_deref()
            .unwrap_or_default()
            .contains("stated no facts"),
        "{step:?}"
    );
    let rec = recording(&p);
    assert_eq!(rec.steps[0].facts, Some(Vec::new()), "{rec:?}");
    // The unchanged app replays.
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(step.mode, Some(StepMode::Replayed), "{step:?}");
    // Without stated facts it is compared exactly: a latency that varies goes to the agent
    // every time, and nothing is learned from its passes.
    for ms in [25, 22] {
        set_latency(&p, ms);
        let (code, console, step) = start(&p);
        assert_eq!(code, Some(0), "{console}");
        assert_eq!(step.mode, Some(StepMode::Agent), "{ms} ms: {step:?}");
        assert!(step.recorded, "{step:?}");
    }
    let rec = recording(&p);
    let action = serde_json::to_value(&rec.steps[0].actions[0]).expect("an action");
    assert!(action.get("volatile").is_none(), "nothing learned: {rec:?}");
    p.assert_nothing_survives();
}

/// Facts true on what the agent read, about the console answer's status lines (`Process
/// exited with code 0`, its wall time), were refused as not holding, so the step was never
/// recorded: they are recorded now, and hold on the replay's own answer.
#[test]
fn a_fact_about_the_console_header_is_recorded_and_replayed() {
    let p = project();
    write_latency_check(
        &p,
        "fact 1 contains \"Process exited with code 0\"\n\
         fact 1 /Wall time: ([0-9.]+) seconds/ number in [0, 5]",
    );
    set_latency(&p, 20);
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    assert!(step.recorded, "{step:?}");
    assert_eq!(step.replay_facts.len(), 2, "{step:?}");
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(step.mode, Some(StepMode::Replayed), "{step:?}");
    let message = step.message.as_deref().unwrap_or_default();
    assert!(message.contains("2 facts held"), "{message}");
    p.assert_nothing_survives();
}

/// A session id that must rotate on elevation: `differs from 1 /…/` keeps the two apart on every
/// replay, and `differs from the recording` (checked against the recording a pass renews, and
/// on replay) is recorded instead of refused. A session that kept its id replays no more.
#[test]
fn values_that_must_differ_are_kept_apart() {
    let p = project();
    p.write(
        "rotate.test.toml",
        "[[steps]]\ninstruction = '''\nLog in, elevate, and check the session id rotated.\n\
         mcp exec_command {\"cmd\": \"sh ${BUGATTI_PROJECT_ROOT}/login.sh\", \"yield_time_ms\": 10000}\n\
         mcp exec_command {\"cmd\": \"sh ${BUGATTI_PROJECT_ROOT}/elevate.sh\", \"yield_time_ms\": 10000}\n\
         differ login\\ssession=(\\S+) elevated\\ssession=(\\S+)\n\
         fact 2 /session=(\\S+)/ differs from 1 /session=(\\S+)/\n\
         fact 1 /session=(\\S+)/ differs from the recording\n'''\n",
    );
    let ids = |login: &str, elevated: &str| {
        p.write("login.sh", &format!("echo 'login session={login}'"));
        p.write("elevate.sh", &format!("echo 'elevated session={elevated}'"));
    };
    let uuid = |n: u32| format!("{n:08x}-3d4e-4f50-8a61-7b8c9d0e1f23");
    let step = |p: &Project| p.newest_run_by_test()["rotate"].steps[0].clone();

    // Recorded, both facts with it; another pass learns the ids; the next run replays.
    for (n, mode) in [
        (1, StepMode::Agent),
        (3, StepMode::Agent),
        (5, StepMode::Replayed),
    ] {
        ids(&uuid(n), &uuid(n + 1));
        let (code, console, _) = start(&p);
        assert_eq!(code, Some(0), "{console}");
        let s = step(&p);
        assert_eq!(s.mode, Some(mode), "run {n}: {s:?}");
        if mode == StepMode::Agent {
            assert!(s.recorded, "run {n}: {s:?}");
            assert_eq!(s.replay_facts.len(), 2, "{s:?}");
        }
    }
    // The session kept its id on elevation: the fact is broken, the agent fails it.
    ids(&uuid(7), &uuid(7));
    let (code, console, _) = start(&p);
    assert_eq!(code, Some(1), "{console}");
    let s = step(&p);
    assert_eq!(s.mode, Some(StepMode::Agent), "{s:?}");
    assert_eq!(s.status, StepStatus::Error, "{s:?}");
    // Caught by the fact, or before it by what the passes taught (the ids were never equal).
    let note = s.replay_note.unwrap_or_default();
    let by_fact = note.contains("no longer holds") && note.contains("both are");
    assert!(by_fact || note.contains("soft drift"), "{note}");
    p.assert_nothing_survives();
}

/// An agent that answers the facts question with `RESULT ERROR` ("I changed my mind") has
/// withdrawn its pass: the step fails and nothing is recorded.
#[test]
fn a_pass_withdrawn_when_asked_its_facts_fails_and_is_not_recorded() {
    let p = project();
    write_latency_check(
        &p,
        "fact 1 contains \"latency\"\nwithdraw on a second look the latency is too close to call",
    );
    set_latency(&p, 20);
    let (code, console, _) = start(&p);
    assert_eq!(code, Some(1), "{console}");
    let s = p.newest_run_by_test()["latency"].steps[0].clone();
    assert_eq!(s.status, StepStatus::Error, "{s:?}");
    assert!(!s.recorded, "{s:?}");
    let message = s.message.unwrap_or_default();
    assert!(
        message.contains("withdrew its pass") && message.contains("too close to call"),
        "{message}"
    );
    assert!(!p.root().join("bugatti.replay/latency.replay.json").exists());
    p.assert_nothing_survives();
}
