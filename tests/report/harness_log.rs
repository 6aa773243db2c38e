//! Each run's `diagnostics/harness.log` holds that run's lines only: a session's tracing span is a
//! root of its own, so the 30th run of a `-j 1` suite logs no more than the first (before, each
//! session's span nested in the previous one's and every line carried all earlier runs' ids).

use crate::common::assert_exit;
use crate::common::records::*;
use crate::common::Project;

#[test]
fn the_last_runs_harness_log_is_as_small_as_the_firsts() {
    last_run_log_against_first(30);
}

/// Issue 11's figure: 1000 one-step tests at `-j 1` (before the fix, a 295 KB log for the last
/// run and a 180 MB `.bugatti`). A few minutes on 2 cores, so not in CI:
/// `cargo test --test report harness_log:: -- --ignored --nocapture`.
#[test]
#[ignore]
fn a_thousand_tests_the_last_runs_harness_log_is_as_small_as_the_firsts() {
    last_run_log_against_first(1000);
}

fn dir_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            _ => e.metadata().map(|m| m.len()).unwrap_or(0),
        })
        .sum()
}

/// Runs `n` one-step tests at `-j 1`; the last run's harness.log must be no bigger than the
/// first's (give or take the width of numbers) and hold no other run's lines.
fn last_run_log_against_first(n: usize) {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    for i in 0..n {
        p.write(
            &format!("t{i:04}.test.toml"),
            "[[steps]]\ninstruction = \"`true`\"\n",
        );
    }
    let out = p.run(&["start", "-j", "1", "-q"]);
    assert_exit(&out, 0);
    let mut records = p.run_records();
    records.sort_by_key(|r| r.identity.started_at);
    let log_of = |r: &RunRecord| r.read("diagnostics/harness.log");
    assert_eq!(records.len(), n);
    let (first, last) = (log_of(&records[0]), log_of(&records[n - 1]));
    println!(
        "{n} one-step tests at -j 1: first run's harness.log {} bytes, last run's {} bytes; \
         suite harness.log {} bytes; .bugatti {} bytes",
        first.len(),
        last.len(),
        std::fs::metadata(p.suite_dir().join("harness.log")).map_or(0, |m| m.len()),
        dir_size(&p.root().join(".bugatti"))
    );
    assert!(
        last.len() <= first.len() + 200,
        "the last run's log ({} bytes) grew past the first's ({} bytes):\n{last}",
        last.len(),
        first.len()
    );
    let own = records[n - 1].identity.run_id.as_str();
    for line in last.lines() {
        assert!(
            !line.contains("run_id=") || line.matches("run_id=").all(|_| line.contains(own)),
            "a line of another run: {line}"
        );
        assert_eq!(line.matches("run{").count(), 1, "nested run spans: {line}");
    }
}

/// The suite's `harness.log` (`.bugatti/suites/<id>/harness.log`).
fn suite_log(p: &Project) -> String {
    std::fs::read_to_string(p.suite_dir().join("harness.log")).expect("suite harness.log")
}

/// Rust `Debug` output of a struct, an enum with fields or an `Option` (`Foo { a: 1 }`, `Some(..)`).
fn debug_dump(line: &str) -> bool {
    line.contains(" { ") || line.contains("Some(") || line.contains("None") || line.contains(": [")
}

#[test]
fn the_suite_harness_log_says_in_words_what_the_supervisor_did() {
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
"#,
    );
    p.write("a.test.toml", "[[steps]]\ninstruction = \"`true`\"\n");
    p.write("b.test.toml", "[[steps]]\ninstruction = \"`false`\"\n");
    p.write("c.test.toml", "[[steps]]\ninstruction = \"`sleep 60`\"\n");
    let out = p.run(&["start", "-j", "1", "--retries", "1", "--timeout", "4"]);
    assert_exit(&out, 143);
    let log = suite_log(&p);
    for line in log.lines() {
        assert!(!debug_dump(line), "a Debug dump in the suite log: {line}");
        assert!(
            !line.contains("run{"),
            "a run's span in the suite log: {line}"
        );
    }
    for needle in [
        "dispatch: a.test.toml attempt 1 → run ",
        "dispatch: b.test.toml attempt 2 → run ",
        "retry: b.test.toml failed (failed); attempt 2 of 2 queued next",
        "finished: a.test.toml attempt 1 (run ",
        "suite command `db`: started (process group ",
        "suite command `db`: ready (log /db up/",
        "suite command `db` torn down: clean",
        "deadline: --timeout: the 4s deadline passed",
        "suite finished: exit code 143",
        "suite summary: 3 root tests",
    ] {
        assert!(
            log.contains(needle),
            "no `{needle}` in the suite log:\n{log}"
        );
    }
    // Where each test started: the dispatch line names its run directory.
    let a = p.record_for("a.test.toml");
    let run_dir = a.identity.run_dir.as_str();
    assert!(log.contains(run_dir), "{run_dir} not in:\n{log}");
}
