//! The recording file: `<dir>/<test path without .test.toml>.replay.json`, one per root test.
//!
//! Users review these files and commit them, so the layout is for a diff: keys always in the same
//! order (struct fields in declaration order, maps sorted), two-space indentation down to each
//! action, and each action (its inputs and full output) on one line of its own, so that a changed
//! output is one changed line in review.

use super::browser_refs::ElementPath;
use super::domains::{Learned, Relation};
use super::files::FileCheck;
use crate::model::ids::StepId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;

/// The version of this layout. A file with a higher one was written by a newer supervisor and is
/// not read (the step goes to the agent, which records it anew). Version 1 masked every
/// timestamp, UUID, duration and hex value up front: its steps are read but not replayed (a miss
/// that says so), and the agent's next pass records them in version 2, with learned masks.
/// Version 3 added the `file` and `browser` kinds of action; its other steps are version 2's.
/// Version 4 gives each learned position its domain (`[line, token, {domain}]`) and each step
/// its timestamps' `relations`; a position of an older version (`[line, token]`) masks nothing
/// until the agent passes it again, and a step without `relations` has them read from its
/// recorded outputs. Version 5 adds each step's `facts`: what the agent said its pass rested on,
/// checked on every replay (a version 4 step has none and is compared as before).
pub const SCHEMA_VERSION: u32 = 5;

/// The first version whose masks are learned: older steps are not replayed.
pub const LEARNED_MASKS_SINCE: u32 = 2;

/// A root test's recording: its steps that replay, in plan order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recording {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema: u32,
    /// The root test file, relative to the project root.
    pub test: String,
    pub steps: Vec<RecordedStep>,
}

/// One step the agent passed, as the ordered actions it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedStep {
    /// The step's 1-based place in the root test's plan.
    pub step: StepId,
    /// Where the instruction was written (`PlannedStep::provenance`).
    pub provenance: String,
    /// [`crate::replay::placeholders::instruction_hash`] of the instruction as sent.
    pub instruction_hash: String,
    /// The provider that passed it (`claude-code`, `codex`, `command`): another one is a miss.
    /// A name no provider has makes the recording unreadable (replay then asks the agent).
    pub provider: crate::model::provider::ProviderKind,
    /// RFC 3339; `max_age_days` counts from here.
    pub recorded_at: chrono::DateTime<chrono::Utc>,
    /// When the recording's run started: with `recorded_at`, the window in which a timestamp
    /// the agent saw counted as current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_started_at: Option<chrono::DateTime<chrono::Utc>>,
    /// What the model cost for this step, as the provider reported it (the saving when replayed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    pub actions: Vec<Action>,
    /// The relations between timestamps of one output that held in every pass the agent made
    /// (see [`crate::replay::domains`]); `None` in an older recording: read from its outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relations: Option<Vec<Relation>>,
    /// The facts the agent stated its pass rested on (`BUGATTI_FACT` lines without the keyword,
    /// see [`crate::replay::facts`]), each held on the recorded outputs; every replay checks
    /// them. `None`: not asked (an older recording) or not answered; `[]`: the agent stated none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<Vec<String>>,
    /// The version of the agent CLI that passed it, as its stream named it (Claude Code's
    /// `init`): where the agent's shell started the step depends on it (docs/replay.md, "The
    /// agent's directory"). `None` in an older recording: a Claude Code step with shell actions
    /// then goes to the agent once and is recorded anew, never replayed in a guessed directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_version: Option<String>,
}

/// A console tool the agent called (see docs/console.md). `list_sessions` changes nothing and its
/// answer holds only volatile ids, so it is not recorded; `list_logs` tells the agent whether the
/// harness's commands still run, which a pass may rest on ("the worker is up").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConsoleTool {
    ExecCommand,
    WriteStdin,
    ReadLog,
    WaitForLog,
    KillSession,
    ListLogs,
}

impl ConsoleTool {
    /// The tool's name on the MCP server.
    pub fn name(self) -> &'static str {
        match self {
            Self::ExecCommand => "exec_command",
            Self::WriteStdin => "write_stdin",
            Self::ReadLog => "read_log",
            Self::WaitForLog => "wait_for_log",
            Self::KillSession => "kill_session",
            Self::ListLogs => "list_logs",
        }
    }

    /// The tool of a name on the MCP server; `None` for one that is not replayable.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "exec_command" => Self::ExecCommand,
            "write_stdin" => Self::WriteStdin,
            "read_log" => Self::ReadLog,
            "wait_for_log" => Self::WaitForLog,
            "kill_session" => Self::KillSession,
            "list_logs" => Self::ListLogs,
            _ => return None,
        })
    }
}

/// One action that touched the system under test. Inputs carry `${NAME}` placeholders
/// ([`crate::replay::placeholders`]); outputs are as the agent saw them, secrets redacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// A call to the agent console.
    Console {
        tool: ConsoleTool,
        /// The call's arguments as sent (a JSON object; keys sorted).
        arguments: serde_json::Value,
        /// The whole answer text the agent got.
        output: String,
        /// The process's exit code, when the call saw it exit.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// The answer was an error (bad arguments, unknown session).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// For `list_logs`: how long after the step's previous action began the agent asked
        /// (ms). A replay asks no sooner: a worker that dies a second after "ready" was alive
        /// when the agent looked, and is dead when the replay looks as late.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_ms: Option<u64>,
        /// Learned volatile tokens of the compared output (`[line, token, {domain}]`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        volatile: Vec<Learned>,
    },
    /// The provider's own shell tool (Claude Code `Bash`, Codex `command_execution`).
    Shell {
        command: String,
        /// Where it ran (with placeholders: usually `${BUGATTI_WORKDIR}`).
        cwd: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// stdout and stderr as the tool result showed them.
        output: String,
        /// The timeout the agent's call asked for (Claude Code's Bash `timeout`), in ms; without
        /// one, the tool's own default applies when replayed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
        /// Learned volatile tokens of the output (`[line, token, {domain}]`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        volatile: Vec<Learned>,
    },
    /// One of Claude Code's read-only file tools (`Read`, `Grep`, `Glob`), as a check run again.
    File {
        /// What was asked and what the agent saw (paths with placeholders).
        check: FileCheck,
        /// Learned volatile tokens of the compared text (`[line, token, {domain}]`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        volatile: Vec<Learned>,
    },
    /// A Playwright MCP tool the agent called on the session's browser (see docs/replay.md).
    Browser {
        /// The tool (`browser_navigate`, `browser_click`, …).
        tool: String,
        /// The call's arguments as sent, with placeholders; element refs as the agent gave them.
        arguments: serde_json::Value,
        /// For each element ref in `arguments`: the element's path in the snapshot the agent
        /// read it in, by which replay finds the element again.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        elements: BTreeMap<String, ElementPath>,
        /// The answer the agent got, each page snapshot it linked to put inline.
        output: String,
        /// The answer was an error.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// Learned volatile tokens of the compared output (`[line, token, {domain}]`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        volatile: Vec<Learned>,
    },
}

/// The kinds of action, as `check` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ActionKind {
    Shell,
    Console,
    File,
    Browser,
}

impl ActionKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Shell => "shell",
            Self::Console => "console",
            Self::File => "file",
            Self::Browser => "browser",
        }
    }
}

impl Action {
    /// The action in a few words, for a drift message and the lazy agent's summary.
    pub fn describe(&self) -> String {
        match self {
            Self::Console {
                tool, arguments, ..
            } => {
                let detail = match tool {
                    ConsoleTool::ExecCommand => arguments["cmd"].as_str().map(str::to_string),
                    ConsoleTool::WriteStdin => arguments["chars"]
                        .as_str()
                        .map(|c| format!("session {}: {c:?}", arguments["session_id"])),
                    ConsoleTool::KillSession => {
                        Some(format!("session {}", arguments["session_id"]))
                    }
                    ConsoleTool::ReadLog | ConsoleTool::WaitForLog => {
                        arguments["name"].as_str().map(str::to_string)
                    }
                    ConsoleTool::ListLogs => None,
                };
                match detail {
                    Some(d) => format!("{} {d}", tool.name()),
                    None => tool.name().to_string(),
                }
            }
            Self::Shell { command, .. } => format!("shell {command}"),
            Self::File { check, .. } => super::files::describe(check),
            Self::Browser {
                tool, arguments, ..
            } => super::browser::describe(tool, arguments),
        }
    }

    /// The kind of action.
    pub fn kind(&self) -> ActionKind {
        match self {
            Self::Console { .. } => ActionKind::Console,
            Self::Shell { .. } => ActionKind::Shell,
            Self::File { .. } => ActionKind::File,
            Self::Browser { .. } => ActionKind::Browser,
        }
    }

    /// The output the agent saw.
    pub fn output(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Self::Console { output, .. }
            | Self::Shell { output, .. }
            | Self::Browser { output, .. } => output.into(),
            Self::File { check, .. } => super::files::seen(check).into(),
        }
    }

    /// The learned volatile tokens of its output.
    pub fn volatile(&self) -> &[Learned] {
        match self {
            Self::Console { volatile, .. }
            | Self::Shell { volatile, .. }
            | Self::File { volatile, .. }
            | Self::Browser { volatile, .. } => volatile,
        }
    }

    /// Sets the learned volatile tokens (sorted, no repeats: a stable line in review).
    pub fn set_volatile(&mut self, mut positions: Vec<Learned>) {
        positions.sort_by_key(|l| l.at);
        positions.dedup_by_key(|l| l.at);
        match self {
            Self::Console { volatile, .. }
            | Self::Shell { volatile, .. }
            | Self::File { volatile, .. }
            | Self::Browser { volatile, .. } => *volatile = positions,
        }
    }

    /// The same call as `other` (same tool and input), whatever each saw: two observations of one
    /// output, from which volatile tokens are learned.
    pub fn same_input(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Self::Console {
                    tool: a,
                    arguments: x,
                    ..
                },
                Self::Console {
                    tool: b,
                    arguments: y,
                    ..
                },
            ) => a == b && without_session(x) == without_session(y),
            (
                Self::Shell {
                    command: a, cwd: x, ..
                },
                Self::Shell {
                    command: b, cwd: y, ..
                },
            ) => a == b && x == y,
            (Self::File { check: a, .. }, Self::File { check: b, .. }) => a.same_call(b),
            (
                Self::Browser {
                    tool: a,
                    arguments: x,
                    elements: p,
                    ..
                },
                Self::Browser {
                    tool: b,
                    arguments: y,
                    elements: q,
                    ..
                },
            ) => a == b && super::browser::same_call(x, p, y, q),
            _ => false,
        }
    }
}

/// Call arguments without the console session's id (it differs between two runs by design).
fn without_session(arguments: &serde_json::Value) -> serde_json::Value {
    let mut a = arguments.clone();
    if let Some(map) = a.as_object_mut() {
        map.remove("session_id");
    }
    a
}

impl Recording {
    /// An empty recording of `test`.
    pub fn new(test: impl Into<String>) -> Self {
        Self {
            schema: SCHEMA_VERSION,
            test: test.into(),
            steps: Vec::new(),
        }
    }

    /// Puts `step` in place of the one recorded for the same plan position (a passing agent
    /// renews its recording), keeping the steps in plan order.
    /// A file of an older layout is written in this one from then on (its other steps are
    /// compared by this supervisor's rules, which are stricter).
    pub fn upsert(&mut self, step: RecordedStep) {
        self.schema = SCHEMA_VERSION;
        self.steps.retain(|s| s.step != step.step);
        let at = self.steps.partition_point(|s| s.step < step.step);
        self.steps.insert(at, step);
    }

    /// The file's text: indented down to the actions, each action on one line, a final newline.
    pub fn to_text(&self) -> Result<String, serde_json::Error> {
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Layout::default());
        self.serialize(&mut ser)?;
        out.push(b'\n');
        // serde_json writes only UTF-8.
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

/// Depth of the `actions` array (recording 1 > steps 2 > step 3 > actions 4): below it, compact.
const INDENTED_LEVELS: usize = 4;

/// serde_json's pretty layout down to [`INDENTED_LEVELS`], compact below: each action is one line.
#[derive(Debug, Default)]
struct Layout {
    depth: usize,
    has_value: bool,
}

impl Layout {
    fn indented(&self) -> bool {
        self.depth <= INDENTED_LEVELS
    }

    fn newline<W: ?Sized + io::Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..self.depth {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    fn open<W: ?Sized + io::Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    fn close<W: ?Sized + io::Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        let indented = self.indented();
        self.depth -= 1;
        if indented && self.has_value {
            self.newline(w)?;
        }
        self.has_value = true;
        w.write_all(bracket)
    }

    fn item<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        if self.indented() {
            self.newline(w)
        } else if !first {
            w.write_all(b" ")
        } else {
            Ok(())
        }
    }
}

impl serde_json::ser::Formatter for Layout {
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.item(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.item(w, first)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(n: u32, outputs: &[&str]) -> RecordedStep {
        RecordedStep {
            step: StepId::new(n),
            provenance: format!("tests/a.test.toml#{n}"),
            instruction_hash: "ab".repeat(32),
            provider: "claude-code".parse().expect("a provider"),
            recorded_at: "2026-11-24T12:00:00Z".parse().expect("timestamp"),
            run_started_at: None,
            cost_usd: Some(0.0125),
            relations: None,
            facts: None,
            agent_version: None,
            actions: outputs
                .iter()
                .map(|o| Action::Shell {
                    command: "curl -s localhost:${APP_PORT}/health".into(),
                    cwd: "${BUGATTI_WORKDIR}".into(),
                    exit_code: Some(0),
                    output: (*o).to_string(),
                    timeout_ms: None,
                    volatile: Vec::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn each_action_is_one_line_and_the_text_reads_back() {
        let mut rec = Recording::new("tests/a.test.toml");
        rec.upsert(step(2, &["ok\nline two", "{\"b\":1,\"a\":2}"]));
        rec.upsert(step(1, &["first"]));
        let text = rec.to_text().expect("serializes");
        let action_lines: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with("{\"kind\""))
            .collect();
        assert_eq!(action_lines.len(), 3, "{text}");
        assert!(action_lines[0].contains("\"output\": \"first\""), "{text}");
        // Steps are in plan order whatever the order of recording.
        assert!(text.find("#1").expect("step 1") < text.find("#2").expect("step 2"));
        let back: Recording = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, rec);
        // Same recording, same bytes: a diff shows only what changed.
        assert_eq!(back.to_text().expect("serializes"), text);
        assert!(text.ends_with("}\n"));
    }

    #[test]
    fn a_changed_output_is_one_changed_line() {
        let mut a = Recording::new("t");
        a.upsert(step(1, &["one", "two", "three"]));
        let mut b = a.clone();
        if let Action::Shell { output, .. } = &mut b.steps[0].actions[1] {
            *output = "TWO".into();
        }
        let (ta, tb) = (a.to_text().expect("a"), b.to_text().expect("b"));
        let changed = ta.lines().zip(tb.lines()).filter(|(x, y)| x != y).count();
        assert_eq!(changed, 1);
        assert_eq!(ta.lines().count(), tb.lines().count());
    }

    #[test]
    fn upsert_renews_the_step_in_place() {
        let mut rec = Recording::new("t");
        rec.schema = 1;
        rec.upsert(step(1, &["old"]));
        rec.upsert(step(3, &["three"]));
        rec.upsert(step(1, &["new"]));
        assert_eq!(rec.steps.len(), 2);
        assert_eq!(
            rec.schema, SCHEMA_VERSION,
            "an old file is renewed in this layout"
        );
        assert_eq!(rec.steps[0].step, 1);
        assert!(
            matches!(&rec.steps[0].actions[0], Action::Shell { output, .. } if output == "new")
        );
    }
}
