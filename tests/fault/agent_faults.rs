//! An agent fault is never the app's failure (docs/providers.md, "When the agent, not the app,
//! fails"): a fake CLI per known failure mode of Claude Code, Codex and pi
//! (tests/support/fault/fake_*.py), each classified right, within `no_output_timeout_secs` + 5 s
//! of its last word, with nothing left running; the login check before a run; the circuit breaker.

use crate::common::assert_exit;
use crate::common::records::*;
use crate::common::{fault, stderr, stdout, Project};
use bugatti::model::agent_fault::AgentFaultRecord;
use bugatti::report::records::run_record::StepRecord;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The silence limit of these runs: short, so a stall is found in seconds.
const IDLE_SECS: u64 = 4;

fn fake(name: &str) -> String {
    format!("{}/tests/support/fault/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// What one fixture run left: its exit code, output, the run record of its first test.
struct Ran {
    p: Project,
    out: std::process::Output,
    took: Duration,
}

impl Ran {
    fn code(&self) -> Option<i32> {
        self.out.status.code()
    }
    fn said(&self) -> String {
        format!("{}\n{}", stdout(&self.out), stderr(&self.out))
    }
    /// The newest run of `t1.test.toml` (a project may hold an earlier suite's too).
    fn record(&self) -> RunRecord {
        let mut runs: Vec<RunRecord> = self
            .p
            .run_records()
            .into_iter()
            .filter(|r| r.identity.test_file == "t1.test.toml")
            .collect();
        runs.sort_by_key(|r| r.identity.started_at);
        runs.pop().expect("a run of t1.test.toml")
    }
    fn step(&self) -> StepRecord {
        self.record().steps[0].clone()
    }
}

/// Runs `tests` root tests of one step each with `provider` played by the fake `bin` in `mode`,
/// at `-j 1`.
fn run(provider: &str, mode: &str, tests: usize, step_timeout: u64) -> Ran {
    run_in(Project::new(), provider, mode, tests, step_timeout)
}

/// [`run`] in a given project (a second suite of the same project).
fn run_in(p: Project, provider: &str, mode: &str, tests: usize, step_timeout: u64) -> Ran {
    // More `[provider]` lines, where a test wrote them in `extra.toml`.
    let extra = std::fs::read_to_string(p.root().join("extra.toml")).unwrap_or_default();
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"{provider}\"\nstep_timeout_secs = {step_timeout}\n\
             no_output_timeout_secs = {IDLE_SECS}\nconsole = false\n{extra}"
        ),
    );
    for i in 1..=tests {
        p.write(
            &format!("t{i}.test.toml"),
            &format!("name = \"T{i}\"\n[[steps]]\ninstruction = \"Check the page.\"\n"),
        );
    }
    let (var, bin, mode_var) = match provider {
        "claude-code" => ("BUGATTI_CLAUDE_BIN", "fake_claude.py", "FAKE_CLAUDE_MODE"),
        "codex" => ("BUGATTI_CODEX_BIN", "fake_codex.py", "FAKE_CODEX_MODE"),
        _ => ("BUGATTI_PI_BIN", "fake_pi.py", "FAKE_PI_MODE"),
    };
    let pi_dir = p.root().join(".pi-agent");
    std::fs::create_dir_all(&pi_dir).expect("pi dir");
    std::fs::write(
        pi_dir.join("models.json"),
        r#"{"providers":{"fake":{"apiKey":"x"}}}"#,
    )
    .expect("models.json");
    let started = Instant::now();
    let child = p
        .supervisor()
        .args(["start", "-j", "1"])
        .env(var, fake(bin))
        .env(mode_var, mode)
        .env("FAKE_CLAUDE_COUNT", p.root().join("turns.log"))
        .env("PI_CODING_AGENT_DIR", &pi_dir)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env("CODEX_HOME", p.root().join(".codex-home"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    let out = fault::wait_guarded(child);
    let took = started.elapsed();
    p.assert_nothing_survives();
    Ran { p, out, took }
}

/// The step is `agent_error` of `kind`, the test an `error` (exit 3), the fix said.
fn assert_agent_error(ran: &Ran, kind: &str, fix: &str) {
    assert_exit(&ran.out, 3);
    let record = ran.record();
    assert_eq!(record.outcome, Some(RunOutcome::Error), "{record:?}");
    let step = ran.step();
    assert_eq!(step.status, StepStatus::AgentError, "{step:?}");
    let kind_of = |f: &Option<AgentFaultRecord>| f.as_ref().map(|f| f.kind.as_str());
    assert_eq!(kind_of(&step.agent_fault), Some(kind), "{step:?}");
    assert_eq!(kind_of(&record.agent_fault), Some(kind), "{record:?}");
    let message = step.message.as_deref().unwrap_or_default();
    assert!(message.contains(fix), "{message}");
    let report = record.read("report.md");
    assert!(
        report.contains(&format!("The agent, not the app, failed ({kind})")),
        "{report}"
    );
}

fn assert_passed(ran: &Ran) {
    assert_eq!(ran.code(), Some(0), "{}", ran.said());
    assert_eq!(ran.step().status, StepStatus::Ok, "{:?}", ran.step());
}

/// Ended within the silence limit + 5 s of what the fixture's own timing needs.
fn assert_bounded(ran: &Ran, own: Duration) {
    let bound = own + Duration::from_secs(IDLE_SECS + 5);
    // The supervisor's own start and teardown are in `took` too: generous, but bounded.
    assert!(
        ran.took < bound + Duration::from_secs(10),
        "took {:?} (bound {bound:?})",
        ran.took
    );
}

#[test]
fn claude_not_logged_in_is_refused_before_any_harness_starts_naming_the_fix() {
    let ran = run("claude-code", "not_logged_in", 2, 30);
    assert_eq!(ran.code(), Some(3), "{}", ran.said());
    let said = ran.said();
    assert!(said.contains("not logged in"), "{said}");
    assert!(said.contains("claude auth login"), "{said}");
    assert!(said.contains("ANTHROPIC_API_KEY"), "{said}");
    assert!(
        fault::run_dirs(&ran.p).is_empty(),
        "a run started: {:?}",
        fault::run_dirs(&ran.p)
    );
    assert!(
        !ran.p.root().join("turns.log").exists(),
        "the agent was asked"
    );
}

#[test]
fn codex_not_logged_in_is_refused_before_any_harness_starts_naming_the_fix() {
    let ran = run("codex", "not_logged_in", 1, 30);
    assert_eq!(ran.code(), Some(3), "{}", ran.said());
    assert!(ran.said().contains("codex login"), "{}", ran.said());
    assert!(fault::run_dirs(&ran.p).is_empty());
}

/// Issue 40: a CLI older than the protocol the supervisor reads is the fault `cli_version`, found
/// by its `--version` before anything starts: exit 3 in seconds, the fix named, no run started,
/// the agent never asked for a turn.
#[test]
fn a_cli_older_than_the_protocol_we_read_is_refused_before_anything_starts() {
    for (provider, shown, package) in [
        (
            "claude-code",
            "claude-code 0.2.9",
            "@anthropic-ai/claude-code",
        ),
        ("codex", "codex 0.30.0", "@openai/codex"),
        ("pi", "pi 0.60.2", "@earendil-works/pi-coding-agent"),
    ] {
        let ran = run(provider, "old_version", 2, 30);
        let said = ran.said();
        assert_eq!(ran.code(), Some(3), "{provider}: {said}");
        assert!(
            said.contains("the agent speaks a protocol this supervisor does not")
                && said.contains(shown)
                && said.contains("(cli_version)")
                && said.contains(&format!("npm install -g {package}")),
            "{provider}: {said}"
        );
        assert!(
            fault::run_dirs(&ran.p).is_empty(),
            "{provider}: a run started: {:?}",
            fault::run_dirs(&ran.p)
        );
        assert!(
            !ran.p.root().join("turns.log").exists(),
            "{provider}: the agent was asked"
        );
    }
    // `doctor` says the same of the old CLI, and passes a supported one.
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"pi\"\n");
    p.write(
        "t1.test.toml",
        "name = \"T1\"\n[[steps]]\ninstruction = \"Check.\"\n",
    );
    let doctor = |mode: &str| {
        let out = p
            .supervisor()
            .arg("doctor")
            .env("BUGATTI_PI_BIN", fake("fake_pi.py"))
            .env("FAKE_PI_MODE", mode)
            .output()
            .expect("doctor");
        stdout(&out)
    };
    let said = doctor("old_version");
    assert!(
        said.contains("FAIL provider pi: pi 0.60.2 is older than 0.73.1"),
        "{said}"
    );
    let said = doctor("ok");
    assert!(said.contains("ok   provider pi: 1.5.2"), "{said}");
}

/// Issue 51: a CLI newer than the newest tested is a warning of `doctor` (docs/providers.md,
/// "Supported versions"), not a refusal: `doctor` passes and names the newest tested.
#[test]
fn a_cli_newer_than_tested_is_a_doctor_warning_not_a_refusal() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"pi\"\n");
    p.write(
        "t1.test.toml",
        "name = \"T1\"\n[[steps]]\ninstruction = \"Check.\"\n",
    );
    let out = p
        .supervisor()
        .arg("doctor")
        .env("BUGATTI_PI_BIN", fake("fake_pi.py"))
        .env("FAKE_PI_MODE", "newer_version")
        .env("PI_CODING_AGENT_DIR", p.root().join(".pi"))
        .env("ANTHROPIC_API_KEY", "dummy")
        .output()
        .expect("doctor");
    let said = stdout(&out);
    assert!(
        said.contains("warn provider pi: pi 1.7.0 is newer than tested (1.6.0 on "),
        "{said}"
    );
    assert!(!said.contains("FAIL provider pi"), "{said}");
}

/// Issue 51: pi 1.x on a Node older than 22.19 dies at its first import; that is named as the
/// Node it needs (the fault `cli_version` before anything starts, and `doctor`'s FAIL), never
/// "update the CLI".
#[test]
fn pi_on_a_node_too_old_is_refused_naming_the_node_it_needs() {
    let ran = run("pi", "old_node", 1, 30);
    let said = ran.said();
    assert_eq!(ran.code(), Some(3), "{said}");
    assert!(
        said.contains("needs Node.js 22.19 or later, and it ran on Node.js 20.20.2")
            && said.contains("(cli_version)")
            && !said.contains("update the CLI"),
        "{said}"
    );
    assert!(fault::run_dirs(&ran.p).is_empty(), "a run started");
    let out = ran
        .p
        .supervisor()
        .arg("doctor")
        .env("BUGATTI_PI_BIN", fake("fake_pi.py"))
        .env("FAKE_PI_MODE", "old_node")
        .output()
        .expect("doctor");
    let said = stdout(&out);
    assert!(
        said.contains("FAIL provider pi: pi (@earendil-works/pi-coding-agent) needs Node.js 22.19"),
        "{said}"
    );
}

#[test]
fn pi_with_no_login_and_no_provider_is_refused_before_anything_starts() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"pi\"\n");
    p.write(
        "t1.test.toml",
        "name = \"T1\"\n[[steps]]\ninstruction = \"Check.\"\n",
    );
    let empty = p.root().join(".pi-empty");
    std::fs::create_dir_all(&empty).expect("dir");
    let vars: Vec<String> = std::env::vars()
        .map(|(k, _)| k)
        .filter(|k| k.ends_with("_API_KEY"))
        .collect();
    let mut cmd = p.supervisor();
    for var in vars {
        cmd.env_remove(var);
    }
    let out = cmd
        .arg("start")
        .env("BUGATTI_PI_BIN", fake("fake_pi.py"))
        .env("PI_CODING_AGENT_DIR", &empty)
        .output()
        .expect("run");
    assert_exit(&out, 3);
    assert!(
        stderr(&out).contains("pi: not logged in"),
        "{}",
        stderr(&out)
    );
    assert!(fault::run_dirs(&p).is_empty());
}

#[test]
fn a_401_on_every_call_stops_the_suite_after_two_tests_the_rest_not_run() {
    let ran = run("claude-code", "http_401", 6, 30);
    assert_eq!(ran.code(), Some(3), "{}", ran.said());
    let turns = std::fs::read_to_string(ran.p.root().join("turns.log")).unwrap_or_default();
    assert!(
        turns.lines().count() <= 2,
        "{} turns asked of the agent",
        turns.lines().count()
    );
    let started = fault::run_dirs(&ran.p).len();
    assert!(started <= 2, "{started} tests started");
    let summary = ran.p.suite_summary();
    assert_eq!(summary.not_run.len(), 6 - started, "{summary:?}");
    assert!(
        summary
            .not_run_reason
            .as_deref()
            .is_some_and(|r| r.starts_with("agent unavailable: auth")),
        "{summary:?}"
    );
    for test in &summary.tests {
        assert_eq!(test.outcome, RunOutcome::Error, "{test:?}");
        assert_eq!(test.agent_fault, Some(FaultKind::Auth), "{test:?}");
    }
    assert!(
        ran.said().contains("agent unavailable: auth"),
        "{}",
        ran.said()
    );
}

#[test]
fn an_agent_error_after_a_pass_is_no_new_failure_and_is_shown_apart() {
    let first = run("claude-code", "ok", 1, 30);
    assert_passed(&first);
    let ran = run_in(first.p, "claude-code", "revoked", 1, 30);
    assert_agent_error(&ran, "auth", "ANTHROPIC_API_KEY");
    let summary = ran.p.suite_summary();
    let changes = summary.changes.as_ref().expect("a comparison");
    assert!(changes.new_failures.is_empty(), "{changes:?}");
    assert_eq!(
        changes.agent_errors.first().map(|c| c.test_file.as_str()),
        Some("t1.test.toml"),
        "{changes:?}"
    );
    assert_eq!(summary.totals.failed, 0, "{summary:?}");
    let last =
        bugatti::report::records::history::read(&ran.p.root().join(".bugatti/history.jsonl"))
            .pop()
            .expect("a history entry");
    assert_eq!(last.tests[0].agent_error, Some(FaultKind::Auth), "{last:?}");
    let said = ran.said();
    assert!(
        said.contains("agent error (not the app): t1.test.toml"),
        "{said}"
    );
    assert!(!said.contains("new failure"), "{said}");
    let html = std::fs::read_to_string(ran.p.suite_dir().join("report.html")).expect("report.html");
    assert!(
        html.contains("<h2 id=\"agent-errors\">Agent errors</h2>"),
        "report.html"
    );
    assert!(html.contains("agent error: auth"), "report.html");
    // Said apart everywhere: the headline, the test's badge, the trends (no 0 % pass rate),
    // and no "no change in outcomes" under the change it lists.
    assert!(
        html.contains(">AGENT ERROR (not the app)</span>") && !html.contains(">FAILED</span>"),
        "report.html's headline"
    );
    assert!(
        html.contains("<span class=\"badge b-error\">agent error</span>"),
        "report.html's test badge"
    );
    assert!(
        html.contains("pass rate: <b>none recorded</b>") && !html.contains("pass rate: <b>0%"),
        "report.html's trends"
    );
    assert!(!said.contains("no change in outcomes"), "{said}");
    let trends = stdout(&ran.p.run(&["report", "--trends"]));
    assert!(
        trends.contains("(1 agent error, not counted)") && !trends.contains("pass   0%"),
        "{trends}"
    );
}

#[test]
fn a_claude_cost_far_from_its_tokens_times_the_price_is_kept_beside_not_used() {
    let p = Project::new();
    // The fake reports $0.001 for 10 input and 5 output tokens: priced at $3 / $15 per million
    // tokens they cost $0.000105, nearly 10x less.
    p.write(
        "extra.toml",
        "price_per_mtok = { input = 3.0, output = 15.0 }\n",
    );
    let ran = run_in(p, "claude-code", "ok", 1, 30);
    assert_passed(&ran);
    let usage = ran.step().usage.expect("usage");
    let cost = usage.cost_usd.expect("cost_usd");
    assert!((cost - 0.000105).abs() < 1e-9, "{usage:?}");
    assert_eq!(usage.reported_cost_usd, Some(0.001), "{usage:?}");
}

/// Issue 40: without `price_per_mtok`, Claude Code's tokens are counted at the built-in list
/// price of the model its init event names (Sonnet 4.5: $3 / $15 per million tokens), and its
/// own figure, ten times that, is kept beside.
#[test]
fn a_claude_models_tokens_are_counted_at_its_built_in_price() {
    let ran = run("claude-code", "sonnet", 1, 30);
    assert_passed(&ran);
    let usage = ran.step().usage.expect("usage");
    let cost = usage.cost_usd.expect("cost_usd");
    assert!((cost - 0.000105).abs() < 1e-9, "{usage:?}");
    assert_eq!(usage.reported_cost_usd, Some(0.001), "{usage:?}");
    // A model with no built-in price (the fake's `ok` names none): the CLI's figure stands.
    let ran = run("claude-code", "ok", 1, 30);
    assert_passed(&ran);
    let usage = ran.step().usage.expect("usage");
    assert_eq!(usage.cost_usd, Some(0.001), "{usage:?}");
    assert!(usage.reported_cost_usd.is_none(), "{usage:?}");
}

#[test]
fn claude_revoked_key_is_auth() {
    let ran = run("claude-code", "revoked", 1, 30);
    assert_agent_error(&ran, "auth", "ANTHROPIC_API_KEY");
    assert_bounded(&ran, Duration::ZERO);
}

#[test]
fn claude_out_of_credit_is_quota() {
    let ran = run("claude-code", "credit", 1, 30);
    assert_agent_error(&ran, "quota", "credit");
}

#[test]
fn claude_429_then_success_passes_after_one_retry_of_ours() {
    let ran = run("claude-code", "rate_429_then_ok", 1, 30);
    assert_passed(&ran);
    let turns = std::fs::read_to_string(ran.p.root().join("turns.log")).unwrap_or_default();
    assert_eq!(turns.lines().count(), 2, "one failed turn, one retry");
}

#[test]
fn claude_529_until_the_deadline_is_overloaded_within_the_step_timeout() {
    let ran = run("claude-code", "overloaded_529", 1, 8);
    assert_agent_error(&ran, "overloaded", "busy");
    let turns = std::fs::read_to_string(ran.p.root().join("turns.log")).unwrap_or_default();
    assert!(
        (2..=4).contains(&turns.lines().count()),
        "retried with backoff: {} turns",
        turns.lines().count()
    );
    assert_bounded(&ran, Duration::from_secs(8));
}

#[test]
fn claude_api_error_reported_as_success_is_api_error_not_a_test_failure() {
    let ran = run("claude-code", "api_error_success", 1, 5);
    assert_agent_error(&ran, "api_error", "run again");
    assert_bounded(&ran, Duration::from_secs(5));
}

#[test]
fn claude_stream_that_stops_mid_turn_is_stalled_after_its_restart() {
    let ran = run("claude-code", "stop_mid_turn", 1, 60);
    assert_agent_error(&ran, "stalled", "agent.stderr.log");
    assert_eq!(ran.record().agent_restarts.len(), 1);
    assert_bounded(&ran, Duration::from_secs(IDLE_SECS));
}

#[test]
fn claude_that_lingers_after_result_passes_and_is_stopped() {
    let ran = run("claude-code", "linger", 1, 30);
    assert_passed(&ran);
    assert_bounded(&ran, Duration::ZERO);
}

#[test]
fn claude_that_crashes_is_crashed_after_its_restart() {
    let ran = run("claude-code", "crash", 1, 30);
    assert_agent_error(&ran, "crashed", "agent.stderr.log");
    assert_bounded(&ran, Duration::ZERO);
}

#[test]
fn the_models_prose_about_401_is_the_apps_failure_not_an_agent_fault() {
    let ran = run("claude-code", "prose_401", 1, 30);
    assert_exit(&ran.out, 1);
    assert_eq!(ran.record().outcome, Some(RunOutcome::Failed));
    assert_eq!(ran.step().status, StepStatus::Error);
    assert!(ran.step().agent_fault.is_none(), "{:?}", ran.step());
}

#[test]
fn codex_turn_failed_is_api_error() {
    let ran = run("codex", "turn_failed", 1, 5);
    assert_agent_error(&ran, "api_error", "run again");
}

#[test]
fn codex_stall_after_turn_started_is_stalled() {
    let ran = run("codex", "stall", 1, 60);
    assert_agent_error(&ran, "stalled", "agent.stderr.log");
    assert_bounded(&ran, Duration::from_secs(IDLE_SECS));
}

#[test]
fn codex_that_lingers_after_turn_completed_passes_without_waiting() {
    let ran = run("codex", "linger", 1, 60);
    assert_passed(&ran);
    assert_bounded(&ran, Duration::ZERO);
}

#[test]
fn codex_with_a_descendant_holding_stdout_passes_and_leaves_nothing() {
    let ran = run("codex", "descendant", 1, 60);
    assert_passed(&ran);
    assert_bounded(&ran, Duration::ZERO);
}

#[test]
fn pi_will_retry_then_success_is_one_passing_step() {
    let ran = run("pi", "will_retry_then_ok", 1, 30);
    assert_passed(&ran);
}

#[test]
fn pi_that_does_not_exit_after_agent_settled_passes_and_is_stopped() {
    let ran = run("pi", "settled_no_exit", 1, 60);
    assert_passed(&ran);
    assert_bounded(&ran, Duration::ZERO);
}

#[test]
fn pi_exit_0_on_a_401_is_auth() {
    let ran = run("pi", "exit0_on_error", 1, 30);
    assert_agent_error(&ran, "auth", "API key");
}

#[test]
fn doctor_reports_each_clis_login_state() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"claude-code\"\n",
    );
    p.write(
        "t1.test.toml",
        "name = \"T1\"\n[[steps]]\ninstruction = \"Check.\"\n",
    );
    let doctor = |mode: &str, key: Option<&str>| {
        let mut cmd = p.supervisor();
        cmd.arg("doctor")
            .env("BUGATTI_CLAUDE_BIN", fake("fake_claude.py"))
            .env("FAKE_CLAUDE_MODE", mode)
            .env_remove("ANTHROPIC_API_KEY");
        if let Some(key) = key {
            cmd.env("ANTHROPIC_API_KEY", key);
        }
        cmd.output().expect("doctor")
    };
    let out = doctor("not_logged_in", None);
    let said = stdout(&out);
    assert!(
        said.contains("FAIL login of claude-code: not logged in")
            && said.contains("claude auth login"),
        "{said}"
    );
    assert_exit(&out, 1);
    let said = stdout(&doctor("ok", None));
    assert!(
        said.contains("ok   login of claude-code: logged in (api key)"),
        "{said}"
    );
    let said = stdout(&doctor("not_logged_in", Some("k")));
    assert!(
        said.contains("login of claude-code: logged in (ANTHROPIC_API_KEY is set)"),
        "{said}"
    );
}
