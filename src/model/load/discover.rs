//! Finding the root tests: the PATH arguments or `[supervisor] tests` globs, walked under the project
//! root (hidden folders, `.bugatti/`, `target/`, `node_modules/` skipped), sorted by path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::checks::layer_problem_to_problem;
use super::host::HostEnv;
use crate::model::diagnostics::{Problem, Problems};
use crate::model::discovery::{from_globs, resolve_arg, walk_test_files_noting};
use crate::model::layers::{EffectiveConfig, LayerProblem};
use crate::model::options::RunOptions;

/// Candidate root-test files (canonical, sorted, unique) and those named explicitly as files.
pub(super) fn discover(
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
        let (found, errors) = from_globs(project_root, &config.supervisor.tests.value, notes);
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

pub(super) fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}
