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
//! - [`console`]: the agent console served to the agent over MCP: PTY sessions, the harness's
//!   logs (docs/console.md).
//! - [`browser`]: the session's browser (docs/browser.md): launch, readiness, CDP, per-step
//!   evidence.
//! - [`replay`]: recorded passing steps replayed without the model (docs/replay.md).
//! - [`actors`]: the ractor actors: supervisor, session, command, readiness, agent, reporter.
//! - [`atomic`]: a file replaced atomically, what `report` and `replay` both write through.
//! - [`report`]: every artifact a run leaves behind, and the live terminal view.
//! - [`cli`]: the `supervisor` subcommands behind the binary's parser.
//!
//! CONTRIBUTING.md maps every file.

pub mod actors;
pub mod atomic;
pub mod browser;
pub mod cli;
pub mod console;
#[doc(hidden)]
pub mod fuzzing;
pub mod model;
pub mod process;
pub mod providers;
pub mod replay;
pub mod report;
