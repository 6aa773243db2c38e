#![warn(missing_docs)]
//! Ctrl+Z and `fg` (SIGTSTP, then SIGCONT). The children live in their own process groups, so the
//! terminal's SIGTSTP reaches only the supervisor: left to the default action, the supervisor
//! would stop while its agent and servers ran on, and on `fg` every step deadline would have
//! passed. Instead, on SIGTSTP the supervisor stops every registered group with SIGSTOP, then
//! itself; once continued, it continues them (SIGCONT) and adds the time it was stopped to the
//! suspended total. A descendant that left its group (the agent's `setsid` child) is stopped and
//! continued by itself: as child subreaper the supervisor still finds it below it. A step's [`Deadline`] moves by that total: stopped time does not count against
//! step timeouts or no-output limits.

use super::group::{all_processes, descendants_of, signal_group};
use super::registry;
use futures::StreamExt;
use nix::sys::signal::kill;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use signal_hook::consts::SIGTSTP;
use signal_hook_tokio::Signals;
use std::sync::LazyLock;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How long the supervisor has been stopped by job control.
#[derive(Debug, Clone, Copy, Default)]
struct Suspension {
    /// Completed stops, summed.
    total: Duration,
    /// Set just before the supervisor stops itself, cleared (and added to `total`) once it runs
    /// again: a deadline checked in between (a timer that fired on resume) still counts the stop.
    since: Option<Instant>,
}

static SUSPENSION: LazyLock<watch::Sender<Suspension>> =
    LazyLock::new(|| watch::channel(Suspension::default()).0);

/// Time spent stopped by job control so far, including a stop under way.
pub fn suspended() -> Duration {
    let now = SUSPENSION.borrow();
    now.total + now.since.map_or(Duration::ZERO, |since| since.elapsed())
}

/// Keeps the SIGTSTP handler installed while alive.
pub struct JobControl {
    handle: signal_hook_tokio::Handle,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for JobControl {
    fn drop(&mut self) {
        self.handle.close();
        self.task.abort();
    }
}

/// Handles SIGTSTP as described above. Must be called inside a tokio runtime.
pub fn listen() -> std::io::Result<JobControl> {
    let mut signals = Signals::new([SIGTSTP])?;
    let handle = signals.handle();
    let task = tokio::spawn(async move {
        while signals.next().await.is_some() {
            suspend_all();
        }
    });
    Ok(JobControl { handle, task })
}

/// Every live descendant of the supervisor outside the groups in `groups`: what left its group
/// (`setsid`, a daemon). The supervisor is their child subreaper, so they stay its descendants.
fn escaped_descendants(groups: &[i32]) -> Vec<i32> {
    let own = std::process::id() as i32;
    descendants_of(own, &all_processes())
        .into_iter()
        .filter(|p| !p.is_zombie() && !groups.contains(&p.pgid))
        .map(|p| p.pid)
        .collect()
}

/// Stops every registered group, every descendant that left them, and the supervisor; returns
/// once continued, with all of them continued too.
fn suspend_all() {
    let stopped: Vec<i32> = registry::registered().iter().map(|g| g.pgid).collect();
    for &pgid in &stopped {
        let _ = signal_group(pgid, Signal::SIGSTOP);
    }
    // Twice: one forked while the first pass stopped its parent is caught by the second.
    let mut escaped: Vec<i32> = Vec::new();
    for _ in 0..2 {
        for pid in escaped_descendants(&stopped) {
            if !escaped.contains(&pid) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGSTOP);
                escaped.push(pid);
            }
        }
    }
    SUSPENSION.send_modify(|s| s.since = Some(Instant::now()));
    // The default action of SIGTSTP, now ours: the shell sees the job stopped. Returns on SIGCONT.
    let _ = nix::sys::signal::raise(Signal::SIGSTOP);
    SUSPENSION.send_modify(|s| {
        if let Some(since) = s.since.take() {
            s.total += since.elapsed();
        }
    });
    // Only groups still registered: one torn down meanwhile may have had its pgid reused.
    for group in registry::registered() {
        if stopped.contains(&group.pgid) {
            let _ = signal_group(group.pgid, Signal::SIGCONT);
        }
    }
    // Only those still below the supervisor: a pid that ended meanwhile may be another's now.
    let own = std::process::id() as i32;
    let below: Vec<i32> = descendants_of(own, &all_processes())
        .iter()
        .map(|p| p.pid)
        .collect();
    for pid in escaped.into_iter().filter(|pid| below.contains(pid)) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGCONT);
    }
}

/// `wait` after `from`, or a century after it when that is past what the clock can hold: a
/// deadline that far off is never reached, and adding to an `Instant` must not panic.
pub fn later(from: Instant, wait: Duration) -> Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);
    from.checked_add(wait)
        .or_else(|| from.checked_add(CENTURY))
        .unwrap_or(from)
}

/// A point in time that moves later by however long the supervisor is stopped by job control
/// after it was set: a step's timeout, a no-output limit.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    at: Instant,
    /// [`suspended`] when the deadline was set.
    base: Duration,
}

impl Deadline {
    /// `wait` from now.
    pub fn after(wait: Duration) -> Self {
        Self {
            at: later(Instant::now(), wait),
            base: suspended(),
        }
    }

    /// When it falls now (later after every stop).
    pub fn when(&self) -> Instant {
        later(self.at, suspended().saturating_sub(self.base))
    }

    /// What is left of it (zero once passed).
    pub fn remaining(&self) -> Duration {
        self.when().saturating_duration_since(Instant::now())
    }

    /// Resolves once the deadline has passed, counting no stopped time.
    pub async fn reached(&self) {
        let mut changes = SUSPENSION.subscribe();
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(self.when()) => {
                    if self.when() <= Instant::now() {
                        return;
                    }
                }
                // A stop began or ended: look again.
                _ = changes.changed() => {}
            }
        }
    }
}

/// Resolves when `deadline` is reached; never when there is none.
pub async fn reached(deadline: Option<Deadline>) {
    match deadline {
        Some(deadline) => deadline.reached().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_deadline_passes_when_nothing_stopped() {
        let deadline = Deadline::after(Duration::from_millis(30));
        assert!(deadline.remaining() <= Duration::from_millis(30));
        deadline.reached().await;
        assert_eq!(deadline.remaining(), Duration::ZERO);
    }
}
