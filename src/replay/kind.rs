//! What every kind of recorded action owns (see docs/replay.md): its words in a drift message
//! and the agent's summary, the output it keeps and the form in which that is compared, whether
//! two recordings are of the same call, and the call made again. A kind is one file: its
//! struct implementing [`RecordedKind`] (`shell.rs`, `console.rs`, `files.rs`,
//! `browser/action.rs`), one variant in `action.rs`, one line in `calls.rs` where a step's calls
//! are recorded. Nothing else of replay matches on the kinds.

use super::context::{ActionAt, AgentTools, ReplayContext};
use super::domains::Learned;
use super::verdict::Fallback;
use std::borrow::Cow;
use std::future::Future;

/// One kind of recorded action.
pub trait RecordedKind {
    /// What a step carries from one action of this kind to the next, in a replay and in the
    /// compared form of its recorded outputs (the console's sessions, the shell's directory).
    type State: Default + Send;

    /// The kind as the recording (`"kind"`) and `check` name it.
    const NAME: &'static str;

    /// The action in a few words, for a drift message and the lazy agent's summary.
    fn describe(&self) -> String;

    /// The output the agent saw.
    fn output(&self) -> Cow<'_, str>;

    /// The learned volatile tokens of its compared output.
    fn volatile(&self) -> &[Learned];

    /// Where those are kept.
    fn volatile_mut(&mut self) -> &mut Vec<Learned>;

    /// The same call as `other` (same tool and input), whatever each saw: two observations of
    /// one output, from which volatile tokens are learned.
    fn same_call(&self, other: &Self) -> bool;

    /// What the call was aimed at, whatever it saw: the tool and its input, normalised (spaces
    /// collapsed, a console session's id and a page's refs left out). A renewed recording that
    /// no longer has an old action's target checks less (strength.rs).
    fn target(&self) -> String;

    /// The recorded output in the form its replay compares it (`None`: not compared), the text
    /// in which learned positions count lines and tokens.
    fn compared(&self, state: &mut Self::State) -> Option<String>;

    /// Makes the call again in this session and compares what it saw; `Err` is the step's
    /// fallback to the agent.
    fn replay(
        &self,
        ctx: &ReplayContext<'_>,
        tools: AgentTools<'_>,
        state: &mut Self::State,
        at: &ActionAt<'_>,
    ) -> impl Future<Output = Result<(), Fallback>> + Send;
}
