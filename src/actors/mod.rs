//! The actors of a run (ractor on tokio). They talk only by messages; they decide, and
//! [`crate::process`] does the OS work.
//!
//! The map for a newcomer — module tree, a session's life, the signal escalation, pitfalls, and
//! recipes for adding a provider, a probe kind, an event kind, a config field or a CLI flag — is
//! `CONTRIBUTING.md` at the repository root. In short:
//!
//! - [`supervisor`] runs the queue of root tests; each attempt is a [`session`].
//! - A session's commands live under its [`harness`] (one [`command`] actor each, readiness by
//!   [`readiness`] actors); its agent is an [`agent`] actor around a provider.
//! - Every artifact and console line goes through the [`reporter`]: a run's events through its
//!   [`reporter::RunEvents`] (made by the supervisor, shared by the session and its driver),
//!   other user-facing lines as [`reporter::Notices`]. No actor writes to stdout or stderr.
//! - Processes are started by `process::handle::start` and ended by `process::teardown::terminate`
//!   only; no actor sends a signal.

pub mod agent;
pub mod breaker;
pub mod budget;
pub mod checkpoint;
pub mod command;
pub mod harness;
pub mod model_gate;
pub mod on_finish;
pub mod preflight;
pub mod queue;
pub mod readiness;
pub mod reporter;
pub mod root_tests;
pub mod run;
pub mod session;
pub mod session_plan;
pub mod supervisor;
