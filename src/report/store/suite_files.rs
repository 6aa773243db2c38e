//! The files of a suite directory — summary.json, summary.md, junit.xml, report.html — rendered by
//! one function through the redactor, whoever writes them: the reporter at a suite's end, and
//! `supervisor merge` for shards. Their links are relative to the suite directory, so the folder
//! can be copied as a CI artifact with the runs beside it.

use crate::atomic::write_atomic;
use crate::model::artifacts;
use crate::report::ground::error::ReportError;
use crate::report::ground::scrub::Redactor;
use crate::report::records::run_record::RunRecord;
use crate::report::records::suite::SuiteSummary;
use crate::report::records::trends::Trends;
use crate::report::renderers::html::{self, HtmlInput};
use crate::report::renderers::junit;
use std::path::{Path, PathBuf};

/// What a suite directory's files are made of.
pub struct SuiteInput<'a> {
    /// The suite directory the files go in (their links are relative to it).
    pub dir: &'a Path,
    pub summary: &'a SuiteSummary,
    pub records: &'a [RunRecord],
    /// What the writer has to say beside the summary (a merge's shards), in summary.md and
    /// report.html.
    pub notes: &'a [String],
    pub trends: Option<&'a Trends>,
    /// Every secret the suite's runs knew: nothing leaves unredacted.
    pub redactor: &'a Redactor,
}

/// The four files' text, each already redacted (`Err` where it could not be made).
pub struct RenderedSuite {
    pub summary_json: Result<String, ReportError>,
    pub summary_md: String,
    pub junit_xml: Result<String, ReportError>,
    pub report_html: String,
}

impl RenderedSuite {
    /// The suite's files from `input`.
    pub fn render(input: &SuiteInput<'_>) -> Self {
        let redactor = input.redactor;
        let local = match std::path::absolute(input.dir) {
            Ok(dir) => input.summary.with_paths_relative_to(&dir),
            Err(_) => input.summary.clone(),
        };
        let mut md = local.to_markdown();
        for note in input.notes {
            md.push_str(&format!("- note: {note}\n"));
        }
        Self {
            summary_json: summary_json(redactor, &local),
            summary_md: redactor.str(&md),
            junit_xml: junit::to_xml(input.summary, input.records).map(|x| redactor.str(&x)),
            report_html: report_html(input, input.dir),
        }
    }

    /// Writes each file into `dir`; what could not be made or written, by file.
    pub fn write(self, dir: &Path) -> Vec<(PathBuf, Result<(), ReportError>)> {
        let write = |name: &str, text: Result<String, ReportError>| {
            let path = dir.join(name);
            let done = text.and_then(|text| Ok(write_atomic(&path, text.as_bytes())?));
            (path, done)
        };
        vec![
            write(artifacts::SUMMARY_JSON, self.summary_json),
            write(artifacts::SUMMARY_MD, Ok(self.summary_md)),
            write(artifacts::JUNIT_XML, self.junit_xml),
            write(artifacts::REPORT_HTML, Ok(self.report_html)),
        ]
    }
}

/// summary.json's text for `summary` (its paths as they are given).
pub fn summary_json(redactor: &Redactor, summary: &SuiteSummary) -> Result<String, ReportError> {
    redactor.json("summary.json", summary, true).map(|mut j| {
        j.push('\n');
        j
    })
}

/// report.html for the suite, its links relative to `report_dir` (where this copy will live).
pub fn report_html(input: &SuiteInput<'_>, report_dir: &Path) -> String {
    input.redactor.str(&html::render(&HtmlInput {
        summary: input.summary,
        records: input.records,
        comparison: input.summary.changes.as_ref(),
        report_dir,
        notes: input.notes,
        trends: input.trends,
    }))
}
