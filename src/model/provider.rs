//! Which agent runs the steps (`[provider] name`, `BUGATTI_PROVIDER`, `--provider`): parsed once,
//! where the config, the environment or the flag gives it, and a [`ProviderKind`] from there on.
//!
//! Everything the rest of the supervisor knows about a provider is one row of data, its
//! [`ProviderInfo`] (`kind.info()`): its program and where it is named, its npm package, whether
//! a restart resumes it, its watchdog, its shell and shell tools, how it gets MCP servers. No code
//! outside this file and `providers/` matches on the kind: a new provider is a new row here (and
//! its `providers/<name>.rs`), and a place that forgot it cannot exist.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    ClaudeCode,
    Codex,
    Pi,
    Command,
    Shell,
}

/// A version as `major.minor.patch`.
pub type Version = (u64, u64, u64);

/// Where a provider's program comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// An agent CLI installed from npm, found on `PATH` unless an environment variable names it.
    Cli(AgentCli),
    /// `[provider] cmd`, the user's own program line (`command`).
    Cmd,
    /// A fixed program on `PATH` (`shell`: `sh`).
    Fixed(&'static str),
}

/// The facts of an agent CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentCli {
    /// Its row in `check` (`provider.<key>`): `claude_bin`.
    pub key: &'static str,
    /// The environment variable that names the program: `BUGATTI_CLAUDE_BIN`.
    pub env: &'static str,
    /// The program otherwise, on `PATH`: `claude`.
    pub default: &'static str,
    /// What `npm install -g` installs it from.
    pub npm: &'static str,
    /// The oldest version whose output the provider reads, and what it writes from then on: the
    /// "oldest supported" of its first [`Tested`] line (docs/providers.md, "Supported versions").
    pub floor: (Version, &'static str),
    /// The versions the tests run against, one line per npm package (pi has two).
    pub tested: &'static [Tested],
    /// Environment variables that log it in by themselves (an API key).
    pub key_vars: &'static [&'static str],
    /// What the owner of the run does when it is not logged in (the `auth` fault's fix).
    pub login_fix: &'static str,
}

/// One line of the supported-versions table (docs/providers.md, "Supported versions"): the
/// oldest version `.ci/run` installs and tests, the newest it installs and tests, and the day the
/// newest was tested. `.ci/run` installs exactly these two (a test compares them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tested {
    /// The npm package of this line (`@anthropic-ai/claude-code`).
    pub npm: &'static str,
    pub oldest: Version,
    pub newest: Version,
    /// When `newest` was tested, `YYYY-MM-DD`.
    pub on: &'static str,
    /// The oldest Node.js this line runs under (its package's `engines`), for a CLI that runs
    /// on Node rather than as a native binary; `None` for a native one.
    pub node: Option<Version>,
}

/// How the agent's own shell tool runs a command (what shell replay runs a recorded one with).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentShell {
    /// `bash`, its working directory carried from call to call (Claude Code's Bash).
    Bash,
    /// The recorded command line through `sh -c` (Codex records the shell it ran in it).
    Sh,
}

/// How the agent is given the console and the other MCP servers (`providers/console_wiring.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpStyle {
    /// A generated `--mcp-config` file (Claude Code), the project's `.mcp.json` servers merged in.
    ConfigFile,
    /// `-c mcp_servers.…` arguments on every invocation (Codex).
    Args,
    /// An extension the provider writes and passes with `-e` (pi).
    Extension,
    /// The console's address and token in the environment only (`command`).
    Env,
    /// No console: the provider runs no model that would call it (`shell`).
    None,
}

impl McpStyle {
    /// Whether the agent gets the console at all.
    pub fn serves_console(self) -> bool {
        self != Self::None
    }

    /// Whether the agent reads the project's `.mcp.json` (so it is checked, merged and shown).
    pub fn reads_project_mcp_json(self) -> bool {
        self == Self::ConfigFile
    }
}

/// Arguments without which a non-interactive agent runs none of its tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolPermission {
    /// An agent argument starting with one of these allows tools.
    pub flags: &'static [&'static str],
    /// What `doctor` notes when none is given.
    pub note: &'static str,
}

/// Everything the supervisor knows about one provider outside `providers/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderInfo {
    pub kind: ProviderKind,
    /// As the config, `--provider` and every file name it.
    pub name: &'static str,
    pub program: Program,
    /// A restart after a watchdog fault resumes its conversation (and an agent that died between
    /// steps is restarted at the next one rather than failing the session).
    pub resumes: bool,
    /// `no_output_timeout_secs` applies: an agent silent that long mid-step is stopped.
    pub watchdog: bool,
    /// Its steps run in the session's workspace unless `[provider] cwd` says otherwise (else the
    /// project root, as Bugatti 0.7 runs the agent).
    pub runs_in_workspace: bool,
    /// The shell its shell tool runs commands with.
    pub shell: AgentShell,
    /// Its own shell tool, as its stream names it (recorded and replayed).
    pub shell_tools: &'static [&'static str],
    /// Its read-only file tools, as its stream names them (recorded and replayed as checks
    /// made again over today's files: `replay/files.rs`).
    pub file_tools: &'static [&'static str],
    pub mcp: McpStyle,
    /// It reports tokens only: a price turns them into dollars (`check` shows it).
    pub prices_tokens: bool,
    /// Its session home starts as a copy of the user's config and login (`doctor` says which).
    pub seeds_user_home: bool,
    /// It has no judgement of its own: it runs the step's commands, so its transcript is what
    /// the app showed (stability's observed output reads it).
    pub transcript_is_app_output: bool,
    pub tool_permission: Option<ToolPermission>,
}

const ROWS: [ProviderInfo; 5] = [
    ProviderInfo {
        kind: ProviderKind::ClaudeCode,
        name: "claude-code",
        program: Program::Cli(AgentCli {
            key: "claude_bin",
            env: "BUGATTI_CLAUDE_BIN",
            default: "claude",
            npm: "@anthropic-ai/claude-code",
            // 2.1.197 is the oldest Claude Code the provider is tested against (its stream-json
            // events, `api_retry`, background tasks); CI runs it beside the newest tested.
            floor: (
                (2, 1, 197),
                "the stream-json events the provider is tested against",
            ),
            tested: &[Tested {
                npm: "@anthropic-ai/claude-code",
                oldest: (2, 1, 197),
                newest: (2, 1, 332),
                on: "2026-11-28",
                node: None,
            }],
            key_vars: &[
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_AUTH_TOKEN",
                "CLAUDE_CODE_OAUTH_TOKEN",
                "CLAUDE_CODE_USE_BEDROCK",
                "CLAUDE_CODE_USE_VERTEX",
            ],
            login_fix: "log Claude Code in (`claude auth login`, or `claude` then /login) or set \
                        ANTHROPIC_API_KEY in the supervisor's environment",
        }),
        resumes: true,
        watchdog: true,
        runs_in_workspace: false,
        shell: AgentShell::Bash,
        shell_tools: &["Bash"],
        file_tools: &["Read", "Grep", "Glob"],
        mcp: McpStyle::ConfigFile,
        prices_tokens: false,
        seeds_user_home: false,
        transcript_is_app_output: false,
        tool_permission: Some(ToolPermission {
            flags: &[
                "--allowedTools",
                "--allowed-tools",
                "--permission-mode",
                "--dangerously-skip-permissions",
            ],
            note: "claude-code: agent_args allow no tools, so Claude Code will refuse the agent's \
                   Bash calls (the step names each refusal); allow them with \
                   agent_args = [\"--allowedTools\", \"Bash\"]",
        }),
    },
    ProviderInfo {
        kind: ProviderKind::Codex,
        name: "codex",
        program: Program::Cli(AgentCli {
            key: "codex_bin",
            env: "BUGATTI_CODEX_BIN",
            default: "codex",
            npm: "@openai/codex",
            // 0.169 is the oldest Codex the provider is tested against (the thread, turn and
            // item events of `codex exec --json`, its `-c` provider flags); CI runs it beside
            // the newest tested.
            floor: (
                (0, 169, 0),
                "the `codex exec --json` events the provider is tested against",
            ),
            tested: &[Tested {
                npm: "@openai/codex",
                oldest: (0, 169, 0),
                newest: (0, 171, 0),
                on: "2026-11-28",
                node: None,
            }],
            key_vars: &["OPENAI_API_KEY", "CODEX_API_KEY"],
            login_fix: "log Codex in (`codex login`, or `printenv OPENAI_API_KEY | codex login \
                        --with-api-key`) or set OPENAI_API_KEY in the supervisor's environment",
        }),
        resumes: true,
        watchdog: true,
        runs_in_workspace: false,
        shell: AgentShell::Sh,
        shell_tools: &["command_execution"],
        file_tools: &[],
        mcp: McpStyle::Args,
        prices_tokens: true,
        seeds_user_home: true,
        transcript_is_app_output: false,
        tool_permission: None,
    },
    ProviderInfo {
        kind: ProviderKind::Pi,
        name: "pi",
        program: Program::Cli(AgentCli {
            key: "pi_bin",
            env: "BUGATTI_PI_BIN",
            default: "pi",
            npm: "@earendil-works/pi-coding-agent",
            // 0.73.1 is the oldest pi the provider is written and tested against
            // (docs/providers.md); pi 1.x is its new package, tested from 1.5.2.
            floor: (
                (0, 73, 1),
                "pi's `--mode json` events as 0.73 and 1.x write them",
            ),
            tested: &[
                Tested {
                    npm: "@mariozechner/pi-coding-agent",
                    oldest: (0, 73, 1),
                    newest: (0, 73, 1),
                    on: "2026-11-28",
                    node: Some((20, 6, 0)),
                },
                Tested {
                    npm: "@earendil-works/pi-coding-agent",
                    oldest: (1, 5, 2),
                    newest: (1, 6, 0),
                    on: "2026-11-28",
                    // pi 1.x imports `enableCompileCache` and friends: on an older Node it
                    // dies at its first line, `--version` included.
                    node: Some((22, 19, 0)),
                },
            ],
            key_vars: &[],
            login_fix: "log pi in (`pi` then /login) or set the provider's API key \
                        (ANTHROPIC_API_KEY, OPENAI_API_KEY, …) in the supervisor's environment",
        }),
        resumes: true,
        watchdog: true,
        runs_in_workspace: false,
        shell: AgentShell::Sh,
        shell_tools: &["bash"],
        file_tools: &[],
        mcp: McpStyle::Extension,
        prices_tokens: false,
        seeds_user_home: false,
        transcript_is_app_output: false,
        tool_permission: None,
    },
    ProviderInfo {
        kind: ProviderKind::Command,
        name: "command",
        program: Program::Cmd,
        resumes: false,
        watchdog: true,
        runs_in_workspace: false,
        shell: AgentShell::Sh,
        shell_tools: &[],
        file_tools: &[],
        mcp: McpStyle::Env,
        prices_tokens: false,
        seeds_user_home: false,
        transcript_is_app_output: false,
        tool_permission: None,
    },
    ProviderInfo {
        kind: ProviderKind::Shell,
        name: "shell",
        program: Program::Fixed("sh"),
        resumes: false,
        watchdog: false,
        runs_in_workspace: true,
        shell: AgentShell::Sh,
        shell_tools: &[],
        file_tools: &[],
        mcp: McpStyle::None,
        prices_tokens: false,
        seeds_user_home: false,
        transcript_is_app_output: true,
        tool_permission: None,
    },
];

impl ProviderKind {
    /// Every provider, in the order messages list them.
    pub const ALL: [ProviderKind; 5] = [
        Self::ClaudeCode,
        Self::Codex,
        Self::Pi,
        Self::Command,
        Self::Shell,
    ];

    /// This provider's row.
    pub fn info(self) -> &'static ProviderInfo {
        let at = match self {
            Self::ClaudeCode => 0,
            Self::Codex => 1,
            Self::Pi => 2,
            Self::Command => 3,
            Self::Shell => 4,
        };
        &ROWS[at]
    }

    pub fn as_str(self) -> &'static str {
        self.info().name
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// `claude-code, codex, pi, command, shell`: what an unknown name is told.
    pub fn names() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }

    /// The providers that ask a model (and so are recorded and replayed); `shell` does not.
    pub fn is_agent(self) -> bool {
        self.info().mcp.serves_console()
    }
}

/// Every provider's row, in the order messages list them.
pub fn rows() -> impl Iterator<Item = &'static ProviderInfo> {
    ProviderKind::ALL.into_iter().map(ProviderKind::info)
}

impl ProviderInfo {
    /// The agent CLI's facts, for a provider that runs one.
    pub fn cli(&self) -> Option<&'static AgentCli> {
        match &self.kind.info().program {
            Program::Cli(cli) => Some(cli),
            Program::Cmd | Program::Fixed(_) => None,
        }
    }

    /// Whether `tool` is this provider's own shell tool.
    pub fn is_shell_tool(&self, tool: &str) -> bool {
        self.shell_tools.contains(&tool)
    }

    /// Whether `tool` is one of this provider's read-only file tools.
    pub fn is_file_tool(&self, tool: &str) -> bool {
        self.file_tools.contains(&tool)
    }

    /// What to do when its program is not found: what to install, or which setting names it.
    pub fn install_fix(&self) -> String {
        match self.program {
            Program::Cli(cli) => format!(
                "install it (npm install -g {}) or name the binary with {}",
                cli.npm, cli.env
            ),
            Program::Cmd => {
                "check [provider] cmd (a relative program starts at [provider] cwd)".to_string()
            }
            Program::Fixed(program) => format!("`{program}` must be on PATH"),
        }
    }
}

/// An unknown provider name; shows what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected one of {}", ProviderKind::names())]
pub struct UnknownProvider;

impl std::str::FromStr for ProviderKind {
    type Err = UnknownProvider;
    fn from_str(name: &str) -> Result<Self, UnknownProvider> {
        Self::parse(name).ok_or(UnknownProvider)
    }
}

impl std::fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The provider as a record names it (`provider` of run.json and of the `run_started` event,
/// a history line's `provider`): a kind this supervisor knows, or the name another version
/// wrote, kept as written. `report` and `merge` read run.json and history.jsonl written by other
/// versions and shards; a name they do not know must not make them lose the record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ProviderName {
    Known(ProviderKind),
    Unknown(String),
}

impl ProviderName {
    /// The name as written.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Known(kind) => kind.as_str(),
            Self::Unknown(name) => name,
        }
    }
    /// The kind, when this supervisor knows the name.
    pub fn kind(&self) -> Option<ProviderKind> {
        match self {
            Self::Known(kind) => Some(*kind),
            Self::Unknown(_) => None,
        }
    }
}

impl From<ProviderKind> for ProviderName {
    fn from(kind: ProviderKind) -> Self {
        Self::Known(kind)
    }
}

impl From<&str> for ProviderName {
    fn from(name: &str) -> Self {
        ProviderKind::parse(name).map_or_else(|| Self::Unknown(name.to_string()), Self::Known)
    }
}

impl PartialEq<ProviderKind> for ProviderName {
    fn eq(&self, other: &ProviderKind) -> bool {
        self.kind() == Some(*other)
    }
}

impl std::fmt::Display for ProviderName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ProviderName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProviderName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Ok(match ProviderKind::parse(&name) {
            Some(kind) => Self::Known(kind),
            None => Self::Unknown(name),
        })
    }
}

/// A string in the schemas, as it always was: the set of names grows with the versions.
impl schemars::JsonSchema for ProviderName {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        String::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provider_name_reads_back_as_written_known_or_not() {
        for text in [
            "\"codex\"",
            "\"claude-code\"",
            "\"a-provider-of-a-later-version\"",
        ] {
            let name: ProviderName = serde_json::from_str(text).expect("a name");
            assert_eq!(serde_json::to_string(&name).expect("json"), text);
        }
        let known: ProviderName = serde_json::from_str("\"shell\"").expect("a name");
        assert_eq!(known, ProviderName::Known(ProviderKind::Shell));
        assert!(known == ProviderKind::Shell);
        let other: ProviderName = serde_json::from_str("\"claude\"").expect("a name");
        assert_eq!(other, ProviderName::Unknown("claude".into()));
        assert_eq!(other.kind(), None);
        assert_eq!(
            schemars::schema_for!(ProviderName).as_value(),
            schemars::schema_for!(String).as_value()
        );
    }

    #[test]
    fn every_name_parses_back() {
        for kind in ProviderKind::ALL {
            assert_eq!(ProviderKind::parse(kind.as_str()), Some(kind));
            assert_eq!(
                serde_json::to_value(kind).expect("json"),
                serde_json::json!(kind.as_str())
            );
        }
        assert_eq!(ProviderKind::parse("claude"), None);
        assert_eq!(
            ProviderKind::names(),
            "claude-code, codex, pi, command, shell"
        );
        assert_eq!(
            "claude".parse::<ProviderKind>().map_err(|e| e.to_string()),
            Err("expected one of claude-code, codex, pi, command, shell".to_string())
        );
    }

    #[test]
    fn each_row_is_its_own_kinds() {
        for kind in ProviderKind::ALL {
            assert_eq!(kind.info().kind, kind);
        }
        let clis: Vec<_> = rows().filter_map(|r| r.cli()).map(|c| c.key).collect();
        assert_eq!(clis, ["claude_bin", "codex_bin", "pi_bin"]);
        // A provider that resumes is an agent CLI with a watchdog.
        for row in rows().filter(|r| r.resumes) {
            assert!(row.cli().is_some() && row.watchdog, "{}", row.name);
        }
    }
}
