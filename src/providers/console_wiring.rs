//! How each provider is pointed at the console (docs/console.md): Claude Code through an `--mcp-config`
//! file, Codex through `-c mcp_servers.bugatti=…`, pi 1.x through an extension of its own
//! (`-e`, which registers the servers), a `command` agent through environment variables. The
//! token never goes on a command line.

use crate::browser::mcp::McpCommand;
use crate::console::server::Endpoint;
use crate::console::SERVER_NAME;
use std::path::Path;

/// The console's URL, for a `command` agent.
pub const URL_ENV: &str = "BUGATTI_MCP_URL";
/// The console's bearer token, for a `command` agent (and Codex's `bearer_token_env_var`).
pub const TOKEN_ENV: &str = "BUGATTI_MCP_TOKEN";

/// What the bootstrap tells the agent about the console (one wording for every provider).
pub const BOOTSTRAP: &str =
    "THE CONSOLE. Besides your own tools you have the MCP server `bugatti` \
(tools mcp__bugatti__* in Claude Code and pi 1.x; BUGATTI_MCP_URL and BUGATTI_MCP_TOKEN for other \
agents). \
Use it to drive interactive programs (a REPL, a prompt that asks a question, a migration that \
wants a yes): exec_command starts one under a terminal and returns what it printed, or a session \
ID while it still runs; write_stdin types into it (\"\\n\" ends a line, \"\\u0003\" is Ctrl-C) and \
returns what it printed next. Use it to watch the application: list_logs names the harness \
commands' logs, read_log reads one from a byte offset (next_offset continues), wait_for_log waits \
for a new line matching a regex — trigger the action first with from_offset taken before, or start \
waiting and act in another call. Console sessions and their processes end with the test.";

/// Environment every agent process gets when the console is on.
pub fn agent_env(endpoint: &Endpoint) -> Vec<(String, String)> {
    vec![
        (URL_ENV.to_string(), endpoint.url.clone()),
        (TOKEN_ENV.to_string(), endpoint.token.clone()),
    ]
}

/// The servers of Claude Code's generated MCP config: the console (`bugatti`), the session
/// browser's Playwright MCP (`browser`) and the project's own `.mcp.json` servers.
pub fn claude_servers(console: Option<&Endpoint>, mcp: &super::McpServers) -> serde_json::Value {
    let mut config = serde_json::json!({ "mcpServers": {} });
    if let Some(endpoint) = console {
        config["mcpServers"][SERVER_NAME] = serde_json::json!({
            "type": "http",
            "url": endpoint.url,
            "headers": {"Authorization": format!("Bearer {}", endpoint.token)},
        });
    }
    if let Some(browser) = &mcp.browser {
        config["mcpServers"][crate::browser::mcp::SERVER_NAME] = browser.server_entry();
    }
    if let Some(project) = &mcp.project {
        crate::model::mcp_json::merge(&mut config, project);
    }
    config
}

/// The `--mcp-config` file for Claude Code: written 0600 (it holds the console's token).
pub fn write_claude_config(path: &Path, config: &serde_json::Value) -> std::io::Result<()> {
    write_private(path, config.to_string().as_bytes())
}

/// A file of the agent's, written 0600 (its folder made if need be).
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)
}

/// Claude Code's extra arguments: the config, alone (`--strict-mcp-config`: the project's
/// `.mcp.json` is already merged into it), and the tools of `servers` allowed. `--mcp-config`
/// takes several values, so it is followed by another flag, never by a positional argument.
pub fn claude_args(config: &Path, servers: &[&str]) -> Vec<String> {
    let allowed: Vec<String> = servers.iter().map(|name| format!("mcp__{name}")).collect();
    vec![
        "--mcp-config".into(),
        config.display().to_string(),
        "--strict-mcp-config".into(),
        "--allowedTools".into(),
        allowed.join(","),
    ]
}

/// Claude Code's extra environment: wait for the console to connect before the first turn
/// (otherwise `-p` may start with the tools missing).
pub fn claude_env() -> Vec<(String, String)> {
    vec![("MCP_CONNECTION_NONBLOCKING".into(), "false".into())]
}

/// What a provider adds to its agent's command line and environment for the console.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extra {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// Everything the `claude-code` provider adds for its MCP servers (nothing when it has none:
/// then Claude Code reads the project's `.mcp.json` itself). Writes `<run_dir>/agent/mcp.json`.
pub fn for_claude(facts: &super::SessionFacts) -> Result<Extra, super::AgentError> {
    if facts.console.is_none() && facts.mcp.browser.is_none() {
        return Ok(Extra::default());
    }
    let config = claude_servers(facts.console.as_ref(), &facts.mcp);
    // docs/browser.md: the supervisor's own servers' tools are allowed; the project's are allowed as
    // the project's settings or `agent_args` say.
    let mut names = Vec::new();
    if facts.console.is_some() {
        names.push(SERVER_NAME);
    }
    if facts.mcp.browser.is_some() {
        names.push(crate::browser::mcp::SERVER_NAME);
    }
    let path = facts.run_paths().agent_mcp_config();
    write_claude_config(&path, &config).map_err(|source| super::AgentError::ConsoleConfig {
        path: path.clone(),
        source,
    })?;
    // BUGATTI_MCP_URL / _TOKEN come with every agent's environment (`providers::agent_env`).
    Ok(Extra {
        args: claude_args(&path, &names),
        env: claude_env(),
    })
}

/// What a Claude Code `system/init` event says of the console: `Ok` when the `bugatti` server is
/// connected and its tools are offered, else why not.
pub fn check_claude_init(event: &serde_json::Value) -> Result<(), String> {
    let servers = event["mcp_servers"].as_array();
    let status = servers
        .into_iter()
        .flatten()
        .find(|s| s["name"] == SERVER_NAME)
        .map(|s| s["status"].as_str().unwrap_or("unknown").to_string());
    match status.as_deref() {
        None => return Err(format!("the MCP server `{SERVER_NAME}` is not in its list")),
        Some("connected") => {}
        Some(other) => return Err(format!("the MCP server `{SERVER_NAME}` is {other}")),
    }
    let prefix = format!("mcp__{SERVER_NAME}__");
    let offered = event["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| t.as_str().is_some_and(|t| t.starts_with(&prefix)));
    if offered {
        Ok(())
    } else {
        Err(format!("no {prefix}* tools are offered"))
    }
}

/// The arguments a `codex` provider passes on every `codex exec` (and `resume`): the console as
/// an HTTP MCP server, its token read from [`TOKEN_ENV`], its tools approved (Codex asks
/// otherwise, and `exec` cannot answer), and required: a console Codex cannot reach (or that
/// refuses its token) stops Codex at its start ("required MCP servers failed to initialize:
/// bugatti") instead of leaving the step to run without the console.
pub fn codex_args(endpoint: &Endpoint) -> Vec<String> {
    vec![
        "-c".into(),
        format!(
            "mcp_servers.{SERVER_NAME}={{url={},bearer_token_env_var={},\
             default_tools_approval_mode=\"approve\",startup_timeout_sec=10,required=true}}",
            toml_string(&endpoint.url),
            toml_string(TOKEN_ENV)
        ),
    ]
}

/// The arguments that give `codex exec` the session browser's Playwright MCP as server
/// `browser`, its tools approved (`exec` cannot answer a prompt).
pub fn codex_browser_args(browser: &crate::browser::mcp::McpCommand) -> Vec<String> {
    let args: Vec<String> = browser.args.iter().map(|a| toml_string(a)).collect();
    vec![
        "-c".into(),
        format!(
            "mcp_servers.{}={{command={},args=[{}],\
             default_tools_approval_mode=\"approve\",startup_timeout_sec=60}}",
            crate::browser::mcp::SERVER_NAME,
            toml_string(&browser.program),
            args.join(",")
        ),
    ]
}

/// Why Codex refused to start without the console, read from its stderr: with the console
/// required ([`codex_args`]), a server it cannot reach, or one that refuses its token, ends
/// `codex exec` at once with `required MCP servers failed to initialize: bugatti: <why>`. `None`
/// when the stderr says no such thing (the agent died for another reason).
pub fn codex_console_failure(stderr: &str) -> Option<String> {
    const SAID: &str = "required MCP servers failed to initialize: ";
    /// Codex's reason embeds Rust type names hundreds of characters long; the head says it.
    const KEPT: usize = 300;
    let line = stderr.lines().find(|l| l.contains(SAID))?;
    let why = line.split_once(SAID).map(|(_, why)| why)?;
    if !why.starts_with(&format!("{SERVER_NAME}:")) && !why.contains(&format!(", {SERVER_NAME}")) {
        return None;
    }
    let why = why.trim();
    let shown: String = why.chars().take(KEPT).collect();
    let cut = if shown.len() < why.len() { " …" } else { "" };
    Some(format!("Codex could not connect to it ({shown}{cut})"))
}

/// The extension pi 1.x loads with `-e` (docs/providers.md, pi): it registers the console as the
/// HTTP MCP server `bugatti` and the session browser's Playwright MCP as the stdio server
/// `browser`, both with `direct` exposure, so their tools are declared to the model as
/// `mcp__bugatti__*` / `mcp__browser__*` (pi's default, `codemode`, would hide them behind scripts)
/// and pi's first prompt waits for them to connect. pi 1.x reads MCP servers only from its agent
/// directory's `mcp.json` and a trusted project's `.pi/mcp.json`, both the user's; an extension
/// adds them for one process without touching either. pi 0.73 loads the same file and, having no
/// `registerMcpServer`, does nothing. The token is read from [`TOKEN_ENV`] in pi's own process:
/// it is never in the file.
pub fn pi_extension(console: Option<&Endpoint>, browser: Option<&McpCommand>) -> String {
    let mut text = String::from(
        "// Written by the Bugatti supervisor for one session: its MCP servers for pi 1.x.\n\
         export default function (pi) {\n\
         \x20 if (typeof pi.registerMcpServer !== \"function\") return;\n",
    );
    if let Some(endpoint) = console {
        let server = serde_json::json!({
            "url": endpoint.url,
            "exposure": "direct",
            "description": "The Bugatti console: interactive programs under a terminal and the \
                            harness commands' logs.",
        });
        text.push_str(&format!(
            "  const server = {server};\n\
             \x20 server.headers = {{ Authorization: \"Bearer \" + (process.env[{}] || \"\") }};\n\
             \x20 pi.registerMcpServer({}, server);\n",
            serde_json::Value::from(TOKEN_ENV),
            serde_json::Value::from(SERVER_NAME),
        ));
    }
    if let Some(browser) = browser {
        let server = serde_json::json!({
            "command": browser.program,
            "args": browser.args,
            "exposure": "direct",
            "description": "The session's browser (Playwright MCP).",
        });
        text.push_str(&format!(
            "  pi.registerMcpServer({}, {server});\n",
            serde_json::Value::from(crate::browser::mcp::SERVER_NAME),
        ));
    }
    text.push_str("}\n");
    text
}

/// pi's `--tools` / `-t` in `agent_args`, with the tools of `servers` added: an allowlist declares
/// no MCP tool it does not name, so the user's `--tools read,bash` would leave the console's tools
/// undeclared. A list of `+name` / `-name` changes (which keeps MCP tools) is left as written.
pub fn pi_tools_args(agent_args: &[String], servers: &[&str]) -> Vec<String> {
    let mut args = agent_args.to_vec();
    let mut i = 0;
    while i < args.len() {
        let (value_at, prefix) = match args[i].as_str() {
            "--tools" | "-t" => (i + 1, ""),
            a if a.starts_with("--tools=") => (i, "--tools="),
            _ => {
                i += 1;
                continue;
            }
        };
        if let Some(value) = args.get(value_at).cloned() {
            let list = value.strip_prefix(prefix).unwrap_or(&value);
            let entries: Vec<&str> = list.split(',').map(str::trim).collect();
            let changes_only = entries
                .iter()
                .filter(|e| !e.is_empty())
                .all(|e| e.starts_with('+') || e.starts_with('-'));
            if !changes_only {
                let mut extended: Vec<String> = entries
                    .iter()
                    .filter(|e| !e.is_empty())
                    .map(|e| e.to_string())
                    .collect();
                for name in servers {
                    let pattern = format!("mcp__{name}__*");
                    if !extended.contains(&pattern) {
                        extended.push(pattern);
                    }
                }
                args[value_at] = format!("{prefix}{}", extended.join(","));
            }
        }
        i = value_at + 1;
    }
    args
}

/// What the `pi` provider adds for its MCP servers: `-e <extension>` and the servers' names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PiMcp {
    pub args: Vec<String>,
    pub servers: Vec<&'static str>,
}

/// The `pi` provider's [`PiMcp`]: the extension written to `<run_dir>/agent/pi-mcp.js`
/// (owner-only, like every agent file). Nothing when the session has neither console nor
/// browser.
pub fn for_pi(facts: &super::SessionFacts) -> Result<PiMcp, super::AgentError> {
    if facts.console.is_none() && facts.mcp.browser.is_none() {
        return Ok(PiMcp::default());
    }
    let mut servers = Vec::new();
    if facts.console.is_some() {
        servers.push(SERVER_NAME);
    }
    if facts.mcp.browser.is_some() {
        servers.push(crate::browser::mcp::SERVER_NAME);
    }
    let text = pi_extension(facts.console.as_ref(), facts.mcp.browser.as_ref());
    let path = facts.run_paths().agent_pi_extension();
    write_private(&path, text.as_bytes()).map_err(|source| super::AgentError::ConsoleConfig {
        path: path.clone(),
        source,
    })?;
    Ok(PiMcp {
        args: vec!["-e".into(), path.display().to_string()],
        servers,
    })
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> Endpoint {
        Endpoint {
            url: "http://127.0.0.1:4242/mcp".into(),
            token: "t0k".into(),
        }
    }

    #[test]
    fn codex_gets_one_inline_table_without_the_token() {
        let args = codex_args(&endpoint());
        assert_eq!(args[0], "-c");
        assert!(!args[1].contains("t0k"));
        let (key, value) = args[1].split_once('=').expect("key=value");
        assert_eq!(key, "mcp_servers.bugatti");
        let table: toml::Table = toml::from_str(&format!("v = {value}")).expect("valid TOML");
        let v = &table["v"];
        assert_eq!(v["url"].as_str(), Some("http://127.0.0.1:4242/mcp"));
        assert_eq!(
            v["bearer_token_env_var"].as_str(),
            Some("BUGATTI_MCP_TOKEN")
        );
        assert_eq!(v["default_tools_approval_mode"].as_str(), Some("approve"));
        assert_eq!(v["required"].as_bool(), Some(true));
    }

    #[test]
    fn a_codex_that_refused_to_start_without_the_console_is_recognised() {
        let stderr = "WARNING: proceeding, even though …\nReading additional input from stdin...\n\
            2026-11-23T14:11:37Z ERROR codex_core::session: Failed to create session: required MCP \
            servers failed to initialize: bugatti: Environment variable BUGATTI_MCP_TOKEN for MCP \
            server 'bugatti' is not set\nError: thread/start: …\n";
        let why = codex_console_failure(stderr).expect("recognised");
        assert_eq!(
            why,
            "Codex could not connect to it (bugatti: Environment variable BUGATTI_MCP_TOKEN for \
             MCP server 'bugatti' is not set)"
        );
        let long = format!(
            "required MCP servers failed to initialize: bugatti: {}",
            "x".repeat(1000)
        );
        assert!(codex_console_failure(&long).expect("long").ends_with(" …)"));
        assert_eq!(
            codex_console_failure("required MCP servers failed to initialize: other: down"),
            None,
            "another server of the user's is not the console"
        );
        assert_eq!(codex_console_failure("Error: stream disconnected"), None);
    }

    #[test]
    fn claude_config_is_private_and_points_at_the_endpoint() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        let config = claude_servers(Some(&endpoint()), &crate::providers::McpServers::default());
        let path = crate::model::artifacts::RunPaths::new(dir.path()).agent_mcp_config();
        write_claude_config(&path, &config).expect("write");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let config: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
        let server = &config["mcpServers"]["bugatti"];
        assert_eq!(server["type"], "http");
        assert_eq!(server["headers"]["Authorization"], "Bearer t0k");
        let args = claude_args(&path, &["bugatti"]);
        assert_eq!(args[0], "--mcp-config");
        assert_eq!(args[4], "mcp__bugatti");
        assert!(
            args[2].starts_with("--"),
            "a flag must follow the variadic option"
        );
    }

    #[test]
    fn init_events_are_checked() {
        let ok = serde_json::json!({"mcp_servers": [{"name": "bugatti", "status": "connected"}],
            "tools": ["Bash", "mcp__bugatti__exec_command"]});
        assert_eq!(check_claude_init(&ok), Ok(()));
        let pending = serde_json::json!({"mcp_servers": [{"name": "bugatti", "status": "pending"}],
            "tools": []});
        assert!(check_claude_init(&pending)
            .expect_err("pending")
            .contains("pending"));
        let missing = serde_json::json!({"mcp_servers": [], "tools": []});
        assert!(check_claude_init(&missing).is_err());
    }

    #[test]
    fn the_browser_and_the_projects_servers_join_the_console() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"pw": {"command": "npx", "args": ["@playwright/mcp"]}}}"#,
        )
        .expect("write");
        let mut browser = crate::browser::mcp::McpCommand::resolve(
            Some("playwright-mcp"),
            None,
            "ws://127.0.0.1:9222/sekrit-token/devtools/browser",
        )
        .expect("command");
        browser
            .attach(&dir.path().join("pw.json"))
            .expect("attached");
        let mcp = crate::providers::McpServers {
            browser: Some(browser),
            project: crate::model::mcp_json::read(dir.path(), &["bugatti", "browser"])
                .expect("reads"),
        };
        let config = claude_servers(Some(&endpoint()), &mcp);
        let servers = config["mcpServers"].as_object().expect("servers");
        let names: Vec<&str> = servers.keys().map(String::as_str).collect();
        assert_eq!(names, ["browser", "bugatti", "pw"]);
        // The browser's endpoint is in Playwright MCP's own config file, not in its arguments.
        assert_eq!(config["mcpServers"]["browser"]["args"][0], "--config");
        assert!(!config.to_string().contains("sekrit-token"), "{config}");
        let args = claude_args(Path::new("/x/mcp.json"), &["bugatti", "browser"]);
        assert_eq!(args[4], "mcp__bugatti,mcp__browser");
        let codex = codex_browser_args(mcp.browser.as_ref().expect("browser"));
        assert!(!codex[1].contains("sekrit-token"), "{}", codex[1]);
        assert!(
            codex[1]
                .starts_with("mcp_servers.browser={command=\"playwright-mcp\",args=[\"--config\""),
            "{}",
            codex[1]
        );
    }

    #[test]
    fn pi_gets_an_extension_that_registers_both_servers_without_the_token() {
        let browser = crate::browser::mcp::McpCommand {
            program: "playwright-mcp".into(),
            args: vec!["--config".into(), "/run/browser/pw \"x\".json".into()],
            source: crate::browser::mcp::McpSource::Configured,
            cdp_endpoint: None,
        };
        let text = pi_extension(Some(&endpoint()), Some(&browser));
        assert!(!text.contains("t0k"), "{text}");
        assert!(
            text.contains("process.env[\"BUGATTI_MCP_TOKEN\"]"),
            "{text}"
        );
        assert!(
            text.contains("\"url\":\"http://127.0.0.1:4242/mcp\""),
            "{text}"
        );
        assert!(text.contains("pi.registerMcpServer(\"bugatti\", server)"));
        // Arguments are JSON (JavaScript) strings, quotes escaped.
        assert!(
            text.contains(r#""args":["--config","/run/browser/pw \"x\".json"]"#),
            "{text}"
        );
        assert_eq!(text.matches("\"exposure\":\"direct\"").count(), 2, "{text}");
        // pi 0.73 has no registerMcpServer: the extension returns before using it.
        let guard = text.find("typeof pi.registerMcpServer").expect("guard");
        assert!(guard < text.find("pi.registerMcpServer(").expect("call"));
        let only_browser = pi_extension(None, Some(&browser));
        assert!(!only_browser.contains("bugatti"), "{only_browser}");
    }

    #[test]
    fn a_pi_tools_allowlist_gets_the_servers_tools_and_a_change_list_is_left() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            pi_tools_args(
                &args(&["--model", "m", "--tools", "read,bash"]),
                &["bugatti"]
            ),
            args(&["--model", "m", "--tools", "read,bash,mcp__bugatti__*"])
        );
        assert_eq!(
            pi_tools_args(
                &args(&["-t", "read", "--tools=bash"]),
                &["bugatti", "browser"]
            ),
            args(&[
                "-t",
                "read,mcp__bugatti__*,mcp__browser__*",
                "--tools=bash,mcp__bugatti__*,mcp__browser__*"
            ])
        );
        assert_eq!(
            pi_tools_args(&args(&["--tools", "+codemode,-write"]), &["bugatti"]),
            args(&["--tools", "+codemode,-write"])
        );
        assert_eq!(
            pi_tools_args(&args(&["--tools", "read,mcp__bugatti__*"]), &["bugatti"]),
            args(&["--tools", "read,mcp__bugatti__*"])
        );
        assert_eq!(
            pi_tools_args(&args(&["--tools"]), &["bugatti"]),
            args(&["--tools"])
        );
        assert_eq!(
            pi_tools_args(&args(&["--tools", "read"]), &[]),
            args(&["--tools", "read"])
        );
    }
}
