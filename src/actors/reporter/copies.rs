//! The suite's files copied elsewhere at its end (`--junit FILE`, `--json FILE`, `--html FILE`):
//! one list of formats, each a flag and a renderer. The CLI makes its flags from [`FORMATS`] and
//! the reporter writes each copy asked for through it, so a new format is one renderer and one
//! entry here.

use crate::model::options::SuiteCopy;
use crate::report::ground::error::ReportError;
use crate::report::store::suite_files::{report_html, summary_json, RenderedSuite, SuiteInput};
use std::path::{Path, PathBuf};

/// A copy's text for a copy at `path`, from the suite's input and its files as rendered for the
/// suite folder; `None` when there is nothing to copy (the suite folder's own file says why).
type Render = fn(&SuiteInput<'_>, &RenderedSuite, &Path) -> Option<Result<String, ReportError>>;

/// One format a suite's file can be copied in.
pub struct CopyFormat {
    /// Its flag without the dashes: `junit` is `--junit FILE`.
    pub flag: &'static str,
    /// The flag's help line.
    pub help: &'static str,
    render: Render,
}

/// Every copy format, in the order of `start --help` (and of writing).
pub const FORMATS: &[CopyFormat] = &[
    CopyFormat {
        flag: "junit",
        help: "Also write the suite's JUnit XML there",
        render: junit_copy,
    },
    CopyFormat {
        flag: "json",
        help: "Also write the suite's JSON summary there",
        render: json_copy,
    },
    CopyFormat {
        flag: "html",
        help: "Also write the suite's HTML report (report.html) there",
        render: html_copy,
    },
];

/// junit.xml as the suite folder holds it (it names no path).
fn junit_copy(
    _: &SuiteInput<'_>,
    files: &RenderedSuite,
    _: &Path,
) -> Option<Result<String, ReportError>> {
    files.junit_xml.as_ref().ok().cloned().map(Ok)
}

/// summary.json with absolute paths: the copy lives away from the runs it names.
fn json_copy(
    input: &SuiteInput<'_>,
    _: &RenderedSuite,
    _: &Path,
) -> Option<Result<String, ReportError>> {
    Some(summary_json(input.redactor, input.summary))
}

/// report.html linking to the run files from where the copy is.
fn html_copy(
    input: &SuiteInput<'_>,
    _: &RenderedSuite,
    path: &Path,
) -> Option<Result<String, ReportError>> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(
            || std::env::current_dir().unwrap_or_default(),
            |p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()),
        );
    Some(Ok(report_html(input, &dir)))
}

/// The text of `copy`; an unknown format is an error naming it (the CLI makes copies only of
/// [`FORMATS`]).
pub fn render(
    copy: &SuiteCopy,
    input: &SuiteInput<'_>,
    files: &RenderedSuite,
) -> Result<Option<String>, ReportError> {
    let Some(format) = FORMATS.iter().find(|f| f.flag == copy.format) else {
        return Err(ReportError::write(
            PathBuf::from(&copy.path),
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("no copy format `{}`", copy.format),
            ),
        ));
    };
    (format.render)(input, files, &copy.path).transpose()
}
