//! Properties of `${NAME}` substitution: any text gives a result or a clear error (never a panic),
//! values land where the references were, `$${` always means a literal `${`, an escaped text
//! comes back unchanged, and an unknown name is named in the error.

use bugatti::fuzzing::{self, escape};
use bugatti::model::substitute::{references, session_vars, substitute, SubstError};
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
enum Piece {
    Text(String),
    Var(String),
    Escaped(String),
}

fn name() -> impl Strategy<Value = String> {
    "[A-Za-z_][A-Za-z0-9_]{0,6}"
}

/// Texts dense in `$`, `{` and `}` so every branch of the splitter is hit.
fn dollar_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("$".to_string()),
            Just("${".to_string()),
            Just("$${".to_string()),
            Just("}".to_string()),
            Just("{".to_string()),
            name(),
            Just("é".to_string()),
            Just(" ".to_string()),
            Just("${1x}".to_string()),
            Just("${}".to_string()),
        ],
        0..16,
    )
    .prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_text_gives_a_result_or_a_clear_error(text in prop_oneof![any::<String>(), dollar_text()]) {
        fuzzing::substitution(text.as_bytes());
    }

    #[test]
    fn escaped_text_round_trips(text in prop_oneof![any::<String>(), dollar_text()]) {
        prop_assert_eq!(substitute(&escape(&text), &BTreeMap::new()), Ok(text.clone()));
        prop_assert_eq!(references(&escape(&text)), Ok(vec![]));
    }

    /// A template built from literal text, references and `$${` escapes renders piece by piece.
    #[test]
    fn values_land_where_the_references_were(
        pieces in prop::collection::vec(prop_oneof![
            "[^$]{0,8}".prop_map(Piece::Text),
            name().prop_map(Piece::Var),
            name().prop_map(Piece::Escaped),
        ], 0..10),
        values in prop::collection::vec(any::<String>(), 1..4),
    ) {
        let mut vars = BTreeMap::new();
        let mut template = String::new();
        let mut want = String::new();
        for (i, p) in pieces.iter().enumerate() {
            match p {
                Piece::Text(t) => {
                    template.push_str(t);
                    want.push_str(t);
                }
                Piece::Var(n) => {
                    // A value may itself contain `${`: it is inserted verbatim, not re-expanded.
                    let v = vars.entry(n.clone()).or_insert_with(|| values[i % values.len()].clone());
                    template.push_str(&format!("${{{n}}}"));
                    want.push_str(v);
                }
                Piece::Escaped(n) => {
                    template.push_str(&format!("$${{{n}}}"));
                    want.push_str(&format!("${{{n}}}"));
                }
            }
        }
        prop_assert_eq!(substitute(&template, &vars), Ok(want));
        let names: Vec<String> = pieces.iter().filter_map(|p| match p { Piece::Var(n) => Some(n.clone()), _ => None }).collect();
        prop_assert_eq!(references(&template), Ok(names));
    }

    #[test]
    fn an_unknown_name_is_named(before in "[^$]{0,10}", known in name(), unknown in name()) {
        prop_assume!(known != unknown);
        let vars: BTreeMap<String, String> = [(known.clone(), "v".to_string())].into();
        let text = format!("{before}${{{known}}} ${{{unknown}}}");
        let err = substitute(&text, &vars).expect_err("unknown");
        prop_assert_eq!(&err, &SubstError::Unknown { name: unknown.clone() });
        let shown = format!("${{{unknown}}}");
        prop_assert!(err.to_string().contains(&shown));
    }

    /// `[env]` values referring to each other: resolved in any order, or a cycle named as such.
    #[test]
    fn env_values_resolve_or_report_the_cycle(
        refs in prop::collection::vec(prop::collection::vec(0usize..5, 0..3), 1..6),
    ) {
        let n = refs.len();
        let env: BTreeMap<String, String> = refs.iter().enumerate().map(|(i, rs)| {
            let value: String = rs.iter().filter(|&&r| r < n).map(|r| format!("<${{V{r}}}>")).collect();
            (format!("V{i}"), format!("{i}{value}"))
        }).collect();
        match session_vars(&BTreeMap::new(), &env) {
            Ok(out) => {
                prop_assert_eq!(out.len(), n);
                for v in out.values() {
                    prop_assert!(!v.contains("${"), "{}", v);
                }
            }
            Err(SubstError::Cycle { chain }) => {
                let names: Vec<&str> = chain.split(" -> ").collect();
                prop_assert!(names.len() >= 2);
                prop_assert_eq!(names.first(), names.last());
            }
            Err(other) => prop_assert!(false, "{}", other),
        }
    }
}
