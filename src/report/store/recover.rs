//! Finalising a run whose supervisor died without closing it (SIGKILL, OOM, power cut): the next
//! `start` finds it in the dead supervisor's ledger and calls [`finalise_dead_run`]. The record
//! is rebuilt from run.json's plan and every event in events.jsonl (run.json is not rewritten on
//! every event), closed as `interrupted` with a message saying why, and run.json, events.jsonl
//! (its `run_finished` line) and report.md are written.

use std::io::{BufRead, BufReader};
use std::path::Path;

use chrono::Utc;

use crate::atomic::write_atomic;
use crate::model::artifacts::RunPaths;
use crate::model::outcome::RunOutcome;
use crate::report::ground::error::ReportError;
use crate::report::ground::scrub::Redactor;
use crate::report::records::events::{millis, Event, EventKind};
use crate::report::records::run_record::RunRecord;
use crate::report::renderers::markdown::{self, ReportInput};
use crate::report::store::event_log::EventLog;

/// The message of a run finalised by the next start.
pub const DEAD_RUN_MESSAGE: &str =
    "interrupted: the supervisor was killed before this run finished (finalised by the next start)";

/// Makes the files of the run in `run_dir` final. Returns the outcome written, or `None` when
/// the run was already final (nothing is touched then). Errors name the file.
pub fn finalise_dead_run(run_dir: &Path) -> Result<Option<RunOutcome>, ReportError> {
    let paths = RunPaths::new(run_dir);
    let json_path = paths.run_json();
    let text = std::fs::read_to_string(&json_path).map_err(|e| ReportError::Write {
        path: json_path.clone(),
        source: e,
    })?;
    let written: RunRecord = serde_json::from_str(&text).map_err(|source| ReportError::Json {
        what: "run.json",
        source,
    })?;
    if written.is_finished() {
        return Ok(None);
    }
    let mut record = RunRecord::from_plan(&written.plan());
    // A SIGKILL may cut the last line short: what parses is applied, the rest skipped.
    if let Ok(file) = std::fs::File::open(paths.events()) {
        for line in BufReader::new(file).lines() {
            let Ok(line) = line else { break };
            if let Ok(event) = serde_json::from_str::<Event>(&line) {
                record.apply(&event);
            }
        }
    }
    // What was already on disk is redacted; nothing new here holds a secret.
    let redactor = Redactor::new([]);
    let mut notes = Vec::new();
    if !record.is_finished() {
        let now = Utc::now();
        let event = Event {
            timestamp: now,
            elapsed_ms: millis(
                (now - record.identity.started_at)
                    .to_std()
                    .unwrap_or_default(),
            ),
            kind: EventKind::RunFinished {
                outcome: RunOutcome::Interrupted,
                message: Some(DEAD_RUN_MESSAGE.to_string()),
            },
        };
        if let Err(e) = EventLog::open(&paths.events(), &written.identity.run_id)
            .and_then(|mut log| log.append(&event, &redactor))
        {
            notes.push(e.to_string());
        }
        record.apply(&event);
    }
    let mut json = redactor.json("run.json", &record, true)?;
    json.push('\n');
    write_atomic(&json_path, json.as_bytes())?;
    let report = markdown::render_sections(
        &ReportInput {
            record: &record,
            run_dir,
            notes: &notes,
        },
        markdown::SECTIONS,
    );
    write_atomic(&paths.report_md(), report.as_bytes())?;
    Ok(record.outcome)
}
