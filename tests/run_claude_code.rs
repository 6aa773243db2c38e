//! `supervisor start` with the `claude-code` provider, end to end: the real Claude Code CLI (as
//! installed by `.ci/run`, or `$BUGATTI_CLAUDE_BIN`) against the scripted Anthropic API stub on
//! loopback, driving a real app the harness started. Skips loudly without the CLI.

mod common;

use common::{stdout, Project};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

fn claude_bin() -> Option<PathBuf> {
    let candidate = std::env::var_os("BUGATTI_CLAUDE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".ci/node/node_modules/.bin/claude")
        });
    if candidate.is_file() {
        return Some(candidate);
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\nSKIPPED (supervisor start on claude-code): no Claude Code CLI at {}; `.ci/run` installs it \
         (cd .ci/node && npm install @anthropic-ai/claude-code@2)",
        candidate.display()
    );
    None
}

/// The stub, killed with its group when the test ends.
struct Stub(Child);

impl Drop for Stub {
    fn drop(&mut self) {
        let _ = bugatti::process::group::signal_group(
            self.0.id() as i32,
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.0.wait();
    }
}

fn start_stub(dir: &std::path::Path, script: serde_json::Value) -> (Stub, u16) {
    use std::os::unix::process::CommandExt;
    let script_path = dir.join("script.json");
    std::fs::write(&script_path, script.to_string()).expect("script");
    let mut child = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/support/anthropic_stub.py"
        ))
        .arg(&script_path)
        .arg(dir.join("requests.jsonl"))
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("stub");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("PORT line");
    let port = line
        .trim()
        .strip_prefix("PORT ")
        .and_then(|p| p.parse().ok())
        .expect("a port");
    (Stub(child), port)
}

#[test]
fn a_claude_code_session_runs_a_real_tool_against_the_harness_app() {
    let Some(bin) = claude_bin() else { return };
    let p = Project::new();
    let side = tempfile::tempdir().expect("side dir");
    let (_stub, stub_port) = start_stub(
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
    let home = side.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CLAUDE_BIN", &bin)
        .env("HOME", &home)
        .env(
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{stub_port}"),
        )
        .env("ANTHROPIC_API_KEY", "dummy")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("CLAUDE_CODE_MAX_RETRIES", "1")
        .env("API_TIMEOUT_MS", "60000")
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        common::stderr(&out)
    );
    let record = p.record_for("counter.test.toml");
    assert_eq!(record["outcome"], "warned", "{record}");
    assert_eq!(record["provider"], "claude-code");
    let steps = &record["steps"];
    assert_eq!(steps[0]["status"], "ok");
    assert_eq!(
        steps[0]["logs"][0], "count=1",
        "the Bash tool really hit the app"
    );
    assert_eq!(steps[1]["status"], "warn");
    assert_eq!(steps[1]["message"], "the page is slow");
    let usage = &steps[0]["usage"];
    assert!(
        usage["cost_usd"].as_f64().is_some_and(|c| c > 0.0),
        "{usage}"
    );
    assert!(usage["session_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(
        steps[1]["usage"]["session_id"], usage["session_id"],
        "one conversation per session"
    );
    let run_dir = PathBuf::from(record["run_dir"].as_str().expect("run_dir"));
    assert!(run_dir.join("transcripts/agent.jsonl").is_file());
}
