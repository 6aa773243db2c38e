//! `supervisor merge` of a shard directory from an untrusted source (a pull request's CI artifact):
//! every path read from its summary.json and run.json (commands' logs, evidence, transcripts, run
//! ids, report paths) must stay inside its run directory with no symlink followed, so the merged
//! report.html and summary.md never embed a file of the merge machine — its environment
//! (`/proc/self/environ`), `/etc/passwd`, `/etc/hostname` — but say what was not read instead.
//! See docs/ci.md "Merging artifacts you did not make".

use crate::common;
use crate::common::assert_exit;

use common::{stderr, Project};
use serde_json::Value;
use std::path::{Path, PathBuf};

const SECRET: &str = "merge-job-secret-4f1d9c2ab7";
const OUTSIDE: &str = "outside-file-content-91c3e7";

fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(value).expect("json")).expect("write");
}

/// One shard that ran a failing test (so its page shows logs), then reshaped as a hostile pull
/// request would: its run.json and summary.json name files outside, its files are symlinks out.
fn hostile_shard(p: &Project, outside: &Path) -> PathBuf {
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[commands.setup]\nkind = \"short_lived\"\ncmd = \"echo setting up\"\n",
    );
    p.write(
        "tests/a.test.toml",
        "[[steps]]\ninstruction = \"`echo BUGATTI_EVIDENCE screenshot shot.png; exit 1`\"\n",
    );
    let out = p.run(&["start", "--shard", "1/1"]);
    assert_exit(&out, 1);
    let suite = p.suite_dir();
    let run = read_json(&suite.join("summary.json"))["tests"][0]["run_id"]
        .as_str()
        .expect("run id")
        .to_string();
    let run_dir = p.root().join(".bugatti/runs").join(&run);

    // A file outside every run directory, as the merge machine's own files are.
    let secret_file = outside.join("secret.png");
    std::fs::write(&secret_file, OUTSIDE).expect("write");

    let mut record = read_json(&run_dir.join("run.json"));
    let setup = record["commands"][0].clone();
    let mut commands = Vec::new();
    for log in [
        "/proc/self/environ",
        "../../../../../../../../etc/passwd",
        "logs/../../../../../../../../etc/passwd",
        "logs/link.log",
    ] {
        let mut c = setup.clone();
        c["log"] = Value::from(log);
        c["name"] = Value::from(format!("cmd-{}", commands.len()));
        commands.push(c);
    }
    record["commands"] = Value::from(commands);
    std::os::unix::fs::symlink(&secret_file, run_dir.join("logs/link.log")).expect("symlink");
    // No recorded excerpt: the page then reads the commands' logs.
    record["steps"][0]
        .as_object_mut()
        .expect("a step")
        .remove("harness_log_excerpt");
    record["steps"][0]["evidence"] = serde_json::json!([
        {"kind": "screenshot", "path": "shot.png"},
        {"kind": "screenshot", "path": "host.png"},
        {"kind": "screenshot", "path": "/etc/hostname"},
        {"kind": "screenshot", "path": "../../../../../../../../etc/hostname"},
    ]);
    std::os::unix::fs::symlink(&secret_file, run_dir.join("shot.png")).expect("symlink");
    std::os::unix::fs::symlink("/etc/hostname", run_dir.join("host.png")).expect("symlink");
    write_json(&run_dir.join("run.json"), &record);
    // The agent's transcript, a symlink out.
    let transcript = run_dir.join("transcripts/agent.log");
    let _ = std::fs::remove_file(&transcript);
    std::fs::write(
        outside.join("agent.log"),
        format!("### step 1\n{OUTSIDE}\n"),
    )
    .expect("w");
    std::os::unix::fs::symlink(outside.join("agent.log"), &transcript).expect("symlink");

    // A second test whose run directory is a symlink to a run outside, and a third whose run id
    // climbs out of the artifact directory.
    let evil_run = outside.join("evil-run");
    std::fs::create_dir_all(evil_run.join("logs")).expect("mkdir");
    std::fs::write(evil_run.join("logs/setup.log"), format!("{OUTSIDE}\n")).expect("write");
    let mut evil = read_json(&run_dir.join("run.json"));
    evil["commands"] = serde_json::json!([setup]);
    evil["test_file"] = Value::from("tests/b.test.toml");
    evil["run_id"] = Value::from("evil-run");
    write_json(&evil_run.join("run.json"), &evil);
    std::os::unix::fs::symlink(&evil_run, p.root().join(".bugatti/runs/evil-run")).expect("ln");

    let mut summary = read_json(&suite.join("summary.json"));
    let mut b = summary["tests"][0].clone();
    b["test_file"] = Value::from("tests/b.test.toml");
    b["run_id"] = Value::from("evil-run");
    b["report"] = Value::from("../../runs/evil-run/report.md");
    b["history"][0]["run_id"] = Value::from("evil-run");
    b["history"][0]["report"] = Value::from("../../runs/evil-run/report.md");
    let mut c = b.clone();
    let climb = format!("../../../../../../../..{}", evil_run.display());
    c["test_file"] = Value::from("tests/c.test.toml");
    c["run_id"] = Value::from(climb.clone());
    c["history"][0]["run_id"] = Value::from(climb.clone());
    c["history"][0]["report"] = Value::from(format!("{}/report.md", evil_run.display()));
    c["report"] = c["history"][0]["report"].clone();
    summary["tests"].as_array_mut().expect("tests").push(b);
    summary["tests"].as_array_mut().expect("tests").push(c);
    write_json(&suite.join("summary.json"), &summary);
    suite
}

#[test]
fn merging_a_hostile_shard_embeds_no_file_from_outside_its_runs() {
    let p = Project::new();
    let outside = tempfile::tempdir().expect("outside");
    let suite = hostile_shard(&p, outside.path());
    let out = p
        .supervisor()
        .args(["merge", &suite.display().to_string(), "--out", "merged"])
        .env("MERGE_JOB_TOKEN", SECRET)
        .output()
        .expect("merge");
    assert!(
        matches!(out.status.code(), Some(0..=1)),
        "merge ran: {}",
        stderr(&out)
    );
    let page = std::fs::read_to_string(p.root().join("merged/report.html")).expect("page");
    let md = std::fs::read_to_string(p.root().join("merged/summary.md")).expect("md");
    let hostname = std::fs::read("/etc/hostname").unwrap_or_default();
    for text in [&page, &md] {
        assert!(!text.contains(SECRET), "the merge job's environment leaked");
        assert!(!text.contains("root:x:0:0"), "/etc/passwd leaked");
        assert!(!text.contains(OUTSIDE), "a file outside the run leaked");
        assert!(
            !text.contains(&base64(OUTSIDE.as_bytes())),
            "a symlink was followed"
        );
        if !hostname.is_empty() {
            assert!(!text.contains(&base64(&hostname)), "/etc/hostname leaked");
        }
    }
    // The shard's own run was read, and what was not read is said, not silently dropped.
    assert!(
        !page.contains("(its run.json was not found)</div></div></details>\n<details class=\"test bad\" id=\"t2\""),
        "run a was read: {page}"
    );
    assert!(
        page.contains("not read"),
        "the page notes the refused paths: {page}"
    );
    p.assert_nothing_survives();
}
