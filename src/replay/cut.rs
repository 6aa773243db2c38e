//! The output as the provider cut it for the agent (see docs/replay.md): what the agent saw of a
//! large output is what is recorded, so a replay cuts its own output the same way before the two
//! are compared.
//!
//! Claude Code 2.x hands the model a Bash output of more than its limit as a `<persisted-output>`
//! block: the size, the file the whole output was saved to, and a preview of about 2 KB cut at a
//! line end. A recording whose output is such a block is compared with the replayed output put in
//! the same block (the saved file's path as recorded: it names Claude Code's own session).

/// Opens Claude Code's block.
const OPEN: &str = "<persisted-output>\n";
const CLOSE: &str = "</persisted-output>";
/// Claude Code's preview length, in characters.
const PREVIEW_CHARS: usize = 2000;

/// `seen` as Claude Code would have shown it, when `recorded` is a `<persisted-output>` block;
/// `None` otherwise (the output was shown whole).
pub fn as_recorded(recorded: &str, seen: &str) -> Option<String> {
    let rest = recorded.strip_prefix(OPEN)?;
    let first = rest.lines().next()?;
    let path = first.split_once("Full output saved to: ")?.1;
    Some(persisted_block(seen, path))
}

/// Claude Code's `<persisted-output>` block of `output` saved at `path`.
pub fn persisted_block(output: &str, path: &str) -> String {
    let (preview, more) = preview(output);
    format!(
        "{OPEN}Output too large ({}). Full output saved to: {path}\n\nPreview (first {}):\n{preview}{}{CLOSE}",
        size(output.chars().count()),
        size(PREVIEW_CHARS),
        if more { "\n...\n" } else { "\n" }
    )
}

/// The first [`PREVIEW_CHARS`] characters, cut back to the last line end when that keeps more
/// than half; whether anything was left out.
fn preview(text: &str) -> (&str, bool) {
    let Some((limit, _)) = text.char_indices().nth(PREVIEW_CHARS) else {
        return (text, false);
    };
    let head = &text[..limit];
    let end = match head.rfind('\n') {
        Some(at) if head[..at].chars().count() > PREVIEW_CHARS / 2 => at,
        _ => limit,
    };
    (&text[..end], true)
}

/// A size as Claude Code writes it: `512 bytes`, `809.5KB`, `2KB`, `1.2MB`.
fn size(n: usize) -> String {
    let one = |v: f64, unit: &str| {
        let text = format!("{v:.1}");
        format!("{}{unit}", text.strip_suffix(".0").unwrap_or(&text))
    };
    let kb = n as f64 / 1024.0;
    if kb < 1.0 {
        format!("{n} bytes")
    } else if kb < 1024.0 {
        one(kb, "KB")
    } else if kb / 1024.0 < 1024.0 {
        one(kb / 1024.0, "MB")
    } else {
        one(kb / 1024.0 / 1024.0, "GB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize) -> String {
        (1..=n).map(|i| format!("{i} line of output\n")).collect()
    }

    #[test]
    fn a_large_output_is_cut_as_claude_code_cuts_it() {
        // What Claude Code 2.1 sent the model for `seq 1 40000 | sed 's/$/ line of output/'`.
        let path = "/home/u/.claude/projects/-p/1f/tool-results/bvrhfmg0j.txt";
        let block = persisted_block(&lines(40_000), path);
        assert!(block.starts_with(&format!(
            "<persisted-output>\nOutput too large (809.5KB). Full output saved to: {path}\n\n\
             Preview (first 2KB):\n1 line of output\n2 line of output\n"
        )));
        assert!(
            block.ends_with("109 line of output\n110 line of output\n...\n</persisted-output>"),
            "{}",
            &block[block.len() - 120..]
        );
        assert_eq!(as_recorded(&block, &lines(40_000)), Some(block.clone()));
        // Another output is another block: a drift.
        assert_ne!(as_recorded(&block, &lines(39_000)), Some(block.clone()));
        // An output shown whole is compared whole.
        assert_eq!(as_recorded("hello", "hello"), None);
    }

    #[test]
    fn sizes_read_as_claude_code_writes_them() {
        assert_eq!(size(512), "512 bytes");
        assert_eq!(size(2000), "2KB");
        assert_eq!(size(828_894), "809.5KB");
        assert_eq!(size(3 * 1024 * 1024), "3MB");
    }
}
