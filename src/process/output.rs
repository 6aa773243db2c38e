//! Output capture: the pump that moves a process's bytes from its pipe (or PTY) to its log file,
//! and the fan-out that hands lines to whoever subscribed (a log readiness probe today, the agent
//! console later).
//!
//! Bulk output never travels through a mailbox: one dedicated thread per process reads big chunks
//! and writes them through a buffered writer, raw (invalid UTF-8 is kept as is; only secrets are
//! replaced). Lines are cut and decoded only while somebody listens.

use crate::report::redact::{Secrets, StreamRedactor};
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, watch};

const READ_CHUNK: usize = 64 * 1024;
const WRITE_BUFFER: usize = 256 * 1024;
/// A "line" longer than this is handed to subscribers in pieces.
const MAX_LINE: usize = 64 * 1024;

/// The subscribers to one command's output lines. Cheap to clone; outlives restarts, so a
/// subscription made before a restart keeps receiving the new process's lines.
#[derive(Clone, Default, Debug)]
pub struct OutputHub {
    inner: Arc<HubInner>,
}

#[derive(Default, Debug)]
struct HubInner {
    subscribers: Mutex<Vec<mpsc::UnboundedSender<Arc<str>>>>,
    count: AtomicUsize,
}

impl OutputHub {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every line written from now on (secrets redacted, decoded lossily, without the line end).
    /// Dropping the receiver unsubscribes.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Arc<str>> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut subs = self.lock();
        subs.push(tx);
        self.inner.count.store(subs.len(), Ordering::Release);
        rx
    }

    pub fn has_subscribers(&self) -> bool {
        self.inner.count.load(Ordering::Acquire) > 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<mpsc::UnboundedSender<Arc<str>>>> {
        self.inner
            .subscribers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn publish(&self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let text: Arc<str> = String::from_utf8_lossy(line).into();
        let mut subs = self.lock();
        subs.retain(|tx| tx.send(text.clone()).is_ok());
        self.inner.count.store(subs.len(), Ordering::Release);
    }
}

/// Cuts a byte stream into lines for the hub, carrying a partial line across chunks.
struct LineSplitter {
    partial: Vec<u8>,
}

impl LineSplitter {
    fn feed(&mut self, hub: &OutputHub, data: &[u8]) {
        if !hub.has_subscribers() {
            // Keep only the unfinished tail, so a subscriber arriving mid-line gets it whole.
            match data.iter().rposition(|&b| b == b'\n') {
                Some(end) => {
                    self.partial.clear();
                    self.partial.extend_from_slice(&data[end + 1..]);
                }
                None => self.partial.extend_from_slice(data),
            }
            if self.partial.len() > MAX_LINE {
                self.partial.clear();
            }
            return;
        }
        let mut rest = data;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            if self.partial.is_empty() {
                hub.publish(&rest[..end]);
            } else {
                self.partial.extend_from_slice(&rest[..end]);
                hub.publish(&self.partial);
                self.partial.clear();
            }
            rest = &rest[end + 1..];
        }
        self.partial.extend_from_slice(rest);
        if self.partial.len() > MAX_LINE {
            hub.publish(&self.partial);
            self.partial.clear();
        }
    }

    fn finish(&mut self, hub: &OutputHub) {
        if !self.partial.is_empty() && hub.has_subscribers() {
            hub.publish(&self.partial);
        }
        self.partial.clear();
    }
}

/// The running pump of one process: `drained` turns true once the stream hit end-of-file (every
/// writer closed, grandchildren included) and the log file was flushed.
#[derive(Debug, Clone)]
pub struct PumpHandle {
    drained: watch::Receiver<bool>,
}

impl PumpHandle {
    /// Waits for the end of the stream, at most `limit` (a background process may hold the pipe).
    pub async fn drained(&self, limit: std::time::Duration) -> bool {
        let mut rx = self.drained.clone();
        tokio::time::timeout(limit, rx.wait_for(|done| *done))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

/// Starts the pump thread: `source` → redaction → buffered `log`, lines → `hub`.
pub fn spawn_pump(
    name: &str,
    mut source: Box<dyn Read + Send>,
    log: File,
    secrets: Arc<Secrets>,
    hub: OutputHub,
) -> std::io::Result<PumpHandle> {
    let (done_tx, done_rx) = watch::channel(false);
    std::thread::Builder::new()
        .name(format!("pump-{name}"))
        .spawn(move || {
            let mut writer = BufWriter::with_capacity(WRITE_BUFFER, log);
            let mut redactor = (!secrets.is_empty()).then(|| StreamRedactor::new(secrets));
            let mut splitter = LineSplitter {
                partial: Vec::new(),
            };
            let mut buf = vec![0u8; READ_CHUNK];
            loop {
                let n = match source.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    // A PTY master reads EIO once the last slave closes: that is the end.
                    Err(_) => break,
                };
                let written = match redactor.as_mut() {
                    Some(r) => {
                        let clean = r.push(&buf[..n]);
                        write_and_split(&mut writer, &mut splitter, &hub, &clean)
                    }
                    None => write_and_split(&mut writer, &mut splitter, &hub, &buf[..n]),
                };
                // A short read means the pipe is empty for now: make the file current, so that
                // an error message's log tail and live readers see everything so far.
                if written.is_err() || (n < READ_CHUNK && writer.flush().is_err()) {
                    tracing::warn!("log write failed; output of this command is discarded");
                    drain_rest(&mut source, &mut buf);
                    break;
                }
            }
            if let Some(r) = redactor.as_mut() {
                let tail = r.finish();
                let _ = write_and_split(&mut writer, &mut splitter, &hub, &tail);
            }
            splitter.finish(&hub);
            let _ = writer.flush();
            let _ = done_tx.send(true);
        })?;
    Ok(PumpHandle { drained: done_rx })
}

fn write_and_split(
    writer: &mut BufWriter<File>,
    splitter: &mut LineSplitter,
    hub: &OutputHub,
    data: &[u8],
) -> std::io::Result<()> {
    writer.write_all(data)?;
    splitter.feed(hub, data);
    Ok(())
}

/// Keeps reading so the writer never blocks on a full pipe once the log cannot be written.
fn drain_rest(source: &mut Box<dyn Read + Send>, buf: &mut [u8]) {
    while matches!(source.read(buf), Ok(n) if n > 0) {}
}

/// The last `max_lines` lines of a log file (at most its last 8 KiB), lossily decoded: what an
/// error message shows of a failed command.
pub fn log_tail(path: &std::path::Path, max_lines: usize) -> String {
    use std::io::{Seek, SeekFrom};
    const WINDOW: u64 = 8 * 1024;
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(WINDOW);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let skip = lines.len().saturating_sub(max_lines);
    lines[skip..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitter_joins_lines_across_chunks_and_strips_cr() {
        let hub = OutputHub::new();
        let mut rx = hub.subscribe();
        let mut s = LineSplitter {
            partial: Vec::new(),
        };
        s.feed(&hub, b"hel");
        s.feed(&hub, b"lo\r\nwor");
        s.feed(&hub, b"ld\n\xffend");
        s.finish(&hub);
        let got: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|l| l.to_string())
            .collect();
        assert_eq!(got, vec!["hello", "world", "\u{fffd}end"]);
    }

    #[test]
    fn dropped_subscribers_are_pruned() {
        let hub = OutputHub::new();
        let rx = hub.subscribe();
        assert!(hub.has_subscribers());
        drop(rx);
        hub.publish(b"x");
        assert!(!hub.has_subscribers());
    }
}
