//! Property tests of the parsers, the plan, the markers, replay's normalisation and the records.
//!
//! One test binary of several (see CONTRIBUTING.md, "Tests"): each file here is a module, the
//! shared helpers are `tests/common`.

#[path = "../common/mod.rs"]
mod common;

mod console;
mod markers;
mod parsers;
mod plan;
mod replay_normalize;
mod report_record;
mod stream_json;
mod substitute;
