//! Stability you can certify (docs/ci.md, "Stability classes and repeats"): each root test's
//! runs of one commit, from this suite's `--repeat` runs and the history of its selection,
//! classified `stable`, `app-flaky`, `verdict-flaky`, `broken` or `agent-unreliable`, with the
//! evidence (which runs differed, and the first difference). And the optional auto-quarantine
//! policy that reads those classes back from history.
//!
//! What the app showed in a run (its *observed outputs*) is the text of every harness command's
//! log, of each console call the agent made (tool, exit code, size) and, for the `shell` agent,
//! its commands' output, with the run's own values
//! (ports, run and session ids, its folders) and clock times masked: two runs of an unchanged app
//! show the same text; a verdict that flips over the same text is the agent's judgement.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::model::artifacts::RunPaths;
use crate::model::history::HistoryRun;
use crate::report::records::history::HistoryEntry;
use crate::report::records::run_record::RunRecord;

pub use crate::model::history::StabilityClass;

/// One root test's class, with its evidence (summary.json `stability`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stability {
    pub test_file: String,
    pub class: StabilityClass,
    /// The commit the runs are of (`null`: no repository; then only this suite's runs count).
    pub commit: Option<String>,
    /// Each run considered, oldest first: where it is from and how it ended.
    pub runs: Vec<ObservedRun>,
    /// Which runs differed ("run 2 (failed) vs run 1 (passed)"); empty when stable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differed: Vec<String>,
    /// The first difference between a passing and a failing run's observed outputs, or why
    /// there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<String>,
}

impl Stability {
    /// The console's and summary.md's line.
    pub fn line(&self) -> String {
        let outcomes: Vec<&str> = self.runs.iter().map(|r| r.outcome.as_str()).collect();
        let mut line = format!(
            "{}: {} over {} run(s) [{}]",
            self.test_file,
            self.class.as_str(),
            self.runs.len(),
            outcomes.join(" ")
        );
        if !self.differed.is_empty() {
            let _ = write!(line, "; differed: {}", self.differed.join(", "));
        }
        if let Some(first) = &self.first_difference {
            let _ = write!(line, "; first difference: {first}");
        }
        line
    }
}

/// One run of a test, as classified.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ObservedRun {
    /// `run 3` (this suite's `--repeat`) or `suite <id>` (history).
    pub label: String,
    pub outcome: String,
    pub passed: bool,
    /// A digest of the run's observed outputs (`null` when unknown).
    pub observed: Option<String>,
    /// The observed outputs' text, for this suite's runs only (never serialized).
    #[serde(skip)]
    #[schemars(skip)]
    pub text: Option<String>,
}

/// A change of quarantine made by `[supervisor] auto_quarantine`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QuarantineChange {
    pub test_file: String,
    /// `quarantined` or `released`.
    pub change: String,
    pub reason: String,
}

/// What a suite's end says about stability: the tests classified, the quarantine changes, and
/// the commit they were seen at.
pub struct StabilityNews<'a> {
    pub stability: &'a [Stability],
    pub quarantine_changes: &'a [QuarantineChange],
    pub commit: Option<&'a str>,
}

/// The console's notice at the suite's end: each classified test with its evidence, and each
/// change of quarantine; `None` when there is neither.
pub fn console_text(summary: &StabilityNews<'_>) -> Option<String> {
    if summary.stability.is_empty() && summary.quarantine_changes.is_empty() {
        return None;
    }
    let mut text = String::new();
    if !summary.stability.is_empty() {
        let commit = summary
            .commit
            .map_or("no commit (not a git repository)".to_string(), |c| {
                format!("commit {}", c.get(..12).unwrap_or(c))
            });
        let _ = write!(text, "Stability ({commit}):");
        for s in summary.stability {
            let _ = write!(text, "\n  {}", s.line());
        }
    }
    for c in summary.quarantine_changes {
        if !text.is_empty() {
            text.push('\n');
        }
        let _ = write!(
            text,
            "auto-quarantine: {} {} ({})",
            c.test_file, c.change, c.reason
        );
    }
    Some(text)
}

/// The `## Stability` section of summary.md (empty when nothing was classified or changed).
pub fn markdown(summary: &StabilityNews<'_>) -> String {
    match console_text(summary) {
        None => String::new(),
        Some(text) => {
            let mut s = String::from("## Stability\n\n");
            for line in text.lines() {
                let _ = writeln!(s, "- {}", line.trim());
            }
            s.push('\n');
            s
        }
    }
}

/// A test's class in report.html: a badge, the sparkline of its runs (oldest first, one bar
/// each: green passed, red not), and the evidence. Inline SVG, no script, no network.
pub fn html_block(s: &Stability) -> String {
    let esc = |t: &str| {
        t.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let (w, gap, h) = (8, 2, 16);
    let width = s.runs.len() * (w + gap);
    let mut svg = format!(
        "<svg class=\"sparkline\" width=\"{width}\" height=\"{h}\" viewBox=\"0 0 {width} {h}\" role=\"img\" aria-label=\"runs: {}\">",
        esc(&s.runs.iter().map(|r| r.outcome.as_str()).collect::<Vec<_>>().join(" "))
    );
    for (i, r) in s.runs.iter().enumerate() {
        let (fill, y) = if r.passed {
            ("#1a7f37", 2)
        } else {
            ("#cf222e", 6)
        };
        let _ = write!(
            svg,
            "<rect x=\"{}\" y=\"{y}\" width=\"{w}\" height=\"{}\" fill=\"{fill}\"><title>{}: {}</title></rect>",
            i * (w + gap),
            h - y,
            esc(&r.label),
            esc(&r.outcome)
        );
    }
    svg.push_str("</svg>");
    let colour = match s.class {
        StabilityClass::Stable => "#1a7f37",
        StabilityClass::AppFlaky | StabilityClass::VerdictFlaky => "#9a6700",
        StabilityClass::Broken => "#cf222e",
        StabilityClass::AgentUnreliable => "#8250df",
    };
    let mut evidence = String::new();
    if !s.differed.is_empty() {
        let _ = write!(evidence, " differed: {}", esc(&s.differed.join(", ")));
    }
    if let Some(first) = &s.first_difference {
        let _ = write!(evidence, "; first difference: {}", esc(first));
    }
    format!(
        "<div class=\"stability meta\" data-class=\"{0}\"><span class=\"badge\" style=\"background:{colour}\">{0}</span> {svg}{evidence}</div>\n",
        s.class.as_str()
    )
}

/// The outcomes an agent fault ends a run with (docs/providers.md).
fn is_agent_fault(outcome: &str) -> bool {
    outcome == "agent_error"
}

/// Classifies `runs` (oldest first) of one commit; `passed_before`: the test passed on an
/// earlier commit. Nothing is classified from fewer than 2 runs.
pub fn classify(
    test_file: &str,
    commit: Option<String>,
    runs: Vec<ObservedRun>,
    passed_before: bool,
) -> Option<Stability> {
    if runs.len() < 2 {
        return None;
    }
    let mut s = Stability {
        test_file: test_file.to_string(),
        class: StabilityClass::Stable,
        commit,
        runs,
        differed: Vec::new(),
        first_difference: None,
    };
    let faults: Vec<&ObservedRun> = s
        .runs
        .iter()
        .filter(|r| is_agent_fault(&r.outcome))
        .collect();
    if !faults.is_empty() {
        s.class = StabilityClass::AgentUnreliable;
        s.differed = faults
            .iter()
            .map(|r| format!("{} ended by an agent fault", r.label))
            .collect();
        return Some(s);
    }
    let Some(pass) = s.runs.iter().find(|r| r.passed) else {
        s.class = if passed_before {
            StabilityClass::Broken
        } else {
            StabilityClass::Stable
        };
        return Some(s);
    };
    let Some(fail) = s.runs.iter().find(|r| !r.passed) else {
        return Some(s);
    };
    let (pass, fail) = (pass.clone(), fail.clone());
    let failing: Vec<&ObservedRun> = s.runs.iter().filter(|r| !r.passed).collect();
    let passing: Vec<&ObservedRun> = s.runs.iter().filter(|r| r.passed).collect();
    // Evidence: a pair of a passing and a failing run whose outputs differ, if any.
    let differing = passing.iter().find_map(|p| {
        failing
            .iter()
            .find(|f| f.observed.is_some() && p.observed.is_some() && f.observed != p.observed)
            .map(|f| ((*p).clone(), (*f).clone()))
    });
    match differing {
        Some((p, f)) => {
            s.class = StabilityClass::AppFlaky;
            s.differed = vec![format!(
                "{} ({}) vs {} ({})",
                f.label, f.outcome, p.label, p.outcome
            )];
            s.first_difference = Some(match (&p.text, &f.text) {
                (Some(a), Some(b)) => first_difference(a, b, &p.label, &f.label),
                _ => format!(
                    "observed outputs {} in {} and {} in {}",
                    short(&p.observed),
                    p.label,
                    short(&f.observed),
                    f.label
                ),
            });
        }
        None => {
            s.class = StabilityClass::VerdictFlaky;
            s.differed = vec![format!(
                "{} ({}) vs {} ({})",
                fail.label, fail.outcome, pass.label, pass.outcome
            )];
            s.first_difference = Some(format!(
                "none: the same observed outputs ({}) in {} and {}; the verdict alone changed",
                short(&pass.observed),
                pass.label,
                fail.label
            ));
        }
    }
    Some(s)
}

fn short(digest: &Option<String>) -> String {
    digest.as_deref().map_or("unknown".to_string(), |d| {
        d.get(..12).unwrap_or(d).to_string()
    })
}

/// `line N: "<a>" in <la>, "<b>" in <lb>`: the first line where two outputs differ.
fn first_difference(a: &str, b: &str, la: &str, lb: &str) -> String {
    let (mut al, mut bl) = (a.lines(), b.lines());
    for n in 1.. {
        match (al.next(), bl.next()) {
            (None, None) => break,
            (x, y) if x == y => continue,
            (x, y) => {
                let show = |l: Option<&str>| {
                    l.map_or("(nothing)".to_string(), |l| {
                        let l: String = l.chars().take(160).collect();
                        format!("{l:?}")
                    })
                };
                return format!("line {n}: {} in {la}, {} in {lb}", show(x), show(y));
            }
        }
    }
    "the outputs differ".to_string()
}

/// How much of each harness log the observed outputs take.
const OBSERVED_LOG_BYTES: u64 = 1024 * 1024;

/// The observed outputs of a finished run and their digest: every harness command's log
/// (`logs/<name>.log`) and the agent's console calls, the run's own values masked.
pub fn observe(record: &RunRecord) -> (String, String) {
    let paths = RunPaths::new(Path::new(&record.identity.run_dir));
    let mut text = String::new();
    let mut names: Vec<&str> = record.commands.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    for name in names {
        let log = paths.logs_dir().join(format!("{name}.log"));
        // The head of a log is enough to tell runs apart, and a log of hundreds of megabytes
        // is not read whole at every suite's end.
        let mut body = Vec::new();
        if let Ok(file) = std::fs::File::open(&log) {
            use std::io::Read as _;
            let _ = file.take(OBSERVED_LOG_BYTES).read_to_end(&mut body);
        }
        let _ = writeln!(text, "== log {name}");
        text.push_str(&String::from_utf8_lossy(&body));
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    let transcript_is_app_output = record
        .identity
        .provider
        .kind()
        .is_some_and(|kind| kind.info().transcript_is_app_output);
    if transcript_is_app_output {
        // The shell agent has no judgement: its transcript is its commands' output, what the
        // app showed. Only the result lines (its verdicts) are left out.
        let mut body = Vec::new();
        if let Ok(file) = std::fs::File::open(paths.agent_log()) {
            use std::io::Read as _;
            let _ = file.take(OBSERVED_LOG_BYTES).read_to_end(&mut body);
        }
        let _ = writeln!(text, "== transcript");
        // A verdict runs from its RESULT line to the next step's header (an ERROR's message
        // repeats the output it judged).
        let mut in_verdict = false;
        for line in String::from_utf8_lossy(&body).lines() {
            if line.starts_with("### ") {
                in_verdict = false;
            } else if line.starts_with("RESULT ") {
                in_verdict = true;
            }
            if !in_verdict && !line.starts_with("BUGATTI_") {
                let _ = writeln!(text, "{line}");
            }
        }
    }
    for step in &record.steps {
        for call in &step.console_calls {
            let _ = writeln!(
                text,
                "== step {} {} exit {:?} {} bytes{}",
                step.step_id,
                call.tool,
                call.exit_code,
                call.bytes,
                if call.is_error { " (error)" } else { "" }
            );
        }
    }
    let text = mask(record, &text);
    let digest = Sha256::digest(text.as_bytes())
        .iter()
        .fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        });
    (text, digest)
}

/// The run's own values (its folder, workspace, ids, ports) and clock times replaced by names:
/// they differ on every run of an unchanged app.
fn mask(record: &RunRecord, text: &str) -> String {
    let id = &record.identity;
    let mut values: Vec<(String, String)> = vec![
        (id.run_dir.clone(), "${BUGATTI_RUN_DIR}".into()),
        (id.run_id.to_string(), "${BUGATTI_RUN_ID}".into()),
        (id.session_id.to_string(), "${BUGATTI_SESSION_ID}".into()),
    ];
    if let Some(w) = &record.workspace {
        values.push((w.clone(), "${BUGATTI_WORKDIR}".into()));
    }
    for (name, port) in &record.ports {
        values.push((port.to_string(), format!("${{{name}}}")));
    }
    // Longest first, so a value inside another is not replaced first.
    values.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
    let mut out = text.to_string();
    for (value, name) in values.iter().filter(|(v, _)| !v.is_empty()) {
        out = out.replace(value.as_str(), name);
    }
    mask_clock(out)
}

/// Clock times (`2026-11-27T12:00:01.5Z`, `12:00:01`) replaced by `<time>`.
fn mask_clock(out: String) -> String {
    // Every clock time has a `:`; without one there is nothing to mask and no automaton to build.
    if !out.contains(':') {
        return out;
    }
    // ASCII digits and word boundaries (`(?-u)`): a clock prints no other, and Unicode's `\d`,
    // twenty times over, made this automaton the costliest of a short suite's end.
    static CLOCK: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?-u)\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?|\b\d{2}:\d{2}:\d{2}(\.\d+)?\b",
        )
        .ok()
    });
    match CLOCK.as_ref() {
        Some(re) => re.replace_all(&out, "<time>").into_owned(),
        None => out,
    }
}

/// Each repeat's final run of each test in `records`, as history keeps them (oldest first).
pub fn history_runs(records: &[RunRecord], test_file: &str) -> Vec<HistoryRun> {
    finals(records, test_file)
        .into_iter()
        .map(|(r, _)| HistoryRun {
            outcome: outcome_of(r),
            observed: Some(observe(r).1),
        })
        .collect()
}

fn outcome_of(r: &RunRecord) -> String {
    r.outcome
        .map_or("interrupted", crate::model::outcome::RunOutcome::as_str)
        .to_string()
}

/// Each repeat's final attempt of `test_file`, by repeat.
fn finals<'a>(records: &'a [RunRecord], test_file: &str) -> Vec<(&'a RunRecord, u32)> {
    let mut by_repeat: BTreeMap<u32, &RunRecord> = BTreeMap::new();
    for r in records.iter().filter(|r| r.identity.test_file == test_file) {
        let e = by_repeat.entry(r.identity.repeat).or_insert(r);
        if (r.identity.attempt, r.identity.started_at) > (e.identity.attempt, e.identity.started_at)
        {
            *e = r;
        }
    }
    by_repeat.into_iter().map(|(k, r)| (r, k)).collect()
}

/// What the classification of one suite reads: the suite's own runs, the history before it
/// (the entries of the same selection, provider and a clean tree of the same commit count).
pub struct Inputs<'a> {
    pub records: &'a [RunRecord],
    pub history: &'a [HistoryEntry],
    pub current: &'a HistoryEntry,
    pub strict_warnings: bool,
}

/// Every root test of the suite that can be classified (2 runs or more of its commit).
pub fn classify_suite(input: &Inputs<'_>) -> Vec<Stability> {
    let current = input.current;
    let same_code = |e: &HistoryEntry| {
        current.commit.is_some()
            && e.commit == current.commit
            && e.dirty == Some(false)
            && current.dirty == Some(false)
    };
    let mut out = Vec::new();
    for t in &current.tests {
        let mut runs = Vec::new();
        let mut passed_before = false;
        for e in input
            .history
            .iter()
            .filter(|e| e.suite_id != current.suite_id && e.same_tests_as(current))
        {
            let Some(h) = e.tests.iter().find(|h| h.test_file == t.test_file) else {
                continue;
            };
            if same_code(e) {
                runs.extend(
                    h.runs_or_final()
                        .into_iter()
                        .filter(|r| r.outcome != "not_run")
                        .map(|r| ObservedRun {
                            label: format!("suite {}", e.suite_id),
                            passed: is_pass(&r.outcome, input.strict_warnings),
                            outcome: r.outcome,
                            observed: r.observed,
                            text: None,
                        }),
                );
            } else if h.passed {
                passed_before = true;
            }
        }
        let this: Vec<ObservedRun> = finals(input.records, &t.test_file)
            .into_iter()
            .filter(|(r, _)| r.outcome != Some(crate::model::outcome::RunOutcome::Interrupted))
            .map(|(r, repeat)| {
                let (text, digest) = observe(r);
                let outcome = outcome_of(r);
                ObservedRun {
                    label: format!("run {repeat}"),
                    passed: is_pass(&outcome, input.strict_warnings),
                    outcome,
                    observed: Some(digest),
                    text: Some(text),
                }
            })
            .collect();
        runs.extend(this);
        if let Some(s) = classify(&t.test_file, current.commit.clone(), runs, passed_before) {
            out.push(s);
        }
    }
    out
}

fn is_pass(outcome: &str, strict: bool) -> bool {
    outcome == "passed" || (outcome == "warned" && !strict)
}

/// How many days of history the auto-quarantine policy looks back for a flaky class.
pub const QUARANTINE_DAYS: i64 = 14;
/// Consecutive passes on the same selection that release a test from auto-quarantine.
pub const RELEASE_AFTER_PASSES: usize = 5;

/// `[supervisor] auto_quarantine`: which of `tests` are quarantined by the policy now, given the
/// history before this suite (oldest first) of the same selection. A test is quarantined when a
/// suite within the last 14 days classified it flaky (`app-flaky`, `verdict-flaky`), unless it
/// has passed on the 5 suites since then; `broken` never quarantines.
pub fn auto_quarantined(
    history: &[HistoryEntry],
    selection: &crate::report::records::history::Selection,
    tests: &[String],
    now: chrono::DateTime<chrono::Utc>,
) -> BTreeMap<String, String> {
    let since = now - chrono::Duration::days(QUARANTINE_DAYS);
    let mut out = BTreeMap::new();
    let same: Vec<&HistoryEntry> = history
        .iter()
        .filter(|e| e.selection.same_tests_as(selection))
        .collect();
    for test in tests {
        // The last suite that classified it flaky, within the window.
        // Classified app-flaky or verdict-flaky, or passed only on a retry (flaky on one
        // commit within one suite); `broken` never counts.
        let Some(at) = same.iter().rposition(|e| {
            e.started_at >= since
                && (e
                    .stability
                    .iter()
                    .any(|s| &s.test_file == test && s.class.is_flaky())
                    || e.tests.iter().any(|t| &t.test_file == test && t.flaky))
        }) else {
            continue;
        };
        let flagged = same[at];
        let class = flagged
            .stability
            .iter()
            .find(|s| &s.test_file == test && s.class.is_flaky())
            .map_or("flaky (passed on a retry)", |s| s.class.as_str());
        // The longest run of clean passes since: once it reached the mark the test is out,
        // and a later failure alone does not bring it back (only a new flaky class does).
        let mut streak = 0;
        let mut passes_since = 0;
        for t in same[at + 1..]
            .iter()
            .filter_map(|e| e.tests.iter().find(|t| &t.test_file == test))
            .filter(|t| t.outcome != crate::report::records::history::NOT_RUN)
        {
            streak = if t.passed && !t.flaky { streak + 1 } else { 0 };
            passes_since = passes_since.max(streak);
        }
        if passes_since < RELEASE_AFTER_PASSES {
            out.insert(
                test.clone(),
                format!(
                    "{class} in suite {} ({}); {passes_since} of {RELEASE_AFTER_PASSES} passes since",
                    flagged.suite_id,
                    flagged.started_at.format("%Y-%m-%d")
                ),
            );
        }
    }
    out
}

/// `[supervisor] auto_quarantine`: marks the suite's tests the policy quarantines, from the
/// history before it, and returns each change against the previous suite of the selection
/// (entered or left quarantine). A test quarantined by its file or `[supervisor] quarantine`
/// stays so and is not named.
pub fn apply_auto_quarantine(
    suite: &mut crate::model::load::Suite,
    selection: &crate::report::records::history::Selection,
) -> Vec<QuarantineChange> {
    let history = crate::report::records::history::read(&suite.history_file);
    let candidates: Vec<String> = suite
        .tests
        .iter()
        .filter(|t| !t.quarantined)
        .map(|t| t.rel_path.to_string_lossy().into_owned())
        .collect();
    let now = chrono::Utc::now();
    let held = auto_quarantined(&history, selection, &candidates, now);
    let previous = history
        .iter()
        .rev()
        .find(|e| e.selection.same_tests_as(selection));
    let was_quarantined = |file: &str| {
        previous.is_some_and(|e| e.tests.iter().any(|t| t.test_file == file && t.quarantined))
    };
    let mut changes = Vec::new();
    for test in suite.tests.iter_mut().filter(|t| !t.quarantined) {
        let file = test.rel_path.to_string_lossy().into_owned();
        match held.get(&file) {
            Some(reason) => {
                test.quarantined = true;
                if !was_quarantined(&file) {
                    changes.push(QuarantineChange {
                        test_file: file,
                        change: "quarantined".into(),
                        reason: reason.clone(),
                    });
                }
            }
            None if was_quarantined(&file) => changes.push(QuarantineChange {
                test_file: file,
                change: "released".into(),
                reason: format!(
                    "{RELEASE_AFTER_PASSES} consecutive passes since it was last classified flaky"
                ),
            }),
            None => {}
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: &str, outcome: &str, observed: &str, text: &str) -> ObservedRun {
        ObservedRun {
            label: label.into(),
            outcome: outcome.into(),
            passed: outcome == "passed",
            observed: Some(observed.into()),
            text: Some(text.into()),
        }
    }

    #[test]
    fn clock_times_are_masked_and_other_numbers_kept() {
        let text = "at 2026-11-27T12:00:01.25+01:00 and 2026-11-27 12:00:01Z, then 09:15:59.1\n\
                    stock 12:34 (no seconds), id 123:45:678, port 4000\n";
        assert_eq!(
            mask_clock(text.to_string()),
            "at <time> and <time>, then <time>\nstock 12:34 (no seconds), id 123:45:678, port 4000\n"
        );
        assert_eq!(
            mask_clock("no clock 2026 here".into()),
            "no clock 2026 here"
        );
    }

    #[test]
    fn the_classes_from_runs_of_one_commit() {
        let steady = vec![
            run("run 1", "passed", "a", "x"),
            run("run 2", "passed", "a", "x"),
        ];
        let s = classify("t", None, steady, false).expect("two runs");
        assert_eq!(s.class, StabilityClass::Stable);
        let app = vec![
            run("run 1", "passed", "a", "== log s\nstock: 3\n"),
            run("run 2", "failed", "b", "== log s\nstock: 0\n"),
        ];
        let s = classify("t", None, app, false).expect("two runs");
        assert_eq!(s.class, StabilityClass::AppFlaky);
        assert_eq!(s.differed, ["run 2 (failed) vs run 1 (passed)"]);
        assert_eq!(
            s.first_difference.as_deref(),
            Some("line 2: \"stock: 3\" in run 1, \"stock: 0\" in run 2")
        );
        let verdict = vec![
            run("run 1", "passed", "a", "x"),
            run("run 2", "failed", "a", "x"),
        ];
        let s = classify("t", None, verdict, false).expect("two runs");
        assert_eq!(s.class, StabilityClass::VerdictFlaky);
        let broken = vec![
            run("run 1", "failed", "a", "x"),
            run("run 2", "failed", "a", "x"),
        ];
        assert_eq!(
            classify("t", None, broken.clone(), true).map(|s| s.class),
            Some(StabilityClass::Broken)
        );
        assert_eq!(
            classify("t", None, broken, false).map(|s| s.class),
            Some(StabilityClass::Stable)
        );
        let agent = vec![
            run("run 1", "passed", "a", "x"),
            run("run 2", "agent_error", "a", "x"),
        ];
        assert_eq!(
            classify("t", None, agent, false).map(|s| s.class),
            Some(StabilityClass::AgentUnreliable)
        );
        assert!(classify("t", None, vec![run("run 1", "passed", "a", "x")], false).is_none());
    }
}
