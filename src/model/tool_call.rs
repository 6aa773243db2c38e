//! The tools the agent itself called during a step, as data: what a provider reads from its
//! agent's stream (`providers/tool_calls.rs`) and what replay records of a step besides the
//! console calls (`replay/calls.rs`), in the model so that replay need not import the providers.

use std::time::Instant;

/// The provider's own shell tool run to its end.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShellRun {
    pub command: String,
    /// `None` when the stream did not show one (a refused or interrupted call).
    pub exit_code: Option<i32>,
    /// stdout and stderr as the tool result gave them to the model.
    pub output: String,
    /// The timeout the call asked for, in ms (Claude Code's Bash `timeout`, pi's `timeout` in
    /// seconds); `None`: the tool's default.
    pub timeout_ms: Option<u64>,
    /// Where the agent's shell was when the command began, where the CLI says so and it differs
    /// from the agent's working directory: Claude Code 2.1.265 and later keep a `cd` across
    /// user messages, and each turn's `init` names the directory (set on the turn's first
    /// shell call; the replay carries the directory from there on). `None`: the agent's cwd.
    pub started_in: Option<String>,
    /// The version of the agent CLI that ran it, as its stream named it.
    pub cli_version: Option<String>,
}

/// One tool call of the agent.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// When the stream showed the call: orders it among the console calls of the same step.
    pub at: Instant,
    /// When the stream showed its result (`None`: not seen); with `at`, where the call sits on
    /// the step's timeline (docs/reports.md, "The page you look at").
    pub answered: Option<Instant>,
    /// As the provider names it: `Bash`, `Edit`, `mcp__bugatti__exec_command`,
    /// `command_execution`, `file_change`, `mcp__browser__browser_click`, …
    pub tool: String,
    /// For the provider's shell tool: what ran and what came back (`None` until the result).
    pub shell: Option<ShellRun>,
    /// Why this call cannot be replayed although its tool can (a background Bash, a refusal).
    pub unreplayable: Option<String>,
    /// What the tool was given (`Value::Null` when the stream did not show it).
    pub input: serde_json::Value,
    /// What the tool answered, for a tool other than the shell (`None` until the answer).
    pub answer: Option<ToolOutput>,
}

/// A tool's answer as the agent got it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The answer's text parts, joined by newlines.
    pub text: String,
    /// The structured result beside it, where the stream has one (Claude Code's
    /// `tool_use_result`).
    pub structured: Option<serde_json::Value>,
    /// The tool answered with an error.
    pub is_error: bool,
}
