//! The supervisor itself SIGKILLed mid-step: no teardown runs, so its server, agent and a process
//! that escaped its group with `setsid` survive. The next `start` in the project finds them
//! through the dead run's process ledger, reports them and kills them, and makes the dead run's
//! records final (`interrupted`).

use crate::common::assert_exit;
use crate::common::fault;
use crate::common::read_run_record;
use crate::common::records::*;

use crate::common::{stderr, Project};
use std::process::Stdio;

#[test]
fn the_next_start_kills_what_a_sigkilled_supervisor_left() {
    // A fixed port: the next start's own server can only bind it once the leftover is gone.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!(
            r#"
[provider]
name = "command"
cmd = "{agent}"

[ports]
APP_PORT = {port}

[commands.server]
kind = "long_lived"
cmd = "setsid sleep 300 & exec python3 -m http.server ${{APP_PORT}} --bind 127.0.0.1"
readiness_url = "http://127.0.0.1:${{APP_PORT}}/"

[commands.shared]
kind = "long_lived"
scope = "suite"
cmd = "echo up; exec sleep 300"
readiness = {{ log = "^up$" }}
"#,
            agent = Project::directive_agent_cmd()
        ),
    );
    p.write(
        "tests/long.test.toml",
        "name = \"Long\"\n[[steps]]\ninstruction = \"sleep 120\"\n",
    );
    p.write(
        "quick.test.toml",
        "name = \"Quick\"\n[[steps]]\ninstruction = \"say hello\"\n",
    );

    let mut child = p
        .supervisor()
        .args(["start", "tests"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    let runs = fault::wait_for_steps(&p, 1, &mut child);
    let dead_run = runs[0]
        .file_name()
        .and_then(|n| n.to_str())
        .expect("run id")
        .to_string();
    assert!(
        p.root()
            .join(".bugatti/ledger")
            .read_dir()
            .expect("ledger dir")
            .count()
            == 1,
        "the running supervisor keeps a ledger"
    );
    child.kill().expect("SIGKILL the supervisor");
    child.wait().expect("reap the supervisor");

    // The situation to recover from: server, escaped sleep and agent are still running.
    let survivors = fault::project_processes(&p);
    assert!(
        survivors.len() >= 4,
        "server, escaped child, agent and suite command should survive a SIGKILLed supervisor: \
         {survivors:?}"
    );

    let out = p.run(&["start", "quick.test.toml"]); // also asserts that nothing survives
    let err = stderr(&out);
    assert_exit(&out, 0);
    let line = err
        .lines()
        .find(|l| l.contains(&format!("leftover processes of dead run {dead_run}")))
        .unwrap_or_else(|| panic!("no leftover report for {dead_run}: {err}"));
    assert!(line.contains("command server"), "{err}");
    let suite_line = err
        .lines()
        .find(|l| l.contains("leftover process") && l.contains("command shared"))
        .unwrap_or_else(|| panic!("no leftover report for the suite command: {err}"));
    for pid in &survivors {
        assert!(
            line.contains(&pid.to_string()) || suite_line.contains(&pid.to_string()),
            "pid {pid} not reported: {err}"
        );
    }
    let harness_log =
        std::fs::read_to_string(p.suite_dir().join("harness.log")).expect("suite harness.log");
    assert!(
        harness_log.contains(&dead_run),
        "the suite's harness log records the leftovers: {harness_log}"
    );
    // The dead run's records are final: interrupted, saying why, with its report.
    assert!(
        err.contains(&format!("run {dead_run} of a supervisor that was killed: its reports are final now (interrupted)")),
        "{err}"
    );
    let dead_dir = p.root().join(".bugatti/runs").join(&dead_run);
    let record = read_run_record(&dead_dir);
    assert_eq!(record.outcome, Some(RunOutcome::Interrupted), "{record:?}");
    assert!(
        record
            .error
            .as_deref()
            .is_some_and(|e| e.contains("the supervisor was killed")),
        "{record:?}"
    );
    assert_eq!(
        record.steps[0].status,
        StepStatus::Interrupted,
        "the step it was cut off in: {record:?}"
    );
    assert!(record.finished_at.is_some(), "{record:?}");
    let events = std::fs::read_to_string(dead_dir.join("events.jsonl")).expect("events.jsonl");
    assert!(
        events
            .lines()
            .last()
            .is_some_and(|l| l.contains("\"run_finished\"")),
        "{events}"
    );
    let report = std::fs::read_to_string(dead_dir.join("report.md")).expect("report.md");
    assert!(report.contains("INTERRUPTED"), "{report}");
    // The dead supervisor's ledger is gone, and so is the finished one's.
    let ledgers = p
        .root()
        .join(".bugatti/ledger")
        .read_dir()
        .expect("ledger dir")
        .count();
    assert_eq!(ledgers, 0);
}

#[test]
fn a_live_supervisor_s_processes_are_left_alone() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"command\"\ncmd = \"{}\"\n",
            Project::directive_agent_cmd()
        ),
    );
    p.write(
        "tests/long.test.toml",
        "name = \"Long\"\n[[steps]]\ninstruction = \"sleep 120\"\n",
    );
    p.write(
        "quick.test.toml",
        "name = \"Quick\"\n[[steps]]\ninstruction = \"say hello\"\n",
    );
    let mut first = p
        .supervisor()
        .args(["start", "tests"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    fault::wait_for_steps(&p, 1, &mut first);
    let before = fault::project_processes(&p);

    let second = p
        .supervisor()
        .args(["start", "quick.test.toml"])
        .output()
        .expect("second supervisor");
    assert_exit(&second, 0);
    assert!(!stderr(&second).contains("leftover"), "{}", stderr(&second));
    for pid in &before {
        assert!(
            fault::project_processes(&p).contains(pid),
            "a live supervisor's process {pid} was touched"
        );
    }
    fault::signal(first.id(), "INT");
    let out = fault::wait_guarded(first);
    assert_exit(&out, 130);
    p.assert_nothing_survives();
}

#[test]
fn a_sigkilled_supervisor_that_is_still_a_zombie_counts_as_dead() {
    // Its parent (here: this test, which does not wait for it yet; in a container often PID 1,
    // which never does) has not reaped it: its pid is still in /proc, in state Z. The next
    // `start` must still kill what it left (the agent, an escapee) and finalise its run.
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"command\"\ncmd = \"{}\"\n\n[commands.escapee]\nkind = \"long_lived\"\ncmd = \"setsid sleep 300 & echo up; exec sleep 300\"\nreadiness = {{ log = \"^up$\" }}\n",
            Project::directive_agent_cmd()
        ),
    );
    p.write(
        "tests/long.test.toml",
        "name = \"Long\"\n[[steps]]\ninstruction = \"sleep 120\"\n",
    );
    p.write(
        "quick.test.toml",
        "name = \"Quick\"\n[[steps]]\ninstruction = \"say hello\"\n",
    );
    let mut child = p
        .supervisor()
        .args(["start", "tests"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn supervisor");
    let runs = fault::wait_for_steps(&p, 1, &mut child);
    let dead_run = runs[0]
        .file_name()
        .and_then(|n| n.to_str())
        .expect("run id")
        .to_string();
    let pid = child.id();
    fault::signal(pid, "KILL");
    // Not reaped: wait until /proc shows it as a zombie.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let state = loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("still in /proc");
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_default()
            .to_string();
        if state == "Z" || std::time::Instant::now() > deadline {
            break state;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(state, "Z", "the killed supervisor is a zombie until reaped");
    let survivors = fault::project_processes(&p);
    assert!(survivors.len() >= 3, "{survivors:?}");

    let out = p.run(&["start", "quick.test.toml"]); // also asserts that nothing survives
    let err = stderr(&out);
    // Still unreaped while the next start ran.
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    child.wait().expect("reap the supervisor");
    assert_exit(&out, 0);
    assert!(
        err.contains(&format!("leftover processes of dead run {dead_run}")),
        "{err}"
    );
    assert!(
        err.contains(&format!("run {dead_run} of a supervisor that was killed")),
        "{err}"
    );
    let record = read_run_record(&p.root().join(".bugatti/runs").join(&dead_run));
    assert_eq!(record.outcome, Some(RunOutcome::Interrupted), "{record:?}");
}
