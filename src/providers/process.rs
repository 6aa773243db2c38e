//! The agent's process: spawned in its own process group with piped stdio, registered for the
//! final sweep, watched for its exit (an event, not a poll), its stderr kept as a transcript and a
//! short tail, and torn down like a harness command:
//! stdin closed → short grace → SIGINT to the group → short grace → SIGTERM → grace → SIGKILL
//! (SIGINT before SIGTERM: Claude Code cleans up its tools on SIGINT, not on SIGTERM); then any member
//! left in the group is killed, and so is every process that escaped the group (Claude Code runs
//! its Bash tools in their own sessions) but still carries [`AGENT_MARKER_ENV`] in its environment.

use super::transcript::SharedTranscript;
use super::{AgentDeath, AgentError, AgentEvent, AGENT_MARKER_ENV};
use crate::model::outcome::TeardownState;
use crate::process::{group, registry};
use crate::report::redact::Secrets;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, ChildStdout, Command};
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
    /// For the registry and messages: `agent claude-code (run …)`.
    pub label: String,
    pub run_id: String,
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
    run_id: String,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
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
    pub fn spawn(spec: SpawnSpec) -> Result<Self, AgentError> {
        let command_line = spec.command_line();
        let mut command = Command::new(&spec.program);
        command
            .args(&spec.args)
            .env_clear()
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&spec.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|source| AgentError::Spawn {
            command: command_line.clone(),
            source,
        })?;
        let Some(pid) = child.id().map(|p| p as i32) else {
            return Err(AgentError::Spawn {
                command: command_line,
                source: std::io::Error::other("the process ended before its pid was read"),
            });
        };
        registry::register(pid, pid, spec.label.clone());
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr_pipe = child.stderr.take();
        let (exit_tx, exit_rx) = watch::channel(None);
        tokio::spawn(async move {
            let status = child
                .wait()
                .await
                .unwrap_or_else(|_| ExitStatus::from_raw(0xff00));
            let _ = exit_tx.send(Some(status));
        });
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
            run_id: spec.run_id,
            stdin,
            stdout,
            exit: exit_rx,
            stderr_tail,
            stderr_done,
            stderr: spec.stderr,
            stopping: Arc::new(AtomicBool::new(false)),
            teardown: None,
        })
    }

    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.stdout.take()
    }

    /// Writes one line (a newline is added) to the agent's stdin.
    pub async fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the agent's stdin is closed"))?;
        stdin.write_all(line.as_bytes()).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await
    }

    /// The agent's stdin, for a write the caller races against its own deadlines.
    pub fn stdin_mut(&mut self) -> Option<&mut ChildStdin> {
        self.stdin.as_mut()
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// A receiver that changes once, when the process exits.
    pub fn exit_watch(&self) -> watch::Receiver<Option<ExitStatus>> {
        self.exit.clone()
    }

    pub fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
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
                Ok(status) => *status,
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

    /// Stops the agent and everything it started. Idempotent: a second call returns the first
    /// result. A provider with a gentler first step (Claude Code's interrupt request) sends it
    /// before calling this.
    pub async fn stop(&mut self, grace: Duration) -> TeardownState {
        if let Some(state) = self.teardown {
            return state;
        }
        self.stopping.store(true, Ordering::SeqCst);
        self.close_stdin();
        let mut state = TeardownState::Clean;
        // An idle agent ends on EOF at once, and one interrupted by SIGINT cleans up quickly:
        // these two phases are short; the SIGTERM phase gets the whole grace.
        let gentle = grace.min(Duration::from_secs(2));
        if !self.wait_exit(gentle).await {
            let _ = group::signal_group(self.pid, Signal::SIGINT);
            if !self.wait_exit(gentle).await {
                state = TeardownState::Killed;
                let _ = group::signal_group(self.pid, Signal::SIGTERM);
                if !self.wait_exit(grace).await {
                    let _ = group::signal_group(self.pid, Signal::SIGKILL);
                    self.wait_exit(grace.max(Duration::from_secs(2))).await;
                }
            }
        }
        // The leader is gone; members of its group (background jobs) must not outlive it.
        if !group::live_members(self.pid).is_empty() {
            let _ = group::signal_group(self.pid, Signal::SIGKILL);
            state = TeardownState::Killed;
        }
        let escaped = kill_escaped(&self.run_id);
        if !escaped.is_empty() {
            tracing::warn!(
                "agent `{}`: killed {} process(es) that escaped its process group: {:?}",
                self.command_line,
                escaped.len(),
                escaped
            );
            state = TeardownState::Leaked;
        }
        settle_survivors(self.pid, &self.run_id).await;
        registry::unregister(self.pid);
        let mut done = self.stderr_done.clone();
        let _ = tokio::time::timeout(Duration::from_secs(1), done.wait_for(|d| *d)).await;
        self.stderr.finish();
        self.teardown = Some(state);
        state
    }
}

/// SIGKILLs every live process carrying the agent marker for `run_id`; returns their pids.
pub fn kill_escaped(run_id: &str) -> Vec<i32> {
    group::kill_descendants_with_env(AGENT_MARKER_ENV, run_id)
}

/// Waits (bounded) until SIGKILLed processes are really gone, reaping those re-parented to us as
/// subreaper. Processes that are not our children give no exit event, so this looks at `/proc`
/// a few times; it only runs after a kill, at teardown.
pub(crate) async fn settle_survivors(pgid: i32, run_id: &str) -> Vec<i32> {
    let mut escaped_ever: Vec<i32> = Vec::new();
    for _ in 0..100 {
        let snapshot = group::ProcSnapshot::take();
        snapshot.reap_adopted_zombies(&registry::leader_pids());
        let group_left = snapshot.live_members(pgid);
        let escaped = snapshot.live_descendants_with_env(AGENT_MARKER_ENV, run_id);
        if group_left.is_empty() && escaped.is_empty() {
            return escaped_ever;
        }
        for pid in group_left.iter().chain(escaped.iter()) {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        escaped_ever.extend(escaped.iter().filter(|p| !group_left.contains(p)));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    escaped_ever
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
        status: describe(status),
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

/// `exit code 3`, `signal 9 (SIGKILL)`.
pub fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit code {code}");
    }
    match status.signal() {
        Some(sig) => match Signal::try_from(sig) {
            Ok(name) => format!("signal {sig} ({})", name.as_str()),
            Err(_) => format!("signal {sig}"),
        },
        None => "unknown exit status".to_string(),
    }
}

impl Drop for AgentProcess {
    /// A provider dropped without `close` (its actor killed, a panic): no grace, but nothing left.
    fn drop(&mut self) {
        if self.teardown.is_none() {
            self.stopping.store(true, Ordering::SeqCst);
            let _ = group::signal_group(self.pid, Signal::SIGKILL);
            kill_escaped(&self.run_id);
            registry::unregister(self.pid);
        }
    }
}
