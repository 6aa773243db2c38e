//! The on-disk ledger of the process groups a supervisor started, so that a supervisor killed
//! with SIGKILL (no sweep, no teardown) does not leave its servers running forever: the next
//! `start` in the same artifact directory reads the dead supervisor's ledger and kills what
//! survived.
//!
//! One file per invocation, `<artifact_dir>/ledger/<suite_id>.json`, a journal: its first line
//! the whole ledger as it stood when the file was (re)written atomically (temporary file +
//! rename), then one line appended per change (a group gained or lost, a run opened or closed),
//! and removed when the supervisor ends normally. Appending a line is one `write`; rewriting the
//! file for every change cost a rename each, and on ext4 a rename over an existing file waits
//! for the new file's data to reach the disk (tens of milliseconds on a busy machine, a dozen
//! times per test). The journal is rewritten whole only once it holds many more lines than the
//! ledger has entries. A SIGKILL mid-append leaves a torn last line, which a reader skips. It names the
//! supervisor (pid and start time, so a live supervisor's groups are never touched and a reused
//! pid is not mistaken for it) and each group (pgid, leader pid and start time, label, and the
//! `BUGATTI_RUN_ID` of the leader, which also finds descendants that left their group with
//! `setsid`), and the runs it has open (id and run directory), so that the next start can
//! finalise the reports of runs a SIGKILL cut off. Writing is best effort: an artifact directory
//! that vanished mid-run must not stop the run, only this safety net.

use super::group::{live_members, live_processes_with_env, read_stat, signal_group};
use super::registry::RegisteredGroup;
use crate::model::ids::{RunId, SuiteId};
use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerGroup {
    pub pgid: i32,
    pub leader: i32,
    /// The leader's start time (field 22 of `/proc/<pid>/stat`, clock ticks since boot).
    pub leader_start: Option<u64>,
    pub label: String,
    /// The leader's `BUGATTI_RUN_ID`, when it has one (suite-scoped commands have none).
    pub run_id: Option<RunId>,
}

/// A run whose files are open (started, not yet final).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerRun {
    pub run_id: RunId,
    pub run_dir: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerFile {
    pub suite_id: SuiteId,
    pub supervisor_pid: i32,
    pub supervisor_start: Option<u64>,
    pub groups: Vec<LedgerGroup>,
    /// Runs started and not finished (a ledger of an older version has none).
    #[serde(default)]
    pub runs: Vec<LedgerRun>,
}

/// What dead supervisors left: processes killed, and runs whose files were never made final.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reaped {
    pub leftovers: Vec<Leftovers>,
    pub open_runs: Vec<LedgerRun>,
}

/// What was found and killed for one dead run (or, with `run_id` None, for the dead suite's
/// suite-scoped commands).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftovers {
    pub suite_id: SuiteId,
    pub run_id: Option<RunId>,
    /// The labels of the groups that still had live members.
    pub labels: Vec<String>,
    pub pids: Vec<i32>,
}

impl Leftovers {
    /// One console line: `killed 2 leftover processes of dead run 0190… (command server (…), pid 41, 42)`.
    pub fn describe(&self) -> String {
        let whose = match &self.run_id {
            Some(run) => format!("dead run {run}"),
            None => format!("dead suite {}", self.suite_id),
        };
        let what = if self.labels.is_empty() {
            "escaped its process group".to_string()
        } else {
            self.labels.join(", ")
        };
        let pids: Vec<String> = self.pids.iter().map(|p| p.to_string()).collect();
        format!(
            "killed {} leftover process{} of {whose} ({what}, pid {})",
            self.pids.len(),
            if self.pids.len() == 1 { "" } else { "es" },
            pids.join(", ")
        )
    }
}

/// Field 22 of `/proc/<pid>/stat`: when the process started. Read after the last `)` because the
/// command name may hold spaces and parentheses.
pub fn start_time(pid: i32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_time(&stat)
}

/// A reading of the clock a process's start time is counted on: `/proc/<pid>/stat`'s field 22
/// is the boot-time clock at the fork, in clock ticks. Read just before and just after a spawn,
/// the two readings bound the child's fork: when they fall in the same tick, that tick is its
/// start time, known without opening its `/proc` file (a read that was a measurable part of
/// each replayed command's CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootTick(Option<u64>);

impl BootTick {
    pub fn now() -> Self {
        Self(boot_ticks())
    }

    /// The start time of a process forked after `self` was read and before `after` was: their
    /// tick when they share one, else `None` (its `/proc` file is read then).
    pub fn start_until(self, after: BootTick) -> Option<u64> {
        match (self.0, after.0) {
            (Some(before), Some(after)) if before == after => Some(before),
            _ => None,
        }
    }
}

/// The boot-time clock in clock ticks, as the kernel counts a start time (`nsec_to_clock_t`:
/// nanoseconds divided by 10⁹ / `CLK_TCK`, rounded down); `None` where that is not exact.
fn boot_ticks() -> Option<u64> {
    static NANOS_PER_TICK: OnceLock<Option<u64>> = OnceLock::new();
    let per_tick = (*NANOS_PER_TICK.get_or_init(|| {
        // SAFETY: sysconf only reads a configuration value.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        u64::try_from(hz)
            .ok()
            .filter(|hz| *hz > 0 && 1_000_000_000 % hz == 0)
            .map(|hz| 1_000_000_000 / hz)
    }))?;
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into `now`, which outlives the call.
    if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut now) } != 0 {
        return None;
    }
    let nanos = u64::try_from(now.tv_sec)
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(u64::try_from(now.tv_nsec).ok()?)?;
    Some(nanos / per_tick)
}

fn parse_start_time(stat: &str) -> Option<u64> {
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    // After the name come field 3 (state) onwards; start time is field 22.
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn run_id_of(pid: i32) -> Option<RunId> {
    let env = fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|b| *b == 0)
        .find_map(|entry| entry.strip_prefix(b"BUGATTI_RUN_ID="))
        .map(|v| RunId::new(String::from_utf8_lossy(v)))
}

pub use crate::model::artifacts::ledger_dir;

struct Open {
    path: PathBuf,
    file: LedgerFile,
    /// The journal, opened for appending after its last rewrite (`None` after a failed one).
    journal: Option<fs::File>,
    /// Lines appended since the last rewrite.
    appended: usize,
    /// Set after the first failed write, so a vanished directory is reported once.
    failing: bool,
}

/// One change appended to the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum JournalChange {
    AddGroup(LedgerGroup),
    DropGroup(i32),
    OpenRun(LedgerRun),
    CloseRun(RunId),
}

impl LedgerFile {
    fn apply(&mut self, change: JournalChange) {
        match change {
            JournalChange::AddGroup(group) => {
                self.groups.retain(|g| g.pgid != group.pgid);
                self.groups.push(group);
            }
            JournalChange::DropGroup(pgid) => self.groups.retain(|g| g.pgid != pgid),
            JournalChange::OpenRun(run) => {
                self.runs.retain(|r| r.run_id != run.run_id);
                self.runs.push(run);
            }
            JournalChange::CloseRun(id) => self.runs.retain(|r| r.run_id != id),
        }
    }
}

/// How many lines the journal may gain before it is rewritten whole: a few dozen, more when the
/// ledger itself is large (a rewrite costs as much as the ledger is long).
fn rewrite_after(file: &LedgerFile) -> usize {
    64 + 4 * (file.groups.len() + file.runs.len())
}

fn current() -> &'static Mutex<Option<Open>> {
    static CURRENT: OnceLock<Mutex<Option<Open>>> = OnceLock::new();
    CURRENT.get_or_init(|| Mutex::new(None))
}

fn lock() -> std::sync::MutexGuard<'static, Option<Open>> {
    current()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The ledger as one line (the journal's first), written atomically.
fn write_atomically(path: &Path, file: &LedgerFile) -> std::io::Result<()> {
    let mut text = serde_json::to_vec(file).map_err(std::io::Error::other)?;
    text.push(b'\n');
    let tmp = path.with_extension("json.tmp");
    fs::write(&tmp, text)?;
    fs::rename(&tmp, path)
}

/// Rewrites the journal whole and opens it for appending.
fn rewrite(open: &mut Open) -> std::io::Result<()> {
    open.journal = None;
    write_atomically(&open.path, &open.file)?;
    open.journal = Some(fs::OpenOptions::new().append(true).open(&open.path)?);
    open.appended = 0;
    Ok(())
}

/// Appends one change (one `write` of one line), or rewrites the journal when it has grown
/// long or the last write failed.
fn append(open: &mut Open, change: &JournalChange) -> std::io::Result<()> {
    use std::io::Write;
    let rewrite_due = open.appended >= rewrite_after(&open.file);
    match open.journal.as_mut().filter(|_| !rewrite_due) {
        Some(journal) => {
            let mut line = serde_json::to_vec(change).map_err(std::io::Error::other)?;
            line.push(b'\n');
            journal.write_all(&line)?;
            open.appended += 1;
            Ok(())
        }
        None => rewrite(open),
    }
}

/// Applies `change` to the ledger and records it on disk.
fn persist(open: &mut Open, change: JournalChange) {
    open.file.apply(change.clone());
    match append(open, &change) {
        Ok(()) => open.failing = false,
        Err(e) => {
            // The next change rewrites the whole file.
            open.journal = None;
            if !open.failing {
                open.failing = true;
                tracing::warn!(
                    "cannot write the process ledger `{}`: {e}; a SIGKILLed supervisor's processes may go unfound",
                    open.path.display()
                );
            }
        }
    }
}

/// Starts this invocation's ledger under `artifact_dir`. Groups registered from now on are
/// recorded. Errors name the file that could not be written.
pub fn open(artifact_dir: &Path, suite_id: &SuiteId) -> std::io::Result<PathBuf> {
    let dir = ledger_dir(artifact_dir);
    fs::create_dir_all(&dir)?;
    let own = std::process::id() as i32;
    let mut open = Open {
        path: crate::model::artifacts::ledger_file(artifact_dir, suite_id),
        file: LedgerFile {
            suite_id: suite_id.clone(),
            supervisor_pid: own,
            supervisor_start: start_time(own),
            groups: Vec::new(),
            runs: Vec::new(),
        },
        journal: None,
        appended: 0,
        failing: false,
    };
    rewrite(&mut open).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot write `{}`: {e}", open.path.display()),
        )
    })?;
    let path = open.path.clone();
    *lock() = Some(open);
    Ok(path)
}

/// Called by the registry for every group it gains.
/// `started`: the leader's start time when its spawn knew it ([`BootTick`]), else it is read
/// from `/proc`.
pub fn record(group: &RegisteredGroup, started: Option<u64>) {
    let mut guard = lock();
    let Some(open) = guard.as_mut() else { return };
    let group = LedgerGroup {
        pgid: group.pgid,
        leader: group.leader,
        leader_start: started.or_else(|| start_time(group.leader)),
        label: group.label.clone(),
        run_id: group.run_id.clone(),
    };
    persist(open, JournalChange::AddGroup(group));
}

/// Called by the registry once a group is torn down.
pub fn forget(pgid: i32) {
    let mut guard = lock();
    let Some(open) = guard.as_mut() else { return };
    if open.file.groups.iter().any(|g| g.pgid == pgid) {
        persist(open, JournalChange::DropGroup(pgid));
    }
}

/// Called by the reporter once run `run_id`'s directory and first files exist.
pub fn run_opened(run_id: &RunId, run_dir: &Path) {
    let mut guard = lock();
    let Some(open) = guard.as_mut() else { return };
    let run = LedgerRun {
        run_id: run_id.clone(),
        run_dir: run_dir.to_path_buf(),
    };
    persist(open, JournalChange::OpenRun(run));
}

/// Called by the reporter once run `run_id`'s files are final.
pub fn run_closed(run_id: &RunId) {
    let mut guard = lock();
    let Some(open) = guard.as_mut() else { return };
    if open.file.runs.iter().any(|r| &r.run_id == run_id) {
        persist(open, JournalChange::CloseRun(run_id.clone()));
    }
}

/// Ends this invocation's ledger: every group is gone, so the file goes too.
pub fn close() {
    if let Some(open) = lock().take() {
        let _ = fs::remove_file(&open.path);
    }
}

/// Whether the supervisor of `file` is still this very process: same pid, same start time, not a
/// zombie.
pub fn supervisor_alive(file: &LedgerFile) -> bool {
    // A killed supervisor its parent has not reaped yet (PID 1 in a container often never does)
    // keeps its pid and start time, in state Z: it is dead all the same.
    if read_stat(file.supervisor_pid).is_none_or(|s| s.is_zombie()) {
        return false;
    }
    match (start_time(file.supervisor_pid), file.supervisor_start) {
        (Some(now), Some(then)) => now == then,
        (Some(_), None) => true, // cannot tell a reused pid apart: leave it alone
        (None, _) => false,
    }
}

/// Live members of a recorded group, if the group is still the one recorded. A pgid cannot be
/// reused while its group has members, so a group whose leader died is still the original; a
/// leader pid alive with another start time means the group ended and the pid was reused.
fn survivors(group: &LedgerGroup) -> Vec<i32> {
    if let (Some(now), Some(then)) = (start_time(group.leader), group.leader_start) {
        if now != then {
            return Vec::new();
        }
    }
    live_members(group.pgid)
}

/// Kills what the dead supervisor of `file` left: its recorded groups and every process carrying
/// one of its run ids. Returns one entry per run (or the suite) that had survivors.
fn kill_leftovers(file: &LedgerFile) -> Vec<Leftovers> {
    let mut by_run: BTreeMap<Option<RunId>, Leftovers> = BTreeMap::new();
    fn entry<'a>(
        by_run: &'a mut BTreeMap<Option<RunId>, Leftovers>,
        suite_id: &SuiteId,
        run_id: &Option<RunId>,
    ) -> &'a mut Leftovers {
        by_run.entry(run_id.clone()).or_insert_with(|| Leftovers {
            suite_id: suite_id.clone(),
            run_id: run_id.clone(),
            labels: Vec::new(),
            pids: Vec::new(),
        })
    }
    let mut killed: BTreeSet<i32> = BTreeSet::new();
    let mut run_ids: BTreeSet<RunId> = file
        .groups
        .iter()
        .filter_map(|g| g.run_id.clone())
        .collect();
    for group in &file.groups {
        let members = survivors(group);
        if members.is_empty() {
            continue;
        }
        // Read at registration, the environ may have been caught mid-`exec` (empty): the
        // survivors still carry it.
        let run_id = group
            .run_id
            .clone()
            .or_else(|| members.iter().find_map(|pid| run_id_of(*pid)));
        let _ = signal_group(group.pgid, Signal::SIGKILL);
        if let Some(id) = &run_id {
            run_ids.insert(id.clone());
        }
        let found = entry(&mut by_run, &file.suite_id, &run_id);
        found.labels.push(group.label.clone());
        for pid in members {
            if killed.insert(pid) {
                found.pids.push(pid);
            }
        }
    }
    // A process may fork while we scan (a shell between two commands): scan again until a pass
    // finds nothing new, a few times at most.
    for _ in 0..10 {
        let mut found_new = false;
        for run_id in &run_ids {
            for pid in live_processes_with_env("BUGATTI_RUN_ID", run_id.as_str()) {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
                if killed.insert(pid) {
                    found_new = true;
                    entry(&mut by_run, &file.suite_id, &Some(run_id.clone()))
                        .pids
                        .push(pid);
                }
            }
        }
        if !found_new {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    by_run
        .into_values()
        .filter(|l| !l.pids.is_empty())
        .collect()
}

/// Scans the ledgers under `artifact_dir` for supervisors that died without cleaning up, kills
/// their surviving processes, removes their ledgers and answers with what was killed and the runs
/// they left open (for the caller to finalise). Ledgers of live supervisors are left alone.
/// Unreadable or corrupt ledgers are skipped with a warning, never fatal.
pub fn reap_dead(artifact_dir: &Path) -> Reaped {
    let mut found = Reaped::default();
    for (path, read) in read_ledgers(artifact_dir) {
        let file = match read {
            Ok(file) => file,
            Err(e) => {
                tracing::warn!("skipping the process ledger `{}`: {e}", path.display());
                continue;
            }
        };
        if supervisor_alive(&file) {
            continue;
        }
        found.leftovers.extend(kill_leftovers(&file));
        found.open_runs.extend(file.runs.iter().cloned());
        let _ = fs::remove_file(&path);
        // A write the SIGKILL interrupted.
        let _ = fs::remove_file(path.with_extension("json.tmp"));
    }
    found
}

/// Every ledger under `artifact_dir`, each read (or why it could not be).
pub fn read_ledgers(artifact_dir: &Path) -> Vec<(PathBuf, Result<LedgerFile, String>)> {
    let Ok(entries) = fs::read_dir(ledger_dir(artifact_dir)) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("json"))
        .map(|path| {
            let read = fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|bytes| parse(&bytes));
            (path, read)
        })
        .collect()
}

/// A ledger file read back: the whole ledger (a file an older supervisor wrote), or the journal
/// (the ledger, then its changes, one per line). A last line that is not a change is a write a
/// SIGKILL cut short: the ledger is what the lines before it say.
pub fn parse(bytes: &[u8]) -> Result<LedgerFile, String> {
    if let Ok(file) = serde_json::from_slice::<LedgerFile>(bytes) {
        return Ok(file);
    }
    let mut lines = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .enumerate()
        .peekable();
    let (_, first) = lines.next().ok_or("an empty ledger")?;
    let mut file: LedgerFile = serde_json::from_slice(first).map_err(|e| format!("line 1: {e}"))?;
    while let Some((i, line)) = lines.next() {
        match serde_json::from_slice::<JournalChange>(line) {
            Ok(change) => file.apply(change),
            Err(_) if lines.peek().is_none() => break,
            Err(e) => return Err(format!("line {}: {e}", i + 1)),
        }
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    #[test]
    fn reads_the_start_time_after_an_odd_name() {
        let stat = "77 (a ) b) S 1 77 77 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 9 9";
        assert_eq!(parse_start_time(stat), Some(123456));
        assert_eq!(parse_start_time("garbage"), None);
        let own = std::process::id() as i32;
        assert!(start_time(own).is_some());
    }

    #[test]
    fn the_tick_around_a_spawn_is_the_start_time_proc_gives() {
        let mut known = 0;
        for _ in 0..20 {
            let before = BootTick::now();
            let mut child = Command::new("sleep").arg("5").spawn().expect("spawn sleep");
            let started = before.start_until(BootTick::now());
            let pid = child.id() as i32;
            let read = start_time(pid);
            child.kill().expect("kill");
            child.wait().expect("wait");
            if let Some(started) = started {
                known += 1;
                assert_eq!(Some(started), read, "child {pid}");
            }
        }
        // A spawn takes well under a tick (10 ms): most fall inside one.
        assert!(known > 0, "no spawn fell within one tick");
        assert_eq!(BootTick(Some(7)).start_until(BootTick(Some(8))), None);
        assert_eq!(BootTick(None).start_until(BootTick(Some(8))), None);
    }

    #[test]
    fn a_live_supervisor_is_recognised_and_a_dead_or_reused_pid_is_not() {
        let own = std::process::id() as i32;
        let mut file = LedgerFile {
            suite_id: "s".into(),
            supervisor_pid: own,
            supervisor_start: start_time(own),
            groups: Vec::new(),
            runs: Vec::new(),
        };
        assert!(supervisor_alive(&file));
        file.supervisor_start = file.supervisor_start.map(|t| t + 1);
        assert!(
            !supervisor_alive(&file),
            "a reused pid is not the supervisor"
        );
        file.supervisor_pid = i32::MAX;
        assert!(!supervisor_alive(&file));
    }

    #[test]
    fn kills_the_groups_and_run_processes_of_a_dead_supervisor_only() {
        let artifacts = tempfile::tempdir().expect("tempdir");
        let dir = ledger_dir(artifacts.path());
        fs::create_dir_all(&dir).expect("mkdir");
        let run_id = format!("ledger-test-{}", std::process::id());
        let spawn = |run: &str| {
            Command::new("sleep")
                .arg("60")
                .env("BUGATTI_RUN_ID", run)
                .process_group(0)
                .spawn()
                .expect("spawn sleep")
        };
        let mut leader = spawn(&run_id);
        // Stands for a descendant that escaped the group: same run id, another group.
        let mut escaped = spawn(&run_id);
        let mut other_live = spawn(&format!("{run_id}-live"));
        let pid = |c: &std::process::Child| c.id() as i32;
        let group = |c: &std::process::Child, label: &str| LedgerGroup {
            pgid: pid(c),
            leader: pid(c),
            leader_start: start_time(pid(c)),
            label: label.into(),
            run_id: run_id_of(pid(c)),
        };
        let dead = LedgerFile {
            suite_id: "dead".into(),
            supervisor_pid: i32::MAX,
            supervisor_start: Some(1),
            groups: vec![group(&leader, "command server")],
            runs: vec![LedgerRun {
                run_id: RunId::new(run_id.clone()),
                run_dir: artifacts.path().join("runs").join(&run_id),
            }],
        };
        let own = std::process::id() as i32;
        let live = LedgerFile {
            suite_id: "live".into(),
            supervisor_pid: own,
            supervisor_start: start_time(own),
            groups: vec![group(&other_live, "command other")],
            runs: vec![LedgerRun {
                run_id: RunId::new(format!("{run_id}-live")),
                run_dir: artifacts.path().join("runs/live"),
            }],
        };
        write_atomically(&dir.join("dead.json"), &dead).expect("write");
        write_atomically(&dir.join("live.json"), &live).expect("write");
        fs::write(dir.join("corrupt.json"), "{ not json").expect("write");

        let reaped = reap_dead(artifacts.path());
        assert_eq!(
            reaped.open_runs, dead.runs,
            "the dead supervisor's open runs, not the live one's"
        );
        let found = reaped.leftovers;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].run_id.as_ref().map(RunId::as_str),
            Some(run_id.as_str())
        );
        assert_eq!(found[0].labels, vec!["command server".to_string()]);
        let mut pids = found[0].pids.clone();
        pids.sort();
        let mut expected = vec![pid(&leader), pid(&escaped)];
        expected.sort();
        assert_eq!(pids, expected);
        assert!(found[0]
            .describe()
            .starts_with("killed 2 leftover processes of dead run"));
        leader.wait().expect("wait");
        escaped.wait().expect("wait");
        assert!(!dir.join("dead.json").exists());
        assert!(
            dir.join("live.json").exists(),
            "a live supervisor is left alone"
        );
        assert!(live_members(pid(&other_live)) == vec![pid(&other_live)]);
        other_live.kill().expect("kill");
        other_live.wait().expect("wait");
    }

    #[test]
    fn the_ledger_follows_the_registry_and_survives_its_directory_vanishing() {
        use crate::process::owner::{Owner, Role, Scope};
        use crate::process::registry;
        let artifacts = tempfile::tempdir().expect("tempdir");
        let path = open(artifacts.path(), &SuiteId::new("suite-under-test")).expect("open");
        let read = || -> LedgerFile { parse(&fs::read(&path).expect("ledger")).expect("ledger") };
        assert_eq!(read().supervisor_pid, std::process::id() as i32);
        // A pgid no real group has: the registry only records it.
        let pgid = i32::MAX - 7;
        let owner = Owner::new(Scope::run("r"), Role::Command("fake".into()));
        registry::register(pgid, pgid, &owner, Some("r"), None);
        assert!(read().groups.iter().any(|g| g.pgid == pgid
            && g.label == "command fake (r)"
            && g.run_id.as_ref().map(RunId::as_str) == Some("r")));
        registry::unregister(pgid);
        assert!(!read().groups.iter().any(|g| g.pgid == pgid));
        // Other tests in this process register groups too, and each rewrite of the ledger can
        // land in the folder while it is being removed: retry until it is gone.
        let mut removed = fs::remove_dir_all(artifacts.path());
        for _ in 0..50 {
            if removed.is_ok() || !artifacts.path().exists() {
                break;
            }
            removed = fs::remove_dir_all(artifacts.path());
        }
        assert!(!artifacts.path().exists(), "rm -rf: {removed:?}");
        registry::register(pgid, pgid, &owner, Some("r"), None);
        registry::unregister(pgid);
        close();
        assert!(!path.exists());
    }

    #[test]
    fn a_run_id_found_only_on_a_survivor_still_finds_that_runs_escapees() {
        // A group recorded without its run id (an older ledger): the id read from the survivor
        // must join the sweep for escapees (it was once shadowed by the recorded ids only).
        let run_id = format!("ledger-unrecorded-{}", std::process::id());
        let spawn = || {
            Command::new("sleep")
                .arg("60")
                .env("BUGATTI_RUN_ID", &run_id)
                .process_group(0)
                .spawn()
                .expect("spawn sleep")
        };
        let mut leader = spawn();
        let mut escaped = spawn();
        let pid = |c: &std::process::Child| c.id() as i32;
        // Until a child has exec'd, its /proc environ is still this test's (no BUGATTI_RUN_ID):
        // on a busy machine the sweep could look before then.
        for child in [&leader, &escaped] {
            let comm = format!("/proc/{}/comm", pid(child));
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while std::fs::read_to_string(&comm).map_or(true, |c| c.trim() != "sleep")
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
        let file = LedgerFile {
            suite_id: "dead".into(),
            supervisor_pid: i32::MAX,
            supervisor_start: Some(1),
            groups: vec![LedgerGroup {
                pgid: pid(&leader),
                leader: pid(&leader),
                leader_start: start_time(pid(&leader)),
                label: "command server".into(),
                run_id: None,
            }],
            runs: Vec::new(),
        };
        let found = kill_leftovers(&file);
        let mut pids: Vec<i32> = found.iter().flat_map(|l| l.pids.clone()).collect();
        pids.sort_unstable();
        let mut expected = vec![pid(&leader), pid(&escaped)];
        expected.sort_unstable();
        assert_eq!(pids, expected, "{found:?}");
        leader.wait().expect("wait");
        escaped.wait().expect("wait");
    }

    #[test]
    fn a_group_whose_leader_pid_was_reused_is_not_touched() {
        let mut child = Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .expect("spawn");
        let pid = child.id() as i32;
        let group = LedgerGroup {
            pgid: pid,
            leader: pid,
            leader_start: start_time(pid).map(|t| t + 1),
            label: "x".into(),
            run_id: None,
        };
        assert!(survivors(&group).is_empty());
        child.kill().expect("kill");
        child.wait().expect("wait");
    }

    #[test]
    fn the_journal_reads_back_as_its_changes_say_and_a_torn_last_line_is_skipped() {
        let group = |pgid: i32| LedgerGroup {
            pgid,
            leader: pgid,
            leader_start: Some(7),
            label: format!("g{pgid}"),
            run_id: Some(RunId::new("r1")),
        };
        let mut expected = LedgerFile {
            suite_id: "s".into(),
            supervisor_pid: 1,
            supervisor_start: Some(2),
            groups: vec![group(10)],
            runs: Vec::new(),
        };
        let mut text = serde_json::to_string(&expected).expect("json") + "\n";
        let changes = [
            JournalChange::AddGroup(group(11)),
            JournalChange::OpenRun(LedgerRun {
                run_id: RunId::new("r1"),
                run_dir: "/runs/r1".into(),
            }),
            JournalChange::DropGroup(10),
            JournalChange::AddGroup(group(12)),
            JournalChange::CloseRun(RunId::new("r1")),
        ];
        for change in changes {
            text += &(serde_json::to_string(&change).expect("json") + "\n");
            expected.apply(change);
        }
        assert_eq!(parse(text.as_bytes()), Ok(expected.clone()));
        assert_eq!(
            expected.groups.iter().map(|g| g.pgid).collect::<Vec<_>>(),
            [11, 12]
        );
        // A SIGKILL in the middle of an append: the lines before it stand.
        let torn = text.clone() + "{\"add_group\":{\"pgid\":13,";
        assert_eq!(parse(torn.as_bytes()), Ok(expected));
        // A bad line before the last is a corrupt ledger, not a shorter one.
        let bad = text.replacen("{\"drop_group\"", "{\"nonsense\"", 1);
        assert!(parse(bad.as_bytes()).is_err());
        // The whole ledger in one JSON value (an older supervisor's) still reads.
        let old =
            serde_json::to_vec_pretty(&parse(text.as_bytes()).expect("ledger")).expect("json");
        assert!(parse(&old).is_ok());
    }

    #[test]
    fn a_long_journal_is_rewritten_whole() {
        let artifacts = tempfile::tempdir().expect("tempdir");
        let mut open = Open {
            path: artifacts.path().join("s.json"),
            file: LedgerFile {
                suite_id: "s".into(),
                supervisor_pid: 1,
                supervisor_start: None,
                groups: Vec::new(),
                runs: Vec::new(),
            },
            journal: None,
            appended: 0,
            failing: false,
        };
        rewrite(&mut open).expect("rewrite");
        for i in 0..200 {
            let run = LedgerRun {
                run_id: RunId::new(format!("r{i}")),
                run_dir: "/runs".into(),
            };
            persist(&mut open, JournalChange::OpenRun(run));
            persist(
                &mut open,
                JournalChange::CloseRun(RunId::new(format!("r{i}"))),
            );
        }
        let text = fs::read_to_string(&open.path).expect("ledger");
        assert!(text.lines().count() <= 65, "{} lines", text.lines().count());
        assert_eq!(parse(text.as_bytes()).expect("ledger"), open.file);
        assert!(open.file.runs.is_empty());
    }
}
