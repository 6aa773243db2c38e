//! JSON-RPC answers of an MCP server (the agent console, Playwright MCP), read as types: what the
//! tests ask of an `initialize`, `tools/list` or `tools/call` answer, or of an error.
#![allow(dead_code)]

use serde::Deserialize;

/// One JSON-RPC answer.
#[derive(Debug, Clone, Deserialize)]
pub struct RpcAnswer {
    pub jsonrpc: String,
    #[serde(default)]
    pub id: serde_json::Value,
    #[serde(default)]
    pub result: Option<RpcResult>,
    #[serde(default)]
    pub error: Option<RpcError>,
}

/// The result of `initialize`, `tools/list` or `tools/call`: each field is there for its method.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcResult {
    #[serde(default)]
    pub server_info: Option<ServerInfo>,
    #[serde(default)]
    pub tools: Vec<ToolInfo>,
    #[serde(default)]
    pub content: Vec<ContentPart>,
    #[serde(default)]
    pub is_error: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ServerInfo {
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ToolInfo {
    pub name: String,
}

/// A part of a tool call's answer (`text`, `image`, …).
#[derive(Debug, Clone, Deserialize)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RpcError {
    pub code: i64,
    #[serde(default)]
    pub message: String,
}

impl RpcAnswer {
    /// Reads a JSON answer; fails showing it when it is not one.
    #[track_caller]
    pub fn from_json(value: &serde_json::Value) -> RpcAnswer {
        serde_json::from_value(value.clone())
            .unwrap_or_else(|e| panic!("not a JSON-RPC answer: {e}\n{value:#}"))
    }

    /// `initialize`: the server's name.
    pub fn server_name(&self) -> Option<&str> {
        let info = self.result.as_ref()?.server_info.as_ref()?;
        Some(info.name.as_str())
    }

    /// `tools/list`: the tools' names, in order.
    pub fn tool_names(&self) -> Vec<&str> {
        self.result
            .iter()
            .flat_map(|r| &r.tools)
            .map(|t| t.name.as_str())
            .collect()
    }

    /// `tools/call`: the text of the answer's first part.
    pub fn first_text(&self) -> Option<&str> {
        self.result.as_ref()?.content.first()?.text.as_deref()
    }

    /// `tools/call`: the answer says it is an error.
    pub fn is_tool_error(&self) -> bool {
        self.result
            .as_ref()
            .and_then(|r| r.is_error)
            .unwrap_or(false)
    }
}
