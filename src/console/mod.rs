//! The agent console (docs/console.md): what the agent gets over MCP besides its own tools — console
//! sessions it can keep typing into (`exec_command`, `write_stdin`, `list_sessions`,
//! `kill_session`) and the harness commands' logs (`list_logs`, `read_log`, `wait_for_log`).
//!
//! [`Console`] is the tools' logic, independent of the protocol; [`server`] serves it over MCP
//! (Streamable HTTP on loopback, a bearer token per session); how each provider is pointed at it
//! is the providers' business (`providers::console_wiring`). One console per root-test session, torn down with it.

pub mod buffer;
pub mod logs;
pub mod record;
pub mod reply;
pub mod server;
pub mod session;
pub mod truncate;

use crate::model::artifacts::RunPaths;
use crate::model::redact::Secrets;
use crate::process::exit::ExitStatus;
use logs::{LogSource, Waited};
use record::Recorder;
use reply::State;
use serde::Deserialize;
use session::{ConsoleSession, Spawn};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The MCP server's name: the agent sees the tools as `mcp__bugatti__<tool>`.
pub const SERVER_NAME: &str = "bugatti";
/// Live console sessions one test session may hold.
pub const MAX_SESSIONS: usize = 16;
/// The longest any call waits.
pub const MAX_WAIT: Duration = Duration::from_secs(30);
const MIN_YIELD_MS: u64 = 250;
const DEFAULT_EXEC_YIELD_MS: u64 = 10_000;
const DEFAULT_WRITE_YIELD_MS: u64 = 250;
/// An empty poll waits at least this long (Codex waits 5 s; a step's watchdog is shorter).
const MIN_EMPTY_POLL_MS: u64 = 1_000;
const DEFAULT_MAX_TOKENS: usize = 10_000;
/// The largest output budget a call gets, whatever it asks for: 1 MiB of text, what a console
/// session keeps of its unread output anyway (the caller's number is never an allocation size).
pub const MAX_OUTPUT_TOKENS: usize = 2 * buffer::HALF / truncate::BYTES_PER_TOKEN;
/// After a write, the program gets this long to react before its output is collected.
const WRITE_SETTLE: Duration = Duration::from_millis(100);
/// An exited session is swept (its /proc scan) this long after the answer, not while the answer
/// is on its way.
const STOP_AFTER: Duration = Duration::from_millis(20);

/// What a test session gives its console.
#[derive(Debug, Clone)]
pub struct ConsoleSetup {
    pub run_id: crate::model::ids::RunId,
    /// `.bugatti/runs/<run_id>/`: `console/<id>.log` and `transcripts/console.jsonl` go there.
    pub run_dir: PathBuf,
    /// The agent's working directory (`[provider] cwd`, the project root by default): the
    /// default (and base of a relative) `workdir` (docs/console.md).
    pub workdir: PathBuf,
    /// The session's environment (ports, `[env]`, `[secrets]`, `BUGATTI_*`), over the
    /// supervisor's own.
    pub env: Vec<(String, String)>,
    pub secrets: Arc<Secrets>,
    pub logs: Vec<LogSource>,
}

/// `exec_command`'s arguments (Codex's names).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct ExecArgs {
    /// The shell command to run.
    pub cmd: String,
    /// Working directory, relative to the agent's own working directory (default: that one).
    pub workdir: Option<String>,
    /// The shell (default /bin/bash, else sh).
    pub shell: Option<String>,
    /// Run the shell as a login shell (default false).
    pub login: Option<bool>,
    /// Run under a pseudo-terminal (default true): stdin stays open for write_stdin, input is
    /// echoed. false: plain pipes, stdin closed.
    pub tty: Option<bool>,
    /// How long to wait for output before returning (default 10000, 250-30000); returns at
    /// once when the process exits.
    pub yield_time_ms: Option<u64>,
    /// Output budget in tokens of 4 bytes (default 10000); the middle is cut beyond it.
    pub max_output_tokens: Option<usize>,
}

/// `write_stdin`'s arguments.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct WriteArgs {
    /// The session ID exec_command returned.
    pub session_id: u32,
    /// Characters to type; may hold control characters ("\u0003" is Ctrl-C, "\u0004" EOF).
    /// Empty: just wait for and return new output.
    pub chars: Option<String>,
    /// How long to wait for output (default 250 after a write, 1000 for an empty poll; max
    /// 30000); returns at once when the process exits.
    pub yield_time_ms: Option<u64>,
    /// Output budget in tokens of 4 bytes (default 10000).
    pub max_output_tokens: Option<usize>,
}

/// `kill_session`'s arguments.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct KillArgs {
    /// The session ID exec_command returned.
    pub session_id: u32,
}

/// `read_log`'s arguments.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct ReadLogArgs {
    /// The harness command's name (list_logs).
    pub name: String,
    /// Byte offset to read from (a next_offset from an earlier answer); default 0.
    pub offset: Option<u64>,
    /// Instead of an offset: the last N lines.
    pub tail_lines: Option<usize>,
    /// Only lines matching this regex.
    pub grep: Option<String>,
    /// Output budget in tokens of 4 bytes (default 10000).
    pub max_output_tokens: Option<usize>,
}

/// `wait_for_log`'s arguments.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct WaitLogArgs {
    /// The harness command's name (list_logs).
    pub name: String,
    /// Regex a new line must match.
    pub pattern: String,
    /// Only bytes from this offset on count (default: the log's end now, i.e. new lines only).
    pub from_offset: Option<u64>,
    /// How long to wait (default and max 30000).
    pub timeout_ms: Option<u64>,
}

/// A tool's answer: text for the model, and whether it is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub text: String,
    pub is_error: bool,
    /// For the transcript: the process's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// For the transcript: output bytes the call saw.
    pub bytes: u64,
}

impl Answer {
    fn ok(text: String) -> Self {
        Self {
            text,
            is_error: false,
            exit_code: None,
            bytes: 0,
        }
    }
    fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
            exit_code: None,
            bytes: 0,
        }
    }
}

/// One test session's console: its console sessions, the harness logs, the call record.
#[derive(Debug)]
pub struct Console {
    setup: ConsoleSetup,
    sessions: Mutex<BTreeMap<u32, Arc<ConsoleSession>>>,
    recorder: Recorder,
    /// The teardowns of sessions whose program exited (their leftovers swept), awaited at
    /// shutdown.
    finishing: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Set once [`Console::shutdown`] ran: no new sessions.
    closed: std::sync::atomic::AtomicBool,
    /// `[supervisor] max_log_bytes` for `console/<id>.log`.
    max_log_bytes: u64,
}

/// A session id not in use (ids are short numbers, like Codex's).
fn new_id(sessions: &BTreeMap<u32, Arc<ConsoleSession>>) -> u32 {
    loop {
        let id = (uuid::Uuid::new_v4().as_u128() % 99_000) as u32 + 1000;
        if !sessions.contains_key(&id) {
            return id;
        }
    }
}

/// A call's `max_output_tokens`, its default filled and clamped to [`MAX_OUTPUT_TOKENS`].
fn output_tokens(asked: Option<usize>) -> usize {
    asked.unwrap_or(DEFAULT_MAX_TOKENS).min(MAX_OUTPUT_TOKENS)
}

fn clamp_ms(ms: u64, min: u64) -> Duration {
    Duration::from_millis(ms.clamp(min, MAX_WAIT.as_millis() as u64))
}

/// The exit code Codex's text shows: the code, or 128 + the signal.
fn exit_code(status: &ExitStatus) -> i32 {
    match status {
        ExitStatus::Code(code) => *code,
        ExitStatus::Signal(name) => signal_number(name).map_or(-1, |n| 128 + n),
        ExitStatus::Unknown(_) => -1,
    }
}

/// A signal's number from its name (`SIGINT`, piped children) or its description (`Interrupt`,
/// what portable-pty reports for a PTY child, from strsignal(3)).
fn signal_number(name: &str) -> Option<i32> {
    use nix::sys::signal::Signal;
    if let Ok(signal) = name.parse::<Signal>() {
        return Some(signal as i32);
    }
    let signal = match name {
        "Hangup" => Signal::SIGHUP,
        "Interrupt" => Signal::SIGINT,
        "Quit" => Signal::SIGQUIT,
        "Aborted" => Signal::SIGABRT,
        "Killed" => Signal::SIGKILL,
        "Segmentation fault" => Signal::SIGSEGV,
        "Broken pipe" => Signal::SIGPIPE,
        "Alarm clock" => Signal::SIGALRM,
        "Terminated" => Signal::SIGTERM,
        "User defined signal 1" => Signal::SIGUSR1,
        "User defined signal 2" => Signal::SIGUSR2,
        _ => return name.strip_prefix("Signal ")?.parse().ok(),
    };
    Some(signal as i32)
}

impl Console {
    pub fn new(setup: ConsoleSetup) -> Self {
        let recorder = Recorder::new(
            RunPaths::new(&setup.run_dir).console_calls(),
            Arc::clone(&setup.secrets),
        );
        Self {
            setup,
            sessions: Mutex::new(BTreeMap::new()),
            recorder,
            finishing: Mutex::new(Vec::new()),
            closed: std::sync::atomic::AtomicBool::new(false),
            max_log_bytes: crate::process::log_limit::DEFAULT_MAX_LOG_BYTES,
        }
    }

    /// The cap of each console session's `console/<id>.log` (`[supervisor] max_log_bytes`; the
    /// default otherwise): the log keeps its head, then a rolling tail, like a harness log.
    pub fn with_max_log_bytes(mut self, max: u64) -> Self {
        self.max_log_bytes = max;
        self
    }

    /// The call record (for the session's report).
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, Arc<ConsoleSession>>> {
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn session(&self, id: u32) -> Option<Arc<ConsoleSession>> {
        self.sessions().get(&id).cloned()
    }

    /// Runs one tool call and records it in `transcripts/console.jsonl`.
    pub async fn call(&self, tool: &str, arguments: serde_json::Value) -> Answer {
        let started = Instant::now();
        let answer = match tool {
            "exec_command" => match serde_json::from_value(arguments.clone()) {
                Ok(a) => self.exec_command(a).await,
                Err(e) => Answer::error(format!("exec_command: bad arguments: {e}")),
            },
            "write_stdin" => match serde_json::from_value(arguments.clone()) {
                Ok(a) => self.write_stdin(a).await,
                Err(e) => Answer::error(format!("write_stdin: bad arguments: {e}")),
            },
            "list_sessions" => self.list_sessions(),
            "kill_session" => match serde_json::from_value(arguments.clone()) {
                Ok(a) => self.kill_session(a).await,
                Err(e) => Answer::error(format!("kill_session: bad arguments: {e}")),
            },
            "list_logs" => self.list_logs(),
            "read_log" => match serde_json::from_value(arguments.clone()) {
                Ok(a) => self.read_log(a),
                Err(e) => Answer::error(format!("read_log: bad arguments: {e}")),
            },
            "wait_for_log" => match serde_json::from_value(arguments.clone()) {
                Ok(a) => self.wait_for_log(a).await,
                Err(e) => Answer::error(format!("wait_for_log: bad arguments: {e}")),
            },
            other => Answer::error(format!("unknown tool {other}")),
        };
        self.recorder
            .record(tool, &arguments, started.elapsed(), &answer);
        answer
    }

    fn env(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| {
                !crate::process::inherited_env::CLAUDE_NESTING_VARS.contains(&k.as_str())
            })
            .collect();
        env.extend(self.setup.env.iter().cloned());
        // What Codex gives its console children: plain, uncoloured, unpaged UTF-8 output.
        for (k, v) in [
            ("NO_COLOR", "1"),
            ("TERM", "dumb"),
            ("PAGER", "cat"),
            ("GIT_PAGER", "cat"),
            ("LANG", "C.UTF-8"),
            ("LC_CTYPE", "C.UTF-8"),
        ] {
            env.push((k.to_string(), v.to_string()));
        }
        env
    }

    /// Starts a console session unless the cap is reached or the console is closing. The count,
    /// the start and the insert happen under one lock: concurrent calls cannot all pass the check
    /// before any of them is counted.
    fn start_session(
        &self,
        args: &ExecArgs,
        cwd: PathBuf,
        shell: String,
    ) -> Result<Arc<ConsoleSession>, Answer> {
        let mut sessions = self.sessions();
        // Under the lock: shutdown marks the console closed before it takes the sessions.
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Answer::error(
                "exec_command failed: the console is shutting down",
            ));
        }
        let live = sessions
            .values()
            .filter(|s| s.exit_status().is_none())
            .count();
        if live >= MAX_SESSIONS {
            return Err(Answer::error(format!(
                "exec_command failed: {live} console sessions are open, the most a test may \
                 keep; end one with kill_session (list_sessions shows them)"
            )));
        }
        let id = new_id(&sessions);
        let spawn = Spawn {
            id,
            run_id: self.setup.run_id.clone(),
            cmd: args.cmd.clone(),
            shell,
            login: args.login.unwrap_or(false),
            tty: args.tty.unwrap_or(true),
            cwd,
            env: self.env(),
            log_path: RunPaths::new(&self.setup.run_dir).console_session_log(id),
            max_log_bytes: self.max_log_bytes,
            secrets: Arc::clone(&self.setup.secrets),
        };
        let session = match ConsoleSession::start(spawn) {
            Ok(s) => Arc::new(s),
            Err(e) => return Err(Answer::error(format!("exec_command failed: {e}"))),
        };
        sessions.insert(id, Arc::clone(&session));
        Ok(session)
    }

    pub async fn exec_command(&self, args: ExecArgs) -> Answer {
        let cwd = match &args.workdir {
            Some(dir) => self.setup.workdir.join(dir),
            None => self.setup.workdir.clone(),
        };
        if !cwd.is_dir() {
            return Answer::error(format!(
                "exec_command failed: workdir {} is not a directory",
                cwd.display()
            ));
        }
        let shell = args.shell.clone().unwrap_or_else(|| {
            if std::path::Path::new("/bin/bash").exists() {
                "/bin/bash".into()
            } else {
                "sh".into()
            }
        });
        let session = match self.start_session(&args, cwd, shell) {
            Ok(session) => session,
            Err(answer) => return answer,
        };
        let wait = clamp_ms(
            args.yield_time_ms.unwrap_or(DEFAULT_EXEC_YIELD_MS),
            MIN_YIELD_MS,
        );
        let max_tokens = output_tokens(args.max_output_tokens);
        self.collect(&session, wait, max_tokens).await
    }

    /// Collects a session's output until exit or `wait`, and renders it; an exited session is
    /// removed and its group ended.
    async fn collect(
        &self,
        session: &Arc<ConsoleSession>,
        wait: Duration,
        max_tokens: usize,
    ) -> Answer {
        let started = Instant::now();
        let collected = session.collect(started + wait).await;
        let state = match &collected.exit {
            Some(status) => State::Exited(exit_code(status)),
            None => State::Running(session.id),
        };
        if collected.exit.is_some() {
            self.sessions().remove(&session.id);
            let done = Arc::clone(session);
            // Sweeps what it left behind (a background child) and closes the terminal.
            let task = tokio::spawn(async move {
                tokio::time::sleep(STOP_AFTER).await;
                done.stop().await
            });
            self.finishing
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(task);
        }
        let reply = reply::render(
            &collected.output,
            state,
            started.elapsed(),
            max_tokens,
            &self.setup.secrets,
        );
        Answer {
            text: reply.text,
            is_error: false,
            exit_code: match state {
                State::Exited(code) => Some(code),
                _ => None,
            },
            bytes: reply.bytes,
        }
    }

    pub async fn write_stdin(&self, args: WriteArgs) -> Answer {
        let Some(session) = self.session(args.session_id) else {
            return Answer::error(format!(
                "write_stdin failed: Unknown process id {}",
                args.session_id
            ));
        };
        let called = Instant::now();
        let chars = args.chars.unwrap_or_default();
        // An ended program reads nothing more: its last output and exit code are the answer.
        let wait = if chars.is_empty() || session.exit_status().is_some() {
            clamp_ms(
                args.yield_time_ms.unwrap_or(MIN_EMPTY_POLL_MS),
                MIN_EMPTY_POLL_MS,
            )
        } else {
            if let Err(e) = session.write(&chars).await {
                return Answer::error(format!("write_stdin failed: {e}"));
            }
            // Give the program a moment to react, unless it ends sooner.
            session.changed(Instant::now() + WRITE_SETTLE).await;
            clamp_ms(
                args.yield_time_ms.unwrap_or(DEFAULT_WRITE_YIELD_MS),
                MIN_YIELD_MS,
            )
        };
        // The write and its settling count against the call's 30 s.
        let wait = wait.min(MAX_WAIT.saturating_sub(called.elapsed()));
        let max_tokens = output_tokens(args.max_output_tokens);
        self.collect(&session, wait, max_tokens).await
    }

    pub fn list_sessions(&self) -> Answer {
        let sessions = self.sessions();
        if sessions.is_empty() {
            return Answer::ok("No console sessions.\n".into());
        }
        let mut text = String::new();
        for s in sessions.values() {
            let state = match s.exit_status() {
                Some(status) => format!("exited with code {}", exit_code(&status)),
                None => "running".into(),
            };
            text.push_str(&format!(
                "session ID {}: {state}, tty={}, {:.1} s, cmd: {}\n",
                s.id,
                s.tty,
                s.started.elapsed().as_secs_f64(),
                self.setup.secrets.redact_str(&s.cmd)
            ));
        }
        Answer::ok(text)
    }

    pub async fn kill_session(&self, args: KillArgs) -> Answer {
        let Some(session) = self.sessions().remove(&args.session_id) else {
            return Answer::error(format!(
                "kill_session failed: Unknown process id {}",
                args.session_id
            ));
        };
        session.stop().await;
        let status = session
            .exit_status()
            .map_or("gone".to_string(), |s| s.to_string());
        Answer::ok(format!("Session {} stopped ({status}).\n", args.session_id))
    }

    fn log(&self, name: &str) -> Result<&LogSource, Answer> {
        self.setup
            .logs
            .iter()
            .find(|l| l.name == name)
            .ok_or_else(|| {
                let known: Vec<&str> = self.setup.logs.iter().map(|l| l.name.as_str()).collect();
                Answer::error(
                    logs::LogError::Unknown {
                        name: name.to_string(),
                        known: if known.is_empty() {
                            "(none)".into()
                        } else {
                            known.join(", ")
                        },
                    }
                    .to_string(),
                )
            })
    }

    /// The harness commands' logs, as `list_logs` reads them (replay watches them too).
    pub fn harness_logs(&self) -> &[logs::LogSource] {
        &self.setup.logs
    }

    pub fn list_logs(&self) -> Answer {
        if self.setup.logs.is_empty() {
            return Answer::ok("No harness commands in this test.\n".into());
        }
        let mut text = String::new();
        for l in &self.setup.logs {
            let state = match &l.hub {
                Some(hub) if hub.output_ended() => "finished",
                Some(_) => "running",
                None => "not started",
            };
            text.push_str(&format!(
                "{}: {}, {state}, {} bytes, {}\n",
                l.name,
                l.kind,
                logs::log_len(&l.path),
                l.path.display()
            ));
        }
        Answer::ok(text)
    }

    pub fn read_log(&self, args: ReadLogArgs) -> Answer {
        let source = match self.log(&args.name) {
            Ok(s) => s,
            Err(answer) => return answer,
        };
        let max_tokens = output_tokens(args.max_output_tokens);
        let budget = max_tokens.saturating_mul(truncate::BYTES_PER_TOKEN).max(1);
        let re = match args
            .grep
            .as_deref()
            .map(regex::bytes::Regex::new)
            .transpose()
        {
            Ok(re) => re,
            Err(e) => return Answer::error(format!("read_log failed: bad grep pattern: {e}")),
        };
        let read_err = |e: std::io::Error| {
            Answer::error(format!(
                "read_log failed: cannot read {}: {e}",
                source.path.display()
            ))
        };
        // A tail is cut in its middle; a cursor read pages instead (nothing skipped).
        let (bytes, next_offset, len) = match args.tail_lines {
            Some(n) => {
                let len = logs::log_len(&source.path);
                let window = (budget as u64).saturating_mul(4).max(1 << 20);
                let chunk =
                    match logs::read_at(&source.path, len.saturating_sub(window), usize::MAX) {
                        Ok(c) => c,
                        Err(e) => return read_err(e),
                    };
                let text = match &re {
                    Some(re) => logs::grep(&chunk.bytes, re),
                    None => chunk.bytes.clone(),
                };
                (
                    logs::last_lines(&text, n).to_vec(),
                    chunk.next_offset,
                    chunk.len,
                )
            }
            None => {
                let offset = args.offset.unwrap_or(0);
                let chunk = match logs::read_at(&source.path, offset, budget) {
                    Ok(c) => c,
                    Err(e) => return read_err(e),
                };
                let text = match &re {
                    Some(re) => logs::grep(&chunk.bytes, re),
                    None => chunk.bytes,
                };
                (text, chunk.next_offset, chunk.len)
            }
        };
        let text = reply::clean(&bytes);
        let cut = truncate::truncate_middle(&text, max_tokens);
        let more = if next_offset < len {
            format!(" ({} more bytes follow)", len - next_offset)
        } else {
            String::new()
        };
        let mut out = reply::header(State::None, Duration::ZERO, truncate::tokens(bytes.len()));
        out.insert_str(
            out.len() - "Output:\n".len(),
            &format!(
                "Log: {} ({len} bytes)\nNext offset: {next_offset}{more}\n",
                source.name
            ),
        );
        out.push_str(&cut.text);
        Answer {
            text: out,
            is_error: false,
            exit_code: None,
            bytes: bytes.len() as u64,
        }
    }

    pub async fn wait_for_log(&self, args: WaitLogArgs) -> Answer {
        let source = match self.log(&args.name) {
            Ok(s) => s.clone(),
            Err(answer) => return answer,
        };
        let started = Instant::now();
        let from = args
            .from_offset
            .unwrap_or_else(|| logs::log_len(&source.path));
        let wait = clamp_ms(args.timeout_ms.unwrap_or(MAX_WAIT.as_millis() as u64), 0);
        match logs::wait_for_line(&source, &args.pattern, from, started + wait).await {
            Ok(Waited::Matched { line, next_offset }) => {
                let line = self.setup.secrets.redact_str(&line);
                let mut out =
                    reply::header(State::None, started.elapsed(), truncate::tokens(line.len()));
                out.insert_str(
                    out.len() - "Output:\n".len(),
                    &format!("Matched: yes\nNext offset: {next_offset}\n"),
                );
                out.push_str(&line);
                out.push('\n');
                Answer {
                    bytes: line.len() as u64,
                    ..Answer::ok(out)
                }
            }
            Ok(Waited::TimedOut { next_offset }) => {
                let mut out = reply::header(State::None, started.elapsed(), 0);
                out.insert_str(
                    out.len() - "Output:\n".len(),
                    &format!(
                        "Matched: no (timed out after {} ms)\nNext offset: {next_offset}\n",
                        wait.as_millis()
                    ),
                );
                Answer::ok(out)
            }
            Err(e) => Answer::error(format!("wait_for_log failed: {e}")),
        }
    }

    /// Ends every console session (their whole process groups) and refuses new ones.
    pub async fn shutdown(&self) {
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
        let sessions: Vec<_> = std::mem::take(&mut *self.sessions())
            .into_values()
            .collect();
        futures::future::join_all(sessions.iter().map(|s| s.stop())).await;
        let finishing = std::mem::take(
            &mut *self
                .finishing
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        futures::future::join_all(finishing).await;
        self.recorder.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_by_name_or_description_give_128_plus() {
        assert_eq!(exit_code(&ExitStatus::Signal("SIGINT".into())), 130);
        assert_eq!(exit_code(&ExitStatus::Signal("Interrupt".into())), 130);
        assert_eq!(exit_code(&ExitStatus::Signal("Signal 40".into())), 168);
        assert_eq!(exit_code(&ExitStatus::Code(3)), 3);
    }
}
