//! Learned masks (see docs/replay.md, "What is masked"): which differences between a recorded
//! output and a replayed one a replay may pass over.
//!
//! Timestamps, UUIDs, durations and hex values are *candidates*, never masked up front. Two
//! outputs (both already normalised: the session's values as placeholders, `[replay] ignore`
//! applied) are compared line by line; where they differ only inside candidate tokens, the
//! difference is *soft*: the step goes to the agent, and only if it passes are those token
//! positions (line, token) learned as volatile. Later replays pass over exactly those positions.
//! Anything else that differs is a *hard* drift. Two shortcuts skip the learning: a timestamp
//! that was current when recorded matches one that is current now, and `[replay] ignore`.
//! A value that appears in the step's instruction is never passed over.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::sync::LazyLock;

/// How far outside a run's start–end window a timestamp still counts as "current".
pub const CURRENT_SLACK: chrono::Duration = chrono::Duration::minutes(10);

/// What kind of value a candidate token looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// What a replay knows when it compares: the positions learned for this output, the step's
/// instruction, and the windows in which a timestamp counts as current.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    pub volatile: &'a [Position],
    /// The instruction as sent: a value appearing in it is never passed over.
    pub instruction: &'a str,
    /// When the recording's run ran (start, end); `None` for a recording that does not say.
    pub recorded: Option<(DateTime<Utc>, DateTime<Utc>)>,
    /// When this replay runs (its session's start, now).
    pub now: (DateTime<Utc>, DateTime<Utc>),
}

/// How two normalised outputs compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaskedDiff {
    /// Equal, or different only where a mask allows.
    Same,
    /// Different only inside candidate tokens not learned yet: these positions.
    Soft(Vec<Position>),
    /// Different elsewhere (or in a value the instruction names).
    Hard,
}

/// Compares `expected` (the recording's) with `seen` (the replay's) under `rules`.
pub fn compare(expected: &str, seen: &str, rules: &Rules<'_>) -> MaskedDiff {
    if expected == seen {
        return MaskedDiff::Same;
    }
    let Some(differing) = differing_tokens(expected, seen) else {
        return MaskedDiff::Hard;
    };
    let mut soft = Vec::new();
    for d in differing {
        if named_in(rules.instruction, d.expected) || named_in(rules.instruction, d.seen) {
            return MaskedDiff::Hard;
        }
        if rules.volatile.contains(&d.position) {
            continue;
        }
        if d.kind == Kind::Timestamp && both_current(d.expected, d.seen, rules) {
            continue;
        }
        soft.push(d.position);
    }
    if soft.is_empty() {
        MaskedDiff::Same
    } else {
        MaskedDiff::Soft(soft)
    }
}

/// The positions at which two observations of one output differ inside candidate tokens, when
/// they differ nowhere else (`None` otherwise), leaving out any value `instruction` names: what
/// an agent's pass over both may teach.
pub fn varied(a: &str, b: &str, instruction: &str) -> Option<Vec<Position>> {
    let differing = differing_tokens(a, b)?;
    Some(
        differing
            .into_iter()
            .filter(|d| !named_in(instruction, d.expected) && !named_in(instruction, d.seen))
            .map(|d| d.position)
            .collect(),
    )
}

struct Differing<'a> {
    position: Position,
    kind: Kind,
    expected: &'a str,
    seen: &'a str,
}

/// The candidate tokens in which `a` and `b` differ, when they have the same lines apart from
/// those tokens; `None` when anything else differs.
fn differing_tokens<'a>(a: &'a str, b: &'a str) -> Option<Vec<Differing<'a>>> {
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.split('\n').collect(), b.split('\n').collect());
    if la.len() != lb.len() {
        return None;
    }
    let mut out = Vec::new();
    for (line, (x, y)) in la.iter().zip(&lb).enumerate() {
        if x == y {
            continue;
        }
        let (tx, ty) = (candidates(x), candidates(y));
        if tx.len() != ty.len() {
            return None;
        }
        let mut at = (0, 0);
        for (token, (p, q)) in tx.iter().zip(&ty).enumerate() {
            if x[at.0..p.start] != y[at.1..q.start] || p.kind != q.kind {
                return None;
            }
            let (vx, vy) = (&x[p.start..p.end], &y[q.start..q.end]);
            if vx != vy {
                out.push(Differing {
                    position: Position { line, token },
                    kind: p.kind,
                    expected: vx,
                    seen: vy,
                });
            }
            at = (p.end, q.end);
        }
        if x[at.0..] != y[at.1..] {
            return None;
        }
    }
    Some(out)
}

/// `value` appears in `text` as a whole token (not inside a longer word or number).
pub fn named_in(text: &str, value: &str) -> bool {
    if value.is_empty() {
        return false;
    }
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.match_indices(value).any(|(at, _)| {
        !word(text[..at].chars().next_back()) && !word(text[at + value.len()..].chars().next())
    })
}

/// Both values are timestamps current in their own run.
fn both_current(expected: &str, seen: &str, rules: &Rules<'_>) -> bool {
    let Some(recorded) = rules.recorded else {
        return false;
    };
    is_current(expected, recorded) && is_current(seen, rules.now)
}

/// `value` (a timestamp token) falls in `window` widened by [`CURRENT_SLACK`]. A date alone
/// counts when it is one of the window's days; a time of day alone never does (it names no day).
fn is_current(value: &str, window: (DateTime<Utc>, DateTime<Utc>)) -> bool {
    let (from, to) = (window.0 - CURRENT_SLACK, window.1 + CURRENT_SLACK);
    if let Some(at) = parse_instant(value) {
        return from <= at && at <= to;
    }
    if let Ok(day) = NaiveDate::parse_from_str(value, "%Y-%m-%d") {
        return from.date_naive() <= day && day <= to.date_naive();
    }
    false
}

fn parse_instant(value: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(value) {
        return Some(t.with_timezone(&Utc));
    }
    if let Ok(t) = DateTime::parse_from_rfc2822(value) {
        return Some(t.with_timezone(&Utc));
    }
    // No offset written: read as UTC (what `date -u` and most servers print).
    let t = value.replace(' ', "T").replace(',', ".");
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(&t, f).ok())
        .map(|t| t.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().expect("timestamp")
    }

    fn rules<'a>(volatile: &'a [Position], instruction: &'a str) -> Rules<'a> {
        Rules {
            volatile,
            instruction,
            recorded: Some((at("2026-11-24T12:00:00Z"), at("2026-11-24T12:01:00Z"))),
            now: (at("2026-11-25T09:00:00Z"), at("2026-11-25T09:00:30Z")),
        }
    }

    #[test]
    fn candidates_are_found() {
        let kinds: Vec<Kind> = candidates(
            "at 2026-11-24T12:00:01.123Z id 0192f6a4-1b2c-7d3e-8f40-123456789abc took 12ms ptr 0x7ffd5e8a 09:00:00",
        )
        .iter()
        .map(|t| t.kind)
        .collect();
        assert_eq!(
            kinds,
            [
                Kind::Timestamp,
                Kind::Uuid,
                Kind::Duration,
                Kind::Hex,
                Kind::Timestamp
            ]
        );
    }

    #[test]
    fn an_unlearned_candidate_is_a_soft_drift_and_a_learned_one_is_same() {
        let (a, b) = ("req 1f\ntook 12ms", "req 1f\ntook 40ms");
        let p = Position { line: 1, token: 0 };
        assert_eq!(compare(a, b, &rules(&[], "")), MaskedDiff::Soft(vec![p]));
        assert_eq!(compare(a, b, &rules(&[p], "")), MaskedDiff::Same);
        // A learned position on another line masks nothing here.
        let other = Position { line: 0, token: 0 };
        assert_eq!(
            compare(a, b, &rules(&[other], "")),
            MaskedDiff::Soft(vec![p])
        );
    }

    #[test]
    fn anything_else_is_hard() {
        assert_eq!(
            compare("status ok", "status down", &rules(&[], "")),
            MaskedDiff::Hard
        );
        assert_eq!(compare("a\nb", "a", &rules(&[], "")), MaskedDiff::Hard);
        assert_eq!(
            compare("took 12ms", "took 12ms!", &rules(&[], "")),
            MaskedDiff::Hard
        );
    }

    #[test]
    fn a_value_named_in_the_instruction_is_never_passed_over() {
        let p = [Position { line: 0, token: 0 }];
        let r = rules(&p, "Check the due date is 2026-12-31.");
        assert_eq!(
            compare("due 2026-12-31", "due 2027-01-15", &r),
            MaskedDiff::Hard
        );
        let r = rules(&p, "Check timeout=5s.");
        assert_eq!(compare("timeout=5s", "timeout=0s", &r), MaskedDiff::Hard);
        assert_eq!(
            varied("timeout=5s", "timeout=0s", "Check timeout=5s."),
            Some(vec![])
        );
    }

    #[test]
    fn a_current_timestamp_matches_a_current_one_and_a_stuck_clock_does_not() {
        let r = rules(&[], "Check the clock is current.");
        assert_eq!(
            compare("now 2026-11-24T12:00:30Z", "now 2026-11-25T09:00:10Z", &r),
            MaskedDiff::Same
        );
        assert_eq!(
            compare("now 2026-11-24T12:00:30Z", "now 1999-01-01T00:00:00Z", &r),
            MaskedDiff::Soft(vec![Position { line: 0, token: 0 }])
        );
        // A time of day alone names no day: never current.
        assert!(!is_current(
            "12:00:30",
            (at("2026-11-24T12:00:00Z"), at("2026-11-24T12:01:00Z"))
        ));
        assert!(is_current(
            "2026-11-24",
            (at("2026-11-24T12:00:00Z"), at("2026-11-24T12:01:00Z"))
        ));
        assert!(is_current(
            "Tue, 24 Nov 2026 12:05:00 GMT",
            (at("2026-11-24T12:00:00Z"), at("2026-11-24T12:01:00Z"))
        ));
    }

    #[test]
    fn varied_finds_what_two_passes_differ_in() {
        assert_eq!(
            varied("id 0x1234abcd took 3ms", "id 0x1234abcd took 9ms", ""),
            Some(vec![Position { line: 0, token: 1 }])
        );
        assert_eq!(varied("a", "b", ""), None);
    }

    #[test]
    fn named_in_is_by_whole_token() {
        assert!(named_in("due 2026-12-31.", "2026-12-31"));
        assert!(!named_in("took 15s", "5s"));
        assert!(!named_in("x", ""));
    }
}
