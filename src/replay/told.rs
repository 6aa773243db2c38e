//! What the agent is told of the steps replayed before the one it takes over: each replayed
//! action and its output (cut), so that it knows the state it finds — the page, the files, the
//! processes as those actions left them.

use super::format::{Action, RecordedStep};
use super::placeholders::Placeholders;
use crate::model::ids::StepId;

/// How much of a replayed action's output the agent is told.
const SUMMARY_OUTPUT_CHARS: usize = 300;

/// The replayed steps not told to the agent yet.
#[derive(Default)]
pub struct Told {
    replayed: Vec<String>,
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
        let text = format!("- step {step_id}: {}\n", instruction.trim())
            + &actions_text(placeholders, &step.actions);
        self.replayed.push(text);
    }

    /// A step whose replay stopped at action `stopped` (0-based): the agent takes it over and is
    /// told (above the step's instruction) which of its actions ran before. `drifted`: that
    /// action ran too, and its output differed.
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
        let header = format!(
            "- step {step_id}, the step below, now yours: {} of its recorded actions ran again{}\n",
            ran.len(),
            if drifted {
                "; the last one's output differed from the recording"
            } else {
                " and matched; the next could not run"
            },
        );
        let shown = if drifted { &ran[..ran.len() - 1] } else { ran };
        let mut text = header + &actions_text(placeholders, shown);
        if let (true, Some(last)) = (drifted, ran.last()) {
            let what = placeholders.fill(&last.describe());
            text.push_str(&format!("  $ {what}\n    (output differed: look again)\n"));
        }
        self.replayed.push(text);
    }

    /// For the agent's first step after replayed ones: what those did. `None` once told.
    pub fn take(&mut self) -> Option<String> {
        if self.replayed.is_empty() {
            return None;
        }
        let steps = std::mem::take(&mut self.replayed).concat();
        Some(format!(
            "Before this step, the actions below were run again without you: the commands, file \
             checks and browser calls recorded when an agent last passed these steps; each \
             output listed matched its recording. The system (and the browser's page) is in the \
             state they left it in.\n{steps}\n"
        ))
    }
}

/// Each action and its output, cut.
fn actions_text(placeholders: &Placeholders, actions: &[Action]) -> String {
    let mut text = String::new();
    for action in actions {
        let what = placeholders.fill(&action.describe());
        let output = placeholders.fill(&action.output());
        let cut: String = output.chars().take(SUMMARY_OUTPUT_CHARS).collect();
        let more = cut.len() < output.len();
        text.push_str(&format!("  $ {what}\n"));
        for line in cut.trim_end().lines() {
            text.push_str(&format!("    {line}\n"));
        }
        if more {
            text.push_str("    …\n");
        }
    }
    text
}
