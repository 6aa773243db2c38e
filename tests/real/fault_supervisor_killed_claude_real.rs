//! The supervisor SIGKILLed while the real Claude Code is in the middle of a step: the agent's
//! transcripts (`agent.jsonl`, `agent.log`) already hold what the step streamed so far — they are
//! written and flushed as the stream arrives, not at the step's end — so the record of a killed
//! run shows where it was. The next `start` cleans up what the dead supervisor left.

use crate::common;
use crate::common::assert_exit;

use common::claude::{claude_bin, Stub};
use common::Project;
use serde_json::json;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn a_sigkilled_supervisor_leaves_the_step_in_progress_in_the_claude_transcripts() {
    let Some(bin) = claude_bin("transcripts of a SIGKILLed supervisor") else {
        return;
    };
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"claude-code\"\nstep_timeout_secs = 120\nagent_args = [\"--allowedTools\", \"Bash\"]\n",
    );
    p.write(
        "tests/long.test.toml",
        "name = \"Long\"\n[[steps]]\ninstruction = \"Check the slow thing.\"\n",
    );
    p.write(
        "quick.test.toml",
        "[[steps]]\ninstruction = \"`echo hi`\"\n",
    );
    let started = p.root().join("bash-started");
    let side = tempfile::tempdir().expect("side dir");
    let stub = Stub::start(
        side.path(),
        json!([
            {"bash": format!("touch {}; echo partial-step-marker; sleep 300", started.display())},
            {"text": "RESULT OK"},
        ]),
    );
    let mut child = p
        .supervisor()
        .args(["start", "tests"])
        .env("BUGATTI_CLAUDE_BIN", &bin)
        .envs(stub.client_env(&side.path().join("home")))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn supervisor");
    let deadline = Instant::now() + Duration::from_secs(90);
    while !started.exists() {
        if Instant::now() > deadline || child.try_wait().ok().flatten().is_some() {
            let _ = child.kill();
            panic!("the step's Bash call never ran");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL the supervisor");
    child.wait().expect("reap the supervisor");

    let runs: Vec<_> = std::fs::read_dir(p.root().join(".bugatti/runs"))
        .expect("runs")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let transcripts = runs[0].join("transcripts");
    let read = |name: &str| std::fs::read_to_string(transcripts.join(name)).unwrap_or_default();
    let (jsonl, log) = (read("agent.jsonl"), read("agent.log"));

    // Clean up first, so a failed assertion leaves nothing running: the next start kills what
    // the dead supervisor left (the test's own stub is killed when it is dropped).
    let out = p
        .supervisor()
        .args(["start", "quick.test.toml"])
        .env("BUGATTI_PROVIDER", "shell")
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    assert_exit(&out, 0);

    assert!(
        jsonl.contains("\"type\":\"system\"") && jsonl.contains("partial-step-marker"),
        "agent.jsonl holds the step's stream up to the Bash call: {jsonl:?}"
    );
    assert!(
        log.contains("partial-step-marker"),
        "agent.log holds the step's tool call: {log:?}"
    );
}
