//! The steps of a session in order, each one pipeline over a [`StepRun`]: rendered, skipped or
//! not sent over budget, then its replay (`replay_stage.rs`), else the agent's turn
//! (`agent_stage.rs`) and its recording; every end of a step is a [`StepEnd`] that goes out as
//! the step's `step_finished` and through the policy (`policy.rs`): go on, go on warned, or end
//! the session. A passed checkpoint step saves it right after.

use super::policy::{AfterStep, StepEnd};
use super::*;
use crate::model::ids::StepId;
use crate::replay::session::Settled;

/// Why a step's instruction could not be made ready for the agent.
#[derive(Debug, thiserror::Error)]
pub(super) enum RenderError {
    #[error("{source} ({provenance})")]
    Instruction {
        source: crate::model::assets::PrepareError,
        provenance: String,
    },
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot copy asset {} to {}: {source}", from.display(), to.display())]
    CopyAsset {
        from: PathBuf,
        to: PathBuf,
        source: std::io::Error,
    },
}

/// One step on its way through the pipeline.
pub(super) struct StepRun<'a> {
    pub(super) step: &'a PlannedStep,
    /// The step's id in events and reports.
    pub(super) id: StepId,
    /// The instruction as the agent gets it (variables substituted, assets inlined).
    pub(super) instruction: String,
    /// Resumed from a checkpoint through this step: the steps up to it were restored, not run.
    restored: Option<(StepId, &'a str)>,
}

/// A session's steps, run in order with what its setup started (its [`SessionKit`]).
pub(super) struct Steps<'s> {
    pub(super) session: &'s Driver,
    pub(super) kit: &'s mut SessionKit,
    /// The replayed steps whose passes wait for the harness watch to end (docs/replay.md, "What
    /// replay watches"), in order, with their events: the next steps replay meanwhile.
    held: Vec<HeldStepRecord<'s>>,
    /// The warnings of the steps so far.
    warnings: Vec<String>,
}

/// A replayed step whose record waits for the harness watch.
struct HeldStepRecord<'s> {
    run: StepRun<'s>,
    end: StepEnd,
    events: Vec<crate::report::records::events::Event>,
}

impl<'s> Steps<'s> {
    pub(super) fn new(session: &'s Driver, kit: &'s mut SessionKit) -> Self {
        Self {
            session,
            kit,
            held: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// The steps in order, each through its stages (replay → agent → budgets → verdict).
    pub(super) async fn run(&mut self) -> Ending {
        let session = self.session;
        let strict = session.test.effective.provider.strict_warnings.value;
        // Resuming from a checkpoint: the steps up to and including its step were restored, not
        // run (but `setup = true` steps still run), and no checkpoint is saved among them.
        let resumed_through = session.suite.from_checkpoint.as_deref().and_then(|name| {
            session
                .test
                .plan
                .iter()
                .find(|s| s.checkpoint.as_deref() == Some(name))
                .map(|s| (s.step_id, name))
        });
        for step in &session.test.plan {
            if let Some(reason) = session.stopped() {
                self.release_held(&reason.cut_off_message());
                return Ending::from_stop(reason);
            }
            // Passes whose watch has ended are settled before the next step starts.
            if self.kit.replay.as_ref().is_some_and(|r| r.settle_due()) {
                if let Err(ending) = self.settle(None).await {
                    return ending;
                }
            }
            let restored = resumed_through.filter(|(last, _)| step.step_id <= *last);
            if let Err(ending) = self.one_step(step, restored).await {
                return ending;
            }
        }
        // The test passes only once the watch has ended and every held pass stands.
        if let Err(ending) = self.settle(None).await {
            return ending;
        }
        policy::final_ending(&self.warnings, strict)
    }

    /// One step: `Err` when the session ends here.
    async fn one_step(
        &mut self,
        step: &'s PlannedStep,
        restored: Option<(StepId, &'s str)>,
    ) -> Result<(), Ending> {
        let id = step.step_id;
        let _ = self
            .session
            .myself
            .cast(SessionMsg::StepStarting(step.step_id));
        let instruction = match self.render(step, &self.kit.vars, &self.kit.workdir) {
            Ok(instruction) => instruction,
            Err(e) => {
                let ending = Ending::error(e.to_string());
                self.release_held("a later step could not be sent");
                return Err(ending);
            }
        };
        let skipped = if step.skip {
            Some("skip = true".to_string())
        } else {
            restored
                .filter(|_| !step.setup)
                .map(|(_, name)| format!("restored from checkpoint `{name}`"))
        };
        // A replayed pass may be held: the step's events wait with it.
        if skipped.is_none() && self.kit.replay.as_ref().is_some_and(|r| r.may_hold()) {
            self.session.hold_events();
        }
        self.session.emit(EventKind::StepStarted {
            step_id: id,
            instruction: summarize_instruction(&instruction, 100),
            // A skipped step sends nothing.
            instruction_sent: skipped.is_none().then(|| instruction.clone()),
            provenance: provenance(step),
        });
        #[cfg(feature = "fault-injection")]
        if self.session.fault_driver_panic {
            panic!("injected fault: the session's driver panicked mid-step");
        }
        let run = StepRun {
            step,
            id,
            instruction,
            restored,
        };
        let end = match skipped {
            Some(message) => StepEnd::new(StepStatus::Skipped, Some(message)),
            None => match self.stages(&run).await? {
                (end, true) => {
                    let events = self.session.take_held_events();
                    // A checkpoint saves a state that has held; a step the browser's console
                    // failed ends the session once it settles: no step replays after either.
                    let now = run.step.checkpoint.is_some()
                        || !matches!(end.status, StepStatus::Ok | StepStatus::Warn);
                    self.held.push(HeldStepRecord { run, end, events });
                    if now {
                        self.settle(None).await?;
                    }
                    return Ok(());
                }
                (end, false) => end,
            },
        };
        self.settle(Some(&run)).await?;
        self.finish_step(&run, end).await
    }

    /// The held passes, once the harness watch has ended (`current`: the step under way, whose
    /// events wait behind theirs): each stands, or goes to the agent (under `only`: fails), in
    /// order; then the waiting events go out. `Err` when a settled step ends the session: the
    /// steps replayed after it, and `current`, are recorded as cut off.
    async fn settle(&mut self, current: Option<&StepRun<'_>>) -> Result<(), Ending> {
        let waiting = self.session.take_held_events();
        let held = std::mem::take(&mut self.held);
        let fates = match (held.is_empty(), self.kit.replay.as_mut()) {
            (false, Some(replay)) => {
                let console = self.kit.console.as_ref().map(|s| s.console().as_ref());
                let stop = Driver::until_stopped(self.session.stop.clone());
                replay.settle(console, stop).await
            }
            _ => Ok(Vec::new()),
        };
        let fates = match fates {
            Ok(fates) => fates,
            Err(stopped) => {
                // Stopped before the watch ended: the held steps were not judged.
                for step in held {
                    self.session.send_events(step.events);
                    self.cut_off(&step.run, &stopped.cut_off_message());
                }
                self.session.send_events(waiting);
                // The step under way ends as the stop left it; the session ends after it.
                return match current {
                    Some(_) => Ok(()),
                    None => Err(Ending::from_stop(stopped)),
                };
            }
        };
        let mut fates = fates.into_iter();
        let mut held = held.into_iter();
        while let Some(step) = held.next() {
            self.session.send_events(step.events);
            let end = match fates.next() {
                None | Some(Settled::Stands) => step.end,
                Some(Settled::NoAgent { message, info }) => {
                    let mut end = StepEnd::new(StepStatus::Error, Some(message));
                    end.replay = Some(info);
                    end
                }
                Some(Settled::ToAgent(turn)) => self.agent_and_record(&step.run, Some(turn)).await,
            };
            if let Err(ending) = self.finish_step(&step.run, end).await {
                let why = "the session ended at an earlier step when the harness watch ended";
                for later in held {
                    self.session.send_events(later.events);
                    self.cut_off(&later.run, why);
                }
                self.session.send_events(waiting);
                if let Some(run) = current {
                    self.cut_off(run, why);
                }
                return Err(ending);
            }
        }
        self.session.send_events(waiting);
        Ok(())
    }

    /// The session ends before the harness watch settled the held passes (`why`: a stop, a
    /// step that could not be rendered): those steps ran, but were not judged.
    fn release_held(&mut self, why: &str) {
        for step in std::mem::take(&mut self.held) {
            self.session.send_events(step.events);
            self.cut_off(&step.run, why);
        }
        let waiting = self.session.take_held_events();
        self.session.send_events(waiting);
    }

    /// A step that ran (its actions replayed) but was not judged: `why`.
    fn cut_off(&self, run: &StepRun<'_>, why: &str) {
        self.session.emit(EventKind::StepFinished {
            step_id: run.id,
            status: StepStatus::Interrupted,
            message: Some(format!(
                "its actions replayed while the harness was watched; not judged: {why}"
            )),
            duration_ms: 0,
            usage: None,
            replay: None,
        });
    }

    /// The step's end through [`Self::finish`], its warning kept.
    async fn finish_step(&mut self, run: &StepRun<'_>, end: StepEnd) -> Result<(), Ending> {
        if let Some(warning) = self.finish(run, end, &self.kit.vars).await? {
            self.warnings.push(warning);
        }
        Ok(())
    }

    /// The stages of a step that is sent: the budget, its replay, else the agent and the
    /// recording of its pass (after the held passes settled: they come first). `true`: a
    /// replayed pass held until the harness watch ends.
    async fn stages(&mut self, run: &StepRun<'_>) -> Result<(StepEnd, bool), Ending> {
        if let Some(end) = self.budget_before() {
            return Ok((end, false));
        }
        // The step's window of console messages and failed requests opens.
        if let Some(browser) = &self.kit.browser {
            browser.begin_step();
        }
        Ok(match self.replay_stage(run).await {
            ReplayStage::Ended(end) => (end, false),
            ReplayStage::Held(end) => (end, true),
            ReplayStage::ToAgent(turn) => {
                self.settle(Some(run)).await?;
                (self.agent_and_record(run, turn).await, false)
            }
        })
    }

    /// The step's end: its `step_finished`, then what the policy makes of it; a step that
    /// passed (or warned) saves its checkpoint.
    async fn finish(
        &self,
        run: &StepRun<'_>,
        end: StepEnd,
        vars: &SessionVars,
    ) -> Result<Option<String>, Ending> {
        let after = policy::after_step(run.id, &end);
        let passed = matches!(end.status, StepStatus::Ok | StepStatus::Warn);
        // The one place a step's `step_finished` is written.
        self.session.emit(EventKind::StepFinished {
            step_id: run.id,
            status: end.status,
            message: end.message,
            duration_ms: millis(end.duration),
            usage: end.usage,
            replay: end.replay.map(Box::new),
        });
        match after {
            AfterStep::Continue => {
                if passed {
                    self.save_checkpoint(run, vars).await?;
                }
                Ok(None)
            }
            AfterStep::Warned(warning) => {
                self.save_checkpoint(run, vars).await?;
                Ok(Some(warning))
            }
            AfterStep::End(ending) => Err(ending),
        }
    }

    /// A passed step with a checkpoint saves it (not while replaying a resumed prefix).
    async fn save_checkpoint(&self, run: &StepRun<'_>, vars: &SessionVars) -> Result<(), Ending> {
        match (&run.step.checkpoint, run.restored) {
            (Some(name), None) => {
                self.session
                    .checkpoint(CheckpointAction::Save, name, Some(run.id), vars)
                    .await
            }
            _ => Ok(()),
        }
    }

    /// The budget before a step: a ceiling already reached sends nothing.
    fn budget_before(&self) -> Option<StepEnd> {
        let max_cost = self.session.test.effective.provider.max_cost_usd.value;
        let why = self
            .session
            .suite
            .budget
            .exhausted(&self.session.test.rel_path, max_cost)?;
        Some(StepEnd::new(
            StepStatus::OverBudget,
            Some(format!("not sent to the agent: {why}")),
        ))
    }

    /// The step as the agent gets it, with its timeout as the loader resolved it.
    pub(super) fn request(&self, run: &StepRun<'_>) -> StepRequest {
        let Provenance {
            source_file,
            source_index,
            include_chain,
        } = provenance(run.step);
        StepRequest {
            step_id: run.id,
            source_file,
            source_index,
            include_chain,
            instruction: run.instruction.clone(),
            timeout: run.step.timeout.value,
            question: None,
            replayed: Vec::new(),
            throttle: crate::providers::ThrottleSignal::default(),
        }
    }

    /// The instruction as the agent gets it: variables substituted, assets inlined or copied.
    pub(super) fn render(
        &self,
        step: &PlannedStep,
        vars: &SessionVars,
        workdir: &Path,
    ) -> Result<String, RenderError> {
        let rendered = prepare_instruction(
            step,
            &self.session.suite.project_root,
            &step_vars(vars, step.step_id),
            workdir,
        )
        .map_err(|source| RenderError::Instruction {
            source,
            provenance: step.provenance(),
        })?;
        for copy in &rendered.copies {
            if let Some(parent) = copy.to.parent() {
                std::fs::create_dir_all(parent).map_err(|source| RenderError::CreateDir {
                    path: parent.to_path_buf(),
                    source,
                })?;
            }
            std::fs::copy(&copy.from, &copy.to).map_err(|source| RenderError::CopyAsset {
                from: copy.from.clone(),
                to: copy.to.clone(),
                source,
            })?;
        }
        Ok(rendered.text)
    }
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

#[cfg(test)]
mod tests;
