//! Starting one harness command: a [`Launch`] of `sh -c <cmd>` (piped, or under a PTY) through the
//! one spawn function, [`super::handle::start`], with its output into the pump that writes the
//! command's log and feeds its [`OutputHub`]; and stopping it through the one termination routine.
//!
//! Every harness process gets a fresh [`super::handle::EnvMarker`] (`BUGATTI_HARNESS_TAG`), so that
//! teardown can find descendants that left the group (`setsid`) and attribute them to this
//! command, even while other commands of the same run are being torn down at the same moment.

use super::exit::ExitStatus;
use super::handle::{self, Group, Io, Launch};
use super::output::{spawn_pump, LogTarget, OutputHub, PumpHandle};
use super::owner::Owner;
use super::spec::CommandSpec;
use super::teardown::{self, Ladder, TeardownReport};
use std::fs::{File, OpenOptions};
use std::path::Path;
use std::time::Duration;
use tokio::sync::watch;

/// How long the log pump gets to reach end-of-file after the group is gone.
const DRAIN_WAIT: Duration = Duration::from_secs(2);

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

/// A started harness command: its process group and the pump reading its output.
#[derive(Debug)]
pub struct Running {
    pub group: Group,
    pub pump: PumpHandle,
}

impl Running {
    pub fn pid(&self) -> i32 {
        self.group.pid()
    }

    /// A receiver that changes once, when the leader exits.
    pub fn exit_watch(&self) -> watch::Receiver<Option<ExitStatus>> {
        self.group.exit_watch()
    }

    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.group.exit_status()
    }

    /// Waits for the leader's exit event.
    pub async fn wait(&self) -> ExitStatus {
        self.group.wait().await
    }

    /// Stops the command: its stop signal, `grace` to end (zero: SIGKILL at once), then the
    /// termination routine's kill and sweep; then its output is drained into the log.
    pub async fn stop(
        &mut self,
        stop_signal: nix::sys::signal::Signal,
        grace: Duration,
    ) -> TeardownReport {
        let report =
            teardown::terminate(&mut self.group, &Ladder::harness(stop_signal, grace)).await;
        self.pump.drained(DRAIN_WAIT).await;
        report
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

fn start_error(spec: &CommandSpec, reason: impl std::fmt::Display) -> SpawnError {
    SpawnError::Start {
        command: spec.name.clone(),
        cmd: spec.cmd.clone(),
        reason: reason.to_string(),
    }
}

/// Spawns `spec` (must run inside a tokio runtime), its group registered under `owner`.
pub fn spawn(spec: &CommandSpec, hub: &OutputHub, owner: Owner) -> Result<Running, SpawnError> {
    check_cwd(spec)?;
    let log = open_log(spec)?;
    let io = if spec.pty {
        Io::Pty {
            rows: 50,
            cols: 200,
        }
    } else {
        Io::Merged
    };
    let mut launch = Launch::shell(owner, spec.cmd.clone(), io);
    launch.cwd = Some(spec.cwd.clone());
    launch.env = spec.env.clone();
    let mut group = handle::start(launch).map_err(|e| start_error(spec, e))?;
    let pumped = match group.take_output() {
        Some(output) => {
            let log = LogTarget {
                file: log,
                path: spec.log_path.clone(),
                max_bytes: spec.max_log_bytes,
            };
            spawn_pump(&spec.name, output, log, spec.secrets.clone(), hub.clone())
        }
        None => Err(std::io::Error::other("no output stream")),
    };
    match pumped {
        Ok(pump) => Ok(Running { group, pump }),
        Err(e) => {
            teardown::abandon(&mut group);
            Err(start_error(spec, e))
        }
    }
}
