//! `diagnostics/harness.log`: the supervisor's own tracing, split per run.
//!
//! A [`HarnessLogLayer`] (a tracing-subscriber `Layer`) routes every event emitted inside a span
//! that carries a `run_id` field — `tracing::info_span!("run", run_id = %id)` — to that run's
//! file, and every other event to the suite log. The files are opened and closed through the
//! shared [`HarnessLogs`] handle (the reporter does it when a run starts and ends). Writes are
//! buffered, and nothing is dropped: an event for a run whose file is not open goes to the suite
//! log with its run id; before the suite log is open such lines wait in memory.

use crate::model::ids::RunId;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use tracing::field::{Field, Visit};
use tracing::span;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::report::ground::error::ReportError;
use crate::report::ground::scrub::Redactor;

struct LogSink {
    path: PathBuf,
    writer: BufWriter<File>,
    redactor: Redactor,
    /// The first write error, reported when the sink is closed.
    error: Option<std::io::Error>,
}

impl LogSink {
    fn open(path: &Path, redactor: Redactor) -> Result<Self, ReportError> {
        if let Some(dir) = path.parent() {
            super::artifact_dir::create_owner_only(dir).map_err(|source| {
                ReportError::CreateDir {
                    path: dir.to_path_buf(),
                    source,
                }
            })?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| ReportError::write(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            writer: BufWriter::new(file),
            redactor,
            error: None,
        })
    }

    fn write_line(&mut self, line: &str, flush: bool) {
        let line = self.redactor.str(line);
        let mut result = self.writer.write_all(line.as_bytes());
        if flush {
            result = result.and_then(|()| self.writer.flush());
        }
        if let Err(e) = result {
            self.error.get_or_insert(e);
        }
    }

    fn close(mut self) -> Result<(), ReportError> {
        let flushed = self.writer.flush();
        match (self.error.take(), flushed) {
            (Some(e), _) | (None, Err(e)) => Err(ReportError::write(&self.path, e)),
            (None, Ok(())) => Ok(()),
        }
    }
}

#[derive(Default)]
struct Sinks {
    runs: HashMap<String, LogSink>,
    suite: Option<LogSink>,
    /// Lines waiting for the suite log to open.
    pending: Vec<String>,
}

/// The open harness log files; cheap to clone, shared with the layer.
#[derive(Clone, Default)]
pub struct HarnessLogs {
    sinks: Arc<Mutex<Sinks>>,
}

impl std::fmt::Debug for HarnessLogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HarnessLogs")
    }
}

impl HarnessLogs {
    pub fn new() -> Self {
        Self::default()
    }

    /// The layer to install: `tracing_subscriber::registry().with(logs.layer())`.
    pub fn layer(&self) -> HarnessLogLayer {
        HarnessLogLayer { logs: self.clone() }
    }

    fn lock(&self) -> MutexGuard<'_, Sinks> {
        // A panic while holding the lock leaves plain buffers behind: still usable.
        self.sinks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens the suite log; lines that waited for it are written first.
    pub fn open_suite(&self, path: &Path, redactor: Redactor) -> Result<(), ReportError> {
        let mut sink = LogSink::open(path, redactor)?;
        let mut sinks = self.lock();
        for line in std::mem::take(&mut sinks.pending) {
            sink.write_line(&line, false);
        }
        if let Some(old) = sinks.suite.replace(sink) {
            old.close()?;
        }
        Ok(())
    }

    /// Opens `path` as the log of run `run_id`.
    pub fn open_run(
        &self,
        run_id: &RunId,
        path: &Path,
        redactor: Redactor,
    ) -> Result<(), ReportError> {
        let sink = LogSink::open(path, redactor)?;
        let old = self.lock().runs.insert(run_id.to_string(), sink);
        match old {
            Some(old) => old.close(),
            None => Ok(()),
        }
    }

    /// Flushes and closes run `run_id`'s log. Later events of that run go to the suite log.
    pub fn close_run(&self, run_id: &RunId) -> Result<(), ReportError> {
        let sink = self.lock().runs.remove(run_id.as_str());
        match sink {
            Some(sink) => sink.close(),
            None => Ok(()),
        }
    }

    /// Flushes every open file; they stay open.
    pub fn flush(&self) -> Result<(), ReportError> {
        let mut sinks = self.lock();
        let Sinks { runs, suite, .. } = &mut *sinks;
        let mut first_error = None;
        for sink in runs.values_mut().chain(suite.as_mut()) {
            if let Err(e) = sink.writer.flush() {
                first_error.get_or_insert(ReportError::write(&sink.path, e));
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Flushes and closes every file (the end of the invocation).
    pub fn close_all(&self) -> Result<(), ReportError> {
        let (runs, suite) = {
            let mut sinks = self.lock();
            let runs: Vec<LogSink> = sinks.runs.drain().map(|(_, s)| s).collect();
            (runs, sinks.suite.take())
        };
        let mut first_error = None;
        for sink in runs.into_iter().chain(suite) {
            if let Err(e) = sink.close() {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn write(&self, run_id: Option<&str>, line: String, flush: bool) {
        let mut sinks = self.lock();
        if let Some(id) = run_id {
            if let Some(sink) = sinks.runs.get_mut(id) {
                sink.write_line(&line, flush);
                return;
            }
        }
        let line = match run_id {
            Some(id) => format!("[run {id}] {line}"),
            None => line,
        };
        match sinks.suite.as_mut() {
            Some(sink) => sink.write_line(&line, flush),
            None => sinks.pending.push(line),
        }
    }
}

/// The run a span belongs to, stored in the span's extensions.
struct SpanRunId(String);
/// A span's fields, formatted once.
struct SpanFields(String);

/// Formats fields as ` key=value`, the `message` field first and bare.
#[derive(Default)]
struct FieldText {
    message: String,
    fields: String,
    run_id: Option<String>,
}

impl Visit for FieldText {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "run_id" {
            self.run_id = Some(value.to_string());
        }
        if field.name() == "message" {
            self.message = value.to_string();
        } else {
            let _ = write!(self.fields, " {}={}", field.name(), value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "run_id" {
            self.run_id = Some(format!("{value:?}").trim_matches('"').to_string());
        }
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            let _ = write!(self.fields, " {}={:?}", field.name(), value);
        }
    }
}

/// The tracing layer; see the module doc.
pub struct HarnessLogLayer {
    logs: HarnessLogs,
}

impl<S> Layer<S> for HarnessLogLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut text = FieldText::default();
        attrs.record(&mut text);
        let mut ext = span.extensions_mut();
        if let Some(run_id) = text.run_id.take() {
            ext.insert(SpanRunId(run_id));
        }
        ext.insert(SpanFields(text.fields));
    }

    fn on_record(&self, id: &span::Id, values: &span::Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut text = FieldText::default();
        values.record(&mut text);
        let mut ext = span.extensions_mut();
        if let Some(run_id) = text.run_id.take() {
            ext.replace(SpanRunId(run_id));
        }
        if let Some(fields) = ext.get_mut::<SpanFields>() {
            fields.0.push_str(&text.fields);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut run_id = None;
        let mut spans = Vec::new();
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope {
                let ext = span.extensions();
                if run_id.is_none() {
                    run_id = ext.get::<SpanRunId>().map(|r| r.0.clone());
                }
                let fields = ext.get::<SpanFields>().map_or("", |f| f.0.trim_start());
                if fields.is_empty() {
                    spans.push(span.name().to_string());
                } else {
                    spans.push(format!("{}{{{fields}}}", span.name()));
                }
            }
        }
        spans.reverse();
        let mut text = FieldText::default();
        event.record(&mut text);
        let meta = event.metadata();
        let mut line = format!(
            "{} {:>5} ",
            chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            meta.level()
        );
        if !spans.is_empty() {
            let _ = write!(line, "{}: ", spans.join(":"));
        }
        // The crate's own modules by their path inside it (`actors::supervisor`): shorter lines.
        let target = meta.target();
        let target = target.strip_prefix("bugatti::").unwrap_or(target);
        let _ = write!(line, "{target}: {}{}", text.message, text.fields);
        line.push('\n');
        let urgent = *meta.level() <= Level::WARN;
        // Outside any run span, an event may still name its run in a `run_id` field.
        let run_id = run_id.or(text.run_id);
        self.logs.write(run_id.as_deref(), line, urgent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::redact::Secrets;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn routes_events_by_run_span_and_redacts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let logs = HarnessLogs::new();
        let secrets = Redactor::new([Arc::new(Secrets::new([("TOKEN", "hunter2")]))]);
        let subscriber = tracing_subscriber::registry().with(logs.layer());
        let a = dir.path().join("a/diagnostics/harness.log");
        let b = dir.path().join("b/diagnostics/harness.log");
        let suite = dir.path().join("suite.log");
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("before the suite log opens");
            logs.open_suite(&suite, secrets.clone()).expect("suite");
            logs.open_run(&RunId::new("run-a"), &a, secrets.clone())
                .expect("a");
            logs.open_run(&RunId::new("run-b"), &b, secrets.clone())
                .expect("b");
            let span_a = tracing::info_span!("run", run_id = %"run-a");
            let span_b = tracing::info_span!("run", run_id = "run-b");
            span_a.in_scope(|| {
                let step = tracing::info_span!("step", step_id = 3);
                step.in_scope(|| tracing::info!(token = "hunter2", "step of a"));
            });
            span_b.in_scope(|| tracing::warn!("event of b"));
            logs.close_run(&RunId::new("run-b")).expect("close b");
            span_b.in_scope(|| tracing::info!("late event of b"));
            tracing::info!("suite event");
            tracing::info!(run_id = "run-a", "named its run");
        });
        logs.close_all().expect("close");
        let a = std::fs::read_to_string(a).expect("a log");
        let b = std::fs::read_to_string(b).expect("b log");
        let suite = std::fs::read_to_string(suite).expect("suite log");
        assert!(
            a.contains("step of a") && a.contains("step{step_id=3}"),
            "{a}"
        );
        assert!(
            a.contains("token=[REDACTED:TOKEN]") && !a.contains("hunter2"),
            "{a}"
        );
        assert!(!a.contains("event of b"), "{a}");
        assert!(a.contains("named its run"), "{a}");
        assert!(b.contains("WARN") && b.contains("event of b"), "{b}");
        assert!(!b.contains("late event"), "{b}");
        assert!(
            suite.contains("[run run-b]") && suite.contains("late event of b"),
            "{suite}"
        );
        assert!(suite.contains("suite event") && suite.contains("before the suite log opens"));
        assert!(!suite.contains("step of a"), "{suite}");
    }
}
