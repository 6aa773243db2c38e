//! `--reporter github` (docs/ci.md, "GitHub Actions"): under `GITHUB_ACTIONS=true` a failing
//! step is an `::error` at its own line of the file that wrote it (the include's), a WARN step a
//! `::warning`, paths relative to `GITHUB_WORKSPACE`, messages %-escaped, and summary.md is
//! appended to `$GITHUB_STEP_SUMMARY`.

use crate::common::{assert_exit, stdout, Project};

/// A root test whose first step warns and whose second, from an include, fails.
fn checkout() -> Project {
    let p = Project::with_directive_agent("");
    p.write(
        "tests/shared/pay.test.toml",
        "include_only = true\n\n# paying\n[[steps]]\ninstruction = \"say RESULT ERROR: total was 3,00: 100% wrong\"\n",
    );
    p.write(
        "tests/checkout.test.toml",
        "name = \"Checkout\"\n[[steps]]\ninstruction = \"say RESULT WARN: slow page\"\n\n[[steps]]\ninclude_path = \"shared/pay.test.toml\"\n",
    );
    p
}

fn workflow_commands(out: &std::process::Output) -> Vec<String> {
    stdout(out)
        .lines()
        .filter(|l| l.starts_with("::"))
        .map(str::to_string)
        .collect()
}

#[test]
fn under_github_actions_a_failing_step_is_annotated_at_its_line_and_the_summary_appended() {
    let p = checkout();
    let workspace = p.root().parent().expect("a parent").to_path_buf();
    let project = p
        .root()
        .file_name()
        .expect("a name")
        .to_string_lossy()
        .into_owned();
    let summary = p.root().join("step_summary.md");
    std::fs::write(&summary, "# Build\nearlier step's text\n").expect("write");
    let out = p
        .supervisor()
        .arg("start")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_WORKSPACE", &workspace)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .expect("run");
    assert_exit(&out, 1);
    let commands = workflow_commands(&out);
    assert_eq!(commands.len(), 2, "{}", stdout(&out));
    assert!(
        commands[0].starts_with(&format!(
            "::error file={project}/tests/shared/pay.test.toml,line=4,title=Checkout%3A step 2 "
        )),
        "{commands:?}"
    );
    assert!(
        commands[0].ends_with("::total was 3,00: 100%25 wrong"),
        "the message %-escaped: {commands:?}"
    );
    assert!(
        commands[1].starts_with(&format!(
            "::warning file={project}/tests/checkout.test.toml,line=2,title=Checkout%3A step 1 "
        )),
        "{commands:?}"
    );
    assert!(commands[1].ends_with("::slow page"), "{commands:?}");
    let appended = std::fs::read_to_string(&summary).expect("summary");
    let suite_md = std::fs::read_to_string(p.suite_dir().join("summary.md")).expect("summary.md");
    assert!(
        appended.starts_with("# Build\nearlier step's text\n"),
        "appended, not replaced: {appended}"
    );
    assert!(appended.ends_with(&suite_md), "{appended}");
    p.assert_nothing_survives();
}

#[test]
fn the_flag_turns_it_on_outside_actions_and_nothing_is_annotated_without_either() {
    let p = checkout();
    let out = p.run(&["start"]);
    assert_exit(&out, 1);
    assert!(workflow_commands(&out).is_empty(), "{}", stdout(&out));
    let out = p.run(&["start", "--reporter", "github"]);
    assert_exit(&out, 1);
    let commands = workflow_commands(&out);
    assert_eq!(commands.len(), 2, "{}", stdout(&out));
    assert!(
        commands[0].starts_with("::error file=tests/shared/pay.test.toml,line=4,"),
        "relative to the project root without GITHUB_WORKSPACE: {commands:?}"
    );
    let out = p.run(&["start", "--reporter", "junit"]);
    assert_exit(&out, 2);
}
