//! The records of a run: run.json, events.jsonl, report.md/html, the console, history.
//!
//! One test binary of several (see CONTRIBUTING.md, "Tests"): each file here is a module, the
//! shared helpers are `tests/common`.

#[path = "../common/mod.rs"]
mod common;

mod actor;
mod chrome_trace;
mod console;
mod console_width;
mod control_chars;
mod evidence_paths;
mod harness_excerpt;
mod harness_failures;
mod harness_log;
mod history;
mod html_browser;
mod instruction_sent;
mod merge_untrusted;
mod otlp;
mod run_files;
mod suite;
