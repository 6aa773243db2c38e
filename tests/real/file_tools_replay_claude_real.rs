//! Claude Code's read-only file tools replayed (docs/replay.md) through the real Claude Code CLI
//! and the scripted Messages stub: steps the agent passed by looking at project files with
//! `Grep` (matching lines, a count), `Glob` and `Read` are recorded; the next run replays them
//! with no model request while the files are unchanged; once the line the `Grep` matched says
//! something else, that step drifts to the agent, which fails it on what the file now says.
//! Skips loudly without the CLI.

use crate::common;
use crate::common::assert_exit;
use crate::common::records::*;

use crate::common::claude::{claude_bin, Stub};
use crate::common::{stdout, Project};
use serde_json::{json, Value};
use std::path::Path;

const NOTES: &str = "invoice 17\ndue on Friday\npaid no\n";

/// A Claude Code project of two steps that look at files. Claude Code 2.1's native build offers
/// its `Grep` and `Glob` tools only when `--allowedTools` (or `--tools`) names them.
fn project() -> Project {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"claude-code\"\nagent_args = [\"--allowedTools\", \"Bash,Read,Grep,Glob\"]\nstep_timeout_secs = 120\n",
    );
    p.write("notes.txt", NOTES);
    p.write(
        "app.conf",
        "# The invoicing app\nname = invoices\nport = 8080\n",
    );
    p.write(
        "notes.test.toml",
        "name = \"Notes\"\n\n\
         [[steps]]\ninstruction = \"Check in notes.txt that invoice 17 is due on Friday.\"\n\n\
         [[steps]]\ninstruction = \"Check that the one .conf file names the app invoices.\"\n\n\
         [[steps]]\ninstruction = \"Check that notes.txt has exactly one due line.\"\n",
    );
    p
}

/// The agent: `Grep` for the due line; `Glob` for the config, `Read` its first lines; `Grep`
/// counting the due lines.
fn agent_script(root: &Path) -> Value {
    json!([
        {"tool": "Grep", "input": {"pattern": "due", "path": "notes.txt", "output_mode": "content", "-n": true}},
        {"text": "Invoice 17 is due on Friday.\nRESULT OK", "expect": ["due on Friday"]},
        {"tool": "Glob", "input": {"pattern": "*.conf"}},
        {"tool": "Read", "input": {"file_path": root.join("app.conf").display().to_string(), "offset": 1, "limit": 2}},
        {"text": "It is named invoices.\nRESULT OK", "expect": ["name = invoices"]},
        {"tool": "Grep", "input": {"pattern": "due", "path": "notes.txt", "output_mode": "count"}},
        {"text": "One due line.\nRESULT OK", "expect": ["notes.txt:1"]},
    ])
}

/// One invocation against a fresh stub holding `script`: (exit code, console, run.json,
/// requests the stub saw).
fn run(
    p: &Project,
    claude: &Path,
    side: &Path,
    name: &str,
    script: Value,
) -> (Option<i32>, String, RunRecord, usize) {
    let dir = side.join(name);
    std::fs::create_dir_all(&dir).expect("stub dir");
    let stub = Stub::start(&dir, script);
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CLAUDE_BIN", claude)
        .envs(stub.client_env(&side.join("home")))
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let console = format!("{}\n{}", stdout(&out), common::stderr(&out));
    let requests = stub.requests_text().lines().count();
    let mut records = p.run_records();
    records.sort_by_key(|r| r.identity.started_at);
    let record = records.pop().expect("a run.json");
    (out.status.code(), console, record, requests)
}

fn modes(record: &RunRecord) -> Vec<&'static str> {
    record
        .steps
        .iter()
        .map(|s| s.mode.map_or("-", |m| m.as_str()))
        .collect()
}

#[test]
fn grep_glob_and_read_replay_while_the_files_are_unchanged_and_a_changed_line_drifts() {
    let Some(claude) = claude_bin("replay of Claude Code's Grep and Read") else {
        return;
    };
    let p = project();
    let side = tempfile::tempdir().expect("side dir");

    // 1. The agent passes the steps by looking at the files; each is recorded as file checks.
    let (code, console, record, requests) =
        run(&p, &claude, side.path(), "first", agent_script(p.root()));
    assert_eq!(code, Some(0), "{console}\n{:#?}", record.steps);
    assert!(requests >= 7, "the agent was asked: {requests}");
    assert_eq!(
        modes(&record),
        ["agent", "agent", "agent"],
        "{:#?}",
        record.steps
    );
    for step in &record.steps {
        assert!(step.recorded, "{step:#?}");
    }
    let text = std::fs::read_to_string(p.root().join("bugatti.replay/notes.replay.json"))
        .expect("a recording");
    let recording: Value = serde_json::from_str(&text).expect("JSON");
    let checks: Vec<String> = recording["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .flat_map(|s| s["actions"].as_array().cloned().unwrap_or_default())
        .filter(|a| a["kind"] == "file")
        .map(|a| a["check"]["tool"].as_str().unwrap_or("?").to_string())
        .collect();
    assert_eq!(checks, ["Grep", "Glob", "Read", "Grep"], "{text}");
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let out = p.supervisor().arg("check").output().expect("check");
    let listed = stdout(&out);
    assert_exit(&out, 0);
    assert_eq!(
        listed
            .matches(&format!("replay: recorded {today} (1 action: 1 file)"))
            .count(),
        2,
        "{listed}"
    );
    assert!(
        listed.contains(&format!("replay: recorded {today} (2 actions: 2 file)")),
        "{listed}"
    );

    // 2. The files are unchanged: every step replays, the model is never asked.
    let (code, console, record, requests) = run(&p, &claude, side.path(), "second", json!([]));
    assert_eq!(code, Some(0), "{console}\n{:#?}", record.steps);
    assert_eq!(requests, 0, "no model request on a replayed run");
    assert_eq!(
        modes(&record),
        ["replayed", "replayed", "replayed"],
        "{:#?}",
        record.steps
    );
    assert_eq!(record.replayed_steps, 3, "{record:?}");

    // 3. The invoice is now due on Monday: the Grep's line differs, the step drifts to the agent,
    //    which greps again and fails it. The test fails; no later step passes.
    p.write("notes.txt", &NOTES.replace("Friday", "Monday"));
    let (code, console, record, requests) = run(
        &p,
        &claude,
        side.path(),
        "third",
        json!([
            {"tool": "Grep", "input": {"pattern": "due", "path": "notes.txt", "output_mode": "content", "-n": true}},
            {"text": "Invoice 17 is due on Friday.\nRESULT OK", "expect": ["due on Friday"]},
        ]),
    );
    let steps = &record.steps;
    assert_eq!(code, Some(1), "{console}\n{steps:#?}");
    assert!(requests >= 1, "the drifted step went to the agent");
    let due = &steps[0];
    assert_eq!(due.mode, Some(StepMode::Agent), "{due:#?}");
    assert_eq!(due.status, StepStatus::Error, "{due:#?}");
    let drift = &due.replay_drift;
    let diff = drift.as_ref().map(|d| d.diff.as_str()).unwrap_or_default();
    assert!(
        diff.contains("due on Friday") && diff.contains("due on Monday"),
        "the drift shows the line that changed: {drift:#?}"
    );
    // The scripted agent's verdict quotes the tool result it judged.
    let message = due.message.as_deref().unwrap_or_default();
    assert!(
        message.contains("due on Monday"),
        "the agent grepped and saw what the file says now: {message}"
    );
    for later in &steps[1..] {
        assert_ne!(later.status, StepStatus::Ok, "{later:#?}");
        assert_ne!(later.mode, Some(StepMode::Replayed), "{later:#?}");
    }
}

/// A duplicated line is a line more: Claude Code's `Grep` shows the agent both copies (without
/// line numbers, `-n: false`, they read the same), so the replay compares the matching lines as a
/// multiset, and a config that now listens twice goes to the agent, which fails it.
#[test]
fn grep_content_is_compared_with_its_duplicate_lines() {
    let Some(claude) = claude_bin("replay of Claude Code's Grep content with duplicates") else {
        return;
    };
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"claude-code\"\nagent_args = [\"--allowedTools\", \"Bash,Read,Grep,Glob\"]\nstep_timeout_secs = 120\n",
    );
    let conf = "listen 80;\nroot /srv;\n";
    p.write("nginx.conf", conf);
    p.write(
        "listen.test.toml",
        "name = \"Listen\"\n\n[[steps]]\ninstruction = \"Check that nginx.conf has exactly one listen directive.\"\n",
    );
    let side = tempfile::tempdir().expect("side dir");
    // The agent greps without line numbers and passes only on exactly one matching line.
    let script = || {
        json!([
            {"tool": "Grep", "input": {"pattern": "listen", "path": "nginx.conf", "output_mode": "content", "-n": false}},
            {"text": "One listen directive.\nRESULT OK", "expect_re": ["(\\S+:)?\\s*listen 80;"]},
        ])
    };

    let (code, console, record, _) = run(&p, &claude, side.path(), "first", script());
    assert_eq!(code, Some(0), "{console}\n{:#?}", record.steps);
    assert!(record.steps[0].recorded, "{:#?}", record.steps);
    let (code, console, record, requests) = run(&p, &claude, side.path(), "second", json!([]));
    assert_eq!(code, Some(0), "{console}\n{:#?}", record.steps);
    assert_eq!(requests, 0, "the unchanged file replays");
    assert_eq!(modes(&record), ["replayed"], "{:#?}", record.steps);

    // The directive is now there twice: the same text on two lines.
    p.write("nginx.conf", &conf.replace("root", "listen 80;\nroot"));
    let (code, console, record, requests) = run(&p, &claude, side.path(), "third", script());
    let step = &record.steps[0];
    assert_eq!(code, Some(1), "{console}\n{step:#?}");
    assert!(requests >= 1, "the step went to the agent");
    assert_eq!(step.mode, Some(StepMode::Agent), "{step:#?}");
    assert_eq!(step.status, StepStatus::Error, "{step:#?}");
    let diff = step
        .replay_drift
        .as_ref()
        .map(|d| d.diff.as_str())
        .unwrap_or_default();
    assert!(
        diff.contains("listen 80;"),
        "the drift shows the line more: {diff}"
    );
}
