//! `[supervisor] on_finish` (docs/ci.md): one command run after the suite's reports are written,
//! with the suite's facts in its environment: how a nightly tells a chat room. It runs like a
//! harness command (`sh -c` from the project root, its own process group, output into the
//! suite's `logs/on_finish.log`), bounded by `on_finish_timeout_secs`; whatever it does, the
//! suite's exit code stands.

use crate::model::ids::SuiteId;
use std::path::Path;
use std::time::Duration;

use crate::model::artifacts::SuitePaths;
use crate::model::outcome::{ExitReason, InterruptSignal};
use crate::process::oneshot::{run_once, OneShotEnd};
use crate::process::owner::{Owner, Role, Scope};
use crate::process::spec::{CommandKind, CommandSpec};
use crate::report::records::suite::SuiteSummary;

/// What the hook gets to know about the suite.
pub struct SuiteFacts<'a> {
    pub suite_id: &'a SuiteId,
    pub reason: ExitReason,
    /// The suite's folder (`<artifact_dir>/suites/<id>`).
    pub suite_dir: &'a Path,
    /// Its summary, when the reporter wrote one.
    pub summary: Option<&'a SuiteSummary>,
    /// `[supervisor] max_log_bytes`: the hook's log is capped like every log.
    pub max_log_bytes: u64,
}

impl SuiteFacts<'_> {
    /// `BUGATTI_SUITE_ID`, `BUGATTI_OUTCOME`, `BUGATTI_PASSED`, `BUGATTI_FAILED`,
    /// `BUGATTI_REPORT_HTML`, `BUGATTI_SUMMARY_JSON`.
    pub fn env(&self) -> Vec<(String, String)> {
        let outcome = match self.reason {
            ExitReason::Success => "passed",
            ExitReason::TestFailed => "failed",
            ExitReason::HarnessError => "error",
            ExitReason::InvalidInput => "invalid",
            ExitReason::Interrupted(_) => "interrupted",
        };
        let (passed, failed) = self.summary.map_or((0, 0), |s| {
            let t = &s.totals;
            (t.passed + t.warned, t.failed + t.error)
        });
        vec![
            ("BUGATTI_SUITE_ID".into(), self.suite_id.to_string()),
            ("BUGATTI_OUTCOME".into(), outcome.into()),
            ("BUGATTI_PASSED".into(), passed.to_string()),
            ("BUGATTI_FAILED".into(), failed.to_string()),
            (
                "BUGATTI_REPORT_HTML".into(),
                SuitePaths::new(self.suite_dir)
                    .report_html()
                    .display()
                    .to_string(),
            ),
            (
                "BUGATTI_SUMMARY_JSON".into(),
                SuitePaths::new(self.suite_dir)
                    .summary_json()
                    .display()
                    .to_string(),
            ),
        ]
    }
}

/// Why the hook did not succeed, in one line for a notice.
#[derive(Debug)]
pub enum HookFailed {
    /// It failed, could not start or ran out of time: never a change of the exit code.
    Failed(String),
    /// A signal stopped it: the supervisor exits by that signal.
    Stopped(String, InterruptSignal),
}

/// Runs `cmd` from `project_root` for `facts`, at most `timeout`, stopped (its process group, by
/// its stop ladder) when `stop` answers a signal. `Ok` says how it went in one line.
pub async fn run(
    cmd: &str,
    project_root: &Path,
    timeout: Duration,
    facts: &SuiteFacts<'_>,
    stop: impl std::future::Future<Output = InterruptSignal>,
) -> Result<String, HookFailed> {
    let log = SuitePaths::new(facts.suite_dir).on_finish_log();
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            HookFailed::Failed(format!("on_finish: cannot create {}: {e}", dir.display()))
        })?;
    }
    let mut spec = CommandSpec::new(
        "on_finish",
        CommandKind::ShortLived,
        cmd,
        project_root,
        &log,
    );
    spec.env = facts.env();
    spec.timeout = Some(timeout);
    spec.max_log_bytes = facts.max_log_bytes;
    let owner = Owner::new(
        Scope::suite(facts.suite_id),
        Role::Other("on_finish".into()),
    );
    let ran = run_once(&spec, owner, stop)
        .await
        .map_err(|e| HookFailed::Failed(format!("on_finish `{cmd}` could not start: {e}")))?;
    let shown = log.display();
    match ran.end {
        OneShotEnd::Exited(status) if status.success() => {
            Ok(format!("on_finish `{cmd}` done (output in {shown})"))
        }
        OneShotEnd::Exited(status) => Err(HookFailed::Failed(format!(
            "on_finish `{cmd}` failed: {status} (output in {shown}); the exit code is the suite's"
        ))),
        OneShotEnd::TimedOut(limit) => Err(HookFailed::Failed(format!(
            "on_finish `{cmd}` was stopped after {}s (on_finish_timeout_secs; output in {shown})",
            limit.as_secs()
        ))),
        OneShotEnd::Stopped(signal) => Err(HookFailed::Stopped(
            format!(
                "{}: on_finish `{cmd}` was stopped (output in {shown}); the reports stand",
                signal.name()
            ),
            signal,
        )),
    }
}
