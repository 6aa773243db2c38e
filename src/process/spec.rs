//! Harness commands and readiness probes as plain data: everything needed to start, watch, restart
//! and stop one command, already substituted. Nothing here touches the OS; the config model is
//! mapped into these by the session, so the process layer never depends on how config is parsed.

use crate::model::redact::Secrets;
use nix::sys::signal::Signal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Default interval between two attempts of a polling probe.
pub const DEFAULT_PROBE_INTERVAL: Duration = Duration::from_millis(50);
/// Default time a probe may take to succeed.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(60);
/// Upper bound of the doubling restart backoff.
pub const MAX_BACKOFF: Duration = Duration::from_secs(10);

pub use crate::model::commands::ProbeKind;
pub use crate::model::config::{CommandKind, RestartPolicy};

/// One harness command, ready to spawn.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    pub name: String,
    pub kind: CommandKind,
    /// Run with `sh -c`.
    pub cmd: String,
    pub cwd: PathBuf,
    /// Added on top of the inherited environment (ports, `[env]`, `[secrets]`, `BUGATTI_*`).
    pub env: Vec<(String, String)>,
    pub pty: bool,
    /// Short-lived only: how long it may run.
    pub timeout: Option<Duration>,
    /// The timeout is the default for short-lived commands, not one the config set.
    pub default_timeout: bool,
    pub restart: RestartPolicy,
    /// Restarts allowed within `restart_window` before giving up.
    pub max_restarts: u32,
    pub restart_window: Duration,
    /// First restart delay; doubles per restart in the window, capped at [`MAX_BACKOFF`].
    pub backoff: Duration,
    pub stop_signal: Signal,
    pub stop_timeout: Duration,
    pub depends_on: Vec<String>,
    pub probes: Vec<ProbeSpec>,
    /// `--skip-cmd`: not launched, tracked or torn down; its probes still run.
    pub skipped: bool,
    /// `logs/<name>.log`; appended to across restarts.
    pub log_path: PathBuf,
    /// Values redacted from the log file.
    pub secrets: Arc<Secrets>,
    /// `[supervisor] max_log_bytes`: the log keeps this much head, then a rolling tail.
    pub max_log_bytes: u64,
}

impl CommandSpec {
    /// A spec with the documented defaults, for callers that set only what differs.
    pub fn new(
        name: impl Into<String>,
        kind: CommandKind,
        cmd: impl Into<String>,
        cwd: impl Into<PathBuf>,
        log_path: impl Into<PathBuf>,
    ) -> Self {
        Self {
            name: name.into(),
            kind,
            cmd: cmd.into(),
            cwd: cwd.into(),
            env: Vec::new(),
            pty: false,
            timeout: None,
            default_timeout: false,
            restart: RestartPolicy::Never,
            max_restarts: 3,
            restart_window: Duration::from_secs(60),
            backoff: Duration::from_millis(200),
            stop_signal: Signal::SIGTERM,
            stop_timeout: Duration::from_secs(5),
            depends_on: Vec::new(),
            probes: Vec::new(),
            skipped: false,
            log_path: log_path.into(),
            secrets: Arc::new(Secrets::default()),
            max_log_bytes: crate::process::log_limit::DEFAULT_MAX_LOG_BYTES,
        }
    }

    /// Backoff before restart number `n` (0-based) within the window.
    pub fn backoff_for(&self, n: u32) -> Duration {
        let factor = 1u32.checked_shl(n.min(31)).unwrap_or(u32::MAX);
        self.backoff
            .checked_mul(factor)
            .unwrap_or(MAX_BACKOFF)
            .min(MAX_BACKOFF)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeSpec {
    pub kind: ProbeKind,
    pub interval: Duration,
    pub timeout: Duration,
}

impl ProbeSpec {
    pub fn new(kind: ProbeKind) -> Self {
        Self {
            kind,
            interval: DEFAULT_PROBE_INTERVAL,
            timeout: DEFAULT_PROBE_TIMEOUT,
        }
    }

    pub fn http(url: impl Into<String>) -> Self {
        Self::new(ProbeKind::Http(url.into()))
    }
    pub fn tcp(addr: impl Into<String>) -> Self {
        Self::new(ProbeKind::Tcp(addr.into()))
    }
    pub fn log(regex: impl Into<String>) -> Self {
        Self::new(ProbeKind::Log(regex.into()))
    }
    pub fn exec(cmd: impl Into<String>) -> Self {
        Self::new(ProbeKind::Exec(cmd.into()))
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// How the probe is named in messages: `http http://127.0.0.1:8080/health`.
    pub fn describe(&self) -> String {
        match &self.kind {
            ProbeKind::Http(url) => format!("http {url}"),
            ProbeKind::Tcp(addr) => format!("tcp {addr}"),
            ProbeKind::Log(re) => format!("log /{re}/"),
            ProbeKind::Exec(cmd) => format!("exec `{cmd}`"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps_at_ten_seconds() {
        let spec = CommandSpec::new("s", CommandKind::LongLived, "true", "/", "/tmp/s.log");
        assert_eq!(spec.backoff_for(0), Duration::from_millis(200));
        assert_eq!(spec.backoff_for(1), Duration::from_millis(400));
        assert_eq!(spec.backoff_for(3), Duration::from_millis(1600));
        assert_eq!(spec.backoff_for(6), MAX_BACKOFF);
        assert_eq!(spec.backoff_for(40), MAX_BACKOFF);
    }
}
