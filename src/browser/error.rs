//! What can go wrong with the browser. A start or readiness failure fails the session's harness
//! like any command's; a capture failure is only noted on the step (see [`super::capture`]).

use std::path::PathBuf;

/// A browser failure, with what was tried and where.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// No executable found under any of the names tried.
    #[error("no browser found: tried {}; install Chromium or set [browser] executable to its path", tried.join(", "))]
    NotFound {
        /// Every name or path looked for, in order, with why it did not do.
        tried: Vec<String>,
    },
    /// A configured path that names no executable file.
    #[error("[browser] executable {path}: {reason}")]
    BadPath {
        /// The path as configured.
        path: PathBuf,
        /// Why it cannot run.
        reason: String,
    },
    /// The profile directory could not be made.
    #[error("browser profile {path}: {source}")]
    Profile {
        /// The `--user-data-dir`.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// No port for DevTools.
    #[error("browser DevTools port: {0}")]
    Port(#[from] crate::process::ports::PortError),
    /// The supervisor's DevTools endpoint in front of the browser's pipe could not be served.
    #[error("cannot serve the browser's DevTools endpoint on loopback: {0}")]
    Endpoint(#[from] std::io::Error),
    /// The process did not start.
    #[error("could not start the browser {program}: {source}")]
    Spawn {
        /// The executable.
        program: PathBuf,
        /// The spawn error.
        source: std::io::Error,
    },
    /// The browser exited before its DevTools endpoint answered.
    #[error("the browser exited before it was ready ({status}); its output: {output}")]
    ExitedEarly {
        /// Its exit status, as text.
        status: String,
        /// The end of what it printed.
        output: String,
    },
    /// The DevTools endpoint did not answer in time.
    #[error("the browser's DevTools endpoint {url} did not answer within {secs} s (last: {last})")]
    NotReady {
        /// The `/json/version` URL.
        url: String,
        /// The limit waited.
        secs: u64,
        /// The last attempt's error.
        last: String,
    },
    /// A DevTools HTTP request failed or answered something unreadable.
    #[error("DevTools {url}: {reason}")]
    Http {
        /// The URL asked.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// `[browser] mcp_cmd` is not a command line.
    #[error("[browser] mcp_cmd `{cmd}`: {reason}")]
    McpCommand {
        /// As configured.
        cmd: String,
        /// Why it cannot run.
        reason: String,
    },
    /// A CDP command or the WebSocket failed.
    #[error("CDP: {0}")]
    Cdp(#[from] super::cdp::CdpError),
    /// A pooled browser could not give a session a context of its own.
    #[error("the pooled browser could not open a browser context for the session: {0}")]
    Pool(String),
}
