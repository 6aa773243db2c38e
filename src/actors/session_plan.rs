//! Turns a root test's effective config into what its session launches: the session variables
//! (`BUGATTI_*`, ports, `[env]`, `[secrets]`), the harness command specs, the agent spec, and the
//! run plan the reporter starts from. Pure apart from port allocation.

use crate::model::commands::DEFAULT_SHORT_LIVED_TIMEOUT_SECS;
use crate::model::config::{CommandKind, CommandScope, PortSpec};
use crate::model::ids::{RunId, SessionId, StepId};
use crate::model::layers::{CommandConfig, EffectiveConfig};
use crate::model::load::RootTest;
use crate::model::redact::Secrets;
use crate::model::substitute::{substitute, SubstError};
use crate::process::ports::allocate_loopback_port;
use crate::process::spec::{CommandSpec, ProbeSpec};
use crate::providers::AgentSpec;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{what}: {source}")]
    Substitution {
        what: String,
        #[source]
        source: SubstError,
    },
    #[error("no free loopback port for `{name}`: {reason}")]
    Port { name: String, reason: String },
    #[error("[provider] cwd: {} is not a directory", .0.display())]
    AgentCwd(PathBuf),
}

/// The identity and places of one session.
#[derive(Debug, Clone)]
pub struct SessionIdentity {
    pub run_id: RunId,
    pub session_id: SessionId,
    pub run_dir: PathBuf,
    pub workdir: PathBuf,
    pub project_root: PathBuf,
}

/// The session's variables, in the order they are resolved, and its secrets.
#[derive(Debug, Clone)]
pub struct SessionVars {
    pub vars: BTreeMap<String, String>,
    /// What harness commands and the agent get in their environment (no `BUGATTI_STEP_ID`).
    pub env: Vec<(String, String)>,
    pub secrets: Arc<Secrets>,
    /// The session's `[ports]`, resolved (auto ones allocated): recorded in run.json.
    pub ports: BTreeMap<String, u16>,
}

/// Allocates the session's ports (`auto` ones fresh; `shared` ones, from suite-scoped commands,
/// as given) and resolves the session's variables (see `EffectiveConfig::session_vars`).
pub fn session_vars(
    config: &EffectiveConfig,
    id: &SessionIdentity,
    shared_ports: &BTreeMap<String, u16>,
) -> Result<SessionVars, PlanError> {
    let builtins: BTreeMap<String, String> = [
        ("BUGATTI_RUN_ID", id.run_id.to_string()),
        ("BUGATTI_SESSION_ID", id.session_id.to_string()),
        ("BUGATTI_RUN_DIR", id.run_dir.display().to_string()),
        ("BUGATTI_WORKDIR", id.workdir.display().to_string()),
        (
            "BUGATTI_PROJECT_ROOT",
            id.project_root.display().to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let mut ports = BTreeMap::new();
    for (name, spec) in &config.ports {
        let port = match (shared_ports.get(name), &spec.value) {
            (Some(port), _) => *port,
            (None, PortSpec::Fixed(port)) => *port,
            (None, PortSpec::Auto) => allocate_loopback_port().map_err(|e| PlanError::Port {
                name: name.clone(),
                reason: e.to_string(),
            })?,
        };
        ports.insert(name.clone(), port);
    }
    let vars =
        config
            .session_vars(&builtins, &ports)
            .map_err(|source| PlanError::Substitution {
                what: "[env]".into(),
                source,
            })?;
    let secrets = Arc::new(Secrets::new(config.secret_pairs()));
    let env = vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    Ok(SessionVars {
        vars,
        env,
        secrets,
        ports,
    })
}

fn subst(text: &str, vars: &BTreeMap<String, String>, what: String) -> Result<String, PlanError> {
    substitute(text, vars).map_err(|source| PlanError::Substitution { what, source })
}

/// The harness command specs of `scope`, substituted, in name order.
pub fn command_specs(
    config: &EffectiveConfig,
    scope: CommandScope,
    vars: &SessionVars,
    project_root: &Path,
    logs_dir: &Path,
    skipped: &[String],
) -> Result<Vec<CommandSpec>, PlanError> {
    config
        .commands
        .values()
        .filter(|c| c.scope == scope)
        .map(|c| {
            let mut spec = command_spec(c, vars, project_root, logs_dir, skipped)?;
            spec.max_log_bytes = config.supervisor.max_log_bytes.value;
            Ok(spec)
        })
        .collect()
}

fn command_spec(
    c: &CommandConfig,
    vars: &SessionVars,
    project_root: &Path,
    logs_dir: &Path,
    skipped: &[String],
) -> Result<CommandSpec, PlanError> {
    let field = |f: &str| format!("[commands.{}] {f}", c.name);
    let cmd = subst(&c.cmd, &vars.vars, field("cmd"))?;
    let cwd = match &c.cwd {
        Some(cwd) => {
            let cwd = PathBuf::from(subst(cwd, &vars.vars, field("cwd"))?);
            if cwd.is_absolute() {
                cwd
            } else {
                project_root.join(cwd)
            }
        }
        None => project_root.to_path_buf(),
    };
    let mut spec = CommandSpec::new(
        c.name.clone(),
        c.kind,
        cmd,
        cwd,
        crate::model::artifacts::command_log(logs_dir, &c.name),
    );
    spec.env = vars.env.clone();
    spec.pty = c.pty;
    spec.timeout = c.timeout_secs.map(Duration::from_secs);
    if spec.timeout.is_none() && c.kind == CommandKind::ShortLived {
        spec.timeout = Some(Duration::from_secs(DEFAULT_SHORT_LIVED_TIMEOUT_SECS));
        spec.default_timeout = true;
    }
    spec.restart = c.restart;
    spec.max_restarts = c.max_restarts;
    spec.restart_window = Duration::from_secs(c.restart_window_secs);
    spec.backoff = Duration::from_millis(c.backoff_ms);
    if let Some(signal) = c.signal() {
        spec.stop_signal = signal;
    }
    spec.stop_timeout = Duration::from_secs(c.stop_timeout_secs);
    spec.depends_on = c.depends_on.clone();
    spec.skipped = skipped.contains(&c.name);
    spec.secrets = Arc::clone(&vars.secrets);
    spec.probes = c
        .readiness
        .iter()
        .map(|p| {
            let what = field("readiness");
            let kind = p.kind.try_map(|text| subst(text, &vars.vars, what))?;
            Ok(ProbeSpec::new(kind)
                .with_interval(Duration::from_millis(p.interval_ms.max(1)))
                .with_timeout(Duration::from_secs(p.timeout_secs)))
        })
        .collect::<Result<_, PlanError>>()?;
    Ok(spec)
}

/// The agent's spec, `${NAME}` substituted in `cmd`, `cwd`, `agent_args` and `base_url`, its
/// working directory resolved: `[provider] cwd` against the project root, by default the project
/// root itself (as Bugatti 0.7 runs it, so `CLAUDE.md`, `.claude/` and `.mcp.json` are found) — but
/// the `shell` provider's steps run in the workspace unless `cwd` is set (docs/providers.md "Providers").
pub fn agent_spec(
    config: &EffectiveConfig,
    id: &SessionIdentity,
    vars: &SessionVars,
) -> Result<AgentSpec, PlanError> {
    let p = &config.provider;
    let kind = p.name.value;
    let mut spec = AgentSpec::new(kind);
    spec.cmd = match &p.cmd.value {
        Some(cmd) => Some(subst(cmd, &vars.vars, "[provider] cmd".into())?),
        None => None,
    };
    spec.agent_args = p
        .agent_args
        .value
        .iter()
        .enumerate()
        .map(|(i, arg)| subst(arg, &vars.vars, format!("[provider] agent_args[{i}]")))
        .collect::<Result<_, _>>()?;
    spec.cwd = match (&p.cwd.value, kind) {
        (Some(cwd), _) => {
            let cwd = PathBuf::from(subst(cwd, &vars.vars, "[provider] cwd".into())?);
            id.project_root.join(cwd)
        }
        (None, kind) if kind.info().runs_in_workspace => id.workdir.clone(),
        (None, _) => id.project_root.clone(),
    };
    if !spec.cwd.is_dir() {
        return Err(PlanError::AgentCwd(spec.cwd.clone()));
    }
    spec.extra_system_prompt = p.extra_system_prompt.value.clone();
    // The bootstrap turn is no step: it gets the provider's timeout, as a step without its own.
    spec.step_timeout = p.step_timeout(None).value;
    spec.base_url = match &p.base_url.value {
        Some(url) => Some(subst(url, &vars.vars, "[provider] base_url".into())?),
        None => None,
    };
    if let Some(program) = p.program() {
        spec.program = PathBuf::from(program);
    }
    spec.max_turns_per_step = p.max_turns_per_step.value;
    spec.price_per_mtok = p.price_per_mtok.value;
    spec.no_output_timeout = kind
        .info()
        .watchdog
        .then(|| Duration::from_secs(p.no_output_timeout_secs.value));
    Ok(spec)
}

/// The step's instruction as the agent gets it: `${NAME}` substituted (with `BUGATTI_STEP_ID`).
pub fn step_vars(vars: &SessionVars, step_id: StepId) -> BTreeMap<String, String> {
    let mut step = vars.vars.clone();
    step.insert("BUGATTI_STEP_ID".to_string(), step_id.to_string());
    step
}

/// The command names of the test (and suite) that are skipped, as listed in run.json.
pub fn skipped_commands(test: &RootTest, skipped: &[String]) -> Vec<String> {
    test.effective
        .commands
        .keys()
        .filter(|name| skipped.contains(name))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::parse_config;
    use crate::model::layers::Layer;

    fn specs(text: &str) -> Vec<CommandSpec> {
        let file = parse_config(Path::new("c.toml"), text).expect("parses");
        let mut config = EffectiveConfig::default();
        let problems = config.apply_file(&file, Path::new("c.toml"), Layer::Project, &|_| None);
        assert!(problems.is_empty(), "{problems:?}");
        let vars = SessionVars {
            vars: BTreeMap::new(),
            env: Vec::new(),
            secrets: Arc::new(Secrets::new(Vec::<(String, String)>::new())),
            ports: BTreeMap::new(),
        };
        command_specs(
            &config,
            CommandScope::Test,
            &vars,
            Path::new("/p"),
            Path::new("/p/logs"),
            &[],
        )
        .expect("specs")
    }

    #[test]
    fn a_short_lived_command_without_a_timeout_gets_the_default_one() {
        let specs = specs(
            "[commands.seed]\nkind = \"short_lived\"\ncmd = \"true\"\n\n\
             [commands.migrate]\nkind = \"short_lived\"\ncmd = \"true\"\ntimeout_secs = 7\n\n\
             [commands.server]\nkind = \"long_lived\"\ncmd = \"true\"\n",
        );
        let by_name = |n: &str| specs.iter().find(|s| s.name == n).expect("spec");
        let seed = by_name("seed");
        assert_eq!(
            seed.timeout,
            Some(Duration::from_secs(DEFAULT_SHORT_LIVED_TIMEOUT_SECS))
        );
        assert!(seed.default_timeout);
        let migrate = by_name("migrate");
        assert_eq!(migrate.timeout, Some(Duration::from_secs(7)));
        assert!(!migrate.default_timeout);
        let server = by_name("server");
        assert_eq!(
            server.timeout, None,
            "a long-lived command runs until teardown"
        );
    }
}
