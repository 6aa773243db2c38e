//! Properties of `RunRecord::apply` over arbitrary event sequences: it never panics, never loses
//! or invents planned steps, and a step keeps `not_run` unless a `step_finished` names it.

use crate::common::report::plan;
use bugatti::model::ids::StepId;
use bugatti::model::outcome::{RunOutcome, StepStatus, TeardownState};
use bugatti::report::records::events::{EventClock, EventKind, Provenance, SetupState};
use bugatti::report::records::run_record::RunRecord;
use proptest::prelude::*;

fn status() -> impl Strategy<Value = StepStatus> {
    prop_oneof![
        Just(StepStatus::Ok),
        Just(StepStatus::Warn),
        Just(StepStatus::Error),
        Just(StepStatus::ProtocolError),
        Just(StepStatus::Timeout),
        Just(StepStatus::Skipped),
        Just(StepStatus::Interrupted),
    ]
}

fn outcome() -> impl Strategy<Value = RunOutcome> {
    prop_oneof![
        Just(RunOutcome::Passed),
        Just(RunOutcome::Warned),
        Just(RunOutcome::Failed),
        Just(RunOutcome::Error),
        Just(RunOutcome::Interrupted),
    ]
}

fn kind() -> impl Strategy<Value = EventKind> {
    // The plan has steps 1..=3: 0, 4, 5 are strangers.
    let step = (0u32..6).prop_map(StepId::new);
    let cmd = prop_oneof![Just("server".to_string()), Just("other".to_string())];
    prop_oneof![
        (step.clone(), ".{0,20}")
            .prop_map(|(step_id, message)| EventKind::AgentLog { step_id, message }),
        step.clone().prop_map(|step_id| EventKind::StepStarted {
            step_id,
            instruction: "x".into(),
            instruction_sent: None,
            provenance: Provenance {
                source_file: "f".into(),
                source_index: 0,
                include_chain: vec![]
            },
        }),
        (step.clone(), status(), 0u64..10_000).prop_map(|(step_id, status, duration_ms)| {
            EventKind::StepFinished {
                step_id,
                status,
                message: None,
                duration_ms,
                usage: None,
                replay: None,
            }
        }),
        (step, "[a-z/.]{1,12}").prop_map(|(step_id, path)| EventKind::Evidence {
            step_id,
            kind: "log".into(),
            path,
            problem: None,
        }),
        (cmd.clone(), 0u32..4).prop_map(|(command, attempt)| EventKind::SetupStatus {
            command,
            state: SetupState::Restarted {
                attempt,
                exit_status: "exit 1".into()
            },
        }),
        cmd.clone().prop_map(|command| EventKind::SetupStatus {
            command,
            state: SetupState::Started
        }),
        cmd.prop_map(|name| EventKind::CommandTornDown {
            name,
            teardown: TeardownState::Killed,
            log_truncated_bytes: None,
        }),
        outcome().prop_map(|outcome| EventKind::RunFinished {
            outcome,
            message: None
        }),
    ]
}

proptest! {
    #[test]
    fn apply_keeps_the_plan_and_only_finished_or_cut_off_steps_change_status(kinds in prop::collection::vec(kind(), 0..40)) {
        let dir = std::path::Path::new("/tmp/never-written/.bugatti");
        let mut record = RunRecord::from_plan(&plan(dir, "r", "t.test.toml", 1));
        let clock = EventClock::start();
        for k in &kinds {
            record.apply(&clock.event(k.clone()));
        }
        prop_assert_eq!(record.steps.len(), 3);
        for step in &record.steps {
            let finished = kinds.iter().any(|k| matches!(k, EventKind::StepFinished { step_id, .. } if *step_id == step.step_id));
            // A step started and never finished when the run ends was cut off: `interrupted`.
            let first_start = kinds.iter().position(|k| matches!(k, EventKind::StepStarted { step_id, .. } if *step_id == step.step_id));
            let cut_off = first_start.is_some_and(|at| kinds[at..].iter().any(|k| matches!(k, EventKind::RunFinished { .. })));
            prop_assert_eq!(step.status != StepStatus::NotRun, finished || cut_off);
            if cut_off && !finished {
                prop_assert_eq!(step.status, StepStatus::Interrupted);
            }
        }
        let ended = kinds.iter().any(|k| matches!(k, EventKind::RunFinished { .. }));
        prop_assert_eq!(record.outcome.is_some(), ended);
        let strangers = kinds.iter().filter(|k| match k {
            EventKind::AgentLog { step_id, .. } | EventKind::StepStarted { step_id, .. }
            | EventKind::StepFinished { step_id, .. } | EventKind::Evidence { step_id, .. } => !(1..=3).contains(&step_id.get()),
            _ => false,
        }).count();
        prop_assert_eq!(record.anomalies.len(), strangers);
        // Serializes and parses back whatever happened.
        let json = serde_json::to_string(&record).expect("json");
        let back: RunRecord = serde_json::from_str(&json).expect("parse");
        prop_assert_eq!(back, record);
    }
}
