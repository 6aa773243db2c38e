//! The agent's turn at a step: the agent started if it was waiting, the step sent and its news
//! passed on as it comes, a stop turned into a cancel, the budget after it, the browser's
//! evidence. A step the agent could not take ends here as a [`StepEnd`].

use super::policy::StepEnd;
use super::setup::AgentStartFailure;
use super::step_events::pass_on;
use super::steps::StepRun;
use super::*;
use crate::console::record::CallRecord;
use crate::model::ids::StepId;
use crate::process::job_control::later;

/// A step sent to the agent that came back without a verdict.
#[derive(Debug, thiserror::Error)]
pub(super) enum TurnLost {
    #[error("the agent actor is gone: {0}")]
    ActorGone(String),
    #[error("the agent actor stopped without a verdict")]
    NoVerdict,
    #[error("the agent did not end the step after it was cancelled")]
    CancelIgnored,
}

/// What the agent stage hands on: the verdict, its usage, the console calls it made.
pub(super) struct AgentDone {
    /// The step as it was sent (a question about it goes the same way).
    pub(super) asked: StepRequest,
    pub(super) verdict: StepVerdict,
    /// The agent's own verdict, before the browser's console errors made it a warning: a step
    /// the agent passed is recorded, and its replay warns the same way.
    pub(super) judged: StepStatus,
    pub(super) usage: Option<Usage>,
    pub(super) console_calls: Vec<CallRecord>,
}

impl Steps<'_> {
    /// A step the agent could not do (docs/providers.md, "When the agent, not the app, fails"):
    /// the fault goes in the run's record, and a lasting one is booked for the circuit breaker.
    pub(super) fn agent_fault(&self, id: StepId, verdict: &StepVerdict) {
        let Some(kind) = verdict.agent_fault else {
            return;
        };
        let agent = self.session.test.effective.provider.name.value;
        self.session.emit(EventKind::AgentFault {
            step_id: id,
            kind,
            fix: kind.fix(agent.as_str()),
        });
        let test = self.session.test.rel_path.display().to_string();
        self.session
            .suite
            .agent_faults
            .record(&test, kind, verdict.message.trim());
    }

    /// The agent takes the step (started now if it was waiting); its verdict after the budget
    /// and the browser's evidence. `Err` when the step ends without a verdict to record.
    pub(super) async fn agent_stage(&mut self, run: &StepRun<'_>) -> Result<AgentDone, StepEnd> {
        let id = run.id;
        let mut request = self.request(run);
        let (agent, news) = match ready_agent(self.session, &mut self.kit.agent).await {
            Ok(agent) => agent,
            Err(failure) => return Err(self.agent_start_failed(failure)),
        };
        if let Some(replay) = self.kit.replay.as_mut() {
            request.replayed = replay.take_summary();
        }
        let marks = LogMarks::take(&self.session.run_paths().logs_dir());
        let asked = request.clone();
        let verdict = run_step(self.session, &agent, request, news).await;
        let console_calls = self.emit_console_calls(id);
        let mut verdict = match verdict {
            Ok(v) => v,
            Err(lost) => {
                let message = lost.to_string();
                self.emit_excerpt(id, &marks, true).await;
                let mut end = StepEnd::new(StepStatus::Error, Some(message.clone()));
                end.not_run = Some(message);
                return Err(end);
            }
        };
        self.emit_tool_calls(id, &verdict.tool_calls);
        let usage = verdict.usage.as_ref().map(usage_of);
        self.budget_after(&mut verdict);
        let judged = verdict.status;
        if !verdict.interrupted {
            self.capture_browser(id, &mut verdict.status, &mut verdict.message)
                .await;
        }
        if verdict.interrupted || !matches!(verdict.status, StepStatus::Ok | StepStatus::Warn) {
            // A stop does not wait for the logs to settle.
            self.emit_excerpt(id, &marks, !verdict.interrupted).await;
        }
        if verdict.interrupted {
            let reason = self
                .session
                .stopped()
                .unwrap_or_else(|| StopReason::Interrupted("the session is stopping".into()));
            let mut end = StepEnd::new(StepStatus::Interrupted, Some(reason.cut_off_message()));
            end.duration = verdict.duration;
            end.usage = usage;
            end.stopped = Some(reason);
            return Err(end);
        }
        Ok(AgentDone {
            asked,
            verdict,
            judged,
            usage,
            console_calls,
        })
    }

    /// The step's cost is added; the step whose cost crossed a ceiling is the one that stops.
    fn budget_after(&self, verdict: &mut StepVerdict) {
        if let Some(u) = verdict.usage.as_ref().filter(|u| u.cost_reported) {
            self.session
                .suite
                .budget
                .add(&self.session.test.rel_path, u.step_cost_usd);
        }
        if matches!(verdict.status, StepStatus::Ok | StepStatus::Warn) && !verdict.interrupted {
            let max_cost = self.session.test.effective.provider.max_cost_usd.value;
            if let Some(why) = self
                .session
                .suite
                .budget
                .exhausted(&self.session.test.rel_path, max_cost)
            {
                verdict.status = StepStatus::OverBudget;
                verdict.message = format!("over budget after this step: {why}");
            }
        }
    }

    /// The agent could not start for this step (it was started lazily): the step says what
    /// became of it.
    fn agent_start_failed(&self, failure: AgentStartFailure) -> StepEnd {
        let why = failure.ending.message.clone().unwrap_or_default();
        let (status, message) = match self.session.stopped() {
            Some(StopReason::AgentDied(died)) => (
                StepStatus::Error,
                format!("the agent exited during the step (while starting for it): {died}"),
            ),
            Some(reason) => (StepStatus::Interrupted, reason.cut_off_message()),
            None if failure.nothing_sent => (
                StepStatus::NotRun,
                format!("not sent: the agent could not start: {why}"),
            ),
            None => (
                StepStatus::Error,
                format!("the agent exited during the step (while starting for it): {why}"),
            ),
        };
        let mut end = StepEnd::new(status, Some(message));
        end.stopped = self.session.stopped();
        end.not_run = Some(why);
        end
    }
}

/// Sends one step; on a stop request, cancels it and waits for the (interrupted) verdict.
/// The agent's news is passed on as it comes, and what it sent before its verdict is passed
/// on before the verdict is returned: a step's logs always precede its `step_finished`.
pub(super) async fn run_step(
    session: &Driver,
    agent: &ActorRef<AgentMsg>,
    request: StepRequest,
    news: &mut AgentNews,
) -> Result<StepVerdict, TurnLost> {
    let limit = request.timeout.saturating_add(Duration::from_secs(60));
    let step_id = request.step_id;
    let (reply, answer) = ractor::concurrency::oneshot();
    agent
        .cast(AgentMsg::RunStep(request, reply.into()))
        .map_err(|e| TurnLost::ActorGone(e.to_string()))?;
    let mut answer = answer;
    // Set once a stop was asked for: the interrupted verdict must come by then.
    let mut cancelled_until: Option<tokio::time::Instant> = None;
    // The agent's death during the step is the step's own news: its provider sees it (the
    // end of its output) and says how it died in the verdict. Stopping the session on it
    // here would race that verdict and cut the step off as `interrupted`.
    let mut died: Option<AgentEvent> = None;
    let verdict = loop {
        tokio::select! {
            verdict = &mut answer => break verdict.map_err(|_| TurnLost::NoVerdict),
            Some(event) = next_news(news) => take_news(session, event, &mut died),
            _ = Driver::until_stopped(session.stop.clone()), if cancelled_until.is_none() => {
                let _ = agent.cast(AgentMsg::Cancel);
                cancelled_until = Some(later(tokio::time::Instant::now(), limit));
            }
            _ = sleep_until_opt(cancelled_until), if cancelled_until.is_some() => {
                break Err(TurnLost::CancelIgnored);
            }
        }
    };
    while let Ok(event) = news.try_recv() {
        take_news(session, event, &mut died);
    }
    // A death the verdict names, or one the watchdog already answered with a restart, is
    // not news for the session.
    let told = match &verdict {
        Ok(v) => v.agent_died.is_some() || v.fault.is_some() || v.restarts > 0,
        Err(_) => false,
    };
    if let (Some(death), false) = (died, told) {
        pass_on(session, death);
    }
    if let Some(waited) = verdict.as_ref().ok().map(|v| millis(v.model_wait)) {
        if waited > 0 {
            session.emit(EventKind::ModelWait {
                step_id,
                waited_ms: waited,
                agents_at_once: session.suite.model_gate.limit(),
            });
        }
    }
    verdict
}

/// News that came while a step ran: passed on at once, but the agent's death is held for
/// after the verdict (see `run_step`).
fn take_news(session: &Driver, event: AgentEvent, died: &mut Option<AgentEvent>) {
    match event {
        AgentEvent::Exited(_) => *died = Some(event),
        other => pass_on(session, other),
    }
}

/// The session's agent and its news, started now if it was waiting for a step that needs it.
pub(super) async fn ready_agent<'k>(
    session: &Driver,
    slot: &'k mut AgentSlot,
) -> Result<(ActorRef<AgentMsg>, &'k mut AgentNews), AgentStartFailure> {
    if matches!(slot, AgentSlot::Waiting { .. }) {
        slot.start(session).await?;
    }
    match slot {
        AgentSlot::Spawned { actor, news } => Ok((actor.clone(), news)),
        AgentSlot::Waiting { .. } | AgentSlot::Gone => Err(AgentStartFailure {
            ending: Ending::error("no agent was started"),
            nothing_sent: true,
        }),
    }
}

/// What one step's report records of the agent's usage.
pub(super) fn usage_of(u: &crate::providers::StepUsage) -> Usage {
    Usage {
        session_id: Some(u.session_id.clone()),
        turns: u32::try_from(u.num_turns).ok(),
        duration_ms: Some(u.duration_ms),
        cost_usd: u.cost_reported.then_some(u.step_cost_usd),
        total_cost_usd: u.cost_reported.then_some(u.total_cost_usd),
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        reported_cost_usd: u.reported_cost_usd,
    }
}

pub(super) async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The next piece of news, or never once the agent's channel is closed.
pub(super) async fn next_news(news: &mut AgentNews) -> Option<AgentEvent> {
    match news.recv().await {
        Some(event) => Some(event),
        None => std::future::pending().await,
    }
}
