//! Why a step passed without the model, or why it went to the agent: the one answer the session
//! needs from replay, and what the report says about it.

use super::compare::Drift;
use super::error::LoadError;
use super::masks::Position;
use crate::model::provider::ProviderKind;
use std::time::Duration;

/// What replaying one step came to.
#[derive(Debug, Clone)]
pub enum ReplayVerdict {
    /// Every recorded action ran again and matched: the step passes without the model
    /// (`status = "ok"`, `mode = "replayed"`).
    Replayed {
        /// How many actions ran.
        actions: usize,
        took: Duration,
        /// The model's cost when the step was recorded: what this replay saved.
        cost_saved_usd: Option<f64>,
        /// The learned positions (action, position) whose value differed from the recording's
        /// inside their domain; the others went one more replay unvarying.
        varied: Vec<(usize, Position)>,
    },
    /// The step goes to the agent.
    Fallback(Fallback),
}

/// Why a step goes to the agent although replay was asked for.
#[derive(Debug, Clone)]
pub enum Fallback {
    /// No usable recording of this step (none, another provider, a changed instruction, too old).
    Miss(Miss),
    /// The recording file could not be used; the report shows it as a warning.
    Unreadable(LoadError),
    /// The replay ran and an action differed (`replay_drift`).
    Drift(Box<Drift>),
    /// An action differed only in timestamps, UUIDs, durations or hex values not learned yet:
    /// the agent decides; if it passes, these (action, position)s are learned as volatile.
    SoftDrift {
        drift: Box<Drift>,
        learn: Vec<(usize, Position)>,
    },
    /// An action could not be run again (a process that would not start, a console error).
    Failed { action: usize, reason: String },
}

impl ReplayVerdict {
    /// True only for a step every action of which matched.
    pub fn passed(&self) -> bool {
        matches!(self, Self::Replayed { .. })
    }

    /// The verdict in one line, for the console and the report.
    pub fn describe(&self) -> String {
        match self {
            Self::Replayed { actions, took, .. } => {
                format!("replayed {actions} actions in {}ms", took.as_millis())
            }
            Self::Fallback(f) => f.to_string(),
        }
    }
}

impl Fallback {
    /// A hard drift.
    pub fn hard(drift: Drift) -> Self {
        Self::Drift(Box::new(drift))
    }

    /// The drift, hard or soft.
    pub fn drift(&self) -> Option<&Drift> {
        match self {
            Self::Drift(d) | Self::SoftDrift { drift: d, .. } => Some(d),
            _ => None,
        }
    }
}

impl std::fmt::Display for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Miss(miss) => write!(f, "no replay: {miss}"),
            Self::Unreadable(why) => write!(f, "recording not used: {why}"),
            Self::Drift(drift) => write!(f, "drift: {drift}"),
            Self::SoftDrift { drift, .. } => write!(f, "soft drift: {drift}"),
            Self::Failed { action, reason } => {
                write!(f, "replay failed at action {}: {reason}", action + 1)
            }
        }
    }
}

/// Why a step has no usable recording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Miss {
    #[error("no recording of this test")]
    NoFile,
    #[error("step not recorded")]
    NoStep,
    #[error("the step moved (recorded from {recorded}, now {now})")]
    Moved { recorded: String, now: String },
    #[error("the instruction changed since it was recorded")]
    InstructionChanged,
    #[error("recorded with provider {recorded}, this run uses {now}")]
    OtherProvider {
        recorded: ProviderKind,
        now: ProviderKind,
    },
    #[error("the recording is {age_days} days old (max_age_days = {max_age_days})")]
    TooOld { age_days: i64, max_age_days: u32 },
    #[error("the recording has no action to check")]
    NoActions,
    #[error(
        "recorded by an older supervisor (schema {schema}), which masked timestamps, UUIDs and durations up front: the agent runs once and records it anew"
    )]
    OldSchema { schema: u32 },
    #[error("replay = false: this step always goes to the agent")]
    OptedOut,
    #[error(
        "recorded without the agent CLI's version, which says where its shell started the step: the agent runs once and records it anew"
    )]
    NoAgentVersion,
    /// The agent failed the step where this recording would have passed it (`--replay record`,
    /// an audit): never replayed again, kept only as the baseline a new pass must match.
    #[error(
        "its recording is not replayed again ({0}): it is kept only as the baseline a new pass must match in strength"
    )]
    Failed(String),
    /// A re-recording that would weaken the one in force waits for review: the step goes to the
    /// agent until a person accepts or rejects it.
    #[error(
        "a re-recording that would weaken it waits for review ({0}): the agent runs the step until `supervisor replay accept` or `reject`"
    )]
    PendingReview(String),
}
