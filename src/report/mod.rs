//! Everything a run leaves behind: run.json, events.jsonl, report.md, JUnit, suite summary, console.
pub mod redact;
