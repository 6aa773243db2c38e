//! Which Playwright MCP server the agent gets (docs/browser.md, `[browser] mcp = true`): the
//! `[browser] mcp_cmd` override, else `playwright-mcp` on `PATH`, else
//! `npx -y @playwright/mcp@<pinned>`; always attached to the session's browser, so the agent
//! drives the very browser the supervisor captures. The endpoint holds the session's token, and
//! a command line is readable by every local user (`/proc/<pid>/cmdline`): it goes to Playwright
//! MCP in an owner-only `--config` file ([`McpCommand::attach`]), never as `--cdp-endpoint`.
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
    /// Its arguments (with `--config <file>` once [`Self::attach`]ed).
    pub args: Vec<String>,
    /// Where it came from.
    pub source: McpSource,
    /// The session browser's endpoint, for [`Self::attach`] (`None` when a configured command
    /// names its own `--cdp-endpoint`).
    pub cdp_endpoint: Option<String>,
}

impl McpCommand {
    /// Decides the command for the browser at `cdp_url`, searching `path_var` for
    /// `playwright-mcp`.
    pub fn resolve(
        mcp_cmd: Option<&str>,
        path_var: Option<&str>,
        cdp_url: &str,
    ) -> Result<Self, BrowserError> {
        let (program, args, source) = match mcp_cmd {
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
        let cdp_endpoint =
            (!args.iter().any(|a| a.starts_with("--cdp-endpoint"))).then(|| cdp_url.to_string());
        Ok(Self {
            program,
            args,
            source,
            cdp_endpoint,
        })
    }

    /// Writes the endpoint into `config` (owner-only, in the run directory) and points the
    /// command at it with `--config`: the token stays off every command line. A `--config` of the
    /// command's own is read and kept, the endpoint added to it, the command pointed at the copy.
    pub fn attach(&mut self, config: &Path) -> Result<(), BrowserError> {
        let Some(endpoint) = self.cdp_endpoint.clone() else {
            return Ok(());
        };
        let own = config_arg(&self.args);
        let mut settings = match &own {
            Some((_, path)) => read_own_config(Path::new(path))?,
            None => json!({}),
        };
        if !settings.is_object() {
            settings = json!({});
        }
        if !settings["browser"].is_object() {
            settings["browser"] = json!({});
        }
        settings["browser"]["cdpEndpoint"] = Value::String(endpoint);
        crate::model::user_file::write_private(config, settings.to_string().as_bytes()).map_err(
            |e| BrowserError::McpCommand {
                cmd: self.program.clone(),
                reason: format!("cannot write its config file {}: {e}", config.display()),
            },
        )?;
        let path = config.display().to_string();
        match own {
            Some((index, _)) if self.args[index].starts_with("--config=") => {
                self.args[index] = format!("--config={path}");
            }
            Some((index, _)) => self.args[index + 1] = path,
            None => {
                self.args.push("--config".to_string());
                self.args.push(path);
            }
        }
        Ok(())
    }

    /// The stdio server entry of an MCP config (`mcpServers.browser`).
    pub fn server_entry(&self) -> Value {
        json!({ "type": "stdio", "command": self.program, "args": self.args })
    }
}

/// Where a command's own `--config FILE` / `--config=FILE` is: the index of the flag, the file.
fn config_arg(args: &[String]) -> Option<(usize, String)> {
    args.iter().enumerate().find_map(|(i, a)| {
        if let Some(path) = a.strip_prefix("--config=") {
            Some((i, path.to_string()))
        } else if a == "--config" {
            args.get(i + 1).map(|path| (i, path.clone()))
        } else {
            None
        }
    })
}

/// A configured command's own config file (JSON): read as a user-named file is, bounded.
fn read_own_config(path: &Path) -> Result<Value, BrowserError> {
    let refused = |reason: String| BrowserError::McpCommand {
        cmd: format!("--config {}", path.display()),
        reason,
    };
    let text = crate::model::user_file::read_to_string(path, crate::model::user_file::CONFIG_MAX)
        .map_err(|e| refused(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| {
        refused(format!(
            "not a JSON config Playwright MCP's endpoint can join: {e}"
        ))
    })
}

/// The first executable file `name` in the folders of `path_var`.
pub(super) fn on_path(name: &str, path_var: Option<&str>) -> Option<PathBuf> {
    path_var?
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(name))
        .find(|p| is_executable(p))
}

/// A regular file (links followed) with an execute bit.
pub(super) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
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
        assert_eq!(c.args, ["-y", "@playwright/mcp@0.0.83"]);
        assert_eq!(c.cdp_endpoint.as_deref(), Some(CDP));
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
        assert!(c.args.is_empty(), "{:?}", c.args);
        assert_eq!(
            c.server_entry(),
            json!({"type": "stdio", "command": bin.display().to_string(), "args": []})
        );
    }

    #[test]
    fn a_configured_command_wins_and_keeps_its_own_endpoint() {
        let c = McpCommand::resolve(Some("node 'my dir/cli.js' --headless"), None, CDP)
            .expect("resolves");
        assert_eq!(c.source, McpSource::Configured);
        assert_eq!(c.program, "node");
        assert_eq!(c.args, ["my dir/cli.js", "--headless"]);
        let mut c = McpCommand::resolve(Some("pw --cdp-endpoint=http://elsewhere"), None, CDP)
            .expect("resolves");
        assert_eq!(c.args, ["--cdp-endpoint=http://elsewhere"]);
        assert_eq!(c.cdp_endpoint, None);
        let dir = tempfile::tempdir().expect("dir");
        c.attach(&dir.path().join("unused.json"))
            .expect("nothing to attach");
        assert_eq!(c.args, ["--cdp-endpoint=http://elsewhere"]);
        assert!(!dir.path().join("unused.json").exists());
        let e = McpCommand::resolve(Some("pw 'open"), None, CDP).expect_err("bad");
        assert!(e.to_string().contains("pw 'open"), "{e}");
    }

    #[test]
    fn the_endpoint_goes_in_an_owner_only_config_file_not_on_the_command_line() {
        let dir = tempfile::tempdir().expect("dir");
        let secret = "ws://127.0.0.1:9/0123456789abcdef0123456789abcdef/devtools/browser";
        let mut c = McpCommand::resolve(None, Some("/nonexistent"), secret).expect("resolves");
        let file = dir.path().join("browser/.playwright-mcp.json");
        c.attach(&file).expect("attached");
        assert!(
            c.args.iter().all(|a| !a.contains("0123456789abcdef")),
            "{:?}",
            c.args
        );
        assert_eq!(
            c.args[c.args.len() - 2..],
            ["--config".to_string(), file.display().to_string()]
        );
        let mode = std::fs::metadata(&file).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let written: Value =
            serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
        assert_eq!(written, json!({"browser": {"cdpEndpoint": secret}}));

        // A command with a config of its own: kept, the endpoint added, the copy named instead.
        let own = dir.path().join("mine.json");
        std::fs::write(
            &own,
            r#"{"browser": {"initScript": ["a.js"]}, "timeouts": {"action": 9}}"#,
        )
        .expect("write");
        for cmd in [
            format!("pw --config {}", own.display()),
            format!("pw --config={}", own.display()),
        ] {
            let mut c = McpCommand::resolve(Some(&cmd), None, secret).expect("resolves");
            c.attach(&file).expect("attached");
            assert!(
                c.args
                    .iter()
                    .any(|a| a.ends_with(&file.display().to_string())),
                "{:?}",
                c.args
            );
            assert!(
                !c.args.iter().any(|a| a.contains("mine.json")),
                "{:?}",
                c.args
            );
            let written: Value =
                serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
            assert_eq!(written["browser"]["cdpEndpoint"], secret);
            assert_eq!(written["browser"]["initScript"][0], "a.js");
            assert_eq!(written["timeouts"]["action"], 9);
        }
    }
}
