//! The files that changed in the project's git repository against a revision, for
//! `--only-changed[=REF]` and `-E 'changed(REF)'` (docs/cli.md): the working tree against REF
//! (`git diff`, staged and unstaged alike) and every untracked file that is not ignored. Short,
//! read-only git queries, as `revision.rs` makes them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Why the changed files could not be known: each names what to do (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChangedError {
    #[error("{root} is not inside a git repository, so nothing can be said to have changed")]
    NoRepository { root: String },
    #[error("git could not be run: {reason}")]
    NoGit { reason: String },
    #[error("the revision `{rev}` is not in this clone{shallow}")]
    UnknownRevision { rev: String, shallow: &'static str },
    #[error("`git {args}` failed: {stderr}")]
    Failed { args: String, stderr: String },
}

impl ChangedError {
    /// What to do about it, for the problem's help line.
    pub fn help(&self) -> Option<String> {
        match self {
            ChangedError::UnknownRevision { rev, .. } => Some(format!(
                "fetch it first (`git fetch origin {rev}`, or `fetch-depth: 0` in actions/checkout), or name a revision the clone has"
            )),
            ChangedError::NoRepository { .. } => {
                Some("run from a git checkout of the project, or select without --only-changed / changed()".to_string())
            }
            _ => None,
        }
    }
}

/// Every file (absolute) that differs between the working tree and `rev`, untracked ones
/// included.
pub fn changed_files(root: &Path, rev: &str) -> Result<BTreeSet<PathBuf>, ChangedError> {
    let top = git(root, &["rev-parse", "--show-toplevel"]).map_err(|e| match e {
        ChangedError::Failed { .. } => ChangedError::NoRepository {
            root: root.display().to_string(),
        },
        other => other,
    })?;
    let top = PathBuf::from(top.trim_end_matches(['\n', '\r']));
    let commit = format!("{rev}^{{commit}}");
    if git(root, &["rev-parse", "--verify", "--quiet", &commit]).is_err() {
        let shallow = git(root, &["rev-parse", "--is-shallow-repository"])
            .is_ok_and(|out| out.trim() == "true");
        return Err(ChangedError::UnknownRevision {
            rev: rev.to_string(),
            shallow: if shallow {
                " (it is a shallow clone: the history stops before it)"
            } else {
                ""
            },
        });
    }
    // `--` ends the revisions: a rev is never read as a path, nor a path as an option.
    let diffed = git(
        &top,
        &["diff", "--name-only", "-z", "--no-renames", rev, "--"],
    )?;
    let untracked = git(&top, &["ls-files", "-z", "--others", "--exclude-standard"])?;
    Ok(diffed
        .split('\0')
        .chain(untracked.split('\0'))
        .filter(|name| !name.is_empty())
        .map(|name| top.join(name))
        .collect())
}

/// git's stdout in `dir`; its stderr in the error. The index is not locked
/// (`GIT_OPTIONAL_LOCKS=0`), and GIT_DIR / GIT_WORK_TREE are not passed on: the project's own
/// repository is the one asked.
fn git(dir: &Path, args: &[&str]) -> Result<String, ChangedError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| ChangedError::NoGit {
            reason: e.to_string(),
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(ChangedError::Failed {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}
