//! Browser measurements (`cargo bench --bench browser`), each against a baseline measured in the
//! same run on the same machine (skipped, saying so, without Chromium):
//! - start → ready: the session's browser launched and its DevTools endpoint answering, vs the
//!   same executable's `--version` (a process start of the same binary, no browser);
//! - the end-of-step capture with one page (screenshot, console, network written under the run
//!   directory), vs one CDP round trip to that page;
//! - the browser's RSS (all its processes, by the profile in their command lines) with one page.

use bugatti::browser::cdp::CdpClient;
use bugatti::browser::{executable, Browser, BrowserLaunch, CaptureSet, Monitor};
use bugatti::model::ids::StepId;
use bugatti::process::Scope;
use serde_json::json;
use std::time::{Duration, Instant};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Resident memory of every process whose command line names `profile`, in MiB.
fn rss_mib(profile: &str) -> f64 {
    let mut kib = 0u64;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let mine = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).contains(profile))
            .unwrap_or(false);
        if !mine {
            continue;
        }
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            if let Some(line) = status.lines().find(|l| l.starts_with("VmRSS:")) {
                kib += line
                    .split_whitespace()
                    .nth(1)
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    kib as f64 / 1024.0
}

async fn start(exe: &std::path::Path, dir: &std::path::Path, n: usize) -> Browser {
    let spec = BrowserLaunch::new(
        exe.to_path_buf(),
        dir.join(format!("profile-{n}")),
        Scope::run(format!("bench-browser-{}-{n}", std::process::id())),
    );
    Browser::start(spec).await.expect("the browser starts")
}

fn main() {
    let exe = match executable::find_on_env_path(None) {
        Ok(exe) => exe,
        Err(e) => {
            println!("browser: skipped: {e}");
            return;
        }
    };
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut version = Vec::new();
        let mut ready = Vec::new();
        for n in 0..runs {
            let t = Instant::now();
            let out = std::process::Command::new(&exe)
                .arg("--version")
                .output()
                .expect("--version");
            assert!(out.status.success());
            version.push(ms(t.elapsed()));
            let t = Instant::now();
            let mut browser = start(&exe, dir.path(), n).await;
            ready.push(ms(t.elapsed()));
            browser.stop(false).await;
        }
        let (base, ready) = (median(version), median(ready));
        println!("browser start → ready");
        println!("  --version     {base:8.1} ms   (baseline)");
        println!(
            "  ready         {ready:8.1} ms   x{:.1} of baseline",
            ready / base
        );

        let mut browser = start(&exe, dir.path(), runs).await;
        let monitor = Monitor::attach(&browser.http_base(), None)
            .await
            .expect("monitor");
        let agent = CdpClient::connect(browser.ws_url(), |_| {})
            .await
            .expect("cdp");
        let limit = Duration::from_secs(10);
        let page = bugatti::browser::devtools::pages(&browser.http_base())
            .await
            .expect("pages")[0]
            .id
            .clone();
        let session = agent.attach(&page, limit).await.expect("attach");
        agent
            .call(
                "Page.navigate",
                json!({"url": "data:text/html,<h1>Bench</h1><p>one page with some text</p>"}),
                Some(&session),
                limit,
            )
            .await
            .expect("navigate");
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut round_trip = Vec::new();
        let mut capture = Vec::new();
        let run_dir = dir.path().join("run");
        for step in 0..(runs * 4) as u32 {
            let t = Instant::now();
            agent
                .call(
                    "Runtime.evaluate",
                    json!({"expression": "1"}),
                    Some(&session),
                    limit,
                )
                .await
                .expect("evaluate");
            round_trip.push(ms(t.elapsed()));
            monitor.begin_step();
            let t = Instant::now();
            let got = monitor
                .capture_step(StepId::new(step), &run_dir, CaptureSet::all())
                .await;
            capture.push(ms(t.elapsed()));
            assert!(got.problems.is_empty(), "{:?}", got.problems);
        }
        let (base, cap) = (median(round_trip), median(capture));
        println!("per-step capture, one page (goal < 150 ms)");
        println!("  CDP round trip {base:7.1} ms   (baseline)");
        println!(
            "  capture        {cap:7.1} ms   x{:.1} of baseline",
            cap / base
        );
        let profile = browser.profile_dir().display().to_string();
        println!(
            "browser RSS, one page: {:.0} MiB (all its processes)",
            rss_mib(&profile)
        );
        agent.close().await;
        monitor.close().await;
        browser.stop(false).await;
    });
    let left = bugatti::process::registry::sweep();
    assert!(left.is_empty(), "bench left groups registered: {left:?}");
}
