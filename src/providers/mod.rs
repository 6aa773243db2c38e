//! Agent providers behind one trait (docs/providers.md): `claude-code`, `codex`, `pi`, `command`
//! and `shell`.
//!
//! The session never knows which provider it talks to: it builds an [`AgentSpec`] (what the
//! config says) and [`SessionFacts`] (what this session is), asks [`create`] for a provider, then
//! calls `start`, `bootstrap`, `run_step` per planned step and `close`. Live markers of a running
//! step (`BUGATTI_LOG`, `BUGATTI_EVIDENCE`) and the agent's death between steps are sent as
//! [`AgentEvent`]s on a channel the session passes in; the agent's bulk output goes straight to
//! `<run_dir>/transcripts/` and never through a channel.
//!
//! These types are deliberately plain data, decoupled from the config model: the session maps its
//! effective config onto them.

pub mod bootstrap;
pub mod claude_code;
pub mod claude_reply_end;
mod claude_result;
pub mod cli_version;
pub mod codex;
pub mod codex_home;
pub mod codex_sandbox;
pub mod command;
pub mod console_wiring;
pub mod locate;
pub mod login;
pub mod per_step;
pub mod pi;
pub mod pricing;
pub mod process;
pub mod reply;
pub mod shell;
pub mod tool_calls;
pub mod transcript;
pub mod turn;

use crate::model::ids::{RunId, SessionId, StepId, SuiteId};
use crate::model::markers::Evidence;
use crate::model::outcome::{StepStatus, TeardownState};
use crate::model::redact::Secrets;
use crate::model::trace_context;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc::UnboundedSender, watch};

pub use crate::process::handle::AGENT_MARKER_ENV;

pub use crate::process::inherited_env::CLAUDE_NESTING_VARS;

pub use crate::model::provider::ProviderKind;

/// What the effective config says about the agent.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    pub provider: ProviderKind,
    /// `command` provider: the program line, split like a shell would (no shell runs it).
    pub cmd: Option<String>,
    /// Appended to the provider's own command line.
    pub agent_args: Vec<String>,
    /// Where the agent runs (`[provider] cwd`, resolved): a relative program in `cmd` is found
    /// from here too.
    pub cwd: PathBuf,
    /// Appended to the harness's own system prompt.
    pub extra_system_prompt: Option<String>,
    /// The per-step timeout when a step gives none.
    pub step_timeout: Duration,
    /// Told to the agent in the bootstrap.
    pub base_url: Option<String>,
    /// The agent CLI's executable (`claude`, `codex`, `pi` on `PATH` unless configured: its
    /// provider's row); unused by `command` (its program is in `cmd`).
    pub program: PathBuf,
    /// claude-code / codex: model turns one step may take; one more stops it as `over_budget`.
    pub max_turns_per_step: Option<u32>,
    /// codex: `[provider] price_per_mtok`, else the built-in price of its model.
    pub price_per_mtok: Option<crate::model::config::PricePerMtok>,
    /// A step whose agent writes nothing for this long ends: `timeout` for claude-code,
    /// `protocol_error` for `command` (a reply without a marker). `None`: only the step timeout.
    pub no_output_timeout: Option<Duration>,
    /// Grace of each teardown phase (stdin close / SIGINT, then SIGTERM) before escalating.
    pub stop_timeout: Duration,
    /// How long `start` watches for an immediate exit (bad arguments) before calling it started.
    pub startup_grace: Duration,
    /// Start the agent with the supervisor's own environment under the session's (`true`), or
    /// with the session's environment only.
    pub inherit_env: bool,
}

impl AgentSpec {
    pub fn new(provider: ProviderKind) -> Self {
        Self {
            provider,
            cmd: None,
            agent_args: Vec::new(),
            cwd: PathBuf::from("."),
            extra_system_prompt: None,
            step_timeout: Duration::from_secs(300),
            base_url: None,
            program: PathBuf::from(match provider.info().program {
                crate::model::provider::Program::Cli(cli) => cli.default,
                crate::model::provider::Program::Fixed(program) => program,
                crate::model::provider::Program::Cmd => "",
            }),
            max_turns_per_step: None,
            price_per_mtok: None,
            no_output_timeout: None,
            stop_timeout: Duration::from_secs(5),
            startup_grace: Duration::from_millis(300),
            inherit_env: true,
        }
    }
}

/// What this root-test session is.
#[derive(Debug, Clone)]
pub struct SessionFacts {
    pub run_id: RunId,
    pub session_id: SessionId,
    pub suite_id: SuiteId,
    /// The `TRACEPARENT` the supervisor was started under, if any: the suite's trace.
    pub traceparent: Option<String>,
    pub test_name: String,
    pub test_file: PathBuf,
    pub project_root: PathBuf,
    /// `.bugatti/runs/<run_id>/`: transcripts go to `transcripts/` under it.
    pub run_dir: PathBuf,
    /// The session workspace (`BUGATTI_WORKDIR`): scratch space for the agent.
    pub workdir: PathBuf,
    /// Ports, `[env]`, `[secrets]` and the `BUGATTI_*` variables, in order; later entries win.
    pub env: Vec<(String, String)>,
    pub secrets: Arc<Secrets>,
    /// `[supervisor] max_log_bytes`: each transcript keeps this much head, then a rolling tail.
    pub max_log_bytes: u64,
    /// The agent console's endpoint (docs/console.md); `None` with `[provider] console = false`.
    pub console: Option<crate::console::server::Endpoint>,
    /// MCP servers besides the console (docs/browser.md): the session browser's Playwright MCP and the
    /// project's own `.mcp.json` servers.
    pub mcp: McpServers,
}

/// The MCP servers an agent gets besides the console.
#[derive(Debug, Clone, Default)]
pub struct McpServers {
    /// Playwright MCP attached to the session's browser (`[browser] mcp = true`), as `browser`.
    pub browser: Option<crate::browser::mcp::McpCommand>,
    /// The project's `.mcp.json` servers, which `--strict-mcp-config` would otherwise drop.
    pub project: Option<crate::model::mcp_json::ProjectServers>,
}

impl SessionFacts {
    /// Where this run sits in its suite's trace.
    pub fn trace(&self) -> trace_context::RunTrace<'_> {
        trace_context::RunTrace {
            suite_id: self.suite_id.as_str(),
            parent: self.traceparent.as_deref(),
            run_id: self.run_id.as_str(),
        }
    }

    /// The run directory's files (transcripts, the agent's MCP config).
    pub fn run_paths(&self) -> crate::model::artifacts::RunPaths {
        crate::model::artifacts::RunPaths::new(&self.run_dir)
    }
}

/// One planned step, its instruction already substituted.
#[derive(Debug, Clone)]
pub struct StepRequest {
    pub step_id: StepId,
    pub source_file: String,
    pub source_index: usize,
    pub include_chain: Vec<String>,
    pub instruction: String,
    pub timeout: Duration,
    /// Set when the message is not the step itself but a question about it (after a pass, the
    /// facts it rested on: docs/replay.md); a `command` agent sees it as `"question"`.
    pub question: Option<Question>,
    /// The steps replayed before this one, told with the first step the agent takes after them
    /// (docs/providers.md): context, apart from the instruction.
    pub replayed: Vec<crate::model::replay::ReplayedStep>,
    /// Raised as soon as the model's API limits the step (the CLI retrying a 429 / 529): the
    /// suite's model gate lets fewer agents at once (actors/model_gate.rs).
    pub throttle: ThrottleSignal,
}

/// What a provider raises when the model's API tells the agent to slow down mid-step; nothing
/// listens by default.
#[derive(Clone, Default)]
pub struct ThrottleSignal(Option<Arc<dyn Fn(crate::model::agent_fault::FaultKind) + Send + Sync>>);

impl ThrottleSignal {
    pub fn new(on: impl Fn(crate::model::agent_fault::FaultKind) + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(on)))
    }

    /// The API limited the step (`rate_limit` or `overloaded`).
    pub fn raise(&self, kind: crate::model::agent_fault::FaultKind) {
        if let Some(on) = &self.0 {
            on(kind);
        }
    }
}

impl std::fmt::Debug for ThrottleSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "ThrottleSignal(listened)"
        } else {
            "ThrottleSignal(none)"
        })
    }
}

/// A question the harness asks about a step the agent already judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Question {
    /// Which facts in the outputs decided the pass (answered in `BUGATTI_FACT` lines).
    Facts,
}

impl Question {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Facts => "facts",
        }
    }
}

/// What one step cost, as the agent reports it: Claude Code's `result` event, Codex's
/// `turn.completed`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepUsage {
    /// The agent's conversation id (the same for every step of a session): Claude Code's session
    /// id, Codex's thread id.
    pub session_id: String,
    /// Model round trips of this step.
    pub num_turns: u64,
    pub duration_ms: u64,
    /// As Claude Code reports it: the cost of the whole conversation so far.
    pub total_cost_usd: f64,
    /// This step's share: `total_cost_usd` minus the previous step's.
    pub step_cost_usd: f64,
    /// Whether the agent reports money at all (Codex reports tokens only).
    pub cost_reported: bool,
    /// Tokens of this step, where the agent reports them.
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// The cost the CLI reported, where it disagrees by more than 2× with its tokens × the price
    /// (which is then the cost used).
    #[serde(default)]
    pub reported_cost_usd: Option<f64>,
}

/// The usage of a Claude Code turn (the name it had before other agents reported usage).
pub type ClaudeUsage = StepUsage;

/// Why the harness gave up on the agent in the middle of a step: the watchdog's findings. A
/// verdict carrying one may be retried once on a restarted agent (docs/providers.md "Supervision").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AgentFault {
    /// Nothing that counts as progress for this long (`no_output_timeout_secs`); the last thing it
    /// said, if anything (an API retry notice, say).
    Silent { secs: u64, last_words: String },
    /// The agent process ended without finishing the step.
    Died(AgentDeath),
}

impl std::fmt::Display for AgentFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Silent { secs, last_words } if last_words.trim().is_empty() => {
                write!(f, "made no progress for {secs}s (no_output_timeout_secs)")
            }
            Self::Silent { secs, last_words } => write!(
                f,
                "made no progress for {secs}s (no_output_timeout_secs); it last said: {}",
                last_words.trim()
            ),
            Self::Died(death) => write!(f, "died ({death})"),
        }
    }
}

/// The agent process ended on its own: how, and the end of what it wrote to stderr.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentDeath {
    /// `exit code 3`, `signal 9 (SIGKILL)`.
    pub status: String,
    pub stderr_tail: String,
}

impl std::fmt::Display for AgentDeath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.stderr_tail.trim().is_empty() {
            write!(f, "{} (no stderr)", self.status)
        } else {
            write!(
                f,
                "{}; stderr ends with: {}",
                self.status,
                self.stderr_tail.trim()
            )
        }
    }
}

/// The verdict on one step. `message`, `logs` and evidence paths are already redacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepVerdict {
    pub step_id: StepId,
    pub status: StepStatus,
    pub message: String,
    pub logs: Vec<String>,
    pub evidence: Vec<Evidence>,
    pub duration: Duration,
    pub usage: Option<StepUsage>,
    /// Set when the agent died during this step (or before it): the session fails with `error`.
    pub agent_died: Option<AgentDeath>,
    /// Set when the watchdog stopped the agent (silent, or dead): the step may be retried once
    /// on a restarted agent; a fault left after that fails the session.
    pub fault: Option<AgentFault>,
    /// How often the agent was restarted during this step (0 or 1).
    pub restarts: u32,
    /// The step was cut short by [`CancelSignal`] (shutdown), not by its own outcome.
    pub interrupted: bool,
    /// The tools the agent called, as its stream showed them (what replay records); live only.
    #[serde(skip)]
    pub tool_calls: Vec<tool_calls::ToolCall>,
    /// With status `agent_error`: the kind of fault, as the CLI reported it.
    #[serde(default)]
    pub agent_fault: Option<crate::model::agent_fault::FaultKind>,
    /// The `BUGATTI_FACT` lines of the reply (the answer to the facts question), redacted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<String>,
    /// How long the step was held back before the agent could take it, with fewer agents
    /// allowed at the model at once (actors/model_gate.rs); not part of `duration`.
    #[serde(skip)]
    pub model_wait: Duration,
    /// With a `rate_limit` / `overloaded` fault: how long the API asked the agent to wait before
    /// asking again (its `retry-after`, as the CLI's last retry notice gave it); the
    /// supervisor's own retry of the step waits at least this long.
    #[serde(skip)]
    pub retry_after: Option<Duration>,
}

impl StepVerdict {
    pub fn new(step_id: StepId, status: StepStatus, message: impl Into<String>) -> Self {
        Self {
            step_id,
            status,
            message: message.into(),
            logs: Vec::new(),
            evidence: Vec::new(),
            duration: Duration::ZERO,
            usage: None,
            agent_died: None,
            fault: None,
            restarts: 0,
            interrupted: false,
            tool_calls: Vec::new(),
            agent_fault: None,
            facts: Vec::new(),
            model_wait: Duration::ZERO,
            retry_after: None,
        }
    }

    /// Makes this verdict an agent fault of `kind` (docs/providers.md, "When the agent, not the
    /// app, fails"): status `agent_error`, the message saying so and what to do about it.
    pub fn agent_error(&mut self, kind: crate::model::agent_fault::FaultKind, agent: ProviderKind) {
        let detail = self.message.trim();
        let fix = kind.fix(agent.as_str());
        self.message = if detail.is_empty() {
            format!("agent error ({kind}), not a failure of the app; to fix: {fix}")
        } else {
            format!("agent error ({kind}), not a failure of the app: {detail}; to fix: {fix}")
        };
        self.status = StepStatus::AgentError;
        self.agent_fault = Some(kind);
    }
}

/// Live news from the agent, for the console and events.jsonl. `step_id` 0 is the bootstrap.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    Log {
        step_id: StepId,
        message: String,
    },
    Evidence {
        step_id: StepId,
        evidence: Evidence,
    },
    /// The agent process ended without being asked to (between or during steps).
    Exited(AgentDeath),
    /// The watchdog stopped a hung or dead agent and started it again, its conversation resumed;
    /// the step is retried.
    Restarted {
        step_id: StepId,
        reason: String,
    },
}

/// Cancels a running step (shutdown): `true` once cancelled. Cheap to clone.
pub type CancelSignal = watch::Receiver<bool>;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("provider {provider}: {problem}")]
    Config {
        provider: &'static str,
        problem: String,
    },
    #[error("could not start the agent `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the agent `{command}` exited right after starting: {death}")]
    ExitedAtStart { command: String, death: AgentDeath },
    #[error("the agent `{command}` did not take the bootstrap: {reason}")]
    Bootstrap { command: String, reason: String },
    #[error("cannot write the agent transcript {path}: {source}")]
    Transcript {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the agent console's MCP config {path}: {source}")]
    ConsoleConfig {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the agent was not started: the session is stopping (it was waiting for the model)")]
    Stopped,
}

/// One agent conversation. Call order: `start`, `bootstrap`, `run_step`…, `close` (always, also
/// after a failed start: it tears down whatever was started).
#[async_trait]
pub trait Provider: Send {
    fn kind(&self) -> ProviderKind;
    /// Starts the agent (if the provider has a process). Failures name the command line.
    async fn start(&mut self) -> Result<(), AgentError>;
    /// Tells the agent what the harness is and the result contract.
    async fn bootstrap(&mut self) -> Result<(), AgentError>;
    /// Runs one step to its verdict; never longer than `request.timeout` (plus teardown grace).
    async fn run_step(&mut self, request: &StepRequest, cancel: CancelSignal) -> StepVerdict;
    /// Stops the agent and everything it started; reports how that went.
    async fn close(&mut self) -> TeardownState;
    /// After a step ended with a [`AgentFault`]: stops what is left of the agent and starts it
    /// again with its conversation resumed. `Ok(false)`: this provider cannot resume.
    async fn restart(&mut self) -> Result<bool, AgentError> {
        Ok(false)
    }
}

/// Everything a provider is built from.
#[derive(Debug, Clone)]
pub struct AgentContext {
    pub spec: AgentSpec,
    pub facts: SessionFacts,
    pub events: UnboundedSender<AgentEvent>,
}

impl AgentContext {
    /// The collector of one step's reply: its news goes to the session, secrets redacted, paths
    /// relative to the run directory.
    pub fn collector(&self, step_id: StepId) -> reply::ReplyCollector {
        reply::ReplyCollector::new(step_id, self.events.clone(), self.facts.secrets.clone())
            .relative_to(&self.facts.run_dir)
    }

    /// One step's limits: `timeout` from now, silent at most `no_output_timeout_secs`, at most
    /// `max_turns_per_step` model turns.
    pub fn step_limits(&self, timeout: Duration) -> turn::Limits {
        turn::Limits {
            timeout,
            deadline: crate::process::job_control::Deadline::after(timeout),
            idle: self.spec.no_output_timeout,
            max_turns: self.spec.max_turns_per_step,
        }
    }
}

/// The provider the spec names.
pub fn create(context: AgentContext) -> Box<dyn Provider> {
    match context.spec.provider {
        ProviderKind::ClaudeCode => Box::new(claude_code::ClaudeCode::new(context)),
        ProviderKind::Codex => Box::new(codex::Codex::new(context)),
        ProviderKind::Pi => Box::new(pi::Pi::new(context)),
        ProviderKind::Command => Box::new(command::CommandProvider::new(context)),
        ProviderKind::Shell => Box::new(shell::ShellProvider::new(context)),
    }
}

/// The agent's environment: (optionally) the supervisor's own without Claude Code's nesting
/// variables, then the session's, then the agent marker.
pub fn agent_env(spec: &AgentSpec, facts: &SessionFacts) -> Vec<(String, String)> {
    let mut env = env_over(
        inherited(spec),
        &facts.env,
        facts.console.as_ref(),
        &facts.run_id,
    );
    // A long-lived agent (Claude Code, a `command` agent) lives across the steps: it starts
    // under the run's span; a process per step gets its step's span ([`step_traceparent`]).
    env.push((
        trace_context::TRACEPARENT_ENV.to_string(),
        facts.trace().run_traceparent(),
    ));
    env
}

/// `TRACEPARENT` for the process that carries out `step_id` (docs/reports.md,
/// "OpenTelemetry"): the step's own span, so what the agent CLI exports nests under it.
pub fn step_traceparent(facts: &SessionFacts, step_id: StepId) -> (String, String) {
    (
        trace_context::TRACEPARENT_ENV.to_string(),
        facts.trace().step_traceparent(step_id),
    )
}

/// [`agent_env`] without the console's address and token: what the replay's own Playwright MCP
/// client runs with. It never calls the console, and this is known before the console is
/// served, so the client can start while the harness comes up.
pub fn agent_env_without_console(
    spec: &AgentSpec,
    session_env: &[(String, String)],
    run_id: &RunId,
) -> Vec<(String, String)> {
    env_over(inherited(spec), session_env, None, run_id)
}

/// The supervisor's own environment when the agent inherits it.
fn inherited(spec: &AgentSpec) -> Box<dyn Iterator<Item = (String, String)>> {
    if spec.inherit_env {
        Box::new(std::env::vars())
    } else {
        Box::new(std::iter::empty())
    }
}

fn env_over(
    inherited: impl Iterator<Item = (String, String)>,
    session_env: &[(String, String)],
    console: Option<&crate::console::server::Endpoint>,
    run_id: &RunId,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = inherited
        .filter(|(k, _)| !CLAUDE_NESTING_VARS.contains(&k.as_str()))
        .collect();
    env.extend(session_env.iter().cloned());
    if let Some(endpoint) = console {
        env.extend(crate::providers::console_wiring::agent_env(endpoint));
    }
    env.push((AGENT_MARKER_ENV.to_string(), run_id.to_string()));
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn facts() -> SessionFacts {
        SessionFacts {
            run_id: "run-1".into(),
            session_id: "sess-1".into(),
            suite_id: "suite-1".into(),
            traceparent: None,
            test_name: "Checkout".into(),
            test_file: PathBuf::from("tests/checkout.test.toml"),
            project_root: PathBuf::from("/p"),
            run_dir: PathBuf::from("/p/.bugatti/runs/run-1"),
            workdir: PathBuf::from("/tmp/w"),
            env: vec![
                ("APP_PORT".into(), "4100".into()),
                ("HOME".into(), "/h".into()),
            ],
            secrets: Arc::new(Secrets::default()),
            max_log_bytes: crate::process::log_limit::DEFAULT_MAX_LOG_BYTES,
            console: None,
            mcp: McpServers::default(),
        }
    }

    #[test]
    fn the_agent_env_drops_claude_nesting_and_carries_the_marker() {
        let inherited = [
            ("CLAUDECODE", "1"),
            ("CLAUDE_CODE_ENTRYPOINT", "cli"),
            ("PATH", "/bin"),
            ("HOME", "/root"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let facts = facts();
        let env = env_over(inherited.into_iter(), &facts.env, None, &facts.run_id);
        let get = |key: &str| {
            env.iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("CLAUDECODE"), None);
        assert_eq!(get("CLAUDE_CODE_ENTRYPOINT"), None);
        assert_eq!(get("PATH"), Some("/bin"));
        assert_eq!(get("HOME"), Some("/h"), "the session's value wins");
        assert_eq!(get("APP_PORT"), Some("4100"));
        assert_eq!(get(AGENT_MARKER_ENV), Some("run-1"));
    }

    #[test]
    fn the_bootstrap_states_the_contract_and_the_facts() {
        let mut spec = AgentSpec::new(ProviderKind::ClaudeCode);
        spec.cwd = PathBuf::from("/p");
        spec.base_url = Some("http://127.0.0.1:4100".into());
        spec.extra_system_prompt = Some("Log in as demo/demo.".into());
        let text = bootstrap::system_prompt(&spec, &facts());
        for needle in [
            "RESULT OK",
            "RESULT WARN: <short reason>",
            "RESULT ERROR: <short reason>",
            "the last one decides",
            "BUGATTI_LOG <message>",
            "BUGATTI_EVIDENCE <kind> <path>",
            "/p/.bugatti/runs/run-1/screenshots/",
            "run id: run-1",
            "session id: sess-1",
            "http://127.0.0.1:4100",
            "Log in as demo/demo.",
            "your working directory: /p",
            "workspace for your scratch files (this session only): /tmp/w",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
        }
        let request = StepRequest {
            step_id: StepId::new(4),
            source_file: "shared/login.test.toml".into(),
            source_index: 2,
            include_chain: vec!["checkout.test.toml".into(), "shared/login.test.toml".into()],
            instruction: "  Log in.  ".into(),
            timeout: Duration::from_secs(5),
            question: None,
            replayed: Vec::new(),
            throttle: ThrottleSignal::default(),
        };
        let message = bootstrap::step_message(&facts(), &request);
        assert!(message.starts_with(
            "Bugatti step 4 (run run-1, session sess-1; from shared/login.test.toml step 2 \
             (via checkout.test.toml -> shared/login.test.toml))."
        ));
        assert!(message.contains("\n\nLog in.\n\n"));
        assert!(
            !message.contains("replayed"),
            "nothing replayed, nothing said"
        );
    }

    /// For the CLIs, the steps replayed before a step are context set apart from its
    /// instruction, marked as commands not to be run again (docs/providers.md).
    #[test]
    fn replayed_steps_are_framed_as_context_not_to_be_run_again() {
        use crate::model::replay::{ReplayedAction, ReplayedStep};
        let request = StepRequest {
            step_id: StepId::new(2),
            source_file: "shop.test.toml".into(),
            source_index: 2,
            include_chain: Vec::new(),
            instruction: "Check the basket holds one mug.".into(),
            timeout: Duration::from_secs(5),
            question: None,
            throttle: ThrottleSignal::default(),
            replayed: vec![ReplayedStep {
                step_id: StepId::new(1),
                instruction: Some("Add a mug to the basket.".into()),
                status: "replayed: every recorded action ran again and matched".into(),
                actions: vec![ReplayedAction {
                    what: "exec_command curl -s -X POST localhost:4100/basket -d mug".into(),
                    output: "added".into(),
                }],
            }],
        };
        let message = bootstrap::step_message(&facts(), &request);
        let open = message.find("<replayed-context>").expect("opened");
        let close = message.find("</replayed-context>").expect("closed");
        let context = &message[open..close];
        assert!(
            context.contains("Context only, not instructions: do not run these commands again."),
            "{message}"
        );
        assert!(
            context.contains("- step 1: Add a mug to the basket."),
            "{message}"
        );
        assert!(
            context.contains(
                "  $ exec_command curl -s -X POST localhost:4100/basket -d mug\n    added\n"
            ),
            "{message}"
        );
        // The instruction comes after the context, on its own, and carries none of it.
        let instruction = message
            .find("Check the basket holds one mug.")
            .expect("instruction");
        assert!(instruction > close, "{message}");
        assert!(
            message[close..]
                .contains("The step to carry out now:\nCheck the basket holds one mug.\n\n"),
            "{message}"
        );
        assert_eq!(request.instruction, "Check the basket holds one mug.");
    }
}
