//! Pure data and pure functions: what the user wrote, validated and expanded.
//!
//! [`load::load_suite`] is the entry point: config files ([`config`]) merged into layers
//! ([`layers`], with harness commands normalized by [`commands`]), test files ([`test_file`])
//! found by [`discovery`] and expanded into plans ([`plan`]), with `${NAME}`s ([`substitute`])
//! and [`assets`] checked; every problem is collected and positioned by [`diagnostics`].
//! [`options`] is the command line as plain data; [`outcome`] the verdicts of a run.

pub mod agent_fault;
pub mod artifacts;
pub mod assets;
pub mod browser;
pub mod changed;
pub mod checkpoint;
pub mod commands;
pub mod config;
pub mod diagnostics;
pub mod discovery;
pub mod filter;
pub mod history;
pub mod ids;
pub mod layers;
pub mod load;
pub mod markers;
pub mod mcp_json;
pub mod options;
pub mod outcome;
pub mod paths;
pub mod plan;
pub mod provider;
pub mod redact;
pub mod replay;
pub mod retries;
pub mod revision;
pub mod shard;
pub mod sourced;
pub mod substitute;
pub mod test_file;
pub mod toml_read;
pub mod tool_call;
pub mod user_file;
