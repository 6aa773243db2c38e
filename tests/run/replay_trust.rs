//! Replay never passes what the agent would fail (see docs/replay.md): the real supervisor on a
//! project of one-step tests, each driven by a scripted `command` agent
//! (tests/support/directive_agent.py) that really runs its command through the console and judges
//! the value its instruction names. Recorded on a working app, replayed unchanged with no agent;
//! then the app breaks, and every check drifts to the agent, which fails it. Also: a changed
//! instruction is a miss, a process that now dies is drift, outputs whose request id and
//! duration change every run replay from the second agent pass on, `replay = false` and
//! `[replay] audit`, and what is not recorded.

use crate::common;

use common::records::*;
use common::{stdout, Project};
use std::collections::BTreeMap;

/// One check: its test name, the app file it reads and that file's working and broken content,
/// and what the instruction asks.
struct Check {
    name: &'static str,
    good: &'static str,
    broken: &'static str,
    /// Directive lines after the `mcp exec_command` that runs `app/<name>`.
    judge: &'static str,
}

const CHECKS: [Check; 9] = [
    Check {
        name: "due",
        good: "echo 'due 2026-12-31'",
        broken: "echo 'due 2027-01-15'",
        judge: "Check the due date is 2026-12-31.\nexpect due 2026-12-31",
    },
    Check {
        name: "ttl",
        good: "echo 'ttl 30 minutes'",
        broken: "echo 'ttl 0 minutes'",
        judge: "Check the session ttl is 30 minutes.\nexpect ttl 30 minutes",
    },
    Check {
        name: "owner",
        good: "echo 'owner 6f1c2b9a-3d4e-4f50-8a61-7b8c9d0e1f23'",
        broken: "echo 'owner 00000000-0000-0000-0000-000000000000'",
        judge: "Check the owner is 6f1c2b9a-3d4e-4f50-8a61-7b8c9d0e1f23.\nexpect owner 6f1c2b9a-3d4e-4f50-8a61-7b8c9d0e1f23",
    },
    Check {
        name: "checksum",
        good: "echo 'checksum 0xdeadbeef'",
        broken: "echo 'checksum 0x00000000'",
        judge: "Check the checksum is 0xdeadbeef.\nexpect checksum 0xdeadbeef",
    },
    Check {
        name: "opens",
        good: "echo 'opens 09:00:00'",
        broken: "echo 'opens 23:59:59'",
        judge: "Check the shop opens at 09:00:00.\nexpect opens 09:00:00",
    },
    Check {
        name: "timeout",
        good: "echo 'timeout=5s'",
        broken: "echo 'timeout=0s'",
        judge: "Check the configured timeout=5s.\nexpect timeout=5s",
    },
    Check {
        name: "slow",
        good: "echo pong",
        broken: "sleep 3; echo pong",
        judge: "Check the endpoint answers pong within a second.\nexpect pong\nwithin 1",
    },
    Check {
        name: "clock",
        good: "date -u +%Y-%m-%dT%H:%M:%SZ",
        broken: "echo 1999-01-01T00:00:00Z",
        judge: "Check the clock is current.\nexpect_now\nfact 1 /(\\S+)/ time within 10m of now",
    },
    Check {
        name: "status",
        good: "echo 'status: ok'",
        broken: "echo 'status: degraded'",
        judge: "Check the status is ok.\nexpect status: ok",
    },
];

fn project() -> Project {
    Project::with_directive_agent("")
}

/// A project whose harness has a long-lived `worker` (`sh worker.sh`), ready once it logs
/// `ready`: the test writes worker.sh.
fn worker_project() -> Project {
    let p = project();
    let config = std::fs::read_to_string(p.root().join("bugatti.config.toml")).expect("config");
    p.write(
        "bugatti.config.toml",
        &format!(
            "{config}\n[commands.worker]\nkind = \"long_lived\"\ncmd = \"sh worker.sh\"\nreadiness = {{ log = \"ready\" }}\n"
        ),
    );
    p
}

/// A one-step test running `app/<name>.sh` through the console, then judging it.
fn write_check(p: &Project, name: &str, judge: &str) {
    p.write(
        &format!("{name}.test.toml"),
        &format!(
            "[[steps]]\ninstruction = '''\nmcp exec_command {{\"cmd\": \"sh ${{BUGATTI_PROJECT_ROOT}}/app/{name}.sh\", \"yield_time_ms\": 10000}}\n{judge}\n'''\n"
        ),
    );
}

/// The newest run.json of each test, by test name.
fn latest(p: &Project) -> BTreeMap<String, RunRecord> {
    p.newest_run_by_test()
}

fn run_of<'a>(records: &'a BTreeMap<String, RunRecord>, name: &str) -> &'a RunRecord {
    records
        .get(name)
        .unwrap_or_else(|| panic!("no run of {name}"))
}

fn step<'a>(records: &'a BTreeMap<String, RunRecord>, name: &str) -> &'a StepRecord {
    &run_of(records, name).steps[0]
}

fn start(p: &Project, args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["start"];
    all.extend_from_slice(args);
    let out = p.run(&all);
    (
        out.status.code(),
        format!("{}\n{}", stdout(&out), common::stderr(&out)),
    )
}

#[test]
fn a_broken_app_drifts_to_the_agent_at_every_check_and_an_unchanged_one_replays_them_all() {
    let p = project();
    for c in &CHECKS {
        p.write(&format!("app/{}.sh", c.name), c.good);
        write_check(&p, c.name, c.judge);
    }
    // A worker that prints it is ready and keeps running.
    p.write("app/worker.sh", "echo 'worker ready'; sleep 30");
    write_check(
        &p,
        "worker",
        "Check the worker starts and keeps running.\nexpect worker ready\nexpect Process running",
    );
    let names: Vec<&str> = CHECKS.iter().map(|c| c.name).chain(["worker"]).collect();

    // 1. The agent passes every check; each is recorded.
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    let records = latest(&p);
    for name in &names {
        assert!(step(&records, name).recorded, "{name}: {console}");
    }

    // 1b. The clock's time is the one output that differs: compared exactly until the agent
    // has seen it vary (a soft drift it passes), then as an offset from the run's clock.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    for (name, record) in p.newest_run_by_test() {
        let s = &record.steps[0];
        let mode = if name == "clock" {
            StepMode::Agent
        } else {
            StepMode::Replayed
        };
        assert_eq!(s.mode, Some(mode), "{name}: {console}\n{s:?}");
        let soft = s.replay_drift.as_ref().map(|d| d.soft);
        assert_eq!(soft, (name == "clock").then_some(true), "{name}: {s:?}");
    }

    // 2. Unchanged: every check replays, the agent never starts.
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    let records = latest(&p);
    for name in &names {
        assert_eq!(
            step(&records, name).mode,
            Some(StepMode::Replayed),
            "{name}: {console}"
        );
        assert_eq!(run_of(&records, name).agent_steps, 0, "{name}");
    }
    assert!(
        console.contains(&format!("steps: {} replayed", names.len())),
        "{console}"
    );
    // A replayed step shows what it ran and saw, and when and by whom it was recorded.
    let run_dir = run_of(&records, "due").run_dir();
    for report in [run_dir.join("report.md"), p.suite_dir().join("report.html")] {
        let text = std::fs::read_to_string(&report).expect("report");
        assert!(
            text.contains("by command")
                && text.contains("app/due.sh")
                && text.contains("due 2026-12-31"),
            "{}: {text}",
            report.display()
        );
    }

    // 3. The app breaks: every check drifts to the agent, which fails it.
    for c in &CHECKS {
        p.write(&format!("app/{}.sh", c.name), c.broken);
    }
    p.write("app/worker.sh", "echo 'worker ready'; exit 1");
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(1), "{console}");
    let records = latest(&p);
    for name in &names {
        let s = step(&records, name);
        assert_eq!(
            s.mode,
            Some(StepMode::Agent),
            "{name} replayed a broken app: {s:?}"
        );
        assert_eq!(
            s.status,
            StepStatus::Error,
            "{name}: the agent fails it: {s:?}"
        );
        assert!(s.replay_drift.is_some(), "{name}: {s:?}");
    }
    let drift = |name: &str| {
        step(&records, name)
            .replay_drift
            .clone()
            .unwrap_or_else(|| panic!("{name} drifted"))
    };
    assert_eq!(drift("slow").field, "wall time", "{:?}", drift("slow"));
    assert_eq!(drift("worker").field, "exit code", "{:?}", drift("worker"));
    // A value the instruction names is never soft: hard drift.
    assert!(!drift("due").soft, "{:?}", drift("due"));
}

#[test]
fn a_changed_instruction_is_a_miss() {
    let p = project();
    p.write("app/due.sh", "echo 'due 2026-12-31'");
    write_check(
        &p,
        "due",
        "Check the due date is 2026-12-31.\nexpect due 2026-12-31",
    );
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    // A recording of the first layout (masks up front) is read, not replayed, and renewed.
    let path = p.root().join("bugatti.replay/due.replay.json");
    let text = std::fs::read_to_string(&path).expect("recording");
    std::fs::write(&path, text.replace("\"schema\": 5", "\"schema\": 1")).expect("old layout");
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    let s = step(&latest(&p), "due").clone();
    assert_eq!(s.mode, Some(StepMode::Agent), "{s:?}");
    assert!(
        s.replay_note
            .as_deref()
            .is_some_and(|n| n.contains("older supervisor")),
        "{s:?}"
    );
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(step(&latest(&p), "due").mode, Some(StepMode::Replayed));
    // `--replay only` on a drift: not replayed, and not called "no recording".
    p.write("app/due.sh", "echo 'due 2027-01-15'");
    let (code, console) = start(&p, &["--replay", "only"]);
    assert_eq!(code, Some(1), "{console}");
    let s = step(&latest(&p), "due").clone();
    let message = s.message.as_deref().unwrap_or_default();
    assert!(
        message.starts_with("not replayed") && message.contains("drift"),
        "{s:?}"
    );
    assert!(!message.contains("no usable recording"), "{s:?}");
    p.write("app/due.sh", "echo 'due 2026-12-31'");
    // The test is edited to another date; the app still says the old one: the agent runs and
    // fails it, never the old recording.
    write_check(
        &p,
        "due",
        "Check the due date is 2027-01-15.\nexpect due 2027-01-15",
    );
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(1), "{console}");
    let records = latest(&p);
    let s = step(&records, "due");
    assert_eq!(s.mode, Some(StepMode::Agent), "{s:?}");
    assert_eq!(s.status, StepStatus::Error, "{s:?}");
    assert!(
        s.replay_note
            .as_deref()
            .is_some_and(|n| n.contains("instruction changed")),
        "{s:?}"
    );
}

#[test]
fn outputs_with_a_request_id_and_a_duration_replay_from_the_second_agent_pass_on() {
    let p = project();
    p.write(
        "app/request.sh",
        "echo \"request $(cat /proc/sys/kernel/random/uuid) took $(shuf -i 10-900 -n 1)ms at $(date -u +%Y-%m-%dT%H:%M:%SZ)\"\necho 'status: ok'",
    );
    write_check(
        &p,
        "request",
        "Check the request is served with status ok.\nexpect status: ok\nfact 1 contains \"status: ok\"",
    );
    let mode = |p: &Project| step(&latest(p), "request").mode;
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(mode(&p), Some(StepMode::Agent));
    // A second later, so that the timestamp differs too.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    // Second run: the request id, the duration and the timestamp differ from the recording, and
    // nowhere else: a soft drift, the agent passes, they are learned.
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    let records = latest(&p);
    let s = step(&records, "request");
    assert_eq!(s.mode, Some(StepMode::Agent), "{s:?}");
    assert!(s.replay_drift.as_ref().is_some_and(|d| d.soft), "{s:?}");
    let recording = std::fs::read_to_string(p.root().join("bugatti.replay/request.replay.json"))
        .expect("recording");
    // Each position keeps what it was seen to be: an untied UUID, a duration's range, the
    // timestamp's offsets from the run's clock (from 0: inside the run).
    assert!(
        recording.contains(
            "\"volatile\": [[0, 0, {\"kind\": \"uuid\"}], [0, 1, {\"kind\": \"duration\", \"range\": ["
        ) && recording.contains("[0, 2, {\"kind\": \"timestamp\", \"range\": [0.0, "),
        "{recording}"
    );
    // Third run and after: replayed.
    for _ in 0..2 {
        let (code, console) = start(&p, &[]);
        assert_eq!(code, Some(0), "{console}");
        let s = step(&latest(&p), "request").clone();
        assert_eq!(s.mode, Some(StepMode::Replayed), "{console}\n{s:#?}");
    }
    // The timestamp was learned as the run's own time: a clock stuck in 1999 is not replayed.
    p.write(
        "app/request.sh",
        "echo \"request $(cat /proc/sys/kernel/random/uuid) took 5ms at 1999-01-01T00:00:00Z\"\necho 'status: ok'",
    );
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(mode(&p), Some(StepMode::Agent), "{console}");
    // And the status line it checks is still compared exactly.
    p.write(
        "app/request.sh",
        "echo \"request $(cat /proc/sys/kernel/random/uuid) took 5ms at $(date -u +%Y-%m-%dT%H:%M:%SZ)\"\necho 'status: down'",
    );
    let (code, _) = start(&p, &[]);
    assert_eq!(code, Some(1));
    assert_eq!(mode(&p), Some(StepMode::Agent));
}

#[test]
fn a_refused_console_call_and_an_opted_out_step_are_not_recorded() {
    let p = project();
    p.write("app/due.sh", "echo 'due 2026-12-31'");
    p.write(
        "refused.test.toml",
        "[[steps]]\ninstruction = '''\nmcp exec_command {\"command\": \"no such argument\"}\nmcp exec_command {\"cmd\": \"echo hi\"}\nexpect hi\n'''\n",
    );
    p.write(
        "optout.test.toml",
        "[[steps]]\nreplay = false\ninstruction = '''\nmcp exec_command {\"cmd\": \"echo hi\"}\nexpect hi\n'''\n\n[[steps]]\ninstruction = '''\nmcp exec_command {\"cmd\": \"echo there\"}\nexpect there\n'''\n",
    );
    p.write(
        "fileout.test.toml",
        "replay = false\n[[steps]]\ninstruction = '''\nmcp exec_command {\"cmd\": \"echo hi\"}\nexpect hi\n'''\n",
    );
    for _ in 0..2 {
        let (code, console) = start(&p, &[]);
        assert_eq!(code, Some(0), "{console}");
    }
    let records = latest(&p);
    let refused = step(&records, "refused");
    assert_eq!(refused.mode, Some(StepMode::Agent), "{refused:?}");
    assert!(!refused.recorded, "{refused:?}");
    assert!(
        refused
            .replay_note
            .as_deref()
            .is_some_and(|n| n.contains("refused")),
        "{refused:?}"
    );
    let optout = &run_of(&records, "optout").steps;
    assert_eq!(optout[0].mode, Some(StepMode::Agent), "{optout:?}");
    assert!(
        optout[0]
            .replay_note
            .as_deref()
            .is_some_and(|n| n.contains("replay = false")),
        "{optout:?}"
    );
    assert_eq!(optout[1].mode, Some(StepMode::Replayed), "{optout:?}");
    assert_eq!(step(&records, "fileout").mode, Some(StepMode::Agent));
    // `--replay only`: the steps without a recording are errors, and nothing reads "by the
    // agent", since no agent ran.
    let (code, console) = start(&p, &["--replay", "only"]);
    assert_eq!(code, Some(1), "{console}");
    let summary_line = console
        .lines()
        .find(|l| l.starts_with("Summary:"))
        .unwrap_or_default()
        .to_string();
    assert!(
        summary_line.contains("not replayed") && !summary_line.contains("by the agent"),
        "{summary_line}"
    );
    let records = latest(&p);
    assert_eq!(step(&records, "refused").mode, Some(StepMode::NotReplayed));
    // `check` shows the opt-outs.
    let out = p.supervisor().arg("check").output().expect("check");
    let text = stdout(&out);
    assert!(text.contains("replay = false"), "{text}");
}

#[test]
fn an_audit_sends_replayable_steps_to_the_agent_and_a_failure_retires_the_recording() {
    let p = project();
    p.write("app/due.sh", "echo 'due 2026-12-31'");
    // The agent also reads a flag outside the console: what it judges there, a replay cannot see
    // (the wrong pass an audit exists to catch).
    let flag = p.write("app/flag.txt", "enabled\n");
    write_check(
        &p,
        "due",
        &format!(
            "Check the due date is 2026-12-31 and the flag is enabled.\nexpect due 2026-12-31\nget file://{}\nexpect enabled",
            flag.display()
        ),
    );
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    let config = std::fs::read_to_string(p.root().join("bugatti.config.toml")).expect("config");
    p.write(
        "bugatti.config.toml",
        &format!("{config}\n[replay]\naudit = 1.0\n"),
    );
    // Audited while the app is fine: the agent passes; the summary counts the audit.
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    let s = step(&latest(&p), "due").clone();
    assert_eq!(s.mode, Some(StepMode::Agent), "{s:?}");
    assert!(s.replay_audited, "{s:?}");
    assert!(console.contains("1 audited"), "{console}");
    // The agent fails an audited step its recording would have passed (the console's output is
    // unchanged): the test fails, the recording is never replayed again, the report says so.
    p.write("app/flag.txt", "disabled\n");
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(1), "{console}");
    let s = step(&latest(&p), "due").clone();
    assert!(
        s.message
            .as_deref()
            .is_some_and(|m| m.contains("replay would have passed a failing step")),
        "{s:?}"
    );
    let note = s.replay_note.as_deref().unwrap_or_default();
    assert!(note.contains("never replayed again"), "{note}");
    // Kept, marked failed: only the baseline a new pass must match in strength.
    let recording: bugatti::replay::format::Recording =
        common::read_json_file(&p.root().join("bugatti.replay/due.replay.json"));
    assert!(recording.steps[0].failed.is_some(), "{recording:?}");
    // The flag back: the outputs match the recording, and still the agent decides.
    p.write("app/flag.txt", "enabled\n");
    p.write("bugatti.config.toml", &config);
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    let s = step(&latest(&p), "due").clone();
    assert_eq!(s.mode, Some(StepMode::Agent), "{s:?}");
    assert!(s.recorded, "as strong a pass is in force again: {s:?}");
}

/// The console's `list_logs` is recorded and replayed, and looked at no sooner than the agent
/// did: a worker that says "ready" and dies a second later was running when the agent looked
/// (after its own thinking time) and must not pass by a replay that looks at once.
#[test]
fn a_worker_that_dies_after_it_is_ready_drifts_to_the_agent() {
    let p = worker_project();
    p.write("worker.sh", "echo ready\nexec sleep 600\n");
    p.write(
        "worker.test.toml",
        "[[steps]]\ninstruction = '''\nCheck the worker stays up once it is ready.\n\
         mcp wait_for_log {\"name\": \"worker\", \"pattern\": \"ready\", \"from_offset\": 0, \"timeout_ms\": 10000}\n\
         sleep 1.5\nmcp list_logs {}\nexpect worker: long_lived, running\n'''\n",
    );
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    let records = latest(&p);
    assert!(step(&records, "worker").recorded, "{records:#?}");
    let text = std::fs::read_to_string(p.root().join("bugatti.replay/worker.replay.json"))
        .expect("a recording");
    assert!(text.contains("\"tool\": \"list_logs\""), "{text}");

    // Unchanged: the step replays (looking at the logs as late as the agent did).
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    let records = latest(&p);
    assert_eq!(
        step(&records, "worker").mode,
        Some(StepMode::Replayed),
        "{console}"
    );

    // The worker now dies half a second after "ready". A replay that looked at once passed the
    // step before the worker died; looking as late as the agent did, it sees the worker gone
    // (and the session sees its command fail): the step does not pass.
    p.write("worker.sh", "echo ready\nsleep 0.5\nexit 3\n");
    let (code, console) = start(&p, &[]);
    let records = latest(&p);
    let worker = step(&records, "worker");
    assert_ne!(code, Some(0), "{console}");
    assert_ne!(worker.status, StepStatus::Ok, "{worker:#?}");
}

/// The recording keeps how long after the harness was ready the agent first acted in the step
/// (`first_look_ms`): a replay watches the harness that long, at most two seconds, not always
/// two seconds (from readiness, the agent's own start counts: it was part of the agent's wait).
#[test]
fn the_agents_first_look_is_recorded_for_the_harness_watch() {
    let p = worker_project();
    p.write("worker.sh", "echo ready\nexec sleep 600\n");
    p.write(
        "worker.test.toml",
        "[[steps]]\ninstruction = '''\nCheck the worker is up.\n\
         mcp list_logs {}\nexpect worker: long_lived, running\n'''\n",
    );
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    let recording: bugatti::replay::format::Recording =
        common::read_json_file(&p.root().join("bugatti.replay/worker.replay.json"));
    assert!(
        recording.steps[0].first_look_ms.is_some(),
        "the agent's first look is recorded: {recording:?}"
    );
    // Replayed, the watch waiting for that look.
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    let s = p.newest_run_by_test()["worker"].steps[0].clone();
    assert_eq!(s.mode, Some(StepMode::Replayed), "{console}");
    p.assert_nothing_survives();
}

/// The harness is watched as long as the agent would have watched it. The agent takes a couple
/// of seconds before its first look at a worker (it reads the instruction, thinks); a replay
/// runs the same look at once. A worker that exits 0.2 s or 1.5 s after it is ready, or logs a
/// `FATAL` line a second after, was still fine at that instant: only a watch of the harness
/// until the agent's first look (at most 2 s), checked before the step passes, sees it: the
/// worker failing while the replay watches (the session ends the step), or the watch's drift to
/// the agent, which fails the step.
#[test]
fn a_worker_that_dies_or_logs_fatal_soon_after_ready_is_no_replayed_pass() {
    let p = worker_project();
    let healthy = "echo ready\nexec sleep 600\n";
    p.write("worker.sh", healthy);
    p.write(
        "worker.test.toml",
        "[[steps]]\ninstruction = '''\nCheck the worker is up and healthy.\nsleep 2\n\
         mcp list_logs {}\nexpect worker: long_lived, running\n\
         mcp read_log {\"name\": \"worker\"}\nexpect ready\nabsent FATAL\n'''\n",
    );
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    let s = p.newest_run_by_test()["worker"].steps[0].clone();
    assert_eq!(s.mode, Some(StepMode::Replayed), "{console}");

    for (what, script) in [
        ("exits 0.2 s after ready", "echo ready\nsleep 0.2\nexit 3\n"),
        ("exits 1.5 s after ready", "echo ready\nsleep 1.5\nexit 3\n"),
        (
            "logs FATAL a second after ready",
            "echo ready\nsleep 1\necho 'FATAL lost the queue'\nexec sleep 600\n",
        ),
    ] {
        p.write("worker.sh", script);
        let (code, console) = start(&p, &[]);
        let s = p.newest_run_by_test()["worker"].steps[0].clone();
        assert_ne!(code, Some(0), "{what}: {console}");
        assert_ne!(s.mode, Some(StepMode::Replayed), "{what}: {s:?}");
        assert_ne!(s.status, StepStatus::Ok, "{what}: {s:?}");
        // Either the session saw the command fail while the replay watched (a harness failure
        // ends the step), or the watch found what the agent would have seen: the step went to
        // the agent, which failed it.
        let said = format!(
            "{} {}",
            s.message.as_deref().unwrap_or_default(),
            s.replay_note.as_deref().unwrap_or_default()
        );
        assert!(
            said.contains("`worker`"),
            "{what}: the step names the worker: {s:?}\n{console}"
        );
    }
    p.write("worker.sh", healthy);
    p.assert_nothing_survives();
}

/// The harness watch runs alongside the whole test: the steps after the first replay while it
/// lasts, their passes held until it ends. A worker that logs `FATAL` a second after it is
/// ready, or dies then, after every step has already replayed, is still what the agent would
/// have seen at its first look in step 1 (which read the worker's log): step 1 goes to the
/// agent, which fails it, and no step after it passes on a harness the agent never looked at.
/// A watch that checked only at each step's end, or only the logs the last step read, would
/// pass all three.
#[test]
fn a_worker_that_fails_after_every_step_replayed_but_within_the_watch_is_no_replayed_pass() {
    let p = worker_project();
    let healthy = "echo ready\nexec sleep 600\n";
    p.write("worker.sh", healthy);
    p.write(
        "worker.test.toml",
        "[[steps]]\ninstruction = '''\nCheck the worker is up and healthy.\nsleep 2\n\
         mcp read_log {\"name\": \"worker\"}\nexpect ready\nabsent FATAL\n'''\n\n\
         [[steps]]\ninstruction = '''\nSay two.\n\
         mcp exec_command {\"cmd\": \"echo two\"}\nexpect two\n'''\n\n\
         [[steps]]\ninstruction = '''\nSay three.\n\
         mcp exec_command {\"cmd\": \"echo three\"}\nexpect three\n'''\n",
    );
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    // Healthy, every step replays: their held passes stand once the watch ends.
    let (code, console) = start(&p, &[]);
    assert_eq!(code, Some(0), "{console}");
    let run = p.newest_run_by_test()["worker"].clone();
    assert_eq!(run.steps.len(), 3, "{run:#?}");
    for s in &run.steps {
        assert_eq!(s.mode, Some(StepMode::Replayed), "{console}\n{s:?}");
        assert_eq!(s.status, StepStatus::Ok, "{s:?}");
    }

    for (what, script) in [
        (
            "logs FATAL a second after ready",
            "echo ready\nsleep 1\necho 'FATAL lost the queue'\nexec sleep 600\n",
        ),
        (
            "exits a second after ready",
            "echo ready\nsleep 1\nexit 3\n",
        ),
    ] {
        p.write("worker.sh", script);
        let (code, console) = start(&p, &[]);
        assert_ne!(code, Some(0), "{what}: {console}");
        let run = p.newest_run_by_test()["worker"].clone();
        let first = &run.steps[0];
        assert_ne!(first.mode, Some(StepMode::Replayed), "{what}: {first:?}");
        assert_ne!(first.status, StepStatus::Ok, "{what}: {first:?}");
        let said = format!(
            "{} {}",
            first.message.as_deref().unwrap_or_default(),
            first.replay_note.as_deref().unwrap_or_default()
        );
        assert!(
            said.contains("`worker`"),
            "{what}: step 1 names the worker: {first:?}\n{console}"
        );
        for s in &run.steps[1..] {
            assert_ne!(
                s.status,
                StepStatus::Ok,
                "{what}: no step passes after the drift: {s:?}\n{console}"
            );
        }
    }
    p.write("worker.sh", healthy);
    p.assert_nothing_survives();
}
