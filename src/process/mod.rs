//! Processes: specs, spawning in groups or PTYs, output pumps, probes, teardown, ports, and the
//! registry that guarantees nothing leaks.

pub mod exit;
pub mod group;
pub mod output;
pub mod ports;
pub mod probe;
pub mod registry;
pub mod spawn;
pub mod spec;
pub mod subreaper;
pub mod teardown;
