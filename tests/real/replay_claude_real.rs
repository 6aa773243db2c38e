//! Replay end to end (docs/replay.md) through the real Claude Code CLI and the scripted Messages stub:
//! the first run records what the agent did; the second replays every step without starting the
//! agent (the stub sees no request); an output that changed sends only that step to the agent,
//! with its drift recorded, and the renewed recording replays next time; `--replay off` asks the
//! agent for every step. Skips loudly without the CLI.

use crate::common;
use crate::common::assert_exit;
use crate::common::records::*;

use crate::common::claude::{claude_bin, Stub};
use crate::common::{stdout, Project};
use serde_json::{json, Value};
use std::path::Path;

/// The newest run.json of the project (each invocation here runs one test).
fn latest_record(p: &Project) -> RunRecord {
    p.newest_record()
}

/// One invocation against a fresh stub holding `script`; returns (exit code, console, record,
/// requests the stub saw).
fn run(
    p: &Project,
    bin: &Path,
    side: &Path,
    name: &str,
    script: Value,
    extra: &[&str],
) -> (Option<i32>, String, RunRecord, usize) {
    let dir = side.join(name);
    std::fs::create_dir_all(&dir).expect("stub dir");
    let stub = Stub::start(&dir, script);
    let out = p
        .supervisor()
        .arg("start")
        .args(extra)
        .env("BUGATTI_CLAUDE_BIN", bin)
        .envs(stub.client_env(&side.join("home")))
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let console = format!("{}\n{}", stdout(&out), common::stderr(&out));
    let requests = stub.requests_text().lines().count();
    (out.status.code(), console, latest_record(p), requests)
}

fn modes(record: &RunRecord) -> Vec<&'static str> {
    record
        .steps
        .iter()
        .map(|s| s.mode.map_or("-", |m| m.as_str()))
        .collect()
}

#[test]
fn a_passing_run_is_recorded_then_replayed_without_the_agent_and_a_drift_goes_back_to_it() {
    let Some(bin) = claude_bin("replay through claude-code") else {
        return;
    };
    let p = Project::new();
    let side = tempfile::tempdir().expect("side dir");
    let app = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/counter_app.py");
    p.write(
        "bugatti.config.toml",
        &format!(
            r#"
[provider]
name = "claude-code"
agent_args = ["--allowedTools", "Bash"]
step_timeout_secs = 120

[ports]
APP_PORT = "auto"

[commands.app]
kind = "long_lived"
cmd = "python3 {app} --port ${{APP_PORT}} --state ${{BUGATTI_WORKDIR}}/count"
readiness_url = "http://127.0.0.1:${{APP_PORT}}/health"
"#
        ),
    );
    p.write("version.txt", "version 1\n");
    p.write(
        "counter.test.toml",
        "name = \"Counter\"\n\
         [[steps]]\ninstruction = \"Increment the counter once and check it says 1.\"\n\
         [[steps]]\ninstruction = \"Check the app's version file says version 1.\"\n",
    );
    let agent_script = || {
        json!([
            // The output carries the session's port (a current timestamp, a request id or a
            // duration is learned after a second agent pass, and only for a step that stated
            // its facts: tests/run/replay_trust.rs; this step states none).
            {"bash": "curl -s -X POST http://127.0.0.1:$APP_PORT/inc; echo; echo served on port $APP_PORT"},
            {"text": "The counter says 1.\nRESULT OK"},
            {"bash": "cat version.txt"},
            {"text": "It says version 1.\nRESULT OK"},
            // The facts question after step 2, in the same conversation (step 1's: none).
            {"facts": ["1 equals \"version 1\""]},
        ])
    };

    let agent_script_v2 = || {
        json!([
            {"bash": "curl -s -X POST http://127.0.0.1:$APP_PORT/inc"},
            {"text": "RESULT OK"},
            {"bash": "cat version.txt"},
            {"text": "RESULT OK"},
        ])
    };

    // 1. The agent passes both steps; each is recorded.
    let (code, console, record, requests) =
        run(&p, &bin, side.path(), "first", agent_script(), &[]);
    assert_eq!(code, Some(0), "{console}");
    assert!(requests >= 2, "the agent was asked: {requests} requests");
    assert_eq!(modes(&record), ["agent", "agent"], "{record:?}");
    assert!(record.steps[0].recorded, "{record:?}");
    assert_eq!(record.agent_steps, 2, "{record:?}");
    assert_eq!(
        record.steps[1].replay_facts,
        ["1 equals \"version 1\""],
        "{record:?}"
    );
    let recording_path = p.root().join("bugatti.replay/counter.replay.json");
    let recording = std::fs::read_to_string(&recording_path).expect("a recording was written");
    assert!(
        recording.contains("${APP_PORT}")
            && !recording.contains(&record.ports["APP_PORT"].to_string()),
        "the session's port is a placeholder: {recording}"
    );

    // 2. Unchanged app: every step replays, the agent CLI never starts, the stub sees nothing.
    let (code, console, record, requests) = run(&p, &bin, side.path(), "second", json!([]), &[]);
    assert_eq!(code, Some(0), "{console}\n{:?}", record.steps);
    assert_eq!(requests, 0, "no model request on a replayed run");
    assert_eq!(modes(&record), ["replayed", "replayed"], "{record:?}");
    assert_eq!(record.replayed_steps, 2, "{record:?}");
    assert_eq!(record.agent_steps, 0, "{record:?}");
    assert!(console.contains("OK (replayed "), "{console}");
    // Nothing spent on the model this run: the cost says so, with what replay saved.
    assert!(console.contains("agent cost $0.0000 (saved $"), "{console}");
    let run_dir = record.run_dir();
    assert!(
        !run_dir.join("transcripts/agent.jsonl").exists(),
        "the agent CLI never started"
    );
    let message = record.steps[0].message.as_deref().unwrap_or_default();
    assert!(
        message.contains("recorded actions ran again and matched"),
        "{message}"
    );
    let message = record.steps[1].message.as_deref().unwrap_or_default();
    assert!(message.contains("1 fact held: `1 equals"), "{message}");

    // 3. The version file changed: step 1 replays, step 2 drifts and goes to the agent, which
    //    renews its recording; its first message says what the replayed step did.
    p.write("version.txt", "version 2\n");
    let (code, console, record, requests) = run(
        &p,
        &bin,
        side.path(),
        "third",
        json!([
            {"bash": "cat version.txt"},
            {"text": "It says version 2 now, which is what the app ships.\nRESULT OK"},
            // As many facts as the recording it renews, on the same action: as strong, so it
            // goes in force (a pass stating none would wait for review).
            {"facts": ["1 equals \"version 2\""]},
        ]),
        &[],
    );
    assert_eq!(code, Some(0), "{console}");
    assert!(requests >= 1, "the drifted step went to the agent");
    assert_eq!(modes(&record), ["replayed", "agent"], "{record:?}");
    let drift = &record.steps[1].replay_drift;
    assert!(
        drift
            .as_ref()
            .is_some_and(|d| d.diff.contains("version 1") && d.diff.contains("version 2")),
        "{drift:?}"
    );
    assert!(record.steps[1].recorded, "{record:?}");
    assert!(
        console.contains("steps: 1 replayed, 1 by the agent (1 drift)"),
        "{console}"
    );
    let run_dir = record.run_dir();
    let report = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("## Replay")
            && report.contains("Step 2: **agent**, recorded")
            && report.contains("```diff")
            && report.contains("+version 2"),
        "{report}"
    );
    let stub_requests = std::fs::read_to_string(side.path().join("third/messages-requests.jsonl"))
        .unwrap_or_default();
    assert!(
        stub_requests.contains("<replayed-context>")
            && stub_requests.contains("do not run these commands again")
            && stub_requests.contains("/inc"),
        "the agent learnt what the replayed step did, as context not to be run again"
    );

    // 4. The renewed recording replays; `check` lists both steps as recorded, from a
    //    subdirectory too; the history line carries the counts.
    let (code, console, record, requests) = run(&p, &bin, side.path(), "fourth", json!([]), &[]);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(requests, 0);
    assert_eq!(modes(&record), ["replayed", "replayed"], "{record:?}");
    let history =
        std::fs::read_to_string(p.root().join(".bugatti/history.jsonl")).expect("history");
    let last: Value = serde_json::from_str(history.lines().last().expect("a line")).expect("json");
    assert_eq!(last["replayed_steps"], 2, "{last}");
    assert!(
        last.get("agent_steps").is_none(),
        "a zero count is left out: {last}"
    );
    p.write("sub/.keep", "");
    for dir in [p.root().to_path_buf(), p.root().join("sub")] {
        let out = p
            .supervisor()
            .current_dir(&dir)
            .arg("check")
            .output()
            .expect("check");
        let text = stdout(&out);
        assert_exit(&out, 0);
        let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
        assert_eq!(
            text.matches(&format!("replay: recorded {today} (1 action: 1 shell)"))
                .count(),
            2,
            "{text}"
        );
    }

    // A hand-edited recording that no longer parses: `check` says so, the run warns, the agent
    // does every step (never a false pass) and writes a good recording again.
    std::fs::write(&recording_path, "{\"schema\": 1, \"test\": \"counter").expect("corrupt it");
    let out = p.supervisor().arg("check").output().expect("check");
    assert!(
        stdout(&out).contains("bugatti.replay/counter.replay.json is unusable"),
        "{}",
        stdout(&out)
    );
    let (code, console, record, requests) =
        run(&p, &bin, side.path(), "corrupt", agent_script_v2(), &[]);
    assert_eq!(code, Some(0), "{console}");
    assert!(requests >= 2, "the agent was asked");
    assert_eq!(modes(&record), ["agent", "agent"], "{record:?}");
    let note = record.steps[0].replay_note.as_deref().unwrap_or_default();
    assert!(note.contains("counter.replay.json"), "{record:?}");
    assert!(
        console.contains("counter.replay.json"),
        "the run warns: {console}"
    );
    let renewed = std::fs::read_to_string(&recording_path).expect("recording");
    assert!(serde_json::from_str::<Value>(&renewed).is_ok(), "{renewed}");

    // 5. --replay off: the agent for every step, nothing replayed or recorded.
    let (code, console, record, requests) = run(
        &p,
        &bin,
        side.path(),
        "fifth",
        agent_script_v2(),
        &["--replay", "off"],
    );
    assert_eq!(code, Some(0), "{console}");
    assert!(requests >= 2);
    assert_eq!(modes(&record), ["-", "-"], "{record:?}");
    assert_eq!(record.replayed_steps, 0);
}

/// An item store shaped like Bugatti's Flask example (an install command, a server on a port,
/// an API test of four steps and a page test of two), copied into a project as it is: the first
/// run records every step, the second (started from a subdirectory) replays all six with no
/// model request and no agent process.
#[test]
fn an_item_store_project_replays_every_step_on_its_second_run() {
    let Some(bin) = claude_bin("replay of the item store through claude-code") else {
        return;
    };
    let p = Project::new();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/item_store");
    for entry in std::fs::read_dir(&example).expect("example dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).expect("name");
        p.write(name, &std::fs::read_to_string(&path).expect("read"));
    }
    let side = tempfile::tempdir().expect("side dir");
    // Root tests in discovery order (api, then ui), one at a time for the scripted stub.
    let script = json!([
        {"bash": "curl -s http://127.0.0.1:$APP_PORT/health"},
        {"text": "RESULT OK"},
        {"bash": "curl -s http://127.0.0.1:$APP_PORT/api/items | python3 -m json.tool"},
        {"text": "Three items with id, name and price.\nRESULT OK"},
        {"bash": "curl -s http://127.0.0.1:$APP_PORT/api/items/1"},
        {"text": "RESULT OK"},
        {"bash": "curl -s -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:$APP_PORT/api/items/999; curl -s http://127.0.0.1:$APP_PORT/api/items/999"},
        {"text": "404 with an error.\nRESULT OK"},
        {"bash": "curl -s http://127.0.0.1:$APP_PORT/ | grep -o '<title>.*</title>\\|<h1>.*</h1>'"},
        {"text": "RESULT OK"},
        {"bash": "curl -s http://127.0.0.1:$APP_PORT/ | grep -o '<li>[^<]*</li>'"},
        {"text": "RESULT OK"},
    ]);
    let start = |name: &str, script: Value, dir: &Path| {
        let stub_dir = side.path().join(name);
        std::fs::create_dir_all(&stub_dir).expect("stub dir");
        let stub = Stub::start(&stub_dir, script);
        let out = p
            .supervisor()
            .current_dir(dir)
            .args(["start", "-j", "1"])
            .env("BUGATTI_CLAUDE_BIN", &bin)
            .envs(stub.client_env(&side.path().join("home")))
            .output()
            .expect("run supervisor");
        p.assert_nothing_survives();
        let console = format!("{}\n{}", stdout(&out), common::stderr(&out));
        (
            out.status.code(),
            console,
            stub.requests_text().lines().count(),
        )
    };

    let (code, console, requests) = start("first", script, p.root());
    assert_eq!(code, Some(0), "{console}");
    assert!(requests >= 12, "every step asked the model: {requests}");
    for test in ["api", "ui"] {
        let recording = p.root().join(format!("bugatti.replay/{test}.replay.json"));
        assert!(recording.exists(), "{test}: no recording; {console}");
    }

    p.write("notes/.keep", "");
    let records_before = p.run_records().len();
    let (code, console, requests) = start("second", json!([]), &p.root().join("notes"));
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(requests, 0, "no model request on the second run");
    assert!(
        console.contains("steps: 6 replayed, 0 by the agent"),
        "{console}"
    );
    let mut records = p.run_records();
    records.sort_by_key(|r| r.identity.started_at);
    let second: Vec<&RunRecord> = records.iter().skip(records_before).collect();
    assert_eq!(second.len(), 2);
    for record in second {
        assert!(modes(record).iter().all(|m| *m == "replayed"), "{record:?}");
        let run_dir = record.run_dir();
        assert!(
            !run_dir.join("transcripts/agent.jsonl").exists(),
            "the agent CLI never started"
        );
    }
}

/// A project for one Claude Code test of `steps` (TOML `[[steps]]` tables).
fn claude_project(steps: &str) -> Project {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"claude-code\"\nagent_args = [\"--allowedTools\", \"Bash\"]\nstep_timeout_secs = 120\n",
    );
    p.write("t.test.toml", steps);
    p
}

/// Claude Code's Bash keeps its working directory between calls, and runs bash: so does the
/// replay. A recorded `cd sub && pwd` then `rm -f victim.txt` deletes `sub/victim.txt`, never
/// the root's, and bash-only syntax replays.
#[test]
fn claude_bash_replays_in_the_directory_it_left_and_as_bash() {
    let Some(bin) = claude_bin("replay of Claude Code's Bash working directory") else {
        return;
    };
    let p = claude_project("[[steps]]\ninstruction = \"In sub/, delete victim.txt.\"\n");
    p.write("victim.txt", "root\n");
    p.write("sub/victim.txt", "sub\n");
    let side = tempfile::tempdir().expect("side dir");
    let script = json!([
        {"bash": "cd sub && pwd"},
        {"bash": "rm -f victim.txt; [[ -e victim.txt ]] || echo gone"},
        {"text": "Deleted.\nRESULT OK"},
    ]);
    let (code, console, record, _) = run(&p, &bin, side.path(), "first", script, &[]);
    assert_eq!(code, Some(0), "{console}");
    assert!(record.steps[0].recorded, "{record:?}");
    // Its tool calls are in run.json at the times the stream showed them, call to result: the
    // timeline's measured ticks (docs/reports.md, "The page you look at").
    let step = &record.steps[0];
    let calls: Vec<(&str, &str)> = step
        .tool_calls
        .iter()
        .map(|c| (c.tool.as_str(), c.summary.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("Bash", "cd sub && pwd"),
            ("Bash", "rm -f victim.txt; [[ -e victim.txt ]] || echo gone")
        ],
        "{step:?}"
    );
    let started = step.started_at.expect("the step started");
    assert!(
        step.tool_calls
            .windows(2)
            .all(|w| w[0].started_at <= w[1].started_at)
            && step
                .tool_calls
                .iter()
                .all(|c| c.started_at >= started && c.duration_ms.is_some() && !c.is_error),
        "in order, inside the step, each answered: {step:?}"
    );
    assert!(
        p.root().join("victim.txt").exists(),
        "the agent kept the root's file"
    );
    assert!(
        !p.root().join("sub/victim.txt").exists(),
        "the agent deleted sub's"
    );

    p.write("sub/victim.txt", "sub\n");
    let (code, console, record, requests) = run(&p, &bin, side.path(), "second", json!([]), &[]);
    assert_eq!(code, Some(0), "{console}\n{:?}", record.steps);
    assert_eq!(requests, 0, "replayed without the model");
    assert_eq!(modes(&record), ["replayed"], "{record:?}");
    assert!(
        p.root().join("victim.txt").exists(),
        "the replay deleted the root's victim.txt"
    );
    assert!(
        !p.root().join("sub/victim.txt").exists(),
        "the replay acted in sub/"
    );
}

/// An agent step, a replayed step and another agent step in one session: the replay runs its
/// command beside the live Claude Code process and leaves it running (no restart).
#[test]
fn a_replayed_step_between_two_agent_steps_leaves_the_agent_running() {
    let Some(bin) = claude_bin("replay beside a running Claude Code") else {
        return;
    };
    let p = claude_project(
        "[[steps]]\nreplay = false\ninstruction = \"Say one.\"\n\n\
         [[steps]]\ninstruction = \"Check the date command works.\"\n\n\
         [[steps]]\nreplay = false\ninstruction = \"Say three.\"\n",
    );
    let side = tempfile::tempdir().expect("side dir");
    let first = json!([
        {"bash": "echo one"}, {"text": "RESULT OK"},
        {"bash": "sleep 0.2; date -u +%Y; echo checked"}, {"text": "RESULT OK"},
        {"bash": "echo three"}, {"text": "RESULT OK"},
    ]);
    let (code, console, record, _) = run(&p, &bin, side.path(), "first", first, &[]);
    assert_eq!(code, Some(0), "{console}");
    assert!(record.steps[1].recorded, "{record:?}");
    let second = json!([
        {"bash": "echo one"}, {"text": "RESULT OK"},
        {"bash": "echo three"}, {"text": "RESULT OK"},
    ]);
    let (code, console, record, _) = run(&p, &bin, side.path(), "second", second, &[]);
    assert_eq!(code, Some(0), "{console}\n{:?}", record.steps);
    assert_eq!(modes(&record), ["agent", "replayed", "agent"], "{record:?}");
    assert!(!console.contains("AGENT RESTARTED"), "{console}");
    assert_eq!(Some(record.agent_restarts.len()), Some(0), "{record:?}");
}

/// A Bash output of 40 000 lines reaches the agent as Claude Code's `<persisted-output>` block (a
/// 2 KB preview and a saved file); that is what is recorded, and the replay cuts its own output
/// the same way: it replays, and a change inside the preview is still a drift.
#[test]
fn a_forty_thousand_line_output_replays_as_claude_code_cut_it() {
    let Some(bin) = claude_bin("replay of a large Claude Code Bash output") else {
        return;
    };
    let p = claude_project("[[steps]]\ninstruction = \"Print the log and check it.\"\n");
    p.write("first.txt", "1\n");
    let side = tempfile::tempdir().expect("side dir");
    let command = "seq -f \"%g line of output\" $(cat first.txt) 40000";
    let script = json!([{"bash": command}, {"text": "It is long.\nRESULT OK"}]);
    let (code, console, record, _) = run(&p, &bin, side.path(), "first", script, &[]);
    assert_eq!(code, Some(0), "{console}");
    assert!(record.steps[0].recorded, "{record:?}");
    let recording =
        std::fs::read_to_string(p.root().join("bugatti.replay/t.replay.json")).expect("recording");
    assert!(recording.contains("<persisted-output>"), "{recording}");

    let (code, console, record, requests) = run(&p, &bin, side.path(), "second", json!([]), &[]);
    assert_eq!(code, Some(0), "{console}\n{:?}", record.steps);
    assert_eq!(requests, 0, "replayed without the model");
    assert_eq!(modes(&record), ["replayed"], "{record:?}");

    // The output now starts elsewhere: inside the preview the agent saw, so a drift.
    p.write("first.txt", "2\n");
    let script = json!([{"bash": command}, {"text": "RESULT OK"}]);
    let (code, console, record, _) = run(&p, &bin, side.path(), "third", script, &[]);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(modes(&record), ["agent"], "{record:?}");
    assert!(record.steps[0].replay_drift.is_some(), "{record:?}");
}
