//! That a file or folder the supervisor is to write can be written, checked before anything runs
//! (`--junit`, `--json`, `--html`, `--history`, the artifact directory), by writing.

use std::path::{Path, PathBuf};

/// Why a file or folder the supervisor is to write cannot be written, found before anything
/// runs. `what` names it as the user gave it: the flag (`--junit`) or the setting.
#[derive(Debug, thiserror::Error)]
pub enum Unwritable {
    #[error("{what} {}: is a directory", path.display())]
    IsADirectory { what: String, path: PathBuf },
    #[error("{what} {}: has no parent folder", path.display())]
    NoParent { what: String, path: PathBuf },
    /// A FIFO would hold the probe's open until a reader came; a device is no file to append to.
    #[error("{what} {}: not a regular file (a {kind})", path.display())]
    NotAFile {
        what: String,
        path: PathBuf,
        kind: &'static str,
    },
    #[error("{what} {}: {} is not writable: {source}", path.display(), at.display())]
    Denied {
        what: String,
        path: PathBuf,
        at: PathBuf,
        source: std::io::Error,
    },
    #[error("{what} {}: is not a directory", path.display())]
    NotADirectory { what: String, path: PathBuf },
    /// A file is in the way at `at`, above `path`.
    #[error("{what} {}: {} is not a directory", path.display(), at.display())]
    FileAbove {
        what: String,
        path: PathBuf,
        at: PathBuf,
    },
    #[error("{what} {}: {} cannot be created: {source}", path.display(), at.display())]
    CannotCreate {
        what: String,
        path: PathBuf,
        at: PathBuf,
        source: std::io::Error,
    },
}

/// Checks before anything runs that `path` can be written, by writing: the missing folders
/// above it are created and a probe file is made where the file will go (an existing file is
/// opened for appending, nothing written), then everything made here is removed. access(2) is not
/// enough: it says yes to root (CI containers) for `/proc/…` and read-only mounts.
pub fn check_writable(flag: &str, path: &Path) -> Result<(), Unwritable> {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let what = flag.to_string();
    if abs.is_dir() {
        return Err(Unwritable::IsADirectory {
            what,
            path: path.to_path_buf(),
        });
    }
    let Some(parent) = abs.parent() else {
        return Err(Unwritable::NoParent {
            what,
            path: path.to_path_buf(),
        });
    };
    let fail = |at: &Path, source: std::io::Error| Unwritable::Denied {
        what: flag.to_string(),
        path: path.to_path_buf(),
        at: at.to_path_buf(),
        source,
    };
    // A FIFO would hold the probe's open until a reader came; a device is no file to append to.
    if let Ok(meta) = std::fs::metadata(&abs) {
        if !meta.is_file() {
            return Err(Unwritable::NotAFile {
                what,
                path: path.to_path_buf(),
                kind: crate::model::user_file::kind_of(&meta.file_type()),
            });
        }
    }
    let made = make_folders(parent, FolderMode::Default)
        .map_err(|(at, e)| not_a_folder_or(flag, path, &at, e))?;
    let probed = if abs.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(&abs)
            .map(drop)
            .map_err(|e| fail(&abs, e))
    } else {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&abs)
            .map(drop)
            .and_then(|()| std::fs::remove_file(&abs))
            .map_err(|e| fail(&abs, e))
    };
    remove_folders(&made);
    probed
}

/// Checks before anything runs that the directory `path` (the artifact directory) can be written,
/// by writing: its missing folders are created and, unless the folder itself was one of them, a
/// probe file is made and removed in it; then the folders made here are removed again. `what`
/// names it in the error.
pub fn check_dir_writable(what: &str, path: &Path) -> Result<(), Unwritable> {
    let made = probe_dir(what, path, FolderMode::Default)?;
    remove_folders(&made);
    Ok(())
}

/// [`check_dir_writable`] for a directory the command is about to fill (`start`'s artifact
/// directory): the folders it makes are made owner-only (0700), as the run makes them, and stay
/// while the answer is held; [`MadeFolders::keep`] keeps them, dropping it removes them (the
/// command ended before the run began). Removing a folder only to make it again a moment later
/// costs a freed inode, and on a file system mounted with `discard` the removal waits for the
/// device (milliseconds, at every run that starts without its artifact directory).
pub fn prepare_dir(what: &str, path: &Path) -> Result<MadeFolders, Unwritable> {
    probe_dir(what, path, FolderMode::OwnerOnly).map(MadeFolders)
}

/// The folders [`prepare_dir`] made, deepest last: removed when dropped unless kept.
#[derive(Debug)]
#[must_use = "dropping it removes the folders it made"]
pub struct MadeFolders(Vec<PathBuf>);

impl MadeFolders {
    /// The folders stay: the run fills them.
    pub fn keep(mut self) {
        self.0.clear();
    }
}

impl Drop for MadeFolders {
    fn drop(&mut self) {
        remove_folders(&self.0);
    }
}

/// How [`make_folders`] makes a folder.
#[derive(Clone, Copy)]
enum FolderMode {
    /// mkdir's default (0777 less the umask): the folder is removed again at once.
    Default,
    /// 0700 (less the umask), as the artifact directory is made.
    OwnerOnly,
}

/// The check of [`check_dir_writable`]; answers the folders it made (deepest last), which the
/// caller removes or keeps. On failure, nothing it made is left.
fn probe_dir(what: &str, path: &Path, mode: FolderMode) -> Result<Vec<PathBuf>, Unwritable> {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let made = make_folders(&abs, mode).map_err(|(at, e)| not_a_folder_or(what, path, &at, e))?;
    if made.last().is_some_and(|deepest| *deepest == abs) {
        // The folder is new and ours: its mkdir was the write, and a probe file in it one more
        // inode to allocate and free before every run that starts without .bugatti/.
        return Ok(made);
    }
    let probe = abs.join(format!(".bugatti-write-probe-{}", std::process::id()));
    let probed = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map(drop)
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|source| Unwritable::Denied {
            what: what.to_string(),
            path: path.to_path_buf(),
            at: abs.clone(),
            source,
        });
    match probed {
        Ok(()) => Ok(made),
        Err(e) => {
            remove_folders(&made);
            Err(e)
        }
    }
}

/// Creates `dir` and its missing ancestors; returns the folders it made, deepest last. On failure:
/// the folder it could not make (or that is not a folder) and why, after removing what it made.
fn make_folders(dir: &Path, mode: FolderMode) -> Result<Vec<PathBuf>, (PathBuf, std::io::Error)> {
    let missing: Vec<&Path> = dir.ancestors().take_while(|p| !p.exists()).collect();
    if let Some(existing) = dir.ancestors().find(|p| p.exists()) {
        if !existing.is_dir() {
            return Err((
                existing.to_path_buf(),
                std::io::Error::from(std::io::ErrorKind::NotADirectory),
            ));
        }
    }
    let mut made = Vec::new();
    for folder in missing.into_iter().rev() {
        let created = match mode {
            FolderMode::Default => std::fs::create_dir(folder),
            FolderMode::OwnerOnly => {
                std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
                    .create(folder)
            }
        };
        if let Err(e) = created {
            remove_folders(&made);
            return Err((folder.to_path_buf(), e));
        }
        made.push(folder.to_path_buf());
    }
    Ok(made)
}

/// Removes the folders `make_folders` made, deepest first (best effort: they are empty).
fn remove_folders(made: &[PathBuf]) {
    for folder in made.iter().rev() {
        let _ = std::fs::remove_dir(folder);
    }
}

/// The error for a folder that could not be made: "… is not a directory" when a file is in the
/// way, else "… is not writable: <why>".
fn not_a_folder_or(what: &str, path: &Path, at: &Path, e: std::io::Error) -> Unwritable {
    let (what, path_buf, at_buf) = (what.to_string(), path.to_path_buf(), at.to_path_buf());
    if e.kind() == std::io::ErrorKind::NotADirectory {
        if at == path || std::path::absolute(path).is_ok_and(|a| a == at) {
            Unwritable::NotADirectory {
                what,
                path: path_buf,
            }
        } else {
            Unwritable::FileAbove {
                what,
                path: path_buf,
                at: at_buf,
            }
        }
    } else {
        Unwritable::CannotCreate {
            what,
            path: path_buf,
            at: at_buf,
            source: e,
        }
    }
}
