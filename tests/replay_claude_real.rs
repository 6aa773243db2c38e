//! Replay end to end (SPEC §10) through the real Claude Code CLI and the scripted Messages stub:
//! the first run records what the agent did; the second replays every step without starting the
//! agent (the stub sees no request); an output that changed sends only that step to the agent,
//! with its drift recorded, and the renewed recording replays next time; `--replay off` asks the
//! agent for every step. Skips loudly without the CLI.

mod common;

use common::claude::{claude_bin, Stub};
use common::{stdout, Project};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The newest run.json of the project (each invocation here runs one test).
fn latest_record(p: &Project) -> Value {
    let mut records = p.run_records();
    records.sort_by_key(|r| r["started_at"].as_str().unwrap_or_default().to_string());
    records.pop().expect("a run.json")
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
) -> (Option<i32>, String, Value, usize) {
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

fn modes(record: &Value) -> Vec<String> {
    record["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["mode"].as_str().unwrap_or("-").to_string())
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
            // The output carries the session's port, a timestamp, a UUID and a duration.
            {"bash": "curl -s -X POST http://127.0.0.1:$APP_PORT/inc; echo; echo served on port $APP_PORT; date -u +%FT%T.%NZ; cat /proc/sys/kernel/random/uuid; echo took $(( $(date +%N) % 900 + 10 ))ms"},
            {"text": "The counter says 1.\nRESULT OK"},
            {"bash": "cat version.txt"},
            {"text": "It says version 1.\nRESULT OK"},
        ])
    };

    // 1. The agent passes both steps; each is recorded.
    let (code, console, record, requests) =
        run(&p, &bin, side.path(), "first", agent_script(), &[]);
    assert_eq!(code, Some(0), "{console}");
    assert!(requests >= 2, "the agent was asked: {requests} requests");
    assert_eq!(modes(&record), ["agent", "agent"], "{record}");
    assert_eq!(record["steps"][0]["recorded"], true, "{record}");
    assert_eq!(record["agent_steps"], 2, "{record}");
    let recording_path = p.root().join("bugatti.replay/counter.replay.json");
    let recording = std::fs::read_to_string(&recording_path).expect("a recording was written");
    assert!(
        recording.contains("${APP_PORT}")
            && !recording.contains(&record["ports"]["APP_PORT"].to_string()),
        "the session's port is a placeholder: {recording}"
    );

    // 2. Unchanged app: every step replays, the agent CLI never starts, the stub sees nothing.
    let (code, console, record, requests) = run(&p, &bin, side.path(), "second", json!([]), &[]);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(requests, 0, "no model request on a replayed run");
    assert_eq!(modes(&record), ["replayed", "replayed"], "{record}");
    assert_eq!(record["replayed_steps"], 2, "{record}");
    assert_eq!(record["agent_steps"], 0, "{record}");
    assert!(console.contains("OK (replayed "), "{console}");
    let run_dir = PathBuf::from(record["run_dir"].as_str().expect("run_dir"));
    assert!(
        !run_dir.join("transcripts/agent.jsonl").exists(),
        "the agent CLI never started"
    );
    let message = record["steps"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("recorded actions ran again and matched"),
        "{message}"
    );

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
        ]),
        &[],
    );
    assert_eq!(code, Some(0), "{console}");
    assert!(requests >= 1, "the drifted step went to the agent");
    assert_eq!(modes(&record), ["replayed", "agent"], "{record}");
    let drift = &record["steps"][1]["replay_drift"];
    assert!(
        drift["diff"]
            .as_str()
            .is_some_and(|d| d.contains("version 1") && d.contains("version 2")),
        "{drift}"
    );
    assert_eq!(record["steps"][1]["recorded"], true, "{record}");
    let stub_requests = std::fs::read_to_string(side.path().join("third/messages-requests.jsonl"))
        .unwrap_or_default();
    assert!(
        stub_requests.contains("checked without you") && stub_requests.contains("/inc"),
        "the agent learnt what the replayed step did"
    );

    // 4. The renewed recording replays.
    let (code, console, record, requests) = run(&p, &bin, side.path(), "fourth", json!([]), &[]);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(requests, 0);
    assert_eq!(modes(&record), ["replayed", "replayed"], "{record}");

    // 5. --replay off: the agent for every step, nothing replayed or recorded.
    let (code, console, record, requests) = run(
        &p,
        &bin,
        side.path(),
        "fifth",
        json!([
            {"bash": "curl -s -X POST http://127.0.0.1:$APP_PORT/inc"},
            {"text": "RESULT OK"},
            {"bash": "cat version.txt"},
            {"text": "RESULT OK"},
        ]),
        &["--replay", "off"],
    );
    assert_eq!(code, Some(0), "{console}");
    assert!(requests >= 2);
    assert_eq!(modes(&record), ["-", "-"], "{record}");
    assert_eq!(record["replayed_steps"], 0);
}
