//! The agent process of a provider that starts one per step (Codex's `codex exec`, pi's
//! `pi --print`), shared by both: the program found at `start` (a missing one is an error before
//! any step), the transcripts opened once for the session, each step's process spawned with its
//! prompt and stdin closed, read to the turn's end through the one turn loop, then stopped; what
//! a lingering process writes after the turn goes to the transcript, never waited for.

use super::process::{spawn_drain, AgentProcess, SpawnSpec};
use super::transcript::SharedTranscript;
use super::turn::{self, Framing, Limits, Output, TurnEnd};
use super::{
    agent_env, AgentContext, AgentDeath, AgentError, AgentFault, CancelSignal, StepVerdict,
};
use crate::model::ids::StepId;
use crate::model::outcome::StepStatus;
use crate::model::outcome::TeardownState;
use crate::process::owner::{Owner, Role, Scope};
use tokio::process::ChildStdout;

/// One step's command line, as the provider builds it.
pub(crate) struct StepCommand {
    pub args: Vec<String>,
    /// Added to the agent's environment (`CODEX_HOME`).
    pub env: Vec<(String, String)>,
    /// The command line for messages, its long texts elided.
    pub shown: String,
}

/// The per-step process and the session's transcripts.
#[derive(Default)]
pub(crate) struct PerStep {
    /// The running step's process; `None` between steps.
    process: Option<AgentProcess>,
    pub log: Option<SharedTranscript>,
    pub jsonl: Option<SharedTranscript>,
    stderr: Option<SharedTranscript>,
    /// The running step's tool calls (replay records them).
    pub tools: super::tool_calls::ToolCalls,
}

impl PerStep {
    /// The provider's start: its program found, its transcripts opened.
    pub fn start(&mut self, ctx: &AgentContext, shown: String) -> Result<(), AgentError> {
        let program = ctx.spec.program.display().to_string();
        super::locate::find_program(&program, &ctx.spec.cwd).map_err(|why| AgentError::Spawn {
            command: shown,
            source: std::io::Error::new(std::io::ErrorKind::NotFound, why),
        })?;
        let transcripts = super::transcript::AgentTranscripts::create(&ctx.facts)?;
        self.log = Some(transcripts.log);
        self.jsonl = Some(transcripts.jsonl);
        self.stderr = Some(transcripts.stderr);
        Ok(())
    }

    /// The running step's process, if one runs.
    pub fn process(&self) -> Option<&AgentProcess> {
        self.process.as_ref()
    }

    /// A step about to run: the tool calls of the one before forgotten.
    pub fn begin(&mut self) {
        self.tools.take();
    }

    /// A step's verdict as the session gets it: its id, its time since `started`, the tool
    /// calls its stream showed.
    pub fn end(
        &mut self,
        mut verdict: StepVerdict,
        request: &super::StepRequest,
        started: std::time::Instant,
    ) -> StepVerdict {
        verdict.step_id = request.step_id;
        verdict.duration = started.elapsed();
        verdict.tool_calls = self.tools.take();
        verdict
    }

    /// A line of the readable account (`agent.log`).
    pub fn log(&self, text: &str) {
        if let Some(log) = &self.log {
            log.write(text.as_bytes());
        }
    }

    /// Spawns the step's process: the agent's environment, `command.env` and the step's id
    /// (one process per step: its tools see the step they serve), stdin closed at once (both
    /// CLIs read more prompt from a piped stdin until it ends).
    pub fn spawn(
        &mut self,
        ctx: &AgentContext,
        step_id: StepId,
        command: StepCommand,
    ) -> Result<ChildStdout, AgentError> {
        let provider = ctx.spec.provider.as_str();
        let Some(stderr) = self.stderr.clone() else {
            return Err(AgentError::Config {
                provider,
                problem: "started before its transcripts were opened".into(),
            });
        };
        let mut env = agent_env(&ctx.spec, &ctx.facts);
        env.extend(command.env);
        env.push(("BUGATTI_STEP_ID".into(), step_id.to_string()));
        env.push(super::step_traceparent(&ctx.facts, step_id));
        let spawn = SpawnSpec {
            program: ctx.spec.program.clone(),
            args: command.args,
            env,
            cwd: ctx.spec.cwd.clone(),
            owner: Owner::new(
                Scope::run(ctx.facts.run_id.clone()),
                Role::Agent(provider.into()),
            ),
            stderr,
            display: Some(command.shown),
        };
        let mut process = AgentProcess::spawn(spawn)?;
        process.close_stdin();
        let stdout = process.take_stdout();
        self.process = Some(process);
        stdout.ok_or_else(|| AgentError::Config {
            provider,
            problem: "the agent's stdout was not piped".into(),
        })
    }

    /// Reads the step's turn from `stdout`; whatever follows its end goes to `jsonl` (an
    /// associated function: the framing holds the provider, and with it this value).
    pub async fn read<F: Framing>(
        stdout: ChildStdout,
        jsonl: Option<SharedTranscript>,
        framing: &mut F,
        limits: Limits,
        cancel: CancelSignal,
    ) -> TurnEnd<F::Done> {
        let mut output = Output::new(Some(stdout));
        let end = output
            .read_turn(framing, limits, cancel, turn::NO_MESSAGE)
            .await;
        if let Some(stdout) = output.take() {
            spawn_drain(stdout, jsonl);
        }
        end
    }

    /// What the running step's process wrote on stderr so far (its last bytes).
    pub fn stderr_so_far(&self) -> String {
        self.process
            .as_ref()
            .map(AgentProcess::stderr_so_far)
            .unwrap_or_default()
    }

    /// How the step's process ended, once its output ended before the turn did.
    pub async fn death(&self, ctx: &AgentContext) -> AgentDeath {
        let death = match &self.process {
            Some(process) => process.death_once_exited(&ctx.facts.secrets).await,
            None => None,
        };
        death.unwrap_or(AgentDeath {
            status: "its output ended".into(),
            stderr_tail: String::new(),
        })
    }

    /// Stops the step's process (if one is running) and everything it started, and flushes the
    /// transcripts after it: what it wrote last is kept.
    pub async fn stop(&mut self, ctx: &AgentContext) -> TeardownState {
        let Some(mut process) = self.process.take() else {
            return TeardownState::Clean;
        };
        let state = process.stop(ctx.spec.stop_timeout).await;
        for t in [&self.log, &self.jsonl].into_iter().flatten() {
            t.flush();
        }
        state
    }

    /// The provider's close: the step's process stopped, the transcripts finished.
    pub async fn close(&mut self, ctx: &AgentContext) -> TeardownState {
        let state = self.stop(ctx).await;
        for t in [&self.log, &self.jsonl, &self.stderr].into_iter().flatten() {
            t.finish();
        }
        state
    }

    /// The provider's restart: each step is its own process, already stopped; the retried
    /// step goes on with the conversation (`how`: `resuming thread`, and its id), or starts
    /// afresh when the agent died before it had one.
    pub async fn restart(&mut self, ctx: &AgentContext, how: &str, conversation: Option<&str>) {
        self.stop(ctx).await;
        self.log(&format!(
            "### restart: {how} {}\n",
            conversation.unwrap_or("(none yet: starting afresh)")
        ));
    }

    /// A step whose process could not be started: the spawn error's verdict.
    pub fn spawn_failed(
        ctx: &AgentContext,
        collector: &super::reply::ReplyCollector,
        error: &AgentError,
    ) -> StepVerdict {
        turn::spawn_failed_verdict(collector, &error.to_string(), ctx.spec.provider)
    }

    /// A step whose process ended before its turn did: an error naming the command (`exited`:
    /// "Codex `codex exec …` exited before the turn ended"), how it ended and the last error it
    /// reported (`last_error`, under its CLI's own word for it), with the fault `Died`.
    pub fn died_verdict(
        collector: &super::reply::ReplyCollector,
        exited: String,
        death: AgentDeath,
        last_error: Option<(&str, &str)>,
    ) -> StepVerdict {
        let said = last_error
            .map(|(word, e)| format!("; {word}: {e}"))
            .unwrap_or_default();
        let mut v = collector.verdict_with(StepStatus::Error, format!("{exited}: {death}{said}"));
        v.fault = Some(AgentFault::Died(death));
        v
    }
}
