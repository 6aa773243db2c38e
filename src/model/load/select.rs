//! `-E, --filter EXPR` and `--only-changed[=REF]` applied to the planned root tests (docs/cli.md):
//! the facts each needs gathered once (the previous whole suite and the classes from history,
//! the changed files from git), then every test asked. Before the shard is cut, so that shards
//! split the filtered selection.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::model::diagnostics::{Problem, Problems};
use crate::model::filter::{self, Expr, Subject};
use crate::model::history::{self, StabilityClass};
use crate::model::layers::EffectiveConfig;
use crate::model::options::RunOptions;
use crate::model::plan::PlannedStep;
use crate::model::provider::ProviderKind;

/// The path the caret of a filter's parse error names: the flag, not a file.
const FILTER_FLAG: &str = "-E";

/// The `-E` expression, or a problem pointing at its column.
pub(super) fn parse_filter(options: &RunOptions, problems: &mut Problems) -> Option<Expr> {
    let text = options.filter.as_deref()?;
    match filter::parse(text) {
        Ok(expr) => Some(expr),
        Err(e) => {
            problems.push(
                Problem::at(
                    Path::new(FILTER_FLAG),
                    text,
                    e.span,
                    format!("-E: {}", e.message),
                )
                .with_help("filter expressions: docs/cli.md, \"Filter expressions\""),
            );
            None
        }
    }
}

/// A root test as selection reads it (the loader's `RootTest`, lent field by field).
pub(super) struct TestView<'a> {
    pub name: &'a str,
    /// Absolute.
    pub path: &'a Path,
    /// Relative to the project root.
    pub rel_path: &'a Path,
    pub tags: &'a [String],
    pub plan: &'a [PlannedStep],
    pub effective: &'a EffectiveConfig,
}

/// What selection by `-E` / `--only-changed` needs beside the tests themselves.
pub(super) struct Facts<'a> {
    pub project_root: &'a Path,
    pub config_path: Option<&'a Path>,
    pub history_file: &'a Path,
    /// How many root tests `--tag` and `-g` left, for the message of an empty selection.
    pub before: usize,
}

/// Keeps the tests `expr` and `--only-changed` select. Ok(None): nothing to filter, or some
/// tests are left; Ok(Some(problem)): the selection is empty (what `--no-tests` decides about);
/// Err: the facts could not be had (git).
pub(super) fn apply<T>(
    options: &RunOptions,
    expr: Option<Expr>,
    facts: &Facts<'_>,
    tests: &mut Vec<T>,
    view: impl Fn(&T) -> TestView<'_>,
) -> Result<Option<Problem>, Problem> {
    let changed_since = options
        .only_changed
        .as_ref()
        .map(|rev| Expr::Changed(rev.clone()));
    let expr = match (expr, changed_since) {
        (None, None) => return Ok(None),
        (Some(e), None) | (None, Some(e)) => e,
        (Some(e), Some(c)) => Expr::And(Box::new(e), Box::new(c)),
    };
    let entries = history::read(facts.history_file);
    let failed: BTreeSet<String> = history::previous_whole(&entries)
        .map(|e| e.not_passed().into_iter().collect())
        .unwrap_or_default();
    let classes = history::latest_classes(&entries);
    let mut changed = BTreeMap::new();
    for rev in expr.revisions() {
        let files =
            crate::model::changed::changed_files(facts.project_root, &rev).map_err(|e| {
                let flag = if options.only_changed.as_ref() == Some(&rev) {
                    "--only-changed"
                } else {
                    "-E changed()"
                };
                let problem = Problem::new(format!("{flag}: {e}"));
                match e.help() {
                    Some(help) => problem.with_help(help),
                    None => problem,
                }
            })?;
        changed.insert(rev, files);
    }
    let config = facts
        .config_path
        .map(|c| c.canonicalize().unwrap_or_else(|_| c.to_path_buf()));
    tests.retain(|test| {
        let subject = Candidate::of(view(test), facts.project_root, config.as_deref(), &changed)
            .with_history(&failed, &classes);
        expr.matches(&subject)
    });
    if !tests.is_empty() || facts.before == 0 {
        return Ok(None);
    }
    let mut said = Vec::new();
    if let Some(e) = &options.filter {
        said.push(format!("-E `{e}`"));
    }
    if let Some(rev) = &options.only_changed {
        said.push(format!("--only-changed={rev}"));
    }
    Ok(Some(
        Problem::new(format!(
            "no root test is selected by {} (of {})",
            said.join(" and "),
            facts.before
        ))
        .with_help("`supervisor list` shows what a selection holds; `--no-tests pass` makes an empty selection a success"),
    ))
}

/// One root test as a filter sees it.
struct Candidate<'a> {
    test: TestView<'a>,
    path: String,
    /// Every file whose change changes the test: its file and includes, the config, its
    /// recording; and the asset folders beside each of them (`asset_dirs`).
    files: Vec<PathBuf>,
    asset_dirs: Vec<PathBuf>,
    changed: &'a BTreeMap<String, BTreeSet<PathBuf>>,
    failed: bool,
    class: Option<StabilityClass>,
}

impl<'a> Candidate<'a> {
    fn of(
        test: TestView<'a>,
        project_root: &Path,
        config: Option<&Path>,
        changed: &'a BTreeMap<String, BTreeSet<PathBuf>>,
    ) -> Self {
        let path = test.rel_path.to_string_lossy().replace('\\', "/");
        let mut sources: Vec<PathBuf> = vec![test.path.to_path_buf()];
        for step in test.plan {
            let source = project_root.join(&step.source_file);
            if !sources.contains(&source) {
                sources.push(source);
            }
        }
        let asset_dirs = sources
            .iter()
            .map(|s| crate::model::assets::asset_dir(s))
            .collect();
        let mut files = sources;
        files.extend(config.map(Path::to_path_buf));
        files.push(crate::model::artifacts::recording_path(
            &test.effective.replay.dir_in(project_root),
            test.rel_path,
        ));
        Candidate {
            test,
            path,
            files,
            asset_dirs,
            changed,
            failed: false,
            class: None,
        }
    }

    fn with_history(
        mut self,
        failed: &BTreeSet<String>,
        classes: &BTreeMap<String, StabilityClass>,
    ) -> Self {
        self.failed = failed.contains(&self.path);
        self.class = classes.get(&self.path).copied();
        self
    }
}

impl Subject for Candidate<'_> {
    fn name(&self) -> &str {
        self.test.name
    }
    fn path(&self) -> &str {
        &self.path
    }
    fn tags(&self) -> &[String] {
        self.test.tags
    }
    fn provider(&self) -> ProviderKind {
        self.test.effective.provider.name.value
    }
    fn class(&self) -> Option<StabilityClass> {
        self.class
    }
    fn failed_last(&self) -> bool {
        self.failed
    }
    fn changed(&self, rev: &str) -> bool {
        let Some(changed) = self.changed.get(rev) else {
            return false;
        };
        self.files.iter().any(|f| changed.contains(f))
            || changed
                .iter()
                .any(|f| self.asset_dirs.iter().any(|dir| f.starts_with(dir)))
    }
}
