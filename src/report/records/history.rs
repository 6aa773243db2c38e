//! `.bugatti/history.jsonl`: one line per suite (docs/reports.md), and the comparison of a suite with the
//! previous suite of the same selection: new failures, fixed, still failing, flaky, duration and
//! cost change. Also what `--rerun-failed` reads.

use crate::model::ids::SuiteId;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::report::ground::error::ReportError;
use crate::report::records::run_record::RunRecord;

pub use crate::model::history::{
    history_path, read, read_checked, recent_durations, HistoryEntry, HistoryTest, Selection,
};

/// The cost of a run, summed over its steps (None when no step reported one).
pub fn run_cost(record: &RunRecord) -> Option<f64> {
    let costs: Vec<f64> = record
        .steps
        .iter()
        .filter_map(|s| s.usage.as_ref().and_then(|u| u.cost_usd))
        .collect();
    (!costs.is_empty()).then(|| costs.iter().sum())
}

pub(crate) fn sum_opt(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values.fold(None, |acc, v| match (acc, v) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    })
}

impl HistoryEntry {
    /// What the suite spent on the model: its reported cost, or $0 when every step it ran
    /// replayed (nothing was asked of the model, so nothing is unknown).
    pub fn spent(&self) -> Option<f64> {
        self.cost_usd
            .or((self.agent_steps == 0 && self.replayed_steps > 0).then_some(0.0))
    }
}

/// Appends one line to the history file (one `write` call of a whole line, so concurrent suites
/// do not interleave), creating its folder.
pub fn append(path: &Path, entry: &HistoryEntry) -> Result<(), ReportError> {
    let mut line = serde_json::to_string(entry).map_err(|source| ReportError::Json {
        what: "history.jsonl",
        source,
    })?;
    line.push('\n');
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| ReportError::write(dir, e))?;
    }
    // Without a reader a FIFO would hold this open forever: O_NONBLOCK makes it fail at once
    // (ENXIO), and anything but a regular file is refused (`/dev/zero` would swallow the line).
    use std::os::unix::fs::OpenOptionsExt;
    let refuse = |file_type: &std::fs::FileType| {
        let kind = crate::model::user_file::kind_of(file_type);
        ReportError::write(
            path,
            std::io::Error::other(format!("not a regular file (a {kind})")),
        )
    };
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.is_file() {
            return Err(refuse(&meta.file_type()));
        }
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| ReportError::write(path, e))?;
    let meta = file.metadata().map_err(|e| ReportError::write(path, e))?;
    if !meta.file_type().is_file() {
        return Err(refuse(&meta.file_type()));
    }
    file.write_all(line.as_bytes())
        .map_err(|e| ReportError::write(path, e))
}

/// Rewrites the history keeping only the entries `keep` accepts (retention).
pub fn retain(
    artifact_dir: &Path,
    keep: impl Fn(&HistoryEntry) -> bool,
) -> Result<(), ReportError> {
    let path = history_path(artifact_dir);
    // Not a regular file (a FIFO, a device): not read, and not replaced by one either.
    if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
        return Ok(());
    }
    let mut text = String::new();
    for entry in read(&path).into_iter().filter(|e| keep(e)) {
        if let Ok(line) = serde_json::to_string(&entry) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    Ok(crate::atomic::write_atomic(&path, text.as_bytes())?)
}

/// One test whose state changed, with what the previous suite said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Change {
    pub test_file: String,
    pub outcome: String,
    /// The previous suite's outcome (None: the test was not in it).
    pub previous: Option<String>,
}

/// What changed since the previous suite of the same selection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Comparison {
    pub previous_suite_id: SuiteId,
    pub previous_started_at: DateTime<Utc>,
    pub selection: String,
    pub new_failures: Vec<Change>,
    pub fixed: Vec<Change>,
    pub still_failing: Vec<Change>,
    pub flaky: Vec<String>,
    /// Root tests this suite never started (`--fail-fast`, a budget, the deadline): neither
    /// failures nor fixes, whatever they were before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<Change>,
    /// Root tests ended by an agent fault (not logged in, a quota, the API failing): neither
    /// failures nor fixes of the app.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_errors: Vec<Change>,
    /// Root tests in this suite that the previous one did not have.
    pub new_tests: Vec<String>,
    pub duration_ms: u64,
    pub previous_duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_cost_usd: Option<f64>,
}

/// The outcome history gives a root test the suite never started.
pub const NOT_RUN: &str = "not_run";

/// Compares `current` with the last entry of `history` of the same selection (not itself).
pub fn compare(history: &[HistoryEntry], current: &HistoryEntry) -> Option<Comparison> {
    let previous = history
        .iter()
        .rev()
        .find(|e| e.suite_id != current.suite_id && e.comparable_with(current))?;
    let before: BTreeMap<&str, &HistoryTest> = previous
        .tests
        .iter()
        .map(|t| (t.test_file.as_str(), t))
        .collect();
    let mut c = Comparison {
        previous_suite_id: previous.suite_id.clone(),
        previous_started_at: previous.started_at,
        selection: current.selection.describe(),
        new_failures: Vec::new(),
        fixed: Vec::new(),
        still_failing: Vec::new(),
        flaky: Vec::new(),
        not_run: Vec::new(),
        agent_errors: Vec::new(),
        new_tests: Vec::new(),
        duration_ms: current.duration_ms,
        previous_duration_ms: previous.duration_ms,
        cost_usd: current.spent(),
        previous_cost_usd: previous.spent(),
    };
    for t in &current.tests {
        let prev = before.get(t.test_file.as_str());
        let change = Change {
            test_file: t.test_file.clone(),
            outcome: t.outcome.clone(),
            previous: prev.map(|p| p.outcome.clone()),
        };
        if prev.is_none() && current.selection.shard.is_some() {
            // A shard's tests change with the split: one the previous shard did not hold is
            // no news about the test (another shard ran it).
            continue;
        }
        if prev.is_none() {
            c.new_tests.push(t.test_file.clone());
        }
        // Interrupted (Ctrl-C, the deadline) says nothing about the app: never a new failure.
        if t.outcome == NOT_RUN || t.outcome == "interrupted" {
            c.not_run.push(change);
            continue;
        }
        // The agent, not the app (docs/providers.md): said apart, and an earlier agent error
        // says nothing of the app either.
        if t.agent_error.is_some() {
            c.agent_errors.push(change);
            continue;
        }
        let prev = prev.filter(|p| p.agent_error.is_none());
        match (prev.map(|p| p.passed), t.passed) {
            (Some(true) | None, false) => c.new_failures.push(change),
            (Some(false), true) => c.fixed.push(change),
            (Some(false), false) => c.still_failing.push(change),
            (_, true) => {}
        }
        if t.flaky {
            c.flaky.push(t.test_file.clone());
        }
    }
    Some(c)
}

fn secs(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

fn change_pct(now: f64, before: f64) -> String {
    if before <= 0.0 {
        return String::new();
    }
    format!(" ({:+.0}%)", (now - before) / before * 100.0)
}

impl Comparison {
    /// Whether no outcome changed: no line of the list above the duration (so "no change in
    /// outcomes" is never printed under a change).
    pub fn is_quiet(&self) -> bool {
        self.new_failures.is_empty()
            && self.fixed.is_empty()
            && self.still_failing.is_empty()
            && self.flaky.is_empty()
            && self.not_run.is_empty()
            && self.agent_errors.is_empty()
    }

    /// The lines the console, summary.md and report.html share:
    /// `new failure: a.test.toml (was passed)`, `fixed: …`, `still failing: …`, `flaky: …`,
    /// then the duration and cost change.
    pub fn lines(&self) -> Vec<String> {
        let was = |c: &Change| match &c.previous {
            Some(p) => format!("{} (was {}, now {})", c.test_file, p, c.outcome),
            None => format!("{} ({}, not in the previous suite)", c.test_file, c.outcome),
        };
        let mut lines = Vec::new();
        for c in &self.new_failures {
            lines.push(format!("new failure: {}", was(c)));
        }
        for c in &self.fixed {
            lines.push(format!("fixed: {}", was(c)));
        }
        for c in &self.still_failing {
            lines.push(format!("still failing: {}", was(c)));
        }
        for f in &self.flaky {
            lines.push(format!("flaky: {f}"));
        }
        for c in &self.not_run {
            lines.push(format!("not run: {}", was(c)));
        }
        for c in &self.agent_errors {
            lines.push(format!("agent error (not the app): {}", was(c)));
        }
        if self.is_quiet() {
            lines.push("no change in outcomes".to_string());
        }
        let mut time = format!(
            "duration: {} (previous {}{})",
            secs(self.duration_ms),
            secs(self.previous_duration_ms),
            change_pct(self.duration_ms as f64, self.previous_duration_ms as f64)
        );
        // A cost nobody reported is unknown, not $0: it is said so, and no change is computed.
        let shown = |c: Option<f64>| c.map_or("unknown".to_string(), |c| format!("${c:.4}"));
        if self.cost_usd.is_some() || self.previous_cost_usd.is_some() {
            let change = match (self.cost_usd, self.previous_cost_usd) {
                (Some(now), Some(before)) => change_pct(now, before),
                _ => String::new(),
            };
            let _ = write!(
                time,
                "; cost: {} (previous {}{change})",
                shown(self.cost_usd),
                shown(self.previous_cost_usd)
            );
        }
        lines.push(time);
        lines
    }

    /// The title line: `Since suite <id> (<time>, same selection: all root tests):`.
    pub fn heading(&self) -> String {
        format!(
            "Since suite {} ({}, same selection: {})",
            self.previous_suite_id,
            self.previous_started_at.format("%Y-%m-%d %H:%M UTC"),
            self.selection
        )
    }

    /// The `## Since the previous suite` section of summary.md.
    pub fn to_markdown(&self) -> String {
        let mut s = String::from("## Since the previous suite\n\n");
        let _ = writeln!(s, "{}:\n", self.heading());
        for line in self.lines() {
            let _ = writeln!(s, "- {line}");
        }
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, tests: &[(&str, bool)]) -> HistoryEntry {
        HistoryEntry {
            schema_version: crate::report::records::run_record::SCHEMA_VERSION,
            suite_id: id.into(),
            started_at: Utc::now(),
            finished_at: Utc::now(),
            duration_ms: 1000,
            selection: Selection::default(),
            tests: tests
                .iter()
                .map(|(f, passed)| HistoryTest {
                    test_file: (*f).into(),
                    outcome: if *passed { "passed" } else { "failed" }.into(),
                    passed: *passed,
                    flaky: false,
                    attempts: 1,
                    duration_ms: 10,
                    cost_usd: None,
                    quarantined: false,
                    runs: Vec::new(),
                    agent_error: None,
                })
                .collect(),
            cost_usd: None,
            replayed_steps: 0,
            agent_steps: 0,
            replay_drift_steps: 0,
            cost_saved_usd: None,
            commit: None,
            dirty: None,
            provider: None,
            stability: Vec::new(),
            suite_dir: None,
        }
    }

    #[test]
    fn only_the_same_provider_compares_and_an_interrupted_test_is_no_new_failure() {
        let mut codex = entry("1", &[("a", true), ("b", true)]);
        codex.provider = Some("codex".into());
        let mut claude = entry("2", &[("a", false), ("b", true)]);
        claude.provider = Some("claude-code".into());
        let mut now = entry("3", &[("a", true), ("b", false)]);
        now.provider = Some("codex".into());
        now.tests[1].outcome = "interrupted".into();
        let c = compare(&[codex, claude], &now).expect("the codex suite");
        assert_eq!(c.previous_suite_id, "1");
        assert!(c.fixed.is_empty() && c.new_failures.is_empty(), "{c:?}");
        assert_eq!(c.not_run[0].test_file, "b");
        let lines = c.lines();
        assert!(
            lines.iter().any(|l| l.starts_with("not run: b"))
                && !lines.iter().any(|l| l == "no change in outcomes"),
            "{lines:?}"
        );
    }

    #[test]
    fn a_shard_is_not_compared_on_tests_the_previous_shard_did_not_hold() {
        let mut before = entry("1", &[("a", true)]);
        before.selection.shard = Some("1/2".into());
        let mut now = entry("2", &[("a", true), ("c", false)]);
        now.selection.shard = Some("1/2".into());
        let c = compare(&[before], &now).expect("the previous shard");
        assert!(c.new_failures.is_empty() && c.new_tests.is_empty(), "{c:?}");
    }

    #[test]
    fn compares_with_the_previous_suite_of_the_same_selection() {
        let a = entry("1", &[("a", true), ("b", true)]);
        let mut other = entry("2", &[("a", false)]);
        other.selection.tags = vec!["x".into()];
        let b = entry("3", &[("a", false), ("b", true), ("c", false)]);
        let c = compare(&[a.clone(), other], &b).expect("a previous suite");
        assert_eq!(c.previous_suite_id, "1");
        let files = |v: &[Change]| v.iter().map(|c| c.test_file.clone()).collect::<Vec<_>>();
        assert_eq!(files(&c.new_failures), vec!["a", "c"]);
        assert!(c.lines()[0].starts_with("new failure: a (was passed, now failed)"));
        let d = entry("4", &[("a", true), ("b", true), ("c", false)]);
        let c = compare(&[a, b], &d).expect("previous");
        assert_eq!(files(&c.fixed), vec!["a"]);
        assert_eq!(files(&c.still_failing), vec!["c"]);
        assert!(compare(&[], &d).is_none());
    }

    #[test]
    fn an_unknown_previous_cost_reads_unknown_not_zero() {
        let before = entry("1", &[("a", true)]);
        let mut now = entry("2", &[("a", true)]);
        now.cost_usd = Some(0.25);
        let c = compare(&[before], &now).expect("a previous suite");
        let last = c.lines().pop().expect("a duration line");
        assert!(
            last.ends_with("; cost: $0.2500 (previous unknown)"),
            "{last}"
        );
        // A suite whose every step replayed spent $0: not unknown.
        let mut replayed = entry("3", &[("a", true)]);
        replayed.replayed_steps = 3;
        let c = compare(&[now], &replayed).expect("a previous suite");
        let last = c.lines().pop().expect("a duration line");
        assert!(last.contains("; cost: $0.0000 (previous $0.2500"), "{last}");
    }

    #[test]
    fn a_test_never_started_is_not_a_new_failure_nor_still_failing() {
        let before = entry("1", &[("a", true), ("b", false)]);
        let mut now = entry("2", &[("a", false), ("b", false)]);
        for t in &mut now.tests {
            t.outcome = NOT_RUN.into();
        }
        let c = compare(&[before], &now).expect("a previous suite");
        assert!(c.new_failures.is_empty(), "{c:?}");
        assert!(c.still_failing.is_empty(), "{c:?}");
        assert_eq!(c.not_run.len(), 2);
        assert!(
            c.lines()
                .contains(&"not run: a (was passed, now not_run)".to_string()),
            "{:?}",
            c.lines()
        );
    }

    #[test]
    fn an_agent_error_is_never_a_new_failure_and_says_nothing_of_the_app_after() {
        use crate::model::agent_fault::FaultKind;
        let before = entry("1", &[("a", true), ("b", false)]);
        let mut now = entry("2", &[("a", false), ("b", false)]);
        for t in &mut now.tests {
            t.outcome = "error".into();
            t.agent_error = Some(FaultKind::Auth);
        }
        let c = compare(std::slice::from_ref(&before), &now).expect("a previous suite");
        assert!(c.new_failures.is_empty(), "{c:?}");
        assert!(c.still_failing.is_empty(), "{c:?}");
        assert_eq!(c.agent_errors.len(), 2);
        assert!(
            c.lines()
                .contains(&"agent error (not the app): a (was passed, now error)".to_string()),
            "{:?}",
            c.lines()
        );
        // After an agent error, a pass is not "fixed" and a failure is new (nothing was known).
        let after = entry("3", &[("a", true), ("b", false)]);
        let c = compare(&[before, now], &after).expect("a previous suite");
        assert!(c.fixed.is_empty(), "{c:?}");
        assert_eq!(c.new_failures.len(), 1, "{c:?}");
    }
}
