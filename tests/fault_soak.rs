//! A leak check: 200 root tests in one invocation (shell provider, one trivial step, `-j 8`),
//! sampling the supervisor's open file descriptors and resident memory as the tests finish. Both
//! must be flat from the 20th test to the 200th. Generous slack: this looks for leaks (a few FDs
//! or kilobytes per test add up over 180 tests), it does not measure.
//!
//! Slow (a minute or more on a shared 2-core machine): `cargo test --test fault_soak -- --ignored`.

mod common;
#[path = "support/fault/mod.rs"]
mod fault;

use common::{stderr, stdout, Project};
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
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .is_some_and(|r| r["finished_at"].is_string())
        })
        .count()
}

#[test]
#[ignore = "slow: 200 root tests; run with `cargo test --test fault_soak -- --ignored`"]
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
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
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
