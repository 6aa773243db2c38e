//! The effective configuration of one root test: docs/config.md "Project config" merged field by field over
//! the layers defaults < global config < project config < `BUGATTI_*` env < test `[overrides]` <
//! flags, each value remembering the layer (and, when it came from a file, the place) it came from.
//!
//! Harness commands are normalized by [`super::commands`].

mod apply;
mod rows;
pub mod step_timeout;
mod validate;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use toml::Spanned;

use super::commands::{apply_command_fields, new_command, validate_commands};
pub use super::commands::{CommandConfig, ProbeKind, ReadinessProbe};
use super::sourced::{known_list, origin, problem};
pub use super::sourced::{Layer, LayerProblem, Origin, Sourced};

use super::config::{
    CheckpointSection, CommandKind, CommandScope, CommandSection, ConfigFile, KeepWorkspace,
    PortSpec, ProviderSection, SecretSpec,
};
use super::options::RunOptions;
use super::substitute::{
    session_vars, valid_name as valid_env_name, SubstError, BUILTIN_NAMES, CHECKPOINT_NAMES,
};

/// The names of one table with where each was defined.
type NamedOrigins<'a> = Vec<(&'a String, Option<Origin>)>;

pub const DEFAULT_PROVIDER: ProviderKind = ProviderKind::ClaudeCode;
pub const DEFAULT_STEP_TIMEOUT_SECS: u64 = 300;
pub const DEFAULT_JOBS: usize = 4;
pub const DEFAULT_ARTIFACT_DIR: &str = ".bugatti";
pub const DEFAULT_KEEP_RUNS: usize = 200;
/// `[supervisor] on_finish_timeout_secs`: a notification hook gets a minute.
pub const DEFAULT_ON_FINISH_TIMEOUT_SECS: u64 = 60;
/// The default `[supervisor] max_log_bytes`: generous, but a runaway server cannot fill a disk.
pub const DEFAULT_MAX_LOG_BYTES: u64 = 256 * 1024 * 1024;
/// The smallest accepted `max_log_bytes`: below this the head would hold almost nothing.
pub const MIN_MAX_LOG_BYTES: u64 = 4096;
pub const DEFAULT_CHECKPOINT_TIMEOUT_SECS: u64 = 120;
pub const DEFAULT_NO_OUTPUT_TIMEOUT_SECS: u64 = 120;
pub use super::provider::ProviderKind;

#[derive(Debug, Clone, PartialEq)]
pub struct ProviderSettings {
    pub name: Sourced<ProviderKind>,
    pub extra_system_prompt: Sourced<Option<String>>,
    pub agent_args: Sourced<Vec<String>>,
    /// Provider `command` only: the program to run.
    pub cmd: Sourced<Option<String>>,
    /// Where the agent runs, relative to the project root; `None`: the project root itself.
    pub cwd: Sourced<Option<String>>,
    pub step_timeout_secs: Sourced<u64>,
    /// An agent silent this long mid-step is hung (a `command` reply without a marker ends).
    pub no_output_timeout_secs: Sourced<u64>,
    /// claude-code / codex: model turns a step may take; more is `over_budget`. `None`: no limit.
    pub max_turns_per_step: Sourced<Option<u32>>,
    /// Per root test, all attempts; `None`: no limit.
    pub max_cost_usd: Sourced<Option<f64>>,
    /// codex: what its tokens cost; `None`: the built-in price of its model, if known.
    pub price_per_mtok: Sourced<Option<super::config::PricePerMtok>>,
    pub base_url: Sourced<Option<String>>,
    pub strict_warnings: Sourced<bool>,
    /// Serve the agent console over MCP (docs/console.md).
    pub console: Sourced<bool>,
    /// Where each agent CLI is (`provider.claude_bin`, …): its default on `PATH` unless its
    /// environment variable (`BUGATTI_CLAUDE_BIN`, …) says otherwise. Read once, here, with the
    /// other environment knobs; sessions, preflight, `doctor` and `check` use it.
    pub programs: BTreeMap<ProviderKind, Sourced<String>>,
}

impl ProviderSettings {
    /// The program the provider starts: its CLI as configured, a fixed one (`sh`), or `None`
    /// for `command` (whose program is the first word of `cmd`).
    pub fn program(&self) -> Option<&str> {
        let kind = self.name.value;
        match kind.info().program {
            super::provider::Program::Cli(cli) => Some(
                self.programs
                    .get(&kind)
                    .map_or(cli.default, |p| p.value.as_str()),
            ),
            super::provider::Program::Cmd => None,
            super::provider::Program::Fixed(program) => Some(program),
        }
    }
}

/// Every agent CLI at its default program.
fn default_programs() -> BTreeMap<ProviderKind, Sourced<String>> {
    super::provider::rows()
        .filter_map(|row| {
            Some((
                row.kind,
                Sourced::default_value(row.cli()?.default.to_string()),
            ))
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
pub struct SupervisorSettings {
    /// `[supervisor] max_parallel` / `--jobs`.
    pub jobs: Sourced<usize>,
    /// Discovery globs, relative to the project root; empty = the whole root.
    pub tests: Sourced<Vec<String>>,
    pub artifact_dir: Sourced<String>,
    /// `[supervisor] retries` / a test file's `retries` / `--retries` (the count only).
    pub retries: Sourced<crate::model::retries::RetryPolicy>,
    pub keep_workspace: Sourced<KeepWorkspace>,
    pub fail_fast: Sourced<bool>,
    /// `[supervisor] max_fail` / `--max-fail`; `--fail-fast` counts as 1.
    pub max_fail: Sourced<Option<u32>>,
    /// `[supervisor] repeat` / `--repeat`: runs of each selected root test (at least 1).
    pub repeat: Sourced<u32>,
    /// `[supervisor] auto_quarantine`: flaky tests quarantined from history (docs/ci.md).
    pub auto_quarantine: Sourced<bool>,
    /// `[supervisor] grep` / `-g`: the regex a root test's name or path must match.
    pub grep: Sourced<Option<String>>,
    /// `[supervisor] grep_invert` / `--grep-invert`: the regex it must not match.
    pub grep_invert: Sourced<Option<String>>,
    /// `[supervisor] flaky` / `--fail-on-flaky`.
    pub flaky: Sourced<crate::model::config::FlakyPolicy>,
    /// `[supervisor] quarantine`: globs of quarantined root tests, relative to the project root.
    pub quarantine: Sourced<Vec<String>>,
    /// `[supervisor] on_finish`: run once after the suite's reports are written (docs/ci.md).
    pub on_finish: Sourced<Option<String>>,
    /// `[supervisor] on_finish_timeout_secs`.
    pub on_finish_timeout_secs: Sourced<u64>,
    /// Whole-invocation deadline in seconds (`--timeout`).
    pub timeout_secs: Sourced<Option<u64>>,
    /// `[supervisor] keep_runs`: suites (and their runs) kept when a suite starts; 0 = all.
    pub keep_runs: Sourced<usize>,
    /// `[supervisor] max_cost_usd`: the invocation's spending limit; `None`: no limit.
    pub max_cost_usd: Sourced<Option<f64>>,
    /// `[supervisor] max_log_bytes`: per harness command, the head its log keeps before the
    /// rest goes to a rolling tail (`crate::process::log_limit`).
    pub max_log_bytes: Sourced<u64>,
}

/// A resolved secret. Its Debug never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    /// The environment variable it was read from; None for a literal in the config.
    pub from_env: Option<String>,
    pub value: String,
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret")
            .field("from_env", &self.from_env)
            .field("value", &"[REDACTED]")
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointConfig {
    pub save: String,
    pub restore: String,
    pub timeout_secs: u64,
}

/// Everything of docs/config.md "Project config" that applies to one root test.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectiveConfig {
    pub provider: ProviderSettings,
    pub supervisor: SupervisorSettings,
    pub env: BTreeMap<String, Sourced<String>>,
    pub secrets: BTreeMap<String, Sourced<Secret>>,
    pub ports: BTreeMap<String, Sourced<PortSpec>>,
    pub commands: BTreeMap<String, CommandConfig>,
    pub checkpoint: Option<Sourced<CheckpointConfig>>,
    /// `[browser]` (docs/browser.md): `None` when no layer has the table (no browser).
    pub browser: Option<Sourced<crate::model::browser::BrowserConfig>>,
    /// `[replay]` and `--replay` (docs/replay.md): resolved and checked.
    pub replay: crate::model::replay::ReplayConfig,
    /// `[watch]` (docs/cli.md "supervisor watch"): global and project config only.
    pub watch: crate::model::watch::WatchConfig,
}

impl Default for EffectiveConfig {
    fn default() -> Self {
        EffectiveConfig {
            provider: ProviderSettings {
                name: Sourced::default_value(DEFAULT_PROVIDER),
                extra_system_prompt: Sourced::default_value(None),
                agent_args: Sourced::default_value(Vec::new()),
                cmd: Sourced::default_value(None),
                cwd: Sourced::default_value(None),
                step_timeout_secs: Sourced::default_value(DEFAULT_STEP_TIMEOUT_SECS),
                no_output_timeout_secs: Sourced::default_value(DEFAULT_NO_OUTPUT_TIMEOUT_SECS),
                max_turns_per_step: Sourced::default_value(None),
                max_cost_usd: Sourced::default_value(None),
                price_per_mtok: Sourced::default_value(None),
                base_url: Sourced::default_value(None),
                strict_warnings: Sourced::default_value(false),
                console: Sourced::default_value(true),
                programs: default_programs(),
            },
            supervisor: SupervisorSettings {
                jobs: Sourced::default_value(DEFAULT_JOBS),
                tests: Sourced::default_value(Vec::new()),
                artifact_dir: Sourced::default_value(DEFAULT_ARTIFACT_DIR.to_string()),
                retries: Sourced::default_value(crate::model::retries::RetryPolicy::default()),
                keep_workspace: Sourced::default_value(KeepWorkspace::OnFailure),
                fail_fast: Sourced::default_value(false),
                max_fail: Sourced::default_value(None),
                repeat: Sourced::default_value(1),
                auto_quarantine: Sourced::default_value(false),
                grep: Sourced::default_value(None),
                grep_invert: Sourced::default_value(None),
                flaky: Sourced::default_value(Default::default()),
                quarantine: Sourced::default_value(Vec::new()),
                on_finish: Sourced::default_value(None),
                on_finish_timeout_secs: Sourced::default_value(DEFAULT_ON_FINISH_TIMEOUT_SECS),
                timeout_secs: Sourced::default_value(None),
                keep_runs: Sourced::default_value(DEFAULT_KEEP_RUNS),
                max_cost_usd: Sourced::default_value(None),
                max_log_bytes: Sourced::default_value(DEFAULT_MAX_LOG_BYTES),
            },
            env: BTreeMap::new(),
            secrets: BTreeMap::new(),
            ports: BTreeMap::new(),
            commands: BTreeMap::new(),
            checkpoint: None,
            browser: None,
            replay: Default::default(),
            watch: Default::default(),
        }
    }
}

impl SupervisorSettings {
    /// How many failed root tests halt the suite: `max_fail`, else 1 under `fail_fast`.
    pub fn failures_allowed(&self) -> Option<u32> {
        match (self.max_fail.value, self.fail_fast.value) {
            (Some(n), true) => Some(n.min(1)),
            (Some(n), false) => Some(n),
            (None, true) => Some(1),
            (None, false) => None,
        }
    }
}

impl EffectiveConfig {
    /// The session's variables for `${NAME}` and the environment of harness commands and the
    /// agent: `builtins` (the `BUGATTI_*` values of this session), the session's actual ports,
    /// the secrets, and `[env]` with its own references resolved.
    pub fn session_vars(
        &self,
        builtins: &BTreeMap<String, String>,
        ports: &BTreeMap<String, u16>,
    ) -> Result<BTreeMap<String, String>, SubstError> {
        let mut base = builtins.clone();
        base.extend(ports.iter().map(|(k, v)| (k.clone(), v.to_string())));
        base.extend(
            self.secrets
                .iter()
                .map(|(k, v)| (k.clone(), v.value.value.clone())),
        );
        let env = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect();
        session_vars(&base, &env)
    }

    /// (name, value) of every secret, for the redactor.
    pub fn secret_pairs(&self) -> Vec<(String, String)> {
        self.secrets
            .iter()
            .map(|(k, v)| (k.clone(), v.value.value.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests;
