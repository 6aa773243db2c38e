//! What a step leaves in the run's events besides its verdict: the console calls it made, the
//! agent's news (logs, evidence, restarts), the browser's evidence and what its console makes of
//! the verdict, the harness logs' excerpt of a step that did not pass.

use super::*;
use crate::console::record::CallRecord;
use crate::model::ids::StepId;
use crate::model::tool_call::ToolCall;

/// The console's own MCP server is `bugatti`: a call to it is a console call, recorded there.
fn is_console_tool(tool: &str) -> bool {
    tool.starts_with("mcp__bugatti__")
}

/// A tool call in one line for the timeline: its command, else the first of its inputs that
/// names what it touched, else its input as JSON; cut to 160 characters.
fn tool_summary(call: &ToolCall) -> String {
    let line = match &call.shell {
        Some(shell) => shell.command.clone(),
        None => [
            "url",
            "file_path",
            "path",
            "pattern",
            "command",
            "element",
            "text",
        ]
        .iter()
        .find_map(|k| call.input[*k].as_str().map(str::to_string))
        .unwrap_or_else(|| {
            if call.input.is_null() {
                String::new()
            } else {
                call.input.to_string()
            }
        }),
    };
    let line = line.lines().next().unwrap_or_default();
    if line.chars().count() > 160 {
        format!("{}…", line.chars().take(159).collect::<String>())
    } else {
        line.to_string()
    }
}

impl Steps<'_> {
    /// The console calls made since the last step ended, reported with this step.
    pub(super) fn emit_console_calls(&self, step_id: StepId) -> Vec<CallRecord> {
        let Some(server) = &self.kit.console else {
            return Vec::new();
        };
        let calls = server.console().recorder().take_calls();
        for call in calls.iter().cloned() {
            // `at` is when the call ended: it began its duration before.
            let started_at = chrono::DateTime::parse_from_rfc3339(&call.at)
                .ok()
                .map(|end| {
                    end.with_timezone(&chrono::Utc)
                        - chrono::Duration::milliseconds(
                            i64::try_from(call.duration_ms).unwrap_or(0),
                        )
                });
            self.session.emit(EventKind::ConsoleCall {
                step_id,
                summary: call.summary(),
                started_at,
                tool: call.tool,
                duration_ms: call.duration_ms,
                exit_code: call.exit_code,
                bytes: call.bytes,
                is_error: call.is_error,
            });
        }
        calls
    }

    /// The tools the agent itself called during the step, each at the time its stream showed
    /// it; its calls to the console are the console's own records ([`Self::emit_console_calls`]).
    pub(super) fn emit_tool_calls(&self, step_id: StepId, calls: &[ToolCall]) {
        let (now, wall) = (std::time::Instant::now(), chrono::Utc::now());
        let wall_of = |at: std::time::Instant| {
            wall - chrono::Duration::from_std(now.saturating_duration_since(at))
                .unwrap_or_else(|_| chrono::Duration::zero())
        };
        for call in calls.iter().filter(|c| !is_console_tool(&c.tool)) {
            let duration_ms = call.answered.map(|end| {
                u64::try_from(end.saturating_duration_since(call.at).as_millis())
                    .unwrap_or(u64::MAX)
            });
            self.session.emit(EventKind::AgentToolCall {
                step_id,
                tool: call.tool.clone(),
                summary: tool_summary(call),
                started_at: wall_of(call.at),
                duration_ms,
                is_error: call.answer.as_ref().is_some_and(|a| a.is_error)
                    || call
                        .shell
                        .as_ref()
                        .is_some_and(|s| s.exit_code.is_some_and(|c| c != 0)),
            });
        }
    }

    /// The evidence the supervisor takes from the browser at the end of a step, and
    /// what the page's console errors make of a passing verdict. A failed capture is noted on
    /// the step, never fatal.
    pub(super) async fn capture_browser(
        &self,
        id: StepId,
        status: &mut StepStatus,
        message: &mut String,
    ) {
        let Some(browser) = &self.kit.browser else {
            return;
        };
        let capture = browser.end_step(id, &self.session.run_dir()).await;
        for evidence in &capture.evidence {
            self.session.emit(EventKind::Evidence {
                step_id: id,
                kind: evidence.kind().to_string(),
                path: evidence.path().to_string(),
                problem: None,
            });
        }
        for problem in &capture.problems {
            self.session.emit(EventKind::Evidence {
                step_id: id,
                kind: "browser".to_string(),
                path: String::new(),
                problem: Some(format!("not captured: {problem}")),
            });
        }
        let passed = matches!(*status, StepStatus::Ok | StepStatus::Warn);
        // The console's verdict is why the step warned or failed: it comes first, what the step
        // itself said after it.
        let joined = |message: &str, cause: &str| {
            if message.is_empty() {
                cause.to_string()
            } else {
                format!("{cause} — {message}")
            }
        };
        match browser.console_verdict(passed, &capture) {
            None => {}
            Some(crate::browser::session::ConsoleVerdict::Warn(why)) => {
                *status = StepStatus::Warn;
                *message = joined(message, &why);
            }
            Some(crate::browser::session::ConsoleVerdict::Fail(why)) => {
                *status = StepStatus::Error;
                *message = joined(message, &why);
            }
        }
    }

    /// For a step that did not pass: what each harness command logged while it ran. What a
    /// command wrote just before the step failed (a traceback printed before its `500`) may still
    /// be on its way through the log's pump: the logs are given until they are quiet.
    pub(super) async fn emit_excerpt(&self, step_id: StepId, marks: &LogMarks, settled: bool) {
        let logs = self.session.run_paths().logs_dir();
        if settled {
            settle(&logs).await;
        }
        let excerpt = marks.excerpt_since(&logs);
        if !excerpt.is_empty() {
            self.session
                .emit(EventKind::HarnessLogExcerpt { step_id, excerpt });
        }
    }
}

/// A step's log and evidence become run events; the rest (bootstrap notes, the agent's
/// death) is the session actor's to judge.
pub(super) fn pass_on(session: &Driver, event: AgentEvent) {
    match event {
        AgentEvent::Log { step_id, message } if step_id.is_step() => {
            session.emit(EventKind::AgentLog { step_id, message });
        }
        AgentEvent::Restarted { step_id, reason } => {
            session.emit(EventKind::AgentRestarted { step_id, reason });
        }
        AgentEvent::Evidence { step_id, evidence } if step_id.is_step() => {
            let problem = evidence_problem(&session.run_dir(), &evidence.path);
            session.emit(EventKind::Evidence {
                step_id,
                kind: evidence.kind.to_string(),
                path: evidence.path.clone(),
                problem,
            });
        }
        other => {
            let _ = session.myself.cast(SessionMsg::Agent(other));
        }
    }
}

/// How long the harness logs must stay unchanged before a failing step's excerpt is read, and
/// the most it waits (a server that never stops writing).
const LOGS_QUIET: Duration = Duration::from_millis(100);
const LOGS_SETTLE_MAX: Duration = Duration::from_secs(1);

/// Waits until no harness log grew for [`LOGS_QUIET`], at most [`LOGS_SETTLE_MAX`]. Only a step
/// that did not pass waits: a passing step reads no excerpt.
async fn settle(logs: &Path) {
    let started = tokio::time::Instant::now();
    let mut before = LogMarks::take(logs);
    while started.elapsed() < LOGS_SETTLE_MAX {
        tokio::time::sleep(LOGS_QUIET).await;
        let now = LogMarks::take(logs);
        if now == before {
            return;
        }
        before = now;
    }
}
