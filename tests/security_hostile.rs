//! Hostile input from the agent and from the project's own files, through the real supervisor:
//! a console call with an absurd output budget, a recording that is a FIFO or a symlink to
//! /dev/zero, a console session that writes without end, files discovery cannot stat. Each run
//! answers, completes, leaves its report, and nothing it started survives.

mod common;

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
        .join(record["run_id"].as_str().expect("run id"))
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
    let out = p.run(&["start"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
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
    let shown = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{shown}");
    for name in ["fifo", "zero"] {
        let record = p.record_for(&format!("{name}.test.toml"));
        assert_eq!(record["outcome"], "passed", "{record:#}");
        assert_eq!(record["steps"][0]["mode"], "agent", "{record:#}");
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
    let out = p.run(&["start"]);
    let shown = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains(".#a.test.toml: cannot read it"), "{shown}");
    assert!(shown.contains("loop-a: cannot read it"), "{shown}");
    assert_eq!(p.record_for("a.test.toml")["outcome"], "passed");
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
    let out = p.run(&["start"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
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
