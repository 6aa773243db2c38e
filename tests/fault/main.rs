//! Fault injection: agents, harness processes and the supervisor itself killed, wedged or
//! flooding, and what the run leaves behind.
//!
//! One test binary of several (see CONTRIBUTING.md, "Tests"): each file here is a module, the
//! shared helpers are `tests/common`.

#[path = "../common/mod.rs"]
mod common;

mod actor_panics;
mod agent;
mod agent_faults;
mod artifacts;
mod dead_run_hygiene;
mod full_disk;
mod harness;
mod hostile_processes;
mod listener_flood;
mod log_limit;
mod soak;
mod supervisor_killed;
