//! Agent-output benchmark: a 64 MiB reply must cost no more memory than a small one.
//!
//! Measures peak RSS (`VmHWM` in /proc/self/status, which only grows) in order:
//! 1. the marker scanner alone on a 1 MiB reply (baseline), then on 64 MiB fed in 64 KiB chunks;
//! 2. the whole `command` provider path (pipe → transcript + scanner → verdict) with a real
//!    scripted agent writing a 1 MiB reply (baseline), then a 64 MiB reply.
//!
//! Prints throughput and the peak-RSS ratio big/baseline for each; a ratio near 1.0 means flat.
//! Exits non-zero when a ratio exceeds 1.5 (memory, not time: this is not noisy).
//! Run: `cargo bench --bench agent`.

use bugatti::model::ids::StepId;
use bugatti::model::markers::MarkerScanner;
use bugatti::model::outcome::StepStatus;
use bugatti::model::redact::Secrets;
use bugatti::providers::{self, AgentContext, AgentSpec, ProviderKind, SessionFacts, StepRequest};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const MIB: usize = 1024 * 1024;

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn scan(bytes: usize) -> (Duration, u64) {
    let line = {
        let mut l = vec![b'x'; 1023];
        l.push(b'\n');
        l
    };
    let chunk: Vec<u8> = line.iter().copied().cycle().take(64 * 1024).collect();
    let mut scanner = MarkerScanner::new();
    let mut out = Vec::new();
    let started = Instant::now();
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len());
        scanner.push(&chunk[..n], &mut out);
        left -= n;
    }
    scanner.push(b"\nBUGATTI_LOG done\nRESULT OK\n", &mut out);
    scanner.finish(&mut out);
    assert!(scanner.last_result().is_some());
    (started.elapsed(), peak_rss_kib())
}

async fn provider_reply(dir: &Path, bytes: usize) -> (Duration, u64) {
    let run_id = uuid::Uuid::now_v7().to_string();
    let run_dir = dir.join(&run_id);
    let workdir = dir.join(format!("work-{run_id}"));
    std::fs::create_dir_all(&workdir).expect("workdir");
    let facts = SessionFacts {
        run_id: run_id.clone().into(),
        session_id: run_id.clone().into(),
        suite_id: "bench".into(),
        traceparent: None,
        test_name: "bench".into(),
        test_file: "bench.test.toml".into(),
        project_root: dir.to_path_buf(),
        run_dir,
        workdir,
        env: vec![("BUGATTI_RUN_ID".into(), run_id)],
        secrets: Arc::new(Secrets::new([("TOKEN", "not-in-the-output")])),
        max_log_bytes: bugatti::process::log_limit::DEFAULT_MAX_LOG_BYTES,
        console: None,
        mcp: Default::default(),
    };
    let mut spec = AgentSpec::new(ProviderKind::Command);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/scripted_agent.py");
    spec.cmd = Some(format!("python3 {}", script.display()));
    let (events, _rx) = tokio::sync::mpsc::unbounded_channel();
    let mut p = providers::create(AgentContext {
        spec,
        facts,
        events,
    });
    p.start().await.expect("start");
    p.bootstrap().await.expect("bootstrap");
    let actions = serde_json::json!([{"bulk": bytes}, {"say": "\nRESULT OK\n"}]);
    let request = StepRequest {
        step_id: StepId::new(1),
        source_file: "bench.test.toml".into(),
        source_index: 1,
        include_chain: vec![],
        instruction: actions.to_string(),
        timeout: Duration::from_secs(600),
        question: None,
        replayed: Vec::new(),
        throttle: Default::default(),
    };
    let (_keep, cancel) = tokio::sync::watch::channel(false);
    let started = Instant::now();
    let verdict = p.run_step(&request, cancel).await;
    let elapsed = started.elapsed();
    assert_eq!(verdict.status, StepStatus::Ok, "{}", verdict.message);
    p.close().await;
    (elapsed, peak_rss_kib())
}

fn report(what: &str, small: (Duration, u64), big: (Duration, u64), big_bytes: usize) -> f64 {
    let ratio = big.1 as f64 / small.1.max(1) as f64;
    println!(
        "{what}: 1 MiB peak RSS {} KiB; 64 MiB peak RSS {} KiB; ratio {ratio:.3}; 64 MiB in {:.3}s ({:.0} MiB/s)",
        small.1,
        big.1,
        big.0.as_secs_f64(),
        big_bytes as f64 / MIB as f64 / big.0.as_secs_f64().max(1e-9)
    );
    ratio
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let big = 64 * MIB;

    let scan_small = scan(MIB);
    let scan_big = scan(big);
    let provider_small = runtime.block_on(provider_reply(dir.path(), MIB));
    let provider_big = runtime.block_on(provider_reply(dir.path(), big));

    let r1 = report("scanner alone     ", scan_small, scan_big, big);
    let r2 = report("command provider  ", provider_small, provider_big, big);
    if r1 > 1.5 || r2 > 1.5 {
        eprintln!("memory is not flat: a 64 MiB reply costs more than 1.5x a 1 MiB one");
        std::process::exit(1);
    }
}
