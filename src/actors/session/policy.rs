//! The verdict policy of the step loop, as pure functions: what a finished step means for the
//! session (go on, go on with a warning, or end, and how), and what the session's steps came to.
//! The loop (`steps.rs`) does the I/O; the decisions are here, unit-tested.

use super::{Ending, StopReason};
use crate::model::ids::StepId;
use crate::model::outcome::{RunOutcome, StepStatus};
use crate::model::replay::StepReplay;
use crate::report::records::events::Usage;
use std::time::Duration;

/// How a step ended: what its `step_finished` says, and what the policy reads. Every end of a
/// step — skipped, over budget, replayed, refused a replay, the agent's verdict, interrupted, the
/// agent unable to start — is one of these, and goes through [`after_step`].
#[derive(Debug, Clone)]
pub(super) struct StepEnd {
    pub status: StepStatus,
    pub message: Option<String>,
    pub duration: Duration,
    pub usage: Option<Usage>,
    /// What replay did for the step (`None` where replay does not apply).
    pub replay: Option<StepReplay>,
    /// The watchdog's fault left after the step (after a restart, when `restarts > 0`).
    pub fault: Option<String>,
    pub restarts: u32,
    /// How the agent died during the step, if it did.
    pub agent_died: Option<String>,
    /// A stop asked for while the step ran.
    pub stopped: Option<StopReason>,
    /// The step could not be run at all (the agent did not start for it, its actor is gone): why.
    pub not_run: Option<String>,
}

impl StepEnd {
    pub fn new(status: StepStatus, message: Option<String>) -> Self {
        Self {
            status,
            message,
            duration: Duration::ZERO,
            usage: None,
            replay: None,
            fault: None,
            restarts: 0,
            agent_died: None,
            stopped: None,
            not_run: None,
        }
    }
}

/// What the session does after a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum AfterStep {
    Continue,
    /// Go on; the run warns with this at the end.
    Warned(String),
    End(Ending),
}

/// The policy: a step that could not run, a fault, the agent's death, a stop, then the step's
/// own status, in that order.
pub(super) fn after_step(id: StepId, end: &StepEnd) -> AfterStep {
    if let Some(why) = &end.not_run {
        return AfterStep::End(match &end.stopped {
            Some(reason) => Ending::from_stop(reason.clone()),
            None => Ending::error(why.clone()),
        });
    }
    // The agent, not the app (docs/providers.md): its own message names the fault and the fix,
    // whatever the watchdog saw on the way.
    if end.status == StepStatus::AgentError && end.stopped.is_none() {
        let again = if end.fault.is_some() && end.restarts > 0 {
            " (the watchdog's fault, again after a restart)"
        } else {
            ""
        };
        return AfterStep::End(Ending::error(format!(
            "step {id} agent_error: {}{again}",
            end.message.as_deref().unwrap_or_default()
        )));
    }
    if let Some(fault) = &end.fault {
        let again = if end.restarts > 0 {
            ", again after a restart"
        } else {
            " and could not be restarted"
        };
        return AfterStep::End(Ending::error(format!(
            "the agent {fault} during step {id}{again}; the session gave up"
        )));
    }
    if let Some(death) = &end.agent_died {
        return AfterStep::End(Ending::error(format!(
            "the agent died during step {id}: {death}"
        )));
    }
    if let Some(reason) = &end.stopped {
        return AfterStep::End(Ending::from_stop(reason.clone()));
    }
    let message = end.message.as_deref().unwrap_or_default();
    match end.status {
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
            message: Some(format!("step {id} {}: {message}", end.status.as_str())),
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

    fn facts(status: StepStatus) -> StepEnd {
        StepEnd::new(status, Some("why".into()))
    }

    #[test]
    fn a_passing_step_goes_on_and_a_warning_is_kept() {
        assert_eq!(
            after_step(StepId::new(3), &facts(StepStatus::Ok)),
            AfterStep::Continue
        );
        assert_eq!(
            after_step(StepId::new(3), &facts(StepStatus::Skipped)),
            AfterStep::Continue
        );
        assert_eq!(
            after_step(StepId::new(3), &facts(StepStatus::Warn)),
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
            let AfterStep::End(ending) = after_step(StepId::new(3), &facts(status)) else {
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
        let AfterStep::End(ending) = after_step(StepId::new(3), &facts(StepStatus::AgentError))
        else {
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
        let end = |f: &StepEnd| match after_step(StepId::new(3), f) {
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
    fn a_step_that_could_not_run_ends_the_run_as_an_error_or_as_the_stop() {
        let mut f = facts(StepStatus::NotRun);
        f.not_run = Some("the agent could not start".into());
        let AfterStep::End(ending) = after_step(StepId::new(3), &f) else {
            panic!("a step that could not run goes on");
        };
        assert_eq!(ending.outcome, RunOutcome::Error);
        assert_eq!(ending.message.as_deref(), Some("the agent could not start"));
        f.stopped = Some(StopReason::Interrupted("SIGTERM".into()));
        let AfterStep::End(ending) = after_step(StepId::new(3), &f) else {
            panic!("a stopped step goes on");
        };
        assert_eq!(ending.outcome, RunOutcome::Interrupted);
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
