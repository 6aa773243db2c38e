//! How many agents talk to the model at once (docs/ci.md, "A rate-limited nightly"): the
//! suite's agent steps pass one gate, shared by every session of the invocation.
//!
//! At fleet scale the model's API binds, not the machine: of ten agents started together only
//! the first few get answers, the rest are told to slow down (HTTP 429 / 529). So the gate is
//! additive-increase, multiplicative-decrease, as TCP's window:
//!
//! - sessions start staggered: a session's first agent step is let through no sooner than
//!   [`STAGGER`] after the previous session's, so `-j 12` does not open with a burst of twelve;
//! - a `rate_limit` or `overloaded` signal (the CLI retrying a 429 / 529, or a step ended by one)
//!   halves the agents allowed at once, once per congestion: a signal from a step let through
//!   before the last halving is the same congestion, already answered;
//! - the limit grows back by one per `limit` clean steps, up to `-j` (congestion avoidance, as
//!   TCP's window grows by one per round trip after a loss): grown by one per clean step, it
//!   went straight back past the API's room and into the refusals it had just answered;
//! - an agent CLI is started only once its session's first step has its place (the actor asks
//!   before it starts the process): a session held back has not started its CLI yet, so the
//!   sessions the API cannot take do not spend the CPU the ones at the model need;
//! - a step held back waits; the wait is not the step's (its timeout does not run), and it is
//!   recorded as the time the test waited for the model. A replayed step never comes here.
//!
//! [`Aimd`] is the rule, pure and unit-tested; [`ModelGate`] is the rule behind a lock with the
//! waiting, [`ModelPermit`] one step's place at the model.

use crate::model::agent_fault::FaultKind;
use crate::providers::ThrottleSignal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The least time between two sessions' first agent steps.
pub const STAGGER: Duration = Duration::from_millis(200);

/// The additive-increase, multiplicative-decrease rule, without a clock of its own or any
/// waiting: the gate's state.
#[derive(Debug, Clone)]
pub struct Aimd {
    /// `-j`: never more agents at once than sessions.
    max: usize,
    /// Agents allowed at once now.
    limit: usize,
    /// Agents at the model now.
    in_use: usize,
    /// Bumped by each halving; a grant remembers the one it was made in.
    generation: u64,
    /// The least time between two sessions' first steps.
    stagger: Duration,
    /// When the next session's first step may go.
    next_start: Option<Instant>,
    /// How often the limit was halved, and the lowest it went.
    halvings: u32,
    lowest: usize,
    /// Clean steps since the limit last changed: it grows by one per `limit` of them.
    clean_steps: usize,
}

/// What [`Aimd::try_take`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// A place at the model, made in this generation.
    Granted(Grant),
    /// As many agents as allowed are at the model: wait for one to leave.
    Full,
    /// A session's first step, too soon after the previous one's: wait until then.
    NotBefore(Instant),
}

/// One place at the model, as the rule knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    generation: u64,
}

impl Aimd {
    /// A rule allowing `max` agents at once (at least one), sessions `stagger` apart.
    pub fn new(max: usize, stagger: Duration) -> Self {
        let max = max.max(1);
        Self {
            max,
            limit: max,
            in_use: 0,
            generation: 0,
            stagger,
            next_start: None,
            halvings: 0,
            lowest: max,
            clean_steps: 0,
        }
    }

    /// A place at the model at `now`, for a session's first step (`starting`) or a later one.
    pub fn try_take(&mut self, now: Instant, starting: bool) -> Take {
        if self.in_use >= self.limit {
            return Take::Full;
        }
        if starting {
            match self.next_start {
                Some(at) if now < at => return Take::NotBefore(at),
                _ => self.next_start = Some(now + self.stagger),
            }
        }
        self.in_use += 1;
        Take::Granted(Grant {
            generation: self.generation,
        })
    }

    /// A place given back; `limit` clean steps (no rate-limit signal, no agent fault) since the
    /// limit last changed allow one agent more, up to `max`.
    pub fn give_back(&mut self, clean: bool) {
        self.in_use = self.in_use.saturating_sub(1);
        if clean && self.limit < self.max {
            self.clean_steps += 1;
            if self.clean_steps >= self.limit {
                self.limit += 1;
                self.clean_steps = 0;
            }
        }
    }

    /// The model's API limited the step of `grant`: halve the agents allowed at once (at least
    /// one), unless a halving came after that step was let through. True when it halved.
    pub fn throttled(&mut self, grant: Grant) -> bool {
        if grant.generation != self.generation {
            return false;
        }
        self.limit = (self.limit / 2).max(1);
        self.clean_steps = 0;
        self.generation += 1;
        self.halvings += 1;
        self.lowest = self.lowest.min(self.limit);
        true
    }

    /// Agents allowed at once now.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Agents at the model now.
    pub fn in_use(&self) -> usize {
        self.in_use
    }

    /// How often the limit was halved, and the lowest it went.
    pub fn halvings(&self) -> (u32, usize) {
        (self.halvings, self.lowest)
    }
}

/// The gate every agent step of a suite passes (cheap to clone: one shared state).
#[derive(Clone)]
pub struct ModelGate(Arc<Shared>);

struct Shared {
    rule: Mutex<Aimd>,
    /// Woken when a place is given back.
    freed: Notify,
}

impl std::fmt::Debug for ModelGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ModelGate").field(&*self.rule()).finish()
    }
}

impl ModelGate {
    /// A gate allowing `jobs` agents at once, sessions [`STAGGER`] apart.
    pub fn new(jobs: usize) -> Self {
        Self::with_stagger(jobs, STAGGER)
    }

    pub fn with_stagger(jobs: usize, stagger: Duration) -> Self {
        Self(Arc::new(Shared {
            rule: Mutex::new(Aimd::new(jobs, stagger)),
            freed: Notify::new(),
        }))
    }

    fn rule(&self) -> std::sync::MutexGuard<'_, Aimd> {
        // The rule is a few integers, whole after any panic.
        self.0.rule.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a place at the model (a session's first step: `starting`); the permit and how
    /// long it waited. Dropping the future while it waits takes nothing.
    pub async fn enter(&self, starting: bool) -> (ModelPermit, Duration) {
        let begun = Instant::now();
        // A step let through at its first ask did not wait at all.
        let mut held = false;
        loop {
            let freed = self.0.freed.notified();
            tokio::pin!(freed);
            // Registered before the rule is asked: a place given back in between still wakes it.
            freed.as_mut().enable();
            let take = self.rule().try_take(Instant::now(), starting);
            held |= !matches!(take, Take::Granted(_));
            match take {
                Take::Granted(grant) => {
                    let permit = ModelPermit {
                        gate: self.clone(),
                        grant,
                        throttled: Arc::new(AtomicBool::new(false)),
                        released: false,
                    };
                    let waited = if held {
                        begun.elapsed()
                    } else {
                        Duration::ZERO
                    };
                    return (permit, waited);
                }
                Take::Full => freed.await,
                Take::NotBefore(at) => {
                    tokio::select! {
                        () = freed => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
            }
        }
    }

    /// Agents allowed at once now.
    pub fn limit(&self) -> usize {
        self.rule().limit()
    }

    /// How often the limit was halved, and the lowest it went.
    pub fn halvings(&self) -> (u32, usize) {
        self.rule().halvings()
    }

    fn give_back(&self, clean: bool) {
        self.rule().give_back(clean);
        self.0.freed.notify_waiters();
    }

    fn throttled(&self, grant: Grant, kind: FaultKind) {
        let mut rule = self.rule();
        if rule.throttled(grant) {
            tracing::info!(
                "the model's API answered {kind}: at most {} agent(s) at once now",
                rule.limit()
            );
        }
    }
}

/// One agent step's place at the model; given back when released or dropped (a drop is not a
/// clean step).
pub struct ModelPermit {
    gate: ModelGate,
    grant: Grant,
    /// A rate-limit signal came while the step held it.
    throttled: Arc<AtomicBool>,
    released: bool,
}

impl ModelPermit {
    /// What the provider raises as soon as the API limits the step (the CLI retrying a 429 /
    /// 529): the gate halves at once, before the step ends.
    pub fn signal(&self) -> ThrottleSignal {
        let gate = self.gate.clone();
        let grant = self.grant;
        let flag = Arc::clone(&self.throttled);
        ThrottleSignal::new(move |kind| {
            flag.store(true, Ordering::Relaxed);
            gate.throttled(grant, kind);
        })
    }

    /// The step is over: its place is given back; `limited` when it ended on a rate-limit
    /// fault; it was clean when that is not so, no signal came while it ran, and `faulted` is
    /// false (an agent fault of another kind says nothing of the API's room).
    pub fn release(mut self, limited: Option<FaultKind>, faulted: bool) {
        if let Some(kind) = limited {
            self.throttled.store(true, Ordering::Relaxed);
            self.gate.throttled(self.grant, kind);
        }
        let clean = !faulted && !self.throttled.load(Ordering::Relaxed);
        self.released = true;
        self.gate.give_back(clean);
    }
}

impl Drop for ModelPermit {
    fn drop(&mut self) {
        if !self.released {
            self.gate.give_back(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(take: Take) -> Grant {
        match take {
            Take::Granted(grant) => grant,
            other => panic!("expected a grant, got {other:?}"),
        }
    }

    #[test]
    fn a_signal_halves_once_per_congestion_and_clean_steps_give_one_back_up_to_jobs() {
        let now = Instant::now();
        let mut rule = Aimd::new(8, Duration::ZERO);
        let grants: Vec<Grant> = (0..8).map(|_| granted(rule.try_take(now, false))).collect();
        assert_eq!(rule.try_take(now, false), Take::Full);
        // Five of the eight are told to slow down: one halving, not five.
        assert!(rule.throttled(grants[3]));
        for grant in &grants[4..] {
            assert!(!rule.throttled(*grant), "the same congestion halves once");
        }
        assert_eq!(rule.limit(), 4);
        // Until fewer than four are at the model, nothing more goes.
        for _ in 0..4 {
            rule.give_back(false);
        }
        assert_eq!(rule.in_use(), 4);
        assert_eq!(rule.try_take(now, false), Take::Full);
        // Four clean steps at four at once: one more.
        rule.give_back(true);
        assert_eq!(rule.limit(), 4);
        for _ in 0..3 {
            granted(rule.try_take(now, false));
            rule.give_back(true);
        }
        assert_eq!(rule.limit(), 5);
        // A step let through after the halving that is limited again halves again.
        let late = granted(rule.try_take(now, false));
        assert!(rule.throttled(late));
        assert_eq!(rule.limit(), 2);
        assert_eq!(rule.halvings(), (2, 2));
        // Never below one; clean steps climb back, never past -j.
        let one = Grant {
            generation: rule.generation,
        };
        assert!(rule.throttled(one));
        assert_eq!(rule.limit(), 1);
        // 1 + 2 + … + 7 clean steps bring one back to eight.
        for _ in 0..28 {
            rule.give_back(true);
        }
        assert_eq!(rule.limit(), 8);
        rule.give_back(true);
        assert_eq!(rule.limit(), 8, "never past -j");
        assert_eq!(rule.in_use(), 0);
    }

    #[test]
    fn after_a_halving_the_limit_grows_by_one_per_limit_clean_steps() {
        let now = Instant::now();
        let mut rule = Aimd::new(12, Duration::ZERO);
        let grants: Vec<Grant> = (0..12)
            .map(|_| granted(rule.try_take(now, false)))
            .collect();
        assert!(rule.throttled(grants[3]));
        assert_eq!(rule.limit(), 6);
        // The three the API answered end clean: half a window, not three agents more.
        for _ in 0..3 {
            rule.give_back(true);
        }
        assert_eq!(rule.limit(), 6);
        for _ in 0..3 {
            rule.give_back(true);
        }
        assert_eq!(rule.limit(), 7, "six clean steps at six at once: one more");
        // A step that was not clean does not count towards the next one, nor against it.
        rule.give_back(false);
        for _ in 0..6 {
            rule.give_back(true);
        }
        assert_eq!(rule.limit(), 7);
        rule.give_back(true);
        assert_eq!(rule.limit(), 8);
        // A halving starts the count again: the clean steps before it were in the congestion.
        for _ in 0..7 {
            rule.give_back(true);
        }
        let late = Grant {
            generation: rule.generation,
        };
        assert!(rule.throttled(late));
        assert_eq!(rule.limit(), 4);
        for _ in 0..3 {
            granted(rule.try_take(now, false));
            rule.give_back(true);
        }
        assert_eq!(rule.limit(), 4);
        granted(rule.try_take(now, false));
        rule.give_back(true);
        assert_eq!(rule.limit(), 5);
    }

    #[test]
    fn sessions_start_stagger_apart_and_later_steps_do_not_wait_for_it() {
        let t0 = Instant::now();
        let stagger = Duration::from_millis(200);
        let mut rule = Aimd::new(4, stagger);
        granted(rule.try_take(t0, true));
        assert_eq!(rule.try_take(t0, true), Take::NotBefore(t0 + stagger));
        granted(rule.try_take(t0, false));
        granted(rule.try_take(t0 + stagger, true));
        assert_eq!(
            rule.try_take(t0 + stagger, true),
            Take::NotBefore(t0 + stagger * 2)
        );
    }

    #[tokio::test]
    async fn a_held_step_waits_until_a_place_is_given_back_and_says_how_long() {
        let gate = ModelGate::with_stagger(2, Duration::ZERO);
        let (first, _) = gate.enter(false).await;
        let (second, waited) = gate.enter(false).await;
        assert_eq!(waited, Duration::ZERO);
        // The API limits the second step: one agent at once now.
        second.signal().raise(FaultKind::RateLimit);
        assert_eq!(gate.limit(), 1);
        second.release(None, false);
        let held = tokio::spawn({
            let gate = gate.clone();
            async move { gate.enter(false).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!held.is_finished(), "one agent at once: the third waits");
        first.release(None, false);
        let (third, waited) = held.await.expect("the held step");
        assert!(waited >= Duration::from_millis(50), "{waited:?}");
        third.release(None, false);
        assert_eq!(
            gate.limit(),
            2,
            "a clean step at one at once gives one back"
        );
    }
}
