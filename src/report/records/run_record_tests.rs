//! Unit tests of run.json's record: events applied in order, checkpoints.

use super::*;
use crate::model::outcome::TeardownState;
use crate::report::records::events::{EventClock, SetupState};

pub(crate) fn plan() -> RunPlan {
    RunPlan {
        identity: RunIdentity {
            run_id: "run-1".into(),
            session_id: "sess-1".into(),
            suite_id: "suite-1".into(),
            test_file: "checkout.test.toml".into(),
            test_name: "Checkout".into(),
            quarantined: false,
            project_root: "/p".into(),
            provider: "shell".into(),
            run_dir: "/p/.bugatti/runs/run-1".into(),
            attempt: 1,
            repeat: 1,
            max_attempts: 1,
            retry_wait_ms: 0,
            started_at: Utc::now(),
            traceparent: None,
        },
        skipped_commands: vec!["seed".into()],
        steps: (1..=3)
            .map(|i| PlanEntry {
                step_id: StepId::new(i),
                provenance: Provenance {
                    source_file: "checkout.test.toml".into(),
                    source_index: (i - 1) as usize,
                    include_chain: vec![],
                },
                instruction: format!("do thing {i}"),
                timeout_secs: Some(300),
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
        effective_config: vec![ConfigRow {
            key: "provider.name".into(),
            value: "shell".into(),
            source: "project".into(),
        }],
    }
}

#[test]
fn apply_builds_steps_commands_and_outcome() {
    let clock = EventClock::start();
    let mut r = RunRecord::from_plan(&plan());
    assert!(r.steps.iter().all(|s| s.status == StepStatus::NotRun));
    assert_eq!(r.commands[1].status, CommandStatus::Skipped);
    for kind in [
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
        EventKind::StepStarted {
            step_id: StepId::new(1),
            instruction: "do thing 1".into(),
            instruction_sent: None,
            provenance: plan().steps[0].provenance.clone(),
        },
        EventKind::AgentLog {
            step_id: StepId::new(1),
            message: "saw it".into(),
        },
        EventKind::StepFinished {
            step_id: StepId::new(1),
            status: StepStatus::Error,
            message: Some("no button".into()),
            duration_ms: 5,
            usage: None,
            replay: None,
        },
        EventKind::AgentLog {
            step_id: StepId::new(9),
            message: "stray".into(),
        },
        EventKind::CommandTornDown {
            name: "server".into(),
            teardown: TeardownState::Killed,
            log_truncated_bytes: None,
        },
        EventKind::RunFinished {
            outcome: RunOutcome::Failed,
            message: None,
        },
    ] {
        r.apply(&clock.event(kind));
    }
    assert_eq!(r.outcome, Some(RunOutcome::Failed));
    assert_eq!(r.steps[0].logs, vec!["saw it".to_string()]);
    assert_eq!(r.steps[1].status, StepStatus::NotRun);
    assert_eq!(r.commands[0].restarts.len(), 1);
    assert_eq!(r.commands[0].teardown, Some(TeardownState::Killed));
    assert_eq!(r.failure_message().as_deref(), Some("step 1: no button"));
    assert_eq!(r.anomalies.len(), 1);
    assert!(r.finished_at.is_some() && r.duration_ms.is_some());
}

#[test]
fn checkpoint_events_become_one_record_per_save_or_restore() {
    let clock = EventClock::start();
    let mut r = RunRecord::from_plan(&plan());
    let event = |action, step_id, state| EventKind::Checkpoint {
        name: "seeded".into(),
        action,
        step_id,
        path: "/p/.bugatti/checkpoints/checkout/seeded".into(),
        log: "logs/checkpoint.log".into(),
        state,
    };
    for kind in [
        event(CheckpointAction::Restore, None, CheckpointState::Started),
        event(
            CheckpointAction::Restore,
            None,
            CheckpointState::Done { duration_ms: 7 },
        ),
        event(
            CheckpointAction::Save,
            Some(StepId::new(2)),
            CheckpointState::Started,
        ),
        event(
            CheckpointAction::Save,
            Some(StepId::new(2)),
            CheckpointState::Failed {
                reason: "exit code 4".into(),
                exit_code: Some(4),
                duration_ms: 9,
            },
        ),
    ] {
        let ev = clock.event(kind);
        let json = serde_json::to_string(&ev).expect("serialize");
        assert!(json.contains("\"type\":\"checkpoint\""), "{json}");
        let back: Event = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, ev);
        r.apply(&ev);
    }
    assert_eq!(r.checkpoints.len(), 2);
    let restore = &r.checkpoints[0];
    assert_eq!(
        (restore.action, restore.status, restore.exit_code),
        (CheckpointAction::Restore, CheckpointStatus::Done, Some(0))
    );
    let save = &r.checkpoints[1];
    assert_eq!(save.status, CheckpointStatus::Failed);
    assert_eq!(save.step_id, Some(StepId::new(2)));
    assert_eq!(save.exit_code, Some(4));
    assert_eq!(save.error.as_deref(), Some("exit code 4"));
    // A steps' status is untouched by checkpoints.
    assert!(r.steps.iter().all(|s| s.status == StepStatus::NotRun));
}
