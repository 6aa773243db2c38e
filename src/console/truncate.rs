//! Middle truncation of console output to a token budget, the way Codex's streamable shell does
//! it (models are trained on its look): keep a head and a tail, cut on UTF-8 character
//! boundaries, preferably at line ends, and put `…N tokens truncated…` where the middle was.
//!
//! A token is 4 bytes (Codex's fallback when it has no tokenizer): the supervisor must not
//! depend on one model's tokenizer.

/// Bytes a token stands for.
pub const BYTES_PER_TOKEN: usize = 4;

/// Tokens `bytes` bytes count as (rounded up).
pub fn tokens(bytes: usize) -> usize {
    bytes.div_ceil(BYTES_PER_TOKEN)
}

/// The result of [`truncate_middle`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncated {
    /// What to show: the text itself, or head + marker + tail.
    pub text: String,
    /// The kept prefix's length in bytes (the whole text when nothing was cut).
    pub head_len: usize,
    /// Where the kept suffix starts in the original text.
    pub tail_start: usize,
    /// Whether the middle was cut (the marker is present).
    pub cut: bool,
}

/// The marker for `removed` bytes.
pub fn marker(removed_bytes: usize) -> String {
    format!("…{} tokens truncated…", tokens(removed_bytes))
}

/// Cuts the middle of `text` so that the result is at most `max_tokens` × 4 bytes (or just the
/// marker, when the budget cannot hold even that). Nothing is cut when the text fits.
pub fn truncate_middle(text: &str, max_tokens: usize) -> Truncated {
    truncate_around_gap(text, None, max_tokens)
}

/// [`truncate_middle`] of a text that already misses `gap.1` bytes at byte `gap.0` (a char
/// boundary): the cut always includes that point, and the marker counts the missing bytes.
pub fn truncate_around_gap(
    text: &str,
    gap: Option<(usize, usize)>,
    max_tokens: usize,
) -> Truncated {
    let budget = max_tokens.saturating_mul(BYTES_PER_TOKEN);
    let missing = gap.map_or(0, |(_, n)| n);
    if missing == 0 && text.len() <= budget {
        return Truncated {
            text: text.to_string(),
            head_len: text.len(),
            tail_start: text.len(),
            cut: false,
        };
    }
    // The marker's own length depends on how much it replaces: settle it (two rounds suffice,
    // a third is a guard against a digit-count change at the boundary).
    let mut marker_len = marker(text.len() + missing).len();
    let mut cut = (0, text.len());
    for _ in 0..3 {
        let keep = budget.saturating_sub(marker_len);
        cut = cut_points(text, keep);
        if let Some((joint, _)) = gap {
            let joint = floor_boundary(text, joint);
            cut = (cut.0.min(joint), cut.1.max(joint));
        }
        let len = marker(cut.1 - cut.0 + missing).len();
        if len <= marker_len {
            break;
        }
        marker_len = len;
    }
    let (head_end, tail_start) = cut;
    let marker = marker(tail_start - head_end + missing);
    // Sized by what is kept, never by the caller's budget (which may be any number).
    let mut out = String::with_capacity(head_end + marker.len() + (text.len() - tail_start));
    out.push_str(&text[..head_end]);
    out.push_str(&marker);
    out.push_str(&text[tail_start..]);
    Truncated {
        text: out,
        head_len: head_end,
        tail_start,
        cut: true,
    }
}

/// Where the head ends and the tail starts, keeping at most `keep` bytes in all.
fn cut_points(text: &str, keep: usize) -> (usize, usize) {
    let keep = keep.min(text.len());
    let head_budget = keep / 2;
    let tail_budget = keep - head_budget;
    let mut head_end = floor_boundary(text, head_budget);
    // Prefer to end the head just after a newline, if one is in its second half.
    if let Some(nl) = text[..head_end].rfind('\n') {
        if nl + 1 >= head_end / 2 {
            head_end = nl + 1;
        }
    }
    let mut tail_start = ceil_boundary(text, text.len() - tail_budget.min(text.len()));
    // Prefer to start the tail at a newline (kept, so the marker stands on a line of its own),
    // if one is in its first half.
    let tail_len = text.len() - tail_start;
    if let Some(rel) = text[tail_start..].find('\n') {
        if rel <= tail_len / 2 {
            tail_start += rel;
        }
    }
    if tail_start < head_end {
        tail_start = head_end;
    }
    (head_end, tail_start)
}

/// The largest char boundary ≤ `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest char boundary ≥ `at`.
fn ceil_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// Decodes `bytes` as UTF-8 without ever producing U+FFFD: invalid bytes are spelled `\xNN`.
/// An incomplete sequence at the very end is returned apart (the rest of the character may
/// come with the next read).
pub fn decode(bytes: &[u8]) -> (String, &[u8]) {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(text) => {
                out.push_str(text);
                return (out, &[]);
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                // from_utf8 said these bytes are valid.
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                match e.error_len() {
                    None => return (out, after),
                    Some(n) => {
                        for b in &after[..n] {
                            out.push_str(&format!("\\x{b:02x}"));
                        }
                        rest = &after[n..];
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_fits_is_untouched() {
        let t = truncate_middle("hello\n", 2);
        assert_eq!(t.text, "hello\n");
        assert!(!t.cut);
    }

    #[test]
    fn the_middle_goes_at_line_ends_with_a_marker() {
        let text: String = (1..=1000).map(|i| format!("{i}\n")).collect();
        let t = truncate_middle(&text, 25);
        assert!(t.cut);
        assert!(t.text.len() <= 100, "{} bytes: {}", t.text.len(), t.text);
        assert!(t.text.starts_with("1\n2\n"), "{}", t.text);
        assert!(t.text.ends_with("\n1000\n"), "{}", t.text);
        let marker_at = t.text.find('…').expect("marker");
        assert_eq!(&t.text[marker_at - 1..marker_at], "\n");
        assert!(t.text.contains(" tokens truncated…\n"), "{}", t.text);
    }

    #[test]
    fn emoji_are_never_split() {
        let text = "😀".repeat(100);
        for budget in 0..60 {
            let t = truncate_middle(&text, budget);
            assert!(!t.text.contains('\u{fffd}'));
            assert!(t.cut);
        }
    }

    #[test]
    fn decode_spells_invalid_bytes_and_keeps_a_partial_char() {
        let (text, rest) = decode(b"a\xffb\xe2\x82");
        assert_eq!(text, "a\\xffb");
        assert_eq!(rest, b"\xe2\x82");
        let (text, rest) = decode("é".as_bytes());
        assert_eq!((text.as_str(), rest), ("é", &b""[..]));
    }
}
