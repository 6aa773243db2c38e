//! Hostile agents, end to end through the binary: an agent SIGKILLed mid-step, and a
//! `claude-code` agent (a fake `claude` executable) writing truncated and invalid stream-json.

use crate::common::assert_exit;
use crate::common::fault;
use crate::common::records::*;

use crate::common::Project;
use std::process::Stdio;

#[test]
fn an_agent_sigkilled_mid_step_fails_the_session_with_error_and_exit_3() {
    let p = Project::new();
    p.write("bugatti.config.toml", &fault::agent_and_server_config());
    p.write(
        "victim.test.toml",
        "name = \"Victim\"\n[[steps]]\ninstruction = \"sleep 120\"\n[[steps]]\ninstruction = \"say never\"\n",
    );
    let mut child = p
        .supervisor()
        .arg("start")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    fault::wait_for_steps(&p, 1, &mut child);
    let project = fault::project_processes(&p);
    let agents: Vec<i32> = fault::processes_running("directive_agent.py")
        .into_iter()
        .filter(|pid| project.contains(pid))
        .collect();
    assert_eq!(agents.len(), 1, "one agent: {agents:?}");
    fault::signal(agents[0] as u32, "KILL");

    let out = fault::wait_guarded(child);
    p.assert_nothing_survives();
    assert_exit(&out, 3);
    let record = p.record_for("victim.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Error), "{record:?}");
    assert_eq!(record.steps[0].status, StepStatus::Error);
    assert_eq!(record.steps[1].status, StepStatus::NotRun);
    let message = record.steps[0].message.as_deref().unwrap_or_default();
    assert!(
        message.contains("exited during the step")
            && (message.contains("SIGKILL") || message.contains("signal: 9")),
        "the message says the agent died, and of what: {message}"
    );
    let run_dir = record.run_dir();
    let report = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(report.contains("exited during the step"), "{report}");
    let server = record.command("server");
    assert_ne!(server.teardown, Some(TeardownState::Leaked), "{server:?}");
}

fn garbage_claude_project(mode: &str) -> (Project, std::process::Output) {
    garbage_claude_project_with(mode, 60, "Check something.")
}

fn garbage_claude_project_with(
    mode: &str,
    step_timeout_secs: u64,
    first_instruction: &str,
) -> (Project, std::process::Output) {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!("[provider]\nname = \"claude-code\"\nstep_timeout_secs = {step_timeout_secs}\n"),
    );
    p.write(
        "garbage.test.toml",
        &format!(
            "name = \"Garbage\"\n[[steps]]\ninstruction = \"{first_instruction}\"\n[[steps]]\ninstruction = \"And again.\"\n"
        ),
    );
    let child = p
        .supervisor()
        .arg("start")
        .env(
            "BUGATTI_CLAUDE_BIN",
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/support/fault/garbage_claude.py"
            ),
        )
        .env("FAKE_CLAUDE_MODE", mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    let out = fault::wait_guarded(child);
    p.assert_nothing_survives();
    (p, out)
}

#[test]
fn invalid_and_truncated_stream_json_lines_are_skipped_and_kept_in_the_transcript() {
    let (p, out) = garbage_claude_project("recover");
    assert_exit(&out, 0);
    let record = p.record_for("garbage.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Passed), "{record:?}");
    for step in &record.steps {
        assert_eq!(step.status, StepStatus::Ok, "{step:?}");
    }
    let run_dir = record.run_dir();
    let log = std::fs::read_to_string(run_dir.join("transcripts/agent.log")).expect("agent.log");
    assert!(log.contains("[non-json] this is not json"), "{log}");
    assert!(log.contains("[non-json] [1, 2"), "{log}");
}

#[test]
fn a_stream_ending_in_a_truncated_line_is_an_error_not_a_hang() {
    let (p, out) = garbage_claude_project("truncate");
    assert_exit(&out, 3);
    let record = p.record_for("garbage.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Error), "{record:?}");
    // Dead twice (the restart included): the agent crashed, not the app.
    assert_eq!(record.steps[0].status, StepStatus::AgentError);
    assert_eq!(
        record.steps[0].agent_fault.as_ref().map(|f| f.kind),
        Some(FaultKind::Crashed)
    );
    assert_eq!(record.steps[1].status, StepStatus::NotRun);
    let message = record.steps[0].message.as_deref().unwrap_or_default();
    assert!(message.contains("exited during the step"), "{message}");
}

/// An instruction far larger than a pipe's buffer (64 KiB), so that its write blocks on an agent
/// that does not read.
fn huge_instruction() -> String {
    "Check every line of this list. ".repeat(10_000)
}

#[test]
fn a_claude_that_stops_reading_cannot_hold_a_big_step_past_its_timeout() {
    let (p, out) = garbage_claude_project_with("deaf", 2, &huge_instruction());
    assert_exit(&out, 1);
    let record = p.record_for("garbage.test.toml");
    assert_eq!(record.steps[0].status, StepStatus::Timeout, "{record:?}");
    let message = record.steps[0].message.as_deref().unwrap_or_default();
    assert!(
        message.contains("did not read the step message"),
        "{message}"
    );
    assert_eq!(record.steps[1].status, StepStatus::NotRun);
}

#[test]
fn a_command_agent_that_stops_reading_cannot_hold_a_big_step_past_its_timeout() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"command\"\ncmd = \"python3 agents/deaf.py\"\nstep_timeout_secs = 2\n",
    );
    // Answers the bootstrap, then never reads again.
    p.write(
        "agents/deaf.py",
        "import sys, time\nsys.stdin.readline()\nprint('RESULT OK', flush=True)\ntime.sleep(600)\n",
    );
    p.write(
        "big.test.toml",
        &format!("[[steps]]\ninstruction = \"{}\"\n", huge_instruction()),
    );
    let child = p
        .supervisor()
        .arg("start")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    let out = fault::wait_guarded(child);
    p.assert_nothing_survives();
    assert_exit(&out, 1);
    let record = p.record_for("big.test.toml");
    assert_eq!(record.steps[0].status, StepStatus::Timeout, "{record:?}");
    let message = record.steps[0].message.as_deref().unwrap_or_default();
    assert!(message.contains("timed out after 2s"), "{message}");
}
