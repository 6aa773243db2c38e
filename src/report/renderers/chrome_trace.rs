//! `supervisor report --chrome-trace FILE`: the suite in the Chrome trace event format
//! (docs/reports.md), loadable in Perfetto and chrome://tracing. One process per root test (its
//! last attempt, as the report shows), one thread per lane: `setup` (each harness command from
//! start to ready), `steps` (each step, named by how it was decided) and `agent` (its tool
//! calls, console calls and browser actions at their measured times); every one a complete (`"ph": "X"`) event, in
//! microseconds from the suite's first start, so tests side by side share one time axis.

use std::collections::HashMap;
use std::io::Write;

use serde_json::{json, Value};

use crate::report::records::run_record::RunRecord;
use crate::report::records::suite::SuiteSummary;
use crate::report::records::timeline::{self, Lane};

/// The thread ids of a test's lanes.
pub const SETUP_TID: u32 = 1;
pub const STEPS_TID: u32 = 2;
pub const AGENT_TID: u32 = 3;

fn meta(name: &str, pid: usize, tid: u32, value: &str) -> Value {
    json!({"name": name, "ph": "M", "pid": pid, "tid": tid, "args": {"name": value}})
}

fn complete(
    name: &str,
    cat: &str,
    pid: usize,
    tid: u32,
    ts_us: i64,
    dur_ms: u64,
    args: Value,
) -> Value {
    // A zero-length event is drawn by no viewer: one microsecond at least.
    let dur = (dur_ms * 1000).max(1);
    json!({"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid, "ts": ts_us, "dur": dur, "args": args})
}

/// The trace's events, in order: each test's metadata, then its spans.
pub fn events(summary: &SuiteSummary, records: &[RunRecord]) -> Vec<Value> {
    let by_id: HashMap<&str, &RunRecord> = records
        .iter()
        .map(|r| (r.identity.run_id.as_str(), r))
        .collect();
    let shown: Vec<(&str, &RunRecord)> = summary
        .tests
        .iter()
        .filter_map(|t| Some((t.test_file.as_str(), *by_id.get(t.run_id.as_str())?)))
        .collect();
    let origin = shown
        .iter()
        .map(|(_, r)| r.identity.started_at)
        .min()
        .unwrap_or(summary.started_at);
    let mut out = Vec::new();
    for (index, (file, record)) in shown.iter().enumerate() {
        let pid = index + 1;
        let lane: Lane = timeline::lane(record);
        let base = (lane.started_at - origin).num_microseconds().unwrap_or(0);
        let at = |ms: u64| base + i64::try_from(ms * 1000).unwrap_or(i64::MAX / 2);
        out.push(meta(
            "process_name",
            pid,
            0,
            &format!("{file} (attempt {})", record.identity.attempt),
        ));
        out.push(json!({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": pid}}));
        out.push(meta("thread_name", pid, SETUP_TID, "setup"));
        out.push(meta("thread_name", pid, STEPS_TID, "steps"));
        out.push(meta("thread_name", pid, AGENT_TID, "agent"));
        for span in &lane.setup {
            out.push(complete(
                &span.name,
                "setup",
                pid,
                SETUP_TID,
                at(span.start_ms),
                span.dur_ms,
                json!({}),
            ));
        }
        for step in &lane.steps {
            out.push(complete(
                &format!("step {}: {}", step.step_id, step.decided.words()),
                "step",
                pid,
                STEPS_TID,
                at(step.start_ms),
                step.dur_ms,
                json!({"status": step.status.as_str(), "decided": step.decided.key(), "cost_usd": step.cost_usd, "model_turns": step.turns, "run_id": record.identity.run_id}),
            ));
            for tick in &step.ticks {
                out.push(complete(
                    &tick.label,
                    tick.kind.key(),
                    pid,
                    AGENT_TID,
                    at(tick.at_ms),
                    tick.dur_ms,
                    json!({"step": step.step_id, "measured": tick.measured}),
                ));
            }
        }
    }
    out
}

/// Writes the trace (`{"traceEvents": […], "displayTimeUnit": "ms"}`) to `out`.
pub fn write(
    summary: &SuiteSummary,
    records: &[RunRecord],
    out: &mut impl Write,
) -> std::io::Result<()> {
    let trace = json!({
        "traceEvents": events(summary, records),
        "displayTimeUnit": "ms",
        "otherData": {"suite_id": summary.suite_id, "generator": "bugatti supervisor"},
    });
    serde_json::to_writer(&mut *out, &trace)?;
    out.write_all(b"\n")?;
    out.flush()
}
