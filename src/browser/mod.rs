//! The browser of a session (docs/browser.md): one headless Chromium per root-test session, started and
//! ended like any harness process, and the evidence the supervisor itself takes from it over the
//! Chrome DevTools Protocol at the end of every step.
//!
//! - [`executable`]: which browser binary runs (`chromium`, `chromium-browser`, `google-chrome`,
//!   or a configured path), with an error naming everything tried.
//! - [`launch`]: the launch spec (own process group, profile in the workspace, DevTools on an
//!   auto port, `--no-sandbox` as root) and [`launch::Browser`], the running browser, ended
//!   through the one termination routine.
//! - [`devtools`]: the DevTools HTTP endpoints (`/json/version` for readiness, `/json/list`).
//! - [`cdp`]: a small CDP client over a WebSocket: commands, answers, events.
//! - [`capture`]: the per-step window of console messages and failed requests, and the
//!   screenshots, written under the run directory.
//! - [`mcp`]: the Playwright MCP command the agent gets, attached to this browser over CDP.
//! - [`npx_cache`]: the replay's own Playwright MCP client run straight from npx's cache when
//!   it holds the exact pinned package (npx itself takes most of a second to start).
//! - [`doctor`]: what `doctor` says about the browser and Playwright MCP.
//! - [`pool`]: one browser per worker, kept across sessions, a fresh browser context per session.
//! - [`session`]: the browser as a session uses it: start from `[browser]`, `BUGATTI_CDP_URL`,
//!   a capture per step, the console-error verdict, the end.
//! - [`evidence`]: the typed evidence a capture yields (`screenshot`, `console`, `network`).

pub mod a11y;
pub mod capture;
pub mod cdp;
pub mod devtools;
pub mod doctor;
pub mod endpoint;
pub mod error;
pub mod evidence;
pub mod executable;
pub mod launch;
pub mod mcp;
pub mod mcp_client;
pub mod npx_cache;
pub mod pipe;
pub mod pool;
pub mod secrets_file;
pub mod session;

pub use capture::{CaptureSet, Monitor, StepCapture};
pub use error::BrowserError;
pub use evidence::BrowserEvidence;
pub use launch::{Browser, BrowserLaunch};
pub use session::{SessionBrowser, CDP_URL_ENV};
