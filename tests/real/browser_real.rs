//! The session's browser against the real Chromium: launch in its own group, readiness on its
//! DevTools endpoint, teardown with nothing left, and the per-step capture of a real page served
//! on loopback. Skips (saying so) where no Chromium is installed.

use bugatti::browser::cdp::CdpClient;
use bugatti::browser::{Browser, BrowserError, BrowserLaunch, CaptureSet, Monitor};
use bugatti::model::ids::StepId;
use bugatti::process::Scope;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common;
use crate::common::mcp::RpcAnswer;
use bugatti::browser::capture::{ConsoleEntry, FailedRequest};

fn chromium() -> Option<PathBuf> {
    common::skip::chromium("the session's browser")
}

fn run_id(name: &str) -> String {
    format!("browser-test-{name}-{}", std::process::id())
}

fn cmdline_mentions(pid: i32, needle: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).contains(needle))
        .unwrap_or(false)
}

/// Every live process started with this profile or carrying this run id.
fn browser_processes(run: &str, profile: &Path) -> Vec<i32> {
    let mut pids = common::processes_with_env_entry(&format!("BUGATTI_RUN_ID={run}"));
    let profile = profile.display().to_string();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        {
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| {
                    s.rsplit(')')
                        .next()
                        .unwrap_or("")
                        .trim_start()
                        .starts_with('Z')
                })
                .unwrap_or(true);
            if !zombie && cmdline_mentions(pid, &profile) && !pids.contains(&pid) {
                pids.push(pid);
            }
        }
    }
    pids
}

fn assert_none_left(run: &str, profile: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = browser_processes(run, profile);
        if left.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            for pid in &left {
                let _ = std::process::Command::new("kill")
                    .args(["-9", &pid.to_string()])
                    .status();
            }
            panic!("browser processes left: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The browser's crash handlers: they leave its process group (see `browser::launch`).
fn crash_handlers(run: &str, profile: &Path) -> Vec<i32> {
    browser_processes(run, profile)
        .into_iter()
        .filter(|pid| cmdline_mentions(*pid, "chrome_crashpad_handler"))
        .collect()
}

/// The crash handlers held still (SIGSTOP) as on a loaded machine, where they are slow to see the
/// browser gone and so outlive its group: what made 5 of 71 passing sessions report `LEAKED`.
fn hold_still(handlers: &[i32]) {
    assert!(
        !handlers.is_empty(),
        "Debian's Chromium starts chrome_crashpad_handler; none found"
    );
    for pid in handlers {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGSTOP,
        );
    }
}

/// Issue 39 item 7: the teardown ended every browser process, and the crash handlers, which
/// leave the browser's group by design and end only after it, are the browser's own, not a leak
/// (before, a sweep that found them still alive reported the browser as `leaked`).
fn assert_crash_handlers_are_no_leak(report: &bugatti::process::TeardownReport, handlers: &[i32]) {
    assert!(
        report.leaked.is_empty() && report.state != bugatti::model::outcome::TeardownState::Leaked,
        "crash handlers {handlers:?}: {report:?}"
    );
}

async fn start(name: &str, exe: PathBuf, workspace: &Path) -> (Browser, String, PathBuf) {
    let run = run_id(name);
    let profile = workspace.join("browser-profile");
    let mut spec = BrowserLaunch::new(exe, profile.clone(), Scope::run(run.clone()));
    spec.log_path = Some(workspace.join("browser.log"));
    let browser = Browser::start(spec).await.expect("the browser starts");
    (browser, run, profile)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browser_starts_in_its_own_group_answers_and_leaves_nothing() {
    let Some(exe) = chromium() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut browser, run, profile) = start("launch", exe, dir.path()).await;
    assert!(
        browser.version().browser.contains("Chrome"),
        "{:?}",
        browser.version()
    );
    assert!(
        browser.ws_url().starts_with("ws://127.0.0.1:"),
        "{}",
        browser.ws_url()
    );
    // The browser is reached through the supervisor's endpoint, behind the session's token.
    assert_eq!(browser.cdp_url(), browser.ws_url());
    assert!(
        browser
            .http_base()
            .starts_with(&format!("http://127.0.0.1:{}/", browser.port())),
        "{}",
        browser.http_base()
    );
    let pages = bugatti::browser::devtools::pages(&browser.http_base())
        .await
        .expect("/json/list");
    assert_eq!(pages.len(), 1, "{pages:?}");
    assert_eq!(pages[0].url, "about:blank");
    assert!(profile.join("Default").is_dir() || profile.join("Local State").exists());
    // Chromium forks a zygote and renderers: the group is more than its leader.
    let running = browser_processes(&run, &profile);
    assert!(running.len() > 1, "only {running:?}");
    assert!(running.contains(&browser.pid()));
    let handlers = crash_handlers(&run, &profile);
    hold_still(&handlers);
    let report = browser.stop(false).await;
    assert_crash_handlers_are_no_leak(&report, &handlers);
    assert_none_left(&run, &profile);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skipped_grace_kills_the_whole_browser_at_once() {
    let Some(exe) = chromium() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut browser, run, profile) = start("kill", exe, dir.path()).await;
    assert!(browser_processes(&run, &profile).len() > 1);
    let handlers = crash_handlers(&run, &profile);
    hold_still(&handlers);
    let report = browser.stop(true).await;
    assert_crash_handlers_are_no_leak(&report, &handlers);
    assert_none_left(&run, &profile);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_that_exits_at_once_says_so_with_its_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = dir.path().join("fake-chromium");
    std::fs::write(&fake, "#!/bin/sh\necho 'cannot open display' >&2\nexit 3\n").expect("write");
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let run = run_id("early");
    let spec = BrowserLaunch::new(fake, dir.path().join("profile"), Scope::run(run.clone()));
    match Browser::start(spec).await {
        Err(BrowserError::ExitedEarly { status, output }) => {
            assert!(status.contains('3'), "{status}");
            assert!(output.contains("cannot open display"), "{output}");
        }
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("a browser that exits cannot be ready"),
    }
    assert_none_left(&run, &dir.path().join("profile"));
}

/// A page that logs a console error and asks for an image that is not there.
fn serve_app() -> (
    u16,
    std::thread::JoinHandle<()>,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopping = stop.clone();
    let server = std::thread::spawn(move || {
        while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
            let Ok((mut stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            let _ = stream.set_nonblocking(false);
            let mut request_line = String::new();
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let _ = reader.read_line(&mut request_line);
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                    break;
                }
            }
            let (status, body) = if request_line.starts_with("GET / ") {
                (
                    "200 OK",
                    "<!doctype html><title>Shop</title><h1>Shop</h1>\
                     <script>console.error('deliberate console error');\
                     console.warn('deliberate warning');</script>\
                     <img src=\"/missing.png\">",
                )
            } else {
                ("404 Not Found", "not here")
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, server, stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_capture_holds_the_screenshot_the_console_error_and_the_404() {
    let Some(exe) = chromium() else { return };
    let (app_port, server, stop_server) = serve_app();
    let dir = tempfile::tempdir().expect("tempdir");
    let run_dir = dir.path().join("run");
    let (mut browser, run, profile) = start("capture", exe, dir.path()).await;

    let monitor = Monitor::attach(&browser.http_base(), None)
        .await
        .expect("monitor");
    let deadline = Instant::now() + Duration::from_secs(10);
    while monitor.watched_pages().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the first page was never attached"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The "agent": its own CDP connection, as Playwright MCP has.
    let agent = CdpClient::connect(browser.ws_url(), |_| {})
        .await
        .expect("agent");
    let limit = Duration::from_secs(10);
    let target = bugatti::browser::devtools::pages(&browser.http_base())
        .await
        .expect("pages")[0]
        .id
        .clone();
    let session = agent.attach(&target, limit).await.expect("attach");

    // From about:blank to the app is a cross-process navigation: the new renderer's first
    // subresource requests (the 404 image) are missed by the Network domain, which the capture
    // must make up for.
    monitor.begin_step();
    agent
        .call(
            "Page.navigate",
            json!({"url": format!("http://127.0.0.1:{app_port}/")}),
            Some(&session),
            limit,
        )
        .await
        .expect("navigate");
    agent
        .call(
            "Runtime.evaluate",
            json!({"expression": "new Promise(r => document.readyState === 'complete' ? r() : addEventListener('load', () => r()))", "awaitPromise": true}),
            Some(&session),
            limit,
        )
        .await
        .expect("loaded");
    let capture = monitor
        .capture_step(StepId::new(3), &run_dir, CaptureSet::all())
        .await;
    assert!(capture.problems.is_empty(), "{:?}", capture.problems);
    let kinds: Vec<_> = capture.evidence.iter().map(|e| e.kind()).collect();
    assert_eq!(
        kinds,
        ["screenshot", "console", "network"],
        "{:?}",
        capture.evidence
    );

    let png = std::fs::read(run_dir.join("screenshots/step-3-1.png")).expect("screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(png.len() > 1000, "a {} byte PNG", png.len());
    let console =
        std::fs::read_to_string(run_dir.join("browser/step-3.console.jsonl")).expect("console");
    assert!(console.contains("deliberate console error"), "{console}");
    assert!(console.contains("deliberate warning"), "{console}");
    assert!(capture.console_errors >= 1, "{capture:?}");
    let network =
        std::fs::read_to_string(run_dir.join("browser/step-3.network.jsonl")).expect("network");
    let failed: Vec<FailedRequest> =
        common::read_jsonl(&run_dir.join("browser/step-3.network.jsonl"));
    assert!(
        failed
            .iter()
            .any(|f| f.url.ends_with("/missing.png") && f.status == Some(404)),
        "{network}\nconsole: {console}"
    );
    let entries: Vec<ConsoleEntry> =
        common::read_jsonl(&run_dir.join("browser/step-3.console.jsonl"));
    for entry in &entries {
        assert!(
            entry.level == "error" || entry.level == "warning",
            "{entry:?}"
        );
    }

    // The next step's window starts empty: the first step's messages are not repeated.
    monitor.begin_step();
    let next = monitor
        .capture_step(StepId::new(4), &run_dir, CaptureSet::all())
        .await;
    assert_eq!(next.console_errors, 0, "{next:?}");
    let console =
        std::fs::read_to_string(run_dir.join("browser/step-4.console.jsonl")).expect("console");
    assert!(console.is_empty(), "{console}");
    assert!(run_dir.join("screenshots/step-4-1.png").is_file());

    agent.close().await;
    monitor.close().await;
    let handlers = crash_handlers(&run, &profile);
    let report = browser.stop(false).await;
    assert_crash_handlers_are_no_leak(&report, &handlers);
    assert_none_left(&run, &profile);
    stop_server.store(true, std::sync::atomic::Ordering::Relaxed);
    server.join().expect("server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_from_a_browser_that_died_is_a_noted_problem() {
    let Some(exe) = chromium() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut browser, run, profile) = start("dead", exe, dir.path()).await;
    let monitor = Monitor::attach(&browser.http_base(), None)
        .await
        .expect("monitor");
    browser.stop(true).await;
    assert_none_left(&run, &profile);
    let capture = monitor
        .capture_step(StepId::new(1), &dir.path().join("run"), CaptureSet::all())
        .await;
    assert!(!capture.problems.is_empty(), "{capture:?}");
    assert!(
        capture.evidence.iter().all(|e| e.kind() != "screenshot"),
        "{capture:?}"
    );
}

/// One JSON-RPC exchange with an MCP server over stdio (newline-delimited JSON).
async fn mcp_call(
    stdin: &mut tokio::process::ChildStdin,
    stdout: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    id: u64,
    method: &str,
    params: serde_json::Value,
) -> RpcAnswer {
    use tokio::io::AsyncWriteExt;
    let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    stdin
        .write_all(format!("{request}\n").as_bytes())
        .await
        .expect("write to the MCP server");
    let read = async {
        loop {
            let line = stdout
                .next_line()
                .await
                .expect("read from the MCP server")
                .expect("the MCP server closed its output");
            let Ok(message) = serde_json::from_str::<RpcAnswer>(&line) else {
                continue;
            };
            if message.id == json!(id) {
                return message;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .unwrap_or_else(|_| panic!("no answer to {method}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_playwright_mcp_drives_the_supervised_browser_and_the_capture_sees_it() {
    let Some(exe) = chromium() else { return };
    let Some(mcp_bin) = common::skip::playwright_mcp("playwright mcp") else {
        return;
    };
    let (app_port, server, stop_server) = serve_app();
    let dir = tempfile::tempdir().expect("tempdir");
    let run_dir = dir.path().join("run");
    let (mut browser, run, profile) = start("mcp", exe, dir.path()).await;
    let monitor = Monitor::attach(&browser.http_base(), None)
        .await
        .expect("monitor");

    let mut command = bugatti::browser::mcp::McpCommand::resolve(
        Some(&mcp_bin.display().to_string()),
        None,
        &browser.cdp_url(),
    )
    .expect("the command");
    command
        .attach(&run_dir.join("browser/.playwright-mcp.json"))
        .expect("the endpoint in its config file");
    let marker = format!("BUGATTI_TEST_MCP={}", run);
    let mut mcp = tokio::process::Command::new(&command.program)
        .args(&command.args)
        .env("BUGATTI_TEST_MCP", &run)
        .current_dir(dir.path())
        .process_group(0)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("playwright-mcp starts");
    let mcp_pgid = mcp.id().expect("pid") as i32;
    let mut stdin = mcp.stdin.take().expect("stdin");
    let mut stdout = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(
        mcp.stdout.take().expect("stdout"),
    ));

    let init = mcp_call(
        &mut stdin,
        &mut stdout,
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bugatti-test", "version": "0"}}),
    )
    .await;
    assert!(init.server_name().is_some(), "{init:?}");
    {
        use tokio::io::AsyncWriteExt;
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await
            .expect("initialized");
    }
    monitor.begin_step();
    let url = format!("http://127.0.0.1:{app_port}/");
    let navigated = mcp_call(
        &mut stdin,
        &mut stdout,
        2,
        "tools/call",
        json!({"name": "browser_navigate", "arguments": {"url": url}}),
    )
    .await;
    assert!(!navigated.is_tool_error(), "{navigated:?}");
    let snapshot = mcp_call(
        &mut stdin,
        &mut stdout,
        3,
        "tools/call",
        json!({"name": "browser_snapshot", "arguments": {}}),
    )
    .await;
    let texts: Vec<&str> = snapshot
        .result
        .iter()
        .flat_map(|r| &r.content)
        .filter_map(|c| c.text.as_deref())
        .collect();
    assert!(texts.iter().any(|t| t.contains("Shop")), "{snapshot:?}");

    let capture = monitor
        .capture_step(StepId::new(1), &run_dir, CaptureSet::all())
        .await;
    assert!(capture.problems.is_empty(), "{:?}", capture.problems);
    let screenshots: Vec<_> = capture
        .evidence
        .iter()
        .filter(|e| e.kind() == "screenshot")
        .collect();
    assert!(!screenshots.is_empty(), "{capture:?}");
    assert!(
        capture.evidence.iter().any(|e| matches!(e,
            bugatti::browser::BrowserEvidence::Screenshot { url: u, .. } if *u == url)),
        "no screenshot of the app's page: {capture:?}"
    );
    let console =
        std::fs::read_to_string(run_dir.join("browser/step-1.console.jsonl")).expect("console");
    assert!(console.contains("deliberate console error"), "{console}");
    let network =
        std::fs::read_to_string(run_dir.join("browser/step-1.network.jsonl")).expect("network");
    assert!(network.contains("/missing.png"), "{network}");

    drop(stdin);
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(mcp_pgid),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = mcp.wait().await;
    monitor.close().await;
    let handlers = crash_handlers(&run, &profile);
    let report = browser.stop(false).await;
    assert_crash_handlers_are_no_leak(&report, &handlers);
    assert_none_left(&run, &profile);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !common::processes_with_env_entry(&marker).is_empty() {
        assert!(Instant::now() < deadline, "playwright-mcp survived");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop_server.store(true, std::sync::atomic::Ordering::Relaxed);
    server.join().expect("server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_names_the_browser_and_playwright_mcp_versions_or_why_not() {
    use bugatti::browser::doctor::{findings, BrowserFinding};
    use bugatti::model::browser::BrowserConfig;
    let dir = tempfile::tempdir().expect("tempdir");
    // Nothing on PATH: both say why.
    let found = findings(&BrowserConfig::default(), Some("/nonexistent"), dir.path()).await;
    assert!(
        matches!(&found[0], BrowserFinding::Fail(m) if m.contains("`chromium`") && m.contains("`google-chrome`")),
        "{found:?}"
    );
    assert!(
        found.iter().any(
            |f| matches!(f, BrowserFinding::Note(m) if m.contains("npx -y @playwright/mcp@0.0.83"))
        ),
        "{found:?}"
    );
    let Some(exe) = chromium() else { return };
    let Some(mcp) = common::skip::playwright_mcp("doctor") else {
        return;
    };
    let path = format!(
        "{}:{}",
        exe.parent().expect("dir").display(),
        mcp.parent().expect("dir").display()
    );
    let found = findings(&BrowserConfig::default(), Some(&path), dir.path()).await;
    assert!(
        matches!(&found[0], BrowserFinding::Ok(m) if m.starts_with("browser: Chromium ") && m.contains(&exe.display().to_string())),
        "{found:?}"
    );
    assert!(
        found.iter().any(
            |f| matches!(f, BrowserFinding::Ok(m) if m.contains("Playwright MCP: Version 0.0.83"))
        ),
        "{found:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_browser_follows_its_config_and_leaves_nothing() {
    use bugatti::browser::session::{BrowserPlaces, ConsoleVerdict};
    use bugatti::browser::SessionBrowser;
    use bugatti::model::browser::{capture_from_names, BrowserConfig};
    let Some(exe) = chromium() else { return };
    let (app_port, server, stop_server) = serve_app();
    let dir = tempfile::tempdir().expect("tempdir");
    let run_dir = dir.path().join("run");
    let run_paths = bugatti::model::artifacts::RunPaths::new(&run_dir);
    std::fs::create_dir_all(run_paths.logs_dir()).expect("run dir");
    let run = run_id("session");
    let config = BrowserConfig {
        executable: Some(exe.display().to_string()),
        viewport: (640, 480),
        capture: capture_from_names(&["screenshot".into(), "console".into()]).expect("kinds"),
        fail_on_console_errors: true,
        ..BrowserConfig::default()
    };
    let places = BrowserPlaces::new(&dir.path().join("workspace"), &run_paths);
    let session =
        SessionBrowser::start(&config, &places, Scope::run(run.clone()), Vec::new(), None)
            .await
            .expect("starts");
    let env = session.env();
    assert_eq!(env[0].0, "BUGATTI_CDP_URL");
    assert_eq!(env[0].1, session.browser().cdp_url());
    assert!(run_dir.join("logs/browser.log").is_file());
    // Its temporary files (Chromium's org.chromium.Chromium.* folders) stay in the workspace.
    let tmpdir = format!("TMPDIR={}", places.tmp_dir.display());
    assert!(
        !common::processes_with_env_entry(&tmpdir).is_empty(),
        "the browser runs with {tmpdir}"
    );

    // Drive it as the agent would, through the URL it is given.
    let agent = CdpClient::connect(session.browser().ws_url(), |_| {})
        .await
        .expect("agent");
    let limit = Duration::from_secs(10);
    session.begin_step();
    let page = agent
        .open_page("about:blank", limit)
        .await
        .expect("new page");
    agent
        .call(
            "Page.navigate",
            json!({"url": format!("http://127.0.0.1:{app_port}/")}),
            Some(&page),
            limit,
        )
        .await
        .expect("navigate");
    agent
        .call(
            "Runtime.evaluate",
            json!({"expression": "new Promise(r => document.readyState === 'complete' ? r() : addEventListener('load', () => r()))", "awaitPromise": true}),
            Some(&page),
            limit,
        )
        .await
        .expect("loaded");
    let capture = session.end_step(StepId::new(2), &run_dir).await;
    assert!(capture.problems.is_empty(), "{:?}", capture.problems);
    // Two pages (the first about:blank and the app): one screenshot, the app's, since a blank
    // page is no evidence; no network file (not asked for).
    let kinds: Vec<_> = capture.evidence.iter().map(|e| e.kind()).collect();
    assert_eq!(kinds, ["screenshot", "console"], "{capture:?}");
    assert!(!run_dir.join("browser/step-2.network.jsonl").exists());
    let shot = capture.evidence[0].path().to_string();
    assert!(
        !format!("{:?}", capture.evidence[0]).contains("about:blank"),
        "{capture:?}"
    );
    // Beside it, the page's accessibility tree as text (the report's searchable snapshot).
    let a11y = bugatti::model::artifacts::a11y_snapshot_rel(&shot);
    let tree = std::fs::read_to_string(run_dir.join(&a11y)).expect("accessibility snapshot");
    assert!(tree.starts_with("RootWebArea"), "{tree}");
    let png = std::fs::read(run_dir.join(&shot)).expect("png");
    // The viewport is the configured one: a PNG's IHDR holds width and height.
    let width = u32::from_be_bytes(png[16..20].try_into().expect("width"));
    let height = u32::from_be_bytes(png[20..24].try_into().expect("height"));
    assert_eq!((width, height), (640, 480));
    assert!(matches!(
        session.console_verdict(true, &capture),
        Some(ConsoleVerdict::Fail(_))
    ));

    agent.close().await;
    let handlers = crash_handlers(&run, &places.profile_dir);
    let report = session.stop(false).await;
    assert_crash_handlers_are_no_leak(&report, &handlers);
    assert_none_left(&run, &places.profile_dir);
    stop_server.store(true, std::sync::atomic::Ordering::Relaxed);
    server.join().expect("server");
}
