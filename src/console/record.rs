//! `transcripts/console.jsonl`: one line per console call — tool, arguments, duration, exit code,
//! bytes — secrets redacted. Kept in memory too (a count per tool and the calls themselves), so
//! the session can put each step's calls in its report.

use super::Answer;
use crate::model::redact::Secrets;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// When it ended (RFC 3339).
    pub at: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub bytes: u64,
    pub is_error: bool,
    /// The whole answer the agent got, secrets redacted: what replay records (docs/replay.md). Kept
    /// in memory only; console.jsonl holds the call, the console log its output.
    #[serde(skip)]
    pub answer: String,
    /// When the call began: orders it among the agent's own tool calls of the same step.
    #[serde(skip)]
    pub began: Option<std::time::Instant>,
}

impl CallRecord {
    /// The call in one line for reports: what it ran, typed, read or waited for.
    pub fn summary(&self) -> String {
        let a = &self.arguments;
        let text = |k: &str| a[k].as_str().unwrap_or_default().to_string();
        let line = match self.tool.as_str() {
            "exec_command" => text("cmd"),
            "write_stdin" => format!(
                "session {}: {}",
                a["session_id"],
                match a["chars"].as_str() {
                    None | Some("") => "(poll)".to_string(),
                    Some(chars) => format!("{chars:?}"),
                }
            ),
            "kill_session" => format!("session {}", a["session_id"]),
            "read_log" => {
                let mut line = text("name");
                if let Some(n) = a["tail_lines"].as_u64() {
                    line.push_str(&format!(" last {n} lines"));
                } else if let Some(o) = a["offset"].as_u64() {
                    line.push_str(&format!(" from byte {o}"));
                }
                if let Some(g) = a["grep"].as_str() {
                    line.push_str(&format!(" grep /{g}/"));
                }
                line
            }
            "wait_for_log" => format!("{} /{}/", text("name"), text("pattern")),
            _ => String::new(),
        };
        let line = line.lines().next().unwrap_or_default().to_string();
        if line.chars().count() > 100 {
            format!("{}…", line.chars().take(99).collect::<String>())
        } else {
            line
        }
    }
}

#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    secrets: Arc<Secrets>,
    state: Mutex<RecorderState>,
}

#[derive(Debug, Default)]
struct RecorderState {
    file: Option<std::fs::File>,
    /// Calls not yet taken by [`Recorder::take_calls`].
    unreported: Vec<CallRecord>,
    failed: bool,
}

impl Recorder {
    pub fn new(path: PathBuf, secrets: Arc<Secrets>) -> Self {
        Self {
            path,
            secrets,
            state: Mutex::new(RecorderState::default()),
        }
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RecorderState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn record(
        &self,
        tool: &str,
        arguments: &serde_json::Value,
        took: Duration,
        answer: &Answer,
    ) {
        // Arguments carry what the agent typed: a secret it echoes must not reach the record.
        let arguments = serde_json::from_str(&self.secrets.redact_str(&arguments.to_string()))
            .unwrap_or(serde_json::Value::Null);
        let call = CallRecord {
            at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            tool: tool.to_string(),
            arguments,
            duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            exit_code: answer.exit_code,
            bytes: answer.bytes,
            is_error: answer.is_error,
            answer: self.secrets.redact_str(&answer.text),
            began: std::time::Instant::now().checked_sub(took),
        };
        let line = match serde_json::to_string(&call) {
            Ok(l) => l,
            Err(_) => return,
        };
        let mut state = self.lock();
        state.unreported.push(call);
        if state.failed {
            return;
        }
        if state.file.is_none() {
            let opened = self
                .path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| {
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&self.path)
                });
            match opened {
                Ok(f) => state.file = Some(f),
                Err(e) => {
                    tracing::warn!("cannot write {}: {e}", self.path.display());
                    state.failed = true;
                    return;
                }
            }
        }
        if let Some(file) = state.file.as_mut() {
            if writeln!(file, "{line}").is_err() {
                state.failed = true;
            }
        }
    }

    /// The calls since the last take (the session reports them with the step they belong to).
    pub fn take_calls(&self) -> Vec<CallRecord> {
        std::mem::take(&mut self.lock().unreported)
    }

    pub fn flush(&self) {
        if let Some(f) = self.lock().file.as_mut() {
            let _ = f.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, arguments: serde_json::Value) -> CallRecord {
        CallRecord {
            at: String::new(),
            tool: tool.into(),
            arguments,
            duration_ms: 1,
            exit_code: None,
            bytes: 0,
            is_error: false,
            answer: String::new(),
            began: None,
        }
    }

    #[test]
    fn summaries_say_what_each_call_did_in_one_line() {
        let s = |t, a| call(t, a).summary();
        assert_eq!(
            s("exec_command", serde_json::json!({"cmd": "psql\n-c 1"})),
            "psql"
        );
        assert_eq!(
            s(
                "write_stdin",
                serde_json::json!({"session_id": 7, "chars": "y\n"})
            ),
            "session 7: \"y\\n\""
        );
        assert_eq!(
            s("write_stdin", serde_json::json!({"session_id": 7})),
            "session 7: (poll)"
        );
        assert_eq!(
            s(
                "read_log",
                serde_json::json!({"name": "app", "tail_lines": 5, "grep": "E"})
            ),
            "app last 5 lines grep /E/"
        );
        assert_eq!(
            s(
                "wait_for_log",
                serde_json::json!({"name": "app", "pattern": "ready"})
            ),
            "app /ready/"
        );
        assert_eq!(
            s("exec_command", serde_json::json!({"cmd": "x".repeat(300)}))
                .chars()
                .count(),
            100
        );
    }

    #[test]
    fn calls_are_appended_redacted_and_taken_once() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("t/console.jsonl");
        let r = Recorder::new(path.clone(), Arc::new(Secrets::new([("K", "topsecret-1")])));
        let answer = Answer {
            text: String::new(),
            is_error: false,
            exit_code: Some(0),
            bytes: 3,
        };
        r.record(
            "exec_command",
            &serde_json::json!({"cmd": "echo topsecret-1"}),
            Duration::from_millis(5),
            &answer,
        );
        r.flush();
        let text = std::fs::read_to_string(&path).expect("written");
        assert!(
            !text.contains("topsecret-1") && text.contains("[REDACTED:K]"),
            "{text}"
        );
        assert_eq!(r.take_calls().len(), 1);
        assert!(r.take_calls().is_empty());
    }
}
