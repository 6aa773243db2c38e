//! `supervisor start` with the `claude-code` provider, end to end: the real Claude Code CLI (as
//! installed by `.ci/run`, or `$BUGATTI_CLAUDE_BIN`) against the scripted Anthropic API stub on
//! loopback, driving a real app the harness started. Skips loudly without the CLI.

use crate::common::assert_exit;
use crate::common::records::*;

use crate::common::claude::{claude_bin, Stub};
use crate::common::Project;
use serde_json::json;

#[test]
fn a_claude_code_session_runs_a_real_tool_against_the_harness_app() {
    let Some(bin) = claude_bin("supervisor start on claude-code") else {
        return;
    };
    let p = Project::new();
    let side = tempfile::tempdir().expect("side dir");
    let stub = Stub::start(
        side.path(),
        json!([
            {"bash": "curl -s -X POST http://127.0.0.1:$APP_PORT/inc"},
            {"text": "The counter answered.\nBUGATTI_LOG {tool_result}\nRESULT OK"},
            {"text": "It renders, slowly.\nRESULT WARN: the page is slow"},
        ]),
    );
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
    p.write(
        "counter.test.toml",
        "name = \"Counter\"\n[[steps]]\ninstruction = \"Increment the counter once.\"\n[[steps]]\ninstruction = \"Check the page.\"\n",
    );
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CLAUDE_BIN", &bin)
        .envs(stub.client_env(&side.path().join("home")))
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    assert_exit(&out, 0);
    let record = p.record_for("counter.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Warned), "{record:?}");
    assert_eq!(record.identity.provider.as_str(), "claude-code");
    let steps = &record.steps;
    assert_eq!(steps[0].status, StepStatus::Ok);
    assert_eq!(
        steps[0].logs[0], "count=1",
        "the Bash tool really hit the app"
    );
    assert_eq!(steps[1].status, StepStatus::Warn);
    assert_eq!(steps[1].message.as_deref(), Some("the page is slow"));
    let usage = steps[0].usage.clone().unwrap_or_default();
    assert!(usage.cost_usd.is_some_and(|c| c > 0.0), "{usage:?}");
    assert!(usage.session_id.as_ref().is_some_and(|s| !s.is_empty()));
    assert_eq!(
        steps[1].usage.as_ref().and_then(|u| u.session_id.clone()),
        usage.session_id,
        "one conversation per session"
    );
    let run_dir = record.run_dir();
    assert!(run_dir.join("transcripts/agent.jsonl").is_file());
}
