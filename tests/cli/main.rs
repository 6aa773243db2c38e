//! The `supervisor` binary as a user meets it: `check`, `doctor`, the README's and docs' examples,
//! the schemas, junit.xml against other tools, secrets and paths, the terminal.
//!
//! One test binary of several (see CONTRIBUTING.md, "Tests"): each file here is a module, the
//! shared helpers are `tests/common`.

#[path = "../common/mod.rs"]
mod common;

mod agent_versions;
mod bench_rows;
mod check_cli;
mod check_fixtures;
mod ci_examples;
mod closed_pipe;
mod contributing_map;
mod hostile_files;
mod import_graph;
mod junit_tools;
mod live_view_tty;
mod packed_relocs;
mod readme_examples;
mod schemas;
mod security_paths;
mod security_secrets;
mod type_names;
