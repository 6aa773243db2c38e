//! Processes: groups, signals, teardown and the registry that guarantees nothing leaks.

pub mod group;
pub mod registry;
pub mod signals;
pub mod subreaper;
