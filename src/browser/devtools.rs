//! The browser's DevTools HTTP endpoints on loopback: `/json/version` (the readiness probe, and
//! the browser-wide WebSocket URL the supervisor and Playwright MCP attach to) and `/json/list`
//! (the open pages). Blocking HTTP (ureq) run off the async threads.

use super::error::BrowserError;
use serde::Deserialize;
use std::time::Duration;

/// One request's limit: the endpoint is on loopback, a slow answer means a busy browser.
const REQUEST_LIMIT: Duration = Duration::from_secs(2);

/// `/json/version`: who the browser is and where its browser-wide WebSocket is.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct BrowserVersion {
    /// `Chrome/156.0.8078.79` or `HeadlessChrome/…`.
    #[serde(rename = "Browser")]
    pub browser: String,
    /// The DevTools protocol version.
    #[serde(rename = "Protocol-Version", default)]
    pub protocol: String,
    /// `ws://127.0.0.1:<port>/<token>/devtools/browser` (the supervisor's endpoint).
    #[serde(rename = "webSocketDebuggerUrl")]
    pub ws_url: String,
}

/// One entry of `/json/list`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Target {
    /// The target id (also the CDP `targetId`).
    pub id: String,
    /// `page`, `iframe`, `service_worker`, `browser`, …
    #[serde(rename = "type")]
    pub kind: String,
    /// The page's title.
    #[serde(default)]
    pub title: String,
    /// The page's URL.
    #[serde(default)]
    pub url: String,
}

fn get_json<T: serde::de::DeserializeOwned>(url: &str) -> Result<T, BrowserError> {
    let http = |reason: String| BrowserError::Http {
        url: url.to_string(),
        reason,
    };
    let config = ureq::Agent::config_builder()
        .proxy(None)
        .timeout_global(Some(REQUEST_LIMIT))
        .build();
    let agent = ureq::Agent::new_with_config(config);
    let mut response = agent.get(url).call().map_err(|e| http(e.to_string()))?;
    let body = response
        .body_mut()
        .read_to_string()
        .map_err(|e| http(e.to_string()))?;
    serde_json::from_str(&body).map_err(|e| http(format!("unreadable answer ({e}): {body}")))
}

async fn get_json_async<T: serde::de::DeserializeOwned + Send + 'static>(
    url: String,
) -> Result<T, BrowserError> {
    let for_error = url.clone();
    tokio::task::spawn_blocking(move || get_json(&url))
        .await
        .unwrap_or_else(|e| {
            Err(BrowserError::Http {
                url: for_error,
                reason: format!("request task failed: {e}"),
            })
        })
}

/// `GET /json/version`.
pub async fn version(base: &str) -> Result<BrowserVersion, BrowserError> {
    get_json_async(format!("{base}/json/version")).await
}

/// `GET /json/list`, only the pages (`type == "page"`), in the browser's order.
pub async fn pages(base: &str) -> Result<Vec<Target>, BrowserError> {
    let all: Vec<Target> = get_json_async(format!("{base}/json/list")).await?;
    Ok(all.into_iter().filter(|t| t.kind == "page").collect())
}
