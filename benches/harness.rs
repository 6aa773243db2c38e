//! Harness measurements (`cargo bench --bench harness`), each printed against a baseline measured
//! in the same run on the same machine:
//! - log-probe latency: a line written by a command → the session told it is ready, vs the same
//!   line read straight from a pipe by a thread;
//! - teardown of 10 commands, half ignoring SIGTERM, stop_timeout 1 s, vs one grace period and vs
//!   tearing down a single stubborn command;
//! - log capture throughput of a command writing 1 GiB, vs the shell redirecting it to a file, with
//!   the supervisor's peak RSS (VmHWM, reset before each run through /proc/self/clear_refs).

use bugatti::actors::harness::Harness;
use bugatti::process::event::{HarnessEvent, HarnessEventKind};
use bugatti::process::spec::{CommandKind, CommandSpec, ProbeSpec};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use std::io::BufRead;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

const GIB: u64 = 1 << 30;

struct Parent;

impl Actor for Parent {
    type Msg = ();
    type State = ();
    type Arguments = ();
    async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
    async fn handle_supervisor_evt(
        &self,
        _: ActorRef<()>,
        _: SupervisionEvent,
        _: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// The nanosecond timestamp ending a `READY <ns>` line.
fn stamp(line: &str) -> Option<u128> {
    line.split_whitespace().last()?.parse().ok()
}

fn spec(dir: &std::path::Path, name: &str, kind: CommandKind, cmd: &str) -> CommandSpec {
    CommandSpec::new(
        name,
        kind,
        cmd,
        dir,
        dir.join("logs").join(format!("{name}.log")),
    )
}

async fn new_harness(parent: &ActorRef<()>) -> (Harness, mpsc::UnboundedReceiver<HarnessEvent>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let harness = Harness::spawn(parent.get_cell(), bugatti::process::Scope::run("bench"), tx)
        .await
        .expect("harness");
    (harness, rx)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

const LINE_CMD: &str = "sleep 0.1; echo \"READY $(date +%s%N)\"; exec sleep 600";

async fn log_probe_latency(parent: &ActorRef<()>, dir: &std::path::Path, runs: usize) {
    let mut harness_ms = Vec::new();
    for i in 0..runs {
        let (harness, mut events) = new_harness(parent).await;
        let mut s = spec(dir, &format!("lat{i}"), CommandKind::LongLived, LINE_CMD);
        s.probes = vec![ProbeSpec::log("^READY ")];
        harness.start(vec![s]).await.expect("ready");
        while let Some(event) = events.recv().await {
            let told = now_ns();
            if let HarnessEventKind::Ready { detail, .. } = event.kind {
                if let Some(ts) = stamp(&detail) {
                    harness_ms.push((told.saturating_sub(ts)) as f64 / 1e6);
                }
                break;
            }
        }
        harness.teardown_all(true).await;
    }
    let mut pipe_ms = Vec::new();
    for _ in 0..runs {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 0.1; echo \"READY $(date +%s%N)\""])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        let out = child.stdout.take().expect("stdout");
        let mut line = String::new();
        std::io::BufReader::new(out)
            .read_line(&mut line)
            .expect("line");
        let seen = now_ns();
        if let Some(ts) = stamp(&line) {
            pipe_ms.push((seen.saturating_sub(ts)) as f64 / 1e6);
        }
        let _ = child.wait();
    }
    harness_ms.sort_by(f64::total_cmp);
    pipe_ms.sort_by(f64::total_cmp);
    let (h50, h95) = (percentile(&harness_ms, 0.5), percentile(&harness_ms, 0.95));
    let (p50, p95) = (percentile(&pipe_ms, 0.5), percentile(&pipe_ms, 0.95));
    println!("log-probe latency, line written -> session told ({runs} runs):");
    println!("  harness      median {h50:7.3} ms   p95 {h95:7.3} ms");
    println!("  bare pipe    median {p50:7.3} ms   p95 {p95:7.3} ms   (baseline)");
    println!(
        "  ratio        median x{:.2}, harness overhead {:.3} ms",
        h50 / p50.max(1e-6),
        h50 - p50
    );
}

async fn teardown_ten(parent: &ActorRef<()>, dir: &std::path::Path) {
    let grace = Duration::from_secs(1);
    let stubborn = "trap '' TERM; echo up; exec sleep 600";
    let polite = "echo up; exec sleep 600";
    // Baseline: one stubborn command alone.
    let (harness, _events) = new_harness(parent).await;
    let mut one = spec(dir, "one", CommandKind::LongLived, stubborn);
    one.stop_timeout = grace;
    one.probes = vec![ProbeSpec::log("up")];
    harness.start(vec![one]).await.expect("ready");
    let t = Instant::now();
    harness.teardown_all(false).await;
    let single = t.elapsed();

    let (harness, _events) = new_harness(parent).await;
    let specs: Vec<_> = (0..10)
        .map(|i| {
            let cmd = if i % 2 == 0 { stubborn } else { polite };
            let mut s = spec(dir, &format!("td{i}"), CommandKind::LongLived, cmd);
            s.stop_timeout = grace;
            s.probes = vec![ProbeSpec::log("up")];
            s
        })
        .collect();
    harness.start(specs).await.expect("ready");
    let t = Instant::now();
    let records = harness.teardown_all(false).await;
    let ten = t.elapsed();
    let killed = records
        .iter()
        .filter(|r| r.teardown == Some(bugatti::model::outcome::TeardownState::Killed))
        .count();
    println!("teardown of 10 commands, 5 ignoring SIGTERM, stop_timeout 1 s ({killed} killed):");
    println!("  10 commands  {:8.1} ms", ten.as_secs_f64() * 1e3);
    println!(
        "  1 stubborn   {:8.1} ms   (baseline)",
        single.as_secs_f64() * 1e3
    );
    println!(
        "  ratio        x{:.2} of one stubborn command, x{:.2} of one grace period (10 one by one would be ~x5)",
        ten.as_secs_f64() / single.as_secs_f64(),
        ten.as_secs_f64() / grace.as_secs_f64()
    );
}

fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// One capture of `cmd` through a harness; returns (elapsed, peak RSS KiB, log size).
async fn capture_once(
    parent: &ActorRef<()>,
    dir: &std::path::Path,
    cmd: &str,
    secret: Option<&str>,
    probe: bool,
) -> (Duration, u64, u64) {
    let (harness, _events) = new_harness(parent).await;
    let mut s = spec(dir, "bulk", CommandKind::ShortLived, cmd);
    if let Some(value) = secret {
        s.secrets = std::sync::Arc::new(bugatti::model::redact::Secrets::new([("TOKEN", value)]));
    }
    if probe {
        // A log probe that matches only after the bulk: every chunk is checked for its line.
        s.probes =
            vec![ProbeSpec::log("never matches this").with_timeout(Duration::from_secs(600))];
        s.kind = CommandKind::LongLived;
        s.cmd = format!("{cmd}; echo never matches this; exec sleep 600");
    }
    reset_peak_rss();
    let t = Instant::now();
    harness.start(vec![s.clone()]).await.expect("bulk run");
    harness.teardown_all(true).await;
    let elapsed = t.elapsed();
    let hwm = peak_rss_kib();
    let size = std::fs::metadata(&s.log_path).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(&s.log_path);
    (elapsed, hwm, size)
}

fn shell_once(dir: &std::path::Path, cmd: &str) -> Duration {
    let file = dir.join("shell.out");
    let t = Instant::now();
    let status = std::process::Command::new("sh")
        .args(["-c", &format!("{cmd} > {}", file.display())])
        .status()
        .expect("sh");
    let elapsed = t.elapsed();
    assert!(status.success());
    assert_eq!(std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0), GIB);
    let _ = std::fs::remove_file(&file);
    elapsed
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

async fn throughput(parent: &ActorRef<()>, dir: &std::path::Path, rounds: usize) {
    let cmd = format!("yes | head -c {GIB}");
    // A typical secret never starts a line of this output; the worst case starts every line
    // ("y\n"), so the redactor examines every byte.
    let variants: [(&str, Option<&str>, bool); 4] = [
        ("harness", None, false),
        ("+ secret", Some("s3cr3t-token-value"), false),
        ("+ worst sec", Some("y\ny\nSECRET"), false),
        ("+ log probe", None, true),
    ];
    let mut shell = Vec::new();
    let mut runs: Vec<Vec<(Duration, u64, u64)>> = vec![Vec::new(); variants.len()];
    // Interleaved rounds, so that a noisy neighbour hurts every variant alike.
    for _ in 0..rounds {
        shell.push(shell_once(dir, &cmd));
        for (i, (_, secret, probe)) in variants.iter().enumerate() {
            runs[i].push(capture_once(parent, dir, &cmd, *secret, *probe).await);
        }
    }
    let shell = median(shell);
    println!("log capture of `{cmd}` (1 GiB), median of {rounds} interleaved rounds:");
    println!(
        "  shell > file {:8.1} ms  {:7.0} MiB/s   (baseline)",
        shell.as_secs_f64() * 1e3,
        1024.0 / shell.as_secs_f64()
    );
    for ((label, _, _), rows) in variants.iter().zip(runs) {
        let elapsed = median(rows.iter().map(|r| r.0).collect());
        let hwm = rows.iter().map(|r| r.1).max().unwrap_or(0);
        let sizes_ok = rows.iter().all(|r| r.2 >= GIB);
        println!(
            "  {label:<12} {:8.1} ms  {:7.0} MiB/s   x{:.2} of baseline   peak RSS {:.1} MiB   all bytes logged: {sizes_ok}",
            elapsed.as_secs_f64() * 1e3,
            1024.0 / elapsed.as_secs_f64(),
            elapsed.as_secs_f64() / shell.as_secs_f64(),
            hwm as f64 / 1024.0,
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        bugatti::process::subreaper::become_child_subreaper();
        let dir = tempfile::tempdir().expect("tempdir");
        let (parent, _) = Actor::spawn(None, Parent, ()).await.expect("parent");
        log_probe_latency(&parent, dir.path(), 30).await;
        teardown_ten(&parent, dir.path()).await;
        // Bulk files go to tmpfs when there is one: the figure is the capture path's cost, not
        // the shared disk's writeback.
        let bulk = tempfile::tempdir_in("/dev/shm")
            .unwrap_or_else(|_| tempfile::tempdir().expect("tempdir"));
        println!("(bulk files in {})", bulk.path().display());
        throughput(&parent, bulk.path(), 5).await;
        parent.stop(None);
    });
    let left = bugatti::process::registry::sweep();
    assert!(left.is_empty(), "bench left groups registered: {left:?}");
}
