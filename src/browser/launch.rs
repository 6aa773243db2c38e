//! Starting the session's browser: the command line (a profile of its own in the workspace,
//! DevTools over `--remote-debugging-pipe` — no port of Chromium's own — behind the token-checked
//! [`super::endpoint::DevtoolsEndpoint`] the supervisor serves on loopback, `--no-sandbox` as root, none of
//! Chromium's calls home), the spawn through [`crate::process::handle::start_with_fds`] (the pipe
//! as fds 3 and 4, its own process group, registered under [`Role::Browser`], the run id in its
//! environment), readiness on `Browser.getVersion` over the pipe, and the end through
//! [`crate::process::teardown::terminate`]. Chromium's zygote, GPU, utility and renderer
//! processes stay in its process group (checked with Chromium 156), so the group's SIGKILL ends
//! them; they do not carry the environment marker (they overwrite their environ with their
//! command line), but every one names the profile directory in its command line, which is how
//! the tests look for leftovers. The exception is `chrome_crashpad_handler`: it double-forks into
//! a session of its own (parented to init) and keeps its environment, so the teardown's sweep
//! finds it by the marker and kills it when it has not yet exited on its own — the report then
//! lists its pids as leaked. (`--disable-crashpad-for-testing` would avoid it, but with it
//! Chromium 156 aborts every navigation.)

use super::devtools::BrowserVersion;
use super::endpoint::DevtoolsEndpoint;
use super::error::BrowserError;
use super::pipe::{PipeEnds, PipeHub};
use crate::process::handle::{self, EnvMarker, Group, Io, Launch};
use crate::process::owner::{Owner, Role, Scope};
use crate::process::teardown::{terminate, Ladder, TeardownReport};
use nix::sys::signal::Signal;
use std::io::Read;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Between two `Browser.getVersion` attempts: Chromium is ready in a fraction of a second.
const READY_POLL: Duration = Duration::from_millis(50);
/// SIGTERM lets Chromium close its profile; past this, SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// How much of the browser's output an early-exit error quotes.
const TAIL_BYTES: usize = 4096;

/// Everything needed to start one session's browser.
#[derive(Debug, Clone)]
pub struct BrowserLaunch {
    /// The executable ([`super::executable::find`]).
    pub executable: PathBuf,
    /// `--headless` (the default; `false` shows a window where there is a display).
    pub headless: bool,
    /// The window's size in CSS pixels (`[browser] viewport = "1280x800"`).
    pub viewport: (u32, u32),
    /// `--user-data-dir`: a fresh profile in the session's workspace.
    pub profile_dir: PathBuf,
    /// Where the browser's own output goes (the session's harness log directory), if anywhere.
    pub log_path: Option<PathBuf>,
    /// `[supervisor] max_log_bytes` for that log (its head, then a rolling tail).
    pub max_log_bytes: u64,
    /// The run whose browser it is.
    pub scope: Scope,
    /// Added to the inherited environment (the session's variables).
    pub env: Vec<(String, String)>,
    /// How long DevTools may take to answer.
    pub ready_timeout: Duration,
    /// `--no-sandbox`: Chromium refuses to start as root without it.
    pub no_sandbox: bool,
    /// The DevTools endpoint's token (a fresh one when `None`): a session makes its own first, so
    /// that its redaction knows it before anything can print it.
    pub token: Option<String>,
    /// The endpoint's loopback listener, bound ahead
    /// ([`super::endpoint::DevtoolsEndpoint::serve_bound`]); a fresh one when `None`.
    pub listener: Option<Arc<std::net::TcpListener>>,
    /// Whether that listener's connections wait in its backlog until a first token is granted
    /// ([`super::endpoint::DevtoolsEndpoint::serve_bound`]'s `held`): a pooled browser's.
    pub held_until_granted: bool,
    /// Whether the browser opens with a blank tab (`about:blank`), as a session's own browser
    /// does for the agent to take; `false` (`--no-startup-window`, as Playwright launches it)
    /// for a pooled browser, whose sessions each get a tab of their own in their context: an
    /// idle first tab no session uses costs the browser, its renderer and its compositor work
    /// all suite long (docs/browser.md, "One browser per worker").
    pub startup_window: bool,
    /// Whether `/dev/shm` has room for the renderers' shared memory ([`shared_memory_roomy`]).
    pub shared_memory_roomy: bool,
}

impl BrowserLaunch {
    /// A headless 1280×800 browser with its profile at `profile_dir`, `--no-sandbox` when this
    /// process runs as root.
    pub fn new(executable: PathBuf, profile_dir: PathBuf, scope: Scope) -> Self {
        Self {
            executable,
            headless: true,
            viewport: (1280, 800),
            profile_dir,
            log_path: None,
            max_log_bytes: crate::process::log_limit::DEFAULT_MAX_LOG_BYTES,
            scope,
            env: Vec::new(),
            ready_timeout: Duration::from_secs(30),
            no_sandbox: running_as_root(),
            token: None,
            listener: None,
            held_until_granted: false,
            startup_window: true,
            shared_memory_roomy: shared_memory_roomy(),
        }
    }

    /// The command line: DevTools over the pipe (fds 3 and 4).
    pub fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if self.headless {
            args.push("--headless".to_string());
        }
        if self.no_sandbox {
            args.push("--no-sandbox".to_string());
        }
        if !self.shared_memory_roomy {
            // Containers give /dev/shm 64 MiB: renderers crash on large pages without this. Where
            // it has room, shared memory stays there: in files on disk instead, every renderer's
            // buffers cost the file system (about a tenth of a browser suite's CPU measured).
            args.push("--disable-dev-shm-usage".to_string());
        }
        if self.headless {
            // A headless page reports a mouse, as a desktop browser's (and Playwright's) does:
            // an app's `(hover: hover)` styles are the ones the agent's browser shows.
            args.push(
                "--blink-settings=primaryHoverType=2,availableHoverTypes=2,\
                 primaryPointerType=4,availablePointerTypes=4"
                    .to_string(),
            );
        }
        args.extend(PLAYWRIGHT_SWITCHES.map(String::from));
        args.extend(
            [
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                // None of these reach the network on their own: tests run offline, and a
                // browser phoning home is noise in the app's network evidence.
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--disable-default-apps",
                "--metrics-recording-only",
                "--password-store=basic",
                // DevTools on fds 3 and 4 only: a port would be open to every local process.
                "--remote-debugging-pipe",
            ]
            .map(String::from),
        );
        args.push(format!("--user-data-dir={}", self.profile_dir.display()));
        args.push(format!(
            "--window-size={},{}",
            self.viewport.0, self.viewport.1
        ));
        if self.startup_window {
            args.push("about:blank".to_string());
        } else {
            args.push("--no-startup-window".to_string());
        }
        args
    }
}

/// The switches Playwright launches Chromium with (its `chromiumSwitches`), so that the
/// browser the agent's Playwright MCP attaches to behaves as the one it would launch itself, and
/// costs as little: no crash reporter processes, field trials, background timers or renderer
/// throttling, back/forward cache, optimisation hints or hang monitor; scrollbars hidden and
/// colours in sRGB, so that screenshots of one page match from run to run.
const PLAYWRIGHT_SWITCHES: [&str; 21] = [
    "--disable-field-trial-config",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-back-forward-cache",
    "--disable-breakpad",
    "--disable-component-extensions-with-background-pages",
    "--disable-features=AvoidUnnecessaryBeforeUnloadCheckSync,DestroyProfileOnBrowserClose,\
     HttpsUpgrades,HttpsFirstBalancedModeAutoEnable,LensOverlay,MediaRouter,PaintHolding,\
     ThirdPartyStoragePartitioning,AvoidCorsURLLoaderRestartOnRedirect,OptimizationHints,\
     NetworkTimeServiceQuerying,AimEnabled,PreconnectToSearch",
    "--allow-pre-commit-input",
    "--disable-hang-monitor",
    "--disable-ipc-flooding-protection",
    "--disable-popup-blocking",
    "--disable-prompt-on-repost",
    "--disable-renderer-backgrounding",
    "--force-color-profile=srgb",
    "--use-mock-keychain",
    "--no-service-autorun",
    "--disable-search-engine-choice-screen",
    "--disable-stack-profiler",
    "--disable-infobars",
    "--hide-scrollbars",
    "--mute-audio",
];

/// How much free shared memory (`/dev/shm`) Chromium's renderers are given to use; below it
/// (a container's 64 MiB) they use files on disk instead (`--disable-dev-shm-usage`).
const ROOMY_SHARED_MEMORY: u64 = 1 << 30;

/// Whether `/dev/shm` exists with at least [`ROOMY_SHARED_MEMORY`] free.
fn shared_memory_roomy() -> bool {
    nix::sys::statvfs::statvfs("/dev/shm")
        .map(|fs| fs.blocks_available().saturating_mul(fs.fragment_size()) >= ROOMY_SHARED_MEMORY)
        .unwrap_or(false)
}

/// Whether this process runs as root (CI containers), where Chromium needs `--no-sandbox`.
pub fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Where the browser's output is written: switched to the serving session's log when a pooled
/// browser changes hands, so that each run's `browser.log` holds what the browser said while it
/// served that run.
type BrowserLogSink = Arc<Mutex<Option<crate::process::log_limit::LimitedLog>>>;

fn open_log(
    path: &std::path::Path,
    max_log_bytes: u64,
) -> Option<crate::process::log_limit::LimitedLog> {
    use crate::process::log_limit::{LimitedLog, LogCut};
    let file = std::fs::File::create(path).ok()?;
    Some(LimitedLog::new(
        file,
        path,
        max_log_bytes,
        Arc::new(LogCut::default()),
    ))
}

/// The session's running browser.
pub struct Browser {
    group: Group,
    endpoint: DevtoolsEndpoint,
    hub: PipeHub,
    log: BrowserLogSink,
    version: BrowserVersion,
    profile_dir: PathBuf,
    no_sandbox: bool,
}

impl Browser {
    /// Starts the browser and waits until its DevTools endpoint answers. On any failure after
    /// the spawn, the group is ended before the error is returned.
    pub async fn start(spec: BrowserLaunch) -> Result<Self, BrowserError> {
        std::fs::create_dir_all(&spec.profile_dir).map_err(|source| BrowserError::Profile {
            path: spec.profile_dir.clone(),
            source,
        })?;
        let ends = PipeEnds::new().map_err(|source| BrowserError::Spawn {
            program: spec.executable.clone(),
            source,
        })?;
        let (hub, child_fds) = PipeHub::start(ends).map_err(|source| BrowserError::Spawn {
            program: spec.executable.clone(),
            source,
        })?;
        let mut env = spec.env.clone();
        if let Some(run) = spec.scope.run_id() {
            // The run's sweep finds any escapee of the browser by this.
            env.push(("BUGATTI_RUN_ID".to_string(), run.as_str().to_string()));
        }
        let launch = Launch {
            owner: Owner::new(spec.scope.clone(), Role::Browser),
            program: spec.executable.clone(),
            args: spec.args(),
            cwd: None,
            env,
            inherit_env: true,
            io: Io::Merged,
            marker: EnvMarker::fresh(),
            kill_on_drop: true,
        };
        let mut group = handle::start_with_fds(launch, child_fds.into()).map_err(|source| {
            BrowserError::Spawn {
                program: spec.executable.clone(),
                source,
            }
        })?;
        let tail = Arc::new(Mutex::new(Vec::new()));
        let log: BrowserLogSink = Arc::new(Mutex::new(
            spec.log_path
                .as_deref()
                .and_then(|path| open_log(path, spec.max_log_bytes)),
        ));
        if let Some(output) = group.take_output() {
            drain_output(output, log.clone(), tail.clone());
        }
        let ready = match wait_ready(&group, &hub, spec.ready_timeout, &tail).await {
            Ok(answer) => match &spec.listener {
                Some(bound) => bound.try_clone().and_then(|listener| {
                    DevtoolsEndpoint::serve_bound(
                        listener,
                        hub.clone(),
                        answer.clone(),
                        spec.token.clone(),
                        spec.held_until_granted,
                    )
                }),
                None => {
                    DevtoolsEndpoint::serve(hub.clone(), answer.clone(), spec.token.clone()).await
                }
            }
            .map(|endpoint| (endpoint, answer))
            .map_err(BrowserError::from),
            Err(e) => Err(e),
        };
        match ready {
            Ok((endpoint, answer)) => Ok(Self {
                version: BrowserVersion {
                    browser: answer["product"].as_str().unwrap_or_default().to_string(),
                    protocol: answer["protocolVersion"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    ws_url: endpoint.ws_url(),
                },
                group,
                endpoint,
                hub,
                log,
                profile_dir: spec.profile_dir,
                no_sandbox: spec.no_sandbox,
            }),
            Err(e) => {
                terminate(&mut group, &Ladder::kill()).await;
                Err(e)
            }
        }
    }

    /// `ws://127.0.0.1:<port>/<token>/devtools/browser`, the browser-wide DevTools WebSocket
    /// behind the session's token: `BUGATTI_CDP_URL`, and Playwright MCP's `--cdp-endpoint`.
    pub fn cdp_url(&self) -> String {
        self.endpoint.ws_url()
    }

    /// `http://127.0.0.1:<port>/<token>`: the base of `/json/version` and `/json/list`.
    pub fn http_base(&self) -> String {
        self.endpoint.http_base()
    }

    /// Where the endpoint is, for the console and the logs: without the token, which is the
    /// session's secret.
    pub fn shown_endpoint(&self) -> String {
        format!("ws://127.0.0.1:{}/…/devtools/browser", self.endpoint.port())
    }

    /// The browser-wide DevTools WebSocket (the same as [`Self::cdp_url`]).
    pub fn ws_url(&self) -> &str {
        &self.version.ws_url
    }

    /// Who the browser is (`Browser.getVersion` at readiness) and its WebSocket.
    pub fn version(&self) -> &BrowserVersion {
        &self.version
    }

    /// The loopback port of the supervisor's DevTools endpoint (not Chromium's: it has none).
    pub fn port(&self) -> u16 {
        self.endpoint.port()
    }

    /// The browser's process (and group) id.
    pub fn pid(&self) -> i32 {
        self.group.pid()
    }

    /// The profile directory.
    pub fn profile_dir(&self) -> &std::path::Path {
        &self.profile_dir
    }

    /// Whether it was started with `--no-sandbox`.
    pub fn no_sandbox(&self) -> bool {
        self.no_sandbox
    }

    /// The browser's DevTools pipe, for the supervisor's own calls.
    pub fn hub(&self) -> &PipeHub {
        &self.hub
    }

    /// Its DevTools endpoint: where a pooled browser's sessions are let in and shut out.
    pub fn endpoint(&self) -> &DevtoolsEndpoint {
        &self.endpoint
    }

    /// Whether the browser is still running (its pipe open, its leader not exited).
    pub fn is_running(&self) -> bool {
        !self.hub.is_closed() && self.group.exit_status().is_none()
    }

    /// From now on the browser's output goes to `path` (a fresh log, at most `max_log_bytes`),
    /// after `first_line`.
    pub fn redirect_log(&self, path: &std::path::Path, max_log_bytes: u64, first_line: &str) {
        let mut opened = open_log(path, max_log_bytes);
        if let Some(log) = opened.as_mut() {
            let _ = log
                .write_all(format!("{first_line}\n").as_bytes())
                .and_then(|()| log.flush());
        }
        *self.log.lock().unwrap_or_else(|p| p.into_inner()) = opened;
    }

    /// Ends the browser and everything it started: SIGTERM, then SIGKILL of the group and a
    /// sweep for its marker. `skip_grace` (a second Ctrl-C, the deadline) goes straight to SIGKILL.
    pub async fn stop(&mut self, skip_grace: bool) -> TeardownReport {
        let ladder = if skip_grace {
            Ladder::kill()
        } else {
            Ladder::harness(Signal::SIGTERM, STOP_GRACE)
        };
        // Chromium's crash reporter (and a second one watching it) double-forks and calls setsid
        // at the browser's start, so it runs outside the browser's group by design, and it ends
        // by itself only once it sees the browser gone: the sweep after the group often found it
        // still alive and reported the browser as leaking (issue 39, item 7). It is the
        // browser's own: ended with it, not a leak.
        let ladder = ladder.with_companions(CHROMIUM_COMPANIONS);
        terminate(&mut self.group, &ladder).await
    }
}

/// The processes Chromium starts outside its group by design: its crash reporter.
const CHROMIUM_COMPANIONS: &[&str] = &["chrome_crashpad_handler"];

/// Copies the browser's output to its log (if any) on a thread of its own (the read blocks),
/// keeping the last [`TAIL_BYTES`] for an early-exit error.
fn drain_output(mut output: Box<dyn Read + Send>, log: BrowserLogSink, tail: Arc<Mutex<Vec<u8>>>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = output.read(&mut buf) {
            if n == 0 {
                break;
            }
            let chunk = buf.get(..n).unwrap_or_default();
            if let Some(file) = log.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
                let _ = file.write_all(chunk).and_then(|()| file.flush());
            }
            let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
            tail.extend_from_slice(chunk);
            let excess = tail.len().saturating_sub(TAIL_BYTES);
            tail.drain(..excess);
        }
    });
}

/// Asks `Browser.getVersion` over the pipe until it answers, the browser exits, or `limit`
/// passes. Answers its result.
async fn wait_ready(
    group: &Group,
    hub: &PipeHub,
    limit: Duration,
    tail: &Mutex<Vec<u8>>,
) -> Result<serde_json::Value, BrowserError> {
    let deadline = Instant::now() + limit;
    let mut exit = group.exit_watch();
    loop {
        if let Some(status) = group.exit_status() {
            // Let the output thread catch the last words.
            tokio::time::sleep(Duration::from_millis(100)).await;
            let output = tail.lock().unwrap_or_else(|p| p.into_inner());
            return Err(BrowserError::ExitedEarly {
                status: status.to_string(),
                output: String::from_utf8_lossy(&output).trim().to_string(),
            });
        }
        let attempt = Duration::from_secs(1).min(limit);
        let last = match hub
            .call("Browser.getVersion", serde_json::json!({}), None, attempt)
            .await
        {
            Ok(version) => return Ok(version),
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            return Err(BrowserError::NotReady {
                url: "--remote-debugging-pipe (Browser.getVersion)".to_string(),
                secs: limit.as_secs(),
                last,
            });
        }
        // Woken early by the exit event, so an early death is reported at once.
        let _ = tokio::time::timeout(READY_POLL, exit.changed()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_isolates_the_browser() {
        let mut spec = BrowserLaunch::new(
            PathBuf::from("chromium"),
            PathBuf::from("/ws/browser-profile"),
            Scope::run("r"),
        );
        spec.no_sandbox = false;
        spec.viewport = (800, 600);
        let args = spec.args();
        for wanted in [
            "--headless",
            "--remote-debugging-pipe",
            "--user-data-dir=/ws/browser-profile",
            "--window-size=800,600",
            "--disable-background-networking",
        ] {
            assert!(args.iter().any(|a| a == wanted), "{wanted} in {args:?}");
        }
        assert!(!args.iter().any(|a| a == "--no-sandbox"));
        assert_eq!(args.last().map(String::as_str), Some("about:blank"));
        assert!(!args.iter().any(|a| a == "--no-startup-window"));
        assert!(
            !args
                .iter()
                .any(|a| a.starts_with("--remote-debugging-port")),
            "no port of Chromium's own: {args:?}"
        );
        assert!(args.iter().any(|a| a == "--disable-breakpad"), "{args:?}");
        spec.shared_memory_roomy = false;
        assert!(spec.args().iter().any(|a| a == "--disable-dev-shm-usage"));
        spec.shared_memory_roomy = true;
        assert!(!spec.args().iter().any(|a| a == "--disable-dev-shm-usage"));
        spec.no_sandbox = true;
        spec.headless = false;
        let args = spec.args();
        assert!(args.iter().any(|a| a == "--no-sandbox"));
        assert!(!args.iter().any(|a| a == "--headless"));
        spec.startup_window = false;
        let args = spec.args();
        assert!(args.iter().any(|a| a == "--no-startup-window"), "{args:?}");
        assert!(!args.iter().any(|a| a == "about:blank"), "{args:?}");
    }
}
