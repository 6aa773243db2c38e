//! The `pi` provider: the pi coding agent CLI (npm `@mariozechner/pi-coding-agent`, 0.73), run as
//! Bugatti runs it (docs/providers.md).
//!
//! - One `pi --print --mode json` process per step, on one pi session per root test kept in the
//!   session's own session directory (`--session-dir <workspace>/.pi-sessions`): the first step
//!   starts it, every later step (and a restart) continues it (`--continue`). The bootstrap goes
//!   in with `--append-system-prompt` on every invocation (pi does not keep it in the session);
//!   the step message is the prompt; `agent_args` (`--provider`, `--model`, `--tools`) are
//!   appended before it. stdin is closed at once.
//! - MCP: pi 1.x gets the console (`bugatti`) and the session browser (`browser`) from an
//!   extension the provider writes and passes with `-e` (`console_wiring::for_pi`): their tools
//!   are declared to the model as `mcp__bugatti__*` / `mcp__browser__*`. pi 0.73 takes no MCP
//!   servers (it loads the extension, which does nothing there): the console is offered through
//!   `BUGATTI_MCP_URL` / `BUGATTI_MCP_TOKEN` in its environment and its address in the bootstrap.
//! - Output lines go raw to `transcripts/agent.jsonl`, a readable account to `agent.log`, stderr
//!   to `agent.stderr.log`. `agent_end` ends the reply and is authoritative (Bugatti #48: a pi that
//!   lingers after it is stopped, not waited for); the last assistant message's marker decides.
//!   Each assistant message (`message_end`) is one model turn, with its tokens and cost in
//!   `usage` (`input`, `output`, `cost.total`): a step's usage is the sum of its own messages.
//!   `auto_retry_start` notices are news, not progress.
//! - Its `bash` tool calls (`tool_execution_start` / `_end`) are kept for replay.

use super::console_wiring;
use super::per_step::{PerStep, StepCommand};
use super::reply::ReplyCollector;
use super::turn::{self, Framing, Seen, TurnEnd};
use super::{
    bootstrap, AgentContext, AgentError, CancelSignal, Provider, ProviderKind, StepRequest,
    StepUsage, StepVerdict,
};
use crate::model::ids::StepId;
use crate::model::markers::scan_text;
use crate::model::outcome::{StepStatus, TeardownState};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Instant;
use tokio::process::ChildStdout;

/// Characters of a tool result shown in `agent.log` (the whole one is in `agent.jsonl`).
const TOOL_OUTPUT_SHOWN: usize = 2000;

pub struct Pi {
    ctx: AgentContext,
    /// The running step's process and the transcripts.
    steps: PerStep,
    /// pi's session id (its `session` line): there is a session to continue.
    session_id: Option<String>,
    /// The session's cost so far (pi reports each message's).
    cost_so_far: f64,
    /// `-e <extension>` registering the session's MCP servers (pi 1.x), and their names; empty
    /// when the session has neither console nor browser.
    mcp: console_wiring::PiMcp,
}

/// What one step's stream has said so far: pi's framing of a turn.
struct PiTurn<'a> {
    pi: &'a mut Pi,
    collector: &'a mut ReplyCollector,
    step_id: StepId,
    last_text: Option<String>,
    /// The last assistant message's error (`stopReason: "error"`), or a retry notice.
    last_error: Option<String>,
    usage: StepUsage,
    /// pi 1.x: the verdict of its final `agent_end`, held until `agent_settled` ends the reply.
    settled: Option<StepVerdict>,
}

impl Pi {
    pub fn new(ctx: AgentContext) -> Self {
        Self {
            ctx,
            steps: PerStep::default(),
            session_id: None,
            cost_so_far: 0.0,
            mcp: console_wiring::PiMcp::default(),
        }
    }

    fn session_dir(&self) -> PathBuf {
        crate::model::artifacts::WorkspacePaths::new(&self.ctx.facts.workdir).pi_sessions()
    }

    /// Whether a session was started (its file is in the session directory).
    fn has_session(&self) -> bool {
        self.session_id.is_some()
            || std::fs::read_dir(self.session_dir()).is_ok_and(|mut d| d.next().is_some())
    }

    fn base_args(&self) -> Vec<String> {
        let mut args: Vec<String> = vec![
            "--print".into(),
            "--mode".into(),
            "json".into(),
            "--session-dir".into(),
            self.session_dir().display().to_string(),
        ];
        if self.has_session() {
            args.push("--continue".into());
        }
        args.extend(self.mcp.args.iter().cloned());
        args
    }

    fn args(&self, prompt: &str) -> Vec<String> {
        let mut args = self.base_args();
        args.push("--append-system-prompt".into());
        args.push(self.system_prompt());
        args.extend(self.agent_args());
        args.push(prompt.to_string());
        args
    }

    /// `agent_args`, with the MCP servers' tools added to a `--tools` allowlist (which would
    /// otherwise leave them undeclared).
    fn agent_args(&self) -> Vec<String> {
        console_wiring::pi_tools_args(&self.ctx.spec.agent_args, &self.mcp.servers)
    }

    /// The bootstrap, with the console's address for a pi that takes no MCP servers (0.73).
    fn system_prompt(&self) -> String {
        let mut text = bootstrap::system_prompt(&self.ctx.spec, &self.ctx.facts);
        if let Some(endpoint) = &self.ctx.facts.console {
            text.push_str(&format!(
                "\nWith pi 1.x the console's tools are yours as mcp__bugatti__* (exec_command, \
                 write_stdin, list_logs, read_log, wait_for_log, …). Without them, the console \
                 `bugatti` is an MCP server (Streamable HTTP) at {} ; send its bearer token from \
                 $BUGATTI_MCP_TOKEN.\n",
                endpoint.url
            ));
        }
        text
    }

    /// The command line for messages, with the long texts elided.
    fn shown_command(&self) -> String {
        let mut words = vec![self.ctx.spec.program.display().to_string()];
        words.extend(self.base_args());
        words.extend(["--append-system-prompt".into(), "<bootstrap>".into()]);
        words.extend(self.agent_args());
        words.push("<prompt>".into());
        shell_words::join(words)
    }

    fn log(&self, text: &str) {
        self.steps.log(text);
    }

    fn spawn(&mut self, prompt: &str, step_id: StepId) -> Result<ChildStdout, AgentError> {
        let dir = self.session_dir();
        std::fs::create_dir_all(&dir).map_err(|source| AgentError::Spawn {
            command: format!("mkdir {}", dir.display()),
            source,
        })?;
        let command = StepCommand {
            args: self.args(prompt),
            env: Vec::new(),
            shown: self.shown_command(),
        };
        self.steps.spawn(&self.ctx, step_id, command)
    }

    async fn stop(&mut self) -> TeardownState {
        self.steps.stop(&self.ctx).await
    }

    /// One `pi --print` for `prompt`, read to `agent_end` (or the watchdog's end).
    async fn run_turn(
        &mut self,
        prompt: &str,
        request: &StepRequest,
        cancel: CancelSignal,
    ) -> StepVerdict {
        let mut collector = self.ctx.collector(request.step_id);
        let limits = self.ctx.step_limits(request.timeout);
        let stdout = match self.spawn(prompt, request.step_id) {
            Ok(stdout) => stdout,
            Err(e) => return PerStep::spawn_failed(&self.ctx, &collector, &e),
        };
        self.log(&format!("### step {}\n", request.step_id));
        let jsonl = self.steps.jsonl.clone();
        let mut turn = PiTurn {
            pi: self,
            collector: &mut collector,
            step_id: request.step_id,
            last_text: None,
            last_error: None,
            usage: StepUsage::default(),
            settled: None,
        };
        // Whatever follows `agent_end` (a lingering pi) goes to the transcript, never waited for.
        let end = PerStep::read(stdout, jsonl, &mut turn, limits, cancel).await;
        let (last_error, usage) = (turn.last_error.take(), turn.usage.clone());
        let verdict = match end {
            TurnEnd::Done(v) => v,
            TurnEnd::Ended => {
                let death = self.steps.death(&self.ctx).await;
                let mut v = PerStep::died_verdict(
                    &collector,
                    format!("pi `{}` exited before agent_end", self.shown_command()),
                    death,
                    last_error.as_deref().map(|e| ("its last error", e)),
                );
                v.usage = Some(usage);
                v
            }
            TurnEnd::Stopped(stop) => {
                let agent = turn::Agent {
                    name: "pi",
                    awaited: "no agent_end from pi",
                };
                let last_words = last_error.unwrap_or_default();
                let mut v =
                    turn::signal_stopped(stop, self.steps.process(), &collector, ProviderKind::Pi)
                        .unwrap_or_else(|| {
                            turn::stopped_verdict(stop, &collector, &limits, agent, last_words)
                        });
                if let turn::Stop::OverTurns(_) = stop {
                    v.usage = Some(usage);
                }
                v
            }
        };
        self.stop().await;
        verdict
    }
}

impl PiTurn<'_> {
    fn log(&self, text: &str) {
        self.pi.log(text);
    }

    /// An assistant message ended: one model turn, its text, tokens and cost.
    fn assistant(&mut self, message: &Value) {
        self.usage.num_turns += 1;
        let usage = &message["usage"];
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.usage.input_tokens = add(self.usage.input_tokens, usage["input"].as_u64());
        self.usage.output_tokens = add(self.usage.output_tokens, usage["output"].as_u64());
        if let Some(cost) = usage["cost"]["total"].as_f64() {
            self.usage.cost_reported = true;
            self.usage.step_cost_usd += cost;
        }
        let text = message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        if !text.trim().is_empty() {
            self.log(&format!("{}\n", text.trim_end()));
            self.collector.push_text(&text);
            self.last_text = Some(text);
        }
        if message["stopReason"] == "error" || message["stopReason"] == "aborted" {
            let error = message["errorMessage"]
                .as_str()
                .unwrap_or("the model request failed")
                .to_string();
            self.log(&format!("[error] {error}\n"));
            self.last_error = Some(error);
        }
    }

    fn tool_end(&mut self, event: &Value) {
        let content = event["result"]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        self.pi.steps.tools.pi_tool_end(event, &content);
        let shown: String = content.chars().take(TOOL_OUTPUT_SHOWN).collect();
        let cut = if shown.len() < content.len() {
            " …"
        } else {
            ""
        };
        let error = if event["isError"] == true {
            " (error)"
        } else {
            ""
        };
        self.log(&format!("[tool_result{error}] {}{cut}\n", shown.trim_end()));
    }

    /// `agent_end`: the reply is over; the last assistant message's marker decides.
    fn verdict(&mut self) -> StepVerdict {
        let mut usage = std::mem::take(&mut self.usage);
        usage.session_id = self.pi.session_id.clone().unwrap_or_default();
        self.pi.cost_so_far += usage.step_cost_usd;
        usage.total_cost_usd = self.pi.cost_so_far;
        self.log(&format!(
            "[agent_end] turns={} input_tokens={} output_tokens={} cost_usd={}\n",
            usage.num_turns,
            usage.input_tokens.unwrap_or(0),
            usage.output_tokens.unwrap_or(0),
            usage.step_cost_usd
        ));
        let marker = self.last_text.as_deref().and_then(|t| scan_text(t).1);
        let mut verdict = match (&marker, &self.last_error) {
            (None, Some(error)) => {
                let mut v = self
                    .collector
                    .verdict_with(StepStatus::Error, format!("the pi turn failed: {error}"));
                // pi's own error of the model request (after its retries): the agent's fault.
                v.agent_error(
                    crate::model::agent_fault::classify_api_failure(None, error),
                    ProviderKind::Pi,
                );
                v
            }
            (Some(_), _) => self.collector.verdict(marker.as_ref()),
            (None, None) => self.collector.verdict_with(
                StepStatus::ProtocolError,
                match &self.last_text {
                    Some(text) => format!(
                        "pi's last message of the turn ({} bytes) has no result marker line \
                         (RESULT OK, RESULT WARN: …, RESULT ERROR: …)",
                        text.len()
                    ),
                    None => "the pi turn ended without an assistant message".to_string(),
                },
            ),
        };
        verdict.step_id = self.step_id;
        verdict.usage = Some(usage);
        verdict
    }
}

impl Framing for PiTurn<'_> {
    type Done = StepVerdict;

    fn line(&mut self, raw: &[u8]) -> Seen<StepVerdict> {
        if let Some(jsonl) = &self.pi.steps.jsonl {
            jsonl.write(raw);
        }
        let text = String::from_utf8_lossy(raw);
        let Ok(event) = serde_json::from_str::<Value>(text.trim()) else {
            self.log(&format!("[non-json] {}\n", text.trim_end()));
            return Seen::Progress;
        };
        match event["type"].as_str() {
            Some("session") => {
                if let Some(id) = event["id"].as_str() {
                    self.pi.session_id = Some(id.to_string());
                }
            }
            Some("message_end") if event["message"]["role"] == "assistant" => {
                self.assistant(&event["message"]);
            }
            Some("tool_execution_start") => {
                self.pi.steps.tools.pi_tool_start(&event);
                let input = match event["args"]["command"].as_str() {
                    Some(cmd) => cmd.to_string(),
                    None => event["args"].to_string(),
                };
                let name = event["toolName"].as_str().unwrap_or("tool");
                self.log(&format!("[tool_use {name}] {input}\n"));
            }
            Some("tool_execution_end") => self.tool_end(&event),
            Some("auto_retry_start") => {
                let message = event["errorMessage"].as_str().unwrap_or_default();
                self.log(&format!("[retry] {message}\n"));
                self.last_error = Some(message.to_string());
                return Seen::News;
            }
            // pi 1.x ends a failed attempt that it will retry with `agent_end` carrying
            // `willRetry: true`: not the end of the reply.
            Some("agent_end") if event["willRetry"] == true => {
                self.log("[agent_end] pi retries\n");
                return Seen::News;
            }
            // pi 1.x (which says `willRetry`) ends the reply with `agent_settled`; 0.73 at
            // `agent_end`.
            Some("agent_end") if event.get("willRetry").is_some() => {
                self.settled = Some(self.verdict());
            }
            Some("agent_end") => return Seen::End(self.verdict()),
            Some("agent_settled") => {
                let verdict = match self.settled.take() {
                    Some(v) => v,
                    None => self.verdict(),
                };
                return Seen::End(verdict);
            }
            _ => {}
        }
        Seen::Progress
    }

    /// The output ended: a pi 1.x that exits after its final `agent_end` without
    /// `agent_settled` has still answered.
    fn ended(&mut self, partial: &[u8]) -> Option<StepVerdict> {
        if !partial.is_empty() {
            if let Seen::End(v) = self.line(partial) {
                return Some(v);
            }
        }
        self.settled.take()
    }

    fn model_turns(&self) -> u64 {
        self.usage.num_turns
    }
}

#[async_trait::async_trait]
impl Provider for Pi {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Pi
    }

    /// Checks that pi can be started and opens the transcripts; pi itself starts with each step.
    async fn start(&mut self) -> Result<(), AgentError> {
        self.mcp = console_wiring::for_pi(&self.ctx.facts)?;
        let shown = self.shown_command();
        self.steps.start(&self.ctx, shown)
    }

    /// The bootstrap travels as the appended system prompt of every invocation.
    async fn bootstrap(&mut self) -> Result<(), AgentError> {
        Ok(())
    }

    async fn run_step(&mut self, request: &StepRequest, cancel: CancelSignal) -> StepVerdict {
        let started = Instant::now();
        let prompt = bootstrap::step_message(&self.ctx.facts, request);
        self.steps.begin();
        let verdict = self.run_turn(&prompt, request, cancel).await;
        self.steps.end(verdict, request, started)
    }

    async fn close(&mut self) -> TeardownState {
        self.steps.close(&self.ctx).await
    }

    /// Each step is its own process, already stopped: the retried step continues the session
    /// (or starts it, when pi died before writing one).
    async fn restart(&mut self) -> Result<bool, AgentError> {
        let session = self.session_id.as_deref();
        self.steps
            .restart(&self.ctx, "continuing session", session)
            .await;
        Ok(true)
    }
}
