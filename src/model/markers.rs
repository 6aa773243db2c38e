//! The agent-reply scanner: a pure, streaming reader of the markers an agent writes (README "A
//! test, a run, a record" and docs/providers.md "Providers").
//!
//! Agent output arrives in chunks split anywhere, possibly with invalid UTF-8. The scanner keeps
//! only the current, unfinished line (and at most [`MAX_MARKER_LINE`] bytes of it, so a 64 MiB
//! reply without newlines costs no more memory than a short one), turns each finished line that is
//! a marker into a [`Marker`], and remembers the **last** result marker: the one that decides the
//! step. Lines are decoded lossily for matching only; callers keep the raw bytes for transcripts.
//!
//! A line is a marker when, after trimming whitespace and the Markdown decorations agents like to
//! add (`**RESULT OK**`, `` `RESULT OK` ``, a `> ` quote), it starts with `RESULT OK`,
//! `RESULT WARN`, `RESULT ERROR`, `BUGATTI_LOG `, `BUGATTI_EVIDENCE ` or `BUGATTI_FACT ` (a fact
//! the agent's pass rested on, stated when the harness asks: docs/replay.md).

use serde::{Deserialize, Serialize};

/// Bytes of one line kept for matching. Longer lines are cut there: a marker's text is short, and
/// the rest of a long line is kept by the transcript, not here.
pub const MAX_MARKER_LINE: usize = 8 * 1024;

/// What a `BUGATTI_FACT` line longer than [`MAX_MARKER_LINE`] is read as: a word saying so and
/// its length, never the cut line (a cut fact could be another, weaker one). The replay's fact
/// language refuses it ([`overlong_fact_bytes`]).
pub fn overlong_fact(bytes: u64) -> String {
    format!("{OVERLONG_FACT} {bytes}")
}

/// The length of a line [`overlong_fact`] stands for, when `fact` is one.
pub fn overlong_fact_bytes(fact: &str) -> Option<u64> {
    fact.strip_prefix(OVERLONG_FACT)?.trim().parse().ok()
}

/// No fact starts so (a fact starts with its action's number).
const OVERLONG_FACT: &str = "(over-long)";

/// The kinds of evidence README "A test, a run, a record" names. Anything else is recorded as
/// `other`.
pub const EVIDENCE_KINDS: [&str; 7] = [
    "screenshot",
    "log",
    "console",
    "network",
    "sql",
    "cli",
    "other",
];

/// The verdict a `RESULT` line carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultVerdict {
    Ok,
    Warn,
    Error,
}

/// One `RESULT …` line: its verdict and the text after `:` (empty for a bare `RESULT OK`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultMarker {
    pub verdict: ResultVerdict,
    pub text: String,
}

/// One `BUGATTI_EVIDENCE <kind> <path>` line; the path is relative to the run directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub kind: String,
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    Result(ResultMarker),
    Log(String),
    Evidence(Evidence),
    /// A fact the pass rested on, as stated (`1 contains "ok"`): parsed by the replay.
    Fact(String),
}

/// Reads one line (without its newline) as a marker, if it is one.
pub fn parse_line(line: &str) -> Option<Marker> {
    let line = undecorate(line);
    if let Some(rest) = line.strip_prefix("RESULT") {
        return parse_result(rest).map(Marker::Result);
    }
    if let Some(rest) = line.strip_prefix("BUGATTI_LOG") {
        if rest.is_empty() || rest.starts_with(char::is_whitespace) {
            return Some(Marker::Log(rest.trim().to_string()));
        }
        return None;
    }
    if let Some(rest) = line.strip_prefix("BUGATTI_FACT") {
        if rest.starts_with(char::is_whitespace) && !rest.trim().is_empty() {
            return Some(Marker::Fact(rest.trim().to_string()));
        }
        return None;
    }
    if let Some(rest) = line.strip_prefix("BUGATTI_EVIDENCE") {
        if !rest.starts_with(char::is_whitespace) {
            return None;
        }
        let mut parts = rest.trim().splitn(2, char::is_whitespace);
        let kind = parts.next().filter(|k| !k.is_empty())?;
        let path = parts.next().map(str::trim).filter(|p| !p.is_empty())?;
        let kind = kind.to_ascii_lowercase();
        let kind = if EVIDENCE_KINDS.contains(&kind.as_str()) {
            kind
        } else {
            "other".to_string()
        };
        return Some(Marker::Evidence(Evidence {
            kind,
            path: path.to_string(),
        }));
    }
    None
}

/// Strips whitespace, a Markdown quote and the emphasis / code marks wrapped around a line.
fn undecorate(line: &str) -> &str {
    let mut line = line.trim();
    if let Some(rest) = line.strip_prefix('>') {
        line = rest.trim_start();
    }
    line.trim_matches(|c: char| c == '*' || c == '`').trim()
}

fn parse_result(rest: &str) -> Option<ResultMarker> {
    let rest = rest.strip_prefix(char::is_whitespace)?.trim_start();
    let (verdict, after) = if let Some(after) = rest.strip_prefix("OK") {
        (ResultVerdict::Ok, after)
    } else if let Some(after) = rest.strip_prefix("WARN") {
        (ResultVerdict::Warn, after)
    } else if let Some(after) = rest.strip_prefix("ERROR") {
        (ResultVerdict::Error, after)
    } else {
        return None;
    };
    // `RESULT OKAY` is not a marker; `RESULT OK`, `RESULT OK.`, `RESULT WARN: text` are.
    let mut chars = after.chars();
    let text = match chars.next() {
        None => "",
        Some(':' | '-' | '—' | '.') => chars.as_str().trim(),
        Some(c) if c.is_whitespace() => after.trim(),
        Some(_) => return None,
    };
    Some(ResultMarker {
        verdict,
        text: text.to_string(),
    })
}

/// The streaming scanner for one reply.
#[derive(Debug, Default)]
pub struct MarkerScanner {
    line: Vec<u8>,
    /// The current line grew past [`MAX_MARKER_LINE`]; its tail is being skipped.
    truncated: bool,
    /// The current line's length in bytes, the skipped tail included.
    line_bytes: u64,
    /// The current line's start already rules out a marker; the rest is skipped.
    rejected: bool,
    /// The current line's start is that of a marker; it is kept to the end.
    candidate: bool,
    last_result: Option<ResultMarker>,
    bytes_seen: u64,
}

impl MarkerScanner {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk. Markers on lines finished by this chunk are appended to `out`, in order.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Marker>) {
        self.bytes_seen += chunk.len() as u64;
        let mut rest = chunk;
        while let Some(newline) = memchr::memchr(b'\n', rest) {
            self.append(&rest[..newline]);
            self.finish_line(out);
            rest = &rest[newline + 1..];
        }
        self.append(rest);
    }

    /// The end of the reply: an unfinished last line counts as a line.
    pub fn finish(&mut self, out: &mut Vec<Marker>) {
        // A rejected line has already been dropped from `line`; finishing it still resets the
        // state, or the next text (a Claude Code text block) would be skipped up to its newline.
        if !self.line.is_empty() || self.rejected {
            self.finish_line(out);
        }
    }

    /// The last result marker seen so far: the one that decides the step.
    pub fn last_result(&self) -> Option<&ResultMarker> {
        self.last_result.as_ref()
    }

    /// Total bytes fed, for messages ("no marker in 12 MiB of output").
    pub fn bytes_seen(&self) -> u64 {
        self.bytes_seen
    }

    /// Forgets everything: the next reply starts clean.
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    fn append(&mut self, bytes: &[u8]) {
        self.line_bytes += bytes.len() as u64;
        if self.truncated || self.rejected {
            return;
        }
        let room = MAX_MARKER_LINE.saturating_sub(self.line.len());
        if bytes.len() > room {
            self.line.extend_from_slice(&bytes[..room]);
            self.truncated = true;
        } else {
            self.line.extend_from_slice(bytes);
        }
        if !self.candidate {
            match could_be_marker(&self.line) {
                Some(true) => self.candidate = true,
                Some(false) => {
                    // Most output is not markers: stop copying this line as soon as that is known.
                    self.rejected = true;
                    self.line.clear();
                }
                None => {}
            }
        }
    }

    fn finish_line(&mut self, out: &mut Vec<Marker>) {
        let rejected = std::mem::take(&mut self.rejected);
        let bytes = std::mem::take(&mut self.line_bytes);
        self.candidate = false;
        if rejected {
            self.line.clear();
            self.truncated = false;
            return;
        }
        let text = String::from_utf8_lossy(&self.line);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        let marker = match parse_line(text) {
            Some(Marker::Fact(_)) if self.truncated => Some(Marker::Fact(overlong_fact(bytes))),
            marker => marker,
        };
        if let Some(marker) = marker {
            if let Marker::Result(result) = &marker {
                self.last_result = Some(result.clone());
            }
            out.push(marker);
        }
        self.line.clear();
        self.truncated = false;
    }
}

/// Whether a line starting with `start` can be a marker: `Some(false)` once its first
/// non-decoration bytes differ from every marker keyword, `Some(true)` once they hold a whole
/// keyword, `None` while undecided. Decoration is skipped generously (any mix of ASCII whitespace,
/// `>`, `*`, `` ` ``), so this never rejects what [`parse_line`] would accept; a non-ASCII byte
/// (Unicode whitespace, say) makes the line a candidate and [`parse_line`] decides.
fn could_be_marker(start: &[u8]) -> Option<bool> {
    const KEYWORDS: [&[u8]; 4] = [
        b"RESULT",
        b"BUGATTI_LOG",
        b"BUGATTI_EVIDENCE",
        b"BUGATTI_FACT",
    ];
    let first = start
        .iter()
        .position(|b| !(b.is_ascii_whitespace() || matches!(b, b'>' | b'*' | b'`' | b'\x0b')))?;
    let rest = &start[first..];
    if rest[0] >= 0x80 {
        return Some(true);
    }
    let mut undecided = false;
    for keyword in KEYWORDS {
        let n = rest.len().min(keyword.len());
        if rest[..n] == keyword[..n] {
            if rest.len() >= keyword.len() {
                return Some(true);
            }
            undecided = true;
        }
    }
    if undecided {
        None
    } else {
        Some(false)
    }
}

/// Scans a whole text at once: every marker, in order, and the deciding result.
pub fn scan_text(text: &str) -> (Vec<Marker>, Option<ResultMarker>) {
    let mut scanner = MarkerScanner::new();
    let mut out = Vec::new();
    scanner.push(text.as_bytes(), &mut out);
    scanner.finish(&mut out);
    let last = scanner.last_result().cloned();
    (out, last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn result(verdict: ResultVerdict, text: &str) -> Marker {
        Marker::Result(ResultMarker {
            verdict,
            text: text.to_string(),
        })
    }

    #[test]
    fn a_fact_line_over_the_limit_arrives_as_a_word_never_cut() {
        let fact = format!(
            "BUGATTI_FACT 1 contains \"{}\"",
            "a".repeat(MAX_MARKER_LINE)
        );
        // Fed in pieces, as a stream arrives.
        let mut scanner = MarkerScanner::new();
        let mut out = Vec::new();
        for piece in format!("{fact}\nRESULT OK\n").as_bytes().chunks(1000) {
            scanner.push(piece, &mut out);
        }
        scanner.finish(&mut out);
        let long = overlong_fact(fact.len() as u64);
        assert_eq!(out[0], Marker::Fact(long.clone()), "{:?}", out[0]);
        assert_eq!(overlong_fact_bytes(&long), Some(fact.len() as u64));
        assert_eq!(out[1], result(ResultVerdict::Ok, ""));
        // A line under the limit is the fact itself, and no fact reads as over-long.
        let (out, _) = scan_text("BUGATTI_FACT 1 contains \"ok\"\n");
        assert_eq!(out, [Marker::Fact("1 contains \"ok\"".into())]);
        assert_eq!(overlong_fact_bytes("1 contains \"ok\""), None);
    }

    #[test]
    fn reads_each_marker_form() {
        assert_eq!(parse_line("RESULT OK"), Some(result(ResultVerdict::Ok, "")));
        assert_eq!(
            parse_line("  RESULT WARN: slow page "),
            Some(result(ResultVerdict::Warn, "slow page"))
        );
        assert_eq!(
            parse_line("**RESULT ERROR: no button**"),
            Some(result(ResultVerdict::Error, "no button"))
        );
        assert_eq!(
            parse_line("`RESULT OK`"),
            Some(result(ResultVerdict::Ok, ""))
        );
        assert_eq!(parse_line("RESULT OKAY"), None);
        assert_eq!(parse_line("RESULTS OK"), None);
        assert_eq!(parse_line("the RESULT OK is near"), None);
        assert_eq!(
            parse_line("BUGATTI_LOG opened the page"),
            Some(Marker::Log("opened the page".into()))
        );
        assert_eq!(parse_line("BUGATTI_LOGGER x"), None);
        assert_eq!(
            parse_line("**BUGATTI_FACT 1 contains \"ok\"**"),
            Some(Marker::Fact("1 contains \"ok\"".into()))
        );
        assert_eq!(parse_line("BUGATTI_FACTS 1"), None);
        assert_eq!(parse_line("BUGATTI_FACT   "), None);
        assert_eq!(
            parse_line("BUGATTI_EVIDENCE screenshot screenshots/a b.png"),
            Some(Marker::Evidence(Evidence {
                kind: "screenshot".into(),
                path: "screenshots/a b.png".into()
            }))
        );
        assert_eq!(
            parse_line("BUGATTI_EVIDENCE video v.mp4"),
            Some(Marker::Evidence(Evidence {
                kind: "other".into(),
                path: "v.mp4".into()
            }))
        );
        assert_eq!(parse_line("BUGATTI_EVIDENCE screenshot"), None);
    }

    #[test]
    fn the_last_result_wins_and_crlf_is_fine() {
        let (markers, last) = scan_text("RESULT ERROR: first\r\nmore\r\nRESULT OK\r\ntrailing");
        assert_eq!(markers.len(), 2);
        assert_eq!(
            last,
            Some(ResultMarker {
                verdict: ResultVerdict::Ok,
                text: String::new()
            })
        );
    }

    #[test]
    fn invalid_utf8_does_not_hide_a_marker() {
        let mut scanner = MarkerScanner::new();
        let mut out = Vec::new();
        scanner.push(b"\xff\xfe garbage \xc3\n", &mut out);
        scanner.push(b"RESULT WARN: caf\xc3\xa9 \xff\n", &mut out);
        assert_eq!(out.len(), 1);
        let last = scanner.last_result().expect("marker");
        assert_eq!(last.verdict, ResultVerdict::Warn);
        assert!(last.text.starts_with("café"));
    }

    #[test]
    fn a_finished_non_marker_text_does_not_hide_the_next_text() {
        let mut scanner = MarkerScanner::new();
        let mut out = Vec::new();
        scanner.push(b"I will check the page.", &mut out);
        scanner.finish(&mut out);
        scanner.push(b"RESULT OK", &mut out);
        scanner.finish(&mut out);
        assert_eq!(out, vec![result(ResultVerdict::Ok, "")]);
    }

    #[test]
    fn a_huge_line_costs_bounded_memory_and_the_next_line_still_counts() {
        let mut scanner = MarkerScanner::new();
        let mut out = Vec::new();
        let block = vec![b'x'; 1 << 20];
        for _ in 0..8 {
            scanner.push(&block, &mut out);
            assert!(scanner.line.capacity() <= 2 * MAX_MARKER_LINE);
        }
        scanner.push(b"\nRESULT OK\n", &mut out);
        assert_eq!(
            scanner.last_result().map(|r| r.verdict),
            Some(ResultVerdict::Ok)
        );
        assert_eq!(scanner.bytes_seen(), 8 * (1 << 20) + 11);
    }

    fn reply() -> impl Strategy<Value = String> {
        let line = prop_oneof![
            Just("RESULT OK".to_string()),
            "[a-z ]{0,12}".prop_map(|t| format!("RESULT WARN: {t}")),
            "[a-z ]{0,12}".prop_map(|t| format!("RESULT ERROR: {t}")),
            "[a-z ]{1,12}".prop_map(|t| format!("BUGATTI_LOG {t}")),
            "[a-z]{1,8}".prop_map(|p| format!("BUGATTI_EVIDENCE screenshot shots/{p}.png")),
            "[a-zA-Z0-9 :é]{0,40}",
        ];
        prop::collection::vec(line, 0..12).prop_map(|lines| lines.join("\n"))
    }

    /// The plain definition the streaming scanner must match: split on `\n`, decode lossily,
    /// drop a trailing `\r`, read each line.
    fn reference(bytes: &[u8]) -> Vec<Marker> {
        bytes
            .split(|&b| b == b'\n')
            .filter_map(|line| {
                let text = String::from_utf8_lossy(line);
                parse_line(text.strip_suffix('\r').unwrap_or(&text))
            })
            .collect()
    }

    fn noisy_reply() -> impl Strategy<Value = Vec<u8>> {
        let line = prop_oneof![
            reply().prop_map(String::into_bytes),
            prop::collection::vec(
                prop_oneof![
                    Just(b" ".to_vec()),
                    Just(b"> ".to_vec()),
                    Just(b"**".to_vec()),
                    Just(b"`".to_vec()),
                    Just(b"\t".to_vec()),
                    Just(b"\r".to_vec()),
                    Just("\u{a0}".as_bytes().to_vec()),
                    Just(b"\xff".to_vec()),
                    Just(b"RESULT".to_vec()),
                    Just(b" OK".to_vec()),
                    Just(b" WARN: w".to_vec()),
                    Just(b"RESULTS".to_vec()),
                    Just(b"BUGATTI_".to_vec()),
                    Just(b"LOG x".to_vec()),
                    Just(b"EVIDENCE log a.txt".to_vec()),
                    Just(b"plain words".to_vec()),
                ],
                0..8,
            )
            .prop_map(|parts| parts.concat()),
        ];
        prop::collection::vec(line, 0..10).prop_map(|lines| lines.join(&b'\n'))
    }

    proptest! {
        /// The early rejection of non-marker lines never changes what is found.
        #[test]
        fn the_scanner_matches_the_plain_definition(bytes in noisy_reply(), cuts in prop::collection::vec(0usize..300, 0..12)) {
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            points.sort_unstable();
            let mut scanner = MarkerScanner::new();
            let mut out = Vec::new();
            let mut start = 0;
            for p in points {
                scanner.push(&bytes[start..p], &mut out);
                start = p;
            }
            scanner.push(&bytes[start..], &mut out);
            scanner.finish(&mut out);
            prop_assert_eq!(out, reference(&bytes));
        }

        /// However the reply is cut into chunks, the scanner sees exactly what a whole-text scan
        /// sees.
        #[test]
        fn chunk_boundaries_never_change_the_markers(text in reply(), cuts in prop::collection::vec(0usize..400, 0..20)) {
            let (expected, expected_last) = scan_text(&text);
            let bytes = text.as_bytes();
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            points.sort_unstable();
            let mut scanner = MarkerScanner::new();
            let mut out = Vec::new();
            let mut start = 0;
            for p in points {
                scanner.push(&bytes[start..p], &mut out);
                start = p;
            }
            scanner.push(&bytes[start..], &mut out);
            scanner.finish(&mut out);
            prop_assert_eq!(out, expected);
            prop_assert_eq!(scanner.last_result().cloned(), expected_last);
        }
    }
}
