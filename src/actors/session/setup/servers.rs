//! The agent's MCP servers: the agent console (docs/console.md), the browser's Playwright MCP,
//! the project's own `.mcp.json`.

use super::*;

impl Setup<'_> {
    /// The agent console (docs/console.md), unless `[provider] console = false` or the provider
    /// is `shell` (it runs no model: nothing would call it); its endpoint for the agent.
    pub(super) async fn serve_console(
        &mut self,
        agent: &crate::providers::AgentSpec,
        vars: &SessionVars,
        log_sources: Vec<crate::console::logs::LogSource>,
    ) -> Result<Option<crate::console::server::Endpoint>, Ending> {
        let effective = &self.session.test.effective;
        // `shell` runs no model: nothing would call it.
        let wanted = effective.provider.console.value && agent.provider.info().mcp.serves_console();
        if wanted {
            // Their live output is in them since the harness came up.
            let logs = log_sources;
            let console = Arc::new(
                Console::new(ConsoleSetup {
                    run_id: self.session.run_id.as_str().into(),
                    run_dir: self.session.run_dir(),
                    // docs/console.md: where the agent itself runs, so a command means the same through the
                    // console as through the agent's own shell.
                    workdir: agent.cwd.clone(),
                    env: vars.env.clone(),
                    secrets: Arc::clone(&vars.secrets),
                    logs,
                })
                .with_max_log_bytes(effective.supervisor.max_log_bytes.value),
            );
            let server =
                ConsoleServer::start_with_token(console, self.session.tokens.console.clone())
                    .await
                    .map_err(|e| Ending::error(e.to_string()))?;
            let endpoint = server.endpoint().clone();
            self.started.console = Some(server);
            Ok(Some(endpoint))
        } else {
            Ok(None)
        }
    }

    /// The agent's MCP servers besides the console: the browser's Playwright MCP (its output
    /// and secrets file in the run directory), the project's own `.mcp.json` for Claude Code.
    pub(super) fn mcp_servers(
        &mut self,
        agent: &crate::providers::AgentSpec,
        vars: &SessionVars,
    ) -> Result<crate::providers::McpServers, Ending> {
        Ok(crate::providers::McpServers {
            browser: self.browser_mcp_command(vars)?,
            // Claude Code's format; the other agents do not read it.
            project: if agent.provider.info().mcp.reads_project_mcp_json() {
                project_mcp_servers(&agent.cwd, self.started.browser.is_some())
                    .map_err(|e| Ending::error(e.to_string()))?
            } else {
                None
            },
        })
    }
}

/// The project's own `.mcp.json` servers in the agent's working directory; a clash with the
/// supervisor's own servers is an error (`load` refuses it before anything runs, too).
pub(super) fn project_mcp_servers(
    agent_cwd: &std::path::Path,
    browser: bool,
) -> Result<Option<crate::model::mcp_json::ProjectServers>, crate::model::mcp_json::McpJsonError> {
    let reserved: &[&str] = if browser {
        &[
            crate::console::SERVER_NAME,
            crate::browser::mcp::SERVER_NAME,
        ]
    } else {
        &[crate::console::SERVER_NAME]
    };
    crate::model::mcp_json::read(agent_cwd, reserved)
}
