//! Evidence paths the agent names are checked: a file inside the run directory is recorded as is;
//! a missing file or a path leaving the directory is still recorded, with the problem, and warned
//! about on the console and in report.md (for a passing step too).

use crate::common::assert_exit;
use crate::common::records::*;
use crate::common::{stdout, Project};

#[test]
fn evidence_that_is_missing_or_outside_the_run_directory_is_warned_about() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "a.test.toml",
        r#"[[steps]]
instruction = "`mkdir -p $BUGATTI_RUN_DIR/screenshots && echo png > $BUGATTI_RUN_DIR/screenshots/ok.png && echo BUGATTI_EVIDENCE screenshot screenshots/ok.png && echo BUGATTI_EVIDENCE screenshot screenshots/never-saved.png && echo BUGATTI_EVIDENCE log ../../../etc/passwd && echo not-a-screenshot > $BUGATTI_WORKDIR/outside.png && ln -s $BUGATTI_WORKDIR/outside.png $BUGATTI_RUN_DIR/link.png && echo BUGATTI_EVIDENCE screenshot link.png`"
"#,
    );
    let out = p.start();
    let console = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a warning does not fail the test: {console}"
    );
    assert!(
        console.contains(
            "EVIDENCE 1 ........ WARNING: screenshot screenshots/never-saved.png: no such file in the run directory"
        ),
        "{console}"
    );
    assert!(
        console.contains(
            "EVIDENCE 1 ........ WARNING: log ../../../etc/passwd: outside the run directory"
        ),
        "{console}"
    );
    assert!(
        !console.contains("WARNING: screenshot screenshots/ok.png"),
        "{console}"
    );
    let record = p.record_for("a.test.toml");
    let evidence = &record.steps[0].evidence;
    assert_eq!(evidence.len(), 4, "{record:?}");
    assert!(evidence[0].problem.is_none(), "{:?}", evidence[0]);
    assert_eq!(
        evidence[1].problem.as_deref(),
        Some("no such file in the run directory")
    );
    assert!(evidence[2]
        .problem
        .as_deref()
        .is_some_and(|p| p.starts_with("outside the run directory")));
    assert!(evidence[3]
        .problem
        .as_deref()
        .is_some_and(|p| p.starts_with("outside the run directory (a link to ")));
    let run_dir = record.run_dir();
    let report = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("## Evidence warnings")
            && report.contains(
                "- step 1: screenshot `screenshots/never-saved.png`: no such file in the run directory"
            )
            && report.contains("- step 1: log `../../../etc/passwd`: outside the run directory"),
        "{report}"
    );
    // report.html warns too, and never follows the link out (only ok.png is inlined).
    let html = std::fs::read_to_string(p.suite_dir().join("report.html")).expect("report.html");
    assert!(
        html.contains("evidence screenshot: <code>link.png</code> (warning: outside the run directory (a link to "),
        "{html}"
    );
    assert_eq!(html.matches("data:image/png;base64,").count(), 1, "{html}");
}

/// The browser console's errors of a step (its `browser/step-<id>.console.jsonl`) are shown inline
/// in report.md and report.html, escaped, the first few of them: not only a count and a link.
#[test]
fn the_browser_consoles_first_errors_are_shown_inline_and_escaped() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    let mut lines = vec![
        r#"{"at":"2026-01-01T00:00:00Z","level":"warning","source":"console-api","text":"NOT-AN-ERROR","page":"http://127.0.0.1/"}"#.to_string(),
        r#"{"at":"2026-01-01T00:00:00Z","level":"error","source":"exception","text":"Uncaught <script>alert(1)</script> at cart.js","url":"http://127.0.0.1/cart.js","page":"http://127.0.0.1/"}"#.to_string(),
    ];
    for i in 2..=7 {
        lines.push(format!(r#"{{"at":"2026-01-01T00:00:00Z","level":"error","source":"console-api","text":"ERROR-NUMBER-{i}","page":"http://127.0.0.1/"}}"#));
    }
    p.write("console.jsonl", &(lines.join("\n") + "\n"));
    p.write(
        "a.test.toml",
        r#"[[steps]]
instruction = "`mkdir -p $BUGATTI_RUN_DIR/browser && cp $BUGATTI_PROJECT_ROOT/console.jsonl $BUGATTI_RUN_DIR/browser/step-1.console.jsonl && echo BUGATTI_EVIDENCE console browser/step-1.console.jsonl && exit 1`"
"#,
    );
    let out = p.start();
    assert_exit(&out, 1);
    let record = p.record_for("a.test.toml");
    let run_dir = record.run_dir();
    let md = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(
        md.contains("Browser console errors (`browser/step-1.console.jsonl`, more in the file):"),
        "{md}"
    );
    assert!(
        md.contains("exception: Uncaught <script>alert(1)</script> at cart.js (http://127.0.0.1/cart.js)\nconsole-api: ERROR-NUMBER-2"),
        "{md}"
    );
    assert!(
        md.contains("ERROR-NUMBER-5") && !md.contains("ERROR-NUMBER-6"),
        "the first five: {md}"
    );
    assert!(
        !md.contains("NOT-AN-ERROR"),
        "warnings are not errors: {md}"
    );
    let html = std::fs::read_to_string(p.suite_dir().join("report.html")).expect("report.html");
    assert!(html.contains("<b>Browser console errors</b>"), "{html}");
    assert!(
        html.contains("exception: Uncaught &lt;script&gt;alert(1)&lt;/script&gt; at cart.js"),
        "escaped: {html}"
    );
    assert!(!html.contains("<script>alert(1)"), "never markup: {html}");
    assert!(html.contains("ERROR-NUMBER-5") && !html.contains("ERROR-NUMBER-6"));
}
