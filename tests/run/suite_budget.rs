//! The suite's `[supervisor] max_cost_usd` at `-j 4` (see docs/providers.md, budgets): each
//! running test reserves its expected cost before another starts, so the suite overshoots its
//! ceiling by at most one test's expected cost. Needs no CLI: a stand-in for Claude Code
//! (tests/support/priced_claude.py) reports an exact cost per step, as the real one does.

use crate::common;

use common::{stderr, stdout, Project};

const PER_TEST: f64 = 0.10;

fn project(tests: usize, ceiling: f64) -> Project {
    let p = Project::new();
    // The stand-in is no MCP client, so it is given no console.
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"claude-code\"\nconsole = false\n\n\
             [supervisor]\nmax_parallel = 4\nmax_cost_usd = {ceiling}\n"
        ),
    );
    for i in 0..tests {
        p.write(
            &format!("tests/t{i:02}.test.toml"),
            "[[steps]]\ninstruction = \"Do it.\"\n",
        );
    }
    p
}

/// One suite: its exit code, what it cost, how many tests started.
fn night(p: &Project) -> (Option<i32>, f64, usize, String) {
    let fake = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/priced_claude.py"
    );
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CLAUDE_BIN", fake)
        .env("PRICED_CLAUDE_COST", PER_TEST.to_string())
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let summary = p.suite_summary();
    let cost = summary.cost_usd.unwrap_or(0.0);
    let ran = summary.tests.len();
    (
        out.status.code(),
        cost,
        ran,
        format!("{}{}\n{summary:?}", stdout(&out), stderr(&out)),
    )
}

#[test]
fn at_j4_the_suite_overshoots_its_ceiling_by_at_most_one_tests_expected_cost() {
    for ceiling in [0.25, 1.0] {
        let p = project(12, ceiling);
        for n in 1..=2 {
            // Night 1 knows no cost yet; night 2 reads each test's cost from history.
            let (code, cost, ran, text) = night(&p);
            let overshoot = cost - ceiling;
            eprintln!(
                "ceiling ${ceiling:.2}, night {n}: {ran} of 12 tests ran, cost ${cost:.2}, \
                 overshoot ${:.2} ({:.0}% of the ceiling)",
                overshoot.max(0.0),
                cost / ceiling * 100.0
            );
            assert!(
                overshoot <= PER_TEST + 1e-9,
                "overshoot ${overshoot:.2} > one test's ${PER_TEST}: {text}"
            );
            assert!(ran >= 2, "the budget is used, not left idle: {text}");
            assert!(ran < 12, "{text}");
            assert_eq!(code, Some(1), "tests left unrun fail the suite: {text}");
            assert!(text.contains("[supervisor] max_cost_usd"), "{text}");
        }
    }
}

/// One shard of a CI run, started (not waited for), with a shared ledger when `ledger` is set.
fn shard(
    p: &Project,
    k: usize,
    n: usize,
    ledger: Option<&std::path::Path>,
    ci_run: &str,
) -> std::process::Child {
    let fake = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/priced_claude.py"
    );
    let mut cmd = p.supervisor();
    cmd.args(["start", "-j", "1", "--shard", &format!("{k}/{n}")])
        .env("BUGATTI_CLAUDE_BIN", fake)
        .env("PRICED_CLAUDE_COST", PER_TEST.to_string())
        .env("BUGATTI_CI_RUN_ID", ci_run)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(ledger) = ledger {
        cmd.arg("--cost-ledger").arg(ledger);
    }
    cmd.spawn().expect("start a shard")
}

/// Four shards of one CI run, at once, sharing a ledger: (exit codes, total cost, tests run,
/// what they said).
fn ci_run(
    ledger: &std::path::Path,
    ci_run: &str,
    cap: f64,
) -> (Vec<Option<i32>>, f64, usize, String) {
    let (codes, cost, ran, said, _) = ci_run_kept(ledger, ci_run, cap);
    (codes, cost, ran, said)
}

/// [`ci_run`], its shard projects kept (for a merge).
fn ci_run_kept(
    ledger: &std::path::Path,
    ci_run: &str,
    cap: f64,
) -> (Vec<Option<i32>>, f64, usize, String, Vec<Project>) {
    let projects: Vec<Project> = (0..4).map(|_| project(16, cap)).collect();
    let children: Vec<_> = projects
        .iter()
        .enumerate()
        .map(|(i, p)| shard(p, i + 1, 4, Some(ledger), ci_run))
        .collect();
    let mut codes = Vec::new();
    let mut said = String::new();
    for child in children {
        let out = child.wait_with_output().expect("a shard ends");
        codes.push(out.status.code());
        said.push_str(&stdout(&out));
        said.push_str(&stderr(&out));
    }
    let (mut cost, mut ran) = (0.0, 0);
    for p in &projects {
        p.assert_nothing_survives();
        let summary = p.suite_summary();
        cost += summary.cost_usd.unwrap_or(0.0);
        ran += summary.tests.len();
        said.push_str(&format!("{:?}\n", summary.not_run_reason));
    }
    (codes, cost, ran, said, projects)
}

#[test]
fn shards_sharing_a_ledger_keep_the_whole_runs_cost_under_one_cap() {
    let cap = 0.45;
    let dir = tempfile::tempdir().expect("tmp");
    let ledger = dir.path().join("cost-ledger.jsonl");
    let (codes, cost, ran, said, shards) = ci_run_kept(&ledger, "night-1", cap);
    eprintln!("4 shards, cap ${cap}: {ran} of 16 tests ran, cost ${cost:.2}");
    // At most one test in flight per running agent (4 shards at -j 1) when the cap was reached.
    assert!(
        cost <= cap + 4.0 * PER_TEST + 1e-9,
        "cost ${cost:.2}: {said}"
    );
    assert!((4..16).contains(&ran), "{ran} ran: {said}");
    assert!(said.contains("cost cap reached"), "{said}");
    assert!(
        codes.contains(&Some(1)),
        "a shard left tests unrun: {codes:?}"
    );
    // The merge reports the run's total against the cap.
    let merged = dir.path().join("merged");
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(shards.iter().map(|p| p.suite_dir().display().to_string()));
    args.extend(["--out".into(), merged.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = shards[0].run(&args);
    let merge_said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        merge_said.contains(&format!(
            "cost: the run spent ${cost:.4} of its [supervisor] max_cost_usd $0.4500"
        )),
        "{merge_said}"
    );
    // The next CI run has its own id: last night's spend does not count.
    let (_, cost2, ran2, said2) = ci_run(&ledger, "night-2", cap);
    assert!(ran2 >= 4 && cost2 > 0.0, "night 2 starts afresh: {said2}");
}

#[test]
fn without_a_ledger_each_shard_gets_its_share_of_the_cap_and_says_so() {
    let p = project(8, 0.40);
    let out = shard(&p, 1, 4, None, "night-1")
        .wait_with_output()
        .expect("a shard ends");
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        said.contains("without --cost-ledger shard 1/4 gets 1/4 of it, $0.1000"),
        "{said}"
    );
    p.assert_nothing_survives();
}
