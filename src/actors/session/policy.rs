//! The verdict policy of the step loop, as pure functions: what a finished step means for the
//! session (go on, go on with a warning, or end, and how), and what the session's steps came to.
//! The loop (`steps.rs`) does the I/O; the decisions are here, unit-tested.

use super::{Ending, StopReason};
use crate::model::outcome::{RunOutcome, StepStatus};

/// What the loop knows of a step once its `step_finished` is out.
#[derive(Debug, Clone)]
pub(super) struct StepFacts<'a> {
    pub id: u32,
    pub status: StepStatus,
    pub message: Option<&'a str>,
    /// The watchdog's fault left after the step (after a restart, when `restarts > 0`).
    pub fault: Option<String>,
    pub restarts: u32,
    /// How the agent died during the step, if it did.
    pub agent_died: Option<String>,
    /// A stop asked for while the step ran.
    pub stopped: Option<StopReason>,
}

/// What the session does after a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum AfterStep {
    Continue,
    /// Go on; the run warns with this at the end.
    Warned(String),
    End(Ending),
}

/// The policy: a fault, the agent's death, a stop, then the step's own status, in that order.
pub(super) fn after_step(facts: &StepFacts<'_>) -> AfterStep {
    let id = facts.id;
    // The agent, not the app (docs/providers.md): its own message names the fault and the fix,
    // whatever the watchdog saw on the way.
    if facts.status == StepStatus::AgentError && facts.stopped.is_none() {
        let again = if facts.fault.is_some() && facts.restarts > 0 {
            " (the watchdog's fault, again after a restart)"
        } else {
            ""
        };
        return AfterStep::End(Ending::error(format!(
            "step {id} agent_error: {}{again}",
            facts.message.unwrap_or_default()
        )));
    }
    if let Some(fault) = &facts.fault {
        let again = if facts.restarts > 0 {
            ", again after a restart"
        } else {
            " and could not be restarted"
        };
        return AfterStep::End(Ending::error(format!(
            "the agent {fault} during step {id}{again}; the session gave up"
        )));
    }
    if let Some(death) = &facts.agent_died {
        return AfterStep::End(Ending::error(format!(
            "the agent died during step {id}: {death}"
        )));
    }
    if let Some(reason) = &facts.stopped {
        return AfterStep::End(Ending::from_stop(reason.clone()));
    }
    let message = facts.message.unwrap_or_default();
    match facts.status {
        StepStatus::Ok | StepStatus::Skipped | StepStatus::NotRun | StepStatus::Interrupted => {
            AfterStep::Continue
        }
        StepStatus::Warn => AfterStep::Warned(format!("step {id} warned: {message}")),
        // The agent, not the app: an error of the run, never a test failure.
        StepStatus::AgentError => {
            AfterStep::End(Ending::error(format!("step {id} agent_error: {message}")))
        }
        StepStatus::Error
        | StepStatus::ProtocolError
        | StepStatus::Timeout
        | StepStatus::OverBudget => AfterStep::End(Ending {
            outcome: RunOutcome::Failed,
            message: Some(format!("step {id} {}: {message}", facts.status.as_str())),
        }),
    }
}

/// What a session whose every step went on came to: passed, or warned (failed with
/// `strict_warnings`).
pub(super) fn final_ending(warnings: &[String], strict: bool) -> Ending {
    match (warnings.is_empty(), strict) {
        (true, _) => Ending {
            outcome: RunOutcome::Passed,
            message: None,
        },
        (false, false) => Ending {
            outcome: RunOutcome::Warned,
            message: Some(warnings.join("; ")),
        },
        (false, true) => Ending {
            outcome: RunOutcome::Failed,
            message: Some(format!("strict warnings: {}", warnings.join("; "))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(status: StepStatus) -> StepFacts<'static> {
        StepFacts {
            id: 3,
            status,
            message: Some("why"),
            fault: None,
            restarts: 0,
            agent_died: None,
            stopped: None,
        }
    }

    #[test]
    fn a_passing_step_goes_on_and_a_warning_is_kept() {
        assert_eq!(after_step(&facts(StepStatus::Ok)), AfterStep::Continue);
        assert_eq!(after_step(&facts(StepStatus::Skipped)), AfterStep::Continue);
        assert_eq!(
            after_step(&facts(StepStatus::Warn)),
            AfterStep::Warned("step 3 warned: why".into())
        );
    }

    #[test]
    fn a_failing_step_fails_the_run() {
        for status in [
            StepStatus::Error,
            StepStatus::ProtocolError,
            StepStatus::Timeout,
            StepStatus::OverBudget,
        ] {
            let AfterStep::End(ending) = after_step(&facts(status)) else {
                panic!("{status:?} goes on");
            };
            assert_eq!(ending.outcome, RunOutcome::Failed);
            assert_eq!(
                ending.message.as_deref(),
                Some(format!("step 3 {}: why", status.as_str()).as_str())
            );
        }
    }

    #[test]
    fn an_agent_error_ends_the_run_as_an_error_not_a_failure() {
        let AfterStep::End(ending) = after_step(&facts(StepStatus::AgentError)) else {
            panic!("an agent error goes on");
        };
        assert_eq!(ending.outcome, RunOutcome::Error);
        assert_eq!(ending.message.as_deref(), Some("step 3 agent_error: why"));
    }

    #[test]
    fn a_fault_then_a_death_then_a_stop_come_before_the_status() {
        let mut f = facts(StepStatus::Ok);
        f.stopped = Some(StopReason::Interrupted("SIGINT".into()));
        f.agent_died = Some("signal 9".into());
        f.fault = Some("went silent".into());
        f.restarts = 1;
        let end = |f: &StepFacts<'_>| match after_step(f) {
            AfterStep::End(e) => e,
            other => panic!("{other:?}"),
        };
        let e = end(&f);
        assert_eq!(e.outcome, RunOutcome::Error);
        assert!(e
            .message
            .as_deref()
            .is_some_and(|m| m.contains("went silent during step 3, again after a restart")));
        f.fault = None;
        assert!(end(&f)
            .message
            .as_deref()
            .is_some_and(|m| m.contains("died during step 3: signal 9")));
        f.agent_died = None;
        assert_eq!(end(&f).outcome, RunOutcome::Interrupted);
    }

    #[test]
    fn the_session_passes_warns_or_fails_on_strict_warnings() {
        assert_eq!(final_ending(&[], true).outcome, RunOutcome::Passed);
        let w = ["step 1 warned: slow".to_string()];
        assert_eq!(final_ending(&w, false).outcome, RunOutcome::Warned);
        let strict = final_ending(&w, true);
        assert_eq!(strict.outcome, RunOutcome::Failed);
        assert_eq!(
            strict.message.as_deref(),
            Some("strict warnings: step 1 warned: slow")
        );
    }
}
