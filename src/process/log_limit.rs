//! `[supervisor] max_log_bytes`: a command's log keeps its head, and past the limit a rolling tail.
//!
//! The log (`logs/<name>.log`) is read by byte offsets (the console's `read_log`, the per-step
//! excerpt marks), so bytes already written are never rewritten: the first `max_log_bytes` bytes
//! (cut at a line end) stay in it, then one marker line, and everything after goes to
//! `<name>.tail.log`, which is renamed to `<name>.tail.log.1` (replacing the older one) whenever
//! it would pass half the limit. Disk use stays about twice the limit, and the newest output is
//! `<name>.tail.log.1` followed by `<name>.tail.log`.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

pub use crate::model::layers::{DEFAULT_MAX_LOG_BYTES, MIN_MAX_LOG_BYTES};

const WRITE_BUFFER: usize = 256 * 1024;
/// How far past the limit the head may go to finish the line running at the limit.
pub const LINE_OVERSHOOT: usize = 4096;

/// What one command's log has been through, over all its incarnations (restarts append to the
/// same log, so the cut happens once per command, not per process).
#[derive(Debug, Default)]
pub struct LogCut {
    cut: AtomicBool,
    past_limit: AtomicU64,
}

impl LogCut {
    /// Bytes of output that went past the limit (into the tail files, or rotated away).
    pub fn past_limit(&self) -> u64 {
        self.past_limit.load(Ordering::Relaxed)
    }

    pub fn is_cut(&self) -> bool {
        self.cut.load(Ordering::Relaxed)
    }
}

/// The rolling tail file next to `log`: `<name>.tail.log`.
pub fn tail_path(log: &Path) -> PathBuf {
    let stem = log
        .file_stem()
        .map_or_else(|| "command".into(), |s| s.to_string_lossy().into_owned());
    log.with_file_name(format!("{stem}.tail.log"))
}

/// The older tail, `<name>.tail.log.1`.
pub fn older_tail_path(log: &Path) -> PathBuf {
    let mut name = tail_path(log).into_os_string();
    name.push(".1");
    PathBuf::from(name)
}

/// The marker line written where the log stops.
pub fn marker(max: u64, log: &Path) -> String {
    let tail = tail_path(log);
    let tail = tail.file_name().map_or_else(
        || "the tail log".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    format!("[bugatti: log limit of {max} bytes reached; the rest is kept as a rolling tail in {tail}]\n")
}

/// The writer of one process's output: the head of the log while there is room, then the tail.
pub struct LimitedLog {
    head: BufWriter<File>,
    head_len: u64,
    /// The last byte written to the head ends a line (or nothing was written).
    at_line_start: bool,
    max: u64,
    log_path: PathBuf,
    tail: Option<Tail>,
    cut: Arc<LogCut>,
}

struct Tail {
    file: BufWriter<File>,
    len: u64,
}

impl std::fmt::Debug for LimitedLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimitedLog")
            .field("log_path", &self.log_path)
            .field("head_len", &self.head_len)
            .field("max", &self.max)
            .finish()
    }
}

impl LimitedLog {
    /// `log` is the command's log opened for appending (its current length is where it stands).
    pub fn new(log: File, log_path: &Path, max: u64, cut: Arc<LogCut>) -> Self {
        let head_len = log.metadata().map_or(0, |m| m.len());
        Self {
            head: BufWriter::with_capacity(WRITE_BUFFER, log),
            head_len,
            at_line_start: true,
            max: max.max(MIN_MAX_LOG_BYTES),
            log_path: log_path.to_path_buf(),
            tail: None,
            cut,
        }
    }

    fn half(&self) -> u64 {
        self.max / 2
    }

    pub fn write_all(&mut self, data: &[u8]) -> std::io::Result<()> {
        if self.cut.is_cut() {
            return self.write_tail(data);
        }
        let room = usize::try_from(self.max.saturating_sub(self.head_len)).unwrap_or(usize::MAX);
        if data.len() <= room {
            self.head.write_all(data)?;
            self.head_len += data.len() as u64;
            if let Some(last) = data.last() {
                self.at_line_start = *last == b'\n';
            }
            return Ok(());
        }
        // Cut at the last line end that fits; a line already begun when the limit is reached is
        // finished (up to LINE_OVERSHOOT past the limit), and one longer than that is cut where
        // it must (then ended, so that the marker is a line of its own).
        let keep = match memchr::memrchr(b'\n', &data[..room]) {
            Some(p) => p + 1,
            None if self.at_line_start && self.head_len > 0 => 0,
            None => {
                let reach = data.len().min(room.saturating_add(LINE_OVERSHOOT));
                memchr::memchr(b'\n', &data[room..reach]).map_or(room, |p| room + p + 1)
            }
        };
        let mut written = keep;
        self.head.write_all(&data[..keep])?;
        if keep > 0 {
            self.at_line_start = data[keep - 1] == b'\n';
        }
        if !self.at_line_start {
            self.head.write_all(b"\n")?;
            written += 1;
        }
        let marker = marker(self.max, &self.log_path);
        self.head.write_all(marker.as_bytes())?;
        self.head.flush()?;
        self.head_len += (written + marker.len()) as u64;
        self.cut.cut.store(true, Ordering::Relaxed);
        self.write_tail(&data[keep..])
    }

    fn write_tail(&mut self, mut data: &[u8]) -> std::io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        self.cut
            .past_limit
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        let half = self.half();
        // Only the last two halves of a big chunk can survive the rotations: skip the rest.
        let keep = usize::try_from(2 * half).unwrap_or(usize::MAX);
        if data.len() > keep {
            data = &data[data.len() - keep..];
        }
        while !data.is_empty() {
            let tail = match self.tail.as_mut() {
                Some(t) if t.len < half => t,
                _ => self.rotate()?,
            };
            let room = usize::try_from(half - tail.len).unwrap_or(usize::MAX);
            let n = room.min(data.len());
            tail.file.write_all(&data[..n])?;
            tail.len += n as u64;
            data = &data[n..];
        }
        Ok(())
    }

    /// Opens the tail file: the one a previous incarnation left if it has room, else a fresh one
    /// after moving a full one to `.1`.
    fn rotate(&mut self) -> std::io::Result<&mut Tail> {
        let path = tail_path(&self.log_path);
        if let Some(mut old) = self.tail.take() {
            old.file.flush()?;
        }
        let existing = std::fs::metadata(&path).map_or(0, |m| m.len());
        if existing >= self.half() {
            std::fs::rename(&path, older_tail_path(&self.log_path))?;
        }
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        let len = file.metadata().map_or(0, |m| m.len());
        Ok(self.tail.insert(Tail {
            file: BufWriter::with_capacity(WRITE_BUFFER, file),
            len,
        }))
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.head.flush()?;
        if let Some(tail) = self.tail.as_mut() {
            tail.file.flush()?;
        }
        Ok(())
    }
}

/// The newest output of a command: its tail file (with the older one before it when the current
/// one is short) once the log was cut, else nothing.
pub fn newest_output(log: &Path, want: u64) -> Option<Vec<u8>> {
    let tail = std::fs::read(tail_path(log)).ok()?;
    if (tail.len() as u64) >= want {
        return Some(tail);
    }
    let mut bytes = std::fs::read(older_tail_path(log)).unwrap_or_default();
    bytes.extend_from_slice(&tail);
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_in(dir: &Path, max: u64) -> (LimitedLog, Arc<LogCut>, PathBuf) {
        let path = dir.join("web.log");
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("log");
        let cut = Arc::new(LogCut::default());
        (LimitedLog::new(file, &path, max, cut.clone()), cut, path)
    }

    #[test]
    fn head_is_cut_at_a_line_end_then_the_tail_rolls() {
        let dir = tempfile::tempdir().expect("dir");
        let (mut log, cut, path) = log_in(dir.path(), 4096);
        let lines: Vec<String> = (0..2000).map(|i| format!("line {i:05}\n")).collect();
        for l in &lines {
            log.write_all(l.as_bytes()).expect("write");
        }
        log.flush().expect("flush");
        let head = std::fs::read_to_string(&path).expect("head");
        let marker = marker(4096, &path);
        assert!(head.starts_with("line 00000\n"), "{head:.40}");
        assert!(head.ends_with(&marker), "{head}");
        let kept = head.len() - marker.len();
        assert!(kept <= 4096 + 11, "{kept}");
        assert_eq!(kept % 11, 0, "cut at a line end");
        let tail = std::fs::read_to_string(tail_path(&path)).expect("tail");
        let older = std::fs::read_to_string(older_tail_path(&path)).expect("older");
        assert!(tail.len() <= 2048 && older.len() <= 2048);
        assert!((older + &tail).ends_with("line 01999\n"));
        assert_eq!(cut.past_limit(), (2000 * 11 - kept) as u64);
    }

    #[test]
    fn a_chunk_bigger_than_the_limit_keeps_only_its_end() {
        let dir = tempfile::tempdir().expect("dir");
        let (mut log, cut, path) = log_in(dir.path(), 4096);
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        log.write_all(&data).expect("write");
        log.flush().expect("flush");
        let newest = newest_output(&path, 4096).expect("tail");
        assert!(data.ends_with(&newest));
        assert!(newest.len() <= 4096);
        assert!(cut.is_cut());
        let head = std::fs::read(&path).expect("head");
        let kept = head.len() - marker(4096, &path).len();
        assert!(data.starts_with(&head[..kept]) && head[..kept].ends_with(b"\n"));
    }

    #[test]
    fn a_line_longer_than_the_overshoot_is_cut_and_ended() {
        let dir = tempfile::tempdir().expect("dir");
        let (mut log, cut, path) = log_in(dir.path(), 4096);
        log.write_all(b"first\n").expect("write");
        log.write_all(&[b'x'; 100]).expect("write");
        log.write_all(&[b'y'; 10_000]).expect("write");
        log.flush().expect("flush");
        let head = std::fs::read(&path).expect("head");
        let marker = marker(4096, &path);
        assert_eq!(
            head.len(),
            4096 + 1 + marker.len(),
            "the limit, a line end, the marker"
        );
        assert_eq!(cut.past_limit(), 10_000 - (4096 - 106));
    }

    #[test]
    fn a_line_that_would_not_fit_starts_in_the_tail() {
        let dir = tempfile::tempdir().expect("dir");
        let (mut log, cut, path) = log_in(dir.path(), 4096);
        log.write_all(b"first\n").expect("write");
        log.write_all(&[b'x'; 5000]).expect("write");
        log.flush().expect("flush");
        let head = std::fs::read(&path).expect("head");
        assert_eq!(
            head,
            [&b"first\n"[..], marker(4096, &path).as_bytes()].concat()
        );
        assert_eq!(cut.past_limit(), 5000);
    }

    #[test]
    fn a_log_under_the_limit_is_untouched() {
        let dir = tempfile::tempdir().expect("dir");
        let (mut log, cut, path) = log_in(dir.path(), 4096);
        log.write_all(b"hello\n").expect("write");
        log.flush().expect("flush");
        assert_eq!(std::fs::read(&path).expect("log"), b"hello\n");
        assert!(!cut.is_cut() && !tail_path(&path).exists());
    }
}
