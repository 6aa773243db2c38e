//! The OpenTelemetry ids of a suite's spans (docs/reports.md, "OpenTelemetry"): the trace is the
//! suite's, each run, setup command, step and action a span of it. Every id is derived from the
//! names the run already has (suite id, run id, step id), never drawn at random, so the span a
//! step runs under (`TRACEPARENT`, decided before the agent starts) is the very span that
//! `supervisor report --otlp` exports later from run.json, in another process.

use sha2::{Digest, Sha256};

use crate::model::ids::StepId;

/// The first `N` bytes of SHA-256 over `parts` (each ended by a newline), as lower-case hex.
fn derived<const N: usize>(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update(b"\n");
    }
    let digest = hasher.finalize();
    let mut bytes = [0u8; N];
    bytes.copy_from_slice(&digest[..N]);
    // An all-zero id is invalid in W3C Trace Context and OTLP alike.
    if bytes.iter().all(|b| *b == 0) {
        bytes[N - 1] = 1;
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The suite's trace id: 16 bytes, 32 hex digits.
pub fn trace_id(suite_id: &str) -> String {
    derived::<16>(&["bugatti trace", suite_id])
}

/// The span of the whole suite: 8 bytes, 16 hex digits.
pub fn suite_span_id(suite_id: &str) -> String {
    derived::<8>(&["bugatti suite", suite_id])
}

/// The span of one run (one attempt of one root test).
pub fn run_span_id(run_id: &str) -> String {
    derived::<8>(&["bugatti run", run_id])
}

/// The span of one step of a run: what the step's `TRACEPARENT` names.
pub fn step_span_id(run_id: &str, step_id: StepId) -> String {
    derived::<8>(&["bugatti step", run_id, &step_id.to_string()])
}

/// The span of anything else inside a run (a setup command, an action of a step): `what`
/// names it uniquely in its run.
pub fn child_span_id(run_id: &str, what: &str) -> String {
    derived::<8>(&["bugatti span", run_id, what])
}

/// The W3C `traceparent` of a step: `00-<trace id>-<step span id>-01` (version 00, sampled).
pub fn step_traceparent(suite_id: &str, run_id: &str, step_id: StepId) -> String {
    format!(
        "00-{}-{}-01",
        trace_id(suite_id),
        step_span_id(run_id, step_id)
    )
}

/// The W3C `traceparent` of a run's own span: what a long-lived agent process (the `command`
/// provider's) starts with, before any step.
pub fn run_traceparent(suite_id: &str, run_id: &str) -> String {
    format!("00-{}-{}-01", trace_id(suite_id), run_span_id(run_id))
}

/// The variable a process reads its parent span from (W3C Trace Context, as OpenTelemetry's
/// environment propagation names it).
pub const TRACEPARENT_ENV: &str = "TRACEPARENT";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_hex_of_the_sizes_w3c_asks_and_stable() {
        let t = trace_id("s1");
        assert_eq!(t.len(), 32);
        assert!(t
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_eq!(t, trace_id("s1"));
        assert_ne!(t, trace_id("s2"));
        let s = step_span_id("r1", StepId::new(1));
        assert_eq!(s.len(), 16);
        assert_ne!(s, step_span_id("r1", StepId::new(2)));
        assert_ne!(s, step_span_id("r2", StepId::new(1)));
        assert_ne!(run_span_id("r1"), child_span_id("r1", "setup 0"));
        let tp = step_traceparent("s1", "r1", StepId::new(1));
        assert_eq!(tp, format!("00-{t}-{s}-01"));
    }
}
