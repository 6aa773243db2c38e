#![warn(missing_docs)]
//! One registry of every process group the supervisor started, swept on the way out, so that no
//! panic, early return or killed actor can leave a process running (actors' `post_stop` is skipped
//! after a panic; this is not).

use super::group::signal_group;
use super::owner::Owner;
use crate::model::ids::RunId;
use nix::sys::signal::Signal;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// One live process group of this supervisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredGroup {
    /// Its process group id (the key of the registry).
    pub pgid: i32,
    /// Pid of the group leader, the child tokio (or the PTY layer) waits for.
    pub leader: i32,
    /// Whose it is: the key by which a run's or a command's groups are found.
    pub owner: Owner,
    /// The owner as text, for messages and the ledger: `command server (0190…)`.
    pub label: String,
    /// The `BUGATTI_RUN_ID` the group was started with (from its spawn spec), by which the next
    /// supervisor finds its escapees should this one be SIGKILLed.
    pub run_id: Option<RunId>,
}

fn groups() -> &'static Mutex<HashMap<i32, RegisteredGroup>> {
    static GROUPS: OnceLock<Mutex<HashMap<i32, RegisteredGroup>>> = OnceLock::new();
    GROUPS.get_or_init(|| Mutex::new(HashMap::new()))
}

fn lock() -> std::sync::MutexGuard<'static, HashMap<i32, RegisteredGroup>> {
    // A panic while holding the lock must not stop the final sweep.
    groups()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Called by [`super::handle::start`] for every group, before its handle is returned.
/// `run_id`: the `BUGATTI_RUN_ID` of its spawn spec, if any; `started`: the leader's start
/// time when the spawn knew it (see [`super::ledger::BootTick`]).
pub fn register(pgid: i32, leader: i32, owner: &Owner, run_id: Option<&str>, started: Option<u64>) {
    let group = RegisteredGroup {
        pgid,
        leader,
        owner: owner.clone(),
        label: owner.to_string(),
        run_id: run_id.map(RunId::new),
    };
    lock().insert(pgid, group.clone());
    // On disk too, for the next supervisor should this one be SIGKILLed.
    super::ledger::record(&group, started);
}

/// Called once a group has been torn down and checked.
pub fn unregister(pgid: i32) {
    lock().remove(&pgid);
    super::ledger::forget(pgid);
}

/// Every group registered now.
pub fn registered() -> Vec<RegisteredGroup> {
    lock().values().cloned().collect()
}

/// Pids of the group leaders, whose exit statuses belong to their owners (see
/// [`super::group::reap_adopted_zombies`]).
pub fn leader_pids() -> std::collections::HashSet<i32> {
    lock().values().map(|g| g.leader).collect()
}

/// SIGKILLs every group still registered and forgets them. Returns what was swept.
pub fn sweep() -> Vec<RegisteredGroup> {
    let swept: Vec<RegisteredGroup> = lock().drain().map(|(_, g)| g).collect();
    for group in &swept {
        let _ = signal_group(group.pgid, Signal::SIGKILL);
        super::ledger::forget(group.pgid);
    }
    swept
}
