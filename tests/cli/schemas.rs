//! The JSON Schemas in `schemas/` (run.json, summary.json, an events.jsonl line, a history.jsonl
//! line): the checked-in files are what the types generate, and the files of real suites (passed,
//! failed, flaky, not run, shards and their merge, a second night with its comparison) validate
//! against them with Python's `jsonschema`, a validator this project did not write.

use crate::common;
use crate::common::assert_exit;
use crate::common::{stderr, Project};
use bugatti::report::renderers::schemas::Document;
use std::path::{Path, PathBuf};
use std::process::Command;

fn schema_path(doc: Document) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(doc.file_name())
}

#[test]
fn the_checked_in_schemas_are_what_the_types_generate() {
    let update = std::env::var_os("BUGATTI_UPDATE_SCHEMAS").is_some();
    for doc in Document::ALL {
        let path = schema_path(doc);
        let generated = doc.schema_text();
        if update {
            std::fs::create_dir_all(path.parent().expect("dir")).expect("schemas/");
            std::fs::write(&path, &generated).expect("write schema");
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            checked_in == generated,
            "{} differs from what the types generate; run \
             `BUGATTI_UPDATE_SCHEMAS=1 cargo test --test cli schemas::` and commit the result",
            path.display()
        );
    }
}

/// Runs the validator; `None` (after printing why) when it cannot run here.
fn validate(doc: Document, kind: &str, files: &[PathBuf]) -> Option<()> {
    assert!(!files.is_empty(), "{doc:?}: no files to validate");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/validate_json.py");
    let out = match Command::new("python3")
        .arg(script)
        .arg(schema_path(doc))
        .arg(kind)
        .args(files)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            common::skip::skip("schema validation", format!("python3 cannot run ({e})"));
            return None;
        }
    };
    if out.status.code() == Some(3) {
        common::skip::skip(
            "schema validation",
            String::from_utf8_lossy(&out.stdout).trim(),
        );
        return None;
    }
    assert!(
        out.status.success(),
        "{doc:?} does not validate:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    Some(())
}

fn files_named(dir: &Path, name: &str) -> Vec<PathBuf> {
    walk(dir)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == name))
        .collect()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn real_suites_validate_against_the_schemas() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        r#"[provider]
name = "shell"

[ports]
WEB_PORT = "auto"

[commands.prepare]
kind = "short_lived"
cmd = "echo prepared"

[commands.web]
kind = "long_lived"
cmd = "python3 -m http.server ${WEB_PORT} --bind 127.0.0.1"
readiness_url = "http://127.0.0.1:${WEB_PORT}/"
"#,
    );
    p.write(
        "tests/pass.test.toml",
        "name = \"Home page\"\n\n[[steps]]\ninstruction = \"`curl -sf http://127.0.0.1:${WEB_PORT}/ >/dev/null`\"\n\n[[steps]]\ninstruction = \"`echo done`\"\n",
    );
    p.write(
        "tests/fail.test.toml",
        "[[steps]]\ninstruction = \"`echo no basket; false`\"\n\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    // Fails its first attempt and passes its second: flaky.
    p.write(
        "tests/flaky.test.toml",
        "[[steps]]\ninstruction = \"`test -f $BUGATTI_PROJECT_ROOT/seen || { touch $BUGATTI_PROJECT_ROOT/seen; false; }`\"\n",
    );
    p.write("tests/sub/.keep", "");
    // Two nights, from a subdirectory, with the history where CI would keep it.
    for _ in 0..2 {
        let _ = std::fs::remove_file(p.root().join("seen"));
        let out = p
            .supervisor()
            .current_dir(p.root().join("tests/sub"))
            .args([
                "start",
                "--retries",
                "1",
                "--history",
                "../../ci/history.jsonl",
            ])
            .output()
            .expect("start");
        assert_exit(&out, 1);
    }
    // A fail-fast suite leaves tests not run.
    let out = p.run(&["start", "--fail-fast", "-j", "1"]);
    assert_exit(&out, 1);
    // Two shards and their merge (run one after the other here, so the first one's history
    // entry must not change the second one's split: by count).
    let mut shards = Vec::new();
    for k in 1..=2 {
        let out = p.run(&["start", "--shard", &format!("{k}/2"), "--shard-by", "count"]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
        shards.push(p.suite_dir().display().to_string());
    }
    let out = p.run(&[
        "merge",
        &shards[0],
        &shards[1],
        "--out",
        "merged",
        "--history",
        "ci/history.jsonl",
    ]);
    assert_exit(&out, 1);

    let bugatti = p.root().join(".bugatti");
    let runs = files_named(&bugatti.join("runs"), "run.json");
    assert!(runs.len() >= 10, "{} runs", runs.len());
    let mut summaries = files_named(&bugatti.join("suites"), "summary.json");
    summaries.push(p.root().join("merged/summary.json"));
    let events = files_named(&bugatti.join("runs"), "events.jsonl");
    let mut histories = vec![p.root().join("ci/history.jsonl")];
    histories.extend(files_named(&bugatti, "history.jsonl"));
    // What the files hold is what this test means to cover.
    let text = |path: &PathBuf| std::fs::read_to_string(path).expect("read");
    let all_summaries: String = summaries.iter().map(text).collect();
    for wanted in [
        "\"flaky\": true",
        "\"not_run\": [\n",
        "\"shard\":",
        "\"changes\":",
    ] {
        assert!(all_summaries.contains(wanted), "no summary has {wanted}");
    }
    let all_events: String = events.iter().map(text).collect();
    for line in all_events.lines() {
        let event: serde_json::Value = serde_json::from_str(line).expect("event line");
        assert!(event["run_id"].is_string(), "{line}");
        assert!(event["at"].is_string(), "{line}");
    }
    assert!(text(&histories[0]).lines().count() >= 3);

    validate(Document::Run, "json", &runs);
    validate(Document::Summary, "json", &summaries);
    validate(Document::Event, "jsonl", &events);
    validate(Document::History, "jsonl", &histories);
    p.assert_nothing_survives();
}
