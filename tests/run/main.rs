//! Running suites: outcomes, checkpoints, signals, shards, the harness, the `command` and `shell`
//! agents, the console server and replay of recorded actions.
//!
//! One test binary of several (see CONTRIBUTING.md, "Tests"): each file here is a module, the
//! shared helpers are `tests/common`.

#[path = "../common/mod.rs"]
mod common;

mod agent_command;
mod agent_shell;
mod as_written;
mod checkpoints;
mod console_command_agent;
mod console_server;
mod filter;
mod github_reporter;
mod harness_lifecycle;
mod harness_readiness;
mod outcomes;
mod quarantine;
mod registry_sweep;
mod replay_actions;
mod replay_domains;
mod replay_facts;
mod replay_trust;
mod retry_backoff;
mod security_hostile;
mod selection;
mod shard_merge;
mod shards;
mod signals;
mod stability;
mod step_timeout;
mod suite_budget;
