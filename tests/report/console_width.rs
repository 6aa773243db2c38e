//! The console as a user sees it from the project directory: a progress count on each root
//! test's outcome line (`[2/3] FAILED …`), paths relative to the cwd, and every line within 80
//! columns — long instructions and messages are cut (routine lines) or wrapped (the recap).

use crate::common::assert_exit;
use crate::common::{stdout, Project};

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
    assert_exit(&out, 1);
    let root = p.root().display().to_string();
    for line in console.lines() {
        // The first line names the config and the project root, absolute on purpose (it says
        // where the root was found); every other line is the run's.
        if line.starts_with("supervisor: ") {
            continue;
        }
        let failure_event = line.contains("........ ERROR");
        // docs/reports.md: one line names a run's outcome and report path; the summary is one line.
        let outcome_line = line.starts_with('[') && line.ends_with("report.md");
        let summary = line.starts_with("Summary: ");
        // A word longer than a line (a path) is kept whole on a line of its own.
        let one_word = !line.trim().contains(' ');
        assert!(
            line.chars().count() <= 80 || failure_event || outcome_line || summary || one_word,
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
    let b = p.record_json_for("b_failing.test.toml");
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

/// A failing project: a setup command whose log tail has three lines (one a long path), and a
/// test whose failure message is one long line of words.
fn failing_project() -> Project {
    let p = Project::new();
    let path = format!(
        "/var/tmp/{}/migrations/0042_add_basket_items.sql",
        "deep/".repeat(12)
    );
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"shell\"\n\n[commands.migrate]\nkind = \"short_lived\"\nscope = \"test\"\ncmd = \"echo migrating; echo 'no such table: users' >&2; echo {path}; exit 4\"\n"
        ),
    );
    p.write("a.test.toml", "[[steps]]\ninstruction = \"`true`\"\n");
    p
}

#[test]
fn a_log_tail_reads_as_lines_on_the_console_and_in_the_recap() {
    let p = failing_project();
    let out = p.start();
    let console = stdout(&out);
    assert_exit(&out, 3);
    assert!(!console.contains("\\n"), "a literal \\n: {console}");
    let path = format!(
        "/var/tmp/{}/migrations/0042_add_basket_items.sql",
        "deep/".repeat(12)
    );
    // The event line, then each line of the tail on its own line under it.
    let lines: Vec<&str> = console.lines().collect();
    let failed = lines
        .iter()
        .position(|l| l.contains("SETUP migrate ........ FAILED"))
        .unwrap_or_else(|| panic!("no failure line: {console}"));
    let tail = &lines[failed + 1..];
    for wanted in ["migrating", "no such table: users", path.as_str()] {
        assert!(
            tail.iter().any(|l| l.trim() == wanted),
            "{wanted:?} is not a line of its own after the failure:\n{console}"
        );
    }
    // The recap too: the tail's lines, and the path whole on one line.
    let recap = console
        .split("Failures (1):")
        .nth(1)
        .unwrap_or_else(|| panic!("no recap: {console}"));
    assert!(
        recap.lines().any(|l| l.trim() == "no such table: users"),
        "{recap}"
    );
    assert!(recap.lines().any(|l| l.trim() == path), "{recap}");
    p.assert_nothing_survives();
}

#[test]
fn lines_use_the_terminals_width_and_80_when_it_is_unknown() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    // The failure's first line names the command: 110 columns.
    let command =
        "test 'the basket shows three items' = 'the order page said two items and a total of 9'";
    p.write(
        "a.test.toml",
        &format!("[[steps]]\ninstruction = \"`{command}`\"\n"),
    );
    // The message under the outcome line and in the recap (indented), not the event lines.
    let message_lines = |console: &str| -> Vec<String> {
        console
            .lines()
            .filter(|l| l.starts_with("      ") && !l.contains("report:"))
            .map(str::to_string)
            .collect()
    };
    // A pipe, no COLUMNS: 80, the message wrapped.
    let out = p
        .supervisor()
        .arg("start")
        .env_remove("COLUMNS")
        .output()
        .expect("start");
    let narrow = stdout(&out);
    assert_exit(&out, 1);
    let lines = message_lines(&narrow);
    assert!(!lines.is_empty(), "{narrow}");
    assert!(lines.iter().all(|l| l.chars().count() <= 80), "{narrow}");
    assert!(!lines.iter().any(|l| l.contains(command)), "{narrow}");
    // A wide terminal says so through COLUMNS: the message is one line.
    let out = p
        .supervisor()
        .arg("start")
        .env("COLUMNS", "200")
        .output()
        .expect("start");
    let wide = stdout(&out);
    assert_exit(&out, 1);
    let lines = message_lines(&wide);
    assert!(lines.iter().any(|l| l.contains(command)), "{wide}");
    assert!(lines.iter().all(|l| l.chars().count() <= 200), "{wide}");
    p.assert_nothing_survives();
}
