//! Hostile harness commands, end to end through the binary: a server that closes its output but
//! keeps running, a child that escapes its process group with `setsid`, a fixed port someone else
//! already holds, and `auto` ports handed out while many ports are in use.

use crate::common::assert_exit;
use crate::common::records::*;
use crate::common::{stderr, stdout, Project};
use std::net::TcpListener;

fn shell_config(commands: &str) -> String {
    format!("[provider]\nname = \"shell\"\n\n{commands}")
}

#[test]
fn a_command_that_closes_its_output_but_keeps_running_is_not_taken_for_dead() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &shell_config(
            r#"
[commands.mute]
kind = "long_lived"
cmd = "echo ready; exec 1>&- 2>&-; exec sleep 3131"
readiness = { log = "^ready$" }
stop_timeout_secs = 5
"#,
        ),
    );
    // The steps outlast the end of the command's output; the last checks it still runs.
    p.write(
        "mute.test.toml",
        "name = \"Mute\"\n[[steps]]\ninstruction = \"`sleep 2`\"\n[[steps]]\ninstruction = \"`pgrep -x -f 'sleep 3131'`\"\n",
    );
    let out = p.start();
    assert_exit(&out, 0);
    let record = p.record_for("mute.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Passed), "{record:?}");
    let mute = record.command("mute");
    assert_eq!(mute.restarts.len(), 0, "{mute:?}");
    assert_eq!(
        mute.teardown,
        Some(TeardownState::Clean),
        "SIGTERM stops it: {mute:?}"
    );
}

#[test]
fn a_child_escaping_its_group_with_setsid_is_found_reported_leaked_and_killed() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &shell_config(
            r#"
[commands.escaper]
kind = "long_lived"
cmd = "setsid sh -c 'trap \"\" TERM HUP; exec sleep 300' & echo up; exec sleep 300"
readiness = { log = "^up$" }
"#,
        ),
    );
    p.write(
        "escape.test.toml",
        "name = \"Escape\"\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    let out = p.start(); // asserts the escaped sleep did not survive
    assert_exit(&out, 0);
    let record = p.record_for("escape.test.toml");
    let escaper = record.command("escaper");
    assert_eq!(escaper.teardown, Some(TeardownState::Leaked), "{escaper:?}");
    let run_dir = record.run_dir();
    let report = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(report.contains("leaked"), "{report}");
}

#[test]
fn a_fixed_port_already_taken_is_a_harness_error_with_exit_3() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &shell_config(&format!(
            r#"
[ports]
APP_PORT = {port}

[commands.server]
kind = "long_lived"
cmd = "exec python3 -m http.server ${{APP_PORT}} --bind 127.0.0.1"
readiness_url = "http://127.0.0.1:${{APP_PORT}}/"
"#
        )),
    );
    p.write(
        "port.test.toml",
        "name = \"Port\"\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    let out = p.start();
    let err = format!("{}\n{}", stdout(&out), stderr(&out));
    assert_exit(&out, 3);
    let record = p.record_for("port.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Error), "{record:?}");
    assert_eq!(record.steps[0].status, StepStatus::NotRun);
    let run_dir = record.run_dir();
    let report = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("server"),
        "the report names the command: {report}"
    );
    let log = std::fs::read_to_string(run_dir.join("logs/server.log")).expect("server.log");
    assert!(
        log.contains("Address already in use"),
        "the server's own complaint is in its log: {log}"
    );
    // "died during startup" or "failed", by whether readiness was still being checked; the
    // console shows the first line of the reason, the report the whole of it.
    assert!(
        err.contains("command `server`") && err.contains("exited with exit code 1"),
        "the console says which command failed and how: {err}"
    );
    assert!(
        err.contains("Address already in use") || report.contains("Address already in use"),
        "the console or the report says why: {err}\n{report}"
    );
    drop(taken);
}

#[test]
fn auto_ports_never_collide_with_ports_in_use() {
    // Hold many ports for the whole run: no session may be handed one of them.
    let held: Vec<TcpListener> = (0..50)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    let held_ports: Vec<u16> = held
        .iter()
        .map(|l| l.local_addr().expect("addr").port())
        .collect();
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &shell_config(
            r#"
[ports]
APP_PORT = "auto"

[commands.server]
kind = "long_lived"
cmd = "exec python3 -m http.server ${APP_PORT} --bind 127.0.0.1"
readiness_url = "http://127.0.0.1:${APP_PORT}/"
"#,
        ),
    );
    for i in 0..4 {
        p.write(
            &format!("t{i}.test.toml"),
            "name = \"Port\"\n[[steps]]\ninstruction = \"`echo $APP_PORT >> $BUGATTI_PROJECT_ROOT/ports.txt`\"\n",
        );
    }
    let out = p.run(&["start", "-j", "4"]);
    assert_exit(&out, 0);
    let text = std::fs::read_to_string(p.root().join("ports.txt")).expect("ports.txt");
    let mut ports: Vec<u16> = text
        .lines()
        .map(|l| l.trim().parse().expect("a port"))
        .collect();
    assert_eq!(ports.len(), 4, "{text}");
    for port in &ports {
        assert!(!held_ports.contains(port), "port {port} was in use");
    }
    ports.sort();
    ports.dedup();
    assert_eq!(ports.len(), 4, "each session its own port: {text}");
    drop(held);
}

#[test]
fn quick_commands_in_parallel_sessions_keep_their_own_exit_status() {
    // Regression: a step command that exited before it was registered could be reaped by another
    // session's zombie sweep, and read as "exited 255".
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    for i in 0..50 {
        p.write(
            &format!("tests/q{i:02}.test.toml"),
            "name = \"Quick\"\n[[steps]]\ninstruction = \"`true` then `echo a` then `exit 0` then `:`\"\n",
        );
    }
    let out = p.run(&["start", "-j", "8"]);
    assert_exit(&out, 0);
    assert_eq!(p.run_records().len(), 50);
}

#[test]
fn an_auto_port_taken_before_the_server_binds_it_gets_setup_retried_once_with_a_fresh_port() {
    // The server finds its port taken on its first start (as when another process binds the
    // picked port first); a marker file makes the second start a real server.
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &shell_config(
            r#"
[ports]
APP_PORT = "auto"

[commands.server]
kind = "long_lived"
cmd = "if [ ! -e taken.flag ]; then touch taken.flag; echo \"OSError: [Errno 98] Address already in use: ('127.0.0.1', ${APP_PORT})\" >&2; exit 1; fi; exec python3 -m http.server ${APP_PORT} --bind 127.0.0.1"
readiness_url = "http://127.0.0.1:${APP_PORT}/"
"#,
        ),
    );
    p.write(
        "retry.test.toml",
        "name = \"Retry\"\n[[steps]]\ninstruction = \"`echo $APP_PORT > $BUGATTI_PROJECT_ROOT/port.txt`\"\n",
    );
    let out = p.start(); // also checks nothing survives
    let (said, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{said}\n{err}");
    let record = p.record_for("retry.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Passed), "{record:?}");
    let retries = &record.port_retries;
    assert_eq!(retries.len(), 1, "{record:?}");
    let first = *retries[0].ports.get("APP_PORT").expect("first port");
    let second = *record.ports.get("APP_PORT").expect("second port");
    assert_ne!(first, second, "{record:?}");
    assert!(
        retries[0].reason.contains("Address already in use"),
        "{record:?}"
    );
    let used = std::fs::read_to_string(p.root().join("port.txt")).expect("port.txt");
    assert_eq!(
        used.trim(),
        second.to_string(),
        "the steps saw the new port"
    );
    let server = record.command("server");
    assert_eq!(server.status, CommandStatus::Ready, "{server:?}");
    assert!(server.error.is_none(), "{server:?}");
    let shown = format!("{said}{err}");
    assert!(
        shown.contains(&format!(
            "PORTS .......... setup retried: APP_PORT {first} -> {second}"
        )),
        "{shown}"
    );
}

#[test]
fn a_port_in_use_again_after_the_retry_is_a_harness_error_with_exit_3() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &shell_config(
            r#"
[ports]
APP_PORT = "auto"

[commands.server]
kind = "long_lived"
cmd = "echo \"Error: listen EADDRINUSE: address already in use 127.0.0.1:${APP_PORT}\" >&2; exit 1"
readiness_url = "http://127.0.0.1:${APP_PORT}/"
"#,
        ),
    );
    p.write(
        "busy.test.toml",
        "name = \"Busy\"\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    let out = p.start();
    assert_exit(&out, 3);
    let record = p.record_for("busy.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Error), "{record:?}");
    assert_eq!(
        record.port_retries.len(),
        1,
        "retried once only: {record:?}"
    );
    assert!(
        record
            .error
            .as_deref()
            .is_some_and(|e| e.contains("EADDRINUSE")),
        "{record:?}"
    );
}
