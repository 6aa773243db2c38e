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
        pending.question().contains("cat value.txt"),
        "{}",
        pending.question()
    );
    replay.record(pending, facts, Some(0.02))
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
    let told = next.take_summary().expect("a summary");
    assert!(
        told.contains("$ shell cat value.txt\n    value=41"),
        "{told}"
    );
    assert_eq!(next.take_summary(), None, "told once");
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
    let told = next.take_summary().expect("a summary");
    assert!(told.contains("output differed"), "{told}");
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

#[tokio::test]
async fn an_audit_the_agent_fails_deletes_the_recording() {
    let (dir, info) = first_pass(FactsAnswer::Stated(Vec::new())).await;
    assert!(info.recorded, "{info:?}");

    let mut audited = session(dir.path(), ReplayMode::Auto, 1.0);
    let Before::ToAgent(turn) = before(&mut audited, &step()).await else {
        panic!("an audited step goes to the agent although it could replay");
    };
    let mut message = "the value is wrong".to_string();
    let failed = AgentStep {
        status: StepStatus::Error,
        judged: StepStatus::Error,
        console_calls: &[],
        tool_calls: &[cat_value()],
    };
    let After::Done(info) = audited.after(turn, failed, &mut message) else {
        panic!("a failed step is not recorded");
    };
    assert!(info.audited && info.audit_disagreed, "{info:?}");
    assert!(
        message.ends_with(
            "(audit: replay would have passed a failing step; its recording was deleted)"
        ),
        "{message}"
    );
    let mut next = session(dir.path(), ReplayMode::Auto, 0.0);
    assert!(matches!(
        before(&mut next, &step()).await,
        Before::ToAgent(_)
    ));
}
