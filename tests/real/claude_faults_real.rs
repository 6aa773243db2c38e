//! Agent faults through the real Claude Code CLI (docs/providers.md, "When the agent, not the
//! app, fails"), its API answering with HTTP errors on loopback (tests/support/anthropic_stub.py):
//! an API failing is never the app's failure, an API refusing the key stops the suite after
//! two tests, and an API that limits requests in flight holds tests back instead of failing them
//! (docs/ci.md, "A rate-limited nightly"). Skips loudly without the CLI (a failure under
//! `CI=true`).

use crate::common;
use crate::common::records::*;

use common::claude::{claude_bin, Stub};
use common::{stdout, Project};
use serde_json::{json, Value};

/// A Claude Code project (Bash allowed, no console) of `tests` root tests of one step each.
fn one_step_project(tests: usize, step_timeout: u64) -> Project {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"claude-code\"\nagent_args = [\"--allowedTools\", \"Bash\"]\n\
             step_timeout_secs = {step_timeout}\nconsole = false\n"
        ),
    );
    for i in 1..=tests {
        p.write(
            &format!("t{i}.test.toml"),
            &format!("name = \"T{i}\"\n[[steps]]\ninstruction = \"Check the page.\"\n"),
        );
    }
    p
}

/// `tests` root tests of one step each, run at `-j 1` against a stub answering `status` to every
/// model call.
fn run(
    status: u16,
    tests: usize,
    step_timeout: u64,
) -> Option<(Project, std::process::Output, usize)> {
    let bin = claude_bin("claude_faults_real")?;
    let side = tempfile::tempdir().expect("side dir");
    let replies: Vec<Value> = (0..200).map(|_| json!({"status": status})).collect();
    let stub = Stub::start(side.path(), Value::Array(replies));
    let p = one_step_project(tests, step_timeout);
    let out = p
        .supervisor()
        .args(["start", "-j", "1"])
        .env("BUGATTI_CLAUDE_BIN", &bin)
        .envs(stub.client_env(&side.path().join("home")))
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let requests = stub
        .requests_text()
        .lines()
        .filter(|l| l.contains("/v1/messages") && l.contains("\"Bash\""))
        .count();
    Some((p, out, requests))
}

#[test]
fn an_api_answering_500_is_an_agent_error_not_a_test_failure() {
    let Some((p, out, _)) = run(500, 1, 20) else {
        return;
    };
    let said = format!("{}\n{}", stdout(&out), common::stderr(&out));
    assert_eq!(out.status.code(), Some(3), "{said}");
    let record = p.record_for("t1.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Error), "{record:?}");
    let step = &record.steps[0];
    assert_eq!(step.status, StepStatus::AgentError, "{step:?}");
    assert_eq!(
        step.agent_fault.as_ref().map(|f| f.kind.as_str()),
        Some("api_error"),
        "{step:?}"
    );
    assert!(said.contains("AGENT ERROR (api_error)"), "{said}");
    let summary = p.suite_summary();
    assert_eq!(summary.totals.failed, 0, "{summary:#?}");
}

#[test]
fn a_401_on_every_call_starts_at_most_two_of_six_tests() {
    let Some((p, out, _)) = run(401, 6, 30) else {
        return;
    };
    let said = format!("{}\n{}", stdout(&out), common::stderr(&out));
    assert_eq!(out.status.code(), Some(3), "{said}");
    let summary = p.suite_summary();
    let ran = summary.tests.len();
    assert!(ran <= 2, "{ran} tests started: {summary:#?}");
    assert_eq!(summary.not_run.len(), 6 - ran, "{summary:#?}");
    for test in &summary.tests {
        assert_eq!(test.agent_fault, Some(FaultKind::Auth), "{test:#?}");
    }
    assert!(
        summary
            .not_run_reason
            .as_deref()
            .is_some_and(|r| r.starts_with("agent unavailable: auth")),
        "{summary:#?}"
    );
}

/// `tests` one-step tests through Claude Code at `bin` against `stub`, all at once (`-j tests`),
/// step timeout 120 s; the project and the supervisor's output, no process left.
fn one_step_tests_at_once(
    bin: &std::path::Path,
    stub: &Stub,
    side: &std::path::Path,
    tests: usize,
) -> (Project, std::process::Output) {
    let p = one_step_project(tests, 120);
    let out = p
        .supervisor()
        .args(["start", "-j", &tests.to_string()])
        .env("BUGATTI_CLAUDE_BIN", bin)
        .envs(stub.client_env(&side.join("home")))
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    (p, out)
}

/// Eight tests at `-j 8` against an API that refuses (HTTP 429, `retry-after: 1`) a request
/// beyond three in flight, each answer taking 1.5 s, the CLI retrying once itself: fewer agents
/// go at once after the first refusal, a refused step waits for its place and is not an error,
/// and the summary and the console say how long the tests waited for the model.
#[test]
fn a_burst_past_the_apis_limit_waits_for_the_model_and_every_test_passes() {
    let Some(bin) = claude_bin("claude_faults_real") else {
        return;
    };
    let side = tempfile::tempdir().expect("side dir");
    let replies: Vec<Value> = (0..16)
        .map(|_| json!({"text": "Checked the page.\nRESULT OK", "delay_ms": 1500}))
        .collect();
    let stub = Stub::start(
        side.path(),
        json!({"main": replies, "max_in_flight": 3, "retry_after": 1}),
    );
    let (p, out) = one_step_tests_at_once(&bin, &stub, side.path(), 8);
    let said = format!("{}\n{}", stdout(&out), common::stderr(&out));
    let refused = stub.logged_requests().iter().filter(|r| r.limited).count();
    assert!(
        refused > 0,
        "the API never limited the burst: nothing was tested\n{said}"
    );
    assert_eq!(out.status.code(), Some(0), "{said}");
    let summary = p.suite_summary();
    assert_eq!(summary.totals.passed, 8, "{summary:#?}");
    assert_eq!(summary.totals.error, 0, "{summary:#?}");
    assert!(
        summary.tests.iter().all(|t| t.agent_fault.is_none()),
        "{summary:#?}"
    );
    assert!(summary.model_wait_ms > 0, "{summary:#?}");
    assert!(summary.model_waited_tests > 0, "{summary:#?}");
    let waited: u64 = summary
        .tests
        .iter()
        .map(|t| p.record_for(&t.test_file).model_wait_ms)
        .sum();
    assert_eq!(
        waited, summary.model_wait_ms,
        "the runs' waits add up to the suite's"
    );
    let md = std::fs::read_to_string(p.suite_dir().join("summary.md")).expect("summary.md");
    assert!(md.contains("Waited for the model: "), "{md}");
    assert!(stdout(&out).contains("waited for the model: "), "{said}");
}

/// A step the API keeps limiting (HTTP 429, `retry-after: 6`) past the CLI's own one retry: the
/// supervisor retries the step no sooner than the API asked, not after its own first backoff of
/// one second, and the step then passes.
#[test]
fn a_limited_step_is_retried_no_sooner_than_the_apis_retry_after() {
    let Some(bin) = claude_bin("claude_faults_real") else {
        return;
    };
    let side = tempfile::tempdir().expect("side dir");
    let stub = Stub::start(
        side.path(),
        json!({
            "main": [{"status": 429}, {"status": 429}, {"text": "Checked the page.\nRESULT OK"}],
            "retry_after": 6
        }),
    );
    let (_p, out) = one_step_tests_at_once(&bin, &stub, side.path(), 1);
    let said = format!("{}\n{}", stdout(&out), common::stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{said}");
    let asked: Vec<f64> = stub
        .logged_requests()
        .iter()
        .filter(|r| r.is_main_loop())
        .map(|r| r.at)
        .collect();
    assert!(asked.len() >= 3, "{asked:?}\n{said}");
    // The CLI's own retry (its api_retry notice) and then the supervisor's retry of the step.
    let ours = asked[2] - asked[1];
    assert!(
        ours >= 6.0,
        "the step was asked again {ours:.2} s after the API said to wait 6 s\n{said}"
    );
}
