//! The names of the files a run and a suite leave behind (docs/reports.md), in one place.

use std::path::{Path, PathBuf};

/// Files of one run directory, `.bugatti/runs/<run_id>/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPaths {
    pub dir: PathBuf,
}

impl RunPaths {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }
    pub fn run_json(&self) -> PathBuf {
        self.dir.join("run.json")
    }
    pub fn events(&self) -> PathBuf {
        self.dir.join("events.jsonl")
    }
    pub fn report_md(&self) -> PathBuf {
        self.dir.join("report.md")
    }
    pub fn diagnostics_dir(&self) -> PathBuf {
        self.dir.join("diagnostics")
    }
    pub fn harness_log(&self) -> PathBuf {
        self.diagnostics_dir().join("harness.log")
    }
    pub fn transcripts_dir(&self) -> PathBuf {
        self.dir.join("transcripts")
    }
    pub fn logs_dir(&self) -> PathBuf {
        self.dir.join("logs")
    }
    pub fn screenshots_dir(&self) -> PathBuf {
        self.dir.join("screenshots")
    }
    /// The subdirectories created before anything is launched.
    pub fn subdirs(&self) -> [PathBuf; 4] {
        [
            self.diagnostics_dir(),
            self.transcripts_dir(),
            self.logs_dir(),
            self.screenshots_dir(),
        ]
    }
}

/// Files of one suite directory, `.bugatti/suites/<suite_id>/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuitePaths {
    pub dir: PathBuf,
}

impl SuitePaths {
    /// `<artifact_dir>/suites/<suite_id>`.
    pub fn under(artifact_dir: &Path, suite_id: &str) -> Self {
        Self {
            dir: suites_dir(artifact_dir).join(suite_id),
        }
    }
    /// A suite directory found elsewhere (`report`, `merge --out`).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }
    pub fn report_html(&self) -> PathBuf {
        self.dir.join("report.html")
    }
    pub fn summary_json(&self) -> PathBuf {
        self.dir.join("summary.json")
    }
    pub fn summary_md(&self) -> PathBuf {
        self.dir.join("summary.md")
    }
    pub fn junit(&self) -> PathBuf {
        self.dir.join("junit.xml")
    }
    pub fn harness_log(&self) -> PathBuf {
        self.dir.join("harness.log")
    }
}

/// `<artifact_dir>/suites`: one directory per invocation.
pub fn suites_dir(artifact_dir: &Path) -> PathBuf {
    artifact_dir.join("suites")
}

/// `<artifact_dir>/runs`: one directory per run of a root test.
pub fn runs_dir(artifact_dir: &Path) -> PathBuf {
    artifact_dir.join("runs")
}
