//! Helpers shared by the fault-injection tests (tests/fault/): waiting for a run to reach a
//! step, sending a signal, reading a run's events.
#![allow(dead_code)]

use crate::common::Project;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

/// A fault hook of the supervisor (a `BUGATTI_FAULT_*` environment variable that makes an actor
/// panic on cue). The hooks are compiled in only with the `fault-injection` feature (never in a
/// release build).
#[derive(Debug, Clone, Copy)]
/// Each variant names the actor that panics.
pub enum Hook {
    /// The session actor panics as its test's first step starts.
    Session,
    /// A session's driver (the task running the steps) panics mid-step.
    Driver,
    /// The supervisor actor panics on hearing that the test's session is done.
    Supervisor,
    /// The reporter panics handling the test's step start.
    Reporter,
}

/// The environment variable that sets `hook`. Without the `fault-injection` feature the binary
/// has no hooks, so the test fails here and says how to run it, instead of passing with no fault
/// injected.
pub fn hook_env(hook: Hook) -> &'static str {
    #[cfg(feature = "fault-injection")]
    {
        match hook {
            Hook::Session => bugatti::actors::session::FAULT_PANIC_ENV,
            Hook::Driver => bugatti::actors::session::FAULT_DRIVER_PANIC_ENV,
            Hook::Supervisor => bugatti::actors::supervisor::FAULT_SUPERVISOR_PANIC_ENV,
            Hook::Reporter => bugatti::actors::reporter::FAULT_REPORTER_PANIC_ENV,
        }
    }
    #[cfg(not(feature = "fault-injection"))]
    panic!(
        "{hook:?} is a fault hook, compiled in only with the `fault-injection` feature: run the \
         tests as the README says, `cargo test --features fault-injection`"
    )
}

/// Generous: a guard against hangs on a loaded 2-core machine, not a timing assertion.
pub const GUARD: Duration = Duration::from_secs(60);

/// A config with the scripted `command` agent and one real HTTP server on an `auto` port.
pub fn agent_and_server_config() -> String {
    format!(
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
"#,
        agent = Project::directive_agent_cmd()
    )
}

/// The run directories of the project, in no particular order.
pub fn run_dirs(p: &Project) -> Vec<PathBuf> {
    std::fs::read_dir(p.root().join(".bugatti/runs"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|path| path.is_dir())
        .collect()
}

/// The run's first step has started and, for an agent provider, the agent (started lazily, at
/// the first step that needs it) has been sent it: its bootstrap and the step are both in its
/// transcript.
fn step_in_hand(run_dir: &std::path::Path) -> bool {
    let Ok(events) = std::fs::read_to_string(run_dir.join("events.jsonl")) else {
        return false;
    };
    if !events.contains("\"step_started\"") {
        return false;
    }
    if events.contains("\"provider\":\"shell\"") {
        return true;
    }
    std::fs::read_to_string(run_dir.join("transcripts/agent.jsonl"))
        .is_ok_and(|t| t.matches("\"dir\":\"to_agent\"").count() >= 2)
}

/// Waits until `runs` runs have a step in hand; fails if the supervisor ends first.
pub fn wait_for_steps(p: &Project, runs: usize, child: &mut Child) -> Vec<PathBuf> {
    let deadline = Instant::now() + GUARD;
    loop {
        let started: Vec<PathBuf> = run_dirs(p)
            .into_iter()
            .filter(|dir| step_in_hand(dir))
            .collect();
        if started.len() >= runs {
            return started;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the supervisor ended early: {status}");
        }
        assert!(Instant::now() < deadline, "steps never started");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill -{signal} {pid}");
}

/// Waits for `child` to end, killing it (and failing) if it outlives the guard.
pub fn wait_guarded(mut child: Child) -> std::process::Output {
    let deadline = Instant::now() + GUARD;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the supervisor hung");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// Pids of live processes whose environment names this project.
pub fn project_processes(p: &Project) -> Vec<i32> {
    crate::common::processes_with_env_entry(&format!("BUGATTI_PROJECT_ROOT={}", p.root().display()))
}

/// Live processes whose `/proc/<pid>/cmdline` contains `needle`.
pub fn processes_running(needle: &str) -> Vec<i32> {
    let own = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != own)
        .filter(|pid| {
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                !s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            });
            alive
                && std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                    let text = String::from_utf8_lossy(&c).replace('\0', " ");
                    text.contains(needle)
                })
        })
        .collect()
}
