//! One line of `events.jsonl`: the event, the run it belongs to and, on the first line, the
//! layout's version. The shape scripts read (its schema is `renderers::schemas`); the store writes it.

use crate::model::ids::RunId;
use serde::Serialize;

use crate::report::records::events::{Event, EventKind};
use crate::report::records::run_record::SCHEMA_VERSION;

/// One line of `events.jsonl` as written: the event, the run it belongs to (so lines from many
/// runs can be concatenated and still told apart) and, on the first line, the layout's version.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct EventLine<'a> {
    /// The layout's version (`schema_version` of run.json): on the `run_started` line only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u32>,
    /// The run's id. The `run_started` line names it among its own fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<&'a RunId>,
    #[serde(flatten)]
    pub event: &'a Event,
}

impl<'a> EventLine<'a> {
    pub fn of(run_id: &'a RunId, event: &'a Event) -> Self {
        let first = matches!(event.kind, EventKind::RunStarted { .. });
        Self {
            schema_version: first.then_some(SCHEMA_VERSION),
            run_id: (!first).then_some(run_id),
            event,
        }
    }
}
