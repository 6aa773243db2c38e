//! The supervisor's own Playwright MCP client against the real server (the pinned
//! `@playwright/mcp`, as `.ci/run` installs it) and Debian's Chromium: a session browser, a page
//! served on loopback, the snapshot read, a recorded element found again by its path on a page
//! whose refs were renumbered, and clicked through the client; nothing left running after.
//! Skips loudly where Chromium or `playwright-mcp` is missing, and fails instead under `CI=true`
//! (where `.ci/run` installs both).

use bugatti::browser::mcp::McpCommand;
use bugatti::browser::mcp_client::PlaywrightClient;
use bugatti::browser::{Browser, BrowserLaunch};
use bugatti::process::{Owner, Role, Scope};
use bugatti::replay::browser_refs::{retarget, Resolution, Snapshot};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common;

const PAGE_BEFORE: &str = r#"<!doctype html><title>Shop</title><main><h1>Products</h1><ul>
<li><span>Red mug</span> <button onclick="add('Red mug')">Add to basket</button></li>
<li><span>Blue mug</span> <button onclick="add('Blue mug')">Add to basket</button></li>
</ul><p id="basket">Basket: empty</p>
<script>function add(n){document.getElementById('basket').textContent='Basket: '+n;}</script></main>"#;

/// The same shop with a banner above it: every ref below the banner renumbered.
const PAGE_AFTER: &str = r#"<!doctype html><title>Shop</title><aside><p>Sale today</p><a href="/sale">Sale</a></aside>
<main><h1>Products</h1><ul>
<li><span>Red mug</span> <button onclick="add('Red mug')">Add to basket</button></li>
<li><span>Blue mug</span> <button onclick="add('Blue mug')">Add to basket</button></li>
</ul><p id="basket">Basket: empty</p>
<script>function add(n){document.getElementById('basket').textContent='Basket: '+n;}</script></main>"#;

/// Serves PAGE_BEFORE until `renumbered` is set, then PAGE_AFTER.
fn serve(renumbered: Arc<AtomicBool>, stop: Arc<AtomicBool>) -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let served = Arc::new(AtomicUsize::new(0));
    let handle = std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let Ok((mut stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            let _ = stream.set_nonblocking(false);
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
            }
            let body = if renumbered.load(Ordering::Relaxed) {
                PAGE_AFTER
            } else {
                PAGE_BEFORE
            };
            served.fetch_add(1, Ordering::Relaxed);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, handle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_click_is_made_again_on_a_renumbered_page_through_the_real_server() {
    const TEST: &str = "browser_mcp_client_real";
    let Some(exe) = common::skip::chromium(TEST) else {
        return;
    };
    let Some(mcp) = common::skip::playwright_mcp(TEST) else {
        return;
    };
    // The server's folder first on PATH: McpCommand finds `playwright-mcp` there as a user's
    // PATH would.
    let path = format!(
        "{}:{}",
        mcp.parent().expect("a folder").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let run = format!("mcp-client-test-{}", std::process::id());
    let mut spec = BrowserLaunch::new(exe, dir.path().join("profile"), Scope::run(run.clone()));
    spec.log_path = Some(dir.path().join("browser.log"));
    let mut browser = Browser::start(spec).await.expect("the browser starts");

    let renumbered = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let (port, server) = serve(renumbered.clone(), stop.clone());
    let url = format!("http://127.0.0.1:{port}/");

    let mut command = McpCommand::resolve(None, Some(&path), &browser.cdp_url()).expect("command");
    command
        .attach(&dir.path().join("pw-config.json"))
        .expect("the endpoint in its config file");
    let owner = Owner::new(
        Scope::run(run.clone()),
        Role::Other("playwright-mcp".into()),
    );
    let client = PlaywrightClient::start(
        &command,
        owner,
        dir.path(),
        vec![("BUGATTI_RUN_ID".into(), run.clone())],
    )
    .await
    .expect("the client completes the handshake");

    // What the agent did when it was recorded: read the page, clicked the Blue mug's button.
    client
        .call("browser_navigate", serde_json::json!({"url": url}))
        .await
        .expect("navigate");
    let recorded = client
        .call("browser_snapshot", serde_json::json!({}))
        .await
        .expect("snapshot");
    assert!(!recorded.is_error, "{}", recorded.text);
    let recorded = Snapshot::parse(&recorded.text);
    let blue_ref = (1..40)
        .map(|n| format!("f1e{n}"))
        .chain((1..40).map(|n| format!("e{n}")))
        .find(|r| {
            recorded.path_of(r).is_some_and(|p| {
                p.0.iter().any(|s| s.label.as_deref() == Some("Blue mug"))
                    && p.0.last().is_some_and(|s| s.role == "button")
            })
        })
        .expect("the Blue mug's button is in the snapshot");
    let blue = recorded.path_of(&blue_ref).expect("path");

    // Today's page: the same shop under a banner. The old ref is stale; the path is not.
    renumbered.store(true, Ordering::Relaxed);
    client
        .call("browser_navigate", serde_json::json!({"url": url}))
        .await
        .expect("navigate again");
    let now = client
        .call("browser_snapshot", serde_json::json!({}))
        .await
        .expect("snapshot");
    let now_snapshot = Snapshot::parse(&now.text);
    assert!(now.text.contains("Sale today"), "{}", now.text);
    let Resolution::Found(current) = now_snapshot.resolve(&blue) else {
        panic!(
            "{:?}\nrecorded path {blue:?}\nnow:\n{}",
            now_snapshot.resolve(&blue),
            now.text
        );
    };
    assert_ne!(current, blue_ref, "the banner renumbered the button");

    let recorded_call =
        serde_json::json!({"element": "Add to basket (Blue mug)", "target": blue_ref});
    let swapped = retarget(
        &recorded_call,
        &BTreeMap::from([(blue_ref.clone(), current.clone())]),
    );
    let clicked = client.call("browser_click", swapped).await.expect("click");
    assert!(!clicked.is_error, "{}", clicked.text);
    let after = client
        .call("browser_snapshot", serde_json::json!({}))
        .await
        .expect("snapshot");
    assert!(after.text.contains("Basket: Blue mug"), "{}", after.text);

    // A stale ref is the server's own error answer, not a protocol failure.
    let stale = client
        .call(
            "browser_click",
            serde_json::json!({"element": "gone", "target": "f9e999"}),
        )
        .await
        .expect("an answer");
    assert!(
        stale.is_error || stale.text.contains("Error"),
        "{}",
        stale.text
    );

    let report = client.stop().await;
    assert!(report.leaked.is_empty(), "{report:?}");
    let _ = browser.stop(false).await;
    stop.store(true, Ordering::Relaxed);
    let _ = server.join();

    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<i32> = common::processes_with_env_entry(&format!("BUGATTI_RUN_ID={run}"))
            .into_iter()
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                    .map(|c| !c.contains("crashpad"))
                    .unwrap_or(false)
            })
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left running: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Issue 51: Playwright 1.65 ships Playwright MCP itself, as `npx playwright mcp`; that command
/// works as a `[browser] mcp_cmd` value (resolved as the config's, its endpoint given in its
/// `--config` file), offline, from a project whose `node_modules` holds `playwright`, driving the
/// system Chromium; nothing is left running after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn npx_playwright_mcp_of_playwright_1_65_serves_as_the_browser_mcp_cmd() {
    const TEST: &str = "browser_mcp_client_real (npx playwright mcp)";
    let Some(exe) = common::skip::chromium(TEST) else {
        return;
    };
    let Some(modules) = common::skip::playwright_modules(TEST) else {
        return;
    };
    let package: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(modules.join("playwright/package.json")).expect("package.json"),
    )
    .expect("json");
    let version = package["version"].as_str().unwrap_or_default();
    assert!(version.starts_with("1.65."), "playwright {version}");
    // A user's project: `playwright` in its node_modules, `npx` run from it, no network.
    let dir = tempfile::tempdir().expect("tempdir");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).expect("project");
    std::os::unix::fs::symlink(&modules, project.join("node_modules")).expect("node_modules");
    let run = format!("npx-playwright-mcp-test-{}", std::process::id());
    let mut spec = BrowserLaunch::new(exe, dir.path().join("profile"), Scope::run(run.clone()));
    spec.log_path = Some(dir.path().join("browser.log"));
    let mut browser = Browser::start(spec).await.expect("the browser starts");
    let stop = Arc::new(AtomicBool::new(false));
    let (port, server) = serve(Arc::new(AtomicBool::new(false)), stop.clone());

    let mut command = McpCommand::resolve(Some("npx playwright mcp"), None, &browser.cdp_url())
        .expect("the mcp_cmd value resolves");
    command
        .attach(&dir.path().join("pw-config.json"))
        .expect("the endpoint in its config file");
    let owner = Owner::new(
        Scope::run(run.clone()),
        Role::Other("playwright-mcp".into()),
    );
    let client = PlaywrightClient::start(
        &command,
        owner,
        &project,
        vec![
            ("BUGATTI_RUN_ID".into(), run.clone()),
            ("npm_config_offline".into(), "true".into()),
        ],
    )
    .await
    .expect("npx playwright mcp completes the handshake");
    let url = format!("http://127.0.0.1:{port}/");
    let went = client
        .call("browser_navigate", serde_json::json!({"url": url}))
        .await
        .expect("navigate");
    assert!(!went.is_error, "{}", went.text);
    let page = client
        .call("browser_snapshot", serde_json::json!({}))
        .await
        .expect("snapshot");
    assert!(
        page.text.contains("Red mug") && page.text.contains("button"),
        "{}",
        page.text
    );
    let report = client.stop().await;
    assert!(report.leaked.is_empty(), "{report:?}");
    let _ = browser.stop(false).await;
    stop.store(true, Ordering::Relaxed);
    let _ = server.join();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<i32> = common::processes_with_env_entry(&format!("BUGATTI_RUN_ID={run}"))
            .into_iter()
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                    .map(|c| !c.contains("crashpad"))
                    .unwrap_or(false)
            })
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left running: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
