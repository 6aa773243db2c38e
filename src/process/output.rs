//! Output capture: the pump that moves a process's bytes from its pipe (or PTY) to its log file,
//! and the fan-out that hands lines to whoever subscribed (a log readiness probe, the agent
//! console's `wait_for_log`) and chunks to a tap (the agent console's console sessions).
//!
//! Bulk output never travels through a mailbox: one dedicated thread per process reads big chunks
//! and writes them through a buffered writer, raw (invalid UTF-8 is kept as is; only secrets are
//! replaced). Lines are cut and decoded only while somebody listens.

use super::log_limit::{LimitedLog, LogCut};
use crate::model::redact::{Secrets, StreamRedactor};
use std::fs::File;
use std::io::Read;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, watch};

const READ_CHUNK: usize = 256 * 1024;
/// A "line" longer than this is handed to subscribers in pieces.
const MAX_LINE: usize = 64 * 1024;
/// Lines a subscriber may have unread before further lines are dropped (and counted): a slow
/// reader must not grow the supervisor's memory with a command's whole output.
pub const SUBSCRIBER_CAPACITY: usize = 1024;

/// The subscribers to one command's output lines. Cheap to clone; outlives restarts, so a
/// subscription made before a restart keeps receiving the new process's lines.
#[derive(Clone, Default, Debug)]
pub struct OutputHub {
    inner: Arc<HubInner>,
}

#[derive(Default, Debug)]
struct HubInner {
    /// The command's output has ended (its pump read end-of-file): a finished short-lived
    /// command, or a long-lived one that exited (set back when a restart pumps again).
    ended: std::sync::atomic::AtomicBool,
    subscribers: Mutex<Vec<Subscriber>>,
    count: AtomicUsize,
    /// The last complete line written, for "what it last saw" messages.
    last_line: Mutex<Vec<u8>>,
    /// Whether the command's log reached `max_log_bytes`, and by how much (over every
    /// incarnation: they append to one log).
    log_cut: Arc<LogCut>,
}

#[derive(Debug)]
struct Subscriber {
    tx: mpsc::Sender<Arc<str>>,
    /// Only lines matching this (`^`/`$` anchor lines); `None`: every line.
    filter: Option<Filter>,
    dropped: Arc<AtomicU64>,
}

#[derive(Debug)]
struct Filter {
    line: regex::bytes::Regex,
    /// The same pattern in multi-line, CRLF-aware form, run over a whole chunk of lines first:
    /// a chunk without a match (the usual case) is never cut into lines.
    chunk: regex::bytes::Regex,
}

/// A stream of output lines (secrets redacted, decoded lossily, without the line end).
#[derive(Debug)]
pub struct LineSubscription {
    rx: mpsc::Receiver<Arc<str>>,
    hub: OutputHub,
    dropped: Arc<AtomicU64>,
}

impl LineSubscription {
    pub async fn recv(&mut self) -> Option<Arc<str>> {
        self.rx.recv().await
    }

    pub fn try_recv(&mut self) -> Option<Arc<str>> {
        self.rx.try_recv().ok()
    }

    /// Lines lost because this subscriber had [`SUBSCRIBER_CAPACITY`] lines unread.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    pub fn hub(&self) -> &OutputHub {
        &self.hub
    }
}

impl OutputHub {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the command's output has ended (see `HubInner::ended`).
    pub fn output_ended(&self) -> bool {
        self.inner.ended.load(Ordering::Acquire)
    }

    /// Every line written from now on. Dropping the subscription unsubscribes.
    pub fn subscribe(&self) -> LineSubscription {
        self.add(None)
    }

    /// Only the lines matching `pattern` (a regex; `^` and `$` anchor a line), matched in the pump
    /// thread, so that a log probe costs nothing per line of a chatty command.
    pub fn subscribe_matching(&self, pattern: &str) -> Result<LineSubscription, regex::Error> {
        let line = regex::bytes::Regex::new(pattern)?;
        let chunk = regex::bytes::Regex::new(&format!("(?mR:{pattern})"))?;
        Ok(self.add(Some(Filter { line, chunk })))
    }

    fn add(&self, filter: Option<Filter>) -> LineSubscription {
        let (tx, rx) = mpsc::channel(SUBSCRIBER_CAPACITY);
        let dropped = Arc::new(AtomicU64::new(0));
        let mut subs = self.lock();
        subs.push(Subscriber {
            tx,
            filter,
            dropped: dropped.clone(),
        });
        self.inner.count.store(subs.len(), Ordering::Release);
        LineSubscription {
            rx,
            hub: self.clone(),
            dropped,
        }
    }

    /// Bytes of the command's output past its log's `max_log_bytes` (kept only as a rolling
    /// tail); 0 while the log is whole.
    pub fn log_truncated_bytes(&self) -> u64 {
        self.inner.log_cut.past_limit()
    }

    pub fn has_subscribers(&self) -> bool {
        self.inner.count.load(Ordering::Acquire) > 0
    }

    /// The last complete line written so far, if any.
    pub fn last_line(&self) -> Option<String> {
        let last = self
            .inner
            .last_line
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        (!last.is_empty()).then(|| String::from_utf8_lossy(strip_cr(&last)).into_owned())
    }

    fn set_last_line(&self, line: &[u8]) {
        let mut last = self
            .inner
            .last_line
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        last.clear();
        last.extend_from_slice(&line[..line.len().min(MAX_LINE)]);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Subscriber>> {
        self.inner
            .subscribers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Hands the complete lines in `region` (ending with a newline) to the subscribers.
    fn publish_lines(&self, region: &[u8]) {
        let mut subs = self.lock();
        let wanted: Vec<bool> = subs
            .iter()
            .map(|s| s.filter.as_ref().is_none_or(|f| f.chunk.is_match(region)))
            .collect();
        if wanted.iter().any(|w| *w) {
            for line in region.split(|&b| b == b'\n') {
                deliver(&subs, &wanted, line);
            }
        }
        subs.retain(|s| !s.tx.is_closed());
        self.inner.count.store(subs.len(), Ordering::Release);
    }

    /// Hands one (unterminated) line to the subscribers.
    fn publish(&self, line: &[u8]) {
        let mut subs = self.lock();
        let wanted = vec![true; subs.len()];
        deliver(&subs, &wanted, line);
        subs.retain(|s| !s.tx.is_closed());
        self.inner.count.store(subs.len(), Ordering::Release);
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn deliver(subs: &[Subscriber], wanted: &[bool], line: &[u8]) {
    let line = strip_cr(line);
    let mut text: Option<Arc<str>> = None;
    for (sub, _) in subs.iter().zip(wanted).filter(|(_, w)| **w) {
        if sub.filter.as_ref().is_some_and(|f| !f.line.is_match(line)) {
            continue;
        }
        if sub.tx.capacity() == 0 {
            sub.dropped.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let text = text.get_or_insert_with(|| String::from_utf8_lossy(line).into());
        if let Err(mpsc::error::TrySendError::Full(_)) = sub.tx.try_send(text.clone()) {
            sub.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Cuts a byte stream into lines for the hub, carrying a partial line across chunks.
struct LineSplitter {
    partial: Vec<u8>,
    scratch: Vec<u8>,
}

impl LineSplitter {
    fn new() -> Self {
        Self {
            partial: Vec::new(),
            scratch: Vec::new(),
        }
    }

    fn feed(&mut self, hub: &OutputHub, data: &[u8]) {
        // memrchr: this runs over every byte a command prints, at up to GiB/s.
        let Some(end) = memchr::memrchr(b'\n', data) else {
            self.partial.extend_from_slice(data);
            if self.partial.len() > MAX_LINE {
                if hub.has_subscribers() {
                    hub.publish(&self.partial);
                }
                self.partial.clear();
            }
            return;
        };
        let (complete, rest) = data.split_at(end + 1);
        // The region of complete lines: the carried partial line, then this chunk's lines.
        let region: &[u8] = if self.partial.is_empty() {
            complete
        } else {
            self.scratch.clear();
            self.scratch.extend_from_slice(&self.partial);
            self.scratch.extend_from_slice(complete);
            &self.scratch
        };
        let body = &region[..region.len() - 1];
        let last_start = memchr::memrchr(b'\n', body).map_or(0, |p| p + 1);
        hub.set_last_line(&body[last_start..]);
        if hub.has_subscribers() {
            hub.publish_lines(body);
        }
        self.partial.clear();
        self.partial.extend_from_slice(rest);
    }

    fn finish(&mut self, hub: &OutputHub) {
        if !self.partial.is_empty() {
            hub.set_last_line(&self.partial);
            if hub.has_subscribers() {
                hub.publish(&self.partial);
            }
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

/// Where a pump writes: the command's log (open for appending), its path, and its limit.
pub struct LogTarget {
    pub file: File,
    pub path: std::path::PathBuf,
    /// `[supervisor] max_log_bytes`.
    pub max_bytes: u64,
}

/// Whoever else reads a process's output as it is written: the agent console's console
/// sessions keep the unread part for the next call. It sees the bytes the log gets (secrets
/// redacted over the whole stream, so a secret split across two reads is never seen in clear),
/// whether or not the log kept them, and then the end of the stream.
pub trait OutputTap: Send + 'static {
    /// Redacted bytes, in order.
    fn chunk(&mut self, data: &[u8]);
    /// The stream ended (and the log is flushed).
    fn end(&mut self);
}

/// Starts the pump thread: `source` → redaction → buffered `log` (head, then rolling tail, see
/// [`super::log_limit`]), lines → `hub` (every line, whether or not the log kept it).
pub fn spawn_pump(
    name: &str,
    source: Box<dyn Read + Send>,
    log: LogTarget,
    secrets: Arc<Secrets>,
    hub: OutputHub,
) -> std::io::Result<PumpHandle> {
    spawn_pump_with_tap(name, source, log, secrets, hub, None)
}

/// [`spawn_pump`], also handing every redacted chunk to `tap`. The one pump of every output the
/// supervisor keeps (harness commands, `on_finish`, console sessions), so one `max_log_bytes`
/// holds for all of them.
pub fn spawn_pump_with_tap(
    name: &str,
    mut source: Box<dyn Read + Send>,
    log: LogTarget,
    secrets: Arc<Secrets>,
    hub: OutputHub,
    mut tap: Option<Box<dyn OutputTap>>,
) -> std::io::Result<PumpHandle> {
    let (done_tx, done_rx) = watch::channel(false);
    let cut = hub.inner.log_cut.clone();
    hub.inner.ended.store(false, Ordering::Release);
    std::thread::Builder::new()
        .name(format!("pump-{name}"))
        .spawn(move || {
            let mut writer = LimitedLog::new(log.file, &log.path, log.max_bytes, cut);
            let mut redactor = (!secrets.is_empty()).then(|| StreamRedactor::new(secrets));
            let mut splitter = LineSplitter::new();
            let mut buf = vec![0u8; READ_CHUNK];
            let mut log_ok = true;
            loop {
                let n = match source.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    // A PTY master reads EIO once the last slave closes: that is the end.
                    Err(_) => break,
                };
                let data: std::borrow::Cow<'_, [u8]> = match redactor.as_mut() {
                    Some(r) => r.push(&buf[..n]).into(),
                    None => (&buf[..n]).into(),
                };
                // A short read means the pipe is empty for now: make the file current, so that
                // an error message's log tail and live readers see everything so far. A log that
                // cannot be written is given up, but the stream is still read to its end (the
                // writer never blocks on a full pipe) and still reaches the tap and the hub.
                if log_ok
                    && (writer.write_all(&data).is_err()
                        || (n < READ_CHUNK && writer.flush().is_err()))
                {
                    tracing::warn!("log write failed; output of this command is discarded");
                    log_ok = false;
                }
                if let Some(tap) = tap.as_mut() {
                    tap.chunk(&data);
                }
                // Lines go out once written (and, after a short read, in the file): the agent
                // console's wait_for_log then finds the line it was woken for at its offset.
                splitter.feed(&hub, &data);
            }
            let tail = redactor
                .as_mut()
                .map(StreamRedactor::finish)
                .unwrap_or_default();
            if log_ok {
                let _ = writer.write_all(&tail);
                let _ = writer.flush();
            }
            splitter.feed(&hub, &tail);
            splitter.finish(&hub);
            if let Some(tap) = tap.as_mut() {
                tap.chunk(&tail);
                tap.end();
            }
            hub.inner.ended.store(true, Ordering::Release);
            let _ = done_tx.send(true);
        })?;
    Ok(PumpHandle { drained: done_rx })
}

/// The last `max_lines` lines of a log file (at most its last 8 KiB), lossily decoded: what an
/// error message shows of a failed command.
pub fn log_tail(path: &std::path::Path, max_lines: usize) -> String {
    use std::io::{Seek, SeekFrom};
    const WINDOW: u64 = 8 * 1024;
    // A cut log ends with the limit's marker: the newest output is in the rolling tail.
    if let Some(bytes) = super::log_limit::newest_output(path, WINDOW) {
        let start = bytes.len().saturating_sub(WINDOW as usize);
        return last_lines_of(&bytes[start..], max_lines);
    }
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
    last_lines_of(&bytes, max_lines)
}

fn last_lines_of(bytes: &[u8], max_lines: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    let skip = lines.len().saturating_sub(max_lines);
    lines[skip..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(sub: &mut LineSubscription) -> Vec<String> {
        std::iter::from_fn(|| sub.try_recv())
            .map(|l| l.to_string())
            .collect()
    }

    #[test]
    fn splitter_joins_lines_across_chunks_and_strips_cr() {
        let hub = OutputHub::new();
        let mut all = hub.subscribe();
        let mut s = LineSplitter::new();
        s.feed(&hub, b"hel");
        s.feed(&hub, b"lo\r\nwor");
        s.feed(&hub, b"ld\n\xffend");
        s.finish(&hub);
        assert_eq!(drain(&mut all), vec!["hello", "world", "\u{fffd}end"]);
        assert_eq!(hub.last_line().as_deref(), Some("\u{fffd}end"));
    }

    #[test]
    fn filtered_subscribers_get_only_matching_lines_even_across_chunks() {
        let hub = OutputHub::new();
        let mut ready = hub
            .subscribe_matching("^listening on \\d+$")
            .expect("regex");
        let mut s = LineSplitter::new();
        s.feed(&hub, b"noise\nlisten");
        s.feed(&hub, b"ing on 80\r\nlistening on x\n");
        s.finish(&hub);
        assert_eq!(drain(&mut ready), vec!["listening on 80"]);
        assert!(hub.subscribe_matching("(unclosed").is_err());
    }

    #[test]
    fn a_slow_subscriber_loses_lines_instead_of_growing_memory() {
        let hub = OutputHub::new();
        let mut all = hub.subscribe();
        let mut s = LineSplitter::new();
        let many = b"y\n".repeat(SUBSCRIBER_CAPACITY + 10);
        s.feed(&hub, &many);
        assert_eq!(drain(&mut all).len(), SUBSCRIBER_CAPACITY);
        assert_eq!(all.dropped(), 10);
    }

    #[test]
    fn dropped_subscribers_are_pruned() {
        let hub = OutputHub::new();
        let sub = hub.subscribe();
        assert!(hub.has_subscribers());
        drop(sub);
        hub.publish(b"x");
        assert!(!hub.has_subscribers());
    }
}
