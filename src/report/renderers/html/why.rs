//! The parts of a step of report.html that say why (docs/reports.md): the failing step's
//! screenshot large with the page's accessibility snapshot as searchable text, a drift's
//! recorded and seen output side by side (the first difference marked, masked tokens
//! highlighted), and "Copy as prompt".

use super::*;
use crate::model::ids::StepId;
use crate::model::replay::Drift;
use crate::report::records::page_console;

/// What the prompt keeps of the transcript's end, of the harness log and of the instruction.
const PROMPT_TRANSCRIPT_TAIL: usize = 3000;
const PROMPT_EXCERPT_BYTES: usize = 4000;
const PROMPT_INSTRUCTION_BYTES: usize = 6000;

/// `text` escaped, each replay mask (`⟨NAME⟩`; `⟨⟨` is a literal `⟨`) highlighted.
fn with_masks(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('⟨') {
        out.push_str(&escape(&rest[..at]));
        let after = &rest[at + '⟨'.len_utf8()..];
        if let Some(literal) = after.strip_prefix('⟨') {
            out.push('⟨');
            rest = literal;
            continue;
        }
        match after.find('⟩') {
            Some(end) if end <= 64 => {
                let name = &after[..end];
                let _ = write!(
                    out,
                    "<mark class=\"mask\" title=\"masked: {} (not compared)\">⟨{}⟩</mark>",
                    escape(name),
                    escape(name)
                );
                rest = &after[end + '⟩'.len_utf8()..];
            }
            _ => {
                out.push('⟨');
                rest = after;
            }
        }
    }
    out.push_str(&escape(rest));
    out
}

/// One side of a drift, its lines numbered, line `first` (0-based) marked as the first difference.
fn side(text: &str, first: Option<usize>) -> String {
    let mut out = String::new();
    for (n, line) in text.lines().enumerate() {
        if Some(n) == first {
            let _ = writeln!(
                out,
                "<mark class=\"first-diff\">{}</mark>",
                with_masks(line)
            );
        } else {
            out.push_str(&with_masks(line));
            out.push('\n');
        }
    }
    out
}

impl ReportPage<'_> {
    /// A failing step's screenshot, large, with its page's accessibility snapshot beside it;
    /// `false` when it could not be inlined (the caller links it).
    pub(super) fn failing_screenshot(&mut self, run_dir: &Path, path: &str) -> bool {
        let Some(data) = self.inline_image(run_dir, path) else {
            return false;
        };
        let href = relative(self.input.report_dir, &run_dir.join(path));
        let _ = write!(
            self.out,
            "<div class=\"failshot\"><figure><img class=\"shot big\" alt=\"screenshot of the page when the step failed ({})\" src=\"{data}\"><figcaption><a href=\"{href}\">{}</a></figcaption></figure>",
            escape(path),
            escape(path)
        );
        let snapshot = artifacts::a11y_snapshot_rel(path);
        match confined::read(run_dir, &snapshot) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                let _ = write!(
                    self.out,
                    "<div class=\"a11y\"><b>Accessibility snapshot</b> <input type=\"search\" class=\"a11y-q\" aria-label=\"search the accessibility snapshot\" placeholder=\"search\" hidden><pre class=\"a11y-tree\">{}</pre></div>",
                    escape(&bounded(&text, 64 * 1024))
                );
            }
            Err(_) => self.w("<div class=\"a11y meta\">No accessibility snapshot was taken with this screenshot.</div>"),
        }
        self.w("</div>");
        true
    }

    /// A drift: recorded and seen side by side, the first differing line marked, masks shown;
    /// the unified diff kept below, folded.
    pub(super) fn drift(&mut self, drift: &Drift) {
        let (expected, seen) = (&drift.expected, &drift.seen);
        let first = expected
            .lines()
            .zip(seen.lines())
            .position(|(a, b)| a != b)
            .or_else(|| {
                let (a, b) = (expected.lines().count(), seen.lines().count());
                (a != b).then(|| a.min(b))
            });
        let _ = write!(
            self.out,
            "<details class=\"drift\" open><summary>replay {}drift at action {} (<code>{}</code>): {} differs{}</summary>",
            if drift.soft { "soft " } else { "" },
            drift.action + 1,
            escape(&bounded(&drift.what, 300)),
            escape(&drift.field),
            first.map_or(String::new(), |n| format!(", first at line {}", n + 1)),
        );
        let _ = write!(
            self.out,
            "<div class=\"sbs\"><div><b>recorded</b><pre class=\"recorded\">{}</pre></div><div><b>seen now</b><pre class=\"seen\">{}</pre></div></div>",
            side(&bounded(expected, 6000), first),
            side(&bounded(seen, 6000), first),
        );
        let _ = write!(
            self.out,
            "<details class=\"udiff\"><summary>unified diff</summary><pre>{}</pre></details></details>",
            escape(&bounded(&drift.diff, 5000))
        );
    }

    /// The text a person would paste into an agent to fix the step, shown folded and copied by
    /// the button (which the script shows: without scripts, the text is there to select).
    pub(super) fn copy_prompt(
        &mut self,
        id: &str,
        record: &RunRecord,
        run_dir: &Path,
        step: &StepRecord,
        transcripts: &HashMap<StepId, String>,
        run_json: Option<&serde_json::Value>,
    ) {
        let mut p = String::new();
        let _ = writeln!(
            p,
            "A test step failed. Find the cause in the app under test (or in the test, if it is wrong) and fix it.\n\nTest: {} ({}), step {}: {}",
            record.identity.test_file,
            record.identity.test_name,
            step.step_id,
            step.status.as_str()
        );
        let instruction = step
            .instruction_sent
            .as_deref()
            .unwrap_or(&step.instruction);
        let _ = writeln!(
            p,
            "\nInstruction:\n{}",
            bounded(instruction.trim_end(), PROMPT_INSTRUCTION_BYTES)
        );
        if let Some(msg) = &step.message {
            let _ = writeln!(p, "\nVerdict: {}", bounded(msg.trim_end(), 2000));
        }
        let excerpts = excerpts(run_json, record, run_dir, step);
        if !excerpts.is_empty() {
            p.push_str("\nHarness log excerpt:\n");
            for (label, text) in excerpts {
                let _ = writeln!(
                    p,
                    "--- {label}\n{}",
                    bounded(text.trim_end(), PROMPT_EXCERPT_BYTES)
                );
            }
        }
        let errors: Vec<String> = page_console::of_step(run_dir, &step.evidence)
            .into_iter()
            .flat_map(|e| e.lines)
            .collect();
        if !errors.is_empty() {
            let last = &errors[errors.len().saturating_sub(5)..];
            let _ = writeln!(p, "\nLast browser console errors:\n{}", last.join("\n"));
        }
        if let Some(text) = transcripts.get(&step.step_id) {
            let mut from = text.len().saturating_sub(PROMPT_TRANSCRIPT_TAIL);
            while !text.is_char_boundary(from) {
                from += 1;
            }
            let _ = writeln!(
                p,
                "\nAgent transcript (its end):\n{}",
                text[from..].trim_end()
            );
        }
        let shown = escape(&p);
        if shown.len() > self.prompt_budget {
            self.w("<div class=\"prompt meta\">Copy as prompt: not on this page (its prompt budget is spent); the step's parts are above.</div>");
            return;
        }
        self.prompt_budget -= shown.len();
        let _ = write!(
            self.out,
            "<div class=\"prompt\"><button type=\"button\" class=\"copy\" data-for=\"p-{id}\" hidden>Copy as prompt</button><details><summary>prompt for an agent</summary><pre class=\"prompt-text\" id=\"p-{id}\">{shown}</pre></details></div>"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_are_highlighted_and_a_doubled_bracket_is_text() {
        assert_eq!(
            with_masks("port ⟨APP_PORT⟩ <b> ⟨⟨x⟩"),
            "port <mark class=\"mask\" title=\"masked: APP_PORT (not compared)\">⟨APP_PORT⟩</mark> &lt;b&gt; ⟨x⟩"
        );
        assert_eq!(
            side("a\nb\n", Some(1)),
            "a\n<mark class=\"first-diff\">b</mark>\n"
        );
    }
}
