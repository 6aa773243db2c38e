//! Process-group primitives: signal a group, list its live members, find processes by run id.
//!
//! Liveness is read from `/proc`, not from `kill(-pgid, 0)`: a zombie still answers `kill`, and
//! a group whose members are all zombies is dead for every purpose that matters here.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::fs;

/// The fields of `/proc/<pid>/stat` that teardown needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub state: char,
}

impl ProcStat {
    pub fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// Parses `/proc/<pid>/stat`. The command name is in parentheses and may itself contain spaces
/// and parentheses, so the fields are read after the *last* `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text.get(..open)?.trim().parse().ok()?;
    let mut rest = text.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    let pgid = rest.next()?.parse().ok()?;
    Some(ProcStat {
        pid,
        ppid,
        pgid,
        state,
    })
}

pub fn read_stat(pid: i32) -> Option<ProcStat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process currently visible in `/proc`.
pub fn all_processes() -> Vec<ProcStat> {
    list_pids().into_iter().filter_map(read_stat).collect()
}

/// Live (non-zombie) members of process group `pgid`.
pub fn live_members(pgid: i32) -> Vec<i32> {
    all_processes()
        .into_iter()
        .filter(|p| p.pgid == pgid && !p.is_zombie())
        .map(|p| p.pid)
        .collect()
}

/// Whether the group has a live member. A group without any member, zombies included, answers
/// `kill(-pgid, 0)` with ESRCH, which costs no walk of `/proc`; only a group that answers (live
/// members, or zombies nobody reaped yet) is looked up member by member.
pub fn group_is_alive(pgid: i32) -> bool {
    match killpg(Pid::from_raw(pgid), None) {
        Err(nix::errno::Errno::ESRCH) => false,
        _ => !live_members(pgid).is_empty(),
    }
}

/// Whether this process provably has no descendant at all: it is a child subreaper and has no
/// child, live or zombie (`waitid` answers ECHILD). A live descendant always has a live chain
/// of parents up to one of our children, since an orphan below us is re-parented to us (the
/// nearest subreaper), so no child means no descendant. Without the subreaper flag an orphan
/// goes to init and nothing can be proved. Costs one system call and no `/proc` read.
pub fn no_descendants() -> bool {
    use nix::sys::wait::{waitid, Id, WaitPidFlag};
    super::subreaper::is_child_subreaper()
        && matches!(
            waitid(
                Id::All,
                WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT,
            ),
            Err(nix::errno::Errno::ECHILD)
        )
}

/// The orphans re-parented to us (the child subreaper) that are still around, and everything
/// below them: the only places a process can be that outlived a group which provably ended (its
/// leader reaped, `kill(-pgid, 0)` ESRCH), since each of its escapees has a live chain of parents
/// up to an orphan of ours (see [`no_descendants`]). Read from the kernel's own list of our
/// children, not from a walk of every process on the machine: the kernel hands an orphan to the
/// first live thread of its subreaper, our main thread, which lives as long as we do, while the
/// children we start stay with the thread that started them. So
/// `/proc/<us>/task/<us>/children` names the orphans (and whatever the main thread started
/// itself, which a marker never matches); it is empty, one read, after a step that left nothing.
/// Our registered group leaders are left out (their groups are live, their members theirs).
///
/// `None` when that cannot be known (not a subreaper, a kernel without the `children` file, or
/// orphans coming and going while looked at): the caller then reads `/proc` as before.
pub fn adopted() -> Option<Vec<ProcStat>> {
    if !super::subreaper::is_child_subreaper() {
        return None;
    }
    let leaders = super::registry::leader_pids();
    let roots = || -> Option<Vec<i32>> {
        let mut roots = main_thread_children()?;
        roots.retain(|p| !leaders.contains(p));
        roots.sort_unstable();
        Some(roots)
    };
    let mut before = roots()?;
    // A few rounds: an orphan that ends while its children are listed hands them to us, to the
    // list just read; when the list is the same after the walk, nothing moved under it.
    for _ in 0..5 {
        if before.is_empty() {
            return Some(Vec::new());
        }
        let mut found = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut frontier = before.clone();
        while let Some(pid) = frontier.pop() {
            if !seen.insert(pid) {
                continue;
            }
            if let Some(stat) = read_stat(pid) {
                found.push(stat);
                frontier.extend(children_of(pid));
            }
        }
        let after = roots()?;
        if after == before {
            return Some(found);
        }
        before = after;
    }
    None
}

/// The children of our main thread, by the kernel's list (`None` without it).
fn main_thread_children() -> Option<Vec<i32>> {
    let own = std::process::id();
    let text = fs::read_to_string(format!("/proc/{own}/task/{own}/children")).ok()?;
    Some(
        text.split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect(),
    )
}

/// The children of `pid`, every thread's (empty when it is gone).
fn children_of(pid: i32) -> Vec<i32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|task| {
            let path = task.ok()?.path().join("children");
            fs::read_to_string(path).ok()
        })
        .flat_map(|text| {
            text.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect()
}

/// Where the machine's pid allocation stood at some moment: the last pid handed out
/// (`/proc/loadavg`) and the number of forks since boot (`processes` in `/proc/stat`). Every
/// process created after that moment has a pid after `last_pid` in the kernel's cyclic order,
/// as long as the counter has not gone once around since (see [`safe_span`]). A teardown looks
/// for what a group left behind only among those pids, not among every process on the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PidMark {
    last_pid: i32,
    forks: u64,
}

/// The latest mark taken (each scan takes one): reading an earlier mark than the moment asks
/// for only widens the window, so a group started now may use it without reading anything.
static LATEST_MARK: std::sync::Mutex<Option<PidMark>> = std::sync::Mutex::new(None);

/// A mark taken at or before now (see [`PidMark`]); `None` when `/proc` cannot say.
pub fn pid_mark() -> Option<PidMark> {
    let cached = *LATEST_MARK.lock().unwrap_or_else(|p| p.into_inner());
    cached.or_else(|| {
        let mark = read_mark();
        remember(mark);
        mark
    })
}

fn remember(mark: Option<PidMark>) {
    if let Some(mark) = mark {
        *LATEST_MARK.lock().unwrap_or_else(|p| p.into_inner()) = Some(mark);
    }
}

/// The last pid first, then the fork count: forks counted after the pid was read only make the
/// window look older, never younger.
fn read_mark() -> Option<PidMark> {
    let loadavg = fs::read_to_string("/proc/loadavg").ok()?;
    let last_pid = loadavg.split_whitespace().nth(4)?.parse().ok()?;
    let stat = fs::read_to_string("/proc/stat").ok()?;
    let forks = stat
        .lines()
        .find_map(|line| line.strip_prefix("processes "))?
        .trim()
        .parse()
        .ok()?;
    Some(PidMark { last_pid, forks })
}

/// How many forks may have happened since a mark for its window to be trusted: half the pid
/// space. Pids are handed out in increasing order and wrap at `pid_max`, so a pid below the
/// mark's can only be new after a wrap, which the window handles, and only a full turn of the
/// counter (`pid_max` allocations) could bring a new process back into the old range. Half
/// leaves room for allocations no fork was counted for (a fork that failed after its pid was
/// taken) and for the few forks between reading the last pid and the counter.
fn safe_span() -> u64 {
    static SPAN: std::sync::LazyLock<u64> = std::sync::LazyLock::new(|| {
        let pid_max: u64 = fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(32_768);
        // Pids below 300 are never reused once the counter wraps (RESERVED_PIDS).
        pid_max.saturating_sub(300) / 2
    });
    *SPAN
}

/// Whether `pid` comes after `from` and not after `to` in the kernel's cyclic order.
fn in_window(pid: i32, from: i32, to: i32) -> bool {
    if to >= from {
        pid > from && pid <= to
    } else {
        pid > from || pid <= to
    }
}

fn list_pids() -> Vec<i32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}

/// Sends `signal` to every member of the group. A group that no longer exists is not an error.
pub fn signal_group(pgid: i32, signal: Signal) -> nix::Result<()> {
    match killpg(Pid::from_raw(pgid), signal) {
        Err(nix::errno::Errno::ESRCH) => Ok(()),
        other => other,
    }
}

/// Live processes whose environment carries `key=value` (e.g. `BUGATTI_RUN_ID=<run id>`):
/// how descendants that left their process group with `setsid` are still found.
pub fn live_processes_with_env(key: &str, value: &str) -> Vec<i32> {
    let needle = format!("{key}={value}");
    let own = std::process::id() as i32;
    all_processes()
        .into_iter()
        .filter(|p| !p.is_zombie() && p.pid != own)
        .filter(|p| environ_contains(p.pid, needle.as_bytes()))
        .map(|p| p.pid)
        .collect()
}

/// Like [`live_processes_with_env`], but only among this process's descendants, which is all that
/// can be ours while we are a child subreaper (orphans of our tree re-parent to us). Reading the
/// environment of every process on the machine costs milliseconds per call; the descendants are
/// few. Without the subreaper flag, falls back to the machine-wide search.
pub fn live_descendants_with_env(key: &str, value: &str) -> Vec<i32> {
    ProcSnapshot::take().live_descendants_with_env(key, value)
}

/// SIGKILLs every live descendant carrying `key=value` in its environment; returns their pids.
pub fn kill_descendants_with_env(key: &str, value: &str) -> Vec<i32> {
    kill_marked_since(key, value, None, false)
}

/// [`kill_descendants_with_env`] for processes that can only have started after `mark` (a
/// run's, a group's): nothing is read when we provably have no descendant, and otherwise only
/// the processes started since the mark (see [`ProcSnapshot::since`]), or, when every group
/// that carried the marker has ended (`ended`), only our orphans ([`ProcSnapshot::left_since`]).
pub fn kill_marked_since(key: &str, value: &str, mark: Option<PidMark>, ended: bool) -> Vec<i32> {
    if no_descendants() {
        return Vec::new();
    }
    let candidates = if ended {
        ProcSnapshot::left_since(mark)
    } else {
        ProcSnapshot::since(mark)
    };
    let pids = candidates.live_descendants_with_env(key, value);
    for pid in &pids {
        let _ = nix::sys::signal::kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    pids
}

/// One pass over `/proc`, asked several questions: teardown checks the group, the escapees and
/// the zombies to reap together, and each pass costs a read of every process's `stat`.
#[derive(Debug, Clone)]
pub struct ProcSnapshot {
    procs: Vec<ProcStat>,
    /// Only the processes started since a [`PidMark`], or the orphans of ours ([`adopted`]): their
    /// parents may be missing from it, so descent from us cannot be checked, and an environment
    /// marker alone attributes a process.
    partial: bool,
}

impl ProcSnapshot {
    pub fn take() -> Self {
        Self {
            procs: all_processes(),
            partial: false,
        }
    }

    /// What a group that provably ended may have left: the orphans re-parented to us and their
    /// descendants ([`adopted`]), or the processes started since `mark` ([`ProcSnapshot::since`])
    /// when the kernel cannot say.
    pub fn left_since(mark: Option<PidMark>) -> Self {
        match adopted() {
            Some(procs) => Self {
                procs,
                // Attributed by marker alone, as in a window: the orphans' parents are gone.
                partial: true,
            },
            None => Self::since(mark),
        }
    }

    /// The processes started since `mark`, when that window can be trusted ([`safe_span`]);
    /// every process otherwise (no mark, `/proc` silent, or too many forks since). Lists the pids
    /// (one directory read) and reads the `stat` of those in the window only: on a busy machine
    /// a handful instead of hundreds.
    pub fn since(mark: Option<PidMark>) -> Self {
        let pids = list_pids();
        // After the listing: every pid listed that is new since `mark` was handed out by now.
        let now = read_mark();
        remember(now);
        let window = match (mark, now) {
            (Some(then), Some(now)) if now.forks.saturating_sub(then.forks) < safe_span() => {
                Some((then.last_pid, now.last_pid))
            }
            _ => None,
        };
        let procs = pids
            .into_iter()
            .filter(|&pid| window.is_none_or(|(from, to)| in_window(pid, from, to)))
            .filter_map(read_stat)
            .collect();
        Self {
            procs,
            partial: window.is_some(),
        }
    }

    /// Every process seen.
    pub fn procs(&self) -> &[ProcStat] {
        &self.procs
    }

    /// Live (non-zombie) members of process group `pgid`.
    pub fn live_members(&self, pgid: i32) -> Vec<i32> {
        self.procs
            .iter()
            .filter(|p| p.pgid == pgid && !p.is_zombie())
            .map(|p| p.pid)
            .collect()
    }

    /// See [`live_descendants_with_env`].
    pub fn live_descendants_with_env(&self, key: &str, value: &str) -> Vec<i32> {
        let needle = format!("{key}={value}");
        let own = std::process::id() as i32;
        let candidates = if super::subreaper::is_child_subreaper() && !self.partial {
            descendants_of(own, &self.procs)
        } else {
            self.procs.clone()
        };
        candidates
            .into_iter()
            .filter(|p| !p.is_zombie() && p.pid != own)
            .filter(|p| environ_contains(p.pid, needle.as_bytes()))
            .map(|p| p.pid)
            .collect()
    }

    /// See [`reap_adopted_zombies`].
    pub fn reap_adopted_zombies(&self, owned: &std::collections::HashSet<i32>) {
        use nix::sys::wait::{waitpid, WaitPidFlag};
        let own = std::process::id() as i32;
        for p in &self.procs {
            if p.ppid == own && p.is_zombie() && p.pid != p.pgid && !owned.contains(&p.pid) {
                let _ = waitpid(Pid::from_raw(p.pid), Some(WaitPidFlag::WNOHANG));
            }
        }
    }
}

/// Every process below `root` in the parent tree of `procs`.
pub fn descendants_of(root: i32, procs: &[ProcStat]) -> Vec<ProcStat> {
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for p in procs.iter().filter(|p| p.ppid == parent && p.pid != root) {
            found.push(*p);
            frontier.push(p.pid);
        }
    }
    found
}

fn environ_contains(pid: i32, needle: &[u8]) -> bool {
    fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|b| *b == 0).any(|entry| entry == needle))
        .unwrap_or(false)
}

/// Reaps zombie children of this process that no one else waits for: descendants re-parented to
/// us as child subreaper. Only pids *not* in `owned` are touched, so the exit statuses of children
/// tokio waits for are never stolen (never `waitpid(-1)`). Group leaders are never touched either:
/// every child we spawn leads its own group, and one that exits between its spawn and its
/// registration is not in `owned` yet (reaping it made a step's `echo` "exit 255" under load).
/// The price is that an adopted process that made itself a leader (`setsid`) stays a zombie until
/// we exit.
pub fn reap_adopted_zombies(owned: &std::collections::HashSet<i32>) {
    ProcSnapshot::take().reap_adopted_zombies(owned);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_parentheses_in_the_name() {
        let stat = parse_stat("4242 (my (odd) name) S 1 4240 4240 0 -1").expect("parses");
        assert_eq!(
            stat,
            ProcStat {
                pid: 4242,
                ppid: 1,
                pgid: 4240,
                state: 'S'
            }
        );
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn sees_a_real_process_group_and_its_end() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .expect("spawn sleep");
        let pgid = child.id() as i32;
        assert_eq!(live_members(pgid), vec![pgid]);
        signal_group(pgid, Signal::SIGKILL).expect("signal");
        let _ = child.wait();
        assert!(!group_is_alive(pgid));
        // Signalling a group that is gone is fine.
        signal_group(pgid, Signal::SIGTERM).expect("gone is ok");
    }
}
