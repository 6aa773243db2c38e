//! Retries with backoff, as nextest's (docs/config.md, `retries`): the wait before each retry
//! read from the retries' own `run_started` events, never from the wall clock beyond the
//! configured delay.

use crate::common::assert_exit;
use crate::common::records::*;
use crate::common::{stdout, Project};
use bugatti::report::records::events::{Event, EventKind};

/// `run_started` and `run_finished` of each run of `test_file`, by attempt.
fn attempts(p: &Project, test_file: &str) -> Vec<(u32, u64, Event, Event)> {
    let mut runs: Vec<RunRecord> = p
        .run_records()
        .into_iter()
        .filter(|r| r.identity.test_file == test_file)
        .collect();
    runs.sort_by_key(|r| r.identity.attempt);
    runs.iter()
        .map(|r| {
            let text = std::fs::read_to_string(
                std::path::Path::new(&r.identity.run_dir).join("events.jsonl"),
            )
            .expect("events.jsonl");
            let events: Vec<Event> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
                .collect();
            let started = events
                .iter()
                .find(|e| matches!(e.kind, EventKind::RunStarted { .. }))
                .expect("run_started")
                .clone();
            let finished = events
                .iter()
                .find(|e| matches!(e.kind, EventKind::RunFinished { .. }))
                .expect("run_finished")
                .clone();
            let EventKind::RunStarted { retry_wait_ms, .. } = started.kind else {
                unreachable!()
            };
            (r.identity.attempt, retry_wait_ms, started, finished)
        })
        .collect()
}

/// Each retry started no sooner than its wait after the attempt before it finished.
fn assert_waited(runs: &[(u32, u64, Event, Event)]) {
    for pair in runs.windows(2) {
        let (_, _, _, finished) = &pair[0];
        let (attempt, wait, started, _) = &pair[1];
        let gap = (started.timestamp - finished.timestamp).num_milliseconds();
        assert!(
            gap >= i64::try_from(*wait).expect("ms") - 5,
            "attempt {attempt} started {gap} ms after the one before, its wait {wait} ms"
        );
    }
}

#[test]
fn retries_wait_fixed_or_exponential_as_the_config_and_the_test_file_say() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[supervisor]\nretries = { count = 2, backoff = \"exponential\", delay = \"300ms\" }\n",
    );
    p.write(
        "doubling.test.toml",
        "name = \"doubling\"\n[[steps]]\ninstruction = \"`false`\"\n",
    );
    // The test file's own policy over the config's.
    p.write(
        "fixed.test.toml",
        "name = \"fixed\"\nretries = { count = 2, backoff = \"fixed\", delay = \"200ms\" }\n[[steps]]\ninstruction = \"`false`\"\n",
    );
    // A number stays the count: no wait.
    p.write(
        "plain.test.toml",
        "name = \"plain\"\nretries = 1\n[[steps]]\ninstruction = \"`false`\"\n",
    );
    let out = p.run(&["start", "-j", "3"]);
    assert_exit(&out, 1);
    let console = stdout(&out);

    let doubling = attempts(&p, "doubling.test.toml");
    let waits: Vec<(u32, u64)> = doubling.iter().map(|(a, w, ..)| (*a, *w)).collect();
    assert_eq!(waits, [(1, 0), (2, 300), (3, 600)], "{console}");
    assert_waited(&doubling);

    let fixed = attempts(&p, "fixed.test.toml");
    let waits: Vec<(u32, u64)> = fixed.iter().map(|(a, w, ..)| (*a, *w)).collect();
    assert_eq!(waits, [(1, 0), (2, 200), (3, 200)], "{console}");
    assert_waited(&fixed);

    let plain = attempts(&p, "plain.test.toml");
    let waits: Vec<(u32, u64)> = plain.iter().map(|(a, w, ..)| (*a, *w)).collect();
    assert_eq!(waits, [(1, 0), (2, 0)], "{console}");
    assert!(
        console.contains("TRY 1 FAIL") && console.contains("(retrying: attempt 2 of 2)"),
        "the plain test's own limit on the console: {console}"
    );
    p.assert_nothing_survives();
}

#[test]
fn a_bad_retries_table_is_refused_before_anything_runs() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[supervisor]\nretries = { count = 2, delay = \"soon\" }\n",
    );
    p.write(
        "t.test.toml",
        "name = \"t\"\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    let out = p.start();
    assert_exit(&out, 2);
    let said = format!("{}{}", stdout(&out), crate::common::stderr(&out));
    assert!(
        said.contains("retries.delay") && said.contains("soon"),
        "{said}"
    );
    assert!(p.root().join(".bugatti/runs").read_dir().is_err() || p.run_records().is_empty());
}
