//! Loading a suite: config layers, discovery, test files, plans, and every check that must pass
//! before anything runs (unknown `${NAME}`, missing assets, checkpoints, `--skip-cmd` names).
//! Collects every problem rather than stopping at the first.

mod checks;
mod discover;
mod host;
mod select;

pub use host::HostEnv;

use checks::*;
use discover::*;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::config::parse_config_lenient;
use super::diagnostics::{Problem, Problems};
use super::layers::{EffectiveConfig, Layer, LayerProblem};
use super::options::{NoTests, RunOptions};
use super::paths::{normalize, relative_to};
use super::plan::{expand, PlannedStep, TestFiles};
use super::shard::ShardBy;
use super::test_file::test_name;

pub const CONFIG_FILE_NAME: &str = "bugatti.config.toml";

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
    /// `quarantine = true` in the file, or a match of `[supervisor] quarantine`: run and
    /// reported, never deciding the exit code (see docs/ci.md).
    pub quarantined: bool,
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
    /// Why the selection holds no root test, under `--no-tests pass` / `warn` (under `fail`,
    /// the default, it is a problem: exit 2). An empty shard of a selection is not this.
    pub no_tests: Option<String>,
    /// Where history is read and written (`--history FILE`, else `<artifact_dir>/history.jsonl`).
    pub history_file: PathBuf,
    /// With `--shard`: how the split was made (recorded in the suite's summary).
    pub shard: Option<crate::model::shard::ShardInfo>,
    /// With `[supervisor] max_cost_usd`: each root test's recent cost per attempt from history,
    /// what the suite's budget reserves for it while it runs.
    pub expected_costs: std::collections::BTreeMap<String, f64>,
}

impl RootTest {
    /// What `-E` and `--only-changed` read of it.
    fn view(&self) -> select::TestView<'_> {
        select::TestView {
            name: &self.name,
            path: &self.path,
            rel_path: &self.rel_path,
            tags: &self.tags,
            plan: &self.plan,
            effective: &self.effective,
        }
    }
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
        // Found whatever it is (a FIFO too): its reading then says why it cannot be used, instead
        // of the search going on past it to another project's config.
        .find(|p| std::fs::metadata(p).is_ok())
}

/// Load with the real process environment and working directory.
pub fn load_suite(options: &RunOptions) -> Result<Suite, Problems> {
    load_suite_with(options, &HostEnv::from_process())
}

/// Load, collecting every problem: where the project is, its config layers, the root tests
/// (discovered, filtered by `--tag` and `-g`, planned and checked, filtered by `-E` and
/// `--only-changed`, cut by `--shard`), then the project's `.mcp.json`.
pub fn load_suite_with(options: &RunOptions, host: &HostEnv) -> Result<Suite, Problems> {
    let mut found = Gathered::default();
    let fail = |found: Gathered| Err(finish(found.problems, &host.cwd));
    let Some((project_root, config_path)) = locate_project(options, host, &mut found.problems)
    else {
        return fail(found);
    };
    let global_config_path = host.global_config_path().filter(|p| p.is_file());
    let configs = [
        (global_config_path.as_deref(), Layer::Global),
        (config_path.as_deref(), Layer::Project),
    ];
    let Some((base, flagged)) = layered_config(options, host, &configs, &mut found) else {
        return fail(found);
    };
    check_base(options, &flagged, &project_root, &mut found);

    let mut files = TestFiles::default();
    let mut roots = root_tests(
        options,
        host,
        &project_root,
        &flagged,
        &mut files,
        &mut found,
    );
    let discovered = roots.len();
    // An empty selection is a problem unless `--no-tests` says otherwise (kept apart until then).
    let mut none_selected = None;
    if roots.is_empty() && found.problems.is_empty() {
        none_selected = Some(
            Problem::new(format!(
                "no root tests found under {}",
                project_root.display()
            ))
            .with_help("test files are named `*.test.toml`; files starting with `_` and `include_only = true` files are not root tests"),
        );
    }
    if !options.tags.is_empty() {
        roots.retain(|root| root.tags.iter().any(|t| options.tags.contains(t)));
        if roots.is_empty() && discovered > 0 {
            none_selected = Some(Problem::new(format!(
                "no root test carries any of the tags {}",
                options.tags.join(", ")
            )));
        }
    }
    if let Some(empty) = grep_roots(
        &flagged,
        &project_root,
        &mut roots,
        discovered,
        &mut found.problems,
    ) {
        none_selected = Some(empty);
    }
    let filter = select::parse_filter(options, &mut found.problems);
    if options.headed {
        check_display(host, &flagged, &mut found);
    }
    // docs/ci.md: history (`--history FILE`, else under the artifact directory).
    let history_file = match &options.history {
        Some(file) => normalize(&host.cwd.join(file)),
        None => super::artifacts::history_path(
            &project_root.join(&flagged.supervisor.artifact_dir.value),
        ),
    };

    let quarantine = quarantine_matchers(&base, &mut found.problems);
    let before_filter = roots.len();
    let mut tests: Vec<RootTest> = roots
        .into_iter()
        .map(|root| plan_root_test(options, &project_root, &base, root, &mut files, &mut found))
        .map(|mut test| {
            test.quarantined =
                test.quarantined || quarantine.iter().any(|g| g.is_match(&test.rel_path));
            test
        })
        .collect();
    let facts = select::Facts {
        project_root: &project_root,
        config_path: config_path.as_deref(),
        history_file: &history_file,
        before: before_filter,
    };
    match select::apply(options, filter, &facts, &mut tests, RootTest::view) {
        Ok(Some(empty)) => none_selected = Some(empty),
        Ok(None) => {}
        Err(problem) => found.problems.push(problem),
    }
    // The shard, of the selection: an empty shard of a selection that holds tests is a note.
    let shard = options
        .shard
        .map(|shard| cut_shard(options, shard, &history_file, &mut tests, &mut found.notes));
    let mut no_tests = None;
    if let Some(problem) = none_selected {
        match options.no_tests {
            NoTests::Fail => found.problems.push(problem),
            NoTests::Pass | NoTests::Warn => no_tests = Some(problem.message),
        }
    }
    found.problems.extend(std::mem::take(&mut files.problems));
    if !found.problems.is_empty() {
        return fail(found);
    }
    if let Err(problem) = check_mcp_json(&flagged, &project_root, &tests) {
        found.problems.push(problem);
        return fail(found);
    }
    let expected_costs = if flagged.supervisor.max_cost_usd.value.is_some() {
        crate::model::history::recent_costs(&crate::model::history::read(&history_file))
    } else {
        Default::default()
    };
    Ok(Suite {
        history_file,
        shard,
        expected_costs,
        project_root,
        config_path,
        global_config_path,
        notes: found.notes,
        base: flagged,
        tests,
        discovered,
        no_tests,
    })
}

/// What loading gathers as it goes: every problem, the text of each file read (problems are
/// shown with their line), and the one-line notes for the console.
#[derive(Default)]
struct Gathered {
    problems: Problems,
    texts: BTreeMap<PathBuf, String>,
    notes: Vec<String>,
}

/// A root test found by discovery, before it is planned.
struct Root {
    path: PathBuf,
    name: String,
    tags: Vec<String>,
}

/// `-g/--grep` and `--grep-invert` (as Playwright's `-g`/`-G`): a root test is kept when its name
/// or its file path (relative to the project root) matches `--grep`, and neither matches
/// `--grep-invert`. A pattern that is not a regex is a problem (exit 2). Some: the selection is
/// empty, and why.
fn grep_roots(
    flagged: &EffectiveConfig,
    project_root: &Path,
    roots: &mut Vec<Root>,
    discovered: usize,
    problems: &mut Problems,
) -> Option<Problem> {
    let compile = |flag: &str, pattern: &Option<String>, problems: &mut Problems| {
        let pattern = pattern.as_deref()?;
        match regex::Regex::new(pattern) {
            Ok(re) => Some(re),
            Err(e) => {
                problems.push(Problem::new(format!(
                    "{flag} `{pattern}` is not a regular expression: {e}"
                )));
                None
            }
        }
    };
    // The flag, else `[supervisor] grep` / `grep_invert`.
    let grep_at = &flagged.supervisor.grep.value;
    let invert_at = &flagged.supervisor.grep_invert.value;
    let grep = compile("--grep", grep_at, problems);
    let invert = compile("--grep-invert", invert_at, problems);
    if grep.is_none() && invert.is_none() {
        return None;
    }
    let matches = |re: &regex::Regex, root: &Root| {
        re.is_match(&root.name)
            || re.is_match(&relative_to(project_root, &root.path).to_string_lossy())
    };
    roots.retain(|root| {
        grep.as_ref().is_none_or(|re| matches(re, root))
            && invert.as_ref().is_none_or(|re| !matches(re, root))
    });
    if roots.is_empty() && discovered > 0 {
        let mut said = Vec::new();
        if let Some(g) = grep_at {
            said.push(format!("--grep `{g}`"));
        }
        if let Some(g) = invert_at {
            said.push(format!("--grep-invert `{g}`"));
        }
        return Some(
            Problem::new(format!(
                "no root test is selected by {} (of {discovered} discovered)",
                said.join(" and ")
            ))
            .with_help("the patterns are regular expressions over each test's name and its file path; `supervisor list` shows what a selection holds"),
        );
    }
    None
}

/// `--headed` shows a window: without a display (DISPLAY or WAYLAND_DISPLAY) the browser could
/// not start, so it is said before anything runs; with no `[browser]` there is nothing to show.
fn check_display(host: &HostEnv, flagged: &EffectiveConfig, found: &mut Gathered) {
    let has = |name: &str| host.var(name).is_some_and(|v| !v.is_empty());
    if !has("DISPLAY") && !has("WAYLAND_DISPLAY") {
        found.problems.push(
            Problem::new(
                "--headed needs a display, and neither DISPLAY nor WAYLAND_DISPLAY is set",
            )
            .with_help("run without --headed (headless), or under a desktop session or `xvfb-run`"),
        );
    } else if flagged.browser.is_none() {
        found.notes.push(
            "--headed: the config has no [browser]; the sessions start no browser".to_string(),
        );
    }
}

/// The project root and its config file: `--config`, else (like cargo and git) the nearest
/// config in the current directory or a parent, else the current directory with none. `None`
/// when `--config` names no file.
fn locate_project(
    options: &RunOptions,
    host: &HostEnv,
    problems: &mut Problems,
) -> Option<(PathBuf, Option<PathBuf>)> {
    let (project_root, config_path) = match &options.config {
        Some(c) => {
            let abs = normalize(&host.cwd.join(c));
            if !abs.is_file() {
                problems.push(Problem::new(format!(
                    "config file {} does not exist",
                    abs.display()
                )));
                return None;
            }
            let root = abs.parent().unwrap_or(&host.cwd).to_path_buf();
            (root, Some(abs))
        }
        None => match find_config_upward(&host.cwd) {
            Some(p) => (p.parent().unwrap_or(&host.cwd).to_path_buf(), Some(p)),
            None => (host.cwd.clone(), None),
        },
    };
    Some((
        project_root.canonicalize().unwrap_or(project_root),
        config_path,
    ))
}

/// The config files (global, then project) over the defaults, then the environment: the base
/// every test starts from; and that base with the flags, validated (`flagged`). `None` when a
/// config is not TOML (or its problems could not be got past): every later check would be noise.
fn layered_config(
    options: &RunOptions,
    host: &HostEnv,
    configs: &[(Option<&Path>, Layer)],
    found: &mut Gathered,
) -> Option<(EffectiveConfig, EffectiveConfig)> {
    let env = |name: &str| host.var(name);
    let mut base = EffectiveConfig::default();
    let mut unreadable = false;
    let mut layer_problems: Vec<LayerProblem> = Vec::new();
    for (path, layer) in configs {
        let Some(path) = path else { continue };
        // A FIFO, a device or a huge file named as the config: refused at once (docs/config.md).
        let text = match crate::model::user_file::read_to_string(
            path,
            crate::model::user_file::CONFIG_MAX,
        ) {
            Ok(text) => text,
            Err(e) => {
                let why = format!("cannot read config: {}", e.reason());
                found.problems.push(Problem::in_file(path, why));
                continue;
            }
        };
        let (config, problems) = parse_config_lenient(path, &text);
        found.texts.insert(path.to_path_buf(), text);
        problems.into_iter().for_each(|p| found.problems.push(p));
        match config {
            Some(cfg) => layer_problems.extend(base.apply_file(&cfg, path, *layer, &env)),
            None => unreadable = true,
        }
    }
    if unreadable {
        // One with wrong values was read without them, and checking goes on.
        return None;
    }
    let unread_values = found.problems.0.len();
    layer_problems.extend(base.apply_env(&env));
    let mut flagged = base.clone();
    layer_problems.extend(flagged.apply_flags(options));
    layer_problems.extend(flagged.validate());
    push_layer_problems(&mut found.problems, layer_problems, &found.texts);
    drop_follow_ons(&mut found.problems, unread_values, &found.texts);
    Some((base, flagged))
}

/// The checks of the flagged base config: the `--skip-*` flags, and the names it uses (the base
/// is what suite-scoped commands run with, whatever tests are selected).
fn check_base(
    options: &RunOptions,
    flagged: &EffectiveConfig,
    project_root: &Path,
    found: &mut Gathered,
) {
    check_skip_flags(options, flagged, &mut found.problems);
    check_skipped_readiness(options, flagged, &mut found.problems);
    let mut base_lps = Vec::new();
    check_names(
        flagged,
        &[],
        project_root,
        &TestFiles::default(),
        &mut base_lps,
        &mut found.problems,
    );
    push_layer_problems(&mut found.problems, base_lps, &found.texts);
}

/// The root tests among the discovered candidates, parsed; an `include_only` file named on the
/// command line is a problem, one found by a folder or glob is left out quietly.
fn root_tests(
    options: &RunOptions,
    host: &HostEnv,
    project_root: &Path,
    flagged: &EffectiveConfig,
    files: &mut TestFiles,
    found: &mut Gathered,
) -> Vec<Root> {
    let (candidates, explicit) = discover(
        options,
        host,
        project_root,
        flagged,
        &found.texts,
        &mut found.problems,
        &mut found.notes,
    );
    let mut roots = Vec::new();
    for path in &candidates {
        let Some(test) = files.get(path) else {
            continue;
        };
        if test.include_only {
            if explicit.contains(path) {
                found.problems.push(Problem::in_file(
                    path,
                    "this file has `include_only = true`: it can only be included, not run as a root test",
                ));
            }
            continue;
        }
        roots.push(Root {
            path: path.clone(),
            name: test_name(test, path),
            tags: test.tags.clone(),
        });
    }
    roots
}

/// `--shard K/N`: keeps this shard's share of `roots`, split by count or by the durations in
/// history (by count when history has unreadable lines), and says so in `notes`.
fn cut_shard(
    options: &RunOptions,
    shard: super::options::Shard,
    history_file: &Path,
    roots: &mut Vec<RootTest>,
    notes: &mut Vec<String>,
) -> crate::model::shard::ShardInfo {
    let names: Vec<String> = roots
        .iter()
        .map(|test| test.rel_path.to_string_lossy().into_owned())
        .collect();
    let (recent, unreadable) = crate::model::history::recent_durations_in(history_file);
    let durations: std::collections::BTreeMap<String, u64> = recent
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
    *roots = std::mem::take(roots)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| mine.contains(i))
        .map(|(_, root)| root)
        .collect();
    if roots.is_empty() {
        notes.push(format!("shard {shard} holds no root tests"));
    }
    crate::model::shard::ShardInfo {
        shard: shard.to_string(),
        by,
        digest: crate::model::shard::digest(&names, shard.count, by, &durations),
        paths: options.paths.clone(),
        tags: options.tags.clone(),
        grep: options.grep.clone(),
        grep_invert: options.grep_invert.clone(),
        filter: options.filter.clone(),
        only_changed: options.only_changed.clone(),
        split: crate::model::shard::owners(&names, shard.count, by, &durations),
    }
}

/// One root test: its plan expanded, the base config with its overrides and the flags, and the
/// checks of its names, plan and assets.
fn plan_root_test(
    options: &RunOptions,
    project_root: &Path,
    base: &EffectiveConfig,
    root: Root,
    files: &mut TestFiles,
    found: &mut Gathered,
) -> RootTest {
    let Root { path, name, tags } = root;
    let (mut plan, plan_problems) = expand(project_root, &path, files);
    found.problems.extend(plan_problems);
    let mut effective = base.clone();
    let mut lps = Vec::new();
    let text = files.text(&path).to_string();
    found.texts.insert(path.clone(), text);
    if let Some(test) = files.get(&path) {
        lps.extend(effective.apply_test_overrides(
            &test.overrides.provider,
            &test.overrides.commands,
            &path,
        ));
        if let Some(retries) = &test.retries {
            lps.extend(effective.apply_retries(retries, Layer::Test));
        }
    }
    lps.extend(effective.apply_flags(options));
    lps.extend(effective.validate());
    for step in &mut plan {
        step.timeout = effective.provider.step_timeout(step.timeout_secs);
    }
    check_names(
        &effective,
        &plan,
        project_root,
        files,
        &mut lps,
        &mut found.problems,
    );
    push_layer_problems(&mut found.problems, lps, &found.texts);
    check_plan(
        &effective,
        &plan,
        project_root,
        &path,
        options,
        files,
        &mut found.problems,
    );
    let quarantined = files.get(&path).is_some_and(|t| t.quarantine);
    RootTest {
        rel_path: relative_to(project_root, &path),
        path,
        name,
        tags,
        plan,
        effective,
        quarantined,
    }
}

/// `[supervisor] quarantine`: globs relative to the project root.
fn quarantine_matchers(
    base: &EffectiveConfig,
    problems: &mut Problems,
) -> Vec<globset::GlobMatcher> {
    let mut quarantine = Vec::new();
    for glob in &base.supervisor.quarantine.value {
        match crate::model::discovery::glob_matcher(glob) {
            Ok(m) => quarantine.push(m),
            Err(e) => problems.push(Problem::new(format!("[supervisor] quarantine: {e}"))),
        }
    }
    quarantine
}

/// docs/browser.md: the project's own `.mcp.json` (read by the agent's working directory) must not name
/// the supervisor's servers; refused here, before anything runs.
fn check_mcp_json(
    flagged: &EffectiveConfig,
    project_root: &Path,
    tests: &[RootTest],
) -> Result<(), Problem> {
    let agent_cwd = match flagged.provider.cwd.value.as_deref() {
        Some(dir) => project_root.join(dir),
        None => project_root.to_path_buf(),
    };
    let reserved: &[&str] = if flagged.browser.is_some() {
        &["bugatti", "browser"]
    } else {
        &["bugatti"]
    };
    let reads_mcp_json = tests.iter().any(|t| {
        t.effective
            .provider
            .name
            .value
            .info()
            .mcp
            .reads_project_mcp_json()
    });
    match (
        reads_mcp_json,
        crate::model::mcp_json::read(&agent_cwd, reserved),
    ) {
        (true, Err(e)) => Err(Problem::new(e.to_string())),
        _ => Ok(()),
    }
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
