//! `--reporter github` (docs/ci.md, "GitHub Actions"): a failing step as an `::error` workflow
//! command at its own line of the file that wrote it (an include's file for a step that came from
//! one), a WARN step as a `::warning`, and the suite's summary.md cut to what
//! `$GITHUB_STEP_SUMMARY` takes. Pure: the reporter reads the test files and writes the lines.

use std::collections::BTreeMap;
use std::path::Path;

use crate::model::outcome::StepStatus;
use crate::report::records::run_record::RunRecord;

/// GitHub shows at most 10 error and 10 warning annotations of a step; past that, one line says
/// how many more there are (they are all in the summary).
pub const MAX_PER_LEVEL: usize = 10;
/// An annotation's message is cut to this many characters (the summary has the rest).
pub const MAX_MESSAGE_CHARS: usize = 4000;
/// `$GITHUB_STEP_SUMMARY` takes at most 1 MiB per step.
pub const MAX_SUMMARY_BYTES: usize = 1024 * 1024;

/// Where the GitHub reporter writes: on by `--reporter github` or under `GITHUB_ACTIONS=true`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GithubTarget {
    /// `GITHUB_WORKSPACE`: annotation paths are relative to it.
    pub workspace: Option<std::path::PathBuf>,
    /// `GITHUB_STEP_SUMMARY`: the file summary.md is appended to.
    pub step_summary: Option<std::path::PathBuf>,
}

impl GithubTarget {
    /// From the environment (`var`), when asked for or under GitHub Actions.
    pub fn from_env(asked: bool, var: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let in_actions = var("GITHUB_ACTIONS").is_some_and(|v| v == "true");
        let path = |name: &str| {
            var(name)
                .filter(|v| !v.is_empty())
                .map(std::path::PathBuf::from)
        };
        (asked || in_actions).then(|| GithubTarget {
            workspace: path("GITHUB_WORKSPACE"),
            step_summary: path("GITHUB_STEP_SUMMARY"),
        })
    }
}

/// A message in a workflow command, escaped as GitHub's runner reads it back.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A property value (`file=`, `title=`): also `:` and `,`, which end a property.
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AnnotationLevel {
    Error,
    Warning,
}

impl AnnotationLevel {
    fn command(self) -> &'static str {
        match self {
            AnnotationLevel::Error => "error",
            AnnotationLevel::Warning => "warning",
        }
    }
}

/// One annotation before it is written as a workflow command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    pub level: AnnotationLevel,
    /// Relative to `GITHUB_WORKSPACE` (or the project root outside it).
    pub file: Option<String>,
    pub line: Option<usize>,
    pub title: String,
    pub message: String,
}

impl Annotation {
    /// `::error file=…,line=…,title=…::message`.
    pub fn command(&self) -> String {
        let mut props = Vec::new();
        if let Some(file) = &self.file {
            props.push(format!("file={}", escape_property(file)));
        }
        if let Some(line) = self.line {
            props.push(format!("line={line}"));
        }
        props.push(format!("title={}", escape_property(&self.title)));
        let message: String = if self.message.chars().count() > MAX_MESSAGE_CHARS {
            let cut: String = self.message.chars().take(MAX_MESSAGE_CHARS).collect();
            format!("{cut}… (cut: the suite's summary has it all)")
        } else {
            self.message.clone()
        };
        format!(
            "::{} {}::{}",
            self.level.command(),
            props.join(","),
            escape_data(&message)
        )
    }
}

/// The 1-based line of the `index`-th `[[steps]]` table of a test file's text (the line an
/// annotation points at), None when it has fewer.
pub fn step_line(text: &str, index: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let squeezed: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            squeezed.starts_with("[[steps]]")
        })
        .nth(index.checked_sub(1)?)
        .map(|(i, _)| i + 1)
}

/// The annotations of a suite's runs: the last attempt of each test (and repeat) only, so a test
/// that passed on a retry is not an error. `read` gives a file's text by absolute path;
/// `workspace` is `GITHUB_WORKSPACE`.
pub fn annotations(
    records: &[RunRecord],
    read: &dyn Fn(&Path) -> Option<String>,
    workspace: Option<&Path>,
) -> Vec<Annotation> {
    let mut last: BTreeMap<(&str, u32), &RunRecord> = BTreeMap::new();
    for record in records {
        let key = (record.identity.test_file.as_str(), record.identity.repeat);
        if last
            .get(&key)
            .is_none_or(|seen| seen.identity.attempt <= record.identity.attempt)
        {
            last.insert(key, record);
        }
    }
    let mut out = Vec::new();
    for record in last.values() {
        out.extend(run_annotations(record, read, workspace));
    }
    out
}

fn run_annotations(
    record: &RunRecord,
    read: &dyn Fn(&Path) -> Option<String>,
    workspace: Option<&Path>,
) -> Vec<Annotation> {
    let root = Path::new(&record.identity.project_root);
    let shown = |rel: &str| {
        let abs = root.join(rel);
        workspace
            .and_then(|w| abs.strip_prefix(w).ok())
            .map_or_else(|| rel.to_string(), |p| p.to_string_lossy().into_owned())
    };
    let test = &record.identity.test_name;
    let mut out = Vec::new();
    for step in &record.steps {
        let level = match step.status {
            StepStatus::Warn => AnnotationLevel::Warning,
            s if s.is_failure() => AnnotationLevel::Error,
            _ => continue,
        };
        let source = &step.provenance.source_file;
        let line =
            read(&root.join(source)).and_then(|t| step_line(&t, step.provenance.source_index));
        let status = serde_json::to_value(step.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| format!("{:?}", step.status));
        out.push(Annotation {
            level,
            file: Some(shown(source)),
            line,
            title: format!("{test}: step {} {status}", step.step_id),
            message: step.message.clone().unwrap_or_else(|| status.clone()),
        });
    }
    let ended_badly = matches!(
        record.outcome,
        Some(crate::model::outcome::RunOutcome::Error)
    );
    if out.is_empty() && ended_badly {
        out.push(Annotation {
            level: AnnotationLevel::Error,
            file: Some(shown(&record.identity.test_file)),
            line: None,
            title: format!("{test}: harness error"),
            message: record
                .error
                .clone()
                .unwrap_or_else(|| "the harness could not run the test".to_string()),
        });
    }
    out
}

/// The workflow commands to print: at most [`MAX_PER_LEVEL`] of each level, then one `::notice`
/// saying how many were left out.
pub fn commands(annotations: &[Annotation]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut left_out = 0;
    for level in [AnnotationLevel::Error, AnnotationLevel::Warning] {
        let of_level: Vec<&Annotation> = annotations.iter().filter(|a| a.level == level).collect();
        left_out += of_level.len().saturating_sub(MAX_PER_LEVEL);
        lines.extend(of_level.iter().take(MAX_PER_LEVEL).map(|a| a.command()));
    }
    if left_out > 0 {
        lines.push(format!(
            "::notice title=bugatti::{}",
            escape_data(&format!(
                "{left_out} more annotation(s) left out (GitHub shows {MAX_PER_LEVEL} of each kind per step): the job summary lists every failure"
            ))
        ));
    }
    lines
}

/// summary.md as appended to `$GITHUB_STEP_SUMMARY`, which already holds `used` bytes: whole
/// when it fits in the 1 MiB, else cut at a line with a last line saying so.
pub fn step_summary(markdown: &str, used: usize) -> String {
    const CUT_NOTE: &str = "\n\n_The summary was cut to GitHub's 1 MiB limit: summary.md in the suite's artifacts has all of it._\n";
    let room = MAX_SUMMARY_BYTES.saturating_sub(used);
    let mut text = String::from("\n");
    text.push_str(markdown);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if text.len() <= room {
        return text;
    }
    let budget = room.saturating_sub(CUT_NOTE.len());
    let mut end = budget.min(text.len());
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text[..end].rfind('\n').map_or(0, |i| i + 1);
    let mut out = text[..cut].to_string();
    if room >= CUT_NOTE.len() {
        out.push_str(CUT_NOTE);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_properties_are_escaped_as_the_runner_reads_them() {
        assert_eq!(escape_data("100% done\r\nnext"), "100%25 done%0D%0Anext");
        assert_eq!(escape_property("a: b, c%\n"), "a%3A b%2C c%25%0A");
        let a = Annotation {
            level: AnnotationLevel::Error,
            file: Some("tests/a,b.test.toml".into()),
            line: Some(7),
            title: "Login: step 2 error".into(),
            message: "expected 200\ngot 500: 50% worse".into(),
        };
        assert_eq!(
            a.command(),
            "::error file=tests/a%2Cb.test.toml,line=7,title=Login%3A step 2 error::expected 200%0Agot 500: 50%25 worse"
        );
    }

    #[test]
    fn a_step_line_is_its_tables_header() {
        let text =
            "name = \"x\"\n\n[[steps]]\ninstruction = \"a\"\n  [[ steps ]]\ninstruction = \"b\"\n";
        assert_eq!(step_line(text, 1), Some(3));
        assert_eq!(step_line(text, 2), Some(5));
        assert_eq!(step_line(text, 3), None);
        assert_eq!(step_line(text, 0), None);
    }

    #[test]
    fn annotations_are_capped_per_level_and_long_messages_cut() {
        let one = |level, i: usize| Annotation {
            level,
            file: None,
            line: None,
            title: format!("t{i}"),
            message: "m".repeat(if i == 0 { MAX_MESSAGE_CHARS + 50 } else { 1 }),
        };
        let mut all: Vec<Annotation> = (0..12).map(|i| one(AnnotationLevel::Error, i)).collect();
        all.extend((0..3).map(|i| one(AnnotationLevel::Warning, i + 1)));
        let lines = commands(&all);
        assert_eq!(lines.len(), 10 + 3 + 1);
        assert!(lines[0].contains("(cut: the suite's summary has it all)"));
        assert!(lines[0].len() < MAX_MESSAGE_CHARS + 200);
        assert!(lines[13].starts_with("::notice "), "{}", lines[13]);
        assert!(lines[13].contains("2 more annotation(s)"), "{}", lines[13]);
    }

    #[test]
    fn the_summary_fits_in_what_is_left_of_the_mebibyte() {
        let md = "# Suite\n".to_string() + &"| a | b |\n".repeat(200_000);
        assert!(md.len() > MAX_SUMMARY_BYTES);
        let cut = step_summary(&md, 1000);
        assert!(cut.len() + 1000 <= MAX_SUMMARY_BYTES, "{}", cut.len());
        assert!(cut.ends_with("has all of it._\n"));
        let small = step_summary("# Suite\nall passed", 0);
        assert_eq!(small, "\n# Suite\nall passed\n");
        assert_eq!(step_summary("# Suite\n", MAX_SUMMARY_BYTES), "");
    }
}
