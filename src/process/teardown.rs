#![warn(missing_docs)]
//! The one termination routine: [`terminate`] ends a [`Group`] by climbing its [`Ladder`] (data:
//! which signals, in which order, how long each may take), then SIGKILLs the group, then sweeps for
//! escapees — descendants seen before the stop (by parentage) and anything carrying the group's
//! environment [`super::handle::EnvMarker`] — and answers with a [`TeardownReport`]: `clean` (it
//! ended on a gentle rung), `killed` (it needed a harsh rung or SIGKILL) or `leaked` (something
//! outlived the group and was killed).
//!
//! This file is where process groups die. The only other signal senders are the safety nets:
//! `abandon` (a handle dropped without termination), [`kill_owner`] / [`kill_scope`] (an actor
//! that died without tearing down), [`super::registry::sweep`] (the supervisor's exit) and
//! [`super::ledger::reap_dead`] (a SIGKILLed supervisor's leftovers).

use super::exit::ExitStatus;
use super::group::{self, all_processes, signal_group, ProcSnapshot, ProcStat};
use super::handle::Group;
use super::owner::{Owner, Scope};
use super::registry;
use crate::model::outcome::TeardownState;
use nix::sys::signal::Signal;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{sleep, timeout, Instant};

/// How often the group's remaining members are looked up while waiting: members other than the
/// leader are not our children, so no exit event exists for them.
const GROUP_POLL: Duration = Duration::from_millis(20);
/// How long SIGKILLed processes get to disappear before we stop waiting.
pub const KILL_WAIT: Duration = Duration::from_secs(5);

/// Whether grace periods are over for the whole process (a second shutdown signal): every
/// [`terminate`] then skips its remaining rungs — one already waiting stops waiting — and
/// SIGKILLs at once. Process-wide because every ladder (harness, agent, shell step, checkpoint,
/// probe) must obey it, wherever it is running when the signal comes.
static GRACE_OVER: LazyLock<watch::Sender<bool>> = LazyLock::new(|| watch::channel(false).0);

/// Ends every grace period from now on, including those being waited out (docs/signals.md: after a
/// second signal the supervisor exits within a second). Irreversible.
pub fn end_grace() {
    GRACE_OVER.send_replace(true);
}

/// Whether [`end_grace`] was called.
pub fn grace_is_over() -> bool {
    *GRACE_OVER.borrow()
}

/// Resolves once [`end_grace`] is called (at once if it was).
pub async fn grace_over() {
    let mut over = GRACE_OVER.subscribe();
    // The sender is static, so the channel never closes.
    let _ = over.wait_for(|over| *over).await;
}

/// Runs `work` for at most `wait`, and not past the end of grace; `None` when cut short. For the
/// gentle waits outside a ladder (a best-effort interrupt request to an agent).
pub async fn within_grace<F: std::future::Future>(wait: Duration, work: F) -> Option<F::Output> {
    tokio::select! {
        done = timeout(wait, work) => done.ok(),
        () = grace_over() => None,
    }
}

/// One step of an escalation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    /// Close the child's stdin (an idle agent ends on end-of-file) and wait up to `wait`.
    CloseStdin {
        /// How long it may take to end.
        wait: Duration,
    },
    /// Send `signal` to the group and wait up to `wait`. `clean`: ending here counts as a clean
    /// teardown (a harness command's stop signal, the agent's SIGINT) rather than a kill.
    Signal {
        /// Sent to the whole group.
        signal: Signal,
        /// How long the group may take to end.
        wait: Duration,
        /// Whether ending on this rung is a clean teardown.
        clean: bool,
    },
}

/// An escalation: the rungs in order, then SIGKILL of the group (waited on up to `kill_wait`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ladder {
    /// The gentle steps, in order; may be empty (SIGKILL at once).
    pub rungs: Vec<Rung>,
    /// How long SIGKILLed members get to disappear.
    pub kill_wait: Duration,
    /// Processes the program starts outside its group by design, by their `comm` (Chromium's
    /// crash reporter, `chrome_crashpad_handler`, double-forks into a session of its own and ends
    /// only after the browser has): ended with the group like any escapee, but part of the
    /// program, so never reported as leaked.
    pub companions: &'static [&'static str],
}

impl Ladder {
    /// A harness command (and a `shell` step cut short): its stop signal, `grace` to end; a zero
    /// grace goes straight to SIGKILL.
    pub fn harness(stop_signal: Signal, grace: Duration) -> Self {
        let rungs = if grace.is_zero() {
            Vec::new()
        } else {
            vec![Rung::Signal {
                signal: stop_signal,
                wait: grace,
                clean: true,
            }]
        };
        Self {
            rungs,
            kill_wait: KILL_WAIT,
            companions: &[],
        }
    }

    /// An agent: stdin closed, SIGINT (Claude Code cleans up its tools on SIGINT, not on
    /// SIGTERM), SIGTERM, SIGKILL. An idle agent ends on EOF at once and an interrupted one cleans
    /// up quickly, so those two rungs are short; SIGTERM gets the whole grace.
    pub fn agent(grace: Duration) -> Self {
        let gentle = grace.min(Duration::from_secs(2));
        Self {
            rungs: vec![
                Rung::CloseStdin { wait: gentle },
                Rung::Signal {
                    signal: Signal::SIGINT,
                    wait: gentle,
                    clean: true,
                },
                Rung::Signal {
                    signal: Signal::SIGTERM,
                    wait: grace,
                    clean: false,
                },
            ],
            kill_wait: grace.max(Duration::from_secs(2)),
            companions: &[],
        }
    }

    /// No ceremony: SIGKILL at once (an abandoned probe attempt, a finished step's leftovers).
    pub fn kill() -> Self {
        Self::harness(Signal::SIGKILL, Duration::ZERO)
    }

    /// The same ladder, with `companions` ended as part of the program (see [`Ladder::companions`]).
    pub fn with_companions(mut self, companions: &'static [&'static str]) -> Self {
        self.companions = companions;
        self
    }
}

/// How a group ended: the answer of [`terminate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeardownReport {
    /// `clean`, `killed` or `leaked`.
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
async fn wait_gone(group: &Group, deadline: Instant) -> bool {
    let exited = timeout(
        deadline.saturating_duration_since(Instant::now()),
        group.wait(),
    )
    .await;
    if exited.is_err() {
        return false;
    }
    loop {
        if !members_left(group) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        sleep(GROUP_POLL).await;
    }
}

/// Whether the group still has a live member, once its leader has been reaped (call it no
/// sooner: the zombies of the group that are our children are reaped here, and the leader's
/// status belongs to its waiter). Asked of the kernel, not of `/proc`: `kill(-pgid, 0)` fails
/// with ESRCH for a group without any member; only a group that answers is looked up member by
/// member (a live member, or a zombie that is not our child).
fn members_left(group: &Group) -> bool {
    let pgid = group.pgid();
    reap_group_zombies(pgid, group.pid());
    group::group_is_alive(pgid)
}

/// Reaps the zombies of process group `pgid` that are our children (members re-parented to us
/// as child subreaper), never `leader` nor another registered leader, whose statuses belong to
/// their waiters: `waitid(P_PGID)` names them one at a time without reaping (WNOWAIT), and each
/// is then reaped by its pid.
fn reap_group_zombies(pgid: i32, leader: i32) {
    use nix::sys::wait::{waitid, waitpid, Id, WaitPidFlag, WaitStatus};
    let peek = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    // Bounded: each round reaps one zombie, and a group has finitely many.
    for _ in 0..4096 {
        let pid = match waitid(Id::PGid(nix::unistd::Pid::from_raw(pgid)), peek) {
            Ok(WaitStatus::Exited(pid, _) | WaitStatus::Signaled(pid, _, _)) => pid,
            _ => return,
        };
        if pid.as_raw() == leader || registry::leader_pids().contains(&pid.as_raw()) {
            return;
        }
        let _ = waitpid(pid, Some(WaitPidFlag::WNOHANG));
    }
}

/// Ends the group: climbs `ladder`, SIGKILLs what is left, sweeps for escapees, unregisters the
/// group and closes its PTY. Idempotent: a second call answers the first report.
pub async fn terminate(group: &mut Group, ladder: &Ladder) -> TeardownReport {
    if let Some(report) = &group.report {
        return report.clone();
    }
    let report = if group.exit_status().is_some() && !members_left(group) {
        ended(group, ladder.companions).await
    } else {
        stop(group, ladder).await
    };
    group.report = Some(report.clone());
    report
}

/// The teardown of a group that had already ended (a finished step, a command that exited):
/// nothing to signal, only what it left behind to find. Nothing is read when we provably have
/// no descendant ([`group::no_descendants`]: a one-test run after its step); otherwise only the
/// orphans re-parented to us and what is below them ([`group::adopted`]: none, one read, after
/// a step that left nothing, however many other sessions run), not every process on the machine.
async fn ended(group: &mut Group, companions: &[&str]) -> TeardownReport {
    let leaked = if group::no_descendants() {
        Vec::new()
    } else {
        let since = ProcSnapshot::left_since(group.since);
        kill_leftovers(group, &HashSet::new(), Some(&since), companions).await
    };
    if !leaked.is_empty() {
        reap_ours(group.pid(), group.pgid(), &leaked, None);
    }
    registry::unregister(group.pgid());
    group.release_pty();
    TeardownReport {
        state: if leaked.is_empty() {
            TeardownState::Clean
        } else {
            TeardownState::Leaked
        },
        exit: group.exit_status(),
        leaked,
    }
}

/// The teardown of a group with a live leader or members: the ladder, SIGKILL, then the sweep.
async fn stop(group: &mut Group, ladder: &Ladder) -> TeardownReport {
    let own = std::process::id() as i32;
    // One pass over /proc answers every question when the group had already ended (a finished
    // step, a command that exited): each pass reads every process's stat on the machine, about
    // a millisecond per hundred processes, and a one-test run used to make three here.
    let first = ProcSnapshot::take();
    let procs = first.procs();
    let pgid = group.pgid();
    let mut roots: Vec<i32> = procs
        .iter()
        .filter(|p| p.pgid == pgid && !p.is_zombie())
        .map(|p| p.pid)
        .collect();
    let members_alive = !roots.is_empty();
    roots.push(group.pid());
    let snapshot: HashSet<i32> = descendants(&roots, procs)
        .into_iter()
        .filter(|&pid| pid != own)
        .collect();

    let already_gone = group.exit_status().is_some() && !members_alive;
    let mut state = TeardownState::Clean;
    if !already_gone {
        let mut ended = false;
        for rung in &ladder.rungs {
            if grace_is_over() {
                break;
            }
            let wait = match *rung {
                Rung::CloseStdin { wait } => {
                    if group.stdin.take().is_none() {
                        // Closed long ago (Codex reads no stdin): waiting here only lets the
                        // agent go on working, and spending, for nothing.
                        continue;
                    }
                    wait
                }
                Rung::Signal {
                    signal,
                    wait,
                    clean,
                } => {
                    if !clean {
                        state = TeardownState::Killed;
                    }
                    let _ = signal_group(pgid, signal);
                    wait
                }
            };
            let gone = tokio::select! {
                gone = wait_gone(group, Instant::now() + wait) => gone,
                () = grace_over() => false,
            };
            if gone {
                ended = true;
                break;
            }
        }
        if !ended {
            state = TeardownState::Killed;
            let _ = signal_group(pgid, Signal::SIGKILL);
            wait_gone(group, Instant::now() + ladder.kill_wait).await;
        }
    }
    group.stdin = None;

    // Nothing was signalled: the first pass is still what /proc shows.
    let unchanged = already_gone.then_some(&first);
    let leaked = kill_leftovers(group, &snapshot, unchanged, ladder.companions).await;
    if !leaked.is_empty() {
        state = TeardownState::Leaked;
    }
    reap_ours(
        group.pid(),
        pgid,
        &leaked,
        unchanged.filter(|_| leaked.is_empty()),
    );
    registry::unregister(pgid);
    group.release_pty();
    TeardownReport {
        state,
        exit: group.exit_status(),
        leaked,
    }
}

/// Finds what outlived the group (seen before the stop, or carrying its marker; not looked up by
/// pgid, which may belong to someone else once the group is gone), SIGKILLs it and waits for it to
/// go, looking again while it does (a shell may fork between two commands). Returns the pids that
/// were alive, but for the program's `companions` (ended all the same).
async fn kill_leftovers(
    group: &Group,
    snapshot: &HashSet<i32>,
    mut current: Option<&ProcSnapshot>,
    companions: &[&str],
) -> Vec<i32> {
    let own = std::process::id() as i32;
    let marker = group.marker();
    let mut leaked: HashSet<i32> = HashSet::new();
    let mut companion_pids: HashSet<i32> = HashSet::new();
    let mut alive: HashSet<i32> = snapshot.iter().copied().filter(|&p| is_alive(p)).collect();
    let deadline = Instant::now() + KILL_WAIT;
    loop {
        let taken;
        let now = match current.take() {
            Some(given) => given,
            None => {
                taken = ProcSnapshot::take();
                &taken
            }
        };
        alive.extend(now.live_descendants_with_env(marker.var, &marker.value));
        // Descendants of the leftovers (a daemon's own children).
        let roots: Vec<i32> = alive.iter().copied().collect();
        alive.extend(descendants(&roots, now.procs()));
        alive.remove(&own);
        if alive.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            leaked.extend(alive.iter().copied());
            break;
        }
        for &pid in &alive {
            if !companions.is_empty() && is_companion(pid, companions) {
                companion_pids.insert(pid);
            }
            // A setsid escapee leads its own group: take that group down with it.
            if let Some(stat) = group::read_stat(pid) {
                if stat.pgid == pid && stat.pgid != own {
                    let _ = signal_group(pid, Signal::SIGKILL);
                }
            }
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
        }
        leaked.extend(alive.iter().copied());
        while alive.iter().any(|&p| is_alive(p)) && Instant::now() < deadline {
            sleep(GROUP_POLL).await;
        }
        alive.clear();
    }
    if !companion_pids.is_empty() {
        tracing::debug!(
            "ended the program's own companions {:?} ({}) with its group",
            companion_pids,
            companions.join(", ")
        );
    }
    let mut leaked: Vec<i32> = leaked.difference(&companion_pids).copied().collect();
    leaked.sort_unstable();
    leaked
}

/// Whether `pid`'s command name (`/proc/<pid>/comm`, cut by the kernel at 15 bytes) is one of
/// `companions` (cut alike).
fn is_companion(pid: i32, companions: &[&str]) -> bool {
    let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/comm")) else {
        return false;
    };
    let comm = comm.trim_end_matches('\n');
    companions.iter().any(|c| c.get(..15).unwrap_or(c) == comm)
}

/// Reaps zombies re-parented to us (as child subreaper) that belong to this group: members of its
/// group or leaked pids, never the leader (its waiter owns that status) nor another registered
/// leader, one pid at a time.
fn reap_ours(leader: i32, pgid: i32, leaked: &[i32], current: Option<&ProcSnapshot>) {
    use nix::sys::wait::{waitpid, WaitPidFlag};
    let own = std::process::id() as i32;
    let leaders = registry::leader_pids();
    let taken;
    let procs = match current {
        Some(given) => given.procs(),
        None => {
            taken = all_processes();
            &taken
        }
    };
    for p in procs {
        let ours = p.pgid == pgid || leaked.contains(&p.pid);
        if ours && p.ppid == own && p.pid != leader && p.is_zombie() && !leaders.contains(&p.pid) {
            let _ = waitpid(
                nix::unistd::Pid::from_raw(p.pid),
                Some(WaitPidFlag::WNOHANG),
            );
        }
    }
}

/// A handle dropped without [`terminate`] (its owner killed, a panic): SIGKILL now, no waiting.
/// A leader already reaped with no member left is not signalled: its pgid may be reused.
pub(super) fn abandon(group: &mut Group) {
    if group.report.is_some() {
        return;
    }
    let pgid = group.pgid();
    if group.exit_status().is_none() || !group::live_members(pgid).is_empty() {
        let _ = signal_group(pgid, Signal::SIGKILL);
    }
    let marker = group.marker();
    let leaked = group::kill_descendants_with_env(marker.var, &marker.value);
    registry::unregister(pgid);
    group.release_pty();
    group.report = Some(TeardownReport {
        state: if leaked.is_empty() {
            TeardownState::Killed
        } else {
            TeardownState::Leaked
        },
        exit: group.exit_status(),
        leaked,
    });
}

/// Kills every registered group of `owner` whose handle is out of reach (its actor failed or
/// does not answer). Returns how many there were.
pub fn kill_owner(owner: &Owner) -> usize {
    let groups: Vec<_> = registry::registered()
        .into_iter()
        .filter(|g| &g.owner == owner)
        .collect();
    for g in &groups {
        let _ = signal_group(g.pgid, Signal::SIGKILL);
        registry::unregister(g.pgid);
    }
    groups.len()
}

/// Kills whatever a run or suite that died (panicked) left behind: its registered groups and,
/// for a run, every process carrying its `BUGATTI_RUN_ID`.
pub fn kill_scope(scope: &Scope) {
    for g in registry::registered()
        .into_iter()
        .filter(|g| &g.owner.scope == scope)
    {
        let _ = signal_group(g.pgid, Signal::SIGKILL);
        registry::unregister(g.pgid);
    }
    sweep_run(scope);
}

/// Where pid allocation stood when each open run began ([`run_begins`]): its sweep looks only
/// among the processes started since.
static RUN_MARKS: LazyLock<std::sync::Mutex<HashMap<String, group::PidMark>>> =
    LazyLock::new(Default::default);

/// Notes where pid allocation stands as a run begins, before it starts any process, so that
/// [`sweep_run`] looks only among the processes started since (every process of the run is).
/// Reads nothing in the common case (the latest mark taken is reused).
pub fn run_begins(run_id: &str) {
    if let Some(mark) = group::pid_mark() {
        RUN_MARKS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(run_id.to_string())
            .or_insert(mark);
    }
}

/// After a run's teardown: SIGKILLs every descendant still carrying the run's `BUGATTI_RUN_ID`
/// (escaped from every group); returns their pids.
pub fn sweep_run(scope: &Scope) -> Vec<i32> {
    match scope.run_id() {
        Some(run) => {
            let mark = RUN_MARKS
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(run.as_str());
            // Every group of the run torn down: what still carries its id is below an orphan of
            // ours (`group::adopted`). A group of the run still registered (an actor that did
            // not answer) is looked for among the processes started since the run began.
            let groups_left = registry::registered().iter().any(|g| {
                g.run_id
                    .as_ref()
                    .is_some_and(|r| r.as_str() == run.as_str())
            });
            group::kill_marked_since("BUGATTI_RUN_ID", run.as_str(), mark, !groups_left)
        }
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::exit::ExitStatus;
    use crate::process::handle::{start, Io, Launch};
    use crate::process::owner::Role;

    fn launch(script: &str, io: Io) -> Launch {
        let owner = Owner::new(
            Scope::run(format!("teardown-test-{}", std::process::id())),
            Role::Other(script.to_string()),
        );
        Launch::shell(owner, script, io)
    }

    /// Signals must come after the child's trap is set: a busy machine may not have run the
    /// shell's first line when `start` returns. The child says so by creating `armed`.
    async fn wait_until_armed(armed: &std::path::Path) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !armed.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the script never set its trap"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A child that ends cleanly on SIGINT, once its trap is set (see [`wait_until_armed`]).
    fn sigint_clean_script(armed: &std::path::Path) -> String {
        format!(
            "trap 'exit 0' INT; touch '{}'; while :; do sleep 0.05; done",
            armed.display()
        )
    }

    fn registered(pgid: i32) -> bool {
        registry::registered().iter().any(|g| g.pgid == pgid)
    }

    #[tokio::test]
    async fn a_command_ignoring_its_stop_signal_is_killed_and_unregistered() {
        // The stop signal must come after the trap is set (a busy machine may not have run the
        // shell's first line yet): the script says so in a file once it has.
        let dir = tempfile::tempdir().expect("tempdir");
        let armed = dir.path().join("armed");
        let script = format!("trap '' TERM; touch '{}'; sleep 30", armed.display());
        let mut group = start(launch(&script, Io::Merged)).expect("start");
        assert!(registered(group.pgid()), "registered before it is returned");
        wait_until_armed(&armed).await;
        let report = terminate(
            &mut group,
            &Ladder::harness(Signal::SIGTERM, Duration::from_millis(200)),
        )
        .await;
        assert_eq!(report.state, TeardownState::Killed, "{report:?}");
        assert_eq!(report.exit, Some(ExitStatus::Signal("SIGKILL".into())));
        assert!(!registered(group.pgid()));
        // Idempotent.
        assert_eq!(terminate(&mut group, &Ladder::kill()).await, report);
    }

    #[tokio::test]
    async fn the_agent_ladder_ends_on_sigint_and_that_is_clean() {
        let io = Io::Piped {
            stdin: true,
            stdout: false,
            stderr: false,
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let armed = dir.path().join("armed");
        let mut group = start(launch(&sigint_clean_script(&armed), io)).expect("start");
        wait_until_armed(&armed).await;
        let report = terminate(&mut group, &Ladder::agent(Duration::from_secs(5))).await;
        assert_eq!(report.state, TeardownState::Clean, "{report:?}");
        assert!(report.leaked.is_empty());
    }

    #[tokio::test]
    async fn a_stdin_closed_before_teardown_costs_no_wait_on_the_close_stdin_rung() {
        let io = Io::Piped {
            stdin: true,
            stdout: false,
            stderr: false,
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let armed = dir.path().join("armed");
        let mut group = start(launch(&sigint_clean_script(&armed), io)).expect("start");
        wait_until_armed(&armed).await;
        group.take_stdin();
        let gentle = Duration::from_secs(2);
        let started = std::time::Instant::now();
        let report = terminate(&mut group, &Ladder::agent(gentle)).await;
        assert_eq!(
            report.state,
            TeardownState::Clean,
            "ended on SIGINT: {report:?}"
        );
        assert!(
            started.elapsed() < gentle,
            "the close-stdin rung ({gentle:?}) was skipped: {:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn an_escapee_carrying_the_marker_is_found_killed_and_reported() {
        // The leader waits until the escapee has its own session (it wrote its pid), so the
        // escapee is out of the group by the time teardown looks.
        let dir = tempfile::tempdir().expect("tempdir");
        let pid_file = dir.path().join("escapee.pid");
        let script = format!(
            "setsid sh -c 'echo $$ > {p}; exec sleep 30' </dev/null >/dev/null 2>&1 & \
             while [ ! -s {p} ]; do sleep 0.01; done; exit 0",
            p = pid_file.display()
        );
        let mut group = start(launch(&script, Io::Merged)).expect("start");
        group.wait().await;
        let report = terminate(&mut group, &Ladder::kill()).await;
        assert_eq!(report.state, TeardownState::Leaked, "{report:?}");
        assert_eq!(report.leaked.len(), 1, "{report:?}");
        let marker = group.marker().clone();
        assert!(group::live_processes_with_env(marker.var, &marker.value).is_empty());
    }
}
