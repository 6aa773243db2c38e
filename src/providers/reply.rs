//! One reply being read: the marker scanner plus what the step keeps from it. Log and evidence
//! markers become [`AgentEvent`]s the moment their line is complete; the deciding result marker is
//! the last one. Everything kept or sent is redacted.

use super::{AgentEvent, StepVerdict};
use crate::model::ids::StepId;
use crate::model::markers::{Evidence, Marker, MarkerScanner, ResultMarker, ResultVerdict};
use crate::model::outcome::StepStatus;
use crate::model::redact::Secrets;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

#[derive(Debug)]
pub struct ReplyCollector {
    step_id: StepId,
    scanner: MarkerScanner,
    logs: Vec<String>,
    evidence: Vec<Evidence>,
    events: UnboundedSender<AgentEvent>,
    secrets: Arc<Secrets>,
    markers: Vec<Marker>,
    /// `BUGATTI_FACT` lines, redacted (asked for after a pass: docs/replay.md).
    facts: Vec<String>,
    /// Evidence paths are relative to the run directory; absolute ones inside it are made so.
    run_dir: Option<PathBuf>,
}

impl ReplyCollector {
    pub fn new(
        step_id: StepId,
        events: UnboundedSender<AgentEvent>,
        secrets: Arc<Secrets>,
    ) -> Self {
        Self {
            step_id,
            scanner: MarkerScanner::new(),
            logs: Vec::new(),
            evidence: Vec::new(),
            events,
            secrets,
            markers: Vec::new(),
            facts: Vec::new(),
            run_dir: None,
        }
    }

    /// Evidence written with an absolute path inside `run_dir` is recorded relative to it.
    pub fn relative_to(mut self, run_dir: &Path) -> Self {
        self.run_dir = Some(run_dir.to_path_buf());
        self
    }

    fn evidence_path(&self, path: &str) -> String {
        let relative = self
            .run_dir
            .as_deref()
            .and_then(|dir| Path::new(path).strip_prefix(dir).ok())
            .and_then(|p| p.to_str());
        relative.unwrap_or(path).to_string()
    }

    /// Feeds output; returns true when a result marker line completed in this chunk.
    pub fn push(&mut self, chunk: &[u8]) -> bool {
        self.scanner.push(chunk, &mut self.markers);
        self.dispatch()
    }

    /// The end of the reply: a last line without newline counts.
    pub fn finish(&mut self) -> bool {
        self.scanner.finish(&mut self.markers);
        self.dispatch()
    }

    /// Feeds one complete text (a Claude Code text block): its own lines, then a line break.
    pub fn push_text(&mut self, text: &str) -> bool {
        let a = self.push(text.as_bytes());
        let b = self.finish();
        a || b
    }

    pub fn last_result(&self) -> Option<&ResultMarker> {
        self.scanner.last_result()
    }

    pub fn bytes_seen(&self) -> u64 {
        self.scanner.bytes_seen()
    }

    fn dispatch(&mut self) -> bool {
        let mut saw_result = false;
        let markers = std::mem::take(&mut self.markers);
        for marker in markers {
            match marker {
                Marker::Result(_) => saw_result = true,
                Marker::Log(message) => {
                    let message = self.secrets.redact_str(&message);
                    let _ = self.events.send(AgentEvent::Log {
                        step_id: self.step_id,
                        message: message.clone(),
                    });
                    self.logs.push(message);
                }
                Marker::Evidence(evidence) => {
                    let evidence = Evidence {
                        kind: evidence.kind,
                        path: self.secrets.redact_str(&self.evidence_path(&evidence.path)),
                    };
                    let _ = self.events.send(AgentEvent::Evidence {
                        step_id: self.step_id,
                        evidence: evidence.clone(),
                    });
                    self.evidence.push(evidence);
                }
                Marker::Fact(fact) => self.facts.push(self.secrets.redact_str(&fact)),
            }
        }
        saw_result
    }

    /// The verdict: from `result` when given (an authoritative final text), else from the last
    /// marker of the reply; no marker at all is a protocol error.
    pub fn verdict(&self, result: Option<&ResultMarker>) -> StepVerdict {
        let mut verdict = match result.or(self.last_result()) {
            Some(marker) => {
                let status = match marker.verdict {
                    ResultVerdict::Ok => StepStatus::Ok,
                    ResultVerdict::Warn => StepStatus::Warn,
                    ResultVerdict::Error => StepStatus::Error,
                };
                StepVerdict::new(self.step_id, status, self.secrets.redact_str(&marker.text))
            }
            None => StepVerdict::new(
                self.step_id,
                StepStatus::ProtocolError,
                format!(
                    "the agent's reply ({} bytes) has no result marker line \
                     (RESULT OK, RESULT WARN: …, RESULT ERROR: …)",
                    self.bytes_seen()
                ),
            ),
        };
        self.fill(&mut verdict);
        verdict
    }

    /// A verdict decided by the harness (timeout, death), carrying the logs seen so far.
    pub fn verdict_with(&self, status: StepStatus, message: impl Into<String>) -> StepVerdict {
        let mut verdict = StepVerdict::new(
            self.step_id,
            status,
            self.secrets.redact_str(&message.into()),
        );
        self.fill(&mut verdict);
        verdict
    }

    /// The verdict of a step cut short by shutdown (not by its own outcome).
    pub fn interrupted_verdict(&self) -> StepVerdict {
        let mut verdict = self.verdict_with(
            StepStatus::Error,
            "step interrupted: the session is stopping",
        );
        verdict.interrupted = true;
        verdict
    }

    fn fill(&self, verdict: &mut StepVerdict) {
        verdict.logs = self.logs.clone();
        verdict.evidence = self.evidence.clone();
        verdict.facts = self.facts.clone();
    }
}
