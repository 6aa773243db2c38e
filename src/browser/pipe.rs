//! Chromium's DevTools over `--remote-debugging-pipe` (fd 3: commands in, fd 4: answers and
//! events out, each message a JSON object ended by a NUL byte), shared by several clients (the
//! supervisor's capture, Playwright MCP, the agent's own CDP client). No port of Chromium's own
//! is listening: who may talk to the browser is decided by [`super::endpoint`], in front of this.
//!
//! Each client gets a browser session of its own (`Target.attachToBrowserTarget`, flat mode),
//! so it sees the browser as if it had its own connection: its `Target.setDiscoverTargets`,
//! auto-attach and sessions are its own. A client's message without a `sessionId` is sent on its
//! browser session; its ids are renumbered on the pipe and given back in the answer. Events of a
//! client's browser session go to it (without the session id), events of a session it attached
//! (learned from `Target.attachedToTarget` and `attachToTarget` answers) go to it as they are.
//!
//! A client may be given a [`ContextScope`] (a pooled browser's session, docs/browser.md): it then
//! sees the session's browser context as if it were the browser's default one. Browser-level
//! commands that take a `browserContextId` and omit it get the session's; a context or target of
//! another session is refused as unknown; the targets it is told of (`Target.attachedToTarget`,
//! `targetCreated`, `targetInfoChanged`, `targetDestroyed`, `getTargets`) are its contexts' only,
//! and an auto-attachment to another context's target is detached at once (a target waiting for
//! its debugger is not held by a client that never sees it).

use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// A message for one client (a CDP answer or event as JSON text).
pub type ClientTx = mpsc::UnboundedSender<String>;

enum ClientMessage {
    /// An internal call ([`PipeHub::call`]).
    Internal(oneshot::Sender<Value>),
    /// A client's call: its own id, given back in the answer, and what it asked.
    Client {
        client: u64,
        id: Value,
        method: String,
    },
}

/// The browser contexts one session's clients may see: the one it was given (presented as the
/// browser's default context) and those it created itself (`Target.createBrowserContext`).
#[derive(Debug)]
pub struct ContextScope {
    primary: String,
    owned: Mutex<HashSet<String>>,
}

impl ContextScope {
    /// A scope whose default context is `primary`.
    pub fn new(primary: String) -> Arc<Self> {
        let owned = Mutex::new(HashSet::from([primary.clone()]));
        Arc::new(Self { primary, owned })
    }

    /// The context given to the session.
    pub fn primary(&self) -> &str {
        &self.primary
    }

    fn lock(&self) -> MutexGuard<'_, HashSet<String>> {
        self.owned
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether `context` is one of the session's.
    pub fn owns(&self, context: &str) -> bool {
        self.lock().contains(context)
    }

    fn adopt(&self, context: &str) {
        self.lock().insert(context.to_string());
    }

    /// Every context of the session (its own first): what its end disposes of.
    pub fn contexts(&self) -> Vec<String> {
        let mut all: Vec<String> = self
            .lock()
            .iter()
            .filter(|c| **c != self.primary)
            .cloned()
            .collect();
        all.insert(0, self.primary.clone());
        all
    }
}

/// Browser-level commands that act on one context, the default one when they name none: a
/// scoped client's go to its context instead.
const CONTEXT_COMMANDS: &[&str] = &[
    "Target.createTarget",
    "Storage.getCookies",
    "Storage.setCookies",
    "Storage.clearCookies",
    "Browser.grantPermissions",
    "Browser.resetPermissions",
    "Browser.setPermission",
    "Browser.setDownloadBehavior",
    "Browser.cancelDownload",
];

struct Client {
    tx: ClientTx,
    browser_session: String,
    scope: Option<Arc<ContextScope>>,
    /// The targets a scoped client was told of: only their ends are told to it.
    shown: HashSet<String>,
}

#[derive(Default)]
struct PipeState {
    pending: HashMap<u64, ClientMessage>,
    clients: HashMap<u64, Client>,
    /// A client's browser session id → the client.
    browser_sessions: HashMap<String, u64>,
    /// A session a client attached (a page, a worker) → the client.
    children: HashMap<String, u64>,
    /// Every target's browser context, as the root connection's discovery tells it.
    targets: HashMap<String, String>,
    closed: bool,
}

struct Inner {
    to_browser: mpsc::UnboundedSender<String>,
    state: Mutex<PipeState>,
    next_id: AtomicU64,
}

/// The browser's one DevTools pipe, shared. Cloning shares it.
#[derive(Clone)]
pub struct PipeHub {
    inner: Arc<Inner>,
}

/// The two pipes: ours to write commands into (the browser's fd 3) and to read from (its fd 4),
/// and the ends the browser gets.
pub struct PipeEnds {
    /// Give these to the browser as fds 3 and 4, in this order.
    pub child: [OwnedFd; 2],
    ours_write: OwnedFd,
    ours_read: OwnedFd,
}

impl PipeEnds {
    /// Two fresh pipes, close-on-exec (the spawn moves the child's ends to 3 and 4).
    pub fn new() -> std::io::Result<Self> {
        let (child_read, ours_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let (ours_read, child_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        Ok(Self {
            child: [child_read, child_write],
            ours_write,
            ours_read,
        })
    }
}

impl PipeHub {
    /// Starts the reader and writer tasks on our ends (inside a tokio runtime). Returns the hub
    /// and the browser's ends, to be passed to its spawn.
    pub fn start(ends: PipeEnds) -> std::io::Result<(Self, [OwnedFd; 2])> {
        let PipeEnds {
            child,
            ours_write,
            ours_read,
        } = ends;
        let mut writer = tokio::net::unix::pipe::Sender::from_owned_fd(ours_write)?;
        let mut reader = tokio::net::unix::pipe::Receiver::from_owned_fd(ours_read)?;
        let (to_browser, mut outbox) = mpsc::unbounded_channel::<String>();
        let hub = Self {
            inner: Arc::new(Inner {
                to_browser,
                state: Mutex::new(PipeState::default()),
                next_id: AtomicU64::new(1),
            }),
        };
        tokio::spawn(async move {
            while let Some(message) = outbox.recv().await {
                let mut bytes = message.into_bytes();
                bytes.push(0);
                if writer.write_all(&bytes).await.is_err() {
                    break;
                }
            }
        });
        let reading = hub.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            let mut message: Vec<u8> = Vec::new();
            loop {
                let n = match reader.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                for chunk in buf
                    .get(..n)
                    .unwrap_or_default()
                    .split_inclusive(|b| *b == 0)
                {
                    match chunk.split_last() {
                        Some((0, body)) => {
                            message.extend_from_slice(body);
                            reading.route(&std::mem::take(&mut message));
                        }
                        _ => message.extend_from_slice(chunk),
                    }
                }
            }
            reading.close();
        });
        Ok((hub, child))
    }

    fn lock(&self) -> MutexGuard<'_, PipeState> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn fresh_id(&self) -> u64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The pipe closed (the browser exited): every client is let go.
    fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.clients.clear();
        state.pending.clear();
    }

    /// Whether the browser's end of the pipe is gone.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Sends `method` on the root connection and waits at most `limit` for its result.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        limit: Duration,
    ) -> Result<Value, String> {
        let id = self.fresh_id();
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.lock();
            if state.closed {
                return Err("the browser's DevTools pipe is closed".into());
            }
            state.pending.insert(id, ClientMessage::Internal(tx));
        }
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = Value::from(session);
        }
        let _ = self.inner.to_browser.send(message.to_string());
        let answer = match tokio::time::timeout(limit, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => return Err("the browser's DevTools pipe closed".into()),
            Err(_) => {
                self.lock().pending.remove(&id);
                return Err(format!("{method}: no answer in {}s", limit.as_secs()));
            }
        };
        match answer.get("error") {
            Some(error) => Err(format!("{method}: {error}")),
            None => Ok(answer["result"].clone()),
        }
    }

    /// A new client: a browser session of its own is attached for it. Its answers and events
    /// go to `tx`; with a `scope`, it sees that scope's contexts only. Returns its id for
    /// [`Self::send`] and [`Self::disconnect`].
    pub async fn connect(
        &self,
        tx: ClientTx,
        scope: Option<Arc<ContextScope>>,
    ) -> Result<u64, String> {
        let result = self
            .call(
                "Target.attachToBrowserTarget",
                json!({}),
                None,
                Duration::from_secs(10),
            )
            .await?;
        let session = result["sessionId"]
            .as_str()
            .ok_or("Target.attachToBrowserTarget answered no sessionId")?
            .to_string();
        let client = self.fresh_id();
        let mut state = self.lock();
        state.browser_sessions.insert(session.clone(), client);
        state.clients.insert(
            client,
            Client {
                tx,
                browser_session: session,
                scope,
                shown: HashSet::new(),
            },
        );
        Ok(client)
    }

    /// A message from `client`: renumbered and sent on its browser session (or the session it
    /// names, when that is one of the client's own). Anything else is answered with an error, as
    /// is a scoped client's reach into another session's context or target.
    pub fn send(&self, client: u64, text: &str) {
        let Ok(mut message) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let id = self.fresh_id();
        let mut state = self.lock();
        let Some((browser_session, scope)) = state
            .clients
            .get(&client)
            .map(|c| (c.browser_session.clone(), c.scope.clone()))
        else {
            return;
        };
        let session = message["sessionId"].as_str().map(str::to_string);
        let own_id = message.get("id").cloned().unwrap_or(Value::Null);
        let refused = match &session {
            None => {
                message["sessionId"] = Value::from(browser_session);
                scope
                    .as_deref()
                    .and_then(|scope| confine(&mut message, scope, &state.targets))
            }
            Some(s) if state.children.get(s) == Some(&client) => None,
            Some(_) => Some("Session with given id not found."),
        };
        if let Some(why) = refused {
            let answer = json!({"id": own_id, "error": {"code": -32000, "message": why}});
            if let Some(c) = state.clients.get(&client) {
                let _ = c.tx.send(answer.to_string());
            }
            return;
        }
        let method = message["method"].as_str().unwrap_or_default().to_string();
        message["id"] = Value::from(id);
        state.pending.insert(
            id,
            ClientMessage::Client {
                client,
                id: own_id,
                method,
            },
        );
        drop(state);
        let _ = self.inner.to_browser.send(message.to_string());
    }

    /// `client` went away: its browser session is detached, which detaches its sessions.
    pub fn disconnect(&self, client: u64) {
        let removed = {
            let mut state = self.lock();
            let removed = state.clients.remove(&client);
            if let Some(c) = &removed {
                state.browser_sessions.remove(&c.browser_session);
            }
            state.children.retain(|_, owner| *owner != client);
            removed
        };
        if let Some(c) = removed {
            let message = json!({
                "id": self.fresh_id(),
                "method": "Target.detachFromTarget",
                "params": {"sessionId": c.browser_session},
            });
            let _ = self.inner.to_browser.send(message.to_string());
        }
    }

    /// One message from the browser, to whom it belongs.
    fn route(&self, raw: &[u8]) {
        let Ok(mut message) = serde_json::from_slice::<Value>(raw) else {
            return;
        };
        let mut state = self.lock();
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            match state.pending.remove(&id) {
                Some(ClientMessage::Internal(tx)) => {
                    let _ = tx.send(message);
                }
                Some(ClientMessage::Client { client, id, method }) => {
                    if let Some(session) = message["result"]["sessionId"].as_str() {
                        state.children.insert(session.to_string(), client);
                    }
                    message["id"] = id;
                    scoped_answer(&mut state, client, &method, &mut message);
                    deliver(&state, client, message);
                }
                None => {}
            }
            return;
        }
        let Some(session) = message["sessionId"].as_str().map(str::to_string) else {
            // An event of the root connection: the hub's own discovery of targets.
            learn_target(&mut state.targets, &message);
            return;
        };
        let on_browser_session = state.browser_sessions.get(&session).copied();
        let owner = on_browser_session.or_else(|| state.children.get(&session).copied());
        let Some(client) = owner else {
            return;
        };
        if on_browser_session.is_some() && !self.shown_to(&mut state, client, &message) {
            return;
        }
        match message["method"].as_str() {
            Some("Target.attachedToTarget") => {
                if let Some(child) = message["params"]["sessionId"].as_str() {
                    state.children.insert(child.to_string(), client);
                }
            }
            Some("Target.detachedFromTarget") => {
                if let Some(child) = message["params"]["sessionId"].as_str() {
                    state.children.remove(child);
                }
            }
            _ => {}
        }
        deliver(&state, client, message);
    }

    /// Whether an event of `client`'s browser session is the client's to see: always, unless
    /// it is scoped and the event is about another context's target. An auto-attachment it is
    /// not shown is detached on its behalf.
    fn shown_to(&self, state: &mut PipeState, client: u64, event: &Value) -> bool {
        let Some(c) = state.clients.get_mut(&client) else {
            return false;
        };
        let Some(scope) = c.scope.clone() else {
            return true;
        };
        let params = &event["params"];
        let target = params["targetInfo"]["targetId"]
            .as_str()
            .or_else(|| params["targetId"].as_str())
            .unwrap_or_default()
            .to_string();
        match event["method"].as_str().unwrap_or_default() {
            "Target.attachedToTarget" | "Target.targetCreated" | "Target.targetInfoChanged" => {
                let info = &params["targetInfo"];
                let visible = info["type"] == "browser"
                    || info["browserContextId"]
                        .as_str()
                        .is_some_and(|context| scope.owns(context));
                if visible {
                    c.shown.insert(target);
                } else if event["method"] == "Target.attachedToTarget" {
                    let detach = json!({
                        "id": self.fresh_id(),
                        "method": "Target.detachFromTarget",
                        "sessionId": c.browser_session,
                        "params": {"sessionId": params["sessionId"]},
                    });
                    let _ = self.inner.to_browser.send(detach.to_string());
                }
                visible
            }
            "Target.targetDestroyed" => c.shown.remove(&target),
            "Target.targetCrashed" => c.shown.contains(&target),
            "Target.detachedFromTarget" => params["sessionId"]
                .as_str()
                .is_some_and(|child| state.children.get(child) == Some(&client)),
            _ => true,
        }
    }
}

/// A scoped client's browser-level command confined to its contexts: the default context
/// becomes its own; another session's context or target is refused (the error's text).
fn confine(
    message: &mut Value,
    scope: &ContextScope,
    targets: &HashMap<String, String>,
) -> Option<&'static str> {
    let method = message["method"].as_str().unwrap_or_default().to_string();
    if method == "Browser.close" {
        return Some("Browser.close: the browser is shared by the sessions of this run");
    }
    let params = &mut message["params"];
    if !params.is_object() {
        *params = json!({});
    }
    match params["browserContextId"].as_str() {
        Some(context) if !scope.owns(context) => {
            return Some("Failed to find browser context for id");
        }
        Some(_) => {}
        None if CONTEXT_COMMANDS.contains(&method.as_str()) => {
            params["browserContextId"] = Value::from(scope.primary());
        }
        None => {}
    }
    let foreign_target = params["targetId"]
        .as_str()
        .and_then(|target| targets.get(target))
        .is_some_and(|context| !scope.owns(context));
    foreign_target.then_some("No target with given id found")
}

/// What a scoped client is answered: its new contexts become its own, and the targets and
/// contexts it is told of are its own only.
fn scoped_answer(state: &mut PipeState, client: u64, method: &str, answer: &mut Value) {
    let Some(c) = state.clients.get_mut(&client) else {
        return;
    };
    let Some(scope) = c.scope.clone() else {
        return;
    };
    let result = &mut answer["result"];
    match method {
        "Target.createBrowserContext" => {
            if let Some(context) = result["browserContextId"].as_str() {
                scope.adopt(context);
            }
        }
        "Target.getTargets" => {
            if let Some(infos) = result["targetInfos"].as_array_mut() {
                infos.retain(|info| {
                    info["browserContextId"]
                        .as_str()
                        .is_some_and(|context| scope.owns(context))
                });
                for info in infos.iter() {
                    if let Some(target) = info["targetId"].as_str() {
                        c.shown.insert(target.to_string());
                    }
                }
            }
        }
        "Target.getBrowserContexts" => {
            if let Some(contexts) = result["browserContextIds"].as_array_mut() {
                contexts.retain(|context| context.as_str().is_some_and(|id| scope.owns(id)));
            }
        }
        _ => {}
    }
}

/// The root connection's target discovery: which context each target is in.
fn learn_target(targets: &mut HashMap<String, String>, event: &Value) {
    let params = &event["params"];
    match event["method"].as_str() {
        Some("Target.targetCreated" | "Target.targetInfoChanged") => {
            let info = &params["targetInfo"];
            if let (Some(target), Some(context)) =
                (info["targetId"].as_str(), info["browserContextId"].as_str())
            {
                targets.insert(target.to_string(), context.to_string());
            }
        }
        Some("Target.targetDestroyed") => {
            if let Some(target) = params["targetId"].as_str() {
                targets.remove(target);
            }
        }
        _ => {}
    }
}

/// Hands `message` to `client`, without the session id when it is the client's browser session
/// (the client sent it without one).
fn deliver(state: &PipeState, client: u64, mut message: Value) {
    let Some(c) = state.clients.get(&client) else {
        return;
    };
    if message["sessionId"].as_str() == Some(c.browser_session.as_str()) {
        if let Some(object) = message.as_object_mut() {
            object.remove("sessionId");
        }
    }
    let _ = c.tx.send(message.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};

    /// A browser at the other end of real pipes: answers `attachToBrowserTarget` with a fresh
    /// browser session, every other command with its method, and after each command on a
    /// session sends an event on that session.
    fn fake_browser(fds: [OwnedFd; 2]) {
        let [commands, answers] = fds;
        std::thread::spawn(move || {
            let mut out = std::fs::File::from(answers);
            let mut sessions = 0;
            for raw in BufReader::new(std::fs::File::from(commands)).split(0) {
                let Ok(raw) = raw else { break };
                let Ok(command) = serde_json::from_slice::<Value>(&raw) else {
                    continue;
                };
                let mut replies = Vec::new();
                if command["method"] == "Target.attachToBrowserTarget" {
                    sessions += 1;
                    replies.push(json!({"id": command["id"], "result": {"sessionId": format!("B{sessions}")}}));
                } else {
                    replies.push(json!({"id": command["id"], "sessionId": command["sessionId"], "result": {"method": command["method"], "params": command["params"]}}));
                    replies.push(json!({"method": "Test.event", "sessionId": command["sessionId"], "params": {}}));
                }
                // Discovery: a target in context C1 and one in C2, the latter auto-attached.
                if command["method"] == "Target.setDiscoverTargets" {
                    for (target, context) in [("T1", "C1"), ("T2", "C2")] {
                        let info = json!({"targetId": target, "type": "page", "browserContextId": context});
                        replies.push(json!({"method": "Target.targetCreated", "sessionId": command["sessionId"], "params": {"targetInfo": info}}));
                    }
                    let info = json!({"targetId": "T2", "type": "page", "browserContextId": "C2"});
                    replies.push(json!({"method": "Target.attachedToTarget", "sessionId": command["sessionId"], "params": {"sessionId": "S2", "targetInfo": info, "waitingForDebugger": true}}));
                    replies.push(json!({"method": "Test.discovered", "sessionId": command["sessionId"], "params": {}}));
                }
                for reply in replies {
                    let mut bytes = reply.to_string().into_bytes();
                    bytes.push(0);
                    if out.write_all(&bytes).is_err() {
                        return;
                    }
                }
            }
        });
    }

    async fn next(rx: &mut mpsc::UnboundedReceiver<String>) -> Value {
        let text = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("a message in time")
            .expect("the hub is open");
        serde_json::from_str(&text).expect("JSON")
    }

    #[tokio::test]
    async fn each_client_gets_its_own_answers_and_events_on_its_own_browser_session() {
        let (hub, fds) = PipeHub::start(PipeEnds::new().expect("pipes")).expect("hub");
        fake_browser(fds);
        let (tx_a, mut rx_a) = mpsc::unbounded_channel();
        let (tx_b, mut rx_b) = mpsc::unbounded_channel();
        let a = hub.connect(tx_a, None).await.expect("client a");
        let b = hub.connect(tx_b, None).await.expect("client b");

        // Both use id 1: each gets its own answer back, with its own id, and no session id.
        hub.send(a, r#"{"id": 1, "method": "Browser.getVersion"}"#);
        hub.send(b, r#"{"id": 1, "method": "Target.getTargets"}"#);
        let answer_a = next(&mut rx_a).await;
        assert_eq!(answer_a["id"], 1);
        assert_eq!(answer_a["result"]["method"], "Browser.getVersion");
        assert_eq!(
            answer_a["result"]["params"],
            Value::Null,
            "nothing added: {answer_a}"
        );
        assert!(answer_a.get("sessionId").is_none(), "{answer_a}");
        let event_a = next(&mut rx_a).await;
        assert_eq!(event_a["method"], "Test.event");
        assert!(event_a.get("sessionId").is_none(), "{event_a}");
        let answer_b = next(&mut rx_b).await;
        assert_eq!(answer_b["result"]["method"], "Target.getTargets");
        assert_eq!(next(&mut rx_b).await["method"], "Test.event");

        // A session a client did not attach is not reachable through it.
        hub.send(
            a,
            r#"{"id": 2, "method": "Page.navigate", "sessionId": "B2"}"#,
        );
        let refused = next(&mut rx_a).await;
        assert_eq!(refused["id"], 2);
        assert!(refused["error"].is_object(), "{refused}");
        assert!(rx_b.try_recv().is_err(), "nothing of a's reached b");
    }

    #[tokio::test]
    async fn a_scoped_client_sees_its_context_as_the_default_one_and_nothing_of_another() {
        let (hub, fds) = PipeHub::start(PipeEnds::new().expect("pipes")).expect("hub");
        fake_browser(fds);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let scope = ContextScope::new("C1".to_string());
        let client = hub.connect(tx, Some(scope.clone())).await.expect("client");

        // A browser-level command that takes a context gets the session's when it names none.
        hub.send(
            client,
            r#"{"id": 1, "method": "Target.createTarget", "params": {"url": "about:blank"}}"#,
        );
        let created = next(&mut rx).await;
        assert_eq!(
            created["result"]["params"]["browserContextId"], "C1",
            "{created}"
        );
        assert_eq!(next(&mut rx).await["method"], "Test.event");
        // Another context, named: refused, never sent.
        hub.send(
            client,
            r#"{"id": 2, "method": "Storage.getCookies", "params": {"browserContextId": "C2"}}"#,
        );
        let refused = next(&mut rx).await;
        assert_eq!(refused["id"], 2);
        assert!(refused["error"].is_object(), "{refused}");
        hub.send(client, r#"{"id": 3, "method": "Browser.close"}"#);
        assert!(
            next(&mut rx).await["error"].is_object(),
            "the shared browser stays up"
        );

        // Discovery shows C1's target only; C2's auto-attachment is not told.
        hub.send(
            client,
            r#"{"id": 4, "method": "Target.setDiscoverTargets", "params": {"discover": true}}"#,
        );
        let mut seen = Vec::new();
        loop {
            let message = next(&mut rx).await;
            if message["method"] == "Test.discovered" {
                break;
            }
            seen.push(message);
        }
        let told: Vec<&Value> = seen
            .iter()
            .filter(|m| {
                m["method"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Target."))
            })
            .collect();
        assert_eq!(told.len(), 1, "{seen:?}");
        assert_eq!(told[0]["params"]["targetInfo"]["targetId"], "T1");
        // A session of C2's target is not the client's.
        hub.send(
            client,
            r#"{"id": 5, "method": "Runtime.evaluate", "sessionId": "S2"}"#,
        );
        let answer = loop {
            let message = next(&mut rx).await;
            if message["id"] == 5 {
                break message;
            }
        };
        assert!(answer["error"].is_object(), "{answer}");
        // A context it creates is its own.
        scope.adopt("C3");
        assert_eq!(scope.contexts(), ["C1", "C3"]);
    }
}
