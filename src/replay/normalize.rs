//! Normalisation: what may differ between two runs of an unchanged app, masked before an output
//! is compared with its recording (SPEC §10).
//!
//! Masked: terminal escapes (stripped) and `\r\n` (to `\n`); the session's own volatile values
//! (ports, workspace and run directories, project root, run/session/step ids), each as
//! `⟨ITS_NAME⟩`; RFC 3339 / ISO-8601 timestamps, dates and times of day, HTTP dates
//! (`⟨timestamp⟩`); UUIDs (`⟨uuid⟩`); durations such as `12ms`, `0.03s`, `1m30s`, `2 seconds`
//! (`⟨duration⟩`); hex addresses `0x7ffd…` (`⟨hex⟩`); and whatever the project's `[replay] ignore`
//! regexes match (`⟨ignored⟩`).
//!
//! Nothing else is changed, and the masks cannot be forged: a `⟨` in the output itself is written
//! `⟨⟨`, so two outputs that differ anywhere outside a masked value never normalise to the same
//! text (`tests/prop_replay_normalize.rs` checks both halves of that).

use regex::Regex;
use sha2::{Digest, Sha256};
use std::sync::LazyLock;

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

/// The generic patterns, in the order they are tried at one position (the longest span wins).
static PATTERNS: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    let month = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec";
    [
        (
            "timestamp",
            // RFC 3339 / ISO-8601: a date, optionally its time, fraction and offset.
            r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?"
                .to_string(),
        ),
        ("timestamp", r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b".to_string()),
        (
            "timestamp",
            // HTTP / RFC 2822 dates, as in `Date:` headers.
            format!(
                r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{{1,2}} (?:{month}) \d{{4}} \d{{2}}:\d{{2}}:\d{{2}}(?: (?:GMT|UTC|[+-]\d{{4}}))?"
            ),
        ),
        (
            "uuid",
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
                .to_string(),
        ),
        (
            "duration",
            r"\b(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+\b|\b\d+(?:\.\d+)? ?(?:nanoseconds?|microseconds?|milliseconds?|seconds?|secs?|minutes?|mins?|hours?)\b"
                .to_string(),
        ),
        ("hex", r"\b0x[0-9a-fA-F]{4,}\b".to_string()),
    ]
    .into_iter()
    .map(|(label, re)| {
        // The patterns are constants: a test below compiles each one.
        let re = Regex::new(&re).unwrap_or_else(|e| panic!("built-in pattern {label}: {e}"));
        (label, re)
    })
    .collect()
});

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

    /// No session values, no ignore patterns: only the generic masks.
    pub fn generic() -> Self {
        Self {
            values: Vec::new(),
            values_re: None,
            ignore: Vec::new(),
        }
    }

    /// The text after normalisation.
    pub fn normalize(&self, raw: &str) -> String {
        let clean = crate::console::reply::clean(raw.as_bytes());
        let spans = self.spans(&clean);
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
    fn spans<'a>(&'a self, text: &str) -> Vec<(usize, usize, &'a str)> {
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
        for (label, re) in PATTERNS.iter() {
            found.extend(re.find_iter(text).map(|m| (m.start(), m.end(), *label)));
        }
        for re in &self.ignore {
            found.extend(
                re.find_iter(text)
                    .filter(|m| !m.is_empty())
                    .map(|m| (m.start(), m.end(), "ignored")),
            );
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

/// The key of an instruction: SHA-256 (hex) of the instruction as sent, normalised, so that the
/// session's ports and paths substituted into it do not make every run a miss.
pub fn instruction_hash(normalizer: &Normalizer, instruction: &str) -> String {
    let digest = Sha256::digest(normalizer.normalize(instruction).as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
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
    fn builtin_patterns_compile() {
        assert!(PATTERNS.len() >= 6);
    }

    #[test]
    fn masks_what_it_claims() {
        let n = session("41234", "/tmp/bugatti-ws-7f3a");
        let out = n.normalize(
            "\x1b[32mGET\x1b[0m http://127.0.0.1:41234/x in /tmp/bugatti-ws-7f3a/app\r\n\
             at 2026-11-24T12:00:01.123Z id 0192f6a4-1b2c-7d3e-8f40-123456789abc took 12ms, 0.03s \
             ptr 0x7ffd5e8a order #991 Date: Tue, 24 Nov 2026 12:00:01 GMT 18080\n",
        );
        assert_eq!(
            out,
            "GET http://127.0.0.1:⟨APP_PORT⟩/x in ⟨BUGATTI_WORKDIR⟩/app\n\
             at ⟨timestamp⟩ id ⟨uuid⟩ took ⟨duration⟩, ⟨duration⟩ \
             ptr ⟨hex⟩ ⟨ignored⟩ Date: ⟨timestamp⟩ 18080\n"
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

    #[test]
    fn instruction_hash_survives_the_sessions_values_only() {
        let a = session("41234", "/tmp/ws-a1");
        let b = session("50000", "/tmp/ws-b2");
        let h = |n: &Normalizer, port: &str| {
            instruction_hash(
                n,
                &format!("Open http://localhost:{port}/ and check the title"),
            )
        };
        assert_eq!(h(&a, "41234"), h(&b, "50000"));
        assert_ne!(
            instruction_hash(&a, "check the title"),
            instruction_hash(&a, "check the footer")
        );
        assert_eq!(h(&a, "41234").len(), 64);
    }
}
