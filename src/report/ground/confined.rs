//! Reading a run's files when the run may come from elsewhere (`merge` of a shard artifact a pull
//! request shaped): every path named by a summary.json or run.json (a run id, a report path, a
//! command's log, evidence) must stay inside its directory, and no symbolic link is followed on
//! the way, so that a report never embeds a file of the machine that renders it
//! (`/proc/self/environ`, `/etc/passwd`, a link to `/etc/hostname`). Files are opened one
//! component at a time (`openat` with `O_NOFOLLOW`), which also leaves no window for a link
//! swapped in between a check and the open; only regular files are read (a FIFO would block).

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;

/// Why a path named by a run was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("not a relative path inside the run directory")]
    Outside,
    #[error("a symbolic link")]
    Symlink,
    #[error("not a regular file")]
    NotAFile,
    #[error("no such file")]
    Missing,
    #[error("{0}")]
    Io(String),
}

/// Whether `id` can name a directory: a plain name of letters, digits, `-`, `_` and `.` (not
/// `.` or `..`), as the supervisor's run ids are.
pub fn is_plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id != "."
        && id != ".."
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The components of `path` when it is relative and climbs nowhere (no `..`, no root, no
/// `scheme://`); `.` components are dropped.
pub fn relative_components(path: &str) -> Result<Vec<OsString>, Refused> {
    if path.is_empty() || path.contains("://") {
        return Err(Refused::Outside);
    }
    let mut parts = Vec::new();
    for c in Path::new(path).components() {
        match c {
            Component::Normal(name) => parts.push(name.to_os_string()),
            Component::CurDir => {}
            _ => return Err(Refused::Outside),
        }
    }
    if parts.is_empty() {
        return Err(Refused::Outside);
    }
    Ok(parts)
}

/// `from` (components below a root) moved by the relative `path` (which may use `..`, as
/// summary.json's `../../runs/<id>/report.md` does), as long as it never climbs above the root.
pub fn walk_within(from: &[OsString], path: &str) -> Result<Vec<OsString>, Refused> {
    let p = Path::new(path);
    if path.is_empty() || path.contains("://") || p.is_absolute() {
        return Err(Refused::Outside);
    }
    let mut at = from.to_vec();
    for c in p.components() {
        match c {
            Component::Normal(name) => at.push(name.to_os_string()),
            Component::CurDir => {}
            Component::ParentDir => {
                at.pop().ok_or(Refused::Outside)?;
            }
            _ => return Err(Refused::Outside),
        }
    }
    Ok(at)
}

fn refused(errno: Errno) -> Refused {
    match errno {
        Errno::ELOOP => Refused::Symlink,
        Errno::ENOENT => Refused::Missing,
        Errno::ENOTDIR => Refused::NotAFile,
        other => Refused::Io(other.desc().to_string()),
    }
}

fn open_dir(path: &Path) -> Result<OwnedFd, Refused> {
    nix::fcntl::open(
        path,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(refused)
}

/// Opens the directories `parts` below `base`, none of them a symbolic link.
fn descend(base: &Path, parts: &[OsString]) -> Result<OwnedFd, Refused> {
    let mut dir = open_dir(base)?;
    for name in parts {
        dir = match openat(
            dir.as_fd(),
            name.as_os_str(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) {
            Ok(next) => next,
            // With O_DIRECTORY, a symbolic link answers "not a directory": say which it was.
            Err(Errno::ENOTDIR) => {
                let link = nix::sys::stat::fstatat(
                    dir.as_fd(),
                    name.as_os_str(),
                    nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                )
                .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK);
                return Err(if link {
                    Refused::Symlink
                } else {
                    Refused::NotAFile
                });
            }
            Err(e) => return Err(refused(e)),
        };
    }
    Ok(dir)
}

/// `base` joined with `parts` when each of them is a real directory (no symbolic link).
pub fn dir_below(base: &Path, parts: &[OsString]) -> Result<PathBuf, Refused> {
    descend(base, parts)?;
    Ok(parts.iter().fold(base.to_path_buf(), |p, n| p.join(n)))
}

/// Opens `path`, relative to `base`, for reading: inside `base`, no symbolic link followed, a
/// regular file (opened without blocking, so a FIFO is refused rather than waited on).
pub fn open_file(base: &Path, path: &str) -> Result<File, Refused> {
    let parts = relative_components(path)?;
    let (name, dirs) = parts.split_last().ok_or(Refused::Outside)?;
    let dir = descend(base, dirs)?;
    let fd = openat(
        dir.as_fd(),
        name.as_os_str(),
        OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(refused)?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(|e| Refused::Io(e.to_string()))?;
    if !meta.is_file() {
        return Err(Refused::NotAFile);
    }
    Ok(file)
}

/// The whole of `path` (see [`open_file`]).
pub fn read(base: &Path, path: &str) -> Result<Vec<u8>, Refused> {
    use std::io::Read;
    let mut file = open_file(base, path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| Refused::Io(e.to_string()))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn reads_what_is_inside_and_refuses_every_way_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let run = dir.path().join("run");
        std::fs::create_dir_all(run.join("logs")).expect("mkdir");
        std::fs::write(run.join("logs/a.log"), b"inside").expect("write");
        std::fs::write(dir.path().join("secret"), b"outside").expect("write");
        symlink(dir.path().join("secret"), run.join("link.log")).expect("symlink");
        symlink(dir.path(), run.join("up")).expect("symlink");
        nix::unistd::mkfifo(&run.join("fifo"), Mode::S_IRWXU).expect("fifo");

        assert_eq!(read(&run, "logs/a.log").expect("read"), b"inside");
        assert_eq!(read(&run, "./logs/a.log").expect("read"), b"inside");
        assert_eq!(read(&run, "link.log"), Err(Refused::Symlink));
        assert_eq!(read(&run, "up/secret"), Err(Refused::Symlink));
        assert_eq!(read(&run, "../secret"), Err(Refused::Outside));
        assert_eq!(read(&run, "logs/../../secret"), Err(Refused::Outside));
        assert_eq!(read(&run, "/proc/self/environ"), Err(Refused::Outside));
        assert_eq!(read(&run, "file:///etc/passwd"), Err(Refused::Outside));
        assert_eq!(read(&run, "fifo"), Err(Refused::NotAFile));
        assert_eq!(read(&run, "logs"), Err(Refused::NotAFile));
        assert_eq!(read(&run, "nope.log"), Err(Refused::Missing));
    }

    #[test]
    fn run_ids_are_plain_and_walks_stay_below_the_root() {
        assert!(is_plain_id("01a212ba-636e-765b-a736-caea49feb1e0"));
        for bad in ["", ".", "..", "../x", "a/b", "/etc", "a b"] {
            assert!(!is_plain_id(bad), "{bad}");
        }
        let from: Vec<OsString> = vec!["suites".into(), "s1".into()];
        assert_eq!(
            walk_within(&from, "../../runs/r1/report.md").expect("inside"),
            vec![
                OsString::from("runs"),
                OsString::from("r1"),
                OsString::from("report.md")
            ]
        );
        assert_eq!(
            walk_within(&from, "../../../etc/passwd"),
            Err(Refused::Outside)
        );
        assert_eq!(walk_within(&from, "/etc/passwd"), Err(Refused::Outside));
    }
}
