//! The actors of a run (ractor on tokio). They talk only by messages.
pub mod reporter;
