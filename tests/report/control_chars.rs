//! Control characters from agents, commands and file names never reach the console or report.md
//! raw: ESC and NUL are escaped, and a newline in a file name does not split a console line.

use crate::common::assert_exit;
use crate::common::records::*;
use crate::common::{stdout, Project};

#[test]
fn escape_sequences_and_newlines_are_escaped_on_the_console_and_in_report_md() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    let test = "tests/odd\nname.test.toml";
    p.write(
        test,
        r#"[[steps]]
instruction = '''`printf 'BUGATTI_LOG \033[2Jcleared\n'`'''

[[steps]]
instruction = '''`printf '\033[31mred alert\001\n'; exit 3`'''
"#,
    );
    let out = p.start();
    let console = stdout(&out);
    assert_exit(&out, 1);
    assert!(
        !console.contains('\u{1b}'),
        "raw ESC on the console: {console:?}"
    );
    assert!(
        !console.contains('\u{1}'),
        "raw control on the console: {console:?}"
    );
    assert!(console.contains("\\e[2Jcleared"), "{console}");
    for line in console.lines() {
        assert!(
            !line.starts_with("name.test.toml"),
            "a newline in the file name split a line: {console}"
        );
    }
    assert!(console.contains("odd\\nname.test.toml"), "{console}");
    let record = p.run_records().pop().expect("a run");
    let run_dir = record.run_dir();
    let report = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(
        !report.contains('\u{1b}'),
        "raw ESC in report.md: {report:?}"
    );
    assert!(
        !report.contains('\u{1}'),
        "raw control in report.md: {report:?}"
    );
    assert!(report.contains("\\e[31mred alert"), "{report}");
    // The record keeps what really came, escaped only by JSON.
    assert!(
        record.steps[1]
            .message
            .as_deref()
            .unwrap_or_default()
            .contains('\u{1b}'),
        "{record:?}"
    );
}
