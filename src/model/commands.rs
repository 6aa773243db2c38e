//! Harness commands as plain data: every layer's `[commands.NAME]` fields applied over the
//! defaults, readiness forms (Bugatti's `readiness_url(s)` or one explicit probe) normalized
//! into one list of probes, signal names checked, `depends_on` validated.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

use toml::Spanned;

use super::config::{CommandKind, CommandScope, CommandSection, RestartPolicy};
use super::sourced::{known_list, origin, problem, Layer, LayerProblem, Origin};

pub const DEFAULT_READINESS_INTERVAL_MS: u64 = 50;
pub const DEFAULT_READINESS_TIMEOUT_SECS: u64 = 60;
pub const DEFAULT_MAX_RESTARTS: u32 = 3;
pub const DEFAULT_RESTART_WINDOW_SECS: u64 = 60;
pub const DEFAULT_BACKOFF_MS: u64 = 200;
/// Restarts come at most this often: a command that dies at once cannot spin a core.
pub const MIN_BACKOFF_MS: u64 = 10;
pub const DEFAULT_STOP_SIGNAL: &str = "SIGTERM";
pub const DEFAULT_STOP_TIMEOUT_SECS: u64 = 5;
/// One readiness probe of a long-lived command (the one vocabulary: config and process layer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeKind {
    /// Ready when a GET answers 2xx or 3xx.
    Http(String),
    /// Ready when a TCP connect to `host:port` succeeds.
    Tcp(String),
    /// Ready when a line of the command's output matches this regex (validated; event-driven).
    Log(String),
    /// Ready when `sh -c <cmd>` exits 0.
    Exec(String),
}

impl ProbeKind {
    /// The same kind with its text transformed (`${NAME}` substitution).
    pub fn try_map<E>(&self, f: impl FnOnce(&str) -> Result<String, E>) -> Result<Self, E> {
        Ok(match self {
            Self::Http(t) => Self::Http(f(t)?),
            Self::Tcp(t) => Self::Tcp(f(t)?),
            Self::Log(t) => Self::Log(f(t)?),
            Self::Exec(t) => Self::Exec(f(t)?),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadinessProbe {
    pub kind: ProbeKind,
    pub interval_ms: u64,
    pub timeout_secs: u64,
}

/// How long a short-lived command may run when its config sets no `timeout_secs`: setup must end
/// (a command that prompts for input would otherwise hang it for ever).
pub const DEFAULT_SHORT_LIVED_TIMEOUT_SECS: u64 = 600;

/// A harness command with every layer applied and defaults filled in: plain data until spawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandConfig {
    pub name: String,
    pub kind: CommandKind,
    pub cmd: String,
    pub cwd: Option<String>,
    pub depends_on: Vec<String>,
    pub timeout_secs: Option<u64>,
    /// All must pass; empty = ready as soon as spawned.
    pub readiness: Vec<ReadinessProbe>,
    pub restart: RestartPolicy,
    pub max_restarts: u32,
    pub restart_window_secs: u64,
    pub backoff_ms: u64,
    /// Normalized `SIGxxx` name, known to be a valid signal.
    pub stop_signal: String,
    pub stop_timeout_secs: u64,
    pub pty: bool,
    pub scope: CommandScope,
    /// Layer of each field that was set explicitly (fields absent here are defaults).
    pub field_sources: BTreeMap<String, Layer>,
    /// The `[commands.NAME]` table that defined it (and, later, the override that changed it).
    pub origin: Option<Origin>,
}

impl CommandConfig {
    pub fn source_of(&self, field: &str) -> Layer {
        self.field_sources
            .get(field)
            .copied()
            .unwrap_or(Layer::Default)
    }

    /// The stop signal as a nix Signal (always valid: checked at load).
    pub fn signal(&self) -> Option<nix::sys::signal::Signal> {
        nix::sys::signal::Signal::from_str(&self.stop_signal).ok()
    }
}

/// A command defined by a config file: `kind` and `cmd` required, the rest defaulted.
pub(super) fn new_command(
    name: &str,
    section: &Spanned<CommandSection>,
    file: &Path,
    layer: Layer,
) -> Result<CommandConfig, Vec<LayerProblem>> {
    let at = origin(file, section.span());
    let s = section.get_ref();
    let mut problems = Vec::new();
    if s.kind.is_none() {
        problems.push(problem(
            format!("command `{name}` needs `kind` (\"short_lived\" or \"long_lived\")"),
            at.clone(),
        ));
    }
    if s.cmd.is_none() {
        problems.push(problem(
            format!("command `{name}` needs `cmd`, the shell command to run"),
            at.clone(),
        ));
    }
    let mut cmd = CommandConfig {
        name: name.to_string(),
        kind: s.kind.unwrap_or(CommandKind::ShortLived),
        cmd: String::new(),
        cwd: None,
        depends_on: Vec::new(),
        timeout_secs: None,
        readiness: Vec::new(),
        restart: RestartPolicy::Never,
        max_restarts: DEFAULT_MAX_RESTARTS,
        restart_window_secs: DEFAULT_RESTART_WINDOW_SECS,
        backoff_ms: DEFAULT_BACKOFF_MS,
        stop_signal: DEFAULT_STOP_SIGNAL.to_string(),
        stop_timeout_secs: DEFAULT_STOP_TIMEOUT_SECS,
        pty: false,
        scope: CommandScope::Test,
        field_sources: BTreeMap::new(),
        origin: at.clone(),
    };
    if s.kind.is_some() {
        cmd.field_sources.insert("kind".into(), layer);
    }
    problems.append(&mut apply_command_fields(&mut cmd, s, layer, &at));
    if problems.is_empty() {
        Ok(cmd)
    } else {
        Err(problems)
    }
}

/// Set every field `s` gives on `cmd`, then re-check the rules that depend on the result.
pub(super) fn apply_command_fields(
    cmd: &mut CommandConfig,
    s: &CommandSection,
    layer: Layer,
    at: &Option<Origin>,
) -> Vec<LayerProblem> {
    let name = cmd.name.clone();
    let mut problems = Vec::new();
    let mut mark = |f: &str| {
        cmd.field_sources.insert(f.to_string(), layer);
    };
    macro_rules! take {
        ($field:ident) => {
            if let Some(v) = &s.$field {
                mark(stringify!($field));
                cmd.$field = v.clone().into();
            }
        };
    }
    take!(cmd);
    if let Some(v) = &s.cwd {
        mark("cwd");
        cmd.cwd = Some(v.clone());
    }
    take!(depends_on);
    if let Some(v) = s.timeout_secs {
        mark("timeout_secs");
        cmd.timeout_secs = Some(v);
    }
    take!(restart);
    take!(max_restarts);
    take!(restart_window_secs);
    take!(backoff_ms);
    take!(stop_timeout_secs);
    take!(pty);
    take!(scope);
    if let Some(sig) = &s.stop_signal {
        mark("stop_signal");
        match normalize_signal(sig) {
            Some(n) => cmd.stop_signal = n,
            None => problems.push(problem(
                format!("command `{name}`: `stop_signal = \"{sig}\"` is not a signal name (e.g. \"SIGTERM\", \"SIGINT\")"),
                at.clone(),
            )),
        }
    }
    match readiness_from(s) {
        Ok(Some(probes)) => {
            mark("readiness");
            cmd.readiness = probes;
        }
        Ok(None) => {
            // A lone readiness_timeout_secs retimes the probes defined below it.
            if let Some(t) = s.readiness_timeout_secs {
                mark("readiness");
                for p in &mut cmd.readiness {
                    p.timeout_secs = t;
                }
            }
        }
        Err(msg) => problems.push(problem(format!("command `{name}`: {msg}"), at.clone())),
    }
    if cmd.cmd.trim().is_empty() && s.cmd.is_some() {
        problems.push(problem(
            format!("command `{name}`: `cmd` is empty"),
            at.clone(),
        ));
    }
    if cmd.kind == CommandKind::ShortLived {
        if !cmd.readiness.is_empty() {
            problems.push(problem(
                format!("command `{name}` is short_lived: readiness checks apply to long_lived commands only"),
                at.clone(),
            ));
        }
        if cmd.restart != RestartPolicy::Never {
            problems.push(problem(
                format!("command `{name}` is short_lived: `restart` applies to long_lived commands only"),
                at.clone(),
            ));
        }
    }
    if cmd.depends_on.iter().any(|d| d == &name) {
        problems.push(problem(
            format!("command `{name}` depends on itself"),
            at.clone(),
        ));
    }
    problems
}

/// The readiness probes a section defines, None when it defines none.
fn readiness_from(s: &CommandSection) -> Result<Option<Vec<ReadinessProbe>>, String> {
    let mut urls: Vec<String> = Vec::new();
    if let Some(u) = &s.readiness_url {
        urls.push(u.clone());
    }
    for u in s.readiness_urls.iter().flatten() {
        if !urls.contains(u) {
            urls.push(u.clone());
        }
    }
    if let Some(r) = &s.readiness {
        if !urls.is_empty() {
            return Err("use either `readiness = {...}` or `readiness_url(s)`, not both".into());
        }
        if s.readiness_timeout_secs.is_some() {
            return Err(
                "with `readiness = {...}`, set `timeout_secs` inside it instead of `readiness_timeout_secs`"
                    .into(),
            );
        }
        let kinds: Vec<ProbeKind> = [
            r.http.clone().map(ProbeKind::Http),
            r.tcp.clone().map(ProbeKind::Tcp),
            r.log.clone().map(ProbeKind::Log),
            r.exec.clone().map(ProbeKind::Exec),
        ]
        .into_iter()
        .flatten()
        .collect();
        let [kind] = <[ProbeKind; 1]>::try_from(kinds).map_err(|_| {
            "`readiness` needs exactly one of `http`, `tcp`, `log`, `exec`".to_string()
        })?;
        if let ProbeKind::Log(re) = &kind {
            regex::Regex::new(re)
                .map_err(|e| format!("readiness `log` is not a valid regex: {e}"))?;
        }
        if r.interval_ms == Some(0) {
            return Err("readiness `interval_ms` must be at least 1".into());
        }
        return Ok(Some(vec![ReadinessProbe {
            kind,
            interval_ms: r.interval_ms.unwrap_or(DEFAULT_READINESS_INTERVAL_MS),
            timeout_secs: r.timeout_secs.unwrap_or(DEFAULT_READINESS_TIMEOUT_SECS),
        }]));
    }
    if urls.is_empty() {
        return Ok(None);
    }
    let timeout = s
        .readiness_timeout_secs
        .unwrap_or(DEFAULT_READINESS_TIMEOUT_SECS);
    Ok(Some(
        urls.into_iter()
            .map(|u| ReadinessProbe {
                kind: ProbeKind::Http(u),
                interval_ms: DEFAULT_READINESS_INTERVAL_MS,
                timeout_secs: timeout,
            })
            .collect(),
    ))
}

/// `"SIGTERM"`, `"TERM"`, `"sigterm"` → `Some("SIGTERM")`; unknown names → None.
pub fn normalize_signal(name: &str) -> Option<String> {
    let upper = name.trim().to_ascii_uppercase();
    let full = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    nix::sys::signal::Signal::from_str(&full)
        .ok()
        .map(|s| s.as_str().to_string())
}

/// The first dependency cycle among commands, as a closed chain `a -> b -> a`.
fn dependency_cycle(commands: &BTreeMap<String, CommandConfig>) -> Option<Vec<String>> {
    fn visit(
        name: &str,
        commands: &BTreeMap<String, CommandConfig>,
        stack: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(pos) = stack.iter().position(|n| n == name) {
            let mut chain = stack[pos..].to_vec();
            chain.push(name.to_string());
            return Some(chain);
        }
        if done.iter().any(|d| d == name) {
            return None;
        }
        stack.push(name.to_string());
        for dep in commands
            .get(name)
            .map(|c| c.depends_on.as_slice())
            .unwrap_or(&[])
        {
            if dep == name {
                continue; // reported on its own
            }
            if let Some(c) = visit(dep, commands, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.push(name.to_string());
        None
    }
    let mut done = Vec::new();
    for name in commands.keys() {
        if let Some(c) = visit(name, commands, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

/// Cross-command rules once every layer is applied: `depends_on` names defined commands, in
/// a compatible scope, without cycles.
pub fn validate_commands(commands: &BTreeMap<String, CommandConfig>) -> Vec<LayerProblem> {
    let mut problems = Vec::new();
    for cmd in commands.values() {
        for dep in &cmd.depends_on {
            match commands.get(dep) {
                    None => problems.push(problem(
                        format!(
                            "command `{}` depends on `{dep}`, which is not defined{}",
                            cmd.name,
                            known_list(dep, commands.keys())
                        ),
                        cmd.origin.clone(),
                    )),
                    Some(d) if cmd.scope == CommandScope::Suite && d.scope == CommandScope::Test => {
                        problems.push(problem(
                            format!(
                                "suite-scoped command `{}` cannot depend on `{dep}`, which is scoped per test",
                                cmd.name
                            ),
                            cmd.origin.clone(),
                        ))
                    }
                    Some(_) => {}
                }
        }
    }
    for cmd in commands.values() {
        // A window of 0 s counts no restart, so `max_restarts` would never stop a command that
        // dies at once: it would be restarted as fast as it can die.
        if cmd.restart != RestartPolicy::Never && cmd.restart_window_secs == 0 {
            problems.push(problem(
                format!(
                    "command `{}`: `restart_window_secs = 0` counts no restart, so `max_restarts = {}` could never stop it; use a window of at least 1 second (default {DEFAULT_RESTART_WINDOW_SECS})",
                    cmd.name, cmd.max_restarts
                ),
                cmd.origin.clone(),
            ));
        }
        if cmd.restart != RestartPolicy::Never && cmd.backoff_ms < MIN_BACKOFF_MS {
            problems.push(problem(
                format!(
                    "command `{}`: `backoff_ms = {}` is below the minimum of {MIN_BACKOFF_MS} ms between restarts",
                    cmd.name, cmd.backoff_ms
                ),
                cmd.origin.clone(),
            ));
        }
    }
    if let Some(cycle) = dependency_cycle(commands) {
        let at = commands.get(&cycle[0]).and_then(|c| c.origin.clone());
        problems.push(problem(
            format!(
                "commands depend on each other in a cycle: {}",
                cycle.join(" -> ")
            ),
            at,
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::parse_config;
    use crate::model::layers::EffectiveConfig;

    fn apply(text: &str) -> (EffectiveConfig, Vec<String>) {
        let mut e = EffectiveConfig::default();
        let cfg = parse_config(Path::new("c.toml"), text).expect("parses");
        let mut ps = e.apply_file(&cfg, Path::new("c.toml"), Layer::Project, &|_| None);
        ps.extend(e.validate());
        (e, ps.into_iter().map(|p| p.message).collect())
    }

    #[test]
    fn commands_need_kind_and_cmd() {
        let (_, ps) = apply("[commands.a]\ntimeout_secs = 3\n");
        assert_eq!(
            ps,
            vec![
                "command `a` needs `kind` (\"short_lived\" or \"long_lived\")",
                "command `a` needs `cmd`, the shell command to run"
            ]
        );
    }

    #[test]
    fn restart_settings_that_cannot_be_honoured_are_refused() {
        let base = "[commands.s]\nkind = \"long_lived\"\ncmd = \"false\"\nrestart = \"always\"\n";
        let (_, ps) = apply(&format!("{base}restart_window_secs = 0\nbackoff_ms = 0\n"));
        assert_eq!(ps.len(), 2, "{ps:?}");
        assert!(
            ps[0].contains("`restart_window_secs = 0` counts no restart"),
            "{ps:?}"
        );
        assert!(
            ps[1].contains("`backoff_ms = 0` is below the minimum"),
            "{ps:?}"
        );
        let (_, ps) = apply(&format!("{base}restart_window_secs = 1\nbackoff_ms = 10\n"));
        assert!(ps.is_empty(), "{ps:?}");
        // Without restarts the settings are unused, so they are not judged.
        let (_, ps) =
            apply("[commands.s]\nkind = \"long_lived\"\ncmd = \"x\"\nrestart_window_secs = 0\n");
        assert!(ps.is_empty(), "{ps:?}");
    }

    #[test]
    fn bugatti_readiness_urls_merge_into_http_probes() {
        let (e, ps) = apply(
            "[commands.s]\nkind = \"long_lived\"\ncmd = \"x\"\nreadiness_url = \"http://a\"\nreadiness_urls = [\"http://a\", \"http://b\"]\nreadiness_timeout_secs = 7\n",
        );
        assert!(ps.is_empty(), "{ps:?}");
        let probes = &e.commands["s"].readiness;
        assert_eq!(probes.len(), 2);
        assert_eq!(probes[0].kind, ProbeKind::Http("http://a".into()));
        assert_eq!(probes[1].kind, ProbeKind::Http("http://b".into()));
        assert!(probes
            .iter()
            .all(|p| p.timeout_secs == 7 && p.interval_ms == 50));
    }

    #[test]
    fn explicit_readiness_probe_kinds_and_defaults() {
        for (text, kind) in [
            (
                "{ tcp = \"127.0.0.1:1\" }",
                ProbeKind::Tcp("127.0.0.1:1".into()),
            ),
            (
                "{ log = \"listening on .*\" }",
                ProbeKind::Log("listening on .*".into()),
            ),
            ("{ exec = \"true\" }", ProbeKind::Exec("true".into())),
        ] {
            let (e, ps) = apply(&format!(
                "[commands.s]\nkind = \"long_lived\"\ncmd = \"x\"\nreadiness = {text}\n"
            ));
            assert!(ps.is_empty(), "{ps:?}");
            assert_eq!(
                e.commands["s"].readiness,
                vec![ReadinessProbe {
                    kind,
                    interval_ms: 50,
                    timeout_secs: 60
                }]
            );
        }
    }

    #[test]
    fn readiness_mistakes_are_refused() {
        let base = "[commands.s]\nkind = \"long_lived\"\ncmd = \"x\"\n";
        for (extra, want) in [
            (
                "readiness = { http = \"a\", tcp = \"b\" }\n",
                "exactly one of `http`, `tcp`, `log`, `exec`",
            ),
            ("readiness = {}\n", "exactly one of"),
            (
                "readiness = { http = \"a\" }\nreadiness_url = \"b\"\n",
                "not both",
            ),
            (
                "readiness = { http = \"a\" }\nreadiness_timeout_secs = 3\n",
                "set `timeout_secs` inside it",
            ),
            (
                "readiness = { log = \"(\" }\n",
                "readiness `log` is not a valid regex",
            ),
            (
                "readiness = { http = \"a\", interval_ms = 0 }\n",
                "`interval_ms` must be at least 1",
            ),
        ] {
            let (_, ps) = apply(&format!("{base}{extra}"));
            assert_eq!(ps.len(), 1, "{extra}: {ps:?}");
            assert!(ps[0].starts_with("command `s`: "), "{ps:?}");
            assert!(ps[0].contains(want), "{extra}: {ps:?}");
        }
        let (_, ps) = apply("[commands.m]\nkind = \"short_lived\"\ncmd = \"x\"\nreadiness_url = \"u\"\nrestart = \"always\"\n");
        assert_eq!(ps.len(), 2, "{ps:?}");
        assert!(ps[0].contains("readiness checks apply to long_lived commands only"));
        assert!(ps[1].contains("`restart` applies to long_lived commands only"));
    }

    #[test]
    fn stop_signals_are_normalized_and_checked() {
        assert_eq!(normalize_signal("TERM").as_deref(), Some("SIGTERM"));
        assert_eq!(normalize_signal("sigint").as_deref(), Some("SIGINT"));
        assert_eq!(normalize_signal("SIGNOPE"), None);
        let (e, ps) =
            apply("[commands.a]\nkind = \"long_lived\"\ncmd = \"x\"\nstop_signal = \"INT\"\n");
        assert!(ps.is_empty());
        assert_eq!(e.commands["a"].stop_signal, "SIGINT");
        assert_eq!(
            e.commands["a"].signal(),
            Some(nix::sys::signal::Signal::SIGINT)
        );
        let (_, ps) =
            apply("[commands.a]\nkind = \"long_lived\"\ncmd = \"x\"\nstop_signal = \"SIGSTOPP\"\n");
        assert!(
            ps[0].contains("`stop_signal = \"SIGSTOPP\"` is not a signal name"),
            "{ps:?}"
        );
    }

    #[test]
    fn depends_on_must_exist_without_cycles_and_respect_scope() {
        let c = |n: &str, deps: &str, scope: &str| {
            format!("[commands.{n}]\nkind = \"long_lived\"\ncmd = \"x\"\ndepends_on = [{deps}]\nscope = \"{scope}\"\n")
        };
        let (_, ps) = apply(&c("a", "\"ghost\"", "test"));
        assert_eq!(
            ps,
            vec!["command `a` depends on `ghost`, which is not defined (defined: a)"]
        );
        let (_, ps) = apply(&format!(
            "{}{}{}",
            c("a", "\"b\"", "test"),
            c("b", "\"c\"", "test"),
            c("c", "\"a\"", "test")
        ));
        assert_eq!(
            ps,
            vec!["commands depend on each other in a cycle: a -> b -> c -> a"]
        );
        let (_, ps) = apply(&c("a", "\"a\"", "test"));
        assert_eq!(ps, vec!["command `a` depends on itself"]);
        let (_, ps) = apply(&format!(
            "{}{}",
            c("a", "\"b\"", "suite"),
            c("b", "", "test")
        ));
        assert_eq!(
            ps,
            vec!["suite-scoped command `a` cannot depend on `b`, which is scoped per test"]
        );
    }

    #[test]
    fn a_lone_readiness_timeout_override_retimes_existing_probes() {
        let (mut e, _) =
            apply("[commands.s]\nkind = \"long_lived\"\ncmd = \"x\"\nreadiness_url = \"u\"\n");
        let t = crate::model::test_file::parse_test_file(
            Path::new("t.test.toml"),
            "[overrides.commands.s]\nreadiness_timeout_secs = 5\n",
        )
        .expect("parses");
        assert!(e
            .apply_test_overrides(
                &t.overrides.provider,
                &t.overrides.commands,
                Path::new("t.test.toml")
            )
            .is_empty());
        assert_eq!(e.commands["s"].readiness[0].timeout_secs, 5);
        assert_eq!(e.commands["s"].source_of("readiness"), Layer::Test);
    }
}
