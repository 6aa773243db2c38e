//! Everything a run leaves behind: run.json, events.jsonl, report.md, diagnostics/harness.log,
//! the suite's summary.json / summary.md / junit.xml, and the console.
//!
//! [`events::Event`] is the contract: sessions produce events, the reporter actor
//! (`crate::actors::reporter`) applies them to a [`run_record::RunRecord`] per run and writes the
//! files through [`run_writer::RunWriter`]; the suite files come from [`suite::SuiteSummary`].

pub mod atomic;
pub mod chrome_trace;
pub mod confined;
pub mod console;
pub mod console_event;
pub mod console_text;
pub mod error;
pub mod event_log;
pub mod events;
pub mod evidence;
pub mod excerpt;
pub mod harness_log;
pub mod history;
pub mod html;
pub mod html_assets;
pub mod html_escape;
pub mod junit;
pub mod live_term;
pub mod markdown;
pub mod merge_gaps;
pub mod page_console;
pub mod printable;
pub mod recover;
pub mod run_plan;
pub mod run_record;
pub mod run_writer;
pub mod schemas;
pub mod scrub;
pub mod stability;
pub mod store;
pub mod suite;
pub mod suite_files;
pub mod terminal_echo;
pub mod timeline;
pub mod trends;
