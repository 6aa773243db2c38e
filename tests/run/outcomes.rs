//! `supervisor start` end to end: the real binary on temporary projects, a scripted agent on the
//! `command` provider, real servers; everything checked from the files written and the exit code.

use crate::common;
use crate::common::assert_exit;
use crate::common::records::*;

use crate::common::{stdout, Project};

fn command_provider_config(extra: &str) -> String {
    format!(
        r#"
[provider]
name = "command"
cmd = "{agent}"
step_timeout_secs = 30

[supervisor]
max_parallel = 4
{extra}
"#,
        agent = Project::directive_agent_cmd()
    )
}

fn statuses(record: &RunRecord) -> Vec<&'static str> {
    record.steps.iter().map(|s| s.status.as_str()).collect()
}

fn junit_attr(xml: &str, attr: &str) -> usize {
    let needle = format!("{attr}=\"");
    let start = xml.find(&needle).expect("attribute present") + needle.len();
    let end = xml[start..].find('"').expect("closing quote") + start;
    xml[start..end].parse().expect("a number")
}

#[test]
fn verdicts_become_outcomes_step_statuses_junit_and_exit_code_1() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &command_provider_config("").replace(
            "step_timeout_secs = 30",
            "step_timeout_secs = 30\nno_output_timeout_secs = 3",
        ),
    );
    p.write(
        "pass.test.toml",
        "name = \"Pass\"\n[[steps]]\ninstruction = \"log all good\"\n[[steps]]\ninstruction = \"say fine\"\n",
    );
    p.write(
        "warn.test.toml",
        "name = \"Warn\"\n[[steps]]\ninstruction = \"\"\"\nlog looked slow\nevidence screenshot screenshots/slow.png\nsay RESULT WARN: the page took 3 s\n\"\"\"\n",
    );
    p.write(
        "fail.test.toml",
        "name = \"Fail\"\n[[steps]]\ninstruction = \"say RESULT OK\"\n[[steps]]\ninstruction = \"\"\"\nsay looking at the basket\nsay RESULT ERROR: basket is empty\n\"\"\"\n[[steps]]\ninstruction = \"say never sent\"\n",
    );
    p.write(
        "nomarker.test.toml",
        "name = \"No marker\"\n[[steps]]\ninstruction = \"\"\"\nsay I had a look around\nnoresult\n\"\"\"\n",
    );
    let out = p.supervisor().arg("start").output().expect("run");
    p.assert_nothing_survives();
    let console = stdout(&out);
    assert_exit(&out, 1);

    let pass = p.record_for("pass.test.toml");
    assert_eq!(pass.outcome, Some(RunOutcome::Passed));
    assert_eq!(statuses(&pass), ["ok", "ok"]);
    assert_eq!(pass.steps[0].logs[0], "all good");

    let warn = p.record_for("warn.test.toml");
    assert_eq!(warn.outcome, Some(RunOutcome::Warned));
    assert_eq!(statuses(&warn), ["warn"]);
    assert_eq!(warn.steps[0].message.as_deref(), Some("the page took 3 s"));
    assert_eq!(warn.steps[0].evidence[0].path, "screenshots/slow.png");
    let warn_report = std::fs::read_to_string(warn.run_dir().join("report.md")).expect("report.md");
    assert!(warn_report.contains("looked slow"), "{warn_report}");
    assert!(
        warn_report.contains("screenshots/slow.png"),
        "{warn_report}"
    );

    let fail = p.record_for("fail.test.toml");
    assert_eq!(fail.outcome, Some(RunOutcome::Failed));
    assert_eq!(
        statuses(&fail),
        ["ok", "error", "not_run"],
        "the marker ends the step; the rest is not run"
    );
    assert_eq!(fail.steps[1].message.as_deref(), Some("basket is empty"));

    let nomarker = p.record_for("nomarker.test.toml");
    assert_eq!(nomarker.outcome, Some(RunOutcome::Failed));
    assert_eq!(statuses(&nomarker), ["protocol_error"]);

    // One line per run names its outcome and its report path, which names the run id (docs/reports.md):
    // `[n/N] OUTCOME  file  time  .bugatti/runs/<run_id>/report.md`.
    for record in p.run_records() {
        let run_id = record.identity.run_id.as_str();
        let line = console
            .lines()
            .find(|l| l.starts_with('[') && l.contains(run_id) && l.contains("report.md"))
            .unwrap_or_else(|| panic!("no outcome line for {run_id} in\n{console}"));
        let outcome = record.outcome.expect("outcome").as_str().to_uppercase();
        assert!(line.contains(&format!("] {outcome} ")), "{line}");
        let file = record.identity.test_file.as_str();
        assert!(line.contains(file), "{line}");
    }

    let junit = std::fs::read_to_string(p.suite_dir().join("junit.xml")).expect("junit.xml");
    assert_eq!(junit_attr(&junit, "tests"), 4, "{junit}");
    assert_eq!(junit_attr(&junit, "failures"), 2, "{junit}");
    assert_eq!(junit_attr(&junit, "errors"), 0, "{junit}");
    let summary = p.suite_summary();
    assert_eq!(Some(summary.tests.len()), Some(4));
}

#[test]
fn warnings_pass_unless_strict() {
    let p = Project::new();
    p.write("bugatti.config.toml", &command_provider_config(""));
    p.write(
        "warn.test.toml",
        "name = \"Warn\"\n[[steps]]\ninstruction = \"say RESULT WARN: meh\"\n",
    );
    let out = p.run(&[
        "start",
        "--junit",
        "ci/junit.xml",
        "--json",
        "ci/summary.json",
    ]);
    assert_exit(&out, 0);
    let junit = std::fs::read_to_string(p.root().join("ci/junit.xml")).expect("--junit copy");
    assert_eq!(junit_attr(&junit, "tests"), 1, "{junit}");
    let summary: SuiteSummary = common::read_json_file(&p.root().join("ci/summary.json"));
    assert_eq!(summary.tests[0].outcome, RunOutcome::Warned);
    let out = p.run(&["start", "--strict-warnings"]);
    assert_exit(&out, 1);
}

#[test]
fn a_failing_setup_command_is_a_harness_error_with_exit_3_and_a_report() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &(command_provider_config("")
            + r#"
[commands.migrate]
kind = "short_lived"
cmd = "echo migrating; echo 'table exists' >&2; exit 4"
"#),
    );
    p.write(
        "t.test.toml",
        "name = \"T\"\n[[steps]]\ninstruction = \"say hi\"\n",
    );
    let out = p.start();
    assert_exit(&out, 3);
    let record = p.record_for("t.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Error));
    assert_eq!(statuses(&record), ["not_run"]);
    let error = record.error.as_deref().unwrap_or_default();
    assert!(
        error.contains("migrate") && error.contains("table exists"),
        "{error}"
    );
    let report = std::fs::read_to_string(record.run_dir().join("report.md"))
        .expect("report.md written for an errored run");
    assert!(report.contains("ERROR"), "{report}");
}

#[test]
fn a_readiness_timeout_names_the_probe_and_exits_3() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &(command_provider_config("")
            + r#"
[ports]
APP_PORT = "auto"

[commands.server]
kind = "long_lived"
cmd = "sleep 30"
readiness = { tcp = "127.0.0.1:${APP_PORT}", timeout_secs = 1 }
stop_timeout_secs = 1
"#),
    );
    p.write(
        "t.test.toml",
        "name = \"T\"\n[[steps]]\ninstruction = \"say hi\"\n",
    );
    let out = p.start();
    assert_exit(&out, 3);
    let record = p.record_for("t.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Error));
    let error = record.error.as_deref().unwrap_or_default();
    assert!(error.contains("server") && error.contains("tcp"), "{error}");
    assert_eq!(record.commands[0].teardown, Some(TeardownState::Clean));
}

#[test]
fn invalid_input_exits_2_and_runs_nothing() {
    let p = Project::new();
    p.write("bugatti.config.toml", &command_provider_config(""));
    p.write(
        "t.test.toml",
        "name = \"T\"\n[[steps]]\ninstruction = \"say hi\"\n",
    );
    let out = p.run(&["start", "--skip-cmd", "nope"]);
    assert_exit(&out, 2);
    assert!(common::stderr(&out).contains("nope"));
    assert!(
        !p.root().join(".bugatti").exists(),
        "nothing may be written"
    );
}

#[test]
fn a_crashing_server_is_restarted_and_teardown_states_are_recorded() {
    let p = Project::new();
    let app = format!(
        "{}/tests/support/counter_app.py",
        env!("CARGO_MANIFEST_DIR")
    );
    p.write(
        "bugatti.config.toml",
        &(command_provider_config("")
            + &format!(
                r#"
[ports]
APP_PORT = "auto"
STUBBORN_PORT = "auto"

[commands.app]
kind = "long_lived"
cmd = "python3 {app} --port ${{APP_PORT}} --state ${{BUGATTI_WORKDIR}}/count --crash-once ${{BUGATTI_WORKDIR}}/crashed"
readiness_url = "http://127.0.0.1:${{APP_PORT}}/health"
restart = "on-failure"
backoff_ms = 50
stop_timeout_secs = 2

[commands.stubborn]
kind = "long_lived"
cmd = "python3 {app} --port ${{STUBBORN_PORT}} --state ${{BUGATTI_WORKDIR}}/other --ignore-term"
readiness = {{ log = "counter listening" }}
stop_timeout_secs = 1
"#
            )),
    );
    p.write(
        "t.test.toml",
        "name = \"T\"\n[[steps]]\ninstruction = \"\"\"\nget http://127.0.0.1:${APP_PORT}/count\nexpect count=0\n\"\"\"\n",
    );
    let out = p.start();
    assert_exit(&out, 0);
    let record = p.record_for("t.test.toml");
    let app = record.command("app");
    assert_eq!(app.restarts.len(), 1, "{app:?}");
    assert!(app.restarts[0].exit_status.contains('1'), "{app:?}");
    assert_eq!(app.teardown, Some(TeardownState::Clean));
    let stubborn = record.command("stubborn");
    assert_eq!(
        stubborn.teardown,
        Some(TeardownState::Killed),
        "{stubborn:?}"
    );
}

#[test]
fn a_server_dying_mid_run_with_no_restart_fails_the_session_with_error() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &(command_provider_config("")
            + r#"
[commands.flaky]
kind = "long_lived"
cmd = "sleep 1; exit 7"
"#),
    );
    p.write(
        "t.test.toml",
        "name = \"T\"\n[[steps]]\ninstruction = \"sleep 20\"\n[[steps]]\ninstruction = \"say later\"\n",
    );
    let out = p.start();
    assert_exit(&out, 3);
    let record = p.record_for("t.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Error));
    let error = record.error.as_deref().unwrap_or_default();
    assert!(error.contains("flaky"), "{error}");
    assert_eq!(statuses(&record)[1], "not_run");
}

#[test]
fn parallel_sessions_of_the_same_steps_each_see_their_own_port_workspace_and_state() {
    let p = Project::new();
    let app = format!(
        "{}/tests/support/counter_app.py",
        env!("CARGO_MANIFEST_DIR")
    );
    p.write(
        "bugatti.config.toml",
        &format!(
            r#"
[provider]
name = "shell"

[supervisor]
max_parallel = 2
keep_workspace = "always"

[ports]
APP_PORT = "auto"

[commands.app]
kind = "long_lived"
cmd = "python3 {app} --port ${{APP_PORT}} --state ${{BUGATTI_WORKDIR}}/count"
readiness_url = "http://127.0.0.1:${{APP_PORT}}/health"
"#
        ),
    );
    let shared = r#"
name = "Counter"
include_only = true

[[steps]]
instruction = """
Increment once and see 1 (the state is this session's only):
```
curl -fsS -X POST http://127.0.0.1:$APP_PORT/inc | grep -x count=1
echo "BUGATTI_LOG port=$APP_PORT workdir=$BUGATTI_WORKDIR"
sleep 1
curl -fsS http://127.0.0.1:$APP_PORT/count | grep -x count=1
```
"""
"#;
    p.write("shared/counter.test.toml", shared);
    for name in ["a", "b"] {
        p.write(
            &format!("{name}.test.toml"),
            "name = \"Counter\"\n[[steps]]\ninclude_path = \"shared/counter.test.toml\"\n",
        );
    }
    let out = p.run(&["start", "a.test.toml", "b.test.toml"]);
    assert_exit(&out, 0);
    let logs: Vec<String> = p
        .run_records()
        .iter()
        .map(|r| r.steps[0].logs[0].clone())
        .collect();
    assert_eq!(logs.len(), 2);
    assert_ne!(
        logs[0], logs[1],
        "each session has its own port and workspace"
    );
    let ports: Vec<&str> = logs
        .iter()
        .map(|l| l.split_whitespace().next().unwrap_or_default())
        .collect();
    assert_ne!(ports[0], ports[1], "{logs:?}");
    for log in &logs {
        let workdir = log.split("workdir=").nth(1).expect("workdir");
        assert_eq!(
            std::fs::read_to_string(format!("{workdir}/count"))
                .ok()
                .as_deref(),
            Some("1"),
            "each workspace holds its own state"
        );
        let _ = std::fs::remove_dir_all(workdir);
    }
}

#[test]
fn retries_mark_a_later_pass_flaky() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "flaky.test.toml",
        "name = \"Flaky\"\n[[steps]]\ninstruction = \"`test -f $BUGATTI_PROJECT_ROOT/.second || { touch $BUGATTI_PROJECT_ROOT/.second; exit 1; }`\"\n",
    );
    let out = p.run(&["start", "--retries", "1"]);
    assert_exit(&out, 0);
    let summary = p.suite_summary();
    assert!(summary.tests[0].flaky, "{summary:?}");
    assert_eq!(summary.tests[0].attempts, 2);
    let junit = std::fs::read_to_string(p.suite_dir().join("junit.xml")).expect("junit");
    assert!(junit.contains("flaky"), "{junit}");
}

#[test]
fn fail_fast_starts_no_new_root_test_after_a_failure() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "a.test.toml",
        "name = \"A\"\n[[steps]]\ninstruction = \"`false`\"\n",
    );
    p.write(
        "b.test.toml",
        "name = \"B\"\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    p.write(
        "c.test.toml",
        "name = \"C\"\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    let out = p.run(&["start", "-j", "1", "--fail-fast"]);
    assert_exit(&out, 1);
    assert_eq!(p.run_records().len(), 1, "only the first test ran");
    let summary = p.suite_summary();
    assert_eq!(Some(summary.not_run.len()), Some(2), "{summary:?}");
}

#[test]
fn a_panic_in_one_session_fails_that_test_only() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "boom.test.toml",
        "name = \"Boom\"\n[[steps]]\ninstruction = \"`sleep 5`\"\n",
    );
    p.write(
        "fine.test.toml",
        "name = \"Fine\"\n[[steps]]\ninstruction = \"`sleep 1`\"\n",
    );
    let out = p
        .supervisor()
        .args(["start"])
        .env(
            crate::common::fault::hook_env(crate::common::fault::Hook::Session),
            "boom",
        )
        .output()
        .expect("run");
    p.assert_nothing_survives();
    assert_exit(&out, 3);
    let boom = p.record_for("boom.test.toml");
    assert_eq!(boom.outcome, Some(RunOutcome::Error));
    assert!(
        boom.error
            .as_deref()
            .unwrap_or_default()
            .contains("panicked"),
        "{boom:?}"
    );
    let fine = p.record_for("fine.test.toml");
    assert_eq!(fine.outcome, Some(RunOutcome::Passed));
}

/// Issue 39 item 8: a panic in the task that runs a session's steps (not the session actor's own
/// handler) once ended only that task: no record past "step 1 started", the session waiting for
/// ever. Now that run ends as an `error` with every record, its processes gone, and the other test
/// runs on.
#[test]
fn a_panic_in_a_sessions_driver_mid_step_ends_that_run_with_its_records() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n[commands.server]\nkind = \"long_lived\"\n\
         cmd = \"echo up; exec sleep 300\"\nreadiness = { log = \"^up$\" }\n",
    );
    p.write(
        "boom.test.toml",
        "name = \"Boom\"\n[[steps]]\ninstruction = \"`sleep 5`\"\n",
    );
    p.write(
        "fine.test.toml",
        "name = \"Fine\"\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    let out = p
        .supervisor()
        .args(["start"])
        .env(
            crate::common::fault::hook_env(crate::common::fault::Hook::Driver),
            "boom",
        )
        .output()
        .expect("run");
    p.assert_nothing_survives();
    assert_exit(&out, 3);
    let boom = p.record_for("boom.test.toml");
    assert_eq!(boom.outcome, Some(RunOutcome::Error), "{boom:?}");
    assert!(
        boom.error
            .as_deref()
            .unwrap_or_default()
            .contains("driver panicked"),
        "{boom:?}"
    );
    let run_dir = boom.run_dir();
    assert!(run_dir.join("report.md").is_file(), "{boom:?}");
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
    assert!(events.contains("run_finished"), "{events}");
    assert_eq!(
        p.record_for("fine.test.toml").outcome,
        Some(RunOutcome::Passed)
    );
    assert!(p.suite_dir().join("summary.json").is_file());
}

#[test]
fn a_skipped_command_is_not_launched_but_its_readiness_is_still_checked() {
    let p = Project::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let app = format!(
        "{}/tests/support/counter_app.py",
        env!("CARGO_MANIFEST_DIR")
    );
    p.write(
        "bugatti.config.toml",
        &format!(
            r#"
[provider]
name = "shell"

[ports]
APP_PORT = {port}

[commands.app]
kind = "long_lived"
cmd = "python3 {app} --port ${{APP_PORT}} --state ${{BUGATTI_WORKDIR}}/count"
readiness = {{ http = "http://127.0.0.1:${{APP_PORT}}/health", timeout_secs = 2 }}
"#
        ),
    );
    p.write(
        "t.test.toml",
        "name = \"T\"\n[[steps]]\ninstruction = \"`curl -fsS -X POST http://127.0.0.1:$APP_PORT/inc`\"\n",
    );
    // Nobody started the server: readiness fails, nothing was launched.
    let out = p.run(&["start", "--skip-cmd", "app"]);
    assert_exit(&out, 3);

    // Started by hand: the run uses it.
    let state = p.root().join("by-hand-count");
    let mut by_hand = std::process::Command::new("python3")
        .args([&app, "--port", &port.to_string(), "--state"])
        .arg(&state)
        .spawn()
        .expect("server by hand");
    let out = p.run(&["start", "--skip-cmd", "app"]);
    let _ = by_hand.kill();
    let _ = by_hand.wait();
    assert_exit(&out, 0);
    assert_eq!(
        std::fs::read_to_string(&state).ok().as_deref(),
        Some("1"),
        "the step reached the server started by hand"
    );
    let record = p
        .run_records()
        .into_iter()
        .find(|r| r.outcome == Some(RunOutcome::Passed))
        .expect("the passing run");
    assert_eq!(record.skipped_commands[0], "app");
    assert_eq!(
        record.commands[0].status,
        CommandStatus::Skipped,
        "{record:?}"
    );
    assert!(
        record.commands[0].teardown.is_none(),
        "not torn down: {record:?}"
    );
}

#[test]
fn a_suite_scoped_command_is_started_once_and_shared_by_every_session() {
    let p = Project::new();
    let app = format!(
        "{}/tests/support/counter_app.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let state = p.root().join("suite-count");
    p.write(
        "bugatti.config.toml",
        &format!(
            r#"
[provider]
name = "shell"

[supervisor]
max_parallel = 3

[ports]
SHARED_PORT = "auto"

[commands.shared]
kind = "long_lived"
scope = "suite"
cmd = "echo started >> {log}; python3 {app} --port ${{SHARED_PORT}} --state {state}"
readiness_url = "http://127.0.0.1:${{SHARED_PORT}}/health"
"#,
            log = p.root().join("starts.log").display(),
            state = state.display()
        ),
    );
    for name in ["a", "b", "c"] {
        p.write(
            &format!("{name}.test.toml"),
            "name = \"Inc\"\n[[steps]]\ninstruction = \"`curl -fsS -X POST http://127.0.0.1:$SHARED_PORT/inc`\"\n",
        );
    }
    let out = p.start();
    assert_exit(&out, 0);
    assert_eq!(
        std::fs::read_to_string(&state).ok().as_deref(),
        Some("3"),
        "all three sessions reached the one shared server"
    );
    let starts = std::fs::read_to_string(p.root().join("starts.log")).expect("starts.log");
    assert_eq!(starts.lines().count(), 1, "started once for the suite");
}

#[test]
fn a_step_cut_off_by_a_dying_server_is_interrupted_and_says_why() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        r#"[provider]
name = "shell"
step_timeout_secs = 60

[commands.server]
kind = "long_lived"
cmd = "echo up; sleep 1; echo 'fatal: out of memory'; exit 7"
readiness = { log = "^up$" }
"#,
    );
    p.write(
        "cut.test.toml",
        "[[steps]]\ninstruction = \"`sleep 30`\"\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    let out = p.start();
    assert_exit(&out, 3);
    let record = p.record_for("cut.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Error), "{record:?}");
    assert_eq!(statuses(&record), ["interrupted", "not_run"]);
    let message = record.steps[0].message.as_deref().unwrap_or_default();
    assert!(
        message.starts_with("interrupted: long-lived command `server` failed"),
        "{message}"
    );
    let excerpt = record.steps[0]
        .harness_log_excerpt
        .get("server")
        .map(String::as_str)
        .unwrap_or_default();
    assert!(excerpt.contains("fatal: out of memory"), "{record:?}");
}

#[test]
fn the_console_ends_with_every_failure_again_also_under_quiet() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write("good.test.toml", "[[steps]]\ninstruction = \"`true`\"\n");
    p.write(
        "bad.test.toml",
        "[[steps]]\ninstruction = \"`true`\"\n[[steps]]\ninstruction = \"`echo basket is empty; exit 3`\"\n",
    );
    let out = p.run(&["start", "-q", "-j", "2"]);
    let console = stdout(&out);
    assert_exit(&out, 1);
    let recap = console
        .split("Failures (1):")
        .nth(1)
        .unwrap_or_else(|| panic!("no recap of the failures: {console}"));
    let recap = recap.split("Summary:").next().unwrap_or_default();
    assert!(recap.contains("FAILED      bad.test.toml"), "{recap}");
    assert!(
        recap.contains("step 2") && recap.contains("exited 3"),
        "{recap}"
    );
    assert!(
        recap.contains("report: ") && recap.contains("report.md"),
        "{recap}"
    );
    assert!(!recap.contains("good.test.toml"), "{recap}");
}

#[test]
fn a_fast_shell_steps_logs_come_before_its_result() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    let steps: String = (1..=5)
        .map(|i| format!("[[steps]]\ninstruction = \"`echo BUGATTI_LOG step {i} says hi`\"\n"))
        .collect();
    p.write("fast.test.toml", &steps);
    let out = p.start();
    let console = stdout(&out);
    assert_exit(&out, 0);
    let record = p.record_for("fast.test.toml");
    let run_dir = record.run_dir();
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
    for i in 1..=5 {
        let at = |kind: &str| {
            events
                .lines()
                .position(|l| l.contains(kind) && l.contains(&format!("\"step_id\":{i},")))
                .unwrap_or_else(|| panic!("no {kind} for step {i}:\n{events}"))
        };
        assert!(at("\"agent_log\"") < at("\"step_finished\""), "{events}");
        let line = |text: &str| {
            console
                .lines()
                .position(|l| l.contains(text))
                .unwrap_or_else(|| panic!("no {text:?} on the console:\n{console}"))
        };
        assert!(
            line(&format!("LOG ........ step {i} says hi"))
                < line(&format!("STEP {i} ........ OK")),
            "{console}"
        );
    }
}

#[test]
fn tests_fail_fast_never_started_are_counted_apart_not_as_failures() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    for name in ["b", "c"] {
        p.write(
            &format!("{name}.test.toml"),
            "[[steps]]\ninstruction = \"`true`\"\n",
        );
    }
    // The shell provider runs in the workspace; the marker sits at the project root.
    p.write(
        "a.test.toml",
        &format!(
            "name = \"A\"\n[[steps]]\ninstruction = \"`test ! -e {}/fail-now`\"\n",
            p.root().display()
        ),
    );
    let first = p.run(&["start", "-j", "1"]);
    assert_exit(&first, 0);
    p.write("fail-now", "");
    let out = p.run(&["start", "-j", "1", "--fail-fast"]);
    let console = stdout(&out);
    assert_exit(&out, 1);
    assert!(console.contains("Failures (1):"), "{console}");
    assert!(console.contains("Not run (2):"), "{console}");
    assert!(
        !console.contains("new failure: b.test.toml"),
        "a test never started is no new failure: {console}"
    );
    assert!(
        console.contains("not run: b.test.toml (was passed, now not_run)"),
        "{console}"
    );
    assert!(console.contains("new failure: a.test.toml"), "{console}");
}

#[test]
fn a_failed_attempt_that_is_retried_reads_as_a_try_not_as_failed() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    // Fails on its first attempt, passes on the second (the marker sits at the project root:
    // each attempt has a workspace of its own).
    p.write(
        "flaky.test.toml",
        &format!(
            "[[steps]]\ninstruction = \"`test -e {m} || {{ touch {m}; false; }}`\"\n",
            m = p.root().join("tried").display()
        ),
    );
    let out = p.run(&["start", "--retries", "2"]);
    let console = stdout(&out);
    assert_exit(&out, 0);
    assert!(
        console.contains("TRY 1 FAIL  flaky.test.toml"),
        "the first attempt is a try: {console}"
    );
    assert!(console.contains("retrying: attempt 2 of 3"), "{console}");
    assert!(
        !console.contains("FAILED"),
        "a green log holds no FAILED line: {console}"
    );
    assert!(console.contains("PASSED"), "{console}");
    assert!(console.contains("(attempt 2)"), "{console}");
}

#[test]
fn the_last_attempt_of_a_failing_test_reads_failed() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write("bad.test.toml", "[[steps]]\ninstruction = \"`false`\"\n");
    let out = p.run(&["start", "--retries", "1"]);
    let console = stdout(&out);
    assert_exit(&out, 1);
    assert!(console.contains("TRY 1 FAIL  bad.test.toml"), "{console}");
    assert!(console.contains("FAILED      bad.test.toml"), "{console}");
}

/// A project whose setup command leaves a mark when it runs: the preflight must refuse before it.
fn marked_project(config: &str) -> Project {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!(
            "{config}\n[commands.mark]\nkind = \"short_lived\"\ncmd = \"touch ${{BUGATTI_PROJECT_ROOT}}/setup-ran\"\n"
        ),
    );
    p.write(
        "a.test.toml",
        "name = \"A\"\n[[steps]]\ninstruction = \"Check it.\"\n",
    );
    p
}

#[test]
fn a_missing_agent_cli_is_refused_with_exit_2_before_anything_starts() {
    let p = marked_project("[provider]\nname = \"claude-code\"\n");
    let empty = tempfile::tempdir().expect("empty PATH dir");
    let out = p
        .supervisor()
        .arg("start")
        .env("PATH", empty.path())
        .env_remove("BUGATTI_CLAUDE_BIN")
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}\n{}", stdout(&out));
    assert!(
        err.contains("`claude` not found on PATH")
            && err.contains("npm install -g @anthropic-ai/claude-code")
            && err.contains("BUGATTI_CLAUDE_BIN"),
        "names the program and the fix: {err}"
    );
    assert!(!p.root().join("setup-ran").exists(), "nothing started");
    assert!(p.run_records().is_empty(), "no run began");
}

#[test]
fn a_missing_browser_is_refused_with_exit_2_before_anything_starts() {
    let p = marked_project(
        "[provider]\nname = \"shell\"\n[browser]\nexecutable = \"/nonexistent/chromium\"\nmcp = false\n",
    );
    let out = p.start();
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}\n{}", stdout(&out));
    assert!(
        err.contains("/nonexistent/chromium") && err.contains("[browser] executable"),
        "names the browser and the setting: {err}"
    );
    assert!(!p.root().join("setup-ran").exists(), "nothing started");
}
