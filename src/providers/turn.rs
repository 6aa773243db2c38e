//! The one turn loop every agent provider reads its agent through (claude-code, codex, pi,
//! command): the agent's stdout read until the turn ends, the step's deadline, the watchdog's
//! silence limit, a cancel, the end of output or the turn budget — whichever comes first.
//!
//! A provider says only how its turn is framed ([`Framing`]): what one line of its output means
//! (progress, news that is not progress, the end of the turn), and how many model turns the step
//! has taken so far. A turn that ended by itself (its end line, or the end of output) is the
//! provider's to read; one the harness stopped (the step's timeout, the watchdog's silence, a
//! cancel, the turn budget) gets its verdict here, worded once for every provider
//! ([`stopped_verdict`]; [`timed_out_verdict`] is the one "step timed out" message).

use super::command::cancelled;
use super::reply::ReplyCollector;
use super::{AgentFault, CancelSignal, StepVerdict};
use crate::model::outcome::StepStatus;
use crate::process::job_control::{reached, Deadline};
use std::future::Future;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};

/// What one complete line of the agent's output meant.
#[derive(Debug)]
pub enum Seen<D> {
    /// The agent is working: the silence limit starts again.
    Progress,
    /// News that is not progress (an API retry notice): an agent that says only this for the
    /// silence limit trips the watchdog.
    News,
    /// The turn ended.
    End(D),
}

/// How a provider's turn is framed.
pub trait Framing {
    /// What a finished turn carries (a verdict, or nothing when the provider decides later).
    type Done;
    /// Output as it arrives, before it is cut into lines (a raw transcript). `true` when any
    /// output counts as progress.
    fn raw(&mut self, _chunk: &[u8]) -> bool {
        false
    }
    /// One complete line, with its newline.
    fn line(&mut self, line: &[u8]) -> Seen<Self::Done>;
    /// The output ended with an unterminated last line (possibly empty): it may still end the turn.
    fn ended(&mut self, _partial: &[u8]) -> Option<Self::Done> {
        None
    }
    /// The turn stopped (silence, deadline, cancel) with an unterminated last line in hand.
    fn stopped(&mut self, _partial: &[u8]) {}
    /// Model turns of the step so far (`max_turns_per_step`); 0 where the provider cannot say.
    fn model_turns(&self) -> u64 {
        0
    }
}

/// How reading a turn ended.
#[derive(Debug)]
pub enum TurnEnd<D> {
    Done(D),
    /// The agent's output ended before the turn did.
    Ended,
    /// The harness stopped it ([`stopped_verdict`]).
    Stopped(Stop),
}

/// Why the harness stopped a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    TimedOut,
    /// Nothing that counts as progress for the silence limit.
    Silent,
    Cancelled,
    /// More model turns than `max_turns_per_step` (how many).
    OverTurns(u64),
}

/// `send` for a provider whose message is not written while its reply is read.
pub const NO_MESSAGE: Option<std::future::Ready<std::io::Result<()>>> = None;

/// How a user raises a step's time limit: the step's own `timeout_secs`, the provider's default,
/// the command line's override. Said by every step-timeout message ([`timed_out_verdict`]), and
/// only by those: a silent agent is stopped by `no_output_timeout_secs`, which its message names.
pub const STEP_TIMEOUT_HINT: &str = "raise the limit with `timeout_secs` on the step, \
    `[provider] step_timeout_secs` or `--step-timeout`";

/// The limits of one turn.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The step's timeout, as the messages give it.
    pub timeout: Duration,
    /// The step's deadline (stopped time does not count).
    pub deadline: Deadline,
    /// `no_output_timeout_secs`.
    pub idle: Option<Duration>,
    /// `max_turns_per_step`.
    pub max_turns: Option<u32>,
}

/// The longest agent output line kept: a longer one (a runaway tool result, a 100 MB line) is
/// skipped where it is read, so it costs this much memory, not its size. A stream-json event
/// cut short would not parse anyway; the transcript keeps its head (docs/providers.md).
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// The agent's stdout and what was read of it but not yet handed out: the start of a line, or
/// what followed the end of the last turn (the start of the next one).
pub struct Output<R> {
    reader: Option<R>,
    pending: Vec<u8>,
    /// Bytes of the line being skipped (over [`MAX_LINE_BYTES`]) so far; 0: none is.
    skipping: usize,
    /// How much of `pending` is known to hold no newline: each byte is searched once.
    scanned: usize,
}

impl<R: AsyncRead + Unpin> Output<R> {
    pub fn new(reader: Option<R>) -> Self {
        Self {
            reader,
            pending: Vec::new(),
            skipping: 0,
            scanned: 0,
        }
    }

    /// The stdout, for draining at teardown; nothing is read through this `Output` again.
    pub fn take(&mut self) -> Option<R> {
        self.pending.clear();
        self.scanned = 0;
        self.reader.take()
    }

    /// Hands complete lines in `pending` to `framing` until one ends the turn or the budget is
    /// passed; what follows stays pending.
    fn lines<F: Framing>(
        &mut self,
        framing: &mut F,
        progress: &mut bool,
        max_turns: Option<u32>,
    ) -> Option<TurnEnd<F::Done>> {
        loop {
            let from = self.scanned.min(self.pending.len());
            let Some(at) = memchr::memchr(b'\n', &self.pending[from..]).map(|i| i + from) else {
                self.scanned = self.pending.len();
                break;
            };
            self.scanned = 0;
            let line: Vec<u8> = self.pending.drain(..=at).collect();
            if self.skipping > 0 {
                tracing::warn!(
                    "an agent output line of {} bytes is over {MAX_LINE_BYTES} and was skipped",
                    self.skipping + line.len()
                );
                self.skipping = 0;
                continue;
            }
            match framing.line(&line) {
                Seen::Progress => *progress = true,
                Seen::News => {}
                Seen::End(done) => return Some(TurnEnd::Done(done)),
            }
            let turns = framing.model_turns();
            if max_turns.is_some_and(|max| turns > u64::from(max)) {
                return Some(TurnEnd::Stopped(Stop::OverTurns(turns)));
            }
        }
        None
    }

    /// Reads one turn. `send` (the `command` provider's message, written while the reply is read
    /// so that an agent that answers before reading cannot wedge the step on a full pipe) must
    /// have been written before a finished turn is returned.
    pub async fn read_turn<F, S>(
        &mut self,
        framing: &mut F,
        limits: Limits,
        mut cancel: CancelSignal,
        send: Option<S>,
    ) -> TurnEnd<F::Done>
    where
        F: Framing,
        S: Future<Output = std::io::Result<()>>,
    {
        let mut idle_at = limits.idle.map(Deadline::after);
        let mut written = send.is_none();
        let send = async {
            if let Some(send) = send {
                send.await
            } else {
                std::future::pending().await
            }
        };
        tokio::pin!(send);
        let mut progress = false;
        let mut done = self.lines(framing, &mut progress, limits.max_turns);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match done {
                Some(TurnEnd::Done(d)) if written => return TurnEnd::Done(d),
                Some(TurnEnd::Done(_)) => {}
                Some(end) => return end,
                None => {}
            }
            let reading = done.is_none();
            let Some(reader) = self.reader.as_mut() else {
                return TurnEnd::Ended;
            };
            tokio::select! {
                sent = &mut send, if !written => {
                    written = true;
                    if let Err(e) = sent {
                        // The read sees the exit and reports it with the stderr tail.
                        tracing::debug!("writing to the agent failed: {e}");
                    }
                }
                read = reader.read(&mut buf), if reading => match read {
                    Ok(0) | Err(_) => {
                        let partial = std::mem::take(&mut self.pending);
                        self.scanned = 0;
                        return match framing.ended(&partial) {
                            Some(d) => TurnEnd::Done(d),
                            None => TurnEnd::Ended,
                        };
                    }
                    Ok(n) => {
                        progress = framing.raw(&buf[..n]);
                        self.pending.extend_from_slice(&buf[..n]);
                        done = self.lines(framing, &mut progress, limits.max_turns);
                        if self.pending.len() > MAX_LINE_BYTES {
                            // No end of line in sight: the line is skipped as it arrives.
                            self.skipping += self.pending.len();
                            self.pending.clear();
                            self.scanned = 0;
                        }
                        if progress {
                            idle_at = limits.idle.map(Deadline::after);
                        }
                    }
                },
                _ = reached(idle_at), if idle_at.is_some() && reading => {
                    self.stop(framing);
                    return TurnEnd::Stopped(Stop::Silent);
                }
                _ = limits.deadline.reached() => {
                    self.stop(framing);
                    return TurnEnd::Stopped(Stop::TimedOut);
                }
                _ = cancelled(&mut cancel) => {
                    self.stop(framing);
                    return TurnEnd::Stopped(Stop::Cancelled);
                }
            }
        }
    }

    fn stop<F: Framing>(&mut self, framing: &mut F) {
        let partial = std::mem::take(&mut self.pending);
        self.scanned = 0;
        framing.stopped(&partial);
    }
}

/// The verdict of a step whose agent program could not be started: an error, and not a fault
/// to restart (the same command line would fail the same way).
pub fn spawn_failed_verdict(
    collector: &ReplyCollector,
    error: &str,
    agent: super::ProviderKind,
) -> StepVerdict {
    let mut v = collector.verdict_with(StepStatus::Error, error.to_string());
    v.agent_error(crate::model::agent_fault::FaultKind::CliMissing, agent);
    v.agent_died = Some(super::AgentDeath {
        status: error.to_string(),
        stderr_tail: String::new(),
    });
    v
}

/// How the verdicts of a stopped turn name the agent.
#[derive(Debug, Clone, Copy)]
pub struct Agent<'a> {
    /// `Claude Code`, `Codex`, `pi`.
    pub name: &'a str,
    /// What the step still lacked when its time ran out: `no result from Claude Code`.
    pub awaited: &'a str,
}

/// The verdict of a turn the harness stopped, worded here once for every provider: the step's
/// timeout, the watchdog's silence (with the agent's `last_words`), a cancel, more model turns
/// than `max_turns_per_step`.
pub fn stopped_verdict(
    stop: Stop,
    collector: &ReplyCollector,
    limits: &Limits,
    agent: Agent<'_>,
    last_words: String,
) -> StepVerdict {
    match stop {
        Stop::TimedOut => timed_out_verdict(
            collector,
            limits.timeout,
            &format!(" with {}; the agent was stopped", agent.awaited),
        ),
        Stop::Silent => silent_verdict(collector, agent.name, limits.idle, last_words),
        Stop::Cancelled => collector.interrupted_verdict(),
        Stop::OverTurns(turns) => {
            over_turns_verdict(collector, agent.name, turns, limits.max_turns)
        }
    }
}

/// The verdict of a step whose agent process something outside the supervisor stopped (a
/// SIGSTOP: state `T` in `/proc/<pid>/stat`) until the step's silence or time ran out: the
/// agent fault `stopped` (the app is not at fault, and the next step may find it stopped too).
pub fn signal_stopped_verdict(
    collector: &ReplyCollector,
    pid: i32,
    agent: super::ProviderKind,
) -> StepVerdict {
    let mut v = collector.verdict_with(
        StepStatus::Error,
        format!(
            "the agent process (pid {pid}) was stopped by a signal from outside the supervisor \
             (state T in /proc/{pid}/stat, a SIGSTOP) and did not go on before the step's \
             silence or time ran out; it was ended"
        ),
    );
    v.agent_error(crate::model::agent_fault::FaultKind::Stopped, agent);
    v
}

/// For a turn stopped by its silence or its deadline: [`signal_stopped_verdict`] when the
/// agent's process is stopped by a signal (it is continued, so that it can end when asked to);
/// `None` otherwise, and for the other stops.
pub fn signal_stopped(
    stop: Stop,
    process: Option<&super::process::AgentProcess>,
    collector: &ReplyCollector,
    agent: super::ProviderKind,
) -> Option<StepVerdict> {
    let process = process
        .filter(|p| matches!(stop, Stop::Silent | Stop::TimedOut) && p.stopped_by_signal())?;
    process.resume();
    Some(signal_stopped_verdict(collector, process.pid, agent))
}

/// The verdict of a step that outlived its timeout, `detail` saying what it had not done yet:
/// the one place a step-timeout message is written, with how to raise the limit.
pub fn timed_out_verdict(
    collector: &ReplyCollector,
    timeout: Duration,
    detail: &str,
) -> StepVerdict {
    collector.verdict_with(
        StepStatus::Timeout,
        format!(
            "step timed out after {}s{detail} ({STEP_TIMEOUT_HINT})",
            timeout.as_secs_f64()
        ),
    )
}

/// The verdict of a step whose agent went silent (the watchdog's fault, retried on a restart).
fn silent_verdict(
    collector: &ReplyCollector,
    agent: &str,
    idle: Option<Duration>,
    last_words: String,
) -> StepVerdict {
    let fault = AgentFault::Silent {
        secs: idle.unwrap_or_default().as_secs(),
        last_words,
    };
    let mut v = collector.verdict_with(
        StepStatus::Timeout,
        format!("{agent} {fault}; the agent was stopped"),
    );
    v.fault = Some(fault);
    v
}

/// The verdict of a step that took more model turns than `max_turns_per_step`.
fn over_turns_verdict(
    collector: &ReplyCollector,
    agent: &str,
    turns: u64,
    max: Option<u32>,
) -> StepVerdict {
    collector.verdict_with(
        StepStatus::OverBudget,
        format!(
            "{agent} took {turns} model turns in this step, over max_turns_per_step = {}; \
             the agent was stopped",
            max.unwrap_or_default()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines ending in `END` end the turn; `retry` is news; every line is one model turn.
    #[derive(Default)]
    struct Lines {
        seen: Vec<String>,
        turns: u64,
    }

    impl Framing for Lines {
        type Done = String;
        fn line(&mut self, line: &[u8]) -> Seen<String> {
            let text = String::from_utf8_lossy(line).trim_end().to_string();
            self.seen.push(text.clone());
            if text == "retry" {
                return Seen::News;
            }
            self.turns += 1;
            if text.ends_with("END") {
                Seen::End(text)
            } else {
                Seen::Progress
            }
        }
        fn ended(&mut self, partial: &[u8]) -> Option<String> {
            (!partial.is_empty()).then(|| String::from_utf8_lossy(partial).into_owned())
        }
        fn model_turns(&self) -> u64 {
            self.turns
        }
    }

    fn limits(secs: u64, idle_ms: Option<u64>, max_turns: Option<u32>) -> Limits {
        Limits {
            timeout: Duration::from_secs(secs),
            deadline: Deadline::after(Duration::from_secs(secs)),
            idle: idle_ms.map(Duration::from_millis),
            max_turns,
        }
    }

    fn never() -> CancelSignal {
        let (tx, rx) = tokio::sync::watch::channel(false);
        std::mem::forget(tx);
        rx
    }

    #[tokio::test]
    async fn a_turn_ends_at_its_end_line_and_the_rest_waits_for_the_next() {
        let input: &[u8] = b"a\nb END\nc\nd END\ntail";
        let mut out = Output::new(Some(input));
        let mut f = Lines::default();
        let end = out
            .read_turn(&mut f, limits(5, None, None), never(), NO_MESSAGE)
            .await;
        assert!(
            matches!(end, TurnEnd::Done(ref s) if s == "b END"),
            "{end:?}"
        );
        let end = out
            .read_turn(&mut f, limits(5, None, None), never(), NO_MESSAGE)
            .await;
        assert!(
            matches!(end, TurnEnd::Done(ref s) if s == "d END"),
            "{end:?}"
        );
        let end = out
            .read_turn(&mut f, limits(5, None, None), never(), NO_MESSAGE)
            .await;
        assert!(
            matches!(end, TurnEnd::Done(ref s) if s == "tail"),
            "{end:?}"
        );
    }

    #[tokio::test]
    async fn the_budget_stops_a_turn_one_model_turn_over() {
        let input: &[u8] = b"1\n2\n3\n4 END\n";
        let mut out = Output::new(Some(input));
        let end = out
            .read_turn(
                &mut Lines::default(),
                limits(5, None, Some(2)),
                never(),
                NO_MESSAGE,
            )
            .await;
        assert!(
            matches!(end, TurnEnd::Stopped(Stop::OverTurns(3))),
            "{end:?}"
        );
    }

    #[tokio::test]
    async fn news_is_not_progress() {
        let (mut w, r) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            for _ in 0..10 {
                let _ = w.write_all(b"retry\n").await;
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            w
        });
        let mut out = Output::new(Some(r));
        let end = out
            .read_turn(
                &mut Lines::default(),
                limits(5, Some(150), None),
                never(),
                NO_MESSAGE,
            )
            .await;
        assert!(matches!(end, TurnEnd::Stopped(Stop::Silent)), "{end:?}");
        drop(writer.await);
    }

    #[tokio::test]
    async fn a_finished_turn_waits_for_its_message_to_be_written() {
        let input: &[u8] = b"x END\n";
        let mut out = Output::new(Some(input));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let send = async move {
            let _ = rx.await;
            Ok(())
        };
        let mut lines = Lines::default();
        let read = out.read_turn(&mut lines, limits(5, None, None), never(), Some(send));
        tokio::pin!(read);
        assert!(
            tokio::time::timeout(Duration::from_millis(100), &mut read)
                .await
                .is_err(),
            "returned before the message was written"
        );
        let _ = tx.send(());
        assert!(matches!(read.await, TurnEnd::Done(_)));
    }

    /// A reader of `head`, then `len` bytes of `x`, then `tail`, made as it is read.
    struct Flood {
        head: &'static [u8],
        len: usize,
        tail: &'static [u8],
        at: usize,
    }

    impl AsyncRead for Flood {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let total = self.head.len() + self.len + self.tail.len();
            let n = buf.remaining().min(total - self.at).min(64 * 1024);
            for _ in 0..n {
                let at = self.at;
                let byte = if at < self.head.len() {
                    self.head[at]
                } else if at < self.head.len() + self.len {
                    b'x'
                } else {
                    self.tail[at - self.head.len() - self.len]
                };
                buf.put_slice(&[byte]);
                self.at += 1;
            }
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_skipped_where_it_is_read_and_the_turn_goes_on() {
        let flood = Flood {
            head: b"a\n",
            len: MAX_LINE_BYTES * 3 + 17,
            tail: b"\nb END\n",
            at: 0,
        };
        let mut out = Output::new(Some(flood));
        let mut f = Lines::default();
        let end = out
            .read_turn(&mut f, limits(60, None, None), never(), NO_MESSAGE)
            .await;
        assert!(
            matches!(end, TurnEnd::Done(ref d) if d == "b END"),
            "the marker after it"
        );
        assert_eq!(
            f.seen,
            ["a", "b END"],
            "the long line never reached the framing"
        );
        assert!(out.pending.capacity() <= 2 * MAX_LINE_BYTES + 128 * 1024);
    }
}
