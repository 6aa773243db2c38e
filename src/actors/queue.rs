//! The suite's queue of root-test attempts: at most `jobs` at once, a slot refilled as soon as it
//! frees, retries with flaky detection, fail-fast and stop. Pure bookkeeping: the supervisor actor
//! owns one and asks it what to start next.

use crate::model::outcome::RunOutcome;
use std::collections::{BTreeMap, VecDeque};

/// One attempt to start: which root test (index into the suite's list) and its 1-based attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    pub test: usize,
    pub number: u32,
    /// With `--repeat N`: which of the test's N runs (1-based); its retries keep it.
    pub repeat: u32,
    /// A retry: how long it waited after the failure before it (`retries.delay`), in ms.
    pub waited_ms: u64,
}

/// Why the queue stopped starting new attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halt {
    FailFast,
    Shutdown,
    /// The next root test would take the suite past `[supervisor] max_cost_usd`.
    OverBudget,
    /// Two root tests ended by the same lasting agent fault (actors/breaker.rs).
    AgentUnavailable,
}

/// What the queue made of a finished attempt (for the suite log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterAttempt {
    /// Passed, or failed for the last time without fail-fast.
    Done,
    /// Failed with attempts left: this attempt is queued next.
    Retry(Attempt),
    /// Failed for the last time, the `--max-fail`-th (`--fail-fast`: the first): nothing new starts.
    FailFast,
}

/// What happened to one root test across its attempts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tally {
    /// Outcome of each finished attempt, in order.
    pub attempts: Vec<RunOutcome>,
    /// With `--repeat N`: each repeat's latest attempt, by repeat.
    repeats: BTreeMap<u32, RepeatTally>,
}

/// One repeat of a root test: its latest attempt's outcome, and whether an earlier attempt of it
/// failed (a later pass is then flaky).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RepeatTally {
    number: u32,
    outcome: RunOutcome,
    /// This attempt counts as failed (`strict_warnings` included).
    failed: bool,
    failed_before: bool,
}

impl Tally {
    fn record(&mut self, attempt: Attempt, outcome: RunOutcome, failed: bool) {
        self.attempts.push(outcome);
        let latest = RepeatTally {
            number: attempt.number,
            outcome,
            failed,
            failed_before: false,
        };
        let entry = self.repeats.entry(attempt.repeat).or_insert(latest);
        if attempt.number > entry.number {
            *entry = RepeatTally {
                failed_before: entry.failed_before || entry.failed,
                ..latest
            };
        }
    }

    /// The outcome that decides the test, as the suite summary decides it: each repeat's last
    /// attempt is that repeat's verdict, and the first repeat that did not pass decides (a
    /// stress run fails when one run fails, as nextest's), else the last one.
    pub fn final_outcome(&self, strict_warnings: bool) -> Option<RunOutcome> {
        let mut finals = self.repeats.values().map(|r| r.outcome);
        let last = self.repeats.values().next_back().map(|r| r.outcome);
        finals.find(|o| !o.is_pass(strict_warnings)).or(last)
    }

    /// Passed (or warned) in the end after at least one failed attempt: a repeat passed on a
    /// retry after failing (a failed repeat is not flaky, it fails the test).
    pub fn is_flaky(&self, strict_warnings: bool) -> bool {
        matches!(self.final_outcome(strict_warnings), Some(o) if o.is_pass(strict_warnings))
            && self.repeats.values().any(|r| r.failed_before)
    }

    pub fn was_started(&self) -> bool {
        !self.attempts.is_empty()
    }
}

#[derive(Debug)]
pub struct SuiteQueue {
    pending: VecDeque<Attempt>,
    running: usize,
    jobs: usize,
    /// 1 + each test's retries, by test.
    max_attempts: Vec<u32>,
    /// Retries waiting out their backoff, to be [`SuiteQueue::release`]d.
    deferred: usize,
    /// `--max-fail` (`--fail-fast` = 1): failed root tests that halt the queue.
    max_fail: Option<u32>,
    /// Root tests failed for the last time so far.
    failed: u32,
    strict_warnings: bool,
    halted: Option<Halt>,
    tallies: Vec<Tally>,
    /// Attempts of each test queued, running or waiting out a backoff: at 0 the test is settled.
    open: Vec<u32>,
}

impl SuiteQueue {
    /// `retries` is the number of re-runs of a failed root test (so attempts = retries + 1).
    pub fn new(
        tests: usize,
        repeat: u32,
        jobs: usize,
        retries: u32,
        max_fail: Option<u32>,
        strict_warnings: bool,
    ) -> Self {
        Self {
            // Round after round: every test's first run before any test's second, so a
            // `--max-fail` or a deadline still leaves each test run at least once.
            pending: (1..=repeat.max(1))
                .flat_map(|repeat| {
                    (0..tests).map(move |test| Attempt {
                        test,
                        number: 1,
                        repeat,
                        waited_ms: 0,
                    })
                })
                .collect(),
            running: 0,
            jobs: jobs.max(1),
            max_attempts: vec![retries.saturating_add(1); tests],
            deferred: 0,
            max_fail,
            failed: 0,
            strict_warnings,
            halted: None,
            tallies: vec![Tally::default(); tests],
            open: vec![repeat.max(1); tests],
        }
    }

    /// The next attempt to start now, if a slot is free and nothing halted the queue.
    pub fn next_to_start(&mut self) -> Option<Attempt> {
        if self.halted.is_some() || self.running >= self.jobs {
            return None;
        }
        let attempt = self.pending.pop_front()?;
        self.running += 1;
        Some(attempt)
    }

    /// The attempt [`SuiteQueue::next_to_start`] would start now, without starting it.
    pub fn peek_next(&self) -> Option<Attempt> {
        if self.halted.is_some() || self.running >= self.jobs {
            return None;
        }
        self.pending.front().copied()
    }

    /// Records a finished attempt; queues a retry when the test failed and attempts are left.
    pub fn finished(&mut self, attempt: Attempt, outcome: RunOutcome) -> AfterAttempt {
        self.running = self.running.saturating_sub(1);
        let failed = matches!(outcome, RunOutcome::Failed | RunOutcome::Error)
            || (outcome == RunOutcome::Warned && self.strict_warnings);
        if let Some(tally) = self.tallies.get_mut(attempt.test) {
            tally.record(attempt, outcome, failed);
        }
        if let Some(open) = self.open.get_mut(attempt.test) {
            *open = open.saturating_sub(1);
        }
        if !failed {
            return AfterAttempt::Done;
        }
        if attempt.number < self.max_attempts(attempt.test) && self.halted.is_none() {
            // A retry goes to the front: it should not wait behind the whole suite.
            let retry = Attempt {
                test: attempt.test,
                number: attempt.number + 1,
                repeat: attempt.repeat,
                waited_ms: 0,
            };
            self.pending.push_front(retry);
            if let Some(open) = self.open.get_mut(attempt.test) {
                *open += 1;
            }
            AfterAttempt::Retry(retry)
        } else {
            self.failed += 1;
            if self.max_fail.is_some_and(|n| self.failed >= n) && self.halted.is_none() {
                self.halted = Some(Halt::FailFast);
                return AfterAttempt::FailFast;
            }
            AfterAttempt::Done
        }
    }

    /// Each test's own retries (a test file's `retries`), by test.
    pub fn with_retries(mut self, retries: impl IntoIterator<Item = u32>) -> Self {
        for (max, retries) in self.max_attempts.iter_mut().zip(retries) {
            *max = retries.saturating_add(1);
        }
        self
    }

    /// How many attempts root test `test` may have (1 + retries).
    pub fn max_attempts(&self, test: usize) -> u32 {
        self.max_attempts.get(test).copied().unwrap_or(1)
    }

    /// Holds back the retry [`SuiteQueue::finished`] just queued, while it waits out its
    /// backoff; it starts after [`SuiteQueue::release`].
    pub fn defer(&mut self, retry: Attempt) {
        if let Some(i) = self.pending.iter().position(|a| *a == retry) {
            self.pending.remove(i);
            self.deferred += 1;
        }
    }

    /// A deferred retry's wait is over: it starts next (unless the queue halted meanwhile).
    pub fn release(&mut self, retry: Attempt) {
        if self.deferred == 0 {
            return;
        }
        self.deferred -= 1;
        if self.halted.is_none() {
            self.pending.push_front(retry);
        }
    }

    /// Stops starting anything new (signal, deadline).
    pub fn halt(&mut self, why: Halt) {
        self.halted.get_or_insert(why);
    }

    pub fn halted(&self) -> Option<Halt> {
        self.halted
    }

    pub fn running(&self) -> usize {
        self.running
    }

    /// Attempts wait to start.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Nothing running and nothing more will start (a retry waiting out its backoff will).
    pub fn is_done(&self) -> bool {
        self.running == 0
            && (self.halted.is_some() || (self.pending.is_empty() && self.deferred == 0))
    }

    /// No attempt of root test `test` is queued, running or waiting to retry: nothing of it
    /// will start again (a halted queue's pending attempts never settle).
    pub fn settled(&self, test: usize) -> bool {
        self.open.get(test).is_some_and(|open| *open == 0)
    }

    pub fn tallies(&self) -> &[Tally] {
        &self.tallies
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use RunOutcome::*;

    fn drain(q: &mut SuiteQueue) -> Vec<Attempt> {
        std::iter::from_fn(|| q.next_to_start()).collect()
    }

    #[test]
    fn starts_at_most_jobs_and_refills_a_slot_as_soon_as_it_frees() {
        let mut q = SuiteQueue::new(5, 1, 2, 0, None, false);
        let first = drain(&mut q);
        assert_eq!(first.iter().map(|a| a.test).collect::<Vec<_>>(), vec![0, 1]);
        q.finished(first[1], Passed);
        let next = drain(&mut q);
        assert_eq!(
            next,
            vec![Attempt {
                test: 2,
                number: 1,
                repeat: 1,
                waited_ms: 0
            }]
        );
        assert!(!q.is_done());
    }

    #[test]
    fn retries_a_failure_and_marks_a_later_pass_flaky() {
        let mut q = SuiteQueue::new(1, 1, 1, 2, None, false);
        let a1 = q.next_to_start().expect("first attempt");
        let retry = Attempt {
            test: 0,
            number: 2,
            repeat: 1,
            waited_ms: 0,
        };
        assert_eq!(q.finished(a1, Failed), AfterAttempt::Retry(retry));
        let a2 = q.next_to_start().expect("retry");
        assert_eq!(
            a2,
            Attempt {
                test: 0,
                number: 2,
                repeat: 1,
                waited_ms: 0
            }
        );
        q.finished(a2, Passed);
        assert!(q.is_done());
        assert!(q.tallies()[0].is_flaky(false));
        assert_eq!(q.tallies()[0].attempts, vec![Failed, Passed]);
    }

    #[test]
    fn a_test_settles_after_its_last_attempt_of_its_last_repeat() {
        let mut q = SuiteQueue::new(2, 2, 4, 1, None, false);
        let round = drain(&mut q);
        assert_eq!(round.len(), 4, "two tests, two repeats each");
        assert!(!q.settled(0));
        q.finished(round[0], Passed);
        assert!(!q.settled(0), "its second repeat is still running");
        q.finished(round[2], Failed);
        assert!(!q.settled(0), "a retry is queued");
        let retry = q.next_to_start().expect("retry");
        q.finished(retry, Passed);
        assert!(q.settled(0));
        assert!(!q.settled(1));
        q.finished(round[1], Passed);
        q.finished(round[3], Passed);
        assert!(q.settled(1));
    }

    #[test]
    fn stops_retrying_after_the_last_attempt() {
        let mut q = SuiteQueue::new(1, 1, 1, 1, None, false);
        for _ in 0..2 {
            let a = q.next_to_start().expect("attempt");
            q.finished(a, Error);
        }
        assert!(q.next_to_start().is_none());
        assert!(q.is_done());
        assert!(!q.tallies()[0].is_flaky(false));
    }

    #[test]
    fn fail_fast_starts_nothing_new_after_a_final_failure() {
        let mut q = SuiteQueue::new(4, 1, 2, 0, Some(1), false);
        let started = drain(&mut q);
        assert_eq!(q.finished(started[0], Failed), AfterAttempt::FailFast);
        assert_eq!(q.halted(), Some(Halt::FailFast));
        assert!(q.next_to_start().is_none());
        assert!(!q.is_done(), "the other session still runs");
        q.finished(started[1], Passed);
        assert!(q.is_done());
        assert!(!q.tallies()[3].was_started());
    }

    #[test]
    fn strict_warnings_count_as_failures_for_retries() {
        let mut q = SuiteQueue::new(1, 1, 1, 1, None, true);
        let a = q.next_to_start().expect("attempt");
        q.finished(a, Warned);
        assert_eq!(q.next_to_start().map(|a| a.number), Some(2));
    }

    #[test]
    fn a_halt_waits_for_running_sessions() {
        let mut q = SuiteQueue::new(3, 1, 3, 0, None, false);
        let started = drain(&mut q);
        q.halt(Halt::Shutdown);
        assert!(!q.is_done());
        for a in started {
            q.finished(a, Interrupted);
        }
        assert!(q.is_done());
    }

    #[test]
    fn max_fail_halts_after_the_nth_final_failure_not_before() {
        let mut q = SuiteQueue::new(5, 1, 1, 1, Some(2), false);
        let a = q.next_to_start().expect("first");
        // A failure with a retry left is not final: it does not count.
        assert!(matches!(q.finished(a, Failed), AfterAttempt::Retry(_)));
        let a = q.next_to_start().expect("retry");
        assert_eq!(q.finished(a, Failed), AfterAttempt::Done);
        let b = q.next_to_start().expect("second test");
        assert_eq!(q.finished(b, Passed), AfterAttempt::Done);
        let c = q.next_to_start().expect("third test");
        assert!(matches!(q.finished(c, Error), AfterAttempt::Retry(_)));
        let c = q.next_to_start().expect("retry");
        assert_eq!(q.finished(c, Error), AfterAttempt::FailFast);
        assert_eq!(q.halted(), Some(Halt::FailFast));
        assert!(q.next_to_start().is_none());
        assert!(q.is_done());
    }

    #[test]
    fn a_failed_repeat_decides_the_test_whichever_repeat_ended_last() {
        let mut q = SuiteQueue::new(1, 3, 1, 0, None, false);
        for outcome in [Passed, Failed, Passed] {
            let a = q.next_to_start().expect("a repeat");
            q.finished(a, outcome);
        }
        assert!(q.is_done());
        assert_eq!(q.tallies()[0].final_outcome(false), Some(Failed));
        assert!(!q.tallies()[0].is_flaky(false));
    }

    #[test]
    fn a_repeat_passed_on_a_retry_is_flaky_and_passes() {
        let mut q = SuiteQueue::new(1, 2, 1, 1, None, false);
        for outcome in [Passed, Failed, Passed] {
            let a = q.next_to_start().expect("an attempt");
            q.finished(a, outcome);
        }
        assert!(q.is_done());
        assert_eq!(q.tallies()[0].final_outcome(false), Some(Passed));
        assert!(q.tallies()[0].is_flaky(false));
    }

    #[test]
    fn a_deferred_retry_keeps_the_queue_open_until_released() {
        let mut q = SuiteQueue::new(1, 1, 1, 1, None, false).with_retries([2]);
        let a = q.next_to_start().expect("first");
        let AfterAttempt::Retry(retry) = q.finished(a, Failed) else {
            panic!("a retry")
        };
        q.defer(retry);
        assert!(q.next_to_start().is_none() && !q.is_done());
        q.release(retry);
        let b = q.next_to_start().expect("the retry");
        assert_eq!(b.number, 2);
        assert!(matches!(q.finished(b, Failed), AfterAttempt::Retry(_)));
        assert_eq!(q.max_attempts(0), 3);
    }
}
