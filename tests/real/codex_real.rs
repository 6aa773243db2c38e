//! `supervisor start` with the `codex` provider, end to end: the real Codex CLI (as installed by
//! `.ci/run`, or `$BUGATTI_CODEX_BIN`) against the scripted Responses API stub on loopback
//! (tests/support/responses_stub.py). Skips loudly without the CLI.
//!
//! The fault cases assert their wall time only against the timeouts they configure.

use crate::common;
use crate::common::assert_exit;
use crate::common::records::*;

use crate::common::codex::{codex_bin, completed_mcp_calls, ResponsesStub};
use crate::common::{stderr, stdout, Project};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A project whose agent is Codex pointed at `stub`, with `extra` appended to `[provider]`.
fn project(stub: &ResponsesStub, extra: &str, steps: &[&str]) -> Project {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"codex\"\nagent_args = [{}]\nstep_timeout_secs = 120\n{extra}\n",
            stub.agent_args_toml()
        ),
    );
    let mut test = String::from("name = \"Codex\"\n");
    for step in steps {
        test.push_str(&format!("[[steps]]\ninstruction = {step:?}\n"));
    }
    p.write("codex.test.toml", &test);
    p
}

fn run(p: &Project, bin: &PathBuf) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CODEX_BIN", bin)
        .env("STUB_API_KEY", "dummy")
        .output()
        .expect("run supervisor");
    let took = started.elapsed();
    p.assert_nothing_survives();
    (out, took)
}

#[test]
fn three_steps_run_in_one_codex_thread_with_a_shell_call_each() {
    let Some(bin) = codex_bin("codex: three steps in one thread") else {
        return;
    };
    let side = tempfile::tempdir().expect("side dir");
    let stub = ResponsesStub::start(
        side.path(),
        json!([
            {"shell": "echo one-$BUGATTI_STEP_ID"},
            {"text": "Saw it.\nBUGATTI_LOG {tool_result}\nRESULT OK"},
            {"shell": "echo two"},
            {"text": "BUGATTI_LOG {tool_result}\nRESULT WARN: slow"},
            {"shell": "exit 3"},
            {"text": "The command failed.\nRESULT ERROR: exit 3", "tokens": [300, 30]},
        ]),
    );
    let p = project(&stub, "", &["Say one.", "Say two.", "Fail."]);
    let (out, _) = run(&p, &bin);
    assert_exit(&out, 1);
    let record = p.record_for("codex.test.toml");
    assert_eq!(record.identity.provider.as_str(), "codex");
    let steps = &record.steps;
    assert_eq!(steps[0].status, StepStatus::Ok, "{record:?}");
    assert_eq!(
        steps[0].logs[0], "one-1",
        "the shell tool really ran, with the step's BUGATTI_STEP_ID"
    );
    assert_eq!(steps[1].status, StepStatus::Warn);
    assert_eq!(steps[1].logs[0], "two");
    assert_eq!(steps[2].status, StepStatus::Error);
    assert_eq!(steps[2].message.as_deref(), Some("exit 3"));
    // Usage from turn.completed: two model responses and their tokens per step, and for the
    // step that passed (and is recorded) one more, the facts question (docs/replay.md).
    assert_eq!(steps[0].agent_turns, Some(3), "{:?}", steps[0]);
    assert_eq!(
        steps[2].usage.as_ref().and_then(|u| u.input_tokens),
        Some(400)
    );
    assert_eq!(record.input_tokens, 900, "the steps' own tokens, summed");
    // Codex reports tokens only; `-m gpt-5.5` has a built-in list price ($5 in, $30 out per
    // million): 900 input and 150 output tokens over the three steps and the facts question.
    let cost = record.cost_usd.expect("priced");
    assert!((cost - 0.0090).abs() < 1e-9, "{cost}");
    // One thread: every request carried the same conversation key, and Codex named it each time.
    let requests = stub.request_log();
    assert_eq!(
        requests.len(),
        7,
        "one request per scripted reply, and the facts question after the pass"
    );
    let keys: std::collections::BTreeSet<String> = requests
        .iter()
        .map(|r| r.body.prompt_cache_key.clone().unwrap_or_default())
        .collect();
    assert_eq!(keys.len(), 1, "one thread across steps: {keys:?}");
    let thread = keys.into_iter().next().unwrap_or_default();
    assert!(!thread.is_empty());
    assert_eq!(
        steps[2]
            .usage
            .as_ref()
            .and_then(|u| u.session_id.as_deref()),
        Some(thread.as_str())
    );
    // The bootstrap went in the first message only; later steps resumed with the step alone.
    let first_input = requests[0].body.input.to_string();
    let last_input = requests[6].body.input.to_string();
    assert!(first_input.contains("RESULT OK"), "bootstrap in step 1");
    assert_eq!(
        last_input.matches("RESULT WARN: <short reason>").count(),
        1,
        "the bootstrap was sent once, in the first message"
    );
    let run_dir = record.run_dir();
    let jsonl = std::fs::read_to_string(run_dir.join("transcripts/agent.jsonl")).expect("jsonl");
    // Three steps and the facts question after the first (the one that passed).
    assert_eq!(jsonl.matches("\"turn.completed\"").count(), 4);
    let log = std::fs::read_to_string(run_dir.join("transcripts/agent.log")).expect("log");
    assert!(log.contains("[exec] /bin/bash -c 'echo two'"), "{log}");
}

#[test]
fn an_api_silent_forever_fails_the_session_after_one_restart_naming_what_happened() {
    let Some(bin) = codex_bin("codex: silent twice") else {
        return;
    };
    let side = tempfile::tempdir().expect("side dir");
    let stub = ResponsesStub::start(side.path(), json!([{"hang": true}, {"hang": true}]));
    let limit = 4;
    let p = project(
        &stub,
        &format!("no_output_timeout_secs = {limit}"),
        &["Hang."],
    );
    let (out, took) = run(&p, &bin);
    assert_exit(&out, 3);
    let record = p.record_for("codex.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Error), "{record:?}");
    let error = record.error.as_deref().unwrap_or("");
    assert!(
        error.contains("made no progress for 4s") && error.contains("again after a restart"),
        "{error}"
    );
    assert_eq!(Some(record.agent_restarts.len()), Some(1));
    assert!(took < Duration::from_secs(limit * 2 + 30), "took {took:?}");
}

#[test]
fn an_api_that_errors_forever_is_a_clear_agent_error() {
    let Some(bin) = codex_bin("codex: API errors") else {
        return;
    };
    let side = tempfile::tempdir().expect("side dir");
    // Every attempt fails: Codex's own (none here) and ours, with backoff.
    let errors: Vec<Value> = (0..10).map(|_| json!({"status": 500})).collect();
    let stub = ResponsesStub::start(side.path(), Value::Array(errors));
    let limit = 5;
    let p = project(
        &stub,
        &format!("no_output_timeout_secs = {limit}"),
        &["Try."],
    );
    let (out, took) = run(&p, &bin);
    // The API failing is the agent's fault, never the app's: an error (exit 3), not a failure.
    assert_exit(&out, 3);
    let record = p.record_for("codex.test.toml");
    let step = &record.steps[0];
    assert_eq!(step.status, StepStatus::AgentError, "{record:?}");
    assert_eq!(
        step.agent_fault.as_ref().map(|f| f.kind.as_str()),
        Some("api_error"),
        "{record:?}"
    );
    assert!(
        step.message
            .as_deref()
            .unwrap_or("")
            .contains("the Codex turn failed: "),
        "{step:?}"
    );
    assert!(took < Duration::from_secs(limit + 30), "took {took:?}");
}

#[test]
fn codex_retrying_an_api_that_errors_forever_is_stopped_by_the_watchdog() {
    let Some(bin) = codex_bin("codex: API errors, Codex retrying") else {
        return;
    };
    let side = tempfile::tempdir().expect("side dir");
    let errors: Vec<Value> = (0..100).map(|_| json!({"status": 500})).collect();
    let stub = ResponsesStub::start(side.path(), Value::Array(errors));
    let p = Project::new();
    let limit = 6;
    // Codex's own policy: five retries with backoff, each announced ("Reconnecting… n/5"). Those
    // notices are not progress: the watchdog stops it, restarts it once, then gives up.
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"codex\"\nagent_args = [{}]\nstep_timeout_secs = 120\n\
             no_output_timeout_secs = {limit}\n",
            stub.agent_args_toml_retrying()
        ),
    );
    p.write(
        "codex.test.toml",
        "name = \"Codex\"\n[[steps]]\ninstruction = \"Try.\"\n",
    );
    let (out, took) = run(&p, &bin);
    assert_exit(&out, 3);
    let record = p.record_for("codex.test.toml");
    let error = record.error.as_deref().unwrap_or("");
    assert!(
        error.contains("made no progress for 6s") && error.contains("again after a restart"),
        "{error}"
    );
    let restarts = &record.agent_restarts;
    assert_eq!(restarts.len(), 1, "{record:?}");
    // What it was doing while it made no progress is named (a slow start on a loaded machine can
    // leave one of the two silences without a retry notice, not both).
    let said = format!("{error} {}", restarts[0].reason);
    assert!(said.contains("it last said: Reconnecting..."), "{said}");
    // Two silences and two starts: bounded by the configured limit, not by Codex's retries.
    assert!(took < Duration::from_secs(limit * 2 + 30), "took {took:?}");
}

#[test]
fn codex_drives_an_interactive_program_and_waits_for_the_servers_log_line_through_the_console() {
    let Some(bin) = codex_bin("codex: the agent console") else {
        return;
    };
    let side = tempfile::tempdir().expect("side dir");
    // Codex 0.169 defers MCP tools: the model searches for them first, then calls them in their
    // namespace. Each reply after a tool call expects what that call must have answered; a
    // console that did not work makes the stub say RESULT ERROR instead of RESULT OK.
    let console = "mcp__bugatti";
    let stub = ResponsesStub::start(
        side.path(),
        json!([
            {"tool_search": "bugatti console exec_command write_stdin wait_for_log"},
            {"expect": ["mcp__bugatti", "exec_command", "write_stdin", "wait_for_log"],
             // The prompt must be on the screen when the yield ends: 1 s left no margin for
             // bash starting in a PTY on a loaded CI machine (one such run failed).
             "tool": "exec_command", "namespace": console,
             "input": {"cmd": "read -p 'name? ' n; echo \"hello ${n^^}\"", "yield_time_ms": 3000}},
            {"expect": ["Process running with session ID", "Output:\nname? "],
             "tool": "write_stdin", "namespace": console,
             "input": {"session_id": "{session_id}", "chars": "bugatti\n", "yield_time_ms": 5000}},
            {"expect": ["Process exited with code 0", "hello BUGATTI"],
             "tool": "read_log", "namespace": console, "input": {"name": "app", "tail_lines": 1}},
            {"expect": ["Next offset: "],
             "tool": "exec_command", "namespace": console,
             "input": {"cmd": "curl -s '{url}'", "tty": false, "yield_time_ms": 5000}},
            {"expect": ["Process exited with code 0", "ordered 42"],
             "tool": "wait_for_log", "namespace": console,
             "input": {"name": "app", "pattern": "checkout hit order=\\d+",
                       "from_offset": "{next_offset}", "timeout_ms": 20000}},
            {"expect": ["Matched: yes", "checkout hit order=42"],
             "text": "The greeter said hello and the server logged it.\nRESULT OK"},
        ]),
    );
    // As the README configures Codex: model and provider in agent_args, Codex's own sandbox and
    // approval policy untouched (so the console's tools run only because the wiring approves
    // them), the console on by default.
    let p = Project::new();
    let app = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/console_app.py");
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"codex\"\nagent_args = [{}]\nstep_timeout_secs = 120\n\n\
             [ports]\nAPP_PORT = \"auto\"\n\n\
             [commands.app]\nkind = \"long_lived\"\ncmd = \"python3 {app} --port ${{APP_PORT}}\"\n\
             readiness_url = \"http://127.0.0.1:${{APP_PORT}}/health\"\n",
            stub.agent_args_toml_as_readme()
        ),
    );
    p.write(
        "console.test.toml",
        "name = \"Console\"\n[[steps]]\ninstruction = \"Answer the greeter's question, then place \
         order 42 at http://127.0.0.1:${APP_PORT}/checkout?order=42 and see the server log it.\"\n",
    );
    let (out, _) = run(&p, &bin);
    let record = p.record_for("console.test.toml");
    let run_dir = record.run_dir();
    let agent =
        std::fs::read_to_string(run_dir.join("transcripts/agent.jsonl")).unwrap_or_default();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}\n{record:#?}\n{agent}\n{}",
        stdout(&out),
        stderr(&out),
        stub.requests_text()
    );
    assert_eq!(record.steps[0].status, StepStatus::Ok, "{record:#?}");
    // Codex itself reported each call as an MCP call of the `bugatti` server that completed.
    let mcp_calls = completed_mcp_calls(&agent);
    let codex_tools: Vec<&str> = mcp_calls.iter().filter_map(|i| i.tool.as_deref()).collect();
    assert_eq!(
        codex_tools,
        [
            "exec_command",
            "write_stdin",
            "read_log",
            "exec_command",
            "wait_for_log"
        ],
        "{agent}"
    );
    assert!(
        mcp_calls
            .iter()
            .all(|i| i.server.as_deref() == Some("bugatti")
                && i.status.as_deref() == Some("completed")),
        "{mcp_calls:#?}"
    );
    // The readable transcript says which console tool was called and what it answered.
    let log = std::fs::read_to_string(run_dir.join("transcripts/agent.log")).expect("agent.log");
    assert!(
        log.contains("[mcp] bugatti.write_stdin {") && log.contains("hello BUGATTI"),
        "{log}"
    );
    // The console recorded the same calls, none an error, and kept each session's output.
    let calls: Vec<ConsoleCall> = common::read_jsonl(&run_dir.join("transcripts/console.jsonl"));
    let tools: Vec<&str> = calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, codex_tools, "{calls:#?}");
    assert!(calls.iter().all(|c| !c.is_error), "{calls:#?}");
    let logs: Vec<String> = std::fs::read_dir(run_dir.join("console"))
        .expect("console dir")
        .filter_map(|e| e.ok())
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    assert!(
        logs.iter().any(|l| l.contains("hello BUGATTI")),
        "the interactive session's output is kept: {logs:?}"
    );
    // The MCP tools were offered only after the search, as Codex 0.169 does it.
    let requests = stub.request_log();
    assert_eq!(
        requests.len(),
        8,
        "one request per scripted reply, and the facts question after the pass"
    );
    let first_tools = requests[0]
        .body
        .tools
        .as_ref()
        .map(|t| t.to_string())
        .unwrap_or_default();
    assert!(first_tools.contains("tool_search"), "{first_tools}");
}

#[test]
fn a_codex_whose_console_token_does_not_reach_it_stops_at_its_start_naming_the_console() {
    let Some(bin) = codex_bin("codex: console token lost") else {
        return;
    };
    let side = tempfile::tempdir().expect("side dir");
    let stub = ResponsesStub::start(side.path(), json!([{"text": "RESULT OK"}]));
    // A wrapper that loses the token on the way (as a user's own wrapper or env scrub might):
    // the console refuses Codex, and a required server stops it before any model request.
    let wrapper = side.path().join("codex");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nunset BUGATTI_MCP_TOKEN\nexec '{}' \"$@\"\n",
            bin.display()
        ),
    )
    .expect("wrapper");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let p = project(&stub, "", &["Anything."]);
    let (out, _) = run(&p, &wrapper);
    let record = p.record_for("codex.test.toml");
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}\n{}\n{record:#?}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(record.outcome, Some(RunOutcome::Error), "{record:#?}");
    assert!(
        record
            .error
            .as_deref()
            .unwrap_or("")
            .contains("agent console unavailable"),
        "{record:#?}"
    );
    let message = record.steps[0].message.as_deref().unwrap_or("");
    assert!(
        message.contains(
            "the agent console is unavailable: Codex could not connect to it (bugatti: \
             Environment variable BUGATTI_MCP_TOKEN for MCP server 'bugatti' is not set)"
        ),
        "{record:#?}"
    );
    // Not restarted: the same command line would fail the same way.
    assert_eq!(Some(record.agent_restarts.len()), Some(0), "{record:#?}");
    assert!(
        stub.request_log().is_empty(),
        "no step ran without the console"
    );
}

/// Needs no CLI: a Codex that is not there is refused before anything starts (exit 2), naming
/// it and the setting that names the binary.
#[test]
fn a_missing_codex_is_refused_before_anything_starts_naming_it() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"codex\"\n");
    p.write(
        "codex.test.toml",
        "name = \"Codex\"\n[[steps]]\ninstruction = \"x\"\n",
    );
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CODEX_BIN", "/nonexistent/bin/codex")
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{}\n{err}", stdout(&out));
    assert!(
        err.contains("/nonexistent/bin/codex")
            && err.contains("not found")
            && err.contains("BUGATTI_CODEX_BIN"),
        "{err}"
    );
    assert!(p.run_records().is_empty(), "no run began");
}

/// A user's own Codex setup, as `codex login` and a hand-written `~/.codex/config.toml` leave it:
/// the model provider (the stub) named in config.toml, an auth.json beside it.
fn user_codex_home(home: &std::path::Path, stub: &ResponsesStub) -> PathBuf {
    let codex = home.join(".codex");
    std::fs::create_dir_all(&codex).expect("~/.codex");
    std::fs::write(
        codex.join("config.toml"),
        format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"stub\"\n\n[model_providers.stub]\nname = \"stub\"\n\
             base_url = \"http://127.0.0.1:{}/v1\"\nwire_api = \"responses\"\nenv_key = \"STUB_API_KEY\"\n\
             supports_websockets = false\nrequest_max_retries = 0\nstream_max_retries = 0\n",
            stub.port
        ),
    )
    .expect("config.toml");
    std::fs::write(
        codex.join("auth.json"),
        "{\"auth_mode\": \"apikey\", \"OPENAI_API_KEY\": \"sk-not-a-real-key\"}\n",
    )
    .expect("auth.json");
    codex
}

#[test]
fn codex_uses_the_users_own_codex_setup_without_writing_to_it() {
    let Some(bin) = codex_bin("codex: the user's ~/.codex") else {
        return;
    };
    let side = tempfile::tempdir().expect("side dir");
    let stub = ResponsesStub::start(side.path(), json!([{"text": "Done.\nRESULT OK"}]));
    let home = tempfile::tempdir().expect("HOME");
    let codex = user_codex_home(home.path(), &stub);
    let before: Vec<(String, Vec<u8>)> = ["config.toml", "auth.json"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read(codex.join(f)).expect("read")))
        .collect();
    // As users write it: nothing about the model in bugatti's config, Codex set up in ~/.codex.
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"codex\"\nstep_timeout_secs = 60\n",
    );
    p.write(
        "codex.test.toml",
        "name = \"Codex\"\n[[steps]]\ninstruction = \"Say done.\"\n",
    );
    let out = p
        .supervisor()
        .arg("start")
        .env("HOME", home.path())
        .env_remove("CODEX_HOME")
        .env("BUGATTI_CODEX_BIN", &bin)
        .env("STUB_API_KEY", "dummy")
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}\nrequests: {}",
        stdout(&out),
        stderr(&out),
        stub.requests_text()
    );
    assert_eq!(
        stub.request_log().len(),
        1,
        "Codex reached the user's provider"
    );
    // Read, never written: the user's files are as they were, and no session state landed there.
    for (file, bytes) in &before {
        assert_eq!(
            &std::fs::read(codex.join(file)).expect("read"),
            bytes,
            "{file}"
        );
    }
    let mut left: Vec<String> = std::fs::read_dir(&codex)
        .expect("~/.codex")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    left.sort();
    assert_eq!(left, ["auth.json", "config.toml"]);

    // doctor says which home and login it found; $CODEX_HOME wins over ~/.codex.
    let doctor = p
        .supervisor()
        .arg("doctor")
        .env("HOME", home.path())
        .env_remove("CODEX_HOME")
        .env("BUGATTI_CODEX_BIN", &bin)
        .output()
        .expect("doctor");
    let text = stdout(&doctor);
    let line = text
        .lines()
        .find(|l| l.contains("codex home"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains(&codex.display().to_string())
            && line.contains("~/.codex")
            && line.contains("config.toml")
            && line.contains("auth.json (API key)"),
        "{line}"
    );
    assert!(!text.contains("sk-not-a-real-key"), "{text}");
    let elsewhere = tempfile::tempdir().expect("CODEX_HOME");
    let doctor = p
        .supervisor()
        .arg("doctor")
        .env("HOME", home.path())
        .env("CODEX_HOME", elsewhere.path())
        .env("BUGATTI_CODEX_BIN", &bin)
        .output()
        .expect("doctor");
    let text = stdout(&doctor);
    let line = text
        .lines()
        .find(|l| l.contains("codex home"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains(&elsewhere.path().display().to_string())
            && line.contains("$CODEX_HOME")
            && line.contains("no login"),
        "{line}"
    );
}

#[test]
fn codex_tokens_are_priced_and_max_cost_usd_stops_the_run() {
    let Some(bin) = codex_bin("codex: price_per_mtok and max_cost_usd") else {
        return;
    };
    let side = tempfile::tempdir().expect("side dir");
    // Each step: 300 input tokens (100 of them cached) and 30 output tokens.
    let stub = ResponsesStub::start(
        side.path(),
        json!([
            {"text": "RESULT OK", "tokens": [300, 30, 100]},
            {"text": "RESULT OK", "tokens": [300, 30, 100]},
            {"text": "RESULT OK", "tokens": [300, 30, 100]},
        ]),
    );
    // 200 × $10 + 100 × $1 + 30 × $100 per million = $0.0051 a step: the second crosses $0.01.
    let p = project(
        &stub,
        "max_cost_usd = 0.01\nprice_per_mtok = { input = 10.0, cached_input = 1.0, output = 100.0 }",
        &["One.", "Two.", "Three."],
    );
    let check = p.supervisor().arg("check").output().expect("check");
    assert!(
        stdout(&check).contains(
            "codex price:  input $10 / cached input $1 / output $100 per million tokens ([provider] price_per_mtok)"
        ),
        "{}",
        stdout(&check)
    );
    let (out, _) = run(&p, &bin);
    assert_exit(&out, 1);
    let record = p.record_for("codex.test.toml");
    let steps = &record.steps;
    assert_eq!(steps[0].status, StepStatus::Ok, "{record:?}");
    let first = steps[0].cost_usd.expect("step cost");
    assert!((first - 0.0051).abs() < 1e-9, "{first}");
    assert_eq!(steps[1].status, StepStatus::OverBudget, "{record:?}");
    assert_eq!(steps[2].status, StepStatus::NotRun, "{record:?}");
    let total = record.cost_usd.expect("run cost");
    assert!((total - 0.0102).abs() < 1e-9, "{total}");
    assert_eq!(
        stub.request_log().len(),
        2,
        "the third step never reached Codex"
    );
}

/// The README's Codex config as written (model and provider only, no sandbox flags): Codex's own
/// shell reaches the app on 127.0.0.1, because the supervisor lifts Codex's network-less default
/// sandbox. A sandbox the user chooses in agent_args is kept, and the agent's curl then fails.
#[test]
fn codex_configured_as_the_readme_shows_reaches_the_app_with_its_own_shell() {
    let Some(bin) = codex_bin("codex: the README's config reaches the app") else {
        return;
    };
    let app = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/console_app.py");
    for (sandbox, reached) in [("", true), (", \"--sandbox\", \"read-only\"", false)] {
        let side = tempfile::tempdir().expect("side dir");
        let stub = ResponsesStub::start(
            side.path(),
            json!([
                {"shell": "curl -s -o /dev/null -w 'status=%{http_code}' http://127.0.0.1:$APP_PORT/health"},
                {"expect": ["status=200"], "text": "The app answered.\nRESULT OK"},
            ]),
        );
        let p = Project::new();
        p.write(
            "bugatti.config.toml",
            &format!(
                "[provider]\nname = \"codex\"\nagent_args = [{}{sandbox}]\nstep_timeout_secs = 120\n\n\
                 [ports]\nAPP_PORT = \"auto\"\n\n\
                 [commands.app]\nkind = \"long_lived\"\ncmd = \"python3 {app} --port ${{APP_PORT}}\"\n\
                 readiness_url = \"http://127.0.0.1:${{APP_PORT}}/health\"\n",
                stub.agent_args_toml_as_readme()
            ),
        );
        p.write(
            "health.test.toml",
            "[[steps]]\ninstruction = \"Check that the app answers its health check.\"\n",
        );
        let (out, _) = run(&p, &bin);
        let record = p.record_for("health.test.toml");
        let run_dir = record.run_dir();
        let agent =
            std::fs::read_to_string(run_dir.join("transcripts/agent.jsonl")).unwrap_or_default();
        let expected = if reached { Some(0) } else { Some(1) };
        assert_eq!(
            out.status.code(),
            expected,
            "sandbox {sandbox:?}\n{}\n{record:#?}\n{agent}",
            stdout(&out)
        );
        // Codex itself ran the command (its own shell, not the console).
        assert!(
            agent.contains("\"type\":\"command_execution\""),
            "sandbox {sandbox:?}: {agent}"
        );
    }
}

/// docs/browser.md through the real Codex CLI: with `[browser]`, Codex gets Playwright MCP as server
/// `browser` (`-c mcp_servers.browser=…`) attached to the session's Chromium; it finds the tools,
/// opens the harness's page, reads its snapshot, clicks the button by the snapshot's ref and sees
/// the page change;
/// the step passes with the supervisor's screenshot as evidence. Skips, saying why, without
/// Chromium, Codex or Playwright MCP.
#[test]
fn codex_drives_the_sessions_browser_through_playwright_mcp() {
    let Some(bin) = codex_bin("codex: the session's browser") else {
        return;
    };
    if common::skip::chromium("codex: the session's browser").is_none() {
        return;
    }
    let Some(mcp) = common::skip::playwright_mcp("codex: the session's browser") else {
        return;
    };
    let side = tempfile::tempdir().expect("side dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let browser = "mcp__browser";
    let stub = ResponsesStub::start(
        side.path(),
        json!([
            {"tool_search": "browser navigate snapshot click", "retry_until": "browser_navigate"},
            {"expect": ["browser_navigate"], "tool": "browser_navigate", "namespace": browser,
             "input": {"url": format!("http://127.0.0.1:{port}/")}},
            {"expect": ["Page Title: Shop"], "tool": "browser_snapshot", "namespace": browser,
             "input": {}},
            {"expect": ["Add to basket"], "tool": "browser_click", "namespace": browser,
             "input": {"element": "Add to basket button", "target": "{ref:Add to basket}"}},
            {"tool": "browser_snapshot", "namespace": browser, "input": {}},
            {"expect": ["Basket: 1 item"], "text": "The basket says 1 item.\nRESULT OK"},
        ]),
    );
    let p = Project::new();
    p.write(
        "site/index.html",
        "<!doctype html><html><head><title>Shop</title><link rel=\"icon\" href=\"data:,\"></head><body>\
         <p id=\"state\">Basket empty</p>\
         <button onclick=\"document.getElementById('state').textContent = 'Basket: 1 item'\">Add to basket</button>\
         </body></html>\n",
    );
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"codex\"\nagent_args = [{}]\nstep_timeout_secs = 180\n\n\
             [ports]\nWEB_PORT = {port}\n\n\
             [commands.web]\nkind = \"long_lived\"\n\
             cmd = \"python3 -m http.server ${{WEB_PORT}} --bind 127.0.0.1 --directory site\"\n\
             readiness_url = \"http://127.0.0.1:${{WEB_PORT}}/\"\n\n[browser]\n",
            stub.agent_args_toml_as_readme()
        ),
    );
    p.write(
        "shop.test.toml",
        "[[steps]]\ninstruction = \"Open the shop, add an item to the basket and check it says 1 item.\"\n",
    );
    let path = format!(
        "{}:{}",
        mcp.parent().expect("bin dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CODEX_BIN", &bin)
        .env("STUB_API_KEY", "dummy")
        .env("PATH", path)
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let record = p.record_for("shop.test.toml");
    let run_dir = record.run_dir();
    let agent =
        std::fs::read_to_string(run_dir.join("transcripts/agent.jsonl")).unwrap_or_default();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}\n{agent}\n{}",
        stdout(&out),
        stderr(&out),
        stub.requests_text()
    );
    // Codex reported each browser call as an MCP call of server `browser` that completed.
    let calls = completed_mcp_calls(&agent);
    let tools: Vec<&str> = calls.iter().filter_map(|i| i.tool.as_deref()).collect();
    assert_eq!(
        tools,
        [
            "browser_navigate",
            "browser_snapshot",
            "browser_click",
            "browser_snapshot"
        ],
        "{agent}"
    );
    assert!(
        calls.iter().all(|i| i.server.as_deref() == Some("browser")),
        "{calls:#?}"
    );
    let evidence = format!("{:?}", record.steps[0].evidence);
    assert!(evidence.contains("screenshots/step-1-1.png"), "{record:#?}");
    assert!(run_dir.join("screenshots/step-1-1.png").is_file());
}

#[test]
fn max_turns_per_step_stops_a_codex_whose_every_turn_runs_a_long_command() {
    let Some(bin) = codex_bin("codex: max_turns_per_step with long commands") else {
        return;
    };
    // Each model turn starts a command that outlasts Codex's wait for it (it answers the model
    // "still running" and the model asks again): turns that complete no command still count.
    // Codex waits a second for each (not its default ten): the turns, not the wait, are tested.
    let side = tempfile::tempdir().expect("side dir");
    let script: Vec<Value> = (0..20)
        .map(|_| json!({"shell": "sleep 300", "yield_time_ms": 1000}))
        .collect();
    let stub = ResponsesStub::start(side.path(), Value::Array(script));
    let p = project(&stub, "max_turns_per_step = 3", &["Wait."]);
    let (out, took) = run(&p, &bin);
    assert_exit(&out, 1);
    let record = p.record_for("codex.test.toml");
    let step = &record.steps[0];
    assert_eq!(step.status, StepStatus::OverBudget, "{record:?}");
    assert_eq!(
        step.agent_turns,
        Some(4),
        "stopped at the first turn over the limit"
    );
    assert!(
        took < Duration::from_secs(60),
        "stopped by the turn limit, not the step timeout: {took:?}"
    );
}

/// Issue 51: the model asks the absent user a question (`request_user_input`). `codex exec`
/// answers the call itself ("unavailable in Default mode") and says so only on stderr; the step
/// ends as the agent fault `asked_user` at Codex's next event, never passing on the model's guess
/// and never waiting for a user.
#[test]
fn a_codex_model_asking_the_user_ends_the_step_as_asked_user() {
    let Some(bin) = codex_bin("codex: request_user_input") else {
        return;
    };
    let side = tempfile::tempdir().expect("side dir");
    let question = json!({"questions": [{
        "id": "port", "header": "Port", "question": "Which port does the app listen on?",
        "options": [{"label": "8080", "description": "the usual"},
                    {"label": "3000", "description": "node's"}]}]});
    let stub = ResponsesStub::start(
        side.path(),
        json!([
            {"tool": "request_user_input", "input": question},
            {"text": "No answer came; I will assume 8080.\nRESULT OK"},
        ]),
    );
    let p = project(&stub, "", &["Check the app's port."]);
    let (out, _) = run(&p, &bin);
    assert_exit(&out, 3);
    let record = p.record_for("codex.test.toml");
    let step = &record.steps[0];
    assert_eq!(step.status, StepStatus::AgentError, "{record:?}");
    assert_eq!(
        step.agent_fault.as_ref().map(|f| f.kind),
        Some(FaultKind::AskedUser),
        "{record:?}"
    );
    let message = step.message.as_deref().unwrap_or("");
    assert!(
        message.contains("asked the user a question (request_user_input)"),
        "{message}"
    );
}
