//! What a suite has spent on agents, and its ceilings (docs/providers.md "Supervision"): the test's
//! `[provider] max_cost_usd` (all its attempts) and the invocation's `[supervisor] max_cost_usd`.
//!
//! Sessions add each step's reported cost as it comes; a step that takes its test (or the suite)
//! past a ceiling ends `over_budget`. Agents report cost when a step ends (Claude Code's
//! `result`), so a step is judged when it ends, not mid-way.
//!
//! Before a root test starts, the suite's ceiling must hold what is spent, what the tests already
//! running are still expected to spend (each reserved its expected cost when it started, less
//! what it has spent since), and the new test's expected cost. Counting only what is spent would
//! let `-j 4` start four tests on a nearly spent budget and overshoot by three tests' costs; with
//! reservations the overshoot is what the running tests spend beyond their expectation. A test's
//! expected cost: its recent cost per attempt in history, else the mean of the runs finished in
//! this suite, capped by its own `[provider] max_cost_usd` (which alone is the expectation when
//! nothing else is known). When nothing at all is known, the test starts only when no other is
//! running: the first test's cost is learned before others are started on a guess.

use crate::model::ids::RunId;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The suite's spending, shared by the supervisor and every session.
#[derive(Debug, Default)]
pub struct Budget {
    suite_limit: Option<f64>,
    /// Each root test's recent cost per attempt, from history (by test file).
    history: BTreeMap<String, f64>,
    spent: Mutex<Spent>,
}

#[derive(Debug, Default)]
struct Spent {
    suite: f64,
    per_test: HashMap<PathBuf, f64>,
    /// Runs that ended, and what they cost together: the mean is the next test's expected cost.
    runs_finished: u32,
    runs_cost: f64,
    /// Runs started and not yet ended, by run id.
    reserved: HashMap<RunId, Reservation>,
}

/// What a running test was expected to cost when it started.
#[derive(Debug, Clone)]
struct Reservation {
    test: PathBuf,
    expected: f64,
    /// What the test had spent before this run started (earlier attempts).
    spent_before: f64,
}

/// Whether the next root test may start now.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    Start,
    /// Not now: tests are running whose cost is not known yet; ask again when one ends.
    Wait,
    /// Never: the suite's ceiling cannot hold it (why).
    Refuse(String),
}

impl Budget {
    pub fn new(suite_limit: Option<f64>) -> Self {
        Self {
            suite_limit,
            history: BTreeMap::new(),
            spent: Mutex::new(Spent::default()),
        }
    }

    /// With each root test's recent cost per attempt from history (its expected cost).
    pub fn with_history(mut self, costs: BTreeMap<String, f64>) -> Self {
        self.history = costs;
        self
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

    /// What a run of `test` is expected to cost (see the module's comment); `None`: unknown.
    fn expected(&self, s: &Spent, test: &Path, test_limit: Option<f64>) -> Option<f64> {
        let known = self
            .history
            .get(test.to_string_lossy().as_ref())
            .copied()
            .or_else(|| (s.runs_finished > 0).then(|| s.runs_cost / f64::from(s.runs_finished)));
        match (known, test_limit) {
            (Some(e), Some(cap)) => Some(e.min(cap)),
            (known, cap) => known.or(cap),
        }
    }

    /// What the running tests are still expected to spend beyond what they have.
    fn outstanding(s: &Spent) -> f64 {
        s.reserved
            .values()
            .map(|r| {
                let since = s.per_test.get(&r.test).copied().unwrap_or(0.0) - r.spent_before;
                (r.expected - since).max(0.0)
            })
            .sum()
    }

    /// Whether a run of `test` may start: the suite's spend, the running tests' outstanding
    /// reservations and its own expected cost must fit under the suite's ceiling.
    pub fn admit(&self, test: &Path, test_limit: Option<f64>) -> Admission {
        let Some(limit) = self.suite_limit else {
            return Admission::Start;
        };
        self.with(|s| {
            let running = !s.reserved.is_empty();
            let refuse = |expected: f64, outstanding: f64| {
                Admission::Refuse(format!(
                    "the suite has spent ${:.4}{} and the next test is expected to cost ${expected:.4}: \
                     it would pass [supervisor] max_cost_usd = ${limit:.4}",
                    s.suite,
                    if outstanding > 0.0 {
                        format!(" (${outstanding:.4} more reserved by running tests)")
                    } else {
                        String::new()
                    }
                ))
            };
            if s.suite >= limit {
                return refuse(0.0, 0.0);
            }
            let Some(expected) = self.expected(s, test, test_limit) else {
                return if running {
                    Admission::Wait
                } else {
                    Admission::Start
                };
            };
            let outstanding = Self::outstanding(s);
            if s.suite + outstanding + expected <= limit {
                Admission::Start
            } else if running {
                // The running tests may cost less than reserved: decide when one ends.
                Admission::Wait
            } else {
                refuse(expected, outstanding)
            }
        })
    }

    /// A run of `test` starts: its expected cost is reserved until [`Budget::release`].
    pub fn reserve(&self, run_id: &RunId, test: &Path, test_limit: Option<f64>) {
        self.with(|s| {
            let expected = self.expected(s, test, test_limit).unwrap_or(0.0);
            let spent_before = s.per_test.get(test).copied().unwrap_or(0.0);
            s.reserved.insert(
                run_id.clone(),
                Reservation {
                    test: test.to_path_buf(),
                    expected,
                    spent_before,
                },
            );
        });
    }

    /// The run ended (or never started): its reservation is given back. Returns what the run
    /// spent while it held it.
    pub fn release(&self, run_id: &RunId) -> f64 {
        self.with(|s| {
            s.reserved.remove(run_id).map_or(0.0, |r| {
                (s.per_test.get(&r.test).copied().unwrap_or(0.0) - r.spent_before).max(0.0)
            })
        })
    }

    /// What a run of `test` is expected to cost (see the module's comment); `None`: unknown.
    pub fn expected_cost(&self, test: &Path, test_limit: Option<f64>) -> Option<f64> {
        self.with(|s| self.expected(s, test, test_limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_is_refused_when_its_expected_cost_would_pass_the_suite_ceiling() {
        let a = Path::new("a.test.toml");
        let budget = Budget::new(Some(1.0));
        assert_eq!(budget.admit(a, None), Admission::Start, "nothing known");
        budget.add(a, 0.6);
        budget.run_finished(0.6);
        let Admission::Refuse(why) = budget.admit(a, None) else {
            panic!("0.6 + 0.6 > 1.0");
        };
        assert!(
            why.contains("$0.6000") && why.contains("max_cost_usd = $1.0000"),
            "{why}"
        );
        let roomy = Budget::new(Some(2.0));
        roomy.add(a, 0.6);
        roomy.run_finished(0.6);
        assert_eq!(roomy.admit(a, None), Admission::Start, "0.6 + 0.6 <= 2.0");
        assert_eq!(Budget::new(None).admit(a, None), Admission::Start);
    }

    #[test]
    fn running_tests_reserve_their_expected_cost() {
        let costs: BTreeMap<String, f64> = [("a".to_string(), 0.1), ("b".to_string(), 0.1)].into();
        let budget = Budget::new(Some(0.25)).with_history(costs);
        let (a, b, c) = (Path::new("a"), Path::new("b"), Path::new("c"));
        assert_eq!(budget.admit(a, None), Admission::Start);
        budget.reserve(&RunId::new("r1"), a, None);
        assert_eq!(budget.admit(b, None), Admission::Start, "0.1 + 0.1 <= 0.25");
        budget.reserve(&RunId::new("r2"), b, None);
        assert_eq!(
            budget.admit(a, None),
            Admission::Wait,
            "0.3 > 0.25 while two run"
        );
        assert_eq!(
            budget.admit(c, None),
            Admission::Wait,
            "c's cost is unknown while others run"
        );
        // `a` ends cheaper than expected: room again.
        budget.add(a, 0.01);
        budget.run_finished(0.01);
        budget.release(&RunId::new("r1"));
        assert_eq!(budget.admit(a, None), Admission::Start, "0.01 + 0.1 + 0.1");
        budget.add(b, 0.2);
        budget.release(&RunId::new("r2"));
        assert!(matches!(budget.admit(a, None), Admission::Refuse(_)));
        // Nothing known but its own ceiling: that is the expectation.
        let capped = Budget::new(Some(1.0));
        capped.reserve(&RunId::new("r"), a, Some(0.6));
        assert_eq!(capped.admit(b, Some(0.6)), Admission::Wait);
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
