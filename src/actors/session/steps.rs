//! The steps of a session in order, each one pipeline over a [`StepRun`]: rendered, skipped or
//! not sent over budget, then its replay (`replay_stage.rs`), else the agent's turn
//! (`agent_stage.rs`) and its recording; every end of a step is a [`StepEnd`] that goes out as
//! the step's `step_finished` and through the policy (`policy.rs`): go on, go on warned, or end
//! the session. A passed checkpoint step saves it right after.

use super::policy::{AfterStep, StepEnd};
use super::*;
use crate::model::ids::StepId;

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
}

impl<'s> Steps<'s> {
    pub(super) fn new(session: &'s Driver, kit: &'s mut SessionKit) -> Self {
        Self { session, kit }
    }

    /// The steps in order, each through its stages (replay → agent → budgets → verdict).
    pub(super) async fn run(&mut self) -> Ending {
        let session = self.session;
        let strict = session.test.effective.provider.strict_warnings.value;
        let mut warnings = Vec::new();
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
                return Ending::from_stop(reason);
            }
            let restored = resumed_through.filter(|(last, _)| step.step_id <= *last);
            match self.one_step(step, restored).await {
                Ok(Some(warning)) => warnings.push(warning),
                Ok(None) => {}
                Err(ending) => return ending,
            }
        }
        policy::final_ending(&warnings, strict)
    }

    /// One step: `Ok(Some(warning))` when it warned, `Err` when the session ends here.
    async fn one_step(
        &mut self,
        step: &PlannedStep,
        restored: Option<(StepId, &str)>,
    ) -> Result<Option<String>, Ending> {
        let id = step.step_id;
        let _ = self
            .session
            .myself
            .cast(SessionMsg::StepStarting(step.step_id));
        let instruction = self
            .render(step, &self.kit.vars, &self.kit.workdir)
            .map_err(|e| Ending::error(e.to_string()))?;
        let skipped = if step.skip {
            Some("skip = true".to_string())
        } else {
            restored
                .filter(|_| !step.setup)
                .map(|(_, name)| format!("restored from checkpoint `{name}`"))
        };
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
            None => self.stages(&run).await,
        };
        self.finish(&run, end, &self.kit.vars).await
    }

    /// The stages of a step that is sent: the budget, its replay, else the agent and the
    /// recording of its pass.
    async fn stages(&mut self, run: &StepRun<'_>) -> StepEnd {
        if let Some(end) = self.budget_before() {
            return end;
        }
        // The step's window of console messages and failed requests opens.
        if let Some(browser) = &self.kit.browser {
            browser.begin_step();
        }
        match self.replay_stage(run).await {
            ReplayStage::Ended(end) => end,
            ReplayStage::ToAgent(turn) => self.agent_and_record(run, turn).await,
        }
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
