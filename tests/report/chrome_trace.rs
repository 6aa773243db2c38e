//! `supervisor report --chrome-trace FILE` on a real suite: Chrome trace event JSON (the format
//! Perfetto and chrome://tracing load) with a process per root test, its threads setup / steps /
//! agent named, and a complete event per setup command and per step, on one time axis.

use crate::common::assert_exit;
use crate::common::{stdout, Project};
use std::collections::{BTreeMap, BTreeSet};

/// trace.json as Chrome's trace event format has it (the fields this test reads).
#[derive(Debug, serde::Deserialize)]
struct Trace {
    #[serde(rename = "traceEvents")]
    trace_events: Vec<TraceEvent>,
}

/// One trace event: metadata (`ph` "M", naming a process or thread) or complete ("X").
#[derive(Debug, serde::Deserialize)]
struct TraceEvent {
    ph: String,
    name: Option<String>,
    cat: Option<String>,
    pid: u64,
    tid: u64,
    /// Microseconds.
    ts: Option<i64>,
    /// Microseconds.
    dur: Option<u64>,
    #[serde(default)]
    args: TraceArgs,
}

#[derive(Debug, Default, serde::Deserialize)]
struct TraceArgs {
    name: Option<String>,
}

#[test]
fn a_suite_as_chrome_trace_events_a_process_per_test_and_a_complete_event_per_step() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[commands.srv]\nkind = \"long_lived\"\ncmd = \"sh -c 'sleep 0.2; echo READY-NOW; exec sleep 30'\"\nreadiness = { log = \"READY-NOW\" }\n",
    );
    p.write(
        "a.test.toml",
        "[[steps]]\ninstruction = \"`sleep 0.1`\"\n[[steps]]\ninstruction = \"`sleep 0.1`\"\n",
    );
    p.write("b.test.toml", "[[steps]]\ninstruction = \"`false`\"\n");
    assert_eq!(p.start().status.code(), Some(1));
    let out = p.run(&["report", "--chrome-trace", "trace.json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the suite's exit code: {}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("chrome trace: trace.json"),
        "{}",
        stdout(&out)
    );
    let trace: Trace = crate::common::read_json_file(&p.root().join("trace.json"));
    let events = &trace.trace_events;

    let mut processes: BTreeMap<u64, String> = BTreeMap::new();
    let mut threads: BTreeSet<(u64, u64, String)> = BTreeSet::new();
    let mut steps: BTreeMap<u64, usize> = BTreeMap::new();
    let mut setup: BTreeSet<(u64, String)> = BTreeSet::new();
    for e in events {
        let (pid, tid) = (e.pid, e.tid);
        let name = e.name.as_deref();
        match e.ph.as_str() {
            "M" => {
                let named = || e.args.name.clone().expect("name");
                match name {
                    Some("process_name") => {
                        processes.insert(pid, named());
                    }
                    Some("thread_name") => {
                        threads.insert((pid, tid, named()));
                    }
                    _ => {}
                }
            }
            "X" => {
                let ts = e.ts.expect("ts in microseconds");
                let dur = e.dur.expect("dur in microseconds");
                assert!(ts >= 0 && dur >= 1, "{e:?}");
                assert!(name.is_some() && e.cat.is_some(), "{e:?}");
                match e.cat.as_deref() {
                    Some("step") => {
                        assert_eq!(tid, 2, "steps on their thread: {e:?}");
                        assert!(name.unwrap_or("").starts_with("step "), "{e:?}");
                        *steps.entry(pid).or_default() += 1;
                    }
                    Some("setup") => {
                        assert_eq!(tid, 1, "{e:?}");
                        // From start to ready: the command slept 200 ms before its line.
                        assert!(dur >= 150_000, "{e:?}");
                        setup.insert((pid, name.unwrap_or("").into()));
                    }
                    _ => assert_eq!(tid, 3, "agent actions on the agent thread: {e:?}"),
                }
            }
            other => panic!("unexpected phase {other}: {e:?}"),
        }
    }
    let names: Vec<&str> = processes.values().map(String::as_str).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("a.test.toml")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("b.test.toml")),
        "{names:?}"
    );
    for pid in processes.keys() {
        for (tid, name) in [(1, "setup"), (2, "steps"), (3, "agent")] {
            assert!(threads.contains(&(*pid, tid, name.into())), "{threads:?}");
        }
        assert!(setup.contains(&(*pid, "srv".into())), "{setup:?}");
    }
    let mut counts: Vec<usize> = steps.values().copied().collect();
    counts.sort();
    assert_eq!(counts, [1, 2], "a complete event per step: {steps:?}");

    // A file that cannot be written: exit 2 with its name, nothing half-written elsewhere.
    let bad = p.run(&["report", "--chrome-trace", "no/such/dir/trace.json"]);
    assert_exit(&bad, 2);
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("no/such/dir/trace.json"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}
