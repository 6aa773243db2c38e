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

/// The suite's trace id: 16 bytes, 32 hex digits. A supervisor started under a span of its own
/// (`TRACEPARENT`, as a CI job traced with OpenTelemetry sets it) joins that span's trace
/// ([`suite_trace_id`]).
pub fn trace_id(suite_id: &str) -> String {
    derived::<16>(&["bugatti trace", suite_id])
}

/// A W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`, ids not all zero), lower-cased; `None`
/// for anything else.
pub fn parse_traceparent(text: &str) -> Option<(String, String)> {
    let text = text.trim().to_ascii_lowercase();
    let parts: Vec<&str> = text.split('-').collect();
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    let nonzero = |s: &str| s.bytes().any(|b| b != b'0');
    match parts.as_slice() {
        [version, trace, span, flags]
            if hex(version, 2)
                && *version != "ff"
                && hex(trace, 32)
                && hex(span, 16)
                && hex(flags, 2)
                && nonzero(trace)
                && nonzero(span) =>
        {
            Some((trace.to_string(), span.to_string()))
        }
        _ => None,
    }
}

/// The `TRACEPARENT` this process was started with, when it is a valid one: the span a suite
/// nests under.
pub fn inherited_traceparent() -> Option<String> {
    let text = std::env::var(TRACEPARENT_ENV).ok()?;
    parse_traceparent(&text).map(|(trace, span)| format!("00-{trace}-{span}-01"))
}

/// The suite's trace: the parent's (`parent`, a traceparent the suite was started under), else
/// its own.
pub fn suite_trace_id(suite_id: &str, parent: Option<&str>) -> String {
    parent
        .and_then(parse_traceparent)
        .map_or_else(|| trace_id(suite_id), |(trace, _)| trace)
}

/// The span the suite's own span nests under, if it was started under one.
pub fn suite_parent_span_id(parent: Option<&str>) -> Option<String> {
    parent.and_then(parse_traceparent).map(|(_, span)| span)
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

/// Where a run sits in its trace: its suite, the traceparent the suite started under (if
/// any), the run.
#[derive(Debug, Clone, Copy)]
pub struct RunTrace<'a> {
    pub suite_id: &'a str,
    pub parent: Option<&'a str>,
    pub run_id: &'a str,
}

impl RunTrace<'_> {
    /// The W3C `traceparent` of a step: `00-<trace id>-<step span id>-01` (version 00, sampled).
    pub fn step_traceparent(&self, step_id: StepId) -> String {
        format!(
            "00-{}-{}-01",
            suite_trace_id(self.suite_id, self.parent),
            step_span_id(self.run_id, step_id)
        )
    }

    /// The W3C `traceparent` of the run's own span: what a long-lived agent process (Claude
    /// Code's, a `command` agent's) starts with, before any step.
    pub fn run_traceparent(&self) -> String {
        format!(
            "00-{}-{}-01",
            suite_trace_id(self.suite_id, self.parent),
            run_span_id(self.run_id)
        )
    }
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
        let run = RunTrace {
            suite_id: "s1",
            parent: None,
            run_id: "r1",
        };
        assert_eq!(
            run.step_traceparent(StepId::new(1)),
            format!("00-{t}-{s}-01")
        );
    }

    #[test]
    fn a_suite_started_under_a_span_joins_its_trace() {
        let parent = "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01";
        assert_eq!(
            parse_traceparent(parent),
            Some((
                "0af7651916cd43dd8448eb211c80319c".into(),
                "b7ad6b7169203331".into()
            ))
        );
        let run = RunTrace {
            suite_id: "s1",
            parent: Some(parent),
            run_id: "r1",
        };
        assert!(run
            .run_traceparent()
            .starts_with("00-0af7651916cd43dd8448eb211c80319c-"));
        assert_eq!(
            suite_parent_span_id(Some(parent)).as_deref(),
            Some("b7ad6b7169203331")
        );
        for bad in [
            "",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01",
            "00-xaf7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad:?}");
            assert_eq!(suite_trace_id("s1", Some(bad)), trace_id("s1"));
        }
    }
}
