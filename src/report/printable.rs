//! Text from agents, commands and file names shown to people: control characters (ESC, NUL, a
//! bare CR, DEL, C1 controls) are written as escapes, so they cannot recolour or rewrite a
//! terminal, hide text in report.md, or split a one-line-per-event CI log.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether a line break in the text stays one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Newlines {
    Keep,
    /// Written as `\n`: the text must stay on one line.
    Escape,
}

/// `text` with its control characters escaped (`\e`, `\0`, `\r`, `\u{9b}`…); tabs stay.
pub fn escape_controls(text: &str, newlines: Newlines) -> Cow<'_, str> {
    let needs = text
        .chars()
        .any(|c| c.is_control() && c != '\t' && (c != '\n' || newlines == Newlines::Escape));
    if !needs {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\t' => out.push(c),
            '\n' if newlines == Newlines::Keep => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            '\u{1b}' => out.push_str("\\e"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_plain_text_is_untouched() {
        assert!(matches!(
            escape_controls("plain text\twith a tab", Newlines::Escape),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            escape_controls("\u{1b}[31mred\u{1b}[0m\0\r\u{7f}\u{9b}", Newlines::Keep),
            "\\e[31mred\\e[0m\\0\\r\\u{7f}\\u{9b}"
        );
        assert_eq!(escape_controls("a\nb", Newlines::Keep), "a\nb");
        assert_eq!(escape_controls("a\nb", Newlines::Escape), "a\\nb");
    }
}
