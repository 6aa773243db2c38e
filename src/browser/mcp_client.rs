//! The supervisor's own Playwright MCP client: the same pinned server the agent gets
//! ([`super::mcp::McpCommand`]), started over stdio through `process::handle` and attached to the
//! session's browser, so that a recorded browser step can be made again without the model.
//!
//! The protocol side is rmcp's client over the child's stdin/stdout; the process side is the
//! supervisor's one spawn function and one termination routine (own process group, registered
//! under its owner, swept with the run).

use super::mcp::McpCommand;
use crate::process::handle::{self, EnvMarker, Group, Io, Launch};
use crate::process::owner::Owner;
use crate::process::teardown::{self, Ladder, TeardownReport};
use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use std::path::Path;
use std::time::Duration;

/// How long one tool call may take before the client gives up on it. Playwright MCP's own
/// actions time out well before this (its navigation default is 60 s).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(90);

/// What can go wrong between the supervisor and its Playwright MCP server.
#[derive(Debug, thiserror::Error)]
pub enum McpClientError {
    /// The server process did not start.
    #[error("could not start Playwright MCP ({program}): {source}")]
    Spawn {
        /// The program run.
        program: String,
        /// The spawn error.
        source: std::io::Error,
    },
    /// The MCP handshake failed (the server exited, or spoke something else).
    #[error("Playwright MCP ({program}) did not complete the MCP handshake: {reason}")]
    Handshake {
        /// The program run.
        program: String,
        /// What rmcp said.
        reason: String,
    },
    /// A tool call failed at the protocol level (not a tool's own error answer).
    #[error("Playwright MCP call {tool}: {reason}")]
    Call {
        /// The tool called.
        tool: String,
        /// What went wrong.
        reason: String,
    },
    /// Arguments that are not a JSON object.
    #[error("Playwright MCP call {tool}: arguments must be a JSON object")]
    Arguments {
        /// The tool called.
        tool: String,
    },
}

/// One tool answer as the agent would have seen it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolAnswer {
    /// The text parts, joined by newlines (Playwright MCP's Markdown: the code it ran, the page,
    /// the snapshot or a link to it).
    pub text: String,
    /// Images returned (a screenshot), base64-decoded where possible.
    pub images: Vec<Vec<u8>>,
    /// The server marked the answer as an error (`isError`), e.g. a ref it could not find.
    pub is_error: bool,
}

/// A running Playwright MCP server and the client session with it.
pub struct PlaywrightClient {
    service: RunningService<RoleClient, ()>,
    group: Group,
    /// A call failed at the protocol level (timeout, crash, broken pipe): the client is never
    /// kept for another session ([`Self::is_sound`]).
    failed: std::sync::atomic::AtomicBool,
}

impl PlaywrightClient {
    /// Starts `command` in `cwd` (where Playwright MCP writes its `.playwright-mcp/` files) for
    /// `owner`, with `env` added to the inherited environment, and completes the handshake.
    pub async fn start(
        command: &McpCommand,
        owner: Owner,
        cwd: &Path,
        env: Vec<(String, String)>,
    ) -> Result<Self, McpClientError> {
        let launch = Launch {
            owner,
            program: command.program.clone().into(),
            args: command.args.clone(),
            cwd: Some(cwd.to_path_buf()),
            env,
            inherit_env: true,
            io: Io::Piped {
                stdin: true,
                stdout: true,
                stderr: false,
            },
            marker: EnvMarker::fresh(),
            kill_on_drop: true,
        };
        let mut group = handle::start(launch).map_err(|source| McpClientError::Spawn {
            program: command.program.clone(),
            source,
        })?;
        let (Some(stdout), Some(stdin)) = (group.take_stdout(), group.take_stdin()) else {
            let _ = teardown::terminate(&mut group, &Ladder::kill()).await;
            return Err(McpClientError::Handshake {
                program: command.program.clone(),
                reason: "its stdin/stdout were not piped".into(),
            });
        };
        let handshake = tokio::time::timeout(CALL_TIMEOUT, ().serve((stdout, stdin))).await;
        match handshake {
            Ok(Ok(service)) => Ok(Self {
                service,
                group,
                failed: std::sync::atomic::AtomicBool::new(false),
            }),
            Ok(Err(e)) => {
                let _ = teardown::terminate(&mut group, &Ladder::kill()).await;
                Err(McpClientError::Handshake {
                    program: command.program.clone(),
                    reason: e.to_string(),
                })
            }
            Err(_) => {
                let _ = teardown::terminate(&mut group, &Ladder::kill()).await;
                Err(McpClientError::Handshake {
                    program: command.program.clone(),
                    reason: format!("no answer within {} s", CALL_TIMEOUT.as_secs()),
                })
            }
        }
    }

    /// Calls `tool` with `arguments` (a JSON object) and returns its answer.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Value,
    ) -> Result<ToolAnswer, McpClientError> {
        let serde_json::Value::Object(arguments) = arguments else {
            return Err(McpClientError::Arguments {
                tool: tool.to_string(),
            });
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let began = std::time::Instant::now();
        let result = tokio::time::timeout(CALL_TIMEOUT, self.service.call_tool(params)).await;
        // Where a replayed browser step's time goes (`BUGATTI_LOG_LEVEL=debug`).
        tracing::debug!(
            tool,
            ms = began.elapsed().as_millis(),
            "playwright mcp call"
        );
        if !matches!(result, Ok(Ok(_))) {
            self.failed.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let result = result
            .map_err(|_| McpClientError::Call {
                tool: tool.to_string(),
                reason: format!("no answer within {} s", CALL_TIMEOUT.as_secs()),
            })?
            .map_err(|e| McpClientError::Call {
                tool: tool.to_string(),
                reason: e.to_string(),
            })?;
        let mut text = Vec::new();
        let mut images = Vec::new();
        for content in &result.content {
            match content {
                ContentBlock::Text(t) => text.push(t.text.clone()),
                ContentBlock::Image(image) => {
                    use base64::Engine as _;
                    if let Ok(bytes) =
                        base64::engine::general_purpose::STANDARD.decode(image.data.as_bytes())
                    {
                        images.push(bytes);
                    }
                }
                _ => {}
            }
        }
        Ok(ToolAnswer {
            text: text.join("\n"),
            images,
            is_error: result.is_error.unwrap_or(false),
        })
    }

    /// The server's pid.
    pub fn pid(&self) -> i32 {
        self.group.pid()
    }

    /// Whether the client may serve another session: its server still runs and no call failed
    /// at the protocol level.
    pub fn is_sound(&self) -> bool {
        !self.failed.load(std::sync::atomic::Ordering::SeqCst)
            && self.group.exit_status().is_none()
            && !self.service.is_closed()
    }

    /// Ends the client session and the server's process group.
    pub async fn stop(mut self) -> TeardownReport {
        let _ = self.service.cancel().await;
        teardown::terminate(&mut self.group, &Ladder::agent(Duration::from_secs(2))).await
    }
}
