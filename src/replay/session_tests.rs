//! The stage on its own: a pass recorded through `after`/`record`, then replayed by `before`
//! in the next session (real shell commands, no console, no agent).

use super::*;
use crate::model::tool_call::ShellRun;

fn session(dir: &Path, mode: ReplayMode, audit: f64) -> ReplaySession {
    ReplaySession::open(ReplaySettings {
        mode,
        provider: "claude-code".parse().expect("a provider"),
        test: "t.test.toml".into(),
        path: store::recording_path(&dir.join("replays"), Path::new("t.test.toml")),
        pending_path: store::pending_path(&dir.join("replays"), Path::new("t.test.toml")),
        placeholders: Placeholders::new(Vec::new(), Vec::new()),
        ignore: &[],
        max_age_days: 30,
        audit: crate::model::replay::AuditShare::new(audit).expect("a share"),
        env: vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())],
        agent_cwd: dir.to_path_buf(),
    })
}

fn step() -> PlannedStep {
    PlannedStep {
        step_id: StepId::new(1),
        source_file: "t.test.toml".into(),
        source_index: 0,
        include_chain: Vec::new(),
        instruction: "check the value".into(),
        timeout_secs: None,
        timeout: crate::model::layers::Sourced::default_value(Duration::from_secs(300)),
        checkpoint: None,
        setup: false,
        skip: false,
        replay: true,
        source_span: 0..0,
    }
}

fn shell_call(command: &str, output: &str) -> ToolCall {
    ToolCall {
        at: std::time::Instant::now(),
        answered: None,
        tool: "Bash".into(),
        shell: Some(ShellRun {
            command: command.into(),
            exit_code: Some(0),
            output: output.into(),
            timeout_ms: None,
            cli_version: Some("2.1.197".into()),
            ..ShellRun::default()
        }),
        unreplayable: None,
        input: serde_json::Value::Null,
        answer: None,
    }
}

async fn before(replay: &mut ReplaySession, step: &PlannedStep) -> Before {
    let asked = StepAsked {
        step,
        id: StepId::new(1),
        instruction: "check the value",
        console: None,
        run_id: &RunId::new("session-unit-test"),
        step_timeout: Duration::from_secs(30),
    };
    match replay.before(&asked, std::future::pending::<()>()).await {
        Ok(before) => before,
        Err(()) => unreachable!("never stopped"),
    }
}

/// The agent passes the step with `calls`, is asked the facts question, answers `facts`.
async fn agent_passes(
    replay: &mut ReplaySession,
    calls: &[ToolCall],
    facts: FactsAnswer,
) -> StepReplay {
    let step = step();
    let Before::ToAgent(turn) = before(replay, &step).await else {
        panic!("a step without a recording goes to the agent");
    };
    let mut message = "the value is 41".to_string();
    let agent = AgentStep {
        status: StepStatus::Ok,
        judged: StepStatus::Ok,
        console_calls: &[],
        tool_calls: calls,
    };
    let After::AskFacts(pending) = replay.after(turn, agent, &mut message) else {
        panic!("a pass with a command is recorded once its facts are stated");
    };
    assert!(
        pending.question().contains("1. shell"),
        "{}",
        pending.question()
    );
    replay.record(pending, facts, Some(0.02))
}

/// The agent fails the step (it went to the agent) having run `calls`.
async fn agent_fails(replay: &mut ReplaySession, calls: &[ToolCall]) -> (StepReplay, String) {
    agent_ends(replay, calls, StepStatus::Error).await
}

/// The agent's turn of the step ends `status` (not a pass) having run `calls`.
async fn agent_ends(
    replay: &mut ReplaySession,
    calls: &[ToolCall],
    status: StepStatus,
) -> (StepReplay, String) {
    let Before::ToAgent(turn) = before(replay, &step()).await else {
        panic!("the step goes to the agent");
    };
    let mut message = "the value is wrong".to_string();
    let failed = AgentStep {
        status,
        judged: status,
        console_calls: &[],
        tool_calls: calls,
    };
    let After::Done(info) = replay.after(turn, failed, &mut message) else {
        panic!("a failed step is not recorded");
    };
    (info, message)
}

/// A project whose `value.txt` says 41, and the agent's pass of reading it (`cat`) in a first
/// session, with `facts` as its answer to the facts question.
async fn first_pass(facts: FactsAnswer) -> (tempfile::TempDir, StepReplay) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("value.txt"), "value=41\n").expect("write");
    let mut first = session(dir.path(), ReplayMode::Auto, 0.0);
    let info = agent_passes(&mut first, &[cat_value()], facts).await;
    (dir, info)
}

fn cat_value() -> ToolCall {
    shell_call("cat value.txt", "value=41\n")
}

#[tokio::test]
async fn a_recorded_pass_replays_in_the_next_session_and_says_why() {
    let (dir, info) = first_pass(FactsAnswer::Stated(vec!["1 contains \"value=41\"".into()])).await;
    assert!(info.recorded, "{info:?}");
    assert_eq!(info.facts, vec!["1 contains \"value=41\"".to_string()]);

    let mut next = session(dir.path(), ReplayMode::Auto, 0.0);
    let Before::Replayed(replayed) = before(&mut next, &step()).await else {
        panic!("an unchanged step replays");
    };
    assert!(
        replayed
            .message
            .starts_with("replayed: all 1 recorded actions ran again and matched; 1 fact held"),
        "{}",
        replayed.message
    );
    assert_eq!(replayed.info.mode, StepMode::Replayed);
    assert_eq!(replayed.info.cost_saved_usd, Some(0.02));
    // The agent, when it is next needed, is told what ran without it.
    let told = next.take_summary();
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0].instruction.as_deref(), Some("check the value"));
    assert_eq!(told[0].actions[0].what, "shell cat value.txt");
    assert_eq!(told[0].actions[0].output, "value=41");
    assert!(next.take_summary().is_empty(), "told once");
}

#[tokio::test]
async fn a_changed_output_goes_to_the_agent_which_is_told_what_differed() {
    let (dir, info) = first_pass(FactsAnswer::Stated(Vec::new())).await;
    assert!(info.recorded, "{info:?}");
    assert!(
        info.note
            .as_deref()
            .is_some_and(|n| n.contains("compare exactly")),
        "{info:?}"
    );

    std::fs::write(dir.path().join("value.txt"), "value=40\n").expect("write");
    let mut next = session(dir.path(), ReplayMode::Auto, 0.0);
    let Before::ToAgent(turn) = before(&mut next, &step()).await else {
        panic!("a changed output is never replayed");
    };
    assert!(
        matches!(turn.fallback, Some(Fallback::Drift(_))),
        "{:?}",
        turn.fallback.map(|f| f.to_string())
    );
    let told = next.take_summary();
    assert!(
        told[0]
            .actions
            .iter()
            .any(|a| a.output.contains("output differed")),
        "{told:?}"
    );
}

#[tokio::test]
async fn a_stated_fact_that_does_not_hold_on_what_the_agent_saw_is_not_recorded() {
    let (dir, info) = first_pass(FactsAnswer::Stated(vec!["1 contains \"value=42\"".into()])).await;
    assert!(!info.recorded, "{info:?}");
    let note = info.note.unwrap_or_default();
    assert!(
        note.contains("does not hold on the outputs it saw"),
        "{note}"
    );
    let mut next = session(dir.path(), ReplayMode::Auto, 0.0);
    assert!(matches!(
        before(&mut next, &step()).await,
        Before::ToAgent(_)
    ));
}

#[tokio::test]
async fn only_mode_without_a_recording_fails_the_step_and_asks_no_agent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut only = session(dir.path(), ReplayMode::Only, 0.0);
    let Before::NoAgent { message, info } = before(&mut only, &step()).await else {
        panic!("`only` never goes to the agent");
    };
    assert!(message.starts_with("no usable recording"), "{message}");
    assert_eq!(info.mode, StepMode::NotReplayed);
}

/// The recording of the step, as the file holds it.
fn recorded(dir: &Path) -> RecordedStep {
    let rec = store::load(
        &store::recording_path(&dir.join("replays"), Path::new("t.test.toml")),
        "t.test.toml",
    )
    .expect("loads")
    .expect("a recording");
    rec.steps[0].clone()
}

#[tokio::test]
async fn an_audit_the_agent_fails_keeps_the_recording_only_as_a_baseline() {
    let (dir, info) = first_pass(FactsAnswer::Stated(Vec::new())).await;
    assert!(info.recorded, "{info:?}");

    let mut audited = session(dir.path(), ReplayMode::Auto, 1.0);
    let (info, message) = agent_fails(&mut audited, &[cat_value()]).await;
    assert!(info.audited && info.audit_disagreed, "{info:?}");
    assert!(
        message.ends_with(
            "(audit: replay would have passed a failing step; the recording from before is never \
             replayed again: it is kept only as the baseline a new pass must match in strength)"
        ),
        "{message}"
    );
    assert!(recorded(dir.path()).failed.is_some(), "kept, marked failed");
    let mut next = session(dir.path(), ReplayMode::Auto, 0.0);
    let Before::ToAgent(turn) = before(&mut next, &step()).await else {
        panic!("a failed recording is never replayed again");
    };
    assert!(
        matches!(turn.fallback, Some(Fallback::Miss(Miss::Failed(_)))),
        "{:?}",
        turn.fallback.map(|f| f.to_string())
    );
}

#[tokio::test]
async fn a_step_the_agent_fails_under_record_is_never_replayed_again() {
    let (dir, _) = first_pass(FactsAnswer::Stated(vec!["1 contains \"value=41\"".into()])).await;
    let mut record = session(dir.path(), ReplayMode::Record, 0.0);
    let (info, _) = agent_fails(&mut record, &[cat_value()]).await;
    let note = info.note.unwrap_or_default();
    assert!(note.contains("never replayed again"), "{note}");
    let kept = recorded(dir.path());
    assert!(
        kept.failed
            .as_deref()
            .is_some_and(|w| w.contains("--replay record")),
        "{kept:?}"
    );
    let mut auto = session(dir.path(), ReplayMode::Auto, 0.0);
    assert!(
        matches!(before(&mut auto, &step()).await, Before::ToAgent(_)),
        "the next auto run does not replay it"
    );
    // A weaker pass is measured against it: pending, not in force.
    let hurried = shell_call("true", "");
    let info = agent_passes(&mut auto, &[hurried], FactsAnswer::Stated(Vec::new())).await;
    assert!(!info.recorded, "{info:?}");
    assert!(info.pending_review.is_some(), "{info:?}");
    // As strong a pass puts it in force again, unmarked.
    let mut again = session(dir.path(), ReplayMode::Auto, 0.0);
    let info = agent_passes(
        &mut again,
        &[cat_value()],
        FactsAnswer::Stated(vec!["1 contains \"value=41\"".into()]),
    )
    .await;
    assert!(info.recorded, "{info:?}");
    assert!(recorded(dir.path()).failed.is_none());
    assert!(!store::pending_path(&dir.path().join("replays"), Path::new("t.test.toml")).exists());
}

#[tokio::test]
async fn an_agent_fault_or_a_timeout_under_record_leaves_the_recording_in_force() {
    let (dir, _) = first_pass(FactsAnswer::Stated(Vec::new())).await;
    for status in [StepStatus::AgentError, StepStatus::Timeout] {
        let mut record = session(dir.path(), ReplayMode::Record, 0.0);
        let (info, _) = agent_ends(&mut record, &[], status).await;
        assert!(
            !info
                .note
                .unwrap_or_default()
                .contains("never replayed again"),
            "{status:?}"
        );
        assert!(recorded(dir.path()).failed.is_none(), "{status:?}");
    }
}

#[tokio::test]
async fn a_weaker_re_recording_waits_for_review_and_the_agent_takes_the_step_until_then() {
    let (dir, _) = first_pass(FactsAnswer::Stated(vec!["1 contains \"value=41\"".into()])).await;
    // The value changed: a drift; the agent passes having read another file only.
    std::fs::write(dir.path().join("value.txt"), "value=40\n").expect("write");
    std::fs::write(dir.path().join("other.txt"), "other\n").expect("write");
    let mut drifted = session(dir.path(), ReplayMode::Auto, 0.0);
    let info = agent_passes(
        &mut drifted,
        &[shell_call("cat other.txt", "other\n")],
        FactsAnswer::Stated(Vec::new()),
    )
    .await;
    assert!(!info.recorded, "{info:?}");
    assert_eq!(
        info.pending_review.as_deref(),
        Some(
            "recording for step 1 would drop 1 shell action and 1 fact: pending review \
             (supervisor replay review)"
        ),
        "{info:?}"
    );
    assert!(recorded(dir.path()).actions[0]
        .describe()
        .contains("cat value.txt"));
    // The next run: the agent again, told why; `only` replays the one in force and warns.
    std::fs::write(dir.path().join("value.txt"), "value=41\n").expect("write");
    let mut next = session(dir.path(), ReplayMode::Auto, 0.0);
    let Before::ToAgent(turn) = before(&mut next, &step()).await else {
        panic!("a step with a pending re-recording goes to the agent");
    };
    assert!(
        matches!(turn.fallback, Some(Fallback::Miss(Miss::PendingReview(_)))),
        "{:?}",
        turn.fallback.map(|f| f.to_string())
    );
    let mut only = session(dir.path(), ReplayMode::Only, 0.0);
    let Before::Replayed(replayed) = before(&mut only, &step()).await else {
        panic!("`only` replays the recording in force");
    };
    assert!(
        replayed.info.pending_review.is_some(),
        "{:?}",
        replayed.info
    );
}
