//! Evidence paths the agent names are checked: a file inside the run directory is recorded as is;
//! a missing file or a path leaving the directory is still recorded, with the problem, and warned
//! about on the console and in report.md (for a passing step too).

use crate::common::{stdout, Project};
use std::path::Path;

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
    let out = p.run(&["start"]);
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
    let evidence = record["steps"][0]["evidence"].as_array().expect("evidence");
    assert_eq!(evidence.len(), 4, "{record}");
    assert!(evidence[0].get("problem").is_none(), "{}", evidence[0]);
    assert_eq!(evidence[1]["problem"], "no such file in the run directory");
    assert!(evidence[2]["problem"]
        .as_str()
        .is_some_and(|p| p.starts_with("outside the run directory")));
    assert!(evidence[3]["problem"]
        .as_str()
        .is_some_and(|p| p.starts_with("outside the run directory (a link to ")));
    let run_dir = Path::new(record["run_dir"].as_str().expect("run_dir"));
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
