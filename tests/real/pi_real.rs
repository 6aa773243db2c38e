//! The `pi` provider end to end through the real pi CLI (`@mariozechner/pi-coding-agent`,
//! installed by `.ci/run` into `.ci/node`, or named by `$BUGATTI_PI_BIN`), pointed by a custom
//! provider in its agent directory at the scripted Messages API on loopback
//! (tests/support/anthropic_stub.py): a project written as a Bugatti user writes it
//! (`[provider] name = "pi"`), run by the real `supervisor`. Skips loudly without the CLI (a
//! failure under `CI=true`).

use crate::common;
use crate::common::records::*;

use crate::common::scripted_api::LoggedRequest;
use common::pi::{client_env, pi1_bin, pi_bin};
use common::scripted_api::ScriptedApi;
use common::{stdout, Project};
use serde_json::{json, Value};
use std::path::Path;

/// The newest run.json of the project (each invocation here runs one test).
fn latest_record(p: &Project) -> RunRecord {
    p.newest_record()
}

/// One `supervisor start` against a fresh stub holding `script`; returns (exit code, console,
/// record, the requests the stub saw).
fn run(
    p: &Project,
    bin: &Path,
    side: &Path,
    name: &str,
    script: Value,
) -> (Option<i32>, String, RunRecord, Vec<LoggedRequest>) {
    let dir = side.join(name);
    std::fs::create_dir_all(&dir).expect("stub dir");
    let stub = ScriptedApi::start("anthropic_stub.py", "messages", &dir, script);
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_PI_BIN", bin)
        .envs(client_env(&side.join("pi-agent"), stub.port))
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let console = format!("{}\n{}", stdout(&out), common::stderr(&out));
    let requests = stub
        .logged_requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/v1/messages"))
        .collect();
    (out.status.code(), console, latest_record(p), requests)
}

fn project(extra_provider: &str) -> Project {
    let p = Project::new();
    let app = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/counter_app.py");
    p.write(
        "bugatti.config.toml",
        &format!(
            r#"
[provider]
name = "pi"
step_timeout_secs = 120
{extra_provider}

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
        "name = \"Counter\"\n\
         [[steps]]\ninstruction = \"Increment the counter once and check it says 1.\"\n\
         [[steps]]\ninstruction = \"Check the app's version file says version 1.\"\n",
    );
    p.write("version.txt", "version 1\n");
    p
}

fn text_of(request: &LoggedRequest) -> String {
    request.body.messages_text()
}

#[test]
fn pi_runs_two_steps_in_one_session_counts_tokens_and_its_bash_calls_replay_with_pi_0_73() {
    if let Some(bin) = pi_bin("pi_real") {
        pi_runs_two_steps_in_one_session_counts_tokens_and_its_bash_calls_replay(&bin);
    }
}

#[test]
fn pi_runs_two_steps_in_one_session_counts_tokens_and_its_bash_calls_replay_with_pi_1() {
    if let Some(bin) = pi1_bin("pi_real (pi 1.x)") {
        pi_runs_two_steps_in_one_session_counts_tokens_and_its_bash_calls_replay(&bin);
    }
}

fn pi_runs_two_steps_in_one_session_counts_tokens_and_its_bash_calls_replay(bin: &Path) {
    let p = project("");
    let side = tempfile::tempdir().expect("side dir");
    let script = json!([
        {"bash": "curl -s -X POST http://127.0.0.1:$APP_PORT/inc; echo; echo marker-step-one"},
        {"text": "The counter says {tool_result}\nRESULT OK"},
        // The facts question after step 1, in the same pi session; step 2's is answered with none.
        {"facts": ["1 contains \"marker-step-one\""]},
        {"bash": "cat version.txt"},
        {"text": "It says {tool_result}.\nRESULT OK"},
    ]);

    // 1. The agent passes both steps in one pi session; tokens and cost are counted.
    let (code, console, record, requests) = run(&p, bin, side.path(), "first", script);
    assert_eq!(code, Some(0), "{console}\n{record:?}");
    assert_eq!(record.identity.provider.as_str(), "pi", "{record:?}");
    assert_eq!(
        record.statuses(),
        [StepStatus::Ok, StepStatus::Ok],
        "{record:?}"
    );
    assert_eq!(
        requests.len(),
        6,
        "two model calls a step and the facts question after each: {requests:?}"
    );
    assert!(
        text_of(&requests[2]).contains("BUGATTI_FACT N contains"),
        "the facts question follows step 1 in its session: {}",
        text_of(&requests[2])
    );
    assert_eq!(
        record.steps[0].replay_facts,
        ["1 contains \"marker-step-one\""],
        "{record:?}"
    );
    let step_two = text_of(&requests[3]);
    assert!(
        step_two.contains("marker-step-one") && step_two.contains("Bugatti step 1"),
        "the second step's request carries the first step's messages: {step_two}"
    );
    assert!(
        text_of(&requests[0]).contains("Bugatti step 1")
            && !text_of(&requests[0]).contains("Bugatti step 2"),
    );
    let system = requests[0].body.system.to_string();
    assert!(
        system.contains("RESULT CONTRACT"),
        "the bootstrap is pi's system prompt: {system}"
    );
    assert!(record.input_tokens > 0, "{record:?}");
    assert!(record.output_tokens > 0, "{record:?}");
    assert!(record.cost_usd.unwrap_or(0.0) > 0.0, "{record:?}");
    let run_dir = record.run_dir();
    let sessions: Vec<_> = std::fs::read_dir(
        std::path::PathBuf::from(record.workspace.as_deref().unwrap_or_default())
            .join(".pi-sessions"),
    )
    .map(|d| d.filter_map(|e| e.ok()).collect())
    .unwrap_or_default();
    assert!(
        sessions.len() <= 1,
        "one pi session for the test: {sessions:?}"
    );
    let log = std::fs::read_to_string(run_dir.join("transcripts/agent.log")).expect("agent.log");
    assert!(log.contains("[tool_use bash] cat version.txt"), "{log}");
    // The recording holds both bash calls.
    let recording = std::fs::read_to_string(p.root().join("bugatti.replay/counter.replay.json"))
        .expect("a recording was written");
    assert!(
        recording.contains("cat version.txt") && recording.contains("marker-step-one"),
        "{recording}"
    );
    assert!(record.steps[0].recorded, "{record:?}");
    assert!(record.steps[1].recorded, "{record:?}");

    // 2. The second run replays both steps: no model request, pi never starts.
    let (code, console, record, requests) = run(&p, bin, side.path(), "second", json!([]));
    assert_eq!(code, Some(0), "{console}\n{record:?}");
    assert_eq!(requests.len(), 0, "no model request on a replayed run");
    let modes: Vec<_> = record.steps.iter().map(|s| s.mode).collect();
    assert_eq!(
        modes,
        [Some(StepMode::Replayed), Some(StepMode::Replayed)],
        "{record:?}"
    );
}

#[test]
fn a_hung_pi_is_stopped_by_the_watchdog_and_the_step_retried_on_its_session_with_pi_0_73() {
    if let Some(bin) = pi_bin("pi_real") {
        a_hung_pi_is_stopped_by_the_watchdog_and_the_step_retried_on_its_session(&bin);
    }
}

#[test]
fn a_hung_pi_is_stopped_by_the_watchdog_and_the_step_retried_on_its_session_with_pi_1() {
    if let Some(bin) = pi1_bin("pi_real (pi 1.x)") {
        a_hung_pi_is_stopped_by_the_watchdog_and_the_step_retried_on_its_session(&bin);
    }
}

fn a_hung_pi_is_stopped_by_the_watchdog_and_the_step_retried_on_its_session(bin: &Path) {
    let p = project("no_output_timeout_secs = 10\n[replay]\nmode = \"off\"");
    let side = tempfile::tempdir().expect("side dir");
    let script = json!([
        {"bash": "echo first-call"},
        {"text": "RESULT OK"},
        // Step 2: the model stream stops mid-message; pi never reaches agent_end.
        {"text": "I am thinking about it", "hang": true},
        {"bash": "cat version.txt"},
        {"text": "It says {tool_result}.\nRESULT OK"},
    ]);
    let started = std::time::Instant::now();
    let (code, console, record, requests) = run(&p, bin, side.path(), "hung", script);
    assert_eq!(code, Some(0), "{console}\n{record:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(90),
        "no hang"
    );
    assert_eq!(record.steps[1].status, StepStatus::Ok, "{record:?}");
    let restarts = &record.agent_restarts;
    assert_eq!(restarts.len(), 1, "{record:?}");
    assert!(
        restarts[0].reason.contains("no_output_timeout_secs"),
        "{restarts:?}"
    );
    // The retried step continued the same pi session: its request carries step 1's messages.
    let last = text_of(requests.last().expect("requests"));
    assert!(
        last.contains("first-call") && last.contains("Bugatti step 2"),
        "{last}"
    );
}

/// Bugatti #48: a pi that lingers after `agent_end` (here: its output stays open) is not waited
/// for; the reply ended at `agent_end`.
#[test]
fn a_pi_that_lingers_after_agent_end_is_not_waited_for_with_pi_0_73() {
    if let Some(bin) = pi_bin("pi_real") {
        a_pi_that_lingers_after_agent_end_is_not_waited_for(&bin);
    }
}

#[test]
fn a_pi_that_lingers_after_agent_end_is_not_waited_for_with_pi_1() {
    if let Some(bin) = pi1_bin("pi_real (pi 1.x)") {
        a_pi_that_lingers_after_agent_end_is_not_waited_for(&bin);
    }
}

fn a_pi_that_lingers_after_agent_end_is_not_waited_for(bin: &Path) {
    let p = project("[replay]\nmode = \"off\"");
    p.write(
        "counter.test.toml",
        "name = \"Counter\"\n[[steps]]\ninstruction = \"Say hello.\"\n",
    );
    let side = tempfile::tempdir().expect("side dir");
    let lingering = side.path().join("lingering-pi");
    std::fs::write(
        &lingering,
        // A pi session lingers; `--version` (asked before the run) answers as pi's does.
        format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && exec '{0}' \"$@\"\n'{0}' \"$@\"\nexec sleep 600\n",
            bin.display()
        ),
    )
    .expect("wrapper");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&lingering, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let started = std::time::Instant::now();
    let (code, console, record, _) = run(
        &p,
        &lingering,
        side.path(),
        "linger",
        json!([{"text": "Hello.\nRESULT OK"}]),
    );
    assert_eq!(code, Some(0), "{console}\n{record:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "the step ended at agent_end, not when pi's process did"
    );
}

/// A one-step project with the console on (the default) and `--tools read,bash` in `agent_args`,
/// as docs/providers.md's pi example writes them.
fn console_project() -> Project {
    let p = project("agent_args = [\"--tools\", \"read,bash\"]\n[replay]\nmode = \"off\"");
    p.write(
        "counter.test.toml",
        "name = \"Counter\"\n[[steps]]\ninstruction = \"Ask the console for the answer.\"\n",
    );
    p
}

/// The names of the tools a model request declared.
fn declared_tools(request: &LoggedRequest) -> Vec<String> {
    request.body.tool_names()
}

/// Issue 40: pi 1.x takes MCP servers, so the console reaches it as it reaches Claude Code and
/// Codex: its tools are declared to the model (the user's `--tools` allowlist extended), a call
/// of `mcp__bugatti__exec_command` runs in the console and its answer comes back to the model.
#[test]
fn the_console_reaches_pi_1_as_mcp_tools() {
    let Some(bin) = pi1_bin("pi_real (pi 1.x console)") else {
        return;
    };
    let p = console_project();
    let side = tempfile::tempdir().expect("side dir");
    let script = json!([
        {"tool": "mcp__bugatti__exec_command",
         "input": {"cmd": "echo console-$((40+2))", "tty": false, "yield_time_ms": 5000}},
        {"expect": ["console-42", "Process exited with code 0"],
         "text": "The console said: {tool_result}\nRESULT OK"},
    ]);
    let (code, console, record, requests) = run(&p, &bin, side.path(), "console", script);
    assert_eq!(code, Some(0), "{console}\n{record:?}\n{requests:#?}");
    let tools = declared_tools(&requests[0]);
    assert!(
        tools.iter().any(|t| t == "mcp__bugatti__exec_command")
            && tools.iter().any(|t| t == "bash"),
        "{tools:?}"
    );
    let run_dir = record.run_dir();
    // console.jsonl: the call reached the console.
    let calls: Vec<ConsoleCall> = common::read_jsonl(&run_dir.join("transcripts/console.jsonl"));
    let names: Vec<&str> = calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(names, ["exec_command"], "{calls:#?}");
    assert!(!calls[0].is_error, "{calls:#?}");
    // The extension is private and holds no token: pi reads it from its environment.
    let extension = run_dir.join("agent/pi-mcp.js");
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(&extension).expect("the extension");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let text = std::fs::read_to_string(&extension).expect("read");
    assert!(
        text.contains("process.env[\"BUGATTI_MCP_TOKEN\"]"),
        "{text}"
    );
}

/// pi 0.73 takes no MCP servers: the same project runs, the extension does nothing there and the
/// extended `--tools` declares no tool pi does not have.
#[test]
fn a_console_project_still_runs_with_pi_0_73() {
    let Some(bin) = pi_bin("pi_real (pi 0.73 console)") else {
        return;
    };
    let p = console_project();
    let side = tempfile::tempdir().expect("side dir");
    let script = json!([{"text": "Nothing to ask.\nRESULT OK"}]);
    let (code, console, record, requests) = run(&p, &bin, side.path(), "console073", script);
    assert_eq!(code, Some(0), "{console}\n{record:?}\n{requests:#?}");
    let tools = declared_tools(&requests[0]);
    assert_eq!(tools, ["read", "bash"], "{tools:?}");
}
