//! Signals and the deadline: SIGINT / SIGTERM / SIGHUP mid-step stop the run, tear everything down,
//! write every report as `interrupted` and exit 130 / 143 / 129; `--timeout` behaves like SIGTERM
//! and says it was the deadline. The first signal is acknowledged on the console.

use crate::common::assert_exit;
use crate::common::fault;
use crate::common::records::*;

use crate::common::{stdout, Project};
use std::process::Stdio;
use std::time::Duration;

fn project_with_a_long_step() -> Project {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!(
            r#"
[provider]
name = "command"
cmd = "{agent}"

[ports]
APP_PORT = "auto"

[commands.server]
kind = "long_lived"
cmd = "python3 -m http.server ${{APP_PORT}} --bind 127.0.0.1"
readiness = {{ tcp = "127.0.0.1:${{APP_PORT}}" }}
stop_timeout_secs = 2

[commands.stubborn]
kind = "long_lived"
cmd = "trap '' TERM; echo up; while true; do sleep 1; done"
readiness = {{ log = "^up$" }}
stop_timeout_secs = 30
"#,
            agent = Project::directive_agent_cmd()
        ),
    );
    for name in ["one", "two"] {
        p.write(
            &format!("{name}.test.toml"),
            "name = \"Long\"\n[[steps]]\ninstruction = \"sleep 60\"\n[[steps]]\ninstruction = \"say never\"\n",
        );
    }
    p
}

fn interrupt_mid_step(signals: &[&str]) -> (Project, std::process::Output) {
    let p = project_with_a_long_step();
    let mut child = p
        .supervisor()
        .args(["start", "-j", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    fault::wait_for_steps(&p, 2, &mut child);
    for signal in signals {
        let status = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = child.wait_with_output().expect("wait");
    p.assert_nothing_survives();
    (p, out)
}

fn assert_all_interrupted(p: &Project) {
    let records = p.run_records();
    assert_eq!(records.len(), 2);
    for record in records {
        assert_eq!(record.outcome, Some(RunOutcome::Interrupted), "{record:?}");
        assert_eq!(
            record.steps[0].status,
            StepStatus::Interrupted,
            "{record:?}"
        );
        let message = record.steps[0].message.as_deref().unwrap_or_default();
        assert!(
            message.starts_with("interrupted: SIG"),
            "names the signal: {message}"
        );
        assert_eq!(record.steps[1].status, StepStatus::NotRun);
        let run_dir = record.run_dir();
        let report = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
        assert!(report.contains("INTERRUPTED"), "{report}");
    }
    assert!(p.suite_dir().join("junit.xml").exists());
}

#[test]
fn sigint_mid_step_interrupts_every_session_and_exits_130() {
    // The second SIGINT skips the 30 s grace period of the server that ignores SIGTERM.
    let (p, out) = interrupt_mid_step(&["INT", "INT"]);
    let console = stdout(&out);
    assert_exit(&out, 130);
    assert!(
        console.contains("SIGINT: stopping") && console.contains("a second signal skips them"),
        "the first signal is acknowledged: {console}"
    );
    assert!(
        console.contains("SIGINT: second signal — skipping the grace periods"),
        "{console}"
    );
    assert_all_interrupted(&p);
    let record = &p.run_records()[0];
    let stubborn = record.command("stubborn");
    assert_eq!(
        stubborn.teardown,
        Some(TeardownState::Killed),
        "{stubborn:?}"
    );
}

#[test]
fn sigterm_mid_step_exits_143() {
    let (p, out) = interrupt_mid_step(&["TERM", "INT"]);
    assert_exit(&out, 143);
    assert_all_interrupted(&p);
}

#[test]
fn sighup_mid_step_with_servers_up_exits_129_with_every_report() {
    // The terminal or SSH session closed: the same orderly stop, not a death with leftovers.
    let (p, out) = interrupt_mid_step(&["HUP", "HUP"]);
    let console = stdout(&out);
    assert_exit(&out, 129);
    assert!(console.contains("SIGHUP: stopping"), "{console}");
    assert_all_interrupted(&p);
}

/// Issue 39 item 8: a signal whose default action would end the supervisor on the spot (here
/// SIGUSR1, a stray `kill -USR1`) leaves every record written, as SIGTERM does, and nothing
/// running; the exit code is 128 + its number.
#[test]
fn sigusr1_mid_step_stops_in_order_with_every_report() {
    let (p, out) = interrupt_mid_step(&["USR1", "USR1"]);
    let console = stdout(&out);
    assert_exit(&out, 138);
    assert!(console.contains("SIGUSR1: stopping"), "{console}");
    assert_all_interrupted(&p);
    let message = format!("{:?}", p.run_records()[0].steps[0].message);
    assert!(message.contains("SIGUSR1"), "{message}");
}

#[test]
fn the_invocation_deadline_behaves_like_sigterm() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "slow.test.toml",
        "name = \"Slow\"\n[[steps]]\ninstruction = \"`sleep 60`\"\n",
    );
    let out = p.run(&["start", "--timeout", "2"]);
    let console = stdout(&out);
    assert_exit(&out, 143);
    assert!(
        console.contains("--timeout: the 2s deadline passed"),
        "the deadline is named as the reason: {console}"
    );
    let record = p.record_for("slow.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Interrupted));
    assert_eq!(
        record.steps[0].status,
        StepStatus::Interrupted,
        "{record:?}"
    );
    for said in [&record.steps[0].message, &record.error] {
        assert_eq!(
            said.as_deref(),
            Some("interrupted: the --timeout deadline (2s) passed"),
            "the deadline is named in run.json: {record:?}"
        );
    }
    let report = std::fs::read_to_string(record.run_dir().join("report.md")).expect("report.md");
    assert!(
        report.contains("the --timeout deadline (2s) passed"),
        "{report}"
    );
}

#[test]
fn the_suite_harness_log_records_the_signals_received() {
    let (p, out) = interrupt_mid_step(&["INT", "INT"]);
    assert_exit(&out, 130);
    let log = std::fs::read_to_string(p.suite_dir().join("harness.log")).expect("suite log");
    assert!(
        log.contains("signal SIGINT received: SIGINT: stopping"),
        "{log}"
    );
    assert!(
        log.contains("signal SIGINT received: SIGINT: second signal"),
        "{log}"
    );
}

/// A harness server that ignores SIGTERM for a minute of grace, and a first step that runs until
/// it is stopped (`step` is the instruction).
fn project_with_stubborn_processes(provider: &str, step: &str) -> Project {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!(
            r#"
[provider]
{provider}

[commands.stubborn]
kind = "long_lived"
cmd = "trap '' TERM; echo up; while true; do sleep 1; done"
readiness = {{ log = "^up$" }}
stop_timeout_secs = 60
"#
        ),
    );
    p.write(
        "stuck.test.toml",
        &format!("name = \"Stuck\"\n[[steps]]\ninstruction = '''{step}'''\n"),
    );
    p
}

/// Sends `first`, lets the teardown start waiting out its grace periods, sends `second`, and
/// returns the output and how long the supervisor took to exit after `second`.
fn signal_twice(
    p: &Project,
    first: &str,
    second: &str,
    between: Duration,
) -> (std::process::Output, Duration) {
    let mut child = p
        .supervisor()
        .args(["start"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    fault::wait_for_steps(p, 1, &mut child);
    fault::signal(child.id(), first);
    // Not a timing assertion: the first teardown gets under way so that the second signal cuts
    // grace periods being waited out, not only ones still to come.
    std::thread::sleep(between);
    fault::signal(child.id(), second);
    let after_second = std::time::Instant::now();
    let out = fault::wait_guarded(child);
    let took = after_second.elapsed();
    p.assert_nothing_survives();
    (out, took)
}

fn stubborn_was_killed(p: &Project) {
    let record = p.record_for("stuck.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Interrupted), "{record:?}");
    assert_eq!(
        record.steps[0].status,
        StepStatus::Interrupted,
        "{record:?}"
    );
    let stubborn = record.command("stubborn");
    assert_eq!(
        stubborn.teardown,
        Some(TeardownState::Killed),
        "{stubborn:?}"
    );
}

#[test]
fn a_second_signal_cuts_the_agents_stop_ladder_and_the_harness_grace() {
    // The agent ignores end-of-input, SIGINT and SIGTERM: its stop ladder alone is 2 + 2 + 5 s;
    // the server's grace is 60 s. After the second signal the supervisor must not wait for
    // either (docs/signals.md: it exits within a second; 5 s here is slack for a loaded machine, still
    // below the agent's ladder).
    let agent = r#"name = "command"
cmd = '''sh -c "trap '' INT TERM HUP; read -r l; echo 'RESULT OK'; read -r l; echo working; while :; do sleep 1; done"'''"#;
    let p = project_with_stubborn_processes(agent, "Do the thing.");
    let (out, took) = signal_twice(&p, "INT", "INT", Duration::from_secs(1));
    let console = stdout(&out);
    assert_exit(&out, 130);
    eprintln!("the run ended {took:?} after the second signal");
    assert!(
        took < Duration::from_secs(5),
        "the second signal took {took:?} to end the run: {console}"
    );
    stubborn_was_killed(&p);
    assert!(p.suite_dir().join("junit.xml").exists());
}

#[test]
fn a_second_signal_cuts_a_shell_steps_grace() {
    // A `shell` step cut short gets SIGTERM and 5 s; this one ignores SIGTERM. The second signal,
    // 0.3 s into that grace, must not wait out the 4.7 s left (3 s: slack for a loaded machine).
    let p = project_with_stubborn_processes(
        "name = \"shell\"",
        "`trap '' TERM; while :; do sleep 1; done`",
    );
    let (out, took) = signal_twice(&p, "TERM", "TERM", Duration::from_millis(300));
    let console = stdout(&out);
    assert_exit(&out, 143);
    eprintln!("the run ended {took:?} after the second signal");
    assert!(
        took < Duration::from_secs(3),
        "the second signal took {took:?} to end the run: {console}"
    );
    stubborn_was_killed(&p);
}

#[test]
fn a_third_signal_still_writes_the_reports_held_in_memory() {
    // Second and third signal together: the orderly teardown has no time to finish, so what
    // the reporter holds is written by the third signal's last word — summaries, JUnit, the
    // --junit / --json copies, each run.json closed as interrupted — and nothing survives.
    let p = project_with_a_long_step();
    let mut child = p
        .supervisor()
        .args([
            "start",
            "-j",
            "2",
            "--junit",
            "ci/junit.xml",
            "--json",
            "ci/suite.json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    fault::wait_for_steps(&p, 2, &mut child);
    fault::signal(child.id(), "INT");
    std::thread::sleep(Duration::from_millis(100));
    // Two different signals: the same one twice in a row may be delivered once.
    fault::signal(child.id(), "TERM");
    fault::signal(child.id(), "HUP");
    let out = fault::wait_guarded(child);
    p.assert_nothing_survives();
    let console = stdout(&out);
    assert_exit(&out, 130);
    assert!(console.contains("third signal"), "{console}");
    for file in ["summary.json", "summary.md", "junit.xml"] {
        assert!(p.suite_dir().join(file).exists(), "{file}: {console}");
    }
    for copy in ["ci/junit.xml", "ci/suite.json"] {
        assert!(p.root().join(copy).exists(), "{copy}: {console}");
    }
    let records = p.run_records();
    assert_eq!(records.len(), 2, "{console}");
    for record in records {
        assert_eq!(record.outcome, Some(RunOutcome::Interrupted), "{record:?}");
    }
    let summary = p.suite_summary();
    assert_eq!(summary.totals.interrupted, 2, "{summary:?}");
}

/// Sends SIGCONT then SIGTERM to a supervisor the test stopped, when the test ends before it
/// was resumed and waited for (an assertion failed): a stopped supervisor would outlive the test.
struct ResumeOnDrop(u32);

impl Drop for ResumeOnDrop {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for signal in ["CONT", "TERM"] {
                let _ = std::process::Command::new("kill")
                    .args([&format!("-{signal}"), &self.0.to_string()])
                    .status();
            }
        }
    }
}

/// State letters (`/proc/<pid>/stat` field 3) of the live processes running the project's steps.
fn step_process_states(p: &Project) -> Vec<char> {
    fault::project_processes(p)
        .into_iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .filter_map(|stat| stat.rsplit(')').next()?.trim_start().chars().next())
        .collect()
}

#[test]
fn ctrl_z_then_fg_stops_the_children_too_and_costs_no_step_its_timeout() {
    // Step 2 needs 2 s of its 5 s; the supervisor is stopped (Ctrl+Z) for 6 s in the middle of
    // it. Stopped time must not count: step 1 stays passed, step 2 passes, and while stopped the
    // step's processes are stopped too.
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "pause.test.toml",
        "name = \"Pause\"\n\
         [[steps]]\ninstruction = \"`echo first`\"\n\
         [[steps]]\ninstruction = \"`sleep 2; echo second`\"\ntimeout_secs = 5\n",
    );
    // One command for the whole of step 2: with two, the stop could land between them, when the
    // step has no process to be stopped.
    let child = p
        .supervisor()
        .args(["start"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    let deadline = std::time::Instant::now() + fault::GUARD;
    let events = || {
        fault::run_dirs(&p)
            .first()
            .and_then(|dir| std::fs::read_to_string(dir.join("events.jsonl")).ok())
            .unwrap_or_default()
    };
    let step_2_started = |text: String| {
        text.lines()
            .any(|l| l.contains(r#""type":"step_started""#) && l.contains(r#""step_id":2,"#))
    };
    // Started, and its command spawned: a stop that lands between the event and the spawn (a
    // loaded machine) leaves the step no process to be stopped.
    while !step_2_started(events()) || step_process_states(&p).is_empty() {
        assert!(std::time::Instant::now() < deadline, "step 2 never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    fault::signal(child.id(), "TSTP");
    // Whatever fails below, the supervisor is not left stopped.
    let _resume = ResumeOnDrop(child.id());
    // Stopped: the supervisor, and with it the step's processes.
    let stopped_by = std::time::Instant::now() + fault::GUARD;
    loop {
        let states = step_process_states(&p);
        // A shell caught between vfork and exec (dash runs simple commands with vfork) waits in
        // 'D' for its child, which is itself stopped ('T'): it cannot run either.
        let held = |s: &char| matches!(s, 'T' | 't' | 'D');
        if states.contains(&'T') && states.iter().all(held) {
            break;
        }
        assert!(
            std::time::Instant::now() < stopped_by,
            "the step's processes were not stopped: {states:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_secs(6));
    fault::signal(child.id(), "CONT");
    let out = fault::wait_guarded(child);
    p.assert_nothing_survives();
    assert_exit(&out, 0);
    let record = p.record_for("pause.test.toml");
    assert_eq!(record.steps[0].status, StepStatus::Ok, "{record:?}");
    assert_eq!(record.steps[1].status, StepStatus::Ok, "{record:?}");
    let transcript =
        std::fs::read_to_string(record.run_dir().join("transcripts/agent.log")).unwrap_or_default();
    assert!(
        transcript.contains("second"),
        "the output is kept: {transcript}"
    );
}

#[test]
fn what_a_background_supervisor_starts_hears_every_stop_signal() {
    // A script's `supervisor start &` or `nohup supervisor start` starts it with SIGINT and SIGQUIT
    // (or SIGHUP) ignored, and an ignored signal stays ignored across exec. A server and a step
    // must still get SIGINT, SIGQUIT, SIGHUP, SIGTERM and SIGALRM at their default.
    let p = Project::new();
    let mask = "grep SigIgn /proc/$$/status";
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"shell\"\n\n\
             [commands.server]\nkind = \"long_lived\"\ncmd = \"{mask}; sleep 600\"\n\
             readiness = {{ log = \"SigIgn\" }}\n"
        ),
    );
    p.write(
        "bg.test.toml",
        &format!("[[steps]]\ninstruction = \"`{mask}`\"\n"),
    );
    let mut command = p.supervisor();
    command.arg("start");
    // SAFETY: signal(2) is async-signal-safe; this is what a shell and nohup do before exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, || {
            for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGALRM] {
                libc::signal(signal, libc::SIG_IGN);
            }
            Ok(())
        });
    }
    let out = command.output().expect("run supervisor");
    p.assert_nothing_survives();
    assert_exit(&out, 0);
    let record = p.record_for("bg.test.toml");
    let run_dir = record.run_dir();
    let heard = [
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGHUP,
        libc::SIGTERM,
        libc::SIGALRM,
    ]
    .iter()
    .fold(0u64, |bits, s| bits | 1 << (s - 1));
    for (who, log) in [
        ("the step", "transcripts/agent.log"),
        ("the server", "logs/server.log"),
    ] {
        let text = std::fs::read_to_string(run_dir.join(log)).unwrap_or_default();
        let line = text
            .lines()
            .find_map(|l| l.split("SigIgn:").nth(1))
            .unwrap_or_else(|| panic!("{who} printed its mask in {log}: {text}"));
        let ignored = u64::from_str_radix(line.trim(), 16).expect("a hex mask");
        assert_eq!(ignored & heard, 0, "{who} ignores: {line}");
    }
}

#[test]
fn ctrl_z_stops_a_setsid_child_of_the_step_too() {
    // The step starts a ticker in a session of its own (`setsid`): outside every group the
    // supervisor registered, still below it (child subreaper). Ctrl+Z stops it with the rest.
    let p = Project::new();
    let ticks = p.root().join("ticks");
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "escape.test.toml",
        &format!(
            "[[steps]]\ninstruction = \"`setsid sh -c 'while :; do echo t >> {}; sleep 0.05; done' & sleep 4; echo done`\"\ntimeout_secs = 60\n",
            ticks.display()
        ),
    );
    let child = p
        .supervisor()
        .args(["start"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    let count = || {
        std::fs::read_to_string(&ticks)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let deadline = std::time::Instant::now() + fault::GUARD;
    while count() < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "the ticker never ticked"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    fault::signal(child.id(), "TSTP");
    let _resume = ResumeOnDrop(child.id());
    // The supervisor stops itself last, after its children.
    let state = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit(')').next()?.trim_start().chars().next())
    };
    while state(child.id()) != Some('T') {
        assert!(
            std::time::Instant::now() < deadline,
            "the supervisor never stopped"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let before = count();
    std::thread::sleep(Duration::from_secs(2));
    let after = count();
    assert!(
        after <= before + 1,
        "the setsid child ran on while the supervisor was stopped: {before} -> {after} ticks"
    );
    fault::signal(child.id(), "CONT");
    let out = fault::wait_guarded(child);
    p.assert_nothing_survives();
    assert_exit(&out, 0);
    assert!(count() > after, "it ran again after fg");
}

/// SIGINT while a step replays (its recorded console command is running again, without the
/// agent): the replay stops at once, the step and the run say `interrupted`, every report is
/// written, and nothing the replay started survives.
#[test]
fn sigint_while_a_step_replays_stops_the_replay_and_leaves_every_record() {
    let p = Project::with_directive_agent("");
    p.write(
        "slow.test.toml",
        "name = \"Slow\"\n[[steps]]\ninstruction = '''\n\
         mcp exec_command {\"cmd\": \"sleep 3; echo slept\", \"yield_time_ms\": 20000}\n\
         expect slept\n'''\n",
    );
    // 1. The agent passes it (three seconds), and it is recorded.
    let out = p.start();
    assert_exit(&out, 0);
    assert!(p.record_for("slow.test.toml").steps[0].recorded);
    // 2. The replay runs the same `sleep 3`: interrupted mid-way.
    std::fs::remove_dir_all(p.root().join(".bugatti/runs")).expect("old runs");
    let mut child = p
        .supervisor()
        .args(["start"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    // The replay started its step (no agent is involved: no agent message to wait for).
    let runs = p.root().join(".bugatti/runs");
    let started = || {
        std::fs::read_dir(&runs)
            .into_iter()
            .flatten()
            .flatten()
            .any(|d| {
                std::fs::read_to_string(d.path().join("events.jsonl"))
                    .is_ok_and(|e| e.contains("\"step_started\""))
            })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !started() {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "ended before its step"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "the step never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Mid-way: the replayed command itself is running (not merely its step announced).
    let replaying = || {
        fault::project_processes(&p).into_iter().any(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("sleep 3"))
        })
    };
    while !replaying() {
        assert!(
            std::time::Instant::now() < deadline,
            "the replayed command never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    fault::signal(child.id(), "INT");
    let out = child.wait_with_output().expect("wait");
    p.assert_nothing_survives();
    assert_exit(&out, 130);
    let record = p.record_for("slow.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Interrupted), "{record:?}");
    assert_eq!(
        record.steps[0].status,
        StepStatus::Interrupted,
        "{record:?}"
    );
    let run_dir = record.run_dir();
    let report = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(report.contains("INTERRUPTED"), "{report}");
    assert!(p.suite_dir().join("junit.xml").exists());
    // The recording is untouched: the next run replays it.
    let out = p.start();
    assert_exit(&out, 0);
}
