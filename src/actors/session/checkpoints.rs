//! `[checkpoint]` saves and restores in a session: a restore before the steps (resuming), a save
//! right after the step that names it passed.

use super::*;
use crate::model::ids::StepId;

impl Driver {
    /// Runs `[checkpoint] save` or `restore` for checkpoint `name`; a failure ends the run.
    pub(super) async fn checkpoint(
        &self,
        action: CheckpointAction,
        name: &str,
        step_id: Option<StepId>,
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
}
