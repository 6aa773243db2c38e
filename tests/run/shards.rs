//! docs/ci.md through the real binary on temp projects with the `shell` provider: `--shard auto`
//! from each CI engine's variables, shards balanced by recorded durations, `--history FILE`,
//! `merge` of several nights into whole-suite history entries (and its refusals), and
//! `[supervisor] on_finish` with the suite's facts.

use crate::common;
use crate::common::assert_exit;
use crate::common::records::{HistoryEntry, SuiteSummary};
use crate::common::{stderr, stdout, Project};
use std::path::Path;

/// Root tests `a1..a6` (quick) and `slow`, each a shell step.
fn project() -> Project {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    for i in 1..=6 {
        p.write(
            &format!("tests/a{i}.test.toml"),
            &format!("[[steps]]\ninstruction = \"`echo quick {i}`\"\n"),
        );
    }
    p.write(
        "tests/slow.test.toml",
        "[[steps]]\ninstruction = \"`sleep 1`\"\n",
    );
    p
}

/// The root tests `check` selects, by file name.
fn selected(p: &Project, args: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let out = p
        .supervisor()
        .arg("check")
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("check");
    assert_exit(&out, 0);
    stdout(&out)
        .lines()
        .filter_map(|l| l.strip_prefix("== "))
        .map(|l| l.split(' ').next().unwrap_or_default().to_string())
        .collect()
}

fn history_line(file: &Path, n: usize) -> HistoryEntry {
    bugatti::report::records::history::read(file)
        .into_iter()
        .nth(n)
        .expect("a history entry")
}

#[test]
fn shard_auto_runs_what_the_engines_k_of_n_runs() {
    let p = project();
    let expected = selected(&p, &["--shard", "2/3"], &[]);
    assert!(!expected.is_empty());
    let engines: [&[(&str, &str)]; 5] = [
        &[("BUGATTI_SHARD", "2/3")],
        &[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "3")],
        &[("CIRCLE_NODE_INDEX", "1"), ("CIRCLE_NODE_TOTAL", "3")],
        &[
            ("BUILDKITE_PARALLEL_JOB", "1"),
            ("BUILDKITE_PARALLEL_JOB_COUNT", "3"),
        ],
        &[("JOB_COMPLETION_INDEX", "1"), ("BUGATTI_SHARD_TOTAL", "3")],
    ];
    for env in engines {
        assert_eq!(selected(&p, &["--shard", "auto"], env), expected, "{env:?}");
    }
    // From a subdirectory too, and a run says where the shard came from.
    let out = p
        .supervisor()
        .current_dir(p.root().join("tests"))
        .args(["start", "--shard", "auto"])
        .env("CI_NODE_INDEX", "2")
        .env("CI_NODE_TOTAL", "3")
        .output()
        .expect("start");
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("shard 2/3 from CI_NODE_INDEX/CI_NODE_TOTAL (GitLab)"),
        "{}",
        stderr(&out)
    );
    let summary = p.suite_summary();
    assert_eq!(
        summary.shard.as_ref().map(|s| s.shard.as_str()),
        Some("2/3"),
        "{summary:?}"
    );
    // None set: the whole suite, said so.
    let out = p
        .supervisor()
        .args(["check", "--shard", "auto"])
        .output()
        .expect("check");
    assert!(
        stderr(&out).contains("the whole suite runs"),
        "{}",
        stderr(&out)
    );
    // A wrong one: exit 2 naming it, nothing run.
    let out = p
        .supervisor()
        .args(["start", "--shard", "auto"])
        .env("CI_NODE_INDEX", "4")
        .env("CI_NODE_TOTAL", "3")
        .output()
        .expect("start");
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("CI_NODE_INDEX"), "{}", stderr(&out));
}

#[test]
fn shards_by_duration_give_the_slow_test_a_shard_of_its_own() {
    let p = project();
    // Slower than the six quick tests together even on a loaded machine (each quick run, harness
    // and all, would need over half a second to make the split close).
    p.write(
        "tests/slow.test.toml",
        "[[steps]]\ninstruction = \"`sleep 3`\"\n",
    );
    // Without history: by count, the slow test shares its shard.
    let by_count = selected(&p, &["--shard", "1/2"], &[]);
    assert_eq!(by_count.len(), 4, "{by_count:?}");
    // One whole run records each test's duration in the history file the shards share.
    let history = p.root().join("ci-cache/history.jsonl");
    let h = history.display().to_string();
    let out = p.run(&["start", "--history", &h]);
    assert_exit(&out, 0);
    assert!(history.is_file(), "--history FILE is written");
    assert!(
        !p.root().join(".bugatti/history.jsonl").exists(),
        "and the default file is not"
    );
    let shard_of_slow: Vec<Vec<String>> = (1..=2)
        .map(|k| selected(&p, &["--shard", &format!("{k}/2"), "--history", &h], &[]))
        .collect();
    let with_slow = shard_of_slow
        .iter()
        .find(|s| s.contains(&"tests/slow.test.toml".to_string()))
        .expect("the slow test is in a shard");
    assert_eq!(with_slow.len(), 1, "alone: {shard_of_slow:?}");
    assert_eq!(shard_of_slow.iter().map(Vec::len).sum::<usize>(), 7);
    // --shard-by count overrides.
    assert_eq!(
        selected(
            &p,
            &["--shard", "1/2", "--history", &h, "--shard-by", "count"],
            &[]
        ),
        by_count
    );
    // A damaged history: a note, and a split by count.
    std::fs::write(&history, "{\"suite_id\": \"trunc").expect("damage");
    let out = p
        .supervisor()
        .args(["check", "--shard", "1/2", "--history", &h])
        .output()
        .expect("check");
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert_exit(&out, 0);
    assert!(
        text.contains("unreadable line") && text.contains("split by count"),
        "{text}"
    );
}

#[test]
fn three_nights_of_two_shards_merge_into_three_whole_suite_history_entries() {
    let p = project();
    let history = p.root().join("ci-cache/history.jsonl");
    let h = history.display().to_string();
    for night in 1..=3 {
        let mut suites = Vec::new();
        for k in 1..=2 {
            // Each shard's machine restores the cache: its own copy of last night's history.
            let copy = p.root().join(format!("shard-{k}/history.jsonl"));
            std::fs::create_dir_all(copy.parent().expect("dir")).expect("dir");
            if history.exists() {
                std::fs::copy(&history, &copy).expect("restore");
            }
            let c = copy.display().to_string();
            let out = p.run(&["start", "--shard", &format!("{k}/2"), "--history", &c]);
            assert!(out.status.code() == Some(0), "{}", stderr(&out));
            suites.push(p.suite_dir().display().to_string());
        }
        let out_dir = p.root().join(format!("merged-{night}"));
        let out = p
            .supervisor()
            .arg("merge")
            .args(&suites)
            .args(["--out", &out_dir.display().to_string(), "--history", &h])
            .output()
            .expect("merge");
        assert_exit(&out, 0);
        let merged: SuiteSummary = common::read_json_file(&out_dir.join("summary.json"));
        assert_eq!(merged.totals.total, 7, "{merged:?}");
    }
    let entries = bugatti::report::records::history::read(&history);
    let merges: Vec<&HistoryEntry> = entries
        .iter()
        .filter(|e| !e.selection.merged.is_empty())
        .collect();
    assert_eq!(merges.len(), 3, "{entries:?}");
    assert!(merges.iter().all(|m| m.tests.len() == 7));
    let _ = history_line(&history, 0);
    // The last merged report shows the trends of the three nights, drawn in the page itself.
    let page = std::fs::read_to_string(p.root().join("merged-3/report.html")).expect("report");
    assert!(page.contains("<section id=\"trends\">"), "trends section");
    let trends = &page[page.find("<section id=\"trends\">").expect("trends")..];
    assert_eq!(
        trends.matches("<svg").count(),
        2,
        "pass rate and duration (no cost with shell)"
    );
    let points = trends
        .split("points=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a polyline");
    assert_eq!(
        points.split(' ').count(),
        3,
        "one point per night: {points}"
    );
    if let Some(chromium) = chromium() {
        let dom = dump_dom(&chromium, &p.root().join("merged-3/report.html"));
        assert!(
            dom.contains("id=\"trends\"") && dom.matches("<polyline").count() == 2,
            "the browser renders the charts: {dom:.300}"
        );
    }

    // Refusals (exit 2): a shard merged with a stranger's shard, and a test in two shards.
    let first = p.run(&["start", "--shard", "1/2"]);
    assert_exit(&first, 0);
    let one = p.suite_dir().display().to_string();
    let other = p.run(&["start", "--shard", "2/3"]);
    assert_exit(&other, 0);
    let three = p.suite_dir().display().to_string();
    let out = p.run(&["merge", &one, &three, "--out", "refused"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("different selections"),
        "{}",
        stderr(&out)
    );
    let again = p.run(&["start", "--shard", "1/2"]);
    assert_exit(&again, 0);
    let twin = p.suite_dir().display().to_string();
    let out = p.run(&["merge", &one, &twin, "--out", "refused"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("ran in two shards"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn on_finish_gets_the_suites_facts_and_never_changes_the_exit_code() {
    let p = project();
    let config = "[provider]\nname = \"shell\"\n\n[supervisor]\non_finish = \"env | grep '^BUGATTI_' | sort > finished.env; exit 5\"\n";
    p.write("bugatti.config.toml", config);
    p.write(
        "tests/broken.test.toml",
        "[[steps]]\ninstruction = \"`exit 3`\"\n",
    );
    let out = p.start();
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed test, not the hook's 5"
    );
    assert!(
        stderr(&out).contains("on_finish") && stderr(&out).contains("failed"),
        "its failure is reported: {}",
        stderr(&out)
    );
    let env = std::fs::read_to_string(p.root().join("finished.env")).expect("the hook ran");
    let suite = p.suite_dir();
    let summary = p.suite_summary();
    for expected in [
        format!("BUGATTI_SUITE_ID={}", summary.suite_id),
        "BUGATTI_OUTCOME=failed".to_string(),
        "BUGATTI_PASSED=7".to_string(),
        "BUGATTI_FAILED=1".to_string(),
        format!(
            "BUGATTI_REPORT_HTML={}",
            suite.join("report.html").display()
        ),
        format!(
            "BUGATTI_SUMMARY_JSON={}",
            suite.join("summary.json").display()
        ),
    ] {
        assert!(env.lines().any(|l| l == expected), "{expected} in {env}");
    }
    assert!(
        suite.join("report.html").is_file(),
        "written before the hook"
    );

    // Bounded: a hook that hangs is stopped at its timeout and leaves nothing.
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[supervisor]\non_finish = \"sleep 300\"\non_finish_timeout_secs = 1\n",
    );
    std::fs::remove_file(p.root().join("tests/broken.test.toml")).expect("rm");
    let out = p.start();
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("stopped after 1s"),
        "{}",
        stderr(&out)
    );
}

fn chromium() -> Option<std::path::PathBuf> {
    common::skip::chromium("report.html in a browser")
}

fn dump_dom(chromium: &Path, page: &Path) -> String {
    let profile = tempfile::tempdir().expect("profile");
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--virtual-time-budget=2000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn report_trends_prints_the_selections_last_suites() {
    let p = project();
    for night in 0..3 {
        if night == 1 {
            p.write(
                "tests/a1.test.toml",
                "[[steps]]\ninstruction = \"`exit 1`\"\n",
            );
        } else {
            p.write(
                "tests/a1.test.toml",
                "[[steps]]\ninstruction = \"`echo back`\"\n",
            );
        }
        let _ = p.start();
    }
    let out = p.run(&["report", "--trends"]);
    let text = stdout(&out);
    assert!(text.contains("Trends over the last 3 suites"), "{text}");
    assert!(
        text.contains("tests/a1.test.toml: 2 flips in 3 suites"),
        "{text}"
    );
    assert!(
        text.contains("Slowest:") && text.contains("tests/slow.test.toml"),
        "{text}"
    );
}
