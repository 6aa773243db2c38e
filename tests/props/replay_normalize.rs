//! Properties of replay's normalisation (SPEC §10): every volatile value it claims to mask is
//! masked (two outputs that differ only there normalise to the same text, and no such value is
//! left in it), and two outputs that differ anywhere else never normalise to the same text.
//!
//! Outputs are built from a template: literal pieces (no digits, so they cannot themselves form a
//! timestamp, duration, port or hex address; no `-`, so no UUID) and volatile values between
//! spaces. The normalised text must be exactly the template with each value as its mask and each
//! `⟨` of a literal doubled: an encoding that can be decoded back to the template, which is what
//! makes two different templates normalise differently.

use bugatti::replay::normalize::{Normalizer, Volatile};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Piece {
    Literal(String),
    Port,
    Workdir,
    RunId,
    Timestamp,
    Uuid,
    Duration,
    Hex,
    Ignored,
}

/// Literal text: letters, punctuation, newlines, and the mask brackets themselves.
fn literal() -> impl Strategy<Value = String> {
    "[a-zA-Z ,.:;/_=<>(){}\n⟨⟩é\\[\\]]{0,12}"
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        4 => literal().prop_map(Piece::Literal),
        1 => Just(Piece::Port),
        1 => Just(Piece::Workdir),
        1 => Just(Piece::RunId),
        1 => Just(Piece::Timestamp),
        1 => Just(Piece::Uuid),
        1 => Just(Piece::Duration),
        1 => Just(Piece::Hex),
        1 => Just(Piece::Ignored),
    ]
}

/// One session's volatile values, and the generic ones it happened to print.
#[derive(Debug, Clone)]
struct Values {
    port: u16,
    workdir: String,
    run_id: String,
    timestamp: String,
    uuid: String,
    duration: String,
    hex: String,
    order: u32,
}

fn values() -> impl Strategy<Value = Values> {
    (
        1024u16..65535,
        "[a-z]{1,6}[0-9]{1,4}",
        "[0-9]{8}-[0-9]{6}-[a-z0-9]{4}",
        (
            2000u32..2100,
            1u32..13,
            1u32..29,
            0u32..24,
            0u32..60,
            0u32..60,
            prop::option::of(0u32..1000),
            prop_oneof![
                Just("Z".to_string()),
                Just("+02:00".to_string()),
                Just(String::new())
            ],
        ),
        any::<u128>(),
        (
            0u32..100_000,
            prop::option::of(0u32..1000),
            prop_oneof![
                Just("ms"),
                Just("s"),
                Just("µs"),
                Just("ns"),
                Just(" seconds")
            ],
        ),
        0x1000u64..u64::MAX,
        0u32..1_000_000,
    )
        .prop_map(
            |(
                port,
                dir,
                run_id,
                (y, mo, d, h, mi, s, frac, off),
                uuid,
                (n, f, unit),
                hex,
                order,
            )| {
                let frac = frac.map(|f| format!(".{f:03}")).unwrap_or_default();
                Values {
                    port,
                    workdir: format!("/tmp/bugatti-ws/{dir}"),
                    run_id,
                    timestamp: format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{frac}{off}"),
                    uuid: uuid::Uuid::from_u128(uuid).to_string(),
                    duration: match f {
                        Some(f) => format!("{n}.{f}{unit}"),
                        None => format!("{n}{unit}"),
                    },
                    hex: format!("0x{hex:x}"),
                    order,
                }
            },
        )
}

fn normalizer(v: &Values) -> Normalizer {
    Normalizer::new(
        [
            Volatile::new("APP_PORT", v.port.to_string()),
            Volatile::new("BUGATTI_WORKDIR", v.workdir.clone()),
            Volatile::new("BUGATTI_RUN_ID", v.run_id.clone()),
        ],
        &["order #[0-9]+".to_string()],
    )
    .expect("valid ignore pattern")
}

/// The output the template prints in a session with `v`.
fn render(template: &[Piece], v: &Values) -> String {
    template
        .iter()
        .map(|p| match p {
            Piece::Literal(s) => s.clone(),
            Piece::Port => format!(" {} ", v.port),
            Piece::Workdir => format!(" {} ", v.workdir),
            Piece::RunId => format!(" {} ", v.run_id),
            Piece::Timestamp => format!(" {} ", v.timestamp),
            Piece::Uuid => format!(" {} ", v.uuid),
            Piece::Duration => format!(" {} ", v.duration),
            Piece::Hex => format!(" {} ", v.hex),
            Piece::Ignored => format!(" order #{} ", v.order),
        })
        .collect()
}

/// What normalisation must give: the template, each value as its mask, literals escaped.
fn expected(template: &[Piece]) -> String {
    template
        .iter()
        .map(|p| match p {
            Piece::Literal(s) => s.replace('⟨', "⟨⟨"),
            Piece::Port => " ⟨APP_PORT⟩ ".into(),
            Piece::Workdir => " ⟨BUGATTI_WORKDIR⟩ ".into(),
            Piece::RunId => " ⟨BUGATTI_RUN_ID⟩ ".into(),
            Piece::Timestamp => " ⟨timestamp⟩ ".into(),
            Piece::Uuid => " ⟨uuid⟩ ".into(),
            Piece::Duration => " ⟨duration⟩ ".into(),
            Piece::Hex => " ⟨hex⟩ ".into(),
            Piece::Ignored => " ⟨ignored⟩ ".into(),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_claimed_value_is_masked(
        template in prop::collection::vec(piece(), 0..12),
        a in values(),
        b in values(),
    ) {
        let (na, nb) = (normalizer(&a), normalizer(&b));
        let out_a = na.normalize(&render(&template, &a));
        let out_b = nb.normalize(&render(&template, &b));
        prop_assert_eq!(&out_a, &expected(&template));
        prop_assert_eq!(&out_a, &out_b);
        for value in [a.port.to_string(), a.workdir.clone(), a.timestamp.clone(), a.uuid.clone(), a.hex.clone()] {
            prop_assert!(!out_a.contains(&value), "{value} left in {out_a:?}");
        }
    }

    #[test]
    fn outputs_that_differ_elsewhere_never_collide(
        t1 in prop::collection::vec(piece(), 0..8),
        t2 in prop::collection::vec(piece(), 0..8),
        v in values(),
    ) {
        let n = normalizer(&v);
        let (e1, e2) = (expected(&t1), expected(&t2));
        let (o1, o2) = (n.normalize(&render(&t1, &v)), n.normalize(&render(&t2, &v)));
        prop_assert_eq!(&o1, &e1);
        prop_assert_eq!(&o2, &e2);
        // The templates differ outside the values exactly when their skeletons differ.
        prop_assert_eq!(o1 == o2, e1 == e2);
    }

    #[test]
    fn one_changed_character_is_seen(
        template in prop::collection::vec(piece(), 1..8),
        v in values(),
        at in any::<prop::sample::Index>(),
        with in "[a-zA-Z⟨⟩]",
    ) {
        let n = normalizer(&v);
        let original = render(&template, &v);
        // Change one character outside every value: in a literal piece.
        let mut changed = template.clone();
        let literals: Vec<usize> = changed.iter().enumerate()
            .filter_map(|(i, p)| matches!(p, Piece::Literal(s) if !s.is_empty()).then_some(i))
            .collect();
        prop_assume!(!literals.is_empty());
        let i = literals[at.index(literals.len())];
        if let Piece::Literal(s) = &mut changed[i] {
            let first = s.chars().next().unwrap_or(' ');
            let with = with.chars().next().unwrap_or('x');
            prop_assume!(first != with);
            *s = format!("{with}{}", &s[first.len_utf8()..]);
        }
        prop_assert_ne!(n.normalize(&original), n.normalize(&render(&changed, &v)));
    }

    #[test]
    fn any_text_normalises_without_panic(text in "\\PC{0,64}", v in values()) {
        // Whatever surrounds it, a value between spaces is masked.
        let n = normalizer(&v);
        let out = n.normalize(&format!("{text} {} {} ", v.uuid, v.timestamp));
        prop_assert!(!out.contains(&v.uuid), "{out:?}");
        prop_assert!(out.ends_with(" ⟨uuid⟩ ⟨timestamp⟩ "), "{out:?}");
    }
}
