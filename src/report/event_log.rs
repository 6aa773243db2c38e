//! `events.jsonl`: every event of a run, one redacted JSON object per line, in order, written
//! through to the file as each event happens (a crash loses nothing already reported).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::report::error::ReportError;
use crate::report::events::{Event, EventKind};
use crate::report::run_record::SCHEMA_VERSION;
use crate::report::scrub::Redactor;

/// One line of `events.jsonl` as written: the event, the run it belongs to (so lines from many
/// runs can be concatenated and still told apart) and, on the first line, the layout's version.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct EventLine<'a> {
    /// The layout's version (`schema_version` of run.json): on the `run_started` line only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u32>,
    /// The run's id. The `run_started` line names it among its own fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<&'a str>,
    #[serde(flatten)]
    pub event: &'a Event,
}

impl<'a> EventLine<'a> {
    pub fn of(run_id: &'a str, event: &'a Event) -> Self {
        let first = matches!(event.kind, EventKind::RunStarted { .. });
        Self {
            schema_version: first.then_some(SCHEMA_VERSION),
            run_id: (!first).then_some(run_id),
            event,
        }
    }
}

#[derive(Debug)]
pub struct EventLog {
    path: PathBuf,
    run_id: String,
    file: File,
    lines: usize,
}

impl EventLog {
    /// Opens (creating or appending to) the log of run `run_id` at `path`.
    pub fn open(path: &Path, run_id: &str) -> Result<Self, ReportError> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| ReportError::write(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            run_id: run_id.to_string(),
            file,
            lines: 0,
        })
    }

    /// Appends one event as one line, in a single write, and flushes it.
    pub fn append(&mut self, event: &Event, redactor: &Redactor) -> Result<(), ReportError> {
        let mut line = redactor.json("event", &EventLine::of(&self.run_id, event), false)?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|e| ReportError::write(&self.path, e))?;
        self.lines += 1;
        Ok(())
    }

    pub fn lines(&self) -> usize {
        self.lines
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}
