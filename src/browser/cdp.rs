//! A small Chrome DevTools Protocol client: one WebSocket to the browser, commands matched to
//! their answers by id, events handed to one consumer. Flat sessions (`Target.attachToTarget`
//! with `flatten`) address a page through the same socket by `sessionId`, so one connection sees
//! every page. Only what the capture needs; Playwright MCP has its own connection.

use futures::stream::SplitSink;
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// A screenshot of a large page arrives as one base64 message of many megabytes.
const MAX_MESSAGE: usize = 256 << 20;

/// A CDP failure.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CdpError {
    /// The WebSocket could not be opened.
    #[error("cannot connect to {url}: {reason}")]
    Connect {
        /// The `ws://` URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// The connection is gone (the browser exited or closed it).
    #[error("the DevTools connection closed")]
    Closed,
    /// The browser answered the command with an error.
    #[error("{method}: {message}")]
    Command {
        /// The command.
        method: String,
        /// The browser's error message.
        message: String,
    },
    /// No answer within the limit.
    #[error("{method}: no answer within {} ms", limit.as_millis())]
    Timeout {
        /// The command.
        method: String,
        /// The limit.
        limit: Duration,
    },
}

/// An event the browser sent (`Runtime.consoleAPICalled`, …), with the page session it came from.
#[derive(Debug, Clone)]
pub struct CdpEvent {
    /// The CDP method name.
    pub method: String,
    /// Its parameters.
    pub params: Value,
    /// The flat session (page) it belongs to; `None` for browser-wide events.
    pub session_id: Option<String>,
}

type AwaitedAnswers = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;
type SocketSink = SplitSink<WebSocketStream<MaybeTlsStream<TcpStream>>, Message>;

/// One open CDP connection. Cloned handles share it; the reader task ends with the socket.
#[derive(Clone)]
pub struct CdpClient {
    sink: Arc<tokio::sync::Mutex<SocketSink>>,
    pending: AwaitedAnswers,
    next_id: Arc<AtomicU64>,
}

impl CdpClient {
    /// Connects to `ws_url` (a browser's `webSocketDebuggerUrl`). Each event is handed to
    /// `on_event` on the reader task, in the order the browser sent it and before any answer sent
    /// after it is delivered: when a command's answer arrives, every event the browser emitted
    /// before answering has been handled (the capture relies on this to close a step's window).
    pub async fn connect(
        ws_url: &str,
        mut on_event: impl FnMut(CdpEvent) + Send + 'static,
    ) -> Result<Self, CdpError> {
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let (stream, _) = tokio_tungstenite::connect_async_with_config(ws_url, Some(config), true)
            .await
            .map_err(|e| CdpError::Connect {
                url: ws_url.to_string(),
                reason: e.to_string(),
            })?;
        let (sink, mut source) = stream.split();
        let pending: AwaitedAnswers = Arc::default();
        let reader_pending = pending.clone();
        tokio::spawn(async move {
            while let Some(Ok(message)) = source.next().await {
                let Message::Text(text) = message else {
                    continue;
                };
                let Ok(value) = serde_json::from_str::<Value>(text.as_str()) else {
                    continue;
                };
                dispatch(value, &reader_pending, &mut on_event);
            }
            // Whoever still waits learns the connection is gone (their sender drops).
            lock(&reader_pending).clear();
        });
        Ok(Self {
            sink: Arc::new(tokio::sync::Mutex::new(sink)),
            pending,
            next_id: Arc::new(AtomicU64::new(1)),
        })
    }

    /// Sends `method` (to the page `session`, or the browser) and waits up to `limit` for its
    /// result.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        limit: Duration,
    ) -> Result<Value, CdpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut command = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            command["sessionId"] = Value::String(session.to_string());
        }
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        let sent = self
            .sink
            .lock()
            .await
            .send(Message::text(command.to_string()))
            .await;
        if sent.is_err() {
            lock(&self.pending).remove(&id);
            return Err(CdpError::Closed);
        }
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(message))) => Err(CdpError::Command {
                method: method.to_string(),
                message,
            }),
            Ok(Err(_)) => Err(CdpError::Closed),
            Err(_) => {
                lock(&self.pending).remove(&id);
                Err(CdpError::Timeout {
                    method: method.to_string(),
                    limit,
                })
            }
        }
    }

    /// Attaches to page `target` as a flat session and returns its id (for [`Self::call`]).
    pub async fn attach(&self, target: &str, limit: Duration) -> Result<String, CdpError> {
        let answer = self
            .call(
                "Target.attachToTarget",
                json!({ "targetId": target, "flatten": true }),
                None,
                limit,
            )
            .await?;
        Ok(answer
            .get("sessionId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string())
    }

    /// Opens a new page at `url` and attaches to it: its flat session's id.
    pub async fn open_page(&self, url: &str, limit: Duration) -> Result<String, CdpError> {
        let answer = self
            .call("Target.createTarget", json!({ "url": url }), None, limit)
            .await?;
        let target = answer
            .get("targetId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        self.attach(&target, limit).await
    }

    /// Closes the socket (the reader task then ends).
    pub async fn close(&self) {
        let _ = self.sink.lock().await.close().await;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// An answer goes to its waiter; anything else with a `method` is an event.
fn dispatch(value: Value, pending: &AwaitedAnswers, on_event: &mut impl FnMut(CdpEvent)) {
    if let Some(id) = value.get("id").and_then(Value::as_u64) {
        if let Some(waiter) = lock(pending).remove(&id) {
            let answer = match value.get("error") {
                Some(error) => Err(error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("error without a message")
                    .to_string()),
                None => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = waiter.send(answer);
        }
        return;
    }
    if let Some(method) = value.get("method").and_then(Value::as_str) {
        on_event(CdpEvent {
            method: method.to_string(),
            params: value.get("params").cloned().unwrap_or(Value::Null),
            session_id: value
                .get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_string),
        });
    }
}
