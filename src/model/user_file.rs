//! Opening a file the user (or a pull request, or the run before) named: the config, a test file,
//! history.jsonl, a project's `.mcp.json`. Such a name may be a FIFO (an open would wait for a
//! writer forever), `/dev/zero` or a link to it (a read would never end), or a 2 GB file (a read
//! would take the machine's memory). So every such file is opened `O_NONBLOCK` (a FIFO opens at
//! once), `fstat`ed on the open descriptor (no window for a swap between a check and the open),
//! read only when it is a regular file, and never past a size cap: a clear error at once instead
//! of a hang.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A config file (`bugatti.config.toml`, the global one, `.mcp.json`, Playwright MCP's own).
pub const CONFIG_MAX: u64 = 4 * 1024 * 1024;
/// A test file (`*.test.toml`, an include).
pub const TEST_MAX: u64 = 4 * 1024 * 1024;
/// history.jsonl: one line a run, read for trends and the shard split; the last this many bytes.
pub const HISTORY_MAX: u64 = 64 * 1024 * 1024;

/// Why a user-named file was not read.
#[derive(Debug, thiserror::Error)]
pub enum UserFileError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a regular file (a {kind}): not read", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{} is {size} bytes, more than the {max} read from such a file: not read", path.display())]
    TooBig { path: PathBuf, size: u64, max: u64 },
}

impl UserFileError {
    /// Why, without the path (for a message that names the file already).
    pub fn reason(&self) -> String {
        match self {
            Self::Io { source, .. } => source.to_string(),
            Self::NotRegular { kind, .. } => format!("not a regular file (a {kind})"),
            Self::TooBig { size, max, .. } => {
                format!("{size} bytes, more than the {max} read from such a file")
            }
        }
    }

    /// Whether the file is simply not there (most callers treat that as "none").
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// What kind of special file `file_type` is, in words.
pub fn kind_of(file_type: &std::fs::FileType) -> &'static str {
    if file_type.is_fifo() {
        "FIFO"
    } else if file_type.is_char_device() {
        "character device"
    } else if file_type.is_block_device() {
        "block device"
    } else if file_type.is_socket() {
        "socket"
    } else if file_type.is_dir() {
        "directory"
    } else if file_type.is_symlink() {
        "symbolic link"
    } else {
        "regular file"
    }
}

/// Opens `path` without blocking (`follow_links`: whether a symbolic link at the last component
/// is followed; its target must be a regular file all the same). Returns the file and its size.
pub fn open(path: &Path, follow_links: bool) -> Result<(File, u64), UserFileError> {
    let io = |source| UserFileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !follow_links {
        flags |= libc::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| {
            // O_NOFOLLOW on a link fails with ELOOP: said as what it is.
            if !follow_links && e.raw_os_error() == Some(libc::ELOOP) {
                return UserFileError::NotRegular {
                    path: path.to_path_buf(),
                    kind: "symbolic link",
                };
            }
            io(e)
        })?;
    let meta = file.metadata().map_err(io)?;
    if !meta.file_type().is_file() {
        return Err(UserFileError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(&meta.file_type()),
        });
    }
    Ok((file, meta.len()))
}

/// The whole of the regular file at `path` (links followed), refused past `max` bytes.
pub fn read(path: &Path, max: u64) -> Result<Vec<u8>, UserFileError> {
    let (file, size) = open(path, true)?;
    if size > max {
        return Err(UserFileError::TooBig {
            path: path.to_path_buf(),
            size,
            max,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // `take`: a file growing while it is read stops at the cap all the same.
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| UserFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > max {
        return Err(UserFileError::TooBig {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
            max,
        });
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text.
pub fn read_to_string(path: &Path, max: u64) -> Result<String, UserFileError> {
    let bytes = read(path, max)?;
    String::from_utf8(bytes).map_err(|e| UserFileError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
    })
}

/// Writes `bytes` to `path` readable by its owner only (0600), its folder made if missing: what
/// holds a secret (a token, an endpoint) for a process the supervisor starts.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    // An existing file keeps its mode through `open`: made private all the same.
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn special_files_are_refused_at_once_and_big_ones_unread() {
        let dir = tempfile::tempdir().expect("dir");
        let fifo = dir.path().join("fifo.toml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("fifo");
        let zero = dir.path().join("zero.toml");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("link");
        let big = dir.path().join("big.toml");
        File::create(&big)
            .and_then(|f| f.set_len(2 * 1024 * 1024 * 1024))
            .expect("sparse");
        let begun = Instant::now();
        let e = read(&fifo, CONFIG_MAX).expect_err("fifo");
        assert!(
            e.to_string().contains("is not a regular file (a FIFO)"),
            "{e}"
        );
        let e = read(&zero, CONFIG_MAX).expect_err("zero");
        assert!(e.to_string().contains("character device"), "{e}");
        let e = read(&big, CONFIG_MAX).expect_err("big");
        assert!(e.to_string().contains("2147483648 bytes"), "{e}");
        let e = read(Path::new("/"), CONFIG_MAX).expect_err("dir");
        assert!(e.to_string().contains("directory"), "{e}");
        // The test runner's own timeout is the other bound; these never block at all.
        assert!(begun.elapsed() < Duration::from_secs(5));
        let e = open(&zero, false).expect_err("link not followed");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(read(&dir.path().join("none"), 1)
            .expect_err("none")
            .is_not_found());

        let plain = dir.path().join("ok.toml");
        std::fs::write(&plain, "a = 1\n").expect("write");
        assert_eq!(read_to_string(&plain, 100).expect("read"), "a = 1\n");
        assert!(matches!(read(&plain, 3), Err(UserFileError::TooBig { .. })));
    }

    #[test]
    fn private_files_are_owner_only_even_when_they_existed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("sub/secret.json");
        std::fs::create_dir_all(dir.path().join("sub")).expect("dir");
        std::fs::write(&path, "old").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        write_private(&path, b"new").expect("write");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read(&path).expect("read"), b"new");
    }
}
