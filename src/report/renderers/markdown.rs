//! `report.md`: the human-readable record of one run, written for every run however it ended.
//!
//! Best effort: the report is a list of sections, each rendered on its own. A section that fails
//! (an I/O error listing artifacts, a bug that panics) is replaced by a note saying so, and the
//! rest is still written: a partial report is far more useful than none.

use crate::report::ground::printable::{escape_controls, markdown_text, Newlines};
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use chrono::SecondsFormat;

use crate::model::outcome::StepStatus;
use crate::report::records::events::CheckpointAction;
use crate::report::records::page_console;
use crate::report::records::run_record::{CommandStatus, RunRecord};

/// What a section renderer gets.
pub struct ReportInput<'a> {
    pub record: &'a RunRecord,
    pub run_dir: &'a Path,
    /// Problems the reporter met while writing this run's files (shown at the end).
    pub notes: &'a [String],
}

/// One section: its title and a renderer.
pub type Section = (
    &'static str,
    fn(&ReportInput<'_>) -> Result<String, SectionError>,
);

/// Why a section of report.md could not be written (it becomes a note; the rest is written).
#[derive(Debug, thiserror::Error)]
pub enum SectionError {
    #[error(transparent)]
    Format(#[from] std::fmt::Error),
    #[error("listing {path}: {source}")]
    List {
        path: std::path::PathBuf,
        source: walkdir::Error,
    },
}

/// The sections of report.md, in order.
pub const SECTIONS: &[Section] = &[
    ("summary", summary),
    ("skipped commands", skipped),
    ("steps", steps),
    ("step details", step_details),
    ("evidence warnings", evidence_warnings),
    ("replay", replay),
    ("console calls", console_calls),
    ("checkpoints", checkpoints),
    ("commands", commands),
    ("artifacts", artifacts),
    ("effective config", effective_config),
];

/// The whole report.md text (not yet redacted).
pub fn render(input: &ReportInput<'_>) -> String {
    render_sections(input, SECTIONS)
}

/// Renders `sections` in order; a failing or panicking section becomes a note.
pub fn render_sections(input: &ReportInput<'_>, sections: &[Section]) -> String {
    let mut out = String::new();
    let mut failed = Vec::new();
    for (title, render) in sections {
        match catch_unwind(AssertUnwindSafe(|| render(input))) {
            Ok(Ok(text)) => out.push_str(&text),
            Ok(Err(e)) => failed.push(format!("the {title} section could not be written: {e}")),
            Err(panic) => {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_string());
                failed.push(format!("the {title} section could not be written: {why}"));
            }
        }
    }
    if !failed.is_empty() || !input.notes.is_empty() || !input.record.anomalies.is_empty() {
        out.push_str("\n## Notes\n\n");
        for note in failed
            .iter()
            .chain(input.notes)
            .chain(&input.record.anomalies)
        {
            let _ = writeln!(out, "- {}", one_line(note));
        }
    }
    out
}

/// Text made safe for one markdown table cell (no raw HTML or link from an agent or a file).
fn cell(text: &str) -> String {
    markdown_text(text, Newlines::Keep).replace('\n', "<br>")
}

fn one_line(text: &str) -> String {
    markdown_text(text, Newlines::Escape)
}

fn ms(ms: Option<u64>) -> String {
    match ms {
        Some(ms) if ms >= 1000 => format!("{:.1}s", ms as f64 / 1000.0),
        Some(ms) => format!("{ms}ms"),
        None => "—".to_string(),
    }
}

fn status_label(status: StepStatus) -> &'static str {
    match status {
        StepStatus::Ok => "OK",
        StepStatus::Warn => "WARN",
        StepStatus::Error => "ERROR",
        StepStatus::ProtocolError => "PROTOCOL ERROR",
        StepStatus::Timeout => "TIMEOUT",
        StepStatus::OverBudget => "OVER BUDGET",
        StepStatus::Skipped => "skipped",
        StepStatus::Interrupted => "INTERRUPTED",
        StepStatus::NotRun => "not run",
        StepStatus::AgentError => "AGENT ERROR",
    }
}

fn summary(input: &ReportInput<'_>) -> Result<String, SectionError> {
    let r = input.record;
    let mut s = String::new();
    let outcome = r.outcome.map_or("running", |o| o.as_str());
    (|| {
        writeln!(s, "# Bugatti run: {}\n", one_line(&r.identity.test_name))?;
        writeln!(s, "**Outcome: {}**\n", outcome.to_uppercase())?;
        if let Some(fault) = &r.agent_fault {
            writeln!(
                s,
                "**The agent, not the app, failed ({}).** To fix: {}\n",
                fault.kind,
                one_line(&fault.fix)
            )?;
        }
        writeln!(s, "| | |\n|---|---|")?;
        writeln!(s, "| run id | `{}` |", r.identity.run_id)?;
        writeln!(s, "| session id | `{}` |", r.identity.session_id)?;
        writeln!(s, "| suite id | `{}` |", r.identity.suite_id)?;
        writeln!(
            s,
            "| test file | `{}` |",
            cell(&r.identity.test_file).replace('`', "'")
        )?;
        writeln!(s, "| provider | {} |", cell(r.identity.provider.as_str()))?;
        writeln!(s, "| attempt | {} |", r.identity.attempt)?;
        writeln!(
            s,
            "| started | {} |",
            r.identity
                .started_at
                .to_rfc3339_opts(SecondsFormat::Millis, true)
        )?;
        let finished = r.finished_at.map_or("—".to_string(), |t| {
            t.to_rfc3339_opts(SecondsFormat::Millis, true)
        });
        writeln!(s, "| finished | {finished} |")?;
        writeln!(s, "| duration | {} |", ms(r.duration_ms))?;
        writeln!(
            s,
            "| project root | `{}` |",
            cell(&r.identity.project_root).replace('`', "'")
        )?;
        if let Some(cp) = r
            .checkpoints
            .iter()
            .find(|c| c.action == CheckpointAction::Restore)
        {
            writeln!(
                s,
                "| resumed from | checkpoint `{}` (restore {}) |",
                cell(&cp.name),
                cp.status.as_str()
            )?;
        }
        if let Some(cost) = r.cost_usd {
            writeln!(s, "| agent cost | ${cost:.4} |")?;
        }
        if r.agent_turns > 0 || r.input_tokens + r.output_tokens > 0 {
            writeln!(
                s,
                "| agent turns / tokens | {} turns, {} input / {} output tokens |",
                r.agent_turns, r.input_tokens, r.output_tokens
            )?;
        }
        for restart in &r.agent_restarts {
            writeln!(
                s,
                "| agent restarted | during step {}: it {} |",
                restart.step_id,
                cell(&restart.reason)
            )?;
        }
        if let Some(msg) = r.failure_message() {
            writeln!(s, "| reason | {} |", cell(&msg))?;
        }
        writeln!(s)
    })()?;
    Ok(s)
}

fn skipped(input: &ReportInput<'_>) -> Result<String, SectionError> {
    let r = input.record;
    let mut s = String::from("## Skipped commands\n\n");
    if r.skipped_commands.is_empty() {
        s.push_str("None.\n\n");
    } else {
        for name in &r.skipped_commands {
            let _ = writeln!(s, "- `{name}` (not launched; readiness still checked)");
        }
        s.push('\n');
    }
    Ok(s)
}

fn steps(input: &ReportInput<'_>) -> Result<String, SectionError> {
    let mut s = String::from("## Steps\n\n");
    if input.record.steps.is_empty() {
        s.push_str("No steps were planned.\n\n");
        return Ok(s);
    }
    s.push_str("| # | status | duration | source | instruction | message |\n");
    s.push_str("|---|---|---|---|---|---|\n");
    for step in &input.record.steps {
        let p = &step.provenance;
        let mut source = format!("{}#{}", p.source_file, p.source_index);
        if !p.include_chain.is_empty() {
            source = format!("{} (via {})", source, p.include_chain.join(" -> "));
        }
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            step.step_id,
            status_label(step.status),
            ms(step.duration_ms),
            cell(&source),
            cell(&step.instruction),
            cell(step.message.as_deref().unwrap_or(""))
        );
    }
    s.push('\n');
    Ok(s)
}

/// What replay did for each step (docs/replay.md): replayed or by the agent, why, the drift as a diff;
/// nothing when replay did not apply to this run.
fn replay(input: &ReportInput<'_>) -> Result<String, SectionError> {
    let r = input.record;
    if !r.steps.iter().any(|st| st.mode.is_some()) {
        return Ok(String::new());
    }
    let mut s = format!("## Replay\n\n{}", r.replay_counts().describe());
    if let Some(saved) = r.cost_saved_usd {
        let _ = write!(s, "; ${saved:.4} of model cost saved");
    }
    s.push_str(".\n\n");
    for step in r.steps.iter().filter(|st| st.mode.is_some()) {
        let mode = step.mode.map_or("", |m| m.as_str());
        let mut line = format!("- Step {}: **{mode}**", step.step_id);
        if step.replay_audited {
            line.push_str(" (audited)");
        }
        if step.recorded {
            line.push_str(", recorded");
        }
        if let (Some(at), Some(by)) = (&step.replay_recorded_at, &step.replay_recorded_by) {
            let _ = write!(
                line,
                " — recorded {} by {by}",
                at.format("%Y-%m-%d %H:%M UTC")
            );
        }
        if let Some(note) = &step.replay_note {
            let _ = write!(line, " — {}", cell(note));
        }
        let _ = writeln!(s, "{line}");
        for action in &step.replay_actions {
            let _ = writeln!(
                s,
                "\n  `{}`\n\n  ```text\n{}\n  ```\n",
                action.what.replace('`', "'").replace('\n', " "),
                action
                    .output
                    .replace("```", "'''")
                    .lines()
                    .map(|l| format!("  {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        if let Some(drift) = &step.replay_drift {
            let _ = writeln!(
                s,
                "\n  Drift at action {} (`{}`), {} differs:\n\n  ```diff\n{}\n  ```\n",
                drift.action + 1,
                drift.what.replace('`', "'"),
                drift.field,
                drift
                    .diff
                    .replace("```", "'''")
                    .lines()
                    .map(|l| format!("  {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
    s.push('\n');
    Ok(s)
}

/// The agent console calls of each step (docs/console.md); nothing when no step made one.
fn console_calls(input: &ReportInput<'_>) -> Result<String, SectionError> {
    let mut s = String::new();
    for step in input
        .record
        .steps
        .iter()
        .filter(|st| !st.console_calls.is_empty())
    {
        if s.is_empty() {
            s.push_str(
                "## Console calls

What the agent did through its console (full arguments in \
                 `transcripts/console.jsonl`, full output in `console/`).\n\n",
            );
        }
        let _ = writeln!(s, "Step {}:\n", step.step_id);
        for call in &step.console_calls {
            let mut outcome = vec![ms(Some(call.duration_ms)), format!("{} bytes", call.bytes)];
            if let Some(code) = call.exit_code {
                outcome.insert(0, format!("exit {code}"));
            }
            if call.is_error {
                outcome.insert(0, "failed".into());
            }
            // A call without arguments (`list_logs`) shows no empty code span.
            let summary = if call.summary.is_empty() {
                String::new()
            } else {
                format!(
                    " {}",
                    cell(&format!("`{}`", call.summary.replace('`', "'")))
                )
            };
            let _ = writeln!(s, "- `{}`{summary} — {}", call.tool, outcome.join(", "));
        }
        s.push('\n');
    }
    Ok(s)
}

/// Logs, evidence and usage of the steps that need a look: WARN and every failure.
fn step_details(input: &ReportInput<'_>) -> Result<String, SectionError> {
    let mut s = String::new();
    let noteworthy = input
        .record
        .steps
        .iter()
        .filter(|st| st.status == StepStatus::Warn || st.status.is_failure());
    for step in noteworthy {
        if s.is_empty() {
            s.push_str("## Warnings and failures\n\n");
        }
        let _ = writeln!(
            s,
            "### Step {}: {}\n",
            step.step_id,
            status_label(step.status)
        );
        if let Some(msg) = &step.message {
            let _ = writeln!(s, "{}\n", one_line(msg));
        }
        if let Some(sent) = &step.instruction_sent {
            let fence = "`".repeat(3.max(longest_backtick_run(sent) + 1));
            // A replayed step reached no agent: its instruction was only substituted.
            let label = if step.mode == Some(crate::model::replay::StepMode::Replayed) {
                "Instruction (substituted; replayed, no agent was asked)"
            } else {
                "Instruction as sent to the agent"
            };
            let _ = writeln!(
                s,
                "{label}:\n\n{fence}text\n{}\n{fence}\n",
                escape_controls(sent.trim_end(), Newlines::Keep)
            );
        }
        if step.logs.is_empty() {
            s.push_str("No BUGATTI_LOG entries.\n\n");
        } else {
            s.push_str("BUGATTI_LOG entries:\n\n");
            for log in &step.logs {
                let _ = writeln!(s, "- {}", one_line(log));
            }
            s.push('\n');
        }
        if !step.evidence.is_empty() {
            s.push_str("Evidence:\n\n");
            for ev in &step.evidence {
                let exists = input.run_dir.join(&ev.path).exists();
                let missing = if exists { "" } else { " (file not found)" };
                let shown = one_line(&ev.path).replace('`', "'");
                // A link only to a file that is there, as a relative path (never a scheme).
                if exists && !ev.path.contains(':') {
                    let target = ev
                        .path
                        .replace(' ', "%20")
                        .replace(['(', ')', '<', '>'], "");
                    let _ = writeln!(s, "- {}: [`{shown}`]({target})", one_line(&ev.kind));
                } else {
                    let _ = writeln!(s, "- {}: `{shown}`{missing}", one_line(&ev.kind));
                }
            }
            s.push('\n');
        }
        for errors in page_console::of_step(input.run_dir, &step.evidence) {
            let text = errors.lines.join("\n");
            let fence = "`".repeat(3.max(longest_backtick_run(&text) + 1));
            let more = if errors.more {
                ", more in the file"
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "Browser console errors (`{}`{more}):\n\n{fence}text\n{}\n{fence}\n",
                one_line(&errors.path),
                escape_controls(&text, Newlines::Keep)
            );
        }
        for (command, lines) in &step.harness_log_excerpt {
            // A fence longer than any backtick run in the text, so the log cannot end it.
            let fence = "`".repeat(3.max(longest_backtick_run(lines) + 1));
            let _ = writeln!(
                s,
                "Harness log `{command}` while the step ran:\n\n{fence}text\n{}\n{fence}\n",
                escape_controls(lines.trim_end(), Newlines::Keep)
            );
        }
        if let Some(u) = &step.usage {
            let _ = writeln!(
                s,
                "Usage: session {}, {} turns, {}, cost {}\n",
                u.session_id.as_deref().unwrap_or("—"),
                u.turns.map_or("—".to_string(), |t| t.to_string()),
                ms(u.duration_ms),
                u.cost_usd.map_or("—".to_string(), |c| format!("${c:.4}"))
            );
        }
    }
    Ok(s)
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// Evidence the agent named that is not a file inside the run directory, for every step (a
/// passing step's broken link is still a broken link); no section when there is none.
fn evidence_warnings(input: &ReportInput<'_>) -> Result<String, SectionError> {
    let mut s = String::new();
    for step in &input.record.steps {
        for ev in &step.evidence {
            if let Some(problem) = &ev.problem {
                if s.is_empty() {
                    s.push_str("## Evidence warnings\n\n");
                }
                let _ = writeln!(
                    s,
                    "- step {}: {} `{}`: {}",
                    step.step_id,
                    one_line(&ev.kind),
                    one_line(&ev.path).replace('`', "'"),
                    one_line(problem)
                );
            }
        }
    }
    if !s.is_empty() {
        s.push('\n');
    }
    Ok(s)
}

/// `[checkpoint]` saves and restores; no section when there were none.
fn checkpoints(input: &ReportInput<'_>) -> Result<String, SectionError> {
    let r = input.record;
    if r.checkpoints.is_empty() {
        return Ok(String::new());
    }
    let mut s = String::from("## Checkpoints\n\n");
    s.push_str(
        "| checkpoint | action | after step | status | exit code | duration | path | log |\n",
    );
    s.push_str("|---|---|---|---|---|---|---|---|\n");
    for c in &r.checkpoints {
        let mut status = c.status.as_str().to_string();
        if let Some(e) = &c.error {
            status = format!("{status}: {e}");
        }
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} | `{}` | [`{}`]({}) |",
            cell(&c.name),
            c.action.as_str(),
            c.step_id.map_or("—".to_string(), |id| id.to_string()),
            cell(&status),
            c.exit_code.map_or("—".to_string(), |c| c.to_string()),
            ms(c.duration_ms),
            cell(&c.path),
            c.log,
            c.log
        );
    }
    s.push('\n');
    Ok(s)
}

fn commands(input: &ReportInput<'_>) -> Result<String, SectionError> {
    let mut s = String::from("## Commands\n\n");
    if input.record.commands.is_empty() {
        s.push_str("No harness commands.\n\n");
        return Ok(s);
    }
    s.push_str("| name | kind | scope | status | exit code | restarts | teardown | log |\n");
    s.push_str("|---|---|---|---|---|---|---|---|\n");
    for c in &input.record.commands {
        let status = match c.status {
            CommandStatus::Pending => "pending",
            CommandStatus::Running => "running",
            CommandStatus::Ready => "ready",
            CommandStatus::Skipped => "skipped",
            CommandStatus::Exited => "exited",
            CommandStatus::Failed => "failed",
            CommandStatus::TimedOut => "timed out",
        };
        let restarts = c
            .restarts
            .iter()
            .map(|r| format!("#{} after {}", r.attempt, r.exit_status))
            .collect::<Vec<_>>()
            .join("; ");
        let teardown = match (c.teardown, c.scope.as_str()) {
            (Some(t), _) => t.as_str(),
            // Shared by the whole suite: torn down after its last run, recorded in the suite log.
            (None, "suite") => "after the suite",
            (None, _) => "—",
        };
        let mut status = status.to_string();
        if let Some(e) = &c.error {
            status = format!("{status}: {e}");
        }
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | [`{}`]({}) |",
            cell(&c.name),
            cell(&c.kind),
            cell(&c.scope),
            cell(&status),
            c.exit_code.map_or("—".to_string(), |c| c.to_string()),
            if restarts.is_empty() {
                "0".to_string()
            } else {
                cell(&restarts)
            },
            teardown,
            c.log,
            c.log
        );
    }
    s.push('\n');
    for c in &input.record.commands {
        if let Some(bytes) = c.log_truncated_bytes {
            let tail = c.log.strip_suffix(".log").unwrap_or(&c.log);
            let _ = writeln!(
                s,
                "- `{}`: its log reached `[supervisor] max_log_bytes`; the log holds the head, and of the {bytes} bytes after it only the newest are kept, in `{tail}.tail.log.1` then `{tail}.tail.log`.",
                cell(&c.name),
            );
        }
    }
    if input
        .record
        .commands
        .iter()
        .any(|c| c.log_truncated_bytes.is_some())
    {
        s.push('\n');
    }
    Ok(s)
}

/// The files in the run directory, as they are now.
fn artifacts(input: &ReportInput<'_>) -> Result<String, SectionError> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(input.run_dir).sort_by_file_name() {
        let entry = entry.map_err(|source| SectionError::List {
            path: input.run_dir.to_path_buf(),
            source,
        })?;
        if entry.file_type().is_file() {
            if let Ok(rel) = entry.path().strip_prefix(input.run_dir) {
                let name = rel.to_string_lossy().to_string();
                if !name.starts_with(".tmp-") && !name.contains("/.tmp-") {
                    files.push(name);
                }
            }
        }
    }
    if !files.iter().any(|f| f == "report.md") {
        files.push("report.md".to_string());
        files.sort();
    }
    let mut s = format!("## Artifacts\n\nIn `{}`:\n\n", input.run_dir.display());
    for f in files {
        let _ = writeln!(s, "- [`{f}`]({f})");
    }
    s.push('\n');
    Ok(s)
}

fn effective_config(input: &ReportInput<'_>) -> Result<String, SectionError> {
    let mut s = String::from("## Effective config\n\n");
    if input.record.effective_config.is_empty() {
        s.push_str("Not recorded.\n\n");
        return Ok(s);
    }
    s.push_str("| key | value | source |\n|---|---|---|\n");
    for row in &input.record.effective_config {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} |",
            cell(&row.key),
            cell(&row.value),
            cell(&row.source)
        );
    }
    s.push('\n');
    Ok(s)
}
