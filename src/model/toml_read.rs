//! Reading a TOML file into our types with every problem found in one pass, in the user's words.
//!
//! serde stops at the first error it meets. So when a file parses as TOML but a value is wrong
//! (a string where a number goes, an unknown key), the offending line is blanked out — bytes
//! replaced by spaces, so every later position stays where it was — and the file is read again,
//! until it is clean or a problem is met that blanking cannot get past (a missing field, whose
//! span is its table's header). Messages name TOML's kinds of value, not Rust's types.

use super::diagnostics::Problem;
use serde::de::DeserializeOwned;
use std::path::Path;

/// At most this many problems are collected from one file.
const MAX_PROBLEMS: usize = 50;

/// `text` (the content of `path`) read as `T`, or every problem found, in file order.
pub fn read_all<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, Vec<Problem>> {
    match read_lenient(path, text) {
        (Some(value), problems) if problems.is_empty() => Ok(value),
        (_, problems) => Err(problems),
    }
}

/// Every problem of the file, in file order, and — unless the file is not TOML at all or a
/// problem could not be got past — what it holds without the lines that had problems, so the
/// caller can go on checking the rest in the same pass.
pub fn read_lenient<T: DeserializeOwned>(path: &Path, text: &str) -> (Option<T>, Vec<Problem>) {
    let mut current = text.to_string();
    let mut problems: Vec<Problem> = Vec::new();
    let value = loop {
        let err = match toml::from_str::<T>(&current) {
            Ok(value) => break Some(value),
            Err(err) => err,
        };
        // A syntax error caused by our own blanking is not the user's: stop with what we have.
        let ours = !problems.is_empty() && is_syntax_error(&err);
        if !ours {
            problems.push(problem(path, text, &err));
        }
        let Some(span) = err.span() else { break None };
        if ours || problems.len() >= MAX_PROBLEMS || !blank_lines(&mut current, span) {
            break None;
        }
    };
    problems.sort_by_key(|p| p.location.as_ref().map(|l| (l.line, l.col)));
    problems.dedup();
    (value, problems)
}

/// The first problem only, for callers that stop there.
pub fn read_first<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, Problem> {
    // One read: the re-reads of `read_lenient` would only find problems this caller drops.
    toml::from_str(text).map_err(|e| problem(path, text, &e))
}

fn problem(path: &Path, text: &str, err: &toml::de::Error) -> Problem {
    let mut p = Problem::from_toml(path, text, err);
    p.message = plain_words(&p.message);
    p
}

fn is_syntax_error(err: &toml::de::Error) -> bool {
    let m = err.message();
    !(m.starts_with("invalid type")
        || m.starts_with("invalid value")
        || m.starts_with("unknown field")
        || m.starts_with("unknown variant")
        || m.starts_with("missing field")
        || m.starts_with("invalid length"))
}

/// Blanks the lines `span` touches, unless one is a table header (blanking it would move its
/// keys into the table before). Returns whether it did.
fn blank_lines(text: &mut String, span: std::ops::Range<usize>) -> bool {
    let start = text[..span.start.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let end = text[span.end.min(text.len())..]
        .find('\n')
        .map_or(text.len(), |i| span.end.min(text.len()) + i);
    let lines = &text[start..end];
    if lines.trim_start().starts_with('[') && !lines.contains('=') {
        return false;
    }
    // Same length in bytes: a multi-byte character becomes as many spaces.
    let blank: String = lines
        .chars()
        .flat_map(|c| {
            let n = if c == '\n' { 0 } else { c.len_utf8() };
            std::iter::repeat_n(' ', n).chain((c == '\n').then_some('\n'))
        })
        .collect();
    text.replace_range(start..end, &blank);
    true
}

/// serde's messages in TOML's words: `expected u64` → `expected a whole number`, and so on.
pub fn plain_words(message: &str) -> String {
    const KINDS: [(&str, &str); 14] = [
        ("expected usize", "expected a whole number"),
        ("expected u64", "expected a whole number"),
        ("expected u32", "expected a whole number"),
        ("expected u16", "expected a whole number"),
        ("expected u8", "expected a whole number"),
        ("expected i64", "expected a whole number"),
        ("expected f64", "expected a number"),
        (
            "expected a sequence",
            "expected a list, like [\"a\", \"b\"]",
        ),
        ("expected a boolean", "expected true or false"),
        ("expected a string", "expected a string in quotes"),
        ("expected a map", "expected a table"),
        ("expected a borrowed string", "expected a string in quotes"),
        ("integer `", "the number `"),
        ("invalid type: sequence", "invalid type: a list"),
    ];
    let mut out = message.to_string();
    for (rust, toml) in KINDS {
        out = out.replace(rust, toml);
    }
    out = out.replace("invalid type: ", "wrong kind of value: found ");
    if let Some(rest) = out.strip_prefix("wrong kind of value: found string ") {
        out = format!("wrong kind of value: found the string {rest}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        a: Option<u64>,
        b: Option<Vec<String>>,
        c: Option<bool>,
        t: Option<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        n: Option<usize>,
    }

    #[test]
    fn every_wrong_value_is_found_in_one_pass_in_plain_words() {
        let text = "a = \"20\"\nb = \"x\"\nc = 1\nzz = 3\n[t]\nn = -1\n";
        let problems = read_all::<Doc>(Path::new("f.toml"), text).expect_err("bad");
        let said: Vec<(usize, &str)> = problems
            .iter()
            .map(|p| {
                (
                    p.location.as_ref().map_or(0, |l| l.line),
                    p.message.as_str(),
                )
            })
            .collect();
        assert_eq!(said.len(), 5, "{said:#?}");
        assert_eq!(said[0].0, 1);
        assert!(said[0].1.contains("expected a whole number") && !said[0].1.contains("u64"));
        assert!(said[0].1.contains("found the string \"20\""), "{said:?}");
        assert!(said[1].1.contains("expected a list"), "{said:?}");
        assert!(said[2].1.contains("expected true or false"), "{said:?}");
        assert!(said[3].1.contains("unknown field `zz`"), "{said:?}");
        assert_eq!(said[4].0, 6);
        assert!(
            said[4].1.contains("the number `-1`") && !said[4].1.contains("usize"),
            "{said:?}"
        );
    }

    #[test]
    fn a_clean_file_reads_and_a_syntax_error_is_one_problem() {
        assert!(read_all::<Doc>(Path::new("f.toml"), "a = 3\n").is_ok());
        let problems = read_all::<Doc>(Path::new("f.toml"), "a = [\n").expect_err("syntax");
        assert_eq!(problems.len(), 1);
    }
}
