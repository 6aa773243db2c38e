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
//! BUGATTI_FACT 2 /owner=(\S+)/ same as 1 /user=(\S+)/
//! BUGATTI_FACT 1 /request (\S+)/ differs from the recording
//! ```
//!
//! A regex's first group (or its whole match, without a group) is the value tested. A fact that
//! does not parse, names no action of the step, or does not hold on the recording is refused with
//! the reason, and a step with such a fact is not recorded (the caller's rule). The reply scanner
//! ([`crate::model::markers`]) finds the lines; this module is the language, the question and the
//! evaluation.

use chrono::{DateTime, Utc};
use regex::Regex;

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
    SameAs(Regex, usize, Regex),
    Differs(Regex),
}

/// Why a fact line is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("fact {line:?}: {reason}")]
pub struct BadFact {
    pub line: String,
    pub reason: String,
}

/// The facts of an answer: its `BUGATTI_FACT` lines without the keyword (`1 contains "ok"`).
/// `actions`: how many actions the step has.
pub fn parse(stated: &[String], actions: usize) -> Result<Vec<Fact>, BadFact> {
    stated
        .iter()
        .map(|l| parse_line(l.trim(), actions))
        .collect()
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
         BUGATTI_FACT N /regex/ same as M /regex/\n\
         BUGATTI_FACT N /regex/ differs from the recording\n\
         Every fact must hold on the outputs you saw. If none can be stated this way, write none. \
         End with RESULT OK.",
    );
    text
}

/// The first of `facts` that does not hold, with why (see [`holds`]).
pub fn first_false<'a>(
    facts: &'a [Fact],
    outputs: &[Option<String>],
    recorded: &[Option<String>],
    now: DateTime<Utc>,
) -> Option<(&'a Fact, String)> {
    facts
        .iter()
        .find_map(|f| holds(f, outputs, recorded, now).err().map(|why| (f, why)))
}

fn bad(line: &str, reason: impl Into<String>) -> BadFact {
    BadFact {
        line: line.to_string(),
        reason: reason.into(),
    }
}

fn parse_line(line: &str, actions: usize) -> Result<Fact, BadFact> {
    let (action, rest) = action_number(line, line, actions)?;
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
        value_test(line, re, rest.trim_start(), actions)?
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

fn value_test(line: &str, re: Regex, rest: &str, actions: usize) -> Result<Test, BadFact> {
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
    if let Some(other) = rest.strip_prefix("same as ") {
        let (k, r) = action_number(line, other, actions)?;
        return Ok(Test::SameAs(re, k, regex(line, r)?.0));
    }
    if rest.trim() == "differs from the recording" {
        return Ok(Test::Differs(re));
    }
    Err(bad(
        line,
        "expected number in [a, b], age under D, time within D of now, same as K /regex/ or differs from the recording",
    ))
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

fn value<'a>(re: &Regex, text: &'a str) -> Option<&'a str> {
    let c = re.captures(text)?;
    c.get(1).or_else(|| c.get(0)).map(|m| m.as_str())
}

/// Whether `fact` holds on `outputs` (the step's outputs as the agent or the replay saw them,
/// one per action), `recorded` being the recording's (for `differs from the recording`) and
/// `now` the instant of the check; `Err` says why not.
pub fn holds(
    fact: &Fact,
    outputs: &[Option<String>],
    recorded: &[Option<String>],
    now: DateTime<Utc>,
) -> Result<(), String> {
    let out = |k: usize| {
        outputs
            .get(k)
            .and_then(Option::as_deref)
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
        Test::SameAs(re, k, other) => {
            let a = found(re)?;
            let b = value(other, out(*k)?).ok_or_else(|| format!("/{other}/ finds nothing"))?;
            ok(a == b, format!("{a:?} is not {b:?}"))
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

    fn outputs(texts: &[&str]) -> Vec<Option<String>> {
        texts.iter().map(|t| Some((*t).to_string())).collect()
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
        let facts = parse(&answer, 4).expect("parses");
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
    fn a_bad_fact_says_why() {
        for (line, why) in [
            ("5 contains \"x\"", "actions 1 to 2"),
            ("one contains \"x\"", "by number"),
            ("1 /x( / number in [0, 1]", "not a regex"),
            ("1 /x/ number in [a, 1]", "not a number"),
            ("1 /x/ age under soon", "not a duration"),
            ("1 looks fine", "expected"),
        ] {
            let e = parse(&[line.to_string()], 2).expect_err(line);
            assert!(e.reason.contains(why), "{line}: {e}");
        }
    }
}
