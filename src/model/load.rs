//! Loading a suite: config layers, discovery, test files, plans, and every check that must pass
//! before anything runs (unknown `${NAME}`, missing assets, checkpoints, `--skip-cmd` names).
//! Collects every problem rather than stopping at the first.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::assets::check_assets;
use super::checkpoint::{artifact_root, name_problem, CheckpointPaths};
use super::config::{parse_config_lenient, ConfigFile};
use super::diagnostics::{Problem, Problems};
use super::discovery::{from_globs, resolve_arg, walk_test_files_noting};
use super::layers::{EffectiveConfig, Layer, LayerProblem, ProbeKind};
use super::options::RunOptions;
use super::paths::{normalize, relative_to};
use super::plan::{expand, PlannedStep, TestFiles};
use super::substitute::{
    check_known, references, session_vars, SubstError, BUILTIN_NAMES, CHECKPOINT_NAMES,
};
use super::test_file::test_name;

pub const CONFIG_FILE_NAME: &str = "bugatti.config.toml";

/// What the loader needs from the outside world, so tests can give their own.
#[derive(Debug, Clone, Default)]
pub struct HostEnv {
    pub cwd: PathBuf,
    pub vars: BTreeMap<String, String>,
}

impl HostEnv {
    pub fn from_process() -> Self {
        HostEnv {
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            vars: std::env::vars().collect(),
        }
    }

    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }

    /// `$BUGATTI_CONFIG_HOME/config.toml`, else `~/.bugatti/config.toml`.
    pub fn global_config_path(&self) -> Option<PathBuf> {
        if let Some(home) = self.var("BUGATTI_CONFIG_HOME").filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(home).join("config.toml"));
        }
        self.var("HOME")
            .filter(|v| !v.is_empty())
            .map(|h| PathBuf::from(h).join(".bugatti").join("config.toml"))
    }
}

/// One root test, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct RootTest {
    /// Absolute path of the test file.
    pub path: PathBuf,
    /// Path relative to the project root.
    pub rel_path: PathBuf,
    pub name: String,
    pub tags: Vec<String>,
    pub plan: Vec<PlannedStep>,
    pub effective: EffectiveConfig,
}

/// Everything a run needs, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    pub project_root: PathBuf,
    /// None: no config file, defaults apply (see `notes`).
    pub config_path: Option<PathBuf>,
    /// The global config file, when one was read.
    pub global_config_path: Option<PathBuf>,
    /// One-line remarks for the console ("shard 2/3 holds no root tests").
    pub notes: Vec<String>,
    /// The config without any test's overrides (defaults < global < project < env < flags).
    pub base: EffectiveConfig,
    /// Root tests after `--tag` and `--shard`, sorted by path.
    pub tests: Vec<RootTest>,
    /// How many root tests discovery found before `--tag` / `--shard`.
    pub discovered: usize,
}

impl Suite {
    /// One line naming the config that was loaded (or that none was found), and the project
    /// root: the first line of every run's console.
    pub fn config_summary(&self) -> String {
        match &self.config_path {
            Some(path) => format!(
                "config {} (project root {})",
                path.display(),
                self.project_root.display()
            ),
            None => format!(
                "no {CONFIG_FILE_NAME} in {} or its parents: using defaults (project root {})",
                self.project_root.display(),
                self.project_root.display()
            ),
        }
    }
}

/// The nearest `bugatti.config.toml` in `dir` or one of its parents.
pub fn find_config_upward(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .map(|d| d.join(CONFIG_FILE_NAME))
        .find(|p| p.is_file())
}

/// Load with the real process environment and working directory.
pub fn load_suite(options: &RunOptions) -> Result<Suite, Problems> {
    load_suite_with(options, &HostEnv::from_process())
}

/// Load, collecting every problem.
pub fn load_suite_with(options: &RunOptions, host: &HostEnv) -> Result<Suite, Problems> {
    let mut problems = Problems::default();
    let mut texts: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut notes = Vec::new();
    let env = |name: &str| host.var(name);

    // Where the project is, and its config.
    let (project_root, config_path) = match &options.config {
        Some(c) => {
            let abs = normalize(&host.cwd.join(c));
            if !abs.is_file() {
                problems.push(Problem::new(format!(
                    "config file {} does not exist",
                    abs.display()
                )));
                return Err(finish(problems, &host.cwd));
            }
            let root = abs.parent().unwrap_or(&host.cwd).to_path_buf();
            (root, Some(abs))
        }
        // Like cargo and git: the nearest config in the current directory or a parent.
        None => match find_config_upward(&host.cwd) {
            Some(p) => (p.parent().unwrap_or(&host.cwd).to_path_buf(), Some(p)),
            None => (host.cwd.clone(), None),
        },
    };
    let project_root = project_root.canonicalize().unwrap_or(project_root);

    let mut base = EffectiveConfig::default();
    let mut unreadable = false;
    let mut read_config = |path: &Path, problems: &mut Problems| -> Option<ConfigFile> {
        match std::fs::read_to_string(path) {
            Err(e) => {
                problems.push(Problem::in_file(path, format!("cannot read config: {e}")));
                None
            }
            Ok(text) => {
                let (config, found) = parse_config_lenient(path, &text);
                texts.insert(path.to_path_buf(), text);
                found.into_iter().for_each(|p| problems.push(p));
                if config.is_none() {
                    unreadable = true;
                }
                config
            }
        }
    };
    let global_config_path = host.global_config_path().filter(|p| p.is_file());
    let mut layer_problems: Vec<LayerProblem> = Vec::new();
    if let Some(g) = &global_config_path {
        if let Some(cfg) = read_config(g, &mut problems) {
            layer_problems.extend(base.apply_file(&cfg, g, Layer::Global, &env));
        }
    }
    if let Some(c) = &config_path {
        if let Some(cfg) = read_config(c, &mut problems) {
            layer_problems.extend(base.apply_file(&cfg, c, Layer::Project, &env));
        }
    }
    if unreadable {
        // A config that is not TOML (or whose problems could not be got past) makes every later
        // check noise; one with wrong values was read without them, and checking goes on.
        return Err(finish(problems, &host.cwd));
    }
    layer_problems.extend(base.apply_env(&env));
    let mut flagged = base.clone();
    layer_problems.extend(flagged.apply_flags(options));
    layer_problems.extend(flagged.validate());
    push_layer_problems(&mut problems, layer_problems, &texts);

    check_skip_flags(options, &flagged, &mut problems);
    // The base config is what suite-scoped commands run with, whatever tests are selected.
    let mut base_lps = Vec::new();
    check_names(
        &flagged,
        &[],
        &project_root,
        &TestFiles::default(),
        &mut base_lps,
        &mut problems,
    );
    push_layer_problems(&mut problems, base_lps, &texts);

    let (candidates, explicit) = discover(
        options,
        host,
        &project_root,
        &flagged,
        &texts,
        &mut problems,
        &mut notes,
    );

    // Parse candidates; keep root tests.
    let mut files = TestFiles::default();
    let mut roots: Vec<(PathBuf, String, Vec<String>)> = Vec::new();
    for path in &candidates {
        let Some(test) = files.get(path) else {
            continue;
        };
        if test.include_only {
            if explicit.contains(path) {
                problems.push(Problem::in_file(
                    path,
                    "this file has `include_only = true`: it can only be included, not run as a root test",
                ));
            }
            continue;
        }
        roots.push((path.clone(), test_name(test, path), test.tags.clone()));
    }
    let discovered = roots.len();
    if roots.is_empty() && problems.is_empty() {
        problems.push(
            Problem::new(format!(
                "no root tests found under {}",
                project_root.display()
            ))
            .with_help("test files are named `*.test.toml`; files starting with `_` and `include_only = true` files are not root tests"),
        );
    }
    if !options.tags.is_empty() {
        roots.retain(|(_, _, tags)| tags.iter().any(|t| options.tags.contains(t)));
        if roots.is_empty() && discovered > 0 {
            problems.push(Problem::new(format!(
                "no root test carries any of the tags {}",
                options.tags.join(", ")
            )));
        }
    }
    if let Some(shard) = options.shard {
        roots = roots
            .into_iter()
            .enumerate()
            .filter(|(i, _)| shard.contains(*i))
            .map(|(_, r)| r)
            .collect();
        if roots.is_empty() {
            notes.push(format!("shard {shard} holds no root tests"));
        }
    }

    // Each root test: plan, effective config, name and asset checks.
    let mut tests = Vec::new();
    for (path, name, tags) in roots {
        let (plan, plan_problems) = expand(&project_root, &path, &mut files);
        problems.extend(plan_problems);
        let mut effective = base.clone();
        let mut lps = Vec::new();
        let text = files.text(&path).to_string();
        texts.insert(path.clone(), text);
        if let Some(test) = files.get(&path) {
            lps.extend(effective.apply_test_overrides(
                &test.overrides.provider,
                &test.overrides.commands,
                &path,
            ));
        }
        lps.extend(effective.apply_flags(options));
        lps.extend(effective.validate());
        check_names(
            &effective,
            &plan,
            &project_root,
            &files,
            &mut lps,
            &mut problems,
        );
        push_layer_problems(&mut problems, lps, &texts);
        check_plan(
            &effective,
            &plan,
            &project_root,
            &path,
            options,
            &files,
            &mut problems,
        );
        tests.push(RootTest {
            rel_path: relative_to(&project_root, &path),
            path,
            name,
            tags,
            plan,
            effective,
        });
    }
    problems.extend(std::mem::take(&mut files.problems));
    if !problems.is_empty() {
        return Err(finish(problems, &host.cwd));
    }
    Ok(Suite {
        project_root,
        config_path,
        global_config_path,
        notes,
        base: flagged,
        tests,
        discovered,
    })
}

/// `--skip-cmd` / `--skip-readiness` must name defined commands.
fn check_skip_flags(options: &RunOptions, config: &EffectiveConfig, problems: &mut Problems) {
    for (flag, names) in [
        ("--skip-cmd", &options.skip_cmd),
        ("--skip-readiness", &options.skip_readiness),
    ] {
        for n in names {
            if !config.commands.contains_key(n) {
                let known: Vec<&str> = config.commands.keys().map(String::as_str).collect();
                problems.push(
                    Problem::new(format!("{flag} `{n}`: no command of that name")).with_help(
                        if known.is_empty() {
                            "the config defines no commands".to_string()
                        } else {
                            format!("commands defined: {}", known.join(", "))
                        },
                    ),
                );
            }
        }
    }
}

/// Candidate root-test files (canonical, sorted, unique) and those named explicitly as files.
fn discover(
    options: &RunOptions,
    host: &HostEnv,
    project_root: &Path,
    config: &EffectiveConfig,
    texts: &BTreeMap<PathBuf, String>,
    problems: &mut Problems,
    notes: &mut Vec<String>,
) -> (Vec<PathBuf>, BTreeSet<PathBuf>) {
    let mut candidates: Vec<PathBuf> = Vec::new();
    let mut explicit: BTreeSet<PathBuf> = BTreeSet::new();
    if !options.paths.is_empty() {
        for arg in &options.paths {
            match resolve_arg(arg, &host.cwd, project_root) {
                Ok(found) => {
                    if found.len() == 1 && !host.cwd.join(arg).is_dir() {
                        explicit.extend(found.iter().map(|p| canonical(p)));
                    }
                    candidates.extend(found);
                }
                Err(e) => problems.push(Problem::new(e.to_string())),
            }
        }
    } else if !config.supervisor.tests.value.is_empty() {
        let (found, errors) = from_globs(project_root, &config.supervisor.tests.value);
        for e in errors {
            problems.push(layer_problem_to_problem(
                LayerProblem {
                    message: format!("[supervisor] tests: {e}"),
                    origin: config.supervisor.tests.origin.clone(),
                },
                texts,
            ));
        }
        candidates.extend(found);
    } else {
        match walk_test_files_noting(project_root, false, notes) {
            Ok(found) => candidates.extend(found),
            Err(e) => problems.push(Problem::new(e.to_string())),
        }
    }
    let mut unique: BTreeSet<PathBuf> = BTreeSet::new();
    for found in &candidates {
        let real = canonical(found);
        // A test file symlinked from outside (or named by an outside path) would read files the
        // project does not hold, and its includes and assets would resolve out there too.
        if real.starts_with(project_root) {
            unique.insert(real);
        } else {
            let via = if real == *found {
                String::new()
            } else {
                format!(" (reached as {})", found.display())
            };
            problems.push(Problem::in_file(
                &real,
                format!(
                    "test file {}{via} is outside the project root ({}); not read",
                    real.display(),
                    project_root.display()
                ),
            ));
        }
    }
    (unique.into_iter().collect(), explicit)
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// Every `${NAME}` in the config and in the plan's instructions must be known.
fn check_names(
    eff: &EffectiveConfig,
    plan: &[PlannedStep],
    root: &Path,
    files: &TestFiles,
    lps: &mut Vec<LayerProblem>,
    problems: &mut Problems,
) {
    let mut known: BTreeSet<String> = BUILTIN_NAMES.iter().map(|s| s.to_string()).collect();
    known.extend(eff.ports.keys().cloned());
    known.extend(eff.env.keys().cloned());
    known.extend(eff.secrets.keys().cloned());
    let placeholders: BTreeMap<String, String> =
        known.iter().map(|k| (k.clone(), String::new())).collect();
    let env_raw: BTreeMap<String, String> = eff
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.value.clone()))
        .collect();
    if let Err(e @ (SubstError::Cycle { .. } | SubstError::TooLong { .. })) =
        session_vars(&placeholders, &env_raw)
    {
        let first = match &e {
            SubstError::Cycle { chain } => chain.split(" -> ").next().unwrap_or_default(),
            SubstError::TooLong { name, .. } => name,
            _ => "",
        };
        lps.push(LayerProblem {
            message: e.to_string(),
            origin: eff.env.get(first).and_then(|v| v.origin.clone()),
        });
    }
    // The agent starts once per session, before any step: no step id exists for it yet.
    let agent_fields = eff
        .provider
        .cmd
        .value
        .iter()
        .map(|c| ("provider.cmd".to_string(), c, &eff.provider.cmd.origin))
        .chain(
            eff.provider
                .cwd
                .value
                .iter()
                .map(|c| ("provider.cwd".to_string(), c, &eff.provider.cwd.origin)),
        )
        .chain(
            eff.provider
                .agent_args
                .value
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    (
                        format!("provider.agent_args[{i}]"),
                        a,
                        &eff.provider.agent_args.origin,
                    )
                }),
        );
    for (field, text, origin) in agent_fields {
        if references(text).is_ok_and(|names| names.iter().any(|n| n == "BUGATTI_STEP_ID")) {
            lps.push(LayerProblem {
                message: format!(
                    "{field}: `${{BUGATTI_STEP_ID}}` is not defined here: the agent starts once per session, before any step (it gets BUGATTI_STEP_ID with each step)"
                ),
                origin: origin.clone(),
            });
        }
    }
    let mut cwd_problems = Vec::new();
    let mut check =
        |field: String, text: &str, origin: Option<super::layers::Origin>, extra: &[&str]| {
            // Names outside `known` may only be the field's own extras: no copy of the (possibly
            // large) set per field.
            let unknown_outside_extras = references(text).map(|names| {
                names
                    .into_iter()
                    .find(|n| !known.contains(n) && !extra.contains(&n.as_str()))
            });
            let result = match unknown_outside_extras {
                Ok(None) => Ok(()),
                Ok(Some(name)) => Err(SubstError::Unknown { name }),
                Err(e) => Err(e),
            };
            if let Err(e) = result {
                lps.push(LayerProblem {
                    message: format!("{field}: {e}"),
                    origin,
                });
            }
        };
    for (k, v) in &eff.env {
        check(format!("env.{k}"), &v.value, v.origin.clone(), &[]);
    }
    if let Some(u) = &eff.provider.base_url.value {
        check(
            "provider.base_url".into(),
            u,
            eff.provider.base_url.origin.clone(),
            &[],
        );
    }
    if let Some(c) = &eff.provider.cmd.value {
        check(
            "provider.cmd".into(),
            c,
            eff.provider.cmd.origin.clone(),
            &[],
        );
    }
    for (i, arg) in eff.provider.agent_args.value.iter().enumerate() {
        check(
            format!("provider.agent_args[{i}]"),
            arg,
            eff.provider.agent_args.origin.clone(),
            &[],
        );
    }
    if let Some(cwd) = &eff.provider.cwd.value {
        let o = eff.provider.cwd.origin.clone();
        check("provider.cwd".into(), cwd, o.clone(), &[]);
        // Without variables the folder is known now; with them, only at run time.
        if !cwd.contains("${") && !root.join(cwd).is_dir() {
            cwd_problems.push(LayerProblem {
                message: format!(
                    "provider.cwd: `{cwd}` is not a directory (relative paths start at the project root {})",
                    root.display()
                ),
                origin: o,
            });
        }
    }
    for c in eff.commands.values() {
        let o = c.origin.clone();
        check(format!("commands.{}.cmd", c.name), &c.cmd, o.clone(), &[]);
        if let Some(cwd) = &c.cwd {
            check(format!("commands.{}.cwd", c.name), cwd, o.clone(), &[]);
            // Without variables the folder is known now; with them, only at run time.
            if !cwd.contains("${") && !root.join(cwd).is_dir() {
                cwd_problems.push(LayerProblem {
                    message: format!(
                        "commands.{}.cwd: `{cwd}` is not a directory under the project root",
                        c.name
                    ),
                    origin: o.clone(),
                });
            }
        }
        for p in &c.readiness {
            let (what, text) = match &p.kind {
                ProbeKind::Http(t) => ("http", t),
                ProbeKind::Tcp(t) => ("tcp", t),
                ProbeKind::Log(t) => ("log", t),
                ProbeKind::Exec(t) => ("exec", t),
            };
            check(
                format!("commands.{}.readiness ({what})", c.name),
                text,
                o.clone(),
                &[],
            );
        }
    }
    if let Some(cp) = &eff.checkpoint {
        check(
            "checkpoint.save".into(),
            &cp.value.save,
            cp.origin.clone(),
            CHECKPOINT_NAMES,
        );
        check(
            "checkpoint.restore".into(),
            &cp.value.restore,
            cp.origin.clone(),
            CHECKPOINT_NAMES,
        );
    }
    lps.extend(cwd_problems);
    for s in plan {
        if let Err(e) = check_known(&s.instruction, &known) {
            problems.push(step_problem(root, files, s, format!("instruction: {e}")));
        }
    }
}

/// Assets, checkpoints and `--from-checkpoint` against one root test's plan.
fn check_plan(
    eff: &EffectiveConfig,
    plan: &[PlannedStep],
    root: &Path,
    test: &Path,
    options: &RunOptions,
    files: &TestFiles,
    problems: &mut Problems,
) {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for s in plan {
        let file = root.join(&s.source_file);
        for e in check_assets(&s.instruction, &file) {
            problems.push(step_problem(root, files, s, e.to_string()));
        }
        if let Some(cp) = &s.checkpoint {
            if let Some(why) = name_problem(cp) {
                problems.push(step_problem(
                    root,
                    files,
                    s,
                    format!("`checkpoint = \"{cp}\"` cannot name a checkpoint folder: {why}"),
                ));
            }
            if eff.checkpoint.is_none() {
                problems.push(
                    step_problem(
                        root,
                        files,
                        s,
                        format!("`checkpoint = \"{cp}\"` needs a [checkpoint] table in the config"),
                    )
                    .with_help("add [checkpoint] with `save` and `restore` commands"),
                );
            }
            if let Some(first) = seen.insert(cp, s.step_id) {
                problems.push(Problem::in_file(
                    test,
                    format!(
                        "checkpoint `{cp}` is set by both step {first} and step {} of this plan",
                        s.step_id
                    ),
                ));
            }
        }
    }
    if !seen.is_empty() && eff.checkpoint.is_some() && eff.commands.contains_key("checkpoint") {
        problems.push(Problem::in_file(
            test,
            "a harness command named `checkpoint` would share logs/checkpoint.log with the \
             [checkpoint] save and restore commands: rename it",
        ));
    }
    if let Some(name) = &options.from_checkpoint {
        if seen.contains_key(name.as_str()) && name_problem(name).is_none() {
            // The checkpoint must have been saved by an earlier run.
            let artifacts = artifact_root(root, &eff.supervisor.artifact_dir.value);
            let paths = CheckpointPaths::new(&artifacts, &relative_to(root, test), name);
            if let Some(why) = paths.resume_problem() {
                problems.push(Problem::in_file(
                    test,
                    format!("--from-checkpoint `{name}`: {why}"),
                ));
            }
        } else if !seen.contains_key(name.as_str()) {
            let have: Vec<&str> = seen.keys().copied().collect();
            problems.push(Problem::in_file(
                test,
                format!(
                    "--from-checkpoint `{name}`: this test has no step with that checkpoint{}",
                    if have.is_empty() {
                        String::new()
                    } else {
                        format!(" (it has: {})", have.join(", "))
                    }
                ),
            ));
        }
    }
}

/// A problem pointing at a planned step's table in its file.
fn step_problem(root: &Path, files: &TestFiles, s: &PlannedStep, message: String) -> Problem {
    let file = root.join(&s.source_file);
    Problem::at(&file, files.text(&file), s.source_span.clone(), message)
}

fn layer_problem_to_problem(lp: LayerProblem, texts: &BTreeMap<PathBuf, String>) -> Problem {
    match lp.origin {
        Some(o) => match texts.get(&o.file) {
            Some(text) => Problem::at(&o.file, text, o.span, lp.message),
            None => Problem::in_file(&o.file, lp.message),
        },
        None => Problem::new(lp.message),
    }
}

fn push_layer_problems(
    problems: &mut Problems,
    lps: Vec<LayerProblem>,
    texts: &BTreeMap<PathBuf, String>,
) {
    for lp in lps {
        problems.push(layer_problem_to_problem(lp, texts));
    }
}

/// Dedupe (the same config problem shows up once per root test) and show paths relative to
/// the working directory.
fn finish(problems: Problems, cwd: &Path) -> Problems {
    let cwd = cwd.canonicalize().unwrap_or(cwd.to_path_buf());
    let mut out = Problems::default();
    let mut seen = BTreeSet::new();
    for mut p in problems.0 {
        if let Some(f) = &p.file {
            p.file = Some(relative_to(&cwd, f));
        }
        if let Some(l) = &mut p.location {
            l.file = relative_to(&cwd, &l.file);
        }
        if seen.insert(p.to_string()) {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::options::Shard;
    use std::fs;

    struct Project {
        _dir: tempfile::TempDir,
        root: PathBuf,
        host: HostEnv,
    }

    impl Project {
        fn new() -> Self {
            let dir = tempfile::tempdir().expect("tempdir");
            let root = dir.path().canonicalize().expect("canonical");
            let host = HostEnv {
                cwd: root.clone(),
                // No HOME: the developer's own global config must not leak into tests.
                vars: BTreeMap::new(),
            };
            Project {
                _dir: dir,
                root,
                host,
            }
        }
        fn write(&self, rel: &str, text: &str) -> &Self {
            let p = self.root.join(rel);
            fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            fs::write(p, text).expect("write");
            self
        }
        fn load(&self, o: &RunOptions) -> Result<Suite, Problems> {
            load_suite_with(o, &self.host)
        }
        fn errors(&self, o: &RunOptions) -> String {
            match self.load(o) {
                Ok(s) => panic!("expected problems, got {} tests", s.tests.len()),
                Err(p) => p.to_string(),
            }
        }
    }

    const STEP: &str = "[[steps]]\ninstruction = \"do it\"\n";

    #[test]
    fn the_nearest_config_upward_is_the_project_root() {
        let mut p = Project::new();
        p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n")
            .write("tests/a.test.toml", STEP)
            .write("tests/deep/more/keep", "");
        p.host.cwd = p.root.join("tests/deep/more");
        let s = p.load(&RunOptions::default()).unwrap();
        assert_eq!(s.project_root, p.root);
        assert_eq!(s.config_path, Some(p.root.join("bugatti.config.toml")));
        assert_eq!(s.tests[0].rel_path, PathBuf::from("tests/a.test.toml"));
        assert_eq!(s.base.provider.name.value, "shell");
    }

    #[test]
    fn a_symlink_loop_under_the_root_is_skipped_with_a_note() {
        let p = Project::new();
        p.write("tests/a.test.toml", STEP);
        std::os::unix::fs::symlink("..", p.root.join("tests/loop")).expect("symlink");
        let s = p.load(&RunOptions::default()).unwrap();
        assert_eq!(s.tests.len(), 1);
        assert!(
            s.notes
                .iter()
                .any(|n| n.contains("tests/loop") && n.contains("symlink loop")),
            "{:?}",
            s.notes
        );
    }

    #[test]
    fn the_agent_cmd_cannot_use_the_step_id_and_its_cwd_must_exist() {
        let p = Project::new();
        p.write(
            "bugatti.config.toml",
            "[provider]\nname = \"command\"\ncmd = \"a ${BUGATTI_STEP_ID}\"\ncwd = \"agents\"\nagent_args = [\"${NOPE}\"]\n",
        )
        .write("a.test.toml", STEP);
        let e = p.errors(&RunOptions::default());
        assert!(
            e.contains("provider.cmd: `${BUGATTI_STEP_ID}` is not defined here"),
            "{e}"
        );
        assert!(
            e.contains("provider.cwd: `agents` is not a directory"),
            "{e}"
        );
        assert!(
            e.contains("provider.agent_args[0]: unknown variable `${NOPE}`"),
            "{e}"
        );
    }

    #[test]
    fn no_config_means_defaults_and_a_note() {
        let p = Project::new();
        p.write("a.test.toml", STEP);
        let s = p.load(&RunOptions::default()).unwrap();
        assert_eq!(s.config_path, None);
        let summary = s.config_summary();
        assert!(
            summary.starts_with("no bugatti.config.toml in ")
                && summary.contains("or its parents: using defaults"),
            "{summary}"
        );
        assert_eq!(s.tests.len(), 1);
        assert_eq!(s.tests[0].name, "a");
        assert_eq!(s.tests[0].rel_path, PathBuf::from("a.test.toml"));
        assert_eq!(s.tests[0].plan[0].instruction, "do it");
    }

    #[test]
    fn missing_config_flag_file_is_an_error() {
        let p = Project::new();
        let e = p.errors(&RunOptions {
            config: Some("nope.toml".into()),
            ..Default::default()
        });
        assert!(
            e.contains("config file") && e.contains("nope.toml does not exist"),
            "{e}"
        );
    }

    #[test]
    fn config_dir_is_the_project_root_and_global_config_is_a_layer() {
        let p = Project::new();
        p.write("proj/cfg.toml", "[provider]\nname = \"shell\"\n")
            .write("proj/t/a.test.toml", STEP)
            .write(
                "home/config.toml",
                "[provider]\nname = \"codex\"\nstep_timeout_secs = 9\n",
            );
        let mut host = p.host.clone();
        host.vars.insert(
            "BUGATTI_CONFIG_HOME".into(),
            p.root.join("home").display().to_string(),
        );
        let s = load_suite_with(
            &RunOptions {
                config: Some("proj/cfg.toml".into()),
                ..Default::default()
            },
            &host,
        )
        .unwrap();
        assert_eq!(s.project_root, p.root.join("proj"));
        assert_eq!(s.global_config_path, Some(p.root.join("home/config.toml")));
        assert_eq!(s.base.provider.name.value, "shell");
        assert_eq!(s.base.provider.name.source, Layer::Project);
        assert_eq!(s.base.provider.step_timeout_secs.value, 9);
        assert_eq!(s.base.provider.step_timeout_secs.source, Layer::Global);
        assert_eq!(s.tests[0].rel_path, PathBuf::from("t/a.test.toml"));
    }

    #[test]
    fn config_problems_and_test_problems_come_in_one_pass() {
        let p = Project::new();
        p.write(
            "bugatti.config.toml",
            "[provider]\nnmae = \"shell\"\nstep_timeout_secs = \"20\"\n[commands.a]\nkind = \"long_lived\"\ncmd = \"x\"\ndepends_on = [\"nope\"]\n",
        )
        .write("a.test.toml", "[[steps]]\ninstruction = \"${UNKNOWN}\"\n");
        let e = p.load(&RunOptions::default()).unwrap_err();
        let text = e.to_string();
        assert_eq!(e.len(), 4, "{text}");
        assert!(text.contains("unknown field `nmae`"), "{text}");
        assert!(text.contains("--> bugatti.config.toml:2:1"), "{text}");
        assert!(text.contains("did you mean `name`?"), "{text}");
        assert!(text.contains("expected a whole number"), "{text}");
        assert!(text.contains("depends on `nope`"), "{text}");
        assert!(text.contains("unknown variable `${UNKNOWN}`"), "{text}");
        assert!(!text.contains("no root tests found"), "{text}");
    }

    #[test]
    fn a_config_that_is_not_toml_stops_before_tests_are_judged() {
        let p = Project::new();
        p.write("bugatti.config.toml", "[provider\nname = \"shell\"\n")
            .write("a.test.toml", "[[steps]]\ninstruction = \"${UNKNOWN}\"\n");
        let e = p.load(&RunOptions::default()).unwrap_err();
        assert_eq!(e.len(), 1, "{e}");
    }

    #[test]
    fn include_only_and_underscore_files_are_not_root_tests() {
        let p = Project::new();
        p.write("a.test.toml", STEP)
            .write("_b.test.toml", STEP)
            .write("c.test.toml", &format!("include_only = true\n{STEP}"));
        let s = p.load(&RunOptions::default()).unwrap();
        let names: Vec<&str> = s.tests.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, vec!["a"]);
        let e = p.errors(&RunOptions {
            paths: vec!["c.test.toml".into()],
            ..Default::default()
        });
        assert!(
            e.contains("`include_only = true`: it can only be included"),
            "{e}"
        );
    }

    #[test]
    fn nothing_to_run_is_an_error() {
        let p = Project::new();
        let e = p.errors(&RunOptions::default());
        assert!(e.contains("no root tests found under"), "{e}");
        p.write("_only.test.toml", STEP)
            .write("inc.test.toml", &format!("include_only = true\n{STEP}"));
        let e = p.errors(&RunOptions::default());
        assert!(e.contains("no root tests found under"), "{e}");
    }

    #[test]
    fn tags_then_shards_select_deterministically() {
        let p = Project::new();
        for n in ["a", "b", "c", "d"] {
            p.write(
                &format!("{n}.test.toml"),
                &format!(
                    "tags = [\"{}\"]\n{STEP}",
                    if n == "d" { "slow" } else { "fast" }
                ),
            );
        }
        let names = |o: RunOptions| -> Vec<String> {
            p.load(&o)
                .unwrap()
                .tests
                .iter()
                .map(|t| t.name.clone())
                .collect()
        };
        assert_eq!(
            names(RunOptions {
                tags: vec!["fast".into()],
                ..Default::default()
            }),
            vec!["a", "b", "c"]
        );
        let shard = |k| RunOptions {
            shard: Some(Shard { index: k, count: 2 }),
            ..Default::default()
        };
        assert_eq!(names(shard(1)), vec!["a", "c"]);
        assert_eq!(names(shard(2)), vec!["b", "d"]);
        let e = p.errors(&RunOptions {
            tags: vec!["none".into()],
            ..Default::default()
        });
        assert!(
            e.contains("no root test carries any of the tags none"),
            "{e}"
        );
    }

    #[test]
    fn tests_globs_from_config_and_a_glob_matching_nothing() {
        let p = Project::new();
        p.write(
            "bugatti.config.toml",
            "[supervisor]\ntests = [\"e2e/*.test.toml\", \"nothing/*.test.toml\"]\n",
        )
        .write("e2e/a.test.toml", STEP)
        .write("other/b.test.toml", STEP);
        let e = p.errors(&RunOptions::default());
        assert!(
            e.contains("[supervisor] tests: tests glob `nothing/*.test.toml` matches no file"),
            "{e}"
        );
        assert!(e.contains("bugatti.config.toml:2:"), "{e}");
        p.write(
            "bugatti.config.toml",
            "[supervisor]\ntests = [\"e2e/*.test.toml\"]\n",
        );
        let s = p.load(&RunOptions::default()).unwrap();
        assert_eq!(s.tests.len(), 1);
        assert_eq!(s.tests[0].rel_path, PathBuf::from("e2e/a.test.toml"));
    }

    #[test]
    fn unknown_names_are_reported_with_field_and_place() {
        let p = Project::new();
        p.write(
            "bugatti.config.toml",
            "[ports]\nAPP_PORT = \"auto\"\n[env]\nURL = \"http://x:${APP_PORT}/${BUGATTI_WORKDIR}\"\nBAD = \"${NOPE}\"\n[commands.s]\nkind = \"long_lived\"\ncmd = \"run --port ${APP_PROT} $${HOME}\"\nreadiness = { tcp = \"127.0.0.1:${PORT}\" }\n",
        )
        .write("a.test.toml", "[[steps]]\ninstruction = \"open ${URL} ${MISSING}\"\n");
        let e = p.errors(&RunOptions::default());
        assert!(e.contains("env.BAD: unknown variable `${NOPE}`"), "{e}");
        assert!(
            e.contains("commands.s.cmd: unknown variable `${APP_PROT}`"),
            "{e}"
        );
        assert!(
            e.contains("commands.s.readiness (tcp): unknown variable `${PORT}`"),
            "{e}"
        );
        assert!(
            e.contains("instruction: unknown variable `${MISSING}`"),
            "{e}"
        );
        assert!(e.contains("--> a.test.toml:1:1"), "{e}");
        assert!(!e.contains("HOME"), "escaped $${{ must not be checked: {e}");
        assert!(e.ends_with("4 problems found; nothing was run"), "{e}");
    }

    #[test]
    fn env_values_may_chain_but_not_cycle() {
        let p = Project::new();
        p.write(
            "bugatti.config.toml",
            "[env]\nA = \"${B}/x\"\nB = \"${BUGATTI_WORKDIR}\"\n",
        )
        .write("a.test.toml", STEP);
        assert!(p.load(&RunOptions::default()).is_ok());
        p.write("bugatti.config.toml", "[env]\nA = \"${B}\"\nB = \"${A}\"\n");
        let e = p.errors(&RunOptions::default());
        assert!(
            e.contains("[env] values refer to each other in a cycle: A -> B -> A"),
            "{e}"
        );
        assert!(e.contains("--> bugatti.config.toml:2:"), "{e}");
    }

    #[test]
    fn a_command_cwd_must_exist_unless_it_uses_variables() {
        let p = Project::new();
        p.write("bugatti.config.toml", "[commands.a]\nkind = \"short_lived\"\ncmd = \"x\"\ncwd = \"app\"\n[commands.b]\nkind = \"short_lived\"\ncmd = \"x\"\ncwd = \"${BUGATTI_WORKDIR}\"\n")
            .write("a.test.toml", STEP);
        let e = p.errors(&RunOptions::default());
        assert!(
            e.contains("commands.a.cwd: `app` is not a directory under the project root"),
            "{e}"
        );
        assert!(e.ends_with("1 problem found; nothing was run"), "{e}");
        p.write("app/keep", "");
        assert!(p.load(&RunOptions::default()).is_ok());
    }

    #[test]
    fn base_config_names_are_checked_even_when_no_test_is_selected() {
        let p = Project::new();
        p.write("bugatti.config.toml", "[env]\nA = \"${NOPE}\"\n")
            .write("a.test.toml", STEP);
        let e = p.errors(&RunOptions {
            shard: Some(Shard { index: 2, count: 2 }),
            ..Default::default()
        });
        assert!(e.contains("env.A: unknown variable `${NOPE}`"), "{e}");
        assert!(e.ends_with("1 problem found; nothing was run"), "{e}");
    }

    #[test]
    fn skip_flags_must_name_commands() {
        let p = Project::new();
        p.write(
            "bugatti.config.toml",
            "[commands.s]\nkind = \"long_lived\"\ncmd = \"x\"\n",
        )
        .write("a.test.toml", STEP);
        let e = p.errors(&RunOptions {
            skip_cmd: vec!["web".into()],
            skip_readiness: vec!["db".into()],
            ..Default::default()
        });
        assert!(
            e.contains("--skip-cmd `web`: no command of that name"),
            "{e}"
        );
        assert!(
            e.contains("--skip-readiness `db`: no command of that name"),
            "{e}"
        );
        assert!(e.contains("commands defined: s"), "{e}");
        assert!(p
            .load(&RunOptions {
                skip_cmd: vec!["s".into()],
                ..Default::default()
            })
            .is_ok());
    }

    #[test]
    fn checkpoints_need_the_table_are_unique_and_resume_names_exist() {
        let p = Project::new();
        let test = "[[steps]]\ninstruction = \"a\"\ncheckpoint = \"in\"\n[[steps]]\ninstruction = \"b\"\ncheckpoint = \"in\"\n";
        p.write("a.test.toml", test);
        let e = p.errors(&RunOptions::default());
        assert!(
            e.contains("`checkpoint = \"in\"` needs a [checkpoint] table"),
            "{e}"
        );
        assert!(
            e.contains("checkpoint `in` is set by both step 1 and step 2"),
            "{e}"
        );
        p.write("bugatti.config.toml", "[checkpoint]\nsave = \"s ${BUGATTI_CHECKPOINT_ID}\"\nrestore = \"r\"\n")
            .write("a.test.toml", "[[steps]]\ninstruction = \"a\"\nsetup = true\n[[steps]]\ninstruction = \"b\"\ncheckpoint = \"in\"\n");
        let resume = RunOptions {
            from_checkpoint: Some("in".into()),
            ..Default::default()
        };
        // Never saved: an error naming the folder expected.
        let e = p.errors(&resume);
        let dir = p.root.join(".bugatti/checkpoints/a/in");
        assert!(
            e.contains("--from-checkpoint `in`: no saved checkpoint")
                && e.contains(&dir.display().to_string()),
            "{e}"
        );
        // A folder whose save did not succeed is not a checkpoint either.
        fs::create_dir_all(&dir).unwrap();
        let e = p.errors(&resume);
        assert!(e.contains("was never saved successfully"), "{e}");
        fs::write(p.root.join(".bugatti/checkpoints/a/in.saved.json"), "{}").unwrap();
        let s = p
            .load(&RunOptions {
                from_checkpoint: Some("in".into()),
                ..Default::default()
            })
            .unwrap();
        let cp = s.tests[0].effective.checkpoint.as_ref().unwrap();
        assert_eq!(cp.value.timeout_secs, 120);
        assert!(s.tests[0].plan[0].setup);
        let e = p.errors(&RunOptions {
            from_checkpoint: Some("out".into()),
            ..Default::default()
        });
        assert!(
            e.contains(
                "--from-checkpoint `out`: this test has no step with that checkpoint (it has: in)"
            ),
            "{e}"
        );
    }

    #[test]
    fn checkpoint_names_must_be_folder_names_and_own_their_log() {
        let p = Project::new();
        p.write(
            "bugatti.config.toml",
            "[checkpoint]\nsave = \"s\"\nrestore = \"r\"\n[commands.checkpoint]\nkind = \"short_lived\"\ncmd = \"true\"\n",
        )
        .write(
            "a.test.toml",
            "[[steps]]\ninstruction = \"a\"\ncheckpoint = \"../up\"\n",
        );
        let e = p.errors(&RunOptions::default());
        assert!(
            e.contains("`checkpoint = \"../up\"` cannot name a checkpoint folder"),
            "{e}"
        );
        assert!(e.contains("a harness command named `checkpoint`"), "{e}");
    }

    #[test]
    fn missing_assets_are_errors_and_present_ones_pass() {
        let p = Project::new();
        p.write(
            "t/a.test.toml",
            "[[steps]]\ninstruction = \"use [[asset:data.json]] and {{path:pic.png}}\"\n",
        )
        .write("t/a/data.json", "{}");
        let e = p.errors(&RunOptions::default());
        assert!(e.contains("asset `pic.png` not found"), "{e}");
        assert!(!e.contains("data.json"), "{e}");
        p.write("t/a/pic.png", "png");
        assert!(p.load(&RunOptions::default()).is_ok());
    }

    #[test]
    fn test_overrides_apply_per_test_and_flags_win() {
        let p = Project::new();
        p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n[commands.s]\nkind = \"long_lived\"\ncmd = \"serve\"\n")
            .write("a.test.toml", &format!("[overrides.provider]\nstep_timeout_secs = 7\n[overrides.commands.s]\ncmd = \"serve --big\"\n{STEP}"))
            .write("b.test.toml", STEP);
        let s = p
            .load(&RunOptions {
                provider: Some("command".into()),
                ..Default::default()
            })
            .unwrap_err()
            .to_string();
        assert!(
            s.contains("provider `command` needs `[provider] cmd`"),
            "{s}"
        );
        assert_eq!(
            s.matches("provider `command` needs").count(),
            1,
            "deduped: {s}"
        );
        let s = p
            .load(&RunOptions {
                step_timeout: Some(3),
                ..Default::default()
            })
            .unwrap();
        let a = &s.tests[0].effective;
        let b = &s.tests[1].effective;
        assert_eq!(a.commands["s"].cmd, "serve --big");
        assert_eq!(b.commands["s"].cmd, "serve");
        assert_eq!(a.provider.step_timeout_secs.value, 3);
        assert_eq!(a.provider.step_timeout_secs.source, Layer::Flag);
    }

    #[test]
    fn env_layer_sits_between_project_and_test() {
        let p = Project::new();
        p.write(
            "bugatti.config.toml",
            "[provider]\nbase_url = \"http://project\"\nstep_timeout_secs = 50\n",
        )
        .write(
            "a.test.toml",
            &format!("[overrides.provider]\nbase_url = \"http://test\"\n{STEP}"),
        )
        .write("b.test.toml", STEP);
        let mut host = p.host.clone();
        host.vars
            .insert("BUGATTI_BASE_URL".into(), "http://env".into());
        host.vars.insert("BUGATTI_STEP_TIMEOUT".into(), "40".into());
        let s = load_suite_with(&RunOptions::default(), &host).unwrap();
        assert_eq!(
            s.tests[0].effective.provider.base_url.value.as_deref(),
            Some("http://test")
        );
        assert_eq!(
            s.tests[1].effective.provider.base_url.value.as_deref(),
            Some("http://env")
        );
        assert_eq!(s.tests[1].effective.provider.base_url.source, Layer::Env);
        assert_eq!(s.base.provider.step_timeout_secs.value, 40);
    }

    #[test]
    fn a_cycle_reachable_from_two_roots_is_reported_once() {
        let p = Project::new();
        p.write("a.test.toml", "[[steps]]\ninclude_path = \"b.test.toml\"\n")
            .write("b.test.toml", "[[steps]]\ninclude_path = \"a.test.toml\"\n");
        let e = p.load(&RunOptions::default()).unwrap_err();
        assert_eq!(e.len(), 1, "{e}");
        assert!(e
            .to_string()
            .contains("include cycle: a.test.toml -> b.test.toml -> a.test.toml"));
    }

    #[test]
    fn bugatti_07_project_loads_as_is() {
        let p = Project::new();
        p.write(
            "bugatti.config.toml",
            "[provider]\nname = \"claude-code\"\nstrict_warnings = true\nbase_url = \"http://localhost:3000\"\n[commands.server]\nkind = \"long_lived\"\ncmd = \"npm start\"\nreadiness_urls = [\"http://localhost:3000/health\"]\nreadiness_timeout_secs = 60\n[checkpoint]\nsave = \"./cp.sh save\"\nrestore = \"./cp.sh restore\"\n",
        )
        .write("_setup.test.toml", "name = \"setup\"\n[[steps]]\ninstruction = \"seed\"\ncheckpoint = \"seeded\"\n")
        .write("ui.test.toml", "name = \"UI\"\n[overrides.provider]\nstep_timeout_secs = 600\n[[steps]]\ninclude_path = \"_setup.test.toml\"\n[[steps]]\ninstruction = \"click\"\nstep_timeout_secs = 30\nskip = true\n");
        let s = p
            .load(&RunOptions {
                paths: vec!["ui".into()],
                ..Default::default()
            })
            .unwrap();
        let t = &s.tests[0];
        assert_eq!(t.name, "UI");
        assert_eq!(t.plan.len(), 2);
        assert_eq!(t.plan[0].checkpoint.as_deref(), Some("seeded"));
        assert_eq!(t.plan[0].include_chain, vec![PathBuf::from("ui.test.toml")]);
        assert_eq!((t.plan[1].timeout_secs, t.plan[1].skip), (Some(30), true));
        assert!(t.effective.provider.strict_warnings.value);
        assert_eq!(t.effective.provider.step_timeout_secs.value, 600);
    }
}
