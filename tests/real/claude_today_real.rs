//! Claude Code as `npm install` gives it today (docs/providers.md, "When a reply ends", "The
//! CLI's own retries"; docs/replay.md, "The agent's directory"), the real CLI against the scripted
//! Messages API on loopback: a subagent the agent runs in the background holds the reply until it
//! reports; a `cd` one step keeps into the next is replayed where the agent's shell was; a dead key
//! or an overloaded API read from the CLI's own retries, as users have them (no
//! `CLAUDE_CODE_MAX_RETRIES`), is the agent's fault, never the app's; an MCP server the CLI
//! rejects is `cli_config`. Each runs against the CLI `$BUGATTI_CLAUDE_BIN` names (`.ci/run` runs
//! them against the oldest supported and the newest tested version). Skips loudly without the CLI.

use crate::common;
use crate::common::records::*;

use common::claude::{claude_bin, Stub};
use common::{stdout, Project};
use serde_json::{json, Value};
use std::path::Path;

/// The CLI's version, as `--version` prints it (`2.1.332 (Claude Code)`).
fn version(bin: &Path) -> String {
    let out = std::process::Command::new(bin)
        .arg("--version")
        .output()
        .expect("claude --version");
    stdout(&out)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Whether a version is at least `min` (`2.1.265`).
fn at_least(version: &str, min: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> { v.split('.').filter_map(|p| p.parse().ok()).collect() };
    parts(version) >= parts(min)
}

/// `supervisor start ARGS` in `p` against `stub`, the CLI at `bin`, the stub's client env.
fn start(
    p: &Project,
    bin: &Path,
    env: Vec<(String, String)>,
    args: &[&str],
) -> (std::process::Output, String) {
    let out = p
        .supervisor()
        .arg("start")
        .args(args)
        .env("BUGATTI_CLAUDE_BIN", bin)
        .envs(env)
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let said = format!("{}\n{}", stdout(&out), common::stderr(&out));
    (out, said)
}

/// A project whose app answers `/api` with `status` (and `/health` with 200).
fn app_project(status: u16) -> Project {
    let p = Project::new();
    p.write(
        "app.py",
        &format!(
            "import http.server, sys\n\
             class H(http.server.BaseHTTPRequestHandler):\n\
             \x20   def do_GET(self):\n\
             \x20       code = 200 if self.path == '/health' else {status}\n\
             \x20       self.send_response(code); self.send_header('Content-Length', '2'); self.end_headers(); self.wfile.write(b'ok')\n\
             \x20   def log_message(self, *a): pass\n\
             http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n"
        ),
    );
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"claude-code\"\nagent_args = [\"--allowedTools\", \"Bash\"]\n\
         step_timeout_secs = 90\nconsole = false\n\n[ports]\nAPP_PORT = \"auto\"\n\n\
         [commands.app]\nkind = \"long_lived\"\ncmd = \"python3 app.py ${APP_PORT}\"\n\
         readiness_url = \"http://127.0.0.1:${APP_PORT}/health\"\n",
    );
    p
}

/// The agent hands the check to a subagent (`[helper]`), which asks the app; the agent answers
/// from the helper's report. From 2.1.198 the subagent runs in the background: the first turn
/// ends (an interim `result`) before the helper reports. On 2.1.197 it runs in the foreground
/// and its report comes back as the tool's result: the interim answer is then skipped.
/// The agent's answer after the report is `verdict_after`, and only when the report holds
/// `heard` (else the stub answers `RESULT ERROR: expected …`).
fn helper_script(verdict_after: &str, heard: &str, second_step: Option<&str>) -> Value {
    let mut main = vec![
        json!({"tool": "Agent", "input": {"description": "check the endpoint",
               "prompt": "[helper] Check what GET /api answers.",
               "subagent_type": "general-purpose"}}),
        json!({"text": "A helper is checking the endpoint; I will wait for its report.",
               "skip_if_seen": "The endpoint answered"}),
        json!({"text": format!("The helper reports it.\n{verdict_after}"),
               "expect_in_request": [heard]}),
    ];
    if let Some(answer) = second_step {
        main.push(json!({"text": answer}));
    }
    json!({
        "main": main,
        "helper": [
            {"bash": "sleep 2; curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$APP_PORT/api"},
            {"text": "The endpoint answered {tool_result}."},
        ],
    })
}

#[test]
fn a_step_whose_helper_finds_a_500_fails_with_that_reason_not_at_the_interim_result() {
    let Some(bin) = claude_bin("claude_today_real background subagent") else {
        return;
    };
    let p = app_project(500);
    p.write(
        "t.test.toml",
        "name = \"T\"\n[[steps]]\ninstruction = \"Have a helper check GET /api.\"\n",
    );
    let side = tempfile::tempdir().expect("side dir");
    let stub = Stub::start(
        side.path(),
        helper_script(
            "RESULT ERROR: the endpoint answers 500",
            "The endpoint answered 500",
            None,
        ),
    );
    let (out, said) = start(
        &p,
        &bin,
        stub.client_env(&side.path().join("home")),
        &["--replay", "off"],
    );
    assert_eq!(out.status.code(), Some(1), "{said}");
    let record = p.record_for("t.test.toml");
    let step = &record.steps[0];
    assert_eq!(step.status, StepStatus::Error, "{step:?}\n{said}");
    let message = step.message.clone().unwrap_or_default();
    assert!(
        message == "the endpoint answers 500",
        "the helper's finding decides: {message}"
    );
}

#[test]
fn after_a_background_helper_the_next_step_gets_its_own_answer() {
    let Some(bin) = claude_bin("claude_today_real next step") else {
        return;
    };
    let p = app_project(200);
    p.write(
        "t.test.toml",
        "name = \"T\"\n[[steps]]\ninstruction = \"Have a helper check GET /api.\"\n\
         [[steps]]\ninstruction = \"Say the second step's answer.\"\n",
    );
    let side = tempfile::tempdir().expect("side dir");
    let stub = Stub::start(
        side.path(),
        helper_script(
            "RESULT OK",
            "The endpoint answered 200",
            Some("The second step's own answer.\nRESULT WARN: second step answered"),
        ),
    );
    let (out, said) = start(
        &p,
        &bin,
        stub.client_env(&side.path().join("home")),
        &["--replay", "off"],
    );
    let record = p.record_for("t.test.toml");
    let statuses: Vec<StepStatus> = record.steps.iter().map(|s| s.status).collect();
    assert_eq!(
        statuses,
        [StepStatus::Ok, StepStatus::Warn],
        "{:?}\n{said}",
        record.steps
    );
    assert_eq!(
        record.steps[1].message.as_deref(),
        Some("second step answered"),
        "{said}"
    );
    assert!(out.status.code().is_some(), "{said}");
}

#[test]
fn a_cd_kept_into_the_next_step_is_replayed_where_the_agents_shell_was() {
    let Some(bin) = claude_bin("claude_today_real cd then rm") else {
        return;
    };
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"claude-code\"\nagent_args = [\"--allowedTools\", \"Bash\"]\n\
         console = false\n",
    );
    p.write(
        "t.test.toml",
        "name = \"T\"\n[[steps]]\ninstruction = \"Go into sub.\"\n\
         [[steps]]\ninstruction = \"Remove victim.txt.\"\n",
    );
    let files = ["victim.txt", "sub/victim.txt"];
    let put_back = || {
        for f in files {
            p.write(f, "x\n");
        }
    };
    let present = || -> Vec<bool> { files.iter().map(|f| p.root().join(f).exists()).collect() };
    put_back();
    let side = tempfile::tempdir().expect("side dir");
    let home = side.path().join("home");
    let stub = Stub::start(
        side.path(),
        json!([
            {"bash": "cd sub"}, {"text": "In sub.\nRESULT OK"},
            {"bash": "rm -f victim.txt"}, {"text": "Removed.\nRESULT OK"},
        ]),
    );
    let (_, said) = start(&p, &bin, stub.client_env(&home), &[]);
    let by_agent = present();
    let expected = if at_least(&version(&bin), "2.1.265") {
        [true, false]
    } else {
        [false, true]
    };
    assert_eq!(by_agent, expected, "which file the agent removed\n{said}");

    put_back();
    drop(stub);
    std::fs::create_dir_all(side.path().join("replay")).expect("replay stub dir");
    let quiet = Stub::start(&side.path().join("replay"), json!([]));
    let (out, said) = start(&p, &bin, quiet.client_env(&home), &[]);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let record = p.newest_record();
    let modes: Vec<&str> = record
        .steps
        .iter()
        .map(|s| s.mode.map_or("-", |m| m.as_str()))
        .collect();
    assert_eq!(modes, ["replayed", "replayed"], "{said}");
    assert_eq!(
        present(),
        by_agent,
        "the replay removed another file\n{said}"
    );
    // The recording says which CLI made it (without that, it would be made anew).
    let recording = std::fs::read_to_string(p.root().join("bugatti.replay/t.replay.json"))
        .expect("the run recorded both steps");
    assert!(
        recording.contains(&format!("\"agent_version\": \"{}\"", version(&bin))),
        "{recording}"
    );
}

/// `tests` root tests of one step each at `-j jobs`, every model call answered `status`, the
/// CLI's own retries as users have them, a 60 s step timeout.
fn against(
    status: u16,
    tests: usize,
    jobs: &str,
    step_timeout_secs: u64,
) -> Option<(Project, std::process::Output, String)> {
    let bin = claude_bin("claude_today_real API errors")?;
    let side = tempfile::tempdir().expect("side dir");
    let replies: Vec<Value> = (0..400).map(|_| json!({"status": status})).collect();
    let stub = Stub::start(side.path(), Value::Array(replies));
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"claude-code\"\nagent_args = [\"--allowedTools\", \"Bash\"]\n\
             step_timeout_secs = {step_timeout_secs}\nconsole = false\n"
        ),
    );
    for i in 1..=tests {
        p.write(
            &format!("t{i}.test.toml"),
            &format!("name = \"T{i}\"\n[[steps]]\ninstruction = \"Check the page.\"\n"),
        );
    }
    let (out, said) = start(
        &p,
        &bin,
        stub.client_env_default_retries(&side.path().join("home")),
        &["-j", jobs],
    );
    Some((p, out, said))
}

#[test]
fn a_dead_key_ends_each_test_as_auth_at_the_first_retry_and_the_breaker_stops_the_suite() {
    let Some((p, out, said)) = against(401, 6, "2", 60) else {
        return;
    };
    assert_eq!(out.status.code(), Some(3), "{said}");
    let summary = p.suite_summary();
    assert!(
        !summary.not_run.is_empty(),
        "the breaker stopped the rest: {said}"
    );
    assert_eq!(summary.tests.len() + summary.not_run.len(), 6, "{said}");
    for record in p.run_records() {
        let step = &record.steps[0];
        assert_eq!(step.status, StepStatus::AgentError, "{step:?}");
        assert_eq!(
            step.agent_fault.as_ref().map(|f| f.kind.as_str()),
            Some("auth"),
            "{step:?}"
        );
        let message = step.message.clone().unwrap_or_default();
        assert!(
            !message.contains("timed out"),
            "by classification: {message}"
        );
        // Against the timeout the test configures: classified long before it.
        assert!(step.duration_ms.unwrap_or(u64::MAX) < 60_000, "{step:?}");
    }
    assert!(
        summary
            .not_run_reason
            .as_deref()
            .is_some_and(|r| r.starts_with("agent unavailable: auth")),
        "{said}"
    );
    assert!(!said.contains("new failure"), "{said}");
    assert!(!said.contains("FAILED "), "{said}");
}

#[test]
fn an_api_overloaded_on_every_call_ends_the_test_overloaded_within_its_step_timeout() {
    let Some((p, out, said)) = against(529, 1, "1", 20) else {
        return;
    };
    assert_eq!(out.status.code(), Some(3), "{said}");
    let record = p.record_for("t1.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Error), "{record:?}");
    let step = &record.steps[0];
    assert_eq!(step.status, StepStatus::AgentError, "{step:?}");
    assert_eq!(
        step.agent_fault.as_ref().map(|f| f.kind.as_str()),
        Some("overloaded"),
        "{step:?}"
    );
    assert!(said.contains("AGENT ERROR (overloaded)"), "{said}");
    assert!(!said.contains("new failure"), "{said}");
}

#[test]
fn an_mcp_server_the_cli_rejects_is_cli_config_before_the_first_agent_step() {
    let Some(bin) = claude_bin("claude_today_real rejected server") else {
        return;
    };
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"claude-code\"\nagent_args = [\"--allowedTools\", \"Bash\"]\n",
    );
    // A `url` with no `type`: Claude Code 2.1.2xx skips the entry and says so in `init`.
    p.write(
        ".mcp.json",
        r#"{"mcpServers": {"broken": {"url": "http://127.0.0.1:9/mcp"}}}"#,
    );
    p.write(
        "t.test.toml",
        "name = \"T\"\n[[steps]]\ninstruction = \"Check the page.\"\n",
    );
    let side = tempfile::tempdir().expect("side dir");
    let stub = Stub::start(side.path(), json!([{"text": "Checked.\nRESULT OK"}]));
    let (out, said) = start(&p, &bin, stub.client_env(&side.path().join("home")), &[]);
    let record = p.record_for("t.test.toml");
    let step = &record.steps[0];
    if !at_least(&version(&bin), "2.1.332") {
        // 2.1.197 drops the entry without a word: nothing to read, the step runs. (2.1.332, the
        // newest tested, lists it.)
        assert_eq!(step.status, StepStatus::Ok, "{step:?}\n{said}");
        return;
    }
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert_eq!(step.status, StepStatus::AgentError, "{step:?}");
    assert_eq!(
        step.agent_fault.as_ref().map(|f| f.kind.as_str()),
        Some("cli_config"),
        "{step:?}"
    );
    assert!(
        step.message
            .as_deref()
            .unwrap_or_default()
            .contains("broken"),
        "{step:?}"
    );
}
