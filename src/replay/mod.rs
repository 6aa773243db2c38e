//! Replay (see docs/replay.md): a step the agent passed, compiled into a check that runs at shell speed.
//!
//! The session's side is [`session`]: the replay stage of a step (`before`: replayed, or to the
//! agent and why) and its recording stage (`after`, `record`: the agent's pass compiled, with the
//! facts it rested on); the session actor calls it and nothing else of replay. The agents' own
//! tool calls come from `providers/tool_calls.rs`.
//!
//! - [`format`]: the recording file, one per root test, its serde types and its layout on disk
//!   (stable key order, one action per line);
//! - [`placeholders`]: a session's own values (ports, paths, ids, secrets) as `${NAME}` in
//!   recorded inputs, and filled back at replay;
//! - [`normalize`]: what is rewritten in every output before comparison (ANSI, CRLF, the
//!   session's values as exact placeholders, the project's `ignore` regexes);
//! - [`masks`]: the learned masks: timestamps, UUIDs, durations, hex values as candidates, a
//!   difference only there a soft drift, the positions that varied while the agent passed
//!   masked after; a value the instruction names never;
//! - [`tokens`]: the candidate tokens of an output line (timestamps, UUIDs, durations, hex
//!   values) and a token's position, what masks and domains name;
//! - [`domains`]: what a learned position may be (a duration's range, a timestamp's offset
//!   from the run's clock, an id's tie to another token) and the relations between timestamps;
//! - [`facts`]: the checked form in which an agent states the facts its pass rested on, and
//!   their evaluation on a replay's outputs (not asked of the agent yet);
//! - [`cut`]: a large output cut for the replay as the provider cut it for the agent (Claude
//!   Code's `<persisted-output>` preview);
//! - [`compare`]: an expected and a seen output after normalisation, and the drift between them
//!   as a unified diff cut to 4 KiB;
//! - [`store`]: where a test's recording lives, loading it with a typed error, and the lookup of a
//!   step (a miss always says why);
//! - [`verdict`]: why a step passed without the model, or why it went to the agent;
//! - [`record`]: an action as the recording keeps it, from what the agent did and saw;
//!   [`calls`]: a step's tool and console calls into those actions, in order;
//! - [`strength`]: whether a renewed recording checks at least as much as the one in force
//!   (pure); [`pending`]: the weaker ones kept for review, and `replay review|accept|reject`;
//! - [`told`]: what the agent is told of the steps replayed before it; [`step_report`]: what a
//!   step's record says of replay;
//! - [`context`]: what every replayed action is checked with (the session's side, the action's
//!   place in its step, the one comparison against the recording);
//! - [`replayer`]: a recorded step run again, one action kind per file: [`console`] (the
//!   session's console), [`shell`] (the agent's own shell tool, as that tool ran it, in a
//!   group and with a marker of the replay's own), [`files`] (Claude Code's `Read`, `Grep`,
//!   `Glob`, run again over the files) and [`browser`] (Playwright MCP calls made again on the
//!   session's browser by the supervisor's own client, elements found by [`browser_refs`]);
//! - [`harness_watch`]: the harness watched as long as the agent would have watched it (a
//!   worker that dies, or logs an error, a second after it is ready);
//! - [`rg`]: `Grep` and `Glob` as Claude Code runs them (ripgrep's crates, its arguments);
//!   [`bounded`]: every file a replay reads, opened without blocking and bounded.

pub mod action;
pub mod bounded;
pub mod browser;
pub mod browser_refs;
pub mod calls;
pub mod compare;
pub mod console;
pub mod context;
pub mod cut;
pub mod domains;
pub mod error;
pub mod facts;
pub mod files;
pub mod format;
pub mod harness_watch;
pub mod kind;
pub mod masks;
pub mod normalize;
pub mod pending;
pub mod placeholders;
pub mod record;
pub mod replayer;
pub mod rg;
pub mod session;
pub mod shell;
pub mod step_report;
pub mod store;
pub mod strength;
pub mod tokens;
pub mod told;
pub mod verdict;
