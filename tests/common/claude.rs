//! The real Claude Code CLI for end-to-end tests: where it is (or a loud skip), and the scripted
//! Anthropic API stub it talks to on loopback (tests/support/anthropic_stub.py).

use super::scripted_api::ScriptedApi;
use super::skip::npm_cli;
use std::path::{Path, PathBuf};

/// The CLI `.ci/run` installs (or `$BUGATTI_CLAUDE_BIN`, to run against a chosen version, e.g.
/// `.ci/claude-2.1.197/node_modules/.bin/claude`); `None`, said on stderr, when absent.
pub fn claude_bin(test: &str) -> Option<PathBuf> {
    npm_cli(
        test,
        "BUGATTI_CLAUDE_BIN",
        "claude",
        "@anthropic-ai/claude-code@2.1.332",
    )
}

/// The stub (anthropic_stub.py), killed with its group when the test ends.
pub struct Stub(ScriptedApi);

impl std::ops::Deref for Stub {
    type Target = ScriptedApi;
    fn deref(&self) -> &ScriptedApi {
        &self.0
    }
}

impl Stub {
    /// Starts the stub with `script` (see anthropic_stub.py), its files in `dir`.
    pub fn start(dir: &Path, script: serde_json::Value) -> Stub {
        Stub(ScriptedApi::start(
            "anthropic_stub.py",
            "messages",
            dir,
            script,
        ))
    }

    /// The environment that points the CLI at the stub, offline, with its own `HOME`.
    pub fn client_env(&self, home: &Path) -> Vec<(String, String)> {
        std::fs::create_dir_all(home).expect("home");
        [
            ("HOME", home.display().to_string()),
            (
                "ANTHROPIC_BASE_URL",
                format!("http://127.0.0.1:{}", self.port),
            ),
            ("ANTHROPIC_API_KEY", "dummy".to_string()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
            ("CLAUDE_CODE_MAX_RETRIES", "1".to_string()),
            ("API_TIMEOUT_MS", "60000".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// [`Stub::client_env`] with the CLI's own retries as users have them (no
    /// `CLAUDE_CODE_MAX_RETRIES`: ten, with backoff growing to about half a minute).
    pub fn client_env_default_retries(&self, home: &Path) -> Vec<(String, String)> {
        let mut env = self.client_env(home);
        env.retain(|(name, _)| name != "CLAUDE_CODE_MAX_RETRIES");
        env
    }

    pub fn requests_text(&self) -> String {
        std::fs::read_to_string(&self.requests).unwrap_or_default()
    }
}

/// One line of `claude -p --output-format stream-json`, as far as the tests read it: the
/// message's content blocks and, with a tool result, the CLI's own structured result.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct StreamEvent {
    #[serde(default)]
    pub message: Option<StreamMessage>,
    #[serde(default)]
    pub tool_use_result: serde_json::Value,
}

#[derive(Debug, Clone, serde::Deserialize)]
pub struct StreamMessage {
    #[serde(default)]
    pub content: StreamContent,
}

/// A message's content: blocks, or (a plain user prompt) a text.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(untagged)]
pub enum StreamContent {
    Blocks(Vec<StreamBlock>),
    Other(serde_json::Value),
}

impl Default for StreamContent {
    fn default() -> Self {
        Self::Other(serde_json::Value::Null)
    }
}

/// A content block: `tool_use` (id, name, input), `tool_result` (tool_use_id, content,
/// is_error), `text`…
#[derive(Debug, Clone, serde::Deserialize)]
pub struct StreamBlock {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub input: serde_json::Value,
    #[serde(default)]
    pub tool_use_id: Option<String>,
    #[serde(default)]
    pub content: Option<ToolResultContent>,
    #[serde(default)]
    pub is_error: Option<bool>,
}

/// A tool result's content: a text, or parts of which the text ones count.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    Text(String),
    Parts(Vec<TextPart>),
    /// Anything else holds no text.
    Other(serde_json::Value),
}

#[derive(Debug, Clone, serde::Deserialize)]
pub struct TextPart {
    #[serde(default)]
    pub text: Option<String>,
}

impl StreamEvent {
    /// The event's content blocks (none for an event without a message).
    pub fn blocks(&self) -> &[StreamBlock] {
        match self.message.as_ref().map(|m| &m.content) {
            Some(StreamContent::Blocks(blocks)) => blocks,
            _ => &[],
        }
    }
}

impl ToolResultContent {
    /// The result's text: the text itself, or its text parts joined by newlines.
    pub fn text(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Parts(parts) => parts
                .iter()
                .filter_map(|p| p.text.as_deref())
                .collect::<Vec<_>>()
                .join("\n"),
            Self::Other(_) => String::new(),
        }
    }
}
