//! Running a recorded step again in a new session and comparing each output (see docs/replay.md).
//!
//! Each action kind has its file, which replays it ([`super::kind::RecordedKind`]): console calls
//! ([`super::console`], through the session's own console, the same PTY or pipes, env and cwd
//! the agent's calls get), the provider's shell tool ([`super::shell`], in a process group and
//! with a marker of the replay's own, never the agent's), file checks ([`super::files`]) and
//! browser calls ([`super::browser::action`]); this file runs a step's actions in order. Inputs
//! are filled with this session's values; outputs on both sides have the session's values as
//! placeholders, are normalised, then compared under the learned masks ([`super::masks`]). The first difference stops the replay: the step goes to the agent with the
//! drift (soft when only unlearned candidate tokens differ).

pub use super::action::compared_outputs;
use super::action::{Action, StepState};
pub use super::context::AgentTools;
use super::context::{ActionAt, ReplayContext, StepSeen};
use super::domains::Relation;
use super::format::RecordedStep;
use super::normalize::Normalizer;
use super::verdict::{Fallback, ReplayVerdict};
use chrono::Utc;
use std::sync::Mutex;
use std::time::Instant;

/// Replays `step`: [`ReplayVerdict::Replayed`] only when every action ran and matched.
pub async fn replay_step(
    ctx: &ReplayContext<'_>,
    tools: AgentTools<'_>,
    step: &RecordedStep,
) -> ReplayVerdict {
    let started = Instant::now();
    let mut state = StepState::default();
    let mut previous_began = None;
    let recorded = Some((
        step.run_started_at.unwrap_or(step.recorded_at),
        step.recorded_at,
    ));
    // An older recording says nothing of its relations: those its outputs show are checked.
    let derived;
    let relations: &[Relation] = match &step.relations {
        Some(r) => r,
        None => {
            derived = relations_of(&step.actions, ctx.normalizer, &ctx.instruction);
            &derived
        }
    };
    let seen = Mutex::new(StepSeen::default());
    // An agent that stated no facts its pass rested on gets exact comparison only: nothing it
    // was seen to let vary is let vary without it (docs/replay.md, "The facts a pass rests on").
    let exact = step.facts.as_ref().is_some_and(Vec::is_empty);
    for (i, action) in step.actions.iter().enumerate() {
        let began = Instant::now();
        let at = ActionAt {
            index: i,
            what: action.describe(),
            recorded,
            volatile: if exact { &[] } else { action.volatile() },
            relations,
            seen: &seen,
            previous_began,
        };
        let result = action.replay(ctx, tools, &mut state, &at).await;
        if let Err(fallback) = result {
            return ReplayVerdict::Fallback(fallback);
        }
        previous_began = Some(began);
    }
    let seen = seen.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(fallback) = false_fact(step, &seen.comparable) {
        return ReplayVerdict::Fallback(fallback);
    }
    let varied = seen.varied;
    ReplayVerdict::Replayed {
        actions: step.actions.len(),
        took: started.elapsed(),
        cost_saved_usd: step.cost_usd,
        varied,
    }
}

/// The first of the step's recorded facts that does not hold on today's outputs, as the
/// fallback to the agent (a fact is what the agent's pass rested on: one false, the pass is
/// the agent's to give again).
fn false_fact(step: &RecordedStep, today: &[Option<super::facts::Shown>]) -> Option<Fallback> {
    let stated = step.facts.as_deref().filter(|f| !f.is_empty())?;
    let refs_masked = super::action::refs_masked(&step.actions);
    let facts = match super::facts::parse(stated, &refs_masked) {
        Ok(facts) => facts,
        Err(e) => {
            return Some(Fallback::Failed {
                action: 0,
                reason: format!("a recorded fact is not one ({e}): the agent decides"),
            })
        }
    };
    let recorded = super::action::fact_outputs(&step.actions);
    let (fact, why) = super::facts::first_false(&facts, today, &recorded, Utc::now())?;
    Some(Fallback::Failed {
        action: fact.action,
        reason: format!(
            "the fact `{}` the agent's pass rested on no longer holds: {why}",
            fact.text
        ),
    })
}

/// The relations between timestamps that hold in `actions`' outputs as the replay compares them.
pub fn relations_of(
    actions: &[Action],
    normalizer: &Normalizer,
    instruction: &str,
) -> Vec<Relation> {
    let texts: Vec<Option<String>> = compared_outputs(actions)
        .into_iter()
        .map(|t| t.map(|t| normalizer.normalize_with(&t, instruction)))
        .collect();
    let mut relations: Vec<Relation> = texts
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.as_ref().map(|t| (i, t)))
        .flat_map(|(i, t)| super::domains::relations_in(i, t))
        .collect();
    relations.extend(super::domains::relations_across(&texts));
    relations
}
