//! The `claude-code` provider against the real Claude Code CLI (installed by `.ci/run` into
//! `.ci/node`, or named by `$BUGATTI_CLAUDE_BIN`), talking to a scripted Anthropic Messages API
//! stub on loopback (tests/support/anthropic_stub.py) that streams SSE and replays a script of
//! turns, including a real `Bash` tool call against a real HTTP app.
//! Without the CLI, each test prints why it is skipped and returns (fails under `CI=true`).

use crate::common;
use crate::common::assert_exit;
use crate::common::rig::{step, support_dir, Rig};
use bugatti::model::outcome::{StepStatus, TeardownState};
use bugatti::process::group;
use bugatti::providers::{self, AgentContext, AgentSpec, Provider, ProviderKind, StepRequest};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The CLI `.ci/run` installs (or `$BUGATTI_CLAUDE_BIN`), or `None` after a loud skip.
fn claude_bin() -> Option<PathBuf> {
    crate::common::claude::claude_bin("real Claude Code test")
}

/// A child process the test owns, killed (group and all) when dropped.
struct Owned(Child);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = group::signal_group(self.0.id() as i32, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

fn spawn_owned(command: &mut Command, rig: &Rig) -> Owned {
    use std::os::unix::process::CommandExt;
    let child = command
        .env("BUGATTI_RUN_ID", rig.facts.run_id.as_str())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("spawn helper");
    Owned(child)
}

/// Reads `PORT <n>` from the child's first stdout line.
fn read_port(child: &mut Owned) -> u16 {
    let stdout = child.0.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("port line");
    line.trim()
        .strip_prefix("PORT ")
        .expect("PORT n")
        .parse()
        .expect("port number")
}

/// The stub, started with a script; returns it, its port and the path of its request log.
fn start_stub(rig: &Rig, script: serde_json::Value) -> (Owned, u16, PathBuf) {
    let script_path = rig.dir.path().join("script.json");
    std::fs::write(&script_path, script.to_string()).expect("script");
    let requests = rig.dir.path().join("requests.jsonl");
    let mut stub = spawn_owned(
        Command::new("python3")
            .arg(support_dir().join("anthropic_stub.py"))
            .arg(&script_path)
            .arg(&requests),
        rig,
    );
    let port = read_port(&mut stub);
    (stub, port, requests)
}

/// A real app: a static HTTP server serving token.txt.
fn start_app(rig: &Rig, token: &str) -> (Owned, u16) {
    let site = rig.dir.path().join("site");
    std::fs::create_dir_all(&site).expect("site");
    std::fs::write(site.join("token.txt"), token).expect("token");
    let script = "import http.server,functools,sys\n\
        h=functools.partial(http.server.SimpleHTTPRequestHandler,directory=sys.argv[1])\n\
        s=http.server.ThreadingHTTPServer(('127.0.0.1',0),h)\n\
        print('PORT',s.server_address[1],flush=True)\n\
        s.serve_forever()";
    let mut app = spawn_owned(
        Command::new("python3")
            .args(["-c", script])
            .arg(&site)
            .stderr(Stdio::null()),
        rig,
    );
    let port = read_port(&mut app);
    (app, port)
}

fn claude_spec(rig: &mut Rig, bin: PathBuf, stub_port: u16) -> AgentSpec {
    let home = rig.dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    rig.facts.env.extend(
        [
            ("PATH", path.as_str()),
            ("HOME", home.to_str().expect("utf8 home")),
            (
                "ANTHROPIC_BASE_URL",
                &format!("http://127.0.0.1:{stub_port}"),
            ),
            ("ANTHROPIC_API_KEY", "dummy"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("CLAUDE_CODE_MAX_RETRIES", "1"),
            ("API_TIMEOUT_MS", "120000"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let mut spec = AgentSpec::new(ProviderKind::ClaudeCode);
    spec.cwd = rig.facts.project_root.clone();
    spec.program = bin;
    // As root, bypass modes refuse to run; allowing the Bash tool is what works.
    spec.agent_args = vec!["--allowedTools".into(), "Bash".into()];
    spec.inherit_env = false;
    spec.stop_timeout = Duration::from_secs(3);
    spec
}

fn create(rig: &Rig, spec: AgentSpec) -> Box<dyn Provider> {
    providers::create(AgentContext {
        spec,
        facts: rig.facts.clone(),
        events: rig.events.clone(),
    })
}

async fn run(p: &mut Box<dyn Provider>, request: StepRequest) -> providers::StepVerdict {
    let (_keep, cancel) = tokio::sync::watch::channel(false);
    p.run_step(&request, cancel).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_step_session_with_a_real_bash_tool_call() {
    let Some(bin) = claude_bin() else { return };
    let mut rig = Rig::new(&[]);
    let token = format!("token-{}", uuid::Uuid::new_v4());
    let (app, app_port) = start_app(&rig, &token);
    let fetch = format!(
        "cd \"$BUGATTI_WORKDIR\" && printf %s \"$OLDPWD\" > pwd.txt; printf %s \"$BUGATTI_RUN_ID\" > run_id.txt; \
         curl -s http://127.0.0.1:{app_port}/token.txt > fetched.txt; cat fetched.txt"
    );
    let (stub, stub_port, requests) = start_stub(
        &rig,
        json!([
            {"bash": fetch},
            {"text": "The app answered.\nBUGATTI_LOG fetched {tool_result}\nRESULT OK"},
            {"text": "The list renders, slowly.\nRESULT WARN: the page is slow"},
            {"text": "RESULT ERROR: early guess\nLooking again.\nRESULT OK"},
        ]),
    );
    let mut spec = claude_spec(&mut rig, bin, stub_port);
    spec.base_url = Some(format!("http://127.0.0.1:{app_port}"));
    spec.extra_system_prompt = Some("Project note: prefer curl.".into());
    let mut p = create(&rig, spec);
    p.start().await.expect("claude starts");
    p.bootstrap().await.expect("bootstrap");
    let timeout = Duration::from_secs(120);

    let first = run(&mut p, step(1, "Fetch the token from the app.", timeout)).await;
    assert_eq!(first.status, StepStatus::Ok, "{first:?}");
    assert_eq!(first.logs, vec![format!("fetched {token}")]);
    let fetched = std::fs::read_to_string(rig.facts.workdir.join("fetched.txt"))
        .expect("the Bash tool wrote to the workspace");
    assert_eq!(fetched, token);
    let cwd = std::fs::read_to_string(rig.facts.workdir.join("pwd.txt")).expect("pwd.txt");
    assert_eq!(
        std::path::Path::new(&cwd),
        rig.facts.project_root,
        "Claude Code runs in the agent's cwd"
    );
    // The tool ran with the session's environment (so teardown can find what it starts).
    let seen_run_id =
        std::fs::read_to_string(rig.facts.workdir.join("run_id.txt")).expect("run_id.txt");
    assert_eq!(seen_run_id, rig.facts.run_id.as_str());
    let usage = first.usage.clone().expect("usage recorded");
    assert!(usage.total_cost_usd > 0.0, "{usage:?}");
    assert!(
        usage.num_turns >= 2 && !usage.session_id.is_empty(),
        "{usage:?}"
    );

    let second = run(&mut p, step(2, "Check the list.", timeout)).await;
    assert_eq!(
        (second.status, second.message.as_str()),
        (StepStatus::Warn, "the page is slow")
    );
    assert_eq!(
        second.usage.as_ref().map(|u| u.session_id.clone()),
        Some(usage.session_id.clone()),
        "one conversation"
    );
    // Claude Code reports the conversation's running total; each step gets its own share.
    let second_usage = second.usage.clone().expect("usage");
    assert!(second_usage.total_cost_usd > usage.total_cost_usd);
    assert!(second_usage.step_cost_usd > 0.0);
    assert!(
        (usage.total_cost_usd + second_usage.step_cost_usd - second_usage.total_cost_usd).abs()
            < 1e-9
    );
    assert_eq!(usage.step_cost_usd, usage.total_cost_usd);
    let third = run(&mut p, step(3, "Check again.", timeout)).await;
    assert_eq!(
        third.status,
        StepStatus::Ok,
        "the last marker wins: {third:?}"
    );

    assert_eq!(p.close().await, TeardownState::Clean);
    // What Claude Code sent the API: our bootstrap as system prompt, our step messages.
    let sent = std::fs::read_to_string(&requests).expect("requests");
    assert!(
        sent.contains("RESULT WARN: <short reason>") && sent.contains("Project note: prefer curl.")
    );
    assert!(sent.contains(&format!("Bugatti step 2 (run {}", rig.facts.run_id)));
    assert!(sent.contains(&format!("http://127.0.0.1:{app_port}")));
    let jsonl = String::from_utf8_lossy(&rig.transcript("agent.jsonl")).into_owned();
    assert_eq!(
        jsonl
            .lines()
            .filter(|l| l.contains("\"type\":\"result\""))
            .count(),
        3
    );
    let log = String::from_utf8_lossy(&rig.transcript("agent.log")).into_owned();
    assert!(
        log.contains("[tool_use Bash] cd ") && log.contains(&format!("[tool_result] {token}")),
        "{log}"
    );
    drop(stub);
    drop(app);
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_never_finishes_times_out_and_the_agent_is_stopped() {
    let Some(bin) = claude_bin() else { return };
    let mut rig = Rig::new(&[]);
    let (stub, stub_port, _) =
        start_stub(&rig, json!([{"text": "I will never finish", "hang": true}]));
    let spec = claude_spec(&mut rig, bin, stub_port);
    let mut p = create(&rig, spec);
    p.start().await.expect("claude starts");
    p.bootstrap().await.expect("bootstrap");
    let v = run(&mut p, step(1, "Do something.", Duration::from_secs(8))).await;
    assert_eq!(v.status, StepStatus::Timeout, "{v:?}");
    rig.assert_agent_stopped();
    let state = p.close().await;
    assert!(
        matches!(state, TeardownState::Clean | TeardownState::Killed),
        "{state:?}"
    );
    drop(stub);
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_broken_mid_turn_is_an_agent_error_step() {
    let Some(bin) = claude_bin() else { return };
    let mut rig = Rig::new(&[]);
    let (stub, stub_port, _) = start_stub(
        &rig,
        json!([
            {"text": "half a reply then", "break": true},
            {"text": "again", "break": true},
            {"text": "and again", "break": true},
            {"text": "and again", "break": true},
            {"text": "and again", "break": true},
            {"text": "and again", "break": true},
        ]),
    );
    let spec = claude_spec(&mut rig, bin, stub_port);
    let mut p = create(&rig, spec);
    p.start().await.expect("claude starts");
    p.bootstrap().await.expect("bootstrap");
    let v = run(&mut p, step(1, "Do something.", Duration::from_secs(120))).await;
    // The API connection lost, as Claude Code reports it: the agent's fault, not the app's.
    assert_eq!(v.status, StepStatus::AgentError, "{v:?}");
    assert_eq!(
        v.agent_fault,
        Some(bugatti::model::agent_fault::FaultKind::ApiError)
    );
    assert!(
        v.message.contains("Claude Code turn failed"),
        "{}",
        v.message
    );
    assert!(v.usage.is_some());
    p.close().await;
    drop(stub);
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_command_still_running_at_timeout_is_killed() {
    let Some(bin) = claude_bin() else { return };
    let mut rig = Rig::new(&[]);
    // Not a bare `sleep 300`: Claude Code 2.1.332 refuses a command that starts with a long
    // sleep ("Blocked: sleep 300 followed by …") before running it.
    let (stub, stub_port, _) = start_stub(
        &rig,
        json!([{"bash": "python3 -c 'import time; time.sleep(300)'; echo done"}]),
    );
    let spec = claude_spec(&mut rig, bin, stub_port);
    let mut p = create(&rig, spec);
    p.start().await.expect("claude starts");
    p.bootstrap().await.expect("bootstrap");
    let v = run(
        &mut p,
        step(1, "Wait a long time.", Duration::from_secs(10)),
    )
    .await;
    assert_eq!(v.status, StepStatus::Timeout, "{v:?}");
    p.close().await;
    drop(stub);
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_a_startup_error_naming_the_command_line() {
    let Some(bin) = claude_bin() else { return };
    let mut rig = Rig::new(&[]);
    let spec = {
        let mut s = claude_spec(&mut rig, bin, 9);
        s.agent_args = vec!["--no-such-flag".into()];
        s.startup_grace = Duration::from_secs(60);
        s
    };
    let mut p = create(&rig, spec);
    let err = p.start().await.expect_err("bad flag");
    let text = err.to_string();
    assert!(
        text.contains("--no-such-flag") && text.contains("exit code 1"),
        "{text}"
    );
    p.close().await;
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_process_that_escaped_is_found_and_killed_at_close() {
    let Some(bin) = claude_bin() else { return };
    let mut rig = Rig::new(&[]);
    let (stub, stub_port, _) = start_stub(
        &rig,
        json!([
            {"bash": "setsid sh -c 'echo $$ > escaped.pid; exec sleep 300' > /dev/null 2>&1 < /dev/null & \
                      while [ ! -s escaped.pid ]; do sleep 0.05; done; echo started"},
            {"text": "Started it.\nRESULT OK"},
        ]),
    );
    let spec = claude_spec(&mut rig, bin, stub_port);
    let mut p = create(&rig, spec);
    p.start().await.expect("claude starts");
    p.bootstrap().await.expect("bootstrap");
    let v = run(
        &mut p,
        step(1, "Start a background job.", Duration::from_secs(120)),
    )
    .await;
    assert_eq!(v.status, StepStatus::Ok, "{v:?}");
    let escaped =
        group::live_processes_with_env(providers::AGENT_MARKER_ENV, rig.facts.run_id.as_str());
    assert!(
        !escaped.is_empty(),
        "the background sleep runs until teardown"
    );
    assert_eq!(p.close().await, TeardownState::Leaked);
    drop(stub);
    rig.assert_no_survivors();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_agent_hits_the_no_output_limit() {
    let Some(bin) = claude_bin() else { return };
    let mut rig = Rig::new(&[]);
    let (stub, stub_port, _) = start_stub(&rig, json!([{"text": "thinking", "hang": true}]));
    let mut spec = claude_spec(&mut rig, bin, stub_port);
    spec.no_output_timeout = Some(Duration::from_secs(4));
    let mut p = create(&rig, spec);
    p.start().await.expect("claude starts");
    p.bootstrap().await.expect("bootstrap");
    let v = run(&mut p, step(1, "Do something.", Duration::from_secs(300))).await;
    assert_eq!(v.status, StepStatus::Timeout, "{v:?}");
    assert!(
        v.message
            .contains("made no progress for 4s (no_output_timeout_secs)"),
        "{}",
        v.message
    );
    assert!(
        matches!(
            v.fault,
            Some(bugatti::providers::AgentFault::Silent { secs: 4, .. })
        ),
        "the watchdog's finding, for a restart: {:?}",
        v.fault
    );
    rig.assert_agent_stopped();
    p.close().await;
    drop(stub);
    rig.assert_no_survivors();
}

/// Claude Code as a user first configures it, with no tools allowed: its Bash call is refused
/// (non-interactive, nobody to approve it) and the step's message names the refusal and the fix,
/// whatever the model says next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_tool_is_named_on_the_step() {
    let Some(bin) = claude_bin() else { return };
    let mut rig = Rig::new(&[]);
    let (stub, stub_port, _) = start_stub(
        &rig,
        json!([
            {"bash": "echo checked > checked.txt"},
            {"bash": "echo again > checked.txt"},
            {"text": "I could not check the page.\nRESULT ERROR: the check did not run"},
        ]),
    );
    let mut spec = claude_spec(&mut rig, bin, stub_port);
    spec.agent_args = Vec::new();
    let mut p = create(&rig, spec);
    p.start().await.expect("claude starts");
    p.bootstrap().await.expect("bootstrap");
    let v = run(&mut p, step(1, "Check the page.", Duration::from_secs(120))).await;
    assert_eq!(v.status, StepStatus::Error, "{v:?}");
    assert!(
        v.message
            .starts_with("the check did not run (Claude Code refused to run Bash (2×)")
            && v.message.contains("--allowedTools"),
        "{}",
        v.message
    );
    assert!(
        !rig.facts.project_root.join("checked.txt").exists(),
        "the refused command did not run"
    );
    p.close().await;
    drop(stub);
    rig.assert_no_survivors();
}

/// Needs no CLI: a missing binary is a startup error naming the command line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_claude_binary_is_a_startup_error() {
    let rig = Rig::new(&[]);
    let mut spec = AgentSpec::new(ProviderKind::ClaudeCode);
    spec.program = PathBuf::from("/nonexistent/bin/claude");
    spec.agent_args = vec!["--model".into(), "sonnet".into()];
    let mut p = create(&rig, spec);
    let err = p.start().await.expect_err("missing binary");
    let text = err.to_string();
    assert!(
        text.contains("/nonexistent/bin/claude -p --input-format stream-json")
            && text.contains("--model sonnet"),
        "{text}"
    );
    p.close().await;
    rig.assert_no_survivors();
}

/// Claude Code's `result` event carries the turn's usage: its tokens reach run.json, per step and
/// per run, and the suite's summary (the stub answers each request with 1000 in / 200 out).
#[test]
fn claude_codes_tokens_are_counted_in_run_json() {
    let Some(bin) = common::claude::claude_bin("claude tokens") else {
        return;
    };
    let p = common::Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"claude-code\"\nagent_args = [\"--allowedTools\", \"Bash\"]\n\
         [replay]\nmode = \"off\"\n",
    );
    p.write(
        "hello.test.toml",
        "name = \"Hello\"\n[[steps]]\ninstruction = \"Say hello.\"\n",
    );
    let side = tempfile::tempdir().expect("side dir");
    let stub = common::claude::Stub::start(
        side.path(),
        json!([{"bash": "echo hello"}, {"text": "It said {tool_result}.\nRESULT OK"}]),
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
    let record = p.record_for("hello.test.toml");
    let (input, output) = (record.input_tokens, record.output_tokens);
    assert!(
        input >= 2000 && output >= 400,
        "two model calls' tokens: {record:?}"
    );
    let summary = p.suite_summary_json();
    assert_eq!(summary["input_tokens"].as_u64(), Some(input), "{summary}");
}
