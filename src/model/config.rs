//! The project / global config file (`bugatti.config.toml`, docs/config.md "Project config") exactly as
//! written: every table and field, unknown fields rejected with file:line:col. Merging into
//! effective values with defaults is `layers`' job; this module only parses.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::diagnostics::Problem;

/// A whole config file. Every field optional: absent means "not set in this layer".
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    #[serde(default)]
    pub provider: ProviderSection,
    #[serde(default)]
    pub supervisor: SupervisorSection,
    #[serde(default)]
    pub env: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    pub secrets: BTreeMap<String, Spanned<SecretSpec>>,
    #[serde(default)]
    pub ports: BTreeMap<String, Spanned<PortSpec>>,
    #[serde(default)]
    pub commands: BTreeMap<String, Spanned<CommandSection>>,
    pub checkpoint: Option<Spanned<CheckpointSection>>,
    pub browser: Option<Spanned<BrowserSection>>,
    /// `[replay]` (docs/replay.md). Parsed and validated; replay itself is not yet active.
    #[serde(default)]
    pub replay: super::replay::ReplaySection,
    /// `[watch]` (docs/cli.md "supervisor watch"): the app files whose save re-runs the whole selection.
    #[serde(default)]
    pub watch: super::watch::WatchSection,
}

/// `[provider]`, also the shape of a test's `[overrides.provider]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    pub name: Option<Spanned<String>>,
    pub extra_system_prompt: Option<String>,
    pub agent_args: Option<Vec<String>>,
    pub cmd: Option<Spanned<String>>,
    /// Where the agent runs; relative to the project root.
    pub cwd: Option<Spanned<String>>,
    pub step_timeout_secs: Option<Spanned<u64>>,
    /// An agent silent this long in the middle of a step is taken as hung.
    pub no_output_timeout_secs: Option<u64>,
    /// claude-code / codex: a step needing more model turns than this stops as `over_budget`.
    pub max_turns_per_step: Option<u32>,
    /// Per root test (all its attempts): once spent, its steps stop as `over_budget`.
    pub max_cost_usd: Option<f64>,
    /// codex: dollars per million tokens, so that Codex's token counts become a cost.
    pub price_per_mtok: Option<PricePerMtok>,
    pub base_url: Option<Spanned<String>>,
    pub strict_warnings: Option<bool>,
    /// Serve the agent console (docs/console.md) to the agent; default true.
    pub console: Option<bool>,
}

/// `[provider] price_per_mtok = { input = …, cached_input = …, output = … }`: US dollars per
/// million tokens. `cached_input` defaults to `input` (no discount assumed).
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PricePerMtok {
    pub input: f64,
    pub cached_input: Option<f64>,
    pub output: f64,
}

impl PricePerMtok {
    /// The cost in dollars of `input` tokens (of which `cached` were cache hits) and `output`.
    pub fn cost_usd(&self, input: u64, cached: u64, output: u64) -> f64 {
        let cached = cached.min(input);
        let fresh = (input - cached) as f64 * self.input;
        let hits = cached as f64 * self.cached_input.unwrap_or(self.input);
        (fresh + hits + output as f64 * self.output) / 1_000_000.0
    }
}

impl std::fmt::Display for PricePerMtok {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "input ${} / cached input ${} / output ${} per million tokens",
            self.input,
            self.cached_input.unwrap_or(self.input),
            self.output
        )
    }
}

/// `[supervisor]`: defaults for the options of `start` / `test`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SupervisorSection {
    pub max_parallel: Option<Spanned<usize>>,
    pub tests: Option<Spanned<Vec<String>>>,
    pub artifact_dir: Option<String>,
    /// A number (the count) or `{ count, backoff, delay, jitter, max_delay }` (docs/config.md).
    pub retries: Option<crate::model::retries::RetriesSetting>,
    pub keep_workspace: Option<KeepWorkspace>,
    pub fail_fast: Option<bool>,
    /// After this many failed root tests, none new starts (`--max-fail`).
    pub max_fail: Option<u32>,
    /// Each selected root test runs this many times (`--repeat`).
    pub repeat: Option<u32>,
    /// Only root tests whose name or path matches this regex (`-g/--grep`).
    pub grep: Option<String>,
    /// Only root tests whose name and path do not match this regex (`--grep-invert`).
    pub grep_invert: Option<String>,
    /// A root test classified flaky in recent history is quarantined automatically, and
    /// released after consecutive passes (docs/ci.md).
    pub auto_quarantine: Option<bool>,
    /// A root test that passed only on a retry: `pass` (the default) or `fail` the suite.
    pub flaky: Option<FlakyPolicy>,
    /// Globs (relative to the project root) of root tests that are quarantined: run and
    /// reported, never deciding the exit code.
    pub quarantine: Option<Spanned<Vec<String>>>,
    /// docs/ci.md: a command run once after the suite's reports are written.
    pub on_finish: Option<String>,
    /// How long `on_finish` may run before it is stopped.
    pub on_finish_timeout_secs: Option<u64>,
    /// Whole-invocation deadline, like `--timeout`.
    pub timeout_secs: Option<u64>,
    /// Retention: runs and suites beyond the newest N are pruned when a suite starts (0 = all
    /// kept).
    pub keep_runs: Option<usize>,
    /// Per invocation: a root test that would take the suite's spend over it does not start.
    pub max_cost_usd: Option<f64>,
    /// Per harness command: its log keeps this many bytes of head, then a rolling tail.
    pub max_log_bytes: Option<Spanned<i64>>,
}

/// `[supervisor] flaky`: what a pass on a retry means for the suite.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum FlakyPolicy {
    /// The suite passes (nextest's default).
    #[default]
    Pass,
    /// The suite fails (nextest `flaky-result = "fail"`, Playwright `failOnFlakyTests`).
    Fail,
}

impl FlakyPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            FlakyPolicy::Pass => "pass",
            FlakyPolicy::Fail => "fail",
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum KeepWorkspace {
    Always,
    Never,
    #[default]
    OnFailure,
}

impl KeepWorkspace {
    pub fn as_str(self) -> &'static str {
        match self {
            KeepWorkspace::Always => "always",
            KeepWorkspace::Never => "never",
            KeepWorkspace::OnFailure => "on-failure",
        }
    }
}

/// A `[secrets]` value: `{ from_env = "VAR" }`, or a literal string (discouraged: it then sits
/// in the config file, but it is still redacted from every artifact).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum SecretSpec {
    Literal(String),
    FromEnv(FromEnv),
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FromEnv {
    pub from_env: String,
}

/// A `[ports]` value: `"auto"` (a free loopback port per session) or a fixed port number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortSpec {
    Auto,
    Fixed(u16),
}

impl<'de> Deserialize<'de> for PortSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Number(i64),
        }
        match Raw::deserialize(d)? {
            Raw::Text(s) if s == "auto" => Ok(PortSpec::Auto),
            Raw::Text(s) => Err(serde::de::Error::custom(format!(
                "port must be \"auto\" or a number from 1 to 65535, not \"{s}\""
            ))),
            Raw::Number(n) if (1..=65535).contains(&n) => Ok(PortSpec::Fixed(n as u16)),
            Raw::Number(n) => Err(serde::de::Error::custom(format!(
                "port must be \"auto\" or a number from 1 to 65535, not {n}"
            ))),
        }
    }
}

/// The one vocabulary for a harness command's kind: config, process layer and run.json.
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum CommandKind {
    /// Runs to completion during setup; a non-zero exit fails the session.
    ShortLived,
    /// Runs for the whole session (or suite) and is torn down at the end.
    LongLived,
}

impl CommandKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CommandKind::ShortLived => "short_lived",
            CommandKind::LongLived => "long_lived",
        }
    }
}

/// The one vocabulary for a long-lived command's restart policy (config and process layer).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RestartPolicy {
    #[default]
    Never,
    OnFailure,
    Always,
}

impl RestartPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            RestartPolicy::Never => "never",
            RestartPolicy::OnFailure => "on-failure",
            RestartPolicy::Always => "always",
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum CommandScope {
    #[default]
    Test,
    Suite,
}

impl CommandScope {
    pub fn as_str(self) -> &'static str {
        match self {
            CommandScope::Test => "test",
            CommandScope::Suite => "suite",
        }
    }
}

/// `readiness = { http | tcp | log | exec = "...", interval_ms, timeout_secs }`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ReadinessSection {
    pub http: Option<String>,
    pub tcp: Option<String>,
    pub log: Option<String>,
    pub exec: Option<String>,
    pub interval_ms: Option<u64>,
    pub timeout_secs: Option<u64>,
}

/// `[commands.NAME]`, also the shape of `[overrides.commands.NAME]` (where `kind` is refused).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CommandSection {
    pub kind: Option<CommandKind>,
    pub cmd: Option<String>,
    pub cwd: Option<String>,
    pub depends_on: Option<Vec<String>>,
    pub timeout_secs: Option<u64>,
    pub readiness_url: Option<String>,
    pub readiness_urls: Option<Vec<String>>,
    pub readiness_timeout_secs: Option<u64>,
    pub readiness: Option<ReadinessSection>,
    pub restart: Option<RestartPolicy>,
    pub max_restarts: Option<u32>,
    pub restart_window_secs: Option<u64>,
    pub backoff_ms: Option<u64>,
    pub stop_signal: Option<String>,
    pub stop_timeout_secs: Option<u64>,
    pub pty: Option<bool>,
    pub scope: Option<CommandScope>,
}

/// `[checkpoint]` (Bugatti's): save / restore commands run at step boundaries.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSection {
    pub save: String,
    pub restore: String,
    pub timeout_secs: Option<u64>,
}

/// `[browser]` (docs/browser.md): one supervised browser per root-test session. Checked and merged by
/// [`super::browser::BrowserConfig::apply`].
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BrowserSection {
    pub executable: Option<Spanned<String>>,
    pub headless: Option<bool>,
    pub viewport: Option<Spanned<String>>,
    pub mcp: Option<bool>,
    pub mcp_cmd: Option<Spanned<String>>,
    pub capture: Option<Spanned<Vec<String>>>,
    pub fail_on_console_errors: Option<bool>,
    pub keep_profile: Option<bool>,
    pub reuse: Option<bool>,
}

/// Parse a config file's text; `path` is only for the error's location.
pub fn parse_config(path: &Path, text: &str) -> Result<ConfigFile, Problem> {
    super::toml_read::read_first(path, text)
}

/// Every problem of the file, in file order, and what the file holds without the lines that
/// had one (none when it is not TOML), so loading can check the rest in the same pass.
pub fn parse_config_lenient(path: &Path, text: &str) -> (Option<ConfigFile>, Vec<Problem>) {
    super::toml_read::read_lenient(path, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ConfigFile, Problem> {
        parse_config(Path::new("bugatti.config.toml"), text)
    }

    #[test]
    fn empty_file_is_all_unset() {
        assert_eq!(parse("").unwrap(), ConfigFile::default());
    }

    #[test]
    fn full_spec_example_parses() {
        let cfg = parse(include_str!("../../config/bugatti.config.toml")).unwrap();
        assert!(cfg.commands.contains_key("server"));
        assert!(cfg.checkpoint.is_none() || cfg.checkpoint.is_some());
    }

    #[test]
    fn unknown_field_names_file_line_and_column() {
        let p = parse("[provider]\nname = \"shell\"\nstep_timout_secs = 3\n").unwrap_err();
        assert!(
            p.message.contains("unknown field `step_timout_secs`"),
            "{}",
            p.message
        );
        let loc = p.location.expect("location");
        assert_eq!((loc.line, loc.col), (3, 1));
        assert_eq!(loc.file, Path::new("bugatti.config.toml"));
    }

    #[test]
    fn unknown_table_is_an_error() {
        let p = parse("[provder]\nname = \"x\"\n").unwrap_err();
        assert!(
            p.message.contains("unknown field `provder`"),
            "{}",
            p.message
        );
    }

    #[test]
    fn wrong_type_is_an_error_with_position() {
        let p = parse("[supervisor]\nmax_parallel = \"four\"\n").unwrap_err();
        assert_eq!(
            p.message,
            "wrong kind of value: found the string \"four\", expected a whole number"
        );
        assert_eq!(p.location.unwrap().line, 2);
    }

    #[test]
    fn bad_enum_values_are_errors() {
        let p = parse("[commands.a]\nkind = \"forever\"\ncmd = \"x\"\n").unwrap_err();
        assert!(
            p.message.contains("unknown variant `forever`"),
            "{}",
            p.message
        );
        let p = parse("[commands.a]\nrestart = \"sometimes\"\n").unwrap_err();
        assert!(p.message.contains("sometimes"), "{}", p.message);
        let p = parse("[supervisor]\nkeep_workspace = \"maybe\"\n").unwrap_err();
        assert!(p.message.contains("maybe"), "{}", p.message);
    }

    #[test]
    fn ports_accept_auto_or_number_only() {
        let cfg = parse("[ports]\nA = \"auto\"\nB = 8080\n").unwrap();
        assert_eq!(cfg.ports["A"].get_ref(), &PortSpec::Auto);
        assert_eq!(cfg.ports["B"].get_ref(), &PortSpec::Fixed(8080));
        let p = parse("[ports]\nA = 70000\n").unwrap_err();
        assert!(
            p.message.contains("from 1 to 65535, not 70000"),
            "{}",
            p.message
        );
        let p = parse("[ports]\nA = \"any\"\n").unwrap_err();
        assert!(p.message.contains("not \"any\""), "{}", p.message);
    }

    #[test]
    fn secrets_from_env_or_literal() {
        let cfg = parse("[secrets]\nA = { from_env = \"X\" }\nB = \"lit\"\n").unwrap();
        assert_eq!(
            cfg.secrets["A"].get_ref(),
            &SecretSpec::FromEnv(FromEnv {
                from_env: "X".into()
            })
        );
        assert_eq!(
            cfg.secrets["B"].get_ref(),
            &SecretSpec::Literal("lit".into())
        );
    }

    #[test]
    fn bugatti_07_config_is_accepted_as_is() {
        let text = r#"
[provider]
name = "claude-code"
extra_system_prompt = "Use the browser for UI tests."
agent_args = ["--dangerously-skip-permissions"]
step_timeout_secs = 300
strict_warnings = true
base_url = "http://localhost:3000"

[commands.install]
kind = "short_lived"
cmd = "pnpm install"

[commands.server]
kind = "long_lived"
cmd = "npm start"
readiness_url = "http://localhost:3000/health"
readiness_urls = ["http://localhost:3000/api"]
readiness_timeout_secs = 60

[checkpoint]
save = "./scripts/checkpoint.sh save"
restore = "./scripts/checkpoint.sh restore"
timeout_secs = 180
"#;
        let cfg = parse(text).unwrap();
        assert_eq!(cfg.provider.strict_warnings, Some(true));
        assert_eq!(cfg.checkpoint.unwrap().get_ref().timeout_secs, Some(180));
    }
}
