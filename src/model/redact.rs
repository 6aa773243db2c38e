//! Secret redaction for every artifact and console line: `[REDACTED:NAME]` in place of a value,
//! also when a value arrives split across output chunks, with its line ends as a terminal prints
//! them (`\r\n`), and in its common encodings: base64 (`[REDACTED:NAME:base64]`, found at any
//! alignment inside a longer base64 text, standard or URL-safe alphabet) and URL-encoding
//! (`[REDACTED:NAME:url]`).

use std::sync::Arc;

/// The secrets of a session: names and their values. Empty values are ignored (they would match
/// everywhere).
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// Longest value first, so that a secret containing another is replaced whole.
    entries: Vec<(String, Vec<u8>)>,
    /// Every value, found leftmost-longest in one pass: redaction runs over every byte of every
    /// log, and a secret's encodings make many patterns with many first bytes.
    finder: Option<aho_corasick::AhoCorasick>,
    longest: usize,
    /// The pairs as given to [`Secrets::new`], before their encodings (`None` for a set made of
    /// other sets' entries): what [`SecretValues`] keeps of a finished run.
    given: Option<Vec<(String, Vec<u8>)>>,
}

/// The values of many sets without their automata and without their encodings: what a long
/// suite keeps of its finished runs until its end. Each run's [`Secrets`] holds an automaton of
/// about 80 KB, and its two tokens a dozen encoded forms; kept per finished run, they made the
/// supervisor grow with the night (3000 trivial tests at `-j 16`: 325 MB with the automata, then
/// 1.6 KB a run with the forms). Each pair is kept once, as given, in one allocation; its forms
/// are made again when the set is built ([`Secrets::of_values`]), in the order the sets came.
#[derive(Debug, Default)]
pub struct SecretValues {
    /// Each pair packed by [`pack`], with its place in the order first seen.
    kept: std::collections::HashMap<Box<[u8]>, usize>,
}

impl SecretValues {
    /// Adds every pair of `set` not held yet (the first name given to a value keeps it).
    pub fn add(&mut self, set: &Secrets) {
        let (pairs, formed) = match &set.given {
            Some(given) => (given.as_slice(), false),
            None => (set.entries.as_slice(), true),
        };
        let mut key = Vec::new();
        for (name, value) in pairs {
            pack(&mut key, name, value, formed);
            if !self.kept.contains_key(key.as_slice()) {
                let next = self.kept.len();
                self.kept.insert(key.as_slice().into(), next);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// Every form of every pair, in the order the pairs came, each value once (the first name
    /// given to a value keeps it): the entries the merged sets would hold.
    fn entries(&self) -> Vec<(String, Vec<u8>)> {
        let mut kept: Vec<(&[u8], usize)> = self.kept.iter().map(|(k, at)| (&**k, *at)).collect();
        kept.sort_unstable_by_key(|(_, at)| *at);
        let mut seen = std::collections::HashSet::new();
        let mut entries = Vec::new();
        for (key, _) in kept {
            let Some((name, value, formed)) = unpack(key) else {
                continue;
            };
            let forms = if formed {
                vec![(name.to_string(), value.to_vec())]
            } else {
                variants(name, value)
            };
            for (name, value) in forms {
                if seen.insert(value.clone()) {
                    entries.push((name, value));
                }
            }
        }
        entries
    }
}

/// A pair as one run of bytes: whether it is a form already (1) or as given (0), the name's
/// length (4 bytes, little-endian), the name, the value.
fn pack(into: &mut Vec<u8>, name: &str, value: &[u8], formed: bool) {
    into.clear();
    into.push(u8::from(formed));
    into.extend_from_slice(&u32::try_from(name.len()).unwrap_or(u32::MAX).to_le_bytes());
    into.extend_from_slice(name.as_bytes());
    into.extend_from_slice(value);
}

/// The pair [`pack`] made: name, value, formed.
fn unpack(key: &[u8]) -> Option<(&str, &[u8], bool)> {
    let (&formed, rest) = key.split_first()?;
    let (len, rest) = rest.split_first_chunk::<4>()?;
    let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
    let name = std::str::from_utf8(rest.get(..len)?).ok()?;
    Some((name, rest.get(len..)?, formed == 1))
}

impl Secrets {
    pub fn new<I, N, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (N, V)>,
        N: Into<String>,
        V: AsRef<[u8]>,
    {
        let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
        let mut given = Vec::new();
        for (name, value) in pairs {
            let (name, value) = (name.into(), value.as_ref().to_vec());
            if value.is_empty() {
                continue;
            }
            for variant in variants(&name, &value) {
                if !entries.iter().any(|(_, v)| *v == variant.1) {
                    entries.push(variant);
                }
            }
            given.push((name, value));
        }
        Self {
            given: Some(given),
            ..Self::from_entries(entries)
        }
    }

    /// One set holding every value of `sets` (the first name given to a value keeps it): a text
    /// is then searched once, not once per set. The suite's files quote every run, each with
    /// secrets of its own (its tokens), and a pass per run over every string made the suite's
    /// end grow with the square of its runs.
    pub fn merged<'a>(sets: impl IntoIterator<Item = &'a Secrets>) -> Self {
        let mut seen = std::collections::HashSet::new();
        let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
        for set in sets {
            for (name, value) in &set.entries {
                if seen.insert(value.clone()) {
                    entries.push((name.clone(), value.clone()));
                }
            }
        }
        Self::from_entries(entries)
    }

    /// Every value of `values` as one set (see [`SecretValues`]).
    pub fn of_values(values: &SecretValues) -> Self {
        Self::from_entries(values.entries())
    }

    fn from_entries(mut entries: Vec<(String, Vec<u8>)>) -> Self {
        entries.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
        let longest = entries.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
        // No automaton for no secret (most suites' own set): building one is not free.
        let finder = (!entries.is_empty())
            .then(|| {
                // The crate's own choice (a DFA for a run's dozen patterns): a contiguous NFA
                // builds faster but cut the log capture's throughput by a fifth.
                aho_corasick::AhoCorasick::builder()
                    .match_kind(aho_corasick::MatchKind::LeftmostLongest)
                    .build(entries.iter().map(|(_, v)| v))
                    .ok()
            })
            .flatten();
        Self {
            entries,
            finder,
            longest,
            given: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Redacts a whole, complete text.
    pub fn redact_str(&self, text: &str) -> String {
        // Most texts hold no secret: then no copy through the lossy UTF-8 check.
        if self
            .finder
            .as_ref()
            .is_none_or(|f| !f.is_match(text.as_bytes()))
        {
            return text.to_string();
        }
        let mut out = Vec::with_capacity(text.len());
        self.scan(text.as_bytes(), &mut out, true);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Redacts complete bytes.
    pub fn redact_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len());
        self.scan(bytes, &mut out, true);
        out
    }

    /// Whether more data could still make `rest` (the end of the data so far) a secret.
    fn could_grow(&self, rest: &[u8]) -> bool {
        rest.len() < self.longest
            && self
                .entries
                .iter()
                .any(|(_, v)| v.len() > rest.len() && v.starts_with(rest))
    }

    /// The first position at or after `from` where the rest of `data` could still grow into a
    /// secret (only the last `longest - 1` bytes can); `data.len()` when none.
    fn hold_from(&self, data: &[u8], from: usize) -> usize {
        let start = from.max(data.len().saturating_sub(self.longest.saturating_sub(1)));
        (start..data.len())
            .find(|&i| self.could_grow(&data[i..]))
            .unwrap_or(data.len())
    }

    /// Writes the redacted form of `data` to `out`. When `complete` is false, a tail of `data`
    /// that could be the start of a secret is held back and its length returned, so the caller
    /// can prepend it to the next chunk.
    fn scan(&self, data: &[u8], out: &mut Vec<u8>, complete: bool) -> usize {
        let Some(finder) = &self.finder else {
            out.extend_from_slice(data);
            return 0;
        };
        let mut pos = 0;
        let mut hold = if complete {
            data.len()
        } else {
            self.hold_from(data, 0)
        };
        for m in finder.find_iter(data) {
            // A match at or past the hold may be the start of a longer secret: wait for more.
            if m.start() >= hold {
                break;
            }
            out.extend_from_slice(&data[pos..m.start()]);
            out.extend_from_slice(b"[REDACTED:");
            out.extend_from_slice(self.entries[m.pattern().as_usize()].0.as_bytes());
            out.push(b']');
            pos = m.end();
            if !complete && pos > hold {
                hold = self.hold_from(data, pos);
            }
        }
        let hold = hold.max(pos);
        out.extend_from_slice(&data[pos..hold]);
        data.len() - hold
    }
}

/// Values this short are redacted as written only: their encodings would be too short to tell
/// from ordinary text.
const MIN_ENCODED_SECRET: usize = 8;

/// The forms of a secret that are redacted: as written; with `\n` as `\r\n` (a terminal prints
/// a multi-line value so); and, for values of [`MIN_ENCODED_SECRET`] bytes or more, its base64
/// (the part of it that does not depend on the bytes around the value, at each of the three
/// alignments, in both alphabets) and its URL-encoding.
fn variants(name: &str, value: &[u8]) -> Vec<(String, Vec<u8>)> {
    use base64::Engine;
    let mut out = vec![(name.to_string(), value.to_vec())];
    if value.contains(&b'\n') {
        let mut crlf = Vec::with_capacity(value.len() + 8);
        for &b in value {
            if b == b'\n' && crlf.last() != Some(&b'\r') {
                crlf.push(b'\r');
            }
            crlf.push(b);
        }
        out.push((name.to_string(), crlf));
    }
    if value.len() < MIN_ENCODED_SECRET {
        return out;
    }
    let label = format!("{name}:base64");
    for shift in 0..3usize {
        let mut shifted = vec![0u8; shift];
        shifted.extend_from_slice(value);
        // Character i holds bits 6i..6i+6; the value's bits are 8·shift..8·(shift+len).
        let start = (shift * 8).div_ceil(6);
        let end = (shift + value.len()) * 8 / 6;
        for engine in [
            &base64::engine::general_purpose::STANDARD_NO_PAD,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ] {
            let encoded = engine.encode(&shifted);
            if let Some(part) = encoded.as_bytes().get(start..end) {
                if part.len() >= MIN_ENCODED_SECRET {
                    out.push((label.clone(), part.to_vec()));
                }
            }
        }
    }
    let url = url_encode(value);
    if url != value {
        out.push((format!("{name}:url"), url));
    }
    out
}

/// Percent-encoding of everything but RFC 3986's unreserved characters, as URL and form
/// encoders write a value.
fn url_encode(value: &[u8]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(value.len() * 3);
    for &b in value {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
    out
}

/// Redacts a stream of chunks. Holds back at most the longest secret's length minus one byte.
#[derive(Debug)]
pub struct StreamRedactor {
    secrets: Arc<Secrets>,
    pending: Vec<u8>,
}

impl StreamRedactor {
    pub fn new(secrets: Arc<Secrets>) -> Self {
        Self {
            secrets,
            pending: Vec::new(),
        }
    }

    /// Feeds one chunk; returns the bytes that are now safe to write.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if self.secrets.is_empty() {
            return chunk.to_vec();
        }
        let mut data = std::mem::take(&mut self.pending);
        data.extend_from_slice(chunk);
        let mut out = Vec::with_capacity(data.len());
        let held = self.secrets.scan(&data, &mut out, false);
        self.pending = data[data.len() - held..].to_vec();
        out
    }

    /// The end of the stream: whatever was held back, redacted.
    pub fn finish(&mut self) -> Vec<u8> {
        let data = std::mem::take(&mut self.pending);
        self.secrets.redact_bytes(&data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> Arc<Secrets> {
        Arc::new(Secrets::new([
            ("API_TOKEN", "s3cr3t-token"),
            ("SHORT", "s3c"),
            ("EMPTY", ""),
        ]))
    }

    #[test]
    fn redacts_whole_values_longest_first() {
        let s = secrets();
        assert_eq!(
            s.redact_str("auth s3cr3t-token and s3c."),
            "auth [REDACTED:API_TOKEN] and [REDACTED:SHORT]."
        );
        assert_eq!(s.redact_str("nothing here"), "nothing here");
    }

    #[test]
    fn redacts_values_split_at_every_chunk_boundary() {
        let s = secrets();
        let text = b"x=s3cr3t-token; y=s3cr3t-tok; z=s3c\n";
        let expected = s.redact_bytes(text);
        for cut in 0..=text.len() {
            for cut2 in cut..=text.len() {
                let mut r = StreamRedactor::new(s.clone());
                let mut out = r.push(&text[..cut]);
                out.extend(r.push(&text[cut..cut2]));
                out.extend(r.push(&text[cut2..]));
                out.extend(r.finish());
                assert_eq!(out, expected, "cuts at {cut}, {cut2}");
            }
        }
        assert!(!String::from_utf8_lossy(&expected).contains("s3cr3t-token"));
    }

    #[test]
    fn byte_by_byte_stream_holds_back_little() {
        let s = secrets();
        let mut r = StreamRedactor::new(s);
        let mut out = Vec::new();
        for b in b"abc s3cr3t-token def" {
            out.extend(r.push(&[*b]));
        }
        out.extend(r.finish());
        assert_eq!(out, b"abc [REDACTED:API_TOKEN] def");
    }

    #[test]
    fn no_secrets_passes_through_invalid_utf8() {
        let mut r = StreamRedactor::new(Arc::new(Secrets::default()));
        assert_eq!(r.push(&[0xff, 0xfe]), vec![0xff, 0xfe]);
        assert!(r.finish().is_empty());
    }

    #[test]
    fn base64_url_encoding_and_terminal_line_ends_are_redacted_too() {
        use base64::Engine;
        let s = Secrets::new([("KEY", "line one\nline two?&=")]);
        let b64 = |v: &[u8]| base64::engine::general_purpose::STANDARD.encode(v);
        // Alone, or inside a longer base64 text at every alignment (Basic auth: `user:KEY`).
        for prefix in ["", "u", "us", "user:"] {
            let text = b64(format!("{prefix}line one\nline two?&=").as_bytes());
            let out = s.redact_str(&format!("Authorization: Basic {text}"));
            assert!(out.contains("[REDACTED:KEY:base64]"), "{prefix:?}: {out}");
        }
        let url = "line%20one%0Aline%20two%3F%26%3D";
        assert_eq!(
            s.redact_str(&format!("GET /?k={url}")),
            "GET /?k=[REDACTED:KEY:url]"
        );
        assert_eq!(
            s.redact_str("out: line one\r\nline two?&=\r\n"),
            "out: [REDACTED:KEY]\r\n"
        );
        // A short value is redacted as written only.
        let short = Secrets::new([("PIN", "1234")]);
        assert_eq!(short.redact_str("MTIzNA== 1234"), "MTIzNA== [REDACTED:PIN]");
    }

    #[test]
    fn merged_sets_redact_as_each_would_longest_first() {
        let run_a = Secrets::new([("TOKEN", "token-of-run-a"), ("PIN", "1234")]);
        let run_b = Secrets::new([("TOKEN", "token-of-run-b"), ("LONG", "1234-and-more")]);
        let all = Secrets::merged([&run_a, &run_b]);
        assert_eq!(
            all.redact_str("a token-of-run-a b token-of-run-b c 1234-and-more d 1234"),
            "a [REDACTED:TOKEN] b [REDACTED:TOKEN] c [REDACTED:LONG] d [REDACTED:PIN]"
        );
        // The encodings come along: run b's token in base64.
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode("token-of-run-b");
        assert!(all.redact_str(&b64).starts_with("[REDACTED:TOKEN:base64]"));
        assert!(Secrets::merged([&Secrets::default()]).is_empty());
        assert_eq!(all.redact_str("nothing"), "nothing");
    }

    /// The values kept of finished runs redact as the merged sets would, each value once.
    #[test]
    fn kept_values_redact_as_the_sets_they_came_from() {
        let run_a = Secrets::new([("TOKEN", "token-of-run-a"), ("PIN", "1234")]);
        let run_b = Secrets::new([("TOKEN", "token-of-run-b"), ("LONG", "1234-and-more")]);
        let mut kept = SecretValues::default();
        assert!(kept.is_empty());
        for set in [&run_a, &run_b, &run_a] {
            kept.add(set);
        }
        let text = "a token-of-run-a b token-of-run-b c 1234-and-more d 1234";
        let all = Secrets::of_values(&kept);
        assert_eq!(
            all.redact_str(text),
            Secrets::merged([&run_a, &run_b]).redact_str(text)
        );
        assert_eq!(
            all.entries,
            Secrets::merged([&run_a, &run_b]).entries,
            "the same forms under the same names"
        );
        // Kept as given: a set of sets (no pairs of its own) is kept as its forms.
        let mut again = SecretValues::default();
        again.add(&all);
        again.add(&Secrets::new([("KEY", "a-value-of-its-own")]));
        let merged = Secrets::merged([&all, &Secrets::new([("KEY", "a-value-of-its-own")])]);
        assert_eq!(Secrets::of_values(&again).entries, merged.entries);
    }

    proptest::proptest! {
        /// Streamed in any chunks, the output is the whole text's redaction, with secrets that
        /// overlap and prefix each other.
        #[test]
        fn any_chunking_redacts_as_the_whole(
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["ab", "abcabd", "abcabdx", "cab", "x", "\n", "YWJjYWJk", "a"]),
                0..40,
            ),
            cuts in proptest::collection::vec(0usize..200, 0..6),
        ) {
            let s = Arc::new(Secrets::new([("S1", "abcabd"), ("S2", "cabx"), ("S3", "abcabdxab")]));
            let text: Vec<u8> = parts.concat().into_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(text.len())).collect();
            cuts.sort_unstable();
            let mut r = StreamRedactor::new(Arc::clone(&s));
            let mut out = Vec::new();
            let mut at = 0;
            for cut in cuts.into_iter().chain([text.len()]) {
                out.extend(r.push(&text[at..cut]));
                at = cut;
            }
            out.extend(r.finish());
            proptest::prop_assert_eq!(out, s.redact_bytes(&text));
        }
    }
}
