//! Console text shaped to the terminal: its width (or 80 columns when unknown), lines cut with
//! `…`, messages wrapped at words, and multi-line messages (a diagnosis, then a log tail) kept a
//! line per line. Used by the live view ([`crate::report::live::console::LiveView`]).

use std::io::IsTerminal;

use crate::report::ground::printable::{escape_controls, Newlines};

/// Console lines fit the terminal's width; this many columns when it is unknown (a pipe, a CI
/// log), so an 80-column terminal or log viewer shows them whole.
pub const DEFAULT_WIDTH: usize = 80;

/// Narrower than this, cutting and wrapping would leave too little of a line to read.
const MIN_WIDTH: usize = 40;

/// How many lines of a failure's message (a diagnosis, then a log tail) the console shows; the
/// whole message is in the run's report.
const MESSAGE_LINES: usize = 24;

/// The columns console lines may use: the terminal's width when stdout is one, else `COLUMNS`
/// when it is set (as `ls` and `git` honour it), else [`DEFAULT_WIDTH`].
pub fn terminal_width() -> usize {
    let from_terminal = std::io::stdout()
        .is_terminal()
        .then(|| console::Term::stdout().size_checked())
        .flatten()
        .map(|(_rows, cols)| usize::from(cols));
    let from_env = || {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
    };
    from_terminal
        .or_else(from_env)
        .filter(|&w| w > 0)
        .map_or(DEFAULT_WIDTH, |w| w.max(MIN_WIDTH))
}

/// `line` cut to `width` columns, ending in `…` when cut.
pub(super) fn fit(line: &str, width: usize) -> String {
    console::truncate_str(line, width, "…").into_owned()
}

/// `text` wrapped at word boundaries into lines of at most `width` columns, each after
/// `indent`. A word longer than a line (a path, a URL) gets a line of its own, whole: a path cut
/// in two can be neither clicked nor copied.
pub(super) fn wrap(text: &str, indent: &str, width: usize) -> String {
    let room = width.saturating_sub(indent.len()).max(20);
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for word in text.split(' ') {
        let word = word.to_string();
        loop {
            let used = console::measure_text_width(&current);
            let len = console::measure_text_width(&word);
            if !current.is_empty() && used + 1 + len > room {
                lines.push(std::mem::take(&mut current));
                continue;
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(&word);
            break;
        }
    }
    if !current.is_empty() || lines.is_empty() {
        lines.push(current);
    }
    lines
        .iter()
        .map(|l| format!("{indent}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A message that may span lines (a diagnosis, then a command's log tail) under `indent`: its
/// first line wrapped, each later line one console line, whole (a log line is the cause: it is
/// neither cut nor joined with the next), at most [`MESSAGE_LINES`] of them. Control characters
/// are escaped line by line, so a log tail reads as lines rather than as one line with `\n` in it.
pub(super) fn message_block(text: &str, indent: &str, width: usize) -> String {
    let mut lines = text.trim_end().lines();
    let first = lines.next().unwrap_or_default();
    let mut out = wrap(&escape_controls(first, Newlines::Escape), indent, width);
    let rest: Vec<&str> = lines.collect();
    for line in rest.iter().take(MESSAGE_LINES) {
        push_line(&mut out, indent, line);
    }
    if rest.len() > MESSAGE_LINES {
        out.push_str(&format!(
            "\n{indent}… {} more lines in the report",
            rest.len() - MESSAGE_LINES
        ));
    }
    out
}

/// A failure event's line: its first line whole (the cause, never cut), each later line (a log
/// tail) whole on a line of its own, indented under `prefix` (the run's label).
pub(super) fn failure_lines(prefix: &str, line: &str) -> String {
    let mut lines = line.trim_end().lines();
    let mut out = escape_controls(
        &format!("{prefix}{}", lines.next().unwrap_or_default()),
        Newlines::Escape,
    )
    .into_owned();
    let indent = format!("{}  ", " ".repeat(console::measure_text_width(prefix)));
    for more in lines {
        push_line(&mut out, &indent, more);
    }
    out
}

/// One more line of a message after `indent`, whole, its control characters escaped.
fn push_line(out: &mut String, indent: &str, line: &str) {
    out.push('\n');
    out.push_str(indent);
    out.push_str(&escape_controls(line, Newlines::Escape));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_block_wraps_its_first_line_and_keeps_the_rest_a_line_each() {
        let text = "setup command `migrate` failed with exit code 4; last lines of /tmp/x/logs/migrate.log:\nmigrating\nno such table: users\n";
        let block = message_block(text, "      ", 80);
        let lines: Vec<&str> = block.lines().collect();
        assert!(lines.len() >= 4, "{block}");
        assert!(lines.iter().all(|l| l.starts_with("      ")), "{block}");
        assert_eq!(lines[lines.len() - 2].trim(), "migrating", "{block}");
        assert_eq!(lines[lines.len() - 1].trim(), "no such table: users");
        assert!(block.lines().all(|l| l.chars().count() <= 80), "{block}");
        // A long log line stays whole.
        let long = format!("first\n{}", "x".repeat(120));
        assert!(message_block(&long, "  ", 80).contains(&"x".repeat(120)));
    }

    #[test]
    fn a_word_longer_than_a_line_is_kept_whole() {
        let path = format!("/var/tmp/{}x.sql", "deep/".repeat(20));
        let block = wrap(&format!("see {path} for more"), "  ", 40);
        assert!(block.lines().any(|l| l.trim() == path), "{block}");
    }

    #[test]
    fn a_failure_line_keeps_its_cause_whole_and_its_tail_below() {
        let out = failure_lines("[a 1f] ", "FAILED: exit 4; log tail:\nline one\nline two");
        assert_eq!(
            out,
            "[a 1f] FAILED: exit 4; log tail:\n         line one\n         line two"
        );
    }
}
