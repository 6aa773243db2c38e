//! The environment children inherit from the supervisor, and what is taken out of it first.

/// Environment variables Claude Code sets for its own children. A supervisor started from inside
/// Claude Code inherits them, and the agent must not believe it is nested.
pub const CLAUDE_NESTING_VARS: [&str; 3] = [
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_SSE_PORT",
];
