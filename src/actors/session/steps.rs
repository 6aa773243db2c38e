//! The steps of a session in order: each sent to the agent (or the `shell` provider), its verdict
//! turned into events, a passed checkpoint step's save right after it, the first ERROR stopping the rest.

use super::setup::AgentStartFailure;
use super::*;
use crate::console::record::CallRecord;
use crate::model::replay::StepReplay;
use crate::replay::verdict::Verdict;

impl Driver {
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
            let id = step_id(step);
            let _ = self.myself.cast(SessionMsg::StepStarting(step.step_id));
            let instruction = match self.render(step, vars, &workdir) {
                Ok(text) => text,
                Err(message) => return Ending::error(message),
            };
            let restored = resumed_through.filter(|(last, _)| step.step_id <= *last);
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
            if let Some(message) = skipped {
                self.emit(step_finished(
                    id,
                    StepStatus::Skipped,
                    Some(message),
                    Duration::ZERO,
                    None,
                ));
                continue;
            }
            let max_cost = self.test.effective.provider.max_cost_usd.value;
            if let Some(why) = self.suite.budget.exhausted(&self.test.rel_path, max_cost) {
                let message = format!("not sent to the agent: {why}");
                self.emit(step_finished(
                    id,
                    StepStatus::OverBudget,
                    Some(message.clone()),
                    Duration::ZERO,
                    None,
                ));
                return Ending {
                    outcome: RunOutcome::Failed,
                    message: Some(format!("step {id} over_budget: {message}")),
                };
            }
            let request = StepRequest {
                step_id: id,
                source_file: step.source_file.display().to_string(),
                source_index: step.source_index,
                include_chain: step
                    .include_chain
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect(),
                instruction,
                timeout: Duration::from_secs(
                    step.timeout_secs
                        .unwrap_or(self.test.effective.provider.step_timeout_secs.value),
                ),
            };
            // SPEC §11: the step's window of console messages and failed requests opens.
            if let Some(browser) = &started.browser {
                browser.begin_step();
            }
            // SPEC §10: the step's recording first; the agent only on a miss or a drift.
            let mut fallback = None;
            let mut replay_key = None;
            if let Some(replay) = started.replay.as_ref() {
                let key = replay.key(step, &request.instruction);
                if replay.replays() {
                    let console = started.console.as_ref().map(|s| s.console().as_ref());
                    let (outcome, recorded) = replay.try_step(&key, console, &self.run_id).await;
                    self.emit_console_calls(started, id);
                    match (outcome, recorded) {
                        (outcome @ Verdict::Replayed { .. }, Some(recorded)) => {
                            let (message, info) = replay::replayed(&recorded, &outcome);
                            let took = match outcome {
                                Verdict::Replayed { took, .. } => took,
                                Verdict::Fallback(_) => Duration::ZERO,
                            };
                            self.emit(step_finished_with(
                                id,
                                StepStatus::Ok,
                                Some(message),
                                took,
                                None,
                                Some(info),
                            ));
                            if let Some(replay) = started.replay.as_mut() {
                                replay.note_replayed(id, &request.instruction, &recorded);
                            }
                            if let (Some(name), None) = (&step.checkpoint, restored) {
                                if let Err(ending) = self
                                    .checkpoint(CheckpointAction::Save, name, Some(id), vars)
                                    .await
                                {
                                    return ending;
                                }
                            }
                            continue;
                        }
                        (Verdict::Fallback(why), _) if replay.only() => {
                            let message =
                                format!("no recording to replay ([replay] mode = \"only\"): {why}");
                            self.emit(step_finished_with(
                                id,
                                StepStatus::Error,
                                Some(message.clone()),
                                Duration::ZERO,
                                None,
                                Some(replay::by_the_agent(Some(&why))),
                            ));
                            return Ending {
                                outcome: RunOutcome::Failed,
                                message: Some(format!("step {id} error: {message}")),
                            };
                        }
                        (Verdict::Fallback(why), _) => fallback = Some(why),
                        (Verdict::Replayed { .. }, None) => {}
                    }
                }
                replay_key = Some(key);
            }
            let agent = match self.agent(started).await {
                Ok(agent) => agent,
                Err(failure) => {
                    // Started lazily, for this step: the step says what became of it.
                    let why = failure.ending.message.clone().unwrap_or_default();
                    let (status, message) = match self.stopped() {
                        Some(StopReason::AgentDied(died)) => (
                            StepStatus::Error,
                            format!(
                                "the agent exited during the step (while starting for it): {died}"
                            ),
                        ),
                        Some(reason) => (StepStatus::Interrupted, reason.cut_off_message()),
                        None if failure.nothing_sent => (
                            StepStatus::NotRun,
                            format!("not sent: the agent could not start: {why}"),
                        ),
                        None => (
                            StepStatus::Error,
                            format!(
                                "the agent exited during the step (while starting for it): {why}"
                            ),
                        ),
                    };
                    self.emit(step_finished(
                        id,
                        status,
                        Some(message),
                        Duration::ZERO,
                        None,
                    ));
                    return failure.ending;
                }
            };
            let mut request = request;
            if let Some(summary) = started.replay.as_mut().and_then(|r| r.take_summary()) {
                request.instruction = format!("{summary}\n{}", request.instruction);
            }
            let marks = LogMarks::take(&self.run_dir().join("logs"));
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
                    return Ending::error(message);
                }
            };
            let usage = verdict.usage.as_ref().map(|u| Usage {
                session_id: Some(u.session_id.clone()),
                turns: u32::try_from(u.num_turns).ok(),
                duration_ms: Some(u.duration_ms),
                cost_usd: u.cost_reported.then_some(u.step_cost_usd),
                total_cost_usd: u.cost_reported.then_some(u.total_cost_usd),
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
            });
            if let Some(u) = verdict.usage.as_ref().filter(|u| u.cost_reported) {
                self.suite.budget.add(&self.test.rel_path, u.step_cost_usd);
            }
            if matches!(verdict.status, StepStatus::Ok | StepStatus::Warn) && !verdict.interrupted {
                // The step whose cost crossed a ceiling is the one that stops.
                if let Some(why) = self.suite.budget.exhausted(&self.test.rel_path, max_cost) {
                    verdict.status = StepStatus::OverBudget;
                    verdict.message = format!("over budget after this step: {why}");
                }
            }
            if !verdict.interrupted {
                self.capture_browser(started, id, &mut verdict).await;
            }
            let message = (!verdict.message.is_empty()).then(|| verdict.message.clone());
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
                return Ending::from_stop(reason);
            }
            let replay_info = match (started.replay.as_mut(), replay_key.as_ref()) {
                (Some(replay), Some(key)) => {
                    let mut info = replay::by_the_agent(fallback.as_ref());
                    if replay.records() && verdict.status == StepStatus::Ok {
                        let cost = usage.as_ref().and_then(|u| u.cost_usd);
                        let not_recorded =
                            match replay.actions_of(&console_calls, &verdict.tool_calls) {
                                Ok(actions) => replay.record(key, actions, cost).err(),
                                Err(why) => Some(why),
                            };
                        match not_recorded {
                            None => info.recorded = true,
                            Some(why) => {
                                let note = format!("not recorded: {why}");
                                info.note = Some(match info.note.take() {
                                    Some(before) => format!("{before}; {note}"),
                                    None => note,
                                });
                            }
                        }
                    }
                    Some(info)
                }
                _ => None,
            };
            self.emit(step_finished_with(
                id,
                verdict.status,
                message.clone(),
                verdict.duration,
                usage,
                replay_info,
            ));
            if let Some(fault) = &verdict.fault {
                let again = if verdict.restarts > 0 {
                    ", again after a restart"
                } else {
                    " and could not be restarted"
                };
                return Ending::error(format!(
                    "the agent {fault} during step {id}{again}; the session gave up"
                ));
            }
            if let Some(death) = &verdict.agent_died {
                return Ending::error(format!("the agent died during step {id}: {death}"));
            }
            if let Some(reason) = self.stopped() {
                return Ending::from_stop(reason);
            }
            match verdict.status {
                StepStatus::Ok
                | StepStatus::Skipped
                | StepStatus::NotRun
                | StepStatus::Interrupted => {}
                StepStatus::Warn => {
                    warnings.push(format!("step {id} warned: {}", message.unwrap_or_default()))
                }
                StepStatus::Error
                | StepStatus::ProtocolError
                | StepStatus::Timeout
                | StepStatus::OverBudget => {
                    return Ending {
                        outcome: RunOutcome::Failed,
                        message: Some(format!(
                            "step {id} {}: {}",
                            verdict.status.as_str(),
                            message.unwrap_or_default()
                        )),
                    };
                }
            }
            // A passed step with a checkpoint saves it (not while replaying a resumed prefix).
            if let (Some(name), None) = (&step.checkpoint, restored) {
                if matches!(verdict.status, StepStatus::Ok | StepStatus::Warn) {
                    if let Err(ending) = self
                        .checkpoint(CheckpointAction::Save, name, Some(id), vars)
                        .await
                    {
                        return ending;
                    }
                }
            }
        }
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
    async fn agent(&self, started: &mut Started) -> Result<ActorRef<AgentMsg>, AgentStartFailure> {
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

    /// SPEC §11: the evidence the supervisor takes from the browser at the end of a step, and
    /// what the page's console errors make of a passing verdict. A failed capture is noted on
    /// the step, never fatal.
    async fn capture_browser(&self, started: &Started, id: u32, verdict: &mut StepVerdict) {
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
        let passed = matches!(verdict.status, StepStatus::Ok | StepStatus::Warn);
        let joined = |message: &str, more: &str| {
            if message.is_empty() {
                more.to_string()
            } else {
                format!("{message} ({more})")
            }
        };
        match browser.console_verdict(passed, &capture) {
            None => {}
            Some(crate::browser::session::ConsoleVerdict::Warn(why)) => {
                verdict.status = StepStatus::Warn;
                verdict.message = joined(&verdict.message, &why);
            }
            Some(crate::browser::session::ConsoleVerdict::Fail(why)) => {
                verdict.status = StepStatus::Error;
                verdict.message = joined(&verdict.message, &why);
            }
        }
    }

    pub(super) fn emit_excerpt(&self, step_id: u32, marks: &LogMarks) {
        let excerpt = marks.excerpt_since(&self.run_dir().join("logs"));
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
        replay,
    }
}
