//! The `command` provider (SPEC §8): any program speaking JSON lines on stdin and free text on
//! stdout. It gets `{"type":"bootstrap",…}` first, then one `{"type":"step",…}` line per step, and
//! answers each with free text ending in a result marker line. Stdout goes raw to
//! `transcripts/agent.log`, stderr to `transcripts/agent.stderr.log`.
//!
//! When a reply ends is not signalled by the protocol, so: a reply ends once a result marker line
//! has been written and the agent then stays quiet for `reply_settle` (a later marker in the same
//! burst still wins). A reply that never has a marker ends as `protocol_error` after
//! `no_output_timeout` of silence, or as `timeout` at the step's deadline. A reply whose marker is
//! followed by the agent's exit keeps its verdict; the exit fails the next step. Output written
//! after a reply ended is read as the start of the next reply (the protocol has no turn ids).
//! A timed-out or cancelled step stops the agent: later steps get `error` without being sent.

use super::process::{spawn_drain, AgentProcess, SpawnSpec};
use super::reply::ReplyCollector;
use super::transcript::SharedTranscript;
use super::{
    agent_env, bootstrap, AgentContext, AgentError, CancelSignal, Provider, ProviderKind,
    StepRequest, StepVerdict,
};
use crate::model::outcome::{StepStatus, TeardownState};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::process::ChildStdout;
use tokio::time::{sleep_until, Instant as TokioInstant};

pub struct CommandProvider {
    ctx: AgentContext,
    process: Option<AgentProcess>,
    stdout: Option<ChildStdout>,
    transcript: Option<SharedTranscript>,
}

/// Why reading a reply stopped.
enum ReplyEnd {
    Replied,
    Silent,
    TimedOut,
    Cancelled,
    Ended,
}

impl CommandProvider {
    pub fn new(ctx: AgentContext) -> Self {
        Self {
            ctx,
            process: None,
            stdout: None,
            transcript: None,
        }
    }

    fn command_words(&self) -> Result<Vec<String>, AgentError> {
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
        Ok(words)
    }

    /// Sends one JSON line and reads the reply to it.
    async fn exchange(
        &mut self,
        line: serde_json::Value,
        step_id: u32,
        timeout: Duration,
        cancel: CancelSignal,
    ) -> StepVerdict {
        let started = Instant::now();
        let secrets = self.ctx.facts.secrets.clone();
        let mut collector = ReplyCollector::new(step_id, self.ctx.events.clone(), secrets.clone())
            .relative_to(&self.ctx.facts.run_dir);
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
        if let Err(e) = process.write_line(&line.to_string()).await {
            tracing::debug!("writing to the agent failed: {e}");
            // The read below sees the exit and reports it with the stderr tail.
        }
        let end = self.read_reply(&mut collector, timeout, cancel).await;
        if let Some(t) = &self.transcript {
            t.flush();
        }
        let mut verdict = match end {
            ReplyEnd::Replied => collector.verdict(None),
            ReplyEnd::Silent => {
                let limit = self.ctx.spec.no_output_timeout.unwrap_or_default();
                collector.verdict_with(
                    StepStatus::ProtocolError,
                    format!(
                        "the agent wrote {} bytes, then nothing for {}s, without a result marker line",
                        collector.bytes_seen(),
                        limit.as_secs_f64()
                    ),
                )
            }
            ReplyEnd::TimedOut => {
                let v = collector.verdict_with(
                    StepStatus::Timeout,
                    format!(
                        "step timed out after {}s; the agent was stopped",
                        timeout.as_secs_f64()
                    ),
                );
                self.stop().await;
                v
            }
            ReplyEnd::Cancelled => {
                let v = collector.interrupted_verdict();
                self.stop().await;
                v
            }
            ReplyEnd::Ended => {
                collector.finish();
                let process = self.process.as_mut();
                let death = match process {
                    Some(p) => {
                        p.wait_exit(Duration::from_secs(2)).await;
                        p.death(&secrets).await
                    }
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

    async fn read_reply(
        &mut self,
        collector: &mut ReplyCollector,
        timeout: Duration,
        mut cancel: CancelSignal,
    ) -> ReplyEnd {
        let Some(stdout) = self.stdout.as_mut() else {
            return ReplyEnd::Ended;
        };
        let settle = self.ctx.spec.reply_settle;
        let idle_limit = self.ctx.spec.no_output_timeout;
        let far = TokioInstant::now() + Duration::from_secs(86_400 * 365);
        let deadline = TokioInstant::now() + timeout;
        let mut settle_at: Option<TokioInstant> = None;
        let mut idle_at = idle_limit.map(|d| TokioInstant::now() + d);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            tokio::select! {
                read = stdout.read(&mut buf) => match read {
                    // A reply that ended with its marker stands; the exit is news for the next
                    // step (and the session, through the exit event).
                    Ok(0) | Err(_) if settle_at.is_some() => return ReplyEnd::Replied,
                    Ok(0) | Err(_) => return ReplyEnd::Ended,
                    Ok(n) => {
                        if let Some(t) = &self.transcript {
                            t.write(&buf[..n]);
                        }
                        let now = TokioInstant::now();
                        if collector.push(&buf[..n]) || settle_at.is_some() {
                            settle_at = Some(now + settle);
                        }
                        idle_at = idle_limit.map(|d| now + d);
                    }
                },
                _ = sleep_until(settle_at.unwrap_or(far)), if settle_at.is_some() => return ReplyEnd::Replied,
                _ = sleep_until(idle_at.unwrap_or(far)), if idle_at.is_some() => return ReplyEnd::Silent,
                _ = sleep_until(deadline) => return ReplyEnd::TimedOut,
                _ = cancelled(&mut cancel) => return ReplyEnd::Cancelled,
            }
        }
    }

    async fn stop(&mut self) -> TeardownState {
        let grace = self.ctx.spec.stop_timeout;
        if let Some(stdout) = self.stdout.take() {
            spawn_drain(stdout, self.transcript.clone());
        }
        let state = match self.process.as_mut() {
            Some(p) => p.stop(grace).await,
            None => TeardownState::Clean,
        };
        if let Some(t) = &self.transcript {
            t.finish();
        }
        state
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
        let words = self.command_words()?;
        let facts = &self.ctx.facts;
        let dir = facts.transcripts_dir();
        self.transcript = Some(SharedTranscript::create(
            &dir.join("agent.log"),
            facts.secrets.clone(),
        )?);
        let stderr =
            SharedTranscript::create(&dir.join("agent.stderr.log"), facts.secrets.clone())?;
        let spawn = SpawnSpec {
            program: PathBuf::from(&words[0]),
            args: words[1..].to_vec(),
            env: agent_env(&self.ctx.spec, facts),
            cwd: facts.workdir.clone(),
            label: format!("agent command (run {})", facts.run_id),
            run_id: facts.run_id.clone(),
            stderr,
            display: None,
        };
        let mut process = AgentProcess::spawn(spawn)?;
        self.stdout = process.take_stdout();
        process.notify_unexpected_exit(self.ctx.events.clone(), facts.secrets.clone());
        let exited = process.wait_exit(self.ctx.spec.startup_grace).await;
        let command = process.command_line.clone();
        let death = process.death(&facts.secrets).await;
        self.process = Some(process);
        match death {
            Some(death) if exited => Err(AgentError::ExitedAtStart { command, death }),
            _ => Ok(()),
        }
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
        let verdict = self.exchange(line, 0, timeout, cancel).await;
        let command = self
            .process
            .as_ref()
            .map(|p| p.command_line.clone())
            .unwrap_or_default();
        match verdict.status {
            StepStatus::Ok | StepStatus::Warn => Ok(()),
            status => Err(AgentError::Bootstrap {
                command,
                reason: format!("{}: {}", status.as_str(), verdict.message),
            }),
        }
    }

    async fn run_step(&mut self, request: &StepRequest, cancel: CancelSignal) -> StepVerdict {
        let facts = &self.ctx.facts;
        let line = json!({
            "type": "step",
            "run_id": facts.run_id,
            "session_id": facts.session_id,
            "step_id": request.step_id,
            "source_file": request.source_file,
            "source_index": request.source_index,
            "include_chain": request.include_chain,
            "instruction": request.instruction,
        });
        self.exchange(line, request.step_id, request.timeout, cancel)
            .await
    }

    async fn close(&mut self) -> TeardownState {
        self.stop().await
    }
}
