//! The text every console tool answers with, in Codex's layout (models are trained on it):
//!
//! ```text
//! Chunk ID: 5b7a79
//! Wall time: 0.5005 seconds
//! Process running with session ID 51363      (or: Process exited with code 0)
//! Original token count: 2
//! Output:
//! name?
//! ```
//!
//! Output is stripped of terminal escapes, `\r\n` becomes `\n`, secrets are redacted, and a long
//! output is cut in the middle ([`super::truncate`]).

use super::buffer::Taken;
use super::truncate::{decode, tokens, truncate_around_gap, Truncated};
use crate::model::redact::Secrets;
use std::time::Duration;

/// How the process stood when the call returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Exited(i32),
    Running(u32),
    /// Not a process (the log tools).
    None,
}

/// The rendered answer and the numbers the transcript records.
#[derive(Debug, Clone)]
pub struct Reply {
    pub text: String,
    pub original_tokens: usize,
    /// Bytes of output the call saw (before truncation).
    pub bytes: u64,
}

/// A fresh 6-hex-digit chunk id.
pub fn chunk_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    id[..6].to_string()
}

/// Turns raw terminal output into text: escapes stripped, CRLF to LF, invalid UTF-8 spelled out.
pub fn clean(bytes: &[u8]) -> String {
    let stripped = strip_ansi_escapes::strip(bytes);
    let (text, partial) = decode(&stripped);
    let mut text = text.replace("\r\n", "\n");
    for b in partial {
        text.push_str(&format!("\\x{b:02x}"));
    }
    text
}

/// The answer for output `taken` from a process in `state`, cut to `max_tokens`.
pub fn render(
    taken: &Taken,
    state: State,
    wall: Duration,
    max_tokens: usize,
    secrets: &Secrets,
) -> Reply {
    let head = secrets.redact_str(&clean(&taken.head));
    let tail = secrets.redact_str(&clean(&taken.tail));
    let original_tokens = tokens(usize::try_from(taken.total).unwrap_or(usize::MAX));
    let body = cut(&head, taken.dropped, &tail, max_tokens);
    let lines = head.matches('\n').count() + tail.matches('\n').count();
    let mut text = header(state, wall, original_tokens);
    if body.cut {
        text.push_str(&format!(
            "Warning: truncated output (original token count: {original_tokens})\n\
             Total output lines: {lines}{}\n\n",
            if taken.dropped > 0 { "+" } else { "" }
        ));
    }
    text.push_str(&body.text);
    Reply {
        text,
        original_tokens,
        bytes: taken.total,
    }
}

/// The status lines down to `Output:`.
pub fn header(state: State, wall: Duration, original_tokens: usize) -> String {
    let mut text = format!(
        "Chunk ID: {}\nWall time: {:.4} seconds\n",
        chunk_id(),
        wall.as_secs_f64()
    );
    match state {
        State::Exited(code) => text.push_str(&format!("Process exited with code {code}\n")),
        State::Running(id) => text.push_str(&format!("Process running with session ID {id}\n")),
        State::None => {}
    }
    text.push_str(&format!(
        "Original token count: {original_tokens}\nOutput:\n"
    ));
    text
}

/// Head and tail with `dropped` bytes lost between them, cut to `max_tokens` around the gap.
fn cut(head: &str, dropped: u64, tail: &str, max_tokens: usize) -> Truncated {
    let mut whole = String::with_capacity(head.len() + tail.len());
    whole.push_str(head);
    whole.push_str(tail);
    let gap = (dropped > 0).then(|| {
        (
            head.len(),
            usize::try_from(dropped).unwrap_or(usize::MAX / 2),
        )
    });
    truncate_around_gap(&whole, gap, max_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(head: &[u8], dropped: u64, tail: &[u8]) -> Taken {
        Taken {
            head: head.to_vec(),
            dropped,
            tail: tail.to_vec(),
            total: head.len() as u64 + dropped + tail.len() as u64,
        }
    }

    #[test]
    fn the_layout_is_codexs() {
        let r = render(
            &taken(b"name? ", 0, b""),
            State::Running(51363),
            Duration::from_millis(500),
            10_000,
            &Secrets::default(),
        );
        let lines: Vec<&str> = r.text.lines().collect();
        assert!(
            lines[0].starts_with("Chunk ID: ") && lines[0].len() == 16,
            "{}",
            r.text
        );
        assert_eq!(lines[1], "Wall time: 0.5000 seconds");
        assert_eq!(lines[2], "Process running with session ID 51363");
        assert_eq!(lines[3], "Original token count: 2");
        assert_eq!(lines[4], "Output:");
        assert!(r.text.ends_with("Output:\nname? "));
    }

    #[test]
    fn terminal_output_is_cleaned_and_secrets_redacted() {
        let secrets = Secrets::new([("TOKEN", "s3cr3t-value")]);
        let r = render(
            &taken(b"\x1b[31mred\x1b[0m\r\nkey s3cr3t-value\r\n", 0, b""),
            State::Exited(0),
            Duration::ZERO,
            10_000,
            &secrets,
        );
        assert!(r.text.contains("Process exited with code 0\n"));
        assert!(
            r.text.ends_with("Output:\nred\nkey [REDACTED:TOKEN]\n"),
            "{}",
            r.text
        );
    }

    #[test]
    fn a_flood_is_cut_around_the_gap_with_a_warning() {
        let head: String = (0..1000).map(|i| format!("h{i}\n")).collect();
        let tail: String = (0..1000).map(|i| format!("t{i}\n")).collect();
        let r = render(
            &taken(head.as_bytes(), 1 << 20, tail.as_bytes()),
            State::Exited(0),
            Duration::ZERO,
            100,
            &Secrets::default(),
        );
        let output = r.text.split_once("Output:\n").expect("output").1;
        assert!(output.starts_with("Warning: truncated output"), "{output}");
        let body = output.split_once("\n\n").expect("body").1;
        assert!(body.starts_with("h0\n"), "{body}");
        assert!(body.ends_with("t999\n"), "{body}");
        assert!(body.contains(" tokens truncated…"), "{body}");
        assert!(body.len() <= 400, "{} bytes", body.len());
    }
}
