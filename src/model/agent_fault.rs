//! Why an agent could not do its work for a reason outside the application (docs/providers.md,
//! "When the agent, not the app, fails"): the kind of fault, as the agent CLI itself reported it.
//!
//! A step ended by one is `agent_error`, its test's outcome `error` (exit 3), and nothing calls it
//! a test failure: history, the comparison with the previous suite and trends keep it apart.

use serde::{Deserialize, Serialize};

/// The kind of an agent fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Not logged in, or a key the API refused (HTTP 401/403).
    Auth,
    /// Billing, credit or usage limit reached (HTTP 402, a quota 429).
    Quota,
    /// HTTP 429, still failing after the CLI's own retries and ours.
    RateLimit,
    /// HTTP 529 (overloaded), still failing after the retries.
    Overloaded,
    /// Any other API failure the CLI reported.
    ApiError,
    /// The CLI died, again after its one restart.
    Crashed,
    /// The CLI was silent past `no_output_timeout_secs`, again after its one restart.
    Stalled,
    /// The program is not there.
    CliMissing,
    /// The program speaks a protocol this supervisor does not.
    CliVersion,
    /// The CLI refused part of the configuration it was given (Claude Code's `init` listing a
    /// rejected MCP server in `mcp_server_errors`): found before the first agent step.
    CliConfig,
    /// The model asked the user a question (Codex's `request_user_input`) in a run with no user
    /// to answer it: the step cannot go on as the test meant, and the next test may not ask.
    AskedUser,
    /// The agent's process was stopped by a signal from outside the supervisor (a SIGSTOP, a
    /// debugger) and did not go on before the step's silence or time ran out.
    Stopped,
}

impl FaultKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auth => "auth",
            Self::Quota => "quota",
            Self::RateLimit => "rate_limit",
            Self::Overloaded => "overloaded",
            Self::ApiError => "api_error",
            Self::Crashed => "crashed",
            Self::Stalled => "stalled",
            Self::CliMissing => "cli_missing",
            Self::CliVersion => "cli_version",
            Self::CliConfig => "cli_config",
            Self::AskedUser => "asked_user",
            Self::Stopped => "stopped",
        }
    }

    /// A fault that the next test would meet the same way: two root tests ended by the same one
    /// stop the suite (the circuit breaker).
    pub fn is_persistent(self) -> bool {
        matches!(
            self,
            Self::Auth | Self::Quota | Self::CliMissing | Self::CliVersion | Self::CliConfig
        )
    }

    /// A fault that may pass by itself: retried with backoff within the step's timeout before it
    /// is declared.
    pub fn is_transient(self) -> bool {
        matches!(self, Self::RateLimit | Self::Overloaded | Self::ApiError)
    }

    /// What the owner of the run does about it, for `agent` (`claude-code`, `codex`, `pi`).
    pub fn fix(self, agent: &str) -> String {
        match self {
            Self::Auth => crate::model::provider::ProviderKind::parse(agent)
                .and_then(|kind| kind.info().cli())
                .map_or("log the agent in or give it an API key", |cli| {
                    cli.login_fix
                })
                .into(),
            Self::Quota => {
                "the account's credit or usage limit is reached: top it up or wait for the \
                 limit to reset, then run again"
                    .into()
            }
            Self::RateLimit | Self::Overloaded => {
                "the API is busy: run again later, or with fewer jobs (-j)".into()
            }
            Self::ApiError => {
                "the model's API failed: run again; if it persists, check the API's status".into()
            }
            Self::Crashed | Self::Stalled => {
                "the agent CLI itself failed: see transcripts/agent.stderr.log of the run, \
                 update the CLI, run again"
                    .into()
            }
            Self::CliMissing => "install the agent CLI or name it in the config".into(),
            Self::CliConfig => {
                "the agent CLI rejected an MCP server of its configuration: fix the entry it \
                 names (the project's .mcp.json, [browser] mcp_cmd) or use a CLI version that \
                 accepts it (docs/providers.md)"
                    .into()
            }
            Self::CliVersion => {
                "install a supported version of the agent CLI (docs/providers.md)".into()
            }
            Self::Stopped => {
                "something outside the supervisor stopped the agent's process (kill -STOP, a \
                 debugger, another shell's job control): find what, and run again"
                    .into()
            }
            Self::AskedUser => {
                "the agent asked for an answer no one can give in an unattended run: say in \
                 the step's instruction (or extra_system_prompt) what it wanted to know"
                    .into()
            }
        }
    }
}

/// An agent fault as run.json records it, on the step it ended and on the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentFaultRecord {
    pub kind: FaultKind,
    /// What the run's owner does about it (`claude auth login`, set ANTHROPIC_API_KEY, …).
    pub fix: String,
}

impl std::fmt::Display for FaultKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kind of an API failure the CLI reported, from its HTTP status (where it gives one) and its
/// own error text. Only ever called on what the CLI reports as an error (Claude Code's `result`
/// with `is_error`, Codex's `turn.failed` and `error` events, pi's `errorMessage`), never on the
/// model's prose.
pub fn classify_api_failure(status: Option<u64>, text: &str) -> FaultKind {
    let t = text.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| t.contains(n));
    let auth = has(&[
        "not logged in",
        "please run /login",
        "invalid api key",
        "invalid x-api-key",
        "authentication_error",
        "authentication_failed",
        "failed to authenticate",
        "unauthorized",
        "permission_error",
        "codex login",
        "no api key",
        "api key not found",
        "oauth token has expired",
        "token expired",
    ]);
    let quota = has(&[
        "credit balance",
        "usage limit",
        "insufficient_quota",
        "exceeded your current quota",
        "quota exceeded",
        "billing",
        "payment required",
        "out of credits",
    ]);
    match status {
        Some(401 | 403) => return FaultKind::Auth,
        Some(402) => return FaultKind::Quota,
        Some(429) if quota => return FaultKind::Quota,
        Some(429) => return FaultKind::RateLimit,
        Some(529) => return FaultKind::Overloaded,
        _ => {}
    }
    if auth {
        FaultKind::Auth
    } else if quota {
        FaultKind::Quota
    } else if has(&["overloaded", " 529", "529 "]) {
        FaultKind::Overloaded
    } else if has(&[
        "rate limit",
        "rate_limit",
        "too many requests",
        " 429",
        "429 ",
    ]) {
        FaultKind::RateLimit
    } else if has(&[" 401", "401 ", " 403", "403 "]) {
        FaultKind::Auth
    } else {
        FaultKind::ApiError
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_clis_say_is_named() {
        let c = classify_api_failure;
        assert_eq!(
            c(None, "Not logged in · Please run /login"),
            FaultKind::Auth
        );
        assert_eq!(
            c(Some(401), "Failed to authenticate. API Error: 401"),
            FaultKind::Auth
        );
        assert_eq!(
            c(None, "API Error: 401 {\"type\":\"error\"}"),
            FaultKind::Auth
        );
        assert_eq!(
            c(None, "Credit balance is too low"),
            FaultKind::Quota,
            "Claude Code's billing message"
        );
        assert_eq!(
            c(
                Some(429),
                "You exceeded your current quota, please check your plan"
            ),
            FaultKind::Quota
        );
        assert_eq!(c(Some(429), "rate limited"), FaultKind::RateLimit);
        assert_eq!(
            c(
                None,
                "exceeded retry limit, last status: 429 Too Many Requests"
            ),
            FaultKind::RateLimit
        );
        assert_eq!(c(Some(529), ""), FaultKind::Overloaded);
        assert_eq!(
            c(None, "529 {\"type\":\"overloaded_error\"}"),
            FaultKind::Overloaded
        );
        assert_eq!(
            c(Some(500), "API Error: 500 Internal server error"),
            FaultKind::ApiError
        );
        assert_eq!(c(None, "Request timed out"), FaultKind::ApiError);
    }

    #[test]
    fn only_lasting_faults_trip_the_breaker_and_only_passing_ones_are_retried() {
        for kind in [
            FaultKind::Auth,
            FaultKind::Quota,
            FaultKind::CliMissing,
            FaultKind::CliConfig,
        ] {
            assert!(kind.is_persistent() && !kind.is_transient(), "{kind}");
        }
        for kind in [
            FaultKind::RateLimit,
            FaultKind::Overloaded,
            FaultKind::ApiError,
        ] {
            assert!(kind.is_transient() && !kind.is_persistent(), "{kind}");
        }
        assert!(!FaultKind::Crashed.is_transient() && !FaultKind::Crashed.is_persistent());
        // A question to the absent user is this test's, not the suite's: no retry, no breaker.
        assert!(!FaultKind::AskedUser.is_transient() && !FaultKind::AskedUser.is_persistent());
        assert!(FaultKind::Auth
            .fix("claude-code")
            .contains("ANTHROPIC_API_KEY"));
        assert!(FaultKind::Auth.fix("codex").contains("codex login"));
        // Each CLI's own login, from its provider row; word for word as it always read.
        assert_eq!(
            FaultKind::Auth.fix("pi"),
            "log pi in (`pi` then /login) or set the provider's API key (ANTHROPIC_API_KEY, \
             OPENAI_API_KEY, …) in the supervisor's environment"
        );
        assert_eq!(
            FaultKind::Auth.fix("command"),
            "log the agent in or give it an API key"
        );
    }
}
