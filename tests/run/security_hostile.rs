//! Hostile input from the agent and from the project's own files, through the real supervisor:
//! a console call with an absurd output budget, a recording that is a FIFO or a symlink to
//! /dev/zero, a console session that writes without end, files discovery cannot stat. Each run
//! answers, completes, leaves its report, and nothing it started survives.

use crate::common;
use crate::common::assert_exit;
use crate::common::records::*;

use common::{stderr, stdout, Project};
use std::path::PathBuf;

fn command_agent_config(extra: &str) -> String {
    format!(
        r#"
[provider]
name = "command"
cmd = "{agent}"
step_timeout_secs = 60
{extra}
"#,
        agent = Project::directive_agent_cmd()
    )
}

fn run_dir(p: &Project, test_file: &str) -> PathBuf {
    let record = p.record_for(test_file);
    p.root()
        .join(".bugatti/runs")
        .join(record.identity.run_id.as_str())
}

/// `transcripts/console.jsonl` of a run, parsed.
fn console_calls(p: &Project, test_file: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run_dir(p, test_file).join("transcripts/console.jsonl"))
        .expect("console.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// `max_output_tokens` of 10 000 000 000 and of u64::MAX over 3 MB of output: the calls answer
/// (cut to the console's 1 MiB ceiling), the run completes with its report, nothing survives.
#[test]
fn an_absurd_output_budget_is_clamped_and_the_run_completes() {
    let p = Project::new();
    p.write("bugatti.config.toml", &command_agent_config(""));
    p.write(
        "budget.test.toml",
        r#"
name = "budget"

[[steps]]
instruction = '''
mcp exec_command {"cmd": "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo end-of-flood", "tty": false, "yield_time_ms": 20000, "max_output_tokens": 10000000000}
expect end-of-flood
mcp exec_command {"cmd": "head -c 3000000 /dev/zero | tr '\\0' y; echo; echo end-again", "yield_time_ms": 20000, "max_output_tokens": 18446744073709551615}
expect end-again
mcp read_log {"name": "none", "offset": 18446744073709551615, "tail_lines": 18446744073709551615, "max_output_tokens": 18446744073709551615}
mcp write_stdin {"session_id": 4294967295, "yield_time_ms": 18446744073709551615, "max_output_tokens": 18446744073709551615}
'''
"#,
    );
    let out = p.start();
    assert_exit(&out, 0);
    let dir = run_dir(&p, "budget.test.toml");
    assert!(dir.join("report.md").is_file() && dir.join("run.json").is_file());
    let calls = console_calls(&p, "budget.test.toml");
    assert_eq!(calls.len(), 4, "{calls:#?}");
    for call in &calls[..2] {
        assert_eq!(call["exit_code"], 0, "{call:#}");
        assert!(call["bytes"].as_u64().unwrap_or(0) >= 3_000_000, "{call:#}");
    }
}

/// Runs the supervisor with `args`, killing it (and failing) if it takes longer than `limit`.
fn run_within(p: &Project, args: &[&str], limit: std::time::Duration) -> std::process::Output {
    let child = p
        .supervisor()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start supervisor");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => {
            p.assert_nothing_survives();
            out.expect("supervisor output")
        }
        Err(_) => {
            // Our own child, by its PID.
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
            p.assert_nothing_survives();
            panic!("supervisor {args:?} did not finish within {limit:?}");
        }
    }
}

/// A recording that is a FIFO, or a symlink to /dev/zero (git stores either happily), is a
/// warning and the agent runs: no hang, no memory blown; `check` answers too.
#[test]
fn a_recording_that_is_a_fifo_or_a_device_is_a_warning_and_the_agent_runs() {
    let p = Project::new();
    p.write("bugatti.config.toml", &command_agent_config(""));
    for name in ["fifo", "zero"] {
        p.write(
            &format!("{name}.test.toml"),
            "name = \"t\"\n[[steps]]\ninstruction = \"say done\"\n",
        );
    }
    let dir = p.root().join("bugatti.replay");
    std::fs::create_dir_all(&dir).expect("replay dir");
    let fifo = dir.join("fifo.replay.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.replay.json")).expect("symlink");

    let limit = std::time::Duration::from_secs(60);
    let check = run_within(&p, &["check"], limit);
    let shown = format!("{}{}", stdout(&check), stderr(&check));
    assert!(shown.contains("not a regular file (a FIFO)"), "{shown}");
    assert!(
        shown.contains("not a regular file (a character device)"),
        "{shown}"
    );

    let out = run_within(&p, &["start", "--replay", "auto"], limit);
    assert_exit(&out, 0);
    for name in ["fifo", "zero"] {
        let record = p.record_for(&format!("{name}.test.toml"));
        assert_eq!(record.outcome, Some(RunOutcome::Passed), "{record:#?}");
        assert_eq!(record.steps[0].mode, Some(StepMode::Agent), "{record:#?}");
        let run = run_dir(&p, &format!("{name}.test.toml"));
        let report = std::fs::read_to_string(run.join("report.md")).expect("report.md");
        assert!(report.contains("not a regular file"), "{report}");
    }
}

/// An Emacs lock file (a dangling symlink named like a test) and a symlink loop under docs/:
/// discovery skips them with a note on the console, and the tests run.
#[test]
fn discovery_skips_what_it_cannot_stat_with_a_note() {
    let p = Project::new();
    p.write("bugatti.config.toml", &command_agent_config(""));
    p.write(
        "tests/a.test.toml",
        "name = \"a\"\n[[steps]]\ninstruction = \"say done\"\n",
    );
    std::os::unix::fs::symlink(
        "someone@host.4242:1700000000",
        p.root().join("tests/.#a.test.toml"),
    )
    .expect("lock file");
    std::fs::create_dir_all(p.root().join("docs")).expect("docs");
    std::os::unix::fs::symlink("loop-b", p.root().join("docs/loop-a")).expect("link");
    std::os::unix::fs::symlink("loop-a", p.root().join("docs/loop-b")).expect("link");
    let out = p.start();
    let shown = format!("{}{}", stdout(&out), stderr(&out));
    assert_exit(&out, 0);
    assert!(shown.contains(".#a.test.toml: cannot read it"), "{shown}");
    assert!(shown.contains("loop-a: cannot read it"), "{shown}");
    assert_eq!(
        p.record_for("a.test.toml").outcome,
        Some(RunOutcome::Passed)
    );
}

/// Total bytes of the files in `dir` whose name starts with `prefix`.
fn bytes_of(dir: &std::path::Path, prefix: &str) -> u64 {
    std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// One cap for every log the supervisor writes: `yes` in a console session, an agent that floods
/// its stderr, and an `on_finish` hook that floods its output, with `max_log_bytes` = 1 MiB,
/// each stop at the head + rolling tail (about twice the limit), with the limit's marker line.
#[test]
fn a_console_session_writing_without_end_stops_at_max_log_bytes() {
    const MAX: u64 = 1 << 20;
    let p = Project::new();
    let agent = format!(
        "sh -c 'head -c 5000000 /dev/zero >&2; exec {}'",
        Project::directive_agent_cmd()
    );
    p.write(
        "bugatti.config.toml",
        &format!(
            r#"
[supervisor]
max_log_bytes = {MAX}
on_finish = "head -c 5000000 /dev/zero | tr '\\0' z"

[provider]
name = "command"
cmd = "{agent}"
step_timeout_secs = 60
"#
        ),
    );
    p.write(
        "flood.test.toml",
        r#"
name = "flood"

[[steps]]
instruction = '''
mcp exec_command {"cmd": "yes", "yield_time_ms": 3000}
expect Process running with session ID
sleep 1
'''
"#,
    );
    let out = p.start();
    assert_exit(&out, 0);
    let dir = run_dir(&p, "flood.test.toml");
    let consoles: Vec<PathBuf> = std::fs::read_dir(dir.join("console"))
        .expect("console dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| !p.to_string_lossy().contains(".tail."))
        .collect();
    assert_eq!(consoles.len(), 1, "{consoles:?}");
    let log = std::fs::read(&consoles[0]).expect("console log");
    let head = log.len() as u64;
    assert!(head <= MAX + 8192, "console log head: {head} bytes");
    assert!(
        String::from_utf8_lossy(&log[log.len().saturating_sub(200)..])
            .contains("log limit of 1048576 bytes reached"),
        "no marker at the console log's end"
    );
    let stem = consoles[0]
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .into_owned();
    let all = bytes_of(&dir.join("console"), &stem);
    assert!(all <= 2 * MAX + 8192, "console logs: {all} bytes");
    assert!(all >= MAX, "yes wrote past the head: {all} bytes");

    let stderr_log = bytes_of(&dir.join("transcripts"), "agent.stderr");
    assert!(
        (MAX..=2 * MAX + 8192).contains(&stderr_log),
        "agent stderr: {stderr_log} bytes"
    );
    let hook = bytes_of(&p.suite_dir().join("logs"), "on_finish");
    assert!(
        (MAX..=2 * MAX + 8192).contains(&hook),
        "on_finish log: {hook} bytes"
    );
}

const SPLIT_SECRET: &str = "tok/9Qx7+LmZ2=pW4v&R8sK";
const SPLIT_SECRET_ENV: &str = "BUGATTI_HOSTILE_TEST_TOKEN";
const MULTI_SECRET: &str = "-----BEGIN KEY-----\nMIIEvQIBADANBgkq\n-----END KEY-----";
const MULTI_SECRET_ENV: &str = "BUGATTI_HOSTILE_TEST_KEY";

/// Every file under `root` (recursively) whose bytes contain `needle`.
fn files_containing(root: &std::path::Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                dirs.push(path);
            } else if kind.is_file()
                && std::fs::read(&path).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
            {
                found.push(path);
            }
        }
    }
    found
}

/// Secrets in recordings and console logs: a secret printed across two console answers, a
/// multi-line secret through a PTY (`\r\n` line ends), a secret's base64 and URL-encoding. The
/// agent passes, the step is recorded, and neither the recording nor any artifact holds any of
/// them in clear.
#[test]
fn secrets_split_across_answers_multi_line_or_encoded_never_land_in_clear() {
    use base64::Engine;
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &command_agent_config(&format!(
            r#"
[secrets]
TOKEN = {{ from_env = "{SPLIT_SECRET_ENV}" }}
KEY = {{ from_env = "{MULTI_SECRET_ENV}" }}
"#
        )),
    );
    p.write(
        "secret.test.toml",
        r#"
name = "secrets in the console"

[[steps]]
instruction = '''
mcp exec_command {"cmd": "printf 'first half: %s' \"$${TOKEN:0:10}\"; sleep 1.5; printf '%s second half\\n' \"$${TOKEN:10}\"", "yield_time_ms": 500}
expect first half:
mcp write_stdin {"session_id": {session_id}, "yield_time_ms": 5000}
expect second half
mcp exec_command {"cmd": "printf '%s\\n' \"$KEY\"; printf '%s' \"$TOKEN\" | base64; python3 -c 'import os, urllib.parse; print(urllib.parse.quote(os.environ[\"TOKEN\"], safe=\"\"))'", "yield_time_ms": 10000}
expect [REDACTED:KEY]
'''
"#,
    );
    let out = p
        .supervisor()
        .args(["start"])
        .env(SPLIT_SECRET_ENV, SPLIT_SECRET)
        .env(MULTI_SECRET_ENV, MULTI_SECRET)
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let shown = format!("{}{}", stdout(&out), stderr(&out));
    assert_exit(&out, 0);
    let recording = p.root().join("bugatti.replay/secret.replay.json");
    let recorded = std::fs::read_to_string(&recording).expect("the step was recorded");
    // The token printed across two answers is one placeholder in the second.
    assert!(recorded.contains("${TOKEN} second half"), "{recorded}");
    assert!(recorded.contains("[REDACTED:TOKEN:base64]"), "{recorded}");

    let crlf = MULTI_SECRET.replace('\n', "\r\n");
    let b64 = base64::engine::general_purpose::STANDARD.encode(SPLIT_SECRET);
    let url = "tok%2F9Qx7%2BLmZ2%3DpW4v%26R8sK";
    let forms: [(&str, &[u8]); 7] = [
        ("the token", SPLIT_SECRET.as_bytes()),
        ("its first half", &SPLIT_SECRET.as_bytes()[..10]),
        ("its second half", &SPLIT_SECRET.as_bytes()[10..]),
        ("the key", MULTI_SECRET.as_bytes()),
        ("the key with CRLF", crlf.as_bytes()),
        ("the token's base64", &b64.as_bytes()[..b64.len() - 2]),
        ("the token URL-encoded", url.as_bytes()),
    ];
    for (what, needle) in forms {
        for root in [p.root().join(".bugatti"), p.root().join("bugatti.replay")] {
            let found = files_containing(&root, needle);
            assert!(found.is_empty(), "{what} in clear in {found:?}");
        }
        assert!(
            !shown.as_bytes().windows(needle.len()).any(|w| w == needle),
            "{what} on the console"
        );
    }
}

/// Raw ESC, BEL, NUL, HTML and `javascript:` links from a test's name and the agent's message
/// never reach report.md or summary.md as they came: escaped, they cannot redraw a terminal that
/// `cat`s the file, run in a markdown viewer that renders HTML, or make a link.
#[test]
fn control_characters_html_and_script_links_are_escaped_in_the_markdown_reports() {
    let p = Project::new();
    p.write("bugatti.config.toml", &command_agent_config(""));
    p.write(
        "evil.test.toml",
        r#"
name = "evil \u001b[2J\u0007\u0000 <img src=x onerror=alert(1)> [home](javascript:alert(1))"

[[steps]]
instruction = "say RESULT ERROR: \u001b]0;owned\u0007 <script>alert(2)</script> [docs](javascript:alert(3)) <javascript:alert(4)>"
"#,
    );
    let out = p.start();
    assert_exit(&out, 1);
    let report = std::fs::read_to_string(run_dir(&p, "evil.test.toml").join("report.md"))
        .expect("report.md");
    let summary = std::fs::read_to_string(p.suite_dir().join("summary.md")).expect("summary.md");
    assert!(
        report.contains("alert(2)"),
        "the message is shown: {report}"
    );
    assert!(
        summary.contains("alert(2)"),
        "the message is shown: {summary}"
    );
    for (file, text) in [("report.md", &report), ("summary.md", &summary)] {
        for raw in ["\u{1b}", "\u{7}", "\0"] {
            assert!(!text.contains(raw), "{raw:?} raw in {file}:\n{text}");
        }
        // Inside a fenced code block nothing is markup; everywhere else no HTML or link.
        let prose = outside_fences(text);
        for raw in ["<img", "<script", "](javascript:", "<javascript:"] {
            assert!(!prose.contains(raw), "{raw:?} raw in {file}:\n{prose}");
        }
    }
}

/// The lines of a markdown text outside its fenced code blocks.
fn outside_fences(text: &str) -> String {
    let mut fence: Option<String> = None;
    let mut out = String::new();
    for line in text.lines() {
        let ticks: String = line.chars().take_while(|c| *c == '`').collect();
        match &fence {
            Some(open) if ticks.len() >= open.len() && line.trim() == ticks => fence = None,
            Some(_) => {}
            None if ticks.len() >= 3 => fence = Some(ticks),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}
