//! What a SIGKILLed supervisor's runs leave besides processes: their workspaces. `doctor` reports
//! the leftovers of dead runs (the dead supervisor's ledger and each workspace still on disk); the
//! next `start` removes those workspaces and says so; `doctor` then finds nothing.

use crate::common::assert_exit;
use crate::common::fault;
use crate::common::records::RunRecord;

use crate::common::{stderr, stdout, Project};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The workspace run.json records, once the session has made it.
fn workspace_of(run_dir: &std::path::Path) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ws = std::fs::read(run_dir.join("run.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<RunRecord>(&b).ok())
            .and_then(|r| r.workspace.map(PathBuf::from));
        if let Some(ws) = ws {
            return ws;
        }
        assert!(Instant::now() < deadline, "no workspace in run.json");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn doctor_reports_a_dead_runs_workspace_and_the_next_start_removes_it() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "slow.test.toml",
        "[[steps]]\ninstruction = \"`sleep 120`\"\n",
    );
    p.write("quick.test.toml", "[[steps]]\ninstruction = \"`true`\"\n");
    let mut child = p
        .supervisor()
        .args(["start", "slow.test.toml"])
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
    let workspace = workspace_of(&runs[0]);
    child.kill().expect("SIGKILL the supervisor");
    child.wait().expect("reap the supervisor");
    assert!(workspace.is_dir(), "the dead run's workspace is left");

    let doctor = p.supervisor().arg("doctor").output().expect("doctor");
    let said = stdout(&doctor);
    assert_eq!(
        doctor.status.code(),
        Some(0),
        "leftovers are a warning: {said}"
    );
    assert!(
        said.contains(&format!(
            "warn dead run {dead_run} (slow.test.toml) left its workspace {}",
            workspace.display()
        )),
        "{said}"
    );
    assert!(said.contains("warn dead supervisor (pid "), "{said}");
    assert!(said.contains("still running: "), "the step's shell: {said}");

    let out = p.run(&["start", "quick.test.toml"]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains(&format!(
            "removed the workspace {} of dead run {dead_run} (slow.test.toml)",
            workspace.display()
        )),
        "{}",
        stderr(&out)
    );
    assert!(!workspace.exists(), "the dead run's workspace is removed");

    let doctor = p.supervisor().arg("doctor").output().expect("doctor");
    assert!(
        stdout(&doctor).contains("ok   no leftovers of dead runs"),
        "{}",
        stdout(&doctor)
    );
}
