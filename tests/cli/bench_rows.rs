//! `bench/run` cannot lie (see docs/testing.md, Benchmarks): a row whose measurement could not be
//! made here (the Claude Code CLI missing) says `skipped` in its result column, never `pass`, and
//! the run's last line counts the rows that ran, passed, missed and were skipped; the table names
//! the agent CLI (and its `--version`) each row drove.

use std::path::Path;
use std::process::Command;

#[test]
fn a_row_that_did_not_run_says_skipped_and_is_never_counted_as_met() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out_dir = tempfile::tempdir().expect("tmp");
    let table = out_dir.path().join("BENCHMARKS.md");
    let run = Command::new("python3")
        .arg(root.join("bench/bench.py"))
        .args(["--binary", env!("CARGO_BIN_EXE_supervisor")])
        .arg("--root")
        .arg(root)
        .args(["--quick", "--only", "17", "--out"])
        .arg(&table)
        // Row 17 drives the Claude Code CLI: pointed at nothing, it cannot run.
        .env("BUGATTI_CLAUDE_BIN", out_dir.path().join("no-claude-here"))
        .output();
    let out = match run {
        Ok(out) => out,
        Err(e) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "python3 is needed under CI: {e}"
            );
            eprintln!("SKIPPED: python3 cannot run: {e}");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| 17."))
        .unwrap_or_else(|| panic!("row 17: {stdout}"));
    let result = row
        .trim_end_matches('|')
        .rsplit('|')
        .next()
        .unwrap_or("")
        .trim();
    assert!(result.starts_with("skipped"), "result column: {row}");
    assert!(!row.contains("| pass"), "{row}");
    assert_eq!(
        stdout.lines().last(),
        Some("bench: 1 rows: 0 ran, 0 passed, 0 missed, 1 skipped"),
        "{stdout}"
    );
    let written = std::fs::read_to_string(&table).expect("the table is written");
    assert!(
        written.contains("skipped (Claude Code CLI not installed"),
        "{written}"
    );
    // The table names the agent CLI each row drove, as the row looked for it.
    let clis = written
        .lines()
        .find(|l| l.starts_with("Agent CLIs: "))
        .unwrap_or_else(|| panic!("no agent CLI line: {written}"));
    assert_eq!(clis, "Agent CLIs: row 17: Claude Code not installed.");
}
