//! The harness log lines written while a step ran: the byte length of every command log in the
//! run's `logs/` is taken when a step starts, and for a step that did not pass, what each log
//! gained until it ended is kept (its last lines, bounded) with the step. So a traceback the
//! server printed while the step hit it sits next to the failure, and the lines of earlier steps
//! do not.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// At most this many bytes of one command's output are kept per step (its end).
const MAX_BYTES: u64 = 16 * 1024;
/// At most this many lines of one command's output are kept per step (its last ones).
const MAX_LINES: usize = 200;

/// Where each harness command's log ended at one moment: command name → byte length.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogMarks(BTreeMap<String, u64>);

impl LogMarks {
    /// The current length of every `<command>.log` in `logs_dir` (none yet: no entry).
    pub fn take(logs_dir: &Path) -> Self {
        let mut marks = BTreeMap::new();
        let Ok(entries) = std::fs::read_dir(logs_dir) else {
            return Self(marks);
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(name) = log_name(&path) else {
                continue;
            };
            if let Ok(meta) = entry.metadata() {
                marks.insert(name, meta.len());
            }
        }
        Self(marks)
    }

    /// What each log gained since these marks were taken: command name → its last lines (at
    /// most [`MAX_LINES`] and [`MAX_BYTES`], cut at a line start). Logs that gained nothing
    /// are left out.
    pub fn excerpt_since(&self, logs_dir: &Path) -> BTreeMap<String, String> {
        let now = Self::take(logs_dir);
        let mut out = BTreeMap::new();
        for (name, end) in now.0 {
            let start = self.0.get(&name).copied().unwrap_or(0);
            if end <= start {
                continue;
            }
            let from = start.max(end.saturating_sub(MAX_BYTES));
            if let Some(text) = read_range(
                &crate::model::artifacts::command_log(logs_dir, &name),
                from,
                end,
            ) {
                let text = last_lines(&text, from > start);
                if !text.trim().is_empty() {
                    out.insert(name, text);
                }
            }
        }
        out
    }
}

fn log_name(path: &Path) -> Option<String> {
    let file = path.file_name()?.to_str()?;
    file.strip_suffix(".log").map(str::to_string)
}

fn read_range(path: &Path, from: u64, to: u64) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    file.seek(SeekFrom::Start(from)).ok()?;
    let mut bytes = Vec::new();
    file.take(to - from).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The last [`MAX_LINES`] lines of `text`; when `cut` (the range was shortened at its start),
/// the first, partial line is dropped and the text says that earlier lines were left out.
fn last_lines(text: &str, cut: bool) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    let mut dropped = cut;
    if cut && !lines.is_empty() {
        lines.remove(0);
    }
    if lines.len() > MAX_LINES {
        lines.drain(..lines.len() - MAX_LINES);
        dropped = true;
    }
    let mut out = String::new();
    if dropped {
        out.push_str("[… earlier lines of this step left out]\n");
    }
    out.push_str(&lines.join("\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn only_what_was_written_after_the_marks_is_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = |name: &str, text: &str| {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.path().join(format!("{name}.log")))
                .expect("log");
            f.write_all(text.as_bytes()).expect("write");
        };
        log("server", "GET /health 200\n");
        log("quiet", "started\n");
        let marks = LogMarks::take(dir.path());
        log(
            "server",
            "Traceback (most recent call last):\nKeyError: 'basket'\n",
        );
        log("worker", "new log\n");
        let excerpt = marks.excerpt_since(dir.path());
        assert_eq!(
            excerpt.get("server").map(String::as_str),
            Some("Traceback (most recent call last):\nKeyError: 'basket'")
        );
        assert_eq!(excerpt.get("worker").map(String::as_str), Some("new log"));
        assert!(!excerpt.contains_key("quiet"), "{excerpt:?}");
    }

    #[test]
    fn a_long_excerpt_keeps_its_end_and_says_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        let marks = LogMarks::take(dir.path());
        let text: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("server.log"), text).expect("write");
        let excerpt = &marks.excerpt_since(dir.path())["server"];
        assert!(excerpt.starts_with("[… earlier lines of this step left out]\n"));
        assert!(excerpt.ends_with("line 4999"));
        assert_eq!(excerpt.lines().count(), MAX_LINES + 1);
    }
}
