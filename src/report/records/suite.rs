//! The suite summary: one entry per root test over all its attempts (`summary.json`,
//! `summary.md`), built from the final records of every run of the invocation.

use crate::model::ids::{RunId, SuiteId};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Component, Path};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::artifacts::RunPaths;
use crate::model::outcome::RunOutcome;
use crate::report::ground::printable::{markdown_text, Newlines};
use crate::report::records::events::Totals;
use crate::report::records::history::{run_cost, Comparison, HistoryEntry, HistoryTest, Selection};
use crate::report::records::run_record::{RunRecord, SCHEMA_VERSION};

/// One attempt of a root test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AttemptSummary {
    pub run_id: RunId,
    pub attempt: u32,
    /// With `--repeat N`: which of the test's N runs this attempt belongs to (1-based).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub repeat: u32,
    pub outcome: RunOutcome,
    pub duration_ms: u64,
    pub message: Option<String>,
    pub report: String,
}

/// A run whose outcome did not reach its run.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UnrecordedRun {
    pub run_id: RunId,
    pub test_file: String,
    /// The outcome it had, which its run.json does not say.
    pub outcome: RunOutcome,
    /// Why its run.json could not be written.
    pub why: String,
}

/// One root test: its final attempt decides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RootTestSummary {
    pub test_file: String,
    pub test_name: String,
    /// The final attempt's run.
    pub run_id: RunId,
    pub outcome: RunOutcome,
    pub attempts: u32,
    /// Passed after an earlier attempt did not.
    pub flaky: bool,
    /// Over all attempts.
    pub duration_ms: u64,
    pub message: Option<String>,
    /// The final attempt's report.md.
    pub report: String,
    /// Every attempt, first to last (the last one is the final one).
    pub history: Vec<AttemptSummary>,
    /// What the agent cost over all attempts, where it reports money.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Model turns and tokens over all attempts, where the agent reports them.
    #[serde(default)]
    pub agent_turns: u64,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// Watchdog restarts of the agent over all attempts.
    #[serde(default)]
    pub agent_restarts: usize,
    /// How long its steps waited for their place at the model, over all attempts (docs/ci.md,
    /// "A rate-limited nightly").
    #[serde(default, skip_serializing_if = "is_zero")]
    pub model_wait_ms: u64,
    /// Quarantined (`quarantine = true`, `[supervisor] quarantine`): run and reported, but its
    /// failure or flakiness never changes the exit code (see docs/ci.md).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quarantined: bool,
    /// The final attempt ended by an agent fault (docs/providers.md): its kind. The outcome is
    /// then `error`, and never counted as a failure of the app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_fault: Option<crate::model::agent_fault::FaultKind>,
}

impl RootTestSummary {
    /// The outcome as a badge says it: an agent error is said apart from the app's `error`
    /// (docs/providers.md).
    pub fn badge_text(&self) -> &'static str {
        if self.agent_fault.is_some() {
            "agent error"
        } else {
            self.outcome.as_str()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SuiteSummary {
    pub schema_version: u32,
    pub suite_id: SuiteId,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub duration_ms: u64,
    pub strict_warnings: bool,
    pub tests: Vec<RootTestSummary>,
    /// Root tests that were never started (fail-fast, interruption, the suite's harness failed),
    /// by test file.
    pub not_run: Vec<String>,
    /// The suite-scoped harness failed, so no test could run: why. The tests in `not_run` then
    /// count as errors (in `totals`, JUnit and the reports), not as merely not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_error: Option<String>,
    /// Why the suite stopped starting root tests early, when a budget did
    /// (`[supervisor] max_cost_usd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_run_reason: Option<String>,
    /// A merge: `K/N` of each shard that was not among the merged suites.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_shards: Vec<String>,
    /// A merge: why each test of `not_run` that no merged shard ran was not run
    /// ("shard 2/3 missing").
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub not_run_reasons: BTreeMap<String, String>,
    /// A merge with `--allow-partial`: the tests of `not_run_reasons` do not fail it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial_allowed: bool,
    /// `--fail-on-flaky` / `[supervisor] flaky = "fail"`: a test that passed only on a retry
    /// fails the suite.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fail_on_flaky: bool,
    /// `[supervisor] max_cost_usd`: the cap of the whole CI run this suite is (part of).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_cap_usd: Option<f64>,
    /// Runs whose outcome did not reach their run.json (a full disk, a directory that could not
    /// be made): the run.json on disk, if any, is an earlier state. The exit code is then 3
    /// (docs/signals.md), whatever the outcomes say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrecorded: Vec<UnrecordedRun>,
    /// Records of any kind (a run's files, history, the suite's own files) that could not be
    /// written before this summary was: with any, the exit code is 3.
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub records_lost: usize,
    pub totals: Totals,
    /// What the agents cost in this suite, where they report money.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Model turns and tokens of the whole suite, where the agents report them.
    #[serde(default)]
    pub agent_turns: u64,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// How long the suite's tests waited for the model, summed over them, and how many tests
    /// waited (docs/ci.md, "A rate-limited nightly"): the agents at once were fewer than `-j`
    /// while the model's API limited them, and sessions started staggered.
    #[serde(default)]
    pub model_wait_ms: u64,
    #[serde(default)]
    pub model_waited_tests: usize,
    /// docs/replay.md, over every attempt: steps passed by replay, steps the agent carried out with
    /// replay on, steps whose replay drifted, and what the replayed steps cost when recorded.
    #[serde(default)]
    pub replayed_steps: u64,
    #[serde(default)]
    pub agent_steps: u64,
    #[serde(default)]
    pub replay_drift_steps: u64,
    /// Of the drifts, the soft ones; agent steps with no usable recording; audited steps and
    /// those the agent failed; `--replay only` steps without a recording.
    #[serde(default)]
    pub replay_soft_drift_steps: u64,
    #[serde(default)]
    pub replay_no_recording_steps: u64,
    #[serde(default)]
    pub replay_audited_steps: u64,
    #[serde(default)]
    pub replay_audit_disagreements: u64,
    #[serde(default)]
    pub not_replayed_steps: u64,
    #[serde(default)]
    pub cost_saved_usd: Option<f64>,
    /// The re-recordings waiting for review (docs/replay.md, "A recording never weakens in
    /// silence"): each step that went to the agent because of one, or made one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replay_pending: Vec<PendingRecording>,
    /// With `--shard`: which shard this is and how the split was made (docs/ci.md), so `merge`
    /// can tell shards of one CI run from strangers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::model::shard::ShardInfo>,
    /// The git commit of the project root and whether its tracked files were changed, when the
    /// suite started (`null` outside a repository or without git).
    #[serde(default)]
    pub commit: Option<String>,
    #[serde(default)]
    pub dirty: Option<bool>,
    /// Each root test's stability class, from this suite's repeats and the history of its
    /// selection (docs/ci.md); empty when nothing could be classified.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stability: Vec<crate::report::records::stability::Stability>,
    /// Quarantine changed by `[supervisor] auto_quarantine`: each test that entered or left it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quarantine_changes: Vec<crate::report::records::stability::QuarantineChange>,
    /// What changed since the previous suite of the same selection (`.bugatti/history.jsonl`);
    /// absent when there is no such suite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Comparison>,
}

/// A step whose re-recording waits for review (`supervisor replay review`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PendingRecording {
    pub test_file: String,
    pub step_id: crate::model::ids::StepId,
    /// What the re-recording would drop.
    pub note: String,
}

/// Each step of `records` with a pending re-recording, once (the newest attempt's word).
fn pending_recordings(records: &[RunRecord]) -> Vec<PendingRecording> {
    let mut by_step: BTreeMap<(String, crate::model::ids::StepId), String> = BTreeMap::new();
    let mut ordered: Vec<&RunRecord> = records.iter().collect();
    ordered.sort_by_key(|r| r.identity.started_at);
    for r in ordered {
        for s in &r.steps {
            if let Some(note) = &s.replay_pending {
                by_step.insert((r.identity.test_file.clone(), s.step_id), note.clone());
            }
        }
    }
    by_step
        .into_iter()
        .map(|((test_file, step_id), note)| PendingRecording {
            test_file,
            step_id,
            note,
        })
        .collect()
}

fn one() -> u32 {
    1
}

fn is_zero_usize(n: &usize) -> bool {
    *n == 0
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_one(n: &u32) -> bool {
    *n <= 1
}

/// A root test's deciding attempt and whether it was flaky, from its attempts sorted by repeat
/// then attempt: each repeat's last attempt is that repeat's verdict; the first repeat that did
/// not pass decides (a stress run fails when one run fails, as nextest's), else the last one.
/// Flaky: a repeat passed on a retry after failing.
fn decide(history: &[AttemptSummary], strict: bool) -> Option<(AttemptSummary, bool)> {
    let finals: Vec<&AttemptSummary> = history
        .iter()
        .enumerate()
        .filter(|(i, a)| {
            history
                .get(i + 1)
                .is_none_or(|next| next.repeat != a.repeat)
        })
        .map(|(_, a)| a)
        .collect();
    let last = finals
        .iter()
        .find(|a| !a.outcome.is_pass(strict))
        .or(finals.last())?;
    let flaky = finals.iter().any(|f| {
        f.outcome.is_pass(strict)
            && history.iter().any(|a| {
                a.repeat == f.repeat && a.attempt < f.attempt && !a.outcome.is_pass(strict)
            })
    });
    Some(((*last).clone(), flaky))
}

impl SuiteSummary {
    /// The runs whose outcome is not in their run.json, and the records lost (exit 3), as
    /// summary.md says them; empty when every record was written.
    fn unrecorded_markdown(&self) -> String {
        if self.unrecorded.is_empty() && self.records_lost == 0 {
            return String::new();
        }
        let mut s = String::from("## Not recorded\n\n");
        for run in &self.unrecorded {
            let _ = writeln!(
                s,
                "- `{}` {} (run `{}`), but its run.json does not say so: {}",
                markdown_text(&run.test_file, Newlines::Escape).replace('`', "'"),
                run.outcome.as_str(),
                run.run_id,
                markdown_text(&run.why, Newlines::Escape)
            );
        }
        let _ = writeln!(
            s,
            "\n{} record(s) could not be written: the suite exits 3 (docs/signals.md).\n",
            self.records_lost.max(self.unrecorded.len())
        );
        s
    }

    /// `Waited for the model: 12.3s over 5 tests`, when a test waited (docs/ci.md, "A
    /// rate-limited nightly").
    pub fn model_wait_text(&self) -> Option<String> {
        (self.model_wait_ms > 0).then(|| {
            let tests = self.model_waited_tests;
            format!(
                "Waited for the model: {} over {tests} test{}",
                crate::report::ground::printable::secs(self.model_wait_ms),
                if tests == 1 { "" } else { "s" }
            )
        })
    }

    /// How the suite's steps went through replay.
    pub fn replay_counts(&self) -> crate::model::replay::ReplayCounts {
        crate::model::replay::ReplayCounts {
            replayed: self.replayed_steps,
            agent: self.agent_steps,
            drift: self.replay_drift_steps,
            soft_drift: self.replay_soft_drift_steps,
            audited: self.replay_audited_steps,
            disagreed: self.replay_audit_disagreements,
            not_replayed: self.not_replayed_steps,
            no_recording: self.replay_no_recording_steps,
        }
    }

    /// `1a2b3c4d5e6f`, `… (dirty)`, or that there is none: the code the suite ran against.
    pub fn revision_text(&self) -> String {
        crate::model::revision::Revision {
            commit: self.commit.clone(),
            dirty: self.dirty,
        }
        .describe()
        .unwrap_or_else(|| "none (not a git repository, or no git)".to_string())
    }

    /// Records that the suite's own harness failed: the root tests it kept from running are
    /// errors with this reason.
    pub fn with_harness_error(mut self, reason: Option<String>) -> Self {
        if let Some(reason) = reason {
            self.totals.error += self.totals.not_run;
            self.totals.not_run = 0;
            self.harness_error = Some(reason);
        }
        self
    }

    /// Whether `test` fails the suite (decides the exit code): it did not pass, or passed only
    /// on a retry under `--fail-on-flaky`; never when it is quarantined, unless its harness
    /// failed (an `error`: quarantine hides a test's flakiness, not a harness that cannot start).
    pub fn fails_suite(&self, test: &RootTestSummary) -> bool {
        if test.quarantined {
            return test.outcome == RunOutcome::Error;
        }
        !test.outcome.is_pass(self.strict_warnings) || (self.fail_on_flaky && test.flaky)
    }

    /// Whether the suite passed as its exit code says: every test that counts passed, and every
    /// root test ran (a merge with `--allow-partial` forgives the tests of missing shards).
    pub fn passed(&self) -> bool {
        self.tests.iter().all(|t| !self.fails_suite(t))
            && self
                .not_run
                .iter()
                .all(|f| self.partial_allowed && self.not_run_reasons.contains_key(f))
    }

    /// The suite failed only because the agent could not work (every test that fails it ended
    /// by an agent fault): the app was not seen to fail, and the headline says so.
    pub fn failed_by_agent_only(&self) -> bool {
        let failing: Vec<&RootTestSummary> =
            self.tests.iter().filter(|t| self.fails_suite(t)).collect();
        !failing.is_empty()
            && failing.iter().all(|t| t.agent_fault.is_some())
            && self.not_run.is_empty()
            && self.harness_error.is_none()
    }

    /// Why each test that fails the suite does ("failed", "flaky, and --fail-on-flaky").
    pub fn failure_reason(&self, test: &RootTestSummary) -> Option<String> {
        if !self.fails_suite(test) {
            return None;
        }
        Some(if test.outcome.is_pass(self.strict_warnings) {
            "flaky: passed only on a retry, and flaky passes fail the suite (--fail-on-flaky / [supervisor] flaky = \"fail\")".to_string()
        } else if let Some(kind) = test.agent_fault {
            // Said apart: the agent, not the app (docs/providers.md).
            format!("error (agent error: {kind}, not the app)")
        } else {
            test.outcome.as_str().to_string()
        })
    }

    /// Records why the suite started no more root tests (a budget), for the tests in `not_run`.
    pub fn with_not_run_reason(mut self, reason: Option<String>) -> Self {
        self.not_run_reason = reason;
        self
    }

    /// Groups `records` by test file (sorted, as discovery is), attempts in order.
    pub fn build(
        suite_id: &SuiteId,
        started_at: DateTime<Utc>,
        finished_at: DateTime<Utc>,
        strict_warnings: bool,
        records: &[RunRecord],
        not_run: &[String],
    ) -> Self {
        let mut by_file: BTreeMap<&str, Vec<&RunRecord>> = BTreeMap::new();
        for r in records {
            by_file.entry(&r.identity.test_file).or_default().push(r);
        }
        let mut tests = Vec::new();
        let mut totals = Totals::default();
        for (file, mut runs) in by_file {
            runs.sort_by_key(|r| (r.identity.repeat, r.identity.attempt, r.identity.started_at));
            let history: Vec<AttemptSummary> = runs
                .iter()
                .map(|r| AttemptSummary {
                    run_id: r.identity.run_id.clone(),
                    attempt: r.identity.attempt,
                    repeat: r.identity.repeat,
                    // A record without an outcome here was never finished: treat as interrupted.
                    outcome: r.outcome.unwrap_or(RunOutcome::Interrupted),
                    duration_ms: r.duration_ms.unwrap_or(0),
                    message: r.failure_message(),
                    report: RunPaths::new(&r.identity.run_dir)
                        .report_md()
                        .display()
                        .to_string(),
                })
                .collect();
            let Some((last, flaky)) = decide(&history, strict_warnings) else {
                continue;
            };
            totals.count(last.outcome);
            if flaky {
                totals.flaky += 1;
            }
            tests.push(RootTestSummary {
                test_file: file.to_string(),
                test_name: runs
                    .last()
                    .map_or(String::new(), |r| r.identity.test_name.clone()),
                run_id: last.run_id.clone(),
                outcome: last.outcome,
                attempts: u32::try_from(history.len()).unwrap_or(u32::MAX),
                flaky,
                duration_ms: history.iter().map(|a| a.duration_ms).sum(),
                message: last.message.clone(),
                report: last.report.clone(),
                history,
                cost_usd: sum_costs(runs.iter().map(|r| r.cost_usd)),
                agent_turns: runs.iter().map(|r| r.agent_turns).sum(),
                input_tokens: runs.iter().map(|r| r.input_tokens).sum(),
                output_tokens: runs.iter().map(|r| r.output_tokens).sum(),
                agent_restarts: runs.iter().map(|r| r.agent_restarts.len()).sum(),
                model_wait_ms: runs.iter().map(|r| r.model_wait_ms).sum(),
                quarantined: runs.last().is_some_and(|r| r.identity.quarantined),
                agent_fault: runs
                    .last()
                    .and_then(|r| r.agent_fault.as_ref().map(|f| f.kind)),
            });
        }
        let mut not_run: Vec<String> = not_run
            .iter()
            .filter(|f| !tests.iter().any(|t| &t.test_file == *f))
            .cloned()
            .collect();
        not_run.sort();
        not_run.dedup();
        totals.not_run = not_run.len();
        totals.total += not_run.len();
        let ms = (finished_at - started_at).num_milliseconds();
        let cost_usd = sum_costs(tests.iter().map(|t| t.cost_usd));
        let model_wait_ms = tests.iter().map(|t| t.model_wait_ms).sum();
        let model_waited_tests = tests.iter().filter(|t| t.model_wait_ms > 0).count();
        let agent_turns = tests.iter().map(|t| t.agent_turns).sum();
        let input_tokens = tests.iter().map(|t| t.input_tokens).sum();
        let output_tokens = tests.iter().map(|t| t.output_tokens).sum();
        let replayed_steps = records.iter().map(|r| u64::from(r.replayed_steps)).sum();
        let agent_steps = records.iter().map(|r| u64::from(r.agent_steps)).sum();
        let replay_drift_steps = records
            .iter()
            .map(|r| u64::from(r.replay_drift_steps))
            .sum();
        let cost_saved_usd = sum_costs(records.iter().map(|r| r.cost_saved_usd));
        let counts = records.iter().map(|r| r.replay_counts()).fold(
            crate::model::replay::ReplayCounts::default(),
            |a, c| crate::model::replay::ReplayCounts {
                soft_drift: a.soft_drift + c.soft_drift,
                no_recording: a.no_recording + c.no_recording,
                audited: a.audited + c.audited,
                disagreed: a.disagreed + c.disagreed,
                not_replayed: a.not_replayed + c.not_replayed,
                ..a
            },
        );
        Self {
            schema_version: SCHEMA_VERSION,
            suite_id: suite_id.clone(),
            started_at,
            finished_at,
            duration_ms: u64::try_from(ms).unwrap_or(0),
            strict_warnings,
            tests,
            not_run,
            harness_error: None,
            not_run_reason: None,
            missing_shards: Vec::new(),
            not_run_reasons: BTreeMap::new(),
            partial_allowed: false,
            fail_on_flaky: false,
            cost_cap_usd: None,
            unrecorded: Vec::new(),
            records_lost: 0,
            totals,
            replayed_steps,
            agent_steps,
            replay_drift_steps,
            replay_soft_drift_steps: counts.soft_drift,
            replay_no_recording_steps: counts.no_recording,
            replay_audited_steps: counts.audited,
            replay_audit_disagreements: counts.disagreed,
            not_replayed_steps: counts.not_replayed,
            cost_saved_usd,
            replay_pending: pending_recordings(records),
            cost_usd,
            agent_turns,
            input_tokens,
            output_tokens,
            model_wait_ms,
            model_waited_tests,
            shard: None,
            commit: None,
            dirty: None,
            stability: Vec::new(),
            quarantine_changes: Vec::new(),
            changes: None,
        }
    }

    /// The summary with each `report` path relative to `dir` (the folder its summary.json /
    /// summary.md is written to), so the links still resolve once the suite folder is copied
    /// elsewhere with the runs beside it (a CI artifact). A path that is not absolute, or a `dir`
    /// that is not, is left as it is.
    pub fn with_paths_relative_to(&self, dir: &Path) -> Self {
        let mut out = self.clone();
        for test in &mut out.tests {
            test.report = relative_path(dir, &test.report);
            for attempt in &mut test.history {
                attempt.report = relative_path(dir, &attempt.report);
            }
        }
        out
    }

    /// `summary.md` (not yet redacted).
    pub fn to_markdown(&self) -> String {
        let t = &self.totals;
        let mut s = String::new();
        let _ = writeln!(s, "# Bugatti suite `{}`\n", self.suite_id);
        let _ = writeln!(s, "Commit: {}.\n", self.revision_text());
        let _ = writeln!(
            s,
            "{} root tests: {} passed, {} warned, {} failed, {} error, {} interrupted, {} not run; {} flaky. Duration {:.1}s.\n",
            t.total,
            t.passed,
            t.warned,
            t.failed,
            t.error,
            t.interrupted,
            t.not_run,
            t.flaky,
            self.duration_ms as f64 / 1000.0
        );
        if let Some(cost) = self.cost_usd {
            let _ = writeln!(s, "Agent cost: ${cost:.4}.\n");
        }
        if let Some(waited) = self.model_wait_text() {
            let _ = writeln!(s, "{waited}.\n");
        }
        s.push_str(&self.unrecorded_markdown());
        if !self.tests.is_empty() {
            s.push_str("| test file | outcome | attempts | flaky | duration | run id | report |\n");
            s.push_str("|---|---|---|---|---|---|---|\n");
            for test in &self.tests {
                let _ = writeln!(
                    s,
                    "| `{}` | {} | {} | {} | {:.1}s | `{}` | [report.md]({}) |",
                    markdown_text(&test.test_file, Newlines::Escape).replace('`', "'"),
                    test.outcome.as_str(),
                    test.attempts,
                    if test.flaky { "yes" } else { "no" },
                    test.duration_ms as f64 / 1000.0,
                    test.run_id,
                    test.report
                );
            }
            s.push('\n');
        }
        let failing: Vec<_> = self
            .tests
            .iter()
            .filter_map(|t| self.failure_reason(t).map(|why| (t, why)))
            .collect();
        if !failing.is_empty() {
            s.push_str("## Not passed\n\n");
            for (test, why) in failing {
                let _ = writeln!(
                    s,
                    "- `{}` {why}: {}",
                    markdown_text(&test.test_file, Newlines::Escape).replace('`', "'"),
                    markdown_text(
                        test.message.as_deref().unwrap_or("no message"),
                        Newlines::Escape
                    )
                );
            }
            s.push('\n');
        }
        s.push_str(&self.quarantine_markdown());
        s.push_str(&crate::report::records::stability::markdown(
            &self.stability_news(),
        ));
        if let Some(changes) = &self.changes {
            s.push_str(&changes.to_markdown());
        }
        if let Some(reason) = &self.harness_error {
            let _ = writeln!(
                s,
                "## Suite harness error\n\nNo root test could run: {}\n",
                markdown_text(reason, Newlines::Escape)
            );
        }
        if !self.not_run.is_empty() {
            s.push_str("## Not run\n\n");
            if let Some(reason) = &self.not_run_reason {
                let _ = writeln!(s, "{}\n", markdown_text(reason, Newlines::Escape));
            }
            if !self.missing_shards.is_empty() {
                let _ = writeln!(
                    s,
                    "Missing shard{}: {}{}.\n",
                    if self.missing_shards.len() == 1 {
                        ""
                    } else {
                        "s"
                    },
                    self.missing_shards.join(", "),
                    if self.partial_allowed {
                        " (--allow-partial: the suite's outcome is that of the tests that ran)"
                    } else {
                        ""
                    }
                );
            }
            for f in &self.not_run {
                let name = markdown_text(f, Newlines::Escape).replace('`', "'");
                match self.not_run_reasons.get(f) {
                    Some(why) => {
                        let why = markdown_text(why, Newlines::Escape);
                        let _ = writeln!(s, "- `{name}` — {why}");
                    }
                    None => {
                        let _ = writeln!(s, "- `{name}`");
                    }
                }
            }
            s.push('\n');
        }
        s
    }

    /// The quarantined tests, apart: they ran, and their outcome did not decide the suite's.
    fn quarantine_markdown(&self) -> String {
        let quarantined: Vec<_> = self.tests.iter().filter(|t| t.quarantined).collect();
        if quarantined.is_empty() {
            return String::new();
        }
        let mut s = String::from(
            "## Quarantined\n\nRun and reported; their outcome does not decide the suite's.\n\n",
        );
        for test in quarantined {
            let _ = writeln!(
                s,
                "- `{}` {}{}{}",
                test.test_file,
                test.outcome.as_str(),
                if test.flaky { " (flaky)" } else { "" },
                test.message
                    .as_deref()
                    .map_or(String::new(), |m| format!(": {}", m.replace('\n', " ")))
            );
        }
        s.push('\n');
        s
    }
}

/// The sum of the costs that are known; `None` when none is.
fn sum_costs(costs: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    costs
        .flatten()
        .fold(None, |sum, c| Some(sum.unwrap_or(0.0) + c))
}

/// `to` relative to the directory `from`, with `/` separators; `to` unchanged when either is not
/// absolute (no common root to walk from).
fn relative_path(from: &Path, to: &str) -> String {
    let to_path = Path::new(to);
    if !from.is_absolute() || !to_path.is_absolute() {
        return to.to_string();
    }
    let from_c: Vec<Component> = from.components().collect();
    let to_c: Vec<Component> = to_path.components().collect();
    let common = from_c.iter().zip(&to_c).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> =
        std::iter::repeat_n("..".to_string(), from_c.len() - common).collect();
    parts.extend(
        to_c[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

impl SuiteSummary {
    /// What the suite's end says about stability.
    pub fn stability_news(&self) -> crate::report::records::stability::StabilityNews<'_> {
        crate::report::records::stability::StabilityNews {
            stability: &self.stability,
            quarantine_changes: &self.quarantine_changes,
            commit: self.commit.as_deref(),
        }
    }
}

/// A finished suite as its line in history.jsonl.
impl HistoryEntry {
    /// The history line of a finished suite; `records` are every run of it (all attempts).
    pub fn of(summary: &SuiteSummary, records: &[RunRecord], selection: &Selection) -> Self {
        let cost_of = |file: &str| {
            crate::report::records::history::sum_opt(
                records
                    .iter()
                    .filter(|r| r.identity.test_file == file)
                    .map(run_cost),
            )
        };
        let mut tests: Vec<HistoryTest> = summary
            .tests
            .iter()
            .map(|t| HistoryTest {
                test_file: t.test_file.clone(),
                outcome: t.outcome.as_str().to_string(),
                passed: t.outcome.is_pass(summary.strict_warnings),
                flaky: t.flaky,
                attempts: t.attempts,
                duration_ms: t.duration_ms,
                cost_usd: cost_of(&t.test_file),
                quarantined: t.quarantined,
                runs: crate::report::records::stability::history_runs(records, &t.test_file),
                agent_error: t.agent_fault,
            })
            .collect();
        tests.extend(summary.not_run.iter().map(|f| HistoryTest {
            test_file: f.clone(),
            outcome: crate::report::records::history::NOT_RUN.to_string(),
            passed: false,
            flaky: false,
            attempts: 0,
            duration_ms: 0,
            cost_usd: None,
            quarantined: false,
            runs: Vec::new(),
            agent_error: None,
        }));
        let cost_usd = crate::report::records::history::sum_opt(tests.iter().map(|t| t.cost_usd));
        Self {
            schema_version: crate::report::records::run_record::SCHEMA_VERSION,
            suite_id: summary.suite_id.clone(),
            started_at: summary.started_at,
            finished_at: summary.finished_at,
            duration_ms: summary.duration_ms,
            selection: selection.clone(),
            tests,
            cost_usd,
            replayed_steps: summary.replayed_steps,
            agent_steps: summary.agent_steps,
            replay_drift_steps: summary.replay_drift_steps,
            cost_saved_usd: summary.cost_saved_usd,
            commit: summary.commit.clone(),
            dirty: summary.dirty,
            provider: None,
            stability: summary
                .stability
                .iter()
                .map(|s| crate::model::history::HistoryClass {
                    test_file: s.test_file.clone(),
                    class: s.class,
                })
                .collect(),
            suite_dir: None,
        }
    }
}
