//! A session's recording step by step: a step's key, the recording in force for it and the
//! try at replaying it, a pass written in force or kept pending review when it would weaken
//! it, a failed step's recording retired as a baseline, the ageing of learned tokens.

use super::*;

impl ReplaySession {
    /// The step's recording in force with the same place and instruction as `key` (replayable
    /// or not): the baseline a new pass must match in strength.
    pub(super) fn in_force(&self, key: &StepKey) -> Option<&RecordedStep> {
        self.recording.as_ref().ok()?.steps.iter().find(|s| {
            s.step == key.step
                && s.provenance == key.provenance
                && s.instruction_hash == key.instruction_hash
        })
    }

    /// What a pending re-recording of the step `key` would drop against the one in force
    /// (`None`: there is none for this instruction).
    pub(super) fn pending_note(&self, key: &StepKey) -> Option<String> {
        let pending = self
            .pending
            .steps
            .iter()
            .find(|s| s.step == key.step && s.instruction_hash == key.instruction_hash)?;
        let weaker = self.in_force(key).and_then(|old| {
            crate::replay::strength::weakening(
                old,
                &pending.actions,
                pending.facts.as_deref().unwrap_or_default(),
            )
        });
        Some(match weaker {
            Some(w) => w.note(key.step),
            None => format!(
                "recording for step {}: pending review (supervisor replay review)",
                key.step
            ),
        })
    }

    /// Marks the step's recording failed, never to be replayed again, and says so.
    pub(super) fn retire_words(&mut self, key: &StepKey, under: &str) -> String {
        let why = format!(
            "the agent failed the step under {under} on {}",
            chrono::Utc::now().format("%Y-%m-%d %H:%M UTC")
        );
        match self.retire(key, why) {
            Ok(()) => "the recording from before is never replayed again: it is kept only as the \
                       baseline a new pass must match in strength"
                .to_string(),
            Err(e) => format!("its recording could not be marked failed: {e}"),
        }
    }

    /// Where the agent's Playwright MCP writes the snapshot files its answers link to.
    pub(super) fn browser_output_dir(&self) -> Option<&Path> {
        self.browser.as_ref().and_then(BrowserReplay::output_dir)
    }

    pub(super) fn key(&self, step: &PlannedStep, instruction: &str) -> StepKey {
        StepKey {
            step: step.step_id,
            provenance: step.provenance(),
            instruction_hash: instruction_hash(&self.placeholders, instruction),
            provider: self.provider,
        }
    }

    /// Replays the step's recording, when it has a usable one.
    pub(super) async fn try_step(
        &self,
        key: &StepKey,
        asked: &StepAsked<'_>,
    ) -> (ReplayVerdict, Option<RecordedStep>, Option<WatchRecheck>) {
        let recording = match &self.recording {
            Ok(r) => r,
            Err(why) => {
                return (
                    ReplayVerdict::Fallback(Fallback::Unreadable(why.clone())),
                    None,
                    None,
                )
            }
        };
        let recorded = match recording.lookup(key, chrono::Utc::now(), self.max_age_days) {
            Ok(step) => step.clone(),
            Err(miss) => {
                let miss = if recording.steps.is_empty() {
                    Miss::NoFile
                } else {
                    miss
                };
                return (ReplayVerdict::Fallback(Fallback::Miss(miss)), None, None);
            }
        };
        let ctx = ReplayContext {
            console: asked.console,
            placeholders: &self.placeholders,
            normalizer: &self.normalizer,
            run_id: asked.run_id.clone(),
            step_id: key.step,
            // As the agent's own shell tool ran it: with the step's id.
            env: self
                .env
                .iter()
                .filter(|(name, _)| name != "BUGATTI_STEP_ID")
                .cloned()
                .chain([("BUGATTI_STEP_ID".to_string(), key.step.to_string())])
                .collect(),
            action_timeout: asked.step_timeout,
            instruction: asked.instruction.to_string(),
            session_started: self.started_at,
            agent_cwd: self.agent_cwd.clone(),
        };
        let tools = AgentTools {
            shell: recorded.provider.info().shell,
            browser: self.browser.as_ref(),
        };
        let verdict = replay_step(&ctx, tools, &recorded).await;
        let watch = self.harness.as_ref().and_then(Option::as_ref);
        let (verdict, held) = watched(watch, asked.console, &recorded, verdict);
        (verdict, Some(recorded), held)
    }

    /// `[replay] audit` picks this step today: it goes to the agent although it could replay.
    pub(super) fn audits(&self, step: StepId) -> bool {
        let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
        self.audit.picks(&self.test, step, &today)
    }

    /// The step's current recording, if it has one this run could replay.
    pub(super) fn usable(&self, key: &StepKey) -> Option<RecordedStep> {
        let recording = self.recording.as_ref().ok()?;
        recording
            .lookup(key, chrono::Utc::now(), self.max_age_days)
            .ok()
            .cloned()
    }

    /// Marks the step's recording failed (the agent failed a step it would have passed): never
    /// replayed again, kept as the baseline of strength ([`super::strength`]).
    pub(super) fn retire(&mut self, key: &StepKey, why: String) -> Result<(), WriteError> {
        let Ok(recording) = &mut self.recording else {
            return Ok(());
        };
        let Some(step) = recording.steps.iter_mut().find(|s| {
            s.step == key.step
                && s.provenance == key.provenance
                && s.instruction_hash == key.instruction_hash
        }) else {
            return Ok(());
        };
        if step.failed.is_none() {
            step.failed = Some(why);
            return store::save(&self.path, recording);
        }
        Ok(())
    }

    /// After a replayed step: a learned position seen varying starts its count again, the others
    /// count one more quiet replay, and one quiet for
    /// [`super::domains::EXPIRES_AFTER`] replays is exact again. The recording is
    /// written only when a count changed.
    pub(super) fn age(&mut self, step: StepId, varied: &[(usize, Position)]) {
        let Ok(recording) = &mut self.recording else {
            return;
        };
        let Some(recorded) = recording.steps.iter_mut().find(|s| s.step == step) else {
            return;
        };
        let changed = crate::replay::record::age(recorded, varied);
        if changed {
            if let Err(e) = store::save(&self.path, recording) {
                tracing::warn!("replay: could not write {}: {e}", self.path.display());
            }
        }
    }

    /// Writes the agent's pass of a step into the recording. `previous`: the recording the step
    /// had (a drift or an audit), with the positions a soft drift found: what varied while the
    /// agent passed is learned as volatile.
    pub(super) fn write(
        &mut self,
        turn: &AgentTurn,
        mut actions: Vec<Action>,
        cost_usd: Option<f64>,
        previous: Option<(&RecordedStep, &[(usize, Position)])>,
        facts: Vec<String>,
        agent_version: Option<String>,
    ) -> Result<Written, WriteError> {
        let instruction = turn.instruction.as_str();
        let relations = relations(
            previous.map(|(old, _)| old),
            &actions,
            &self.normalizer,
            instruction,
        );
        // Without stated facts the step is compared exactly: nothing is learned for it.
        let exact = facts.is_empty();
        if let Some((old, soft)) = previous.filter(|_| !exact) {
            let learning = Learning {
                instruction,
                previous_window: Some((
                    old.run_started_at.unwrap_or(old.recorded_at),
                    old.recorded_at,
                )),
                window: (self.started_at, chrono::Utc::now()),
                step_began: self.step_began,
            };
            learn(old, &mut actions, soft, &self.normalizer, &learning);
        }
        let run_started_at = Some(self.started_at);
        // A file we could not read is replaced by a good one.
        if self.recording.is_err() {
            self.recording = Ok(Recording::new(self.test.clone()));
        }
        let key = &turn.key;
        let renewed = RecordedStep {
            step: key.step,
            provenance: key.provenance.clone(),
            instruction_hash: key.instruction_hash.clone(),
            provider: key.provider,
            recorded_at: chrono::Utc::now(),
            run_started_at,
            cost_usd,
            actions,
            relations: Some(relations),
            facts: Some(facts),
            agent_version,
            failed: None,
            first_look_ms: self
                .first_look
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        };
        // A pass that checks less than the recording in force waits for a person.
        let weaker = self.in_force(key).and_then(|old| {
            crate::replay::strength::weakening(
                old,
                &renewed.actions,
                renewed.facts.as_deref().unwrap_or_default(),
            )
        });
        if let Some(weaker) = weaker {
            self.pending.upsert(renewed);
            store::save(&self.pending_path, &self.pending)?;
            return Ok(Written::Pending(weaker.note(key.step)));
        }
        let recording = self
            .recording
            .as_mut()
            .unwrap_or_else(|_| unreachable!("a fresh recording was just set"));
        recording.upsert(renewed);
        store::save(&self.path, recording)?;
        // At least as strong: a re-recording that waited for review is moot.
        if self.pending.steps.iter().any(|s| s.step == key.step) {
            self.pending.steps.retain(|s| s.step != key.step);
            store::save_or_remove(&self.pending_path, &self.pending)?;
        }
        Ok(Written::InForce)
    }
}
