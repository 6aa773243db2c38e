//! The code a suite ran against (docs/ci.md, "Stability classes and repeats"): the git commit of
//! the project root and whether its tracked files differed from it. Both `None` when git is absent
//! or the project root is in no repository, so a suite outside git still runs and records `null`.
//! "Passed and failed on the same commit" is only known from these.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

/// The commit and the dirty flag, as summary.json and history.jsonl record them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Revision {
    /// `git rev-parse HEAD` in the project root; `null` without git or a repository (or before
    /// the first commit).
    pub commit: Option<String>,
    /// Tracked files under the project root differed from the commit (`git status
    /// --untracked-files=no`); untracked files, such as the artifact directory, do not count.
    pub dirty: Option<bool>,
}

impl Revision {
    /// Asks git about `root`. Never fails: what git cannot say is `None`.
    pub fn of(root: &Path) -> Self {
        // Outside every repository there is nothing to ask: starting git costs a one-test suite
        // more CPU than its step (git finds a repository the same way, by these names).
        if !in_a_repository(root) {
            return Self::default();
        }
        let commit = git(root, &["rev-parse", "--verify", "--quiet", "HEAD"])
            .map(|out| out.trim().to_string())
            .filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_hexdigit()));
        let dirty = commit.as_ref().and_then(|_| {
            git(
                root,
                &["status", "--porcelain", "--untracked-files=no", "--", "."],
            )
            .map(|out| !out.trim().is_empty())
        });
        Revision { commit, dirty }
    }

    /// `1a2b3c4d` or `1a2b3c4d (dirty)`; `None` outside a repository.
    pub fn describe(&self) -> Option<String> {
        let commit = self.commit.as_deref()?;
        let short = commit.get(..12).unwrap_or(commit);
        Some(if self.dirty == Some(true) {
            format!("{short} (dirty)")
        } else {
            short.to_string()
        })
    }
}

/// A [`Revision`] being asked of git on a thread of its own, joined when the suite's summary is
/// written: git takes milliseconds to start, which a one-test suite would otherwise wait for
/// before its first step.
#[derive(Clone, Default)]
pub struct PendingRevision(Arc<Mutex<RevisionLookup>>);

#[derive(Default)]
enum RevisionLookup {
    #[default]
    Unknown,
    Known(Revision),
    Asking(std::thread::JoinHandle<Revision>),
}

impl PendingRevision {
    /// Starts asking git about `root`; a thread that cannot start asks now.
    pub fn ask(root: &Path) -> Self {
        let owned = root.to_path_buf();
        let pending = match std::thread::Builder::new()
            .name("git-revision".into())
            .spawn(move || Revision::of(&owned))
        {
            Ok(thread) => RevisionLookup::Asking(thread),
            Err(_) => RevisionLookup::Known(Revision::of(root)),
        };
        Self(Arc::new(Mutex::new(pending)))
    }

    /// An answer already known.
    pub fn known(revision: Revision) -> Self {
        Self(Arc::new(Mutex::new(RevisionLookup::Known(revision))))
    }

    /// The answer, waiting for git if it is still being asked; what git could not say is `None`.
    pub fn get(&self) -> Revision {
        let mut pending = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let revision = match std::mem::take(&mut *pending) {
            RevisionLookup::Unknown => Revision::default(),
            RevisionLookup::Known(revision) => revision,
            RevisionLookup::Asking(thread) => thread.join().unwrap_or_default(),
        };
        *pending = RevisionLookup::Known(revision.clone());
        revision
    }
}

impl std::fmt::Debug for PendingRevision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PendingRevision")
    }
}

/// Whether `root` or a folder above it holds a repository as git discovers one (GIT_DIR is not
/// passed on, see [`git`]): a `.git` folder or file (a worktree, a submodule), or the folder
/// itself is a bare repository (`HEAD`, `objects/`, `refs/`). When unsure (the path cannot be
/// made absolute), yes: git is asked.
fn in_a_repository(root: &Path) -> bool {
    let Ok(root) = std::path::absolute(root) else {
        return true;
    };
    root.ancestors().any(|dir| {
        dir.join(".git").symlink_metadata().is_ok()
            || (dir.join("HEAD").is_file()
                && dir.join("objects").is_dir()
                && dir.join("refs").is_dir())
    })
}

/// git's stdout, when it ran and succeeded. The index is not locked (`GIT_OPTIONAL_LOCKS=0`):
/// a status taken while the user commits must not get in their way.
fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_is_seen_from_below_its_root_and_nothing_from_outside() {
        let dir = tempfile::tempdir().expect("tmp");
        let below = dir.path().join("project/sub");
        std::fs::create_dir_all(&below).expect("mkdir");
        if in_a_repository(dir.path()) {
            // The temp dir sits inside a repository on this machine: nothing to check.
            return;
        }
        assert!(!in_a_repository(&below));
        // A worktree's or submodule's `.git` is a file.
        std::fs::write(dir.path().join("project/.git"), "gitdir: elsewhere\n").expect("write");
        assert!(in_a_repository(&below));
        // A bare repository.
        let bare = dir.path().join("bare.git");
        for sub in ["objects", "refs"] {
            std::fs::create_dir_all(bare.join(sub)).expect("mkdir");
        }
        std::fs::write(bare.join("HEAD"), "ref: refs/heads/main\n").expect("write");
        assert!(in_a_repository(&bare.join("refs")));
    }

    #[test]
    fn outside_a_repository_both_are_none() {
        let dir = tempfile::tempdir().expect("tmp");
        // A ceiling stops git from finding a repository above the temp dir.
        let r = Revision::of(dir.path());
        if r.commit.is_some() {
            // The temp dir sits inside a repository on this machine: nothing to check.
            return;
        }
        assert_eq!(r, Revision::default());
        assert_eq!(r.describe(), None);
    }
}
