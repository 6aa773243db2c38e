//! The evidence the supervisor takes from the browser itself, step by step (docs/browser.md).
//!
//! A [`Monitor`] holds one CDP connection to the browser for the session. It discovers every
//! page (`Target.setDiscoverTargets`), attaches to each (flat sessions) and enables its console,
//! log and network events, which it keeps as they come. [`Monitor::begin_step`] opens a step's
//! window (what came before is dropped); [`Monitor::capture_step`] closes it: a screenshot of
//! each page `/json/list` names, and the console errors and warnings and failed requests of the
//! window, written under the run directory and returned as typed [`BrowserEvidence`]. Nothing
//! here fails a step: a capture that goes wrong is a problem noted beside the evidence.
//!
//! Events of a page before the monitor attached to it are not seen (a page that logs while it
//! opens, before `Target.targetCreated` reached us); pages the agent opens and then navigates,
//! as Playwright does, are attached by the time they load.

use super::cdp::{CdpClient, CdpEvent};
use super::devtools;
use super::error::BrowserError;
use super::evidence::BrowserEvidence;
use crate::model::artifacts;
pub use crate::model::browser::CaptureSet;
use crate::model::ids::StepId;
use base64::Engine;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// One CDP command's limit; a screenshot of a busy page is the slowest.
const CALL_LIMIT: Duration = Duration::from_secs(10);

/// One line of `browser/step-<id>.console.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ConsoleEntry {
    /// When it reached the supervisor.
    pub at: DateTime<Utc>,
    /// `error` or `warning`.
    pub level: String,
    /// `console-api` (`console.error`), `exception`, or the browser's own log source (`network`,
    /// `javascript`, `security`, …).
    pub source: String,
    /// The message.
    pub text: String,
    /// The script or resource it is about, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The page's URL.
    pub page: String,
}

impl ConsoleEntry {
    /// Whether this entry makes a passing step's verdict a warning. The one error that does not is
    /// the browser's own request for `/favicon.ico` finding nothing: the page never asked for it,
    /// most local apps have none, and it would warn on the first step of nearly every test. It
    /// stays in the step's console record all the same.
    pub fn counts_as_error(&self) -> bool {
        self.level == "error"
            && !crate::model::browser::is_favicon_miss(&self.source, self.url.as_deref())
    }
}

/// One line of `browser/step-<id>.network.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FailedRequest {
    /// When it reached the supervisor.
    pub at: DateTime<Utc>,
    /// The request's method.
    pub method: String,
    /// The request's URL.
    pub url: String,
    /// The HTTP status (4xx/5xx); absent when no answer came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The browser's reason when no answer came (`net::ERR_CONNECTION_REFUSED`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `Document`, `Script`, `Image`, `Fetch`, …
    pub resource_type: String,
    /// The page's URL.
    pub page: String,
}

/// What a step's capture produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepCapture {
    /// The evidence, in order: screenshots, console, network.
    pub evidence: Vec<BrowserEvidence>,
    /// What could not be captured, and why (never fatal).
    pub problems: Vec<String>,
    /// Console errors during the step (a passing step with some gets a warning).
    pub console_errors: usize,
    /// The first of them, its text: the warning names it (docs/reports.md).
    pub first_console_error: Option<String>,
}

#[derive(Debug, Clone, Default)]
struct AttachedPage {
    session: String,
    url: String,
    title: String,
}

#[derive(Debug, Default)]
struct MonitorState {
    /// Attached pages by target id.
    pages: HashMap<String, AttachedPage>,
    /// Target id by session id.
    targets: HashMap<String, String>,
    /// In-flight requests by (session, request id): method, URL, resource type.
    requests: HashMap<(String, String), (String, String, String)>,
    console: Vec<ConsoleEntry>,
    network: Vec<FailedRequest>,
    /// Failed loads the browser logged (`Failed to load resource: …`). The Network domain misses
    /// a new renderer's first requests after a cross-process navigation (about:blank → the app:
    /// checked with Chromium 156), the log does not; these fill the gaps at capture.
    logged_failures: Vec<FailedRequest>,
}

impl MonitorState {
    fn page_url(&self, session: Option<&str>) -> String {
        session
            .and_then(|s| self.targets.get(s))
            .and_then(|t| self.pages.get(t))
            .map(|p| p.url.clone())
            .unwrap_or_default()
    }
}

/// A page's URL that stands for no page at all: nothing was opened in it.
pub fn shows_no_page(url: &str) -> bool {
    let url = url.trim();
    url.is_empty()
        || url.eq_ignore_ascii_case("about:blank")
        || url.starts_with("about:blank#")
        || url.starts_with("about:blank?")
        || ["chrome://newtab/", "chrome://new-tab-page/", "about:newtab"]
            .iter()
            .any(|blank| url.eq_ignore_ascii_case(blank))
}

fn lock(state: &Mutex<MonitorState>) -> std::sync::MutexGuard<'_, MonitorState> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

/// The most screenshot bytes one run keeps (docs/browser.md): a noisy page over hundreds of
/// steps must not fill the disk. Past it, a step's screenshot is skipped with a note.
pub const MAX_SCREENSHOT_BYTES_PER_RUN: u64 = 64 * 1024 * 1024;

/// The session's watch on its browser.
pub struct Monitor {
    base: String,
    viewport: Option<(u32, u32)>,
    client: CdpClient,
    state: Arc<Mutex<MonitorState>>,
    /// Bytes of screenshots written in this run so far.
    screenshot_bytes: std::sync::atomic::AtomicU64,
}

impl Monitor {
    /// Connects to the browser whose DevTools endpoint is `base` (`http://127.0.0.1:<port>/<token>`)
    /// and starts watching every page, present and future; with `viewport`, every page it
    /// attaches to is given that viewport (`--window-size` sizes the window, and the headless
    /// window's own frame takes part of it: 640×480 gave a 640×337 page in Chromium 156).
    pub async fn attach(base: &str, viewport: Option<(u32, u32)>) -> Result<Self, BrowserError> {
        let version = devtools::version(base).await?;
        let state = Arc::new(Mutex::new(MonitorState::default()));
        let (attach_tx, mut attach_rx) = mpsc::unbounded_channel::<String>();
        let handler_state = state.clone();
        let client = CdpClient::connect(&version.ws_url, move |event| {
            on_event(&handler_state, &attach_tx, event)
        })
        .await?;
        let attacher = client.clone();
        let attach_state = state.clone();
        // Attaching needs answers, which the reader task delivers: it cannot wait for them in
        // the event handler, so new pages are attached here. Ends when the connection closes.
        tokio::spawn(async move {
            while let Some(target) = attach_rx.recv().await {
                let client = attacher.clone();
                let state = attach_state.clone();
                tokio::spawn(async move {
                    let _ = attach_page(&client, &state, &target, viewport).await;
                });
            }
        });
        client
            .call(
                "Target.setDiscoverTargets",
                json!({ "discover": true }),
                None,
                CALL_LIMIT,
            )
            .await?;
        Ok(Self {
            base: base.to_string(),
            viewport,
            client,
            state,
            screenshot_bytes: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The URLs of the pages attached so far (their events are being collected).
    pub fn watched_pages(&self) -> Vec<String> {
        lock(&self.state)
            .pages
            .values()
            .map(|p| p.url.clone())
            .collect()
    }

    /// Opens a step's window: the console messages and failed requests seen so far are dropped.
    pub fn begin_step(&self) {
        let mut state = lock(&self.state);
        state.console.clear();
        state.network.clear();
        state.logged_failures.clear();
    }

    /// Closes step `step_id`'s window: takes `what` and writes it under `run_dir`
    /// (`screenshots/step-<id>-<n>.png`, `browser/step-<id>.console.jsonl`,
    /// `browser/step-<id>.network.jsonl`). Problems are noted, never raised.
    pub async fn capture_step(
        &self,
        step_id: StepId,
        run_dir: &Path,
        what: CaptureSet,
    ) -> StepCapture {
        let mut capture = StepCapture::default();
        let pages = match devtools::pages(&self.base).await {
            Ok(pages) => pages,
            Err(e) => {
                capture.problems.push(format!("listing the pages: {e}"));
                Vec::new()
            }
        };
        // Screenshots first: each answer comes after every event its page sent before it, so
        // once they are in, the window's events are too. A background tab draws no frames, so
        // its screenshot never comes: each page is brought to the front for its own, last the
        // one `/json/list` names first (the most recently active), which leaves it in front
        // as the agent had it.
        let mut shots = Vec::new();
        for (index, page) in pages.iter().enumerate().rev() {
            let session = match self.session_of(&page.id).await {
                Ok(session) => session,
                Err(e) => {
                    capture
                        .problems
                        .push(format!("attaching to page {}: {e}", page.url));
                    continue;
                }
            };
            // A page that shows nothing (`about:blank`, a new tab: a step that only called an
            // API) gets no screenshot: a blank frame is no evidence, and the report would show
            // an empty box for it (docs/reports.md).
            if !what.screenshot || shows_no_page(&page.url) {
                // Still a round trip per page, for the same ordering.
                let _ = self
                    .client
                    .call(
                        "Runtime.evaluate",
                        json!({ "expression": "0" }),
                        Some(&session),
                        CALL_LIMIT,
                    )
                    .await;
                continue;
            }
            let rel = artifacts::screenshot_rel(step_id, index + 1);
            match self
                .screenshot(&session, &run_dir.join(&rel), pages.len() > 1)
                .await
            {
                Ok(()) => {
                    self.a11y_snapshot(&session, &run_dir.join(artifacts::a11y_snapshot_rel(&rel)))
                        .await;
                    shots.push(BrowserEvidence::Screenshot {
                        path: rel,
                        url: page.url.clone(),
                        title: page.title.clone(),
                    })
                }
                Err(e) => capture
                    .problems
                    .push(format!("screenshot of {}: {e}", page.url)),
            }
        }
        shots.reverse();
        capture.evidence.extend(shots);
        let (console, network) = {
            let mut state = lock(&self.state);
            let mut network = std::mem::take(&mut state.network);
            for logged in std::mem::take(&mut state.logged_failures) {
                if !network.iter().any(|n| n.url == logged.url) {
                    network.push(logged);
                }
            }
            (std::mem::take(&mut state.console), network)
        };
        capture.console_errors = console.iter().filter(|c| c.counts_as_error()).count();
        capture.first_console_error = console
            .iter()
            .find(|c| c.counts_as_error())
            .map(|c| c.text.clone());
        if what.console {
            let errors = console.iter().filter(|c| c.level == "error").count();
            let rel = artifacts::browser_console_rel(step_id);
            match write_jsonl(&run_dir.join(&rel), &console) {
                Ok(()) => capture.evidence.push(BrowserEvidence::Console {
                    path: rel,
                    errors,
                    warnings: console.len() - errors,
                }),
                Err(e) => capture.problems.push(format!("writing {rel}: {e}")),
            }
        }
        if what.network {
            let rel = artifacts::browser_network_rel(step_id);
            match write_jsonl(&run_dir.join(&rel), &network) {
                Ok(()) => capture.evidence.push(BrowserEvidence::Network {
                    path: rel,
                    failed: network.len(),
                }),
                Err(e) => capture.problems.push(format!("writing {rel}: {e}")),
            }
        }
        capture
    }

    /// Closes the connection (the browser itself is ended by [`super::launch::Browser::stop`]).
    pub async fn close(&self) {
        self.client.close().await;
    }

    /// The flat session of page `target`, attaching now if discovery has not yet.
    async fn session_of(&self, target: &str) -> Result<String, BrowserError> {
        if let Some(page) = lock(&self.state).pages.get(target) {
            return Ok(page.session.clone());
        }
        attach_page(&self.client, &self.state, target, self.viewport).await
    }

    /// The page's accessibility tree as text beside its screenshot. Best effort and silent: the
    /// screenshot is the evidence; a page whose tree cannot be read still has it.
    async fn a11y_snapshot(&self, session: &str, path: &Path) {
        let Ok(answer) = self
            .client
            .call(
                "Accessibility.getFullAXTree",
                json!({}),
                Some(session),
                CALL_LIMIT,
            )
            .await
        else {
            return;
        };
        let text = super::a11y::render(&answer);
        if !text.is_empty() {
            let _ = std::fs::write(path, text);
        }
    }

    async fn screenshot(&self, session: &str, path: &Path, to_front: bool) -> Result<(), String> {
        if to_front {
            self.client
                .call("Page.bringToFront", json!({}), Some(session), CALL_LIMIT)
                .await
                .map_err(|e| e.to_string())?;
        }
        // The page's viewport is set when it is attached, but a page the agent opened a moment
        // ago may have been attached by discovery whose override is still on its way: set it
        // again (idempotent) so that every screenshot is of the configured size.
        if let Some((width, height)) = self.viewport {
            self.client
                .call(
                    "Emulation.setDeviceMetricsOverride",
                    json!({ "width": width, "height": height, "deviceScaleFactor": 0, "mobile": false }),
                    Some(session),
                    CALL_LIMIT,
                )
                .await
                .map_err(|e| e.to_string())?;
        }
        let result = self
            .client
            .call(
                "Page.captureScreenshot",
                json!({ "format": "png", "optimizeForSpeed": true }),
                Some(session),
                CALL_LIMIT,
            )
            .await
            .map_err(|e| e.to_string())?;
        let data = result
            .get("data")
            .and_then(Value::as_str)
            .ok_or("no image in the answer")?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| format!("undecodable image: {e}"))?;
        let used = self
            .screenshot_bytes
            .load(std::sync::atomic::Ordering::Relaxed);
        if used.saturating_add(png.len() as u64) > MAX_SCREENSHOT_BYTES_PER_RUN {
            return Err(format!(
                "skipped: the run's screenshots reached {} MiB, the most a run keeps",
                MAX_SCREENSHOT_BYTES_PER_RUN >> 20
            ));
        }
        self.screenshot_bytes
            .fetch_add(png.len() as u64, std::sync::atomic::Ordering::Relaxed);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        std::fs::write(path, png).map_err(|e| e.to_string())
    }
}

/// Attaches to page `target` (once), enables the events the capture reads and sets its viewport.
async fn attach_page(
    client: &CdpClient,
    state: &Mutex<MonitorState>,
    target: &str,
    viewport: Option<(u32, u32)>,
) -> Result<String, BrowserError> {
    if let Some(page) = lock(state).pages.get(target) {
        return Ok(page.session.clone());
    }
    let session = client.attach(target, CALL_LIMIT).await?;
    // Attached twice at once (discovery and a capture): keep the first, the other session
    // would only double the events.
    let first = {
        let mut state = lock(state);
        match state.pages.get(target) {
            Some(page) => Some(page.session.clone()),
            None => {
                state.targets.insert(session.clone(), target.to_string());
                state.pages.insert(
                    target.to_string(),
                    AttachedPage {
                        session: session.clone(),
                        ..AttachedPage::default()
                    },
                );
                None
            }
        }
    };
    if let Some(first) = first {
        let _ = client
            .call(
                "Target.detachFromTarget",
                json!({ "sessionId": session }),
                None,
                CALL_LIMIT,
            )
            .await;
        return Ok(first);
    }
    let enable = |method: &'static str| client.call(method, json!({}), Some(&session), CALL_LIMIT);
    let (runtime, log, network) = tokio::join!(
        enable("Runtime.enable"),
        enable("Log.enable"),
        enable("Network.enable")
    );
    runtime?;
    log?;
    network?;
    if let Some((width, height)) = viewport {
        client
            .call(
                "Emulation.setDeviceMetricsOverride",
                json!({ "width": width, "height": height, "deviceScaleFactor": 0, "mobile": false }),
                Some(&session),
                CALL_LIMIT,
            )
            .await?;
    }
    Ok(session)
}

/// Reads one event into the state, on the connection's reader task (so in order).
fn on_event(state: &Mutex<MonitorState>, attach: &mpsc::UnboundedSender<String>, event: CdpEvent) {
    let p = &event.params;
    let session = event.session_id.as_deref();
    let mut state = lock(state);
    let method = event.method.as_str();
    match method.split_once('.').map(|(domain, _)| domain) {
        Some("Target") => on_target_event(&mut state, attach, method, p),
        Some("Runtime" | "Log") => on_console_event(&mut state, session, method, p),
        Some("Network") => on_network_event(&mut state, session, method, p),
        _ => {}
    }
}

/// The text at `key` of a CDP object, empty when absent.
fn text_of(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

/// A page appeared (attach to it), changed its url or title, or went away.
fn on_target_event(
    state: &mut MonitorState,
    attach: &mpsc::UnboundedSender<String>,
    method: &str,
    p: &Value,
) {
    match method {
        "Target.targetCreated" | "Target.targetInfoChanged" => {
            let info = &p["targetInfo"];
            if info.get("type").and_then(Value::as_str) != Some("page") {
                return;
            }
            let target = text_of(info, "targetId");
            match state.pages.get_mut(&target) {
                Some(page) => {
                    page.url = text_of(info, "url");
                    page.title = text_of(info, "title");
                }
                None => {
                    let _ = attach.send(target);
                }
            }
        }
        "Target.targetDestroyed" => {
            let target = text_of(p, "targetId");
            if let Some(page) = state.pages.remove(&target) {
                state.targets.remove(&page.session);
            }
        }
        _ => {}
    }
}

/// A console message, an uncaught exception or a log entry of a page: errors and warnings are
/// kept (a network one in the log is also a failed request).
fn on_console_event(state: &mut MonitorState, session: Option<&str>, method: &str, p: &Value) {
    match method {
        "Runtime.consoleAPICalled" => {
            let level = match p.get("type").and_then(Value::as_str) {
                Some("error" | "assert") => "error",
                Some("warning") => "warning",
                _ => return,
            };
            let text = p
                .get("args")
                .and_then(Value::as_array)
                .map(|args| {
                    args.iter()
                        .map(remote_object_text)
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            let url = p["stackTrace"]["callFrames"][0]["url"]
                .as_str()
                .filter(|u| !u.is_empty())
                .map(str::to_string);
            let page = state.page_url(session);
            state.console.push(ConsoleEntry {
                at: Utc::now(),
                level: level.to_string(),
                source: "console-api".to_string(),
                text,
                url,
                page,
            });
        }
        "Runtime.exceptionThrown" => {
            let details = &p["exceptionDetails"];
            let text = details["exception"]["description"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| text_of(details, "text"));
            let url = details["url"].as_str().map(str::to_string);
            let page = state.page_url(session);
            state.console.push(ConsoleEntry {
                at: Utc::now(),
                level: "error".to_string(),
                source: "exception".to_string(),
                text,
                url,
                page,
            });
        }
        "Log.entryAdded" => {
            let entry = &p["entry"];
            let level = text_of(entry, "level");
            if level != "error" && level != "warning" {
                return;
            }
            let page = state.page_url(session);
            let source = text_of(entry, "source");
            let message = text_of(entry, "text");
            let url = entry["url"].as_str().map(str::to_string);
            if source == "network" {
                if let Some(failed) = failed_from_log(&message, url.as_deref(), &page) {
                    state.logged_failures.push(failed);
                }
            }
            state.console.push(ConsoleEntry {
                at: Utc::now(),
                level,
                source,
                text: message,
                url,
                page,
            });
        }
        _ => {}
    }
}

/// A request sent, answered with 4xx/5xx, finished or failed: the failures are kept.
fn on_network_event(state: &mut MonitorState, session: Option<&str>, method: &str, p: &Value) {
    match method {
        "Network.requestWillBeSent" => {
            let key = (session.unwrap_or("").to_string(), text_of(p, "requestId"));
            let request = &p["request"];
            state.requests.insert(
                key,
                (
                    text_of(request, "method"),
                    text_of(request, "url"),
                    text_of(p, "type"),
                ),
            );
        }
        "Network.responseReceived" => {
            let status = p["response"]["status"].as_u64().unwrap_or(0);
            if status < 400 {
                return;
            }
            let key = (session.unwrap_or("").to_string(), text_of(p, "requestId"));
            let (method, _, _) = state.requests.get(&key).cloned().unwrap_or_default();
            let page = state.page_url(session);
            state.network.push(FailedRequest {
                at: Utc::now(),
                method,
                url: text_of(&p["response"], "url"),
                status: u16::try_from(status).ok(),
                error: None,
                resource_type: text_of(p, "type"),
                page,
            });
        }
        "Network.loadingFinished" => {
            let key = (session.unwrap_or("").to_string(), text_of(p, "requestId"));
            state.requests.remove(&key);
        }
        "Network.loadingFailed" => {
            let key = (session.unwrap_or("").to_string(), text_of(p, "requestId"));
            let (method, url, _) = state.requests.remove(&key).unwrap_or_default();
            // A request the page itself gave up (a navigation away) is not the app failing.
            if p.get("canceled").and_then(Value::as_bool) == Some(true) {
                return;
            }
            let page = state.page_url(session);
            state.network.push(FailedRequest {
                at: Utc::now(),
                method,
                url,
                status: None,
                error: Some(text_of(p, "errorText")),
                resource_type: text_of(p, "type"),
                page,
            });
        }
        _ => {}
    }
}

/// A failed request read from the browser's own log line: `Failed to load resource: the server
/// responded with a status of 404 (Not Found)` or `Failed to load resource: net::ERR_…`.
fn failed_from_log(text: &str, url: Option<&str>, page: &str) -> Option<FailedRequest> {
    let url = url.filter(|u| !u.is_empty())?;
    let reason = text.strip_prefix("Failed to load resource: ")?;
    let status = reason
        .split("status of ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|code| code.parse::<u16>().ok());
    Some(FailedRequest {
        at: Utc::now(),
        // The log does not say; nearly every such load is a GET (a page's own resource).
        method: String::new(),
        url: url.to_string(),
        status,
        error: status.is_none().then(|| reason.to_string()),
        resource_type: String::new(),
        page: page.to_string(),
    })
}

/// A console argument as the DevTools console prints it: strings bare, other values by their
/// value or description.
fn remote_object_text(arg: &Value) -> String {
    match arg.get("value") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => arg
            .get("description")
            .or_else(|| arg.get("unserializableValue"))
            .or_else(|| arg.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    }
}

fn write_jsonl<T: Serialize>(path: &Path, items: &[T]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = String::new();
    for item in items {
        text.push_str(&serde_json::to_string(item).map_err(std::io::Error::other)?);
        text.push('\n');
    }
    std::fs::write(path, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_that_shows_nothing_is_told_from_one_that_does() {
        for blank in ["about:blank", "", "about:blank#x", "chrome://newtab/"] {
            assert!(shows_no_page(blank), "{blank}");
        }
        for page in [
            "http://127.0.0.1:8080/",
            "data:text/html,<p>x",
            "file:///x.html",
        ] {
            assert!(!shows_no_page(page), "{page}");
        }
    }

    #[test]
    fn only_the_browsers_own_favicon_miss_is_not_an_error() {
        let entry = |source: &str, url: &str| ConsoleEntry {
            at: Utc::now(),
            level: "error".into(),
            source: source.into(),
            text: "Failed to load resource: the server responded with a status of 404".into(),
            url: Some(url.into()),
            page: "http://127.0.0.1:8000/".into(),
        };
        assert!(!entry("network", "http://127.0.0.1:8000/favicon.ico").counts_as_error());
        assert!(!entry("network", "http://127.0.0.1:8000/favicon.ico?v=2").counts_as_error());
        assert!(entry("network", "http://127.0.0.1:8000/api/items").counts_as_error());
        assert!(entry("network", "http://127.0.0.1:8000/favicon.ico.js").counts_as_error());
        assert!(entry("console-api", "http://127.0.0.1:8000/favicon.ico").counts_as_error());
        let warning = ConsoleEntry {
            level: "warning".into(),
            ..entry("console-api", "http://127.0.0.1:8000/app.js")
        };
        assert!(!warning.counts_as_error());
    }

    #[test]
    fn console_and_network_events_fill_the_window() {
        let state = Mutex::new(MonitorState::default());
        let (tx, mut rx) = mpsc::unbounded_channel();
        let event = |method: &str, params: Value| CdpEvent {
            method: method.to_string(),
            params,
            session_id: Some("s1".to_string()),
        };
        on_event(
            &state,
            &tx,
            CdpEvent {
                session_id: None,
                ..event(
                    "Target.targetCreated",
                    json!({"targetInfo": {"type": "page", "targetId": "t1", "url": "about:blank"}}),
                )
            },
        );
        assert_eq!(rx.try_recv().ok().as_deref(), Some("t1"));
        on_event(
            &state,
            &tx,
            event(
                "Runtime.consoleAPICalled",
                json!({"type": "error", "args": [{"type": "string", "value": "boom"}, {"type": "number", "value": 42}]}),
            ),
        );
        on_event(
            &state,
            &tx,
            event(
                "Runtime.consoleAPICalled",
                json!({"type": "log", "args": []}),
            ),
        );
        on_event(
            &state,
            &tx,
            event(
                "Log.entryAdded",
                json!({"entry": {"level": "info", "text": "fine"}}),
            ),
        );
        on_event(
            &state,
            &tx,
            event(
                "Network.requestWillBeSent",
                json!({"requestId": "r1", "type": "Fetch", "request": {"method": "POST", "url": "http://x/api"}}),
            ),
        );
        on_event(
            &state,
            &tx,
            event(
                "Network.loadingFailed",
                json!({"requestId": "r1", "type": "Fetch", "errorText": "net::ERR_CONNECTION_REFUSED"}),
            ),
        );
        on_event(
            &state,
            &tx,
            event(
                "Network.loadingFailed",
                json!({"requestId": "r2", "canceled": true, "errorText": "net::ERR_ABORTED"}),
            ),
        );
        let state = lock(&state);
        assert_eq!(state.console.len(), 1, "{:?}", state.console);
        assert_eq!(state.console[0].text, "boom 42");
        assert_eq!(state.network.len(), 1, "{:?}", state.network);
        assert_eq!(state.network[0].method, "POST");
        assert_eq!(state.network[0].url, "http://x/api");
        assert!(state.requests.is_empty());
    }

    #[test]
    fn the_browsers_failed_load_lines_are_read_as_failed_requests() {
        let f = failed_from_log(
            "Failed to load resource: the server responded with a status of 404 (Not Found)",
            Some("http://x/missing.png"),
            "http://x/",
        )
        .expect("a failure");
        assert_eq!((f.status, f.error.as_deref()), (Some(404), None));
        let f = failed_from_log(
            "Failed to load resource: net::ERR_CONNECTION_REFUSED",
            Some("http://y/api"),
            "http://x/",
        )
        .expect("a failure");
        assert_eq!(f.status, None);
        assert_eq!(f.error.as_deref(), Some("net::ERR_CONNECTION_REFUSED"));
        assert!(failed_from_log("Mixed content warning", Some("http://x/"), "").is_none());
        assert!(failed_from_log("Failed to load resource: net::ERR_FAILED", None, "").is_none());
    }
}
