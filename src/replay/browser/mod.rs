//! The browser kind of action ([`action::BrowserAction`], see docs/replay.md): a Playwright MCP tool the agent called on the
//! session's browser, recorded with the answer it got and replayed through the supervisor's own
//! Playwright MCP client attached to the same browser.
//!
//! - Recorded: the tools in [`RECORDED_TOOLS`] only; each element ref the agent gave is kept with
//!   the element's path in the snapshot it read the ref in ([`super::browser_refs`]).
//! - Replayed: the same calls in order; a ref is resolved afresh in the last snapshot the client
//!   took when no other call followed it (Playwright MCP resolves refs against that snapshot),
//!   else in one taken just before the call (none or several elements with the path → drift).
//!   The client is started during the session's setup when the recording has browser actions.
//! - Compared: the answers as text in [`compared`] form: snapshot links put inline (the page the
//!   call left), refs masked, the server's own file names left out; the console errors the
//!   agent was shown are a bound ([`console_errors`]: more is a drift, not a warning).
//!   `browser_take_screenshot` is made again, not compared: its image is evidence.
//! - Timed like the agent's: Playwright MCP answers an action after letting the page settle
//!   (`--timeout-settle`, 500 ms by default), and that page is what the agent saw. The replay's
//!   client runs with no settle of its own and waits here instead, up to the same time, then
//!   compares a fresh snapshot; it stops waiting early only when the page proves nothing in it
//!   can change before that time (`page_idle.js`: no timer due, no request, frame callback,
//!   socket, worker or animation pending, the DOM unchanged across two looks, the snapshot
//!   taken between them). A page that cannot prove it waits the whole settle time, as the
//!   agent's did. A `browser_snapshot` right after is answered with that proven page while the
//!   proof holds ([`BrowserReplay::settled_before`]).
//!
//! [`tools`]: which tools are recorded, their words, the compared form of an answer, its
//! snapshots put inline; [`client`]: the supervisor's own Playwright MCP client and how it waits
//! for the page as the agent's did; [`action`]: the recorded call and its replay.

pub mod action;
pub mod client;
pub mod tools;

pub use client::BrowserReplay;
pub use tools::{is_browser_tool, needs_action_pages, recorded_tool};

#[cfg(test)]
mod tests;
