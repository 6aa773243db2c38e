//! Shards a release manager can believe (see docs/ci.md), through the real binary on temp
//! projects with the `shell` provider: shards run one after another in one project split the
//! suite the same way (the split reads only whole-suite history), a merge lacking a shard names
//! every test it did not run and is not green, two unsharded suites are no CI run, and
//! `report --trends` finds the merged suite the CI recipe writes with `--out`.

use crate::common;
use crate::common::assert_exit;

use common::records::SuiteSummary;
use common::{stderr, stdout, Project};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Root tests `s0..s6`, each a shell step; `s3` a little slower, so durations differ.
fn project() -> Project {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    for i in 0..7 {
        let step = if i == 3 { "sleep 0.3" } else { "echo quick" };
        p.write(
            &format!("tests/s{i}.test.toml"),
            &format!("[[steps]]\ninstruction = \"`{step} {i}`\"\n"),
        );
    }
    p
}

fn summary_of(dir: &Path) -> SuiteSummary {
    common::read_json_file(&dir.join("summary.json"))
}

/// The suite directories under `.bugatti/suites`, oldest first.
fn suites(p: &Project) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(p.root().join(".bugatti/suites"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// Runs shard `k/n` (default history) and returns its suite directory and the tests it ran.
fn run_shard(p: &Project, k: usize, n: usize) -> (PathBuf, Vec<String>) {
    let before = suites(p);
    let out = p.run(&["start", "--shard", &format!("{k}/{n}")]);
    assert_exit(&out, 0);
    let dir = suites(p)
        .into_iter()
        .find(|d| !before.contains(d))
        .expect("a new suite");
    let ran = summary_of(&dir)
        .tests
        .into_iter()
        .map(|t| t.test_file)
        .collect();
    (dir, ran)
}

#[test]
fn shards_run_one_after_another_run_every_test_once_three_nights_in_a_row() {
    let p = project();
    for night in 1..=3 {
        let mut runs: BTreeMap<String, usize> = BTreeMap::new();
        let mut dirs = Vec::new();
        for k in 1..=3 {
            let (dir, ran) = run_shard(&p, k, 3);
            for t in ran {
                *runs.entry(t).or_default() += 1;
            }
            dirs.push(dir.display().to_string());
        }
        assert_eq!(runs.len(), 7, "night {night}: every test ran: {runs:?}");
        assert!(
            runs.values().all(|n| *n == 1),
            "night {night}: each test exactly once: {runs:?}"
        );
        let out = p
            .supervisor()
            .arg("merge")
            .args(&dirs)
            .output()
            .expect("merge");
        assert_eq!(
            out.status.code(),
            Some(0),
            "night {night}: {}{}",
            stdout(&out),
            stderr(&out)
        );
    }
    // Night 2 and 3 split by the merged nights' durations.
    let out = p.run(&["check", "--shard", "1/3"]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(text.contains("shard 1/3 by duration"), "{text}");

    // A fourth night merged `--out merged` (no --history): its entry goes to the project's
    // history, and `report --trends` reports it, not the newest shard in .bugatti/suites.
    let dirs: Vec<String> = (1..=3)
        .map(|k| run_shard(&p, k, 3).0.display().to_string())
        .collect();
    let out = p
        .supervisor()
        .arg("merge")
        .args(&dirs)
        .args(["--out", "merged"])
        .output()
        .expect("merge");
    assert_exit(&out, 0);
    let merged = summary_of(&p.root().join("merged"));
    let out = p.run(&["report", "--trends"]);
    let text = stdout(&out);
    let id = &merged.suite_id;
    assert!(text.starts_with(&format!("suite:        {id}")), "{text}");
    assert!(text.contains("Trends over the last 4 suites"), "{text}");
    let page = std::fs::read_to_string(p.root().join("merged/report.html")).expect("html");
    assert!(
        page.contains("<section id=\"trends\">"),
        "the merged page has trends"
    );
}

/// Shards 1/3 and 3/3 of `p`; the tests `check` gives shard 2/3.
fn two_of_three(p: &Project) -> (Vec<String>, Vec<String>) {
    let missing: Vec<String> = {
        let out = p.run(&["check", "--shard", "2/3"]);
        stdout(&out)
            .lines()
            .filter_map(|l| l.strip_prefix("== "))
            .map(|l| l.split(' ').next().unwrap_or_default().to_string())
            .collect()
    };
    assert!(!missing.is_empty());
    let (one, _) = run_shard(p, 1, 3);
    let (three, _) = run_shard(p, 3, 3);
    (
        vec![one.display().to_string(), three.display().to_string()],
        missing,
    )
}

#[test]
fn a_merge_lacking_a_shard_names_its_tests_not_run_and_exits_1() {
    let p = project();
    let (dirs, missing) = two_of_three(&p);
    let out = p
        .supervisor()
        .arg("merge")
        .args(&dirs)
        .args(["--out", "partial"])
        .output()
        .expect("merge");
    let console = format!("{}{}", stdout(&out), stderr(&out));
    assert_exit(&out, 1);
    let dir = p.root().join("partial");
    let summary = summary_of(&dir);
    let md = std::fs::read_to_string(dir.join("summary.md")).expect("md");
    let junit = std::fs::read_to_string(dir.join("junit.xml")).expect("junit");
    let html = std::fs::read_to_string(dir.join("report.html")).expect("html");
    assert_eq!(summary.missing_shards, ["2/3"], "{summary:?}");
    for test in &missing {
        assert!(
            summary.not_run.contains(test),
            "{test} not run: {summary:?}"
        );
        assert_eq!(
            summary.not_run_reasons.get(test).map(String::as_str),
            Some("shard 2/3 missing"),
            "{summary:?}"
        );
        let line = format!("{test} — shard 2/3 missing");
        assert!(console.contains(&line), "console names {line}: {console}");
        assert!(
            md.contains(&format!("`{test}` — shard 2/3 missing")),
            "{md}"
        );
        let case = junit
            .split("<testcase ")
            .find(|c| c.contains(&format!("name=\"{test}\"")))
            .unwrap_or_else(|| panic!("a testcase for {test}: {junit}"));
        assert!(
            case.contains("<skipped") && case.contains("shard 2/3 missing"),
            "{case}"
        );
        assert!(html.contains(test.as_str()), "report.html names {test}");
    }
    assert!(html.contains("shard 2/3 missing"), "report.html says why");
    assert_eq!(summary.totals.not_run, missing.len(), "{summary:?}");

    // --allow-partial keeps the listing and exits by the tests that ran (all passed).
    let out = p
        .supervisor()
        .arg("merge")
        .args(&dirs)
        .args(["--out", "allowed", "--allow-partial"])
        .output()
        .expect("merge");
    let console = format!("{}{}", stdout(&out), stderr(&out));
    assert_exit(&out, 0);
    assert!(console.contains("shard 2/3 missing"), "{console}");
    let summary = summary_of(&p.root().join("allowed"));
    assert_eq!(summary.missing_shards, ["2/3"], "{summary:?}");
}

#[test]
fn a_partial_merge_with_a_failure_still_fails_and_two_unsharded_suites_are_refused() {
    let p = project();
    p.write(
        "tests/s0.test.toml",
        "[[steps]]\ninstruction = \"`exit 1`\"\n",
    );
    let mut dirs = Vec::new();
    for k in [1, 3] {
        let out = p.run(&["start", "--shard", &format!("{k}/3")]);
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{}",
            stderr(&out)
        );
        dirs.push(suites(&p).pop().expect("suite").display().to_string());
    }
    let ran_s0 = dirs.iter().any(|d| {
        summary_of(Path::new(d))
            .tests
            .iter()
            .any(|t| t.test_file == "tests/s0.test.toml")
    });
    let out = p
        .supervisor()
        .arg("merge")
        .args(&dirs)
        .args(["--out", "allowed", "--allow-partial"])
        .output()
        .expect("merge");
    assert_eq!(
        out.status.code(),
        Some(if ran_s0 { 1 } else { 0 }),
        "{}",
        stderr(&out)
    );

    // Two unsharded suites are no CI run.
    let q = project();
    q.write(
        "tests/s0.test.toml",
        "[[steps]]\ninstruction = \"`exit 1`\"\n",
    );
    let _ = q.run(&["start", "--retries", "0"]);
    q.write(
        "tests/s0.test.toml",
        "[[steps]]\ninstruction = \"`echo ok`\"\n",
    );
    let _ = q.start();
    let both: Vec<String> = suites(&q).iter().map(|d| d.display().to_string()).collect();
    assert_eq!(both.len(), 2);
    let out = q
        .supervisor()
        .arg("merge")
        .args(&both)
        .args(["--out", "refused"])
        .output()
        .expect("merge");
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("ran without --shard"),
        "{}",
        stderr(&out)
    );
    assert!(!q.root().join("refused/summary.json").exists());
}

/// The report job of examples/ci/github-actions.yml, step by step, three nights: each shard in
/// its own checkout restores the history cache, the report job downloads the shards' `.bugatti/`
/// folders into `shards/`, merges them `--out merged --history ci-history/history.jsonl`, and a
/// user then asks for the trends.
#[test]
fn report_trends_finds_the_merged_suite_of_the_ci_recipe() {
    let report_job = Project::new();
    let cache = report_job.root().join("ci-history/history.jsonl");
    for night in 1..=3 {
        let shards = report_job.root().join("shards");
        let _ = std::fs::remove_dir_all(&shards);
        let _ = std::fs::remove_dir_all(report_job.root().join("merged"));
        for k in 1..=3 {
            let shard = project();
            if night == 2 {
                shard.write(
                    "tests/s1.test.toml",
                    "[[steps]]\ninstruction = \"`exit 1`\"\n",
                );
            }
            if cache.exists() {
                let copy = shard.root().join("ci-history/history.jsonl");
                std::fs::create_dir_all(copy.parent().expect("dir")).expect("dir");
                std::fs::copy(&cache, &copy).expect("restore");
            }
            let out = shard.run(&[
                "start",
                "--shard",
                &format!("{k}/3"),
                "--history",
                "ci-history/history.jsonl",
            ]);
            assert!(
                out.status.code().is_some_and(|c| c <= 1),
                "{}",
                stderr(&out)
            );
            copy_dir(
                &shard.root().join(".bugatti"),
                &shards.join(format!("bugatti-{k}")),
            );
        }
        let mut args = vec!["merge".to_string()];
        for k in 1..=3 {
            let dir = shards.join(format!("bugatti-{k}/suites"));
            for e in std::fs::read_dir(dir).expect("suites") {
                args.push(e.expect("entry").path().display().to_string());
            }
        }
        args.extend(
            ["--out", "merged", "--history", "ci-history/history.jsonl"].map(str::to_string),
        );
        let out = report_job.supervisor().args(&args).output().expect("merge");
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{}",
            stderr(&out)
        );
    }
    let out = report_job.run(&[
        "report",
        "--trends",
        "--history",
        "ci-history/history.jsonl",
    ]);
    let text = stdout(&out);
    assert!(
        text.contains("Trends over the last 3 suites"),
        "{text}{}",
        stderr(&out)
    );
    assert!(
        text.contains("tests/s1.test.toml: 2 flips in 3 suites"),
        "{text}"
    );
    assert!(
        text.contains("7 root tests"),
        "the merged suite, not a shard: {text}"
    );
    // Naming the folder works too.
    let out = report_job.run(&[
        "report",
        "merged",
        "--trends",
        "--history",
        "ci-history/history.jsonl",
    ]);
    assert!(
        stdout(&out).contains("Trends over the last 3 suites"),
        "{}",
        stdout(&out)
    );
    let page = std::fs::read_to_string(report_job.root().join("merged/report.html")).expect("html");
    assert!(
        page.contains("<section id=\"trends\">"),
        "the merged page has trends"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.expect("entry");
        let target = to.join(entry.path().strip_prefix(from).expect("prefix"));
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}
