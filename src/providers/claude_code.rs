//! The `claude-code` provider: one `claude -p --input-format stream-json --output-format
//! stream-json --verbose` process per session (Claude Code 2.1.x).
//!
//! - The bootstrap (and `extra_system_prompt`) goes in with `--append-system-prompt`; `agent_args`
//!   are appended to the command line. No model turn is spent on the bootstrap.
//! - Each step is one stream-json user line carrying run id, session id, step id and provenance.
//! - Output lines go raw to `transcripts/agent.jsonl`; the readable part (text blocks, tool calls,
//!   tool results) to `transcripts/agent.log`. Text blocks are scanned for markers as they come.
//! - The reply ends when the agent is idle, not at the first `result` (`claude_reply_end`: a live
//!   subagent or backgrounded MCP call holds it, `session_state_changed` idle ends it). The last
//!   `result` is authoritative: `is_error` (not the subtype, not the exit code) says whether the
//!   turn failed; the marker in its `result` text decides the step (else the last marker of the
//!   step's text blocks, the subagents' own text left out). Every `result` of the step adds its
//!   turns, duration, cost and tokens (`usage`: input with the prompt cache's, output) to the
//!   step's [`ClaudeUsage`], once each (`result_index`). The turn is read through the shared turn
//!   loop (`turn`). A process that lingers after the reply is not waited for.
//! - The CLI's own API retries (`system/api_retry`) are read as they happen: each is a sign of
//!   life, and its `error_status` a classification: a refused key (401/403) or a quota (402) ends
//!   the step as that agent fault at once (the agent stopped), a 429 / 529 / other error names the
//!   fault of a step that runs out of time while the CLI retries it; a 429 / 529 is also raised
//!   at once on the step's `ThrottleSignal`, so that fewer agents go to the model at once.
//! - `init` lists the MCP servers the CLI rejected (`mcp_server_errors`, 2.1.2xx): the agent
//!   fault `cli_config`, before the step is answered. Its `cwd` is where the agent's shell is at
//!   the turn's start (2.1.265 and later keep a `cd` across messages): a recorded shell call
//!   starts there, and the recording says which version made it.
//! - Watchdog (docs/providers.md "Supervision"): a turn silent past
//!   `no_output_timeout_secs`, or a process that ends mid-turn, is an [`AgentFault`]; `restart`
//!   starts Claude Code again with `--resume <session_id>` (the session id its events carry).
//! - `max_turns_per_step` goes in as `--max-turns` (Claude Code's own `error_max_turns` result is
//!   `over_budget`) and is enforced from the stream too: one assistant message more stops it.
//! - Stopping: an `interrupt` control request first (it kills a running Bash tool, whose process
//!   runs in its own session out of reach of our group signals), then stdin closed, then SIGINT,
//!   SIGTERM, SIGKILL to the group, then processes carrying the agent marker.

use super::claude_reply_end::{keeps_cd_across_messages, ReplyEnd, ResultIs};
use super::claude_result::{api_fault, denial_note, denied_tools, input_tokens, rejected_servers};
use super::process::{spawn_drain, AgentProcess, SpawnSpec};
use super::reply::ReplyCollector;
use super::transcript::{AgentTranscripts, SharedTranscript};
use super::turn::{self, Framing, Output, Seen, Stop, TurnEnd};
use super::{
    agent_env, bootstrap, command::cancelled, AgentContext, AgentDeath, AgentError, AgentFault,
    CancelSignal, ClaudeUsage, Provider, ProviderKind, StepRequest, StepVerdict,
};
use crate::model::agent_fault::{classify_api_failure, FaultKind};
use crate::model::ids::StepId;
use crate::model::markers::scan_text;
use crate::model::outcome::{StepStatus, TeardownState};
use crate::process::owner::{Owner, Role, Scope};
use crate::providers::console_wiring;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio::process::ChildStdout;

/// Asks Claude Code for `system/session_state_changed` events (`running`, `idle`).
///
/// `CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS` is deliberately left as the user set it: 2.1.332 in print
/// mode did not move a 4 s console call to the background even with it at 1000 (only with the
/// user's own `CLAUDE_AUTO_BACKGROUND_TASKS=1`, and a moved call then holds the reply like a
/// subagent: tests/fixtures/claude-code/2.1.332/mcp_auto_background.jsonl), and the variable
/// would change every MCP server of the agent, the user's included (docs/providers.md, "When a
/// reply ends").
const SESSION_STATE_ENV: &str = "CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS";

/// Characters of a tool result shown in `agent.log` (the whole one is in `agent.jsonl`).
const TOOL_RESULT_SHOWN: usize = 2000;

pub struct ClaudeCode {
    ctx: AgentContext,
    process: Option<AgentProcess>,
    /// Its stdout, read through the shared turn loop.
    output: Output<ChildStdout>,
    log: Option<SharedTranscript>,
    jsonl: Option<SharedTranscript>,
    /// A turn was sent and its `result` not yet read.
    in_turn: bool,
    /// The conversation's cost at the end of the previous turn (Claude Code reports totals).
    cost_so_far: f64,
    /// Claude Code's session id, from its events: what a restart resumes.
    session_id: Option<String>,
    /// Assistant messages of the running turn (model turns), by message id.
    turn_messages: Vec<String>,
    /// The running step's tool calls (replay records them).
    tools: super::tool_calls::ToolCalls,
    /// The stderr transcript, kept for a restarted process.
    stderr: Option<SharedTranscript>,
    /// The process was restarted with `--resume` and has not answered a turn since.
    resumed: bool,
    /// The model its `system/init` event names: its tokens are priced at its built-in list
    /// price when `price_per_mtok` is not given.
    model: Option<String>,
    /// Its version, as its `system/init` event names it.
    version: Option<String>,
    /// When the reply to the running step is over.
    reply_end: ReplyEnd,
    /// The verdict of the step's last interim `result`: the step's, should the reply end
    /// without another.
    interim: Option<StepVerdict>,
    /// Every `result` of the running step, added up.
    step_usage: Option<ClaudeUsage>,
    /// The API failure the CLI is retrying now (its last `api_retry`), until the model answers.
    retrying: Option<FaultKind>,
    /// The delay of the running step's last retry of a 429 / 529 (`retry_delay_ms`): the
    /// API's `retry-after` when it sent one, which the CLI waits for.
    retry_delay: Option<std::time::Duration>,
    /// The running step's: raised at the first 429 / 529 the CLI retries.
    throttle: super::ThrottleSignal,
    /// The step ended on a fault that stops the agent (a refused key, a rejected server).
    stop_after: bool,
}

/// What Claude Code (2.1) answers a `--resume` of a session it never saved: killed before it
/// wrote the session's file, it has nothing to resume.
const NOT_RESUMABLE: &str = "No conversation found with session ID";

/// Claude Code's framing of a turn: stream-json lines until the `result` event.
struct ClaudeTurn<'a> {
    claude: &'a mut ClaudeCode,
    collector: &'a mut ReplyCollector,
    step_id: StepId,
}

impl Framing for ClaudeTurn<'_> {
    type Done = StepVerdict;

    /// Every line is a sign of life, an API retry notice included: the CLI is working through
    /// an API failure it names, which [`ClaudeCode::retrying`] classifies.
    fn line(&mut self, line: &[u8]) -> Seen<StepVerdict> {
        match self.claude.handle_line(line, self.collector, self.step_id) {
            Some(verdict) => Seen::End(verdict),
            None => Seen::Progress,
        }
    }

    fn ended(&mut self, partial: &[u8]) -> Option<StepVerdict> {
        if partial.is_empty() {
            return None;
        }
        self.claude
            .handle_line(partial, self.collector, self.step_id)
    }

    /// One model turn per assistant message id.
    fn model_turns(&self) -> u64 {
        self.claude.turn_messages.len() as u64
    }
}

/// A spec for Claude Code with every default (the fuzz targets read its stream with it).
pub fn spec() -> super::AgentSpec {
    super::AgentSpec::new(ProviderKind::ClaudeCode)
}

impl ClaudeCode {
    pub fn new(ctx: AgentContext) -> Self {
        Self {
            ctx,
            process: None,
            output: Output::new(None),
            log: None,
            jsonl: None,
            in_turn: false,
            cost_so_far: 0.0,
            session_id: None,
            turn_messages: Vec::new(),
            tools: Default::default(),
            stderr: None,
            resumed: false,
            model: None,
            version: None,
            reply_end: ReplyEnd::default(),
            interim: None,
            step_usage: None,
            retrying: None,
            retry_delay: None,
            throttle: super::ThrottleSignal::default(),
            stop_after: false,
        }
    }

    fn args(&self) -> Vec<String> {
        let mut args: Vec<String> = [
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--append-system-prompt",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(bootstrap::system_prompt(&self.ctx.spec, &self.ctx.facts));
        args.extend(self.supervision_args());
        args.extend(self.ctx.spec.agent_args.iter().cloned());
        args
    }

    /// `--max-turns` (a budget) and, after a restart, `--resume <session_id>`.
    fn supervision_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(max) = self.ctx.spec.max_turns_per_step {
            args.extend(["--max-turns".to_string(), max.to_string()]);
        }
        if let Some(id) = &self.session_id {
            args.extend(["--resume".to_string(), id.clone()]);
        }
        args
    }

    /// The command line for messages, with the long prompt elided.
    fn shown_command(&self) -> String {
        let mut words = vec![
            self.ctx.spec.program.display().to_string(),
            "-p".into(),
            "--input-format".into(),
            "stream-json".into(),
            "--output-format".into(),
            "stream-json".into(),
            "--verbose".into(),
            "--append-system-prompt".into(),
            "<bootstrap>".into(),
        ];
        words.extend(self.supervision_args());
        words.extend(self.ctx.spec.agent_args.iter().cloned());
        shell_words::join(words)
    }

    fn log(&self, text: &str) {
        if let Some(log) = &self.log {
            log.write(text.as_bytes());
        }
    }

    /// Handles one stream-json line; `Some` once the turn's `result` arrived.
    pub(crate) fn handle_line(
        &mut self,
        raw: &[u8],
        collector: &mut ReplyCollector,
        step_id: StepId,
    ) -> Option<StepVerdict> {
        if let Some(jsonl) = &self.jsonl {
            jsonl.write(raw);
            if !raw.ends_with(b"\n") {
                jsonl.write(b"\n");
            }
        }
        let text = String::from_utf8_lossy(raw);
        let Ok(event) = serde_json::from_str::<Value>(text.trim()) else {
            // Not JSON: keep it readable, it is still the agent's output.
            self.log(&format!("[non-json] {}\n", text.trim_end()));
            return None;
        };
        if let Some(id) = event["session_id"].as_str().filter(|id| !id.is_empty()) {
            self.session_id = Some(id.to_string());
        }
        // A subagent's own messages (they name the tool call that started it) are its work, not
        // the reply: what it found reaches the agent, whose own text answers the step.
        let subagent = !event["parent_tool_use_id"].is_null();
        if matches!(event["type"].as_str(), Some("assistant" | "user")) {
            // The model answered: the API is not failing (any more).
            self.retrying = None;
        }
        match event["type"].as_str() {
            Some("assistant") if subagent => {
                for block in event["message"]["content"].as_array().into_iter().flatten() {
                    if let Some(text) = block["text"].as_str() {
                        self.log(&format!("[subagent] {}\n", text.trim_end()));
                    }
                }
                None
            }
            Some("user") if subagent => None,
            Some("assistant") => {
                // One line per content block: a model turn is one message id.
                let id = event["message"]["id"].as_str().unwrap_or_default();
                if !self.turn_messages.iter().any(|m| m == id) {
                    self.turn_messages.push(id.to_string());
                }
                for block in event["message"]["content"].as_array().into_iter().flatten() {
                    match block["type"].as_str() {
                        Some("text") => {
                            let text = block["text"].as_str().unwrap_or_default();
                            self.log(&format!("{}\n", text.trim_end()));
                            collector.push_text(text);
                        }
                        Some("tool_use") => {
                            self.tools.claude_tool_use(block);
                            let name = block["name"].as_str().unwrap_or("tool");
                            let input = match block["input"]["command"].as_str() {
                                Some(cmd) => cmd.to_string(),
                                None => block["input"].to_string(),
                            };
                            self.log(&format!("[tool_use {name}] {input}\n"));
                        }
                        _ => {}
                    }
                }
                None
            }
            Some("user") => {
                for block in event["message"]["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_result" {
                        let content = match &block["content"] {
                            Value::String(s) => s.clone(),
                            Value::Array(parts) => parts
                                .iter()
                                .filter_map(|p| p["text"].as_str())
                                .collect::<Vec<_>>()
                                .join("\n"),
                            other => other.to_string(),
                        };
                        self.tools
                            .claude_tool_result(block, &content, &event["tool_use_result"]);
                        let shown: String = content.chars().take(TOOL_RESULT_SHOWN).collect();
                        let cut = if shown.len() < content.len() {
                            " …"
                        } else {
                            ""
                        };
                        self.log(&format!("[tool_result] {}{cut}\n", shown.trim_end()));
                    }
                }
                None
            }
            Some("result") => {
                let is = self.reply_end.result(&event);
                if is == ResultIs::Repeated {
                    return None;
                }
                let verdict = self.result_verdict(&event, collector, step_id);
                match is {
                    ResultIs::Final => Some(verdict),
                    ResultIs::Interim => {
                        self.log(&format!(
                            "[interim result] {} background task(s) live; the reply goes on\n",
                            self.reply_end.holding()
                        ));
                        self.interim = Some(verdict);
                        None
                    }
                    ResultIs::Late | ResultIs::Repeated => None,
                }
            }
            Some("system") => self.system_line(&event, collector, step_id),
            _ => None,
        }
    }

    /// A `system` line: the turn's start (`init`), the background tasks, the session's state,
    /// an API retry.
    fn system_line(
        &mut self,
        event: &Value,
        collector: &mut ReplyCollector,
        step_id: StepId,
    ) -> Option<StepVerdict> {
        match event["subtype"].as_str() {
            Some("init") => self.init(event, collector, step_id),
            Some("background_tasks_changed") => {
                self.reply_end.tasks_changed(event);
                None
            }
            Some("session_state_changed") => {
                let state = event["state"].as_str().unwrap_or_default();
                if !self.reply_end.state(state) {
                    return None;
                }
                self.interim.take()
            }
            Some("api_retry") => self.api_retry(event, collector, step_id),
            _ => None,
        }
    }

    /// `system/init`, sent as each turn starts: the model and version, where the agent's shell
    /// is, the MCP servers rejected and whether the agent console connected.
    fn init(
        &mut self,
        event: &Value,
        collector: &mut ReplyCollector,
        step_id: StepId,
    ) -> Option<StepVerdict> {
        self.reply_end.turn_began();
        if let Some(model) = event["model"].as_str() {
            self.model = Some(model.to_string());
        }
        if let Some(version) = event["claude_code_version"].as_str() {
            self.version = Some(version.to_string());
        }
        let carried = self
            .version
            .as_deref()
            .is_some_and(keeps_cd_across_messages);
        let shell_dir = event["cwd"].as_str().filter(|_| carried);
        self.tools
            .claude_turn_began(self.version.as_deref(), shell_dir);
        if let Some(rejected) = rejected_servers(event) {
            let mut verdict = collector.verdict_with(
                StepStatus::Error,
                format!("Claude Code rejected MCP server(s) of its configuration: {rejected}"),
            );
            verdict.step_id = step_id;
            verdict.agent_error(FaultKind::CliConfig, ProviderKind::ClaudeCode);
            self.stop_after = true;
            return Some(verdict);
        }
        // The agent console must have connected: without it the step would fail for a reason
        // that is not the application's.
        self.ctx.facts.console.as_ref()?;
        let problem = console_wiring::check_claude_init(event).err()?;
        let mut verdict = collector.verdict_with(
            StepStatus::Error,
            format!("the agent console is unavailable: {problem}"),
        );
        verdict.step_id = step_id;
        verdict.agent_died = Some(super::AgentDeath {
            status: format!("agent console unavailable ({problem})"),
            stderr_tail: String::new(),
        });
        Some(verdict)
    }

    /// `system/api_retry`: the CLI retries a failed API request. A refused key or a quota ends
    /// the step at once (retrying them wastes the night); anything else is what the step's
    /// timeout is named after, should it run out while the CLI retries.
    fn api_retry(
        &mut self,
        event: &Value,
        collector: &mut ReplyCollector,
        step_id: StepId,
    ) -> Option<StepVerdict> {
        let status = event["error_status"].as_u64();
        let error = event["error"].as_str().unwrap_or_default();
        let kind = classify_api_failure(status, error);
        let status_text = status.map_or("no status".to_string(), |s| format!("HTTP {s}"));
        self.log(&format!(
            "[api_retry] attempt {} of {}: {status_text} {error}\n",
            event["attempt"], event["max_retries"]
        ));
        if !matches!(kind, FaultKind::Auth | FaultKind::Quota) {
            if matches!(kind, FaultKind::RateLimit | FaultKind::Overloaded) {
                self.throttle.raise(kind);
                self.retry_delay = event["retry_delay_ms"]
                    .as_f64()
                    .filter(|ms| ms.is_finite() && *ms > 0.0)
                    .map(|ms| std::time::Duration::from_secs_f64(ms / 1000.0));
            }
            self.retrying = Some(kind);
            return None;
        }
        let mut verdict = collector.verdict_with(
            StepStatus::Error,
            format!("the API answered {status_text} ({error}); Claude Code was retrying it"),
        );
        verdict.step_id = step_id;
        verdict.agent_error(kind, ProviderKind::ClaudeCode);
        self.stop_after = true;
        Some(verdict)
    }

    fn result_verdict(
        &mut self,
        event: &Value,
        collector: &mut ReplyCollector,
        step_id: StepId,
    ) -> StepVerdict {
        let usage = ClaudeUsage {
            session_id: event["session_id"].as_str().unwrap_or_default().to_string(),
            num_turns: event["num_turns"].as_u64().unwrap_or(0),
            duration_ms: event["duration_ms"].as_u64().unwrap_or(0),
            total_cost_usd: event["total_cost_usd"].as_f64().unwrap_or(0.0),
            cost_reported: event["total_cost_usd"].is_number(),
            input_tokens: input_tokens(&event["usage"]),
            output_tokens: event["usage"]["output_tokens"].as_u64(),
            ..ClaudeUsage::default()
        };
        let mut usage = usage;
        usage.step_cost_usd = (usage.total_cost_usd - self.cost_so_far).max(0.0);
        self.cost_so_far = usage.total_cost_usd;
        // Counted, not believed: with a price (the configured one, else the built-in list price
        // of the model Claude Code runs), this turn's tokens × the price is its cost.
        let u = &event["usage"];
        let cache_read = u["cache_read_input_tokens"].as_u64().unwrap_or(0);
        let cache_write = u["cache_creation_input_tokens"].as_u64().unwrap_or(0);
        let tokens = super::pricing::Tokens {
            fresh_input: usage
                .input_tokens
                .unwrap_or(0)
                .saturating_sub(cache_read + cache_write),
            cache_write,
            cache_write_1h: u["cache_creation"]["ephemeral_1h_input_tokens"]
                .as_u64()
                .unwrap_or(0),
            cache_read,
            output: usage.output_tokens.unwrap_or(0),
        };
        let reported = usage.cost_reported.then_some(usage.step_cost_usd);
        let price = self.ctx.spec.price_per_mtok.or_else(|| {
            self.model
                .as_deref()
                .and_then(super::pricing::claude_built_in)
        });
        if let Some((cost, beside)) = super::pricing::counted(price, tokens, reported) {
            usage.step_cost_usd = cost;
            usage.cost_reported = true;
            usage.reported_cost_usd = beside;
        }
        let denied = denied_tools(event);
        if !denied.is_empty() {
            self.log(&format!("[permission_denials] {}\n", denied.join(", ")));
        }
        let result_text = event["result"].as_str().unwrap_or_default();
        let subtype = event["subtype"].as_str().unwrap_or("unknown");
        self.log(&format!(
            "[result {subtype}] turns={} duration_ms={} cost_usd={}\n",
            usage.num_turns, usage.duration_ms, usage.total_cost_usd
        ));
        let mut verdict = if subtype == "error_max_turns" {
            collector.verdict_with(
                StepStatus::OverBudget,
                format!(
                    "Claude Code reached max_turns_per_step = {} ({} turns)",
                    self.ctx.spec.max_turns_per_step.unwrap_or_default(),
                    usage.num_turns
                ),
            )
        } else if event["is_error"].as_bool().unwrap_or(false) {
            let detail = if result_text.trim().is_empty() {
                event["errors"].to_string()
            } else {
                result_text.trim().to_string()
            };
            let mut verdict = collector.verdict_with(
                StepStatus::Error,
                format!("the Claude Code turn failed ({subtype}): {detail}"),
            );
            if let Some(kind) = api_fault(event, &detail) {
                verdict.agent_error(kind, ProviderKind::ClaudeCode);
            }
            verdict
        } else {
            let (_, marker) = scan_text(result_text);
            collector.verdict(marker.as_ref())
        };
        // Usually a tool the agent_args did not allow (as root: `--allowedTools Bash`): said on
        // the step, since what the model wrote after the refusal rarely says why.
        if let Some(note) = denial_note(&denied) {
            verdict.message = if verdict.message.is_empty() {
                note
            } else {
                format!("{} ({note})", verdict.message)
            };
        }
        verdict.step_id = step_id;
        verdict.usage = Some(self.add_usage(usage));
        verdict
    }

    /// One `result`'s usage added to the step's: turns, time, tokens and cost are each the sum
    /// of the step's results; the conversation's total is the last one's.
    fn add_usage(&mut self, usage: ClaudeUsage) -> ClaudeUsage {
        let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        let added = match self.step_usage.take() {
            None => usage,
            Some(before) => ClaudeUsage {
                num_turns: before.num_turns + usage.num_turns,
                duration_ms: before.duration_ms + usage.duration_ms,
                step_cost_usd: before.step_cost_usd + usage.step_cost_usd,
                cost_reported: before.cost_reported || usage.cost_reported,
                input_tokens: sum(before.input_tokens, usage.input_tokens),
                output_tokens: sum(before.output_tokens, usage.output_tokens),
                reported_cost_usd: match (before.reported_cost_usd, usage.reported_cost_usd) {
                    (None, None) => None,
                    (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
                },
                ..usage
            },
        };
        self.step_usage = Some(added.clone());
        added
    }

    /// Interrupts a running turn (the control request kills a running tool), then tears down.
    async fn stop(&mut self) -> TeardownState {
        let Some(process) = self.process.as_mut() else {
            return TeardownState::Clean;
        };
        if self.in_turn && !process.is_torn_down() {
            let interrupt = json!({
                "type": "control_request",
                "request_id": "bugatti-stop",
                "request": {"subtype": "interrupt"},
            });
            // Best effort, and bounded: a CLI that no longer reads gets the signals below.
            let _ = crate::process::teardown::within_grace(
                Duration::from_secs(1),
                process.write_line(&interrupt.to_string()),
            )
            .await;
        }
        if let Some(stdout) = self.output.take() {
            spawn_drain(stdout, self.jsonl.clone());
        }
        let state = process.stop(self.ctx.spec.stop_timeout).await;
        self.in_turn = false;
        for t in [&self.log, &self.jsonl].into_iter().flatten() {
            t.finish();
        }
        state
    }

    async fn died(&mut self, collector: &ReplyCollector, what: &str) -> StepVerdict {
        let secrets = self.ctx.facts.secrets.clone();
        let command = self.shown_command();
        let death = match self.process.as_ref() {
            Some(p) => p.death_once_exited(&secrets).await,
            None => None,
        };
        let detail = death
            .as_ref()
            .map_or("its output ended".to_string(), ToString::to_string);
        let mut verdict = collector.verdict_with(
            StepStatus::Error,
            format!("Claude Code `{command}` {what}: {detail}"),
        );
        verdict.fault = Some(AgentFault::Died(death.clone().unwrap_or(AgentDeath {
            status: "its output ended".into(),
            stderr_tail: String::new(),
        })));
        verdict.agent_died = death;
        verdict
    }
}

#[async_trait::async_trait]
impl Provider for ClaudeCode {
    fn kind(&self) -> ProviderKind {
        ProviderKind::ClaudeCode
    }

    async fn start(&mut self) -> Result<(), AgentError> {
        let transcripts = AgentTranscripts::create(&self.ctx.facts)?;
        self.log = Some(transcripts.log);
        self.jsonl = Some(transcripts.jsonl);
        self.stderr = Some(transcripts.stderr);
        self.spawn().await
    }

    /// The bootstrap travels as the appended system prompt: nothing to send, but a process that
    /// died since `start` (bad arguments are reported after a few seconds) is caught here.
    async fn bootstrap(&mut self) -> Result<(), AgentError> {
        let secrets = self.ctx.facts.secrets.clone();
        if let Some(process) = self.process.as_ref() {
            if let Some(death) = process.death(&secrets).await {
                return Err(AgentError::ExitedAtStart {
                    command: process.command_line.clone(),
                    death,
                });
            }
        }
        Ok(())
    }

    async fn run_step(&mut self, request: &StepRequest, cancel: CancelSignal) -> StepVerdict {
        self.turn_messages.clear();
        self.tools.take();
        self.throttle = request.throttle.clone();
        let mut verdict = self.step(request, cancel.clone()).await;
        if std::mem::take(&mut self.resumed) && verdict.message.contains(NOT_RESUMABLE) {
            // The conversation is lost with the process that died: the step starts a new one
            // (the bootstrap rides on every command line) rather than failing for it.
            self.log(&format!(
                "### restart: Claude Code had not saved session {} before it died; starting a new \
                 conversation\n",
                self.session_id.as_deref().unwrap_or_default()
            ));
            self.stop().await;
            self.process = None;
            self.session_id = None;
            self.cost_so_far = 0.0;
            self.reply_end.restarted();
            if let Err(e) = self.spawn().await {
                verdict.message = format!(
                    "{}; starting a new conversation failed: {e}",
                    verdict.message
                );
                return verdict;
            }
            self.turn_messages.clear();
            self.tools.take();
            verdict = self.step(request, cancel).await;
        }
        verdict.tool_calls = self.tools.take();
        verdict
    }

    async fn close(&mut self) -> TeardownState {
        self.stop().await
    }

    /// Stops what is left of the process and starts Claude Code again on the same session
    /// (`--resume`); transcripts go on in the same files.
    async fn restart(&mut self) -> Result<bool, AgentError> {
        self.stop().await;
        self.process = None;
        // A resumed Claude Code (2.1.197) counts its cost from zero again, not from the session's.
        self.cost_so_far = 0.0;
        self.log(&format!(
            "### restart: resuming session {}\n",
            self.session_id
                .as_deref()
                .unwrap_or("(none yet: starting afresh)")
        ));
        self.resumed = self.session_id.is_some();
        self.reply_end.restarted();
        self.spawn().await?;
        Ok(true)
    }
}

impl ClaudeCode {
    /// Starts the process (the transcripts are open), watches it for an immediate exit.
    async fn spawn(&mut self) -> Result<(), AgentError> {
        let facts = &self.ctx.facts;
        let Some(stderr) = self.stderr.clone() else {
            return Err(AgentError::Config {
                provider: "claude-code",
                problem: "started before its transcripts were opened".into(),
            });
        };
        let console = console_wiring::for_claude(facts)?;
        let mut args = self.args();
        // Before the prompt flag: `--mcp-config` takes several values.
        let at = args
            .iter()
            .position(|a| a == "--append-system-prompt")
            .unwrap_or(0);
        args.splice(at..at, console.args);
        let mut env = agent_env(&self.ctx.spec, facts);
        // The CLI says when it is idle (`session_state_changed`, 2.1.2xx): the end of a reply
        // whose subagents ran in the background. An older CLI ignores the variable.
        env.push((SESSION_STATE_ENV.to_string(), "1".to_string()));
        env.extend(console.env);
        let spawn = SpawnSpec {
            program: self.ctx.spec.program.clone(),
            args,
            env,
            cwd: self.ctx.spec.cwd.clone(),
            owner: Owner::new(
                Scope::run(facts.run_id.clone()),
                Role::Agent("claude-code".into()),
            ),
            stderr,
            display: Some(self.shown_command()),
        };
        let mut process = AgentProcess::spawn(spawn)?;
        self.output = Output::new(process.take_stdout());
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

    /// One step on the running process.
    async fn step(&mut self, request: &StepRequest, cancel: CancelSignal) -> StepVerdict {
        let started = Instant::now();
        let mut collector = self.ctx.collector(request.step_id);
        let Some(process) = self.process.as_mut() else {
            return collector.verdict_with(StepStatus::Error, "Claude Code is not running");
        };
        if process.is_torn_down() {
            return collector.verdict_with(StepStatus::Error, "Claude Code was stopped earlier");
        }
        if process.exit_status().is_some() {
            return self
                .died(&collector, "had already exited before the step")
                .await;
        }
        let message = bootstrap::step_message(&self.ctx.facts, request);
        let line = json!({"type": "user", "message": {"role": "user", "content": message}});
        // Claude Code may stop reading its input (a wedged CLI): the write of a long step message
        // must not outlive the step's deadline or a cancel.
        let limits = self.ctx.step_limits(request.timeout);
        let deadline = limits.deadline;
        let mut cancel_during_write = cancel.clone();
        let text = line.to_string();
        let written = tokio::select! {
            // A failed write is seen by the read below (the agent's end of output).
            _ = process.write_line(&text) => true,
            () = deadline.reached() => false,
            _ = cancelled(&mut cancel_during_write) => {
                let v = collector.interrupted_verdict();
                self.stop().await;
                return v;
            }
        };
        if !written {
            let v = turn::timed_out_verdict(
                &collector,
                request.timeout,
                ": Claude Code did not read the step message (its input stayed full); the agent \
                 was stopped",
            );
            self.stop().await;
            return v;
        }
        self.log(&format!("### step {}\n", request.step_id));
        self.in_turn = true;
        self.reply_end.new_step();
        self.interim = None;
        self.step_usage = None;
        self.retrying = None;
        self.retry_delay = None;
        let mut output = std::mem::replace(&mut self.output, Output::new(None));
        let mut framing = ClaudeTurn {
            claude: self,
            collector: &mut collector,
            step_id: request.step_id,
        };
        let end = output
            .read_turn(&mut framing, limits, cancel, turn::NO_MESSAGE)
            .await;
        self.output = output;
        let mut verdict = match end {
            TurnEnd::Done(v) => {
                if std::mem::take(&mut self.stop_after) {
                    self.stop().await;
                }
                self.in_turn = false;
                v
            }
            TurnEnd::Ended => self.died(&collector, "exited during the step").await,
            TurnEnd::Stopped(stop) => {
                let agent = turn::Agent {
                    name: "Claude Code",
                    awaited: "no result from Claude Code",
                };
                let mut v = turn::signal_stopped(
                    stop,
                    self.process.as_ref(),
                    &collector,
                    ProviderKind::ClaudeCode,
                )
                .unwrap_or_else(|| {
                    turn::stopped_verdict(stop, &collector, &limits, agent, String::new())
                });
                // Out of time while the CLI retried an API failure: the API's fault, named.
                // (Its retry notices are progress, and its backoff, about half a minute at
                // most, stays under the default silence limit.)
                if let (Stop::TimedOut, Some(kind)) = (stop, self.retrying.take()) {
                    v.message = format!(
                        "{} while Claude Code retried an API error ({kind})",
                        v.message
                    );
                    v.agent_error(kind, ProviderKind::ClaudeCode);
                }
                // What the step's results cost is counted, even when its reply did not end.
                v.usage = self.step_usage.take();
                self.stop().await;
                v
            }
        };
        for t in [&self.log, &self.jsonl].into_iter().flatten() {
            t.flush();
        }
        verdict.duration = started.elapsed();
        if matches!(
            verdict.agent_fault,
            Some(FaultKind::RateLimit | FaultKind::Overloaded)
        ) {
            verdict.retry_after = self.retry_delay;
        }
        verdict
    }
}

#[cfg(test)]
#[path = "claude_code_tests.rs"]
mod tests;
