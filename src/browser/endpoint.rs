//! The browser's DevTools endpoint the supervisor owns, on a loopback port, in front of the
//! browser's pipe ([`super::pipe`]): nothing reaches the browser without the session's secret,
//! a 128-bit token that is the first segment of every path. Any local process can connect to a
//! loopback port; only who was handed the URL (the supervisor's capture, Playwright MCP,
//! `BUGATTI_CDP_URL` in the agent's environment) can talk to the browser through it.
//!
//! Served under `/<token>`: `/json/version` (with the browser-wide `webSocketDebuggerUrl`, how
//! Playwright's `connectOverCDP` finds it from an http endpoint), `/json/list` (the targets),
//! `/json/new?URL` and `/json/close/ID` (a tab opened and closed, as Chromium's own), and
//! the WebSocket `/devtools/browser` (each connection a client of the pipe, with a browser
//! session of its own). Anything else, a wrong token included, gets `403` and nothing more.
//!
//! A pooled browser (docs/browser.md, "One browser per worker") serves one session at a time
//! behind that session's own token, granted when the session takes the browser with the
//! session's [`ContextScope`] and revoked when it gives it back: the token then gets `403`, and
//! every connection made with it is closed.

use super::pipe::{ContextScope, PipeHub};
use crate::process::listen::{Bounded, Guarded, MAX_CONNECTIONS};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;

/// A request's head must come within this, and fit in [`MAX_HEAD`].
const HEAD_LIMIT: Duration = Duration::from_secs(5);
const MAX_HEAD: usize = 16 * 1024;
/// CDP answers can be large (a full-page screenshot).
const MAX_MESSAGE: usize = 256 * 1024 * 1024;

/// The endpoint, served until dropped.
pub struct DevtoolsEndpoint {
    port: u16,
    token: String,
    grants: Grants,
    /// Whether it accepts connections yet (see [`Self::serve_bound`]'s `held`).
    open: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for DevtoolsEndpoint {
    fn drop(&mut self) {
        self.task.abort();
        for (_, grant) in lock(&self.grants).drain() {
            grant.revoked.send_replace(true);
        }
    }
}

/// One token's access: the contexts it sees (`None`: the whole browser), and the signal that
/// ends its connections.
struct TokenGrant {
    scope: Option<Arc<ContextScope>>,
    revoked: tokio::sync::watch::Sender<bool>,
}

/// The tokens the endpoint answers, each with its grant.
type Grants = Arc<Mutex<HashMap<String, TokenGrant>>>;

fn lock(grants: &Grants) -> std::sync::MutexGuard<'_, HashMap<String, TokenGrant>> {
    grants
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What every connection needs.
#[derive(Clone)]
struct EndpointShared {
    hub: PipeHub,
    grants: Grants,
    port: u16,
    /// `Browser.getVersion`'s answer.
    version: Value,
}

/// The grant a request's token holds: its token, its scope, its revocation.
struct Access {
    token: String,
    scope: Option<Arc<ContextScope>>,
    revoked: tokio::sync::watch::Receiver<bool>,
}

impl EndpointShared {
    /// The grant of `given`, compared with every token in full (no early stop).
    fn access(&self, given: &str) -> Option<Access> {
        let grants = lock(&self.grants);
        let mut found = None;
        for (token, grant) in grants.iter() {
            if same_token(given, token) {
                found = Some(Access {
                    token: token.clone(),
                    scope: grant.scope.clone(),
                    revoked: grant.revoked.subscribe(),
                });
            }
        }
        found
    }
}

impl DevtoolsEndpoint {
    /// Listens on a kernel-chosen loopback port for the browser behind `hub`, whose
    /// `Browser.getVersion` answered `version`, behind `token` (a fresh one when `None`).
    pub async fn serve(
        hub: PipeHub,
        version: Value,
        token: Option<String>,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        Self::serve_listener(listener, hub, version, token, false)
    }

    /// As [`Self::serve`], on a loopback listener bound ahead ([`bind_ahead`]): the endpoint's
    /// address is known before the browser is up, so the replay's Playwright MCP client can
    /// start beside the browser. A connection made before the browser was up waits in the
    /// listener's backlog until the endpoint serves it: at once, or (`held`: a pooled browser
    /// whose first session's token is granted only once its context is made) from the first
    /// [`Self::grant`], so that a harness command started beside the browser with that token is
    /// let in rather than refused.
    pub fn serve_bound(
        listener: std::net::TcpListener,
        hub: PipeHub,
        version: Value,
        token: Option<String>,
        held: bool,
    ) -> std::io::Result<Self> {
        listener.set_nonblocking(true)?;
        Self::serve_listener(TcpListener::from_std(listener)?, hub, version, token, held)
    }

    fn serve_listener(
        listener: TcpListener,
        hub: PipeHub,
        version: Value,
        token: Option<String>,
        held: bool,
    ) -> std::io::Result<Self> {
        let port = listener.local_addr()?.port();
        let token = token.unwrap_or_else(new_token);
        let grants: Grants = Arc::default();
        lock(&grants).insert(
            token.clone(),
            TokenGrant {
                scope: None,
                revoked: tokio::sync::watch::channel(false).0,
            },
        );
        let shared = EndpointShared {
            hub,
            grants: grants.clone(),
            port,
            version,
        };
        // Bounded (process::listen): a failed accept does not end it, a flood of idle
        // connections from another local process does not take the supervisor's descriptors.
        let mut listener = Bounded::new(listener, MAX_CONNECTIONS, HEAD_LIMIT);
        let (open, mut opened) = tokio::sync::watch::channel(!held);
        let task = tokio::spawn(async move {
            if opened.wait_for(|open| *open).await.is_err() {
                return;
            }
            loop {
                let (stream, _) = listener.next().await;
                // CDP is many small messages each waiting for its answer: without this, Nagle's
                // algorithm holds each one back for the last one's ACK (tens of ms a call).
                let _ = stream.set_nodelay(true);
                let shared = shared.clone();
                tokio::spawn(async move {
                    let _ = serve_connection(stream, shared).await;
                });
            }
        });
        Ok(Self {
            port,
            token,
            grants,
            open,
            task,
        })
    }

    /// Lets `token` in, seeing only `scope`'s contexts (a pooled browser's session).
    pub fn grant(&self, token: &str, scope: Arc<ContextScope>) {
        lock(&self.grants).insert(
            token.to_string(),
            TokenGrant {
                scope: Some(scope),
                revoked: tokio::sync::watch::channel(false).0,
            },
        );
        self.open.send_replace(true);
    }

    /// Shuts `token` out: it gets `403` from now on, and its connections are closed.
    pub fn revoke(&self, token: &str) {
        if let Some(grant) = lock(&self.grants).remove(token) {
            grant.revoked.send_replace(true);
        }
    }

    /// `ws://127.0.0.1:<port>/<token>/devtools/browser` for another token of this endpoint.
    pub fn ws_url_for(&self, token: &str) -> String {
        ws_url(self.port, token)
    }

    /// `http://127.0.0.1:<port>/<token>`: the base of `/json/version` and `/json/list`.
    pub fn http_base(&self) -> String {
        format!("http://127.0.0.1:{}/{}", self.port, self.token)
    }

    /// `ws://127.0.0.1:<port>/<token>/devtools/browser`: the browser-wide WebSocket.
    pub fn ws_url(&self) -> String {
        ws_url(self.port, &self.token)
    }

    /// The loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

/// A fresh 128-bit secret, as 32 hex digits.
pub fn new_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A loopback listener on a kernel-chosen port, for [`DevtoolsEndpoint::serve_bound`].
pub fn bind_ahead() -> std::io::Result<std::net::TcpListener> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
}

/// `ws://127.0.0.1:<port>/<token>/devtools/browser`: what [`DevtoolsEndpoint::ws_url`] is for
/// an endpoint on `port` behind `token` (`BUGATTI_CDP_URL`).
pub fn ws_url(port: u16, token: &str) -> String {
    format!("ws://127.0.0.1:{port}/{token}/devtools/browser")
}

/// The request's head: its path and, for a WebSocket upgrade, its key.
struct Head {
    path: String,
    websocket_key: Option<String>,
}

async fn read_head(stream: &mut Guarded) -> Option<Head> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    // One byte at a time: nothing past the head may be consumed (a WebSocket client's frames
    // follow it, once it has our answer).
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_HEAD || stream.read(&mut byte).await.ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.split("\r\n");
    let mut request = lines.next()?.split(' ');
    let (method, path) = (request.next()?, request.next()?);
    // PUT: Chromium's `/json/new` asks for it (and so do the scripts written against it).
    if !matches!(method, "GET" | "PUT") {
        return None;
    }
    let mut upgrade = false;
    let mut key = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        match name.trim().to_ascii_lowercase().as_str() {
            "upgrade" => upgrade = value.trim().eq_ignore_ascii_case("websocket"),
            "sec-websocket-key" => key = Some(value.trim().to_string()),
            _ => {}
        }
    }
    Some(Head {
        path: path.to_string(),
        websocket_key: key.filter(|_| upgrade),
    })
}

/// Compares without stopping at the first difference: the time an answer takes tells nothing
/// of how much of a guessed token was right.
fn same_token(given: &str, token: &str) -> bool {
    given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

async fn answer(stream: &mut Guarded, status: &str, body: &str) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json; charset=UTF-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

async fn serve_connection(mut stream: Guarded, shared: EndpointShared) -> std::io::Result<()> {
    let Ok(Some(head)) = tokio::time::timeout(HEAD_LIMIT, read_head(&mut stream)).await else {
        return answer(&mut stream, "400 Bad Request", "").await;
    };
    let path = head.path.split('?').next().unwrap_or_default();
    let granted = path
        .strip_prefix('/')
        .and_then(|p| p.split_once('/').or(Some((p, ""))))
        .and_then(|(given, rest)| {
            shared
                .access(given)
                .map(|access| (access, format!("/{}", rest.trim_end_matches('/'))))
        });
    let Some((access, rest)) = granted else {
        return answer(&mut stream, "403 Forbidden", "").await;
    };
    let scope = access.scope.clone();
    match (rest.as_str(), head.websocket_key) {
        ("/json/version", None) => {
            let v = &shared.version;
            let body = json!({
                "Browser": v["product"],
                "Protocol-Version": v["protocolVersion"],
                "User-Agent": v["userAgent"],
                "V8-Version": v["jsVersion"],
                "WebKit-Version": v["revision"],
                "webSocketDebuggerUrl": ws_url(shared.port, &access.token),
            });
            answer(&mut stream, "200 OK", &body.to_string()).await
        }
        ("/json/list" | "/json", None) => {
            let targets = match shared
                .hub
                .call("Target.getTargets", json!({}), None, HEAD_LIMIT)
                .await
            {
                Ok(targets) => targets,
                // The browser is gone (or wedged): said, not an empty list.
                Err(why) => {
                    let body = json!({ "error": why }).to_string();
                    return answer(&mut stream, "502 Bad Gateway", &body).await;
                }
            };
            // Newest first, as Chromium's own list puts the most recently active first.
            let list: Vec<Value> = targets["targetInfos"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|t| in_scope(scope.as_deref(), t))
                .rev()
                .map(|t| {
                    json!({"id": t["targetId"], "type": t["type"], "title": t["title"], "url": t["url"]})
                })
                .collect();
            answer(&mut stream, "200 OK", &Value::from(list).to_string()).await
        }
        // Chromium's own `/json/new?URL` and `/json/close/ID`, which harness scripts use to
        // open and close tabs without a WebSocket client.
        ("/json/new", None) => {
            let url = head
                .path
                .split_once('?')
                .map(|(_, query)| query)
                .filter(|query| !query.is_empty())
                .unwrap_or("about:blank");
            let mut params = json!({ "url": url });
            if let Some(scope) = &scope {
                params["browserContextId"] = Value::from(scope.primary());
            }
            let created = shared
                .hub
                .call("Target.createTarget", params, None, HEAD_LIMIT)
                .await;
            match created {
                Ok(created) => {
                    let body = json!({"id": created["targetId"], "type": "page", "url": url});
                    answer(&mut stream, "200 OK", &body.to_string()).await
                }
                Err(why) => {
                    let body = json!({ "error": why }).to_string();
                    answer(&mut stream, "502 Bad Gateway", &body).await
                }
            }
        }
        (close, None) if close.starts_with("/json/close/") => {
            let id = close.trim_start_matches("/json/close/");
            if scope.is_some() && !scoped_target(&shared.hub, scope.as_deref(), id).await {
                let body = json!({ "error": format!("No such target id: {id}") }).to_string();
                return answer(&mut stream, "404 Not Found", &body).await;
            }
            let closed = shared
                .hub
                .call(
                    "Target.closeTarget",
                    json!({ "targetId": id }),
                    None,
                    HEAD_LIMIT,
                )
                .await;
            match closed {
                Ok(_) => answer(&mut stream, "200 OK", "Target is closing").await,
                Err(why) => {
                    let body = json!({ "error": why }).to_string();
                    answer(&mut stream, "404 Not Found", &body).await
                }
            }
        }
        (browser, Some(key))
            if browser == "/devtools/browser" || browser.starts_with("/devtools/browser/") =>
        {
            websocket(stream, &key, shared.hub, access).await
        }
        _ => answer(&mut stream, "404 Not Found", "").await,
    }
}

/// Whether target `info` is one a request of `scope` may see (any, without a scope).
fn in_scope(scope: Option<&ContextScope>, info: &Value) -> bool {
    scope.is_none_or(|scope| {
        info["browserContextId"]
            .as_str()
            .is_some_and(|context| scope.owns(context))
    })
}

/// Whether target `id` is in `scope`'s contexts (asked of the browser now).
async fn scoped_target(hub: &PipeHub, scope: Option<&ContextScope>, id: &str) -> bool {
    let Ok(targets) = hub
        .call("Target.getTargets", json!({}), None, HEAD_LIMIT)
        .await
    else {
        return false;
    };
    targets["targetInfos"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| t["targetId"] == id && in_scope(scope, t))
}

/// Upgrades the connection and makes it a client of the pipe until either side closes, or
/// its token is revoked.
async fn websocket(
    mut stream: Guarded,
    key: &str,
    hub: PipeHub,
    access: Access,
) -> std::io::Result<()> {
    use futures::{SinkExt, StreamExt};
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    let response = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    stream.write_all(response.as_bytes()).await?;
    // It holds the token: a CDP client may be silent while its user thinks.
    stream.keep_while_silent();
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE));
    let ws =
        tokio_tungstenite::WebSocketStream::from_raw_socket(stream, Role::Server, Some(config))
            .await;
    let (mut sink, mut source) = ws.split();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let Access {
        scope, mut revoked, ..
    } = access;
    let Ok(client) = hub.connect(tx, scope).await else {
        let _ = sink.close().await;
        return Ok(());
    };
    let writer = tokio::spawn(async move {
        while let Some(text) = rx.recv().await {
            if sink.send(Message::text(text)).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    loop {
        let message = tokio::select! {
            message = source.next() => message,
            _ = revoked.wait_for(|gone| *gone) => break,
        };
        match message {
            Some(Ok(Message::Text(text))) => hub.send(client, text.as_str()),
            Some(Ok(Message::Binary(bytes))) => hub.send(client, &String::from_utf8_lossy(&bytes)),
            Some(Ok(Message::Close(_)) | Err(_)) | None => break,
            Some(Ok(_)) => {}
        }
    }
    hub.disconnect(client);
    writer.abort();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token("abc", "abc"));
        assert!(!same_token("abd", "abc"));
        assert!(!same_token("ab", "abc"));
        assert!(!same_token("", "abc"));
    }
}
