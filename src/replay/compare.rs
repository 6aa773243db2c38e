//! An output seen at replay against the one recorded, both normalised; the first difference is
//! the step's drift, kept in the report as a unified diff cut to [`MAX_DRIFT_BYTES`].

use super::normalize::Normalizer;

/// The most of a drift kept (SPEC §10: 4 KiB).
pub const MAX_DRIFT_BYTES: usize = 4096;

pub use crate::model::replay::Drift;

/// `None` when `expected` and `seen` are equal after `normalizer`; otherwise the drift.
pub fn compare_output(
    normalizer: &Normalizer,
    action: usize,
    what: &str,
    expected: &str,
    seen: &str,
) -> Option<Drift> {
    let expected = normalizer.normalize(expected);
    let seen = normalizer.normalize(seen);
    (expected != seen).then(|| drift(action, what, "output", &expected, &seen))
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
    use crate::replay::normalize::Volatile;

    #[test]
    fn equal_after_normalisation_is_no_drift() {
        let a = Normalizer::new([Volatile::new("APP_PORT", "41234")], &[]).expect("ok");
        let b = Normalizer::new([Volatile::new("APP_PORT", "50000")], &[]).expect("ok");
        // Each side is normalised with its own session's values: the recording's were masked
        // when it was written, the replay's now.
        let recorded = a.normalize("up on :41234 in 3ms");
        assert_eq!(recorded, b.normalize("up on :50000 in 12ms"));
        assert!(compare_output(&b, 0, "x", "in 3ms\r\n", "in 4ms\n").is_none());
    }

    #[test]
    fn a_changed_line_is_a_diff() {
        let n = Normalizer::generic();
        let d = compare_output(
            &n,
            2,
            "exec_command curl",
            "a\nstatus: ok\nb\n",
            "a\nstatus: down\nb\n",
        )
        .expect("drift");
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
        let d = compare_output(&n, 0, "x", &big_a, &big_b).expect("drift");
        for part in [&d.expected, &d.seen, &d.diff] {
            assert!(part.len() <= MAX_DRIFT_BYTES, "{}", part.len());
            assert!(part.ends_with("bytes cut"));
        }
    }
}
