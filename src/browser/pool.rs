//! One browser per worker (docs/browser.md, "One browser per worker"): the supervisor keeps the
//! Chromium its sessions used and lends it to the next session of the same settings, each
//! session in a browser context of its own.
//!
//! - The pool is keyed by the browser's settings ([`PoolKey`]: executable, headless, viewport):
//!   a session takes an idle browser of its key or starts one, so there are never more browsers
//!   than sessions running at once (one per worker).
//! - A session gets a fresh context (`Target.createBrowserContext`) with one blank tab, behind a
//!   token of its own granted on the browser's endpoint with the context's
//!   [`ContextScope`]: its clients (Playwright MCP, the capture, `BUGATTI_CDP_URL`) see that
//!   context as the browser's default one, and nothing of another session's.
//! - Given back, the token is revoked (its connections closed) and every context of the session
//!   disposed (`Target.disposeBrowserContext`: cookies, storage, IndexedDB, cache, service
//!   workers, permissions, downloads and tabs go with it). A browser that crashed, a session
//!   that ended in a way that may have left it broken, a context that could not be disposed or
//!   anything left behind ends the browser: it is never lent again.
//! - The browsers are the suite's ([`Scope::Suite`]): a session's sweep leaves them alone, and
//!   the suite's end stops them ([`BrowserPool::shutdown`]), through the one termination routine.

use super::endpoint::new_token;
use super::error::BrowserError;
use super::launch::{Browser, BrowserLaunch};
use super::pipe::ContextScope;
use crate::model::outcome::TeardownState;
use crate::process::owner::Scope;
use crate::process::teardown::TeardownReport;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long one of the pool's own CDP calls may take.
const CALL_LIMIT: Duration = Duration::from_secs(10);
/// How long a disposed context's targets may take to be gone.
const LEFTOVER_LIMIT: Duration = Duration::from_secs(2);

/// The settings that make two sessions' browsers the same browser.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PoolKey {
    /// The executable, as found.
    pub executable: PathBuf,
    /// `--headless`.
    pub headless: bool,
    /// The window size.
    pub viewport: (u32, u32),
}

/// What a session asks of the pool.
#[derive(Debug, Clone)]
pub struct PoolRequest {
    /// Which browser.
    pub key: PoolKey,
    /// The session's DevTools token: granted for the session's context, revoked at its end.
    pub token: String,
    /// The session's `browser.log`: the browser's output while it serves the session.
    pub log_path: PathBuf,
    /// `[supervisor] max_log_bytes` for that log.
    pub max_log_bytes: u64,
    /// The run the session is (said in the log's first line).
    pub run: String,
    /// Added to a started browser's environment.
    pub env: Vec<(String, String)>,
    /// How long a started browser may take to answer.
    pub ready_timeout: Duration,
}

/// The replay's Playwright MCP client kept with a pooled browser across its sessions
/// (docs/browser.md, "One browser per worker"): attached through the browser's client token,
/// which each session's context is granted to and revoked from, so that its next call after a
/// give-back connects again and finds the next session's context as its default one.
pub struct KeptClient {
    /// The client and its server.
    pub client: super::mcp_client::PlaywrightClient,
    /// What it was started as: a session that would run another client starts its own.
    pub key: String,
    /// Its own files (its config, page script and output link), removed with it.
    pub dir: tempfile::TempDir,
}

impl KeptClient {
    /// Ends the client and removes its files.
    pub async fn stop(self) {
        let _ = self.client.stop().await;
        let _ = self.dir.close();
    }
}

/// A browser of the pool.
struct Pooled {
    key: PoolKey,
    browser: Browser,
    /// Its profile and `TMPDIR`, removed once it has ended.
    dir: tempfile::TempDir,
    /// The browser's own default context, which no session uses.
    default_context: Option<String>,
    /// The targets it had when it was started: none, as it starts without a window
    /// (`--no-startup-window`), unless the browser opened one of its own.
    initial: HashSet<String>,
    /// How many sessions it has served, this one included.
    sessions: u32,
    /// The kept replay client's token and the client (boxed: a lease stays small).
    client: Box<ClientSlot>,
}

/// What a pooled browser keeps for the replay's client.
struct ClientSlot {
    /// The token only the kept replay client uses: never in any agent's or harness's
    /// environment, granted the context lent out and revoked at its give-back.
    token: String,
    /// The replay's client kept with the browser between sessions.
    kept: Option<KeptClient>,
}

struct PoolInner {
    scope: Scope,
    idle: Mutex<Vec<Pooled>>,
    closed: AtomicBool,
}

/// The suite's browsers. Cloning shares it.
#[derive(Clone)]
pub struct BrowserPool {
    inner: Arc<PoolInner>,
}

/// A browser held for one session ([`BrowserPool::reserve`]), its endpoint's port known.
pub struct BrowserReservation {
    port: u16,
    held: Held,
    client_token: String,
    scope: Scope,
}

enum Held {
    Idle(Box<Pooled>),
    Listener(Arc<std::net::TcpListener>),
}

impl BrowserReservation {
    /// Whether the held browser is an idle one, which may turn out unable to serve (gone, or
    /// refusing a context) and be replaced by a new one on another port: the session's
    /// `BUGATTI_CDP_URL` is then known only once [`BrowserPool::checkout_reserved`] is done. A
    /// browser started on the reserved listener is always served at its port.
    pub fn may_move(&self) -> bool {
        matches!(self.held, Held::Idle(_))
    }

    /// The port of the DevTools endpoint the session will be served on (unless the held idle
    /// browser turns out unable to serve it: then a new one's).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The browser-wide WebSocket behind the browser's client token: the context lent out to
    /// whichever session holds the browser, for the kept replay client only.
    pub fn client_cdp_url(&self) -> String {
        super::endpoint::ws_url(self.port, &self.client_token)
    }

    /// Whose the kept client's processes are (the suite's, as the browser's).
    pub fn client_scope(&self) -> Scope {
        self.scope.clone()
    }

    /// The replay client kept with the held browser, if any: the session's to use and hand back.
    pub fn take_kept_client(&mut self) -> Option<KeptClient> {
        match &mut self.held {
            Held::Idle(pooled) => pooled.client.kept.take(),
            Held::Listener(_) => None,
        }
    }
}

/// A browser lent to one session, in its own context, until [`BrowserPool::give_back`]. Dropped
/// without being given back, the browser is killed, never lent again.
pub struct Lease {
    pooled: Option<Pooled>,
    scope: Arc<ContextScope>,
    token: String,
}

impl Lease {
    fn pooled(&self) -> &Pooled {
        // Taken only by `give_back`, which consumes the lease.
        self.pooled
            .as_ref()
            .unwrap_or_else(|| unreachable!("a lease holds its browser until given back"))
    }

    /// The browser (its pid, version, sandbox).
    pub fn browser(&self) -> &Browser {
        &self.pooled().browser
    }

    /// The browser-wide WebSocket behind the session's token (`BUGATTI_CDP_URL`).
    pub fn cdp_url(&self) -> String {
        self.browser().endpoint().ws_url_for(&self.token)
    }

    /// `http://127.0.0.1:<port>/<session token>`: the base of `/json/version` and `/json/list`.
    pub fn http_base(&self) -> String {
        format!("http://127.0.0.1:{}/{}", self.browser().port(), self.token)
    }

    /// The session's browser context.
    pub fn context(&self) -> &str {
        self.scope.primary()
    }

    /// Keeps the session's replay client with the browser: it serves the browser's next
    /// session if the browser is lent again, else it ends with it.
    pub fn keep_client(&mut self, client: KeptClient) {
        if let Some(pooled) = self.pooled.as_mut() {
            pooled.client.kept = Some(client);
        }
    }

    /// Which session of its browser this is (1 for a browser started for it).
    pub fn session_number(&self) -> u32 {
        self.pooled().sessions
    }
}

impl BrowserPool {
    /// An empty pool whose browsers belong to `scope` (the suite).
    pub fn new(scope: Scope) -> Self {
        Self {
            inner: Arc::new(PoolInner {
                scope,
                idle: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
            }),
        }
    }

    fn idle(&self) -> MutexGuard<'_, Vec<Pooled>> {
        self.inner
            .idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// How many browsers wait for a session.
    pub fn idle_count(&self) -> usize {
        self.idle().len()
    }

    /// Holds a browser of `key` for one session ahead of [`Self::checkout_reserved`]: an idle
    /// one, or a loopback listener for the DevTools endpoint of one to be started. Either way the
    /// endpoint's port is known at once (the session's `BUGATTI_CDP_URL`, and its replay's client
    /// started beside the browser).
    pub fn reserve(&self, key: &PoolKey) -> std::io::Result<BrowserReservation> {
        let found = {
            let mut idle = self.idle();
            let at = idle.iter().position(|p| &p.key == key);
            at.map(|at| idle.swap_remove(at))
        };
        let scope = self.inner.scope.clone();
        Ok(match found {
            Some(pooled) => BrowserReservation {
                port: pooled.browser.port(),
                client_token: pooled.client.token.clone(),
                held: Held::Idle(Box::new(pooled)),
                scope,
            },
            None => {
                let listener = super::endpoint::bind_ahead()?;
                BrowserReservation {
                    port: listener.local_addr()?.port(),
                    held: Held::Listener(Arc::new(listener)),
                    client_token: new_token(),
                    scope,
                }
            }
        })
    }

    /// A browser of `request.key` for one session, in a fresh context of its own behind the
    /// session's token: an idle one when there is one, else a new one.
    pub async fn checkout(&self, request: &PoolRequest) -> Result<Lease, BrowserError> {
        let reservation = self.reserve(&request.key)?;
        self.checkout_reserved(reservation, request).await
    }

    /// [`Self::checkout`] of what `reservation` holds. An idle browser that is gone or cannot
    /// open a context is ended, and a new one started (on another port).
    pub async fn checkout_reserved(
        &self,
        reservation: BrowserReservation,
        request: &PoolRequest,
    ) -> Result<Lease, BrowserError> {
        let client_token = reservation.client_token;
        let listener = match reservation.held {
            Held::Idle(pooled) => {
                let mut pooled = *pooled;
                if pooled.browser.is_running() {
                    match open_session(&mut pooled, request).await {
                        Ok(scope) => return Ok(lease(pooled, scope, request)),
                        Err(why) => {
                            end(pooled, true, &why).await;
                        }
                    }
                } else {
                    end(pooled, true, "it is gone").await;
                }
                None
            }
            Held::Listener(listener) => Some(listener),
        };
        let mut pooled = self.launch(request, listener, client_token).await?;
        match open_session(&mut pooled, request).await {
            Ok(scope) => Ok(lease(pooled, scope, request)),
            Err(why) => {
                end(pooled, true, &why).await;
                Err(BrowserError::Pool(why))
            }
        }
    }

    /// Starts a browser for the pool: its profile and `TMPDIR` in a directory of its own, its
    /// output in the first session's log, no window of its own (each session gets a tab in its
    /// context: an idle first tab would cost the browser work all suite long), target discovery
    /// on (so that the pipe knows each target's context).
    async fn launch(
        &self,
        request: &PoolRequest,
        listener: Option<Arc<std::net::TcpListener>>,
        client_token: String,
    ) -> Result<Pooled, BrowserError> {
        let dir = tempfile::Builder::new()
            .prefix("bugatti-browser-")
            .tempdir()
            .map_err(|source| BrowserError::Profile {
                path: std::env::temp_dir(),
                source,
            })?;
        let tmp = dir.path().join("tmp");
        let mut spec = BrowserLaunch::new(
            request.key.executable.clone(),
            dir.path().join("profile"),
            self.inner.scope.clone(),
        );
        spec.headless = request.key.headless;
        spec.viewport = request.key.viewport;
        spec.log_path = Some(request.log_path.clone());
        spec.max_log_bytes = request.max_log_bytes;
        spec.ready_timeout = request.ready_timeout;
        spec.listener = listener;
        // Its first session's harness may connect before the context is made (docs/browser.md).
        spec.held_until_granted = true;
        spec.startup_window = false;
        spec.env = request.env.clone();
        if std::fs::create_dir_all(&tmp).is_ok() {
            spec.env.push(("TMPDIR".into(), tmp.display().to_string()));
        }
        // Nobody is given the browser's first token: only sessions' tokens let anyone in.
        let own = new_token();
        spec.token = Some(own.clone());
        let browser = Browser::start(spec).await?;
        browser.endpoint().revoke(&own);
        let mut pooled = Pooled {
            key: request.key.clone(),
            browser,
            dir,
            default_context: None,
            initial: HashSet::new(),
            sessions: 0,
            client: Box::new(ClientSlot {
                token: client_token,
                kept: None,
            }),
        };
        let hub = pooled.browser.hub();
        let discovered = hub
            .call(
                "Target.setDiscoverTargets",
                json!({"discover": true}),
                None,
                CALL_LIMIT,
            )
            .await;
        let targets = match discovered {
            Ok(_) => hub
                .call("Target.getTargets", json!({}), None, CALL_LIMIT)
                .await
                .map_err(BrowserError::Pool),
            Err(why) => Err(BrowserError::Pool(why)),
        };
        match targets {
            Ok(targets) => {
                for info in target_infos(&targets) {
                    if let Some(id) = info["targetId"].as_str() {
                        pooled.initial.insert(id.to_string());
                    }
                    if pooled.default_context.is_none() {
                        pooled.default_context =
                            info["browserContextId"].as_str().map(str::to_string);
                    }
                }
                Ok(pooled)
            }
            Err(e) => {
                end(pooled, true, "it did not answer").await;
                Err(e)
            }
        }
    }

    /// The session of `lease` is over: its token is revoked (its connections closed) and its
    /// contexts disposed. The browser goes back to the pool when the session was `sound` (it did
    /// not end in a way that may have left the browser broken), the browser still runs, every
    /// context was disposed and nothing of the session is left; otherwise it is ended
    /// (`skip_grace`: SIGKILL at once) and its teardown reported.
    pub async fn give_back(
        &self,
        mut lease: Lease,
        sound: bool,
        skip_grace: bool,
    ) -> TeardownReport {
        let Some(mut pooled) = lease.pooled.take() else {
            return clean_report();
        };
        pooled.browser.endpoint().revoke(&lease.token);
        // The kept client's connection goes with the context: its next call connects again.
        pooled.browser.endpoint().revoke(&pooled.client.token);
        let why_not = if !sound {
            Some("its session did not end cleanly".to_string())
        } else {
            close_session(&pooled, &lease.scope).await.err()
        };
        match why_not {
            None if !self.inner.closed.load(Ordering::SeqCst) => {
                self.idle().push(pooled);
                clean_report()
            }
            None => end(pooled, skip_grace, "the suite is over").await,
            Some(why) => {
                tracing::warn!(
                    "pooled browser pid {} ended, not lent again: {why}",
                    pooled.browser.pid()
                );
                pooled.sessions = 0;
                end(pooled, skip_grace, &why).await
            }
        }
    }

    /// Ends every idle browser (the suite is over): nothing is lent after this, and a browser
    /// given back later is ended then.
    pub async fn shutdown(&self, skip_grace: bool) -> Vec<TeardownReport> {
        self.inner.closed.store(true, Ordering::SeqCst);
        let idle: Vec<Pooled> = std::mem::take(&mut *self.idle());
        futures::future::join_all(
            idle.into_iter()
                .map(|pooled| end(pooled, skip_grace, "the suite is over")),
        )
        .await
    }
}

fn lease(mut pooled: Pooled, scope: Arc<ContextScope>, request: &PoolRequest) -> Lease {
    pooled.sessions += 1;
    Lease {
        pooled: Some(pooled),
        scope,
        token: request.token.clone(),
    }
}

/// A fresh context with one blank tab for a session, its token let in, the browser's output
/// sent to its log. The error says why the browser cannot serve it.
async fn open_session(
    pooled: &mut Pooled,
    request: &PoolRequest,
) -> Result<Arc<ContextScope>, String> {
    let hub = pooled.browser.hub();
    let created = hub
        .call(
            "Target.createBrowserContext",
            json!({"disposeOnDetach": false}),
            None,
            CALL_LIMIT,
        )
        .await?;
    let context = created["browserContextId"]
        .as_str()
        .ok_or("Target.createBrowserContext answered no browserContextId")?
        .to_string();
    let scope = ContextScope::new(context.clone());
    // Unfocused, as the tab a browser starts with is: a page's `document.hasFocus()` (and the
    // `[active]` of its snapshot) reads the same on a pooled browser as on a browser of its own.
    let tab = hub
        .call(
            "Target.createTarget",
            json!({"url": "about:blank", "browserContextId": context, "focus": false}),
            None,
            CALL_LIMIT,
        )
        .await;
    if let Err(why) = tab {
        let _ = dispose(pooled, &context).await;
        return Err(why);
    }
    let browser = &pooled.browser;
    browser.redirect_log(
        &request.log_path,
        request.max_log_bytes,
        &format!(
            "[bugatti] pooled browser pid {} ({}) serves run {} in browser context {context}, its session {} on this browser",
            browser.pid(),
            browser.version().browser,
            request.run,
            pooled.sessions + 1
        ),
    );
    browser.endpoint().grant(&request.token, scope.clone());
    browser
        .endpoint()
        .grant(&pooled.client.token, scope.clone());
    Ok(scope)
}

/// Disposes of every context of the session's `scope` and checks that nothing of it is left
/// (a target outside the browser's default context, or one the default context did not have).
async fn close_session(pooled: &Pooled, scope: &ContextScope) -> Result<(), String> {
    if !pooled.browser.is_running() {
        return Err("the browser is gone".into());
    }
    // A context the session made with `disposeOnDetach` (Playwright's `newContext`) went with
    // its connection: only those still there are disposed of, the session's own always.
    let existing = pooled
        .browser
        .hub()
        .call("Target.getBrowserContexts", json!({}), None, CALL_LIMIT)
        .await?;
    let existing: HashSet<&str> = existing["browserContextIds"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for context in scope.contexts() {
        if context != scope.primary() && !existing.contains(context.as_str()) {
            continue;
        }
        dispose(pooled, &context)
            .await
            .map_err(|why| format!("its context {context} could not be disposed: {why}"))?;
    }
    let deadline = Instant::now() + LEFTOVER_LIMIT;
    loop {
        let targets = pooled
            .browser
            .hub()
            .call("Target.getTargets", json!({}), None, CALL_LIMIT)
            .await?;
        let left: Vec<String> = target_infos(&targets)
            .filter(|info| {
                let id = info["targetId"].as_str().unwrap_or_default();
                let context = info["browserContextId"].as_str();
                context != pooled.default_context.as_deref() || !pooled.initial.contains(id)
            })
            .map(|info| format!("{} {}", info["type"], info["url"]))
            .collect();
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("the session left {}", left.join(", ")));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn dispose(pooled: &Pooled, context: &str) -> Result<(), String> {
    pooled
        .browser
        .hub()
        .call(
            "Target.disposeBrowserContext",
            json!({"browserContextId": context}),
            None,
            CALL_LIMIT,
        )
        .await
        .map(|_| ())
}

fn target_infos(targets: &Value) -> impl Iterator<Item = &Value> {
    targets["targetInfos"].as_array().into_iter().flatten()
}

/// Ends a pooled browser through the one termination routine, then removes its directory.
async fn end(mut pooled: Pooled, skip_grace: bool, why: &str) -> TeardownReport {
    tracing::info!("pooled browser pid {} ends: {why}", pooled.browser.pid());
    // The kept client ends beside its browser, as a session's own client does: each takes its
    // own while to close (at the suite's end, on the way to the process's exit).
    let kept = pooled.client.kept.take();
    let (report, ()) = tokio::join!(pooled.browser.stop(skip_grace), async {
        if let Some(kept) = kept {
            kept.stop().await;
        }
    });
    let Pooled { dir, .. } = pooled;
    // A profile is hundreds of files: removed on a blocking thread, so that the suite's browsers,
    // ended together, are removed side by side rather than one after another on the runtime.
    let _ = tokio::task::spawn_blocking(move || dir.close()).await;
    report
}

fn clean_report() -> TeardownReport {
    TeardownReport {
        state: TeardownState::Clean,
        exit: None,
        leaked: Vec::new(),
    }
}
