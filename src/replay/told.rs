//! What the agent is told of the steps replayed before the one it takes over: each replayed
//! action and its output (cut), so that it knows the state it finds — the page, the files, the
//! processes as those actions left them. Told as data ([`ReplayedStep`]), apart from the step's
//! instruction: a provider frames it as context whose commands are not to be run again.

use super::format::{Action, RecordedStep};
use super::placeholders::Placeholders;
use crate::model::ids::StepId;
use crate::model::replay::{ReplayedAction, ReplayedStep};

/// How much of a replayed action's output the agent is told.
const SUMMARY_OUTPUT_CHARS: usize = 300;

/// The replayed steps not told to the agent yet.
#[derive(Default)]
pub struct Told {
    replayed: Vec<ReplayedStep>,
}

impl Told {
    /// A step that replayed whole.
    pub fn replayed(
        &mut self,
        placeholders: &Placeholders,
        step_id: StepId,
        instruction: &str,
        step: &RecordedStep,
    ) {
        self.replayed.push(ReplayedStep {
            step_id,
            instruction: Some(instruction.trim().to_string()),
            status: "replayed: every recorded action ran again and matched".into(),
            actions: actions_told(placeholders, &step.actions),
        });
    }

    /// A step whose replay stopped at action `stopped` (0-based): the agent takes it over and is
    /// told which of its actions ran before. `drifted`: that action ran too, and its output
    /// differed.
    pub fn partial(
        &mut self,
        placeholders: &Placeholders,
        step_id: StepId,
        step: &RecordedStep,
        stopped: usize,
        drifted: bool,
    ) {
        let ran = if drifted { stopped + 1 } else { stopped };
        let ran = &step.actions[..ran.min(step.actions.len())];
        if ran.is_empty() {
            return;
        }
        let status = format!(
            "the step now yours: {} of its recorded actions ran again{}",
            ran.len(),
            if drifted {
                "; the last one's output differed from the recording"
            } else {
                " and matched; the next could not run"
            },
        );
        let shown = if drifted { &ran[..ran.len() - 1] } else { ran };
        let mut actions = actions_told(placeholders, shown);
        if let (true, Some(last)) = (drifted, ran.last()) {
            actions.push(ReplayedAction {
                what: placeholders.fill(&last.describe()),
                output: "(output differed: look again)".into(),
            });
        }
        self.replayed.push(ReplayedStep {
            step_id,
            instruction: None,
            status,
            actions,
        });
    }

    /// A step told as replayed whose pass did not stand: the harness watch, ending after it,
    /// found `why`. The agent takes it over, its actions having run (and those told after it).
    pub fn retaken(&mut self, step_id: StepId, why: &str) {
        if let Some(step) = self.replayed.iter_mut().find(|s| s.step_id == step_id) {
            step.status = format!(
                "the step now yours: every recorded action ran again and matched, but the pass \
                 did not stand: {why}"
            );
        }
    }

    /// For the agent's first step after replayed ones: what those did. Empty once told.
    pub fn take(&mut self) -> Vec<ReplayedStep> {
        std::mem::take(&mut self.replayed)
    }
}

/// Each action and its output, cut.
fn actions_told(placeholders: &Placeholders, actions: &[Action]) -> Vec<ReplayedAction> {
    actions
        .iter()
        .map(|action| {
            let output = placeholders.fill(&action.output());
            let mut cut: String = output.chars().take(SUMMARY_OUTPUT_CHARS).collect();
            if cut.len() < output.len() {
                cut = format!("{}\n…", cut.trim_end());
            }
            ReplayedAction {
                what: placeholders.fill(&action.describe()),
                output: cut.trim_end().to_string(),
            }
        })
        .collect()
}
