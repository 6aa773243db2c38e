//! Everything a run leaves behind: run.json, events.jsonl, report.md, diagnostics/harness.log,
//! the suite's summary.json / summary.md / junit.xml / report.html, and the console.
//!
//! Five rooms, each standing only on the ones listed before it:
//! - [`ground`]: errors naming their file, atomic writes, confined reads, redaction, safe text;
//! - [`records`]: the event contract ([`records::events::Event`]), run.json's
//!   [`records::run_record::RunRecord`], the suite's [`records::suite::SuiteSummary`];
//! - [`renderers`]: report.md, report.html, junit.xml, the Chrome trace, the schemas;
//! - [`store`]: the artifact directory, written by [`store::run_writer::RunWriter`] per run and
//!   [`store::suite_files`] per suite, and read back;
//! - [`live`]: the console while the suite runs.
//!
//! Sessions produce events; the reporter actor (`crate::actors::reporter`) applies them to a
//! record per run and writes the files through the store.

pub mod ground;
pub mod live;
pub mod records;
pub mod renderers;
pub mod store;
