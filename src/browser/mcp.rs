//! Which Playwright MCP server the agent gets (docs/browser.md, `[browser] mcp = true`): the
//! `[browser] mcp_cmd` override, else `playwright-mcp` on `PATH`, else
//! `npx -y @playwright/mcp@<pinned>`; always attached to the session's browser with
//! `--cdp-endpoint`, so the agent drives the very browser the supervisor captures.
//!
//! Only the command is decided here; giving it to each provider (claude-code's generated MCP
//! config, codex's `-c mcp_servers.browser…`) is the providers' wiring.

use super::error::BrowserError;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The `@playwright/mcp` version run through npx (and installed by `.ci/run`).
pub const PINNED_VERSION: &str = "0.0.83";
/// The MCP server's name beside `bugatti`: its tools are `mcp__browser__…` for claude-code.
pub const SERVER_NAME: &str = "browser";

/// Where the command came from, for `doctor` and `check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpSource {
    /// `[browser] mcp_cmd`.
    Configured,
    /// `playwright-mcp` found on `PATH`.
    OnPath(PathBuf),
    /// `npx -y @playwright/mcp@<pinned>`.
    Npx,
}

/// The Playwright MCP server command, attached to one browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpCommand {
    /// The program.
    pub program: String,
    /// Its arguments, ending with `--cdp-endpoint <url>`.
    pub args: Vec<String>,
    /// Where it came from.
    pub source: McpSource,
}

impl McpCommand {
    /// Decides the command for the browser at `cdp_url`, searching `path_var` for
    /// `playwright-mcp`.
    pub fn resolve(
        mcp_cmd: Option<&str>,
        path_var: Option<&str>,
        cdp_url: &str,
    ) -> Result<Self, BrowserError> {
        let (program, mut args, source) = match mcp_cmd {
            Some(cmd) => {
                let mut words = shell_words::split(cmd)
                    .map_err(|e| BrowserError::McpCommand {
                        cmd: cmd.to_string(),
                        reason: e.to_string(),
                    })?
                    .into_iter();
                let program = words.next().ok_or_else(|| BrowserError::McpCommand {
                    cmd: cmd.to_string(),
                    reason: "empty".to_string(),
                })?;
                (program, words.collect(), McpSource::Configured)
            }
            None => match on_path("playwright-mcp", path_var) {
                Some(found) => (
                    found.display().to_string(),
                    Vec::new(),
                    McpSource::OnPath(found),
                ),
                None => (
                    "npx".to_string(),
                    vec![
                        "-y".to_string(),
                        format!("@playwright/mcp@{PINNED_VERSION}"),
                    ],
                    McpSource::Npx,
                ),
            },
        };
        // A configured command that already names its endpoint keeps it.
        if !args.iter().any(|a| a.starts_with("--cdp-endpoint")) {
            args.push("--cdp-endpoint".to_string());
            args.push(cdp_url.to_string());
        }
        Ok(Self {
            program,
            args,
            source,
        })
    }

    /// The stdio server entry of an MCP config (`mcpServers.browser`).
    pub fn server_entry(&self) -> Value {
        json!({ "type": "stdio", "command": self.program, "args": self.args })
    }
}

fn on_path(name: &str, path_var: Option<&str>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    path_var?
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(name))
        .find(|p| {
            std::fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const CDP: &str = "http://127.0.0.1:9333";

    #[test]
    fn npx_with_the_pinned_version_when_nothing_else_is_there() {
        let c = McpCommand::resolve(None, Some("/nonexistent"), CDP).expect("resolves");
        assert_eq!(c.source, McpSource::Npx);
        assert_eq!(c.program, "npx");
        assert_eq!(
            c.args,
            ["-y", "@playwright/mcp@0.0.83", "--cdp-endpoint", CDP]
        );
    }

    #[test]
    fn playwright_mcp_on_path_comes_before_npx() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("playwright-mcp");
        std::fs::write(&bin, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let path = format!("/nonexistent:{}", dir.path().display());
        let c = McpCommand::resolve(None, Some(&path), CDP).expect("resolves");
        assert_eq!(c.source, McpSource::OnPath(bin.clone()));
        assert_eq!(c.program, bin.display().to_string());
        assert_eq!(c.args, ["--cdp-endpoint", CDP]);
        assert_eq!(
            c.server_entry(),
            json!({"type": "stdio", "command": bin.display().to_string(), "args": ["--cdp-endpoint", CDP]})
        );
    }

    #[test]
    fn a_configured_command_wins_and_keeps_its_own_endpoint() {
        let c = McpCommand::resolve(Some("node 'my dir/cli.js' --headless"), None, CDP)
            .expect("resolves");
        assert_eq!(c.source, McpSource::Configured);
        assert_eq!(c.program, "node");
        assert_eq!(
            c.args,
            ["my dir/cli.js", "--headless", "--cdp-endpoint", CDP]
        );
        let c = McpCommand::resolve(Some("pw --cdp-endpoint=http://elsewhere"), None, CDP)
            .expect("resolves");
        assert_eq!(c.args, ["--cdp-endpoint=http://elsewhere"]);
        let e = McpCommand::resolve(Some("pw 'open"), None, CDP).expect_err("bad");
        assert!(e.to_string().contains("pw 'open"), "{e}");
    }
}
