//! The suite's end in the reporter: summary.json, summary.md, junit.xml, report.html and history
//! written from the finished runs (and the `--junit` / `--json` / `--html` copies), the tests that
//! never started named, and every file that could not be written said on the console.

use super::*;
use crate::model::ids::RunId;
use crate::report::store::suite_files::{RenderedSuite, SuiteInput};
use std::path::Path;

/// The suite files' write results: what failed (a note and a lost record each) and the
/// `--junit` / `--json` / `--html` copies written.
struct Outputs {
    notes: Vec<String>,
    failed: Vec<String>,
    copies: Vec<PathBuf>,
}

impl Outputs {
    fn keep(&mut self, r: Result<(), ReportError>) {
        if let Err(e) = r {
            self.notes.push(e.to_string());
            self.failed.push(e.to_string());
        }
    }

    /// A copy outside the suite folder, remembered when written.
    fn copy(&mut self, path: &Path, bytes: &[u8]) {
        let r = write_copy(path, bytes);
        if r.is_ok() {
            self.copies.push(path.to_path_buf());
        }
        self.keep(r);
    }
}

impl ReporterState {
    /// The suite's end, in stages: close the runs still open, build the summary, compare it with
    /// the history and record it, write the suite files, then tell the console. Once only: a
    /// second call returns the first one's files.
    pub(super) fn suite_finished(
        &mut self,
        not_run: &[String],
        harness_error: Option<String>,
        not_run_reason: Option<String>,
    ) -> Result<SuiteFiles, ReportError> {
        if let Some(files) = &self.suite_files {
            return Ok(files.clone());
        }
        self.close_open_runs();
        let records = self.finished_records();
        let mut summary = SuiteSummary::build(
            &self.args.suite_id,
            self.started_at,
            Utc::now(),
            self.args.strict_warnings,
            &records,
            not_run,
        )
        .with_harness_error(harness_error)
        .with_not_run_reason(not_run_reason);
        let paths = self.suite_paths();
        self.create_suite_dir(&paths);
        summary.shard = self.args.extras.shard.clone();
        summary.fail_on_flaky = self.args.extras.fail_on_flaky;
        summary.cost_cap_usd = self.args.extras.cost_cap_usd;
        summary.unrecorded = self.unrecorded.clone();
        summary.records_lost = self.lost.len();
        let revision = self.args.extras.revision.get();
        summary.commit = revision.commit;
        summary.dirty = revision.dirty;
        summary.quarantine_changes = self.args.extras.quarantine_changes.clone();
        let (history_note, trends) = self.record_history(&mut summary, &records);
        // Redact the data before it is formatted: XML and JSON escape characters a secret may hold.
        // One redactor for the whole suite end: each is a search automaton over every secret of
        // every run, and building it was nearly half of a one-test suite's end, which built three.
        let redactor = self.redactor_all();
        let redacted_summary: SuiteSummary = redact_data(&redactor, &summary)?;
        let redacted_records: Vec<RunRecord> = records
            .iter()
            .map(|r| redact_data(&redactor, r))
            .collect::<Result<_, _>>()?;
        drop(records);
        let mut notes = std::mem::take(&mut self.notes);
        notes.extend(history_note);
        let mut out = Outputs {
            notes,
            failed: Vec::new(),
            copies: Vec::new(),
        };
        let html_path = self.write_suite_files(
            &paths,
            &redactor,
            &redacted_summary,
            &redacted_records,
            trends.as_ref(),
            &mut out,
        );
        for what in std::mem::take(&mut out.failed) {
            self.lose(what);
        }
        self.announce(&summary, &paths, &html_path, &redactor, &mut out.notes);
        if let Some(github) = self.args.extras.github.clone() {
            self.annotate_for_github(
                &github,
                &redacted_records,
                &paths,
                &redactor,
                &mut out.notes,
            );
        }
        let files = SuiteFiles {
            summary,
            summary_json: paths.summary_json(),
            summary_md: paths.summary_md(),
            junit: paths.junit(),
            html: paths.report_html(),
            copies: out.copies,
            notes: out.notes,
            lost: self.lost.clone(),
        };
        self.suite_files = Some(files.clone());
        Ok(files)
    }

    /// `--reporter github`: each failing step an `::error` (a WARN one a `::warning`) on the
    /// console, and summary.md appended to `$GITHUB_STEP_SUMMARY` (a failure to is a note).
    fn annotate_for_github(
        &mut self,
        github: &crate::report::renderers::github::GithubTarget,
        records: &[RunRecord],
        paths: &SuitePaths,
        redactor: &Redactor,
        notes: &mut Vec<String>,
    ) {
        use crate::report::renderers::github;
        let read = |path: &Path| {
            crate::model::user_file::read_to_string(path, crate::model::user_file::TEST_MAX).ok()
        };
        let annotations = github::annotations(records, &read, github.workspace.as_deref());
        for line in github::commands(&annotations) {
            self.args.console.notice(&line, redactor);
        }
        let Some(file) = &github.step_summary else {
            return;
        };
        let appended = std::fs::read_to_string(paths.summary_md()).and_then(|markdown| {
            use std::io::Write as _;
            let used = std::fs::metadata(file).map_or(0, |m| m.len());
            let used = usize::try_from(used).unwrap_or(usize::MAX);
            let text = github::step_summary(&markdown, used);
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)?
                .write_all(text.as_bytes())
        });
        if let Err(e) = appended {
            let note = format!(
                "GITHUB_STEP_SUMMARY {}: summary.md not appended: {e}",
                file.display()
            );
            self.args.console.notice(&note, redactor);
            notes.push(note);
        }
    }

    /// Every finished run's record, in the order they finished: read back from run.json. One
    /// that cannot be read is a record lost (exit 3), named.
    fn finished_records(&mut self) -> Vec<RunRecord> {
        let mut records = Vec::with_capacity(self.finished.len());
        let mut unread = Vec::new();
        for run in &self.finished {
            match run.record() {
                Ok(record) => records.push(record),
                Err(why) => unread.push(format!("read back for the suite's files: {why}")),
            }
        }
        for why in unread {
            self.lose(why);
        }
        records
    }

    /// Runs still open when the suite ends are finished as interrupted, with a note each.
    fn close_open_runs(&mut self) {
        let still_open: Vec<RunId> = self.open.keys().cloned().collect();
        for run_id in still_open {
            if let Some(writer) = self.open.get_mut(&run_id) {
                let at = Utc::now();
                let event = Event {
                    timestamp: at,
                    elapsed_ms: u64::try_from(
                        (at - writer.record().identity.started_at).num_milliseconds(),
                    )
                    .unwrap_or(0),
                    kind: EventKind::RunFinished {
                        outcome: RunOutcome::Interrupted,
                        message: Some("the suite ended before this run finished".to_string()),
                    },
                };
                let _ = writer.apply(&event);
            }
            self.notes.push(format!(
                "run {run_id} was still open at the end of the suite"
            ));
            if let Err(e) = self.run_finished(&run_id) {
                self.notes.push(e.to_string());
            }
        }
    }

    /// The suite folder (0700). Not fatal: the --junit / --json copies are written from memory
    /// all the same.
    fn create_suite_dir(&mut self, paths: &SuitePaths) {
        if let Err(source) = crate::report::store::artifact_dir::create_owner_only(&paths.dir) {
            self.lose(
                ReportError::CreateDir {
                    path: paths.dir.clone(),
                    source,
                }
                .to_string(),
            );
        }
    }

    /// History: compare with the previous suite of the same selection, then record this one.
    /// Returns the note when it could not be recorded, and the trends of the selection.
    fn record_history(
        &mut self,
        summary: &mut SuiteSummary,
        records: &[RunRecord],
    ) -> (
        Option<String>,
        Option<crate::report::records::trends::Trends>,
    ) {
        if self.args.extras.no_history {
            return (None, None);
        }
        let mut entry = HistoryEntry::of(summary, records, &self.args.extras.selection);
        entry.provider = self.args.extras.provider.clone();
        let file = self
            .args
            .extras
            .history_file
            .clone()
            .unwrap_or_else(|| history::history_path(&self.args.artifact_dir));
        let earlier = history::read(&file);
        summary.changes = history::compare(&earlier, &entry);
        summary.stability = crate::report::records::stability::classify_suite(
            &crate::report::records::stability::Inputs {
                records,
                history: &earlier,
                current: &entry,
                strict_warnings: self.args.strict_warnings,
            },
        );
        entry.stability = HistoryEntry::of(summary, &[], &entry.selection).stability;
        let trends = crate::report::records::trends::Trends::of(&earlier, &entry);
        let mut history_note = None;
        if let Err(e) = history::append(&file, &entry) {
            self.lose(e.to_string());
            history_note = Some(e.to_string());
        }
        (history_note, trends)
    }

    /// The suite directory's files (one renderer, `report::suite_files`), and the `--json`,
    /// `--junit` and `--html` copies.
    fn write_suite_files(
        &self,
        paths: &SuitePaths,
        redactor: &Redactor,
        redacted_summary: &SuiteSummary,
        redacted_records: &[RunRecord],
        trends: Option<&crate::report::records::trends::Trends>,
        out: &mut Outputs,
    ) -> PathBuf {
        let input = SuiteInput {
            dir: &paths.dir,
            summary: redacted_summary,
            records: redacted_records,
            notes: &[],
            trends,
            redactor,
        };
        let files = RenderedSuite::render(&input);
        for copy in &self.args.copies {
            match super::copies::render(copy, &input, &files) {
                Ok(Some(text)) => out.copy(&copy.path, text.as_bytes()),
                Ok(None) => {}
                Err(e) => out.keep(Err(e)),
            }
        }
        for (_, written) in files.write(&paths.dir) {
            out.keep(written);
        }
        paths.report_html()
    }

    /// The suite's end on the console: the summary, what changed since the previous suite,
    /// report.html's path, and every record that could not be written.
    fn announce(
        &mut self,
        summary: &SuiteSummary,
        paths: &SuitePaths,
        html_path: &Path,
        redactor: &Redactor,
        notes: &mut Vec<String>,
    ) {
        let t = &summary.totals;
        tracing::info!(
            "suite summary: {} root tests in {} ms: {} passed, {} warned, {} failed, {} error, \
             {} interrupted, {} not run, {} flaky",
            t.total,
            summary.duration_ms,
            t.passed,
            t.warned,
            t.failed,
            t.error,
            t.interrupted,
            t.not_run,
            t.flaky
        );
        self.args.console.suite_finished(
            summary,
            &paths.summary_md().display().to_string(),
            redactor,
        );
        if let Some(changes) = &summary.changes {
            let mut text = format!("{}:", changes.heading());
            for line in changes.lines() {
                text.push_str("\n  ");
                text.push_str(&line);
            }
            self.args.console.notice(&text, redactor);
        }
        if let Some(text) =
            crate::report::records::stability::console_text(&summary.stability_news())
        {
            self.args.console.notice(&text, redactor);
        }
        let shown = self.args.console.shown_path(html_path);
        self.args
            .console
            .notice(&format!("HTML report: {shown}"), redactor);
        if let Some(logs) = &self.args.harness_logs {
            if let Err(e) = logs.flush() {
                notes.push(e.to_string());
                self.lose(e.to_string());
            }
        }
        self.say_lost(redactor);
    }

    /// Ends the console with every record that could not be written, and why (exit 3).
    pub(super) fn say_lost(&mut self, redactor: &Redactor) {
        const SHOWN: usize = 20;
        if self.lost.is_empty() {
            return;
        }
        let mut text = format!(
            "{} record(s) could not be written (exit 3):",
            self.lost.len()
        );
        for what in self.lost.iter().take(SHOWN) {
            text.push_str("\n  ");
            text.push_str(what);
        }
        if self.lost.len() > SHOWN {
            text.push_str(&format!("\n  … and {} more", self.lost.len() - SHOWN));
        }
        self.args.console.notice(&text, redactor);
    }

    /// Keeps a record that could not be written (once per message).
    pub(super) fn lose(&mut self, what: String) {
        if !self.lost.contains(&what) {
            tracing::error!("record not written: {what}");
            self.lost.push(what);
        }
    }

    /// The root tests of `tests` (paths as the plans give them) that no run was started for.
    pub(super) fn never_started(&self, tests: &[String]) -> Vec<String> {
        let started: std::collections::HashSet<&str> = self
            .finished
            .iter()
            .map(FinishedRun::test_file)
            .chain(
                self.open
                    .values()
                    .map(|w| w.record().identity.test_file.as_str()),
            )
            .collect();
        tests
            .iter()
            .filter(|t| !started.contains(t.as_str()))
            .cloned()
            .collect()
    }

    /// The suite's secrets and every run's (suite files quote messages from every run), as one
    /// set: one search per text however many runs there were (`Secrets::merged`).
    pub(super) fn redactor_all(&self) -> Redactor {
        let open = self.open.values().flat_map(|w| w.redactor().sets());
        let sets = self.redactor.sets().iter().chain(open);
        let finished = (!self.finished_secrets.is_empty())
            .then(|| Arc::new(Secrets::of_values(&self.finished_secrets)));
        let all = Redactor::new(sets.cloned().chain(finished));
        if all.sets().len() < 2 {
            return all;
        }
        Redactor::new([Arc::new(Secrets::merged(
            all.sets().iter().map(|s| s.as_ref()),
        ))])
    }
}

/// A `--junit` / `--json` copy: its folder is created, as CI jobs name fresh output folders.
pub(super) fn write_copy(path: &std::path::Path, bytes: &[u8]) -> Result<(), ReportError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| ReportError::write(parent, e))?;
    }
    Ok(write_atomic(path, bytes)?)
}
