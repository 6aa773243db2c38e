//! The files of one run, kept up to date as its events arrive: `events.jsonl` (appended and
//! flushed per event), `run.json` (rewritten atomically as the run goes, spaced so that its cost
//! stays a small share of the run's time however large it grows) and, at the end, `report.md`. Everything passes through the run's redactor. The reporter actor owns one
//! `RunWriter` per open run; nothing else writes these files.

use crate::model::ids::RunId;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use chrono::Utc;

use crate::atomic::write_atomic;
use crate::model::artifacts::RunPaths;
use crate::model::outcome::RunOutcome;
use crate::report::ground::error::ReportError;
use crate::report::ground::scrub::Redactor;
use crate::report::records::events::{Event, EventKind};
use crate::report::records::run_record::{RunPlan, RunRecord};
use crate::report::renderers::markdown::{self, ReportInput, Section};
use crate::report::store::event_log::EventLog;

/// What a finished run left behind.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFiles {
    pub run_id: RunId,
    pub outcome: RunOutcome,
    pub run_json: PathBuf,
    pub events: PathBuf,
    pub report_md: PathBuf,
    /// Problems met while writing (each also in report.md's notes).
    pub notes: Vec<String>,
}

/// run.json is rewritten whole, and a record of thousands of steps takes milliseconds to write:
/// after a rewrite that took `t`, the next waits until `GAP_FACTOR × t` has passed (never more
/// than [`MAX_GAP`]), so writing run.json takes at most about 1/`GAP_FACTOR` of the run's time
/// and a run's cost stays linear in its steps. A small record (microseconds) is still rewritten
/// on every event that changes it.
const GAP_FACTOR: u32 = 20;
/// The longest run.json may lag behind events.jsonl (the reporter flushes it then).
pub const MAX_GAP: Duration = Duration::from_secs(1);
/// The shortest gap between two rewrites: a replayed step takes milliseconds, and each rewrite
/// is a new inode and a rename over the old file, which on ext4 starts the new file's writeback
/// in the one reporter every session waits on. A poller sees a change within a quarter second.
const MIN_GAP: Duration = Duration::from_millis(250);

#[derive(Debug)]
pub struct RunWriter {
    paths: RunPaths,
    record: RunRecord,
    events: EventLog,
    redactor: Redactor,
    notes: Vec<String>,
    /// The earliest time of the next run.json rewrite (see [`GAP_FACTOR`]).
    next_json_at: Instant,
    /// run.json is behind the record (a rewrite was put off).
    json_behind: bool,
    /// run.json holds the record as it is now: written, and no event applied since. The final
    /// rewrite is then skipped (on ext4, each atomic rewrite allocates an inode, a cost that grows
    /// with the files recently deleted on the file system).
    json_current: bool,
}

impl RunWriter {
    /// Creates the run directory and its subdirectories, writes the first `run_started` event
    /// and the first run.json. Fails, naming the path, when the directory cannot be made.
    pub fn start(plan: &RunPlan, redactor: Redactor) -> Result<Self, ReportError> {
        let paths = RunPaths::new(&plan.identity.run_dir);
        for dir in std::iter::once(paths.dir.clone()).chain(paths.subdirs()) {
            super::artifact_dir::create_owner_only(&dir)
                .map_err(|source| ReportError::CreateDir { path: dir, source })?;
        }
        let events = EventLog::open(&paths.events(), &plan.identity.run_id)?;
        let mut writer = Self {
            record: RunRecord::from_plan(plan),
            paths,
            events,
            redactor,
            notes: Vec::new(),
            next_json_at: Instant::now(),
            json_behind: false,
            json_current: false,
        };
        let started = plan.identity.started_event();
        writer.events.append(&started, &writer.redactor)?;
        writer.write_run_json()?;
        Ok(writer)
    }

    pub fn record(&self) -> &RunRecord {
        &self.record
    }

    pub fn paths(&self) -> &RunPaths {
        &self.paths
    }

    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    fn note(&mut self, e: &ReportError) {
        tracing::error!(run_id = %self.record.identity.run_id, "{e}");
        self.notes.push(e.to_string());
    }

    fn write_run_json(&mut self) -> Result<(), ReportError> {
        let began = Instant::now();
        self.json_behind = false;
        let mut json = self.redactor.json("run.json", &self.record, true)?;
        json.push('\n');
        let written =
            write_atomic(&self.paths.run_json(), json.as_bytes()).map_err(ReportError::from);
        self.json_current = written.is_ok();
        let now = Instant::now();
        self.next_json_at = now
            + (now - began)
                .saturating_mul(GAP_FACTOR)
                .clamp(MIN_GAP, MAX_GAP);
        written
    }

    /// How long until run.json, now behind the record, may be rewritten; `None` when it is up
    /// to date. The reporter calls [`flush_run_json`](Self::flush_run_json) then.
    pub fn run_json_due_in(&self) -> Option<Duration> {
        self.json_behind
            .then(|| self.next_json_at.saturating_duration_since(Instant::now()))
    }

    /// Rewrites run.json if it is behind the record. A failure is kept as a note and returned.
    pub fn flush_run_json(&mut self) -> Result<(), ReportError> {
        if !self.json_behind {
            return Ok(());
        }
        let written = self.write_run_json();
        if let Err(e) = &written {
            self.note(e);
        }
        written
    }

    /// Records one event: appended to events.jsonl at once, applied to the record, and run.json
    /// rewritten when the event changes something a reader polls for. A write failure is kept
    /// as a note for report.md and returned; the run goes on.
    pub fn apply(&mut self, event: &Event) -> Result<(), ReportError> {
        let appended = self.events.append(event, &self.redactor);
        if let Err(e) = &appended {
            self.note(e);
        }
        self.record.apply(event);
        self.json_current = false;
        let rewrite = match &event.kind {
            EventKind::StepFinished { .. }
            | EventKind::StepStarted { .. }
            | EventKind::SetupStatus { .. }
            | EventKind::CommandTornDown { .. }
            | EventKind::Checkpoint { .. }
            | EventKind::AgentRestarted { .. }
            | EventKind::ModelWait { .. }
            | EventKind::AgentFault { .. }
            | EventKind::RunFinished { .. } => true,
            EventKind::SuiteStarted { .. }
            | EventKind::SuiteFinished { .. }
            | EventKind::RunStarted { .. }
            | EventKind::AgentLog { .. }
            | EventKind::ConsoleCall { .. }
            | EventKind::AgentToolCall { .. }
            | EventKind::HarnessLogExcerpt { .. }
            | EventKind::SessionPrepared { .. }
            | EventKind::Evidence { .. } => false,
        };
        let now_or_never = matches!(event.kind, EventKind::RunFinished { .. });
        if rewrite && !now_or_never && Instant::now() < self.next_json_at {
            self.json_behind = true;
        } else if rewrite {
            if let Err(e) = self.write_run_json() {
                self.note(&e);
                return Err(e);
            }
        }
        appended
    }

    /// Closes the run: a run that never reported its end is closed as `error`; writes the final
    /// run.json and report.md. Both are attempted even when one fails; the first error is returned
    /// beside the final record (which the suite summary needs either way).
    pub fn finish(self) -> (RunRecord, Result<RunFiles, ReportError>) {
        let closed = self.close(markdown::SECTIONS);
        (closed.record, closed.files)
    }

    /// [`finish`](Self::finish) with a chosen list of report.md sections.
    pub fn finish_with_sections(
        self,
        sections: &[Section],
    ) -> (RunRecord, Result<RunFiles, ReportError>) {
        let closed = self.close(sections);
        (closed.record, closed.files)
    }

    /// [`finish`](Self::finish), saying also whether run.json on disk holds the run's outcome
    /// (else the run is unrecorded: the file, if any, is an earlier state of it).
    pub fn finish_checked(self) -> Closed {
        self.close(markdown::SECTIONS)
    }

    fn close(mut self, sections: &[Section]) -> Closed {
        if !self.record.is_finished() {
            let event = Event {
                timestamp: Utc::now(),
                elapsed_ms: u64::try_from(
                    (Utc::now() - self.record.identity.started_at).num_milliseconds(),
                )
                .unwrap_or(0),
                kind: EventKind::RunFinished {
                    outcome: RunOutcome::Error,
                    message: Some("the run ended without reporting an outcome".to_string()),
                },
            };
            let _ = self.apply(&event);
        }
        let json_result = if self.json_current {
            Ok(())
        } else {
            self.write_run_json()
        };
        if let Err(e) = &json_result {
            self.note(e);
        }
        let unrecorded = json_result.as_ref().err().map(ToString::to_string);
        let text = markdown::render_sections(
            &ReportInput {
                record: &self.record,
                run_dir: &self.paths.dir,
                notes: &self.notes,
            },
            sections,
        );
        let md_result = write_atomic(&self.paths.report_md(), self.redactor.str(&text).as_bytes())
            .map_err(ReportError::from);
        if let Err(e) = &md_result {
            self.note(e);
        }
        let files = json_result.and(md_result).map(|()| RunFiles {
            run_id: self.record.identity.run_id.clone(),
            outcome: self.record.outcome.unwrap_or(RunOutcome::Error),
            run_json: self.paths.run_json(),
            events: self.paths.events(),
            report_md: self.paths.report_md(),
            notes: self.notes,
        });
        Closed {
            record: self.record,
            files,
            unrecorded,
        }
    }
}

/// A closed run: its final record, its files, and why its outcome did not reach run.json.
#[derive(Debug)]
pub struct Closed {
    pub record: RunRecord,
    pub files: Result<RunFiles, ReportError>,
    /// The final run.json could not be written: why (the run is then named as unrecorded).
    pub unrecorded: Option<String>,
}
