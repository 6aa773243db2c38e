//! The checks a loaded suite must pass before anything runs: `--skip-cmd` / `--skip-readiness` names,
//! every `${NAME}`, command and checkpoint name, each plan's assets and checkpoints; every problem
//! collected with its file and line, none stopping the others.

use crate::model::ids::StepId;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::model::assets::check_assets;
use crate::model::checkpoint::{artifact_root, name_problem, CheckpointPaths};
use crate::model::diagnostics::{Problem, Problems};
use crate::model::layers::{EffectiveConfig, LayerProblem, ProbeKind};
use crate::model::options::RunOptions;
use crate::model::paths::relative_to;
use crate::model::plan::{PlannedStep, TestFiles};
use crate::model::substitute::{
    check_known, references, session_vars, SubstError, BUILTIN_NAMES, CHECKPOINT_NAMES,
};

/// `--skip-cmd` / `--skip-readiness` must name defined commands.
pub(super) fn check_skip_flags(
    options: &RunOptions,
    config: &EffectiveConfig,
    problems: &mut Problems,
) {
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
                            match crate::model::diagnostics::did_you_mean(n, &known) {
                                Some(hint) => {
                                    format!("{hint} (commands defined: {})", known.join(", "))
                                }
                                None => format!("commands defined: {}", known.join(", ")),
                            }
                        },
                    ),
                );
            }
        }
    }
}

/// A command `--skip-cmd` leaves to the user (who started it themselves) must be reachable by its
/// readiness probe: one that waits on an `auto` port (allocated afresh for each session, so a
/// server started beforehand cannot be listening on it) or on the command's own output (there is
/// none) could only wait out its whole timeout. Refused before anything runs, saying what to do.
pub(super) fn check_skipped_readiness(
    options: &RunOptions,
    config: &EffectiveConfig,
    problems: &mut Problems,
) {
    use crate::model::commands::ProbeKind;
    let auto_ports: Vec<&str> = config
        .ports
        .iter()
        .filter(|(_, spec)| matches!(spec.value, crate::model::config::PortSpec::Auto))
        .map(|(name, _)| name.as_str())
        .collect();
    for name in &options.skip_cmd {
        if options.skip_readiness.contains(name) {
            continue;
        }
        let Some(command) = config.commands.get(name) else {
            continue;
        };
        for probe in &command.readiness {
            let why = match &probe.kind {
                ProbeKind::Log(_) => Some(
                    "its readiness waits for a line of its own output, and a command that is \
                     not launched writes none"
                        .to_string(),
                ),
                ProbeKind::Http(text) | ProbeKind::Tcp(text) | ProbeKind::Exec(text) => auto_ports
                    .iter()
                    .find(|port| text.contains(&format!("${{{port}}}")))
                    .map(|port| {
                        format!(
                            "its readiness probe uses ${{{port}}}, an `auto` port chosen afresh \
                             for each session, so a server you started yourself cannot be \
                             listening on it"
                        )
                    }),
            };
            if let Some(why) = why {
                problems.push(
                    Problem::new(format!("--skip-cmd `{name}`: {why}")).with_help(format!(
                        "give the port a fixed number in [ports] (the one your server uses), \
                         or add --skip-readiness {name} to start without waiting for it"
                    )),
                );
                break;
            }
        }
    }
}

/// Every `${NAME}` in the config and in the plan's instructions must be known.
pub(super) fn check_names(
    eff: &EffectiveConfig,
    plan: &[PlannedStep],
    root: &Path,
    files: &TestFiles,
    lps: &mut Vec<LayerProblem>,
    problems: &mut Problems,
) {
    let known = known_names(eff);
    check_env_expansion(eff, &known, lps);
    check_agent_step_id(eff, lps);
    check_removed_agent_flags(eff, lps);
    for (field, text, origin, extra) in substituted_fields(eff) {
        if let Err(e) = only_known(text, &known, extra) {
            lps.push(LayerProblem {
                message: format!("{field}: {}", with_hint(&e, &known)),
                origin,
            });
        }
    }
    lps.extend(missing_cwds(eff, root));
    for s in plan {
        if let Err(e) = check_known(&s.instruction, &known) {
            problems.push(step_problem(
                root,
                files,
                s,
                format!("instruction: {}", with_hint(&e, &known)),
            ));
        }
    }
}

/// The names a `${NAME}` may use: the built-in ones, the ports, `[env]` and `[secrets]`.
fn known_names(eff: &EffectiveConfig) -> BTreeSet<String> {
    let mut known: BTreeSet<String> = BUILTIN_NAMES.iter().map(|s| s.to_string()).collect();
    known.extend(eff.ports.keys().cloned());
    known.extend(eff.env.keys().cloned());
    known.extend(eff.secrets.keys().cloned());
    known
}

/// `[env]` values that name each other in a cycle, or grow past the limit, when expanded.
fn check_env_expansion(
    eff: &EffectiveConfig,
    known: &BTreeSet<String>,
    lps: &mut Vec<LayerProblem>,
) {
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
}

/// `${BUGATTI_STEP_ID}` in what starts the agent, which has no step yet.
fn check_agent_step_id(eff: &EffectiveConfig, lps: &mut Vec<LayerProblem>) {
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
}

/// A Codex flag every supported Codex refuses (`--full-auto`): refused here, by `check` and
/// `doctor` as by `start`, with its replacement, rather than by Codex at the first step.
fn check_removed_agent_flags(eff: &EffectiveConfig, lps: &mut Vec<LayerProblem>) {
    if eff.provider.name.value != crate::model::provider::ProviderKind::Codex {
        return;
    }
    if let Some(why) = removed_codex_flag(&eff.provider.agent_args.value) {
        lps.push(LayerProblem {
            message: format!("provider.agent_args: {why}"),
            origin: eff.provider.agent_args.origin.clone(),
        });
    }
}

/// A flag in Codex's `agent_args` that every supported Codex refuses, with what to write
/// instead: `--full-auto` (removed in Codex 0.147) is `--sandbox workspace-write`.
pub(crate) fn removed_codex_flag(agent_args: &[String]) -> Option<String> {
    agent_args.iter().any(|a| a == "--full-auto").then(|| {
        "`--full-auto` is not a Codex flag since Codex 0.147 (every supported Codex exits on \
         it with an argument error): write `--sandbox workspace-write` instead (or leave the \
         sandbox out: the supervisor lifts Codex's own, docs/providers.md)"
            .to_string()
    })
}

/// A config text whose `${NAME}`s a session substitutes: where it is, the text, its origin and
/// the names it may use beyond the known ones.
type Field<'a> = (
    String,
    &'a str,
    Option<crate::model::layers::Origin>,
    &'static [&'static str],
);

/// Every config text a session substitutes, in the order its problems are listed.
fn substituted_fields(eff: &EffectiveConfig) -> Vec<Field<'_>> {
    let p = &eff.provider;
    let mut fields: Vec<Field<'_>> = Vec::new();
    for (k, v) in &eff.env {
        fields.push((format!("env.{k}"), &v.value, v.origin.clone(), &[]));
    }
    if let Some(u) = &p.base_url.value {
        fields.push((
            "provider.base_url".into(),
            u,
            p.base_url.origin.clone(),
            &[],
        ));
    }
    if let Some(c) = &p.cmd.value {
        fields.push(("provider.cmd".into(), c, p.cmd.origin.clone(), &[]));
    }
    for (i, arg) in p.agent_args.value.iter().enumerate() {
        let field = format!("provider.agent_args[{i}]");
        fields.push((field, arg, p.agent_args.origin.clone(), &[]));
    }
    if let Some(cwd) = &p.cwd.value {
        fields.push(("provider.cwd".into(), cwd, p.cwd.origin.clone(), &[]));
    }
    for c in eff.commands.values() {
        let o = &c.origin;
        fields.push((format!("commands.{}.cmd", c.name), &c.cmd, o.clone(), &[]));
        if let Some(cwd) = &c.cwd {
            fields.push((format!("commands.{}.cwd", c.name), cwd, o.clone(), &[]));
        }
        for probe in &c.readiness {
            let (what, text) = match &probe.kind {
                ProbeKind::Http(t) => ("http", t),
                ProbeKind::Tcp(t) => ("tcp", t),
                ProbeKind::Log(t) => ("log", t),
                ProbeKind::Exec(t) => ("exec", t),
            };
            let field = format!("commands.{}.readiness ({what})", c.name);
            fields.push((field, text, o.clone(), &[]));
        }
    }
    if let Some(cp) = &eff.checkpoint {
        let o = &cp.origin;
        fields.push((
            "checkpoint.save".into(),
            &cp.value.save,
            o.clone(),
            CHECKPOINT_NAMES,
        ));
        fields.push((
            "checkpoint.restore".into(),
            &cp.value.restore,
            o.clone(),
            CHECKPOINT_NAMES,
        ));
    }
    fields
}

/// The first `${NAME}` of `text` that is neither known nor one of the field's own `extra`
/// names (no copy of the possibly large known set per field), or why `text` cannot be read.
fn only_known(text: &str, known: &BTreeSet<String>, extra: &[&str]) -> Result<(), SubstError> {
    let unknown = references(text)?
        .into_iter()
        .find(|n| !known.contains(n) && !extra.contains(&n.as_str()));
    match unknown {
        None => Ok(()),
        Some(name) => Err(SubstError::Unknown { name }),
    }
}

/// `provider.cwd` and each command's `cwd` that is no directory. Without variables the folder
/// is known now; with them, only at run time.
fn missing_cwds(eff: &EffectiveConfig, root: &Path) -> Vec<LayerProblem> {
    let mut problems = Vec::new();
    if let Some(cwd) = &eff.provider.cwd.value {
        if !cwd.contains("${") && !root.join(cwd).is_dir() {
            problems.push(LayerProblem {
                message: format!(
                    "provider.cwd: `{cwd}` is not a directory (relative paths start at the project root {})",
                    root.display()
                ),
                origin: eff.provider.cwd.origin.clone(),
            });
        }
    }
    for c in eff.commands.values() {
        if let Some(cwd) = &c.cwd {
            if !cwd.contains("${") && !root.join(cwd).is_dir() {
                problems.push(LayerProblem {
                    message: format!(
                        "commands.{}.cwd: `{cwd}` is not a directory under the project root",
                        c.name
                    ),
                    origin: c.origin.clone(),
                });
            }
        }
    }
    problems
}

/// Assets, checkpoints and `--from-checkpoint` against one root test's plan.
pub(super) fn check_plan(
    eff: &EffectiveConfig,
    plan: &[PlannedStep],
    root: &Path,
    test: &Path,
    options: &RunOptions,
    files: &TestFiles,
    problems: &mut Problems,
) {
    let mut seen: BTreeMap<&str, StepId> = BTreeMap::new();
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
pub(super) fn step_problem(
    root: &Path,
    files: &TestFiles,
    s: &PlannedStep,
    message: String,
) -> Problem {
    let file = root.join(&s.source_file);
    Problem::at(&file, files.text(&file), s.source_span.clone(), message)
}

pub(super) fn layer_problem_to_problem(
    lp: LayerProblem,
    texts: &BTreeMap<PathBuf, String>,
) -> Problem {
    match lp.origin {
        Some(o) => match texts.get(&o.file) {
            Some(text) => Problem::at(&o.file, text, o.span, lp.message),
            None => Problem::in_file(&o.file, lp.message),
        },
        None => Problem::new(lp.message),
    }
}

pub(super) fn push_layer_problems(
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
pub(super) fn finish(problems: Problems, cwd: &Path) -> Problems {
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

/// A substitution error in words, with "did you mean" for an unknown `${NAME}` close to a known
/// one (`${APP_PRT}` → `APP_PORT`).
fn with_hint(e: &SubstError, known: &BTreeSet<String>) -> String {
    match e {
        SubstError::Unknown { name } => {
            let names: Vec<&str> = known.iter().map(String::as_str).collect();
            match crate::model::diagnostics::did_you_mean(name, &names) {
                Some(hint) => format!("{e} ({hint})"),
                None => e.to_string(),
            }
        }
        other => other.to_string(),
    }
}
