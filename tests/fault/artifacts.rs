//! The artifact directory unusable before the run, or vanishing mid-run. Tests run as root, so
//! `chmod` would not stop writes: the directory is replaced by a regular file, or removed.

use crate::common::assert_exit;
use crate::common::fault;

use crate::common::{stderr, stdout, Project};
use std::process::Stdio;

fn project() -> Project {
    let p = Project::new();
    p.write("bugatti.config.toml", &fault::agent_and_server_config());
    p.write(
        "a.test.toml",
        "name = \"A\"\n[[steps]]\ninstruction = \"sleep 3\"\n[[steps]]\ninstruction = \"say done\"\n",
    );
    p
}

#[test]
fn an_artifact_directory_that_is_a_file_is_refused_before_anything_runs() {
    let p = project();
    p.write(".bugatti", "not a directory\n");
    let out = p.start();
    let all = format!("{}\n{}", stdout(&out), stderr(&out));
    assert_exit(&out, 2);
    assert!(
        all.contains("artifact directory")
            && all.contains(".bugatti")
            && all.contains("is not a directory"),
        "the error names the directory and what is wrong: {all}"
    );
    assert!(!all.contains("PASSED"), "nothing ran: {all}");
}

#[test]
fn unwritable_report_targets_are_refused_before_anything_runs() {
    let p = project();
    p.write("ci", "a file where a folder is needed\n");
    p.write("out/suite.json/keep", "");
    for (flag, target, why) in [
        ("--junit", "ci/junit.xml", "is not a directory"),
        ("--json", "out/suite.json", "is a directory"),
    ] {
        let out = p.run(&["start", flag, target]);
        let all = format!("{}\n{}", stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(2), "{flag}: {all}");
        assert!(
            all.contains(flag) && all.contains(target) && all.contains(why),
            "the error names the flag, the path and why: {all}"
        );
        assert!(
            !p.root().join(".bugatti/runs").exists(),
            "nothing ran: {all}"
        );
    }
}

#[test]
fn report_targets_the_os_refuses_are_refused_before_anything_runs_even_as_root() {
    // access(2) says yes to root for /proc/… (CI containers run as root): the check must write.
    let p = project();
    for (flag, target) in [
        ("--junit", "/proc/nope/junit.xml"),
        ("--json", "/proc/nope/suite.json"),
        ("--html", "/proc/nope/report.html"),
    ] {
        let out = p.run(&["start", flag, target]);
        let all = format!("{}\n{}", stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(2), "{flag}: {all}");
        assert!(
            all.contains(flag) && all.contains(target),
            "the error names the flag and the path: {all}"
        );
        assert!(
            !p.root().join(".bugatti/runs").exists(),
            "nothing ran: {all}"
        );
    }
    p.write(
        "bugatti.config.toml",
        &format!(
            "{}\n[supervisor]\nartifact_dir = \"/proc/nope/.bugatti\"\n",
            fault::agent_and_server_config()
        ),
    );
    let out = p.start();
    let all = format!("{}\n{}", stdout(&out), stderr(&out));
    assert_exit(&out, 2);
    assert!(
        all.contains("artifact directory") && all.contains("/proc/nope/.bugatti"),
        "{all}"
    );
    assert!(!all.contains("PASSED"), "nothing ran: {all}");
    // A writable target in folders that do not exist yet: the check leaves nothing behind when
    // the run is refused for another reason (here the broken artifact directory).
    let out = p.run(&["start", "--junit", "new/deep/junit.xml"]);
    assert_exit(&out, 2);
    assert!(
        !p.root().join("new").exists(),
        "the probe's folders are removed"
    );
}

#[test]
fn a_runs_directory_that_is_a_file_is_a_clear_error_with_exit_3() {
    let p = project();
    p.write(".bugatti/runs", "not a directory\n");
    let out = p.start();
    let all = format!("{}\n{}", stdout(&out), stderr(&out));
    assert_exit(&out, 3);
    assert!(
        all.contains("cannot create the run directory") && all.contains("Not a directory"),
        "the error names what it could not create and why: {all}"
    );
    // The run still counts in the suite's summary and JUnit, as an error.
    let summary = p.suite_summary();
    assert_eq!(summary.totals.error, 1, "{summary:?}");
    assert!(
        summary.tests[0]
            .message
            .as_deref()
            .is_some_and(|m| m.contains("cannot create the run directory")),
        "{summary:?}"
    );
    let junit = std::fs::read_to_string(p.suite_dir().join("junit.xml")).expect("junit.xml");
    assert!(junit.contains("errors=\"1\""), "{junit}");
}

#[test]
fn the_artifact_directory_vanishing_mid_step_neither_crashes_nor_hangs_nor_leaks() {
    let p = project();
    let mut child = p
        .supervisor()
        .arg("start")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    fault::wait_for_steps(&p, 1, &mut child);
    std::fs::remove_dir_all(p.root().join(".bugatti")).expect("rm -rf .bugatti");
    let out = fault::wait_guarded(child);
    p.assert_nothing_survives();
    let all = format!("{}\n{}", stdout(&out), stderr(&out));
    // Lost records are a harness error, never a silent 0.
    assert_exit(&out, 3);
    assert!(!all.contains("panicked"), "{all}");
    // The verdict still reaches the console, and so does the loss of its files: which, and why.
    assert!(all.contains("PASSED") || all.contains("ERROR"), "{all}");
    assert!(
        all.contains("could not be written (exit 3)")
            && all.contains("run.json")
            && all.contains("No such file or directory"),
        "{all}"
    );
}

#[test]
fn the_junit_and_json_copies_are_written_from_memory_when_the_artifact_directory_breaks() {
    // `.bugatti` replaced by a file mid-step: nothing can be written under it any more, not even
    // the suite's own files, but the CI copies are written from what the reporter holds.
    let p = project();
    let mut child = p
        .supervisor()
        .args([
            "start",
            "--junit",
            "ci/junit.xml",
            "--json",
            "ci/suite.json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    fault::wait_for_steps(&p, 1, &mut child);
    std::fs::remove_dir_all(p.root().join(".bugatti")).expect("rm -rf .bugatti");
    p.write(".bugatti", "not a directory any more\n");
    let out = fault::wait_guarded(child);
    p.assert_nothing_survives();
    let all = format!("{}\n{}", stdout(&out), stderr(&out));
    assert_exit(&out, 3);
    assert!(
        all.contains("could not be written (exit 3)")
            && all.contains("summary.json")
            && all.contains("Not a directory"),
        "the console names the records and why: {all}"
    );
    let junit = std::fs::read_to_string(p.root().join("ci/junit.xml")).expect("--junit copy");
    assert!(junit.contains("a.test.toml"), "{junit}");
    let suite: bugatti::report::records::suite::SuiteSummary =
        crate::common::read_json_file(&p.root().join("ci/suite.json"));
    assert_eq!(suite.totals.passed, 1, "{suite:?}");
}
