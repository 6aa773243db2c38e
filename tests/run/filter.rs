//! `-E, --filter EXPR`, `--only-changed[=REF]` and `--no-tests` (docs/cli.md): a filter selects
//! what the flags it generalises select, its parse error points at the column, a changed-only
//! selection asks a real git repository, and an empty selection is what `--no-tests` says.

use crate::common::records::{HistoryEntry, StabilityClass};
use crate::common::{assert_exit, read_jsonl, stderr, stdout, Project};
use std::path::Path;
use std::process::Command;

fn shop() -> Project {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "basket.test.toml",
        "name = \"Basket totals\"\ntags = [\"smoke\"]\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    p.write(
        "checkout/pay.test.toml",
        "name = \"Pay by card\"\n[[steps]]\ninstruction = \"`false`\"\n",
    );
    p.write(
        "checkout/refund.test.toml",
        "name = \"Refund a basket\"\ntags = [\"smoke\"]\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    p
}

/// `supervisor list ARGS`: exit 0, the listed test files.
fn listed(p: &Project, args: &[&str]) -> Vec<String> {
    let mut all = vec!["list"];
    all.extend_from_slice(args);
    let out = p.run(&all);
    assert_exit(&out, 0);
    stdout(&out).lines().map(str::to_string).collect()
}

fn history(p: &Project) -> Vec<HistoryEntry> {
    read_jsonl(&p.root().join(".bugatti/history.jsonl"))
}

#[test]
fn a_filter_selects_what_the_flags_it_generalises_select() {
    let p = shop();
    for (flags, expr) in [
        (&["-g", "basket"][..], "test(/basket/)"),
        (&["-g", "^Pay|refund"][..], "test(/^Pay|refund/)"),
        (&["--tag", "smoke"][..], "tag(smoke)"),
        (
            &["--tag", "smoke", "--grep-invert", "Refund"][..],
            "tag(smoke) & !test(/Refund/)",
        ),
        (
            &["--tag", "smoke", "--grep-invert", "Refund"][..],
            "tag(smoke) and not test(/Refund/)",
        ),
    ] {
        let by_flags = listed(&p, flags);
        assert!(!by_flags.is_empty(), "{flags:?}");
        assert_eq!(
            listed(&p, &["-E", expr]),
            by_flags,
            "-E {expr} vs {flags:?}"
        );
    }
    assert_eq!(
        listed(
            &p,
            &["-E", "file(checkout/*.test.toml) & !test(=Pay by card)"]
        ),
        ["checkout/refund.test.toml"]
    );
    assert_eq!(listed(&p, &["-E", "provider(shell)"]).len(), 3);
    assert_eq!(
        listed(
            &p,
            &["--filter", "(tag(smoke) | test(~card)) & file(checkout/**)"]
        ),
        ["checkout/pay.test.toml", "checkout/refund.test.toml"]
    );

    // last(failed) is --rerun-failed's selection; the history records the expression.
    assert_exit(&p.start(), 1);
    assert_eq!(listed(&p, &["--rerun-failed"]), ["checkout/pay.test.toml"]);
    assert_eq!(
        listed(&p, &["-E", "last(failed)"]),
        ["checkout/pay.test.toml"]
    );
    let out = p.run(&["start", "-E", "last(failed) | test(/^Basket/)"]);
    assert_exit(&out, 1);
    let last = history(&p).pop().expect("a history line");
    assert_eq!(
        last.selection.filter.as_deref(),
        Some("last(failed) | test(/^Basket/)")
    );
    let mut ran: Vec<String> = last.tests.iter().map(|t| t.test_file.clone()).collect();
    ran.sort();
    assert_eq!(ran, ["basket.test.toml", "checkout/pay.test.toml"]);
    assert!(
        !last.selection.same_tests_as(&history(&p)[0].selection),
        "a filtered suite does not compare with the whole one"
    );

    // class(…) reads the newest class history gave the test.
    let mut classified = last.clone();
    classified.stability = vec![bugatti::model::history::HistoryClass {
        test_file: "checkout/refund.test.toml".into(),
        class: StabilityClass::AppFlaky,
    }];
    let line = serde_json::to_string(&classified).expect("json");
    let file = p.root().join(".bugatti/history.jsonl");
    let mut text = std::fs::read_to_string(&file).expect("history");
    text.push_str(&line);
    text.push('\n');
    std::fs::write(&file, text).expect("write history");
    assert_eq!(
        listed(&p, &["-E", "class(app-flaky)"]),
        ["checkout/refund.test.toml"]
    );
    p.assert_nothing_survives();
}

#[test]
fn a_filter_that_does_not_parse_points_at_the_column_and_runs_nothing() {
    let p = shop();
    let out = p.run(&["start", "-E", "tag(smoke) & tset(x)"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("-E: unknown predicate `tset`"), "{err}");
    assert!(err.contains("did you mean `test`?"), "{err}");
    assert!(err.contains("--> -E:1:14"), "{err}");
    assert!(
        err.contains("1 | tag(smoke) & tset(x)\n  |              ^^^^\n"),
        "the caret under the column: {err}"
    );
    let out = p.run(&["list", "-E", "(tag(smoke)"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("this `(` is never closed"),
        "{}",
        stderr(&out)
    );
    assert!(!p.root().join(".bugatti/runs").exists(), "nothing ran");
}

#[test]
fn no_tests_says_what_an_empty_selection_is() {
    let p = shop();
    // The default: exit 2, as an empty -g always was.
    let out = p.run(&["start", "-E", "tag(nightly)"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("no root test is selected by -E `tag(nightly)` (of 3)"),
        "{}",
        stderr(&out)
    );
    let out = p.run(&["start", "-g", "no-such", "--no-tests", "fail"]);
    assert_exit(&out, 2);
    let out = p.run(&["start", "-g", "no-such", "--no-tests", "pass"]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("note: no root tests to run: no root test is selected by --grep"),
        "{}",
        stderr(&out)
    );
    let out = p.run(&["start", "--tag", "nightly", "--no-tests=warn"]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains(
            "warning: no root tests to run: no root test carries any of the tags nightly"
        ),
        "{}",
        stderr(&out)
    );
    let out = p.run(&["list", "-E", "none()", "--no-tests", "pass"]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "");
    assert!(!p.root().join(".bugatti/runs").exists(), "nothing ran");
    let out = p.run(&["start", "--no-tests", "sometimes"]);
    assert_exit(&out, 2);

    // An empty shard of a selection that holds tests is not "no tests": it runs nothing, exit 0.
    let out = p.run(&[
        "start",
        "-E",
        "tag(smoke)",
        "--shard",
        "3/3",
        "--shard-by",
        "count",
    ]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("shard 3/3 holds no root tests"),
        "{}",
        stderr(&out)
    );
    p.assert_nothing_survives();
}

/// git in `dir`, with an identity of its own (no user config is needed), asserted to succeed.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Four root tests in a committed repository: one with an include, one with an asset folder.
fn repository() -> Project {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "tests/shared/login.test.toml",
        "include_only = true\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    p.write(
        "tests/cart.test.toml",
        "[[steps]]\ninclude_path = \"shared/login.test.toml\"\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    p.write(
        "tests/upload.test.toml",
        "[[steps]]\ninstruction = \"`true`\"\n",
    );
    p.write("tests/upload/photo.txt", "a photo\n");
    p.write(
        "tests/search.test.toml",
        "[[steps]]\ninstruction = \"`true`\"\n",
    );
    p.write(
        "tests/profile.test.toml",
        "[[steps]]\ninstruction = \"`true`\"\n",
    );
    p.write(".gitignore", ".bugatti/\n");
    git(p.root(), &["init", "-q", "-b", "main"]);
    git(p.root(), &["add", "-A"]);
    git(p.root(), &["commit", "-q", "-m", "tests"]);
    p
}

#[test]
fn only_changed_selects_the_tests_whose_files_changed_in_the_working_tree() {
    let test = "only_changed_selects_the_tests_whose_files_changed_in_the_working_tree";
    if crate::common::skip::on_path("git").is_none() {
        crate::common::skip::skip(test, "git is not on PATH");
        return;
    }
    let p = repository();
    // Nothing changed: no tests, and --no-tests pass makes that a success (a CI job on a PR
    // that touched no test).
    let out = p.run(&["start", "--only-changed"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("--only-changed=HEAD"),
        "{}",
        stderr(&out)
    );
    assert_exit(
        &p.run(&["start", "--only-changed", "--no-tests", "pass"]),
        0,
    );

    // An include edited (staged), an asset added (untracked), a recording written (untracked).
    p.write(
        "tests/shared/login.test.toml",
        "include_only = true\n[[steps]]\ninstruction = \"`true` again\"\n",
    );
    git(p.root(), &["add", "tests/shared/login.test.toml"]);
    p.write("tests/upload/second.txt", "another\n");
    p.write("bugatti.replay/tests/search.replay.json", "{}\n");
    assert_eq!(
        listed(&p, &["--only-changed"]),
        [
            "tests/cart.test.toml",
            "tests/search.test.toml",
            "tests/upload.test.toml"
        ]
    );
    // The same through the filter language, and combined with it.
    assert_eq!(
        listed(&p, &["-E", "changed() & !test(/search/)"]),
        ["tests/cart.test.toml", "tests/upload.test.toml"]
    );
    assert_eq!(
        listed(&p, &["--only-changed=HEAD", "-E", "test(/cart/)"]),
        ["tests/cart.test.toml"]
    );
    // Committed, the changes are still changed against the commit before.
    git(p.root(), &["add", "-A"]);
    git(p.root(), &["commit", "-q", "-m", "more"]);
    assert_exit(&p.run(&["list", "--only-changed"]), 2);
    assert_eq!(listed(&p, &["--only-changed=HEAD~1"]).len(), 3);
    // The config touches every test.
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n# edited\n",
    );
    assert_eq!(listed(&p, &["--only-changed"]).len(), 4);
    std::fs::remove_dir_all(p.root().join("bugatti.replay")).expect("remove the recording");
    let out = p.run(&["start", "--only-changed"]);
    assert_exit(&out, 0);
    let last = history(&p).pop().expect("a history line");
    assert_eq!(last.selection.only_changed.as_deref(), Some("HEAD"));

    // A revision the clone lacks is a clear error naming it; a shallow clone says so.
    let out = p.run(&["list", "--only-changed=origin/main"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("the revision `origin/main` is not in this clone"),
        "{}",
        stderr(&out)
    );
    let shallow = tempfile::tempdir().expect("tmp");
    let url = format!("file://{}", p.root().display());
    let clone = shallow.path().join("clone");
    git(
        shallow.path(),
        &[
            "clone",
            "-q",
            "--depth",
            "1",
            &url,
            &clone.to_string_lossy(),
        ],
    );
    let out = p
        .supervisor()
        .current_dir(&clone)
        .args(["list", "-E", "changed(HEAD~1)"])
        .output()
        .expect("run supervisor");
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains(
            "-E changed(): the revision `HEAD~1` is not in this clone (it is a shallow clone"
        ),
        "{err}"
    );
    assert!(err.contains("fetch-depth: 0"), "{err}");

    // Outside a repository: said, exit 2.
    let outside = shop();
    let out = outside.run(&["list", "--only-changed"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("is not inside a git repository"),
        "{}",
        stderr(&out)
    );
    p.assert_nothing_survives();
}
