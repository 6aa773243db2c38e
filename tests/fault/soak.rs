//! A leak check: 200 root tests in one invocation (shell provider, one trivial step, `-j 8`),
//! sampling the supervisor's open file descriptors and resident memory as the tests finish. Both
//! must be flat from the 20th test to the 200th. Generous slack: this looks for leaks (a few FDs
//! or kilobytes per test add up over 180 tests), it does not measure.
//!
//! Slow (a minute or more on a shared 2-core machine): `cargo test --test fault soak:: -- --ignored`.
//!
//! The long soak, `the_long_soak_1000_tests_with_a_server_each_at_j16` (about 10 minutes on a
//! shared 2-core machine; run it alone: `cargo test --release --test fault soak:: -- --ignored
//! the_long_soak`): 1000 root tests at `-j 16`, each with its own HTTP server on an `auto` port,
//! checked for flat open FDs, resident memory and `.bugatti` bytes per test from the 100th test
//! to the 1000th. It prints the figures.

use crate::common;
use crate::common::assert_exit;
use crate::common::fault;
use crate::common::records::RunRecord;

use crate::common::Project;
use std::process::Stdio;
use std::time::{Duration, Instant};

const TESTS: usize = 200;
/// Where the flat stretch begins, and how far the baseline window reaches.
const FROM: usize = 20;
const BASELINE_TO: usize = 40;
const FD_SLACK: usize = 20;
const RSS_SLACK: f64 = 1.5;

#[derive(Debug, Clone, Copy)]
struct Sample {
    finished: usize,
    fds: usize,
    rss_kib: u64,
}

fn open_fds(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Runs whose `run.json` is final.
fn finished_runs(p: &Project) -> usize {
    fault::run_dirs(p)
        .iter()
        .filter(|dir| {
            std::fs::read_to_string(dir.join("run.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<RunRecord>(&t).ok())
                .is_some_and(|r| r.finished_at.is_some())
        })
        .count()
}

#[test]
#[ignore = "slow: 200 root tests; run with `cargo test --test fault soak:: -- --ignored`"]
fn fds_and_rss_stay_flat_over_200_root_tests() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    for i in 0..TESTS {
        p.write(
            &format!("tests/t{i:03}.test.toml"),
            "name = \"Trivial\"\n[[steps]]\ninstruction = \"`echo hello`\"\n",
        );
    }
    let mut child = p
        .supervisor()
        .args(["start", "-j", "8", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    let pid = child.id();
    let mut samples = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(600);
    while child.try_wait().expect("try_wait").is_none() {
        assert!(Instant::now() < deadline, "200 trivial tests hung");
        let finished = finished_runs(&p);
        if let (Some(fds), Some(rss_kib)) = (open_fds(pid), rss_kib(pid)) {
            samples.push(Sample {
                finished,
                fds,
                rss_kib,
            });
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().expect("output");
    p.assert_nothing_survives();
    assert_exit(&out, 0);
    assert_eq!(finished_runs(&p), TESTS);

    let window = |lo: usize, hi: usize| -> Vec<Sample> {
        samples
            .iter()
            .copied()
            .filter(|s| s.finished >= lo && s.finished < hi)
            .collect()
    };
    let baseline = window(FROM, BASELINE_TO);
    // The tail is where the leak would show: late tests, but before the final teardown.
    let late = window(BASELINE_TO, TESTS);
    assert!(
        !baseline.is_empty() && !late.is_empty(),
        "too few samples to judge: {samples:?}"
    );
    let base_fds = baseline.iter().map(|s| s.fds).max().unwrap_or(0);
    let base_rss = baseline.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    let peak_fds = late.iter().map(|s| s.fds).max().unwrap_or(0);
    let peak_rss = late.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    eprintln!(
        "soak: {} samples; FDs {base_fds} (tests {FROM}-{BASELINE_TO}) -> peak {peak_fds} (to {TESTS}); \
         RSS {base_rss} KiB -> peak {peak_rss} KiB",
        samples.len()
    );
    assert!(
        peak_fds <= base_fds + FD_SLACK,
        "open FDs grew from {base_fds} to {peak_fds}: {late:?}"
    );
    assert!(
        (peak_rss as f64) <= base_rss as f64 * RSS_SLACK,
        "RSS grew from {base_rss} KiB to {peak_rss} KiB: {late:?}"
    );
}

/// Bytes under `dir`, recursively (files only).
fn tree_bytes(dir: &std::path::Path) -> u64 {
    walk(dir)
}

fn walk(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => walk(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

#[test]
#[ignore = "very slow: 1000 root tests with a server each; see the module doc"]
fn the_long_soak_1000_tests_with_a_server_each_at_j16() {
    const N: usize = 1000;
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        common::skip::skip("the long soak", "its steps need curl");
        return;
    }
    const FROM: usize = 100;
    const BASE_TO: usize = 200;
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        r#"[provider]
name = "shell"

[ports]
APP_PORT = "auto"

[commands.server]
kind = "long_lived"
cmd = "exec python3 -m http.server ${APP_PORT} --bind 127.0.0.1"
readiness = { tcp = "127.0.0.1:${APP_PORT}" }
"#,
    );
    for i in 0..N {
        p.write(
            &format!("tests/t{i:04}.test.toml"),
            "name = \"Served\"\n[[steps]]\ninstruction = '''`curl -sf -o /dev/null http://127.0.0.1:${APP_PORT}/`'''\n",
        );
    }
    let mut child = p
        .supervisor()
        .args(["start", "-j", "16", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    let pid = child.id();
    // (finished runs, fds, rss KiB, .bugatti bytes)
    let mut samples: Vec<(usize, usize, u64, u64)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(3600);
    let artifacts = p.root().join(".bugatti");
    while child.try_wait().expect("try_wait").is_none() {
        assert!(Instant::now() < deadline, "the soak hung");
        let finished = finished_runs(&p);
        if let (Some(fds), Some(rss)) = (open_fds(pid), rss_kib(pid)) {
            samples.push((finished, fds, rss, tree_bytes(&artifacts)));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let out = child.wait_with_output().expect("output");
    p.assert_nothing_survives();
    assert_exit(&out, 0);
    assert_eq!(finished_runs(&p), N);
    let window = |lo: usize, hi: usize| -> Vec<(usize, usize, u64, u64)> {
        samples
            .iter()
            .copied()
            .filter(|s| s.0 >= lo && s.0 < hi)
            .collect()
    };
    let base = window(FROM, BASE_TO);
    let late = window(N - 100, N);
    assert!(!base.is_empty() && !late.is_empty(), "{samples:?}");
    let fds = |w: &[(usize, usize, u64, u64)]| w.iter().map(|s| s.1).max().unwrap_or(0);
    let rss = |w: &[(usize, usize, u64, u64)]| w.iter().map(|s| s.2).max().unwrap_or(0);
    let bytes_per_test = |w: &[(usize, usize, u64, u64)]| {
        let (n, b) = w
            .iter()
            .map(|s| (s.0 as f64, s.3 as f64))
            .fold((0.0, 0.0), |a, s| (a.0 + s.0, a.1 + s.1));
        b / n.max(1.0)
    };
    let final_bytes = tree_bytes(&artifacts);
    eprintln!(
        "long soak: {} samples; FDs {} (tests {FROM}-{BASE_TO}) -> {} (tests {}-{N}); \
         RSS {} KiB -> {} KiB; .bugatti {:.0} -> {:.0} bytes per test; {} bytes in all at the end",
        samples.len(),
        fds(&base),
        fds(&late),
        N - 100,
        rss(&base),
        rss(&late),
        bytes_per_test(&base),
        bytes_per_test(&late),
        final_bytes
    );
    assert!(fds(&late) <= fds(&base) + FD_SLACK, "FDs grew: {late:?}");
    assert!(
        rss(&late) as f64 <= rss(&base) as f64 * RSS_SLACK,
        "RSS grew: {late:?}"
    );
    assert!(
        bytes_per_test(&late) <= bytes_per_test(&base) * 1.5,
        ".bugatti per test grew: {late:?}"
    );
}
