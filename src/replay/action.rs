//! The actions a recording keeps, one variant per kind: each variant is a kind's own struct
//! ([`RecordedKind`]), which owns everything the kind does. Adding a kind is its file, one line
//! in [`action_kinds!`] below and one line where a step's calls are recorded (`calls.rs`).

use super::browser::action::BrowserAction;
use super::console::ConsoleAction;
use super::context::{ActionAt, AgentTools, ReplayContext};
use super::domains::Learned;
use super::facts::Shown;
use super::files::FileAction;
use super::kind::RecordedKind;
use super::shell::ShellAction;
use super::verdict::Fallback;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The action enum and what dispatches to each kind, from one list of (variant, kind, the field
/// of [`StepState`] that carries the kind's state).
macro_rules! action_kinds {
    ($($(#[$doc:meta])* $variant:ident($kind:ty), $state:ident;)*) => {
        /// One action that touched the system under test. Inputs carry `${NAME}` placeholders
        /// ([`crate::replay::placeholders`]); outputs are as the agent saw them, secrets
        /// redacted. On disk, the kind's fields after `"kind": "<its name>"`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum Action {
            $($(#[$doc])* $variant($kind),)*
        }

        /// What one step's replay carries from action to action: each kind's own state.
        #[derive(Default)]
        pub(super) struct StepState {
            $($state: <$kind as RecordedKind>::State,)*
        }

        /// The kinds' names, in the order `check` counts them.
        pub const KIND_NAMES: &[&str] = &[$(<$kind as RecordedKind>::NAME,)*];

        impl Action {
            /// The kind's name (`shell`, `console`, `file`, `browser`).
            pub fn kind_name(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => <$kind as RecordedKind>::NAME,)*
                }
            }

            /// The action in a few words, for a drift message and the lazy agent's summary.
            pub fn describe(&self) -> String {
                match self {
                    $(Self::$variant(a) => a.describe(),)*
                }
            }

            /// The output the agent saw.
            pub fn output(&self) -> Cow<'_, str> {
                match self {
                    $(Self::$variant(a) => a.output(),)*
                }
            }

            /// The learned volatile tokens of its output.
            pub fn volatile(&self) -> &[Learned] {
                match self {
                    $(Self::$variant(a) => a.volatile(),)*
                }
            }

            fn volatile_mut(&mut self) -> &mut Vec<Learned> {
                match self {
                    $(Self::$variant(a) => a.volatile_mut(),)*
                }
            }

            /// The same call as `other` (same kind, tool and input), whatever each saw.
            pub fn same_input(&self, other: &Self) -> bool {
                match (self, other) {
                    $((Self::$variant(a), Self::$variant(b)) => a.same_call(b),)*
                    _ => false,
                }
            }

            /// What the call was aimed at: its kind, tool and normalised input.
            pub fn target(&self) -> String {
                match self {
                    $(Self::$variant(a) => format!("{} {}", <$kind as RecordedKind>::NAME, a.target()),)*
                }
            }

            /// The recorded output in its compared form, the step's earlier actions' state in
            /// `state`.
            pub(super) fn compared(&self, state: &mut StepState) -> Option<String> {
                match self {
                    $(Self::$variant(a) => a.compared(&mut state.$state),)*
                }
            }

            /// Makes the call again and compares what it saw.
            pub(super) async fn replay(
                &self,
                ctx: &ReplayContext<'_>,
                tools: AgentTools<'_>,
                state: &mut StepState,
                at: &ActionAt<'_>,
            ) -> Result<(), Fallback> {
                match self {
                    $(Self::$variant(a) => a.replay(ctx, tools, &mut state.$state, at).await,)*
                }
            }
        }
    };
}

action_kinds! {
    /// The provider's own shell tool (Claude Code `Bash`, Codex `command_execution`).
    Shell(ShellAction), shell;
    /// A call to the agent console.
    Console(ConsoleAction), console;
    /// One of a provider's read-only file tools (Claude Code's `Read`, `Grep`, `Glob`), as a
    /// check run again.
    File(FileAction), file;
    /// A Playwright MCP tool the agent called on the session's browser.
    Browser(BrowserAction), browser;
}

impl Action {
    /// Sets the learned volatile tokens (sorted, no repeats: a stable line in review).
    pub fn set_volatile(&mut self, mut positions: Vec<Learned>) {
        positions.sort_by_key(|l| l.at);
        positions.dedup_by_key(|l| l.at);
        *self.volatile_mut() = positions;
    }
}

/// Each action's output in the form its replay compares it (a console session's output
/// accumulated up to the action; `None` for an action whose output is not compared): the text
/// in which learned positions count lines and tokens.
pub fn compared_outputs(actions: &[Action]) -> Vec<Option<String>> {
    let mut state = StepState::default();
    actions.iter().map(|a| a.compared(&mut state)).collect()
}

/// Each action's output as the agent's stated facts read it: its compared form (refs masked in
/// a browser answer, as a fact's own are), a console answer's status lines above it (a fact may
/// rest on `Process exited with code 0` or the wall time).
pub fn fact_outputs(actions: &[Action]) -> Vec<Option<Shown>> {
    compared_outputs(actions)
        .into_iter()
        .zip(actions)
        .map(|(text, action)| {
            text.map(|output| Shown {
                header: match action {
                    Action::Console(call) => call.fact_header(),
                    _ => String::new(),
                },
                output,
            })
        })
        .collect()
}

/// Which actions answer with element refs masked (a browser answer's, compared without them):
/// a fact about such an action has its own refs masked the same way.
pub fn refs_masked(actions: &[Action]) -> Vec<bool> {
    actions
        .iter()
        .map(|a| matches!(a, Action::Browser(_)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One action of each kind as the recording file has always held it (each kind's fields
    /// after its `"kind"`, defaults left out): read and written back byte for byte.
    const LINES: [&str; 4] = [
        r#"{"kind": "shell", "command": "curl -s localhost:${APP_PORT}/health", "cwd": "${BUGATTI_WORKDIR}", "exit_code": 0, "output": "ok", "timeout_ms": 5000}"#,
        r#"{"kind": "console", "tool": "list_logs", "arguments": {}, "output": "worker: long_lived, running", "after_ms": 12}"#,
        r#"{"kind": "file", "check": {"tool": "Read", "file": "${BUGATTI_WORKDIR}/a.txt", "offset": 1, "limit": 2000, "seen": "a\n", "bytes": 2}}"#,
        r#"{"kind": "browser", "tool": "browser_navigate", "arguments": {"url": "http://127.0.0.1:${APP_PORT}/"}, "output": "- Page Title: Shop", "is_error": true}"#,
    ];

    /// Facts true on what the agent saw, once refused for a wrong reason: one about a console
    /// answer's status lines (not in the compared output) and one naming an element by its
    /// browser ref (masked in the compared output). Each holds now, and still says something.
    #[test]
    fn facts_about_the_console_header_and_a_browser_ref_hold_on_what_the_agent_saw() {
        let actions: Vec<Action> = [
            r#"{"kind": "console", "tool": "exec_command", "arguments": {"cmd": "sh app.sh"}, "output": "Chunk ID: 5b7a79\nWall time: 0.0123 seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\nlatency 20ms\n", "exit_code": 0}"#,
            r#"{"kind": "browser", "tool": "browser_snapshot", "arguments": {}, "output": "- Page URL: http://shop/\n### Snapshot\n- listitem \"Blue mug\" [ref=e7]:\n  - button \"Add to basket\" [ref=e12] [cursor=pointer]"}"#,
        ]
        .iter()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect();
        let stated = [
            r#"1 contains "Process exited with code 0""#,
            r#"1 /Wall time: ([0-9.]+) seconds/ number in [0, 0.5]"#,
            r#"1 matches /^latency \d+ms$/"#,
            r#"2 contains "button \"Add to basket\" [ref=e12]""#,
            r#"2 matches /listitem "Blue mug" \[ref=e\d+\]/"#,
            r#"2 /button "(.*?)" \[ref=[^\]]+\]/ same as 2 /button "(\S+ to basket)" \[ref=e12\]/"#,
        ]
        .map(String::from);
        let facts = crate::replay::facts::parse(&stated, &refs_masked(&actions)).expect("parses");
        let outputs = fact_outputs(&actions);
        let now = chrono::Utc::now();
        let refused = crate::replay::facts::first_false_when_recorded(&facts, &outputs, None, now);
        assert!(refused.is_none(), "{refused:?}");
        // They still protect: another exit code, a slow answer, another button.
        let mut changed = outputs.clone();
        for (from, to) in [
            ("code 0", "code 1"),
            ("0.0123 seconds", "0.9000 seconds"),
            ("Add to basket", "Sold out"),
        ] {
            for shown in changed.iter_mut().flatten() {
                shown.header = shown.header.replace(from, to);
                shown.output = shown.output.replace(from, to);
            }
        }
        let false_ones: Vec<&str> = facts
            .iter()
            .filter(|f| crate::replay::facts::holds(f, &changed, &[], now).is_err())
            .map(|f| f.text.as_str())
            .collect();
        assert_eq!(false_ones.len(), 4, "{false_ones:?}");
        // A ref is masked only where the output's are: a console output keeps its text.
        let console_ref = [r#"1 contains "[ref=e12]""#.to_string()];
        let facts = crate::replay::facts::parse(&console_ref, &refs_masked(&actions)).expect("ok");
        assert!(crate::replay::facts::holds(&facts[0], &outputs, &[], now).is_err());
    }

    #[test]
    fn each_kind_reads_and_writes_as_the_file_always_had_it() {
        let mut recording = crate::replay::format::Recording::new("t.test.toml");
        let actions: Vec<Action> = LINES
            .iter()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
            .collect();
        let names: Vec<&str> = actions.iter().map(Action::kind_name).collect();
        assert_eq!(names, KIND_NAMES);
        recording.upsert(crate::replay::format::RecordedStep {
            step: crate::model::ids::StepId::new(1),
            provenance: "t.test.toml#1".into(),
            instruction_hash: "h".into(),
            provider: "claude-code".parse().expect("a provider"),
            recorded_at: "2026-11-24T12:00:00Z".parse().expect("timestamp"),
            run_started_at: None,
            cost_usd: None,
            relations: None,
            facts: None,
            agent_version: None,
            failed: None,
            first_look_ms: None,
            actions,
        });
        let text = recording.to_text().expect("serializes");
        let written: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("{\"kind\""))
            .map(|l| l.trim_end_matches(','))
            .collect();
        assert_eq!(written, LINES);
        // A field no kind has is refused, as before.
        let unknown = LINES[0].replace("\"cwd\"", "\"cwdx\"");
        assert!(serde_json::from_str::<Action>(&unknown).is_err());
    }
}
