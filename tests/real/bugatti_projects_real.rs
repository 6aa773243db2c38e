//! Projects shaped like Bugatti 0.7's own examples, run unmodified through the real Claude Code CLI
//! (as `.ci/run` installs it) against the scripted Anthropic API stub on loopback:
//! - a Rust CLI built by a `short_lived` `cargo build`, with a `CLAUDE.md` that says where the
//!   binary is; the agent runs `./target/debug/greeter` from the project root;
//! - a Python web API on a fixed port with `readiness_url`, checked with curl by an agent whose
//!   Bash permission comes only from the project's `.claude/settings.json`.
//!
//! Both configs are as a Bugatti user writes them: no provider name (claude-code is the default),
//! relative commands, the agent expected in the project root. Skips loudly without the CLI.

use crate::common::claude::{claude_bin, Stub};
use crate::common::records::*;
use crate::common::{stderr, stdout, Project};
use bugatti::report::records::run_record::StepRecord;
use serde_json::json;
use std::path::Path;

const GREETER_CARGO: &str = r#"[package]
name = "greeter"
version = "0.1.0"
edition = "2021"

[dependencies]
"#;

const GREETER_MAIN: &str = r#"use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprintln!("usage: greeter <name> [--shout]");
        return ExitCode::from(1);
    };
    match args.get(1).map(String::as_str) {
        None => println!("Hello, {name}!"),
        Some("--shout") => println!("HELLO, {}!", name.to_uppercase()),
        Some(other) => {
            eprintln!("error: unknown option {other}");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
"#;

/// Runs `supervisor start` in the project as a user would (from its root, no flags), with the
/// CLI pointed at the stub; returns the console and the exit code.
fn start(p: &Project, bin: &Path, stub: &Stub, side: &Path) -> (Option<i32>, String) {
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CLAUDE_BIN", bin)
        .envs(stub.client_env(&side.join("home")))
        // The example's `--dangerously-skip-permissions` as root needs this, as in a container.
        .env("IS_SANDBOX", "1")
        // `cargo build` must build where the project's CLAUDE.md says, not where our tests do.
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    (
        out.status.code(),
        format!("{}\n{}", stdout(&out), stderr(&out)),
    )
}

fn logs(step: &StepRecord) -> String {
    step.logs.join("\n")
}

/// The `cwd` of Claude Code's `system/init` event in the run's agent.jsonl.
fn claude_cwd(record: &RunRecord) -> String {
    let run_dir = record.identity.run_dir.as_str();
    let jsonl = std::fs::read_to_string(Path::new(run_dir).join("transcripts/agent.jsonl"))
        .expect("agent.jsonl");
    jsonl
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "system" && e["subtype"] == "init")
        .and_then(|e| e["cwd"].as_str().map(str::to_string))
        .expect("an init event with its cwd")
}

#[test]
fn a_rust_cli_built_by_cargo_is_run_by_the_agent_as_claude_md_says() {
    let Some(bin) = claude_bin("Bugatti 0.7 rust-cli project") else {
        return;
    };
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        r#"# A Rust CLI: build the binary before testing.

[provider]
step_timeout_secs = 120
agent_args = [
    "--dangerously-skip-permissions",
    "--no-session-persistence",
    "--model",
    "haiku",
    "--effort",
    "medium",
]

[commands.build]
kind = "short_lived"
cmd = "cargo build"
"#,
    );
    p.write("Cargo.toml", GREETER_CARGO);
    p.write("src/main.rs", GREETER_MAIN);
    p.write(".gitignore", "target/\n.bugatti/\n");
    p.write(
        "CLAUDE.md",
        "This project is a small Rust CLI called `greeter`.\n\n\
         After `cargo build`, the binary is at `./target/debug/greeter`.\n\n\
         - `./target/debug/greeter` prints its usage to stderr and exits 1\n\
         - `./target/debug/greeter <name>` prints `Hello, <name>!`\n\
         - `./target/debug/greeter <name> --shout` prints it in capitals\n",
    );
    p.write(
        "cli.test.toml",
        r#"name = "Greeter CLI"

[[steps]]
instruction = "Run greeter without arguments. It must print a usage line on stderr and exit non-zero."

[[steps]]
instruction = "Run greeter with the name World. It must print 'Hello, World!'."

[[steps]]
instruction = "Run greeter with Alice and --shout. It must print 'HELLO, ALICE!'."
step_timeout_secs = 60
"#,
    );
    let side = tempfile::tempdir().expect("side dir");
    let stub = Stub::start(
        side.path(),
        json!([
            {"bash": "out=$(./target/debug/greeter 2>&1); echo \"$out (exit=$?)\""},
            {"text": "Usage shown.\nBUGATTI_LOG {tool_result}\nRESULT OK"},
            {"bash": "./target/debug/greeter World"},
            {"text": "Greeted.\nBUGATTI_LOG {tool_result}\nRESULT OK"},
            {"bash": "./target/debug/greeter Alice --shout"},
            {"text": "Shouted.\nBUGATTI_LOG {tool_result}\nRESULT OK"},
        ]),
    );
    let (code, console) = start(&p, &bin, &stub, side.path());
    assert_eq!(code, Some(0), "{console}");
    let record = p.record_for("cli.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Passed), "{record:?}");
    let build = &record.commands[0];
    assert_eq!(
        (build.name.as_str(), build.exit_code),
        ("build", Some(0)),
        "{build:?}"
    );
    let steps = &record.steps;
    let usage = logs(&steps[0]);
    assert!(
        usage == "usage: greeter <name> [--shout] (exit=1)",
        "the agent ran ./target/debug/greeter from the project root: {usage}"
    );
    assert_eq!(logs(&steps[1]), "Hello, World!");
    assert_eq!(logs(&steps[2]), "HELLO, ALICE!");
    let root = p.root().canonicalize().expect("root");
    assert_eq!(claude_cwd(&record), root.display().to_string());
    // Claude Code found the project's CLAUDE.md and sent it to the model.
    assert!(
        stub.requests_text()
            .contains("the binary is at `./target/debug/greeter`"),
        "CLAUDE.md did not reach the model"
    );
}

const API_APP: &str = r#"import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = __PORT__
ITEMS = []


class Handler(BaseHTTPRequestHandler):
    def send_json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            self.send_json(200, {"status": "ok"})
        elif self.path == "/api/items":
            self.send_json(200, {"items": ITEMS})
        else:
            self.send_json(404, {"error": "not found"})

    def do_POST(self):
        if self.path != "/api/items":
            return self.send_json(404, {"error": "not found"})
        length = int(self.headers.get("Content-Length", 0))
        item = json.loads(self.rfile.read(length) or b"{}")
        if not item.get("name"):
            return self.send_json(400, {"error": "name is required"})
        ITEMS.append({"id": len(ITEMS) + 1, "name": item["name"]})
        self.send_json(201, ITEMS[-1])


print(f"listening on {PORT}", flush=True)
ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
"#;

#[test]
fn a_python_api_on_a_fixed_port_is_checked_with_curl() {
    let Some(bin) = claude_bin("Bugatti 0.7 python web API project") else {
        return;
    };
    // A fixed port, as the user's app has; picked free here so parallel test runs do not collide.
    let port = bugatti::process::ports::allocate_loopback_port().expect("a free port");
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &r#"# A Python web API: the server runs for the whole session.

[provider]
strict_warnings = true
extra_system_prompt = "This is a Python JSON API. Use curl for API tests."
base_url = "http://localhost:__PORT__"
agent_args = ["--no-session-persistence", "--model", "haiku"]

[commands.server]
kind = "long_lived"
cmd = "python3 app.py"
readiness_url = "http://localhost:__PORT__/health"
"#
        .replace("__PORT__", &port.to_string()),
    );
    p.write("app.py", &API_APP.replace("__PORT__", &port.to_string()));
    // The only permission the agent gets: this project's settings, found because it runs here.
    p.write(
        ".claude/settings.json",
        r#"{ "permissions": { "allow": ["Bash(curl:*)"] } }"#,
    );
    p.write(
        "api.test.toml",
        r#"name = "Items API"

[[steps]]
instruction = "GET /api/items and check that the list is empty."

[[steps]]
instruction = "POST an item named 'tea' to /api/items, then check it is listed."
"#,
    );
    let side = tempfile::tempdir().expect("side dir");
    // Claude Code applies a project's settings once its folder is trusted, as it is for a user
    // who has opened Claude Code there before.
    let root = p.root().canonicalize().expect("root");
    let home = side.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(
        home.join(".claude.json"),
        json!({"projects": {root.display().to_string(): {"hasTrustDialogAccepted": true}}})
            .to_string(),
    )
    .expect(".claude.json");
    let base = format!("http://localhost:{port}");
    let stub = Stub::start(
        side.path(),
        json!([
            {"bash": format!("curl -s {base}/api/items")},
            {"text": "Empty.\nBUGATTI_LOG {tool_result}\nRESULT OK"},
            {"bash": format!("curl -s -X POST -H 'Content-Type: application/json' -d '{{\"name\":\"tea\"}}' {base}/api/items")},
            {"bash": format!("curl -s {base}/api/items")},
            {"text": "Listed.\nBUGATTI_LOG {tool_result}\nRESULT OK"},
        ]),
    );
    let (code, console) = start(&p, &bin, &stub, side.path());
    assert_eq!(code, Some(0), "{console}");
    let record = p.record_for("api.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Passed), "{record:?}");
    let steps = &record.steps;
    assert_eq!(logs(&steps[0]), r#"{"items": []}"#);
    assert_eq!(
        logs(&steps[1]),
        r#"{"items": [{"id": 1, "name": "tea"}]}"#,
        "curl really reached the app through the project's permission"
    );
    let server = &record.commands[0];
    assert_eq!(server.name, "server");
    assert_eq!(server.teardown, Some(TeardownState::Clean), "{server:?}");
    assert_eq!(claude_cwd(&record), root.display().to_string());
    assert!(
        stub.requests_text().contains(&base),
        "the base URL reached the model"
    );
}
