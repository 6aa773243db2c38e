//! Stability you can certify (docs/ci.md, "Stability classes and repeats"): the commit and dirty
//! flag in every suite's records, `--repeat N` classifying each test with its evidence, and the
//! auto-quarantine policy.

use crate::common::assert_exit;
use crate::common::records::*;
use crate::common::{stdout, Project};
use std::process::Command;

/// A step printing `stock 3` or `stock 0` and passing or failing, by a counter in the project
/// root (each run's workspace is fresh): `$n` is how many runs came before.
fn counting(name: &str, body: &str) -> String {
    format!(
        "name = \"{name}\"\n[[steps]]\ninstruction = \"`f=$BUGATTI_PROJECT_ROOT/.{name}; n=$(cat $f 2>/dev/null || echo 0); echo $((n+1)) > $f; {body}`\"\n"
    )
}

fn git(p: &Project, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(p.root())
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

fn has_git() -> bool {
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn stability_of<'a>(summary: &'a SuiteSummary, file: &str) -> &'a Stability {
    summary
        .stability
        .iter()
        .find(|s| s.test_file == file)
        .unwrap_or_else(|| panic!("no stability for {file}: {summary:?}"))
}

/// Every entry of the project's history, oldest first.
fn history(p: &Project) -> Vec<HistoryEntry> {
    bugatti::report::records::history::read(&p.root().join(".bugatti/history.jsonl"))
}

#[test]
fn repeat_tells_a_steady_an_app_flaky_and_a_verdict_flaky_test_apart() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write("steady.test.toml", &counting("steady", "echo stock 3"));
    // Output and verdict alternate: the app showed something else when it failed.
    p.write(
        "app.test.toml",
        &counting(
            "app",
            "if [ $((n % 2)) = 0 ]; then echo stock 3; else echo stock 0; exit 1; fi",
        ),
    );
    // The same output every time; only the verdict alternates.
    p.write(
        "verdict.test.toml",
        &counting("verdict", "echo stock 3; test $((n % 2)) = 0"),
    );
    let out = p.run(&["start", "--repeat", "4", "-j", "2"]);
    let console = stdout(&out);
    assert_exit(&out, 1);
    assert_eq!(p.run_records().len(), 12, "3 tests × 4 runs");
    assert!(
        console.contains("[12/12]") && !console.contains("[13/"),
        "runs are counted: {console}"
    );
    let summary = p.suite_summary();
    let steady = stability_of(&summary, "steady.test.toml");
    assert_eq!(steady.class, StabilityClass::Stable, "{steady:?}");
    assert_eq!(steady.runs.len(), 4);
    let app = stability_of(&summary, "app.test.toml");
    assert_eq!(app.class, StabilityClass::AppFlaky, "{app:?}");
    assert_eq!(
        app.differed.first().map(String::as_str),
        Some("run 2 (failed) vs run 1 (passed)"),
        "{app:?}"
    );
    let first = app.first_difference.as_deref().unwrap_or_default();
    assert!(
        first.contains("\"stock 3\" in run 1") && first.contains("\"stock 0\" in run 2"),
        "{first}"
    );
    let verdict = stability_of(&summary, "verdict.test.toml");
    assert_eq!(verdict.class, StabilityClass::VerdictFlaky, "{verdict:?}");
    assert!(
        verdict
            .first_difference
            .as_deref()
            .unwrap_or_default()
            .contains("the verdict alone changed"),
        "{verdict:?}"
    );
    // A test that failed in one of its repeats failed.
    let outcome = |file: &str| {
        summary
            .tests
            .iter()
            .find(|t| t.test_file == file)
            .map(|t| t.outcome)
    };
    assert_eq!(outcome("verdict.test.toml"), Some(RunOutcome::Failed));
    assert_eq!(outcome("steady.test.toml"), Some(RunOutcome::Passed));
    // The console says each class with its evidence.
    assert!(
        console.contains("app.test.toml: app-flaky over 4 run(s) [passed failed passed failed]"),
        "{console}"
    );
    assert!(
        console.contains("verdict.test.toml: verdict-flaky"),
        "{console}"
    );
    assert!(console.contains("first difference: line"), "{console}");
    // report.html: a badge and a sparkline per classified test.
    let html = std::fs::read_to_string(p.suite_dir().join("report.html")).expect("report.html");
    for class in ["stable", "app-flaky", "verdict-flaky"] {
        assert!(
            html.contains(&format!("data-class=\"{class}\"")),
            "no {class} badge in report.html"
        );
    }
    assert!(html.contains("<svg class=\"sparkline\""));
    // History keeps each run's observed outputs and the classes.
    let entry = history(&p).pop().expect("a history entry");
    assert_eq!(entry.stability.len(), 3, "{entry:?}");
    assert_eq!(entry.commit, None, "not a repository: {entry:?}");
    assert_eq!(summary.commit, None);
    assert_eq!(summary.dirty, None);
    p.assert_nothing_survives();
}

#[test]
fn the_commit_and_dirty_flag_are_recorded_in_summary_history_and_report() {
    if !has_git() {
        crate::common::skip::skip("git", "git is not installed");
        return;
    }
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "a.test.toml",
        "name = \"A\"\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    git(&p, &["init", "-q"]);
    git(&p, &["add", "bugatti.config.toml", "a.test.toml"]);
    git(&p, &["commit", "-q", "-m", "first"]);
    let head = String::from_utf8(
        Command::new("git")
            .arg("-C")
            .arg(p.root())
            .args(["rev-parse", "HEAD"])
            .output()
            .expect("git")
            .stdout,
    )
    .expect("utf-8")
    .trim()
    .to_string();
    let out = p.start();
    assert_exit(&out, 0);
    let summary = p.suite_summary();
    assert_eq!(
        summary.commit.as_deref(),
        Some(head.as_str()),
        "{summary:?}"
    );
    assert_eq!(
        summary.dirty,
        Some(false),
        "the artifact directory is untracked: {summary:?}"
    );
    let html = std::fs::read_to_string(p.suite_dir().join("report.html")).expect("html");
    assert!(
        html.contains(&format!("commit {}", &head[..12])),
        "the report header names the commit"
    );
    // A tracked file changed: dirty.
    p.write(
        "a.test.toml",
        "name = \"A\"\n[[steps]]\ninstruction = \"`true && true`\"\n",
    );
    let out = p.start();
    assert_exit(&out, 0);
    let lines = history(&p);
    assert_eq!(lines[0].commit.as_deref(), Some(head.as_str()));
    assert_eq!(lines[0].dirty, Some(false));
    assert_eq!(lines[1].dirty, Some(true), "{:?}", lines[1]);
}

#[test]
fn auto_quarantine_holds_a_flaky_test_until_five_passes_and_never_a_broken_one() {
    if !has_git() {
        crate::common::skip::skip("git", "git is not installed");
        return;
    }
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n[supervisor]\nauto_quarantine = true\n",
    );
    p.write(
        "flaky.test.toml",
        &counting("flaky", "echo stock 3; test $((n % 2)) = 0"),
    );
    p.write(
        "broken.test.toml",
        "name = \"Broken\"\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    git(&p, &["init", "-q"]);
    git(&p, &["add", "."]);
    git(&p, &["commit", "-q", "-m", "works"]);
    // Passes once on the first commit; then it breaks on the next one.
    let out = p.run(&["start", "broken"]);
    assert_exit(&out, 0);
    p.write(
        "broken.test.toml",
        "name = \"Broken\"\n[[steps]]\ninstruction = \"`false`\"\n",
    );
    git(&p, &["commit", "-q", "-am", "breaks"]);
    let out = p.run(&["start", "broken", "--repeat", "2"]);
    assert_exit(&out, 1);
    assert_eq!(
        stability_of(&p.suite_summary(), "broken.test.toml").class,
        StabilityClass::Broken
    );
    let out = p.run(&["start", "broken"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a broken test is never quarantined"
    );
    let summary = p.suite_summary();
    assert!(summary.quarantine_changes.is_empty(), "{summary:?}");

    // The flaky test: classified verdict-flaky by a repeat, then quarantined.
    let out = p.run(&["start", "flaky", "--repeat", "2", "-j", "1"]);
    assert_exit(&out, 1);
    assert_eq!(
        stability_of(&p.suite_summary(), "flaky.test.toml").class,
        StabilityClass::VerdictFlaky
    );
    // Its next run fails (the counter says an odd run).
    std::fs::write(p.root().join(".flaky"), "1").expect("counter");
    let out = p.run(&["start", "flaky"]);
    let console = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "quarantined: its failure does not count: {console}"
    );
    let summary = p.suite_summary();
    let change = summary.quarantine_changes.first();
    assert_eq!(
        change.map(|c| (c.test_file.as_str(), c.change.as_str())),
        Some(("flaky.test.toml", "quarantined")),
        "{summary:?}"
    );
    assert!(summary.tests[0].quarantined);
    assert!(
        console.contains("auto-quarantine: flaky.test.toml quarantined"),
        "{console}"
    );
    // Fixed: five passes in a row, still quarantined and named no more; the sixth is released.
    p.write(
        "flaky.test.toml",
        "name = \"flaky\"\n[[steps]]\ninstruction = \"`echo stock 3`\"\n",
    );
    for n in 1..=5 {
        let out = p.run(&["start", "flaky"]);
        assert_exit(&out, 0);
        let summary = p.suite_summary();
        assert!(summary.tests[0].quarantined, "pass {n}: {summary:?}");
        assert!(
            summary.quarantine_changes.is_empty(),
            "pass {n}: {summary:?}"
        );
    }
    let out = p.run(&["start", "flaky"]);
    let summary = p.suite_summary();
    assert_eq!(
        summary
            .quarantine_changes
            .first()
            .map(|c| c.change.as_str()),
        Some("released"),
        "{summary:?}"
    );
    assert!(!summary.tests[0].quarantined, "{summary:?}");
    assert!(stdout(&out).contains("auto-quarantine: flaky.test.toml released"));
    let md = std::fs::read_to_string(p.suite_dir().join("summary.md")).expect("md");
    assert!(md.contains("flaky.test.toml released"), "{md}");
    p.assert_nothing_survives();
}

/// `--repeat` counts every run (docs/ci.md): a run that failed fails the suite even when the runs
/// after it passed, and the console, summary.json, JUnit and the exit code all say so.
#[test]
fn a_failed_repeat_fails_the_suite_whichever_run_came_last() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    // Runs 1 and 3 pass, run 2 fails.
    p.write("middle.test.toml", &counting("middle", "test $n != 1"));
    let out = p.run(&["start", "--repeat", "3", "-j", "1"]);
    let console = stdout(&out);
    assert_exit(&out, 1);
    let summary = p.suite_summary();
    let test = &summary.tests[0];
    let outcomes: Vec<RunOutcome> = test.history.iter().map(|a| a.outcome).collect();
    assert_eq!(
        outcomes,
        [RunOutcome::Passed, RunOutcome::Failed, RunOutcome::Passed],
        "{console}"
    );
    assert_eq!(test.outcome, RunOutcome::Failed, "{console}");
    assert!(!test.flaky, "a failed repeat is not a flaky pass");
    assert!(
        !summary.passed(),
        "the summary's verdict is the exit code's"
    );
    assert_eq!((summary.totals.failed, summary.totals.passed), (1, 0));
    let junit = std::fs::read_to_string(p.suite_dir().join("junit.xml")).expect("junit.xml");
    assert!(
        junit.contains("failures=\"1\"") && junit.contains("<failure"),
        "{junit}"
    );
    assert!(
        !junit.contains("rerunFailure"),
        "the runs that passed are no rerun failures: {junit}"
    );
    p.assert_nothing_survives();
}
