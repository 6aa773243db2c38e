//! Processes: specs, spawning in groups or PTYs, output pumps, probes, teardown, ports, and the
//! registry that guarantees nothing leaks. Actor-free: the actors in `crate::actors` drive these.

pub mod cost_ledger;
pub mod dead_runs;
pub mod error;
pub mod event;
pub mod exit;
pub mod group;
pub mod handle;
pub mod inherited_env;
pub mod job_control;
pub mod ledger;
pub mod limits;
pub mod listen;
pub mod log_limit;
pub mod oneshot;
pub mod order;
pub mod output;
pub mod owner;
pub mod piped;
pub mod ports;
pub mod probe;
pub mod record;
pub mod registry;
pub mod signals;
pub mod spawn;
pub mod spec;
pub mod subreaper;
pub mod teardown;
pub mod version;

pub use handle::{Group, Launch};
pub use owner::{Owner, Role, Scope};
pub use teardown::{terminate, Ladder, TeardownReport};
