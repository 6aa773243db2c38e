//! The harness's own failures are recorded as truthfully as test failures: a failed or timed-out
//! setup command carries its status and exit code in run.json, events.jsonl, report.md and on the
//! console; a failed suite-scoped command makes every test an `error` in JUnit and the summaries,
//! with the reason, so a CI dashboard cannot show green.

use crate::common::assert_exit;
use crate::common::records::*;
use crate::common::{stdout, Project};

#[test]
fn a_failed_setup_command_is_failed_with_its_exit_code_everywhere() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[commands.migrate]\nkind = \"short_lived\"\ncmd = \"echo migrating; echo 'no such table: users' >&2; exit 4\"\n",
    );
    p.write("a.test.toml", "[[steps]]\ninstruction = \"`true`\"\n");
    let out = p.start();
    let console = stdout(&out);
    assert_exit(&out, 3);
    assert!(
        console.contains("SETUP migrate ........ FAILED")
            && console.contains("no such table: users"),
        "the console shows the failure and its log tail: {console}"
    );
    let record = p.record_for("a.test.toml");
    let migrate = record.command("migrate");
    assert_eq!(migrate.status, CommandStatus::Failed, "{migrate:?}");
    assert_eq!(migrate.exit_code, Some(4), "{migrate:?}");
    let run_dir = record.run_dir();
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
    assert!(
        events
            .lines()
            .any(|l| l.contains(r#""state":"failed""#) && l.contains(r#""exit_code":4"#)),
        "{events}"
    );
    let report = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("| migrate | short_lived | test | failed"),
        "{report}"
    );
}

#[test]
fn a_setup_command_past_its_timeout_is_timed_out() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[commands.seed]\nkind = \"short_lived\"\ncmd = \"sleep 30\"\ntimeout_secs = 1\n",
    );
    p.write("a.test.toml", "[[steps]]\ninstruction = \"`true`\"\n");
    let out = p.start();
    assert_exit(&out, 3);
    let record = p.record_for("a.test.toml");
    let seed = record.command("seed");
    assert_eq!(seed.status, CommandStatus::TimedOut, "{seed:?}");
    assert!(
        seed.error
            .as_deref()
            .unwrap_or_default()
            .contains("did not finish within"),
        "{seed:?}"
    );
    assert!(
        seed.error
            .as_deref()
            .unwrap_or_default()
            .contains("(its `timeout_secs`; raise it to wait longer)"),
        "the setting that raises the limit is named: {seed:?}"
    );
}

#[test]
fn a_pty_setup_command_that_prompts_is_stopped_and_said_to_wait_for_input() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[commands.reset]\nkind = \"short_lived\"\n\
         cmd = \"printf 'Overwrite the database? [y/N] '; read answer\"\npty = true\ntimeout_secs = 1\n",
    );
    p.write("a.test.toml", "[[steps]]\ninstruction = \"`true`\"\n");
    let out = p.start();
    let console = stdout(&out);
    assert_exit(&out, 3);
    let record = p.record_for("a.test.toml");
    let reset = record.command("reset");
    assert_eq!(reset.status, CommandStatus::TimedOut, "{reset:?}");
    let error = reset.error.as_deref().unwrap_or_default();
    assert!(
        error.contains("setup command `reset` did not finish")
            && error.contains("it may be waiting for input")
            && error.contains("Overwrite the database?"),
        "names the command, the likely cause and shows the prompt: {error}"
    );
    assert!(console.contains("it may be waiting for input"), "{console}");
}

#[test]
fn a_failed_suite_command_makes_every_test_an_error_with_the_reason() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[commands.db]\nkind = \"short_lived\"\nscope = \"suite\"\ncmd = \"echo 'database refused the connection'; exit 5\"\n",
    );
    p.write("a.test.toml", "[[steps]]\ninstruction = \"`true`\"\n");
    p.write("b.test.toml", "[[steps]]\ninstruction = \"`true`\"\n");
    let out = p.start();
    let console = stdout(&out);
    assert_exit(&out, 3);
    let suite = p.suite_dir();
    let junit = std::fs::read_to_string(suite.join("junit.xml")).expect("junit.xml");
    assert!(
        junit.contains(r#"errors="2""#) && junit.contains(r#"skipped="0""#),
        "{junit}"
    );
    assert!(junit.contains("database refused the connection"), "{junit}");
    let summary = p.suite_summary();
    assert_eq!(summary.totals.error, 2, "{summary:?}");
    assert!(
        summary
            .harness_error
            .as_deref()
            .unwrap_or_default()
            .contains("setup command `db` failed with exit code 5"),
        "{summary:?}"
    );
    let md = std::fs::read_to_string(suite.join("summary.md")).expect("summary.md");
    assert!(md.contains("## Suite harness error"), "{md}");
    assert!(console.contains("ERROR       a.test.toml"), "{console}");
}

/// A suite-scoped `db`, and a test-scoped `api` that crashes when the step asks it to.
fn project_with_a_suite_command_and_a_crashing_server() -> Project {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        r#"[provider]
name = "shell"

[commands.db]
kind = "long_lived"
scope = "suite"
cmd = "echo db up; exec sleep 60"
readiness = { log = "db up" }

[commands.api]
kind = "long_lived"
cmd = "echo api up; while [ ! -f \"$BUGATTI_WORKDIR/crash\" ]; do sleep 0.05; done; echo 'Traceback: boom'; exit 3"
readiness = { log = "api up" }
"#,
    );
    p.write("a.test.toml", "[[steps]]\ninstruction = \"`true`\"\n");
    p.write(
        "b.test.toml",
        "[[steps]]\ninstruction = \"`touch $BUGATTI_WORKDIR/crash; sleep 30`\"\n",
    );
    p
}

#[test]
fn suite_scoped_commands_are_on_the_console_and_in_every_runs_report() {
    let p = project_with_a_suite_command_and_a_crashing_server();
    let out = p.run(&["start", "-j", "1"]);
    let console = stdout(&out);
    assert_exit(&out, 3);
    assert!(
        console.contains("[suite] SETUP db ........ started")
            && console.contains("[suite] SETUP db ........ ready (log /db up/)"),
        "{console}"
    );
    for file in ["a.test.toml", "b.test.toml"] {
        let record = p.record_for(file);
        let db = record.command("db");
        assert_eq!(db.scope, "suite", "{db:?}");
        assert_eq!(db.status, CommandStatus::Ready, "{db:?}");
        assert_eq!(record.command("api").scope, "test");
        let run_dir = record.run_dir();
        let log = run_dir.join(&db.log);
        let text = std::fs::read_to_string(&log).expect("the suite command's log, from the run");
        assert!(text.contains("db up"), "{}: {text}", log.display());
        let report = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
        assert!(!report.contains("No harness commands"), "{report}");
        assert!(
            report.contains("| db | long_lived | suite | ready |"),
            "{report}"
        );
    }
}

#[test]
fn a_server_crash_mid_test_is_not_called_a_setup_failure() {
    let p = project_with_a_suite_command_and_a_crashing_server();
    let out = p.run(&["start", "-j", "1", "b.test.toml"]);
    let console = stdout(&out);
    assert_exit(&out, 3);
    assert!(!console.contains("SETUP api ........ FAILED"), "{console}");
    assert!(!console.contains("SETUP api ........ exited"), "{console}");
    assert!(
        console.contains("COMMAND api ........ during step 1: exited with 3")
            && console.contains("COMMAND api ........ during step 1: FAILED"),
        "{console}"
    );
}

#[test]
fn a_suite_command_dying_mid_run_is_in_that_runs_events_and_on_the_console() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        r#"[provider]
name = "shell"

[commands.db]
kind = "long_lived"
scope = "suite"
cmd = "echo db up; while [ ! -f \"$BUGATTI_PROJECT_ROOT/die\" ]; do sleep 0.05; done; exit 7"
readiness = { log = "db up" }
"#,
    );
    // The step ends only once the run has heard of the death (or at its timeout: then it fails).
    p.write(
        "a.test.toml",
        r#"[[steps]]
timeout_secs = 20
instruction = "`touch $BUGATTI_PROJECT_ROOT/die; until grep '\"exit_code\":7' $BUGATTI_RUN_DIR/events.jsonl | grep -q '\"state\":\"exited\"'; do sleep 0.05; done`"
"#,
    );
    let out = p.run(&["start", "--step-timeout", "20"]);
    let console = stdout(&out);
    assert_exit(&out, 0);
    assert!(
        console.contains("[suite] COMMAND db ........ while tests ran: exited with 7"),
        "{console}"
    );
    assert!(
        console.contains("] COMMAND db ........ during step 1: exited with 7"),
        "{console}"
    );
    let record = p.record_for("a.test.toml");
    let db = record.command("db");
    assert_eq!(db.scope, "suite", "{db:?}");
    assert_ne!(
        db.status,
        CommandStatus::Ready,
        "the run's record saw the death: {db:?}"
    );
    assert_eq!(db.exit_code, Some(7), "{db:?}");
}
