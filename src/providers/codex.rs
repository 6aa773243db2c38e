//! The `codex` provider: the OpenAI Codex CLI (0.169 to 0.171, docs/providers.md "Supported
//! versions"), one `codex exec --json` process per step (docs/providers.md "Providers").
//!
//! - Step 1 runs `codex exec --json --skip-git-repo-check <agent_args> <bootstrap + step>`; its
//!   `thread.started` names the thread. Every later step (and a restart) runs
//!   `codex exec --json --skip-git-repo-check <agent_args> resume <thread_id> <step>`: one
//!   conversation per session, kept in a `CODEX_HOME` of the session's own (in its workspace)
//!   that starts as a copy of the user's config and login (`codex_home`: `$CODEX_HOME`, else
//!   `~/.codex`), so the user's model, provider, profiles, MCP servers and `codex login` apply
//!   and nothing is written back. `agent_args` (`-c model_provider=…`, `-m …`) add to them.
//! - stdin is closed at once (`codex exec` otherwise waits for more input on a pipe).
//! - Output lines go raw to `transcripts/agent.jsonl`, a readable account to `agent.log`, stderr to
//!   `agent.stderr.log`. The reply is the last `agent_message` of the turn, scanned for markers;
//!   `turn.completed` ends the turn and carries the thread's tokens so far (a step's own are the
//!   difference); `turn.failed` is a step error naming
//!   Codex's message. `error` events are retry notices ("Reconnecting…"): kept as the last words,
//!   but not progress, so an API that errors forever trips the watchdog instead of hanging the step.
//! - Codex reports no money, only tokens: they are priced (`pricing`: `[provider] price_per_mtok`,
//!   else the built-in list price of the model) into `cost_usd`, which budgets then enforce; with
//!   no price known `cost_usd` stays unknown. Model turns are counted from the stream (each tool
//!   call, counted when it starts, and the final message, is one model response).

use super::codex_home;
use super::codex_sandbox;
use super::per_step::{PerStep, StepCommand};
use super::pricing;
use super::reply::ReplyCollector;
use super::turn::{self, Framing, Seen, TurnEnd};
use super::{
    bootstrap, AgentContext, AgentDeath, AgentError, CancelSignal, Provider, ProviderKind,
    StepRequest, StepUsage, StepVerdict,
};
use crate::model::config::PricePerMtok;
use crate::model::ids::StepId;
use crate::model::outcome::{StepStatus, TeardownState};
use crate::providers::console_wiring;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Instant;
use tokio::process::ChildStdout;

/// Characters of a command's output shown in `agent.log` (the whole one is in `agent.jsonl`).
const TOOL_OUTPUT_SHOWN: usize = 2000;

pub struct Codex {
    ctx: AgentContext,
    /// The running step's process and the transcripts.
    steps: PerStep,
    /// The conversation, once Codex named it (`thread.started`).
    thread_id: Option<String>,
    /// The thread's input and output tokens at the end of the previous turn: `turn.completed`
    /// reports the thread's totals, a step's own are the difference.
    tokens_so_far: (u64, u64),
    /// The thread's cached input tokens at the end of the previous turn.
    cached_so_far: u64,
    /// What the tokens cost (decided at the first spawn, once the session's Codex home holds the
    /// user's config.toml), or why that is unknown.
    price: Option<Result<(PricePerMtok, String), String>>,
    /// Whether Codex's own sandbox is lifted ([`codex_sandbox`]; decided at the first spawn, like
    /// `price`, from `agent_args` and the session's config.toml).
    bypass_sandbox: Option<bool>,
    /// The thread's cost so far, at `price`.
    cost_so_far: f64,
}

/// What one turn's stream has said so far.
#[derive(Default)]
struct TurnSoFar {
    last_message: Option<String>,
    last_error: Option<String>,
    /// Model responses: one per tool call, one for the final message.
    model_turns: u64,
    /// The items already counted as a model turn. A tool call counts when it *starts* (the model
    /// asked for it then): a command that outlasts Codex's wait for it completes turns later,
    /// or never, while the model keeps asking.
    counted: std::collections::HashSet<String>,
}

impl TurnSoFar {
    /// Counts `item` as one model turn, once, however many events name it.
    fn count(&mut self, item: &Value) {
        match item["id"].as_str() {
            Some(id) if !self.counted.insert(id.to_string()) => {}
            _ => self.model_turns += 1,
        }
    }
}

/// Whether an item of this type is a tool call the model made (one model response each).
fn is_tool_call(kind: &str) -> bool {
    matches!(kind, "command_execution" | "mcp_tool_call" | "file_change")
        || kind.ends_with("tool_call")
}

/// Codex's framing of a turn: `--json` lines until `turn.completed` or `turn.failed`.
struct CodexTurn<'a> {
    codex: &'a mut Codex,
    turn: &'a mut TurnSoFar,
    collector: &'a mut ReplyCollector,
    step_id: StepId,
}

impl Framing for CodexTurn<'_> {
    type Done = StepVerdict;

    fn line(&mut self, line: &[u8]) -> Seen<StepVerdict> {
        match self
            .codex
            .handle_line(line, self.turn, self.collector, self.step_id)
        {
            (_, Some(verdict)) => Seen::End(verdict),
            (true, None) => Seen::Progress,
            (false, None) => Seen::News,
        }
    }

    fn ended(&mut self, partial: &[u8]) -> Option<StepVerdict> {
        if partial.is_empty() {
            return None;
        }
        self.codex
            .handle_line(partial, self.turn, self.collector, self.step_id)
            .1
    }

    fn model_turns(&self) -> u64 {
        self.turn.model_turns
    }
}

impl Codex {
    pub fn new(ctx: AgentContext) -> Self {
        Self {
            ctx,
            steps: PerStep::default(),
            thread_id: None,
            tokens_so_far: (0, 0),
            cached_so_far: 0,
            price: None,
            bypass_sandbox: None,
            cost_so_far: 0.0,
        }
    }

    fn codex_home(&self) -> PathBuf {
        crate::model::artifacts::WorkspacePaths::new(&self.ctx.facts.workdir).codex_home()
    }

    /// Codex's own sandbox lifted, unless the user chose one ([`codex_sandbox`]).
    fn sandbox_bypass(&self) -> Option<String> {
        let bypass = self.bypass_sandbox.unwrap_or_else(|| self.decide_sandbox());
        bypass.then(|| codex_sandbox::BYPASS.to_string())
    }

    fn decide_sandbox(&self) -> bool {
        let config = self.codex_home().join("config.toml");
        !codex_sandbox::chosen_by_user(&self.ctx.spec.agent_args, &config)
    }

    /// The command line of one step: `resume <thread>` once the conversation exists.
    fn args(&self, prompt: &str) -> Vec<String> {
        let mut args: Vec<String> = vec![
            "exec".into(),
            "--json".into(),
            "--skip-git-repo-check".into(),
        ];
        args.extend(self.ctx.spec.agent_args.iter().cloned());
        args.extend(self.sandbox_bypass());
        // The console again on every invocation: each `codex exec` connects anew. Its token
        // travels in the environment (`BUGATTI_MCP_TOKEN`), never in argv.
        if let Some(endpoint) = &self.ctx.facts.console {
            args.extend(console_wiring::codex_args(endpoint));
        }
        if let Some(browser) = &self.ctx.facts.mcp.browser {
            args.extend(console_wiring::codex_browser_args(browser));
        }
        if let Some(thread) = &self.thread_id {
            args.push("resume".into());
            args.push(thread.clone());
        }
        args.push(prompt.to_string());
        args
    }

    /// The command line for messages, with the long prompt elided.
    fn shown_command(&self) -> String {
        let mut words = vec![
            self.ctx.spec.program.display().to_string(),
            "exec".into(),
            "--json".into(),
            "--skip-git-repo-check".into(),
        ];
        words.extend(self.ctx.spec.agent_args.iter().cloned());
        words.extend(self.sandbox_bypass());
        if let Some(thread) = &self.thread_id {
            words.push("resume".into());
            words.push(thread.clone());
        }
        words.push("<prompt>".into());
        shell_words::join(words)
    }

    fn log(&self, text: &str) {
        self.steps.log(text);
    }

    fn spawn(&mut self, prompt: &str, step_id: StepId) -> Result<ChildStdout, AgentError> {
        let home = self.codex_home();
        let fresh = !home.exists();
        std::fs::create_dir_all(&home).map_err(|source| AgentError::Spawn {
            command: format!("mkdir {}", home.display()),
            source,
        })?;
        // The session's home starts from the user's config and login (once: later steps find
        // it, and whatever Codex wrote to it, as they left it).
        if fresh {
            if let Some(user) = codex_home::user_home() {
                codex_home::seed(&user, &home).map_err(|source| AgentError::Spawn {
                    command: format!(
                        "copy the Codex config and login of {} into {}",
                        user.dir.display(),
                        home.display()
                    ),
                    source,
                })?;
            }
        }
        if self.price.is_none() {
            let price = pricing::codex_price(
                self.ctx.spec.price_per_mtok,
                &self.ctx.spec.agent_args,
                Some(&home.join("config.toml")),
            );
            match &price {
                Ok((p, from)) => self.log(&format!("[pricing] {p} ({from})\n")),
                Err(why) => self.log(&format!("[pricing] cost unknown: {why}\n")),
            }
            self.price = Some(price);
        }
        if self.bypass_sandbox.is_none() {
            self.bypass_sandbox = Some(self.decide_sandbox());
        }
        let command = StepCommand {
            args: self.args(prompt),
            env: vec![("CODEX_HOME".into(), home.display().to_string())],
            shown: self.shown_command(),
        };
        self.steps.spawn(&self.ctx, step_id, command)
    }

    /// Handles one `--json` line; `Some` once the turn ended (completed or failed).
    fn handle_line(
        &mut self,
        raw: &[u8],
        turn: &mut TurnSoFar,
        collector: &mut ReplyCollector,
        step_id: StepId,
    ) -> (bool, Option<StepVerdict>) {
        if let Some(jsonl) = &self.steps.jsonl {
            jsonl.write(raw);
            if !raw.ends_with(b"\n") {
                jsonl.write(b"\n");
            }
        }
        // The model asked the absent user a question: Codex answers the call itself (an error,
        // or no answer) and says so only on stderr; the turn would go on on a guess.
        if let Some(said) = asked_user(&self.steps.stderr_so_far()) {
            self.log(&format!("[request_user_input] {said}\n"));
            let mut verdict = collector.verdict_with(
                StepStatus::Error,
                format!(
                    "Codex's model asked the user a question (request_user_input), and no one is \
                     there to answer it: {said}"
                ),
            );
            verdict.agent_error(
                crate::model::agent_fault::FaultKind::AskedUser,
                ProviderKind::Codex,
            );
            verdict.step_id = step_id;
            verdict.usage = Some(self.usage(&Value::Null, turn.model_turns));
            return (true, Some(verdict));
        }
        let text = String::from_utf8_lossy(raw);
        let Ok(event) = serde_json::from_str::<Value>(text.trim()) else {
            self.log(&format!("[non-json] {}\n", text.trim_end()));
            return (true, None);
        };
        match event["type"].as_str() {
            Some("thread.started") => {
                if let Some(id) = event["thread_id"].as_str() {
                    self.thread_id = Some(id.to_string());
                }
                (true, None)
            }
            Some("item.started") => {
                self.on_item_started(&event["item"], turn);
                (true, None)
            }
            Some("item.completed") => {
                self.on_item_completed(&event["item"], turn, collector);
                (true, None)
            }
            Some("error") => {
                // A retry notice ("Reconnecting… 2/5"): news, not progress.
                let message = event["message"].as_str().unwrap_or_default().to_string();
                self.log(&format!("[error] {message}\n"));
                turn.last_error = Some(message);
                (false, None)
            }
            Some("turn.completed") => (
                true,
                Some(self.on_turn_completed(&event, turn, collector, step_id)),
            ),
            Some("turn.failed") => (true, Some(self.on_turn_failed(&event, turn, collector))),
            _ => (true, None),
        }
    }

    /// `item.started`: a tool call counts as a model turn when it starts (a command that runs
    /// for minutes would otherwise never count against `max_turns_per_step`).
    fn on_item_started(&mut self, item: &Value, turn: &mut TurnSoFar) {
        if item["type"].as_str().is_some_and(is_tool_call) {
            turn.count(item);
        }
        if let Some(cmd) = item["command"].as_str() {
            self.log(&format!("[exec] {cmd}\n"));
        } else if item["type"] == "mcp_tool_call" {
            self.log(&format!(
                "[mcp] {}.{} {}\n",
                item["server"].as_str().unwrap_or("?"),
                item["tool"].as_str().unwrap_or("?"),
                item["arguments"]
            ));
        }
    }

    /// `item.completed`: the agent's messages, its commands' and MCP calls' answers (logged,
    /// kept for replay) and the turn count.
    fn on_item_completed(
        &mut self,
        item: &Value,
        turn: &mut TurnSoFar,
        collector: &mut ReplyCollector,
    ) {
        self.steps.tools.codex_item(item);
        match item["type"].as_str() {
            Some("agent_message") => {
                let text = item["text"].as_str().unwrap_or_default();
                self.log(&format!("{}\n", text.trim_end()));
                collector.push_text(text);
                turn.last_message = Some(text.to_string());
                turn.count(item);
            }
            Some("command_execution") => {
                let output = item["aggregated_output"].as_str().unwrap_or_default();
                let shown: String = output.chars().take(TOOL_OUTPUT_SHOWN).collect();
                let cut = if shown.len() < output.len() {
                    " …"
                } else {
                    ""
                };
                self.log(&format!(
                    "[exit {}] {}{cut}\n",
                    item["exit_code"],
                    shown.trim_end()
                ));
                turn.count(item);
            }
            Some("mcp_tool_call") => {
                // An agent-console call (or another MCP server's): what it answered.
                let answer = match item["error"]["message"].as_str() {
                    Some(error) => format!("error: {error}"),
                    None => item["result"]["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|c| c["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                };
                let shown: String = answer.chars().take(TOOL_OUTPUT_SHOWN).collect();
                let cut = if shown.len() < answer.len() {
                    " …"
                } else {
                    ""
                };
                self.log(&format!(
                    "[mcp {}] {}{cut}\n",
                    item["status"].as_str().unwrap_or("?"),
                    shown.trim_end()
                ));
                turn.count(item);
            }
            Some("reasoning") | None => {}
            Some(other) => {
                self.log(&format!("[{other}]\n"));
                if is_tool_call(other) {
                    turn.count(item);
                }
            }
        }
    }

    /// `turn.completed`: the step's tokens and cost, and its verdict from the last message.
    fn on_turn_completed(
        &mut self,
        event: &Value,
        turn: &mut TurnSoFar,
        collector: &mut ReplyCollector,
        step_id: StepId,
    ) -> StepVerdict {
        let usage = self.usage(&event["usage"], turn.model_turns);
        let totals = (
            usage.input_tokens.unwrap_or(0),
            usage.output_tokens.unwrap_or(0),
        );
        let cached_total = event["usage"]["cached_input_tokens"].as_u64().unwrap_or(0);
        let mut usage = StepUsage {
            input_tokens: Some(totals.0.saturating_sub(self.tokens_so_far.0)),
            output_tokens: Some(totals.1.saturating_sub(self.tokens_so_far.1)),
            ..usage
        };
        // Codex reports tokens only: priced here, the step's cost is what its own
        // tokens cost, and budgets stop Codex as they stop Claude Code.
        if let Some(Ok((price, _))) = &self.price {
            let step = price.cost_usd(
                usage.input_tokens.unwrap_or(0),
                cached_total.saturating_sub(self.cached_so_far),
                usage.output_tokens.unwrap_or(0),
            );
            self.cost_so_far += step;
            usage.cost_reported = true;
            usage.step_cost_usd = step;
            usage.total_cost_usd = self.cost_so_far;
        }
        self.cached_so_far = cached_total.max(self.cached_so_far);
        self.tokens_so_far = (
            totals.0.max(self.tokens_so_far.0),
            totals.1.max(self.tokens_so_far.1),
        );
        self.log(&format!(
            "[turn.completed] turns={} input_tokens={} output_tokens={}\n",
            usage.num_turns,
            usage.input_tokens.unwrap_or(0),
            usage.output_tokens.unwrap_or(0)
        ));
        let mut verdict = match &turn.last_message {
            Some(text) => {
                let (_, marker) = crate::model::markers::scan_text(text);
                if marker.is_none() {
                    // The collector has seen every message; the last one decides.
                    collector.verdict_with(
                        StepStatus::ProtocolError,
                        format!(
                            "Codex's last message of the turn ({} bytes) has no result \
                             marker line (RESULT OK, RESULT WARN: …, RESULT ERROR: …)",
                            text.len()
                        ),
                    )
                } else {
                    collector.verdict(marker.as_ref())
                }
            }
            None => collector.verdict_with(
                StepStatus::ProtocolError,
                "the Codex turn completed without an agent message",
            ),
        };
        verdict.step_id = step_id;
        verdict.usage = Some(usage);
        verdict
    }

    /// `turn.failed`: the step is an error, with Codex's own message (or the last retry notice).
    fn on_turn_failed(
        &mut self,
        event: &Value,
        turn: &mut TurnSoFar,
        collector: &mut ReplyCollector,
    ) -> StepVerdict {
        let message = event["error"]["message"]
            .as_str()
            .map(str::to_string)
            .or_else(|| turn.last_error.clone())
            .unwrap_or_else(|| event["error"].to_string());
        self.log(&format!("[turn.failed] {message}\n"));
        let mut verdict = collector.verdict_with(
            StepStatus::Error,
            format!("the Codex turn failed: {message}"),
        );
        // `turn.failed` is Codex's own word that the model could not be reached or answered
        // with an error: the agent's fault, not the app's.
        verdict.agent_error(
            crate::model::agent_fault::classify_api_failure(None, &message),
            ProviderKind::Codex,
        );
        verdict.usage = Some(self.usage(&Value::Null, turn.model_turns));
        verdict
    }

    fn usage(&self, usage: &Value, model_turns: u64) -> StepUsage {
        StepUsage {
            session_id: self.thread_id.clone().unwrap_or_default(),
            num_turns: model_turns,
            input_tokens: usage["input_tokens"].as_u64(),
            output_tokens: usage["output_tokens"].as_u64(),
            ..StepUsage::default()
        }
    }

    /// Stops the step's process (if any) and everything it started.
    async fn stop(&mut self) -> TeardownState {
        self.steps.stop(&self.ctx).await
    }

    /// One `codex exec` for `prompt`, read to the turn's end (or the watchdog's).
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
        let mut turn = TurnSoFar::default();
        let jsonl = self.steps.jsonl.clone();
        let mut framing = CodexTurn {
            codex: self,
            turn: &mut turn,
            collector: &mut collector,
            step_id: request.step_id,
        };
        let end = PerStep::read(stdout, jsonl, &mut framing, limits, cancel).await;
        let verdict = match end {
            TurnEnd::Done(v) => v,
            TurnEnd::Ended => {
                let death = self.steps.death(&self.ctx).await;
                // A console Codex could not connect to: restarting would fail the same way.
                if self.ctx.facts.console.is_some() {
                    if let Some(problem) = console_wiring::codex_console_failure(&death.stderr_tail)
                    {
                        let mut v = collector.verdict_with(
                            StepStatus::Error,
                            format!("the agent console is unavailable: {problem}"),
                        );
                        v.agent_died = Some(AgentDeath {
                            status: format!("agent console unavailable ({problem})"),
                            stderr_tail: String::new(),
                        });
                        self.stop().await;
                        return v;
                    }
                }
                PerStep::died_verdict(
                    &collector,
                    format!(
                        "Codex `{}` exited before the turn ended",
                        self.shown_command()
                    ),
                    death,
                    turn.last_error
                        .as_deref()
                        .map(|e| ("its last error event", e)),
                )
            }
            TurnEnd::Stopped(stop) => {
                let agent = turn::Agent {
                    name: "Codex",
                    awaited: "no completed turn from Codex",
                };
                let last_words = turn.last_error.clone().unwrap_or_default();
                let mut v = turn::signal_stopped(
                    stop,
                    self.steps.process(),
                    &collector,
                    ProviderKind::Codex,
                )
                .unwrap_or_else(|| {
                    turn::stopped_verdict(stop, &collector, &limits, agent, last_words)
                });
                if let turn::Stop::OverTurns(turns) = stop {
                    v.usage = Some(self.usage(&Value::Null, turns));
                }
                v
            }
        };
        self.stop().await;
        verdict
    }
}

/// Codex's stderr line for a `request_user_input` call it could not put to a user, if `stderr`
/// holds one: `request_user_input is unavailable in Default mode` (0.169 and later, by default)
/// or `… is not supported in exec mode` (with the `default_mode_request_user_input` feature).
fn asked_user(stderr: &str) -> Option<String> {
    stderr
        .lines()
        .find(|line| {
            line.contains("request_user_input is unavailable")
                || line.contains("request_user_input is not supported")
        })
        .map(|line| {
            let from = line.find("request_user_input").unwrap_or(0);
            line[from..].trim().chars().take(200).collect()
        })
}

#[async_trait::async_trait]
impl Provider for Codex {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Codex
    }

    /// Checks that Codex can be started and opens the transcripts; Codex itself starts with each
    /// step.
    async fn start(&mut self) -> Result<(), AgentError> {
        let shown = self.shown_command();
        self.steps.start(&self.ctx, shown)
    }

    /// The bootstrap travels in the first step's message (Codex has no separate system prompt
    /// flag for `exec`): nothing to send now.
    async fn bootstrap(&mut self) -> Result<(), AgentError> {
        Ok(())
    }

    async fn run_step(&mut self, request: &StepRequest, cancel: CancelSignal) -> StepVerdict {
        let started = Instant::now();
        let step = bootstrap::step_message(&self.ctx.facts, request);
        let prompt = match &self.thread_id {
            Some(_) => step,
            None => format!(
                "{}\n\n{step}",
                bootstrap::system_prompt(&self.ctx.spec, &self.ctx.facts)
            ),
        };
        self.steps.begin();
        let verdict = self.run_turn(&prompt, request, cancel).await;
        self.steps.end(verdict, request, started)
    }

    async fn close(&mut self) -> TeardownState {
        self.steps.close(&self.ctx).await
    }

    /// Each step is its own process, already stopped: the retried step resumes the thread (or,
    /// when Codex died before naming one, starts it again with the bootstrap).
    async fn restart(&mut self) -> Result<bool, AgentError> {
        let thread = self.thread_id.as_deref();
        self.steps
            .restart(&self.ctx, "resuming thread", thread)
            .await;
        Ok(true)
    }
}
