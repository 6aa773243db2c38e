//! What a run and a suite are: the event contract, run.json's record, the suite summary, its
//! history, stability and trends. Data and the computations over it; it stands on `ground` alone,
//! so every other room may read it.

pub mod event_line;
pub mod events;
pub mod evidence;
pub mod excerpt;
pub mod history;
pub mod merge_gaps;
pub mod page_console;
pub mod run_plan;
pub mod run_record;
pub mod stability;
pub mod suite;
pub mod timeline;
pub mod trends;
