//! Starting one harness command: `sh -c <cmd>` in its own process group (or under a PTY, which
//! makes it a session and group leader), stdout and stderr into one pipe read by the pump, the
//! group registered before anything else can go wrong.
//!
//! Every process gets [`HARNESS_TAG_VAR`] set to a token unique to this spawn, so that teardown can
//! find descendants that left the group (`setsid`) and attribute them to this command, even while
//! other commands of the same run are being torn down at the same moment.

use super::exit::ExitStatus;
use super::output::{spawn_pump, OutputHub, PumpHandle};
use super::registry;
use super::spec::CommandSpec;
use std::fs::{File, OpenOptions};
use std::path::Path;
use tokio::sync::watch;

/// The environment variable carrying the per-spawn token.
pub const HARNESS_TAG_VAR: &str = "BUGATTI_HARNESS_TAG";

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("command `{command}`: working directory {cwd} does not exist or is not a directory")]
    Cwd { command: String, cwd: String },
    #[error("command `{command}`: cannot open its log {path}: {source}")]
    Log {
        command: String,
        path: String,
        source: std::io::Error,
    },
    #[error("command `{command}`: cannot start `sh -c {cmd}`: {reason}")]
    Start {
        command: String,
        cmd: String,
        reason: String,
    },
}

/// A started process group.
pub struct Running {
    pub pid: i32,
    pub pgid: i32,
    /// `Some` once the leader exited (set by the waiter, an event, not a poll).
    pub exit: watch::Receiver<Option<ExitStatus>>,
    pub pump: PumpHandle,
    /// The value of [`HARNESS_TAG_VAR`] in its environment.
    pub tag: String,
    /// Held until teardown: dropping the master hangs up the PTY session.
    /// (In a mutex only to make `Running` shareable across awaits: the master is not `Sync`.)
    pty_master: std::sync::Mutex<Option<Box<dyn portable_pty::MasterPty + Send>>>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("pid", &self.pid)
            .field("pgid", &self.pgid)
            .field("tag", &self.tag)
            .field("pty", &self.pty_master.lock().is_ok_and(|m| m.is_some()))
            .finish()
    }
}

impl Running {
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

    /// Closes the PTY (if any) once the group is gone.
    pub fn release_pty(&mut self) {
        if let Ok(mut master) = self.pty_master.lock() {
            *master = None;
        }
    }
}

/// Opens `logs/<name>.log` for appending (restarts add to the same file).
pub fn open_log(spec: &CommandSpec) -> Result<File, SpawnError> {
    let err = |source| SpawnError::Log {
        command: spec.name.clone(),
        path: spec.log_path.display().to_string(),
        source,
    };
    if let Some(dir) = spec.log_path.parent() {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.log_path)
        .map_err(err)
}

fn check_cwd(spec: &CommandSpec) -> Result<(), SpawnError> {
    if Path::new(&spec.cwd).is_dir() {
        Ok(())
    } else {
        Err(SpawnError::Cwd {
            command: spec.name.clone(),
            cwd: spec.cwd.display().to_string(),
        })
    }
}

/// Spawns `spec` (must run inside a tokio runtime). `label` names the group in the registry.
pub fn spawn(spec: &CommandSpec, hub: &OutputHub, label: &str) -> Result<Running, SpawnError> {
    check_cwd(spec)?;
    let log = open_log(spec)?;
    let tag = uuid::Uuid::now_v7().to_string();
    if spec.pty {
        spawn_pty(spec, hub, label, log, tag)
    } else {
        spawn_piped(spec, hub, label, log, tag)
    }
}

fn start_error(spec: &CommandSpec, reason: impl std::fmt::Display) -> SpawnError {
    SpawnError::Start {
        command: spec.name.clone(),
        cmd: spec.cmd.clone(),
        reason: reason.to_string(),
    }
}

/// Kernel buffer of a command's output pipe.
const PIPE_SIZE: i32 = 1 << 20;

fn spawn_piped(
    spec: &CommandSpec,
    hub: &OutputHub,
    label: &str,
    log: File,
    tag: String,
) -> Result<Running, SpawnError> {
    let (read_end, write_end) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| start_error(spec, e))?;
    // A larger pipe means fewer, larger reads when a command floods its output (best effort:
    // the kernel may refuse above /proc/sys/fs/pipe-max-size).
    #[cfg(target_os = "linux")]
    let _ = nix::fcntl::fcntl(&read_end, nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
    let stderr_end = write_end.try_clone().map_err(|e| start_error(spec, e))?;
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(&spec.cmd)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env(HARNESS_TAG_VAR, &tag)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::from(write_end))
        .stderr(std::process::Stdio::from(stderr_end))
        .process_group(0);
    let mut child = command.spawn().map_err(|e| start_error(spec, e))?;
    // Our copies of the write end must close, or the pump never sees end-of-file.
    drop(command);
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| start_error(spec, "the child has no pid"))?;
    registry::register(pid, pid, label);
    let pump = match spawn_pump(
        &spec.name,
        Box::new(File::from(read_end)),
        log,
        spec.secrets.clone(),
        hub.clone(),
    ) {
        Ok(p) => p,
        Err(e) => {
            let _ = super::group::signal_group(pid, nix::sys::signal::Signal::SIGKILL);
            return Err(start_error(spec, e));
        }
    };
    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(async move {
        let status = match child.wait().await {
            Ok(s) => ExitStatus::from_std(s),
            Err(e) => ExitStatus::Unknown(e.to_string()),
        };
        let _ = exit_tx.send(Some(status));
    });
    Ok(Running {
        pid,
        pgid: pid,
        exit: exit_rx,
        pump,
        tag,
        pty_master: std::sync::Mutex::new(None),
    })
}

fn spawn_pty(
    spec: &CommandSpec,
    hub: &OutputHub,
    label: &str,
    log: File,
    tag: String,
) -> Result<Running, SpawnError> {
    use portable_pty::{native_pty_system, CommandBuilder, PtySize};
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 50,
            cols: 200,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(|e| start_error(spec, e))?;
    let mut builder = CommandBuilder::new("sh");
    builder.args(["-c", &spec.cmd]);
    // CommandBuilder would silently fall back to $HOME for a bad cwd; checked above.
    builder.cwd(&spec.cwd);
    // The same environment a piped command gets, spelled out: inherited, then the session's.
    builder.env_clear();
    for (k, v) in std::env::vars_os() {
        builder.env(k, v);
    }
    for (k, v) in &spec.env {
        builder.env(k, v);
    }
    builder.env(HARNESS_TAG_VAR, &tag);
    let mut child = pair
        .slave
        .spawn_command(builder)
        .map_err(|e| start_error(spec, e))?;
    drop(pair.slave);
    let pid = child
        .process_id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| start_error(spec, "the child has no pid"))?;
    registry::register(pid, pid, label);
    let reader = pair.master.try_clone_reader().map_err(|e| {
        let _ = super::group::signal_group(pid, nix::sys::signal::Signal::SIGKILL);
        start_error(spec, e)
    })?;
    let pump =
        spawn_pump(&spec.name, reader, log, spec.secrets.clone(), hub.clone()).map_err(|e| {
            let _ = super::group::signal_group(pid, nix::sys::signal::Signal::SIGKILL);
            start_error(spec, e)
        })?;
    let (exit_tx, exit_rx) = watch::channel(None);
    // portable-pty's wait blocks: a thread of its own.
    let spawned = std::thread::Builder::new()
        .name(format!("wait-{}", spec.name))
        .spawn(move || {
            let status = match child.wait() {
                Ok(s) => ExitStatus::from_pty(&s),
                Err(e) => ExitStatus::Unknown(e.to_string()),
            };
            let _ = exit_tx.send(Some(status));
        });
    if let Err(e) = spawned {
        let _ = super::group::signal_group(pid, nix::sys::signal::Signal::SIGKILL);
        return Err(start_error(spec, e));
    }
    Ok(Running {
        pid,
        pgid: pid,
        exit: exit_rx,
        pump,
        tag,
        pty_master: std::sync::Mutex::new(Some(pair.master)),
    })
}
