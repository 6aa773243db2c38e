//! The real Codex CLI for end-to-end tests: where it is (or a loud skip), and the scripted
//! OpenAI Responses API stub it talks to on loopback (tests/support/responses_stub.py).

use super::scripted_api::ScriptedApi;
use super::skip::npm_cli;
use std::path::{Path, PathBuf};

/// The CLI `.ci/run` installs (or `$BUGATTI_CODEX_BIN`); `None`, said on stderr, when absent.
pub fn codex_bin(test: &str) -> Option<PathBuf> {
    npm_cli(test, "BUGATTI_CODEX_BIN", "codex", "@openai/codex@0.171.0")
}

/// The stub (responses_stub.py), killed with its group when the test ends.
pub struct ResponsesStub(ScriptedApi);

impl std::ops::Deref for ResponsesStub {
    type Target = ScriptedApi;
    fn deref(&self) -> &ScriptedApi {
        &self.0
    }
}

impl ResponsesStub {
    /// Starts the stub with `script` (see responses_stub.py), its files in `dir`.
    pub fn start(dir: &Path, script: serde_json::Value) -> ResponsesStub {
        ResponsesStub(ScriptedApi::start(
            "responses_stub.py",
            "responses",
            dir,
            script,
        ))
    }

    /// The `agent_args` that point Codex at the stub (a custom model provider, no websockets, no
    /// sandbox so its shell tool reaches loopback), as a TOML array body. Codex does not retry a
    /// failed request.
    pub fn agent_args_toml(&self) -> String {
        self.agent_args_with("request_max_retries=0,stream_max_retries=0", true)
    }

    /// The same with Codex's own retry policy (5 retries with backoff, "Reconnecting…" events).
    pub fn agent_args_toml_retrying(&self) -> String {
        self.agent_args_with("", true)
    }

    /// As [`Self::agent_args_toml`] but as the README's example: model and provider only, Codex's
    /// own sandbox and approval policy left at their defaults (`exec`: read-only, never ask).
    pub fn agent_args_toml_as_readme(&self) -> String {
        self.agent_args_with("request_max_retries=0,stream_max_retries=0", false)
    }

    fn agent_args_with(&self, retries: &str, bypass: bool) -> String {
        let provider = format!(
            "model_providers.stub={{name=\"stub\",base_url=\"http://127.0.0.1:{}/v1\",\
             wire_api=\"responses\",env_key=\"STUB_API_KEY\",supports_websockets=false{}{retries}}}",
            self.port,
            if retries.is_empty() { "" } else { "," }
        );
        let mut args = vec!["-m", "gpt-5.5"];
        if bypass {
            args.push("--dangerously-bypass-approvals-and-sandbox");
        }
        args.extend(["-c", "model_provider=stub", "-c", &provider]);
        args.iter()
            .map(|a| toml::Value::String(a.to_string()).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Every logged request body, one a line, for failure messages.
    pub fn requests_text(&self) -> String {
        std::fs::read_to_string(&self.requests).unwrap_or_default()
    }

    /// Every logged request, parsed.
    pub fn request_log(&self) -> Vec<super::scripted_api::LoggedRequest> {
        self.logged_requests()
    }
}

/// One line of `codex exec --json` (transcripts/agent.jsonl of a Codex run), as far as the tests
/// read it: the event type and, for `item.*` events, the item.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct ExecEvent {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub item: Option<ExecItem>,
}

/// An item of an `item.*` event: a command, an MCP tool call, a message…
#[derive(Debug, Clone, serde::Deserialize)]
pub struct ExecItem {
    #[serde(rename = "type")]
    pub kind: String,
    /// `mcp_tool_call`: the MCP server and tool, and how the call ended.
    #[serde(default)]
    pub server: Option<String>,
    #[serde(default)]
    pub tool: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
}

/// The MCP tool calls Codex reported completed in its `--json` transcript, in order (lines that
/// are not events are passed over).
pub fn completed_mcp_calls(transcript: &str) -> Vec<ExecItem> {
    transcript
        .lines()
        .filter_map(|l| serde_json::from_str::<ExecEvent>(l).ok())
        .filter(|e| e.kind == "item.completed")
        .filter_map(|e| e.item)
        .filter(|i| i.kind == "mcp_tool_call")
        .collect()
}
