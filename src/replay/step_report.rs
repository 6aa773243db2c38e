//! What a step's record says of replay (run.json `replay_*`, report.md/html): a replayed step's
//! actions, facts and provenance; why a step went to the agent; the notes on its recording.

use super::format::RecordedStep;
use super::placeholders::Placeholders;
use super::verdict::{Fallback, ReplayVerdict};
use crate::model::replay::{ReplayedAction, StepMode, StepReplay};
use std::time::Duration;

/// How much of a replayed action's output the report keeps.
const REPORT_OUTPUT_CHARS: usize = 2_000;

/// What a replayed step's record says: each action it ran, and when and by whom it was recorded.
pub fn replayed(
    step: &RecordedStep,
    verdict: &ReplayVerdict,
    placeholders: &Placeholders,
) -> (String, StepReplay) {
    let (actions, took) = match verdict {
        ReplayVerdict::Replayed { actions, took, .. } => (*actions, *took),
        ReplayVerdict::Fallback(_) => (0, Duration::ZERO),
    };
    let facts = step.facts.clone().unwrap_or_default();
    let held = match facts.len() {
        0 => String::new(),
        n => format!(
            "; {n} fact{} held: {}",
            if n == 1 { "" } else { "s" },
            facts
                .iter()
                .map(|f| format!("`{}`", placeholders.fill(f)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let message = format!(
        "replayed: all {actions} recorded actions ran again and matched{held} ({}ms; recorded {} by {})",
        took.as_millis(),
        step.recorded_at.format("%Y-%m-%d %H:%M UTC"),
        step.provider
    );
    let shown = step
        .actions
        .iter()
        .map(|a| ReplayedAction {
            what: placeholders.fill(&a.describe()),
            output: super::compare::cut(&placeholders.fill(&a.output()), REPORT_OUTPUT_CHARS),
        })
        .collect();
    let replay = StepReplay {
        mode: StepMode::Replayed,
        note: None,
        drift: None,
        recorded: false,
        cost_saved_usd: step.cost_usd,
        unusable_recording: false,
        audited: false,
        audit_disagreed: false,
        no_recording: false,
        actions: shown,
        recorded_at: Some(step.recorded_at),
        recorded_by: Some(step.provider.to_string()),
        facts: facts.iter().map(|f| placeholders.fill(f)).collect(),
        pending_review: None,
    };
    (message, replay)
}

/// What a step that went to the agent says of replay, given why it was not replayed.
pub fn by_the_agent(fallback: Option<&Fallback>) -> StepReplay {
    StepReplay {
        mode: StepMode::Agent,
        note: fallback.map(|f| match f.drift() {
            // The diff is in `replay_drift`: the note says where.
            Some(d) => format!(
                "{} at action {} ({}): {} differs",
                if d.soft { "soft drift" } else { "drift" },
                d.action + 1,
                d.what,
                d.field
            ),
            None => f.to_string(),
        }),
        drift: fallback.and_then(Fallback::drift).cloned(),
        recorded: false,
        cost_saved_usd: None,
        unusable_recording: matches!(fallback, Some(Fallback::Unreadable(_))),
        no_recording: matches!(fallback, Some(Fallback::Miss(_) | Fallback::Unreadable(_))),
        audited: false,
        audit_disagreed: false,
        actions: Vec::new(),
        recorded_at: None,
        recorded_by: None,
        facts: Vec::new(),
        pending_review: None,
    }
}

/// Adds `note` to the step's replay note (after what is there).
pub fn add_note(info: &mut StepReplay, note: String) {
    info.note = Some(match info.note.take() {
        Some(before) => format!("{before}; {note}"),
        None => note,
    });
}
