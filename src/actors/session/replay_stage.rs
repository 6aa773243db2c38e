//! Replay's two places in a step's pipeline (see docs/replay.md), all of it `replay::session`'s
//! doing: before the agent, the step's recording replayed (the step ends here when it passed
//! without the model); after the agent's pass, its recording, with the facts it rested on.

use super::agent_stage::AgentDone;
use super::policy::StepEnd;
use super::steps::StepRun;
use super::*;
use crate::model::replay::StepReplay;
use crate::replay::session::{After, AgentStep, AgentTurn, Before, FactsAnswer, StepAsked};

/// What a step's replay stage came to. (Once per step, moved at once: its size does not matter.)
#[allow(clippy::large_enum_variant)]
pub(super) enum ReplayStage {
    /// The step ended without the agent: replayed, refused (`mode = "only"`), or stopped.
    Ended(StepEnd),
    /// The step replayed before the harness watch ended: its record waits until the watch
    /// settles it (`Steps::settle`).
    Held(StepEnd),
    /// The agent takes the step; what recording its pass needs (`None` where replay does not
    /// apply).
    ToAgent(Option<AgentTurn>),
}

impl Steps<'_> {
    /// The step's recording first; the agent only on a miss, a drift, an opt-out or an audit.
    pub(super) async fn replay_stage(&mut self, run: &StepRun<'_>) -> ReplayStage {
        let Some(replay) = self.kit.replay.as_mut() else {
            return ReplayStage::ToAgent(None);
        };
        let asked = StepAsked {
            step: run.step,
            id: run.id,
            instruction: &run.instruction,
            console: self.kit.console.as_ref().map(|s| s.console().as_ref()),
            run_id: &self.session.run_id,
            step_timeout: run.step.timeout.value,
        };
        let before = replay
            .before(&asked, Driver::until_stopped(self.session.stop.clone()))
            .await;
        let screenshots = replay.take_screenshots();
        // The console calls a replay made are the step's.
        self.emit_console_calls(run.id);
        // The screenshots the agent had taken, taken again (before a drift too), are the step's
        // evidence.
        for path in screenshots {
            self.session.emit(EventKind::Evidence {
                step_id: run.id,
                kind: "screenshot".to_string(),
                path,
                problem: None,
            });
        }
        match before {
            Err(reason) => {
                let mut end = StepEnd::new(StepStatus::Interrupted, Some(reason.cut_off_message()));
                end.stopped = Some(reason);
                ReplayStage::Ended(end)
            }
            Ok(Before::Replayed(replayed)) => {
                // The evidence of a replayed step is taken as an agent step's is.
                let mut status = StepStatus::Ok;
                let mut message = replayed.message;
                self.capture_browser(run.id, &mut status, &mut message)
                    .await;
                let mut end = StepEnd::new(status, Some(message));
                end.duration = replayed.took;
                end.replay = Some(replayed.info);
                match replayed.held {
                    true => ReplayStage::Held(end),
                    false => ReplayStage::Ended(end),
                }
            }
            Ok(Before::NoAgent { message, info }) => {
                let mut end = StepEnd::new(StepStatus::Error, Some(message));
                end.replay = Some(info);
                ReplayStage::Ended(end)
            }
            Ok(Before::ToAgent(turn)) => ReplayStage::ToAgent(Some(turn)),
        }
    }

    /// The agent's turn at the step, then what replay makes of it: its pass recorded (with the
    /// facts it rested on), a failed step's recording retired.
    pub(super) async fn agent_and_record(
        &mut self,
        run: &StepRun<'_>,
        turn: Option<AgentTurn>,
    ) -> StepEnd {
        let mut done = match self.agent_stage(run).await {
            Ok(done) => done,
            Err(end) => return end,
        };
        let info = match turn {
            Some(turn) => self.record_stage(turn, &mut done).await,
            None => None,
        };
        self.agent_fault(run.id, &done.verdict);
        let v = done.verdict;
        let mut end = StepEnd::new(v.status, (!v.message.is_empty()).then_some(v.message));
        end.duration = v.duration;
        end.usage = done.usage;
        end.replay = info;
        end.fault = v.fault.as_ref().map(|f| f.to_string());
        end.restarts = v.restarts;
        end.agent_died = v.agent_died.as_ref().map(|d| d.to_string());
        end.stopped = self.session.stopped();
        end
    }

    async fn record_stage(&mut self, turn: AgentTurn, done: &mut AgentDone) -> Option<StepReplay> {
        let replay = self.kit.replay.as_mut()?;
        let step = AgentStep {
            status: done.verdict.status,
            judged: done.judged,
            console_calls: &done.console_calls,
            tool_calls: &done.verdict.tool_calls,
        };
        let pending = match replay.after(turn, step, &mut done.verdict.message) {
            After::Done(info) => return Some(info),
            After::AskFacts(pending) => pending,
        };
        let answer = self.ask_facts(done, pending.question()).await;
        if let FactsAnswer::Withdrawn(why) = &answer {
            // Its last word is the verdict: the step fails as the agent now says.
            done.verdict.status = StepStatus::Error;
            done.verdict.message =
                format!("the agent withdrew its pass when asked its facts: {why}");
        }
        let cost = done.usage.as_ref().and_then(|u| u.cost_usd);
        let replay = self.kit.replay.as_mut()?;
        Some(replay.record(pending, answer, cost))
    }
}
