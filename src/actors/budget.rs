//! What a suite has spent on agents, and its ceilings (README "Budgets and cost"): the test's
//! `[provider] max_cost_usd` (all its attempts) and the invocation's `[supervisor] max_cost_usd`.
//!
//! Sessions add each step's reported cost as it comes; a step that takes its test (or the suite)
//! past a ceiling ends `over_budget`, and the supervisor does not start a root test that would
//! take the suite past its ceiling: one whose expected cost — the mean cost of the runs finished so
//! far — added to what is spent exceeds it (or anything once the ceiling is reached). Agents report
//! cost when a step ends (Claude Code's `result`), so a step is judged when it ends, not mid-way.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The suite's spending, shared by the supervisor and every session.
#[derive(Debug, Default)]
pub struct Budget {
    suite_limit: Option<f64>,
    spent: Mutex<Spent>,
}

#[derive(Debug, Default)]
struct Spent {
    suite: f64,
    per_test: HashMap<PathBuf, f64>,
    /// Runs that ended, and what they cost together: the mean is the next test's expected cost.
    runs_finished: u32,
    runs_cost: f64,
}

impl Budget {
    pub fn new(suite_limit: Option<f64>) -> Self {
        Self {
            suite_limit,
            spent: Mutex::new(Spent::default()),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Spent) -> T) -> T {
        // A poisoned lock only means another session panicked mid-update: the numbers stand.
        let mut spent = self.spent.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut spent)
    }

    /// Adds a step's cost for `test`.
    pub fn add(&self, test: &Path, usd: f64) {
        if !(usd.is_finite() && usd > 0.0) {
            return;
        }
        self.with(|s| {
            s.suite += usd;
            *s.per_test.entry(test.to_path_buf()).or_default() += usd;
        });
    }

    /// A run ended having cost `usd` (for the expected cost of the next test).
    pub fn run_finished(&self, usd: f64) {
        self.with(|s| {
            s.runs_finished += 1;
            s.runs_cost += usd.max(0.0);
        });
    }

    /// What `test` has spent so far, over all its attempts.
    pub fn test_spent(&self, test: &Path) -> f64 {
        self.with(|s| s.per_test.get(test).copied().unwrap_or(0.0))
    }

    pub fn suite_spent(&self) -> f64 {
        self.with(|s| s.suite)
    }

    /// Why `test` may spend no more: past its own ceiling or the suite's. `None`: it may go on.
    pub fn exhausted(&self, test: &Path, test_limit: Option<f64>) -> Option<String> {
        self.with(|s| {
            let mine = s.per_test.get(test).copied().unwrap_or(0.0);
            if let Some(limit) = test_limit.filter(|l| mine >= *l) {
                return Some(format!(
                    "this test has spent ${mine:.4}, its [provider] max_cost_usd is ${limit:.4}"
                ));
            }
            match self.suite_limit {
                Some(limit) if s.suite >= limit => Some(format!(
                    "the suite has spent ${:.4}, its [supervisor] max_cost_usd is ${limit:.4}",
                    s.suite
                )),
                _ => None,
            }
        })
    }

    /// Why the next root test must not start: the suite's spend plus its expected cost (the
    /// mean of the runs so far) would pass the suite's ceiling. `None`: it may start.
    pub fn next_test_refused(&self) -> Option<String> {
        let limit = self.suite_limit?;
        self.with(|s| {
            let expected = if s.runs_finished == 0 {
                0.0
            } else {
                s.runs_cost / f64::from(s.runs_finished)
            };
            (s.suite >= limit || s.suite + expected > limit).then(|| {
                format!(
                    "the suite has spent ${:.4} and a test costs ${expected:.4} on average: \
                     the next one would pass [supervisor] max_cost_usd = ${limit:.4}",
                    s.suite
                )
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_is_refused_when_its_expected_cost_would_pass_the_suite_ceiling() {
        let budget = Budget::new(Some(1.0));
        assert_eq!(
            budget.next_test_refused(),
            None,
            "nothing spent, nothing known"
        );
        budget.add(Path::new("a.test.toml"), 0.6);
        budget.run_finished(0.6);
        let why = budget.next_test_refused().expect("0.6 + 0.6 > 1.0");
        assert!(
            why.contains("$0.6000") && why.contains("max_cost_usd = $1.0000"),
            "{why}"
        );
        let roomy = Budget::new(Some(2.0));
        roomy.add(Path::new("a.test.toml"), 0.6);
        roomy.run_finished(0.6);
        assert_eq!(roomy.next_test_refused(), None, "0.6 + 0.6 <= 2.0");
        assert_eq!(Budget::new(None).next_test_refused(), None, "no ceiling");
    }

    #[test]
    fn a_test_is_exhausted_by_its_own_ceiling_or_the_suites() {
        let budget = Budget::new(Some(5.0));
        let a = Path::new("a.test.toml");
        budget.add(a, 0.5);
        assert_eq!(budget.exhausted(a, Some(1.0)), None);
        budget.add(a, 0.5);
        let why = budget.exhausted(a, Some(1.0)).expect("1.0 reached");
        assert!(why.contains("[provider] max_cost_usd"), "{why}");
        let b = Path::new("b.test.toml");
        assert_eq!(
            budget.exhausted(b, None),
            None,
            "another test's spend is its own"
        );
        budget.add(b, 4.0);
        let why = budget.exhausted(b, None).expect("suite 5.0 reached");
        assert!(why.contains("[supervisor] max_cost_usd"), "{why}");
        budget.add(b, f64::NAN);
        assert_eq!(budget.suite_spent(), 5.0, "nonsense costs are ignored");
    }
}
