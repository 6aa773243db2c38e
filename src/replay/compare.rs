//! An output seen at replay against the one recorded, both normalised, then compared under the
//! learned masks ([`super::masks`]); a difference is the step's drift, kept in the report as a
//! unified diff cut to [`MAX_DRIFT_BYTES`].

use super::masks::{self, MaskedDiff, Position, Rules};
use super::normalize::Normalizer;

/// The most of a drift kept (4 KiB).
pub const MAX_DRIFT_BYTES: usize = 4096;

pub use crate::model::replay::Drift;

/// What comparing one output came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Checked {
    Same,
    /// Different only in candidate tokens not learned yet (these positions).
    Soft(Drift, Vec<Position>),
    Hard(Drift),
}

/// `expected` (recorded) against `seen` (replayed), each normalised, under `rules`.
pub fn compare_output(
    normalizer: &Normalizer,
    rules: &Rules<'_>,
    action: usize,
    what: &str,
    expected: &str,
    seen: &str,
) -> Checked {
    compare_output_noting(normalizer, rules, action, what, expected, seen).0
}

/// [`compare_output`], and the learned positions that varied inside their domains.
pub fn compare_output_noting(
    normalizer: &Normalizer,
    rules: &Rules<'_>,
    action: usize,
    what: &str,
    expected: &str,
    seen: &str,
) -> (Checked, Vec<Position>) {
    let expected = normalizer.normalize_with(expected, rules.instruction);
    let seen = normalizer.normalize_with(seen, rules.instruction);
    let (diff, varied) = masks::check(&expected, &seen, rules);
    let checked = match diff {
        MaskedDiff::Same => Checked::Same,
        // A position that will not be learned again is no soft drift: the agent's pass
        // would teach nothing, and the step says why it goes to the agent.
        MaskedDiff::Soft(positions) if positions.iter().any(|p| unsettled(rules, *p)) => {
            let field = format!(
                "output (a timestamp whose offset from the run's clock had not settled after {} \
                 passes of the agent, compared exactly)",
                super::domains::SETTLES_WITHIN
            );
            Checked::Hard(drift(action, what, &field, &expected, &seen))
        }
        MaskedDiff::Soft(positions) => {
            let mut d = drift(action, what, "output", &expected, &seen);
            d.soft = true;
            Checked::Soft(d, positions)
        }
        MaskedDiff::Hard => Checked::Hard(drift(action, what, "output", &expected, &seen)),
    };
    (checked, varied)
}

/// Whether the learned position at `at` is a timestamp no longer learned.
fn unsettled(rules: &Rules<'_>, at: Position) -> bool {
    rules
        .volatile
        .iter()
        .any(|l| l.at == at && l.domain.as_ref().is_some_and(|d| d.unsettled()))
}

/// A drift of two texts already normalised (or plain values: exit codes).
pub fn drift(action: usize, what: &str, field: &str, expected: &str, seen: &str) -> Drift {
    // Normalised texts lose their final newline; without one on both sides the diff would
    // carry "\ No newline at end of file" markers that say nothing about the app.
    let line_ended = |t: &str| {
        if t.is_empty() || t.ends_with('\n') {
            t.to_string()
        } else {
            format!("{t}\n")
        }
    };
    let (left, right) = (line_ended(expected), line_ended(seen));
    let diff = similar::TextDiff::from_lines(&left, &right)
        .unified_diff()
        .context_radius(3)
        .header("recorded", "replayed")
        .to_string();
    Drift {
        action,
        what: cut(what, 200),
        field: field.to_string(),
        expected: cut(expected, MAX_DRIFT_BYTES),
        seen: cut(seen, MAX_DRIFT_BYTES),
        diff: cut(&diff, MAX_DRIFT_BYTES),
        soft: false,
    }
}

/// At most `max` bytes of `text` (on a character boundary), with a note of what was cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let note = format!("\n… {} bytes cut", text.len());
    let keep = max.saturating_sub(note.len());
    let end = (0..=keep)
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    format!("{}{note}", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::domains::Learned;
    use crate::replay::normalize::Volatile;

    fn rules(volatile: &[Learned]) -> Rules<'_> {
        let now = chrono::Utc::now();
        Rules {
            volatile,
            ..Rules::plain("", Some((now, now)), (now, now))
        }
    }

    fn hard(c: Checked) -> Drift {
        match c {
            Checked::Hard(d) => d,
            other => panic!("expected a hard drift: {other:?}"),
        }
    }

    #[test]
    fn the_sessions_values_are_exact_and_candidates_are_soft() {
        let a = Normalizer::new([Volatile::new("APP_PORT", "41234")], &[]).expect("ok");
        let b = Normalizer::new([Volatile::new("APP_PORT", "50000")], &[]).expect("ok");
        // Each side is normalised with its own session's values.
        assert_eq!(a.normalize("up on :41234"), b.normalize("up on :50000"));
        let n = Normalizer::generic();
        assert_eq!(
            compare_output(&n, &rules(&[]), 0, "x", "in 3ms\r\n", "in 3ms\n"),
            Checked::Same
        );
        let soft = compare_output(&n, &rules(&[]), 0, "x", "in 3ms", "in 4ms");
        assert!(
            matches!(&soft, Checked::Soft(d, p) if d.soft && p == &[Position { line: 0, token: 0 }]),
            "{soft:?}"
        );
        let learned = [Learned {
            at: Position { line: 0, token: 0 },
            domain: Some(crate::replay::domains::Domain {
                kind: crate::replay::masks::Kind::Duration,
                range: Some((0.003, 0.003)),
                tie: None,
                apart: Vec::new(),
                quiet: 0,
                widened: 0,
            }),
        }];
        assert_eq!(
            compare_output(&n, &rules(&learned), 0, "x", "in 3ms", "in 4ms"),
            Checked::Same
        );
    }

    #[test]
    fn a_timestamp_no_longer_learned_is_a_drift_that_says_so() {
        let n = Normalizer::generic();
        let learned = |widened| {
            [Learned {
                at: Position { line: 0, token: 0 },
                domain: Some(crate::replay::domains::Domain {
                    kind: crate::replay::masks::Kind::Timestamp,
                    range: Some((-3600.0, 0.0)),
                    tie: None,
                    apart: Vec::new(),
                    quiet: 0,
                    widened,
                }),
            }]
        };
        let (a, b) = ("backup 2026-11-25T09:00:00Z", "backup 2026-11-20T09:00:00Z");
        let nine = learned(crate::replay::domains::SETTLES_WITHIN - 1);
        assert!(matches!(
            compare_output(&n, &rules(&nine), 0, "x", a, b),
            Checked::Soft(..)
        ));
        let ten = learned(crate::replay::domains::SETTLES_WITHIN);
        let d = hard(compare_output(&n, &rules(&ten), 0, "x", a, b));
        assert!(
            d.field.contains("not settled after 10 passes") && d.field.contains("exactly"),
            "{d:?}"
        );
    }

    #[test]
    fn a_changed_line_is_a_diff() {
        let n = Normalizer::generic();
        let d = hard(compare_output(
            &n,
            &rules(&[]),
            2,
            "exec_command curl",
            "a\nstatus: ok\nb\n",
            "a\nstatus: down\nb\n",
        ));
        assert_eq!(d.action, 2);
        assert!(d.diff.contains("--- recorded"), "{}", d.diff);
        assert!(d.diff.contains("-status: ok\n+status: down"), "{}", d.diff);
        assert!(d
            .to_string()
            .starts_with("action 3 (exec_command curl): output differs"));
    }

    #[test]
    fn a_drift_is_cut_to_4_kib() {
        let n = Normalizer::generic();
        let big_a = "é".repeat(5000);
        let big_b = "è".repeat(5000);
        let d = hard(compare_output(&n, &rules(&[]), 0, "x", &big_a, &big_b));
        for part in [&d.expected, &d.seen, &d.diff] {
            assert!(part.len() <= MAX_DRIFT_BYTES, "{}", part.len());
            assert!(part.ends_with("bytes cut"));
        }
    }
}
