//! The subcommands on temporary projects: what `check` prints, what `doctor` finds, and `report`
//! and `merge` on suites written to disk.

use super::check::check_text;
use super::{doctor, merge, report, Exit};
use crate::model::artifacts::SuitePaths;
use crate::model::ids::SuiteId;
use crate::model::load::load_suite;
use crate::model::options::{RunOptions, Verbosity};
use crate::report::records::suite::SuiteSummary;
use std::path::{Path, PathBuf};

/// A project of `config` and `files` (name, text) in a new temporary directory.
fn project(config: &str, files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let config_path = dir.path().join("bugatti.config.toml");
    std::fs::write(&config_path, config).expect("write config");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write file");
    }
    (dir, config_path)
}

const SHELL: &str = "[provider]\nname = \"shell\"\n";

const TWO_STEPS: &str =
    "name = \"Shop\"\ntags = [\"smoke\"]\n\n[[steps]]\ninstruction = \"`true`\"\n\
     timeout_secs = 7\n\n[[steps]]\ninstruction = \"\"\"`echo two`\nand a second line\"\"\"\n";

fn check_of(config: &Path, verbosity: Verbosity) -> String {
    let options = RunOptions {
        config: Some(config.to_path_buf()),
        ..RunOptions::default()
    };
    let suite = load_suite(&options).unwrap_or_else(|e| panic!("{e}"));
    check_text(&suite, verbosity)
}

#[test]
fn check_prints_the_project_each_plan_and_the_count() {
    let (dir, config) = project(SHELL, &[("shop.test.toml", TWO_STEPS)]);
    let text = check_of(&config, Verbosity::Quiet);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some(format!("project root: {}", dir.path().display()).as_str()),
        "{text}"
    );
    assert!(
        lines.contains(&"root tests:   1 selected of 1 discovered"),
        "{text}"
    );
    assert!(
        lines.contains(&"== shop.test.toml — \"Shop\"  [tags: smoke]"),
        "{text}"
    );
    assert!(lines.contains(&"  plan (2 steps):"), "{text}");
    // A step's own timeout is marked; a second line of an instruction is elided.
    let steps: Vec<&&str> = lines.iter().filter(|l| l.starts_with("    ")).collect();
    assert_eq!(steps.len(), 2, "{text}");
    assert!(steps[0].contains("[timeout: 7s] `true`"), "{text}");
    assert!(steps[1].ends_with("`echo two` …"), "{text}");
    assert_eq!(
        lines.last().copied(),
        Some("ok: 1 root test, 2 steps; nothing was run")
    );
    assert!(
        !text.contains("effective config"),
        "-q shows plans only: {text}"
    );
}

#[test]
fn check_shows_the_shared_config_once_and_every_tests_whole_config_with_v() {
    let (_dir, config) = project(SHELL, &[("shop.test.toml", TWO_STEPS)]);
    let normal = check_of(&config, Verbosity::Normal);
    assert!(
        normal.contains("\neffective config (before test overrides):\n"),
        "{normal}"
    );
    assert!(
        normal.contains("\n  effective config: as above\n"),
        "{normal}"
    );
    let verbose = check_of(&config, Verbosity::Verbose);
    assert!(
        !verbose.contains("before test overrides"),
        "-v shows each test's whole config instead: {verbose}"
    );
    assert!(verbose.contains("\n  effective config:\n"), "{verbose}");
    // Every step says its timeout with -v, not only the one that sets its own.
    let marked = verbose.lines().filter(|l| l.contains("timeout: ")).count();
    assert!(marked >= 2, "{verbose}");
}

#[test]
fn doctor_passes_a_sound_project_and_fails_a_taken_port() {
    let (_dir, config) = project(SHELL, &[("a.test.toml", TWO_STEPS)]);
    assert_eq!(doctor(Some(config)), Exit::SUCCESS);

    let taken = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let (_dir, config) = project(
        &format!("{SHELL}[ports]\nAPP = {port}\n"),
        &[("a.test.toml", TWO_STEPS)],
    );
    assert_eq!(doctor(Some(config)), Exit::FAILED);
    drop(taken);
}

#[test]
fn doctor_on_an_invalid_config_is_a_usage_error() {
    let (_dir, config) = project("[provider\n", &[("a.test.toml", TWO_STEPS)]);
    assert_eq!(doctor(Some(config)), Exit::USAGE);
}

/// A suite folder under `artifacts` holding only summary.json: `not_run` tests fail it.
fn stored_suite(artifacts: &Path, not_run: &[String]) -> (SuiteId, PathBuf) {
    let id = SuiteId::fresh();
    let now = chrono::Utc::now();
    let summary = SuiteSummary::build(&id, now, now, false, &[], not_run);
    let paths = SuitePaths::under(artifacts, &id);
    std::fs::create_dir_all(&paths.dir).expect("suite dir");
    let json = serde_json::to_string_pretty(&summary).expect("summary");
    std::fs::write(paths.summary_json(), json).expect("write summary");
    (id, paths.dir)
}

#[test]
fn report_exits_by_the_suites_verdict_and_2_for_no_such_suite() {
    let (dir, config) = project(SHELL, &[]);
    let artifacts = dir.path().join(".bugatti");
    let (passed, _) = stored_suite(&artifacts, &[]);
    let (_, failed_dir) = stored_suite(&artifacts, &["a.test.toml".to_string()]);
    let report_of =
        |which: &str| report(Some(which), false, None, None, None, Some(config.clone()));
    assert_eq!(report_of(passed.as_str()), Exit::SUCCESS);
    assert_eq!(report_of(&failed_dir.display().to_string()), Exit::FAILED);
    assert_eq!(report_of("no-such-suite"), Exit::USAGE);
}

#[test]
fn merge_writes_the_merged_suite_and_exits_by_its_verdict() {
    let (dir, config) = project(SHELL, &[]);
    let artifacts = dir.path().join(".bugatti");
    let history = dir.path().join("history.jsonl");
    let (_, passed) = stored_suite(&artifacts, &[]);
    let out = dir.path().join("merged");
    let merged = merge(
        std::slice::from_ref(&passed),
        Some(out.clone()),
        Some(config.clone()),
        Some(history.clone()),
        false,
    );
    assert_eq!(merged, Exit::SUCCESS);
    for file in ["summary.json", "summary.md", "junit.xml", "report.html"] {
        assert!(out.join(file).is_file(), "{file}");
    }

    let (_, failed) = stored_suite(&artifacts, &["a.test.toml".to_string()]);
    let out = dir.path().join("merged-failed");
    let merged = merge(
        &[failed],
        Some(out),
        Some(config.clone()),
        Some(history),
        false,
    );
    assert_eq!(merged, Exit::FAILED);

    let missing = dir.path().join("no-such-suite");
    assert_eq!(
        merge(&[missing], None, Some(config), None, false),
        Exit::USAGE
    );
}
