//! Problems found in the user's input, each pointing at the file, line and column it came from,
//! rendered rustc-style with the offending line and a caret. Loading collects every problem
//! instead of stopping at the first, so one `check` shows the user everything to fix.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Where in a file a problem sits (1-based line and column) and the text of that line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    pub line: usize,
    pub col: usize,
    pub line_text: String,
    /// How many characters of `line_text` the caret underlines (at least 1).
    pub width: usize,
}

impl Location {
    /// Locate a byte span of `text` (the content of `file`).
    pub fn from_span(file: &Path, text: &str, span: Range<usize>) -> Self {
        let start = span.start.min(text.len());
        let before = &text[..floor_char_boundary(text, start)];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        let line_end = text[line_start..]
            .find('\n')
            .map(|i| line_start + i)
            .unwrap_or(text.len());
        let line_text = text[line_start..line_end]
            .trim_end_matches('\r')
            .to_string();
        let col = before[line_start..].chars().count() + 1;
        let end = floor_char_boundary(text, span.end.min(line_end).max(start));
        let width = text[floor_char_boundary(text, start)..end]
            .chars()
            .count()
            .max(1);
        Location {
            file: file.to_path_buf(),
            line,
            col,
            line_text,
            width,
        }
    }
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// One thing wrong with the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub message: String,
    /// The file the problem is in, when there is one but no precise position.
    pub file: Option<PathBuf>,
    pub location: Option<Box<Location>>,
    pub help: Option<String>,
}

impl Problem {
    /// A problem with no file behind it (a bad flag, say).
    pub fn new(message: impl Into<String>) -> Self {
        Problem {
            message: message.into(),
            file: None,
            location: None,
            help: None,
        }
    }

    /// A problem about a whole file.
    pub fn in_file(file: &Path, message: impl Into<String>) -> Self {
        Problem {
            file: Some(file.to_path_buf()),
            ..Problem::new(message)
        }
    }

    /// A problem at a byte span of a file's text.
    pub fn at(file: &Path, text: &str, span: Range<usize>, message: impl Into<String>) -> Self {
        Problem {
            file: Some(file.to_path_buf()),
            location: Some(Box::new(Location::from_span(file, text, span))),
            ..Problem::new(message)
        }
    }

    /// At a span when one is known, else about the whole file.
    pub fn at_opt(
        file: &Path,
        text: &str,
        span: Option<Range<usize>>,
        message: impl Into<String>,
    ) -> Self {
        match span {
            Some(span) => Problem::at(file, text, span, message),
            None => Problem::in_file(file, message),
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// A TOML parse/deserialize error, positioned when toml knows where.
    pub fn from_toml(file: &Path, text: &str, err: &toml::de::Error) -> Self {
        let message = err.message().trim().to_string();
        let help = suggestion(&message);
        let p = Problem::at_opt(file, text, err.span(), message);
        match help {
            Some(h) => p.with_help(h),
            None => p,
        }
    }
}

/// For serde's "unknown field `x`, expected one of `a`, `b`": the closest expected name.
/// Also for "unknown variant `x`, expected one of …" (an enum value such as `[replay] mode`).
fn suggestion(message: &str) -> Option<String> {
    let rest = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("unknown variant `"))?;
    let (unknown, rest) = rest.split_once('`')?;
    let expected: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    did_you_mean(unknown, &expected)
}

/// "did you mean `x`?" for the closest of `expected` to `unknown`, when one is close enough.
pub fn did_you_mean(unknown: &str, expected: &[&str]) -> Option<String> {
    let (best, dist) = expected
        .iter()
        .map(|e| (*e, edit_distance(unknown, e)))
        .min_by_key(|(_, d)| *d)?;
    (dist <= 3.max(unknown.len() / 3)).then(|| format!("did you mean `{best}`?"))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "error: {}", self.message)?;
        match (&self.location, &self.file) {
            (Some(loc), _) => {
                let num = loc.line.to_string();
                let pad = " ".repeat(num.len());
                writeln!(
                    f,
                    "{pad}--> {}:{}:{}",
                    loc.file.display(),
                    loc.line,
                    loc.col
                )?;
                writeln!(f, "{pad} |")?;
                writeln!(f, "{num} | {}", loc.line_text)?;
                let lead: String = loc
                    .line_text
                    .chars()
                    .take(loc.col.saturating_sub(1))
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                writeln!(f, "{pad} | {lead}{}", "^".repeat(loc.width))?;
            }
            (None, Some(file)) => writeln!(f, "  --> {}", file.display())?,
            (None, None) => {}
        }
        if let Some(help) = &self.help {
            writeln!(f, "  = help: {help}")?;
        }
        Ok(())
    }
}

/// Every problem found while loading; non-empty when returned as an error.
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
pub struct Problems(pub Vec<Problem>);

impl Problems {
    pub fn push(&mut self, problem: Problem) {
        self.0.push(problem);
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn iter(&self) -> std::slice::Iter<'_, Problem> {
        self.0.iter()
    }
    pub fn extend(&mut self, other: Problems) {
        self.0.extend(other.0);
    }
}

impl From<Problem> for Problems {
    fn from(p: Problem) -> Self {
        Problems(vec![p])
    }
}

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.0 {
            writeln!(f, "{p}")?;
        }
        let n = self.0.len();
        write!(
            f,
            "{n} problem{} found; nothing was run",
            if n == 1 { "" } else { "s" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_is_one_based_line_and_column() {
        let text = "a = 1\nbb = 2\n";
        let loc = Location::from_span(Path::new("f.toml"), text, 6..8);
        assert_eq!((loc.line, loc.col, loc.width), (2, 1, 2));
        assert_eq!(loc.line_text, "bb = 2");
    }

    #[test]
    fn rendering_shows_file_line_col_snippet_and_caret() {
        let text = "[provider]\nnmae = \"x\"\n";
        let p = Problem::at(Path::new("c.toml"), text, 11..15, "unknown field `nmae`")
            .with_help("did you mean `name`?");
        let out = p.to_string();
        assert!(out.contains("error: unknown field `nmae`"), "{out}");
        assert!(out.contains("--> c.toml:2:1"), "{out}");
        assert!(out.contains("2 | nmae = \"x\""), "{out}");
        assert!(out.contains("  | ^^^^"), "{out}");
        assert!(out.contains("help: did you mean `name`?"), "{out}");
    }

    #[test]
    fn problems_count_in_summary() {
        let mut ps = Problems::default();
        ps.push(Problem::new("one"));
        ps.push(Problem::in_file(Path::new("x"), "two"));
        let out = ps.to_string();
        assert!(out.contains("error: one"));
        assert!(out.contains("--> x"));
        assert!(out.ends_with("2 problems found; nothing was run"));
    }

    #[test]
    fn unknown_field_gets_a_did_you_mean() {
        let err = toml::from_str::<crate::model::config::ConfigFile>("[provider]\nnmae = 1\n")
            .unwrap_err();
        let p = Problem::from_toml(Path::new("c.toml"), "[provider]\nnmae = 1\n", &err);
        assert_eq!(p.help.as_deref(), Some("did you mean `name`?"));
        assert_eq!(suggestion("unknown field `zzzzzzzz`, expected `a`"), None);
    }

    #[test]
    fn span_past_end_does_not_panic() {
        let loc = Location::from_span(Path::new("f"), "abc", 10..20);
        assert_eq!(loc.line, 1);
    }
}
