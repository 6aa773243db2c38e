//! Processes that do not play along: a signal while `[supervisor] on_finish` runs stops the hook
//! and the supervisor exits by the signal (130 / 143) with its reports intact; processes that
//! escape their group and their environment marker (`setsid env -i …`) from a harness command, a
//! `shell` step or the hook do not outlive the run (see docs/signals.md).

use crate::common;
use crate::common::assert_exit;

use common::{stderr, Project};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn is_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

fn wait_for_file(path: &Path, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if text.ends_with('\n') {
                return text;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} never written",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGKILLs a pid the test knows is its own escapee, so a failing test leaves nothing behind.
fn kill(pid: i32) {
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

fn signal_during_on_finish(signal: &str) -> (Project, std::process::Output, Duration) {
    let p = Project::new();
    // The hook notes its pid and that of its `sleep`, then waits far longer than the test does.
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[supervisor]\non_finish = \"sleep 300 & echo $$ $! > hook.pids; wait\"\non_finish_timeout_secs = 120\n",
    );
    p.write(
        "tests/a.test.toml",
        "[[steps]]\ninstruction = \"`echo hi`\"\n",
    );
    let child = p
        .supervisor()
        .arg("start")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    let pids = wait_for_file(&p.root().join("hook.pids"), Duration::from_secs(60));
    let sent = Instant::now();
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = child.wait_with_output().expect("wait");
    let took = sent.elapsed();
    for pid in pids
        .split_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
    {
        let deadline = Instant::now() + Duration::from_secs(3);
        while is_alive(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let alive = is_alive(pid);
        kill(pid);
        assert!(!alive, "the hook's process {pid} outlived the supervisor");
    }
    p.assert_nothing_survives();
    (p, out, took)
}

#[test]
fn sigint_during_on_finish_stops_the_hook_and_exits_130() {
    let (p, out, took) = signal_during_on_finish("INT");
    assert_exit(&out, 130);
    assert!(took < Duration::from_secs(10), "exited after {took:?}");
    assert!(
        stderr(&out).contains("on_finish") && stderr(&out).contains("stopped"),
        "says the hook was stopped: {}",
        stderr(&out)
    );
    // The reports were written before the hook and stay as they were: the test passed.
    let summary = p.suite_summary();
    assert_eq!(summary.totals.passed, 1, "{summary:?}");
    assert!(p.suite_dir().join("report.html").is_file());
    assert_eq!(
        p.record_for("a.test.toml").outcome,
        Some(bugatti::model::outcome::RunOutcome::Passed)
    );
}

#[test]
fn sigterm_during_on_finish_exits_143() {
    let (_p, out, took) = signal_during_on_finish("TERM");
    assert_exit(&out, 143);
    assert!(took < Duration::from_secs(10), "exited after {took:?}");
}

/// A shell line that starts an escapee: a new session, an empty environment (no marker), its
/// pid written to `file` once it runs (the line waits for that, so the escapee is up before the
/// command, step or hook ends).
fn escapee(file: &str) -> String {
    format!(
        "setsid env -i /bin/sh -c 'echo $$ > {file}.tmp; mv {file}.tmp {file}; exec /bin/sleep 300' > /dev/null 2>&1 & while [ ! -s {file} ]; do sleep 0.05; done;"
    )
}

#[test]
fn escapees_of_a_command_a_step_and_on_finish_do_not_outlive_the_run() {
    let p = Project::new();
    let root = p.root().display().to_string();
    let file = |name: &str| format!("{root}/{name}.pid");
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"shell\"\n\n[supervisor]\non_finish = \"{hook}\"\n\n[commands.setup]\nkind = \"short_lived\"\ncmd = \"{setup}\"\n\n[commands.server]\nkind = \"long_lived\"\ncmd = \"{server} echo up; exec sleep 300\"\nreadiness = {{ log = \"^up$\" }}\n",
            hook = escapee(&file("hook")).replace('"', "\\\""),
            setup = escapee(&file("setup")).replace('"', "\\\""),
            server = escapee(&file("server")).replace('"', "\\\""),
        ),
    );
    p.write(
        "tests/a.test.toml",
        &format!(
            "[[steps]]\ninstruction = \"`{}`\"\n",
            escapee(&file("step")).replace('"', "\\\"")
        ),
    );
    let out = p
        .supervisor()
        .arg("start")
        .output()
        .expect("run supervisor");
    let mut survivors = Vec::new();
    for name in ["setup", "server", "step", "hook"] {
        let path = p.root().join(format!("{name}.pid"));
        let text = wait_for_file(&path, Duration::from_secs(5));
        let pid: i32 = text.trim().parse().expect("a pid");
        let deadline = Instant::now() + Duration::from_secs(3);
        while is_alive(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if is_alive(pid) {
            survivors.push((name, pid));
            kill(pid);
        }
    }
    assert_exit(&out, 0);
    assert!(
        survivors.is_empty(),
        "escapees outlived the run: {survivors:?}"
    );
}

#[test]
fn an_escapee_of_a_console_call_does_not_outlive_the_run() {
    let p = Project::new();
    let pid_file = format!("{}/console.pid", p.root().display());
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"command\"\ncmd = \"{}\"\nstep_timeout_secs = 60\n",
            Project::directive_agent_cmd()
        ),
    );
    let call = serde_json::json!({"cmd": escapee(&pid_file), "tty": false, "yield_time_ms": 5000});
    p.write(
        "console.test.toml",
        &format!(
            "name = \"Console\"\n[[steps]]\ninstruction = '''\nStart a daemon.\nmcp exec_command {call}\nexpect Process exited with code 0\n'''\n"
        ),
    );
    let out = p
        .supervisor()
        .arg("start")
        .output()
        .expect("run supervisor");
    let text = wait_for_file(Path::new(&pid_file), Duration::from_secs(5));
    let pid: i32 = text.trim().parse().expect("a pid");
    let deadline = Instant::now() + Duration::from_secs(3);
    while is_alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let alive = is_alive(pid);
    if alive {
        kill(pid);
    }
    assert_exit(&out, 0);
    assert!(!alive, "the console call's escapee {pid} outlived the run");
}
