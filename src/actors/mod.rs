//! The actors of a run (ractor on tokio). They talk only by messages.

pub mod agent;
pub mod checkpoint;
pub mod command;
pub mod harness;
pub mod queue;
pub mod readiness;
pub mod reporter;
pub mod run;
pub mod session;
pub mod session_plan;
pub mod supervisor;
