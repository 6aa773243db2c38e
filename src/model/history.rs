//! What `history.jsonl` holds (docs/reports.md): one line per suite, its selection and each root test's
//! outcome and duration, and how to read it back. Part of the model because more than reporting
//! reads it: the shard split takes each test's recent duration from it (docs/ci.md). Writing lines,
//! comparing suites and the trends are the report's.

use crate::model::ids::SuiteId;
use crate::model::provider::ProviderName;
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, Read};
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use super::artifacts::history_path;

/// What the user asked to run: two suites compare when their selections are equal. A selection
/// is defined by its filters (PATH arguments, tags, `-g`, `--grep-invert`, `-E`,
/// `--only-changed`) and `--repeat`; a
/// shard is part of one, and a merge of every shard is the whole selection, as an unsharded run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Selection {
    /// PATH arguments as given (empty: the whole project).
    #[serde(default)]
    pub paths: Vec<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    /// `-g, --grep PATTERN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grep: Option<String>,
    /// `--grep-invert PATTERN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grep_invert: Option<String>,
    /// `-E, --filter EXPR`, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// `--only-changed[=REF]`: the revision compared against (`HEAD` without a value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only_changed: Option<String>,
    /// `--repeat N` (or `[supervisor] repeat`): runs of each test; 1 is not written.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub repeat: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rerun_failed: bool,
    /// `merge`: the suites merged into this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<SuiteId>,
    /// `merge --allow-partial` with shards missing: part of the selection only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n <= 1
}

impl Selection {
    /// What the history compares suites by, from the command line and the effective `repeat`.
    pub fn of(options: &crate::model::options::RunOptions, repeat: u32) -> Self {
        Selection {
            paths: options.paths.clone(),
            tags: options.tags.clone(),
            grep: options.grep.clone(),
            grep_invert: options.grep_invert.clone(),
            filter: options.filter.clone(),
            only_changed: options.only_changed.clone(),
            repeat: repeat.max(1),
            shard: options.shard.map(|s| s.to_string()),
            rerun_failed: options.rerun_failed,
            merged: Vec::new(),
            partial: false,
        }
    }
}

impl Selection {
    /// A short human description ("all root tests", "tags nightly, -g login, repeat 3, shard 1/2").
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.paths.is_empty() {
            parts.push(self.paths.join(" "));
        }
        if !self.tags.is_empty() {
            parts.push(format!("tags {}", self.tags.join(",")));
        }
        if let Some(g) = &self.grep {
            parts.push(format!("-g {g}"));
        }
        if let Some(g) = &self.grep_invert {
            parts.push(format!("--grep-invert {g}"));
        }
        if let Some(e) = &self.filter {
            parts.push(format!("-E {e}"));
        }
        if let Some(rev) = &self.only_changed {
            parts.push(format!("changed since {rev}"));
        }
        if self.repeat > 1 {
            parts.push(format!("repeat {}", self.repeat));
        }
        if let Some(s) = &self.shard {
            parts.push(format!("shard {s}"));
        }
        if self.rerun_failed {
            parts.push("rerun-failed".to_string());
        }
        if !self.merged.is_empty() {
            parts.push(format!(
                "{}merge of {} suites",
                if self.partial { "partial " } else { "" },
                self.merged.len()
            ));
        }
        if parts.is_empty() {
            "all root tests".to_string()
        } else {
            parts.join(", ")
        }
    }

    /// A whole-suite entry: an unsharded run of every selected test, or a full merge of shards.
    /// A shard's own entry (and a `--rerun-failed` or partial one) holds only part of the suite;
    /// a split that read it would differ from the split the earlier shards of the same run made
    /// (see docs/ci.md).
    pub fn is_whole_suite(&self) -> bool {
        self.shard.is_none() && !self.rerun_failed && !self.partial
    }

    /// Equal for comparison: the same filters and repeats, the same shard; a full merge of
    /// shards is the same selection as an unsharded run (whatever the shard ids).
    pub fn same_as(&self, other: &Selection) -> bool {
        self.same_tests_as(other) && self.repeat.max(1) == other.repeat.max(1)
    }

    /// The same tests, however often each ran: what a test's stability is read over (a
    /// `--repeat` run classifies a test the plain runs of its selection ran too).
    pub fn same_tests_as(&self, other: &Selection) -> bool {
        self.paths == other.paths
            && self.tags == other.tags
            && self.grep == other.grep
            && self.grep_invert == other.grep_invert
            && self.filter == other.filter
            && self.only_changed == other.only_changed
            && self.shard == other.shard
            && self.rerun_failed == other.rerun_failed
            && self.partial == other.partial
    }
}

/// One root test in a history line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HistoryTest {
    pub test_file: String,
    /// `not_run` for a root test the suite never started.
    pub outcome: String,
    #[serde(default)]
    pub passed: bool,
    #[serde(default)]
    pub flaky: bool,
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Quarantined in that suite: its outcome did not decide the exit code.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quarantined: bool,
    /// Ended by an agent fault (its kind), not by the app: never a new failure, and left out of
    /// the pass rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_error: Option<crate::model::agent_fault::FaultKind>,
    /// Each run of the test in that suite (one per `--repeat`, its final attempt): how it ended
    /// and a digest of what the app showed, which later suites of the same commit classify by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<HistoryRun>,
}

impl HistoryTest {
    /// The test's runs in that suite; a line written before runs were kept reads as one run of
    /// unknown outputs.
    pub fn runs_or_final(&self) -> Vec<HistoryRun> {
        if self.runs.is_empty() {
            vec![HistoryRun {
                outcome: self.outcome.clone(),
                observed: None,
            }]
        } else {
            self.runs.clone()
        }
    }
}

/// One run of a root test in a history line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HistoryRun {
    pub outcome: String,
    /// A digest of the run's observed outputs (docs/ci.md, "Stability classes and repeats").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<String>,
}

/// The class of a root test's runs on one commit (docs/ci.md, "Stability classes and repeats").
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum StabilityClass {
    /// The same outcome on every run of the commit.
    Stable,
    /// Passed and failed on the commit, and what the app showed differed between them.
    AppFlaky,
    /// Passed and failed on the commit over the same observed outputs: the verdict flipped.
    VerdictFlaky,
    /// Failed on every run of this commit after passing on an earlier one.
    Broken,
    /// Some runs ended by an agent fault, not by the app.
    AgentUnreliable,
}

impl StabilityClass {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stable => "stable",
            Self::AppFlaky => "app-flaky",
            Self::VerdictFlaky => "verdict-flaky",
            Self::Broken => "broken",
            Self::AgentUnreliable => "agent-unreliable",
        }
    }

    /// Flaky in the sense of the quarantine policy.
    pub fn is_flaky(self) -> bool {
        matches!(self, Self::AppFlaky | Self::VerdictFlaky)
    }
}

/// A test's class as a history line keeps it (what auto-quarantine reads back).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HistoryClass {
    pub test_file: String,
    pub class: StabilityClass,
}

/// One line of history.jsonl.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HistoryEntry {
    /// The layout's version (the `schema_version` of run.json); lines written
    /// before it was recorded read as 1.
    #[serde(default = "first_schema_version")]
    pub schema_version: u32,
    pub suite_id: SuiteId,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub duration_ms: u64,
    pub selection: Selection,
    pub tests: Vec<HistoryTest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// docs/replay.md: steps passed by replay, steps the agent carried out with replay on, of which
    /// drifted, and what the replayed steps cost when they were recorded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replayed_steps: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub agent_steps: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replay_drift_steps: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_saved_usd: Option<f64>,
    /// The git commit of the project root and whether its tracked files were changed (`null`
    /// outside a repository, and in lines written before they were recorded).
    #[serde(default)]
    pub commit: Option<String>,
    #[serde(default)]
    pub dirty: Option<bool>,
    /// The provider the suite ran with: suites compare only with the same provider's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderName>,
    /// Each test the suite could classify, and its class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stability: Vec<HistoryClass>,
    /// A merge: the folder its suite was written to (`merge --out`), absolute, so `supervisor
    /// report --history FILE` finds it outside the artifact directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite_dir: Option<String>,
}

impl HistoryEntry {
    /// The root tests that did not pass (what `--rerun-failed` and `last(failed)` take).
    pub fn not_passed(&self) -> Vec<String> {
        self.tests
            .iter()
            .filter(|t| !t.passed)
            .map(|t| t.test_file.clone())
            .collect()
    }

    /// Whether a suite compares with `other`: the same selection, and the same provider when
    /// both lines name one (a codex night is not compared with a claude-code one).
    pub fn comparable_with(&self, other: &HistoryEntry) -> bool {
        self.selection.same_as(&other.selection) && self.same_provider(other)
    }

    /// Whether a suite's runs of a test count for its stability with `other`'s: the same tests
    /// and provider, however often each ran (`--repeat` classifies with the plain runs).
    pub fn same_tests_as(&self, other: &HistoryEntry) -> bool {
        self.selection.same_tests_as(&other.selection) && self.same_provider(other)
    }

    fn same_provider(&self, other: &HistoryEntry) -> bool {
        match (&self.provider, &other.provider) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }
}

/// The previous suite `--rerun-failed` and `last(failed)` read: the last one that ran the whole
/// selection (an unsharded run, a merge of shards, or an earlier `--rerun-failed`), never one
/// shard's own entry, which holds only its share of the tests.
pub fn previous_whole(entries: &[HistoryEntry]) -> Option<&HistoryEntry> {
    entries.iter().rev().find(|e| e.selection.shard.is_none())
}

/// Each test's class in the newest line that classified it (what `-E 'class(…)'` reads).
pub fn latest_classes(entries: &[HistoryEntry]) -> BTreeMap<String, StabilityClass> {
    let mut classes = BTreeMap::new();
    for entry in entries {
        for c in &entry.stability {
            classes.insert(c.test_file.clone(), c.class);
        }
    }
    classes
}

fn first_schema_version() -> u32 {
    1
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Every readable line of the history file, oldest first. A damaged line is skipped, not fatal:
/// the history is a convenience, never a reason to stop a suite.
pub fn read(path: &Path) -> Vec<HistoryEntry> {
    let (entries, warnings) = read_checked(path);
    warn_once(&warnings);
    entries
}

/// Says each warning on stderr, once per process: the history is read several times a run
/// (the budget, the comparison, the trends), and one unreadable file is one warning.
pub fn warn_once(warnings: &[String]) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let Ok(mut said) = SAID.lock() else { return };
    for warning in warnings {
        if !said.contains(warning) {
            eprintln!("warning: {warning}");
            said.push(warning.clone());
        }
    }
}

/// [`read`], and a warning per line that could not be read (truncated, hand-edited, written by
/// a newer version), naming the file and line.
pub fn read_checked(path: &Path) -> (Vec<HistoryEntry>, Vec<String>) {
    let mut entries = Vec::new();
    let warnings = for_each_entry(path, |entry| entries.push(entry));
    (entries, warnings)
}

/// The longest history line read: a suite of thousands of tests is well under it, and a line
/// past it (a damaged or hostile file) is skipped with a warning instead of held in memory.
pub const MAX_LINE_BYTES: u64 = 16 * 1024 * 1024;

/// Calls `f` on every readable line of the history file, oldest first, one line in memory at a
/// time (a history of hundreds of megabytes costs no more than its longest line); returns a
/// warning per line that could not be read.
///
/// Only a regular file is read (a FIFO would block, `/dev/zero` never end), and of a file over
/// [`crate::model::user_file::HISTORY_MAX`] bytes only its newest lines, that many bytes: each
/// with a warning.
pub fn for_each_entry(path: &Path, mut f: impl FnMut(HistoryEntry)) -> Vec<String> {
    use crate::model::user_file::{self, HISTORY_MAX};
    use std::io::{Seek, SeekFrom};
    let mut warnings = Vec::new();
    let (mut file, size) = match user_file::open(path, true) {
        Ok(opened) => opened,
        Err(e) if e.is_not_found() => return warnings,
        Err(e) => {
            warnings.push(format!("{e} (history not read)"));
            return warnings;
        }
    };
    let mut newest_only = false;
    if size > HISTORY_MAX {
        warnings.push(format!(
            "{} is {size} bytes: only its newest {HISTORY_MAX} bytes are read \
             (docs/troubleshooting.md says how to shrink it)",
            path.display()
        ));
        if let Err(e) = file.seek(SeekFrom::Start(size - HISTORY_MAX)) {
            warnings.push(format!("{}: {e}", path.display()));
            return warnings;
        }
        newest_only = true;
    }
    let mut reader = std::io::BufReader::new(file.take(HISTORY_MAX));
    // Started mid-file: the first (partial) line is not an entry.
    if newest_only && !skip_line(&mut reader) {
        return warnings;
    }
    let mut line = Vec::new();
    for n in 1.. {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut line);
        match read {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                warnings.push(format!("{}:{n}: {e}", path.display()));
                break;
            }
        }
        if line.len() as u64 > MAX_LINE_BYTES {
            warnings.push(format!(
                "{}:{n}: a line longer than {MAX_LINE_BYTES} bytes",
                path.display()
            ));
            if !skip_line(&mut reader) {
                break;
            }
            continue;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<HistoryEntry>(&line) {
            Ok(entry) => f(entry),
            Err(e) => warnings.push(format!("{}:{n}: {e}", path.display())),
        }
    }
    warnings
}

/// Reads past the rest of a line without keeping it; false at the end of the file.
fn skip_line(reader: &mut impl BufRead) -> bool {
    loop {
        let Ok(buf) = reader.fill_buf() else {
            return false;
        };
        if buf.is_empty() {
            return false;
        }
        if let Some(at) = memchr::memchr(b'\n', buf) {
            reader.consume(at + 1);
            return true;
        }
        let len = buf.len();
        reader.consume(len);
    }
}

/// Each test's last five per-attempt durations, newest last: what [`recent_durations`] needs,
/// kept as the history streams by.
#[derive(Debug, Default)]
pub struct RecentRuns(BTreeMap<String, VecDeque<u64>>);

impl RecentRuns {
    const KEPT: usize = 5;

    /// Adds a whole-suite entry's durations; a shard's own partial entry is left out (see
    /// [`recent_durations`]).
    pub fn add(&mut self, entry: &HistoryEntry) {
        if !entry.selection.is_whole_suite() {
            return;
        }
        for test in entry.tests.iter().filter(|t| t.attempts > 0) {
            let runs = self.0.entry(test.test_file.clone()).or_default();
            runs.push_back(test.duration_ms / u64::from(test.attempts.max(1)));
            if runs.len() > Self::KEPT {
                runs.pop_front();
            }
        }
    }

    /// Each test's median of its kept runs.
    pub fn medians(self) -> BTreeMap<String, u64> {
        self.0
            .into_iter()
            .map(|(test, runs)| {
                let mut runs: Vec<u64> = runs.into();
                runs.sort_unstable();
                let median = runs[runs.len() / 2];
                (test, median)
            })
            .collect()
    }
}

/// Each test's recent duration (ms): the median of its last five recorded runs in the
/// whole-suite entries of `entries` ([`Selection::is_whole_suite`]). Shards run one after another
/// (one machine, one shared history file) append their own entries between each other's splits:
/// read, those would move tests from shard to shard mid-run, so that some run twice and some
/// never. Only a whole suite (or a merge) moves the split, between CI runs.
pub fn recent_durations(entries: &[HistoryEntry]) -> BTreeMap<String, u64> {
    let mut recent = RecentRuns::default();
    entries.iter().for_each(|e| recent.add(e));
    recent.medians()
}

/// [`recent_durations`] of the history file at `path`, streamed (the `--shard` split's input),
/// and a warning per unreadable line.
pub fn recent_durations_in(path: &Path) -> (BTreeMap<String, u64>, Vec<String>) {
    let mut recent = RecentRuns::default();
    let warnings = for_each_entry(path, |e| recent.add(&e));
    (recent.medians(), warnings)
}

#[cfg(test)]
mod streaming_tests {
    use super::*;
    use std::io::Write;

    fn line(n: u64) -> String {
        serde_json::json!({
            "suite_id": format!("s{n}"),
            "started_at": "2026-01-01T00:00:00Z",
            "finished_at": "2026-01-01T00:00:01Z",
            "duration_ms": 1000,
            "selection": {},
            "tests": [
                {"test_file": "a.test.toml", "outcome": "passed", "attempts": 1, "duration_ms": n * 10},
                {"test_file": "b.test.toml", "outcome": "failed", "attempts": 2, "duration_ms": n * 40},
            ],
        })
        .to_string()
    }

    #[test]
    fn streamed_durations_equal_the_whole_reads_and_a_huge_line_is_skipped() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("history.jsonl");
        let mut file = std::fs::File::create(&path).expect("create");
        for n in 1..=4 {
            writeln!(file, "{}", line(n)).expect("write");
        }
        // A line past the limit, then a damaged one, then more history.
        let huge = vec![b'x'; usize::try_from(MAX_LINE_BYTES).expect("fits") + 10];
        file.write_all(&huge).expect("write");
        writeln!(file, "\n{{not json").expect("write");
        for n in 5..=9 {
            writeln!(file, "{}", line(n)).expect("write");
        }
        drop(file);
        let (entries, warnings) = read_checked(&path);
        assert_eq!(entries.len(), 9);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].contains(":5: a line longer than"),
            "{warnings:?}"
        );
        let (streamed, again) = recent_durations_in(&path);
        assert_eq!(again, warnings);
        assert_eq!(streamed, recent_durations(&entries));
        // The last five runs (5..=9) of each test: medians 70 and 140 (per attempt).
        assert_eq!(streamed["a.test.toml"], 70);
        assert_eq!(streamed["b.test.toml"], 140);
    }
}

/// Each test's recent cost per attempt (USD): the median of its last five runs that reported a
/// cost, in any entry (a test costs as much in a shard as in the whole suite). What the suite's
/// budget expects a test to cost before it starts.
pub fn recent_costs(entries: &[HistoryEntry]) -> BTreeMap<String, f64> {
    let mut seen: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for entry in entries.iter().rev() {
        for test in entry.tests.iter().filter(|t| t.attempts > 0) {
            let Some(cost) = test.cost_usd.filter(|c| c.is_finite() && *c >= 0.0) else {
                continue;
            };
            let runs = seen.entry(test.test_file.clone()).or_default();
            if runs.len() < 5 {
                runs.push(cost / f64::from(test.attempts.max(1)));
            }
        }
    }
    seen.into_iter()
        .map(|(test, mut runs)| {
            runs.sort_by(f64::total_cmp);
            let median = runs[runs.len() / 2];
            (test, median)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(shard: Option<&str>, merged: &[&str], ms: u64) -> HistoryEntry {
        HistoryEntry {
            schema_version: 1,
            suite_id: "s".into(),
            started_at: Utc::now(),
            finished_at: Utc::now(),
            duration_ms: ms,
            selection: Selection {
                shard: shard.map(str::to_string),
                merged: merged.iter().map(|m| SuiteId::new(*m)).collect(),
                ..Selection::default()
            },
            tests: vec![HistoryTest {
                test_file: "a".into(),
                outcome: "passed".into(),
                passed: true,
                flaky: false,
                attempts: 1,
                duration_ms: ms,
                cost_usd: None,
                quarantined: false,
                runs: Vec::new(),
                agent_error: None,
            }],
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
    fn durations_come_from_whole_suites_and_merges_never_from_a_shard() {
        let whole = entry(None, &[], 100);
        let merge = entry(None, &["x", "y"], 300);
        let shard = entry(Some("1/3"), &[], 9_000);
        let d = recent_durations(&[whole.clone(), merge.clone(), shard.clone()]);
        assert_eq!(
            d.get("a"),
            Some(&300),
            "the median of 100 and 300, not 9000"
        );
        assert!(recent_durations(&[shard]).is_empty());
    }
}
