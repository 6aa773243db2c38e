//! Claude Code's stream read as the provider reads it, from the streams the real CLIs sent the
//! scripted API.

use crate::fuzzing::read_stream;
use crate::model::agent_fault::FaultKind;
use crate::model::outcome::StepStatus;

/// The streams the real CLIs sent the scripted API (tests/fixtures/claude-code/<version>/,
/// tests/support/capture_claude_streams.py), read as the provider reads them.
fn captured(version: &str, name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code")
        .join(version)
        .join(format!("{name}.jsonl"));
    std::fs::read(&path).expect("fixture")
}

const VERSIONS: [&str; 2] = ["2.1.197", "2.1.332"];

#[test]
fn a_refused_key_is_auth_at_the_first_retry_notice() {
    for version in VERSIONS {
        let reading = read_stream(&captured(version, "retry_401"));
        let verdict = reading.verdict.expect("a verdict");
        assert_eq!(verdict.status, StepStatus::AgentError, "{version}");
        assert_eq!(verdict.agent_fault, Some(FaultKind::Auth), "{version}");
        assert!(verdict.message.contains("HTTP 401"), "{}", verdict.message);
        let first_retry = String::from_utf8_lossy(&captured(version, "retry_401"))
            .lines()
            .position(|l| l.contains("\"api_retry\""))
            .expect("a retry notice");
        assert_eq!(reading.lines_read, first_retry + 1, "{version}");
    }
}

#[test]
fn an_overload_being_retried_does_not_end_the_turn() {
    for version in VERSIONS {
        let reading = read_stream(&captured(version, "retry_529"));
        assert!(
            reading.verdict.is_none(),
            "{version}: {:?}",
            reading.verdict
        );
    }
}

#[test]
fn a_rate_limit_retried_to_an_answer_is_that_answer() {
    for version in VERSIONS {
        let verdict = read_stream(&captured(version, "retry_429"))
            .verdict
            .expect("a verdict");
        assert_eq!(verdict.status, StepStatus::Ok, "{version}: {verdict:?}");
    }
}

#[test]
fn a_rejected_mcp_server_is_cli_config_where_the_cli_names_it() {
    let verdict = read_stream(&captured("2.1.332", "rejected_mcp_server"))
        .verdict
        .expect("a verdict");
    assert_eq!(
        verdict.agent_fault,
        Some(FaultKind::CliConfig),
        "{verdict:?}"
    );
    assert!(verdict.message.contains("`broken`"), "{}", verdict.message);
    // 2.1.197 drops the entry without a word.
    let verdict = read_stream(&captured("2.1.197", "rejected_mcp_server"))
        .verdict
        .expect("a verdict");
    assert_eq!(verdict.status, StepStatus::Ok, "{verdict:?}");
}

#[test]
fn a_subagents_own_text_is_not_the_reply() {
    // 2.1.332: the helper's "The endpoint answered 500." is its own message; the reply's
    // verdict is the agent's, after the interim result.
    let verdict = read_stream(&captured("2.1.332", "background_subagent"))
        .verdict
        .expect("a verdict");
    assert_eq!(verdict.status, StepStatus::Error, "{verdict:?}");
    assert_eq!(verdict.message, "the endpoint answers 500");
    let usage = verdict.usage.expect("usage");
    assert_eq!(usage.num_turns, 3, "both results counted: {usage:?}");
}
