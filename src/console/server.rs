//! The console served over MCP: Streamable HTTP on a loopback port of its own, one bearer token
//! per test session, server name `bugatti`. The protocol is `rmcp`'s; the tools are
//! [`super::Console`]'s (this module only maps one onto the other).
//!
//! Stateless, plain-JSON answers: each POST is served on its own, so nothing protocol-side lives
//! between calls (the console sessions live in [`super::Console`]).

use super::{Console, ExecArgs, KillArgs, ReadLogArgs, WaitLogArgs, WriteArgs, SERVER_NAME};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What the server tells the agent the console is for (Codex shows the first 512 characters).
pub const INSTRUCTIONS: &str = "The bugatti console: a shell you can keep typing into, and the \
logs of the application under test. exec_command runs a command under a terminal (tty=true, the \
default: input you send is echoed back) and returns its output when it exits or yield_time_ms \
passes; a process still running gives a session ID for write_stdin (type answers, \"\\u0003\" is \
Ctrl-C, \"\\u0004\" EOF). list_logs / read_log / wait_for_log read the harness commands' logs: \
read_log pages with next_offset; wait_for_log waits for a new matching line.";

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// The browser origins the console serves: loopback ones, any port, either scheme.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://127.0.0.1:*",
    "http://localhost:*",
    "http://[::1]:*",
    "https://127.0.0.1:*",
    "https://localhost:*",
    "https://[::1]:*",
];

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot serve the agent console on 127.0.0.1: {0}")]
pub struct ServeError(#[from] std::io::Error);

/// Where the agent reaches the console, and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `http://127.0.0.1:<port>/mcp`.
    pub url: String,
    /// The bearer token every request must carry.
    pub token: String,
}

/// A running console server; [`ConsoleServer::shutdown`] stops it and every console session.
#[derive(Debug)]
pub struct ConsoleServer {
    endpoint: Endpoint,
    console: Arc<Console>,
    cancel: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl ConsoleServer {
    /// Binds a loopback port and serves `console` on it (inside a tokio runtime).
    pub async fn start(console: Arc<Console>) -> Result<Self, ServeError> {
        Self::start_with_token(console, uuid::Uuid::new_v4().simple().to_string()).await
    }

    /// [`Self::start`] behind `token`: a session makes its token first, so that its redaction
    /// knows it before anything could print it.
    pub async fn start_with_token(
        console: Arc<Console>,
        token: String,
    ) -> Result<Self, ServeError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let cancel = CancellationToken::new();
        let handler = Handler {
            console: Arc::clone(&console),
        };
        // The MCP transport spec: servers must validate Origin (a web page the user has open
        // could otherwise reach a loopback server, DNS rebinding or not). Only loopback origins
        // are served; requests without an Origin (CLIs, the agents) pass as before.
        let config = StreamableHttpServerConfig::default()
            .with_allowed_origins(LOOPBACK_ORIGINS)
            .enforce_origin_validation()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_cancellation_token(cancel.child_token());
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let router = axum::Router::new().nest_service(MCP_PATH, service).layer(
            axum::middleware::from_fn_with_state(
                Arc::new(format!("Bearer {token}")),
                require_token,
            ),
        );
        let stop = cancel.clone();
        // Bounded (process::listen): idle connections from another local process cannot take
        // the descriptors the supervisor needs for its records.
        let listener = crate::process::listen::Bounded::new(
            listener,
            crate::process::listen::MAX_CONNECTIONS,
            crate::process::listen::IDLE_LIMIT,
        );
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, router)
                .with_graceful_shutdown(stop.cancelled_owned())
                .await;
            if let Err(e) = served {
                tracing::warn!("the agent console server ended: {e}");
            }
        });
        Ok(Self {
            endpoint: Endpoint {
                url: format!("http://127.0.0.1:{port}{MCP_PATH}"),
                token,
            },
            console,
            cancel,
            task: Some(task),
        })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    pub fn console(&self) -> &Arc<Console> {
        &self.console
    }

    /// Stops accepting calls, ends every console session, and waits for the server to stop.
    pub async fn shutdown(&mut self) {
        self.cancel.cancel();
        self.console.shutdown().await;
        if let Some(task) = self.task.take() {
            // A client holding a connection open must not hold the session's teardown.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), task).await;
        }
    }
}

impl Drop for ConsoleServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Refuses any request without the session's bearer token.
async fn require_token(
    State(expected): State<Arc<String>>,
    request: Request,
    next: Next,
) -> Response {
    let given = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if given != Some(expected.as_str()) {
        // RFC 6750: a 401 names the scheme it wants, so a client knows what to send.
        return (
            StatusCode::UNAUTHORIZED,
            [(
                axum::http::header::WWW_AUTHENTICATE,
                "Bearer realm=\"bugatti console\"",
            )],
            "a bearer token is required\n",
        )
            .into_response();
    }
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    // A body that is not JSON gets JSON-RPC's own answer (-32700), which a client can show,
    // instead of the transport's plain-text refusal.
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_REQUEST_BYTES).await {
        Ok(bytes) => bytes,
        Err(e) => return parse_error(&format!("the request body could not be read: {e}")),
    };
    if let Err(e) = serde_json::from_slice::<serde_json::Value>(&bytes) {
        return parse_error(&format!("the request body is not JSON: {e}"));
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// The largest request the console reads (a tool call's arguments are small).
const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// A JSON-RPC 2.0 parse error (code -32700) with HTTP 400.
fn parse_error(message: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": format!("Parse error: {message}")},
    });
    (
        StatusCode::BAD_REQUEST,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[derive(Clone)]
struct Handler {
    console: Arc<Console>,
}

/// The tools of docs/console.md, with Codex's names and descriptions where it has them.
pub fn tools() -> Vec<Tool> {
    let empty = Arc::new(
        serde_json::json!({"type": "object", "properties": {}})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    vec![
        Tool::new(
            "exec_command",
            "Runs a command in a PTY, returning output or a session ID for ongoing interaction.",
            schema_for_type::<ExecArgs>(),
        ),
        Tool::new(
            "write_stdin",
            "Writes characters to an existing exec_command session and returns recent output.",
            schema_for_type::<WriteArgs>(),
        ),
        Tool::new(
            "list_sessions",
            "Lists the console sessions and their state.",
            empty.clone(),
        ),
        Tool::new(
            "kill_session",
            "Stops a console session (its whole process group).",
            schema_for_type::<KillArgs>(),
        ),
        Tool::new(
            "list_logs",
            "Lists the logs of the application's harness commands: name, kind, state, bytes.",
            empty,
        ),
        Tool::new(
            "read_log",
            "Reads a harness command's log from a byte offset (or its last lines), optionally \
             only lines matching a regex; returns the text and next_offset to continue from.",
            schema_for_type::<ReadLogArgs>(),
        ),
        Tool::new(
            "wait_for_log",
            "Waits until a harness command writes a new line matching a regex (only bytes from \
             from_offset on, default: from now), at most timeout_ms; returns the line.",
            schema_for_type::<WaitLogArgs>(),
        ),
    ]
}

impl rmcp::ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        // A defect in a tool's logic answers this call with an error instead of leaving it
        // unanswered until the step's timeout (an agent's arguments are hostile input).
        let call = std::panic::AssertUnwindSafe(self.console.call(&request.name, arguments));
        let (text, is_error) = match futures::FutureExt::catch_unwind(call).await {
            Ok(answer) => (answer.text, answer.is_error),
            Err(_) => (
                format!("{} failed: an internal error in the console", request.name),
                true,
            ),
        };
        let content = vec![ContentBlock::text(text)];
        Ok(if is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
        .into())
    }
}
