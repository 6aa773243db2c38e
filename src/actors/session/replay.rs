//! Replay in a session (see docs/replay.md): before a step goes to the agent, its recording is replayed;
//! after the agent passed a step, what it did is recorded. The recording is loaded once per
//! session and written back after each step it gained, so a run cut short keeps what it learnt.

use super::*;
use crate::console::record::CallRecord;
use crate::model::replay::{ReplayMode, ReplayedAction, StepMode, StepReplay};
use crate::providers::tool_calls::ToolCall;
use crate::replay::browser::BrowserReplay;
use crate::replay::browser_refs::Snapshot;
use crate::replay::format::{Action, RecordedStep, Recording};
use crate::replay::masks::Position;
use crate::replay::normalize::{instruction_hash, Normalizer};
use crate::replay::placeholders::Placeholders;
use crate::replay::record::{
    browser_action, console_action, file_action, learn, relations, shell_action, unreplayable_tool,
    Learning,
};
use crate::replay::replayer::{replay_step, ReplayContext};
use crate::replay::shell::AgentShell;
use crate::replay::store::{self, StepKey};
use crate::replay::verdict::{Fallback, Verdict};

/// How much of a replayed action's output the agent is told, when it is first needed.
const SUMMARY_OUTPUT_CHARS: usize = 300;

/// A session's replay: its recording, and how this session's values are masked.
pub(super) struct SessionReplay {
    mode: ReplayMode,
    provider: String,
    test: String,
    path: PathBuf,
    /// The recording as loaded (a fresh one when there is none), or why it cannot be used.
    recording: Result<Recording, String>,
    placeholders: Placeholders,
    normalizer: Normalizer,
    max_age_days: u32,
    /// The agent's environment: what a replayed shell action runs with.
    env: Vec<(String, String)>,
    /// Where the agent's own shell tool runs (`[provider] cwd`).
    agent_cwd: String,
    /// What the replayed steps did, for the agent's first message.
    replayed: Vec<String>,
    /// When the session started: a timestamp since then is current.
    started_at: chrono::DateTime<chrono::Utc>,
    /// `[replay] audit`.
    audit: crate::model::replay::AuditShare,
    /// The supervisor's own Playwright MCP client (`[browser] mcp = true`), started when a
    /// browser action first replays.
    browser: Option<BrowserReplay>,
    /// The last page snapshot the agent was shown in an earlier step: a ref it names in the
    /// next step may come from there.
    last_snapshot: Option<Snapshot>,
}

impl SessionReplay {
    /// `None` where replay does not apply: `[replay] mode = "off"`, or the `shell` provider (it
    /// is deterministic already).
    pub(super) fn new(
        test: &RootTest,
        project_root: &Path,
        vars: &SessionVars,
        env: Vec<(String, String)>,
        agent_cwd: &Path,
    ) -> Option<Self> {
        let effective = &test.effective;
        let mode = effective.replay.mode.value;
        let provider = effective.provider.name.value;
        if !crate::model::replay::applies(mode, provider) {
            return None;
        }
        let test_path = test.rel_path.to_string_lossy().into_owned();
        let path = store::recording_path(&effective.replay.dir_in(project_root), &test.rel_path);
        let mut values: Vec<(String, String)> = vars
            .vars
            .iter()
            .filter(|(name, _)| is_volatile_builtin(name))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        values.extend(vars.ports.iter().map(|(n, p)| (n.clone(), p.to_string())));
        values.extend(
            env.iter()
                // The console's and the browser's addresses carry a token of the session's.
                .filter(|(name, _)| {
                    name.starts_with("BUGATTI_MCP_") || name == crate::browser::CDP_URL_ENV
                })
                .cloned(),
        );
        let placeholders = Placeholders::new(values, test.effective.secret_pairs());
        let recording = match store::load(&path, &test_path) {
            Ok(Some(recording)) => Ok(recording),
            Ok(None) => Ok(Recording::new(test_path.clone())),
            Err(e) => Err(e.to_string()),
        };
        let normalizer =
            match Normalizer::new(placeholders.volatiles(), &effective.replay.ignore.value) {
                Ok(n) => n,
                // Checked when the config was loaded; should it fail here, mask nothing extra.
                Err(e) => {
                    tracing::warn!("[replay] ignore: {e}");
                    Normalizer::new(placeholders.volatiles(), &[])
                        .unwrap_or_else(|_| Normalizer::generic())
                }
            };
        Some(Self {
            mode,
            provider: provider.to_string(),
            test: test_path,
            path,
            recording,
            placeholders,
            normalizer,
            max_age_days: effective.replay.max_age_days.value,
            env,
            agent_cwd: agent_cwd.display().to_string(),
            replayed: Vec::new(),
            started_at: chrono::Utc::now(),
            audit: effective.replay.audit.value,
            browser: None,
            last_snapshot: None,
        })
    }

    /// Browser actions replay through `command` (the agent's own Playwright MCP command, with
    /// its output folder and secrets), run by `owner` in the agent's directory.
    pub(super) fn with_browser(
        mut self,
        command: crate::browser::mcp::McpCommand,
        owner: crate::process::owner::Owner,
        run_dir: PathBuf,
    ) -> Self {
        let browser = BrowserReplay::new(
            command,
            owner,
            PathBuf::from(&self.agent_cwd),
            self.env.clone(),
            run_dir,
        );
        // Started now, beside the rest of the setup, when a browser action may replay.
        if self.replays() && self.has_browser_actions() {
            browser.prestart();
        }
        self.browser = Some(browser);
        self
    }

    /// Whether the recording has a browser action to replay.
    fn has_browser_actions(&self) -> bool {
        self.recording.as_ref().is_ok_and(|r| {
            r.steps.iter().any(|s| {
                s.actions
                    .iter()
                    .any(|a| matches!(a, Action::Browser { .. }))
            })
        })
    }

    /// The screenshots a replay took again (the agent had taken them), relative to the run
    /// directory: the step's evidence.
    pub(super) fn take_screenshots(&self) -> Vec<String> {
        self.browser
            .as_ref()
            .map(BrowserReplay::take_screenshots)
            .unwrap_or_default()
    }

    /// Where the agent's Playwright MCP writes the snapshot files its answers link to.
    fn browser_output_dir(&self) -> Option<&Path> {
        self.browser.as_ref().and_then(BrowserReplay::output_dir)
    }

    /// Ends the supervisor's Playwright MCP client, if a replay started it.
    pub(super) async fn stop_browser(&mut self) {
        if let Some(browser) = self.browser.take() {
            browser.stop().await;
        }
    }

    /// `only`: no agent at all.
    pub(super) fn only(&self) -> bool {
        self.mode == ReplayMode::Only
    }

    /// Replayed steps are tried first (`auto`, `only`).
    pub(super) fn replays(&self) -> bool {
        matches!(self.mode, ReplayMode::Auto | ReplayMode::Only)
    }

    /// Steps the agent passed are recorded (`auto`, `record`).
    pub(super) fn records(&self) -> bool {
        matches!(self.mode, ReplayMode::Auto | ReplayMode::Record)
    }

    pub(super) fn key(&self, step: &PlannedStep, instruction: &str) -> StepKey {
        StepKey {
            step: step.step_id,
            provenance: step.provenance(),
            instruction_hash: instruction_hash(&self.placeholders, instruction),
            provider: self.provider.clone(),
        }
    }

    /// Replays the step's recording, when it has a usable one.
    pub(super) async fn try_step(
        &self,
        key: &StepKey,
        instruction: &str,
        console: Option<&Console>,
        run_id: &str,
        step_timeout: Duration,
    ) -> (Verdict, Option<RecordedStep>) {
        let recording = match &self.recording {
            Ok(r) => r,
            Err(why) => return (Verdict::Fallback(Fallback::Unreadable(why.clone())), None),
        };
        let recorded = match recording.lookup(key, chrono::Utc::now(), self.max_age_days) {
            Ok(step) => step.clone(),
            Err(miss) => {
                let miss = if recording.steps.is_empty() {
                    store::Miss::NoFile
                } else {
                    miss
                };
                return (Verdict::Fallback(Fallback::Miss(miss)), None);
            }
        };
        let ctx = ReplayContext {
            console,
            placeholders: &self.placeholders,
            normalizer: &self.normalizer,
            run_id: run_id.to_string(),
            step_id: u32::try_from(key.step).unwrap_or(u32::MAX),
            // As the agent's own shell tool ran it: with the step's id.
            env: self
                .env
                .iter()
                .filter(|(name, _)| name != "BUGATTI_STEP_ID")
                .cloned()
                .chain([("BUGATTI_STEP_ID".to_string(), key.step.to_string())])
                .collect(),
            // An action the agent's tool set no bound for is bound as the agent's step was.
            action_timeout: step_timeout,
            instruction: instruction.to_string(),
            shell: AgentShell::of_provider(&recorded.provider),
            session_started: self.started_at,
            agent_cwd: PathBuf::from(&self.agent_cwd),
            browser: self.browser.as_ref(),
        };
        (replay_step(&ctx, &recorded).await, Some(recorded))
    }

    /// The session's placeholders (the report fills recorded inputs with this session's values).
    pub(super) fn placeholders(&self) -> &Placeholders {
        &self.placeholders
    }

    /// `[replay] audit` picks this step today: it goes to the agent although it could replay.
    pub(super) fn audits(&self, step: usize) -> bool {
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

    /// Deletes the step's recording (an audit found it would have passed a failing step).
    pub(super) fn forget(&mut self, step: usize) -> Result<(), String> {
        let Ok(recording) = &mut self.recording else {
            return Ok(());
        };
        recording.steps.retain(|s| s.step != step);
        store::save(&self.path, recording).map_err(|e| e.to_string())
    }

    /// After a replayed step: a learned position seen varying starts its count again, the others
    /// count one more quiet replay, and one quiet for
    /// [`crate::replay::domains::EXPIRES_AFTER`] replays is exact again. The recording is
    /// written only when a count changed.
    pub(super) fn age(&mut self, step: usize, varied: &[(usize, Position)]) {
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

    /// Remembers what a replayed step did: the agent, when first needed, is told.
    pub(super) fn note_replayed(&mut self, step_id: u32, instruction: &str, step: &RecordedStep) {
        self.replayed
            .push(self.summary_of(step_id, instruction, &step.actions));
    }

    /// A step whose replay stopped at action `stopped` (0-based): the agent takes it over and is
    /// told (above the step's instruction) which of its actions ran before (the page, the files, the processes are as they
    /// left them). `drifted`: that action ran too, and its output differed.
    pub(super) fn note_partial(
        &mut self,
        step_id: u32,
        step: &RecordedStep,
        stopped: usize,
        drifted: bool,
    ) {
        let ran = if drifted { stopped + 1 } else { stopped };
        let ran = &step.actions[..ran.min(step.actions.len())];
        if ran.is_empty() {
            return;
        }
        let header = format!(
            "- step {step_id}, the step below, now yours: {} of its recorded actions ran again{}\n",
            ran.len(),
            if drifted {
                "; the last one's output differed from the recording"
            } else {
                " and matched; the next could not run"
            },
        );
        let shown = if drifted { &ran[..ran.len() - 1] } else { ran };
        let mut text = header + &self.actions_text(shown);
        if let (true, Some(last)) = (drifted, ran.last()) {
            let what = self.placeholders.fill(&last.describe());
            text.push_str(&format!("  $ {what}\n    (output differed: look again)\n"));
        }
        self.replayed.push(text);
    }

    /// What replayed actions did, for the agent: each action and its output, cut.
    fn summary_of(&self, step_id: u32, instruction: &str, actions: &[Action]) -> String {
        format!("- step {step_id}: {}\n", instruction.trim()) + &self.actions_text(actions)
    }

    fn actions_text(&self, actions: &[Action]) -> String {
        let mut text = String::new();
        for action in actions {
            let what = self.placeholders.fill(&action.describe());
            let output = self.placeholders.fill(&action.output());
            let cut: String = output.chars().take(SUMMARY_OUTPUT_CHARS).collect();
            let more = if cut.len() < output.len() { " …" } else { "" };
            text.push_str(&format!("  $ {what}\n"));
            for line in cut.trim_end().lines() {
                text.push_str(&format!("    {line}\n"));
            }
            if !more.is_empty() {
                text.push_str("    …\n");
            }
        }
        text
    }

    /// For the agent's first step after replayed ones: what those did, so that it knows the
    /// state it finds. Empty once told.
    pub(super) fn take_summary(&mut self) -> Option<String> {
        if self.replayed.is_empty() {
            return None;
        }
        let steps = std::mem::take(&mut self.replayed).concat();
        Some(format!(
            "Before this step, the actions below were run again without you: the commands, file \
             checks and browser calls recorded when an agent last passed these steps; each \
             output listed matched its recording. The system (and the browser's page) is in the \
             state they left it in.\n{steps}\n"
        ))
    }

    /// The step's actions as a recording keeps them, or why it cannot be recorded.
    pub(super) fn actions_of(
        &self,
        console_calls: &[CallRecord],
        tool_calls: &[ToolCall],
    ) -> Result<Vec<Action>, String> {
        let cwd = self.agent_cwd.as_str();
        let mut timed: Vec<(Option<std::time::Instant>, Action)> = Vec::new();
        // The page snapshots the agent was shown, oldest first: a ref it names comes from one.
        let mut snapshots: Vec<Snapshot> = self.last_snapshot.iter().cloned().collect();
        for call in tool_calls {
            if let Some(why) = &call.unreplayable {
                return Err(why.clone());
            }
            if let Some(why) = unreplayable_tool(&call.tool) {
                return Err(why);
            }
            if let Some(action) = self.file_or_browser_action(call, &mut snapshots)? {
                timed.push((Some(call.at), action));
                continue;
            }
            if let Some(shell) = &call.shell {
                let action = shell_action(
                    &self.placeholders,
                    &shell.command,
                    cwd,
                    shell.exit_code,
                    &self.placeholders.redact(&shell.output),
                );
                let action = crate::replay::record::with_timeout(action, shell.timeout_ms);
                timed.push((Some(call.at), action));
            }
        }
        for call in console_calls {
            if call.is_error {
                // A refused or failed call would fail the same way every run: nothing to check.
                return Err(format!(
                    "the console refused a call ({}): a refused or failed call is not replayed",
                    call.tool
                ));
            }
            let answer = crate::console::Answer {
                text: call.answer.clone(),
                is_error: call.is_error,
                exit_code: call.exit_code,
                bytes: call.bytes,
            };
            if let Some(action) =
                console_action(&self.placeholders, &call.tool, &call.arguments, &answer)
            {
                timed.push((call.began, action));
            }
        }
        // Stable: a console call and a shell call seen at the same instant keep their order.
        timed.sort_by_key(|(at, _)| *at);
        // A look at the commands' states keeps how long after the previous action it came.
        for i in 1..timed.len() {
            if let (Some(now), Some(before)) = (timed[i].0, timed[i - 1].0) {
                let gap = now.saturating_duration_since(before);
                crate::replay::record::set_after(&mut timed[i].1, gap);
            }
        }
        let actions: Vec<Action> = timed.into_iter().map(|(_, a)| a).collect();
        if actions.is_empty() {
            return Err(
                "the agent ran no command in this step: there is nothing to check again".into(),
            );
        }
        Ok(actions)
    }

    /// A read-only file tool's or a browser tool's call as recorded (`None` for another tool);
    /// `Err` says why the step cannot be recorded.
    fn file_or_browser_action(
        &self,
        call: &ToolCall,
        snapshots: &mut Vec<Snapshot>,
    ) -> Result<Option<Action>, String> {
        let is_file = crate::replay::files::is_file_tool(&call.tool);
        let browser_tool = crate::replay::browser::recorded_tool(&call.tool);
        if !is_file && browser_tool.is_none() {
            return Ok(None);
        }
        let Some(answer) = &call.answer else {
            return Err(format!("the agent's {} call got no answer", call.tool));
        };
        if is_file {
            let check = crate::replay::files::from_claude(
                &call.tool,
                &call.input,
                &answer.text,
                answer.structured.as_ref(),
                answer.is_error,
                Path::new(&self.agent_cwd),
            )
            .map_err(|e| e.to_string())?;
            // What it reads now bounds what a replay will read of it.
            let check = crate::replay::files::measured(check, Path::new(&self.agent_cwd));
            return file_action(&self.placeholders, &check).map(Some);
        }
        let tool = browser_tool.unwrap_or_default();
        let elements = crate::replay::browser::element_paths(&call.input, snapshots)?;
        let output =
            crate::replay::browser::inline_snapshots(&answer.text, self.browser_output_dir());
        if let Some(snapshot) = crate::replay::browser::snapshot_of(&output) {
            snapshots.push(snapshot);
        }
        Ok(Some(browser_action(
            &self.placeholders,
            tool,
            &call.input,
            elements,
            &output,
            answer.is_error,
        )))
    }

    /// After an agent's step: the last page snapshot it was shown, for the refs of the next.
    pub(super) fn observe_pages(&mut self, tool_calls: &[ToolCall]) {
        let last = tool_calls
            .iter()
            .rev()
            .filter(|c| crate::replay::browser::is_browser_tool(&c.tool))
            .filter_map(|c| c.answer.as_ref())
            .filter_map(|a| {
                crate::replay::browser::snapshot_of(&crate::replay::browser::inline_snapshots(
                    &a.text,
                    self.browser_output_dir(),
                ))
            })
            .next();
        if last.is_some() {
            self.last_snapshot = last;
        }
    }

    /// Writes the agent's pass of a step into the recording. `previous`: the recording the step
    /// had (a drift or an audit), with the positions a soft drift found: what varied while the
    /// agent passed is learned as volatile.
    pub(super) fn record(
        &mut self,
        key: &StepKey,
        mut actions: Vec<Action>,
        cost_usd: Option<f64>,
        previous: Option<(&RecordedStep, &[(usize, Position)])>,
        instruction: &str,
        facts: Option<Vec<String>>,
    ) -> Result<(), String> {
        let relations = relations(
            previous.map(|(old, _)| old),
            &actions,
            &self.normalizer,
            instruction,
        );
        // Without stated facts the step is compared exactly: nothing is learned for it.
        let exact = facts.as_ref().is_some_and(Vec::is_empty);
        if let Some((old, soft)) = previous.filter(|_| !exact) {
            let learning = Learning {
                instruction,
                previous_window: Some((
                    old.run_started_at.unwrap_or(old.recorded_at),
                    old.recorded_at,
                )),
                window: (self.started_at, chrono::Utc::now()),
            };
            learn(old, &mut actions, soft, &self.normalizer, &learning);
        }
        let run_started_at = Some(self.started_at);
        let recording = match &mut self.recording {
            Ok(r) => r,
            // A file we could not read is replaced by a good one.
            Err(_) => {
                self.recording = Ok(Recording::new(self.test.clone()));
                match &mut self.recording {
                    Ok(r) => r,
                    Err(why) => return Err(why.clone()),
                }
            }
        };
        recording.upsert(RecordedStep {
            step: key.step,
            provenance: key.provenance.clone(),
            instruction_hash: key.instruction_hash.clone(),
            provider: key.provider.clone(),
            recorded_at: chrono::Utc::now(),
            run_started_at,
            cost_usd,
            actions,
            relations: Some(relations),
            facts,
        });
        store::save(&self.path, recording).map_err(|e| e.to_string())
    }
}

/// The built-in variables whose values differ every session.
fn is_volatile_builtin(name: &str) -> bool {
    matches!(
        name,
        "BUGATTI_RUN_ID"
            | "BUGATTI_SESSION_ID"
            | "BUGATTI_RUN_DIR"
            | "BUGATTI_WORKDIR"
            | "BUGATTI_PROJECT_ROOT"
    )
}

/// How much of a replayed action's output the report keeps.
const REPORT_OUTPUT_CHARS: usize = 2_000;

/// What a replayed step's record says: each action it ran, and when and by whom it was recorded.
pub(super) fn replayed(
    step: &RecordedStep,
    verdict: &Verdict,
    placeholders: &Placeholders,
) -> (String, StepReplay) {
    let (actions, took) = match verdict {
        Verdict::Replayed { actions, took, .. } => (*actions, *took),
        Verdict::Fallback(_) => (0, Duration::ZERO),
    };
    let facts = step.facts.clone().unwrap_or_default();
    let held = match facts.len() {
        0 => String::new(),
        n => format!(
            "; {n} fact{} held: {}",
            if n == 1 { "" } else { "s" },
            facts
                .iter()
                .map(|f| format!("`{}`", placeholders.fill(f)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let message = format!(
        "replayed: all {actions} recorded actions ran again and matched{held} ({}ms; recorded {} by {})",
        took.as_millis(),
        step.recorded_at.format("%Y-%m-%d %H:%M UTC"),
        step.provider
    );
    let shown = step
        .actions
        .iter()
        .map(|a| ReplayedAction {
            what: placeholders.fill(&a.describe()),
            output: crate::replay::compare::cut(
                &placeholders.fill(&a.output()),
                REPORT_OUTPUT_CHARS,
            ),
        })
        .collect();
    let replay = StepReplay {
        mode: StepMode::Replayed,
        note: None,
        drift: None,
        recorded: false,
        cost_saved_usd: step.cost_usd,
        unusable_recording: false,
        audited: false,
        audit_disagreed: false,
        no_recording: false,
        actions: shown,
        recorded_at: Some(step.recorded_at),
        recorded_by: Some(step.provider.clone()),
        facts: facts.iter().map(|f| placeholders.fill(f)).collect(),
    };
    (message, replay)
}

/// What a step that went to the agent says of replay, given why it was not replayed.
pub(super) fn by_the_agent(fallback: Option<&Fallback>) -> StepReplay {
    StepReplay {
        mode: StepMode::Agent,
        note: fallback.map(|f| match f.drift() {
            // The diff is in `replay_drift`: the note says where.
            Some(d) => format!(
                "{} at action {} ({}): {} differs",
                if d.soft { "soft drift" } else { "drift" },
                d.action + 1,
                d.what,
                d.field
            ),
            None => f.to_string(),
        }),
        drift: fallback.and_then(Fallback::drift).cloned(),
        recorded: false,
        cost_saved_usd: None,
        unusable_recording: matches!(fallback, Some(Fallback::Unreadable(_))),
        no_recording: matches!(fallback, Some(Fallback::Miss(_) | Fallback::Unreadable(_))),
        audited: false,
        audit_disagreed: false,
        actions: Vec::new(),
        recorded_at: None,
        recorded_by: None,
        facts: Vec::new(),
    }
}
