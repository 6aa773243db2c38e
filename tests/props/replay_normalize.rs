//! Properties of replay's normalisation and learned masks (see docs/replay.md, "What is masked"):
//!
//! - the session's own values (port, workspace, run id) and `[replay] ignore` matches are exact
//!   placeholders: two sessions' outputs that differ only there normalise to the same text;
//! - timestamps, UUIDs, durations and hex values are learned, never assumed: after any number of
//!   recorded observations (each pair an agent's pass teaching what varied), **no mask ever
//!   matches a changed value that was constant in every recorded observation**, nor a value the
//!   step's instruction names — while a change only in values that did vary replays;
//! - a changed character outside every value is always seen.
//!
//! Outputs are built from a template: literal pieces (no digits, so they cannot form a candidate
//! token or a port; no `-`, so no UUID) and values between spaces.

use bugatti::replay::domains::{Domain, Learned};
use bugatti::replay::masks::{candidates, compare, varied, MaskedDiff, Position, Rules};
use bugatti::replay::normalize::{Normalizer, Volatile};
use proptest::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Timestamp,
    Uuid,
    Duration,
    Hex,
}

#[derive(Debug, Clone)]
enum Piece {
    Literal(String),
    Port,
    Workdir,
    RunId,
    Ignored,
    /// A candidate token: its kind, and whether it may vary from one observation to the next.
    Candidate(Kind, bool),
}

/// Literal text: letters, punctuation, newlines, and the mask brackets themselves.
fn literal() -> impl Strategy<Value = String> {
    "[a-zA-Z ,.:;/_=<>(){}\n⟨⟩é\\[\\]]{0,12}"
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Timestamp),
        Just(Kind::Uuid),
        Just(Kind::Duration),
        Just(Kind::Hex)
    ]
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        4 => literal().prop_map(Piece::Literal),
        1 => Just(Piece::Port),
        1 => Just(Piece::Workdir),
        1 => Just(Piece::RunId),
        1 => Just(Piece::Ignored),
        3 => (kind(), any::<bool>()).prop_map(|(k, v)| Piece::Candidate(k, v)),
    ]
}

/// A value of `kind` drawn from `seed` (few distinct values, so that repeats happen too).
fn candidate(kind: Kind, seed: u64) -> String {
    let n = seed % 7;
    match kind {
        Kind::Timestamp => format!(
            "20{:02}-0{}-1{}T0{}:3{}:1{}Z",
            20 + n,
            1 + n % 9,
            n,
            n,
            n,
            n
        ),
        Kind::Uuid => uuid::Uuid::from_u128(u128::from(n) * 0x1111_2222_3333).to_string(),
        Kind::Duration => format!("{}ms", 10 + n * 7),
        Kind::Hex => format!("0x{:x}", 0xbeef00 + n),
    }
}

/// One session's own values.
#[derive(Debug, Clone)]
struct Session {
    port: u16,
    workdir: String,
    run_id: String,
    order: u32,
}

fn session() -> impl Strategy<Value = Session> {
    (
        10_000u16..65_535,
        "[a-z]{1,6}[0-9]{1,4}",
        "[0-9]{8}-[0-9]{6}-[a-z0-9]{4}",
        0u32..1_000_000,
    )
        .prop_map(|(port, dir, run_id, order)| Session {
            port,
            workdir: format!("/tmp/bugatti-ws/{dir}"),
            run_id,
            order,
        })
}

fn normalizer(s: &Session) -> Normalizer {
    Normalizer::new(
        [
            Volatile::new("APP_PORT", s.port.to_string()),
            Volatile::new("BUGATTI_WORKDIR", s.workdir.clone()),
            Volatile::new("BUGATTI_RUN_ID", s.run_id.clone()),
        ],
        &["order #[0-9]+".to_string()],
    )
    .expect("valid ignore pattern")
}

/// The output `template` prints in `session`, its candidates drawn from `seeds` (one per piece),
/// normalised as a replay compares it.
fn observe(template: &[Piece], session: &Session, seeds: &[u64]) -> String {
    let raw: String = template
        .iter()
        .zip(seeds)
        .map(|(p, seed)| match p {
            Piece::Literal(s) => s.clone(),
            Piece::Port => format!(" {} ", session.port),
            Piece::Workdir => format!(" {} ", session.workdir),
            Piece::RunId => format!(" {} ", session.run_id),
            Piece::Ignored => format!(" order #{} ", session.order),
            Piece::Candidate(kind, _) => format!(" {} ", candidate(*kind, *seed)),
        })
        .collect();
    normalizer(session).normalize(&raw)
}

/// Seeds for one observation: a constant candidate keeps `base`; one that may vary draws anew.
fn seeds_of(template: &[Piece], base: &[u64], fresh: &[u64]) -> Vec<u64> {
    template
        .iter()
        .enumerate()
        .map(|(i, p)| match p {
            Piece::Candidate(_, true) => fresh[i],
            _ => base[i],
        })
        .collect()
}

fn rules<'a>(volatile: &'a [Learned], instruction: &'a str) -> Rules<'a> {
    let now = chrono::Utc::now();
    // No "current" shortcut here: the properties are about learned masks.
    Rules {
        volatile,
        ..Rules::plain(instruction, None, (now, now))
    }
}

/// `positions` of `text` learned with domains wide enough for every value [`candidate`] draws:
/// the properties below are about where masks apply (the bounds have their own tests).
fn wide(positions: &[Position], text: &str) -> Vec<Learned> {
    let lines: Vec<&str> = text.split('\n').collect();
    positions
        .iter()
        .filter_map(|p| {
            let kind = candidates(lines.get(p.line)?).get(p.token)?.kind;
            let range = match kind {
                bugatti::replay::masks::Kind::Duration => Some((0.001, 1.0)),
                bugatti::replay::masks::Kind::Timestamp => Some((-1e11, 1e11)),
                _ => None,
            };
            Some(Learned {
                at: *p,
                domain: Some(Domain {
                    kind,
                    range,
                    tie: None,
                    apart: Vec::new(),
                    quiet: 0,
                    widened: 0,
                }),
            })
        })
        .collect()
}

/// What passes over `observations` (each next one an agent's pass) teach.
fn learn(observations: &[String], instruction: &str) -> Vec<Position> {
    let mut learned: Vec<Position> = observations
        .windows(2)
        .filter_map(|w| varied(&w[0], &w[1], instruction))
        .flatten()
        .collect();
    learned.sort();
    learned.dedup();
    learned
}

const PIECES: usize = 10;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    #[test]
    fn the_sessions_own_values_are_exact_placeholders(
        template in prop::collection::vec(piece(), 0..PIECES),
        a in session(),
        b in session(),
        seeds in prop::collection::vec(any::<u64>(), PIECES),
    ) {
        let (oa, ob) = (observe(&template, &a, &seeds), observe(&template, &b, &seeds));
        prop_assert_eq!(&oa, &ob);
        for value in [a.port.to_string(), a.workdir.clone(), a.run_id.clone()] {
            prop_assert!(!oa.contains(&value), "{value} left in {oa:?}");
        }
        prop_assert_eq!(compare(&oa, &ob, &rules(&[], "")), MaskedDiff::Same);
    }

    #[test]
    fn no_mask_ever_matches_a_changed_value_that_was_constant_in_every_observation(
        template in prop::collection::vec(piece(), 1..PIECES),
        sessions in prop::collection::vec(session(), 2..5),
        base in prop::collection::vec(any::<u64>(), PIECES),
        fresh in prop::collection::vec(prop::collection::vec(any::<u64>(), PIECES), 5),
        changed in any::<prop::sample::Index>(),
        new_seed in any::<u64>(),
    ) {
        // Recorded observations, each in its own session.
        let seeds: Vec<Vec<u64>> = sessions.iter().enumerate()
            .map(|(i, _)| seeds_of(&template, &base, &fresh[i]))
            .collect();
        let observations: Vec<String> = sessions.iter().zip(&seeds)
            .map(|(s, sd)| observe(&template, s, sd))
            .collect();
        let learned = learn(&observations, "");
        let last = observations.last().expect("observations");
        // The replay: a new session, the varying candidates drawn anew.
        let replay_session = sessions[0].clone();
        let mut now = seeds_of(&template, &base, &fresh[4]);
        // A change only where values did vary across the observations replays...
        let candidates: Vec<usize> = template.iter().enumerate()
            .filter_map(|(i, p)| matches!(p, Piece::Candidate(..)).then_some(i))
            .collect();
        let constant: Vec<usize> = candidates.iter().copied()
            .filter(|i| seeds.iter().all(|sd| candidate_of(&template, *i, sd) == candidate_of(&template, *i, &seeds[0])))
            .collect();
        for &i in &constant {
            now[i] = seeds[0][i];
        }
        let seen = observe(&template, &replay_session, &now);
        let unchanged_constants = compare(last, &seen, &rules(&wide(&learned, last), ""));
        prop_assert!(
            unchanged_constants != MaskedDiff::Hard,
            "only learned or candidate values changed: {last:?} vs {seen:?}"
        );
        // What varied in the observations and varies again is masked; the rest is a soft drift
        // at most (for the agent to judge), and never where a constant sat.
        if let MaskedDiff::Soft(positions) = &unchanged_constants {
            for p in positions {
                prop_assert!(!learned.contains(p), "{p:?} was learned yet not masked");
            }
        }
        // ...while a constant value that changes is never matched.
        prop_assume!(!constant.is_empty());
        let i = constant[changed.index(constant.len())];
        let before = candidate_of(&template, i, &seeds[0]);
        let mut broken = now.clone();
        broken[i] = new_seed;
        prop_assume!(candidate_of(&template, i, &broken) != before);
        let seen = observe(&template, &replay_session, &broken);
        prop_assert_ne!(
            compare(last, &seen, &rules(&wide(&learned, last), "")),
            MaskedDiff::Same,
            "a constant {:?} → {:?} was masked", before, candidate_of(&template, i, &broken)
        );
    }

    #[test]
    fn a_value_the_instruction_names_is_never_masked(
        template in prop::collection::vec(piece(), 1..PIECES),
        s in session(),
        a in prop::collection::vec(any::<u64>(), PIECES),
        b in prop::collection::vec(any::<u64>(), PIECES),
        named in any::<prop::sample::Index>(),
    ) {
        let candidates: Vec<usize> = template.iter().enumerate()
            .filter_map(|(i, p)| matches!(p, Piece::Candidate(..)).then_some(i))
            .collect();
        prop_assume!(!candidates.is_empty());
        let i = candidates[named.index(candidates.len())];
        let value = candidate_of(&template, i, &a);
        prop_assume!(candidate_of(&template, i, &b) != value);
        let instruction = format!("Check the value is {value}.");
        let (oa, ob) = (observe(&template, &s, &a), observe(&template, &s, &b));
        // Even if every position were learned, the named value is not passed over.
        let every: Vec<Position> = (0..oa.split('\n').count())
            .flat_map(|line| (0..PIECES).map(move |token| Position { line, token }))
            .collect();
        prop_assert_eq!(compare(&oa, &ob, &rules(&wide(&every, &oa), &instruction)), MaskedDiff::Hard);
        // Nor is it ever learned.
        let learned = learn(&[oa.clone(), ob.clone()], &instruction);
        prop_assert_ne!(compare(&oa, &ob, &rules(&wide(&learned, &oa), &instruction)), MaskedDiff::Same);
    }

    #[test]
    fn one_changed_character_outside_every_value_is_seen(
        template in prop::collection::vec(piece(), 1..PIECES),
        s in session(),
        seeds in prop::collection::vec(any::<u64>(), PIECES),
        at in any::<prop::sample::Index>(),
        with in "[a-zA-Z⟨⟩]",
    ) {
        let mut changed = template.clone();
        let literals: Vec<usize> = changed.iter().enumerate()
            .filter_map(|(i, p)| matches!(p, Piece::Literal(s) if !s.is_empty()).then_some(i))
            .collect();
        prop_assume!(!literals.is_empty());
        let i = literals[at.index(literals.len())];
        if let Piece::Literal(text) = &mut changed[i] {
            let first = text.chars().next().unwrap_or(' ');
            let with = with.chars().next().unwrap_or('x');
            prop_assume!(first != with);
            *text = format!("{with}{}", &text[first.len_utf8()..]);
        }
        let (a, b) = (observe(&template, &s, &seeds), observe(&changed, &s, &seeds));
        let every: Vec<Position> = (0..a.split('\n').count())
            .flat_map(|line| (0..PIECES).map(move |token| Position { line, token }))
            .collect();
        prop_assert_eq!(compare(&a, &b, &rules(&wide(&every, &a), "")), MaskedDiff::Hard);
    }

    #[test]
    fn any_text_normalises_and_compares_without_panic(x in "\\PC{0,64}", y in "\\PC{0,64}", s in session()) {
        let n = normalizer(&s);
        let (a, b) = (n.normalize(&x), n.normalize(&y));
        let _ = compare(&a, &b, &rules(&[], &x));
        let _ = varied(&a, &b, &y);
        prop_assert_eq!(compare(&a, &a, &rules(&[], "")), MaskedDiff::Same);
    }
}

/// The value piece `i` prints with `seeds` (empty for a piece that is not a candidate).
fn candidate_of(template: &[Piece], i: usize, seeds: &[u64]) -> String {
    match template.get(i) {
        Some(Piece::Candidate(kind, _)) => candidate(*kind, seeds[i]),
        _ => String::new(),
    }
}
