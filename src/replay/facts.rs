//! The facts a pass rested on (see docs/replay.md, "The facts a pass rests on"): the small
//! checked form in which an agent, asked after it passed a step, states what in the outputs it
//! saw decided the pass; and their evaluation on a replay's outputs. One `BUGATTI_FACT` line a
//! fact, each naming an action (1-based, as the question lists them) and a test on that action's
//! output:
//!
//! ```text
//! BUGATTI_FACT 1 contains "status: ok"
//! BUGATTI_FACT 1 equals "pong"
//! BUGATTI_FACT 1 matches /status: (ok|degraded)/
//! BUGATTI_FACT 1 absent /error/
//! BUGATTI_FACT 1 /latency (\d+)ms/ number in [0, 1000]
//! BUGATTI_FACT 3 /snapshot (\S+)/ age under 3h
//! BUGATTI_FACT 3 /issued (\S+)/ time within 10m of now
//! BUGATTI_FACT 3 /expires (\S+)/ time between +4m and +6m of now
//! BUGATTI_FACT 3 /reset (\S+)/ time in the future
//! BUGATTI_FACT 2 /owner=(\S+)/ same as 1 /user=(\S+)/
//! BUGATTI_FACT 2 /session=(\S+)/ differs from 1 /session=(\S+)/
//! BUGATTI_FACT 1 /request (\S+)/ differs from the recording
//! ```
//!
//! A regex's first group (or its whole match, without a group) is the value tested; a regex sees
//! an output without its final line ends, so `/ok$/` holds on an output whose last line is `ok`.
//! A fact that does not parse, names no action of the step, or does not hold on the recording is
//! refused with the reason, and a step with such a fact is not recorded (the caller's rule); so is
//! an answer of more than [`MAX_FACTS`] facts or [`MAX_FACTS_BYTES`] bytes (each replay evaluates
//! every fact: their number and size are the replay's cost). The reply scanner
//! ([`crate::model::markers`]) finds the lines (one over its limit arrives as
//! [`crate::model::markers::overlong_fact`], refused here, never cut into a shorter fact); this
//! module is the language, the question and the evaluation.

use chrono::{DateTime, Utc};
use regex::Regex;

/// The most facts one step keeps.
pub const MAX_FACTS: usize = 64;

/// The most bytes the facts of one step may take together.
pub const MAX_FACTS_BYTES: usize = 64 * 1024;

/// One fact about action `action`'s output (0-based).
#[derive(Debug, Clone)]
pub struct Fact {
    /// The line as the agent wrote it (kept in the recording and shown in the report).
    pub text: String,
    pub action: usize,
    pub test: Test,
}

/// What a fact tests.
#[derive(Debug, Clone)]
pub enum Test {
    Contains(String),
    Equals(String),
    Matches(Regex),
    Absent(Regex),
    NumberIn(Regex, f64, f64),
    AgeUnder(Regex, f64),
    WithinOfNow(Regex, f64),
    /// `time between A and B of now`: the value minus now, in seconds, inside `[A, B]`.
    BetweenOfNow(Regex, f64, f64),
    /// `time in the future`.
    Future(Regex),
    /// `time in the past`.
    Past(Regex),
    SameAs(Regex, usize, Regex),
    /// `differs from K /regex/`: two values of the step's outputs that must not be equal.
    DiffersFrom(Regex, usize, Regex),
    Differs(Regex),
}

impl Test {
    /// Whether this test compares with the recording (true on replay only: at record time there
    /// is no earlier recording to differ from, unless the caller has one).
    pub fn needs_recording(&self) -> bool {
        matches!(self, Test::Differs(_))
    }
}

/// Why a fact line is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("fact {line:?}: {reason}")]
pub struct BadFact {
    pub line: String,
    pub reason: String,
}

/// Why an answer's facts are not kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactsRefused {
    #[error(transparent)]
    Bad(#[from] BadFact),
    #[error(
        "{stated} facts were stated and a step keeps at most {MAX_FACTS}: state only those the \
         pass rests on"
    )]
    TooMany { stated: usize },
    #[error(
        "the facts stated take {bytes} bytes and a step keeps at most {MAX_FACTS_BYTES}: state \
         them shorter"
    )]
    TooLarge { bytes: usize },
}

/// The facts of an answer: its `BUGATTI_FACT` lines without the keyword (`1 contains "ok"`).
/// `refs_masked`: one entry per action of the step, true for one whose output is read with its
/// element refs masked (a browser answer: `[ref=e12]` is `[ref=…]` on both sides, so a fact's
/// own refs are masked too, [`mask_refs`]). More than [`MAX_FACTS`] facts, or more than
/// [`MAX_FACTS_BYTES`] of them, are refused before any is parsed.
pub fn parse(stated: &[String], refs_masked: &[bool]) -> Result<Vec<Fact>, FactsRefused> {
    if stated.len() > MAX_FACTS {
        return Err(FactsRefused::TooMany {
            stated: stated.len(),
        });
    }
    let bytes = stated.iter().map(String::len).sum::<usize>();
    if bytes > MAX_FACTS_BYTES {
        return Err(FactsRefused::TooLarge { bytes });
    }
    Ok(stated
        .iter()
        .map(|l| parse_line(l.trim(), refs_masked))
        .collect::<Result<_, _>>()?)
}

/// A fact's text (a quoted text or a regex's source) with its element refs masked as a browser
/// answer's are compared: `[ref=e12]` and a regex's `\[ref=e\d+\]` are `[ref=…]` and
/// `\[ref=…\]`. Refs are numbered afresh per page: what a fact can rest on is the element the
/// line shows, not its number. Everything after `ref=` up to the bracket that closes it (or
/// the end of the word) is the ref.
pub fn mask_refs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("ref=") {
        // `href=` and the like are words of their own.
        let word = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        out.push_str(&rest[..at + 4]);
        rest = &rest[at + 4..];
        if word {
            continue;
        }
        let end = ref_end(rest);
        if end > 0 {
            // A group around the ref keeps its place (its value is then the masked ref).
            out.push_str(if rest.starts_with('(') {
                "(…)"
            } else {
                "…"
            });
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// How long the ref written at the start of `text` is (a literal `e12`, `f1e12`, or a regex
/// for one: `e\d+`, `[^\]]+`, `(e\d+)`, `\w+?`).
fn ref_end(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut depth = 0usize;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if bytes.get(i + 1) == Some(&b']') && depth == 0 => break,
            b'\\' => i += 2,
            b'[' => {
                // A class: to its closing bracket (a `]` first, or after `^`, is literal).
                i += 1;
                if bytes.get(i) == Some(&b'^') {
                    i += 1;
                }
                if bytes.get(i) == Some(&b']') {
                    i += 1;
                }
                while i < bytes.len() && bytes[i] != b']' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'(' => {
                depth += 1;
                i += 1;
            }
            b')' if depth > 0 => {
                depth -= 1;
                i += 1;
            }
            b']' | b')' | b'"' | b'/' | b'|' | b',' => break,
            c if c.is_ascii_whitespace() && depth == 0 => break,
            _ => i += 1,
        }
    }
    // A quantifier is the ref's too; never past the text (an escape at its very end).
    i.min(bytes.len())
}

/// The question asked after a pass, listing the step's recorded actions (one line each, as
/// [`crate::replay::format::Action::describe`] says them), numbered as the facts name them.
pub fn question(actions: &[String]) -> String {
    let mut text = String::from(
        "You passed this step. One question about it, to be answered from what you already saw \
         (run nothing new): which facts in the outputs below decided your pass? The harness \
         checks them whenever it runs these actions again without you, so state what must stay \
         true for the step to pass, as precisely as the instruction asks. Your actions, numbered:\n",
    );
    for (i, what) in actions.iter().enumerate() {
        let what: String = what.chars().take(200).collect();
        text.push_str(&format!("  {}. {}\n", i + 1, what.replace('\n', " ")));
    }
    text.push_str(
        "Write one line per fact, in one of these forms (N: an action's number; a /regex/'s \
         first group, or its whole match, is the value; D: a duration like 90s, 10m, 3h, 2d):\n\
         BUGATTI_FACT N contains \"text\"\n\
         BUGATTI_FACT N equals \"text\"\n\
         BUGATTI_FACT N matches /regex/\n\
         BUGATTI_FACT N absent /regex/\n\
         BUGATTI_FACT N /regex/ number in [min, max]\n\
         BUGATTI_FACT N /regex/ age under D\n\
         BUGATTI_FACT N /regex/ time within D of now\n\
         BUGATTI_FACT N /regex/ time between -D and +D of now\n\
         BUGATTI_FACT N /regex/ time in the future\n\
         BUGATTI_FACT N /regex/ time in the past\n\
         BUGATTI_FACT N /regex/ same as M /regex/\n\
         BUGATTI_FACT N /regex/ differs from M /regex/\n\
         BUGATTI_FACT N /regex/ differs from the recording\n\
         Every fact must hold on the outputs you saw. At most 64 facts. If none can be stated \
         this way, write none. End with RESULT OK.",
    );
    text
}

/// The first of `facts` that does not hold, with why (see [`holds`]).
pub fn first_false<'a>(
    facts: &'a [Fact],
    outputs: &[Option<Shown>],
    recorded: &[Option<Shown>],
    now: DateTime<Utc>,
) -> Option<(&'a Fact, String)> {
    facts
        .iter()
        .find_map(|f| holds(f, outputs, recorded, now).err().map(|why| (f, why)))
}

/// [`first_false`] at record time, on the outputs the agent saw: `differs from the recording` is
/// checked against `previous` (the outputs of the recording this pass replaces) and, without
/// one, left to the replays.
pub fn first_false_when_recorded<'a>(
    facts: &'a [Fact],
    outputs: &[Option<Shown>],
    previous: Option<&[Option<Shown>]>,
    now: DateTime<Utc>,
) -> Option<(&'a Fact, String)> {
    facts
        .iter()
        .filter(|f| previous.is_some() || !f.test.needs_recording())
        .find_map(|f| {
            holds(f, outputs, previous.unwrap_or_default(), now)
                .err()
                .map(|why| (f, why))
        })
}

fn bad(line: &str, reason: impl Into<String>) -> BadFact {
    BadFact {
        line: line.to_string(),
        reason: reason.into(),
    }
}

fn parse_line(line: &str, refs_masked: &[bool]) -> Result<Fact, BadFact> {
    let actions = refs_masked.len();
    if let Some(bytes) = crate::model::markers::overlong_fact_bytes(line) {
        return Err(bad(
            line,
            format!(
                "the line is {bytes} bytes long, over the {} a fact line may be: state it shorter",
                crate::model::markers::MAX_MARKER_LINE
            ),
        ));
    }
    let (action, rest) = action_number(line, line, actions)?;
    let masked;
    let rest = if refs_masked[action] {
        masked = mask_refs(rest);
        masked.as_str()
    } else {
        rest
    };
    let test = if let Some(q) = rest.strip_prefix("contains ") {
        Test::Contains(quoted(line, q)?)
    } else if let Some(q) = rest.strip_prefix("equals ") {
        Test::Equals(quoted(line, q)?)
    } else if let Some(r) = rest.strip_prefix("matches ") {
        Test::Matches(regex(line, r)?.0)
    } else if let Some(r) = rest.strip_prefix("absent ") {
        Test::Absent(regex(line, r)?.0)
    } else if rest.starts_with('/') {
        let (re, rest) = regex(line, rest)?;
        value_test(line, re, rest.trim_start(), refs_masked)?
    } else {
        return Err(bad(
            line,
            "expected contains, equals, matches, absent or /regex/",
        ));
    };
    Ok(Fact {
        text: line.to_string(),
        action,
        test,
    })
}

fn value_test(line: &str, re: Regex, rest: &str, refs_masked: &[bool]) -> Result<Test, BadFact> {
    let actions = refs_masked.len();
    // The other action's regex, its refs masked when that action's are.
    let other_regex = |k: usize, r: &str| {
        if refs_masked[k] {
            regex(line, &mask_refs(r)).map(|(re, _)| re)
        } else {
            regex(line, r).map(|(re, _)| re)
        }
    };
    if let Some(range) = rest.strip_prefix("number in ") {
        let inner = range
            .trim()
            .strip_prefix('[')
            .and_then(|r| r.strip_suffix(']'))
            .ok_or_else(|| bad(line, "a range is written [a, b]"))?;
        let (a, b) = inner
            .split_once(',')
            .ok_or_else(|| bad(line, "a range is written [a, b]"))?;
        let num = |s: &str| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| bad(line, format!("{s:?} is not a number")))
        };
        return Ok(Test::NumberIn(re, num(a)?, num(b)?));
    }
    if let Some(d) = rest.strip_prefix("age under ") {
        return Ok(Test::AgeUnder(re, span(line, d)?));
    }
    if let Some(d) = rest
        .strip_prefix("time within ")
        .and_then(|d| d.strip_suffix(" of now"))
    {
        return Ok(Test::WithinOfNow(re, span(line, d)?));
    }
    if let Some(bounds) = rest
        .strip_prefix("time between ")
        .and_then(|d| d.trim_end().strip_suffix(" of now"))
    {
        let (a, b) = bounds
            .split_once(" and ")
            .ok_or_else(|| bad(line, "a time range is written between -30s and +6m of now"))?;
        let (a, b) = (signed_span(line, a)?, signed_span(line, b)?);
        if a > b {
            return Err(bad(line, format!("{a} s is after {b} s")));
        }
        return Ok(Test::BetweenOfNow(re, a, b));
    }
    match rest.trim().strip_prefix("time ").unwrap_or(rest.trim()) {
        "in the future" => return Ok(Test::Future(re)),
        "in the past" => return Ok(Test::Past(re)),
        _ => {}
    }
    if let Some(other) = rest.strip_prefix("same as ") {
        let (k, r) = action_number(line, other, actions)?;
        return Ok(Test::SameAs(re, k, other_regex(k, r)?));
    }
    if rest.trim() == "differs from the recording" {
        return Ok(Test::Differs(re));
    }
    if let Some(other) = rest.strip_prefix("differs from ") {
        let (k, r) = action_number(line, other, actions)?;
        return Ok(Test::DiffersFrom(re, k, other_regex(k, r)?));
    }
    Err(bad(
        line,
        "expected number in [a, b], age under D, time within D of now, time between -D and +D \
         of now, time in the future, time in the past, same as K /regex/, differs from K /regex/ \
         or differs from the recording",
    ))
}

/// `-30s`, `+6m`, `0s`: a duration with its sign, in seconds.
fn signed_span(line: &str, d: &str) -> Result<f64, BadFact> {
    let d = d.trim();
    match d.strip_prefix('-') {
        Some(rest) => Ok(-span(line, rest)?),
        None => span(line, d.strip_prefix('+').unwrap_or(d)),
    }
}

fn action_number<'a>(
    line: &str,
    rest: &'a str,
    actions: usize,
) -> Result<(usize, &'a str), BadFact> {
    let end = rest.find(' ').unwrap_or(rest.len());
    let n: usize = rest[..end]
        .parse()
        .map_err(|_| bad(line, "a fact names its action by number (BUGATTI_FACT 1 …)"))?;
    if n == 0 || n > actions {
        return Err(bad(
            line,
            format!("the step has actions 1 to {actions}, not {n}"),
        ));
    }
    Ok((n - 1, rest[end..].trim_start()))
}

fn quoted(line: &str, q: &str) -> Result<String, BadFact> {
    serde_json::from_str::<String>(q.trim())
        .map_err(|_| bad(line, "the text is written in double quotes (JSON escapes)"))
}

/// A `/regex/` at the start of `text`, and what follows it.
fn regex<'a>(line: &str, text: &'a str) -> Result<(Regex, &'a str), BadFact> {
    let body = text
        .strip_prefix('/')
        .ok_or_else(|| bad(line, "a regex is written /…/"))?;
    let mut escaped = false;
    let end = body
        .char_indices()
        .find(|&(_, c)| {
            let end = c == '/' && !escaped;
            escaped = c == '\\' && !escaped;
            end
        })
        .map(|(i, _)| i)
        .ok_or_else(|| bad(line, "a regex is written /…/"))?;
    let re = Regex::new(&body[..end].replace("\\/", "/"))
        .map_err(|e| bad(line, format!("not a regex: {e}")))?;
    Ok((re, &body[end + 1..]))
}

/// `3h`, `10m`, `90s`, `2d` in seconds.
fn span(line: &str, d: &str) -> Result<f64, BadFact> {
    super::domains::duration_secs(d.trim())
        .or_else(|| {
            d.trim()
                .strip_suffix('d')
                .and_then(|n| n.parse::<f64>().ok())
                .map(|n| n * 86_400.0)
        })
        .ok_or_else(|| bad(line, format!("{d:?} is not a duration (3h, 10m, 90s, 2d)")))
}

/// The text a fact's regex sees: the output without its final line ends (so `/ok$/` holds on an
/// output whose last line is `ok`, as the agent reading it meant).
fn seen_text(text: &str) -> &str {
    text.trim_end_matches(['\n', '\r'])
}

fn value<'a>(re: &Regex, text: &'a str) -> Option<&'a str> {
    let c = re.captures(text)?;
    c.get(1).or_else(|| c.get(0)).map(|m| m.as_str())
}

/// One action's output as a fact reads it: the output in its compared form, and what the agent
/// read above it (a console answer's status lines: `Wall time: …`, `Process exited with code
/// 0`; empty for the other kinds).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shown {
    pub header: String,
    pub output: String,
}

impl Shown {
    /// An output with nothing above it.
    pub fn plain(output: impl Into<String>) -> Self {
        Self {
            header: String::new(),
            output: output.into(),
        }
    }
}

/// Whether `fact` holds on `outputs` (the step's outputs as the agent or the replay saw them,
/// one per action), `recorded` being the recording's (for `differs from the recording`) and
/// `now` the instant of the check; `Err` says why not. A fact is read on the outputs, and
/// where it does not hold there, on each with its header above (`contains "Process exited
/// with code 0"`); `absent` must hold on both (an error in the header counts too), and a
/// regex's `^` still means the output's start.
pub fn holds(
    fact: &Fact,
    outputs: &[Option<Shown>],
    recorded: &[Option<Shown>],
    now: DateTime<Utc>,
) -> Result<(), String> {
    let bodies = |all: &[Option<Shown>]| -> Vec<Option<String>> {
        all.iter()
            .map(|s| s.as_ref().map(|s| s.output.clone()))
            .collect()
    };
    let whole = |all: &[Option<Shown>]| -> Vec<Option<String>> {
        all.iter()
            .map(|s| s.as_ref().map(|s| format!("{}{}", s.header, s.output)))
            .collect()
    };
    let on_outputs = holds_on(fact, &bodies(outputs), &bodies(recorded), now);
    let headed = |all: &[Option<Shown>]| all.iter().flatten().any(|s| !s.header.is_empty());
    if !headed(outputs) && !headed(recorded) {
        return on_outputs;
    }
    match (&fact.test, on_outputs) {
        (Test::Absent(_), Ok(())) | (_, Err(_)) => {
            holds_on(fact, &whole(outputs), &whole(recorded), now)
        }
        (_, held) => held,
    }
}

/// [`holds`] on one reading of the outputs.
fn holds_on(
    fact: &Fact,
    outputs: &[Option<String>],
    recorded: &[Option<String>],
    now: DateTime<Utc>,
) -> Result<(), String> {
    let out = |k: usize| {
        outputs
            .get(k)
            .and_then(Option::as_deref)
            .map(seen_text)
            .ok_or_else(|| format!("action {} has no output", k + 1))
    };
    let text = out(fact.action)?;
    let found = |re: &Regex| value(re, text).ok_or_else(|| format!("/{re}/ finds nothing"));
    let instant = |v: &str| {
        super::domains::instant(v, now)
            .map(|(t, _)| t)
            .ok_or_else(|| format!("{v:?} is not a timestamp"))
    };
    let ok = |cond: bool, why: String| if cond { Ok(()) } else { Err(why) };
    match &fact.test {
        Test::Contains(s) => ok(text.contains(s.as_str()), format!("no {s:?}")),
        Test::Equals(s) => ok(text.trim_end() == s.trim_end(), format!("not {s:?}")),
        Test::Matches(re) => ok(re.is_match(text), format!("/{re}/ does not match")),
        Test::Absent(re) => ok(!re.is_match(text), format!("/{re}/ matches")),
        Test::NumberIn(re, a, b) => {
            let v = found(re)?;
            let n: f64 = v.parse().map_err(|_| format!("{v:?} is not a number"))?;
            ok(*a <= n && n <= *b, format!("{n} is not in [{a}, {b}]"))
        }
        Test::AgeUnder(re, secs) => {
            let age = (now - instant(found(re)?)?).num_milliseconds() as f64 / 1000.0;
            ok(
                (-60.0..=*secs).contains(&age),
                format!("{age:.0} s old, not under {secs} s"),
            )
        }
        Test::WithinOfNow(re, secs) => {
            let off = (now - instant(found(re)?)?).num_milliseconds() as f64 / 1000.0;
            ok(off.abs() <= *secs, format!("{off:.0} s from now"))
        }
        Test::BetweenOfNow(re, lo, hi) => {
            let off = (instant(found(re)?)? - now).num_milliseconds() as f64 / 1000.0;
            ok(
                *lo <= off && off <= *hi,
                format!("{off:+.0} s from now, not between {lo:+} s and {hi:+} s"),
            )
        }
        Test::Future(re) => {
            let v = found(re)?;
            ok(instant(v)? > now, format!("{v} is not in the future"))
        }
        Test::Past(re) => {
            let v = found(re)?;
            ok(instant(v)? <= now, format!("{v} is not in the past"))
        }
        Test::SameAs(re, k, other) => {
            let a = found(re)?;
            let b = value(other, out(*k)?).ok_or_else(|| format!("/{other}/ finds nothing"))?;
            ok(a == b, format!("{a:?} is not {b:?}"))
        }
        Test::DiffersFrom(re, k, other) => {
            let a = found(re)?;
            let b = value(other, out(*k)?).ok_or_else(|| format!("/{other}/ finds nothing"))?;
            ok(a != b, format!("both are {a:?}"))
        }
        Test::Differs(re) => {
            let before = recorded
                .get(fact.action)
                .and_then(Option::as_deref)
                .and_then(|t| value(re, t));
            let now = found(re)?;
            ok(before != Some(now), format!("{now:?} as recorded"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().expect("timestamp")
    }

    fn outputs(texts: &[&str]) -> Vec<Option<Shown>> {
        texts.iter().map(|t| Some(Shown::plain(*t))).collect()
    }

    #[test]
    fn every_form_parses_and_holds_or_not() {
        let answer = [
            "1 contains \"status: ok\"",
            "1 /latency (\\d+)ms/ number in [0, 1000]",
            "2 /owner=(\\S+)/ same as 3 /user=(\\S+)/",
            "4 /snapshot (\\S+)/ age under 3h",
            "1 absent /error/",
            "3 /user=(\\S+)/ differs from the recording",
            "4 /snapshot (\\S+)/ time within 4h of now",
        ]
        .map(String::from);
        let facts = parse(&answer, &[false; 4]).expect("parses");
        assert_eq!(facts.len(), 7);
        let now = at("2026-11-25T12:00:00Z");
        let good = outputs(&[
            "status: ok\nlatency 20ms",
            "owner=u2",
            "user=u2",
            "snapshot 2026-11-25T10:00:00Z",
        ]);
        let recorded = outputs(&["", "", "user=u1", ""]);
        for f in &facts {
            assert_eq!(holds(f, &good, &recorded, now), Ok(()), "{}", f.text);
        }
        let bad = outputs(&[
            "status: ok error\nlatency 4500ms",
            "owner=u9",
            "user=u1",
            "snapshot 2026-11-25T06:00:00Z",
        ]);
        let failing: Vec<usize> = facts
            .iter()
            .enumerate()
            .filter(|(_, f)| holds(f, &bad, &recorded, now).is_err())
            .map(|(i, _)| i)
            .collect();
        assert_eq!(failing, [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn timestamps_are_bounded_in_either_direction_of_now() {
        let facts = parse(
            &[
                "1 /expires (\\S+)/ time between +4m50s and +5m10s of now",
                "1 /reset (\\S+)/ time in the future",
                "1 /issued (\\S+)/ time in the past",
                "1 /issued (\\S+)/ time between -30s and 0s of now",
            ]
            .map(String::from),
            &[false; 1],
        )
        .expect("parses");
        let now = at("2026-11-25T12:00:00Z");
        let good = outputs(&[
            "issued 2026-11-25T11:59:50Z expires 2026-11-25T12:05:00Z reset 2026-11-25T12:01:00Z",
        ]);
        for f in &facts {
            assert_eq!(holds(f, &good, &[], now), Ok(()), "{}", f.text);
        }
        // An entry that expires now, or in four minutes; a reset already past; an issue time
        // from the future: each one false, which `time within 10m of now` would all have passed.
        let bad = outputs(&[
            "issued 2026-11-25T12:00:30Z expires 2026-11-25T12:00:00Z reset 2026-11-25T11:59:00Z",
        ]);
        let why: Vec<String> = facts
            .iter()
            .filter_map(|f| holds(f, &bad, &[], now).err())
            .collect();
        assert_eq!(why.len(), 4, "{why:?}");
        assert!(
            why[0].contains("+0 s from now, not between +290 s and +310 s"),
            "{why:?}"
        );
        let four = outputs(&["issued 2026-11-25T11:59:50Z expires 2026-11-25T12:04:00Z"]);
        assert!(holds(&facts[0], &four, &[], now).is_err());
    }

    #[test]
    fn two_values_that_must_differ_and_a_differs_from_the_recording_recordable() {
        let facts = parse(
            &[
                "2 /session=(\\S+)/ differs from 1 /session=(\\S+)/",
                "2 /session=(\\S+)/ differs from the recording",
            ]
            .map(String::from),
            &[false; 2],
        )
        .expect("parses");
        let now = at("2026-11-25T12:00:00Z");
        let rotated = outputs(&["session=a1", "session=b2"]);
        let kept = outputs(&["session=a1", "session=a1"]);
        assert_eq!(holds(&facts[0], &rotated, &[], now), Ok(()));
        assert_eq!(
            holds(&facts[0], &kept, &[], now),
            Err("both are \"a1\"".into())
        );
        // At record time without an earlier recording, only the replays check it; with one, it
        // is checked against that.
        assert!(first_false_when_recorded(&facts, &rotated, None, now).is_none());
        let previous = outputs(&["session=a0", "session=b2"]);
        let (fact, why) =
            first_false_when_recorded(&facts, &rotated, Some(&previous), now).expect("false");
        assert_eq!(fact.text, facts[1].text);
        assert!(why.contains("as recorded"), "{why}");
        // The replay's check: today's value against the recording's.
        assert!(first_false(
            &facts,
            &outputs(&["session=a1", "session=c3"]),
            &rotated,
            now
        )
        .is_none());
    }

    #[test]
    fn a_regex_ending_in_dollar_sees_the_last_line_as_the_agent_did() {
        let facts = parse(&["1 matches /status: ok$/".to_string()], &[false; 1]).expect("parses");
        let now = at("2026-11-25T12:00:00Z");
        assert_eq!(
            holds(&facts[0], &outputs(&["status: ok\n"]), &[], now),
            Ok(())
        );
        assert!(holds(&facts[0], &outputs(&["status: ok (stale)\n"]), &[], now).is_err());
    }

    #[test]
    fn too_many_or_too_large_facts_are_refused_clearly() {
        let many: Vec<String> = (0..=MAX_FACTS)
            .map(|i| format!("1 contains \"{i}\""))
            .collect();
        let e = parse(&many, &[false; 1]).expect_err("too many");
        assert_eq!(e, FactsRefused::TooMany { stated: 65 });
        assert!(e.to_string().contains("at most 64"), "{e}");
        assert!(parse(&many[..MAX_FACTS], &[false; 1]).is_ok());
        let large: Vec<String> = (0..10)
            .map(|i| format!("1 contains \"{i}{}\"", "x".repeat(7000)))
            .collect();
        let e = parse(&large, &[false; 1]).expect_err("too large");
        assert!(
            matches!(e, FactsRefused::TooLarge { bytes } if bytes > MAX_FACTS_BYTES),
            "{e}"
        );
        // A line the reply scanner found over its limit is refused with a word.
        let long = crate::model::markers::overlong_fact(9_000_000);
        let e = parse(&[long], &[false; 1]).expect_err("over-long");
        assert!(e.to_string().contains("9000000 bytes long"), "{e}");
    }

    #[test]
    fn a_facts_refs_are_masked_as_a_browser_answers_are() {
        for (fact, masked) in [
            (
                r#"contains "button [ref=e12]""#,
                r#"contains "button [ref=…]""#,
            ),
            (r#"matches /\[ref=f1e12\] x/"#, r#"matches /\[ref=…\] x/"#),
            (r#"matches /\[ref=e\d+\]/"#, r#"matches /\[ref=…\]/"#),
            (r#"matches /\[ref=[^\]]+\]/"#, r#"matches /\[ref=…\]/"#),
            (r#"/\[ref=(e\d+)\]/ same as"#, r#"/\[ref=(…)\]/ same as"#),
            (r#"matches /href=(\S+)/"#, r#"matches /href=(\S+)/"#),
            (r#"contains "ref=""#, r#"contains "ref=""#),
        ] {
            assert_eq!(mask_refs(fact), masked, "{fact}");
        }
    }

    #[test]
    fn a_bad_fact_says_why() {
        for (line, why) in [
            ("5 contains \"x\"", "actions 1 to 2"),
            ("one contains \"x\"", "by number"),
            ("1 /x( / number in [0, 1]", "not a regex"),
            ("1 /x/ number in [a, 1]", "not a number"),
            ("1 /x/ age under soon", "not a duration"),
            ("1 /x/ time between 6m and 1m of now", "is after"),
            ("1 /x/ time between soon and 1m of now", "not a duration"),
            ("1 /x/ differs from 3 /y/", "actions 1 to 2"),
            ("1 looks fine", "expected"),
        ] {
            let e = parse(&[line.to_string()], &[false; 2]).expect_err(line);
            assert!(e.to_string().contains(why), "{line}: {e}");
        }
    }
}
