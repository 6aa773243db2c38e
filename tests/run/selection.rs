//! What a Playwright or nextest user types first: `supervisor list` with the selection flags of
//! `start` (`-g`, `--grep-invert`, `--tag`), `--max-fail N` and `--headed` (docs/running.md).

use crate::common::assert_exit;
use crate::common::{stderr, stdout, Project};

fn shop() -> Project {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "basket.test.toml",
        "name = \"Basket totals\"\ntags = [\"smoke\"]\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    p.write(
        "checkout/pay.test.toml",
        "name = \"Pay by card\"\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    p.write(
        "checkout/refund.test.toml",
        "name = \"Refund a basket\"\ntags = [\"smoke\"]\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    p
}

fn lines(out: &std::process::Output) -> Vec<String> {
    stdout(out).lines().map(str::to_string).collect()
}

/// One root test of `list --json`.
#[derive(Debug, serde::Deserialize)]
struct Listed {
    test_file: String,
    name: String,
    tags: Vec<String>,
}

/// The test files a finished suite ran, sorted.
fn ran(p: &Project) -> Vec<String> {
    let mut files: Vec<String> = p
        .run_records()
        .into_iter()
        .map(|r| r.identity.test_file)
        .collect();
    files.sort();
    files
}

#[test]
fn list_prints_what_start_runs_with_the_same_selection() {
    let p = shop();
    let all = p.list();
    assert_exit(&all, 0);
    assert_eq!(
        lines(&all),
        [
            "basket.test.toml",
            "checkout/pay.test.toml",
            "checkout/refund.test.toml"
        ]
    );
    // -g matches the name ("Refund a basket") or the path (basket.test.toml).
    let grep = p.run(&["list", "-g", "basket"]);
    assert_eq!(
        lines(&grep),
        ["basket.test.toml", "checkout/refund.test.toml"],
        "{}",
        stderr(&grep)
    );
    let inverted = p.run(&[
        "list",
        "--grep",
        "(?i)basket|pay",
        "--grep-invert",
        "^checkout/re",
    ]);
    assert_eq!(
        lines(&inverted),
        ["basket.test.toml", "checkout/pay.test.toml"]
    );
    let tagged = p.run(&["list", "--tag", "smoke", "--grep-invert", "Refund"]);
    assert_eq!(lines(&tagged), ["basket.test.toml"]);
    let json = p.run(&["list", "-g", "basket", "--json"]);
    let listed: Vec<Listed> =
        serde_json::from_slice(&json.stdout).expect("list --json is a list of tests");
    assert_eq!(
        (
            listed[1].test_file.as_str(),
            listed[1].name.as_str(),
            &listed[1].tags[..]
        ),
        (
            "checkout/refund.test.toml",
            "Refund a basket",
            &["smoke".to_string()][..]
        ),
        "{listed:?}"
    );
    assert!(
        !p.root().join(".bugatti").exists(),
        "list runs and writes nothing"
    );
    // [supervisor] grep / grep_invert select too; the flag wins.
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n[supervisor]\ngrep = \"basket\"\ngrep_invert = \"Refund\"\n",
    );
    assert_eq!(lines(&p.list()), ["basket.test.toml"]);
    assert_eq!(
        lines(&p.run(&["list", "-g", "pay|Refund"])),
        ["checkout/pay.test.toml"],
        "the flag replaces the config's grep; its grep_invert still applies"
    );
    assert_eq!(
        lines(&p.run(&["list", "-g", "pay|basket", "--grep-invert", "^basket"])),
        ["checkout/pay.test.toml", "checkout/refund.test.toml"]
    );
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    // start with the same flags runs exactly those.
    let start = p.run(&["start", "-g", "basket"]);
    assert_exit(&start, 0);
    assert_eq!(ran(&p), lines(&grep));
    p.assert_nothing_survives();
}

#[test]
fn a_pattern_that_selects_nothing_or_is_no_regex_is_invalid_input() {
    let p = shop();
    let none = p.run(&["start", "-g", "no-such-test"]);
    assert_exit(&none, 2);
    assert!(
        stderr(&none)
            .contains("no root test is selected by --grep `no-such-test` (of 3 discovered)"),
        "{}",
        stderr(&none)
    );
    let bad = p.run(&["list", "--grep-invert", "(unclosed"]);
    assert_exit(&bad, 2);
    assert!(
        stderr(&bad).contains("--grep-invert `(unclosed` is not a regular expression"),
        "{}",
        stderr(&bad)
    );
    assert!(!p.root().join(".bugatti/runs").exists(), "nothing ran");
}

#[test]
fn max_fail_starts_nothing_new_after_the_nth_failure_and_names_the_rest() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    for (name, cmd) in [
        ("a", "false"),
        ("b", "true"),
        ("c", "false"),
        ("d", "true"),
        ("e", "true"),
    ] {
        p.write(
            &format!("{name}.test.toml"),
            &format!("name = \"{name}\"\n[[steps]]\ninstruction = \"`{cmd}`\"\n"),
        );
    }
    let out = p.run(&["start", "-j", "1", "--max-fail", "2"]);
    assert_exit(&out, 1);
    assert_eq!(ran(&p), ["a.test.toml", "b.test.toml", "c.test.toml"]);
    let summary = p.suite_summary();
    assert_eq!(
        summary.not_run,
        ["d.test.toml", "e.test.toml"],
        "{summary:?}"
    );
    let console = stdout(&out);
    assert!(
        console.contains("d.test.toml") && console.contains("e.test.toml"),
        "the tests not run are named: {console}"
    );
    // [supervisor] max_fail sets it too; the flag wins.
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n[supervisor]\nmax_fail = 1\n",
    );
    let check = p.run(&["check", "-v"]);
    assert!(
        stdout(&check).contains("supervisor.max_fail"),
        "{}",
        stdout(&check)
    );
    let out = p.run(&["start", "-j", "1"]);
    assert_exit(&out, 1);
    let again = p.suite_summary();
    assert_eq!(Some(again.not_run.len()), Some(4), "{again:?}");
    let zero = p.run(&["start", "--max-fail", "0"]);
    assert_exit(&zero, 2);
    assert!(stderr(&zero).contains("--max-fail must be at least 1"));
    p.assert_nothing_survives();
}

#[test]
fn headed_needs_a_display_and_turns_the_browser_window_on() {
    let p = shop();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n[browser]\nexecutable = \"/bin/true\"\nmcp = false\n",
    );
    let out = p
        .supervisor()
        .args(["start", "--headed"])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .expect("run");
    assert_exit(&out, 2);
    assert!(
        stderr(&out)
            .contains("--headed needs a display, and neither DISPLAY nor WAYLAND_DISPLAY is set"),
        "{}",
        stderr(&out)
    );
    assert!(!p.root().join(".bugatti/runs").exists(), "nothing ran");
    let check = p
        .supervisor()
        .args(["check", "-v", "--headed"])
        .env("DISPLAY", ":99")
        .output()
        .expect("check");
    assert_exit(&check, 0);
    let text = stdout(&check);
    let headless: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("browser.headless"))
        .collect();
    assert!(
        !headless.is_empty() && headless.iter().all(|l| l.contains("false")),
        "{text}"
    );
}

#[test]
fn each_new_option_has_help_text() {
    let p = Project::new();
    let help = stdout(&p.run(&["start", "--help"]));
    for option in [
        "--grep <PATTERN>",
        "-g",
        "--grep-invert <PATTERN>",
        "--max-fail <N>",
        "--repeat <N>",
        "--headed",
    ] {
        assert!(help.contains(option), "start --help lacks {option}: {help}");
    }
    let list = stdout(&p.run(&["list", "--help"]));
    for option in [
        "--grep <PATTERN>",
        "--grep-invert",
        "--tag",
        "--json",
        "--shard",
        "--rerun-failed",
    ] {
        assert!(list.contains(option), "list --help lacks {option}: {list}");
    }
    let top = stdout(&p.run(&["--help"]));
    assert!(top.contains("list"), "{top}");
}

#[test]
fn rerun_failed_reads_the_last_whole_suite_not_a_later_shards_entry() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "a.test.toml",
        "name = \"A\"\n[[steps]]\ninstruction = \"`false`\"\n",
    );
    p.write(
        "b.test.toml",
        "name = \"B\"\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    let out = p.start();
    assert_exit(&out, 1);
    // A later shard holding only b, all green: its entry is not the suite's.
    let out = p.run(&["start", "--shard", "2/2", "--shard-by", "count"]);
    assert_exit(&out, 0);
    let listed = p.run(&["list", "--rerun-failed"]);
    assert_exit(&listed, 0);
    assert_eq!(lines(&listed), ["a.test.toml"], "{}", stderr(&listed));
    let out = p.run(&["start", "--rerun-failed"]);
    assert_exit(&out, 1);
    assert!(
        stdout(&out).contains("--rerun-failed: 1 root test(s) that did not pass in suite"),
        "{}",
        stdout(&out)
    );
    p.assert_nothing_survives();
}
