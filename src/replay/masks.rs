//! Learned masks (see docs/replay.md, "What is masked"): which differences between a recorded
//! output and a replayed one a replay may pass over.
//!
//! Timestamps, UUIDs, durations and hex values are *candidates*, never masked up front. Two
//! outputs (both already normalised: the session's values as placeholders, `[replay] ignore`
//! applied) are compared line by line; where they differ only inside candidate tokens, the
//! difference is *soft*: the step goes to the agent, and only if it passes are those token
//! positions (line, token) learned as volatile. Later replays pass over exactly those positions.
//! Anything else that differs is a *hard* drift. One shortcut skips the learning: `[replay]
//! ignore`. A timestamp that is "current" (inside the run) is learned like any other value, its
//! offset from the run's clock a range (an entry that must expire in five minutes and now
//! expires at once, or in four, is out of it). A value that appears in the step's instruction is
//! never passed over.

use chrono::{DateTime, Utc};
use regex::Regex;
use std::sync::LazyLock;

use super::domains::admits;
pub use super::domains::{Learned, Relation};
pub use super::tokens::{candidates, Kind, Position, Token};

/// What a replay knows when it compares: the positions learned for this output (each with its
/// domain), the step's instruction, the runs' windows (a timestamp's offset is from them), and what
/// ties and relations need (the step's earlier outputs as seen now, this output's relations).
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    pub volatile: &'a [Learned],
    /// The instruction as sent: a value appearing in it is never passed over.
    pub instruction: &'a str,
    /// When the recording's run ran (start, end); `None` for a recording that does not say.
    pub recorded: Option<(DateTime<Utc>, DateTime<Utc>)>,
    /// When this replay runs (its session's start, now).
    pub now: (DateTime<Utc>, DateTime<Utc>),
    /// This output's action in its step.
    pub action: usize,
    /// The step's earlier outputs as seen now (normalised; `None` where not compared): a learned
    /// id tied to one of their tokens must still equal it.
    pub earlier: &'a [Option<String>],
    /// The relations between the step's timestamps that held in every pass (those of other
    /// actions are left alone).
    pub relations: &'a [Relation],
}

impl<'a> Rules<'a> {
    /// Rules with nothing learned and no relations, for output `action` of a step.
    pub fn plain(
        instruction: &'a str,
        recorded: Option<(DateTime<Utc>, DateTime<Utc>)>,
        now: (DateTime<Utc>, DateTime<Utc>),
    ) -> Self {
        Self {
            volatile: &[],
            instruction,
            recorded,
            now,
            action: 0,
            earlier: &[],
            relations: &[],
        }
    }
}

/// How two normalised outputs compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaskedDiff {
    /// Equal, or different only where a mask allows.
    Same,
    /// Different only inside candidate tokens not learned yet (or outside their learned domain,
    /// or breaking a relation or a tie): these positions.
    Soft(Vec<Position>),
    /// Different elsewhere (or in a value the instruction names).
    Hard,
}

/// Compares `expected` (the recording's) with `seen` (the replay's) under `rules`.
pub fn compare(expected: &str, seen: &str, rules: &Rules<'_>) -> MaskedDiff {
    check(expected, seen, rules).0
}

/// [`compare`], and the learned positions whose value differed from the recording's inside
/// their domain (what "seen varying" means for their expiry).
pub fn check(expected: &str, seen: &str, rules: &Rules<'_>) -> (MaskedDiff, Vec<Position>) {
    let mut soft = Vec::new();
    let mut varied = Vec::new();
    if expected != seen {
        let Some(differing) = differing_tokens(expected, seen) else {
            return (MaskedDiff::Hard, varied);
        };
        for d in differing {
            if named_in(rules.instruction, d.expected)
                || named_in(rules.instruction, d.seen)
                || !pins_agree(rules.instruction, d.expected, d.seen)
            {
                return (MaskedDiff::Hard, Vec::new());
            }
            let domain = rules
                .volatile
                .iter()
                .find(|l| l.at == d.position)
                .and_then(|l| l.domain.as_ref());
            if domain.is_some_and(|dom| admits(dom, d.kind, d.expected, d.seen, rules.now)) {
                varied.push(d.position);
                continue;
            }
            soft.push(d.position);
        }
        // The timestamps' order and differences, checked whether or not anything was learned:
        // two timestamps inside their learned ranges still have to keep theirs.
        for r in rules
            .relations
            .iter()
            .filter(|r| r.action == rules.action && r.from.is_none())
        {
            let holds = match (token_at(seen, r.a), token_at(seen, r.b)) {
                _ if r.sorted => super::domains::sorted_holds(r, seen),
                (Some(a), Some(b)) => super::domains::holds(r, a, b),
                _ => false,
            };
            if !holds {
                soft.extend([r.a, r.b]);
            }
        }
    }
    // A timestamp's relation to one of an earlier output (that output may have changed where
    // this one did not): checked whether or not this output differs.
    for r in rules
        .relations
        .iter()
        .filter(|r| r.action == rules.action && r.from.is_some())
    {
        let a = r.from.and_then(|k| token_of(rules, seen, k, r.a));
        if !matches!((a, token_at(seen, r.b)), (Some(a), Some(b)) if super::domains::holds(r, a, b))
        {
            soft.push(r.b);
        }
    }
    // A tied id must equal its token as seen now, even where it did not change itself (the
    // user id changed and the owner id did not: broken).
    for l in rules.volatile {
        let Some((action, line, token)) = l.domain.as_ref().and_then(|d| d.tie) else {
            continue;
        };
        let other = token_of(rules, seen, action, Position { line, token });
        let here = token_at(seen, l.at);
        if here.is_none() || here != other {
            soft.push(l.at);
        }
    }
    // An id kept apart from another must still differ from it (a session id that did not
    // rotate on elevation: broken).
    for l in rules.volatile {
        let Some(d) = l.domain.as_ref() else { continue };
        let here = token_at(seen, l.at);
        let equal = d.apart.iter().any(|&(action, line, token)| {
            let other = token_of(rules, seen, action, Position { line, token });
            here.is_some() && here == other
        });
        if equal {
            soft.push(l.at);
        }
    }
    soft.sort();
    soft.dedup();
    if soft.is_empty() {
        (MaskedDiff::Same, varied)
    } else {
        (MaskedDiff::Soft(soft), Vec::new())
    }
}

/// The token at `there` of `action`'s output as seen now: this step's own output for the action
/// being compared, else the earlier action's recorded-today output (ties and "kept apart" both
/// name a token of either).
fn token_of<'t>(
    rules: &'t Rules<'_>,
    seen: &'t str,
    action: usize,
    there: Position,
) -> Option<&'t str> {
    if action == rules.action {
        token_at(seen, there)
    } else {
        rules
            .earlier
            .get(action)
            .and_then(Option::as_deref)
            .and_then(|text| token_at(text, there))
    }
}

/// The text of the candidate token at `p` of `text`.
pub fn token_at(text: &str, p: Position) -> Option<&str> {
    let line = text.split('\n').nth(p.line)?;
    candidates(line).get(p.token).map(|t| &line[t.start..t.end])
}

/// The positions at which two observations of one output differ inside candidate tokens, when
/// they differ nowhere else (`None` otherwise), leaving out any value `instruction` names: what
/// an agent's pass over both may teach.
pub fn varied(a: &str, b: &str, instruction: &str) -> Option<Vec<Position>> {
    let differing = differing_tokens(a, b)?;
    Some(
        differing
            .into_iter()
            .filter(|d| {
                !named_in(instruction, d.expected)
                    && !named_in(instruction, d.seen)
                    && pins_agree(instruction, d.expected, d.seen)
            })
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

/// The values an instruction names that may sit inside a longer token: each of its candidate
/// tokens, and each word holding a digit that is at least four characters long or has a
/// separator in it (`2026-12-31`, `09:00`, `v1.2`, `0xdeadbeef`; not the `10` of "part 10",
/// which would pin every tenth minute).
fn instruction_values(instruction: &str) -> Vec<&str> {
    static WORD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"[0-9A-Za-z]*[0-9][0-9A-Za-z]*(?:[-:./][0-9A-Za-z]+)*")
            .unwrap_or_else(|e| panic!("built-in pattern: {e}"))
    });
    let mut values: Vec<&str> = candidates(instruction)
        .iter()
        .map(|t| &instruction[t.start..t.end])
        .chain(WORD.find_iter(instruction).map(|m| m.as_str()))
        .filter(|v| v.len() >= 4 || v.contains(['-', ':', '.', '/']))
        .collect();
    values.sort_unstable();
    values.dedup();
    values
}

/// The spans of `text` (a token, or a match of an `ignore` regex) that are a value the
/// instruction names: whole, or bounded by a separator (`2026-12-31` in
/// `2026-12-31T09:00:00.04Z`; `T` and `Z` next to a digit count as separators).
pub fn pinned(text: &str, instruction: &str) -> Vec<(usize, usize)> {
    let sep = |c: Option<char>, inner: Option<char>| match c {
        None => true,
        Some(c) => {
            !c.is_alphanumeric()
                || (matches!(c, 'T' | 'Z') && inner.is_some_and(|i| i.is_ascii_digit()))
        }
    };
    let mut spans = Vec::new();
    for value in instruction_values(instruction) {
        for (at, _) in text.match_indices(value) {
            let end = at + value.len();
            if sep(text[..at].chars().next_back(), value.chars().next())
                && sep(text[end..].chars().next(), value.chars().next_back())
            {
                spans.push((at, end));
            }
        }
    }
    spans.sort_unstable();
    spans
}

/// Two tokens agree on every part of either that the instruction names.
fn pins_agree(instruction: &str, a: &str, b: &str) -> bool {
    pinned(a, instruction)
        .into_iter()
        .chain(pinned(b, instruction))
        .all(|(s, e)| matches!((a.get(s..e), b.get(s..e)), (Some(x), Some(y)) if x == y))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().expect("timestamp")
    }

    fn rules<'a>(volatile: &'a [Learned], instruction: &'a str) -> Rules<'a> {
        Rules {
            volatile,
            ..Rules::plain(
                instruction,
                Some((at("2026-11-24T12:00:00Z"), at("2026-11-24T12:01:00Z"))),
                (at("2026-11-25T09:00:00Z"), at("2026-11-25T09:00:30Z")),
            )
        }
    }

    /// `p` learned as a duration seen from 1 ms to 100 s, or as a timestamp seen at any offset
    /// up to ten years.
    fn wide(p: Position, kind: Kind) -> Learned {
        let range = match kind {
            Kind::Duration => Some((0.001, 100.0)),
            Kind::Timestamp => Some((-3e8, 3e8)),
            _ => None,
        };
        Learned {
            at: p,
            domain: Some(super::super::domains::Domain {
                kind,
                range,
                tie: None,
                apart: Vec::new(),
                quiet: 0,
                widened: 0,
            }),
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
        assert_eq!(
            compare(a, b, &rules(&[wide(p, Kind::Duration)], "")),
            MaskedDiff::Same
        );
        // A learned position on another line masks nothing here.
        let other = wide(Position { line: 0, token: 0 }, Kind::Duration);
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
        let p = [wide(Position { line: 0, token: 0 }, Kind::Timestamp)];
        let r = rules(&p, "Check the due date is 2026-12-31.");
        assert_eq!(
            compare("due 2026-12-31", "due 2027-01-15", &r),
            MaskedDiff::Hard
        );
        // Inside a longer token too: the date part is exact, the rest may vary as learned.
        assert_eq!(
            compare(
                "due 2026-12-31T09:00:00.04Z",
                "due 2027-01-15T09:00:00.04Z",
                &r
            ),
            MaskedDiff::Hard
        );
        assert_eq!(
            compare(
                "due 2026-12-31T09:00:00.04Z",
                "due 2026-12-31T11:30:00Z",
                &r
            ),
            MaskedDiff::Same
        );
        assert_eq!(
            varied(
                "due 2026-12-31T09:00:00Z",
                "due 2027-01-15T09:00:00Z",
                "Check the due date is 2026-12-31."
            ),
            Some(vec![])
        );
        let d = [wide(Position { line: 0, token: 0 }, Kind::Duration)];
        let r = rules(&d, "Check timeout=5s.");
        assert_eq!(compare("timeout=5s", "timeout=0s", &r), MaskedDiff::Hard);
        assert_eq!(
            varied("timeout=5s", "timeout=0s", "Check timeout=5s."),
            Some(vec![])
        );
    }

    #[test]
    fn what_an_instruction_pins_inside_a_token() {
        let i = "Check the due date is 2026-12-31, part 10, at 09:00.";
        assert_eq!(pinned("2026-12-31T09:00:00.04Z", i), [(0, 10), (11, 16)]);
        // `10` is too short to pin inside a token; a date elsewhere is not the named one.
        assert!(pinned("2026-11-10T10:10:10Z", i).is_empty());
        assert!(pinned("x2026-12-31", i).is_empty());
    }

    #[test]
    fn a_learned_value_outside_its_domain_is_soft() {
        let p = Position { line: 0, token: 0 };
        let d = [Learned {
            at: p,
            domain: Some(super::super::domains::Domain {
                kind: Kind::Duration,
                range: Some((0.012, 0.04)),
                tie: None,
                apart: Vec::new(),
                quiet: 0,
                widened: 0,
            }),
        }];
        assert_eq!(
            check("took 12ms", "took 30ms", &rules(&d, "")),
            (MaskedDiff::Same, vec![p])
        );
        assert_eq!(
            compare("took 12ms", "took 4.5s", &rules(&d, "")),
            MaskedDiff::Soft(vec![p])
        );
        // A position learned by an older supervisor (no domain) masks nothing.
        let bare = [Learned {
            at: p,
            domain: None,
        }];
        assert_eq!(
            compare("took 12ms", "took 30ms", &rules(&bare, "")),
            MaskedDiff::Soft(vec![p])
        );
    }

    #[test]
    fn an_id_kept_apart_must_still_differ() {
        // The admin session (action 1) never equalled the login session (action 0).
        let admin = Position { line: 0, token: 0 };
        let apart = [Learned {
            at: admin,
            domain: Some(super::super::domains::Domain {
                kind: Kind::Uuid,
                range: None,
                tie: None,
                apart: vec![(0, 0, 0)],
                quiet: 0,
                widened: 0,
            }),
        }];
        let login = |id: &str| [Some(format!("login session={id}"))];
        let (a, b) = (
            "6f1c2b9a-3d4e-4f50-8a61-7b8c9d0e1f23",
            "11111111-3d4e-4f50-8a61-7b8c9d0e1f23",
        );
        let recorded = "admin session=22222222-3d4e-4f50-8a61-7b8c9d0e1f23";
        let earlier = login(a);
        let r = Rules {
            action: 1,
            earlier: &earlier,
            ..rules(&apart, "")
        };
        assert_eq!(
            compare(recorded, &format!("admin session={b}"), &r),
            MaskedDiff::Same
        );
        assert_eq!(
            compare(recorded, &format!("admin session={a}"), &r),
            MaskedDiff::Soft(vec![admin])
        );
    }

    #[test]
    fn a_tied_id_must_equal_its_token() {
        let owner = Position { line: 0, token: 0 };
        let tied = [Learned {
            at: owner,
            domain: Some(super::super::domains::Domain {
                kind: Kind::Uuid,
                range: None,
                tie: Some((0, 0, 0)),
                apart: Vec::new(),
                quiet: 0,
                widened: 0,
            }),
        }];
        let user = "user 6f1c2b9a-3d4e-4f50-8a61-7b8c9d0e1f23".to_string();
        let earlier = [Some(user)];
        let r = Rules {
            action: 1,
            earlier: &earlier,
            ..rules(&tied, "")
        };
        let recorded = "owner 11111111-3d4e-4f50-8a61-7b8c9d0e1f23";
        assert_eq!(
            compare(recorded, "owner 6f1c2b9a-3d4e-4f50-8a61-7b8c9d0e1f23", &r),
            MaskedDiff::Same
        );
        assert_eq!(
            compare(recorded, "owner 00000000-3d4e-4f50-8a61-7b8c9d0e1f23", &r),
            MaskedDiff::Soft(vec![owner])
        );
        // Unchanged itself, but its user changed: broken too.
        let earlier = [Some(
            "user 22222222-3d4e-4f50-8a61-7b8c9d0e1f23".to_string(),
        )];
        let r = Rules {
            earlier: &earlier,
            ..r
        };
        assert_eq!(
            compare(recorded, recorded, &r),
            MaskedDiff::Soft(vec![owner])
        );
    }

    #[test]
    fn two_learned_timestamps_keep_their_relation() {
        let recorded = "issued 2026-11-24T12:00:10Z expires 2026-11-24T12:05:10Z";
        let relations = super::super::domains::relations_in(0, recorded);
        let (a, b) = (
            Position { line: 0, token: 0 },
            Position { line: 0, token: 1 },
        );
        let learned = [wide(a, Kind::Timestamp), wide(b, Kind::Timestamp)];
        let r = Rules {
            relations: &relations,
            ..rules(&learned, "")
        };
        assert_eq!(
            compare(
                recorded,
                "issued 2026-11-25T09:00:10Z expires 2026-11-25T09:05:10Z",
                &r
            ),
            MaskedDiff::Same
        );
        assert_eq!(
            compare(
                recorded,
                "issued 2026-11-25T09:00:10Z expires 2026-11-25T09:00:10Z",
                &r
            ),
            MaskedDiff::Soft(vec![a, b])
        );
    }

    #[test]
    fn a_timestamp_keeps_its_order_to_one_of_an_earlier_output() {
        // Action 1 placed an order at 09:00, action 2 shipped it at 09:03: both learned wide.
        let placed = "order placed 2026-11-25T09:00:00Z".to_string();
        let shipped = "order shipped 2026-11-25T09:03:00Z";
        let relations: Vec<Relation> =
            super::super::domains::relations_across(&[Some(placed.clone()), Some(shipped.into())])
                .into_iter()
                .map(|r| Relation { diff: None, ..r })
                .collect();
        assert_eq!(relations.len(), 1, "{relations:?}");
        assert_eq!((relations[0].action, relations[0].from), (1, Some(0)));
        let p = Position { line: 0, token: 0 };
        let learned = [wide(p, Kind::Timestamp)];
        let earlier = [Some(placed)];
        let r = Rules {
            relations: &relations,
            action: 1,
            earlier: &earlier,
            ..rules(&learned, "")
        };
        assert_eq!(
            compare(shipped, "order shipped 2026-11-25T09:04:00Z", &r),
            MaskedDiff::Same
        );
        // Shipped before it was placed: inside its learned range, against the order.
        assert_eq!(
            compare(shipped, "order shipped 2026-11-25T08:59:00Z", &r),
            MaskedDiff::Soft(vec![p])
        );
        // The earlier output changed (placed after today's shipping), this one did not.
        let later = [Some("order placed 2026-11-25T09:05:00Z".to_string())];
        let r = Rules {
            earlier: &later,
            ..r
        };
        assert_eq!(compare(shipped, shipped, &r), MaskedDiff::Soft(vec![p]));
    }

    #[test]
    fn a_long_lists_order_is_one_relation_whatever_its_length() {
        // A job history of 40 entries, newest first; every time learned over a wide range.
        let history = |minutes: &[u32]| -> String {
            minutes
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    format!(
                        "job {i} finished 2026-11-24T{:02}:{:02}:00Z",
                        11 - m / 60,
                        59 - m % 60
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let healthy: Vec<u32> = (0..40).map(|i| i * 2).collect();
        let recorded = history(&healthy);
        // As kept after passes with other spacings: each pair's order, no difference.
        let relations: Vec<Relation> = super::super::domains::relations_in(0, &recorded)
            .into_iter()
            .map(|r| Relation { diff: None, ..r })
            .collect();
        let learned: Vec<Learned> = (0..40)
            .map(|line| wide(Position { line, token: 0 }, Kind::Timestamp))
            .collect();
        let r = Rules {
            relations: &relations,
            ..rules(&learned, "")
        };
        // Other times, the same order: the same.
        let later: Vec<u32> = (0..40).map(|i| i * 3 + 1).collect();
        assert_eq!(compare(&recorded, &history(&later), &r), MaskedDiff::Same);
        // Entries 37 and 38 out of order, far past the first 32 pairs: the list's order broke.
        let mut swapped = later.clone();
        swapped.swap(37, 38);
        assert!(
            matches!(
                compare(&recorded, &history(&swapped), &r),
                MaskedDiff::Soft(_)
            ),
            "{relations:?}"
        );
    }

    #[test]
    fn a_current_timestamp_is_learned_like_any_other_value() {
        // Current when recorded and current now: no longer the same without learning. An entry
        // that expired at once where it expired five minutes ahead is not "current" enough.
        let r = rules(&[], "Check the clock is current.");
        let now = Position { line: 0, token: 0 };
        assert_eq!(
            compare("now 2026-11-24T12:00:30Z", "now 2026-11-25T09:00:10Z", &r),
            MaskedDiff::Soft(vec![now])
        );
        assert_eq!(
            compare("now 2026-11-24T12:00:30Z", "now 1999-01-01T00:00:00Z", &r),
            MaskedDiff::Soft(vec![now])
        );
        assert_eq!(
            compare(
                "expires 2026-11-24T12:06:00Z",
                "expires 2026-11-25T09:00:20Z",
                &r
            ),
            MaskedDiff::Soft(vec![now])
        );
        // Learned inside the run (offset 0): a current one passes, one five minutes ahead not.
        let learned = [Learned {
            at: now,
            domain: Some(super::super::domains::Domain {
                kind: Kind::Timestamp,
                range: Some((0.0, 0.0)),
                tie: None,
                apart: Vec::new(),
                quiet: 0,
                widened: 0,
            }),
        }];
        let r = rules(&learned, "");
        assert_eq!(
            compare("now 2026-11-24T12:00:30Z", "now 2026-11-25T09:00:10Z", &r),
            MaskedDiff::Same
        );
        assert_eq!(
            compare("now 2026-11-24T12:00:30Z", "now 2026-11-25T09:05:30Z", &r),
            MaskedDiff::Soft(vec![now])
        );
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
