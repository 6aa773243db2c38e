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
