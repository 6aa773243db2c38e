//! One readiness attempt per probe kind, and the loop that repeats it. The log probe is not a
//! loop: it waits on the command's output lines and fires on the matching line itself.
//!
//! Every attempt records what it saw (`HTTP 503`, `connection refused`, the last log line, the
//! exec's exit and output) so that a readiness failure can say why.

use super::handle::{self, Io, Launch};
use super::output::{LineSubscription, OutputHub};
use super::owner::{Owner, Role};
use super::spec::{ProbeKind, ProbeSpec};
use super::teardown::{terminate, Ladder};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An exec attempt may not hang the probe: it is bounded by this (or the probe's interval, if longer).
const EXEC_ATTEMPT_LIMIT: Duration = Duration::from_secs(10);
const HTTP_ATTEMPT_LIMIT: Duration = Duration::from_secs(5);
/// How often an http or tcp probe tries in its first [`FAST_WINDOW`] (its interval if shorter).
const FAST_INTERVAL: Duration = Duration::from_millis(10);
const FAST_WINDOW: Duration = Duration::from_secs(1);

/// Where an exec probe runs: the command's directory and environment, and whose it is (the
/// command's owner; each attempt is registered as an [`Role::ExecProbe`] of the same scope).
#[derive(Debug, Clone)]
pub struct ProbeContext {
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub owner: Owner,
}

/// What the probe saw last, shared with whoever reports a timeout. A log probe reads the last
/// line from the command's output hub instead (it only receives matching lines).
#[derive(Debug, Clone, Default)]
pub struct LastSeen {
    text: Arc<Mutex<String>>,
    hub: Option<OutputHub>,
}

impl LastSeen {
    pub fn from_hub(hub: OutputHub) -> Self {
        Self {
            text: Arc::default(),
            hub: Some(hub),
        }
    }
    pub fn set(&self, text: impl Into<String>) {
        *self.text.lock().unwrap_or_else(|p| p.into_inner()) = text.into();
    }
    pub fn get(&self) -> String {
        match &self.hub {
            Some(hub) => match hub.last_line() {
                Some(line) => format!("last line: {line}"),
                None => "no output yet".to_string(),
            },
            None => self.text.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(
        "log probe has no output to watch (the command was not launched, or its output ended)"
    )]
    NoOutput,
}

/// Runs `probe` until it succeeds; returns what made it ready. The caller owns the deadline (drop
/// the future to stop). A log probe needs `lines`, subscribed with the probe's pattern
/// ([`OutputHub::subscribe_matching`]) before the command started.
pub async fn run_until_ready(
    probe: &ProbeSpec,
    ctx: &ProbeContext,
    lines: Option<LineSubscription>,
    seen: &LastSeen,
) -> Result<String, ProbeError> {
    if let ProbeKind::Log(_) = &probe.kind {
        return wait_for_line(lines).await;
    }
    let interval = probe.interval.max(Duration::from_millis(1));
    // An http or tcp attempt at a server still starting is a refused connect, well under a
    // millisecond: polled faster while servers usually come up, one is seen ready within
    // FAST_INTERVAL of it rather than up to a whole interval later (docs/config.md).
    let fast = matches!(probe.kind, ProbeKind::Http(_) | ProbeKind::Tcp(_));
    let fast_until = tokio::time::Instant::now() + FAST_WINDOW;
    let mut next = tokio::time::Instant::now();
    loop {
        tokio::time::sleep_until(next).await;
        let began = tokio::time::Instant::now();
        let gap = if fast && began < fast_until {
            interval.min(FAST_INTERVAL)
        } else {
            interval
        };
        next = began + gap;
        let attempt = match &probe.kind {
            ProbeKind::Http(url) => http_once(url).await,
            ProbeKind::Tcp(addr) => tcp_once(addr).await,
            ProbeKind::Exec(cmd) => exec_once(cmd, ctx, probe.interval).await,
            ProbeKind::Log(_) => unreachable_log(),
        };
        match attempt {
            Ok(detail) => {
                seen.set(detail.clone());
                return Ok(detail);
            }
            Err(saw) => seen.set(saw),
        }
    }
}

fn unreachable_log() -> Result<String, String> {
    Err("log probe in the polling loop".into())
}

async fn wait_for_line(lines: Option<LineSubscription>) -> Result<String, ProbeError> {
    let mut lines = lines.ok_or(ProbeError::NoOutput)?;
    match lines.recv().await {
        Some(line) => Ok(format!("matching line: {line}")),
        // The hub lives as long as the command: this is not reached while anyone could write.
        None => {
            std::future::pending::<()>().await;
            Err(ProbeError::NoOutput)
        }
    }
}

/// One HTTP GET; 2xx and 3xx are ready.
pub async fn http_once(url: &str) -> Result<String, String> {
    let url = url.to_string();
    let joined = tokio::task::spawn_blocking(move || {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .proxy(None)
            .timeout_global(Some(HTTP_ATTEMPT_LIMIT))
            .build();
        let agent = ureq::Agent::new_with_config(config);
        match agent.get(&url).call() {
            Ok(response) => {
                let status = response.status();
                if status.is_success() || status.is_redirection() {
                    Ok(format!("HTTP {}", status.as_u16()))
                } else {
                    Err(format!("HTTP {}", status.as_u16()))
                }
            }
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
    joined.unwrap_or_else(|e| Err(format!("http probe task failed: {e}")))
}

/// One TCP connect.
pub async fn tcp_once(addr: &str) -> Result<String, String> {
    match tokio::time::timeout(
        HTTP_ATTEMPT_LIMIT,
        tokio::net::TcpStream::connect(addr.to_string()),
    )
    .await
    {
        Ok(Ok(_)) => Ok(format!("connected to {addr}")),
        Ok(Err(e)) => Err(format!("{addr}: {e}")),
        Err(_) => Err(format!("{addr}: connect timed out")),
    }
}

/// One run of `sh -c cmd` in its own group; exit 0 is ready.
pub async fn exec_once(
    cmd: &str,
    ctx: &ProbeContext,
    interval: Duration,
) -> Result<String, String> {
    let owner = Owner::new(ctx.owner.scope.clone(), Role::ExecProbe(cmd.to_string()));
    let mut launch = Launch::shell(
        owner,
        cmd,
        Io::Piped {
            stdin: false,
            stdout: true,
            stderr: true,
        },
    );
    launch.env = ctx.env.clone();
    if !ctx.cwd.as_os_str().is_empty() {
        launch.cwd = Some(ctx.cwd.clone());
    }
    // Dropped mid-attempt (deadline, actor stopped), the whole group dies with the handle.
    launch.kill_on_drop = true;
    let mut group = handle::start(launch).map_err(|e| format!("cannot run `{cmd}`: {e}"))?;
    let mut stdout = group.take_stdout();
    let mut stderr = group.take_stderr();
    let limit = EXEC_ATTEMPT_LIMIT.max(interval);
    let attempt = async {
        use tokio::io::AsyncReadExt;
        let mut out = Vec::new();
        let mut err = Vec::new();
        let read_out = async {
            if let Some(s) = stdout.as_mut() {
                let _ = s.read_to_end(&mut out).await;
            }
        };
        let read_err = async {
            if let Some(s) = stderr.as_mut() {
                let _ = s.read_to_end(&mut err).await;
            }
        };
        let ((), (), status) = tokio::join!(read_out, read_err, group.wait());
        (status, out, err)
    };
    let outcome = tokio::time::timeout(limit, attempt).await;
    // Whatever the attempt left (its output pipes closed, so normally nothing) goes now.
    terminate(&mut group, &Ladder::kill()).await;
    match outcome {
        Ok((status, out, err)) => {
            let mut text = String::from_utf8_lossy(&out).into_owned();
            text.push_str(&String::from_utf8_lossy(&err));
            let last = text.lines().last().unwrap_or("").to_string();
            let detail = if last.is_empty() {
                format!("`{cmd}`: {status}")
            } else {
                format!("`{cmd}`: {status}, output: {last}")
            };
            if status.success() {
                Ok(detail)
            } else {
                Err(detail)
            }
        }
        Err(_) => Err(format!("`{cmd}`: still running after {limit:?}")),
    }
}
