//! Every file a replay reads (a `Read` target, a file a `Grep` searches, a snapshot the browser
//! wrote), opened without blocking and bounded (see docs/replay.md).
//!
//! The files are the project's, and the project may have changed since the agent looked: a
//! `Read` target that became a FIFO would block the replay (and with it the run and its
//! signals) for ever; a symlink to `/dev/zero` would fill memory; a log that grew to gigabytes
//! would cost as much memory as it is long. So a file is opened with `O_NONBLOCK`, the opened
//! file (not the path, which can be swapped) must be a regular file, and no more than its bound
//! is ever read: anything else is a drift that says what the file now is.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The bound when a recording does not say how large the file was (older recordings).
pub const DEFAULT_BOUND: u64 = 64 * 1024 * 1024;

/// What a replay may read of a file that was `recorded` bytes when the agent read it: twice
/// that and a mebibyte (a log that grew a little still replays, and then differs or not by its
/// text; a file grown a thousandfold is a drift before it is read).
pub fn bound_for(recorded: Option<u64>) -> u64 {
    recorded.map_or(DEFAULT_BOUND, |r| {
        r.saturating_mul(2).saturating_add(1 << 20)
    })
}

/// Why a file was not read, in the words of a drift.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadRefused {
    /// Not a regular file: a FIFO, a device, a socket, a directory.
    #[error("{path} is {kind}, not a regular file: not read")]
    NotRegular { path: String, kind: &'static str },
    /// Over its bound.
    #[error("{path} is {size} bytes, over the {bound} bytes a replay reads of it (the recorded size × 2 + 1 MiB)")]
    TooBig { path: String, size: u64, bound: u64 },
    /// It could not be opened or read (`missing`: it is not there).
    #[error("{path}: {message}")]
    Io {
        path: String,
        message: String,
        missing: bool,
    },
}

/// The size of the regular file at `path` (a symlink to one followed), without opening it;
/// `None` for anything else.
pub fn regular_size(path: &Path) -> Option<u64> {
    std::fs::metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len())
}

/// The bytes of the regular file at `path` (a symlink to one followed), at most `bound` of
/// them; never blocks on a FIFO or a device.
pub fn read(path: &Path, bound: u64) -> Result<Vec<u8>, ReadRefused> {
    let shown = path.display().to_string();
    let io = |e: std::io::Error| ReadRefused::Io {
        path: shown.clone(),
        message: e.to_string(),
        missing: e.kind() == std::io::ErrorKind::NotFound,
    };
    // O_NONBLOCK: opening a FIFO without a writer returns at once (and a read of it would not
    // wait); O_NOCTTY: a terminal device never becomes ours.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(ReadRefused::NotRegular {
            path: shown,
            kind: file_kind(&meta),
        });
    }
    if meta.len() > bound {
        return Err(ReadRefused::TooBig {
            path: shown,
            size: meta.len(),
            bound,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // One byte past the bound tells a file that grew after its size was read (or one whose size
    // says nothing, as in /proc).
    file.take(bound.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > bound {
        return Err(ReadRefused::TooBig {
            path: shown,
            size: bytes.len() as u64,
            bound,
        });
    }
    Ok(bytes)
}

/// What kind of file `meta` describes, for a refusal.
pub fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_a_device_and_a_huge_file_are_refused_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
        let huge = dir.path().join("huge");
        std::fs::File::create(&huge)
            .and_then(|f| f.set_len(3 << 30))
            .expect("a sparse file");
        assert!(matches!(
            read(&fifo, 10),
            Err(ReadRefused::NotRegular { kind: "a FIFO", .. })
        ));
        assert!(matches!(
            read(&zero, 10),
            Err(ReadRefused::NotRegular {
                kind: "a character device",
                ..
            })
        ));
        assert!(matches!(
            read(&huge, bound_for(Some(100))),
            Err(ReadRefused::TooBig { .. })
        ));
        std::fs::write(dir.path().join("ok"), "a\n").expect("write");
        assert_eq!(read(&dir.path().join("ok"), 2).expect("read"), b"a\n");
        assert!(read(&dir.path().join("ok"), 1).is_err());
    }
}
