//! The suite's root tests as the supervisor holds them through a night: what the suite's end and
//! the queue ask of every test (its path, quarantine, retry policy, cost limit) for as long as
//! the suite lasts, and its plan (effective config and steps, a few kilobytes) only while an
//! attempt of it is queued or running. A night of thousands of tests keeps no finished test's
//! plan, so what the supervisor holds shrinks as the night goes instead of staying at its start.

use crate::model::load::RootTest;
use crate::model::retries::RetryPolicy;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One root test, by its index in the suite (`Attempt::test`).
#[derive(Debug)]
struct Slot {
    rel_path: PathBuf,
    quarantined: bool,
    retries: RetryPolicy,
    /// `[provider] max_cost_usd` as the test sees it: what the budget reserves for it.
    max_cost_usd: Option<f64>,
    /// `None` once no attempt of the test is queued or running any more.
    plan: Option<Arc<RootTest>>,
}

#[derive(Debug)]
pub struct RootTests {
    slots: Vec<Slot>,
}

impl RootTests {
    /// Takes the suite's root tests (moved, not copied: the suite keeps none).
    pub fn new(tests: Vec<RootTest>) -> Self {
        let slots = tests
            .into_iter()
            .map(|test| Slot {
                rel_path: test.rel_path.clone(),
                quarantined: test.quarantined,
                retries: test.effective.supervisor.retries.value,
                max_cost_usd: test.effective.provider.max_cost_usd.value,
                plan: Some(Arc::new(test)),
            })
            .collect();
        Self { slots }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The test's path relative to the project root (empty for an index out of range).
    pub fn rel_path(&self, test: usize) -> &Path {
        self.slots
            .get(test)
            .map_or(Path::new(""), |s| s.rel_path.as_path())
    }

    pub fn quarantined(&self, test: usize) -> bool {
        self.slots.get(test).is_some_and(|s| s.quarantined)
    }

    pub fn retries(&self, test: usize) -> RetryPolicy {
        self.slots.get(test).map(|s| s.retries).unwrap_or_default()
    }

    pub fn max_cost_usd(&self, test: usize) -> Option<f64> {
        self.slots.get(test).and_then(|s| s.max_cost_usd)
    }

    /// Each test's retry count, in order (the queue's attempts per test).
    pub fn retry_counts(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots.iter().map(|s| s.retries.count)
    }

    /// The test's plan, while an attempt of it is queued or running.
    pub fn plan(&self, test: usize) -> Option<&Arc<RootTest>> {
        self.slots.get(test).and_then(|s| s.plan.as_ref())
    }

    /// No attempt of the test is queued or running any more: its plan is let go (a session
    /// still running holds its own reference).
    pub fn settle(&mut self, test: usize) {
        if let Some(slot) = self.slots.get_mut(test) {
            slot.plan = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::layers::EffectiveConfig;

    fn root_test(path: &str, retries: u32) -> RootTest {
        let mut effective = EffectiveConfig::default();
        effective.supervisor.retries.value.count = retries;
        RootTest {
            path: PathBuf::from("/p").join(path),
            rel_path: PathBuf::from(path),
            name: path.to_string(),
            tags: Vec::new(),
            plan: Vec::new(),
            effective,
            quarantined: path.starts_with('q'),
        }
    }

    #[test]
    fn a_settled_test_keeps_its_name_not_its_plan() {
        let mut tests = RootTests::new(vec![
            root_test("a.test.toml", 2),
            root_test("q.test.toml", 0),
        ]);
        assert_eq!(tests.len(), 2);
        assert_eq!(tests.retry_counts().collect::<Vec<_>>(), vec![2, 0]);
        let running = Arc::clone(tests.plan(0).expect("queued: planned"));
        tests.settle(0);
        assert!(tests.plan(0).is_none());
        assert_eq!(
            Arc::strong_count(&running),
            1,
            "the running session's is the only one left"
        );
        assert_eq!(tests.rel_path(0), Path::new("a.test.toml"));
        assert_eq!(tests.retries(0).count, 2);
        assert!(!tests.quarantined(0) && tests.quarantined(1));
        assert!(tests.plan(1).is_some(), "another test's plan stays");
        assert_eq!(tests.rel_path(7), Path::new(""));
    }
}
