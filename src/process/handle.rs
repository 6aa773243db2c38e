#![warn(missing_docs)]
//! The one way the supervisor starts a process: [`start`] turns a [`Launch`] into a [`Group`].
//!
//! Every child (harness command, readiness `exec` attempt, checkpoint command, agent, `shell` step)
//! is started here, in a process group of its own (or as the session leader of a PTY), with an
//! environment marker ([`EnvMarker`]) by which escapees are found later, and is registered under
//! its typed [`Owner`] before the handle is returned. The handle is ended by the one termination
//! routine, [`super::teardown::terminate`], whose escalation is a [`super::teardown::Ladder`]. A
//! handle dropped without that (its actor killed, a panic) kills its group at once when it was
//! launched with `kill_on_drop`; otherwise the registry's final sweep does.

use super::exit::ExitStatus;
use super::ledger;
use super::owner::Owner;
use super::registry;
use super::teardown::{self, TeardownReport};
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::watch;

/// The environment variable carrying a harness spawn's own token (see [`EnvMarker::fresh`]).
pub const HARNESS_TAG_VAR: &str = "BUGATTI_HARNESS_TAG";

/// The environment variable every agent process (and so every tool command it runs) carries, with
/// the run id as value. Teardown finds the agent's escaped descendants by it. It is distinct from
/// `BUGATTI_RUN_ID`, which the harness commands of the same run carry too and must not be killed
/// with the agent. (Here, below both: the agent's process is started with it, and a replayed
/// shell action is started without it.)
pub const AGENT_MARKER_ENV: &str = "BUGATTI_AGENT_RUN_ID";

/// `var=value` in a child's environment (inherited by everything it starts): how teardown finds
/// descendants that left the process group (`setsid`, double fork).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvMarker {
    /// The variable's name (`BUGATTI_HARNESS_TAG`, `BUGATTI_AGENT_RUN_ID`).
    pub var: &'static str,
    /// Its value: a per-spawn token or the run id.
    pub value: String,
}

impl EnvMarker {
    /// A token unique to this spawn ([`HARNESS_TAG_VAR`]): attributes an escapee to this very
    /// process even while other commands of the same run are torn down at the same moment.
    pub fn fresh() -> Self {
        Self {
            var: HARNESS_TAG_VAR,
            value: uuid::Uuid::now_v7().to_string(),
        }
    }
}

/// Where the child's standard streams go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Io {
    /// stdin from /dev/null; stdout and stderr into one pipe ([`Group::take_output`]).
    Merged,
    /// Each stream piped (taken with [`Group::take_stdin`] and friends) or /dev/null.
    Piped {
        /// Pipe stdin ([`Group::take_stdin`]); otherwise /dev/null.
        stdin: bool,
        /// Pipe stdout ([`Group::take_stdout`]); otherwise /dev/null.
        stdout: bool,
        /// Pipe stderr ([`Group::take_stderr`]); otherwise /dev/null.
        stderr: bool,
    },
    /// A pseudo-terminal: the child leads a new session; its output is [`Group::take_output`].
    Pty {
        /// Terminal height.
        rows: u16,
        /// Terminal width.
        cols: u16,
    },
}

/// Everything needed to start one process group.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Whose group it is: its key in the registry and the ledger.
    pub owner: Owner,
    /// The program (looked up on `PATH` when it has no `/`).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// `None`: the supervisor's own directory.
    pub cwd: Option<PathBuf>,
    /// Set after the inherited environment (or instead of it, without `inherit_env`).
    pub env: Vec<(String, String)>,
    /// Start from the supervisor's environment (`false`: only `env` and the marker).
    pub inherit_env: bool,
    /// Where the standard streams go.
    pub io: Io,
    /// Set in the child's environment; the termination routine sweeps for it.
    pub marker: EnvMarker,
    /// Kill the group when the handle is dropped without [`super::teardown::terminate`].
    pub kill_on_drop: bool,
}

impl Launch {
    /// The `BUGATTI_RUN_ID` the child is started with: set in `env`, else its owner's run. Read
    /// from the spec, never from `/proc` (a just-spawned child's environ may still be empty).
    pub fn run_id(&self) -> Option<&str> {
        self.env
            .iter()
            .rev()
            .find(|(name, _)| name == "BUGATTI_RUN_ID")
            .map(|(_, value)| value.as_str())
            .or_else(|| self.owner.scope.run_id().map(|id| id.as_str()))
    }

    /// `sh -c <script>`, inheriting the environment, with a fresh marker.
    pub fn shell(owner: Owner, script: impl Into<String>, io: Io) -> Self {
        Self {
            owner,
            program: PathBuf::from("sh"),
            args: vec!["-c".into(), script.into()],
            cwd: None,
            env: Vec::new(),
            inherit_env: true,
            io,
            marker: EnvMarker::fresh(),
            kill_on_drop: false,
        }
    }
}

/// A started process group: its leader's pid (which is also the pgid), its owner and marker, its
/// exit event, and whatever streams were asked for.
pub struct Group {
    pid: i32,
    owner: Owner,
    marker: EnvMarker,
    /// `Some` once the leader exited (set by the waiter, an event, not a poll).
    exit: watch::Receiver<Option<ExitStatus>>,
    pub(super) stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    /// The merged pipe or the PTY's reader.
    /// (In a mutex only to make `Group` shareable across awaits: the reader is not `Sync`.)
    output: std::sync::Mutex<Option<Box<dyn Read + Send>>>,
    /// Held until teardown: dropping the master hangs up the PTY session.
    /// (In a mutex only to make `Group` shareable across awaits: the master is not `Sync`.)
    pty_master: std::sync::Mutex<Option<Box<dyn portable_pty::MasterPty + Send>>>,
    kill_on_drop: bool,
    /// Set by the termination routine; a second call returns it.
    pub(super) report: Option<TeardownReport>,
    /// Where pid allocation stood before the leader was spawned: everything the group started
    /// has a later pid, so its teardown looks among those only.
    pub(super) since: Option<super::group::PidMark>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("pid", &self.pid)
            .field("owner", &self.owner)
            .field("marker", &self.marker)
            .field("exit", &*self.exit.borrow())
            .finish()
    }
}

impl Group {
    /// The leader's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }
    /// The process group id (the leader's pid).
    pub fn pgid(&self) -> i32 {
        self.pid
    }
    /// Whose group it is.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }
    /// The environment marker its members carry.
    pub fn marker(&self) -> &EnvMarker {
        &self.marker
    }
    /// A receiver that changes once, when the leader exits.
    pub fn exit_watch(&self) -> watch::Receiver<Option<ExitStatus>> {
        self.exit.clone()
    }
    /// The leader's exit, once it has exited.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.exit.borrow().clone()
    }
    /// Waits for the leader's exit event.
    pub async fn wait(&self) -> ExitStatus {
        let mut rx = self.exit.clone();
        let status = match rx.wait_for(|s| s.is_some()).await {
            Ok(s) => s
                .clone()
                .unwrap_or_else(|| ExitStatus::Unknown("no status".into())),
            Err(_) => ExitStatus::Unknown("waiter gone".into()),
        };
        status
    }
    /// Takes the piped stdin (closing it is then the taker's business).
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }
    /// The piped stdin, left in place: the agent ladder's first rung closes it.
    pub fn stdin_mut(&mut self) -> Option<&mut ChildStdin> {
        self.stdin.as_mut()
    }
    /// Takes the piped stdout.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.stdout.take()
    }
    /// Takes the piped stderr.
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.stderr.take()
    }
    /// The merged output pipe ([`Io::Merged`]) or the PTY's reader ([`Io::Pty`]).
    pub fn take_output(&mut self) -> Option<Box<dyn Read + Send>> {
        self.output.lock().ok().and_then(|mut o| o.take())
    }
    /// A writer into the PTY ([`Io::Pty`]): what the child reads as typed input. `None` for piped
    /// groups, or once taken.
    pub fn take_pty_writer(&self) -> Option<Box<dyn std::io::Write + Send>> {
        let master = self.pty_master.lock().ok()?;
        master.as_ref()?.take_writer().ok()
    }
    /// Whether the PTY's line discipline is in canonical mode (input is read a line at a time,
    /// at most 4095 bytes of it); `None` for piped groups or when it cannot be read.
    pub fn pty_canonical(&self) -> Option<bool> {
        let master = self.pty_master.lock().ok()?;
        let termios = master.as_ref()?.get_termios()?;
        // portable-pty's nix is not ours: compare the raw flag bits.
        Some(termios.local_flags.bits() & libc::ICANON != 0)
    }
    /// How the termination routine ended it, once it has.
    pub fn report(&self) -> Option<&TeardownReport> {
        self.report.as_ref()
    }
    /// Closes the PTY (if any) once the group is gone.
    pub(super) fn release_pty(&self) {
        if let Ok(mut master) = self.pty_master.lock() {
            *master = None;
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.report.is_none() && self.kill_on_drop {
            teardown::abandon(self);
        }
    }
}

/// Kernel buffer of a merged output pipe.
const PIPE_SIZE: i32 = 1 << 20;

/// Starts `launch` (inside a tokio runtime). The group is registered under its owner before this
/// returns; on any error after the process started, the group is killed.
pub fn start(launch: Launch) -> std::io::Result<Group> {
    match launch.io {
        Io::Pty { rows, cols } => start_pty(launch, rows, cols),
        _ => start_piped(launch, Vec::new()),
    }
}

/// At most this many descriptors are passed (3 … 10).
const MAX_PASSED_FDS: usize = 8;

/// [`start`] with `fds` given to the child as its descriptors 3, 4, … in order (Chromium's
/// `--remote-debugging-pipe` reads fd 3 and writes fd 4). Not for a PTY launch. Our copies are
/// closed once the child has its own.
pub fn start_with_fds(launch: Launch, fds: Vec<OwnedFd>) -> std::io::Result<Group> {
    if matches!(launch.io, Io::Pty { .. }) || fds.len() > MAX_PASSED_FDS {
        return Err(std::io::Error::other(
            "descriptors are passed to a piped launch only, at most 8",
        ));
    }
    start_piped(launch, fds)
}

/// In the child, between fork and exec: `fds[i]` becomes descriptor `3 + i`. Each source is
/// first copied above the targets, so that a source that already is 3 or 4 is not overwritten
/// before it is moved. Allocates nothing (it runs in a forked child).
fn pass_fds(fds: &[i32]) -> std::io::Result<()> {
    let mut high = [0i32; MAX_PASSED_FDS];
    for (slot, fd) in high.iter_mut().zip(fds) {
        // SAFETY: fcntl(F_DUPFD_CLOEXEC) is async-signal-safe and touches no memory.
        let copy = unsafe { libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 64) };
        if copy < 0 {
            return Err(std::io::Error::last_os_error());
        }
        *slot = copy;
    }
    for (target, fd) in (3..).zip(high.iter().take(fds.len())) {
        // SAFETY: dup2 is async-signal-safe; the new descriptor is not close-on-exec.
        if unsafe { libc::dup2(*fd, target) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The signals whose disposition a child gets back to the default, as a PTY launch's child does
/// (portable-pty resets the same ones). A process started as a script's background job inherits
/// SIGINT and SIGQUIT ignored, and under `nohup` SIGHUP; an ignored disposition survives exec
/// (a handler does not). The supervisor catches those four itself but not SIGALRM, and a caller
/// of this library (a test) may catch none: without this its children could not hear a
/// `stop_signal = "SIGINT"` or the agent's SIGINT rung, and a shell could not even trap them.
const RESET_SIGNALS: [libc::c_int; 6] = [
    libc::SIGCHLD,
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGALRM,
];

/// Whether this process ignores one of [`RESET_SIGNALS`] (a child would inherit that). A handler
/// is not inherited: exec resets it to the default.
fn ignores_a_reset_signal() -> bool {
    RESET_SIGNALS.iter().any(|&signal| {
        // SAFETY: sigaction with no new action only reads the current one into `current`.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut current) == 0
                && current.sa_sigaction == libc::SIG_IGN
        }
    })
}

/// In the child, between fork and exec: [`RESET_SIGNALS`] back to their default action (the
/// signal mask is emptied by the standard library's spawn already).
fn default_signal_dispositions() -> std::io::Result<()> {
    for signal in RESET_SIGNALS {
        // SAFETY: signal(2) with SIG_DFL is async-signal-safe and touches no memory.
        if unsafe { libc::signal(signal, libc::SIG_DFL) } == libc::SIG_ERR {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The program a launch names without a `/` (`bash`, `sh`), found on the PATH its child gets,
/// as `execvp` would find it. The standard library spawns a child whose environment sets PATH
/// with a fork of this whole process (it must search that PATH itself) unless the program is a
/// path: with the path found here it uses `posix_spawn` (a vfork), which copies none of this
/// process's page tables. That fork was an eighth of a replayed night's CPU. `None` (the
/// standard library searches) when the name has a `/`, or when the search would depend on the
/// child's directory (a relative PATH entry) or finds nothing.
fn on_path(launch: &Launch) -> Option<PathBuf> {
    let name = launch.program.to_str()?;
    if name.is_empty() || name.contains('/') {
        return None;
    }
    let given = launch
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone());
    let path = match given {
        Some(path) => path,
        None if launch.inherit_env => std::env::var("PATH").ok()?,
        None => return None,
    };
    for dir in path.split(':') {
        if !dir.starts_with('/') {
            // An empty or relative entry is the child's directory: leave the search to exec.
            return None;
        }
        let candidate = Path::new(dir).join(name);
        if is_executable_file(&candidate) {
            return Some(candidate);
        }
    }
    None
}

/// A regular file (after symlinks) someone may execute.
fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn no_pid() -> std::io::Error {
    std::io::Error::other("the child has no pid")
}

fn start_piped(launch: Launch, fds: Vec<OwnedFd>) -> std::io::Result<Group> {
    let since = super::group::pid_mark();
    let mut command = match on_path(&launch) {
        Some(found) => {
            let mut command = tokio::process::Command::new(found);
            // argv[0] as the launch named it, as an exec through PATH gives it.
            command.arg0(&launch.program);
            command
        }
        None => tokio::process::Command::new(&launch.program),
    };
    command.args(&launch.args);
    // Only when there is something to do in the child: without a `pre_exec` the standard
    // library spawns with posix_spawn, cheaper than a fork of this process.
    if !fds.is_empty() || ignores_a_reset_signal() {
        let raw: Vec<i32> = fds.iter().map(|fd| fd.as_raw_fd()).collect();
        // SAFETY: the closure only calls async-signal-safe functions (signal, fcntl, dup2) and
        // allocates nothing (`raw` was built before the fork).
        unsafe {
            command.pre_exec(move || {
                default_signal_dispositions()?;
                pass_fds(&raw)
            });
        }
    }
    if let Some(cwd) = &launch.cwd {
        command.current_dir(cwd);
    }
    if !launch.inherit_env {
        command.env_clear();
    }
    command
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .env(launch.marker.var, &launch.marker.value)
        .process_group(0);
    let mut merged_reader = None;
    match launch.io {
        Io::Merged => {
            let (read_end, write_end) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
            // A larger pipe means fewer, larger reads when a command floods its output (best
            // effort: the kernel may refuse above /proc/sys/fs/pipe-max-size).
            #[cfg(target_os = "linux")]
            let _ = nix::fcntl::fcntl(&read_end, nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
            let stderr_end = write_end.try_clone()?;
            command
                .stdin(Stdio::null())
                .stdout(Stdio::from(write_end))
                .stderr(Stdio::from(stderr_end));
            merged_reader = Some(read_end);
        }
        Io::Piped {
            stdin,
            stdout,
            stderr,
        } => {
            let pick = |piped: bool| if piped { Stdio::piped() } else { Stdio::null() };
            command
                .stdin(pick(stdin))
                .stdout(pick(stdout))
                .stderr(pick(stderr));
        }
        Io::Pty { .. } => unreachable!("start_pty"),
    }
    let before = ledger::BootTick::now();
    let mut child = command.spawn()?;
    let started = before.start_until(ledger::BootTick::now());
    // Our copies of the write end must close, or the reader never sees end-of-file.
    drop(command);
    drop(fds);
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(no_pid)?;
    registry::register(pid, pid, &launch.owner, launch.run_id(), started);
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(async move {
        let status = match child.wait().await {
            Ok(s) => ExitStatus::from_std(s),
            Err(e) => ExitStatus::Unknown(e.to_string()),
        };
        let _ = exit_tx.send(Some(status));
    });
    Ok(Group {
        pid,
        owner: launch.owner,
        marker: launch.marker,
        exit: exit_rx,
        stdin,
        stdout,
        stderr,
        output: std::sync::Mutex::new(
            merged_reader.map(|fd| Box::new(std::fs::File::from(fd)) as Box<dyn Read + Send>),
        ),
        pty_master: std::sync::Mutex::new(None),
        kill_on_drop: launch.kill_on_drop,
        report: None,
        since,
    })
}

fn start_pty(launch: Launch, rows: u16, cols: u16) -> std::io::Result<Group> {
    let since = super::group::pid_mark();
    use portable_pty::{native_pty_system, CommandBuilder, PtySize};
    if let Some(cwd) = &launch.cwd {
        // CommandBuilder would silently fall back to $HOME for a bad cwd.
        if !cwd.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("working directory {} is not a directory", cwd.display()),
            ));
        }
    }
    let pair = native_pty_system()
        .openpty(PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(std::io::Error::other)?;
    let mut builder = CommandBuilder::new(&launch.program);
    builder.args(&launch.args);
    if let Some(cwd) = &launch.cwd {
        builder.cwd(cwd);
    }
    // The same environment a piped child gets, spelled out: inherited, then the launch's.
    builder.env_clear();
    if launch.inherit_env {
        for (k, v) in std::env::vars_os() {
            builder.env(k, v);
        }
    }
    for (k, v) in &launch.env {
        builder.env(k, v);
    }
    builder.env(launch.marker.var, &launch.marker.value);
    let before = ledger::BootTick::now();
    let mut child = pair
        .slave
        .spawn_command(builder)
        .map_err(std::io::Error::other)?;
    let started = before.start_until(ledger::BootTick::now());
    drop(pair.slave);
    let pid = child
        .process_id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(no_pid)?;
    registry::register(pid, pid, &launch.owner, launch.run_id(), started);
    let (exit_tx, exit_rx) = watch::channel(None);
    let mut group = Group {
        pid,
        owner: launch.owner,
        marker: launch.marker,
        exit: exit_rx,
        stdin: None,
        stdout: None,
        stderr: None,
        output: std::sync::Mutex::new(None),
        pty_master: std::sync::Mutex::new(None),
        // Until the waiter runs, an error below must not leave the group behind.
        kill_on_drop: true,
        report: None,
        since,
    };
    group.output = std::sync::Mutex::new(Some(
        pair.master
            .try_clone_reader()
            .map_err(std::io::Error::other)?,
    ));
    // portable-pty's wait blocks: a thread of its own.
    std::thread::Builder::new()
        .name(format!("wait-{pid}"))
        .spawn(move || {
            let status = match child.wait() {
                Ok(s) => ExitStatus::from_pty(&s),
                Err(e) => ExitStatus::Unknown(e.to_string()),
            };
            let _ = exit_tx.send(Some(status));
        })?;
    group.pty_master = std::sync::Mutex::new(Some(pair.master));
    group.kill_on_drop = launch.kill_on_drop;
    Ok(group)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::owner::{Role, Scope};

    #[tokio::test]
    async fn a_signal_ignored_by_the_supervisor_is_at_its_default_in_the_child() {
        // SIGALRM stands for what a background job or `nohup` ignores (SIGINT, SIGQUIT, SIGHUP):
        // nothing else in this process uses it, so ignoring it for a moment disturbs no test.
        let dir = tempfile::tempdir().expect("tempdir");
        let status = dir.path().join("status");
        let script = format!("grep SigIgn /proc/$$/status > '{}'", status.display());
        let owner = Owner::new(
            Scope::run(format!("handle-test-{}", std::process::id())),
            Role::Other("signals".into()),
        );
        // SAFETY: setting a disposition is process-wide but affects only SIGALRM, restored below.
        unsafe { libc::signal(libc::SIGALRM, libc::SIG_IGN) };
        let started = start(Launch::shell(owner, &script, Io::Merged));
        // SAFETY: as above.
        unsafe { libc::signal(libc::SIGALRM, libc::SIG_DFL) };
        let group = started.expect("start");
        assert_eq!(group.wait().await, ExitStatus::Code(0));
        let text = std::fs::read_to_string(&status).expect("the child wrote its status");
        let hex = text.trim().trim_start_matches("SigIgn:").trim();
        let ignored = u64::from_str_radix(hex, 16).expect("a hex mask");
        assert_eq!(ignored & (1 << (libc::SIGALRM - 1)), 0, "ignored: {text}");
    }

    #[test]
    fn a_bare_program_name_is_found_on_the_path_its_child_gets() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tool = dir.path().join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").expect("write");
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "data").expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let owner = Owner::new(Scope::run("r"), Role::Command("c".into()));
        let mut launch = Launch::shell(owner, "true", Io::Merged);
        let path = format!("/nonexistent:{}", dir.path().display());
        launch.program = PathBuf::from("tool");
        launch.env = vec![("PATH".into(), path.clone())];
        assert_eq!(on_path(&launch), Some(tool.clone()));
        // Not executable: not what exec would run.
        launch.program = PathBuf::from("plain");
        assert_eq!(on_path(&launch), None);
        // A name with a slash is a path already; a relative entry depends on the child's cwd.
        launch.program = tool.clone();
        assert_eq!(on_path(&launch), None);
        launch.program = PathBuf::from("tool");
        launch.env = vec![("PATH".into(), format!("bin:{path}"))];
        assert_eq!(on_path(&launch), None);
        // Without a PATH of its own, a child that inherits the environment searches ours.
        launch.env.clear();
        launch.program = PathBuf::from("sh");
        assert!(on_path(&launch).is_some_and(|p| p.ends_with("sh") && p.is_absolute()));
        launch.inherit_env = false;
        assert_eq!(on_path(&launch), None);
    }
}
