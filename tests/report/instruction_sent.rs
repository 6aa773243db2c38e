//! The instruction each step sent, after `${NAME}` substitution, is recorded in run.json
//! (`steps[].instruction_sent`, beside `instruction` as written) and in report.md for a step that
//! did not pass — with `[secrets]` values redacted, as everywhere.

use crate::common::assert_exit;
use crate::common::records::*;
use crate::common::Project;

#[test]
fn the_substituted_instruction_is_in_run_json_and_report_md_with_secrets_redacted() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        r#"[provider]
name = "shell"

[ports]
APP_PORT = "auto"

[env]
GREETING = "hello-there"

[secrets]
TOKEN = { from_env = "INSTRUCTION_SENT_TOKEN" }
"#,
    );
    p.write(
        "a.test.toml",
        "[[steps]]\ninstruction = \"`echo ${GREETING} ${TOKEN} on ${APP_PORT}; false`\"\n",
    );
    let out = p
        .supervisor()
        .args(["start"])
        .env("INSTRUCTION_SENT_TOKEN", "hunter2-secret")
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    assert_exit(&out, 1);
    let record = p.record_for("a.test.toml");
    let port = *record.ports.get("APP_PORT").expect("APP_PORT resolved");
    let step = &record.steps[0];
    assert_eq!(
        step.instruction, "`echo ${GREETING} ${TOKEN} on ${APP_PORT}; false`",
        "as written: {step:?}"
    );
    let sent = step.instruction_sent.as_deref().expect("instruction_sent");
    assert_eq!(
        sent,
        format!("`echo hello-there [REDACTED:TOKEN] on {port}; false`"),
        "{step:?}"
    );
    let run_dir = record.run_dir();
    let report = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("Instruction as sent to the agent:")
            && report.contains(&format!(
                "echo hello-there [REDACTED:TOKEN] on {port}; false"
            )),
        "{report}"
    );
    for file in [
        "run.json",
        "report.md",
        "events.jsonl",
        "diagnostics/harness.log",
    ] {
        let text = std::fs::read_to_string(run_dir.join(file)).expect(file);
        assert!(
            !text.contains("hunter2-secret"),
            "the secret leaked into {file}"
        );
    }
    let html = std::fs::read_to_string(p.suite_dir().join("report.html")).expect("report.html");
    assert!(
        html.contains("instruction as sent to the agent")
            && html.contains(&format!(
                "echo hello-there [REDACTED:TOKEN] on {port}; false"
            )),
        "report.html shows it for the failing step"
    );
    assert!(!html.contains("hunter2-secret"));
}
