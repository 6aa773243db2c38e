//! The candidate tokens of an output line: timestamps, UUIDs, durations and hex values, each a
//! [`Kind`], found by fixed patterns, in order and disjoint. A learned mask (`masks`) and a
//! learned domain (`domains`) both name a token by its [`Position`] among these.

use regex::Regex;
use serde::{Deserialize, Serialize};
use std::sync::LazyLock;

/// What kind of value a candidate token looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Timestamp,
    Uuid,
    Duration,
    Hex,
}

/// A learned volatile token: the `token`-th candidate of line `line` (both 0-based) of one
/// action's compared output. Written as `[line, token]`: one short item per token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(from = "(usize, usize)", into = "(usize, usize)")]
pub struct Position {
    pub line: usize,
    pub token: usize,
}

impl From<(usize, usize)> for Position {
    fn from((line, token): (usize, usize)) -> Self {
        Self { line, token }
    }
}

impl From<Position> for (usize, usize) {
    fn from(p: Position) -> Self {
        (p.line, p.token)
    }
}

static PATTERNS: LazyLock<Vec<(Kind, Regex)>> = LazyLock::new(|| {
    let month = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec";
    [
        (
            Kind::Timestamp,
            // RFC 3339 / ISO-8601: a date, optionally its time, fraction and offset.
            r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?"
                .to_string(),
        ),
        (Kind::Timestamp, r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b".to_string()),
        (
            Kind::Timestamp,
            // HTTP / RFC 2822 dates, as in `Date:` headers.
            format!(
                r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{{1,2}} (?:{month}) \d{{4}} \d{{2}}:\d{{2}}:\d{{2}}(?: (?:GMT|UTC|[+-]\d{{4}}))?"
            ),
        ),
        (
            Kind::Uuid,
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
                .to_string(),
        ),
        (
            Kind::Duration,
            r"\b(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+\b|\b\d+(?:\.\d+)? ?(?:nanoseconds?|microseconds?|milliseconds?|seconds?|secs?|minutes?|mins?|hours?)\b"
                .to_string(),
        ),
        (Kind::Hex, r"\b0x[0-9a-fA-F]{4,}\b".to_string()),
    ]
    .into_iter()
    .map(|(kind, re)| {
        // The patterns are constants: a test below compiles each one.
        let re = Regex::new(&re).unwrap_or_else(|e| panic!("built-in pattern {kind:?}: {e}"));
        (kind, re)
    })
    .collect()
});

/// One candidate token of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

/// The candidate tokens of `line`, in order and disjoint (at each place the longest).
pub fn candidates(line: &str) -> Vec<Token> {
    let mut found: Vec<Token> = PATTERNS
        .iter()
        .flat_map(|(kind, re)| {
            re.find_iter(line).map(|m| Token {
                start: m.start(),
                end: m.end(),
                kind: *kind,
            })
        })
        .collect();
    found.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    let mut tokens = Vec::with_capacity(found.len());
    let mut end = 0;
    for t in found {
        if t.start >= end {
            end = t.end;
            tokens.push(t);
        }
    }
    tokens
}
