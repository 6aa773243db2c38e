//! The watchdog and budgets with the real Claude Code CLI (as installed by `.ci/run`, or
//! `$BUGATTI_CLAUDE_BIN`) against the scripted Anthropic API stub on loopback, beyond the contract
//! every agent CLI keeps (contract_real.rs: silence, SIGKILL, max_turns_per_step): a suite's
//! max_cost_usd, a Claude Code that wedges after its result or dies between steps. Skips loudly
//! without the CLI. Wall time is asserted only against the timeouts each test configures.

use crate::common::assert_exit;
use crate::common::claude::{claude_bin, Stub};
use crate::common::records::*;
use crate::common::{stderr, stdout, Project};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

fn project(extra: &str, steps: &[&str]) -> Project {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"claude-code\"\nagent_args = [\"--allowedTools\", \"Bash\"]\n\
             step_timeout_secs = 120\n{extra}\n"
        ),
    );
    let mut test = String::from("name = \"Claude\"\n");
    for step in steps {
        test.push_str(&format!("[[steps]]\ninstruction = {step:?}\n"));
    }
    p.write("claude.test.toml", &test);
    p
}

fn run(p: &Project, bin: &Path, stub: &Stub, home: &Path) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CLAUDE_BIN", bin)
        .envs(stub.client_env(home))
        .output()
        .expect("run supervisor");
    let took = started.elapsed();
    p.assert_nothing_survives();
    (out, took)
}

#[test]
fn a_suite_whose_next_test_would_pass_its_budget_does_not_start_it() {
    let Some(bin) = claude_bin("claude budgets: suite max_cost_usd") else {
        return;
    };
    let side = tempfile::tempdir().expect("side dir");
    let stub = Stub::start(
        side.path(),
        json!([{"text": "Done.\nRESULT OK"}, {"text": "Done.\nRESULT OK"}]),
    );
    let home = side.path().join("home");
    // What one such test costs, as Claude Code prices the stub's tokens: measured, not assumed.
    let calibration = project("", &["Do it."]);
    let (out, _) = run(&calibration, &bin, &stub, &home);
    assert_exit(&out, 0);
    let cost = calibration
        .record_for("claude.test.toml")
        .cost_usd
        .expect("Claude Code reports a cost");
    assert!(cost > 0.0);

    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"claude-code\"\nagent_args = [\"--allowedTools\", \"Bash\"]\n\
             [supervisor]\nmax_parallel = 1\nmax_cost_usd = {}\n",
            cost * 1.5
        ),
    );
    for name in ["a", "b"] {
        p.write(
            &format!("{name}.test.toml"),
            "name = \"t\"\n[[steps]]\ninstruction = \"Do it.\"\n",
        );
    }
    let (out, _) = run(&p, &bin, &stub, &home);
    let console = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{console}\n{}", stderr(&out));
    assert_eq!(
        p.record_for("a.test.toml").outcome,
        Some(RunOutcome::Passed)
    );
    assert_eq!(p.run_records().len(), 1, "b never started");
    let summary = p.suite_summary_json();
    assert_eq!(summary["not_run"], json!(["b.test.toml"]), "{summary}");
    let reason = summary["not_run_reason"].as_str().unwrap_or("");
    assert!(reason.contains("[supervisor] max_cost_usd"), "{reason}");
    assert!(
        (summary["cost_usd"].as_f64().unwrap_or(0.0) - cost).abs() < 1e-9,
        "{summary}"
    );
    assert!(console.contains("no further root test starts"), "{console}");
    let last = console
        .lines()
        .rfind(|l| l.starts_with("Summary:"))
        .unwrap_or("");
    assert!(last.contains("agent cost $"), "{last}");
    let junit = std::fs::read_to_string(p.suite_dir().join("junit.xml")).expect("junit.xml");
    assert!(junit.contains("name=\"cost_usd\""), "{junit}");
    assert!(junit.contains("max_cost_usd"), "{junit}");
}

/// Needs no CLI: a stand-in for Claude Code that wedges after its `result`
/// (tests/support/wedged_claude.py) — it reads no more input and ignores SIGINT.
#[test]
fn a_claude_code_that_wedges_after_its_result_is_restarted_and_torn_down_within_bounds() {
    // The stand-in is no MCP client, so it is given no console.
    let p = project(
        "no_output_timeout_secs = 5\nconsole = false",
        &["First.", "Second."],
    );
    let fake = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/wedged_claude.py"
    );
    let started = Instant::now();
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CLAUDE_BIN", fake)
        .output()
        .expect("run supervisor");
    let took = started.elapsed();
    p.assert_nothing_survives();
    assert_exit(&out, 0);
    let record = p.record_for("claude.test.toml");
    assert_eq!(record.steps[0].status, StepStatus::Ok, "{record:?}");
    // Step 2 went to the wedged process: silence, a restart on the same session, an answer.
    assert_eq!(record.steps[1].status, StepStatus::Ok, "{record:?}");
    let restarts = &record.agent_restarts;
    assert_eq!(restarts.len(), 1, "{record:?}");
    assert_eq!(
        record.steps[0]
            .usage
            .as_ref()
            .and_then(|u| u.session_id.clone()),
        record.steps[1]
            .usage
            .as_ref()
            .and_then(|u| u.session_id.clone()),
        "resumed, not a new conversation"
    );
    // One silence (5 s) and two teardowns that need SIGTERM (after the 2 s close-stdin and SIGINT
    // rungs each): bounded by what is configured, not hanging.
    assert!(took < Duration::from_secs(5 + 2 * 4 + 30), "took {took:?}");
}

/// Needs no CLI: a Claude Code that dies right after each result (tests/support/wedged_claude.py
/// with WEDGED_CLAUDE_EXIT=1) is found dead by the next step and restarted on its session.
#[test]
fn a_claude_code_that_dies_between_steps_is_restarted_at_the_next_one() {
    // The stand-in is no MCP client, so it is given no console.
    let p = project(
        "no_output_timeout_secs = 30\nconsole = false",
        &["First.", "Second."],
    );
    let fake = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/wedged_claude.py"
    );
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CLAUDE_BIN", fake)
        .env("WEDGED_CLAUDE_EXIT", "1")
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    assert_exit(&out, 0);
    let record = p.record_for("claude.test.toml");
    assert_eq!(record.steps[1].status, StepStatus::Ok, "{record:?}");
    let restarts = &record.agent_restarts;
    assert_eq!(restarts.len(), 1, "{record:?}");
    assert_eq!(restarts[0].step_id, 2);
    assert!(restarts[0].reason.contains("exit code 1"), "{restarts:?}");
    assert_eq!(
        record.steps[0]
            .usage
            .as_ref()
            .and_then(|u| u.session_id.clone()),
        record.steps[1]
            .usage
            .as_ref()
            .and_then(|u| u.session_id.clone()),
        "resumed, not a new conversation"
    );
}
