//! Runs whose supervisor is gone (SIGKILL, OOM, a power cut): a reader of the process ledger and
//! the run directories, never a writer of either. A run is dead when its run.json has no outcome
//! and no live supervisor's ledger names its suite (a live supervisor keeps its ledger from before
//! its first run until it ends). What such a run leaves besides processes (which
//! [`super::ledger::reap_dead`] kills) is its workspace: `start` removes it, `doctor` reports it.

use crate::model::artifacts::{self, RunPaths};
use crate::model::ids::{RunId, SuiteId};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::ledger::{read_ledgers, start_time, supervisor_alive, LedgerFile};

/// A run that never finished and whose supervisor is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadRun {
    pub run_id: RunId,
    pub suite_id: SuiteId,
    pub test_file: String,
    /// Its workspace, when it is still on disk.
    pub workspace: Option<PathBuf>,
    /// The run was configured with `keep_workspace = "always"`: its workspace stays.
    pub keep: bool,
}

/// A ledger whose supervisor is gone (until the next `start` reaps it), and how many of its
/// process groups still have their leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLedger {
    pub suite_id: SuiteId,
    pub supervisor_pid: i32,
    pub path: PathBuf,
    pub groups_alive: Vec<String>,
}

/// The ledgers that could be read (an unreadable one is the next `start`'s to warn about).
fn ledgers(artifact_dir: &Path) -> Vec<(PathBuf, LedgerFile)> {
    read_ledgers(artifact_dir)
        .into_iter()
        .filter_map(|(path, read)| Some((path, read.ok()?)))
        .collect()
}

/// Ledgers of supervisors that are gone, with the groups whose leader still runs.
pub fn dead_ledgers(artifact_dir: &Path) -> Vec<DeadLedger> {
    ledgers(artifact_dir)
        .into_iter()
        .filter(|(_, file)| !supervisor_alive(file))
        .map(|(path, file)| DeadLedger {
            groups_alive: file
                .groups
                .iter()
                .filter(|g| g.leader_start.is_some() && start_time(g.leader) == g.leader_start)
                .map(|g| format!("{} (pid {})", g.label, g.leader))
                .collect(),
            suite_id: file.suite_id,
            supervisor_pid: file.supervisor_pid,
            path,
        })
        .collect()
}

/// Every dead run under `artifact_dir`.
pub fn find(artifact_dir: &Path) -> Vec<DeadRun> {
    let live: BTreeSet<SuiteId> = ledgers(artifact_dir)
        .into_iter()
        .filter(|(_, file)| supervisor_alive(file))
        .map(|(_, file)| file.suite_id)
        .collect();
    let Ok(entries) = std::fs::read_dir(artifacts::runs_dir(artifact_dir)) else {
        return Vec::new();
    };
    let mut dead: Vec<DeadRun> = entries
        .filter_map(|e| e.ok().map(|e| RunPaths::new(e.path())))
        // A run's report.md is written after its final run.json (by the reporter, or by the
        // recovery of a dead run): a run that has one is finished. One stat instead of reading
        // and parsing every run.json of the history at each `start`.
        .filter(|run| !run.report_md().exists())
        .filter_map(|run| {
            let value: serde_json::Value = std::fs::read(run.run_json())
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())?;
            let suite_id = SuiteId::new(value["suite_id"].as_str()?);
            if !value["outcome"].is_null() || live.contains(&suite_id) {
                return None;
            }
            let workspace = value["workspace"]
                .as_str()
                .map(PathBuf::from)
                .filter(|ws| artifacts::is_workspace(ws) && ws.is_dir());
            let keep = value["effective_config"].as_array().is_some_and(|rows| {
                rows.iter().any(|row| {
                    row["key"] == "supervisor.keep_workspace" && row["value"] == "always"
                })
            });
            Some(DeadRun {
                keep,
                run_id: RunId::new(value["run_id"].as_str().unwrap_or_default()),
                suite_id,
                test_file: value["test_file"].as_str().unwrap_or_default().to_string(),
                workspace,
            })
        })
        .collect();
    dead.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    dead
}

/// Removes the workspaces dead runs left (unless configured `keep_workspace = "always"`); one
/// line per workspace for the console.
pub fn remove_workspaces(artifact_dir: &Path) -> Vec<String> {
    find(artifact_dir)
        .into_iter()
        .filter(|run| !run.keep)
        .filter_map(|run| {
            let ws = run.workspace?;
            Some(match std::fs::remove_dir_all(&ws) {
                Ok(()) => format!(
                    "removed the workspace {} of dead run {} ({})",
                    ws.display(),
                    run.run_id,
                    run.test_file
                ),
                Err(e) => format!(
                    "cannot remove the workspace {} of dead run {}: {e}",
                    ws.display(),
                    run.run_id
                ),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::ledger::ledger_dir;

    fn run(artifact: &Path, run_id: &str, suite_id: &str, outcome: Option<&str>, ws: &Path) {
        let dir = artifact.join("runs").join(run_id);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let keep = if run_id == "r5" {
            "always"
        } else {
            "on-failure"
        };
        let json = serde_json::json!({
            "run_id": run_id, "suite_id": suite_id, "test_file": "a.test.toml",
            "outcome": outcome, "workspace": ws,
            "effective_config": [{"key": "supervisor.keep_workspace", "value": keep, "source": "project"}],
        });
        std::fs::write(dir.join("run.json"), json.to_string()).expect("run.json");
    }

    #[test]
    fn an_unfinished_run_without_a_live_supervisor_is_dead_and_only_its_workspace_goes() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let artifact = tmp.path().join(".bugatti");
        let ws = |name: &str| {
            let p = tmp.path().join(name);
            std::fs::create_dir_all(&p).expect("ws");
            p
        };
        let (dead_ws, done_ws, live_ws, odd_ws, kept_ws) = (
            ws("bugatti-ws-dead"),
            ws("bugatti-ws-done"),
            ws("bugatti-ws-live"),
            ws("not-a-workspace"),
            ws("bugatti-ws-kept"),
        );
        run(&artifact, "r1", "dead-suite", None, &dead_ws);
        run(&artifact, "r2", "dead-suite", Some("passed"), &done_ws);
        run(&artifact, "r3", "live-suite", None, &live_ws);
        run(&artifact, "r4", "dead-suite", None, &odd_ws);
        run(&artifact, "r5", "dead-suite", None, &kept_ws);
        // This test process stands in for a live supervisor.
        let own = std::process::id() as i32;
        let ledger = LedgerFile {
            suite_id: "live-suite".into(),
            supervisor_pid: own,
            supervisor_start: start_time(own),
            groups: Vec::new(),
            runs: Vec::new(),
        };
        std::fs::create_dir_all(ledger_dir(&artifact)).expect("ledger dir");
        std::fs::write(
            ledger_dir(&artifact).join("live-suite.json"),
            serde_json::to_vec(&ledger).expect("json"),
        )
        .expect("ledger");
        let dead = find(&artifact);
        let ids: Vec<&str> = dead.iter().map(|d| d.run_id.as_str()).collect();
        assert_eq!(ids, vec!["r1", "r4", "r5"]);
        assert!(dead[2].keep);
        assert_eq!(dead[0].workspace.as_deref(), Some(dead_ws.as_path()));
        assert_eq!(dead[1].workspace, None, "not a workspace by its name");
        let removed = remove_workspaces(&artifact);
        assert_eq!(removed.len(), 1, "{removed:?}");
        assert!(!dead_ws.exists());
        assert!(done_ws.exists() && live_ws.exists() && odd_ws.exists() && kept_ws.exists());
        assert!(dead_ledgers(&artifact).is_empty());
    }
}
