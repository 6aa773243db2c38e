//! What the real-CLI tests share: a scripted API stub (a Python server in tests/support) on
//! loopback, killed with its group. Finding the CLI itself (or a loud skip) is `common::skip`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A scripted API server: `tests/support/<stub>` run with a script and a request log.
pub struct ScriptedApi {
    child: Child,
    pub port: u16,
    /// Every request the CLI sent, one JSON object a line.
    pub requests: PathBuf,
}

impl Drop for ScriptedApi {
    fn drop(&mut self) {
        let _ = bugatti::process::group::signal_group(
            self.child.id() as i32,
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}

impl ScriptedApi {
    /// Starts `tests/support/<stub>` with `script` (written to `dir/<name>-script.json`), its
    /// request log at `dir/<name>-requests.jsonl`; returns once it printed `PORT n`.
    pub fn start(stub: &str, name: &str, dir: &Path, script: serde_json::Value) -> ScriptedApi {
        use std::os::unix::process::CommandExt;
        let script_path = dir.join(format!("{name}-script.json"));
        std::fs::write(&script_path, script.to_string()).expect("script");
        let requests = dir.join(format!("{name}-requests.jsonl"));
        let mut child = Command::new("python3")
            .arg(
                PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/support")
                    .join(stub),
            )
            .arg(&script_path)
            .arg(&requests)
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("stub");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("PORT line");
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .expect("a port");
        ScriptedApi {
            child,
            port,
            requests,
        }
    }
}

impl ScriptedApi {
    /// Every request the CLI sent so far, read as [`LoggedRequest`]s.
    pub fn logged_requests(&self) -> Vec<LoggedRequest> {
        logged_requests(&std::fs::read_to_string(&self.requests).unwrap_or_default())
    }
}

/// One line of a stub's request log: the path asked and the JSON body sent. The stubs log the
/// Anthropic Messages, OpenAI Responses and Chat Completions requests alike; each field is there
/// only for the API that sends it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct LoggedRequest {
    pub path: String,
    pub body: RequestBody,
    /// Refused with HTTP 429 as one beyond the stub's `max_in_flight`.
    #[serde(default)]
    pub limited: bool,
    /// When the stub received it (seconds since the epoch; the Anthropic stub logs it).
    #[serde(default)]
    pub at: f64,
}

/// The parts of a model request the tests look at; the rest of the body is kept as JSON.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct RequestBody {
    /// The tools offered: main-loop requests carry them, side queries do not.
    #[serde(default)]
    pub tools: Option<serde_json::Value>,
    /// Messages and Chat Completions: the conversation so far.
    #[serde(default)]
    pub messages: Vec<RequestMessage>,
    /// Responses: the conversation so far.
    #[serde(default)]
    pub input: serde_json::Value,
    /// Messages: the system prompt.
    #[serde(default)]
    pub system: serde_json::Value,
    /// Responses: the key the CLI asks the prompt cache by.
    #[serde(default)]
    pub prompt_cache_key: Option<String>,
}

/// One message of a request: a text, or content blocks (Messages).
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
pub struct RequestMessage {
    #[serde(default)]
    pub role: String,
    #[serde(default)]
    pub content: MessageContent,
}

#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Blocks(Vec<ContentBlock>),
    Other(serde_json::Value),
}

impl Default for MessageContent {
    fn default() -> Self {
        Self::Other(serde_json::Value::Null)
    }
}

/// A content block of a Messages request (`text`, `tool_use`, `tool_result`, …).
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
pub struct ContentBlock {
    #[serde(rename = "type")]
    pub kind: String,
    /// A `tool_result`'s content (a text or blocks).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub content: serde_json::Value,
    #[serde(flatten)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

impl LoggedRequest {
    /// A main-loop request (it offers tools), not a side query.
    pub fn is_main_loop(&self) -> bool {
        self.body.tools.as_ref().is_some_and(|t| t.is_array())
    }

    /// The content of each `tool_result` block in the request, as JSON text, in order.
    pub fn tool_results(&self) -> Vec<String> {
        self.body
            .messages
            .iter()
            .filter_map(|m| match &m.content {
                MessageContent::Blocks(blocks) => Some(blocks),
                _ => None,
            })
            .flatten()
            .filter(|b| b.kind == "tool_result")
            .map(|b| b.content.to_string())
            .collect()
    }
}

/// A request log's text, one [`LoggedRequest`] a line; a line that does not read is left out.
pub fn logged_requests(log: &str) -> Vec<LoggedRequest> {
    log.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A tool a request declared, by its name (a built-in tool of the Responses API may have none).
#[derive(Debug, Clone, serde::Deserialize)]
struct DeclaredTool {
    #[serde(default)]
    name: Option<String>,
}

impl RequestBody {
    /// The names of the tools the request declared, in order.
    pub fn tool_names(&self) -> Vec<String> {
        let declared: Vec<DeclaredTool> = self
            .tools
            .clone()
            .and_then(|t| serde_json::from_value(t).ok())
            .unwrap_or_default();
        declared.into_iter().filter_map(|t| t.name).collect()
    }

    /// The conversation as JSON text, to look for what it holds.
    pub fn messages_text(&self) -> String {
        serde_json::to_string(&self.messages).unwrap_or_default()
    }
}
