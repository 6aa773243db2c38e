//! One console session: a command the agent started with `exec_command`, under a PTY (or with
//! pipes), through the one spawn function ([`crate::process::handle::start`]).
//!
//! The supervisor's one output pump ([`crate::process::output`]) reads the session's output: it
//! redacts secrets over the whole stream, writes `console/<id>.log` under `[supervisor]
//! max_log_bytes` (head, then a rolling tail, as a harness command's log), and hands the same
//! redacted bytes to a tap that keeps the unread part in a bounded head+tail [`Pending`] buffer
//! and bumps a sequence number on a watch channel. Calls wait on that, on the exit event and on
//! their deadline — events, never a poll. Since the buffer holds redacted output, a secret split
//! across two calls' answers never reaches either in clear.

use super::buffer::{Pending, Taken, HALF};
use crate::model::redact::Secrets;
use crate::process::exit::ExitStatus;
use crate::process::handle::{self, EnvMarker, Group, Io, Launch};
use crate::process::output::{spawn_pump_with_tap, LogTarget, OutputHub, OutputTap};
use crate::process::owner::{Owner, Role, Scope};
use crate::process::teardown::{self, Ladder};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// After the process exits, how long its output gets to reach end-of-file while a background
/// child of it may hold the terminal open: Codex's 50 ms.
pub const EXIT_DRAIN: Duration = Duration::from_millis(50);
/// After the process exits with nothing left in its group, end-of-file is certain and only the
/// pump's reading stands between the call and the last bytes (on a loaded machine more than
/// [`EXIT_DRAIN`]): the call waits for it up to this long.
pub const EMPTY_GROUP_DRAIN: Duration = Duration::from_secs(5);
/// How long a write may block on a terminal whose program does not read.
const WRITE_LIMIT: Duration = Duration::from_secs(10);
/// How long a console session's group gets after SIGHUP before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// The terminal the command sees (Codex's size).
const ROWS: u16 = 24;
const COLS: u16 = 80;

/// Why a console session could not be started or written to.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot open the console log {path}: {source}")]
    Log {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot start `{cmd}`: {source}")]
    Start { cmd: String, source: std::io::Error },
    #[error(
        "stdin is closed for this session; rerun exec_command with tty=true to keep stdin open"
    )]
    StdinClosed,
    #[error(
        "a line of {len} bytes is longer than the terminal's 4095-byte line limit (the program \
         reads whole lines and the terminal would drop the rest); write it to a file instead"
    )]
    LineTooLong { len: usize },
    #[error(
        "the program is not reading its input: {len} bytes could not be written within 10 s; \
         stdin is now closed for this session"
    )]
    NotReading { len: usize },
    #[error("cannot write to the session: {0}")]
    Write(std::io::Error),
}

/// What starts a console session.
#[derive(Debug, Clone)]
pub struct Spawn {
    pub id: u32,
    pub run_id: crate::model::ids::RunId,
    pub cmd: String,
    pub shell: String,
    pub login: bool,
    pub tty: bool,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub log_path: PathBuf,
    /// `[supervisor] max_log_bytes`, for `console/<id>.log` as for every log.
    pub max_log_bytes: u64,
    pub secrets: Arc<Secrets>,
}

/// What the reader thread shares with the calls.
#[derive(Debug)]
struct ReaderShared {
    pending: Mutex<Pending>,
    /// Bumped after every chunk; set to `u64::MAX` at end-of-file.
    seq: watch::Sender<u64>,
}

/// A running (or finished, not yet reported) console session.
pub struct ConsoleSession {
    pub id: u32,
    pub cmd: String,
    pub tty: bool,
    pub started: Instant,
    /// The session's process group (its leader's pid), readable while `group` is locked.
    pgid: i32,
    group: tokio::sync::Mutex<Group>,
    exit: watch::Receiver<Option<ExitStatus>>,
    shared: Arc<ReaderShared>,
    seq: watch::Receiver<u64>,
    writer: Mutex<Option<Box<dyn Write + Send>>>,
    /// An incomplete UTF-8 sequence at the end of the last read, kept for the next one.
    carry: Mutex<Vec<u8>>,
    pub log_path: PathBuf,
}

impl std::fmt::Debug for ConsoleSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleSession")
            .field("id", &self.id)
            .field("cmd", &self.cmd)
            .finish()
    }
}

/// The output a call collected, and how the process stood when it returned.
#[derive(Debug)]
pub struct Collected {
    pub output: Taken,
    pub exit: Option<ExitStatus>,
}

impl ConsoleSession {
    /// Starts `spawn.cmd` under `spawn.shell -c` (must run inside a tokio runtime).
    pub fn start(spawn: Spawn) -> Result<Self, SessionError> {
        let log_err = |source| SessionError::Log {
            path: spawn.log_path.display().to_string(),
            source,
        };
        if let Some(dir) = spawn.log_path.parent() {
            std::fs::create_dir_all(dir).map_err(log_err)?;
        }
        let log = std::fs::File::create(&spawn.log_path).map_err(log_err)?;
        let flag = if spawn.login { "-lc" } else { "-c" };
        let io = if spawn.tty {
            Io::Pty {
                rows: ROWS,
                cols: COLS,
            }
        } else {
            Io::Merged
        };
        let launch = Launch {
            owner: Owner::new(Scope::run(spawn.run_id.clone()), Role::Console(spawn.id)),
            program: PathBuf::from(&spawn.shell),
            args: vec![flag.to_string(), spawn.cmd.clone()],
            cwd: Some(spawn.cwd.clone()),
            env: spawn.env.clone(),
            inherit_env: false,
            io,
            marker: EnvMarker::fresh(),
            kill_on_drop: true,
        };
        let start_err = |source| SessionError::Start {
            cmd: spawn.cmd.clone(),
            source,
        };
        let mut group = handle::start(launch).map_err(start_err)?;
        let writer = if spawn.tty {
            group.take_pty_writer()
        } else {
            None
        };
        // On the errors below the group is dropped, and launched with kill_on_drop: it dies.
        let Some(output) = group.take_output() else {
            return Err(start_err(std::io::Error::other("no output stream")));
        };
        let (seq_tx, seq_rx) = watch::channel(0u64);
        let shared = Arc::new(ReaderShared {
            pending: Mutex::new(Pending::new(HALF)),
            seq: seq_tx,
        });
        let target = LogTarget {
            file: log,
            path: spawn.log_path.clone(),
            max_bytes: spawn.max_log_bytes,
        };
        let tap = Box::new(Tap(Arc::clone(&shared)));
        if let Err(e) = spawn_pump_with_tap(
            &format!("console-{}", spawn.id),
            output,
            target,
            Arc::clone(&spawn.secrets),
            OutputHub::new(),
            Some(tap),
        ) {
            drop(group);
            return Err(start_err(e));
        }
        Ok(Self {
            id: spawn.id,
            cmd: spawn.cmd,
            tty: spawn.tty,
            started: Instant::now(),
            exit: group.exit_watch(),
            pgid: group.pgid(),
            group: tokio::sync::Mutex::new(group),
            shared,
            seq: seq_rx,
            writer: Mutex::new(writer),
            carry: Mutex::new(Vec::new()),
            log_path: spawn.log_path,
        })
    }

    /// The leader's exit, once it has exited.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.exit.borrow().clone()
    }

    /// Writes `chars` to the terminal (control characters included: `\u0003` is ^C).
    pub async fn write(&self, chars: &str) -> Result<(), SessionError> {
        if chars.is_empty() {
            return Ok(());
        }
        if !self.tty {
            return Err(SessionError::StdinClosed);
        }
        let canonical = self.group.lock().await.pty_canonical().unwrap_or(true);
        if canonical {
            check_line_lengths(chars)?;
        }
        let writer = self
            .writer
            .lock()
            .map_err(|_| SessionError::StdinClosed)?
            .take()
            .ok_or(SessionError::StdinClosed)?;
        let bytes = chars.as_bytes().to_vec();
        let len = bytes.len();
        // The PTY writer blocks while the terminal's input queue is full (a program that does not
        // read): bounded, like every call. A write that never ends keeps the writer, and later
        // writes say stdin is closed.
        let write = tokio::task::spawn_blocking(move || {
            let mut writer = writer;
            let result = writer.write_all(&bytes).and_then(|()| writer.flush());
            (writer, result)
        });
        let (writer, result) = match tokio::time::timeout(WRITE_LIMIT, write).await {
            Ok(joined) => joined.map_err(|e| SessionError::Write(std::io::Error::other(e)))?,
            Err(_) => return Err(SessionError::NotReading { len }),
        };
        if let Ok(mut slot) = self.writer.lock() {
            *slot = Some(writer);
        }
        result.map_err(SessionError::Write)
    }

    /// Waits until the process exits (then drains its output to end-of-file: for at most
    /// [`EXIT_DRAIN`] while its group has members, which may hold the output open, else for at
    /// most [`EMPTY_GROUP_DRAIN`]) or `deadline` passes, and takes the output that arrived since
    /// the last call.
    pub async fn collect(&self, deadline: Instant) -> Collected {
        let mut exit = self.exit.clone();
        let exited = tokio::select! {
            r = exit.wait_for(|s| s.is_some()) => r.is_ok(),
            () = tokio::time::sleep_until(deadline) => false,
        };
        if exited {
            let drain = if crate::process::group::group_is_alive(self.pgid) {
                EXIT_DRAIN
            } else {
                EMPTY_GROUP_DRAIN
            };
            let mut seq = self.seq.clone();
            let _ = tokio::time::timeout(drain, seq.wait_for(|n| *n == u64::MAX)).await;
        }
        Collected {
            output: self.take(),
            exit: self.exit_status(),
        }
    }

    /// Waits until `deadline` or until new output or the exit arrives, whichever is first.
    pub async fn changed(&self, deadline: Instant) {
        let mut seq = self.seq.clone();
        seq.mark_unchanged();
        let mut exit = self.exit.clone();
        tokio::select! {
            _ = seq.changed() => {}
            _ = exit.wait_for(|s| s.is_some()) => {}
            () = tokio::time::sleep_until(deadline) => {}
        }
    }

    /// The output since the last take, with a partial UTF-8 character carried over.
    fn take(&self) -> Taken {
        let mut taken = match self.shared.pending.lock() {
            Ok(mut p) => p.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        let Ok(mut carry) = self.carry.lock() else {
            return taken;
        };
        if !carry.is_empty() {
            let mut joined = std::mem::take(&mut *carry);
            joined.extend_from_slice(&taken.head);
            taken.head = joined;
        }
        let end = if taken.tail.is_empty() {
            &mut taken.head
        } else {
            &mut taken.tail
        };
        let keep = incomplete_suffix(end);
        // A running program may complete the character with its next write.
        if keep > 0 && self.exit_status().is_none() {
            *carry = end.split_off(end.len() - keep);
        }
        taken
    }

    /// Ends the session's process group (SIGHUP, then SIGKILL) and sweeps its escapees.
    pub async fn stop(&self) {
        let mut group = self.group.lock().await;
        let _ = teardown::terminate(
            &mut group,
            &Ladder::harness(nix::sys::signal::Signal::SIGHUP, STOP_GRACE),
        )
        .await;
    }
}

/// Refuses a line the terminal would cut: in canonical mode the line discipline keeps 4095 bytes
/// of a line and drops the rest until a newline.
fn check_line_lengths(chars: &str) -> Result<(), SessionError> {
    const MAX_CANON: usize = 4095;
    let longest = chars.split(['\n', '\r']).map(str::len).max().unwrap_or(0);
    if longest > MAX_CANON {
        return Err(SessionError::LineTooLong { len: longest });
    }
    Ok(())
}

/// How many bytes at the end of `bytes` start a UTF-8 character that is not complete yet.
fn incomplete_suffix(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => 0,
        Err(e) if e.error_len().is_none() => bytes.len() - e.valid_up_to(),
        Err(_) => {
            // Invalid bytes earlier: only look at the last three.
            let start = bytes.len().saturating_sub(3);
            (start..bytes.len())
                .find(|&i| {
                    let b = bytes[i];
                    b >= 0xC0
                        && std::str::from_utf8(&bytes[i..]).is_err_and(|e| e.error_len().is_none())
                })
                .map_or(0, |i| bytes.len() - i)
        }
    }
}

/// The session's side of the pump: redacted output into the pending buffer, a sequence bump
/// per chunk, `u64::MAX` at end-of-file.
struct Tap(Arc<ReaderShared>);

impl OutputTap for Tap {
    fn chunk(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        match self.0.pending.lock() {
            Ok(mut p) => p.push(data),
            Err(poisoned) => poisoned.into_inner().push(data),
        }
        self.0
            .seq
            .send_modify(|s| *s = s.wrapping_add(1) % (u64::MAX - 1));
    }

    fn end(&mut self) {
        self.0.seq.send_replace(u64::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flood that ends with its process and leaves nothing behind in the group is read to the
    /// end before the call answers, even with several floods' pumps competing for the CPU (the
    /// last bytes once missed the 50 ms drain on a loaded CI machine).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_exited_flood_is_answered_with_its_last_line() {
        let dir = tempfile::tempdir().expect("temp dir");
        let secrets = Arc::new(Secrets::new([("TOKEN", "s3cr3t-never-printed")]));
        let sessions: Vec<ConsoleSession> = (0..16u32)
            .map(|id| {
                ConsoleSession::start(Spawn {
                    id,
                    run_id: format!("drain-{id}").into(),
                    cmd: format!(
                        "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo end-of-flood-{id}"
                    ),
                    shell: "/bin/sh".into(),
                    login: false,
                    tty: id % 2 == 0,
                    cwd: dir.path().to_path_buf(),
                    env: vec![("PATH".into(), "/usr/bin:/bin".into())],
                    log_path: dir.path().join(format!("console/{id}.log")),
                    max_log_bytes: 1 << 30,
                    secrets: Arc::clone(&secrets),
                })
                .expect("start a session")
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        let collected =
            futures::future::join_all(sessions.iter().map(|s| s.collect(deadline))).await;
        for (id, c) in collected.iter().enumerate() {
            let tail = String::from_utf8_lossy(&c.output.tail);
            assert!(c.exit.is_some(), "session {id} did not exit");
            assert!(
                tail.trim_end().ends_with(&format!("end-of-flood-{id}")),
                "session {id} answered without its last line ({} bytes of {}): ...{}",
                c.output.head.len() + c.output.tail.len(),
                c.output.total,
                &tail[tail.len().saturating_sub(80)..]
            );
        }
    }

    #[test]
    fn long_lines_are_refused_short_ones_pass() {
        assert!(check_line_lengths(&"x".repeat(4095)).is_ok());
        assert!(check_line_lengths(&format!("{}\n{}", "x".repeat(4000), "y".repeat(4000))).is_ok());
        assert!(matches!(
            check_line_lengths(&"x".repeat(4096)),
            Err(SessionError::LineTooLong { len: 4096 })
        ));
    }

    #[test]
    fn a_partial_character_at_the_end_is_found() {
        assert_eq!(incomplete_suffix("héllo".as_bytes()), 0);
        assert_eq!(incomplete_suffix(b"h\xc3"), 1);
        assert_eq!(incomplete_suffix(b"\xffh\xe2\x82"), 2);
        assert_eq!(incomplete_suffix(b"\xff"), 0);
    }
}
