//! Normalisation: what is rewritten in every output before it is compared with its recording
//! (see docs/replay.md, "What is masked").
//!
//! Terminal escapes are stripped and `\r\n` becomes `\n`; the session's own values (ports,
//! workspace and run directories, project root, run/session/step ids) become `⟨ITS_NAME⟩` (they
//! are exact placeholders: each side has its own session's values); whatever the project's
//! `[replay] ignore` regexes match becomes `⟨ignored⟩`, unless the step's instruction names it.
//! Timestamps, UUIDs, durations and hex values are *not* masked here: they are candidates of a
//! learned mask ([`super::masks`]).
//!
//! Nothing else is changed, and the masks cannot be forged: a `⟨` in the output itself is written
//! `⟨⟨`, so two outputs that differ anywhere outside a masked value never normalise to the same
//! text (`tests/prop_replay_normalize.rs` checks that).

use regex::Regex;

/// Opens a mask; doubled when it occurs in the text itself.
const OPEN: char = '⟨';
const CLOSE: char = '⟩';

/// A value of one session that differs in the next: a port, a directory, an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volatile {
    /// Its name (`APP_PORT`, `BUGATTI_WORKDIR`, `BUGATTI_RUN_ID`): the mask is `⟨NAME⟩`.
    pub name: String,
    pub value: String,
}

impl Volatile {
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// Values shorter than this are not masked as session values: a one- or two-character value
/// would mask half of every output. (Ports from `auto` and every path and id are longer.)
pub const MIN_VOLATILE_LEN: usize = 3;

/// An `[replay] ignore` pattern that is not a regex.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("[replay] ignore pattern {pattern:?} is not a valid regex: {reason}")]
pub struct BadIgnore {
    pub pattern: String,
    pub reason: String,
}

/// The masks of one session.
#[derive(Debug, Clone)]
pub struct Normalizer {
    /// The session's values, longest first (a run directory is masked whole, not as the project
    /// root inside it).
    values: Vec<Volatile>,
    /// One regex over all of them: leftmost, and among those the longest.
    values_re: Option<Regex>,
    ignore: Vec<Regex>,
}

impl Normalizer {
    /// Masks for a session's `values` and the project's `ignore` regexes.
    pub fn new(
        values: impl IntoIterator<Item = Volatile>,
        ignore: &[String],
    ) -> Result<Self, BadIgnore> {
        let mut values: Vec<Volatile> = values
            .into_iter()
            .filter(|v| v.value.chars().count() >= MIN_VOLATILE_LEN && !v.value.contains(OPEN))
            .collect();
        values.sort_by(|a, b| {
            b.value
                .len()
                .cmp(&a.value.len())
                .then_with(|| a.name.cmp(&b.name))
        });
        values.dedup_by(|a, b| a.value == b.value);
        let values_re = if values.is_empty() {
            None
        } else {
            let alternatives: Vec<String> = values
                .iter()
                .map(|v| {
                    let escaped = regex::escape(&v.value);
                    // A port is a whole number: 8080 is not the middle of 18080.
                    if v.value.bytes().all(|b| b.is_ascii_digit()) {
                        format!(r"\b{escaped}\b")
                    } else {
                        escaped
                    }
                })
                .collect();
            // Escaped literals always make a valid regex; the size limit is the only way out.
            Regex::new(&alternatives.join("|")).ok()
        };
        let ignore = ignore
            .iter()
            .map(|p| {
                Regex::new(p).map_err(|e| BadIgnore {
                    pattern: p.clone(),
                    reason: e.to_string(),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            values,
            values_re,
            ignore,
        })
    }

    /// No session values, no ignore patterns: escapes and line ends only.
    pub fn generic() -> Self {
        Self {
            values: Vec::new(),
            values_re: None,
            ignore: Vec::new(),
        }
    }

    /// The text after normalisation.
    pub fn normalize(&self, raw: &str) -> String {
        self.normalize_with(raw, "")
    }

    /// The text after normalisation, where no `ignore` match that `instruction` names is masked
    /// (the value a step checks is never masked).
    pub fn normalize_with(&self, raw: &str, instruction: &str) -> String {
        let clean = crate::console::reply::clean(raw.as_bytes());
        let spans = self.spans(&clean, instruction);
        let mut out = String::with_capacity(clean.len());
        let mut at = 0;
        for (start, end, label) in spans {
            escape_into(&clean[at..start], &mut out);
            out.push(OPEN);
            out.push_str(label);
            out.push(CLOSE);
            at = end;
        }
        escape_into(&clean[at..], &mut out);
        out
    }

    /// The spans to mask, in order and disjoint: at each place the earliest match, the longest
    /// of those.
    fn spans<'a>(&'a self, text: &str, instruction: &str) -> Vec<(usize, usize, &'a str)> {
        let mut found: Vec<(usize, usize, &'a str)> = Vec::new();
        if let Some(re) = &self.values_re {
            for m in re.find_iter(text) {
                // The alternation's order is the values' order; find which one matched.
                let name = self
                    .values
                    .iter()
                    .find(|v| v.value == m.as_str())
                    .map_or("value", |v| v.name.as_str());
                found.push((m.start(), m.end(), name));
            }
        }
        for re in &self.ignore {
            for m in re.find_iter(text) {
                if m.is_empty() || super::masks::named_in(instruction, m.as_str()) {
                    continue;
                }
                // A value the instruction names stays exact inside what `ignore` matched
                // (`2026-12-31` of a whole timestamp ignored): only the rest is masked.
                let mut at = m.start();
                for (s, e) in super::masks::pinned(m.as_str(), instruction) {
                    let (s, e) = (m.start() + s, m.start() + e);
                    if s > at {
                        found.push((at, s, "ignored"));
                    }
                    at = at.max(e);
                }
                if m.end() > at {
                    found.push((at, m.end(), "ignored"));
                }
            }
        }
        found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut spans = Vec::with_capacity(found.len());
        let mut end = 0;
        for span in found {
            if span.0 >= end {
                end = span.1;
                spans.push(span);
            }
        }
        spans
    }
}

fn escape_into(text: &str, out: &mut String) {
    for c in text.chars() {
        if c == OPEN {
            out.push(OPEN);
        }
        out.push(c);
    }
}

/// `text` with every run of whitespace one space, trimmed: the same command however spaced (an
/// action's target, which strength.rs compares).
pub fn collapsed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(port: &str, ws: &str) -> Normalizer {
        Normalizer::new(
            [
                Volatile::new("APP_PORT", port),
                Volatile::new("BUGATTI_WORKDIR", ws),
                Volatile::new("PROJECT_ROOT", "/home/u/proj"),
            ],
            &["order #[0-9]+".to_string()],
        )
        .expect("valid")
    }

    #[test]
    fn masks_what_it_claims() {
        let n = session("41234", "/tmp/bugatti-ws-7f3a");
        let out = n.normalize(
            "\x1b[32mGET\x1b[0m http://127.0.0.1:41234/x in /tmp/bugatti-ws-7f3a/app\r\n\
             at 2026-11-24T12:00:01.123Z id 0192f6a4-1b2c-7d3e-8f40-123456789abc took 12ms, 0.03s \
             ptr 0x7ffd5e8a order #991 Date: Tue, 24 Nov 2026 12:00:01 GMT 18080\n",
        );
        // Timestamps, UUIDs, durations and hex values are left for the learned masks.
        assert_eq!(
            out,
            "GET http://127.0.0.1:⟨APP_PORT⟩/x in ⟨BUGATTI_WORKDIR⟩/app\n\
             at 2026-11-24T12:00:01.123Z id 0192f6a4-1b2c-7d3e-8f40-123456789abc took 12ms, 0.03s \
             ptr 0x7ffd5e8a ⟨ignored⟩ Date: Tue, 24 Nov 2026 12:00:01 GMT 18080\n"
        );
        // An ignore match the instruction names is not masked.
        assert_eq!(
            n.normalize_with("order #991", "check order #991 exists"),
            "order #991"
        );
        // Nor the part of one that the instruction names.
        let wide = Normalizer::new([], &[r"\d{4}-\d{2}-\d{2}T[0-9:.]+Z".to_string()]).expect("ok");
        assert_eq!(
            wide.normalize_with(
                "due 2026-12-31T09:00:00.04Z",
                "Check the due date is 2026-12-31."
            ),
            "due 2026-12-31⟨ignored⟩"
        );
        assert_eq!(
            wide.normalize_with("due 2026-12-31T09:00:00.04Z", "Check it."),
            "due ⟨ignored⟩"
        );
    }

    #[test]
    fn a_literal_mask_in_the_output_is_not_a_mask() {
        let n = Normalizer::generic();
        assert_ne!(
            n.normalize("⟨uuid⟩"),
            n.normalize("0192f6a4-1b2c-7d3e-8f40-123456789abc")
        );
        assert_eq!(n.normalize("a⟨b"), "a⟨⟨b");
    }

    #[test]
    fn a_port_is_masked_only_as_a_whole_number() {
        let n = session("8080", "/ws1");
        assert_eq!(n.normalize("8080 18080 80801"), "⟨APP_PORT⟩ 18080 80801");
    }

    #[test]
    fn the_longest_value_wins() {
        let n = Normalizer::new(
            [
                Volatile::new("ROOT", "/p/proj"),
                Volatile::new("RUN_DIR", "/p/proj/.bugatti/runs/r1"),
            ],
            &[],
        )
        .expect("valid");
        assert_eq!(
            n.normalize("/p/proj/.bugatti/runs/r1/x /p/proj/y"),
            "⟨RUN_DIR⟩/x ⟨ROOT⟩/y"
        );
    }

    #[test]
    fn a_bad_ignore_regex_is_named() {
        let e = Normalizer::new([], &["(".to_string()]).expect_err("invalid");
        assert_eq!(e.pattern, "(");
        assert!(e.to_string().contains("not a valid regex"), "{e}");
    }
}
