//! `supervisor clean`: old suites pruned with their runs and kept workspaces.

use super::{artifact_dir_of, Exit};
use crate::report::store::artifact_dir;
use std::path::PathBuf;

/// Prune to the newest suites holding at most `keep` runs, or those younger than `older_than`
/// days; with neither, to `[supervisor] keep_runs`. Exit 1 when something could not be removed.
pub fn clean(keep: Option<usize>, older_than: Option<u64>, config: Option<PathBuf>) -> Exit {
    let (dir, keep_runs) = match artifact_dir_of(config) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::USAGE;
        }
    };
    let keep = match (keep, older_than) {
        (None, None) => Some(keep_runs),
        (keep, _) => keep,
    };
    let age = older_than
        .map(|d| chrono::Duration::days(i64::try_from(d).unwrap_or(i64::MAX / 86_400_000)));
    let pruned = artifact_dir::prune(&dir, keep, age, &[]);
    for p in &pruned.problems {
        eprintln!("warning: {p}");
    }
    println!(
        "removed {} suite(s), {} run(s), {} workspace(s) from {}",
        pruned.suites.len(),
        pruned.runs,
        pruned.workspaces,
        dir.display()
    );
    if pruned.problems.is_empty() {
        Exit::SUCCESS
    } else {
        Exit::FAILED
    }
}
