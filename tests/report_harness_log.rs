//! Each run's `diagnostics/harness.log` holds that run's lines only: a session's tracing span is a
//! root of its own, so the 30th run of a `-j 1` suite logs no more than the first (before, each
//! session's span nested in the previous one's and every line carried all earlier runs' ids).

mod common;

use common::{stdout, Project};

#[test]
fn the_last_runs_harness_log_is_as_small_as_the_firsts() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    for i in 0..30 {
        p.write(
            &format!("t{i:02}.test.toml"),
            "[[steps]]\ninstruction = \"`true`\"\n",
        );
    }
    let out = p.run(&["start", "-j", "1", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let mut records = p.run_records();
    records.sort_by_key(|r| r["started_at"].as_str().unwrap_or_default().to_string());
    let log_of = |r: &serde_json::Value| {
        let dir = std::path::Path::new(r["run_dir"].as_str().expect("run_dir"));
        std::fs::read_to_string(dir.join("diagnostics/harness.log")).expect("harness.log")
    };
    let (first, last) = (log_of(&records[0]), log_of(&records[29]));
    assert!(
        last.len() <= first.len() + 200,
        "the 30th run's log ({} bytes) grew past the first's ({} bytes):\n{last}",
        last.len(),
        first.len()
    );
    let own = records[29]["run_id"].as_str().expect("run_id");
    for line in last.lines() {
        assert!(
            !line.contains("run_id=") || line.matches("run_id=").all(|_| line.contains(own)),
            "a line of another run: {line}"
        );
        assert_eq!(line.matches("run{").count(), 1, "nested run spans: {line}");
    }
}
