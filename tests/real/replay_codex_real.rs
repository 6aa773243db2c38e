//! Replay end to end (docs/replay.md) through the real Codex CLI and the scripted Responses stub: a
//! three-step test the agent passed, each step with a `command_execution`, replays on the next
//! run with no model request and no Codex process. Skips loudly without the CLI.

use crate::common::codex::{codex_bin, ResponsesStub};
use crate::common::records::*;
use crate::common::{stderr, stdout, Project};
use serde_json::json;
use std::path::PathBuf;

fn configure(p: &Project, stub: &ResponsesStub) {
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"codex\"\nagent_args = [{}]\nstep_timeout_secs = 120\n",
            stub.agent_args_toml()
        ),
    );
}

fn latest_record(p: &Project) -> RunRecord {
    p.newest_record()
}

fn run(p: &Project, bin: &PathBuf) -> (Option<i32>, String, RunRecord) {
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CODEX_BIN", bin)
        .env("STUB_API_KEY", "dummy")
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let console = format!("{}\n{}", stdout(&out), stderr(&out));
    (out.status.code(), console, latest_record(p))
}

#[test]
fn three_codex_steps_recorded_then_replayed_without_a_model_request() {
    let Some(bin) = codex_bin("replay through codex") else {
        return;
    };
    let p = Project::new();
    p.write(
        "codex.test.toml",
        "name = \"Codex\"\n\
         [[steps]]\ninstruction = \"Say one.\"\n\
         [[steps]]\ninstruction = \"Say two.\"\n\
         [[steps]]\ninstruction = \"Write and read the state file.\"\n",
    );
    let side = tempfile::tempdir().expect("side dir");
    let first = side.path().join("first");
    std::fs::create_dir_all(&first).expect("dir");
    let stub = ResponsesStub::start(
        &first,
        json!([
            {"shell": "echo one-$BUGATTI_STEP_ID"},
            {"text": "Saw it.\nRESULT OK"},
            // The facts question after step 1 (asked in the same Codex thread); steps 2 and 3
            // are answered with none.
            {"facts": ["1 contains \"one-1\""]},
            {"shell": "echo two; date -u +%F"},
            {"text": "RESULT OK"},
            {"shell": "echo state > $BUGATTI_WORKDIR/state && cat $BUGATTI_WORKDIR/state"},
            {"text": "RESULT OK"},
        ]),
    );
    configure(&p, &stub);
    let (code, console, record) = run(&p, &bin);
    assert_eq!(code, Some(0), "{console}");
    // Two model calls a step, and the facts question after each pass.
    assert_eq!(stub.request_log().len(), 9);
    for step in &record.steps {
        assert_eq!(step.mode, Some(StepMode::Agent), "{step:?}");
        assert!(step.recorded, "{step:?}");
    }
    assert_eq!(
        record.steps[0].replay_facts,
        ["1 contains \"one-1\""],
        "{record:?}"
    );
    let recording = std::fs::read_to_string(p.root().join("bugatti.replay/codex.replay.json"))
        .expect("recording");
    assert!(recording.contains("\"kind\": \"shell\""), "{recording}");

    let second = side.path().join("second");
    std::fs::create_dir_all(&second).expect("dir");
    let stub = ResponsesStub::start(&second, json!([]));
    configure(&p, &stub);
    let (code, console, record) = run(&p, &bin);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(stub.request_log().len(), 0, "no model request");
    assert_eq!(record.replayed_steps, 3, "{record:?}");
    let message = record.steps[0].message.as_deref().unwrap_or_default();
    assert!(message.contains("1 fact held"), "{message}");
    let run_dir = record.run_dir();
    assert!(
        !run_dir.join("transcripts/agent.jsonl").exists(),
        "Codex never started"
    );
}
