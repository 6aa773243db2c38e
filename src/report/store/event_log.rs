//! `events.jsonl`: every event of a run, one redacted JSON object per line, in order, written
//! through to the file as each event happens (a crash loses nothing already reported).

use crate::model::ids::RunId;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::report::ground::error::ReportError;
use crate::report::ground::scrub::Redactor;
use crate::report::records::event_line::EventLine;
use crate::report::records::events::Event;

#[derive(Debug)]
pub struct EventLog {
    path: PathBuf,
    run_id: RunId,
    file: File,
    lines: usize,
}

impl EventLog {
    /// Opens (creating or appending to) the log of run `run_id` at `path`.
    pub fn open(path: &Path, run_id: &RunId) -> Result<Self, ReportError> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| ReportError::write(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            run_id: run_id.clone(),
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
