//! One step of report.html, in stages: its head line, what the agent said, its evidence (the
//! browser console's first errors inline), replay, console calls, the harness log excerpt and the
//! transcript.

use super::*;
use crate::model::ids::RunId;
use crate::model::ids::StepId;
use crate::report::records::page_console;
use crate::report::records::run_record::EvidenceRecord;

impl ReportPage<'_> {
    pub(super) fn step(
        &mut self,
        index: usize,
        record: &RunRecord,
        run_dir: &Path,
        step: &StepRecord,
        transcripts: &HashMap<StepId, String>,
        run_json: Option<&serde_json::Value>,
    ) {
        let bad = step.status.is_failure();
        let id = format!("t{index}-s{}", step.step_id);
        if bad && self.first_failure.is_none() {
            self.first_failure = Some(id.clone());
        }
        self.step_head(&id, bad, record, step);
        self.step_notes(step, bad);
        self.step_evidence(run_dir, &record.identity.run_id, &step.evidence, bad);
        self.step_replay(step);
        self.step_console_calls(step);
        if !step_passed(step.status) && step.status != StepStatus::NotRun {
            self.step_excerpts(run_json, record, run_dir, step);
        }
        if bad {
            self.copy_prompt(&id, record, run_dir, step, transcripts, run_json);
        }
        self.step_transcript(run_dir, step, bad, transcripts);
        self.w("</div>\n");
    }

    /// The opening `<div>` and the head line: link, status, duration, instruction, source.
    fn step_head(&mut self, id: &str, bad: bool, record: &RunRecord, step: &StepRecord) {
        // Where the step was written, when that is not simply step N of the test's own file (an
        // included file): a 2 000-test report repeats nothing it need not.
        let p = &step.provenance;
        let source = if p.source_file != record.identity.test_file || !p.include_chain.is_empty() {
            let mut source = format!("{}#{}", p.source_file, p.source_index);
            if !p.include_chain.is_empty() {
                source = format!("{source} via {}", p.include_chain.join(" → "));
            }
            format!(
                " <span class=\"meta hide-narrow\">{}</span>",
                escape(&source)
            )
        } else {
            String::new()
        };
        // The step's deep link (`#test=…&step=N`) is set by the page's script from the test's
        // `data-file` and the step's `data-step`: the same link, not written 10 000 times.
        let _ = write!(
            self.out,
            "<div class=\"step{}\"{} data-step=\"{}\"><div class=\"head\"><a class=\"sl\">#{}</a> <span class=\"badge b-{}\">{}</span> <span class=\"meta\">{}</span> <span class=\"instr\">{}</span>{source}</div>",
            if bad { " bad" } else { "" },
            // The timeline's bars and the film strip link to a step's id, scripts on or off; a
            // big page gives ids to its failing steps only (the script finds the others).
            if bad || self.all_step_ids {
                format!(" id=\"{id}\"")
            } else {
                String::new()
            },
            step.step_id,
            step.step_id,
            step.status.as_str(),
            step.status.as_str(),
            ms(step.duration_ms),
            escape(&bounded(&step.instruction, 2000)),
        );
    }

    /// The verdict's message, the instruction as sent (failing steps), usage and the agent's logs.
    fn step_notes(&mut self, step: &StepRecord, bad: bool) {
        if let Some(msg) = &step.message {
            let _ = write!(
                self.out,
                "<div class=\"msg\">{}</div>",
                escape(&bounded(msg, 4000))
            );
        }
        if let Some(sent) = step.instruction_sent.as_ref().filter(|_| bad) {
            // A replayed step reached no agent: its instruction was only substituted.
            let label = if step.mode == Some(crate::model::replay::StepMode::Replayed) {
                "instruction (substituted; replayed, no agent was asked)"
            } else {
                "instruction as sent to the agent"
            };
            let _ = write!(
                self.out,
                "<details class=\"sent\"><summary>{label}</summary><pre>{}</pre></details>",
                escape(&bounded(sent, 8000))
            );
        }
        if let Some(u) = &step.usage {
            let mut parts = Vec::new();
            if let Some(t) = u.turns {
                parts.push(format!("{t} turns"));
            }
            if let Some(c) = u.cost_usd {
                parts.push(format!("${c:.4}"));
            }
            if !parts.is_empty() {
                let _ = write!(
                    self.out,
                    "<div class=\"meta\">{}</div>",
                    escape(&parts.join(" · "))
                );
            }
        }
        if !step.logs.is_empty() {
            self.w("<ul class=\"logs\">");
            for log in &step.logs {
                let _ = write!(self.out, "<li>{}</li>", escape(&bounded(log, 2000)));
            }
            self.w("</ul>");
        }
    }

    /// Each piece of evidence, then the first errors of the browser's console during the step.
    fn step_evidence(
        &mut self,
        run_dir: &Path,
        run_id: &RunId,
        evidence: &[EvidenceRecord],
        bad: bool,
    ) {
        for ev in evidence {
            if ev.problem.is_none() && ev.kind == "screenshot" && safe_relative(&ev.path) {
                if bad && self.failing_screenshot(run_dir, &ev.path) {
                    continue;
                }
                if self.in_film.contains(&format!("{run_id}/{}", ev.path)) {
                    let href = relative(self.input.report_dir, &run_dir.join(&ev.path));
                    let _ = write!(
                        self.out,
                        "<div class=\"evidence\">screenshot: <a href=\"{href}\">{}</a> <span class=\"meta\">(in the film strip above)</span></div>",
                        escape(&ev.path)
                    );
                    continue;
                }
            }
            match &ev.problem {
                // Checked when recorded: never followed (a symlink out must not be inlined).
                Some(problem) => {
                    let _ = write!(
                        self.out,
                        "<div class=\"meta\">evidence {}: <code>{}</code> (warning: {})</div>",
                        escape(&ev.kind),
                        escape(&ev.path),
                        escape(problem)
                    );
                }
                None => self.evidence(run_dir, &ev.kind, &ev.path),
            }
        }
        for errors in page_console::of_step(run_dir, evidence) {
            let _ = write!(
                self.out,
                "<div class=\"excerpt\"><b>Browser console errors</b> <span class=\"meta\">{}{}</span><pre class=\"console-errors\">{}</pre></div>",
                escape(&errors.path),
                if errors.more { ", more in the file" } else { "" },
                escape(&errors.lines.join("\n"))
            );
        }
    }

    /// What replay did for the step: its mode, its actions when replayed (when and by whom
    /// recorded), its drift.
    fn step_replay(&mut self, step: &StepRecord) {
        if let Some(mode) = step.mode {
            let mut text = match mode {
                crate::model::replay::StepMode::Replayed => {
                    "replayed without the model".to_string()
                }
                crate::model::replay::StepMode::Agent => "carried out by the agent".to_string(),
                crate::model::replay::StepMode::NotReplayed => {
                    "not replayed, and no agent in this run".to_string()
                }
            };
            if step.replay_audited {
                text.push_str(" (audited)");
            }
            if step.recorded {
                text.push_str(", recorded for replay");
            }
            if let (Some(at), Some(by)) = (&step.replay_recorded_at, &step.replay_recorded_by) {
                text.push_str(&format!(
                    "; recorded {} by {by}",
                    at.format("%Y-%m-%d %H:%M UTC")
                ));
            }
            if let Some(note) = &step.replay_note {
                text.push_str(" — ");
                text.push_str(note);
            }
            let _ = write!(
                self.out,
                "<div class=\"meta replay-{}\">{}</div>",
                mode.as_str(),
                escape(&bounded(&text, 2000))
            );
            if !step.replay_actions.is_empty() {
                let _ = write!(
                    self.out,
                    "<div class=\"reran\"><b>Ran again and matched ({} recorded action{}): the facts this pass rests on</b></div>",
                    step.replay_actions.len(),
                    if step.replay_actions.len() == 1 { "" } else { "s" }
                );
            }
            for action in &step.replay_actions {
                let _ = write!(
                    self.out,
                    "<details class=\"replayed-action\"><summary><code>{}</code></summary><pre>{}</pre></details>",
                    escape(&bounded(&action.what, 500)),
                    escape(&bounded(&action.output, 2000))
                );
            }
            if let Some(drift) = &step.replay_drift {
                self.drift(drift);
            }
        }
    }

    /// The calls the agent made to its console during the step.
    fn step_console_calls(&mut self, step: &StepRecord) {
        if step.console_calls.is_empty() {
            return;
        }
        self.w("<div class=\"console-calls\"><b>Console calls</b><ul>");
        for call in &step.console_calls {
            let mut outcome = vec![
                format!("{} ms", call.duration_ms),
                format!("{} bytes", call.bytes),
            ];
            if let Some(code) = call.exit_code {
                outcome.insert(0, format!("exit {code}"));
            }
            if call.is_error {
                outcome.insert(0, "failed".into());
            }
            let _ = write!(
                self.out,
                "<li><code>{}</code> <code>{}</code> <span class=\"meta\">{}</span></li>",
                escape(&call.tool),
                escape(&bounded(&call.summary, 200)),
                escape(&outcome.join(", "))
            );
        }
        self.w("</ul></div>");
    }

    /// What the harness commands logged while a step that did not pass ran.
    fn step_excerpts(
        &mut self,
        run_json: Option<&serde_json::Value>,
        record: &RunRecord,
        run_dir: &Path,
        step: &StepRecord,
    ) {
        let excerpts = excerpts(run_json, record, run_dir, step);
        if excerpts.is_empty() {
            return;
        }
        self.w("<div class=\"excerpt\"><b>Harness log excerpt</b>");
        for (label, text) in excerpts {
            let _ = write!(
                self.out,
                "<div class=\"meta\">{}</div><pre class=\"harness-log\">{}</pre>",
                escape(&label),
                escape(&bounded(&text, EXCERPT_BYTES as usize))
            );
        }
        self.w("</div>");
    }

    /// The agent's transcript of the step, within the page's budgets (a failing step's first).
    fn step_transcript(
        &mut self,
        run_dir: &Path,
        step: &StepRecord,
        bad: bool,
        transcripts: &HashMap<StepId, String>,
    ) {
        let Some(text) = transcripts.get(&step.step_id) else {
            return;
        };
        let cap = if bad {
            TRANSCRIPT_STEP_BYTES
        } else {
            TRANSCRIPT_STEP_BYTES / 4
        };
        let shown = bounded(text, cap);
        let fits = shown.len() <= self.transcript_budget
            && (bad || shown.len() <= self.passed_transcript_budget);
        if fits {
            self.transcript_budget -= shown.len();
            if !bad {
                self.passed_transcript_budget -= shown.len();
            }
            let _ = write!(
                self.out,
                "<details class=\"transcript\"><summary>agent transcript ({} bytes)</summary><pre>{}</pre></details>",
                text.len(),
                escape(&shown)
            );
        } else if bad {
            let file = relative(self.input.report_dir, &RunPaths::new(run_dir).agent_log());
            let _ = write!(
                self.out,
                "<div class=\"meta\">agent transcript of step {}: <a href=\"{file}\">transcripts/agent.log</a> (not inlined: the page's transcript budget is spent)</div>",
                step.step_id
            );
        }
    }

    fn evidence(&mut self, run_dir: &Path, kind: &str, path: &str) {
        if !safe_relative(path) {
            let _ = write!(
                self.out,
                "<div class=\"meta\">evidence {}: <code>{}</code> (not a path inside the run directory)</div>",
                escape(kind),
                escape(path)
            );
            return;
        }
        let full = run_dir.join(path);
        let href = relative(self.input.report_dir, &full);
        // Only a regular file inside the run, reached without a symbolic link, is read.
        let file = match confined::open_file(run_dir, path) {
            Ok(file) => Some(file),
            Err(Refused::Missing) => None,
            Err(why) => {
                let _ = write!(
                    self.out,
                    "<div class=\"meta\">evidence {}: <code>{}</code> (not read: {})</div>",
                    escape(kind),
                    escape(path),
                    escape(&why.to_string())
                );
                return;
            }
        };
        let size = file
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .map(|m| m.len());
        if let (Some(mime), Some(size), Some(file)) = (image_mime(path), size, file) {
            if size <= INLINE_IMAGE_BYTES && size <= self.image_budget {
                let mut bytes = Vec::new();
                if file.take(size).read_to_end(&mut bytes).is_ok() {
                    self.image_budget -= size;
                    let _ = write!(
                        self.out,
                        "<div class=\"evidence\">{}: <a href=\"{href}\">{}</a><img class=\"shot\" alt=\"{}\" src=\"data:{mime};base64,{}\"></div>",
                        escape(kind),
                        escape(path),
                        escape(path),
                        base64(&bytes)
                    );
                    return;
                }
            }
        }
        let _ = write!(
            self.out,
            "<div class=\"evidence\">{}: <a href=\"{href}\">{}</a>{}</div>",
            escape(kind),
            escape(path),
            if size.is_none() {
                " (file not found)"
            } else {
                ""
            }
        );
    }
}
