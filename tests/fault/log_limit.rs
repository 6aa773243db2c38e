//! `[supervisor] max_log_bytes`, end to end through the binary: a server printing megabytes into
//! a 64 KiB limit keeps a bounded log (its head, the limit's marker) and a rolling tail with its
//! newest lines, while its readiness log probe still sees a line printed long after the cut.

use crate::common::assert_exit;
use crate::common::records::*;
use crate::common::{stderr, stdout, Project};
use std::path::Path;

const LIMIT: u64 = 64 * 1024;
const EARLY: u32 = 200_000;
const LATE: u32 = 20_000;

/// Every byte the server prints, as `seq` prints it.
fn printed() -> Vec<u8> {
    let mut out = Vec::new();
    for i in 1..=EARLY {
        out.extend_from_slice(format!("early line {i}\n").as_bytes());
    }
    out.extend_from_slice(b"server ready late\n");
    for i in 1..=LATE {
        out.extend_from_slice(format!("late line {i}\n").as_bytes());
    }
    out
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

#[test]
fn a_chatty_server_keeps_a_bounded_log_with_its_head_and_newest_tail_and_still_gets_ready() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!(
            r#"[provider]
name = "shell"
cwd = "."

[supervisor]
max_log_bytes = {LIMIT}

[commands.web]
kind = "long_lived"
cmd = "rm -f done.flag; seq -f 'early line %g' 1 {EARLY}; echo 'server ready late'; seq -f 'late line %g' 1 {LATE}; touch done.flag; exec sleep 300"
readiness = {{ log = "^server ready late$", timeout_secs = 60 }}
"#
        ),
    );
    // Passes only once the server printed everything, long after readiness.
    p.write(
        "chatty.test.toml",
        "name = \"Chatty\"\n[[steps]]\ninstruction = \"`while [ ! -f done.flag ]; do sleep 0.05; done`\"\n",
    );
    let out = p.start(); // also checks nothing survives
    assert_exit(&out, 0);
    let record = p.record_for("chatty.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Passed), "{record:?}");
    let web = record.command("web");
    assert_eq!(
        web.ready_probe.as_deref(),
        Some("log /^server ready late$/"),
        "{web:?}"
    );

    let logs = record.run_dir().join("logs");
    let log = std::fs::read(logs.join("web.log")).expect("web.log");
    let marker = format!(
        "[bugatti: log limit of {LIMIT} bytes reached; the rest is kept as a rolling tail in web.tail.log]\n"
    );
    let printed = printed();
    // The head: the first output, cut at a line end, then the marker, and nothing else.
    assert!(
        log.ends_with(marker.as_bytes()),
        "{}",
        String::from_utf8_lossy(&log[log.len().saturating_sub(200)..])
    );
    let head = &log[..log.len() - marker.len()];
    assert!(
        head.len() as u64 <= LIMIT + 100 && head.len() as u64 > LIMIT - 100,
        "{} bytes of head",
        head.len()
    );
    assert!(head.ends_with(b"\n"));
    assert!(
        printed.starts_with(head),
        "the log's head is the first output"
    );

    // The tail: the newest output, in two files of at most half the limit each.
    let tail = std::fs::read(logs.join("web.tail.log")).expect("web.tail.log");
    let older = std::fs::read(logs.join("web.tail.log.1")).expect("web.tail.log.1");
    assert!(tail.len() as u64 <= LIMIT / 2 && older.len() as u64 <= LIMIT / 2);
    let newest = [older, tail].concat();
    assert!(newest.len() as u64 >= LIMIT / 2);
    assert!(
        printed.ends_with(&newest),
        "the tail files hold the newest output, in order: {}",
        String::from_utf8_lossy(&newest[newest.len().saturating_sub(100)..])
    );
    assert!(newest.ends_with(format!("late line {LATE}\n").as_bytes()));

    // Every byte is accounted for, and the whole log directory stays bounded.
    assert_eq!(
        web.log_truncated_bytes,
        Some((printed.len() - head.len()) as u64),
        "{web:?}"
    );
    let on_disk: u64 = std::fs::read_dir(&logs)
        .expect("logs")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("web."))
        .map(|e| size(&e.path()))
        .sum();
    assert!(
        on_disk <= 2 * LIMIT + marker.len() as u64,
        "{on_disk} bytes for {} printed",
        printed.len()
    );
    let report = std::fs::read_to_string(record.run_dir().join("report.md")).expect("report.md");
    assert!(
        report.contains("`web`: its log reached `[supervisor] max_log_bytes`"),
        "{report}"
    );
}

#[test]
fn check_refuses_a_log_limit_below_4096_bytes_in_the_users_words() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[supervisor]\nmax_log_bytes = 1000\n",
    );
    p.write(
        "a.test.toml",
        "name = \"A\"\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    let out = p.check();
    assert_exit(&out, 2);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        said.contains("`[supervisor] max_log_bytes` must be a whole number of bytes, at least 4096 (found 1000;"),
        "{said}"
    );
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[supervisor]\nmax_log_bytes = 65536\n",
    );
    let out = p.check();
    let said = stdout(&out);
    assert_exit(&out, 0);
    let row = said
        .lines()
        .find(|l| l.contains("supervisor.max_log_bytes"))
        .unwrap_or_else(|| panic!("no max_log_bytes row:\n{said}"));
    assert!(row.contains("65536") && row.contains("project"), "{row}");
}
