//! Loading a suite: config layers, discovery, test files, plans, and every check that must pass
//! before anything runs (unknown `${NAME}`, missing assets, checkpoints, `--skip-cmd` names).
//! Collects every problem rather than stopping at the first.

mod checks;
mod discover;

use checks::*;
use discover::*;

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
use super::shard::ShardBy;
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
    /// Where history is read and written (`--history FILE`, else `<artifact_dir>/history.jsonl`).
    pub history_file: PathBuf,
    /// With `--shard`: how the split was made (recorded in the suite's summary).
    pub shard: Option<crate::model::shard::ShardInfo>,
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
    let unread_values = problems.0.len();
    layer_problems.extend(base.apply_env(&env));
    let mut flagged = base.clone();
    layer_problems.extend(flagged.apply_flags(options));
    layer_problems.extend(flagged.validate());
    push_layer_problems(&mut problems, layer_problems, &texts);
    drop_follow_ons(&mut problems, unread_values, &texts);

    check_skip_flags(options, &flagged, &mut problems);
    check_skipped_readiness(options, &flagged, &mut problems);
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
    // SPEC §12: history (`--history FILE`, else under the artifact directory) and the shard.
    let history_file = match &options.history {
        Some(file) => normalize(&host.cwd.join(file)),
        None => project_root
            .join(&flagged.supervisor.artifact_dir.value)
            .join("history.jsonl"),
    };
    let mut shard_info = None;
    if let Some(shard) = options.shard {
        let names: Vec<String> = roots
            .iter()
            .map(|(path, _, _)| {
                relative_to(&project_root, path)
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        let (entries, unreadable) = crate::model::history::read_checked(&history_file);
        let durations: std::collections::BTreeMap<String, u64> =
            crate::model::history::recent_durations(&entries)
                .into_iter()
                .filter(|(test, _)| names.contains(test))
                .collect();
        let by = if !unreadable.is_empty() {
            notes.push(format!(
                "history has {} unreadable line{} ({}): shards split by count",
                unreadable.len(),
                if unreadable.len() == 1 { "" } else { "s" },
                unreadable[0]
            ));
            ShardBy::Count
        } else {
            match options.shard_by {
                Some(by) => by,
                None if durations.is_empty() => ShardBy::Count,
                None => ShardBy::Duration,
            }
        };
        let mine = crate::model::shard::split(&names, shard, by, &durations);
        shard_info = Some(crate::model::shard::ShardInfo {
            shard: shard.to_string(),
            by,
            digest: crate::model::shard::digest(&names, shard.count, by, &durations),
            paths: options.paths.clone(),
            tags: options.tags.clone(),
        });
        notes.push(format!(
            "shard {shard} by {by}: {} of {} root tests{}",
            mine.len(),
            names.len(),
            if by == ShardBy::Duration {
                format!(
                    " (durations from {}, {} of them known)",
                    history_file.display(),
                    durations.len()
                )
            } else {
                String::new()
            }
        ));
        roots = roots
            .into_iter()
            .enumerate()
            .filter(|(i, _)| mine.contains(i))
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
    // SPEC §11: the project's own `.mcp.json` (read by the agent's working directory) must not
    // name the supervisor's servers; refused here, before anything runs.
    let agent_cwd = match flagged.provider.cwd.value.as_deref() {
        Some(dir) => project_root.join(dir),
        None => project_root.clone(),
    };
    let reserved: &[&str] = if flagged.browser.is_some() {
        &["bugatti", "browser"]
    } else {
        &["bugatti"]
    };
    let claude = tests.iter().any(|t| {
        t.effective.provider.name.value == crate::model::provider::ProviderKind::ClaudeCode
    });
    if let (true, Err(e)) = (claude, crate::model::mcp_json::read(&agent_cwd, reserved)) {
        return Err(finish(
            Problems(vec![Problem::new(e.to_string())]),
            &host.cwd,
        ));
    }
    Ok(Suite {
        history_file,
        shard: shard_info,
        project_root,
        config_path,
        global_config_path,
        notes,
        base: flagged,
        tests,
        discovered,
    })
}

#[cfg(test)]
mod tests;

/// A value the config reader could not read (`kind = "long-lived"`) is left out so the rest can
/// be checked in one pass; the table it sat in then looks incomplete (`needs kind`). One mistake
/// is one error: a complaint about a whole table (placed on its header line) is dropped when one
/// of the first `unread` problems — the values that could not be read — lies inside that table.
fn drop_follow_ons(problems: &mut Problems, unread: usize, texts: &BTreeMap<PathBuf, String>) {
    let spots: Vec<(PathBuf, usize)> = problems.0[..unread.min(problems.0.len())]
        .iter()
        .filter_map(|p| p.location.as_ref().map(|l| (l.file.clone(), l.line)))
        .collect();
    if spots.is_empty() {
        return;
    }
    let mut index = 0;
    problems.0.retain(|p| {
        index += 1;
        if index <= unread {
            return true;
        }
        let Some(at) = p.location.as_ref() else {
            return true;
        };
        let Some(text) = texts.get(&at.file) else {
            return true;
        };
        let lines: Vec<&str> = text.lines().collect();
        let is_header = |n: usize| {
            lines
                .get(n.wrapping_sub(1))
                .is_some_and(|l| l.trim_start().starts_with('['))
        };
        if !is_header(at.line) {
            return true;
        }
        let table_end = (at.line + 1..=lines.len())
            .find(|n| is_header(*n))
            .unwrap_or(lines.len() + 1);
        !spots
            .iter()
            .any(|(file, line)| *file == at.file && *line > at.line && *line < table_end)
    });
}
