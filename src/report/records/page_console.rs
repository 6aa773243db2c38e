//! The browser console's errors during a step, read back from the step's
//! `browser/step-<id>.console.jsonl` evidence, so report.html and report.md show the first few
//! inline beside the step (the file keeps them all). See docs/browser.md.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::Deserialize;

use crate::report::records::run_record::EvidenceRecord;

/// Errors shown per step; the rest are in the file.
pub const SHOWN: usize = 5;
/// Bytes of a console file read: a page logging without end must not slow the report down.
const READ_BYTES: u64 = 256 * 1024;
/// Characters of one error shown (a stack trace or a minified script can be very long).
const ERROR_CHARS: usize = 300;

/// The fields of a console line the report shows (the browser capture writes more).
#[derive(Deserialize)]
struct PageConsoleLine {
    level: String,
    #[serde(default)]
    source: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    url: Option<String>,
}

/// The first errors of one console file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleErrors {
    /// The file, relative to the run directory.
    pub path: String,
    /// `source: text (url)`, one line each, at most [`SHOWN`].
    pub lines: Vec<String>,
    /// The file holds errors past the ones shown (or was longer than the report reads).
    pub more: bool,
}

/// The browser capture's console files among a step's evidence: only its own file names
/// (`browser/step-<id>.console.jsonl`), not a path an agent named, and never through a link.
fn is_capture_file(ev: &EvidenceRecord) -> bool {
    ev.kind == "console"
        && ev.problem.is_none()
        && ev
            .path
            .strip_prefix(crate::model::artifacts::BROWSER_STEP_PREFIX)
            .and_then(|rest| rest.strip_suffix(crate::model::artifacts::BROWSER_CONSOLE_SUFFIX))
            .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
}

/// The first errors of each of the step's console files that has any.
pub fn of_step(run_dir: &Path, evidence: &[EvidenceRecord]) -> Vec<ConsoleErrors> {
    evidence
        .iter()
        .filter(|ev| is_capture_file(ev))
        .filter_map(|ev| read(run_dir, &ev.path))
        .collect()
}

fn read(run_dir: &Path, rel: &str) -> Option<ConsoleErrors> {
    // Inside the run, no link followed on the way, a regular file: a merged shard may come from
    // anyone (docs/ci.md, "Merging artifacts you did not make").
    let file = crate::report::ground::confined::open_file(run_dir, rel).ok()?;
    let size = file.metadata().ok()?.len();
    let mut lines = Vec::new();
    let mut more = size > READ_BYTES;
    for line in BufReader::new(file.take(READ_BYTES)).lines() {
        let Ok(line) = line else { break };
        let Ok(entry) = serde_json::from_str::<PageConsoleLine>(&line) else {
            continue;
        };
        if entry.level != "error"
            || crate::model::browser::is_favicon_miss(&entry.source, entry.url.as_deref())
        {
            continue;
        }
        if lines.len() == SHOWN {
            more = true;
            break;
        }
        lines.push(shown(&entry));
    }
    (!lines.is_empty()).then(|| ConsoleErrors {
        path: rel.to_string(),
        lines,
        more,
    })
}

/// One error on one line: its source, text and the script or resource it is about.
fn shown(entry: &PageConsoleLine) -> String {
    let mut line = String::new();
    if !entry.source.is_empty() {
        line.push_str(&entry.source);
        line.push_str(": ");
    }
    line.push_str(entry.text.trim());
    if let Some(url) = entry.url.as_deref().filter(|u| !u.is_empty()) {
        line.push_str(&format!(" ({url})"));
    }
    let line = line.replace(['\n', '\r'], " ");
    match line.char_indices().nth(ERROR_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn console(path: &str) -> EvidenceRecord {
        EvidenceRecord {
            kind: "console".into(),
            path: path.into(),
            problem: None,
        }
    }

    #[test]
    fn the_first_errors_are_read_warnings_skipped_and_the_rest_counted() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("browser")).expect("mkdir");
        let mut text = String::from(
            "{\"level\":\"warning\",\"source\":\"console-api\",\"text\":\"slow\",\"page\":\"p\"}\n",
        );
        // The browser's own favicon miss is not listed.
        text.push_str("{\"level\":\"error\",\"source\":\"network\",\"text\":\"Failed to load resource: 404\",\"url\":\"http://a/favicon.ico\",\"page\":\"p\"}\n");
        for i in 0..7 {
            text.push_str(&format!(
                "{{\"level\":\"error\",\"source\":\"exception\",\"text\":\"boom {i}\\nat x\",\"url\":\"http://a/app.js\",\"page\":\"p\"}}\n"
            ));
        }
        std::fs::write(dir.path().join("browser/step-2.console.jsonl"), text).expect("write");
        let found = of_step(dir.path(), &[console("browser/step-2.console.jsonl")]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].lines.len(), SHOWN);
        assert_eq!(
            found[0].lines[0],
            "exception: boom 0 at x (http://a/app.js)"
        );
        assert!(found[0].more);
        // Only the capture's own files are read.
        assert!(of_step(dir.path(), &[console("../etc/passwd")]).is_empty());
        assert!(of_step(dir.path(), &[console("browser/step-x.console.jsonl")]).is_empty());
    }
}
