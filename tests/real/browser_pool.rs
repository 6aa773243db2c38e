//! One browser per worker (docs/browser.md, "One browser per worker") with Debian's Chromium: a
//! pooled browser serves two sessions one after the other, the first leaving a cookie,
//! localStorage, an IndexedDB database, a Cache API entry, a service worker, a granted permission,
//! a download under way and an extra tab; the second, on the same browser process, sees none of
//! them, and the first session's token gets `403`. A browser of other settings is another
//! browser; a killed one is replaced; a session that did not end cleanly ends its browser; the
//! pool's end leaves no process. Skips without Chromium.

use crate::common;
use bugatti::browser::cdp::CdpClient;
use bugatti::browser::endpoint::new_token;
use bugatti::browser::pool::{BrowserPool, Lease, PoolKey, PoolRequest};
use bugatti::model::outcome::TeardownState;
use bugatti::process::Scope;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(20);

const PAGE: &str = "<!doctype html><html><head><title>Pool</title><link rel=\"icon\" href=\"data:,\"></head><body><h1>Pool</h1></body></html>";

/// What session 1 leaves in its context.
const LEAVE: &str = r#"(async () => {
  document.cookie = "pooled=1; max-age=3600; path=/";
  localStorage.setItem("pooled", "1");
  await new Promise((ok, no) => {
    const open = indexedDB.open("pooled", 1);
    open.onupgradeneeded = () => open.result.createObjectStore("s");
    open.onerror = () => no(open.error);
    open.onsuccess = () => {
      const tx = open.result.transaction("s", "readwrite");
      tx.objectStore("s").put("1", "k");
      tx.oncomplete = () => { open.result.close(); ok(); };
    };
  });
  await (await caches.open("pooled")).put("/cached", new Response("1"));
  await navigator.serviceWorker.register("/sw.js");
  await navigator.serviceWorker.ready;
  return "left";
})()"#;

/// What a page of the origin sees of it.
const LOOK: &str = r#"(async () => JSON.stringify({
  cookie: document.cookie,
  local: localStorage.getItem("pooled"),
  idb: (await indexedDB.databases()).map(d => d.name),
  caches: await caches.keys(),
  workers: (await navigator.serviceWorker.getRegistrations()).length,
  geolocation: (await navigator.permissions.query({name: "geolocation"})).state,
}))()"#;

/// A loopback site: the page, its service worker, and a download that never ends (so that
/// session 1 leaves one under way).
fn serve_site() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match stream.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let path = head.split(' ').nth(1).unwrap_or("/").to_string();
                let (kind, body, extra) = match path.as_str() {
                    "/sw.js" => ("application/javascript", "self.addEventListener('fetch', () => {});", ""),
                    "/download" => ("application/octet-stream", "", "Content-Disposition: attachment; filename=big.bin\r\nContent-Length: 100000000\r\n"),
                    _ => ("text/html", PAGE, ""),
                };
                let length = if extra.is_empty() {
                    format!("Content-Length: {}\r\n", body.len())
                } else {
                    String::new()
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\n{extra}{length}Connection: close\r\n\r\n{body}"
                );
                if path == "/download" {
                    // A first chunk, then nothing for as long as a test may take.
                    let _ = stream.write_all(&[0u8; 4096]);
                    std::thread::sleep(Duration::from_secs(120));
                }
            });
        }
    });
    port
}

fn request(dir: &Path, run: &str, viewport: (u32, u32), marker: &str) -> PoolRequest {
    let exe = bugatti::browser::executable::find_on_env_path(None).expect("chromium");
    std::fs::create_dir_all(dir.join(run)).expect("run dir");
    PoolRequest {
        key: PoolKey {
            executable: exe,
            headless: true,
            viewport,
        },
        token: new_token(),
        log_path: dir.join(run).join("browser.log"),
        max_log_bytes: 1 << 20,
        run: run.to_string(),
        env: vec![("BUGATTI_PROJECT_ROOT".to_string(), marker.to_string())],
        ready_timeout: Duration::from_secs(30),
    }
}

/// The status line of a GET of `path` on the endpoint.
fn status_of(port: u16, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.lines().next().unwrap_or_default().to_string()
}

/// The pages (and other targets) a session's client is shown.
async fn targets(client: &CdpClient) -> Vec<Value> {
    let answer = client
        .call("Target.getTargets", json!({}), None, LIMIT)
        .await
        .expect("getTargets");
    answer["targetInfos"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn evaluate(client: &CdpClient, session: &str, expression: &str) -> Value {
    let answer = client
        .call(
            "Runtime.evaluate",
            json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
            Some(session),
            LIMIT,
        )
        .await
        .expect("evaluate");
    assert!(answer.get("exceptionDetails").is_none(), "{answer}");
    answer["result"]["value"].clone()
}

/// Attaches to the session's one blank tab and opens the site in it.
async fn open_site(client: &CdpClient, site: &str) -> String {
    let pages: Vec<Value> = targets(client)
        .await
        .into_iter()
        .filter(|t| t["type"] == "page")
        .collect();
    assert_eq!(pages.len(), 1, "a session starts with one tab: {pages:?}");
    assert_eq!(pages[0]["url"], "about:blank", "{pages:?}");
    let target = pages[0]["targetId"].as_str().expect("targetId");
    let session = client.attach(target, LIMIT).await.expect("attach");
    client
        .call("Page.enable", json!({}), Some(&session), LIMIT)
        .await
        .expect("Page.enable");
    client
        .call("Page.navigate", json!({"url": site}), Some(&session), LIMIT)
        .await
        .expect("navigate");
    let deadline = Instant::now() + LIMIT;
    while evaluate(
        client,
        &session,
        "document.readyState === 'complete' && location.protocol === 'http:'",
    )
    .await
        != json!(true)
    {
        assert!(Instant::now() < deadline, "the site never loaded");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    session
}

fn look(value: Value) -> Value {
    serde_json::from_str(value.as_str().expect("a JSON text")).expect("JSON")
}

/// Session 1: leaves everything it can in its context, and sees it there.
async fn leave_everything(lease: &Lease, site: &str, downloads: &Path) {
    let events: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = events.clone();
    let client = CdpClient::connect(&lease.cdp_url(), move |event| {
        seen.lock().expect("events").push(event.method.clone());
    })
    .await
    .expect("session 1 connects");
    let page = open_site(&client, site).await;
    assert_eq!(evaluate(&client, &page, LEAVE).await, "left");
    // Browser-level commands without a context act on the session's.
    client
        .call(
            "Browser.grantPermissions",
            json!({"permissions": ["geolocation"], "origin": site.trim_end_matches('/')}),
            None,
            LIMIT,
        )
        .await
        .expect("grant");
    client
        .call(
            "Browser.setDownloadBehavior",
            json!({"behavior": "allowAndName", "downloadPath": downloads.display().to_string(), "eventsEnabled": true}),
            None,
            LIMIT,
        )
        .await
        .expect("download behaviour");
    // An extra tab left open, and one that downloads: only created, not attached to, since
    // Chromium may close a tab that only downloaded before an attach reaches it (its download's
    // events are the browser's).
    client
        .open_page(&format!("{site}?extra"), LIMIT)
        .await
        .expect("an extra tab");
    client
        .call(
            "Target.createTarget",
            json!({ "url": format!("{site}download") }),
            None,
            LIMIT,
        )
        .await
        .expect("a downloading tab");
    let deadline = Instant::now() + LIMIT;
    while !events
        .lock()
        .expect("events")
        .iter()
        .any(|m| m == "Browser.downloadWillBegin")
    {
        assert!(Instant::now() < deadline, "the download never began");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let seen = look(evaluate(&client, &page, LOOK).await);
    assert_eq!(
        seen,
        json!({"cookie": "pooled=1", "local": "1", "idb": ["pooled"], "caches": ["pooled"], "workers": 1, "geolocation": "granted"}),
        "session 1 sees what it left"
    );
    let kinds: Vec<Value> = targets(&client)
        .await
        .iter()
        .map(|t| t["type"].clone())
        .collect();
    assert!(
        kinds.iter().filter(|k| **k == "page").count() >= 2
            && kinds.contains(&json!("service_worker")),
        "session 1 sees its tabs and its service worker: {kinds:?}"
    );
    client.close().await;
}

/// Session 2: nothing of session 1's.
async fn see_nothing(lease: &Lease, site: &str) {
    let events: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = events.clone();
    let client = CdpClient::connect(&lease.cdp_url(), move |event| {
        let kind = event.params["targetInfo"]["type"]
            .as_str()
            .unwrap_or_default();
        seen.lock()
            .expect("events")
            .push(format!("{} {kind}", event.method).trim().to_string());
    })
    .await
    .expect("session 2 connects");
    let cookies = client
        .call("Storage.getCookies", json!({}), None, LIMIT)
        .await
        .expect("cookies");
    assert_eq!(cookies["cookies"], json!([]), "no cookie of session 1's");
    let page = open_site(&client, site).await;
    let seen = look(evaluate(&client, &page, LOOK).await);
    assert_eq!(
        seen,
        json!({"cookie": "", "local": null, "idb": [], "caches": [], "workers": 0, "geolocation": "prompt"}),
        "session 2 sees nothing of session 1's"
    );
    let shown: Vec<Value> = targets(&client).await;
    assert_eq!(
        shown.len(),
        1,
        "one tab, no worker of session 1's: {shown:?}"
    );
    client
        .call(
            "Target.setDiscoverTargets",
            json!({"discover": true}),
            None,
            LIMIT,
        )
        .await
        .expect("discover");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let methods = events.lock().expect("events").clone();
    assert!(
        !methods.iter().any(|m| m.starts_with("Browser.download")),
        "no download of session 1's: {methods:?}"
    );
    let created = methods
        .iter()
        .filter(|m| *m == "Target.targetCreated page")
        .count();
    assert_eq!(
        created, 1,
        "discovery shows the session's one tab only: {methods:?}"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_browser_gives_the_next_session_a_fresh_context_with_nothing_of_the_last() {
    let Some(_) = common::skip::chromium("the browser pool") else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let marker = format!("browser-pool-test-{}", std::process::id());
    let site = format!("http://127.0.0.1:{}/", serve_site());
    let pool = BrowserPool::new(Scope::suite(format!("pool-{}", std::process::id())));

    let first = request(dir.path(), "run-1", (1280, 800), &marker);
    let lease = pool.checkout(&first).await.expect("session 1's browser");
    let pid = lease.browser().pid();
    let port = lease.browser().port();
    assert_eq!(lease.session_number(), 1);
    leave_everything(&lease, &site, &dir.path().join("downloads")).await;
    let report = pool.give_back(lease, true, false).await;
    assert_eq!(report.state, TeardownState::Clean);
    assert_eq!(pool.idle_count(), 1, "the browser is kept");
    assert_eq!(
        status_of(port, &format!("/{}/json/version", first.token)),
        "HTTP/1.1 403 Forbidden",
        "session 1's token is shut out"
    );

    let second = request(dir.path(), "run-2", (1280, 800), &marker);
    let lease = pool.checkout(&second).await.expect("session 2's browser");
    assert_eq!(
        lease.browser().pid(),
        pid,
        "the same browser serves session 2"
    );
    assert_eq!(lease.session_number(), 2);
    see_nothing(&lease, &site).await;
    let log = std::fs::read_to_string(dir.path().join("run-2/browser.log")).expect("log");
    assert!(
        log.contains(&format!("pooled browser pid {pid}")) && log.contains("run-2"),
        "{log}"
    );
    assert_eq!(
        pool.give_back(lease, true, false).await.state,
        TeardownState::Clean
    );

    // Other settings: another browser, beside the idle one.
    let other = request(dir.path(), "run-3", (800, 600), &marker);
    let lease = pool.checkout(&other).await.expect("another browser");
    assert_ne!(lease.browser().pid(), pid);
    assert_eq!(pool.idle_count(), 1);
    let other_pid = lease.browser().pid();
    // A session that did not end cleanly: its browser is ended, never lent again.
    pool.give_back(lease, false, false).await;
    assert_eq!(pool.idle_count(), 1);
    assert!(
        !alive(other_pid),
        "the browser of a broken session is ended"
    );

    // A browser that died while idle is replaced.
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let deadline = Instant::now() + LIMIT;
    while alive(pid) {
        assert!(Instant::now() < deadline, "the browser did not die");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let fourth = request(dir.path(), "run-4", (1280, 800), &marker);
    let lease = pool.checkout(&fourth).await.expect("a replacement");
    assert_ne!(lease.browser().pid(), pid, "a dead browser is never lent");
    assert_eq!(lease.session_number(), 1);
    assert_eq!(
        pool.give_back(lease, true, false).await.state,
        TeardownState::Clean
    );

    pool.shutdown(false).await;
    assert_eq!(pool.idle_count(), 0);
    common::assert_nothing_survives(&[("BUGATTI_PROJECT_ROOT", &marker)]);
}

/// Whether process `pid` runs (a zombie does not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}
