//! The recording file: `<dir>/<test path without .test.toml>.replay.json`, one per root test.
//!
//! Users review these files and commit them, so the layout is for a diff: keys always in the same
//! order (struct fields in declaration order, maps sorted), two-space indentation down to each
//! action, and each action (its inputs and full output) on one line of its own, so that a changed
//! output is one changed line in review.

pub use super::action::Action;
use super::domains::Relation;
use crate::model::ids::StepId;
use serde::{Deserialize, Serialize};
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
    /// Set when the agent failed this step under `--replay record` or an audit: the recording
    /// would have passed a failing step, so it is never replayed again, and is kept only as the
    /// baseline a new pass must match in strength (strength.rs). Why, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// How long after the test's harness was ready the agent first acted in this step (ms):
    /// a replay watches the harness that long, at most two seconds (docs/replay.md, "What
    /// replay watches"). `None` in an older recording, or without a harness watch: two seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_look_ms: Option<u64>,
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
    use crate::replay::shell::ShellAction;

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
            failed: None,
            first_look_ms: None,
            actions: outputs
                .iter()
                .map(|o| {
                    Action::Shell(ShellAction {
                        command: "curl -s localhost:${APP_PORT}/health".into(),
                        cwd: "${BUGATTI_WORKDIR}".into(),
                        exit_code: Some(0),
                        output: (*o).to_string(),
                        timeout_ms: None,
                        volatile: Vec::new(),
                    })
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
        if let Action::Shell(shell) = &mut b.steps[0].actions[1] {
            shell.output = "TWO".into();
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
        assert!(matches!(&rec.steps[0].actions[0], Action::Shell(s) if s.output == "new"));
    }
}
