//! The session browser's DevTools are not open to every local process: Chromium runs with
//! `--remote-debugging-pipe` and listens on no port of its own; the only way in is the
//! supervisor's loopback endpoint, and only with the session's token in the path. A plain CDP
//! client without it (another shell, no token, no origin) gets nothing: not `/json/version`, not
//! `/json/list`, not the browser's WebSocket. With the token, CDP works as before.
//! Skips without Chromium, and fails instead under `CI=true`.

use bugatti::browser::cdp::CdpClient;
use bugatti::browser::{Browser, BrowserLaunch};
use bugatti::process::Scope;
use serde_json::json;
use std::collections::HashSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn chromium() -> Option<PathBuf> {
    crate::common::skip::chromium("the browser's DevTools token")
}

/// Live processes whose command line names `profile`: the browser and every child of it.
fn browser_pids(profile: &Path) -> Vec<i32> {
    let needle = profile.display().to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(&needle))
                .unwrap_or(false)
        })
        .collect()
}

/// The socket inodes `pid` holds open.
fn socket_inodes(pid: i32) -> HashSet<u64> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|target| {
            let text = target.to_string_lossy().into_owned();
            text.strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

/// The inodes of the listening TCP sockets of this network namespace (state `0A`).
fn listening_inodes() -> HashSet<u64> {
    let mut inodes = HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.get(3) == Some(&"0A") {
                if let Some(inode) = fields.get(9).and_then(|i| i.parse().ok()) {
                    inodes.insert(inode);
                }
            }
        }
    }
    inodes
}

/// One plain HTTP GET on loopback: the status line and the body.
fn get(port: u16, path: &str) -> (String, String) {
    request(port, "GET", path)
}

fn request(port: u16, method: &str, path: &str) -> (String, String) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer.lines().next().unwrap_or_default().to_string();
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cdp_client_without_the_token_gets_nothing_and_chromium_listens_on_no_port() {
    let Some(exe) = chromium() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = dir.path().join("browser-profile");
    let run = format!("browser-token-{}", std::process::id());
    let mut spec = BrowserLaunch::new(exe, profile.clone(), Scope::run(run));
    spec.log_path = Some(dir.path().join("browser.log"));
    let mut browser = Browser::start(spec).await.expect("the browser starts");
    let port = browser.port();

    // Chromium has no DevTools port: no listening socket of any of its processes, and no
    // `--remote-debugging-port` on its command line.
    let pids = browser_pids(&profile);
    assert!(!pids.is_empty(), "the browser's processes are found");
    let listening = listening_inodes();
    for pid in &pids {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&cmdline).contains("--remote-debugging-port"),
            "pid {pid}: {}",
            String::from_utf8_lossy(&cmdline)
        );
        let open = socket_inodes(*pid);
        assert!(
            open.is_disjoint(&listening),
            "Chromium process {pid} listens on a TCP port"
        );
    }

    // Without the token (or with a wrong one): nothing, over HTTP or WebSocket.
    let wrong = "0".repeat(32);
    for path in [
        "/json/version".to_string(),
        "/json/list".to_string(),
        "/json".to_string(),
        format!("/{wrong}/json/version"),
        format!("/{wrong}/json/list"),
    ] {
        let (status, body) = get(port, &path);
        assert!(status.contains(" 403 "), "{path}: {status}");
        assert!(
            !body.contains("webSocketDebuggerUrl") && !body.contains("about:blank"),
            "{path}: {body}"
        );
    }
    for url in [
        format!("ws://127.0.0.1:{port}/devtools/browser"),
        format!("ws://127.0.0.1:{port}/devtools/browser/x"),
        format!("ws://127.0.0.1:{port}/{wrong}/devtools/browser"),
    ] {
        assert!(
            CdpClient::connect(&url, |_| {}).await.is_err(),
            "{url} let a tokenless client in"
        );
    }

    // With the token: the browser, over CDP and over the HTTP endpoints.
    let (status, body) = get(
        port,
        &format!(
            "{}/json/version",
            browser
                .http_base()
                .trim_start_matches(&format!("http://127.0.0.1:{port}"))
        ),
    );
    assert!(status.contains(" 200 "), "{status}");
    assert!(body.contains(browser.ws_url()), "{body}");
    let client = CdpClient::connect(browser.ws_url(), |_| {})
        .await
        .expect("the token lets a client in");
    let version = client
        .call(
            "Browser.getVersion",
            json!({}),
            None,
            Duration::from_secs(10),
        )
        .await
        .expect("Browser.getVersion");
    assert!(
        version["product"].as_str().unwrap_or("").contains("Chrome"),
        "{version}"
    );
    let targets = client
        .call(
            "Target.getTargets",
            json!({}),
            None,
            Duration::from_secs(10),
        )
        .await
        .expect("Target.getTargets");
    assert!(targets.to_string().contains("about:blank"), "{targets}");
    drop(client);

    // Chromium's own tab endpoints, behind the token: a tab opened by URL, then closed.
    let base = browser
        .http_base()
        .trim_start_matches(&format!("http://127.0.0.1:{port}"))
        .to_string();
    // PUT, as Chromium's own /json/new requires.
    let (status, body) = request(port, "PUT", &format!("{base}/json/new?about:blank#opened"));
    assert!(status.contains(" 200 "), "{status} {body}");
    let opened: serde_json::Value = serde_json::from_str(&body).expect("json");
    let id = opened["id"].as_str().expect("the new tab's id").to_string();
    let (_, list) = get(port, &format!("{base}/json/list"));
    assert!(list.contains(&id), "{list}");
    let (status, _) = get(port, &format!("{base}/json/close/{id}"));
    assert!(status.contains(" 200 "), "{status}");
    let (status, _) = get(port, "/json/new?about:blank");
    assert!(status.contains(" 403 "), "no token, no tab: {status}");

    browser.stop(false).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !browser_pids(&profile).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = browser_pids(&profile);
    for pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    assert!(left.is_empty(), "browser processes left: {left:?}");
}
