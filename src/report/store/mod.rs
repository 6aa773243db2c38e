//! The artifact directory on disk: the files of one run as its events arrive, the suite's files
//! (one list of them, [`suite_files`], written through the redactor by the reporter and by
//! `merge` alike), loading suites back (`report`, `merge`), finalising a run whose supervisor died,
//! checking before a run that what it will write can be written ([`writable`]).

pub mod artifact_dir;
pub mod event_log;
pub mod harness_log;
pub mod otlp_export;
pub mod recover;
pub mod run_writer;
pub mod suite_files;
pub mod writable;
