//! The effective configuration of one root test: README "Project config" merged field by field over
//! the layers defaults < global config < project config < `BUGATTI_*` env < test `[overrides]` <
//! flags, each value remembering the layer (and, when it came from a file, the place) it came from.
//!
//! Harness commands are normalized by [`super::commands`].

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;

use super::commands::{apply_command_fields, new_command, validate_commands};
pub use super::commands::{CommandConfig, ProbeKind, ReadinessProbe};

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

/// Where a value came from, lowest precedence first. Serialized as `default`, `global`,
/// `project`, `env`, `test`, `flag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    Default,
    Global,
    Project,
    Env,
    Test,
    Flag,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Default => "default",
            Layer::Global => "global config",
            Layer::Project => "project config",
            Layer::Env => "environment",
            Layer::Test => "test overrides",
            Layer::Flag => "command line",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A place in a file: for error messages about a value after parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub file: PathBuf,
    pub span: Range<usize>,
}

/// A value and the layer it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Layer,
    pub origin: Option<Origin>,
}

impl<T> Sourced<T> {
    pub fn default_value(value: T) -> Self {
        Sourced {
            value,
            source: Layer::Default,
            origin: None,
        }
    }
    fn set(&mut self, value: T, source: Layer, origin: Option<Origin>) {
        *self = Sourced {
            value,
            source,
            origin,
        };
    }
}

pub const DEFAULT_PROVIDER: &str = "claude-code";
pub const DEFAULT_STEP_TIMEOUT_SECS: u64 = 300;
pub const DEFAULT_JOBS: usize = 4;
pub const DEFAULT_ARTIFACT_DIR: &str = ".bugatti";
pub const DEFAULT_KEEP_RUNS: usize = 200;
/// The default `[supervisor] max_log_bytes`: generous, but a runaway server cannot fill a disk.
pub const DEFAULT_MAX_LOG_BYTES: u64 = 256 * 1024 * 1024;
/// The smallest accepted `max_log_bytes`: below this the head would hold almost nothing.
pub const MIN_MAX_LOG_BYTES: u64 = 4096;
pub const DEFAULT_CHECKPOINT_TIMEOUT_SECS: u64 = 120;
pub const DEFAULT_NO_OUTPUT_TIMEOUT_SECS: u64 = 120;
pub const DEFAULT_CLAUDE_BIN: &str = "claude";
pub const DEFAULT_CODEX_BIN: &str = "codex";
/// Every provider name the config accepts: the available ones, then the planned ones.
pub const PROVIDERS: &[&str] = &["claude-code", "codex", "command", "shell"];
/// The providers this build can run (what `crate::providers::ProviderKind::parse` accepts; a unit
/// test there keeps the two in agreement).
pub const AVAILABLE_PROVIDERS: &[&str] = &["claude-code", "codex", "command", "shell"];

#[derive(Debug, Clone, PartialEq)]
pub struct ProviderSettings {
    pub name: Sourced<String>,
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
    /// Serve the agent console over MCP (SPEC §9).
    pub console: Sourced<bool>,
    /// Where the Claude Code executable is: `claude` (on `PATH`) unless `BUGATTI_CLAUDE_BIN` says
    /// otherwise. Read once, here, with the other environment knobs; sessions and `check` use it.
    pub claude_bin: Sourced<String>,
    /// Where the Codex executable is: `codex` (on `PATH`) unless `BUGATTI_CODEX_BIN` says so.
    pub codex_bin: Sourced<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SupervisorSettings {
    /// `[supervisor] max_parallel` / `--jobs`.
    pub jobs: Sourced<usize>,
    /// Discovery globs, relative to the project root; empty = the whole root.
    pub tests: Sourced<Vec<String>>,
    pub artifact_dir: Sourced<String>,
    pub retries: Sourced<u32>,
    pub keep_workspace: Sourced<KeepWorkspace>,
    pub fail_fast: Sourced<bool>,
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

/// Everything of README "Project config" that applies to one root test.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectiveConfig {
    pub provider: ProviderSettings,
    pub supervisor: SupervisorSettings,
    pub env: BTreeMap<String, Sourced<String>>,
    pub secrets: BTreeMap<String, Sourced<Secret>>,
    pub ports: BTreeMap<String, Sourced<PortSpec>>,
    pub commands: BTreeMap<String, CommandConfig>,
    pub checkpoint: Option<Sourced<CheckpointConfig>>,
}

/// A problem found while layering, before it gets a rendered position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerProblem {
    pub message: String,
    pub origin: Option<Origin>,
}

pub(super) fn problem(message: impl Into<String>, origin: Option<Origin>) -> LayerProblem {
    LayerProblem {
        message: message.into(),
        origin,
    }
}

impl Default for EffectiveConfig {
    fn default() -> Self {
        EffectiveConfig {
            provider: ProviderSettings {
                name: Sourced::default_value(DEFAULT_PROVIDER.to_string()),
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
                claude_bin: Sourced::default_value(DEFAULT_CLAUDE_BIN.to_string()),
                codex_bin: Sourced::default_value(DEFAULT_CODEX_BIN.to_string()),
            },
            supervisor: SupervisorSettings {
                jobs: Sourced::default_value(DEFAULT_JOBS),
                tests: Sourced::default_value(Vec::new()),
                artifact_dir: Sourced::default_value(DEFAULT_ARTIFACT_DIR.to_string()),
                retries: Sourced::default_value(0),
                keep_workspace: Sourced::default_value(KeepWorkspace::OnFailure),
                fail_fast: Sourced::default_value(false),
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
        }
    }
}

pub(super) fn origin(file: &Path, span: Range<usize>) -> Option<Origin> {
    Some(Origin {
        file: file.to_path_buf(),
        span,
    })
}

impl EffectiveConfig {
    /// Apply one config file (global or project) over this config.
    pub fn apply_file(
        &mut self,
        cfg: &ConfigFile,
        file: &Path,
        layer: Layer,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<LayerProblem> {
        let mut problems = self.apply_provider(&cfg.provider, file, layer);
        let s = &cfg.supervisor;
        if let Some(v) = &s.max_parallel {
            if *v.get_ref() == 0 {
                problems.push(problem(
                    "`max_parallel` must be at least 1",
                    origin(file, v.span()),
                ));
            }
            self.supervisor
                .jobs
                .set(*v.get_ref(), layer, origin(file, v.span()));
        }
        if let Some(v) = &s.tests {
            self.supervisor
                .tests
                .set(v.get_ref().clone(), layer, origin(file, v.span()));
        }
        if let Some(v) = &s.artifact_dir {
            self.supervisor.artifact_dir.set(v.clone(), layer, None);
        }
        if let Some(v) = s.retries {
            self.supervisor.retries.set(v, layer, None);
        }
        if let Some(v) = s.keep_workspace {
            self.supervisor.keep_workspace.set(v, layer, None);
        }
        if let Some(v) = s.fail_fast {
            self.supervisor.fail_fast.set(v, layer, None);
        }
        if let Some(v) = s.timeout_secs {
            self.supervisor.timeout_secs.set(Some(v), layer, None);
        }
        if let Some(v) = s.max_cost_usd {
            if !(v.is_finite() && v > 0.0) {
                problems.push(problem(
                    format!(
                        "`[supervisor] max_cost_usd` must be a positive number of dollars (in {})",
                        file.display()
                    ),
                    None,
                ));
            }
            self.supervisor.max_cost_usd.set(Some(v), layer, None);
        }
        if let Some(v) = s.keep_runs {
            self.supervisor.keep_runs.set(v, layer, None);
        }
        if let Some(v) = &s.max_log_bytes {
            let at = origin(file, v.span());
            match u64::try_from(*v.get_ref()) {
                Ok(n) if n >= MIN_MAX_LOG_BYTES => self.supervisor.max_log_bytes.set(n, layer, at),
                _ => problems.push(problem(
                    format!(
                        "`[supervisor] max_log_bytes` must be a whole number of bytes, at least {MIN_MAX_LOG_BYTES} (found {}; the default is {DEFAULT_MAX_LOG_BYTES}, 256 MiB)",
                        v.get_ref()
                    ),
                    at,
                )),
            }
        }
        for (k, v) in &cfg.env {
            self.env.insert(
                k.clone(),
                Sourced {
                    value: v.get_ref().clone(),
                    source: layer,
                    origin: origin(file, v.span()),
                },
            );
        }
        for (k, v) in &cfg.secrets {
            let at = origin(file, v.span());
            let secret = match v.get_ref() {
                SecretSpec::Literal(value) => Secret {
                    from_env: None,
                    value: value.clone(),
                },
                SecretSpec::FromEnv(f) => match env(&f.from_env) {
                    Some(value) => Secret {
                        from_env: Some(f.from_env.clone()),
                        value,
                    },
                    None => {
                        problems.push(problem(
                            format!(
                                "secret `{k}` is read from environment variable `{}`, which is not set",
                                f.from_env
                            ),
                            at,
                        ));
                        continue;
                    }
                },
            };
            self.secrets.insert(
                k.clone(),
                Sourced {
                    value: secret,
                    source: layer,
                    origin: at,
                },
            );
        }
        for (k, v) in &cfg.ports {
            self.ports.insert(
                k.clone(),
                Sourced {
                    value: *v.get_ref(),
                    source: layer,
                    origin: origin(file, v.span()),
                },
            );
        }
        for (name, section) in &cfg.commands {
            // A command redefined by a higher config layer replaces the lower one whole.
            match new_command(name, section, file, layer) {
                Ok(c) => {
                    self.commands.insert(name.clone(), c);
                }
                Err(mut ps) => problems.append(&mut ps),
            }
        }
        if let Some(cp) = &cfg.checkpoint {
            let CheckpointSection {
                save,
                restore,
                timeout_secs,
            } = cp.get_ref();
            self.checkpoint = Some(Sourced {
                value: CheckpointConfig {
                    save: save.clone(),
                    restore: restore.clone(),
                    timeout_secs: timeout_secs.unwrap_or(DEFAULT_CHECKPOINT_TIMEOUT_SECS),
                },
                source: layer,
                origin: origin(file, cp.span()),
            });
        }
        problems
    }

    fn apply_provider(
        &mut self,
        p: &ProviderSection,
        file: &Path,
        layer: Layer,
    ) -> Vec<LayerProblem> {
        let mut problems = Vec::new();
        let pr = &mut self.provider;
        if let Some(v) = &p.name {
            let at = origin(file, v.span());
            if !PROVIDERS.contains(&v.get_ref().as_str()) {
                problems.push(problem(
                    format!(
                        "unknown provider `{}` (expected one of {})",
                        v.get_ref(),
                        PROVIDERS.join(", ")
                    ),
                    at.clone(),
                ));
            }
            pr.name.set(v.get_ref().clone(), layer, at);
        }
        if let Some(v) = &p.extra_system_prompt {
            pr.extra_system_prompt.set(Some(v.clone()), layer, None);
        }
        if let Some(v) = &p.agent_args {
            pr.agent_args.set(v.clone(), layer, None);
        }
        if let Some(v) = &p.cmd {
            pr.cmd
                .set(Some(v.get_ref().clone()), layer, origin(file, v.span()));
        }
        if let Some(v) = p.step_timeout_secs {
            if v == 0 {
                problems.push(problem("`step_timeout_secs` must be at least 1", None));
            }
            pr.step_timeout_secs.set(v, layer, None);
        }
        if let Some(v) = &p.cwd {
            pr.cwd
                .set(Some(v.get_ref().clone()), layer, origin(file, v.span()));
        }
        if let Some(v) = p.no_output_timeout_secs {
            if v == 0 {
                problems.push(problem("`no_output_timeout_secs` must be at least 1", None));
            }
            pr.no_output_timeout_secs.set(v, layer, None);
        }
        if let Some(v) = p.max_turns_per_step {
            if v == 0 {
                problems.push(problem("`max_turns_per_step` must be at least 1", None));
            }
            pr.max_turns_per_step.set(Some(v), layer, None);
        }
        if let Some(v) = p.max_cost_usd {
            if !(v.is_finite() && v > 0.0) {
                problems.push(problem(
                    "`max_cost_usd` must be a positive number of dollars",
                    None,
                ));
            }
            pr.max_cost_usd.set(Some(v), layer, None);
        }
        if let Some(v) = p.price_per_mtok {
            let prices = [Some(v.input), v.cached_input, Some(v.output)];
            if prices
                .into_iter()
                .flatten()
                .any(|x| !(x.is_finite() && x >= 0.0))
            {
                problems.push(problem(
                    "`price_per_mtok` prices must be dollars per million tokens, 0 or more",
                    None,
                ));
            }
            pr.price_per_mtok.set(Some(v), layer, None);
        }
        if let Some(v) = &p.base_url {
            pr.base_url
                .set(Some(v.get_ref().clone()), layer, origin(file, v.span()));
        }
        if let Some(v) = p.strict_warnings {
            pr.strict_warnings.set(v, layer, None);
        }
        if let Some(v) = p.console {
            pr.console.set(v, layer, None);
        }
        problems
            .into_iter()
            .map(|mut p| {
                if p.origin.is_none() {
                    p.message = format!("{} (in {})", p.message, file.display());
                }
                p
            })
            .collect()
    }

    /// The `BUGATTI_PROVIDER`, `BUGATTI_BASE_URL`, `BUGATTI_STEP_TIMEOUT` layer.
    pub fn apply_env(&mut self, env: &dyn Fn(&str) -> Option<String>) -> Vec<LayerProblem> {
        let mut problems = Vec::new();
        if let Some(v) = env("BUGATTI_PROVIDER").filter(|v| !v.is_empty()) {
            if !PROVIDERS.contains(&v.as_str()) {
                problems.push(problem(
                    format!(
                        "BUGATTI_PROVIDER=`{v}` is not a provider (expected one of {})",
                        PROVIDERS.join(", ")
                    ),
                    None,
                ));
            }
            self.provider.name.set(v, Layer::Env, None);
        }
        if let Some(v) = env("BUGATTI_CLAUDE_BIN").filter(|v| !v.is_empty()) {
            self.provider.claude_bin.set(v, Layer::Env, None);
        }
        if let Some(v) = env("BUGATTI_CODEX_BIN").filter(|v| !v.is_empty()) {
            self.provider.codex_bin.set(v, Layer::Env, None);
        }
        if let Some(v) = env("BUGATTI_BASE_URL").filter(|v| !v.is_empty()) {
            self.provider.base_url.set(Some(v), Layer::Env, None);
        }
        if let Some(v) = env("BUGATTI_STEP_TIMEOUT").filter(|v| !v.is_empty()) {
            match v.trim().parse::<u64>() {
                Ok(n) if n > 0 => self.provider.step_timeout_secs.set(n, Layer::Env, None),
                _ => problems.push(problem(
                    format!("BUGATTI_STEP_TIMEOUT=`{v}` is not a whole number of seconds ≥ 1"),
                    None,
                )),
            }
        }
        problems
    }

    /// A test file's `[overrides]`: provider fields and command fields (any but `kind`).
    pub fn apply_test_overrides(
        &mut self,
        provider: &ProviderSection,
        commands: &BTreeMap<String, Spanned<CommandSection>>,
        file: &Path,
    ) -> Vec<LayerProblem> {
        let mut problems = self.apply_provider(provider, file, Layer::Test);
        for (name, section) in commands {
            let at = origin(file, section.span());
            match self.commands.get_mut(name) {
                None => problems.push(problem(
                    format!(
                        "`[overrides.commands.{name}]` overrides a command that is not defined in the config{}",
                        known_list(self.commands.keys())
                    ),
                    at,
                )),
                Some(cmd) if cmd.scope == CommandScope::Suite || section.get_ref().scope.is_some() => {
                    problems.push(problem(
                        format!(
                            "`[overrides.commands.{name}]`: a test cannot override a suite-scoped command or change `scope` (suite commands are shared by every test)"
                        ),
                        at,
                    ))
                }
                Some(cmd) => {
                    let mut ps = apply_command_fields(cmd, section.get_ref(), Layer::Test, &at);
                    if ps.is_empty() {
                        cmd.origin = at;
                    }
                    problems.append(&mut ps);
                }
            }
        }
        problems
    }

    /// The command line, the top layer.
    pub fn apply_flags(&mut self, o: &RunOptions) -> Vec<LayerProblem> {
        let mut problems = Vec::new();
        if let Some(v) = &o.provider {
            if !PROVIDERS.contains(&v.as_str()) {
                problems.push(problem(
                    format!(
                        "--provider `{v}` is not a provider (expected one of {})",
                        PROVIDERS.join(", ")
                    ),
                    None,
                ));
            }
            self.provider.name.set(v.clone(), Layer::Flag, None);
        }
        if let Some(v) = o.step_timeout {
            if v == 0 {
                problems.push(problem("--step-timeout must be at least 1 second", None));
            }
            self.provider.step_timeout_secs.set(v, Layer::Flag, None);
        }
        if o.strict_warnings {
            self.provider.strict_warnings.set(true, Layer::Flag, None);
        }
        if let Some(v) = o.jobs {
            if v == 0 {
                problems.push(problem("--jobs must be at least 1", None));
            }
            self.supervisor.jobs.set(v, Layer::Flag, None);
        }
        if let Some(v) = o.retries {
            self.supervisor.retries.set(v, Layer::Flag, None);
        }
        if o.fail_fast {
            self.supervisor.fail_fast.set(true, Layer::Flag, None);
        }
        if let Some(v) = o.timeout {
            if v == 0 {
                problems.push(problem("--timeout must be at least 1 second", None));
            }
            self.supervisor.timeout_secs.set(Some(v), Layer::Flag, None);
        }
        problems
    }

    /// Whole-config checks once every layer is applied: provider needs, command graph.
    pub fn validate(&self) -> Vec<LayerProblem> {
        let mut problems = Vec::new();
        let name = self.provider.name.value.as_str();
        if PROVIDERS.contains(&name) && !AVAILABLE_PROVIDERS.contains(&name) {
            problems.push(problem(
                format!(
                    "provider `{name}` is not yet available in this version (available: {})",
                    AVAILABLE_PROVIDERS.join(", ")
                ),
                self.provider.name.origin.clone(),
            ));
        }
        if self.provider.name.value == "command" && self.provider.cmd.value.is_none() {
            problems.push(problem(
                "provider `command` needs `[provider] cmd`, the program to run",
                self.provider.name.origin.clone(),
            ));
        }
        if self.provider.step_timeout_secs.value == 0 {
            problems.push(problem("`step_timeout_secs` must be at least 1", None));
        }
        problems.extend(validate_commands(&self.commands));
        problems.extend(self.validate_names());
        problems
    }

    /// `[ports]`, `[env]` and `[secrets]` share one namespace (they all become env vars and
    /// `${NAME}`s), which the harness's own `BUGATTI_*` names are not part of.
    fn validate_names(&self) -> Vec<LayerProblem> {
        let mut problems = Vec::new();
        let tables: [(&str, NamedOrigins); 3] = [
            (
                "ports",
                self.ports
                    .iter()
                    .map(|(k, v)| (k, v.origin.clone()))
                    .collect(),
            ),
            (
                "env",
                self.env
                    .iter()
                    .map(|(k, v)| (k, v.origin.clone()))
                    .collect(),
            ),
            (
                "secrets",
                self.secrets
                    .iter()
                    .map(|(k, v)| (k, v.origin.clone()))
                    .collect(),
            ),
        ];
        let mut seen: BTreeMap<&String, &str> = BTreeMap::new();
        for (table, names) in &tables {
            for (name, at) in names {
                if BUILTIN_NAMES.contains(&name.as_str())
                    || CHECKPOINT_NAMES.contains(&name.as_str())
                {
                    problems.push(problem(
                        format!("[{table}] may not define `{name}`: the harness sets it"),
                        at.clone(),
                    ));
                }
                if !valid_env_name(name) {
                    problems.push(problem(
                        format!("[{table}] name `{name}` is not usable as an environment variable and `${{{name}}}` (letters, digits and `_`, not starting with a digit)"),
                        at.clone(),
                    ));
                }
                if let Some(other) = seen.insert(name, table) {
                    problems.push(problem(
                        format!("`{name}` is defined in both [{other}] and [{table}]"),
                        at.clone(),
                    ));
                }
            }
        }
        problems
    }

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

    /// Every effective value as (key, value, source) rows, for `check` and the reports.
    /// Secret values are never shown.
    pub fn rows(&self) -> Vec<(String, String, Layer)> {
        let mut rows = Vec::new();
        let mut row = |k: &str, v: String, l: Layer| rows.push((k.to_string(), v, l));
        let p = &self.provider;
        row("provider.name", p.name.value.clone(), p.name.source);
        row(
            "provider.extra_system_prompt",
            opt(&p.extra_system_prompt.value),
            p.extra_system_prompt.source,
        );
        row(
            "provider.agent_args",
            format!("{:?}", p.agent_args.value),
            p.agent_args.source,
        );
        row("provider.cmd", opt(&p.cmd.value), p.cmd.source);
        row(
            "provider.cwd",
            p.cwd.value.clone().unwrap_or_else(|| ".".to_string()),
            p.cwd.source,
        );
        row(
            "provider.claude_bin",
            p.claude_bin.value.clone(),
            p.claude_bin.source,
        );
        row(
            "provider.codex_bin",
            p.codex_bin.value.clone(),
            p.codex_bin.source,
        );
        row(
            "provider.step_timeout_secs",
            p.step_timeout_secs.value.to_string(),
            p.step_timeout_secs.source,
        );
        row(
            "provider.no_output_timeout_secs",
            p.no_output_timeout_secs.value.to_string(),
            p.no_output_timeout_secs.source,
        );
        row(
            "provider.max_turns_per_step",
            p.max_turns_per_step
                .value
                .map_or("none".to_string(), |n| n.to_string()),
            p.max_turns_per_step.source,
        );
        row(
            "provider.max_cost_usd",
            p.max_cost_usd
                .value
                .map_or("none".to_string(), |c| c.to_string()),
            p.max_cost_usd.source,
        );
        row(
            "provider.price_per_mtok",
            p.price_per_mtok.value.map_or_else(
                || "none (codex: the built-in price of its model)".to_string(),
                |v| v.to_string(),
            ),
            p.price_per_mtok.source,
        );
        row(
            "provider.base_url",
            opt(&p.base_url.value),
            p.base_url.source,
        );
        row(
            "provider.strict_warnings",
            p.strict_warnings.value.to_string(),
            p.strict_warnings.source,
        );
        row(
            "provider.console",
            p.console.value.to_string(),
            p.console.source,
        );
        let s = &self.supervisor;
        row(
            "supervisor.max_parallel",
            s.jobs.value.to_string(),
            s.jobs.source,
        );
        row(
            "supervisor.tests",
            format!("{:?}", s.tests.value),
            s.tests.source,
        );
        row(
            "supervisor.artifact_dir",
            s.artifact_dir.value.clone(),
            s.artifact_dir.source,
        );
        row(
            "supervisor.retries",
            s.retries.value.to_string(),
            s.retries.source,
        );
        row(
            "supervisor.keep_workspace",
            s.keep_workspace.value.as_str().to_string(),
            s.keep_workspace.source,
        );
        row(
            "supervisor.keep_runs",
            s.keep_runs.value.to_string(),
            s.keep_runs.source,
        );
        row(
            "supervisor.max_cost_usd",
            s.max_cost_usd
                .value
                .map_or("none".to_string(), |c| c.to_string()),
            s.max_cost_usd.source,
        );
        row(
            "supervisor.max_log_bytes",
            s.max_log_bytes.value.to_string(),
            s.max_log_bytes.source,
        );
        row(
            "supervisor.fail_fast",
            s.fail_fast.value.to_string(),
            s.fail_fast.source,
        );
        row(
            "supervisor.timeout_secs",
            s.timeout_secs
                .value
                .map(|t| t.to_string())
                .unwrap_or_else(|| "(none)".into()),
            s.timeout_secs.source,
        );
        for (k, v) in &self.env {
            row(&format!("env.{k}"), v.value.clone(), v.source);
        }
        for (k, v) in &self.secrets {
            let shown = match &v.value.from_env {
                Some(var) => format!("[REDACTED] (from ${var})"),
                None => "[REDACTED]".to_string(),
            };
            row(&format!("secrets.{k}"), shown, v.source);
        }
        for (k, v) in &self.ports {
            let shown = match v.value {
                PortSpec::Auto => "auto".to_string(),
                PortSpec::Fixed(n) => n.to_string(),
            };
            row(&format!("ports.{k}"), shown, v.source);
        }
        for c in self.commands.values() {
            let key = |f: &str| format!("commands.{}.{f}", c.name);
            let src = |f: &str| c.source_of(f);
            row(&key("kind"), c.kind.as_str().into(), src("kind"));
            row(&key("cmd"), c.cmd.clone(), src("cmd"));
            if let Some(cwd) = &c.cwd {
                row(&key("cwd"), cwd.clone(), src("cwd"));
            }
            if !c.depends_on.is_empty() {
                row(
                    &key("depends_on"),
                    format!("{:?}", c.depends_on),
                    src("depends_on"),
                );
            }
            if let Some(t) = c.timeout_secs {
                row(&key("timeout_secs"), t.to_string(), src("timeout_secs"));
            }
            for (i, probe) in c.readiness.iter().enumerate() {
                let what = match &probe.kind {
                    ProbeKind::Http(u) => format!("http {u}"),
                    ProbeKind::Tcp(a) => format!("tcp {a}"),
                    ProbeKind::Log(r) => format!("log /{r}/"),
                    ProbeKind::Exec(e) => format!("exec {e}"),
                };
                row(
                    &key(&format!("readiness[{}]", i + 1)),
                    format!(
                        "{what} (every {} ms, up to {} s)",
                        probe.interval_ms, probe.timeout_secs
                    ),
                    src("readiness"),
                );
            }
            if c.kind == CommandKind::LongLived {
                row(&key("restart"), c.restart.as_str().into(), src("restart"));
                row(
                    &key("max_restarts"),
                    c.max_restarts.to_string(),
                    src("max_restarts"),
                );
                row(
                    &key("restart_window_secs"),
                    c.restart_window_secs.to_string(),
                    src("restart_window_secs"),
                );
                row(
                    &key("backoff_ms"),
                    c.backoff_ms.to_string(),
                    src("backoff_ms"),
                );
            }
            row(
                &key("stop_signal"),
                c.stop_signal.clone(),
                src("stop_signal"),
            );
            row(
                &key("stop_timeout_secs"),
                c.stop_timeout_secs.to_string(),
                src("stop_timeout_secs"),
            );
            row(&key("pty"), c.pty.to_string(), src("pty"));
            row(&key("scope"), c.scope.as_str().into(), src("scope"));
        }
        if let Some(cp) = &self.checkpoint {
            row("checkpoint.save", cp.value.save.clone(), cp.source);
            row("checkpoint.restore", cp.value.restore.clone(), cp.source);
            row(
                "checkpoint.timeout_secs",
                cp.value.timeout_secs.to_string(),
                cp.source,
            );
        }
        rows
    }
}

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "(none)".to_string())
}

pub(super) fn known_list<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let names: Vec<&str> = names.map(String::as_str).collect();
    if names.is_empty() {
        " (no commands are defined)".to_string()
    } else {
        format!(" (defined: {})", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::parse_config;

    fn cfg(text: &str) -> ConfigFile {
        parse_config(Path::new("c.toml"), text).expect("parses")
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn apply(text: &str) -> (EffectiveConfig, Vec<String>) {
        let mut e = EffectiveConfig::default();
        let mut ps = e.apply_file(&cfg(text), Path::new("c.toml"), Layer::Project, &no_env);
        ps.extend(e.validate());
        (e, ps.into_iter().map(|p| p.message).collect())
    }

    #[test]
    fn defaults_when_nothing_is_set() {
        let e = EffectiveConfig::default();
        assert_eq!(e.provider.name.value, "claude-code");
        assert_eq!(e.provider.step_timeout_secs.value, 300);
        assert_eq!(e.supervisor.jobs.value, 4);
        assert_eq!(e.supervisor.artifact_dir.value, ".bugatti");
        assert!(e.rows().iter().all(|r| r.2 == Layer::Default));
    }

    #[test]
    fn each_layer_wins_over_the_one_below_field_by_field() {
        let mut e = EffectiveConfig::default();
        let global = cfg(
            "[provider]\nname = \"codex\"\nstep_timeout_secs = 10\nextra_system_prompt = \"g\"\n",
        );
        let project = cfg("[provider]\nstep_timeout_secs = 20\nbase_url = \"http://p\"\n[commands.s]\nkind = \"long_lived\"\ncmd = \"a\"\n");
        assert!(e
            .apply_file(&global, Path::new("g.toml"), Layer::Global, &no_env)
            .is_empty());
        assert!(e
            .apply_file(&project, Path::new("p.toml"), Layer::Project, &no_env)
            .is_empty());
        let env = |k: &str| match k {
            "BUGATTI_BASE_URL" => Some("http://env".to_string()),
            "BUGATTI_PROVIDER" => Some("shell".to_string()),
            _ => None,
        };
        assert!(e.apply_env(&env).is_empty());
        let over = crate::model::test_file::parse_test_file(
            Path::new("t.test.toml"),
            "[overrides.provider]\nextra_system_prompt = \"t\"\n[overrides.commands.s]\ncmd = \"b\"\n",
        )
        .expect("parses");
        assert!(e
            .apply_test_overrides(
                &over.overrides.provider,
                &over.overrides.commands,
                Path::new("t.test.toml")
            )
            .is_empty());
        let flags = RunOptions {
            step_timeout: Some(30),
            jobs: Some(2),
            ..Default::default()
        };
        assert!(e.apply_flags(&flags).is_empty());
        let p = &e.provider;
        assert_eq!(
            (p.name.value.as_str(), p.name.source),
            ("shell", Layer::Env)
        );
        assert_eq!(
            (p.step_timeout_secs.value, p.step_timeout_secs.source),
            (30, Layer::Flag)
        );
        assert_eq!(p.base_url.value.as_deref(), Some("http://env"));
        assert_eq!(p.extra_system_prompt.source, Layer::Test);
        assert_eq!(p.agent_args.source, Layer::Default);
        assert_eq!(e.supervisor.jobs.source, Layer::Flag);
        let s = &e.commands["s"];
        assert_eq!((s.cmd.as_str(), s.source_of("cmd")), ("b", Layer::Test));
        assert_eq!(s.source_of("kind"), Layer::Project);
        assert_eq!(s.source_of("stop_signal"), Layer::Default);
        let rows = e.rows();
        assert!(
            rows.contains(&("commands.s.cmd".into(), "b".into(), Layer::Test)),
            "{rows:?}"
        );
        assert!(rows.contains(&("provider.name".into(), "shell".into(), Layer::Env)));
    }

    #[test]
    fn the_console_is_on_by_default_and_a_test_can_turn_it_off() {
        let mut e = EffectiveConfig::default();
        assert!(e.provider.console.value);
        let project = cfg("[provider]\nconsole = false\n");
        assert!(e
            .apply_file(&project, Path::new("p.toml"), Layer::Project, &no_env)
            .is_empty());
        assert_eq!(
            (e.provider.console.value, e.provider.console.source),
            (false, Layer::Project)
        );
        let over = crate::model::test_file::parse_test_file(
            Path::new("t.test.toml"),
            "[overrides.provider]\nconsole = true\n",
        )
        .expect("parses");
        assert!(e
            .apply_test_overrides(
                &over.overrides.provider,
                &over.overrides.commands,
                Path::new("t.test.toml")
            )
            .is_empty());
        assert_eq!(
            (e.provider.console.value, e.provider.console.source),
            (true, Layer::Test)
        );
        assert!(e
            .rows()
            .contains(&("provider.console".into(), "true".into(), Layer::Test)));
    }

    #[test]
    fn bad_env_and_flag_values_are_problems() {
        let mut e = EffectiveConfig::default();
        let env = |k: &str| match k {
            "BUGATTI_STEP_TIMEOUT" => Some("soon".to_string()),
            "BUGATTI_PROVIDER" => Some("gpt".to_string()),
            _ => None,
        };
        let ps: Vec<String> = e.apply_env(&env).into_iter().map(|p| p.message).collect();
        assert!(
            ps.iter()
                .any(|m| m.contains("BUGATTI_STEP_TIMEOUT=`soon` is not a whole number")),
            "{ps:?}"
        );
        assert!(
            ps.iter()
                .any(|m| m.contains("BUGATTI_PROVIDER=`gpt` is not a provider")),
            "{ps:?}"
        );
        let flags = RunOptions {
            provider: Some("nope".into()),
            jobs: Some(0),
            step_timeout: Some(0),
            timeout: Some(0),
            ..Default::default()
        };
        let ps: Vec<String> = e
            .apply_flags(&flags)
            .into_iter()
            .map(|p| p.message)
            .collect();
        assert_eq!(ps.len(), 4, "{ps:?}");
        assert!(ps[0].starts_with("--provider `nope` is not a provider"));
    }

    #[test]
    fn unknown_provider_and_command_provider_without_cmd() {
        let (_, ps) = apply("[provider]\nname = \"gpt\"\n");
        assert!(ps[0].starts_with("unknown provider `gpt`"), "{ps:?}");
        let (_, ps) = apply("[provider]\nname = \"codex\"\n");
        assert_eq!(ps, Vec::<String>::new(), "codex is available");
        let (_, ps) = apply("[provider]\nname = \"command\"\n");
        assert_eq!(
            ps,
            vec!["provider `command` needs `[provider] cmd`, the program to run"]
        );
        let (_, ps) = apply("[supervisor]\nmax_parallel = 0\n");
        assert_eq!(ps, vec!["`max_parallel` must be at least 1"]);
    }

    #[test]
    fn max_log_bytes_is_a_whole_number_of_at_least_4096() {
        let (e, ps) = apply("");
        assert_eq!(e.supervisor.max_log_bytes.value, 256 * 1024 * 1024);
        assert!(ps.is_empty());
        let (e, ps) = apply("[supervisor]\nmax_log_bytes = 65536\n");
        assert_eq!((e.supervisor.max_log_bytes.value, ps.len()), (65536, 0));
        for bad in ["100", "-1", "0"] {
            let (_, ps) = apply(&format!("[supervisor]\nmax_log_bytes = {bad}\n"));
            assert_eq!(ps.len(), 1, "{bad}: {ps:?}");
            assert!(
                ps[0].starts_with(&format!(
                    "`[supervisor] max_log_bytes` must be a whole number of bytes, at least 4096 (found {bad};"
                )),
                "{ps:?}"
            );
        }
    }

    #[test]
    fn secrets_resolve_from_env_and_missing_ones_are_named() {
        let mut e = EffectiveConfig::default();
        let c = cfg(
            "[secrets]\nA = { from_env = \"HAVE\" }\nB = { from_env = \"MISSING\" }\nC = \"lit\"\n",
        );
        let env = |k: &str| (k == "HAVE").then(|| "s3cret".to_string());
        let ps = e.apply_file(&c, Path::new("c.toml"), Layer::Project, &env);
        assert_eq!(ps.len(), 1);
        assert_eq!(
            ps[0].message,
            "secret `B` is read from environment variable `MISSING`, which is not set"
        );
        assert!(ps[0].origin.is_some());
        assert_eq!(e.secrets["A"].value.value, "s3cret");
        assert_eq!(e.secrets["C"].value.value, "lit");
        let shown = format!("{:?} {:?}", e.secrets, e.rows());
        assert!(
            !shown.contains("s3cret") && !shown.contains("lit\""),
            "{shown}"
        );
    }

    #[test]
    fn ports_env_and_secrets_share_one_namespace_without_builtins() {
        let (_, ps) = apply("[ports]\nX = \"auto\"\n[env]\nX = \"1\"\nBUGATTI_WORKDIR = \"/tmp\"\n[secrets]\n\"my-key\" = \"v\"\n");
        assert_eq!(
            ps,
            vec![
                "[env] may not define `BUGATTI_WORKDIR`: the harness sets it",
                "`X` is defined in both [ports] and [env]",
                "[secrets] name `my-key` is not usable as an environment variable and `${my-key}` (letters, digits and `_`, not starting with a digit)",
            ]
        );
    }

    #[test]
    fn session_vars_combine_builtins_ports_secrets_and_env() {
        let mut e = EffectiveConfig::default();
        let c = cfg("[ports]\nP = \"auto\"\n[secrets]\nT = \"tok\"\n[env]\nURL = \"http://127.0.0.1:${P}/?t=${T}&w=${BUGATTI_WORKDIR}\"\n");
        assert!(e
            .apply_file(&c, Path::new("c.toml"), Layer::Project, &no_env)
            .is_empty());
        let builtins = [("BUGATTI_WORKDIR".to_string(), "/w".to_string())].into();
        let ports = [("P".to_string(), 4321u16)].into();
        let vars = e.session_vars(&builtins, &ports).unwrap();
        assert_eq!(vars["URL"], "http://127.0.0.1:4321/?t=tok&w=/w");
        assert_eq!(vars["P"], "4321");
        assert_eq!(e.secret_pairs(), vec![("T".to_string(), "tok".to_string())]);
    }

    #[test]
    fn suite_scoped_commands_cannot_be_overridden_per_test() {
        for (config, over) in [
            ("scope = \"suite\"\n", "cmd = \"y\"\n"),
            ("", "scope = \"suite\"\n"),
        ] {
            let mut e = EffectiveConfig::default();
            let c = cfg(&format!(
                "[commands.s]\nkind = \"long_lived\"\ncmd = \"x\"\n{config}"
            ));
            assert!(e
                .apply_file(&c, Path::new("c.toml"), Layer::Project, &no_env)
                .is_empty());
            let t = crate::model::test_file::parse_test_file(
                Path::new("t.test.toml"),
                &format!("[overrides.commands.s]\n{over}"),
            )
            .expect("parses");
            let ps = e.apply_test_overrides(
                &t.overrides.provider,
                &t.overrides.commands,
                Path::new("t.test.toml"),
            );
            assert_eq!(ps.len(), 1);
            assert!(
                ps[0]
                    .message
                    .contains("cannot override a suite-scoped command"),
                "{}",
                ps[0].message
            );
        }
    }

    #[test]
    fn overriding_an_undefined_command_is_refused() {
        let mut e = EffectiveConfig::default();
        let t = crate::model::test_file::parse_test_file(
            Path::new("t.test.toml"),
            "[overrides.commands.ghost]\ncmd = \"x\"\n",
        )
        .expect("parses");
        let ps = e.apply_test_overrides(
            &t.overrides.provider,
            &t.overrides.commands,
            Path::new("t.test.toml"),
        );
        assert_eq!(
            ps[0].message,
            "`[overrides.commands.ghost]` overrides a command that is not defined in the config (no commands are defined)"
        );
    }
}
