//! The real agent CLIs and the real browser: Claude Code, Codex, Playwright MCP and Chromium,
//! each driven by a scripted API stub on loopback (no network, no API key). A test whose program
//! is missing prints a loud `SKIPPED` line and, under `CI=true`, fails (see `common::skip`).
//!
//! One test binary of several (see CONTRIBUTING.md, "Tests"): each file here is a module, the
//! shared helpers are `tests/common`.

#[path = "../common/mod.rs"]
mod common;

mod browser_claude_real;
mod browser_devtools_token;
mod browser_mcp_client_real;
mod browser_pi_real;
mod browser_pool;
mod browser_pool_claude_real;
mod browser_pool_harness;
mod browser_real;
mod browser_replay_claude_real;
mod browser_replay_codex_real;
mod browser_strength_claude_real;
mod bugatti_projects_real;
mod claude_code_real;
mod claude_faults_real;
mod claude_harness_real;
mod claude_today_real;
mod claude_watchdog_real;
mod codex_real;
mod console_claude_real;
mod contract_real;
mod fault_supervisor_killed_claude_real;
mod file_tools_conformance_claude_real;
mod file_tools_replay_claude_real;
mod kept_workspace_real;
mod pi_real;
mod replay_claude_real;
mod replay_codex_real;
mod replay_login_claude_real;
mod secrets_off_argv;
