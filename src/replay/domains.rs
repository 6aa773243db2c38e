//! Learned domains (see docs/replay.md, "What is masked"): what a volatile token may be, never
//! "any value there".
//!
//! A token position learned while the agent passed keeps what it was seen to be: its kind, and
//! - for a duration, the range seen; a replay passes from half the smallest to twice the largest
//!   seen, and at least a second either side ([`duration_bounds`]) — the same ceiling as a
//!   console answer's wall time;
//! - for a timestamp, its offset from the run's clock (0 while inside the run's start–end window,
//!   else how far before or after it), and a replay passes only inside the range of offsets seen:
//!   a stale `updated_at` or a backup from 1999 is outside;
//! - for an id (UUID, hex value), whether it was equal to an earlier token of the step's outputs
//!   in every pass (an owner id tied to the new user's id, a copy's checksum to the source's), and
//!   which earlier ids of its kind it was never equal to (a session id that must rotate).
//!
//! And between the tokens of one output, the relations that held in every pass: the order of two
//! consecutive timestamps and their difference ([`Relation`]), and a list's order as one
//! relation over all its timestamps however long it is (`sorted`), checked on every replay, the
//! first one too.

use super::tokens::{Kind, Position};
use chrono::{DateTime, Duration as Span, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use serde::{Deserialize, Serialize};

/// A window of time: when a run ran (its start, its end or now).
pub type Window = (DateTime<Utc>, DateTime<Utc>);

/// How many replays in a row a learned position may go unvarying before it is exact again.
pub const EXPIRES_AFTER: u32 = 30;

/// How many of the agent's passes may widen a timestamp's learned offsets: one that has not
/// settled by then (a nightly job's time that drifts a little further every night) stops being
/// learned, and is compared exactly from then on ([`Domain::unsettled`]).
pub const SETTLES_WITHIN: u32 = 10;

/// The most pairs of consecutive timestamps kept per output (a log of a thousand timestamps keeps
/// the first ones; its order, one relation, is kept whole).
pub const MAX_RELATIONS_PER_OUTPUT: usize = 32;

/// The most earlier tokens an id is kept apart from (the nearest ones).
pub const MAX_APART: usize = 4;

/// The fewest timestamps a list has for its order to be kept as one relation (two are a pair).
const SORTED_LIST_MIN: usize = 3;

/// A learned volatile token: its place and what it may be. Written `[line, token, {domain}]`;
/// a recording of an older supervisor wrote `[line, token]` alone, which is read with no domain
/// and so masks nothing (the position is compared exactly until the agent passes it again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "LearnedRepr", into = "LearnedRepr")]
pub struct Learned {
    pub at: Position,
    pub domain: Option<Domain>,
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum LearnedRepr {
    Bounded(usize, usize, Domain),
    Bare(usize, usize),
}

impl From<LearnedRepr> for Learned {
    fn from(r: LearnedRepr) -> Self {
        match r {
            LearnedRepr::Bounded(line, token, d) => Self {
                at: Position { line, token },
                domain: Some(d),
            },
            LearnedRepr::Bare(line, token) => Self {
                at: Position { line, token },
                domain: None,
            },
        }
    }
}

impl From<Learned> for LearnedRepr {
    fn from(l: Learned) -> Self {
        match l.domain {
            Some(d) => Self::Bounded(l.at.line, l.at.token, d),
            None => Self::Bare(l.at.line, l.at.token),
        }
    }
}

/// What a learned token may be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Domain {
    pub kind: Kind,
    /// A duration: the seconds seen (smallest, largest). A timestamp: its offsets from its run's
    /// window, in seconds (earliest, latest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<(f64, f64)>,
    /// An id: the earlier token of the step's outputs it equalled in every pass
    /// (`[action, line, token]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tie: Option<(usize, usize, usize)>,
    /// An id: the earlier tokens of the same kind it differed from in every pass (a session id
    /// that rotates on elevation never equals the one before it), at most [`MAX_APART`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apart: Vec<(usize, usize, usize)>,
    /// Replays in a row since it was last seen varying ([`EXPIRES_AFTER`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub quiet: u32,
    /// A timestamp: the agent's passes that widened its range ([`SETTLES_WITHIN`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub widened: u32,
}

impl Domain {
    /// A timestamp whose offsets still widened after [`SETTLES_WITHIN`] passes: no longer
    /// learned, compared exactly (it admits nothing but its recorded value).
    pub fn unsettled(&self) -> bool {
        self.kind == Kind::Timestamp && self.widened >= SETTLES_WITHIN
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The order of two timestamps of one output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Order {
    #[serde(rename = "<")]
    Before,
    #[serde(rename = "=")]
    Same,
    #[serde(rename = ">")]
    After,
}

/// Two consecutive timestamps of action `action`'s output: their order, and their difference
/// (`b − a`, seconds) while it was the same in every pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Relation {
    pub action: usize,
    pub a: Position,
    pub b: Position,
    pub order: Order,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<f64>,
    /// A list's order: every timestamp from `a` to the end of the output (`b`: the last one
    /// when recorded) follows the one before it in `order` (`<`: never earlier, `>`: never
    /// later), however many there are.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sorted: bool,
    /// `a` is in an earlier action's output (this one), `b` in `action`'s: the last timestamp
    /// of one output and the first of the next output that shows one (an order placed, then
    /// shipped: the shipping must still come after the order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<usize>,
}

/// The bounds a duration learned over `range` passes within (seconds).
pub fn duration_bounds((min, max): (f64, f64)) -> (f64, f64) {
    (
        (min / 2.0).min(min - 1.0).max(0.0),
        (max * 2.0).max(max + 1.0),
    )
}

/// A duration token in seconds (`12ms`, `1m30s`, `0.5 seconds`).
pub fn duration_secs(token: &str) -> Option<f64> {
    let t = token.trim();
    let unit = |u: &str| -> Option<f64> {
        Some(match u {
            "ns" | "nanosecond" | "nanoseconds" => 1e-9,
            "us" | "µs" | "microsecond" | "microseconds" => 1e-6,
            "ms" | "millisecond" | "milliseconds" => 1e-3,
            "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
            "h" | "hour" | "hours" => 3600.0,
            _ => return None,
        })
    };
    let mut total = 0.0;
    let mut rest = t;
    let mut any = false;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = rest[num_end..].trim_start();
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        total += n * unit(rest[..unit_end].trim())?;
        rest = &rest[unit_end..];
        any = true;
    }
    (any && total.is_finite()).then_some(total)
}

/// A timestamp token as an instant and the span it stands for (a date is a whole day, a time
/// without fraction a whole second). A time of day alone (`09:00:00`) is taken on the day of
/// `near` (or the day before or after, whichever is nearest).
pub fn instant(token: &str, near: DateTime<Utc>) -> Option<(DateTime<Utc>, Span)> {
    let fraction = |s: &str| {
        s.rsplit_once(['.', ','])
            .map(|(_, f)| f.chars().take_while(char::is_ascii_digit).count())
            .filter(|n| *n > 0)
            .map_or(Span::seconds(1), |n| {
                Span::nanoseconds(10_i64.pow(9u32.saturating_sub(n.min(9) as u32)))
            })
    };
    if let Ok(t) = DateTime::parse_from_rfc3339(token) {
        return Some((t.with_timezone(&Utc), fraction(token)));
    }
    if let Ok(t) = DateTime::parse_from_rfc2822(token) {
        return Some((t.with_timezone(&Utc), Span::seconds(1)));
    }
    let t = token.replace(' ', "T").replace(',', ".");
    // An offset written as `+0100`: chrono's `%z` reads it.
    for f in ["%Y-%m-%dT%H:%M:%S%.f%z", "%Y-%m-%dT%H:%M%z"] {
        if let Ok(x) = DateTime::parse_from_str(&t, f) {
            return Some((x.with_timezone(&Utc), fraction(token)));
        }
    }
    let naive = t.trim_end_matches('Z');
    if let Ok(x) = NaiveDateTime::parse_from_str(naive, "%Y-%m-%dT%H:%M:%S%.f") {
        return Some((x.and_utc(), fraction(token)));
    }
    if let Ok(x) = NaiveDateTime::parse_from_str(naive, "%Y-%m-%dT%H:%M") {
        return Some((x.and_utc(), Span::minutes(1)));
    }
    if let Ok(d) = NaiveDate::parse_from_str(token, "%Y-%m-%d") {
        return Some((d.and_hms_opt(0, 0, 0)?.and_utc(), Span::days(1)));
    }
    let time = NaiveTime::parse_from_str(&token.replace(',', "."), "%H:%M:%S%.f").ok()?;
    let day = near.date_naive();
    [day.pred_opt(), Some(day), day.succ_opt()]
        .into_iter()
        .flatten()
        .map(|d| d.and_time(time).and_utc())
        .min_by_key(|t| (*t - near).num_milliseconds().abs())
        .map(|t| (t, fraction(token)))
}

/// How far a timestamp token lies from `window`, in seconds: 0 when the span it stands for
/// overlaps the window, negative before it, positive after it.
pub fn offset(token: &str, window: Window) -> Option<f64> {
    let (at, span) = instant(token, window.0)?;
    let end = at + span;
    let secs = |d: Span| d.num_milliseconds() as f64 / 1000.0;
    Some(if end < window.0 {
        secs(end - window.0)
    } else if at > window.1 {
        secs(at - window.1)
    } else {
        0.0
    })
}

fn union(a: Option<(f64, f64)>, b: (f64, f64)) -> (f64, f64) {
    match a {
        Some((lo, hi)) => (lo.min(b.0), hi.max(b.1)),
        None => b,
    }
}

/// One observation of a token while the agent passed: its text, and when its run ran.
pub struct SeenValue<'a> {
    pub value: &'a str,
    pub window: Option<Window>,
    /// When the step whose output it was began (inside `window`), when known: the output came
    /// between then and the window's end, so its offset is a range, not a point.
    pub step_began: Option<DateTime<Utc>>,
}

/// The offsets a timestamp seen in a pass may have had from its run's clock: measured from the
/// window's end (when the pass was recorded), and from when its step began (the output came in
/// between: an agent that took ten seconds to look saw an entry that expires in five minutes at
/// 4m50s from the recording's end and at 5m from its step's start; a replay sees it at once).
fn offsets_seen(seen: &SeenValue<'_>) -> Option<(f64, f64)> {
    let window = seen.window?;
    let at_end = offset(seen.value, window)?;
    let at_step = seen
        .step_began
        .filter(|b| window.0 <= *b && *b <= window.1)
        .and_then(|b| offset(seen.value, (window.0, b)))
        .unwrap_or(at_end);
    Some((at_end.min(at_step), at_end.max(at_step)))
}

/// The domain a position learns from what it was before (`old`) and two passes of the agent
/// (`before`, the recording it had, and `after`, the new one); `None` when a bound cannot be
/// told (an unreadable timestamp or duration): the position then stays exact.
pub fn learn_domain(
    kind: Kind,
    old: Option<&Domain>,
    before: &SeenValue<'_>,
    after: &SeenValue<'_>,
) -> Option<Domain> {
    let old = old.filter(|d| d.kind == kind);
    // Not settled after SETTLES_WITHIN passes: kept as it is, never widened again.
    if let Some(d) = old.filter(|d| d.unsettled()) {
        return Some(d.clone());
    }
    let range = match kind {
        Kind::Duration => {
            let (a, b) = (duration_secs(before.value)?, duration_secs(after.value)?);
            Some(union(old.and_then(|d| d.range), (a.min(b), a.max(b))))
        }
        Kind::Timestamp => {
            let a = offsets_seen(before)?;
            let b = offsets_seen(after)?;
            let both = (a.0.min(b.0), a.1.max(b.1));
            Some(union(old.and_then(|d| d.range), both))
        }
        Kind::Uuid | Kind::Hex => None,
    };
    let quiet = match old {
        Some(d) if before.value == after.value => d.quiet,
        _ => 0,
    };
    let widened = match old {
        Some(d) if d.range == range => d.widened,
        Some(d) => d.widened.saturating_add(1),
        None => 1,
    };
    Some(Domain {
        kind,
        range,
        tie: None,
        apart: Vec::new(),
        quiet,
        widened: if kind == Kind::Timestamp { widened } else { 0 },
    })
}

/// Whether `value` (seen at replay, a token of `kind` where `recorded` was) is inside `domain`.
/// Ties are checked apart (they need the other outputs).
pub fn admits(domain: &Domain, kind: Kind, recorded: &str, value: &str, now: Window) -> bool {
    if domain.kind != kind || domain.unsettled() {
        return false;
    }
    match kind {
        Kind::Duration => match (domain.range, duration_secs(value)) {
            (Some(range), Some(v)) => {
                let (lo, hi) = duration_bounds(range);
                lo <= v && v <= hi
            }
            _ => false,
        },
        Kind::Timestamp => match (domain.range, offset(value, now), instant(value, now.0)) {
            // A token written to the second stands for any instant of that second: its offset
            // may be off by that much from run to run (at most a second, never a day's worth).
            (Some((lo, hi)), Some(v), Some((_, span))) => {
                let tol = (span.num_milliseconds() as f64 / 1000.0).min(1.0);
                lo - tol <= v && v <= hi + tol
            }
            _ => false,
        },
        // An id of another length is another kind of id.
        Kind::Uuid | Kind::Hex => recorded.len() == value.len(),
    }
}

/// Instants of two timestamp tokens and the tolerance of their difference (the coarser span).
fn pair(a: &str, b: &str, near: DateTime<Utc>) -> Option<(f64, f64, f64)> {
    let (x, sx) = instant(a, near)?;
    let (y, sy) = instant(b, near)?;
    let secs = |t: DateTime<Utc>| t.timestamp_millis() as f64 / 1000.0;
    let tol = (sx.max(sy).num_milliseconds() as f64 / 1000.0).max(0.001);
    Some((secs(x), secs(y), tol))
}

fn order_of(x: f64, y: f64) -> Order {
    if x < y {
        Order::Before
    } else if x > y {
        Order::After
    } else {
        Order::Same
    }
}

/// The relations that hold in one output (`text`, action `action`): each timestamp with a date
/// and the next one in reading order.
pub fn relations_in(action: usize, text: &str) -> Vec<Relation> {
    let near = Utc::now();
    let mut stamps: Vec<(Position, &str)> = Vec::new();
    for (line, l) in text.split('\n').enumerate() {
        for (token, t) in super::tokens::candidates(l).iter().enumerate() {
            let value = &l[t.start..t.end];
            if t.kind == Kind::Timestamp && value.len() >= 10 && instant(value, near).is_some() {
                stamps.push((Position { line, token }, value));
            }
        }
    }
    let mut relations: Vec<Relation> = stamps
        .windows(2)
        .filter_map(|w| {
            let (x, y, _) = pair(w[0].1, w[1].1, near)?;
            Some(Relation {
                action,
                a: w[0].0,
                b: w[1].0,
                order: order_of(x, y),
                diff: Some(round_ms(y - x)),
                sorted: false,
                from: None,
            })
        })
        .take(MAX_RELATIONS_PER_OUTPUT)
        .collect();
    relations.extend(sorted_list(action, &stamps, near));
    relations
}

/// The timestamps of a text with a date, in reading order, as instants.
fn dated_instants(text: &str, near: DateTime<Utc>) -> Vec<(Position, DateTime<Utc>)> {
    let mut out = Vec::new();
    for (line, l) in text.split('\n').enumerate() {
        for (token, t) in super::tokens::candidates(l).iter().enumerate() {
            let value = &l[t.start..t.end];
            if t.kind != Kind::Timestamp || value.len() < 10 {
                continue;
            }
            if let Some((at, _)) = instant(value, near) {
                out.push((Position { line, token }, at));
            }
        }
    }
    out
}

/// The order of the longest run of timestamps at the end of an output that all go one way (a
/// job history newest first, after a header's own time or not), when it has at least
/// [`SORTED_LIST_MIN`] and is not all one instant.
fn sorted_list(
    action: usize,
    stamps: &[(Position, &str)],
    near: DateTime<Utc>,
) -> Option<Relation> {
    let at: Vec<(Position, DateTime<Utc>)> = stamps
        .iter()
        .filter_map(|(p, v)| instant(v, near).map(|(t, _)| (*p, t)))
        .collect();
    let last = at.last()?;
    let ordered = |order: Order| {
        let start = at
            .windows(2)
            .rposition(|w| !in_order(order, w[0].1, w[1].1))
            .map_or(0, |i| i + 1);
        (at.len() - start, start)
    };
    let (order, (len, start)) = [Order::Before, Order::After]
        .into_iter()
        .map(|o| (o, ordered(o)))
        .max_by_key(|(_, (len, _))| *len)?;
    let all_same = at[start..].iter().all(|(_, t)| *t == at[start].1);
    (len >= SORTED_LIST_MIN && !all_same).then(|| Relation {
        action,
        a: at[start].0,
        b: last.0,
        order,
        diff: None,
        sorted: true,
        from: None,
    })
}

/// The relations across the outputs of one step (`texts`, one per action, as compared): the
/// last dated timestamp of each output that shows one, and the first of the next output that
/// does, their order and difference, as for two timestamps of one output.
pub fn relations_across(texts: &[Option<String>]) -> Vec<Relation> {
    let near = Utc::now();
    let dated = |text: &str| -> Vec<(Position, String)> {
        let mut out = Vec::new();
        for (line, l) in text.split('\n').enumerate() {
            for (token, t) in super::tokens::candidates(l).iter().enumerate() {
                let value = &l[t.start..t.end];
                if t.kind == Kind::Timestamp && value.len() >= 10 && instant(value, near).is_some()
                {
                    out.push((Position { line, token }, value.to_string()));
                }
            }
        }
        out
    };
    let mut out = Vec::new();
    let mut last: Option<(usize, Position, String)> = None;
    for (action, text) in texts.iter().enumerate() {
        let Some(text) = text else { continue };
        let stamps = dated(text);
        if let (Some((from, a, x)), Some((b, y))) = (&last, stamps.first()) {
            if let Some((x, y, _)) = pair(x, y, near) {
                out.push(Relation {
                    action,
                    a: *a,
                    b: *b,
                    order: order_of(x, y),
                    diff: Some(round_ms(y - x)),
                    sorted: false,
                    from: Some(*from),
                });
            }
        }
        if let Some((p, v)) = stamps.last() {
            last = Some((action, *p, v.clone()));
        }
    }
    out
}

fn in_order(order: Order, x: DateTime<Utc>, y: DateTime<Utc>) -> bool {
    match order {
        Order::Before => x <= y,
        Order::After => x >= y,
        Order::Same => x == y,
    }
}

/// Whether a list's order (`relation.sorted`) holds in `text`: every timestamp from the
/// relation's first one to the end of the output follows the one before it in its order.
pub fn sorted_holds(relation: &Relation, text: &str) -> bool {
    let at = dated_instants(text, Utc::now());
    let Some(start) = at.iter().position(|(p, _)| *p == relation.a) else {
        return false;
    };
    at[start..]
        .windows(2)
        .all(|w| in_order(relation.order, w[0].1, w[1].1))
}

fn round_ms(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Whether `relation` still holds between tokens `a` and `b`.
pub fn holds(relation: &Relation, a: &str, b: &str) -> bool {
    let Some((x, y, tol)) = pair(a, b, Utc::now()) else {
        return false;
    };
    if order_of(x, y) != relation.order {
        return false;
    }
    relation.diff.is_none_or(|d| ((y - x) - d).abs() < tol)
}

/// What the relations `before` (kept so far) become after a pass in which `now` held: only what
/// held in both; a difference that changed is dropped, the order kept while it holds.
pub fn intersect(before: &[Relation], now: &[Relation]) -> Vec<Relation> {
    now.iter()
        .filter_map(|r| {
            // A list's order is the same relation however long the list grew.
            let old = before.iter().find(|o| {
                o.action == r.action
                    && o.from == r.from
                    && o.a == r.a
                    && o.sorted == r.sorted
                    && (r.sorted || o.b == r.b)
            })?;
            if old.order != r.order {
                return None;
            }
            let diff = match (old.diff, r.diff) {
                (Some(x), Some(y)) if (x - y).abs() < 0.0015 => Some(x),
                _ => None,
            };
            Some(Relation { diff, ..r.clone() })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().expect("timestamp")
    }

    #[test]
    fn durations_read_in_seconds() {
        assert_eq!(duration_secs("12ms"), Some(0.012));
        assert_eq!(duration_secs("1m30s"), Some(90.0));
        assert_eq!(duration_secs("0.5 seconds"), Some(0.5));
        assert_eq!(duration_secs("4.5s"), Some(4.5));
        assert_eq!(duration_secs("3 parsecs"), None);
    }

    #[test]
    fn a_duration_passes_up_to_twice_the_largest_seen_and_a_second() {
        let d = Domain {
            kind: Kind::Duration,
            range: Some((0.012, 0.040)),
            tie: None,
            apart: Vec::new(),
            quiet: 0,
            widened: 0,
        };
        let now = (at("2026-11-25T09:00:00Z"), at("2026-11-25T09:00:30Z"));
        assert!(admits(&d, Kind::Duration, "12ms", "700ms", now));
        assert!(!admits(&d, Kind::Duration, "12ms", "4.5s", now));
        // A ttl seen at half an hour does not pass at a second.
        let ttl = Domain {
            range: Some((1799.0, 1800.0)),
            ..d
        };
        assert!(!admits(&ttl, Kind::Duration, "1800s", "1s", now));
        assert!(admits(&ttl, Kind::Duration, "1800s", "1750s", now));
    }

    #[test]
    fn a_timestamp_seen_during_a_slow_step_learns_the_offsets_it_may_have_had() {
        // The agent's step began at 09:00:00 and was recorded at 09:00:10; the entry it saw
        // expires at 09:05:00, five minutes after it looked (at the step's start, at once).
        let seen = |value, step_began| SeenValue {
            value,
            window: Some((at("2026-11-25T08:59:00Z"), at("2026-11-25T09:00:10Z"))),
            step_began,
        };
        let began = Some(at("2026-11-25T09:00:00Z"));
        let d = learn_domain(
            Kind::Timestamp,
            None,
            &seen("2026-11-25T09:05:00Z", began),
            &seen("2026-11-25T09:05:00Z", began),
        )
        .expect("a domain");
        assert_eq!(d.range, Some((290.0, 300.0)));
        // A replay looks at once: five minutes ahead passes, four does not.
        let now = (at("2026-11-26T10:00:00Z"), at("2026-11-26T10:00:00.2Z"));
        assert!(admits(&d, Kind::Timestamp, "", "2026-11-26T10:05:00Z", now));
        assert!(!admits(
            &d,
            Kind::Timestamp,
            "",
            "2026-11-26T10:04:00Z",
            now
        ));
        assert!(!admits(
            &d,
            Kind::Timestamp,
            "",
            "2026-11-26T10:00:00Z",
            now
        ));
        // Without the step's start, the recording's end alone.
        let d = learn_domain(
            Kind::Timestamp,
            None,
            &seen("2026-11-25T09:05:00Z", None),
            &seen("2026-11-25T09:05:00Z", None),
        )
        .expect("a domain");
        assert_eq!(d.range, Some((290.0, 290.0)));
    }

    #[test]
    fn a_timestamp_not_settled_after_ten_passes_is_no_longer_learned() {
        // A nightly job's time, a little further back every night the agent passes it.
        let night = |n: i64| {
            let start = at("2026-11-01T02:00:00Z") + Span::days(n);
            (start, start + Span::minutes(1))
        };
        let value = |n: i64| (night(n).0 - Span::hours(n + 1)).to_rfc3339();
        let mut domain: Option<Domain> = None;
        for n in 1..=SETTLES_WITHIN as i64 {
            let (before, after) = (value(n - 1), value(n));
            let d = learn_domain(
                Kind::Timestamp,
                domain.as_ref(),
                &SeenValue {
                    value: &before,
                    window: Some(night(n - 1)),
                    step_began: None,
                },
                &SeenValue {
                    value: &after,
                    window: Some(night(n)),
                    step_began: None,
                },
            )
            .expect("a domain");
            assert_eq!(d.widened, n as u32, "{d:?}");
            // Learned (and admitting what it learned) until the tenth pass.
            assert_eq!(d.unsettled(), n as u32 == SETTLES_WITHIN, "{d:?}");
            domain = Some(d);
        }
        let d = domain.expect("learned");
        let (lo, hi) = d.range.expect("a range");
        let inside = night(11).0 - Span::seconds(((lo + hi) / 2.0) as i64);
        assert!(!admits(
            &d,
            Kind::Timestamp,
            "x",
            &inside.to_rfc3339(),
            night(11)
        ));
        // The eleventh pass teaches it nothing: it stays as it was, compared exactly.
        let again = learn_domain(
            Kind::Timestamp,
            Some(&d),
            &SeenValue {
                value: &value(10),
                window: Some(night(10)),
                step_began: None,
            },
            &SeenValue {
                value: &value(30),
                window: Some(night(11)),
                step_began: None,
            },
        );
        assert_eq!(again.as_ref(), Some(&d));
        // A timestamp that settles (the same offset each pass) keeps its range, learned.
        let mut settled = d.clone();
        settled.widened = 1;
        let same = learn_domain(
            Kind::Timestamp,
            Some(&settled),
            &SeenValue {
                value: "2026-11-25T09:00:10Z",
                window: Some((at("2026-11-25T09:00:00Z"), at("2026-11-25T09:00:30Z"))),
                step_began: None,
            },
            &SeenValue {
                value: "2026-11-26T09:00:10Z",
                window: Some((at("2026-11-26T09:00:00Z"), at("2026-11-26T09:00:30Z"))),
                step_began: None,
            },
        )
        .expect("a domain");
        assert!(!same.unsettled());
    }

    #[test]
    fn a_timestamp_keeps_its_offset_from_the_runs_clock() {
        let w = (at("2026-11-25T09:00:00Z"), at("2026-11-25T09:01:00Z"));
        assert_eq!(offset("2026-11-25T09:00:30Z", w), Some(0.0));
        assert_eq!(offset("2026-11-25T08:00:00Z", w), Some(-3599.0));
        assert_eq!(offset("2026-11-25", w), Some(0.0));
        assert!(offset("1999-01-01T00:00:00Z", w).is_some_and(|o| o < -8e8));
        assert_eq!(offset("09:00:30", w), Some(0.0));
        let d = Domain {
            kind: Kind::Timestamp,
            range: Some((-7200.0, -3600.0)),
            tie: None,
            apart: Vec::new(),
            quiet: 0,
            widened: 0,
        };
        let later = (at("2026-11-26T09:00:00Z"), at("2026-11-26T09:01:00Z"));
        assert!(admits(
            &d,
            Kind::Timestamp,
            "x",
            "2026-11-26T07:30:00Z",
            later
        ));
        // Six hours old, and one from 1999: outside.
        assert!(!admits(
            &d,
            Kind::Timestamp,
            "x",
            "2026-11-26T03:00:00Z",
            later
        ));
        assert!(!admits(
            &d,
            Kind::Timestamp,
            "x",
            "1999-01-01T00:00:00Z",
            later
        ));
    }

    #[test]
    fn relations_hold_or_not() {
        let rel = relations_in(
            0,
            "issued 2026-11-25T09:00:00Z\nexpires 2026-11-25T10:00:00Z",
        );
        assert_eq!(rel.len(), 1);
        assert_eq!(rel[0].order, Order::Before);
        assert_eq!(rel[0].diff, Some(3600.0));
        assert!(holds(
            &rel[0],
            "2026-11-26T11:00:00Z",
            "2026-11-26T12:00:00Z"
        ));
        assert!(!holds(
            &rel[0],
            "2026-11-26T11:00:00Z",
            "2026-11-26T11:00:00Z"
        ));
        // A difference that changed between passes is dropped, the order kept.
        let other = relations_in(
            0,
            "issued 2026-11-25T09:00:00Z\nexpires 2026-11-25T09:30:00Z",
        );
        let kept = intersect(&rel, &other);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].diff, None);
        assert!(holds(
            &kept[0],
            "2026-11-26T11:00:00Z",
            "2026-11-26T11:00:05Z"
        ));
        assert!(!holds(
            &kept[0],
            "2026-11-26T11:00:00Z",
            "2026-11-26T11:00:00Z"
        ));
    }

    #[test]
    fn old_and_new_learned_positions_read_back() {
        let old: Vec<Learned> = serde_json::from_str("[[0, 1]]").expect("old");
        assert_eq!(old[0].domain, None);
        let new = Learned {
            at: Position { line: 2, token: 0 },
            domain: Some(Domain {
                kind: Kind::Uuid,
                range: None,
                tie: Some((0, 1, 0)),
                apart: Vec::new(),
                quiet: 3,
                widened: 0,
            }),
        };
        let text = serde_json::to_string(&new).expect("json");
        assert_eq!(text, r#"[2,0,{"kind":"uuid","tie":[0,1,0],"quiet":3}]"#);
        assert_eq!(serde_json::from_str::<Learned>(&text).expect("back"), new);
    }
}
