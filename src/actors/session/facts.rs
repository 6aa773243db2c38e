//! The facts question (docs/replay.md, "The facts a pass rests on"): after the agent passed a
//! step that is about to be recorded, the session asks it, in the same conversation, which facts
//! in the outputs it saw decided the pass. The answer's `BUGATTI_FACT` lines are checked on the
//! outputs the agent saw (a fact that does not hold there is refused, and the step is not
//! recorded), stored in the recording, and evaluated on every replay. The question's cost is the
//! step's.

use super::*;
use crate::providers::{Question, StepUsage};
use crate::replay::session::FactsAnswer;

/// The longest the agent may take to answer (it runs nothing; the step's own timeout when that
/// is shorter).
const ANSWER_LIMIT: Duration = Duration::from_secs(120);

impl Steps<'_> {
    /// Asks the agent `question` about the step it just passed; what it answered, or why not.
    pub(super) async fn ask_facts(
        &mut self,
        done: &mut AgentDone,
        question: String,
    ) -> FactsAnswer {
        let mut request = done.asked.clone();
        request.instruction = question;
        request.question = Some(Question::Facts);
        // Told with the step already.
        request.replayed.clear();
        request.timeout = request.timeout.min(ANSWER_LIMIT);
        let id = request.step_id;
        let (agent, news) = match ready_agent(self.session, &mut self.kit.agent).await {
            Ok(agent) => agent,
            Err(failure) => {
                let why = failure.ending.message.unwrap_or_default();
                return FactsAnswer::NotAnswered(format!(
                    "the facts question was not asked (the agent could not start: {why}); its \
                     replays compare exactly"
                ));
            }
        };
        let answer = run_step(self.session, &agent, request, news).await;
        // Console calls made while answering are the step's too.
        let _ = self.emit_console_calls(id);
        let verdict = match answer {
            Ok(v) => v,
            Err(why) => {
                return FactsAnswer::NotAnswered(format!(
                    "the facts question was not answered ({why}); its replays compare exactly"
                ))
            }
        };
        if let Some(usage) = &verdict.usage {
            self.add_question_cost(done, usage);
        }
        // `RESULT ERROR` to the question: the agent took its pass back (it saw, on a second
        // look, what the step failed on). Its word stands, never a recording of the pass.
        if !verdict.interrupted && verdict.status == StepStatus::Error {
            return FactsAnswer::Withdrawn(verdict.message);
        }
        if verdict.interrupted || !matches!(verdict.status, StepStatus::Ok | StepStatus::Warn) {
            return FactsAnswer::NotAnswered(format!(
                "the facts question was not answered ({}: {}); its replays compare exactly",
                verdict.status.as_str(),
                verdict.message
            ));
        }
        FactsAnswer::Stated(verdict.facts)
    }

    /// The question's cost is the step's: in its usage and in the suite's budget.
    fn add_question_cost(&self, done: &mut AgentDone, asked: &StepUsage) {
        if asked.cost_reported {
            self.session
                .suite
                .budget
                .add(&self.session.test.rel_path, asked.step_cost_usd);
        }
        let Some(usage) = done.usage.as_mut() else {
            done.usage = Some(usage_of(asked));
            return;
        };
        let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        usage.turns = usage
            .turns
            .map(|t| t.saturating_add(u32::try_from(asked.num_turns).unwrap_or(u32::MAX)));
        usage.duration_ms = sum(usage.duration_ms, Some(asked.duration_ms));
        usage.input_tokens = sum(usage.input_tokens, asked.input_tokens);
        usage.output_tokens = sum(usage.output_tokens, asked.output_tokens);
        if asked.cost_reported {
            usage.cost_usd = Some(usage.cost_usd.unwrap_or(0.0) + asked.step_cost_usd);
            usage.total_cost_usd = Some(asked.total_cost_usd);
        }
    }
}
