//! The console as a user sees it from the project directory: a progress count on each root
//! test's outcome line (`[2/3] FAILED …`), paths relative to the cwd, and every line within 80
//! columns — long instructions and messages are cut (routine lines) or wrapped (the recap).

mod common;

use common::{stdout, Project};

#[test]
fn lines_fit_80_columns_with_a_progress_count_and_relative_paths() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    let long_word = "x".repeat(150);
    p.write(
        "a_long_instruction.test.toml",
        &format!("[[steps]]\ninstruction = \"`echo {long_word} and some more words to print`\"\n"),
    );
    p.write(
        "b_failing.test.toml",
        &format!("[[steps]]\ninstruction = \"`echo {long_word}; echo a long reason why this step failed, in many words >&2; false`\"\n"),
    );
    p.write("c_short.test.toml", "[[steps]]\ninstruction = \"`true`\"\n");
    let out = p.run(&["start", "-j", "1"]);
    let console = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{console}");
    let root = p.root().display().to_string();
    for line in console.lines() {
        // The first line names the config and the project root, absolute on purpose (it says
        // where the root was found); every other line is the run's.
        if line.starts_with("supervisor: ") {
            continue;
        }
        let failure_event = line.contains("........ ERROR");
        // SPEC §5: one line names a run's outcome and report path; the summary is one line.
        let outcome_line = line.starts_with('[') && line.ends_with("report.md");
        let summary = line.starts_with("Summary: ");
        assert!(
            line.chars().count() <= 80 || failure_event || outcome_line || summary,
            "{} columns: {line}\n{console}",
            line.chars().count()
        );
        assert!(!line.contains(&root), "an absolute path: {line}");
    }
    let outcome_lines: Vec<&str> = console
        .lines()
        .filter(|l| l.starts_with('[') && l.contains(".test.toml") && !l.contains("] RUN "))
        .filter(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|w| w.ends_with("ED") || w == "ERROR")
        })
        .collect();
    assert_eq!(outcome_lines.len(), 3, "{console}");
    for (i, (line, file)) in outcome_lines
        .iter()
        .zip(["a_long_instruction", "b_failing", "c_short"])
        .enumerate()
    {
        assert!(
            line.starts_with(&format!("[{}/3] ", i + 1)) && line.contains(file),
            "{line}\n{console}"
        );
    }
    let b = p.record_for("b_failing.test.toml");
    let report = format!(
        "  .bugatti/runs/{}/report.md",
        b["run_id"].as_str().expect("run_id")
    );
    assert!(outcome_lines[1].ends_with(&report), "{report}\n{console}");
    assert!(
        console.contains("Suite report: .bugatti/suites/"),
        "{console}"
    );
}
