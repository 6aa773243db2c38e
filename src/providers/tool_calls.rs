//! The tools the agent itself called during a step, as its own stream showed them (Claude Code's
//! `tool_use` / `tool_result` blocks, Codex's items): what replay records of a step besides the
//! console calls (docs/replay.md). The provider's shell tool keeps its command and output; every
//! other tool keeps its input and the answer the agent got (what Claude Code's `Read`, `Grep`,
//! `Glob` and the browser's Playwright MCP tools replay from), and any tool replay does not know
//! makes the step unreplayable by its name alone.

use std::collections::HashMap;
use std::time::Instant;

pub use crate::model::tool_call::{ShellRun, ToolCall, ToolOutput};

impl ToolCall {
    /// The provider's shell tool ended with `(exit code, output)`; without an exit code (a
    /// refusal, an interrupt: `why`) the call cannot be replayed.
    fn shell_ended(&mut self, (exit_code, output): (Option<i32>, String), tool: &str, why: &str) {
        if exit_code.is_none() {
            self.unreplayable = Some(format!(
                "the agent's {tool} call did not run to an exit code ({why})"
            ));
        }
        if let Some(shell) = self.shell.as_mut() {
            shell.exit_code = exit_code;
            shell.output = output;
        }
    }
}

/// A step's tool calls, in the order the stream showed them.
#[derive(Debug, Default)]
pub struct ToolCalls {
    calls: Vec<ToolCall>,
    /// Claude Code `tool_use` ids waiting for their `tool_result`.
    pending: HashMap<String, usize>,
    /// Where Claude Code's shell is at the start of the running turn (its `init`'s `cwd`), for
    /// a version that keeps a `cd` across messages; taken by the turn's first shell call.
    shell_dir: Option<String>,
    /// The CLI's version, from its `init`.
    cli_version: Option<String>,
}

impl ToolCalls {
    /// Claude Code began a turn (`system/init`): its version, and where its shell is when the
    /// version keeps a `cd` across messages (`None` otherwise).
    pub fn claude_turn_began(&mut self, version: Option<&str>, shell_dir: Option<&str>) {
        self.cli_version = version.map(str::to_string);
        self.shell_dir = shell_dir.map(str::to_string);
    }

    /// A Claude Code `tool_use` block.
    pub fn claude_tool_use(&mut self, block: &serde_json::Value) {
        let tool = block["name"].as_str().unwrap_or("tool").to_string();
        let mut unreplayable = None;
        let shell = super::ProviderKind::ClaudeCode
            .info()
            .is_shell_tool(&tool)
            .then(|| ShellRun {
                command: block["input"]["command"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                exit_code: None,
                output: String::new(),
                timeout_ms: block["input"]["timeout"].as_u64(),
                started_in: self.shell_dir.take(),
                cli_version: self.cli_version.clone(),
            });
        if shell.is_some() && block["input"]["run_in_background"].as_bool() == Some(true) {
            unreplayable = Some("the agent ran a Bash command in the background".to_string());
        }
        if let Some(id) = block["id"].as_str() {
            self.pending.insert(id.to_string(), self.calls.len());
        }
        self.calls.push(ToolCall {
            at: Instant::now(),
            answered: None,
            tool,
            shell,
            unreplayable,
            input: block["input"].clone(),
            answer: None,
        });
    }

    /// A Claude Code `tool_result` block, with its content as text and the event's structured
    /// `tool_use_result` (`Value::Null` when it has none).
    pub fn claude_tool_result(
        &mut self,
        block: &serde_json::Value,
        content: &str,
        structured: &serde_json::Value,
    ) {
        let Some(call) = self.answered(block["tool_use_id"].as_str()) else {
            return;
        };
        let is_error = block["is_error"].as_bool().unwrap_or(false);
        if call.shell.is_none() {
            call.answer = Some(ToolOutput {
                text: content.to_string(),
                structured: (!structured.is_null()).then(|| structured.clone()),
                is_error,
            });
            return;
        }
        let why = content.lines().next().unwrap_or_default();
        call.shell_ended(claude_bash_result(content, is_error), "Bash", why);
    }

    /// The call a result answers (by its id), no longer pending.
    fn answered(&mut self, id: Option<&str>) -> Option<&mut ToolCall> {
        let index = self.pending.remove(id?)?;
        let call = self.calls.get_mut(index)?;
        call.answered = Some(Instant::now());
        Some(call)
    }

    /// A Codex `item.completed`.
    pub fn codex_item(&mut self, item: &serde_json::Value) {
        let (tool, shell) = match item["type"].as_str() {
            Some(tool) if super::ProviderKind::Codex.info().is_shell_tool(tool) => (
                "command_execution".to_string(),
                Some(ShellRun {
                    command: item["command"].as_str().unwrap_or_default().to_string(),
                    exit_code: item["exit_code"]
                        .as_i64()
                        .and_then(|c| i32::try_from(c).ok()),
                    output: item["aggregated_output"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    timeout_ms: None,
                    ..ShellRun::default()
                }),
            ),
            Some("mcp_tool_call") => {
                let now = Instant::now();
                let call = ToolCall {
                    at: now,
                    answered: Some(now),
                    tool: format!(
                        "mcp__{}__{}",
                        item["server"].as_str().unwrap_or("?"),
                        item["tool"].as_str().unwrap_or("?")
                    ),
                    shell: None,
                    unreplayable: (item["status"].as_str() != Some("completed"))
                        .then(|| "the agent's tool call did not complete".to_string()),
                    input: codex_arguments(&item["arguments"]),
                    answer: Some(codex_mcp_answer(item)),
                };
                self.calls.push(call);
                return;
            }
            // What the model says and thinks touches nothing.
            Some("agent_message" | "reasoning" | "todo_list") | None => return,
            Some(other) => (other.to_string(), None),
        };
        let unreplayable = shell
            .as_ref()
            .filter(|s| s.exit_code.is_none())
            .map(|_| "the agent's command did not run to an exit code".to_string());
        let now = Instant::now();
        self.calls.push(ToolCall {
            at: now,
            answered: Some(now),
            tool,
            shell,
            unreplayable,
            input: serde_json::Value::Null,
            answer: None,
        });
    }

    /// A pi `tool_execution_start` event: `bash` is its shell tool (pi runs each call with bash
    /// in its working directory).
    pub fn pi_tool_start(&mut self, event: &serde_json::Value) {
        let tool = event["toolName"].as_str().unwrap_or("tool").to_string();
        let shell = super::ProviderKind::Pi
            .info()
            .is_shell_tool(&tool)
            .then(|| ShellRun {
                command: event["args"]["command"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                exit_code: None,
                output: String::new(),
                // Seconds, possibly a fraction (its schema says a number).
                timeout_ms: event["args"]["timeout"]
                    .as_f64()
                    .filter(|s| s.is_finite() && *s > 0.0)
                    .map(|s| (s * 1000.0).round() as u64),
                ..ShellRun::default()
            });
        if let Some(id) = event["toolCallId"].as_str() {
            self.pending.insert(id.to_string(), self.calls.len());
        }
        self.calls.push(ToolCall {
            at: Instant::now(),
            answered: None,
            tool,
            shell,
            unreplayable: None,
            input: event["args"].clone(),
            answer: None,
        });
    }

    /// A pi `tool_execution_end` event, with the result's text.
    pub fn pi_tool_end(&mut self, event: &serde_json::Value, content: &str) {
        let Some(call) = self.answered(event["toolCallId"].as_str()) else {
            return;
        };
        if call.shell.is_none() {
            return;
        }
        let is_error = event["isError"].as_bool().unwrap_or(false);
        let why = content.lines().last().unwrap_or_default();
        call.shell_ended(pi_bash_result(content, is_error), "bash", why);
    }

    /// The step's calls; the next step starts empty.
    pub fn take(&mut self) -> Vec<ToolCall> {
        self.pending.clear();
        std::mem::take(&mut self.calls)
    }
}

/// A Codex MCP call's arguments: an object, or (in some versions) its JSON text.
fn codex_arguments(arguments: &serde_json::Value) -> serde_json::Value {
    match arguments {
        serde_json::Value::String(text) => {
            serde_json::from_str(text).unwrap_or_else(|_| arguments.clone())
        }
        other => other.clone(),
    }
}

/// A Codex `mcp_tool_call` item's answer: its `result.content` text parts, or its `error`.
fn codex_mcp_answer(item: &serde_json::Value) -> ToolOutput {
    let text = item["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| part["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let error = item["error"]["message"]
        .as_str()
        .or_else(|| item["error"].as_str());
    ToolOutput {
        text: match error {
            Some(e) if text.is_empty() => e.to_string(),
            _ => text,
        },
        structured: None,
        is_error: error.is_some() || item["result"]["is_error"].as_bool() == Some(true),
    }
}

/// What Claude Code 2.1's Bash answers for a command that succeeded and printed nothing.
const CLAUDE_BASH_NO_OUTPUT: &str = "(Bash completed with no output)";

/// Claude Code's Bash `tool_result`: a success is the output with exit code 0; a failure starts
/// `Exit code N`; any other error (a refusal, an interrupt) has no exit code.
pub fn claude_bash_result(content: &str, is_error: bool) -> (Option<i32>, String) {
    if !is_error {
        // Claude Code tells the model a silent command said nothing in words of its own.
        let output = match content {
            CLAUDE_BASH_NO_OUTPUT => "",
            other => other,
        };
        return (Some(0), output.to_string());
    }
    let (first, rest) = content.split_once('\n').unwrap_or((content, ""));
    match first
        .trim_start_matches("Error: ")
        .strip_prefix("Exit code ")
        .and_then(|code| code.trim().parse().ok())
    {
        Some(code) => (Some(code), rest.to_string()),
        None => (None, content.to_string()),
    }
}

/// pi's `bash` result: a success is the output (`(no output)` for none) with exit code 0; a
/// failure is the output, a blank line and `Command exited with code N`; any other error
/// (aborted, timed out) has no exit code.
pub fn pi_bash_result(content: &str, is_error: bool) -> (Option<i32>, String) {
    let output = |text: &str| match text {
        "(no output)" => String::new(),
        text => text.to_string(),
    };
    if !is_error {
        return (Some(0), output(content));
    }
    let (before, last) = content.rsplit_once("\n\n").unwrap_or(("", content));
    match last
        .trim()
        .strip_prefix("Command exited with code ")
        .and_then(|code| code.trim().parse().ok())
    {
        Some(code) => (Some(code), output(before)),
        None => (None, content.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bash_call_is_paired_with_its_result() {
        let mut calls = ToolCalls::default();
        calls.claude_tool_use(&json!({"type":"tool_use","id":"t1","name":"Bash","input":{"command":"curl -s :8080/health"}}));
        calls.claude_tool_use(&json!({"type":"tool_use","id":"t2","name":"Edit","input":{}}));
        calls.claude_tool_result(
            &json!({"tool_use_id":"t1","is_error":true}),
            "Exit code 3\nhello",
            &serde_json::Value::Null,
        );
        let taken = calls.take();
        assert_eq!(taken.len(), 2);
        assert_eq!(
            taken[0].shell,
            Some(ShellRun {
                command: "curl -s :8080/health".into(),
                exit_code: Some(3),
                timeout_ms: None,
                output: "hello".into(),
                ..ShellRun::default()
            })
        );
        assert_eq!(taken[0].unreplayable, None);
        assert_eq!(taken[1].tool, "Edit");
        assert!(calls.take().is_empty());
    }

    #[test]
    fn a_refused_or_background_bash_is_not_replayable() {
        let mut calls = ToolCalls::default();
        calls.claude_tool_use(&json!({"id":"a","name":"Bash","input":{"command":"x"}}));
        calls.claude_tool_result(
            &json!({"tool_use_id":"a","is_error":true}),
            "This command requires approval",
            &serde_json::Value::Null,
        );
        calls.claude_tool_use(
            &json!({"id":"b","name":"Bash","input":{"command":"y","run_in_background":true}}),
        );
        let taken = calls.take();
        assert!(taken.iter().all(|c| c.unreplayable.is_some()), "{taken:?}");
    }

    #[test]
    fn codex_items_are_named_like_claude_tools() {
        let mut calls = ToolCalls::default();
        calls.codex_item(&json!({"type":"command_execution","command":"bash -c 'echo ok'","aggregated_output":"ok\n","exit_code":0}));
        calls.codex_item(&json!({"type":"mcp_tool_call","server":"bugatti","tool":"exec_command"}));
        calls.codex_item(&json!({"type":"file_change"}));
        calls.codex_item(&json!({"type":"agent_message","text":"RESULT OK"}));
        let taken = calls.take();
        let names: Vec<&str> = taken.iter().map(|c| c.tool.as_str()).collect();
        assert_eq!(
            names,
            [
                "command_execution",
                "mcp__bugatti__exec_command",
                "file_change"
            ]
        );
        assert_eq!(taken[0].shell.as_ref().and_then(|s| s.exit_code), Some(0));
    }

    #[test]
    fn a_pi_bash_call_keeps_its_command_exit_code_and_output() {
        let mut calls = ToolCalls::default();
        calls.pi_tool_start(
            &json!({"toolCallId":"a","toolName":"bash","args":{"command":"echo out; exit 3"}}),
        );
        calls.pi_tool_end(
            &json!({"toolCallId":"a","isError":true}),
            "out\n\n\nCommand exited with code 3",
        );
        calls.pi_tool_start(
            &json!({"toolCallId":"b","toolName":"bash","args":{"command":"echo ok"}}),
        );
        calls.pi_tool_end(&json!({"toolCallId":"b","isError":false}), "ok\n");
        calls.pi_tool_start(&json!({"toolCallId":"c","toolName":"edit","args":{"path":"x"}}));
        let taken = calls.take();
        let a = taken[0].shell.as_ref().expect("shell");
        assert_eq!((a.exit_code, a.output.as_str()), (Some(3), "out\n"));
        assert_eq!(
            pi_bash_result("(no output)\n\nCommand exited with code 1", true),
            (Some(1), String::new())
        );
        let b = taken[1].shell.as_ref().expect("shell");
        assert_eq!((b.exit_code, b.output.as_str()), (Some(0), "ok\n"));
        assert_eq!(taken[2].tool, "edit");
        assert!(taken[2].shell.is_none());
        assert_eq!(pi_bash_result("Command aborted", true).0, None);
    }

    #[test]
    fn a_silent_bash_command_is_recorded_with_no_output() {
        // The real Claude Code 2.1.197 answered `cd sub && true` so.
        assert_eq!(
            claude_bash_result("(Bash completed with no output)", false),
            (Some(0), String::new())
        );
        let mut calls = ToolCalls::default();
        calls.claude_tool_use(
            &json!({"id":"a","name":"Bash","input":{"command":"sleep 200","timeout":300000}}),
        );
        assert_eq!(
            calls.take()[0].shell.as_ref().and_then(|s| s.timeout_ms),
            Some(300_000)
        );
    }

    #[test]
    fn a_pi_timeout_is_seconds_and_may_be_a_fraction() {
        // pi's bash tool takes `timeout` as a number of seconds (its schema: `Type.Number`).
        let mut calls = ToolCalls::default();
        for (id, timeout) in [("a", json!(2)), ("b", json!(2.5)), ("c", json!(null))] {
            calls.pi_tool_start(&json!({"toolCallId": id, "toolName": "bash",
                "args": {"command": "sleep 1", "timeout": timeout}}));
        }
        let asked: Vec<_> = calls
            .take()
            .iter()
            .map(|c| c.shell.as_ref().and_then(|s| s.timeout_ms))
            .collect();
        assert_eq!(asked, [Some(2_000), Some(2_500), None]);
    }
}
