//! The steps of a session in order: each sent to the agent (or the `shell` provider), its verdict
//! turned into events, a passed checkpoint step's save right after it, the first ERROR stopping the rest.

use super::setup::AgentStartFailure;
use super::*;
use crate::console::record::CallRecord;
use crate::model::replay::StepReplay;
use crate::replay::format::RecordedStep;
use crate::replay::store::{Miss, StepKey};
use crate::replay::verdict::{Fallback, Verdict};

/// What a step's replay stage came to.
enum ReplayStage {
    /// Nothing more for the agent to do: the step replayed (`Ok`: its status and message after
    /// the browser's evidence), or ended the run.
    Done(Result<(StepStatus, Option<String>), Ending>),
    /// The agent takes the step; what replay knew of it (`None` where replay does not apply).
    Agent(Option<Box<AgentTurn>>),
}

/// What recording an agent's step needs from its replay stage.
struct AgentTurn {
    key: StepKey,
    /// Why the step was not replayed (`None`: `record` mode, or an audit).
    fallback: Option<Fallback>,
    /// The recording the step had (a drift, an audit): what varied while the agent passed is
    /// learned from it.
    previous: Option<RecordedStep>,
    /// `[replay] audit` sent it to the agent although it could replay.
    audited: bool,
}

/// What the agent stage hands on: the verdict, its usage, the console calls it made.
pub(super) struct AgentDone {
    /// The step as it was sent (a question about it goes the same way).
    pub(super) asked: StepRequest,
    pub(super) verdict: StepVerdict,
    /// The agent's own verdict, before the browser's console errors made it a warning: a step
    /// the agent passed is recorded, and its replay warns the same way.
    judged: StepStatus,
    pub(super) usage: Option<Usage>,
    console_calls: Vec<CallRecord>,
}

impl Driver {
    /// The steps in order, each through its stages (replay → agent → budgets → verdict).
    pub(super) async fn steps(&self, started: &mut Started, vars: &SessionVars) -> Ending {
        let Some(workdir) = started.workdir.clone() else {
            return Ending::error("no workspace was created");
        };
        let strict = self.test.effective.provider.strict_warnings.value;
        let mut warnings = Vec::new();
        // Resuming from a checkpoint: the steps up to and including its step were restored, not
        // run (but `setup = true` steps still run), and no checkpoint is saved among them.
        let resumed_through = self.suite.from_checkpoint.as_deref().and_then(|name| {
            self.test
                .plan
                .iter()
                .find(|s| s.checkpoint.as_deref() == Some(name))
                .map(|s| (s.step_id, name))
        });
        for step in &self.test.plan {
            if let Some(reason) = self.stopped() {
                return Ending::from_stop(reason);
            }
            let restored = resumed_through.filter(|(last, _)| step.step_id <= *last);
            match self.one_step(started, vars, &workdir, step, restored).await {
                Ok(Some(warning)) => warnings.push(warning),
                Ok(None) => {}
                Err(ending) => return ending,
            }
        }
        policy::final_ending(&warnings, strict)
    }

    /// One step: `Ok(Some(warning))` when it warned, `Err` when the session ends here.
    async fn one_step(
        &self,
        started: &mut Started,
        vars: &SessionVars,
        workdir: &Path,
        step: &PlannedStep,
        restored: Option<(usize, &str)>,
    ) -> Result<Option<String>, Ending> {
        let id = step_id(step);
        let _ = self.myself.cast(SessionMsg::StepStarting(step.step_id));
        let instruction = self.render(step, vars, workdir).map_err(Ending::error)?;
        let skipped = if step.skip {
            Some("skip = true".to_string())
        } else {
            restored
                .filter(|_| !step.setup)
                .map(|(_, name)| format!("restored from checkpoint `{name}`"))
        };
        self.emit(EventKind::StepStarted {
            step_id: id,
            instruction: summarize_instruction(&instruction, 100),
            // A skipped step sends nothing.
            instruction_sent: skipped.is_none().then(|| instruction.clone()),
            provenance: provenance(step),
        });
        if self.fault_driver_panic {
            panic!("injected fault: the session's driver panicked mid-step");
        }
        if let Some(message) = skipped {
            self.emit(step_finished(
                id,
                StepStatus::Skipped,
                Some(message),
                Duration::ZERO,
                None,
            ));
            return Ok(None);
        }
        self.budget_before(id)?;
        // The step's window of console messages and failed requests opens.
        if let Some(browser) = &started.browser {
            browser.begin_step();
        }
        let passed = match self.replay_stage(started, step, id, &instruction).await {
            ReplayStage::Done(result) => {
                let (status, message) = result?;
                let facts = policy::StepFacts {
                    id,
                    status,
                    message: message.as_deref(),
                    fault: None,
                    restarts: 0,
                    agent_died: None,
                    stopped: None,
                };
                match policy::after_step(&facts) {
                    policy::AfterStep::Continue => status,
                    policy::AfterStep::Warned(w) => {
                        self.save_checkpoint(step, restored, id, vars).await?;
                        return Ok(Some(w));
                    }
                    policy::AfterStep::End(ending) => return Err(ending),
                }
            }
            ReplayStage::Agent(turn) => {
                let request = self.request(step, id, instruction.clone());
                let mut done = self.agent_stage(started, id, request).await?;
                let info = self
                    .record_stage(started, turn, &mut done, &instruction)
                    .await;
                self.agent_fault(id, &done.verdict);
                let message =
                    (!done.verdict.message.is_empty()).then(|| done.verdict.message.clone());
                self.emit(step_finished_with(
                    id,
                    done.verdict.status,
                    message.clone(),
                    done.verdict.duration,
                    done.usage,
                    info,
                ));
                let v = &done.verdict;
                let facts = policy::StepFacts {
                    id,
                    status: v.status,
                    message: message.as_deref(),
                    fault: v.fault.as_ref().map(|f| f.to_string()),
                    restarts: v.restarts,
                    agent_died: v.agent_died.as_ref().map(|d| d.to_string()),
                    stopped: self.stopped(),
                };
                match policy::after_step(&facts) {
                    policy::AfterStep::Continue => v.status,
                    policy::AfterStep::Warned(w) => {
                        self.save_checkpoint(step, restored, id, vars).await?;
                        return Ok(Some(w));
                    }
                    policy::AfterStep::End(ending) => return Err(ending),
                }
            }
        };
        if matches!(passed, StepStatus::Ok | StepStatus::Warn) {
            self.save_checkpoint(step, restored, id, vars).await?;
        }
        Ok(None)
    }

    /// A step the agent could not do (docs/providers.md, "When the agent, not the app, fails"):
    /// the fault goes in the run's record, and a lasting one is booked for the circuit breaker.
    fn agent_fault(&self, id: u32, verdict: &StepVerdict) {
        let Some(kind) = verdict.agent_fault else {
            return;
        };
        let agent = self.test.effective.provider.name.value;
        self.emit(EventKind::AgentFault {
            step_id: id,
            kind,
            fix: kind.fix(agent.as_str()),
        });
        let test = self.test.rel_path.display().to_string();
        self.suite
            .agent_faults
            .record(&test, kind, verdict.message.trim());
    }

    /// A passed step with a checkpoint saves it (not while replaying a resumed prefix).
    async fn save_checkpoint(
        &self,
        step: &PlannedStep,
        restored: Option<(usize, &str)>,
        id: u32,
        vars: &SessionVars,
    ) -> Result<(), Ending> {
        match (&step.checkpoint, restored) {
            (Some(name), None) => {
                self.checkpoint(CheckpointAction::Save, name, Some(id), vars)
                    .await
            }
            _ => Ok(()),
        }
    }

    /// The budget before a step: a ceiling already reached sends nothing.
    fn budget_before(&self, id: u32) -> Result<(), Ending> {
        let max_cost = self.test.effective.provider.max_cost_usd.value;
        let Some(why) = self.suite.budget.exhausted(&self.test.rel_path, max_cost) else {
            return Ok(());
        };
        let message = format!("not sent to the agent: {why}");
        self.emit(step_finished(
            id,
            StepStatus::OverBudget,
            Some(message.clone()),
            Duration::ZERO,
            None,
        ));
        Err(Ending {
            outcome: RunOutcome::Failed,
            message: Some(format!("step {id} over_budget: {message}")),
        })
    }

    /// The step as the agent gets it; its timeout resolved against the provider's default.
    fn request(&self, step: &PlannedStep, id: u32, instruction: String) -> StepRequest {
        let Provenance {
            source_file,
            source_index,
            include_chain,
        } = provenance(step);
        StepRequest {
            step_id: id,
            source_file,
            source_index,
            include_chain,
            instruction,
            timeout: self.step_timeout(step),
            question: None,
        }
    }

    /// The step's timeout: its own, else the provider's default.
    fn step_timeout(&self, step: &PlannedStep) -> Duration {
        Duration::from_secs(
            step.timeout_secs
                .unwrap_or(self.test.effective.provider.step_timeout_secs.value),
        )
    }

    /// The step's recording first; the agent only on a miss, a drift, an opt-out or an audit.
    async fn replay_stage(
        &self,
        started: &mut Started,
        step: &PlannedStep,
        id: u32,
        instruction: &str,
    ) -> ReplayStage {
        let Some(replay) = started.replay.as_ref() else {
            return ReplayStage::Agent(None);
        };
        let key = replay.key(step, instruction);
        let turn = |fallback, previous, audited| {
            Box::new(AgentTurn {
                key: key.clone(),
                fallback,
                previous,
                audited,
            })
        };
        if !replay.replays() {
            return ReplayStage::Agent(Some(turn(None, None, false)));
        }
        let (outcome, recorded) = if !step.replay {
            (Verdict::Fallback(Fallback::Miss(Miss::OptedOut)), None)
        } else if let Some(previous) = replay
            .usable(&key)
            .filter(|_| !replay.only() && replay.audits(step.step_id))
        {
            return ReplayStage::Agent(Some(turn(None, Some(previous), true)));
        } else {
            let console = started.console.as_ref().map(|s| s.console().as_ref());
            // A stop (a signal, the deadline) ends a replay at once, as it ends an agent's step:
            // what the replay started is dropped here and swept with the session.
            let tried = tokio::select! {
                tried = replay.try_step(&key, instruction, console, &self.run_id, self.step_timeout(step)) => tried,
                reason = Self::until_stopped(self.stop.clone()) => {
                    self.emit_console_calls(started, id);
                    self.emit(step_finished(
                        id,
                        StepStatus::Interrupted,
                        Some(reason.cut_off_message()),
                        Duration::ZERO,
                        None,
                    ));
                    return ReplayStage::Done(Err(Ending::from_stop(reason)));
                }
            };
            self.emit_console_calls(started, id);
            // The screenshots the agent had taken, taken again (before a drift too), are the
            // step's evidence.
            for path in replay.take_screenshots() {
                self.emit(EventKind::Evidence {
                    step_id: id,
                    kind: "screenshot".to_string(),
                    path,
                    problem: None,
                });
            }
            tried
        };
        match (outcome, recorded) {
            (outcome @ Verdict::Replayed { .. }, Some(recorded)) => {
                let (mut message, info) =
                    replay::replayed(&recorded, &outcome, replay.placeholders());
                let (took, varied) = match outcome {
                    Verdict::Replayed { took, varied, .. } => (took, varied),
                    Verdict::Fallback(_) => (Duration::ZERO, Vec::new()),
                };
                // The evidence of a replayed step is taken as an agent step's is.
                let mut status = StepStatus::Ok;
                self.capture_browser(started, id, &mut status, &mut message)
                    .await;
                self.emit(step_finished_with(
                    id,
                    status,
                    Some(message.clone()),
                    took,
                    None,
                    Some(info),
                ));
                if let Some(replay) = started.replay.as_mut() {
                    replay.note_replayed(id, instruction, &recorded);
                    replay.age(recorded.step, &varied);
                }
                ReplayStage::Done(Ok((status, Some(message))))
            }
            (Verdict::Fallback(why), _) if replay.only() => {
                // A drift is not "no recording": say what stopped the replay.
                let message = match &why {
                    Fallback::Miss(_) | Fallback::Unreadable(_) => format!(
                        "no usable recording ([replay] mode = \"only\" asks no agent): {why}"
                    ),
                    _ => format!("not replayed ([replay] mode = \"only\" asks no agent): {why}"),
                };
                let mut info = replay::by_the_agent(Some(&why));
                info.mode = crate::model::replay::StepMode::NotReplayed;
                self.emit(step_finished_with(
                    id,
                    StepStatus::Error,
                    Some(message.clone()),
                    Duration::ZERO,
                    None,
                    Some(info),
                ));
                ReplayStage::Done(Err(Ending {
                    outcome: RunOutcome::Failed,
                    message: Some(format!("step {id} error: {message}")),
                }))
            }
            (Verdict::Fallback(why), previous) => {
                // A drift mid-step: the agent is told which of its actions already ran.
                let stopped = match &why {
                    // An element not found on the page: that action never ran.
                    Fallback::Drift(d) | Fallback::SoftDrift { drift: d, .. } => {
                        Some((d.action, d.field != "element"))
                    }
                    Fallback::Failed { action, .. } => Some((*action, false)),
                    _ => None,
                };
                if let (Some((at, drifted)), Some(recorded), Some(replay)) =
                    (stopped, previous.as_ref(), started.replay.as_mut())
                {
                    replay.note_partial(id, recorded, at, drifted);
                }
                ReplayStage::Agent(Some(turn(Some(why), previous, false)))
            }
            (Verdict::Replayed { .. }, None) => ReplayStage::Agent(Some(turn(None, None, false))),
        }
    }

    /// The agent takes the step (started now if it was waiting); its verdict after the budget
    /// and the browser's evidence. `Err` when the session ends with it.
    async fn agent_stage(
        &self,
        started: &mut Started,
        id: u32,
        mut request: StepRequest,
    ) -> Result<AgentDone, Ending> {
        let agent = match self.agent(started).await {
            Ok(agent) => agent,
            Err(failure) => return Err(self.agent_start_failed(id, failure)),
        };
        if let Some(summary) = started.replay.as_mut().and_then(|r| r.take_summary()) {
            request.instruction = format!("{summary}\n{}", request.instruction);
        }
        let marks = LogMarks::take(&self.run_paths().logs_dir());
        let asked = request.clone();
        let verdict = self
            .run_step(&agent, request, &mut started.agent_news)
            .await;
        let console_calls = self.emit_console_calls(started, id);
        let mut verdict = match verdict {
            Ok(v) => v,
            Err(message) => {
                self.emit_excerpt(id, &marks);
                self.emit(step_finished(
                    id,
                    StepStatus::Error,
                    Some(message.clone()),
                    Duration::ZERO,
                    None,
                ));
                return Err(Ending::error(message));
            }
        };
        let usage = verdict.usage.as_ref().map(usage_of);
        self.budget_after(&mut verdict);
        let judged = verdict.status;
        if !verdict.interrupted {
            self.capture_browser(started, id, &mut verdict.status, &mut verdict.message)
                .await;
        }
        if verdict.interrupted || !matches!(verdict.status, StepStatus::Ok | StepStatus::Warn) {
            self.emit_excerpt(id, &marks);
        }
        if verdict.interrupted {
            let reason = self
                .stopped()
                .unwrap_or_else(|| StopReason::Interrupted("the session is stopping".into()));
            self.emit(step_finished(
                id,
                StepStatus::Interrupted,
                Some(reason.cut_off_message()),
                verdict.duration,
                usage,
            ));
            return Err(Ending::from_stop(reason));
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
            self.suite.budget.add(&self.test.rel_path, u.step_cost_usd);
        }
        if matches!(verdict.status, StepStatus::Ok | StepStatus::Warn) && !verdict.interrupted {
            let max_cost = self.test.effective.provider.max_cost_usd.value;
            if let Some(why) = self.suite.budget.exhausted(&self.test.rel_path, max_cost) {
                verdict.status = StepStatus::OverBudget;
                verdict.message = format!("over budget after this step: {why}");
            }
        }
    }

    /// The agent could not start for this step (it was started lazily): the step says what
    /// became of it.
    fn agent_start_failed(&self, id: u32, failure: AgentStartFailure) -> Ending {
        let why = failure.ending.message.clone().unwrap_or_default();
        let (status, message) = match self.stopped() {
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
        self.emit(step_finished(
            id,
            status,
            Some(message),
            Duration::ZERO,
            None,
        ));
        failure.ending
    }

    /// What replay makes of the agent's step: its pass recorded (with what it learnt), an
    /// audited failure's recording deleted.
    async fn record_stage(
        &self,
        started: &mut Started,
        turn: Option<Box<AgentTurn>>,
        done: &mut AgentDone,
        instruction: &str,
    ) -> Option<StepReplay> {
        let info = self.record_step(started, turn, done, instruction).await;
        if let Some(replay) = started.replay.as_mut() {
            replay.observe_pages(&done.verdict.tool_calls);
        }
        info
    }

    async fn record_step(
        &self,
        started: &mut Started,
        turn: Option<Box<AgentTurn>>,
        done: &mut AgentDone,
        instruction: &str,
    ) -> Option<StepReplay> {
        let (replay, turn) = (started.replay.as_mut()?, turn?);
        let mut info = replay::by_the_agent(turn.fallback.as_ref());
        info.audited = turn.audited;
        let verdict = &mut done.verdict;
        let failed = !matches!(verdict.status, StepStatus::Ok | StepStatus::Warn);
        if turn.audited && failed {
            info.audit_disagreed = true;
            let deleted = match replay.forget(turn.key.step) {
                Ok(()) => "its recording was deleted".to_string(),
                Err(e) => format!("its recording could not be deleted: {e}"),
            };
            verdict.message = format!(
                "{} (audit: replay would have passed a failing step; {deleted})",
                verdict.message
            );
        }
        if !replay.records() {
            return Some(info);
        }
        if done.judged != StepStatus::Ok || failed {
            add_note(
                &mut info,
                format!(
                    "not recorded: the step ended {}, and only a step the agent passed (RESULT OK) \
                     is recorded",
                    verdict.status.as_str()
                ),
            );
            return Some(info);
        }
        let actions = match replay.actions_of(&done.console_calls, &verdict.tool_calls) {
            Ok(actions) => actions,
            Err(why) => {
                add_note(&mut info, format!("not recorded: {why}"));
                return Some(info);
            }
        };
        let answer = self.ask_facts(started, done, &actions).await;
        if let Some(note) = &answer.note {
            add_note(&mut info, note.clone());
        }
        let Some(replay) = started.replay.as_mut() else {
            return Some(info);
        };
        let facts = match answer.facts {
            Ok(facts) => facts,
            Err(why) => {
                add_note(&mut info, format!("not recorded: {why}"));
                return Some(info);
            }
        };
        info.facts = facts.clone().unwrap_or_default();
        let cost = done.usage.as_ref().and_then(|u| u.cost_usd);
        let soft: &[(usize, crate::replay::masks::Position)] = match &turn.fallback {
            Some(Fallback::SoftDrift { learn, .. }) => learn,
            _ => &[],
        };
        let previous = turn.previous.as_ref().map(|p| (p, soft));
        match replay.record(&turn.key, actions, cost, previous, instruction, facts) {
            Ok(()) => info.recorded = true,
            Err(why) => add_note(&mut info, format!("not recorded: {why}")),
        }
        Some(info)
    }

    /// Runs `[checkpoint] save` or `restore` for checkpoint `name`; a failure ends the run.
    pub(super) async fn checkpoint(
        &self,
        action: CheckpointAction,
        name: &str,
        step_id: Option<u32>,
        vars: &SessionVars,
    ) -> Result<(), Ending> {
        let Some(config) = &self.test.effective.checkpoint else {
            return Err(Ending::error(format!(
                "checkpoint `{name}`: the config has no [checkpoint] table"
            )));
        };
        let run_dir = self.run_dir();
        let job = CheckpointJob {
            config: &config.value,
            action,
            name,
            step_id,
            paths: CheckpointPaths::new(&self.suite.artifact_dir, &self.test.rel_path, name),
            project_root: &self.suite.project_root,
            run_dir: &run_dir,
            run_id: &self.run_id,
            test_file: &self.test.rel_path,
            vars,
            max_log_bytes: self.test.effective.supervisor.max_log_bytes.value,
        };
        tracing::info!("{} checkpoint `{name}`", action.as_str());
        match job
            .run(
                |kind| self.emit(kind),
                Self::until_stopped(self.stop.clone()),
            )
            .await
        {
            Ok(()) => Ok(()),
            Err(CheckpointFailure::Failed(message)) => Err(Ending::error(message)),
            Err(CheckpointFailure::Stopped(reason)) => Err(Ending::from_stop(reason)),
        }
    }

    /// Sends one step; on a stop request, cancels it and waits for the (interrupted) verdict.
    /// The agent's news is passed on as it comes, and what it sent before its verdict is passed
    /// on before the verdict is returned: a step's logs always precede its `step_finished`.
    pub(super) async fn run_step(
        &self,
        agent: &ActorRef<AgentMsg>,
        request: StepRequest,
        news: &mut Option<mpsc::UnboundedReceiver<AgentEvent>>,
    ) -> Result<StepVerdict, String> {
        let limit = request.timeout + Duration::from_secs(60);
        let (reply, answer) = ractor::concurrency::oneshot();
        agent
            .cast(AgentMsg::RunStep(request, reply.into()))
            .map_err(|e| format!("the agent actor is gone: {e}"))?;
        let mut answer = answer;
        // Set once a stop was asked for: the interrupted verdict must come by then.
        let mut cancelled_until: Option<tokio::time::Instant> = None;
        // The agent's death during the step is the step's own news: its provider sees it (the
        // end of its output) and says how it died in the verdict. Stopping the session on it
        // here would race that verdict and cut the step off as `interrupted`.
        let mut died: Option<AgentEvent> = None;
        let verdict = loop {
            tokio::select! {
                verdict = &mut answer => break verdict.map_err(|_| "the agent actor stopped without a verdict".to_string()),
                Some(event) = next_news(news) => self.take_news(event, &mut died),
                _ = Self::until_stopped(self.stop.clone()), if cancelled_until.is_none() => {
                    let _ = agent.cast(AgentMsg::Cancel);
                    cancelled_until = Some(tokio::time::Instant::now() + limit);
                }
                _ = sleep_until_opt(cancelled_until), if cancelled_until.is_some() => {
                    break Err("the agent did not end the step after it was cancelled".to_string());
                }
            }
        };
        if let Some(rx) = news.as_mut() {
            while let Ok(event) = rx.try_recv() {
                self.take_news(event, &mut died);
            }
        }
        // A death the verdict names, or one the watchdog already answered with a restart, is
        // not news for the session.
        let told = match &verdict {
            Ok(v) => v.agent_died.is_some() || v.fault.is_some() || v.restarts > 0,
            Err(_) => false,
        };
        if let (Some(death), false) = (died, told) {
            self.pass_on(death);
        }
        verdict
    }

    /// News that came while a step ran: passed on at once, but the agent's death is held for
    /// after the verdict (see `run_step`).
    pub(super) fn take_news(&self, event: AgentEvent, died: &mut Option<AgentEvent>) {
        match event {
            AgentEvent::Exited(_) => *died = Some(event),
            other => self.pass_on(other),
        }
    }

    /// For a step that did not pass: what each harness command logged while it ran.
    /// The console calls made since the last step ended, reported with this step.
    pub(super) fn emit_console_calls(&self, started: &Started, step_id: u32) -> Vec<CallRecord> {
        let Some(server) = &started.console else {
            return Vec::new();
        };
        let calls = server.console().recorder().take_calls();
        for call in calls.iter().cloned() {
            self.emit(EventKind::ConsoleCall {
                step_id,
                summary: call.summary(),
                tool: call.tool,
                duration_ms: call.duration_ms,
                exit_code: call.exit_code,
                bytes: call.bytes,
                is_error: call.is_error,
            });
        }
        calls
    }

    /// The session's agent, started now if it was waiting for a step that needs it.
    pub(super) async fn agent(
        &self,
        started: &mut Started,
    ) -> Result<ActorRef<AgentMsg>, AgentStartFailure> {
        let no_agent = || AgentStartFailure {
            ending: Ending::error("no agent was started"),
            nothing_sent: true,
        };
        if let Some(agent) = &started.agent {
            return Ok(agent.clone());
        }
        let args = started.pending_agent.take().ok_or_else(no_agent)?;
        self.start_agent(started, args).await?;
        started.agent.clone().ok_or_else(no_agent)
    }

    /// The evidence the supervisor takes from the browser at the end of a step, and
    /// what the page's console errors make of a passing verdict. A failed capture is noted on
    /// the step, never fatal.
    async fn capture_browser(
        &self,
        started: &Started,
        id: u32,
        status: &mut StepStatus,
        message: &mut String,
    ) {
        let Some(browser) = &started.browser else {
            return;
        };
        let capture = browser.end_step(id, &self.run_dir()).await;
        for evidence in &capture.evidence {
            self.emit(EventKind::Evidence {
                step_id: id,
                kind: evidence.kind().to_string(),
                path: evidence.path().to_string(),
                problem: None,
            });
        }
        for problem in &capture.problems {
            self.emit(EventKind::Evidence {
                step_id: id,
                kind: "browser".to_string(),
                path: String::new(),
                problem: Some(format!("not captured: {problem}")),
            });
        }
        let passed = matches!(*status, StepStatus::Ok | StepStatus::Warn);
        // The console's verdict is why the step warned or failed: it comes first, what the step
        // itself said after it.
        let joined = |message: &str, cause: &str| {
            if message.is_empty() {
                cause.to_string()
            } else {
                format!("{cause} — {message}")
            }
        };
        match browser.console_verdict(passed, &capture) {
            None => {}
            Some(crate::browser::session::ConsoleVerdict::Warn(why)) => {
                *status = StepStatus::Warn;
                *message = joined(message, &why);
            }
            Some(crate::browser::session::ConsoleVerdict::Fail(why)) => {
                *status = StepStatus::Error;
                *message = joined(message, &why);
            }
        }
    }

    pub(super) fn emit_excerpt(&self, step_id: u32, marks: &LogMarks) {
        let excerpt = marks.excerpt_since(&self.run_paths().logs_dir());
        if !excerpt.is_empty() {
            self.emit(EventKind::HarnessLogExcerpt { step_id, excerpt });
        }
    }

    /// A step's log and evidence become run events; the rest (bootstrap notes, the agent's
    /// death) is the session actor's to judge.
    pub(super) fn pass_on(&self, event: AgentEvent) {
        match event {
            AgentEvent::Log { step_id, message } if step_id > 0 => {
                self.emit(EventKind::AgentLog { step_id, message });
            }
            AgentEvent::Restarted { step_id, reason } => {
                self.emit(EventKind::AgentRestarted { step_id, reason });
            }
            AgentEvent::Evidence { step_id, evidence } if step_id > 0 => {
                let problem = evidence_problem(&self.run_dir(), &evidence.path);
                self.emit(EventKind::Evidence {
                    step_id,
                    kind: evidence.kind.to_string(),
                    path: evidence.path.clone(),
                    problem,
                });
            }
            other => {
                let _ = self.myself.cast(SessionMsg::Agent(other));
            }
        }
    }

    /// The instruction as the agent gets it: variables substituted, assets inlined or copied.
    pub(super) fn render(
        &self,
        step: &PlannedStep,
        vars: &SessionVars,
        workdir: &Path,
    ) -> Result<String, String> {
        let rendered = prepare_instruction(
            step,
            &self.suite.project_root,
            &step_vars(vars, step.step_id),
            workdir,
        )
        .map_err(|e| format!("{e} ({})", step.provenance()))?;
        for copy in &rendered.copies {
            if let Some(parent) = copy.to.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            std::fs::copy(&copy.from, &copy.to).map_err(|e| {
                format!(
                    "cannot copy asset {} to {}: {e}",
                    copy.from.display(),
                    copy.to.display()
                )
            })?;
        }
        Ok(rendered.text)
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

/// Adds `note` to the step's replay note (after what is there).
fn add_note(info: &mut StepReplay, note: String) {
    info.note = Some(match info.note.take() {
        Some(before) => format!("{before}; {note}"),
        None => note,
    });
}

pub(super) async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The next piece of news, or never when there is no receiver (or it is closed).
pub(super) async fn next_news(
    news: &mut Option<mpsc::UnboundedReceiver<AgentEvent>>,
) -> Option<AgentEvent> {
    match news.as_mut() {
        Some(rx) => match rx.recv().await {
            Some(event) => Some(event),
            None => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}

pub(super) fn step_id(step: &PlannedStep) -> u32 {
    u32::try_from(step.step_id).unwrap_or(u32::MAX)
}

pub(super) fn provenance(step: &PlannedStep) -> Provenance {
    Provenance {
        source_file: step.source_file.display().to_string(),
        source_index: step.source_index,
        include_chain: step
            .include_chain
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
    }
}

pub(super) fn step_finished(
    step_id: u32,
    status: StepStatus,
    message: Option<String>,
    duration: Duration,
    usage: Option<Usage>,
) -> EventKind {
    step_finished_with(step_id, status, message, duration, usage, None)
}

/// [`step_finished`] with what replay did for the step.
pub(super) fn step_finished_with(
    step_id: u32,
    status: StepStatus,
    message: Option<String>,
    duration: Duration,
    usage: Option<Usage>,
    replay: Option<StepReplay>,
) -> EventKind {
    EventKind::StepFinished {
        step_id,
        status,
        message,
        duration_ms: millis(duration),
        usage,
        replay: replay.map(Box::new),
    }
}
