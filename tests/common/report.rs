//! Shared fixtures of the report tests: plans and event sequences as a session would produce them.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use bugatti::model::ids::{RunId, SessionId, StepId};
use bugatti::model::outcome::{RunOutcome, StepStatus, TeardownState};
use bugatti::report::records::events::{
    Event, EventClock, EventKind, Provenance, SetupState, Usage,
};
use bugatti::report::records::run_record::{
    ConfigRow, PlanEntry, PlannedCommand, RunIdentity, RunPlan,
};

pub const SECRET: &str = "sk-live-7f3a9c";

pub fn plan(artifact_dir: &Path, run_id: &str, test_file: &str, attempt: u32) -> RunPlan {
    RunPlan {
        identity: RunIdentity {
            run_id: RunId::new(run_id),
            session_id: SessionId::new(format!("session-{run_id}")),
            suite_id: "suite-1".into(),
            test_file: test_file.to_string(),
            test_name: format!("Test {test_file}"),
            quarantined: false,
            project_root: artifact_dir
                .parent()
                .unwrap_or(artifact_dir)
                .display()
                .to_string(),
            provider: "shell".into(),
            run_dir: artifact_dir.join("runs").join(run_id).display().to_string(),
            attempt,
            repeat: 1,
            max_attempts: 1,
            retry_wait_ms: 0,
            started_at: chrono::Utc::now(),
            traceparent: None,
        },
        skipped_commands: vec!["seed".into()],
        steps: (1..=3)
            .map(|i| PlanEntry {
                step_id: StepId::new(i),
                provenance: Provenance {
                    source_file: if i == 2 {
                        "shared/login.test.toml".into()
                    } else {
                        test_file.to_string()
                    },
                    source_index: i as usize,
                    include_chain: if i == 2 {
                        vec![test_file.to_string()]
                    } else {
                        vec![]
                    },
                },
                instruction: format!("Step {i}: check the page with token {SECRET}\nsecond line"),
                timeout_secs: None,
            })
            .collect(),
        commands: vec![
            PlannedCommand {
                name: "server".into(),
                kind: "long_lived".into(),
                log: "logs/server.log".into(),
            },
            PlannedCommand {
                name: "seed".into(),
                kind: "short_lived".into(),
                log: "logs/seed.log".into(),
            },
        ],
        suite_commands: Vec::new(),
        effective_config: vec![
            ConfigRow {
                key: "provider.name".into(),
                value: "shell".into(),
                source: "project".into(),
            },
            ConfigRow {
                key: "secrets.API_TOKEN".into(),
                value: SECRET.into(),
                source: "env".into(),
            },
        ],
    }
}

/// A run whose step 1 passes, step 2 warns (with logs and evidence), step 3 ends as `last`.
pub fn events(clock: &EventClock, last: StepStatus, outcome: RunOutcome) -> Vec<Event> {
    let prov = |i: u32| Provenance {
        source_file: "t.test.toml".into(),
        source_index: (i - 1) as usize,
        include_chain: vec![],
    };
    let mut kinds = vec![
        EventKind::SetupStatus {
            command: "seed".into(),
            state: SetupState::Skipped,
        },
        EventKind::SetupStatus {
            command: "server".into(),
            state: SetupState::Started,
        },
        EventKind::SetupStatus {
            command: "server".into(),
            state: SetupState::Restarted {
                attempt: 1,
                exit_status: "exit status 1".into(),
            },
        },
        EventKind::SetupStatus {
            command: "server".into(),
            state: SetupState::Ready {
                probe: "http://127.0.0.1:8000/health".into(),
            },
        },
        EventKind::StepStarted {
            step_id: StepId::new(1),
            instruction: "Step 1".into(),
            instruction_sent: None,
            provenance: prov(1),
        },
        EventKind::StepFinished {
            step_id: StepId::new(1),
            status: StepStatus::Ok,
            message: None,
            duration_ms: 10,
            usage: None,
            replay: None,
        },
        EventKind::StepStarted {
            step_id: StepId::new(2),
            instruction: "Step 2".into(),
            instruction_sent: None,
            provenance: prov(2),
        },
        EventKind::AgentLog {
            step_id: StepId::new(2),
            message: format!("cart total is 0, token {SECRET}"),
        },
        EventKind::Evidence {
            step_id: StepId::new(2),
            kind: "screenshot".into(),
            path: "screenshots/cart.png".into(),
            problem: None,
        },
        EventKind::StepFinished {
            step_id: StepId::new(2),
            status: StepStatus::Warn,
            message: Some("cart slow to load".into()),
            duration_ms: 20,
            usage: Some(Usage {
                session_id: Some("claude-abc".into()),
                turns: Some(4),
                duration_ms: Some(19),
                cost_usd: Some(0.0123),
                total_cost_usd: Some(0.0123),
                ..Default::default()
            }),
            replay: None,
        },
    ];
    if last != StepStatus::NotRun {
        kinds.push(EventKind::StepStarted {
            step_id: StepId::new(3),
            instruction: "Step 3".into(),
            instruction_sent: None,
            provenance: prov(3),
        });
        kinds.push(EventKind::AgentLog {
            step_id: StepId::new(3),
            message: "button missing".into(),
        });
        kinds.push(EventKind::StepFinished {
            step_id: StepId::new(3),
            status: last,
            message: if last == StepStatus::Ok {
                None
            } else {
                Some(format!("no checkout button ({SECRET})"))
            },
            duration_ms: 30,
            usage: None,
            replay: None,
        });
    }
    kinds.push(EventKind::CommandTornDown {
        name: "server".into(),
        teardown: TeardownState::Clean,
        log_truncated_bytes: None,
    });
    kinds.push(EventKind::RunFinished {
        outcome,
        message: None,
    });
    kinds.into_iter().map(|k| clock.event(k)).collect()
}

/// Every file under `dir`, recursively.
pub fn all_files(dir: &Path) -> Vec<std::path::PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .collect()
}

/// Asserts that no file under `dir` holds `needle`, byte by byte.
pub fn assert_absent_everywhere(dir: &Path, needle: &str) -> usize {
    let files = all_files(dir);
    for f in &files {
        let bytes = std::fs::read(f).expect("read artifact");
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
            "{} holds the secret",
            f.display()
        );
    }
    files.len()
}

/// A console sink tests can read back.
#[derive(Clone, Default)]
pub struct SharedBuf(pub Arc<Mutex<Vec<u8>>>);

impl SharedBuf {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("lock")).into_owned()
    }
}

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
