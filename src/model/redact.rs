//! Secret redaction for every artifact and console line: `[REDACTED:NAME]` in place of a value,
//! also when a value arrives split across output chunks.

use std::sync::Arc;

/// The secrets of a session: names and their values. Empty values are ignored (they would match
/// everywhere).
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// Longest value first, so that a secret containing another is replaced whole.
    entries: Vec<(String, Vec<u8>)>,
    /// `first_byte[b]` is true when some secret starts with byte `b`: lets the scan skip fast.
    first_byte: Vec<bool>,
    /// The distinct first bytes of the secrets.
    firsts: Vec<u8>,
    longest: usize,
}

impl Secrets {
    pub fn new<I, N, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (N, V)>,
        N: Into<String>,
        V: AsRef<[u8]>,
    {
        let mut entries: Vec<(String, Vec<u8>)> = pairs
            .into_iter()
            .map(|(n, v)| (n.into(), v.as_ref().to_vec()))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        entries.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
        let mut first_byte = vec![false; 256];
        for (_, value) in &entries {
            if let Some(&b) = value.first() {
                first_byte[b as usize] = true;
            }
        }
        let longest = entries.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
        let firsts = (0..=255u8).filter(|b| first_byte[*b as usize]).collect();
        Self {
            entries,
            first_byte,
            firsts,
            longest,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Redacts a whole, complete text.
    pub fn redact_str(&self, text: &str) -> String {
        if self.is_empty() {
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

    /// Where the next byte that could start a secret is. With up to three distinct first bytes
    /// (the common case) this is a vectorized memchr: redaction runs over every byte of every log.
    fn next_candidate(&self, data: &[u8]) -> Option<usize> {
        match self.firsts.as_slice() {
            [a] => memchr::memchr(*a, data),
            [a, b] => memchr::memchr2(*a, *b, data),
            [a, b, c] => memchr::memchr3(*a, *b, *c, data),
            _ => data.iter().position(|&c| self.first_byte[c as usize]),
        }
    }

    /// Writes the redacted form of `data` to `out`. When `complete` is false, a tail of `data`
    /// that could be the start of a secret is held back and its length returned, so the caller
    /// can prepend it to the next chunk.
    fn scan(&self, data: &[u8], out: &mut Vec<u8>, complete: bool) -> usize {
        let mut i = 0;
        'outer: while i < data.len() {
            let b = data[i];
            if !self.first_byte[b as usize] {
                // Copy the run of bytes that cannot start a secret in one go.
                let run_end = self
                    .next_candidate(&data[i..])
                    .map_or(data.len(), |p| i + p);
                out.extend_from_slice(&data[i..run_end]);
                i = run_end;
                continue;
            }
            let rest = &data[i..];
            // The rest of the data could still grow into a (longer) secret: wait for more.
            if !complete
                && rest.len() < self.longest
                && self
                    .entries
                    .iter()
                    .any(|(_, v)| v.len() > rest.len() && v.starts_with(rest))
            {
                return data.len() - i;
            }
            for (name, value) in &self.entries {
                if rest.starts_with(value) {
                    out.extend_from_slice(b"[REDACTED:");
                    out.extend_from_slice(name.as_bytes());
                    out.push(b']');
                    i += value.len();
                    continue 'outer;
                }
            }
            out.push(b);
            i += 1;
        }
        0
    }
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
}
