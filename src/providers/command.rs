//! The `command` provider (docs/providers.md "Providers"): any program speaking JSON lines on stdin and free
//! text on stdout. It gets `{"type":"bootstrap",…}` first, then one `{"type":"step",…}` line per
//! step, and answers each with free text ending in a result marker line. Stdout goes raw to
//! `transcripts/agent.log`, stderr to `transcripts/agent.stderr.log`, and both directions, a JSON
//! object per message sent and per line received, to `transcripts/agent.jsonl`.
//!
//! The marker line ends the reply: the first result marker line ends it, however the agent's
//! writes were cut, and the next message goes at once. What the agent writes after that line is
//! the start of the next reply.
//! A reply that has output but no marker ends as `protocol_error` once the agent has been silent
//! for `no_output_timeout`; at the step's deadline it is a `timeout` (the message says that no
//! RESULT line had been seen), as is a reply with no output at all. A reply whose marker is followed by the agent's exit keeps its verdict;
//! the exit fails the next step. Output written after a reply ended is read as the start of the
//! next reply (the protocol has no turn ids). A timed-out or cancelled step stops the agent:
//! later steps get `error` without being sent.
//!
//! The message is written while the reply is read, never before it: an agent that answers
//! before it has read its whole input (or never reads it) cannot wedge the step past its
//! deadline on a full pipe.

use super::process::{spawn_drain, AgentProcess, SpawnSpec};
use super::reply::ReplyCollector;
use super::transcript::SharedTranscript;
use super::turn::{Framing, Limits, Output, Seen, Stop, TurnEnd};
use super::{
    agent_env, bootstrap, AgentContext, AgentError, CancelSignal, Provider, ProviderKind,
    StepRequest, StepVerdict,
};
use crate::model::ids::StepId;
use crate::model::outcome::{StepStatus, TeardownState};
use crate::process::job_control::Deadline;
use crate::process::owner::{Owner, Role, Scope};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdout;

pub struct CommandProvider {
    ctx: AgentContext,
    process: Option<AgentProcess>,
    /// Its stdout, read through the shared turn loop; what it holds after a reply's marker line
    /// is the start of the next reply.
    output: Output<ChildStdout>,
    transcript: Option<SharedTranscript>,
    /// Both directions, one JSON object per message or output line.
    jsonl: Option<JsonlTranscript>,
}

/// The `command` protocol's framing of a reply: free text, whose first result marker line ends
/// it; any output is progress.
struct CommandReply<'a> {
    collector: &'a mut ReplyCollector,
    transcript: Option<&'a SharedTranscript>,
    jsonl: Option<&'a mut JsonlTranscript>,
}

impl Framing for CommandReply<'_> {
    type Done = ();

    fn raw(&mut self, chunk: &[u8]) -> bool {
        if let Some(t) = self.transcript {
            t.write(chunk);
        }
        if let Some(j) = self.jsonl.as_mut() {
            j.push_output(chunk);
        }
        true
    }

    fn line(&mut self, line: &[u8]) -> Seen<()> {
        if self.collector.push(line) {
            Seen::End(())
        } else {
            Seen::Progress
        }
    }

    /// A last line without its newline is still read (a marker in it counts at the end).
    fn ended(&mut self, partial: &[u8]) -> Option<()> {
        self.collector.push(partial);
        None
    }

    fn stopped(&mut self, partial: &[u8]) {
        self.collector.push(partial);
    }
}

impl CommandProvider {
    pub fn new(ctx: AgentContext) -> Self {
        Self {
            ctx,
            process: None,
            output: Output::new(None),
            transcript: None,
            jsonl: None,
        }
    }

    /// The program and its arguments: `cmd` split like a shell would (no shell runs it), then
    /// `agent_args`. A relative program path (`agents/run.sh`, `./run.sh`) starts at the agent's
    /// cwd, as a harness command's does at the project root; a bare name is looked up on `PATH`.
    fn command_words(&self) -> Result<(PathBuf, Vec<String>), AgentError> {
        let problem = |p: String| AgentError::Config {
            provider: "command",
            problem: p,
        };
        let cmd = self.ctx.spec.cmd.as_deref().ok_or_else(|| {
            problem("`[provider] cmd` is required for provider \"command\"".into())
        })?;
        let mut words = shell_words::split(cmd)
            .map_err(|e| problem(format!("cannot split `cmd = {cmd:?}` into words: {e}")))?;
        if words.is_empty() {
            return Err(problem("`[provider] cmd` is empty".into()));
        }
        words.extend(self.ctx.spec.agent_args.iter().cloned());
        let program = words.remove(0);
        Ok((program_path(&program, &self.ctx.spec.cwd), words))
    }

    /// Sends one JSON line and reads the reply to it.
    async fn exchange(
        &mut self,
        line: serde_json::Value,
        step_id: StepId,
        timeout: Duration,
        cancel: CancelSignal,
    ) -> StepVerdict {
        let started = Instant::now();
        let secrets = self.ctx.facts.secrets.clone();
        let mut collector = self.ctx.collector(step_id);
        let Some(process) = self.process.as_mut() else {
            return collector.verdict_with(StepStatus::Error, "the agent is not running");
        };
        if process.is_torn_down() {
            return collector.verdict_with(
                StepStatus::Error,
                "the agent was stopped earlier (after a timeout or a cancel)",
            );
        }
        if let Some(death) = process.death(&secrets).await {
            let mut verdict = collector.verdict_with(
                StepStatus::Error,
                format!(
                    "the agent `{}` had already exited: {death}",
                    process.command_line
                ),
            );
            verdict.agent_died = Some(death);
            return verdict;
        }
        let mut message = line.to_string();
        if let Some(jsonl) = &self.jsonl {
            // On disk before the agent reads it: a transcript tailed live shows the step it has.
            jsonl.record("to_agent", &message);
            jsonl.flush();
        }
        message.push('\n');
        let end = self
            .read_reply(message.into_bytes(), &mut collector, timeout, cancel)
            .await;
        if let Some(t) = &self.transcript {
            t.flush();
        }
        if let Some(jsonl) = &self.jsonl {
            jsonl.flush();
        }
        let limit = self.ctx.spec.no_output_timeout.unwrap_or_default();
        // Silent, or out of time, because something outside stopped it: said as such, not as a
        // reply without a marker or a slow agent.
        let signalled = match &end {
            TurnEnd::Stopped(stop) if collector.last_result().is_none() => {
                super::turn::signal_stopped(
                    *stop,
                    self.process.as_ref(),
                    &collector,
                    ProviderKind::Command,
                )
            }
            _ => None,
        };
        if let Some(mut v) = signalled {
            self.stop().await;
            v.duration = started.elapsed();
            return v;
        }
        let mut verdict = match end {
            TurnEnd::Done(()) => collector.verdict(None),
            // A last marker line without its newline still counts once the agent is quiet.
            TurnEnd::Stopped(Stop::Silent) if collector.finish() => collector.verdict(None),
            TurnEnd::Stopped(Stop::Silent) if collector.bytes_seen() > 0 => collector.verdict_with(
                StepStatus::ProtocolError,
                format!(
                    "the agent wrote {} bytes, then nothing for {}s (no_output_timeout_secs), \
                     but no RESULT line: a reply must end with a line RESULT OK, \
                     RESULT WARN: <reason> or RESULT ERROR: <reason>",
                    collector.bytes_seen(),
                    limit.as_secs_f64()
                ),
            ),
            TurnEnd::Stopped(Stop::Silent) => {
                let v = collector.verdict_with(
                    StepStatus::Timeout,
                    format!(
                        "the agent wrote nothing for {}s (no_output_timeout_secs); it was stopped",
                        limit.as_secs_f64()
                    ),
                );
                self.stop().await;
                v
            }
            TurnEnd::Stopped(Stop::TimedOut) => {
                let v = if collector.last_result().is_some() || collector.finish() {
                    collector.verdict(None)
                } else if collector.bytes_seen() > 0 {
                    // docs/providers.md: a step that outlives its timeout is `timeout`, whatever the agent
                    // wrote; an agent still writing may simply be slow. `protocol_error` is for
                    // output followed by silence (above).
                    super::turn::timed_out_verdict(
                        &collector,
                        timeout,
                        &format!(
                            ": the agent wrote {} bytes but no RESULT line (RESULT OK, \
                             RESULT WARN: <reason>, RESULT ERROR: <reason>) yet; it was stopped",
                            collector.bytes_seen()
                        ),
                    )
                } else {
                    super::turn::timed_out_verdict(
                        &collector,
                        timeout,
                        "; the agent wrote nothing and was stopped",
                    )
                };
                self.stop().await;
                v
            }
            TurnEnd::Stopped(Stop::Cancelled) => {
                let v = collector.interrupted_verdict();
                self.stop().await;
                v
            }
            // The command protocol counts no model turns: never over them.
            TurnEnd::Ended | TurnEnd::Stopped(Stop::OverTurns(_)) => {
                collector.finish();
                let process = self.process.as_mut();
                let death = match process {
                    Some(p) => p.death_once_exited(&secrets).await,
                    None => None,
                };
                let command = self
                    .process
                    .as_ref()
                    .map(|p| p.command_line.clone())
                    .unwrap_or_default();
                let detail = death
                    .as_ref()
                    .map_or("its output ended".to_string(), ToString::to_string);
                let mut v = collector.verdict_with(
                    StepStatus::Error,
                    format!("the agent `{command}` exited during the step: {detail}"),
                );
                v.agent_died = death;
                v
            }
        };
        verdict.duration = started.elapsed();
        verdict
    }

    /// Writes `message` to the agent's stdin while reading its reply from stdout, until the
    /// reply's marker line (and the message is written), silence, the deadline, a cancel or the
    /// end of stdout. The reply starts with what the agent wrote after the previous reply's
    /// marker line.
    async fn read_reply(
        &mut self,
        message: Vec<u8>,
        collector: &mut ReplyCollector,
        timeout: Duration,
        cancel: CancelSignal,
    ) -> TurnEnd<()> {
        let Self {
            ctx,
            process,
            output,
            transcript,
            jsonl,
        } = self;
        let Some(process) = process.as_mut() else {
            return TurnEnd::Ended;
        };
        let limits = Limits {
            timeout,
            // Stopped time (Ctrl+Z) counts against neither.
            deadline: Deadline::after(timeout),
            idle: ctx.spec.no_output_timeout,
            max_turns: None,
        };
        let stdin = process.stdin_mut();
        let send = async move {
            if let Some(stdin) = stdin {
                stdin.write_all(&message).await?;
                stdin.flush().await?;
            }
            Ok::<(), std::io::Error>(())
        };
        let mut reply = CommandReply {
            collector,
            transcript: transcript.as_ref(),
            jsonl: jsonl.as_mut(),
        };
        output
            .read_turn(&mut reply, limits, cancel, Some(send))
            .await
    }

    async fn stop(&mut self) -> TeardownState {
        let grace = self.ctx.spec.stop_timeout;
        if let Some(stdout) = self.output.take() {
            spawn_drain(stdout, self.transcript.clone());
        }
        let state = match self.process.as_mut() {
            Some(p) => p.stop(grace).await,
            None => TeardownState::Clean,
        };
        if let Some(t) = &self.transcript {
            t.finish();
        }
        if let Some(j) = self.jsonl.as_mut() {
            j.finish();
        }
        state
    }
}

/// `program` as `Command` should get it: a relative path with a `/` joined to `cwd`; a bare name
/// (looked up on `PATH`) or an absolute path as it is.
fn program_path(program: &str, cwd: &std::path::Path) -> PathBuf {
    let path = PathBuf::from(program);
    if path.is_relative() && program.contains('/') {
        cwd.join(path)
    } else {
        path
    }
}

/// `transcripts/agent.jsonl` of a `command` agent: `{"ts","dir","line"}` per message sent
/// (`to_agent`) and per output line received (`from_agent`), redacted like every transcript.
struct JsonlTranscript {
    out: SharedTranscript,
    /// Output after the last newline, waiting for the rest of its line.
    partial: Vec<u8>,
    /// Bytes of an over-long line not kept (its head was recorded); 0: none.
    skipping: usize,
}

/// How much of an output line over `turn::MAX_LINE_BYTES` the transcript keeps.
const SKIPPED_LINE_HEAD: usize = 4096;

impl JsonlTranscript {
    fn record(&self, dir: &str, line: &str) {
        let ts = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let mut entry = json!({"ts": ts, "dir": dir, "line": line}).to_string();
        entry.push('\n');
        self.out.write(entry.as_bytes());
    }

    fn push_output(&mut self, chunk: &[u8]) {
        let known = self.partial.len();
        self.partial.extend_from_slice(chunk);
        // Only the new bytes can hold the first newline.
        if memchr::memchr(b'\n', &self.partial[known..]).is_none() {
            self.bound_partial();
            return;
        }
        while let Some(at) = memchr::memchr(b'\n', &self.partial) {
            let line: Vec<u8> = self.partial.drain(..=at).collect();
            if self.skipping > 0 {
                self.skipping = 0;
                continue;
            }
            let text = String::from_utf8_lossy(&line[..line.len() - 1]);
            self.record("from_agent", text.trim_end_matches('\r'));
        }
        self.bound_partial();
    }

    /// A line over `turn::MAX_LINE_BYTES` so far: its head is recorded once, the rest skipped.
    fn bound_partial(&mut self) {
        if self.partial.len() > crate::providers::turn::MAX_LINE_BYTES {
            // Its head is kept, the rest skipped as it arrives: memory stays bounded.
            if self.skipping == 0 {
                let head = &self.partial[..SKIPPED_LINE_HEAD];
                let text = format!(
                    "{}… (a line over {} bytes: the rest is not kept)",
                    String::from_utf8_lossy(head),
                    crate::providers::turn::MAX_LINE_BYTES
                );
                self.record("from_agent", &text);
            }
            self.skipping += self.partial.len();
            self.partial.clear();
        }
    }

    fn flush(&self) {
        self.out.flush();
    }

    fn finish(&mut self) {
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.record("from_agent", &String::from_utf8_lossy(&rest));
        }
        self.out.finish();
    }
}

/// Resolves once the session cancels; never when the sender is gone without cancelling.
pub(crate) async fn cancelled(cancel: &mut CancelSignal) {
    if cancel.wait_for(|c| *c).await.is_err() {
        std::future::pending::<()>().await;
    }
}

#[async_trait::async_trait]
impl Provider for CommandProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Command
    }

    async fn start(&mut self) -> Result<(), AgentError> {
        let (program, args) = self.command_words()?;
        let facts = &self.ctx.facts;
        let paths = facts.run_paths();
        let cap = facts.max_log_bytes;
        self.transcript = Some(SharedTranscript::create_capped(
            &paths.agent_log(),
            facts.secrets.clone(),
            cap,
        )?);
        self.jsonl = Some(JsonlTranscript {
            out: SharedTranscript::create_capped(&paths.agent_jsonl(), facts.secrets.clone(), cap)?,
            partial: Vec::new(),
            skipping: 0,
        });
        let stderr =
            SharedTranscript::create_capped(&paths.agent_stderr_log(), facts.secrets.clone(), cap)?;
        let spawn = SpawnSpec {
            program,
            args,
            env: agent_env(&self.ctx.spec, facts),
            cwd: self.ctx.spec.cwd.clone(),
            owner: Owner::new(
                Scope::run(facts.run_id.clone()),
                Role::Agent("command".into()),
            ),
            stderr,
            display: None,
        };
        let mut process = AgentProcess::spawn(spawn)?;
        self.output = Output::new(process.take_stdout());
        process.notify_unexpected_exit(self.ctx.events.clone(), facts.secrets.clone());
        // No waiting for an early exit here: the bootstrap exchange sees it at once.
        self.process = Some(process);
        Ok(())
    }

    async fn bootstrap(&mut self) -> Result<(), AgentError> {
        let facts = &self.ctx.facts;
        let line = json!({
            "type": "bootstrap",
            "run_id": facts.run_id,
            "session_id": facts.session_id,
            "system_prompt": bootstrap::system_prompt(&self.ctx.spec, facts),
        });
        let (_never, cancel) = tokio::sync::watch::channel(false);
        let timeout = self.ctx.spec.step_timeout;
        let verdict = self
            .exchange(line, StepId::BOOTSTRAP, timeout, cancel)
            .await;
        let command = self
            .process
            .as_ref()
            .map(|p| p.command_line.clone())
            .unwrap_or_default();
        if let Some(death) = verdict.agent_died {
            return Err(AgentError::ExitedAtStart { command, death });
        }
        let reason = match verdict.status {
            StepStatus::Ok | StepStatus::Warn => return Ok(()),
            StepStatus::Timeout => format!(
                "it did not answer the bootstrap message ({}); a `command` agent answers every \
                 line it reads, the bootstrap included, with text ending in a line RESULT OK",
                verdict.message
            ),
            StepStatus::ProtocolError => {
                format!("its answer to the bootstrap message: {}", verdict.message)
            }
            status => format!(
                "it answered the bootstrap with {}: {}",
                status.as_str(),
                verdict.message
            ),
        };
        Err(AgentError::Bootstrap { command, reason })
    }

    async fn run_step(&mut self, request: &StepRequest, cancel: CancelSignal) -> StepVerdict {
        let facts = &self.ctx.facts;
        let mut line = json!({
            "type": "step",
            "run_id": facts.run_id,
            "session_id": facts.session_id,
            "step_id": request.step_id,
            "source_file": request.source_file,
            "source_index": request.source_index,
            "include_chain": request.include_chain,
            "instruction": request.instruction,
            // The step's span (W3C Trace Context): the process started under the run's span
            // (`TRACEPARENT`), and what it exports for this step nests under this one.
            "traceparent": facts.trace().step_traceparent(request.step_id),
        });
        // Only a question carries the `question` key: a step message has none.
        if let Some(question) = request.question {
            line["question"] = json!(question.as_str());
        }
        // The steps replayed before this one: context, never part of the instruction.
        if !request.replayed.is_empty() {
            line["replayed"] = json!(request.replayed);
        }
        self.exchange(line, request.step_id, request.timeout, cancel)
            .await
    }

    async fn close(&mut self) -> TeardownState {
        self.stop().await
    }
}
