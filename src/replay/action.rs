//! The actions a recording keeps, one variant per kind: each variant is a kind's own struct
//! ([`RecordedKind`]), which owns everything the kind does. Adding a kind is its file, one line
//! in [`action_kinds!`] below and one line where a step's calls are recorded (`calls.rs`).

use super::browser::action::BrowserAction;
use super::console::ConsoleAction;
use super::context::{ActionAt, AgentTools, ReplayContext};
use super::domains::Learned;
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
