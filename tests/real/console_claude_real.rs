//! The agent console through the real Claude Code CLI (`.ci/node`, or `$BUGATTI_CLAUDE_BIN`),
//! driven by the scripted Messages API stub on loopback: the model's scripted turns call
//! `mcp__bugatti__exec_command` to start a program that asks a question, answer it with
//! `mcp__bugatti__write_stdin`, trigger the harness app and `mcp__bugatti__wait_for_log` for the
//! line it writes; the stub only says RESULT OK when each tool result holds what it expects.
//! Skips loudly without the CLI.

use crate::common;
use crate::common::assert_exit;
use crate::common::records::*;

use crate::common::claude::{claude_bin, Stub};
use crate::common::{stdout, Project};
use serde_json::json;

fn project() -> Project {
    let p = Project::new();
    let app = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/console_app.py");
    p.write(
        "bugatti.config.toml",
        &format!(
            r#"
[provider]
name = "claude-code"
step_timeout_secs = 120

[ports]
APP_PORT = "auto"

[commands.app]
kind = "long_lived"
cmd = "python3 {app} --port ${{APP_PORT}}"
readiness_url = "http://127.0.0.1:${{APP_PORT}}/health"
"#
        ),
    );
    p.write(
        "console.test.toml",
        "name = \"Console\"\n[[steps]]\ninstruction = \"Answer the greeter's question, then place order 42 and see the server log it.\"\n",
    );
    p
}

#[test]
fn claude_code_drives_an_interactive_program_and_waits_for_the_servers_log_line() {
    let Some(bin) = claude_bin("agent console through Claude Code") else {
        return;
    };
    let p = project();
    let side = tempfile::tempdir().expect("side dir");
    let stub = Stub::start(
        side.path(),
        json!([
            // The prompt must be on the screen when the yield ends: 1 s left no margin for
            // bash starting in a PTY on a loaded CI machine (one such run failed).
            {"tool": "mcp__bugatti__exec_command",
             "input": {"cmd": "read -p 'name? ' n; echo \"hello $n\"", "yield_time_ms": 3000}},
            {"expect": ["Process running with session ID", "Output:\nname? "],
             "tool": "mcp__bugatti__write_stdin",
             "input": {"session_id": "{session_id}", "chars": "bugatti\n", "yield_time_ms": 5000}},
            {"expect": ["Process exited with code 0", "hello bugatti"],
             "tool": "mcp__bugatti__read_log", "input": {"name": "app", "tail_lines": 1}},
            {"expect": ["Next offset: "],
             "tool": "mcp__bugatti__exec_command",
             "input": {"cmd": "sleep 0.5; curl -s \"http://127.0.0.1:$APP_PORT/checkout?order=42\"",
                       "tty": false, "yield_time_ms": 250}},
            {"tool": "mcp__bugatti__wait_for_log",
             "input": {"name": "app", "pattern": "checkout hit order=\\d+",
                       "from_offset": "{next_offset}", "timeout_ms": 20000}},
            {"expect": ["Matched: yes", "checkout hit order=42"],
             "text": "The greeter said hello and the server logged: {tool_result}\nRESULT OK"},
        ]),
    );
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CLAUDE_BIN", &bin)
        .envs(stub.client_env(&side.path().join("home")))
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let record = p.record_for("console.test.toml");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}\n{record:#?}\n{}",
        stdout(&out),
        common::stderr(&out),
        stub.requests_text()
    );
    let run_dir = p
        .root()
        .join(".bugatti/runs")
        .join(record.identity.run_id.as_str());
    // Claude Code connected to the console and was offered its tools.
    let agent = std::fs::read_to_string(run_dir.join("transcripts/agent.jsonl")).expect("agent");
    let init: serde_json::Value = agent
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "system" && e["subtype"] == "init")
        .expect("an init event");
    assert!(
        init["mcp_servers"].to_string().contains("\"connected\""),
        "{init:#}"
    );
    // Every call went through the console, in order, and is recorded.
    let calls: Vec<serde_json::Value> =
        std::fs::read_to_string(run_dir.join("transcripts/console.jsonl"))
            .expect("console.jsonl")
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON"))
            .collect();
    let tools: Vec<&str> = calls.iter().filter_map(|c| c["tool"].as_str()).collect();
    assert_eq!(
        tools,
        [
            "exec_command",
            "write_stdin",
            "read_log",
            "exec_command",
            "wait_for_log"
        ]
    );
    assert!(calls.iter().all(|c| c["is_error"] == false), "{calls:#?}");
    // The MCP config holding the token is private, and the token is in no argument list.
    let config = run_dir.join("agent/mcp.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&config)
            .expect("mcp.json")
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
}

#[test]
fn a_console_claude_code_does_not_get_is_a_clear_provider_error() {
    let Some(bin) = claude_bin("agent console unavailable through Claude Code") else {
        return;
    };
    let p = project();
    // The user's own arguments take the console's tools away from the model.
    let config = std::fs::read_to_string(p.root().join("bugatti.config.toml")).expect("config");
    p.write(
        "bugatti.config.toml",
        &config.replace(
            "step_timeout_secs = 120",
            "step_timeout_secs = 120\nagent_args = [\"--disallowedTools\", \"mcp__bugatti\"]",
        ),
    );
    let side = tempfile::tempdir().expect("side dir");
    let stub = Stub::start(side.path(), json!([{"text": "Looks fine.\nRESULT OK"}]));
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CLAUDE_BIN", &bin)
        .envs(stub.client_env(&side.path().join("home")))
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let record = p.record_for("console.test.toml");
    // An error of the run (exit 3 is a harness error), not a failed step (exit 1).
    assert_eq!(
        record.outcome,
        Some(RunOutcome::Error),
        "{record:#?}\n{}",
        stdout(&out)
    );
    let written = record.read("run.json");
    assert!(
        written.contains("the agent console is unavailable"),
        "{written}"
    );
    assert_exit(&out, 3);
}
