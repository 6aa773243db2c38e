//! One session's browser as the session uses it: started from the effective `[browser]`
//! ([`SessionBrowser::start`]: find, launch, ready, watch), the environment it adds
//! (`BUGATTI_CDP_URL`), the Playwright MCP command for the agent, a capture per step, and the
//! end. The session owns one and ends it with its other harness processes, whatever happens.

use super::capture::{Monitor, StepCapture};
use super::error::BrowserError;
use super::executable;
use super::launch::{Browser, BrowserLaunch};
use super::pool::{BrowserPool, BrowserReservation, Lease, PoolKey, PoolRequest};
use crate::model::artifacts::{RunPaths, WorkspacePaths};
use crate::model::browser::BrowserConfig;
use crate::model::ids::StepId;
use crate::process::owner::Scope;
use crate::process::teardown::TeardownReport;
use std::path::{Path, PathBuf};

/// The variable naming the browser's DevTools WebSocket behind the session's token
/// (`ws://127.0.0.1:<port>/<token>/devtools/browser`) for the agent and the harness commands.
pub const CDP_URL_ENV: &str = "BUGATTI_CDP_URL";

/// Where the session's browser keeps its files.
#[derive(Debug, Clone)]
pub struct BrowserPlaces {
    /// The profile (`--user-data-dir`), inside the session's workspace.
    pub profile_dir: PathBuf,
    /// The browser's own output (beside the harness commands' logs).
    pub log_path: PathBuf,
    /// The browser's `TMPDIR`, inside the session's workspace: Chromium leaves
    /// `org.chromium.Chromium.*` folders in its temporary directory, and they go with the
    /// workspace instead of piling up in the machine's.
    pub tmp_dir: PathBuf,
    /// `[supervisor] max_log_bytes` for `browser.log`.
    pub max_log_bytes: u64,
    /// The DevTools endpoint's token (a fresh one when `None`).
    pub token: Option<String>,
    /// The DevTools endpoint's listener, bound ahead so that its address is known before the
    /// browser is up (a fresh one when `None`).
    pub listener: Option<std::sync::Arc<std::net::TcpListener>>,
}

impl BrowserPlaces {
    /// `<workspace>/browser-profile`, `<workspace>/browser-tmp` and `<run_dir>/logs/browser.log`.
    pub fn new(workspace: &Path, run: &RunPaths) -> Self {
        let workspace = WorkspacePaths::new(workspace);
        Self {
            profile_dir: workspace.browser_profile(),
            log_path: run.browser_log(),
            tmp_dir: workspace.browser_tmp(),
            max_log_bytes: crate::process::log_limit::DEFAULT_MAX_LOG_BYTES,
            token: None,
            listener: None,
        }
    }
}

/// The running browser of a session and its watch.
pub struct SessionBrowser {
    served: Served,
    monitor: Monitor,
    config: BrowserConfig,
}

/// Whose browser serves the session.
enum Served {
    /// Its own, started for it and ended with it.
    Own(Browser),
    /// The pool's, in a browser context of the session's own (docs/browser.md, "One browser per
    /// worker"), given back at its end.
    Pooled(Lease, BrowserPool),
}

impl SessionBrowser {
    /// Finds the browser `config` names (on `path_var`), starts it for `scope` with `env`, waits
    /// for its DevTools endpoint and attaches the monitor. On failure nothing is left running.
    pub async fn start(
        config: &BrowserConfig,
        places: &BrowserPlaces,
        scope: Scope,
        env: Vec<(String, String)>,
        path_var: Option<&str>,
    ) -> Result<Self, BrowserError> {
        let exe = executable::find(config.executable.as_deref(), path_var)?;
        let mut spec = BrowserLaunch::new(exe, places.profile_dir.clone(), scope);
        spec.headless = config.headless;
        spec.viewport = config.viewport;
        spec.log_path = Some(places.log_path.clone());
        spec.max_log_bytes = places.max_log_bytes;
        spec.token = places.token.clone();
        spec.listener = places.listener.clone();
        spec.env = env;
        if std::fs::create_dir_all(&places.tmp_dir).is_ok() {
            spec.env
                .push(("TMPDIR".into(), places.tmp_dir.display().to_string()));
        }
        let mut browser = Browser::start(spec).await?;
        match Monitor::attach(&browser.http_base(), Some(config.viewport)).await {
            Ok(monitor) => Ok(Self {
                served: Served::Own(browser),
                monitor,
                config: config.clone(),
            }),
            Err(e) => {
                browser.stop(true).await;
                Err(e)
            }
        }
    }

    /// What a session asks of the pool for `config`: the browser found (on `path_var`), the
    /// session's token (`places.token`, a fresh one when `None`) and log; `run` names the session
    /// in the browser's log, `env` is a started browser's.
    pub fn pool_request(
        config: &BrowserConfig,
        places: &BrowserPlaces,
        run: &str,
        env: Vec<(String, String)>,
        path_var: Option<&str>,
    ) -> Result<PoolRequest, BrowserError> {
        Ok(PoolRequest {
            key: PoolKey {
                executable: executable::find(config.executable.as_deref(), path_var)?,
                headless: config.headless,
                viewport: config.viewport,
            },
            token: places
                .token
                .clone()
                .unwrap_or_else(super::endpoint::new_token),
            log_path: places.log_path.clone(),
            max_log_bytes: places.max_log_bytes,
            run: run.to_string(),
            env,
            ready_timeout: std::time::Duration::from_secs(30),
        })
    }

    /// As [`Self::start`], on a browser of `pool` (one of the same settings, kept from an earlier
    /// session, or a new one; held ahead in `reservation`), in a fresh browser context behind
    /// the session's token.
    pub async fn from_pool(
        config: &BrowserConfig,
        pool: &BrowserPool,
        reservation: BrowserReservation,
        request: &PoolRequest,
    ) -> Result<Self, BrowserError> {
        let lease = pool.checkout_reserved(reservation, request).await?;
        match Monitor::attach(&lease.http_base(), Some(config.viewport)).await {
            Ok(monitor) => Ok(Self {
                served: Served::Pooled(lease, pool.clone()),
                monitor,
                config: config.clone(),
            }),
            Err(e) => {
                pool.give_back(lease, false, true).await;
                Err(e)
            }
        }
    }

    /// What the agent's and the commands' environment gets: `BUGATTI_CDP_URL`.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![(CDP_URL_ENV.to_string(), self.cdp_url())]
    }

    /// The running browser (its version, pid, sandbox).
    pub fn browser(&self) -> &Browser {
        match &self.served {
            Served::Own(browser) => browser,
            Served::Pooled(lease, _) => lease.browser(),
        }
    }

    /// `ws://127.0.0.1:<port>/<token>/devtools/browser`: the browser-wide DevTools WebSocket
    /// behind the session's token (`BUGATTI_CDP_URL`).
    pub fn cdp_url(&self) -> String {
        match &self.served {
            Served::Own(browser) => browser.cdp_url(),
            Served::Pooled(lease, _) => lease.cdp_url(),
        }
    }

    /// Which session of a pooled browser this is (1 for one started for it); `None` for a
    /// browser of the session's own.
    pub fn pooled_session(&self) -> Option<u32> {
        match &self.served {
            Served::Own(_) => None,
            Served::Pooled(lease, _) => Some(lease.session_number()),
        }
    }

    /// A step starts: its window of console messages and failed requests opens.
    pub fn begin_step(&self) {
        self.monitor.begin_step();
    }

    /// A step ended: the capture `[browser] capture` asks for, under `run_dir`.
    pub async fn end_step(&self, step_id: StepId, run_dir: &Path) -> StepCapture {
        self.monitor
            .capture_step(step_id, run_dir, self.config.capture)
            .await
    }

    /// What a step's console errors make of its verdict: `None` (no errors, or the step failed
    /// anyway), else a warning, or a failure with `fail_on_console_errors`.
    pub fn console_verdict(&self, passed: bool, capture: &StepCapture) -> Option<ConsoleVerdict> {
        console_verdict(
            passed,
            capture.console_errors,
            capture.first_console_error.as_deref(),
            self.config.fail_on_console_errors,
        )
    }

    /// Keeps the replay's Playwright MCP client with a pooled browser for its next session
    /// (ended with the browser if it is not lent again); a browser of the session's own does
    /// not keep it: it is ended.
    pub async fn keep_replay_client(&mut self, client: super::pool::KeptClient) {
        match &mut self.served {
            Served::Pooled(lease, _) => lease.keep_client(client),
            Served::Own(_) => client.stop().await,
        }
    }

    /// Ends the browser (`skip_grace`: SIGKILL at once); a pooled one is given back.
    pub async fn stop(self, skip_grace: bool) -> TeardownReport {
        self.end(skip_grace, true).await
    }

    /// Ends the browser (`skip_grace`: SIGKILL at once). A pooled one is given back, and lent
    /// again only if the session was `sound` (it ended without a harness error, a timeout or an
    /// interruption that may have left the browser broken) and nothing of it is left.
    pub async fn end(self, skip_grace: bool, sound: bool) -> TeardownReport {
        self.monitor.close().await;
        match self.served {
            Served::Own(mut browser) => browser.stop(skip_grace).await,
            Served::Pooled(lease, pool) => {
                pool.give_back(lease, sound && !skip_grace, skip_grace)
                    .await
            }
        }
    }
}

/// What console errors on a passing step mean (docs/browser.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsoleVerdict {
    /// The step passes with a warning.
    Warn(String),
    /// The step fails (`fail_on_console_errors = true`).
    Fail(String),
}

/// See [`SessionBrowser::console_verdict`].
/// The first error's own text is quoted in the verdict (one line, cut): the reader sees the cause
/// without opening the step.
pub fn console_verdict(
    passed: bool,
    errors: usize,
    first: Option<&str>,
    fail_on: bool,
) -> Option<ConsoleVerdict> {
    if !passed || errors == 0 {
        return None;
    }
    let mut what = format!(
        "the page logged {errors} console error{} during the step",
        if errors == 1 { "" } else { "s" }
    );
    if let Some(first) = first.map(str::trim).filter(|t| !t.is_empty()) {
        let line = first.lines().next().unwrap_or_default();
        let mut cut: String = line.chars().take(200).collect();
        if cut.len() < first.len() {
            cut.push('…');
        }
        what = format!(
            "{what}{}: \"{cut}\"",
            if errors > 1 { ", the first" } else { "" }
        );
    }
    Some(if fail_on {
        ConsoleVerdict::Fail(format!("{what} ([browser] fail_on_console_errors)"))
    } else {
        ConsoleVerdict::Warn(what)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_errors_warn_a_passing_step_or_fail_it_when_asked() {
        assert_eq!(console_verdict(true, 0, None, true), None);
        assert_eq!(console_verdict(false, 3, None, true), None);
        assert_eq!(
            console_verdict(true, 1, None, false),
            Some(ConsoleVerdict::Warn(
                "the page logged 1 console error during the step".into()
            ))
        );
        assert_eq!(
            console_verdict(true, 2, Some("Uncaught TypeError: x\n  at f"), false),
            Some(ConsoleVerdict::Warn(
                "the page logged 2 console errors during the step, the first: \"Uncaught TypeError: x…\"".into()
            ))
        );
        assert!(matches!(
            console_verdict(true, 2, None, true),
            Some(ConsoleVerdict::Fail(m)) if m.contains("2 console errors") && m.contains("fail_on_console_errors")
        ));
    }
}
