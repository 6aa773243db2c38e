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

/// `text` for one line of markdown prose or a table cell (report.md, summary.md): controls
/// escaped, and nothing that markdown would turn into markup a reader did not write: `<` (raw
/// HTML, autolinks such as `<javascript:…>`) as `&lt;`, the `](` that opens a link target as
/// `]\(`, a table's `|` as `\|`. Line breaks become spaces (`Newlines::Keep`: they stay, for
/// the caller to turn into `<br>` in a table cell).
pub fn markdown_text(text: &str, newlines: Newlines) -> String {
    let text = text.replace("\r\n", "\n");
    let text = match newlines {
        Newlines::Keep => text,
        Newlines::Escape => text.replace('\n', " "),
    };
    escape_controls(&text, newlines)
        .replace('<', "&lt;")
        .replace("](", "]\\(")
        .replace('|', "\\|")
}

/// A duration for people: `420ms`, `3.2s`.
pub fn secs(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_text_leaves_no_html_link_or_control() {
        let t = markdown_text(
            "a\u{1b}[2J\u{7}\0 <script>x</script> [click](javascript:alert(1)) c|d\ne",
            Newlines::Escape,
        );
        assert_eq!(
            t,
            "a\\e[2J\\u{7}\\0 &lt;script>x&lt;/script> [click]\\(javascript:alert(1)) c\\|d e"
        );
    }

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
