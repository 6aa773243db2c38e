//! The agent's process: started through the one spawn function ([`crate::process::handle::start`])
//! in its own process group with piped stdio, registered under its owner (the run, role `agent`),
//! watched for its exit (an event, not a poll), its stderr kept as a transcript and a short tail,
//! and ended by the one termination routine with the agent's ladder
//! ([`crate::process::Ladder::agent`]): stdin closed → short grace → SIGINT to the group → short
//! grace → SIGTERM → grace → SIGKILL (SIGINT before SIGTERM: Claude Code cleans up its tools on
//! SIGINT, not on SIGTERM); then every process that escaped the group (Claude Code runs its Bash
//! tools in their own sessions) but still carries [`AGENT_MARKER_ENV`] is killed.

use super::transcript::SharedTranscript;
use super::{AgentDeath, AgentError, AgentEvent, AGENT_MARKER_ENV};
use crate::model::outcome::TeardownState;
use crate::model::redact::Secrets;
use crate::process::exit::ExitStatus;
use crate::process::handle::{self, EnvMarker, Group, Io, Launch};
use crate::process::owner::Owner;
use crate::process::teardown::{terminate, Ladder};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Bytes of stderr kept for "the agent died" messages.
const STDERR_TAIL: usize = 4 * 1024;

/// How to start the agent.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// Its key in the registry (and its label in messages): `agent claude-code (run …)`. The
    /// owner's run id is also the value of [`AGENT_MARKER_ENV`] by which escapees are found.
    pub owner: Owner,
    /// Where stderr goes (`agent.stderr.log`).
    pub stderr: SharedTranscript,
    /// The command line shown in messages, when the real one is unreadable (a long prompt).
    pub display: Option<String>,
}

impl SpawnSpec {
    /// The command line as a user would type it, for error messages.
    pub fn command_line(&self) -> String {
        if let Some(shown) = &self.display {
            return shown.clone();
        }
        let mut words = vec![self.program.display().to_string()];
        words.extend(self.args.iter().cloned());
        shell_words::join(words)
    }
}

#[derive(Debug)]
pub struct AgentProcess {
    pub command_line: String,
    /// Pid of the leader, which is also the process group id.
    pub pid: i32,
    /// The process group; its stdin stays in it until the termination routine closes it.
    group: Group,
    exit: watch::Receiver<Option<ExitStatus>>,
    stderr_tail: Arc<Mutex<Vec<u8>>>,
    /// Becomes true when stderr reached its end.
    stderr_done: watch::Receiver<bool>,
    stderr: SharedTranscript,
    /// Set while the harness stops the agent: its exit is then expected, not news.
    stopping: Arc<AtomicBool>,
    teardown: Option<TeardownState>,
}

impl AgentProcess {
    /// Whether the agent's leader is stopped by a signal (state `T`, or `t` under a tracer, in
    /// `/proc/<pid>/stat`): a SIGSTOP, a SIGTSTP from another terminal, a debugger. Never the
    /// supervisor's own Ctrl+Z, which stops the supervisor with it and continues both
    /// (`crate::process::job_control`): while the supervisor runs to ask, that is over.
    pub fn stopped_by_signal(&self) -> bool {
        crate::process::group::read_stat(self.pid).is_some_and(|s| matches!(s.state, 'T' | 't'))
    }

    /// Continues a stopped agent's group, so that it can end when asked to (a stopped process
    /// keeps a SIGTERM pending until it is continued).
    pub fn resume(&self) {
        let _ = crate::process::group::signal_group(self.pid, nix::sys::signal::Signal::SIGCONT);
    }

    pub fn spawn(spec: SpawnSpec) -> Result<Self, AgentError> {
        let command_line = spec.command_line();
        let marker = EnvMarker {
            var: AGENT_MARKER_ENV,
            value: spec.owner.scope.id().to_string(),
        };
        let launch = Launch {
            owner: spec.owner.clone(),
            program: spec.program.clone(),
            args: spec.args.clone(),
            cwd: Some(spec.cwd.clone()),
            env: spec.env.clone(),
            inherit_env: false,
            io: Io::Piped {
                stdin: true,
                stdout: true,
                stderr: true,
            },
            marker,
            kill_on_drop: true,
        };
        let mut group = handle::start(launch).map_err(|source| AgentError::Spawn {
            command: command_line.clone(),
            source,
        })?;
        let pid = group.pid();
        let stderr_pipe = group.take_stderr();
        let exit_rx = group.exit_watch();
        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        let (done_tx, stderr_done) = watch::channel(false);
        match stderr_pipe {
            Some(pipe) => {
                let tail = Arc::clone(&stderr_tail);
                let transcript = spec.stderr.clone();
                tokio::spawn(async move {
                    pump_stderr(pipe, transcript, tail).await;
                    let _ = done_tx.send(true);
                });
            }
            None => {
                let _ = done_tx.send(true);
            }
        }
        Ok(Self {
            command_line,
            pid,
            group,
            exit: exit_rx,
            stderr_tail,
            stderr_done,
            stderr: spec.stderr,
            stopping: Arc::new(AtomicBool::new(false)),
            teardown: None,
        })
    }

    /// What the process wrote on stderr so far (its last bytes), as text: some CLIs say on
    /// stderr alone what their stream leaves out (Codex's refused `request_user_input`).
    pub fn stderr_so_far(&self) -> String {
        self.stderr_tail
            .lock()
            .map(|tail| String::from_utf8_lossy(&tail).into_owned())
            .unwrap_or_default()
    }

    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.group.take_stdout()
    }

    /// Writes one line (a newline is added) to the agent's stdin.
    pub async fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self
            .group
            .stdin_mut()
            .ok_or_else(|| std::io::Error::other("the agent's stdin is closed"))?;
        stdin.write_all(line.as_bytes()).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await
    }

    /// The agent's stdin, for a write the caller races against its own deadlines.
    pub fn stdin_mut(&mut self) -> Option<&mut ChildStdin> {
        self.group.stdin_mut()
    }

    pub fn close_stdin(&mut self) {
        self.group.take_stdin();
    }

    /// A receiver that changes once, when the process exits.
    pub fn exit_watch(&self) -> watch::Receiver<Option<ExitStatus>> {
        self.exit.clone()
    }

    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.exit.borrow().clone()
    }

    pub fn is_torn_down(&self) -> bool {
        self.teardown.is_some()
    }

    /// Waits up to `grace` for the exit; true when the process has exited.
    pub async fn wait_exit(&self, grace: Duration) -> bool {
        let mut exit = self.exit.clone();
        let waited = tokio::time::timeout(grace, async move {
            exit.wait_for(|s| s.is_some()).await.is_ok()
        })
        .await;
        matches!(waited, Ok(true))
    }

    /// How a process whose output just ended died: its exit waited for a moment (the output
    /// closes a little before the exit is reaped), then [`Self::death`].
    pub async fn death_once_exited(&self, secrets: &Secrets) -> Option<AgentDeath> {
        self.wait_exit(Duration::from_secs(2)).await;
        self.death(secrets).await
    }

    /// How the process ended, with its stderr tail, redacted. `None` while it runs.
    pub async fn death(&self, secrets: &Secrets) -> Option<AgentDeath> {
        let status = self.exit_status()?;
        Some(death_of(status, self.stderr_done.clone(), &self.stderr_tail, secrets).await)
    }

    /// Sends [`AgentEvent::Exited`] when the process ends without the harness stopping it: how an
    /// agent that dies between steps is noticed at once, by its exit event.
    pub fn notify_unexpected_exit(
        &self,
        events: UnboundedSender<AgentEvent>,
        secrets: Arc<Secrets>,
    ) {
        let mut exit = self.exit.clone();
        let stderr_done = self.stderr_done.clone();
        let tail = Arc::clone(&self.stderr_tail);
        let stopping = Arc::clone(&self.stopping);
        tokio::spawn(async move {
            let status = match exit.wait_for(|s| s.is_some()).await {
                Ok(status) => status.clone(),
                Err(_) => return,
            };
            let Some(status) = status else { return };
            if stopping.load(Ordering::SeqCst) {
                return;
            }
            let death = death_of(status, stderr_done, &tail, &secrets).await;
            if !stopping.load(Ordering::SeqCst) {
                let _ = events.send(AgentEvent::Exited(death));
            }
        });
    }

    /// Stops the agent and everything it started, through the termination routine with the
    /// agent's ladder. Idempotent: a second call returns the first result. A provider with a
    /// gentler first step (Claude Code's interrupt request) sends it before calling this.
    pub async fn stop(&mut self, grace: Duration) -> TeardownState {
        if let Some(state) = self.teardown {
            return state;
        }
        self.stopping.store(true, Ordering::SeqCst);
        let report = terminate(&mut self.group, &Ladder::agent(grace)).await;
        if !report.leaked.is_empty() {
            tracing::warn!(
                "agent `{}`: killed {} process(es) that escaped its process group: {:?}",
                self.command_line,
                report.leaked.len(),
                report.leaked
            );
        }
        let mut done = self.stderr_done.clone();
        let _ = tokio::time::timeout(Duration::from_secs(1), done.wait_for(|d| *d)).await;
        self.stderr.finish();
        self.teardown = Some(report.state);
        report.state
    }
}

async fn death_of(
    status: ExitStatus,
    mut stderr_done: watch::Receiver<bool>,
    tail: &Mutex<Vec<u8>>,
    secrets: &Secrets,
) -> AgentDeath {
    // Stderr ends right after the exit, unless a descendant still holds the pipe.
    let _ = tokio::time::timeout(Duration::from_secs(1), stderr_done.wait_for(|d| *d)).await;
    let tail = tail
        .lock()
        .map(|t| String::from_utf8_lossy(&t).into_owned())
        .unwrap_or_default();
    AgentDeath {
        status: describe(&status),
        stderr_tail: secrets.redact_str(&tail),
    }
}

async fn pump_stderr(
    mut pipe: tokio::process::ChildStderr,
    transcript: SharedTranscript,
    tail: Arc<Mutex<Vec<u8>>>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                transcript.write(&buf[..n]);
                if let Ok(mut tail) = tail.lock() {
                    tail.extend_from_slice(&buf[..n]);
                    if tail.len() > STDERR_TAIL {
                        let cut = tail.len() - STDERR_TAIL;
                        tail.drain(..cut);
                    }
                }
            }
        }
    }
    transcript.flush();
}

/// Reads a stream to its end into a transcript (or nowhere), so that a process being torn down
/// never blocks on a full pipe.
pub fn spawn_drain<R>(mut reader: R, transcript: Option<SharedTranscript>) -> JoinHandle<()>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if let Some(t) = &transcript {
                        t.write(&buf[..n]);
                    }
                }
            }
        }
        if let Some(t) = &transcript {
            t.flush();
        }
    })
}

pub use crate::process::exit::describe;

impl Drop for AgentProcess {
    /// A provider dropped without `close` (its actor killed, a panic): the group's handle kills
    /// it (no grace, but nothing left); its exit is then expected, not news.
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
    }
}
