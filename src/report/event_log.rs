//! `events.jsonl`: every event of a run, one redacted JSON object per line, in order, written
//! through to the file as each event happens (a crash loses nothing already reported).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::report::error::ReportError;
use crate::report::events::Event;
use crate::report::scrub::Redactor;

#[derive(Debug)]
pub struct EventLog {
    path: PathBuf,
    file: File,
    lines: usize,
}

impl EventLog {
    /// Opens (creating or appending to) the log at `path`.
    pub fn open(path: &Path) -> Result<Self, ReportError> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| ReportError::write(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
            lines: 0,
        })
    }

    /// Appends one event as one line, in a single write, and flushes it.
    pub fn append(&mut self, event: &Event, redactor: &Redactor) -> Result<(), ReportError> {
        let mut line = redactor.json("event", event, false)?;
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
