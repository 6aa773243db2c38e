//! The output a console session produced since the last call read it: a bounded head + tail.
//!
//! A program may print a gigabyte between two calls; the supervisor keeps the first and the last
//! [`HALF`] bytes of it and counts what fell out in the middle (the full stream is in the
//! session's `console/<id>.log`). The model sees head and tail anyway (middle truncation), so
//! nothing it would see is lost.

use std::collections::VecDeque;

/// Bytes kept at each end (1 MiB in all, as Codex's `UNIFIED_EXEC_OUTPUT_MAX_BYTES`).
pub const HALF: usize = 512 * 1024;

/// Unread output: its head, its tail, and how many bytes fell out between them.
#[derive(Debug, Default)]
pub struct Pending {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: u64,
    total: u64,
    half: usize,
}

/// What a call takes out of [`Pending`].
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Taken {
    pub head: Vec<u8>,
    /// Bytes lost between head and tail.
    pub dropped: u64,
    pub tail: Vec<u8>,
    /// Every byte that arrived (head + dropped + tail).
    pub total: u64,
}

impl Pending {
    /// A buffer keeping `half` bytes at each end.
    pub fn new(half: usize) -> Self {
        Self {
            half,
            ..Self::default()
        }
    }

    pub fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        let room = self.half.saturating_sub(self.head.len());
        if room > 0 {
            let n = room.min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if data.len() >= self.half {
            self.dropped += (self.tail.len() + data.len() - self.half) as u64;
            self.tail.clear();
            self.tail.extend(&data[data.len() - self.half..]);
            return;
        }
        let over = (self.tail.len() + data.len()).saturating_sub(self.half);
        self.tail.drain(..over);
        self.dropped += over as u64;
        self.tail.extend(data);
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Everything unread, leaving the buffer empty.
    pub fn take(&mut self) -> Taken {
        let taken = Taken {
            head: std::mem::take(&mut self.head),
            dropped: self.dropped,
            tail: self.tail.drain(..).collect(),
            total: self.total,
        };
        self.dropped = 0;
        self.total = 0;
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut p = Pending::new(8);
        p.push(b"abc");
        p.push(b"defghij");
        let t = p.take();
        assert_eq!(
            (t.head.as_slice(), t.dropped, t.tail.as_slice()),
            (&b"abcdefgh"[..], 0, &b"ij"[..])
        );
        assert!(p.is_empty());
    }

    #[test]
    fn a_flood_keeps_both_ends_and_counts_the_middle() {
        let mut p = Pending::new(4);
        for chunk in [&b"0123"[..], b"456789", b"abcdefghij", b"xyz"] {
            p.push(chunk);
        }
        let t = p.take();
        assert_eq!(t.head, b"0123");
        assert_eq!(t.tail, b"jxyz");
        assert_eq!(t.total, 23);
        assert_eq!(t.dropped, 23 - 8);
    }
}
