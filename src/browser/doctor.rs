//! What `doctor` says about `[browser]`: which browser runs and its version (or why none),
//! `--no-sandbox` when running as root, and the Playwright MCP server the agent would get.
//! Nothing is started beyond `--version` (npx is not run: it would download the package).

use super::executable;
use super::mcp::{McpCommand, McpSource, PINNED_VERSION};
use crate::model::browser::BrowserConfig;
use crate::process::version::program_version;
use std::path::Path;

/// One line of `doctor`: `ok`, `warn` or `FAIL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrowserFinding {
    /// All is well.
    Ok(String),
    /// Worth knowing; nothing fails.
    Note(String),
    /// Every session with a browser would fail.
    Fail(String),
}

/// The findings for `config`, looking on `path_var` as a session would (from `cwd`).
pub async fn findings(
    config: &BrowserConfig,
    path_var: Option<&str>,
    cwd: &Path,
) -> Vec<BrowserFinding> {
    let mut out = Vec::new();
    match executable::find(config.executable.as_deref(), path_var) {
        Err(e) => out.push(BrowserFinding::Fail(format!("browser: {e}"))),
        Ok(path) => {
            let looks_like_a_version = |line: &str| {
                line.split_whitespace().any(|w| {
                    w.split('.').count() >= 3 && w.split('.').all(|p| p.parse::<u32>().is_ok())
                })
            };
            match program_version(&path, cwd, looks_like_a_version).await {
                Ok(version) => out.push(BrowserFinding::Ok(format!(
                    "browser: {version} ({})",
                    path.display()
                ))),
                Err(why) => out.push(BrowserFinding::Fail(format!("browser: {why}"))),
            }
        }
    }
    if super::launch::running_as_root() {
        out.push(BrowserFinding::Note(
            "browser: running as root, so it is started with --no-sandbox (Chromium refuses root otherwise)".to_string(),
        ));
    }
    if !config.mcp {
        return out;
    }
    // The endpoint is the session's; a placeholder shows the shape.
    match McpCommand::resolve(config.mcp_cmd.as_deref(), path_var, "ws://127.0.0.1:<port>/<token>/devtools/browser") {
        Err(e) => out.push(BrowserFinding::Fail(format!("Playwright MCP: {e}"))),
        Ok(command) => match &command.source {
            McpSource::Npx => out.push(BrowserFinding::Note(format!(
                "Playwright MCP: no playwright-mcp on PATH; sessions run `npx -y @playwright/mcp@{PINNED_VERSION}` (needs npm and the registry on first use)"
            ))),
            McpSource::OnPath(path) => {
                match program_version(path, cwd, |l| l.contains("ersion")).await {
                    Ok(version) => {
                        let line = format!("Playwright MCP: {version} ({})", path.display());
                        if version.contains(PINNED_VERSION) {
                            out.push(BrowserFinding::Ok(line));
                        } else {
                            out.push(BrowserFinding::Note(format!(
                                "{line}; the supervisor is tested with {PINNED_VERSION}"
                            )));
                        }
                    }
                    Err(why) => out.push(BrowserFinding::Fail(format!("Playwright MCP: {why}"))),
                }
            }
            McpSource::Configured => out.push(BrowserFinding::Ok(format!(
                "Playwright MCP: [browser] mcp_cmd `{}`",
                shell_words::join(std::iter::once(&command.program).chain(&command.args))
            ))),
        },
    }
    out
}
