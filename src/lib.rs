//! Bugatti supervisor: plain-English, agent-assisted verification of local applications.
//!
//! Data flows one way:
//! files → [`model`] (a validated plan and effective config) → [`actors`] (run it, supervised)
//! → events → [`report`] (run.json, events.jsonl, report.md, JUnit, console).
//!
//! - [`model`]: pure data and pure functions: config, test files, plan expansion, substitution,
//!   result-marker scanning, outcomes. No I/O beyond reading the user's files.
//! - [`process`]: process groups and PTYs, output pumps, teardown, the leak registry.
//! - [`providers`]: the agent providers behind one trait (claude-code, codex, pi, command, shell).
//! - [`actors`]: the ractor actors: supervisor, session, command, readiness, agent, reporter.
//! - [`browser`]: the session's browser (SPEC §11): launch, readiness, CDP, per-step evidence.
//! - [`report`]: every artifact a run leaves behind, and the console.

pub mod actors;
pub mod browser;
pub mod console;
#[doc(hidden)]
pub mod fuzzing;
pub mod model;
pub mod process;
pub mod providers;
pub mod replay;
pub mod report;
