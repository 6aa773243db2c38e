//! `supervisor report --otlp FILE|URL` and `start --otlp`: the suite as OpenTelemetry spans
//! (docs/reports.md, "OpenTelemetry"), in OTLP/JSON: the protobuf JSON mapping of an
//! `ExportTraceServiceRequest`, with trace and span ids as hex as OTLP/JSON asks. The spans are
//! the ones the timeline and the Chrome trace draw (`records::timeline`): a span per suite, per
//! run (each attempt of each root test), per setup command, per step and per action inside a
//! step (tool calls, console calls, browser actions); what the agent reported (turns, tokens,
//! cost) is the step's attributes, and how replay decided the step its events. The ids come from
//! `model::trace_context`, so a step's span is the one its agent ran under (`TRACEPARENT`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::model::outcome::{RunOutcome, StepStatus};
use crate::model::replay::StepMode;
use crate::model::trace_context as ids;
use crate::report::records::run_record::{RunRecord, StepRecord};
use crate::report::records::suite::SuiteSummary;
use crate::report::records::timeline::{self, StepSpan};

/// `Span.SpanKind.SPAN_KIND_INTERNAL`.
const KIND_INTERNAL: u8 = 1;
/// `Status.StatusCode`: unset, ok, error.
const STATUS_OK: u8 = 1;
const STATUS_ERROR: u8 = 2;

/// One attribute value, as OTLP/JSON's `AnyValue` spells it (64-bit integers as strings).
#[derive(Debug, Clone)]
pub enum AttrValue {
    Str(String),
    Int(i64),
    Double(f64),
    Bool(bool),
}

impl AttrValue {
    fn json(&self) -> Value {
        match self {
            Self::Str(s) => json!({"stringValue": s}),
            Self::Int(i) => json!({"intValue": i.to_string()}),
            Self::Double(d) => json!({"doubleValue": d}),
            Self::Bool(b) => json!({"boolValue": b}),
        }
    }
}

impl From<&str> for AttrValue {
    fn from(s: &str) -> Self {
        Self::Str(s.to_string())
    }
}
impl From<String> for AttrValue {
    fn from(s: String) -> Self {
        Self::Str(s)
    }
}
impl From<u64> for AttrValue {
    fn from(n: u64) -> Self {
        Self::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}
impl From<u32> for AttrValue {
    fn from(n: u32) -> Self {
        Self::Int(i64::from(n))
    }
}
impl From<f64> for AttrValue {
    fn from(d: f64) -> Self {
        Self::Double(d)
    }
}
impl From<bool> for AttrValue {
    fn from(b: bool) -> Self {
        Self::Bool(b)
    }
}

/// Attributes in the order they were added.
#[derive(Debug, Default, Clone)]
pub struct Attrs(Vec<(String, AttrValue)>);

impl Attrs {
    fn set(&mut self, key: &str, value: impl Into<AttrValue>) -> &mut Self {
        self.0.push((key.to_string(), value.into()));
        self
    }
    fn maybe<V: Into<AttrValue>>(&mut self, key: &str, value: Option<V>) -> &mut Self {
        if let Some(v) = value {
            self.set(key, v);
        }
        self
    }
    fn json(&self) -> Value {
        Value::Array(
            self.0
                .iter()
                .map(|(k, v)| json!({"key": k, "value": v.json()}))
                .collect(),
        )
    }
}

/// A point in time inside a span: a replay decision.
#[derive(Debug, Clone)]
pub struct SpanEvent {
    pub name: String,
    pub at: DateTime<Utc>,
    pub attrs: Attrs,
}

/// One span, before it is written.
#[derive(Debug, Clone)]
pub struct OtlpSpan {
    pub trace_id: String,
    pub span_id: String,
    /// `None` for the suite's span when it is the trace's root.
    pub parent: Option<String>,
    pub name: String,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub attrs: Attrs,
    pub events: Vec<SpanEvent>,
    /// `Some(message)`: the span failed.
    pub error: Option<String>,
}

fn nanos(at: DateTime<Utc>) -> String {
    at.timestamp_nanos_opt().unwrap_or(0).max(0).to_string()
}

impl OtlpSpan {
    fn json(&self) -> Value {
        let status = match &self.error {
            None => json!({"code": STATUS_OK}),
            Some(message) => json!({"code": STATUS_ERROR, "message": message}),
        };
        let mut span = json!({
            "traceId": self.trace_id,
            "spanId": self.span_id,
            "name": self.name,
            "kind": KIND_INTERNAL,
            "startTimeUnixNano": nanos(self.start),
            "endTimeUnixNano": nanos(self.end.max(self.start)),
            "attributes": self.attrs.json(),
            "events": self.events.iter().map(|e| json!({
                "timeUnixNano": nanos(e.at),
                "name": e.name,
                "attributes": e.attrs.json(),
            })).collect::<Vec<_>>(),
            "status": status,
        });
        if let Some(parent) = &self.parent {
            span["parentSpanId"] = json!(parent);
        }
        span
    }
}

fn after(start: DateTime<Utc>, ms: u64) -> DateTime<Utc> {
    start + chrono::Duration::milliseconds(i64::try_from(ms).unwrap_or(i64::MAX / 2))
}

/// Whether a step's status is a failure of the step (a warning is not; an interrupted step
/// is, as it did not finish).
fn failed(status: StepStatus) -> bool {
    status.is_failure() || status == StepStatus::Interrupted
}

/// Whether a run did not pass: the span's status is an error.
fn run_failed(outcome: Option<RunOutcome>) -> bool {
    outcome.is_some_and(|o| !matches!(o, RunOutcome::Passed | RunOutcome::Warned))
}

/// How replay decided a step, as span events: the decision at the step's start, its recording
/// at its end.
fn replay_events(step: &StepRecord, start: DateTime<Utc>, end: DateTime<Utc>) -> Vec<SpanEvent> {
    let mut out = Vec::new();
    let mut decided = |name: &str, attrs: Attrs| {
        out.push(SpanEvent {
            name: name.to_string(),
            at: start,
            attrs,
        })
    };
    let mut note = Attrs::default();
    note.maybe("bugatti.replay.note", step.replay_note.clone());
    if let Some(drift) = &step.replay_drift {
        let mut a = note.clone();
        a.set(
            "bugatti.replay.action",
            u64::try_from(drift.action)
                .unwrap_or(u64::MAX)
                .saturating_add(1),
        )
        .set("bugatti.replay.what", drift.what.as_str())
        .set("bugatti.replay.field", drift.field.as_str())
        .set("bugatti.replay.soft", drift.soft);
        decided("replay.drift", a);
    } else if step.replay_audited {
        decided("replay.audited", note.clone());
    } else {
        match step.mode {
            Some(StepMode::Replayed) => {
                let mut a = note.clone();
                a.set("bugatti.replay.actions", step.replay_actions.len() as u64)
                    .maybe(
                        "bugatti.replay.recorded_by",
                        step.replay_recorded_by.clone(),
                    )
                    .maybe(
                        "bugatti.replay.recorded_at",
                        step.replay_recorded_at.map(|t| t.to_rfc3339()),
                    );
                decided("replay.replayed", a);
            }
            Some(StepMode::Agent) => decided("replay.to_agent", note.clone()),
            Some(StepMode::NotReplayed) => decided("replay.not_replayed", note.clone()),
            None => {}
        }
    }
    if step.recorded {
        out.push(SpanEvent {
            name: "replay.recorded".to_string(),
            at: end,
            attrs: Attrs::default(),
        });
    }
    out
}

/// What the step's agent reported: turns, tokens, cost (OpenTelemetry's `gen_ai.usage.*`).
fn step_attrs(record: &RunRecord, step: &StepRecord, span: &StepSpan) -> Attrs {
    let mut a = Attrs::default();
    a.set("bugatti.step.id", step.step_id.get())
        .set("bugatti.step.instruction", step.instruction.as_str())
        .set("bugatti.step.status", step.status.as_str())
        .set("bugatti.step.decided", span.decided.key())
        .set("bugatti.run.id", record.identity.run_id.as_str())
        .set("bugatti.provider", record.identity.provider.as_str())
        .maybe("bugatti.step.message", step.message.clone());
    let usage = step.usage.as_ref();
    a.maybe(
        "bugatti.agent.turns",
        step.agent_turns.or(usage.and_then(|u| u.turns)),
    )
    .maybe(
        "gen_ai.usage.input_tokens",
        usage.and_then(|u| u.input_tokens),
    )
    .maybe(
        "gen_ai.usage.output_tokens",
        usage.and_then(|u| u.output_tokens),
    )
    .maybe("bugatti.cost_usd", span.cost_usd)
    .maybe(
        "gen_ai.conversation.id",
        usage.and_then(|u| u.session_id.clone()),
    );
    a
}

/// The spans of one run under `suite_span`: the run, its setup commands, its steps and their
/// actions.
fn run_spans(record: &RunRecord, suite_span: &str, out: &mut Vec<OtlpSpan>) {
    let identity = &record.identity;
    let run_id = identity.run_id.as_str();
    let trace = ids::suite_trace_id(identity.suite_id.as_str(), identity.traceparent.as_deref());
    let run_span = ids::run_span_id(run_id);
    let lane = timeline::lane(record);
    let start = identity.started_at;
    let end = record
        .finished_at
        .unwrap_or_else(|| after(start, lane.total_ms));
    let mut a = Attrs::default();
    a.set("bugatti.test.file", identity.test_file.as_str())
        .set("bugatti.test.name", identity.test_name.as_str())
        .set("bugatti.run.id", run_id)
        .set("bugatti.run.attempt", identity.attempt)
        .set("bugatti.run.repeat", identity.repeat)
        .set("bugatti.provider", identity.provider.as_str())
        .maybe("bugatti.run.outcome", record.outcome.map(|o| o.as_str()))
        .maybe("bugatti.cost_usd", record.cost_usd)
        .set("bugatti.agent.turns", record.agent_turns)
        .set("gen_ai.usage.input_tokens", record.input_tokens)
        .set("gen_ai.usage.output_tokens", record.output_tokens);
    let error = record
        .outcome
        .filter(|_| run_failed(record.outcome))
        .map(|o| {
            record
                .error
                .clone()
                .unwrap_or_else(|| o.as_str().to_string())
        });
    out.push(OtlpSpan {
        trace_id: trace.clone(),
        span_id: run_span.clone(),
        parent: Some(suite_span.to_string()),
        name: format!("{} (attempt {})", identity.test_file, identity.attempt),
        start,
        end,
        attrs: a,
        events: Vec::new(),
        error,
    });
    let child = |name: String, span_id: String, parent: &str, from: u64, ms: u64| OtlpSpan {
        trace_id: trace.clone(),
        span_id,
        parent: Some(parent.to_string()),
        name,
        start: after(start, from),
        end: after(start, from + ms),
        attrs: Attrs::default(),
        events: Vec::new(),
        error: None,
    };
    for (k, setup) in lane.setup.iter().enumerate() {
        let mut span = child(
            format!("setup: {}", setup.name),
            ids::child_span_id(run_id, &format!("setup {k}")),
            &run_span,
            setup.start_ms,
            setup.dur_ms,
        );
        span.attrs.set("bugatti.command", setup.name.as_str());
        out.push(span);
    }
    let by_id: BTreeMap<_, _> = record.steps.iter().map(|s| (s.step_id, s)).collect();
    for step_span in &lane.steps {
        let Some(step) = by_id.get(&step_span.step_id) else {
            continue;
        };
        let step_id = ids::step_span_id(run_id, step.step_id);
        let mut span = child(
            format!("step {}: {}", step.step_id, step_span.decided.words()),
            step_id.clone(),
            &run_span,
            step_span.start_ms,
            step_span.dur_ms,
        );
        span.attrs = step_attrs(record, step, step_span);
        span.events = replay_events(step, span.start, span.end);
        if failed(step.status) {
            span.error = Some(
                step.message
                    .clone()
                    .unwrap_or_else(|| step.status.as_str().to_string()),
            );
        }
        out.push(span);
        for (k, tick) in step_span.ticks.iter().enumerate() {
            let mut span = child(
                tick.label.clone(),
                ids::child_span_id(run_id, &format!("step {} action {k}", step.step_id)),
                &step_id,
                tick.at_ms,
                tick.dur_ms,
            );
            span.attrs
                .set("bugatti.action.kind", tick.kind.key())
                .set("bugatti.action.measured", tick.measured);
            out.push(span);
        }
    }
}

/// The spans of the suite: a root span per suite the runs ran in (one, but for a merge of
/// shards), each run under its own.
pub fn spans(summary: &SuiteSummary, records: &[RunRecord]) -> Vec<OtlpSpan> {
    let mut suites: BTreeMap<&str, Vec<&RunRecord>> = BTreeMap::new();
    for record in records {
        suites
            .entry(record.identity.suite_id.as_str())
            .or_default()
            .push(record);
    }
    let mut out = Vec::new();
    for (suite_id, runs) in suites {
        let start = runs
            .iter()
            .map(|r| r.identity.started_at)
            .min()
            .unwrap_or(summary.started_at);
        let end = runs
            .iter()
            .filter_map(|r| r.finished_at)
            .max()
            .unwrap_or(summary.finished_at)
            .max(start);
        let suite_span = ids::suite_span_id(suite_id);
        let parent = runs.iter().find_map(|r| r.identity.traceparent.as_deref());
        let mut attrs = Attrs::default();
        attrs
            .set("bugatti.suite.id", suite_id)
            .set("bugatti.suite.runs", runs.len() as u64);
        if suite_id != summary.suite_id.as_str() {
            attrs.set("bugatti.suite.merged_into", summary.suite_id.as_str());
        }
        let failures = runs.iter().filter(|r| run_failed(r.outcome)).count();
        out.push(OtlpSpan {
            trace_id: ids::suite_trace_id(suite_id, parent),
            span_id: suite_span.clone(),
            // Under the span the supervisor was started in (a CI job's), else the trace's root.
            parent: ids::suite_parent_span_id(parent),
            name: format!("suite {suite_id}"),
            start,
            end,
            attrs,
            events: Vec::new(),
            error: (failures > 0).then(|| format!("{failures} run(s) did not pass")),
        });
        for record in runs {
            run_spans(record, &suite_span, &mut out);
        }
    }
    out
}

/// The `ExportTraceServiceRequest` of the suite, as OTLP/JSON.
pub fn request(summary: &SuiteSummary, records: &[RunRecord]) -> Value {
    let spans: Vec<Value> = spans(summary, records).iter().map(OtlpSpan::json).collect();
    let mut resource = Attrs::default();
    resource
        .set("service.name", "bugatti-supervisor")
        .set("service.version", env!("CARGO_PKG_VERSION"))
        .set("bugatti.suite.id", summary.suite_id.as_str());
    json!({
        "resourceSpans": [{
            "resource": {"attributes": resource.json()},
            "scopeSpans": [{
                "scope": {"name": "bugatti.supervisor", "version": env!("CARGO_PKG_VERSION")},
                "spans": spans,
            }],
        }],
    })
}
