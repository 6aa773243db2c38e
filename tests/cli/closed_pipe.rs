//! A reader that goes away (`supervisor start | head -1`, `supervisor merge … | true`) must not
//! turn a run into a Rust panic: `start` and `merge` finish, write every report and exit with the
//! run's own code; the commands that only print (`report`, `check`) end like Unix filters, with
//! SIGPIPE (exit 141). docs/signals.md says which is which.

use crate::common::Project;
use std::process::Command;

/// Runs `supervisor ARGS | READER` under bash from the project root; returns supervisor's own
/// exit status (PIPESTATUS[0]) and its stderr.
fn piped(p: &Project, args: &str, reader: &str) -> (i32, String) {
    let script = format!(
        "\"$SUPERVISOR\" {args} 2>stderr.txt | {reader} >/dev/null; echo ${{PIPESTATUS[0]}}"
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(p.root())
        .env("SUPERVISOR", env!("CARGO_BIN_EXE_supervisor"))
        .env("BUGATTI_CONFIG_HOME", p.root().join(".no-global-config"))
        .env("NO_COLOR", "1")
        .output()
        .expect("bash runs");
    let status: i32 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("PIPESTATUS is a number");
    let stderr = std::fs::read_to_string(p.root().join("stderr.txt")).unwrap_or_default();
    (status, stderr)
}

fn project() -> Project {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[supervisor]\nmax_parallel = 1\n",
    );
    // Enough output that the reader is gone long before the run ends.
    for name in ["a", "b", "c"] {
        p.write(
            &format!("{name}.test.toml"),
            "[[steps]]\ninstruction = \"`echo one`\"\n\n[[steps]]\ninstruction = \"`sleep 0.2`\"\n",
        );
    }
    p
}

#[test]
fn start_into_a_closed_pipe_finishes_writes_its_reports_and_keeps_its_exit_code() {
    let p = project();
    let (status, stderr) = piped(&p, "start", "head -1");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(status, 0, "the run's own exit code: {stderr}");
    let summary = p.suite_summary_json();
    assert_eq!(
        summary["tests"].as_array().map(Vec::len),
        Some(3),
        "{summary}"
    );
    for file in ["summary.md", "junit.xml", "report.html"] {
        assert!(p.suite_dir().join(file).exists(), "{file} written");
    }
    p.assert_nothing_survives();
}

#[test]
fn merge_into_a_closed_pipe_keeps_the_merged_suites_exit_code() {
    let p = project();
    let (status, _) = piped(&p, "start", "cat");
    assert_eq!(status, 0);
    let suite = p.suite_dir();
    let (status, stderr) = piped(
        &p,
        &format!("merge {} --out merged", suite.display()),
        "true",
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(status, 0, "{stderr}");
    assert!(p.root().join("merged/summary.json").exists());
}

#[test]
fn printing_commands_end_with_sigpipe_like_unix_filters() {
    let p = project();
    let (status, _) = piped(&p, "start", "cat");
    assert_eq!(status, 0);
    for args in ["report", "check"] {
        let (status, stderr) = piped(&p, args, "true");
        assert!(!stderr.contains("panicked"), "{args}: {stderr}");
        // 0 when everything fitted into the pipe before the reader left; 141 otherwise.
        assert!(status == 141 || status == 0, "{args}: {status} {stderr}");
    }
}
