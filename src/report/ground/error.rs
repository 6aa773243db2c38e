//! Errors of the reporting layer. Each names the file it was about.

use crate::model::ids::RunId;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot create directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot serialize {what}: {source}")]
    Json {
        what: &'static str,
        source: serde_json::Error,
    },
    #[error("cannot build the JUnit report: {0}")]
    Junit(String),
    #[error("no run {run_id} is open in the reporter")]
    UnknownRun { run_id: RunId },
    #[error("the reporter failed while handling {what}: {why}")]
    Panicked { what: &'static str, why: String },
    #[error("the reporter is gone: {0}")]
    ReporterGone(String),
}

impl From<crate::atomic::WriteError> for ReportError {
    fn from(e: crate::atomic::WriteError) -> Self {
        Self::Write {
            path: e.path,
            source: e.source,
        }
    }
}

impl ReportError {
    pub fn write(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Write {
            path: path.into(),
            source,
        }
    }
}
