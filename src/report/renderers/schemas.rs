//! The JSON Schemas of the files scripts read: `run.json`, `summary.json`, a line of
//! `events.jsonl` and a line of `history.jsonl`, generated from the types that write them (so
//! they cannot drift apart). They are checked in under `schemas/`; `tests/schemas.rs` fails when
//! the checked-in files differ from these (`BUGATTI_UPDATE_SCHEMAS=1 cargo test --test schemas`
//! rewrites them) and validates real output against them.

use schemars::{schema_for, Schema};

use crate::report::records::event_line::EventLine;
use crate::report::records::history::HistoryEntry;
use crate::report::records::run_record::{RunRecord, SCHEMA_VERSION};
use crate::report::records::suite::SuiteSummary;

/// Which file a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Document {
    Run,
    Summary,
    Event,
    History,
}

impl Document {
    pub const ALL: [Document; 4] = [
        Document::Run,
        Document::Summary,
        Document::Event,
        Document::History,
    ];

    /// The schema's file name under `schemas/`.
    pub fn file_name(self) -> &'static str {
        match self {
            Self::Run => "run.schema.json",
            Self::Summary => "summary.schema.json",
            Self::Event => "event.schema.json",
            Self::History => "history-entry.schema.json",
        }
    }

    /// What the schema validates, in words (its `description`).
    fn describes(self) -> &'static str {
        match self {
            Self::Run => "run.json: one run of a root test (.bugatti/runs/<run_id>/run.json)",
            Self::Summary => {
                "summary.json: one suite (.bugatti/suites/<suite_id>/summary.json, and --json)"
            }
            Self::Event => "one line of events.jsonl (.bugatti/runs/<run_id>/events.jsonl)",
            Self::History => "one line of history.jsonl (.bugatti/history.jsonl, --history FILE)",
        }
    }

    /// The schema, pretty-printed with a final newline, as checked in.
    pub fn schema_text(self) -> String {
        let mut schema: Schema = match self {
            Self::Run => schema_for!(RunRecord),
            Self::Summary => schema_for!(SuiteSummary),
            Self::Event => schema_for!(EventLine<'static>),
            Self::History => schema_for!(HistoryEntry),
        };
        schema.insert(
            "description".into(),
            format!("{} (schema_version {SCHEMA_VERSION})", self.describes()).into(),
        );
        let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_schema_is_an_object_schema_with_its_required_keys() {
        for doc in Document::ALL {
            let value: serde_json::Value =
                serde_json::from_str(&doc.schema_text()).expect("valid JSON");
            assert_eq!(value["type"], "object", "{doc:?}");
            let required = value["required"].as_array().cloned().unwrap_or_default();
            let wanted: &[&str] = match doc {
                Document::Run => &["run_id", "started_at", "steps", "commands"],
                Document::Summary => &["suite_id", "tests", "totals"],
                Document::Event => &["at", "elapsed_ms"],
                Document::History => &["suite_id", "tests", "selection"],
            };
            for key in wanted {
                assert!(
                    required.iter().any(|r| r == key),
                    "{doc:?} requires {key}: {required:?}"
                );
            }
        }
    }
}
