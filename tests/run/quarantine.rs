//! A team's policies for tests it cannot yet trust (see docs/ci.md), through the real binary with
//! the `shell` provider: `--fail-on-flaky` / `[supervisor] flaky = "fail"` makes a pass on a
//! retry fail the suite and says why; a quarantined test (`quarantine = true`, or
//! `[supervisor] quarantine` globs) runs and is reported apart, and never changes the exit code.

use crate::common;
use crate::common::assert_exit;
use crate::common::records::*;

use common::{stderr, stdout, Project};

/// `tests/flaky.test.toml` fails its first attempt and passes the next (a marker file), and
/// `tests/good.test.toml` passes.
fn flaky_project(config_extra: &str) -> Project {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!("[provider]\nname = \"shell\"\n{config_extra}"),
    );
    let marker = p.root().join("attempted");
    p.write(
        "tests/flaky.test.toml",
        &format!(
            "[[steps]]\ninstruction = \"`test -f {m} || {{ touch {m}; exit 1; }}`\"\n",
            m = marker.display()
        ),
    );
    p.write(
        "tests/good.test.toml",
        "[[steps]]\ninstruction = \"`echo ok`\"\n",
    );
    p
}

fn reset(p: &Project) {
    let _ = std::fs::remove_file(p.root().join("attempted"));
}

fn read(p: &Project, name: &str) -> String {
    std::fs::read_to_string(p.suite_dir().join(name)).expect(name)
}

#[test]
fn a_flaky_pass_fails_the_suite_only_under_fail_on_flaky_and_says_why() {
    let p = flaky_project("");
    let out = p.run(&["start", "--retries", "1"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "by default a flaky pass passes: {}",
        stderr(&out)
    );
    assert_eq!(p.suite_summary().totals.flaky, 1);

    reset(&p);
    let out = p.run(&["start", "--retries", "1", "--fail-on-flaky"]);
    let console = format!("{}{}", stdout(&out), stderr(&out));
    assert_exit(&out, 1);
    assert!(
        console.contains("FLAKY") && console.contains("passed only on a retry"),
        "the console says why: {console}"
    );
    let summary = p.suite_summary();
    assert!(summary.fail_on_flaky, "{summary:?}");
    assert!(read(&p, "summary.md").contains("passed only on a retry"));
    let junit = read(&p, "junit.xml");
    let case = junit
        .split("<testcase ")
        .find(|c| c.contains("name=\"tests/flaky.test.toml\""))
        .expect("a testcase");
    assert!(
        case.contains("<failure") && case.contains("type=\"flaky\""),
        "{case}"
    );
    let html = read(&p, "report.html");
    assert!(
        html.contains("badge b-failed\">FAILED"),
        "the page's verdict is failed"
    );

    // The same from the config, and `check` shows where the policy came from.
    let q = flaky_project("\n[supervisor]\nflaky = \"fail\"\n");
    let out = q.run(&["start", "--retries", "1"]);
    assert_exit(&out, 1);
    let out = q.check();
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l.contains("supervisor.flaky") && l.contains("fail")),
        "{}",
        stdout(&out)
    );
    // A wrong value is a clear error naming it.
    let r = flaky_project("\n[supervisor]\nflaky = \"maybe\"\n");
    let out = r.check();
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("maybe"), "{}", stderr(&out));
}

#[test]
fn a_quarantined_failure_runs_is_reported_apart_and_exits_0() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "tests/good.test.toml",
        "[[steps]]\ninstruction = \"`echo ok`\"\n",
    );
    p.write(
        "tests/known_bad.test.toml",
        "quarantine = true\n\n[[steps]]\ninstruction = \"`echo QUARANTINED-BROKE; exit 1`\"\n",
    );
    let out = p.check();
    assert!(
        stdout(&out).contains("tests/known_bad.test.toml — \"known_bad\"  [quarantined"),
        "{}",
        stdout(&out)
    );
    let out = p.start();
    let console = format!("{}{}", stdout(&out), stderr(&out));
    assert_exit(&out, 0);
    assert!(
        console.contains("Quarantined (1), not deciding the exit code:")
            && !console.contains("Failures ("),
        "{console}"
    );
    let summary = p.suite_summary();
    let bad = summary
        .tests
        .iter()
        .find(|t| t.test_file == "tests/known_bad.test.toml")
        .expect("it ran");
    assert_eq!(
        bad.outcome,
        RunOutcome::Failed,
        "reported as it is: {bad:?}"
    );
    assert!(bad.quarantined, "{bad:?}");
    let md = read(&p, "summary.md");
    assert!(
        md.contains("## Quarantined") && md.contains("`tests/known_bad.test.toml` failed"),
        "{md}"
    );
    assert!(!md.contains("## Not passed"), "{md}");
    let junit = read(&p, "junit.xml");
    assert!(
        junit.contains("<property name=\"quarantined\" value=\"tests/known_bad.test.toml\"/>"),
        "{junit}"
    );
    let html = read(&p, "report.html");
    assert!(
        html.contains("<h2 id=\"quarantined\">Quarantined</h2>"),
        "listed apart"
    );
    assert!(
        html.contains("badge b-passed\">PASSED"),
        "the verdict is the suite's"
    );
    let entry = bugatti::report::records::history::read(&p.root().join(".bugatti/history.jsonl"))
        .pop()
        .expect("a history entry");
    assert!(
        entry
            .tests
            .iter()
            .any(|t| t.test_file == "tests/known_bad.test.toml" && t.quarantined && !t.passed),
        "history keeps it: {entry:?}"
    );

    // By glob from the config, flaky under --fail-on-flaky too: still exit 0.
    p.write(
        "tests/known_bad.test.toml",
        "[[steps]]\ninstruction = \"`exit 1`\"\n",
    );
    let marker = p.root().join("attempted");
    p.write(
        "tests/known_flaky.test.toml",
        &format!(
            "[[steps]]\ninstruction = \"`test -f {m} || {{ touch {m}; exit 1; }}`\"\n",
            m = marker.display()
        ),
    );
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[supervisor]\nquarantine = [\"tests/known_*.test.toml\"]\n",
    );
    let out = p.run(&["start", "--retries", "1", "--fail-on-flaky"]);
    assert_exit(&out, 0);
    let summary = p.suite_summary();
    let quarantined: Vec<_> = summary.tests.iter().filter(|t| t.quarantined).collect();
    assert_eq!(quarantined.len(), 2, "{summary:?}");
    // Without quarantine the same suite fails.
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    let out = p.start();
    assert_exit(&out, 1);
}

#[test]
fn a_quarantined_tests_harness_error_still_exits_3() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[commands.migrate]\nkind = \"short_lived\"\ncmd = \"echo cannot migrate; exit 7\"\n",
    );
    p.write(
        "tests/known_bad.test.toml",
        "quarantine = true\n\n[[steps]]\ninstruction = \"`echo ok`\"\n",
    );
    let out = p.start();
    let console = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(
        out.status.code(),
        Some(3),
        "quarantine hides a test's flakiness, not a harness that cannot start: {console}"
    );
    let summary = p.suite_summary();
    assert_eq!(summary.tests[0].outcome, RunOutcome::Error, "{summary:?}");
    assert!(summary.tests[0].quarantined, "{summary:?}");
    // The recap agrees with the exit code: a failure, never "not deciding the exit code".
    assert!(
        console.contains("(quarantined, but its harness failed: that decides the exit code)"),
        "{console}"
    );
    assert!(!console.contains("not deciding the exit code"), "{console}");
    // `merge` of that suite does not pass it either.
    let suite = p.suite_dir();
    let out = p.run(&[
        "merge",
        &suite.display().to_string(),
        "--out",
        &p.root().join("merged").display().to_string(),
    ]);
    assert_exit(&out, 1);
}
