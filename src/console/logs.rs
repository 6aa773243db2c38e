//! The harness commands' logs as console tools: `list_logs`, `read_log` (byte cursors, not
//! re-reads) and `wait_for_log`, which wakes on the command's output events (its
//! [`OutputHub`]) and matches only bytes written after its starting offset.
//!
//! The log files are the truth (already redacted by the pump); the hub is only the wake-up.

use crate::process::output::OutputHub;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use tokio::time::Instant;

/// One harness command's log.
#[derive(Debug, Clone)]
pub struct LogSource {
    pub name: String,
    /// `long-lived` or `short-lived`.
    pub kind: String,
    pub path: PathBuf,
    /// Its live output; `None` if it never started.
    pub hub: Option<OutputHub>,
}

/// Why a log tool failed (the message the agent sees).
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("no harness log named `{name}`; list_logs shows them: {known}")]
    Unknown { name: String, known: String },
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("bad pattern `{pattern}`: {source}")]
    Pattern {
        pattern: String,
        source: regex::Error,
    },
}

/// The current length of a log (0 if it does not exist yet).
pub fn log_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// A chunk read at a cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub bytes: Vec<u8>,
    /// Where the next read continues: `offset + bytes.len()`.
    pub next_offset: u64,
    /// The log's length when read (more may follow `next_offset`).
    pub len: u64,
}

/// At most `max_bytes` from `offset`, ending at a line end when one is in the window, so that
/// successive reads from `next_offset` give every byte exactly once.
pub fn read_at(path: &Path, offset: u64, max_bytes: usize) -> std::io::Result<Chunk> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Chunk {
                bytes: Vec::new(),
                next_offset: offset,
                len: 0,
            })
        }
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    let offset = offset.min(len);
    file.seek(SeekFrom::Start(offset))?;
    let want = usize::try_from(len - offset)
        .unwrap_or(usize::MAX)
        .min(max_bytes);
    let mut bytes = Vec::with_capacity(want);
    file.take(want as u64).read_to_end(&mut bytes)?;
    // Cut a full window at its last line end (a partial last line comes whole next time).
    if bytes.len() == max_bytes && offset + (bytes.len() as u64) < len {
        if let Some(nl) = memchr::memrchr(b'\n', &bytes) {
            bytes.truncate(nl + 1);
        }
    }
    Ok(Chunk {
        next_offset: offset + bytes.len() as u64,
        len,
        bytes,
    })
}

/// The last `n` lines of `bytes` (a trailing line end does not start a line).
pub fn last_lines(bytes: &[u8], n: usize) -> &[u8] {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let mut start = body.len();
    for _ in 0..n {
        match memchr::memrchr(b'\n', &body[..start]) {
            Some(p) => start = p,
            None => return bytes,
        }
    }
    &bytes[(start + 1).min(bytes.len())..]
}

/// The lines of `bytes` matching `re`, each with its line end.
pub fn grep(bytes: &[u8], re: &regex::bytes::Regex) -> Vec<u8> {
    let mut out = Vec::new();
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let bare = line.strip_suffix(b"\n").unwrap_or(line);
        let bare = bare.strip_suffix(b"\r").unwrap_or(bare);
        if re.is_match(bare) {
            out.extend_from_slice(line);
        }
    }
    out
}

/// The first complete line at or after `from` matching `re`: the line and the offset after it.
pub fn find_line(
    path: &Path,
    from: u64,
    re: &regex::bytes::Regex,
) -> std::io::Result<Option<(String, u64)>> {
    let mut offset = from;
    loop {
        let chunk = read_at(path, offset, 1 << 20)?;
        if chunk.bytes.is_empty() {
            return Ok(None);
        }
        let mut at = offset;
        for line in chunk.bytes.split_inclusive(|&b| b == b'\n') {
            if !line.ends_with(b"\n") {
                // Not complete yet: the next event brings the rest.
                return Ok(None);
            }
            at += line.len() as u64;
            let bare = &line[..line.len() - 1];
            let bare = bare.strip_suffix(b"\r").unwrap_or(bare);
            if re.is_match(bare) {
                return Ok(Some((super::reply::clean(bare), at)));
            }
        }
        offset = chunk.next_offset;
    }
}

/// What `wait_for_log` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waited {
    Matched { line: String, next_offset: u64 },
    TimedOut { next_offset: u64 },
}

/// Waits until a line matching `pattern` is written at or after `from` (event-driven: wakes on
/// the command's output lines), or `deadline`.
pub async fn wait_for_line(
    source: &LogSource,
    pattern: &str,
    from: u64,
    deadline: Instant,
) -> Result<Waited, LogError> {
    let re = regex::bytes::Regex::new(pattern).map_err(|source| LogError::Pattern {
        pattern: pattern.to_string(),
        source,
    })?;
    // Subscribe before looking at the file, so that a line written in between is not missed.
    let mut sub = match &source.hub {
        Some(hub) => Some(
            hub.subscribe_matching(pattern)
                .map_err(|source| LogError::Pattern {
                    pattern: pattern.to_string(),
                    source,
                })?,
        ),
        None => None,
    };
    let err = |e| LogError::Read {
        path: source.path.display().to_string(),
        source: e,
    };
    if let Some((line, next_offset)) = find_line(&source.path, from, &re).map_err(err)? {
        return Ok(Waited::Matched { line, next_offset });
    }
    let woke = match sub.as_mut() {
        Some(sub) => tokio::select! {
            line = sub.recv() => line,
            () = tokio::time::sleep_until(deadline) => None,
        },
        None => {
            tokio::time::sleep_until(deadline).await;
            None
        }
    };
    // The file is the truth when it has the line (the exact cursor after it). The pump hands a
    // line out before its buffered write reaches the file, so an event's line may not be there
    // yet: then the event's own line is the answer, and the file's end the cursor.
    if let Some((line, next_offset)) = find_line(&source.path, from, &re).map_err(err)? {
        return Ok(Waited::Matched { line, next_offset });
    }
    let next_offset = log_len(&source.path);
    Ok(match woke {
        Some(line) => Waited::Matched {
            line: line.to_string(),
            next_offset,
        },
        None => Waited::TimedOut { next_offset },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_windows_end_at_a_line_end() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("a.log");
        std::fs::write(&path, "one\ntwo\nthree\n").expect("write");
        let c = read_at(&path, 0, 9).expect("read");
        assert_eq!((c.bytes.as_slice(), c.next_offset), (&b"one\ntwo\n"[..], 8));
        let c = read_at(&path, 8, 100).expect("read");
        assert_eq!(
            (c.bytes.as_slice(), c.next_offset, c.len),
            (&b"three\n"[..], 14, 14)
        );
        let c = read_at(&dir.path().join("none.log"), 5, 10).expect("missing is empty");
        assert_eq!(c.next_offset, 5);
    }

    #[test]
    fn tail_and_grep_pick_lines() {
        assert_eq!(last_lines(b"a\nb\nc\n", 2), b"b\nc\n");
        assert_eq!(last_lines(b"a\nb", 5), b"a\nb");
        let re = regex::bytes::Regex::new("^b").expect("re");
        assert_eq!(grep(b"a\nbx\r\nc\nby", &re), b"bx\r\nby");
    }

    #[tokio::test]
    async fn wait_for_line_matches_only_new_complete_lines() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("s.log");
        std::fs::write(&path, "ready 1\n").expect("write");
        let source = LogSource {
            name: "s".into(),
            kind: "long-lived".into(),
            path: path.clone(),
            hub: None,
        };
        let from = log_len(&path);
        let soon = Instant::now() + std::time::Duration::from_millis(50);
        let w = wait_for_line(&source, "^ready", from, soon)
            .await
            .expect("wait");
        assert_eq!(w, Waited::TimedOut { next_offset: from });
        std::fs::write(&path, "ready 1\nready 2\n").expect("write");
        let w = wait_for_line(&source, "^ready", from, Instant::now())
            .await
            .expect("wait");
        assert_eq!(
            w,
            Waited::Matched {
                line: "ready 2".into(),
                next_offset: 16
            }
        );
    }
}
