//! Tearing down one process group: stop signal, wait for the exit event up to the grace period,
//! SIGKILL the group, then look for anything of this command still alive (the group, descendants
//! seen before the stop, anything carrying its spawn tag) and record `clean`, `killed` or `leaked`.

use super::exit::ExitStatus;
use super::group::{self, all_processes, live_members, signal_group, ProcStat};
use super::registry;
use super::spawn::{Running, HARNESS_TAG_VAR};
use crate::model::outcome::TeardownState;
use nix::sys::signal::Signal;
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use tokio::time::{sleep, timeout, Instant};

/// How often the group's remaining members are looked up while waiting: members other than the
/// leader are not our children, so no exit event exists for them.
const GROUP_POLL: Duration = Duration::from_millis(20);
/// How long SIGKILLed processes get to disappear before we stop waiting.
const KILL_WAIT: Duration = Duration::from_secs(5);
/// How long the log pump gets to reach end-of-file after the group is gone.
const DRAIN_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeardownReport {
    pub state: TeardownState,
    /// The leader's exit status, when known.
    pub exit: Option<ExitStatus>,
    /// Pids found alive after the group was gone; they were SIGKILLed.
    pub leaked: Vec<i32>,
}

/// Every live descendant of the given roots (by parentage), roots included.
pub fn descendants(roots: &[i32], procs: &[ProcStat]) -> HashSet<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for p in procs.iter().filter(|p| !p.is_zombie()) {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut seen: HashSet<i32> = HashSet::new();
    let mut stack: Vec<i32> = roots.to_vec();
    while let Some(pid) = stack.pop() {
        if seen.insert(pid) {
            if let Some(kids) = children.get(&pid) {
                stack.extend(kids);
            }
        }
    }
    seen
}

fn is_alive(pid: i32) -> bool {
    group::read_stat(pid).is_some_and(|p| !p.is_zombie())
}

/// Waits until the leader exited and the group has no live member, at most until `deadline`.
async fn wait_gone(running: &Running, deadline: Instant) -> bool {
    let exited = timeout(
        deadline.saturating_duration_since(Instant::now()),
        running.wait(),
    )
    .await;
    if exited.is_err() {
        return false;
    }
    loop {
        if live_members(running.pgid).is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        sleep(GROUP_POLL).await;
    }
}

/// Tears the group down. `grace` is the stop timeout; zero skips straight to SIGKILL.
pub async fn teardown(
    running: &mut Running,
    stop_signal: Signal,
    grace: Duration,
) -> TeardownReport {
    let own = std::process::id() as i32;
    let procs = all_processes();
    let mut roots = live_members(running.pgid);
    roots.push(running.pid);
    let snapshot: HashSet<i32> = descendants(&roots, &procs)
        .into_iter()
        .filter(|&pid| pid != own)
        .collect();

    let already_gone = running.exit_status().is_some() && live_members(running.pgid).is_empty();
    let mut state = TeardownState::Clean;
    if !already_gone {
        let clean = if grace.is_zero() {
            false
        } else {
            let _ = signal_group(running.pgid, stop_signal);
            wait_gone(running, Instant::now() + grace).await
        };
        if !clean {
            state = TeardownState::Killed;
            let _ = signal_group(running.pgid, Signal::SIGKILL);
            wait_gone(running, Instant::now() + KILL_WAIT).await;
        }
    }

    let leaked = kill_leftovers(running, &snapshot).await;
    if !leaked.is_empty() {
        state = TeardownState::Leaked;
    }
    reap_ours(running.pid, running.pgid, &leaked);
    registry::unregister(running.pgid);
    running.pump.drained(DRAIN_WAIT).await;
    running.release_pty();
    TeardownReport {
        state,
        exit: running.exit_status(),
        leaked,
    }
}

/// Finds what outlived the group (seen before the stop, or tagged with this spawn), SIGKILLs it and
/// waits for it to go. Returns the pids that were alive.
async fn kill_leftovers(running: &Running, snapshot: &HashSet<i32>) -> Vec<i32> {
    let own = std::process::id() as i32;
    let mut leftovers: HashSet<i32> = snapshot.iter().copied().filter(|&p| is_alive(p)).collect();
    leftovers.extend(group::live_descendants_with_env(
        HARNESS_TAG_VAR,
        &running.tag,
    ));
    // Descendants of the leftovers (a daemon's own children).
    let procs = all_processes();
    let roots: Vec<i32> = leftovers.iter().copied().collect();
    leftovers.extend(descendants(&roots, &procs));
    leftovers.remove(&own);
    let mut leaked: Vec<i32> = leftovers.into_iter().collect();
    leaked.sort_unstable();
    for &pid in &leaked {
        // A setsid escapee leads its own group: take that group down with it.
        if let Some(stat) = group::read_stat(pid) {
            if stat.pgid == pid && stat.pgid != own {
                let _ = signal_group(pid, Signal::SIGKILL);
            }
        }
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
    }
    let deadline = Instant::now() + KILL_WAIT;
    while leaked.iter().any(|&p| is_alive(p)) && Instant::now() < deadline {
        sleep(GROUP_POLL).await;
    }
    leaked
}

/// Reaps zombies re-parented to us (as child subreaper) that belong to this command: members of its
/// group or leaked pids, never the leader (its waiter owns that status), one pid at a time.
fn reap_ours(leader: i32, pgid: i32, leaked: &[i32]) {
    use nix::sys::wait::{waitpid, WaitPidFlag};
    let own = std::process::id() as i32;
    for p in all_processes() {
        let ours = p.pgid == pgid || leaked.contains(&p.pid);
        if ours && p.ppid == own && p.pid != leader && p.is_zombie() {
            let _ = waitpid(
                nix::unistd::Pid::from_raw(p.pid),
                Some(WaitPidFlag::WNOHANG),
            );
        }
    }
}
