//! Outcomes of steps, runs and teardowns, and how they rank into the process exit code (docs/signals.md,
//! "Exit codes").

use serde::{Deserialize, Serialize};

/// The verdict on one planned step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Ok,
    Warn,
    Error,
    ProtocolError,
    Timeout,
    /// Stopped by a budget: `max_turns_per_step`, or the test's or the suite's `max_cost_usd`.
    OverBudget,
    /// Not sent to the agent: `skip = true`, or before the checkpoint a run resumed from.
    /// Counts as passed.
    Skipped,
    /// Cut off by a signal, the `--timeout` deadline or the death of a harness command.
    Interrupted,
    NotRun,
    /// The agent could not do its work for a reason outside the application (not logged in, a
    /// quota, the API failing, the CLI crashing): never a test failure (docs/providers.md).
    AgentError,
}

impl StepStatus {
    /// A step that stops the remaining steps of its session.
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            Self::Error | Self::ProtocolError | Self::Timeout | Self::OverBudget | Self::AgentError
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warn => "warn",
            Self::Error => "error",
            Self::ProtocolError => "protocol_error",
            Self::Timeout => "timeout",
            Self::OverBudget => "over_budget",
            Self::Skipped => "skipped",
            Self::Interrupted => "interrupted",
            Self::NotRun => "not_run",
            Self::AgentError => "agent_error",
        }
    }
}

/// How one root-test run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    Passed,
    Warned,
    Failed,
    /// The harness could not run the test: setup, readiness, provider start, a dead server.
    Error,
    Interrupted,
}

impl RunOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Warned => "warned",
            Self::Failed => "failed",
            Self::Error => "error",
            Self::Interrupted => "interrupted",
        }
    }

    /// Whether the run counts as a pass (warnings pass unless strict).
    pub fn is_pass(self, strict_warnings: bool) -> bool {
        match self {
            Self::Passed => true,
            Self::Warned => !strict_warnings,
            _ => false,
        }
    }
}

/// What teardown found for one process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TeardownState {
    /// Exited within the grace period after the stop signal (or had already exited).
    Clean,
    /// Needed SIGKILL after the grace period.
    Killed,
    /// A process outlived its group's teardown (escaped with setsid, say); it was found and killed.
    Leaked,
}

impl TeardownState {
    /// As run.json spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Clean => "clean",
            Self::Killed => "killed",
            Self::Leaked => "leaked",
        }
    }
}

/// Why the invocation exits as it does. Ordered so that the highest-ranked reason wins (docs/signals.md,
/// "Exit codes"): interrupted, then invalid input, then harness error, then test failure, then
/// success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExitReason {
    Success,
    TestFailed,
    HarnessError,
    InvalidInput,
    Interrupted(InterruptSignal),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum InterruptSignal {
    Terminate,
    /// SIGHUP: the terminal or SSH session closed.
    Hangup,
    Quit,
    Interrupt,
    /// Another signal whose default action ends a process (SIGUSR1, SIGALRM, SIGXCPU, …; see
    /// `process::signals`): stopped in order instead, its number kept for the exit code.
    Other(i32),
}

impl InterruptSignal {
    pub fn name(self) -> &'static str {
        match self {
            Self::Terminate => "SIGTERM",
            Self::Hangup => "SIGHUP",
            Self::Quit => "SIGQUIT",
            Self::Interrupt => "SIGINT",
            Self::Other(n) => match n {
                10 => "SIGUSR1",
                12 => "SIGUSR2",
                14 => "SIGALRM",
                24 => "SIGXCPU",
                25 => "SIGXFSZ",
                26 => "SIGVTALRM",
                27 => "SIGPROF",
                29 => "SIGIO",
                30 => "SIGPWR",
                _ => "a signal",
            },
        }
    }
}

impl ExitReason {
    pub fn code(self) -> u8 {
        match self {
            Self::Success => 0,
            Self::TestFailed => 1,
            Self::InvalidInput => 2,
            Self::HarnessError => 3,
            // 128 + the signal's number, as a shell reports a death by it.
            Self::Interrupted(InterruptSignal::Hangup) => 129,
            Self::Interrupted(InterruptSignal::Interrupt) => 130,
            Self::Interrupted(InterruptSignal::Quit) => 131,
            Self::Interrupted(InterruptSignal::Terminate) => 143,
            Self::Interrupted(InterruptSignal::Other(n)) => {
                u8::try_from(128 + n.clamp(1, 127)).unwrap_or(u8::MAX)
            }
        }
    }

    /// The exit reason one root test contributes.
    pub fn for_outcome(outcome: RunOutcome, strict_warnings: bool) -> Self {
        match outcome {
            RunOutcome::Passed => Self::Success,
            RunOutcome::Warned if !strict_warnings => Self::Success,
            RunOutcome::Warned | RunOutcome::Failed => Self::TestFailed,
            RunOutcome::Error => Self::HarnessError,
            RunOutcome::Interrupted => Self::Interrupted(InterruptSignal::Interrupt),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highest_ranked_exit_reason_wins() {
        let reasons = [
            ExitReason::Success,
            ExitReason::TestFailed,
            ExitReason::HarnessError,
            ExitReason::InvalidInput,
        ];
        assert_eq!(reasons.iter().max().map(|r| r.code()), Some(2));
        assert_eq!(
            [ExitReason::HarnessError, ExitReason::TestFailed]
                .iter()
                .max()
                .map(|r| r.code()),
            Some(3)
        );
        assert_eq!(
            [
                ExitReason::InvalidInput,
                ExitReason::Interrupted(InterruptSignal::Terminate)
            ]
            .iter()
            .max()
            .map(|r| r.code()),
            Some(143)
        );
    }

    #[test]
    fn warnings_fail_only_when_strict() {
        assert_eq!(ExitReason::for_outcome(RunOutcome::Warned, false).code(), 0);
        assert_eq!(ExitReason::for_outcome(RunOutcome::Warned, true).code(), 1);
        assert_eq!(ExitReason::for_outcome(RunOutcome::Error, false).code(), 3);
    }

    #[test]
    fn statuses_serialize_as_spec_names() {
        let json = serde_json::to_string(&StepStatus::ProtocolError).unwrap_or_default();
        assert_eq!(json, "\"protocol_error\"");
        let json = serde_json::to_string(&StepStatus::Skipped).unwrap_or_default();
        assert_eq!(json, "\"skipped\"");
        assert!(!StepStatus::Skipped.is_failure());
        let json = serde_json::to_string(&RunOutcome::Interrupted).unwrap_or_default();
        assert_eq!(json, "\"interrupted\"");
    }
}
