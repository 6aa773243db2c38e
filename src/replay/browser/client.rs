//! The supervisor's own Playwright MCP client for a session's replays ([`BrowserReplay`]), and
//! how it waits for the page after an action as the agent's server did (its settle time, or
//! sooner when `page_idle.js` proves nothing in the page is pending).

use super::tools::{PAGE_TOOLS, SETTLING_TOOLS};
use crate::browser::mcp::McpCommand;
use crate::browser::mcp_client::{McpClientError, PlaywrightClient};
use crate::model::ids::StepId;
use crate::process::owner::Owner;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tracing::Instrument as _;

/// Playwright MCP's settle time when the command does not set one.
pub(super) const DEFAULT_SETTLE: Duration = Duration::from_millis(500);

/// How long apart two looks at an idle page must be for its DOM to count as unchanged.
pub(super) const IDLE_LOOK_GAP: Duration = Duration::from_millis(15);

/// The script that tells whether a page has work pending (installed with `--init-script`).
pub(super) const PAGE_IDLE_SCRIPT: &str = include_str!("page_idle.js");

/// The page an action left, proven settled: the action (its step and index in the step), until
/// when the page is proven to stay so, and its snapshot.
pub(super) type KeptPage = ((StepId, usize), Instant, String);

/// The supervisor's own Playwright MCP client for a session's replays: started the first time
/// a browser action replays, attached to the session's browser, ended with the session.
pub struct BrowserReplay {
    command: McpCommand,
    owner: Owner,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    client: tokio::sync::OnceCell<PlaywrightClient>,
    /// The client being started ahead of the first browser action ([`BrowserReplay::prestart`]).
    starting:
        std::sync::Mutex<Option<tokio::task::JoinHandle<Result<PlaywrightClient, McpClientError>>>>,
    /// The last page snapshot the client took (its answer's text): the refs Playwright MCP
    /// resolves now are that snapshot's, so a recorded ref is looked up there first.
    last_snapshot: std::sync::Mutex<Option<String>>,
    /// The page an action left, proven settled ([`settled_page`]).
    settled: std::sync::Mutex<Option<KeptPage>>,
    /// The run directory: screenshots taken again are kept in its `screenshots/`.
    run_dir: PathBuf,
    /// The screenshots taken again since the session last took them (paths relative to the
    /// run directory): the step's evidence.
    screenshots: std::sync::Mutex<Vec<String>>,
    /// How long the agent's Playwright MCP let the page settle after an action.
    settle: Duration,
    /// Where the server writes its snapshot files (its `--output-dir`).
    output_dir: Option<PathBuf>,
    /// Whether the client's action answers carry the page ([`needs_action_pages`]).
    action_pages: bool,
    /// With a pooled browser: where a kept client comes from and goes back to.
    kept: Option<KeptSlot>,
    /// The kept form of this session's client: what it runs as, and its own files.
    kept_files: std::sync::Mutex<Option<(String, tempfile::TempDir)>>,
}

impl BrowserReplay {
    /// A client to be run as `command` (the agent's Playwright MCP command, its output folder
    /// and secrets file included) for `owner`, in `cwd`; `action_pages`: its action answers
    /// must show the page ([`needs_action_pages`]).
    pub fn new(
        command: McpCommand,
        owner: Owner,
        cwd: PathBuf,
        env: Vec<(String, String)>,
        run_dir: PathBuf,
        action_pages: bool,
    ) -> Self {
        let settle = settle_of(&command, &env);
        let output_dir = output_dir_of(&command);
        Self {
            output_dir,
            command,
            owner,
            cwd,
            env,
            client: tokio::sync::OnceCell::new(),
            starting: std::sync::Mutex::new(None),
            last_snapshot: std::sync::Mutex::new(None),
            settled: std::sync::Mutex::new(None),
            run_dir,
            screenshots: std::sync::Mutex::new(Vec::new()),
            settle,
            action_pages,
            kept: None,
            kept_files: std::sync::Mutex::new(None),
        }
    }

    /// The client is kept with the pooled browser across sessions (`slot`), when it can be.
    pub fn kept_in(mut self, slot: Option<KeptSlot>) -> Self {
        self.kept = slot;
        self
    }

    /// The client to start for this session, or the one kept with the pooled browser when it
    /// runs the same and is sound. A kept client runs with files of its own (its endpoint is the
    /// browser's client endpoint, whose context is the session's) and its `--output-dir` a
    /// link to this session's, so that its snapshot files land in this run's folder.
    fn prepare(&self) -> (McpCommand, Option<PlaywrightClient>) {
        let command = self.client_command();
        let Some(slot) = &self.kept else {
            return (command, None);
        };
        let key = match kept_form(&command, slot, &self.run_dir, &self.cwd, &self.env, None) {
            Ok((_, key)) => key,
            Err(why) => {
                tracing::info!("playwright mcp (replay): the client cannot be kept: {why}");
                return (command, None);
            }
        };
        let previous = slot.take_previous();
        let (dir, reused) = match previous {
            Some(kept) if kept.key == key && kept.client.is_sound() => {
                (kept.dir, Some(kept.client))
            }
            other => {
                if let Some(stale) = other {
                    tokio::spawn(stale.stop());
                }
                match tempfile::Builder::new()
                    .prefix("bugatti-replay-mcp-")
                    .tempdir()
                {
                    Ok(dir) => (dir, None),
                    Err(_) => return (command, None),
                }
            }
        };
        let formed = kept_form(
            &command,
            slot,
            &self.run_dir,
            &self.cwd,
            &self.env,
            Some(dir.path()),
        );
        match formed {
            Ok((kept_command, key)) => {
                if let Some(client) = &reused {
                    tracing::info!(
                        "playwright mcp (replay): kept client pid {} reused",
                        client.pid()
                    );
                }
                if let Ok(mut files) = self.kept_files.lock() {
                    *files = Some((key, dir));
                }
                (kept_command, reused)
            }
            Err(_) => {
                if let Some(client) = reused {
                    tokio::spawn(async move {
                        let _ = client.stop().await;
                    });
                }
                (command, None)
            }
        }
    }

    /// Ends the client, or hands it back to be kept with the pooled browser: a kept client
    /// that is sound (no call of it failed, its server runs). A client started ahead and never
    /// used is handed back too; with none, the one kept from before that nobody took.
    pub async fn hand_back(self) -> Option<crate::browser::pool::KeptClient> {
        let Some(slot) = self.kept.clone() else {
            self.stop().await;
            return None;
        };
        let ahead = match self.take_started() {
            Some(handle) => handle.await.ok().and_then(Result::ok),
            None => None,
        };
        let files = self.kept_files.lock().ok().and_then(|mut f| f.take());
        let client = match (self.client.into_inner(), ahead) {
            (Some(used), ahead) => {
                if let Some(ahead) = ahead {
                    let _ = ahead.stop().await;
                }
                Some(used)
            }
            (None, ahead) => ahead,
        };
        match (client, files) {
            (Some(client), Some((key, dir))) if client.is_sound() => {
                if let Some(untaken) = slot.take_previous() {
                    untaken.stop().await;
                }
                tracing::info!(
                    "playwright mcp (replay): kept client pid {} handed back for the browser's next session",
                    client.pid()
                );
                Some(crate::browser::pool::KeptClient { client, key, dir })
            }
            (Some(client), files) => {
                tracing::info!(
                    "playwright mcp (replay): client pid {} not kept (sound: {}, kept form: {})",
                    client.pid(),
                    client.is_sound(),
                    files.is_some()
                );
                let _ = client.stop().await;
                slot.take_previous()
            }
            (None, _) => slot.take_previous(),
        }
    }

    /// The client's command: the agent's, with no settle of its own (the replay waits as long
    /// itself, or proves it need not), no snapshot in its action answers unless the replay
    /// reads them ([`needs_action_pages`]; an explicit `browser_snapshot` always has one), and
    /// the page script that lets a page prove it is idle.
    pub(super) fn client_command(&self) -> McpCommand {
        let mut command = self.command.clone();
        let mut replaced = vec!["--timeout-settle"];
        if !self.action_pages {
            replaced.push("--snapshot-mode");
        }
        let mut args = Vec::new();
        let mut given = command.args.iter();
        while let Some(arg) = given.next() {
            if replaced.contains(&arg.as_str()) {
                given.next();
            } else if !replaced
                .iter()
                .any(|flag| arg.starts_with(&format!("{flag}=")))
            {
                args.push(arg.clone());
            }
        }
        args.extend(["--timeout-settle".to_string(), "0".to_string()]);
        if !self.action_pages {
            args.extend(["--snapshot-mode".to_string(), "none".to_string()]);
        }
        let script = crate::model::artifacts::RunPaths::new(&self.run_dir).browser_replay_script();
        let written = script
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&script, PAGE_IDLE_SCRIPT));
        if written.is_ok() {
            args.extend(["--init-script".to_string(), script.display().to_string()]);
        }
        command.args = args;
        // npx spends most of a second finding a package it already holds: the default
        // command runs straight from npx's cache when that is provably what npx would run
        // (docs/replay.md). A configured command or one found on `PATH` is run as given.
        if command.source == crate::browser::mcp::McpSource::Npx {
            if let Some(direct) = crate::browser::npx_cache::resolve(
                &command.program,
                &command.args,
                &self.cwd,
                &self.env,
            ) {
                command.program = direct.program.display().to_string();
                command.args = direct.args;
            }
        }
        tracing::debug!(
            program = %command.program,
            "playwright mcp (replay): the client's command"
        );
        command
    }

    /// Keeps the images of a screenshot taken again for step `step_id` in the run's
    /// `screenshots/`; a file that cannot be written is left out (the evidence is missing, the
    /// replay is not wrong).
    pub(super) fn keep_screenshot(&self, step_id: StepId, images: &[Vec<u8>]) {
        let Ok(mut kept) = self.screenshots.lock() else {
            return;
        };
        for image in images {
            let rel = crate::model::artifacts::replayed_screenshot_rel(step_id, kept.len() + 1);
            let path = self.run_dir.join(&rel);
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            if std::fs::write(&path, image).is_ok() {
                kept.push(rel);
            }
        }
    }

    /// The screenshots taken again since last asked, relative to the run directory.
    pub fn take_screenshots(&self) -> Vec<String> {
        self.screenshots
            .lock()
            .map(|mut kept| std::mem::take(&mut *kept))
            .unwrap_or_default()
    }

    /// Where the server writes its snapshot files (its `--output-dir`).
    pub fn output_dir(&self) -> Option<&Path> {
        self.output_dir.as_deref()
    }

    /// Starts the client now, in the background, so that the first browser action does not
    /// wait for Node and Playwright MCP to come up (seconds on a busy machine): called when the
    /// session's recording has browser actions, as soon as the browser is up (beside the
    /// harness's start). Once the handshake is done, the client attaches to the browser with a
    /// `browser_tabs` list: it navigates nothing and, as any first call (the agent's too), takes
    /// the browser's open tab. The first replayed action then finds it attached; it waits for
    /// all of this to end ([`BrowserReplay::client`]): the client is never used half-started.
    pub fn prestart(&self) {
        self.prestart_before_browser(None);
    }

    /// As [`Self::prestart`], started before the browser is up (its endpoint's address already
    /// known): Node and Playwright MCP come up beside Chromium, and the client attaches only
    /// once `browser_up` says the browser is up, as it would have had it started then. If that
    /// never comes (the setup failed), it attaches to nothing and is stopped with the session.
    pub fn prestart_before_browser(&self, browser_up: Option<tokio::sync::oneshot::Receiver<()>>) {
        let Ok(mut starting) = self.starting.lock() else {
            return;
        };
        if starting.is_some() || self.client.initialized() {
            return;
        }
        let (command, reused) = self.prepare();
        let (owner, cwd, env) = (self.owner.clone(), self.cwd.clone(), self.env.clone());
        *starting = Some(tokio::spawn(
            async move {
                let began = std::time::Instant::now();
                let client = match reused {
                    Some(client) => client,
                    None => PlaywrightClient::start(&command, owner, &cwd, env).await?,
                };
                // Where the first replayed step's wait goes (`BUGATTI_LOG_LEVEL=debug`).
                tracing::debug!(
                    ms = began.elapsed().as_millis(),
                    "playwright mcp (replay): handshake done"
                );
                if let Some(up) = browser_up {
                    if up.await.is_err() {
                        return Ok(client);
                    }
                }
                // A failed attach is not the client's failure: the first action attaches again
                // and answers for itself.
                let tabs = serde_json::json!({ "action": "list" });
                if let Err(e) = client.call("browser_tabs", tabs).await {
                    tracing::debug!("playwright mcp: attaching ahead failed: {e}");
                }
                Ok(client)
            }
            // Its lines go to the run's diagnostics with the rest of the session's.
            .instrument(tracing::Span::current()),
        ));
    }

    /// Whether `other` would run the very client this one runs (same command, folder,
    /// environment and run): one started ahead with what was known then is used only if so.
    pub fn same_client_as(&self, other: &BrowserReplay) -> bool {
        self.command == other.command
            && self.action_pages == other.action_pages
            && self.cwd == other.cwd
            && self.env == other.env
            && self.run_dir == other.run_dir
            && self.owner == other.owner
    }

    /// The client started ahead, if one was.
    pub(super) fn take_started(
        &self,
    ) -> Option<tokio::task::JoinHandle<Result<PlaywrightClient, McpClientError>>> {
        self.starting.lock().ok().and_then(|mut s| s.take())
    }

    pub(super) async fn client(&self) -> Result<&PlaywrightClient, McpClientError> {
        self.client
            .get_or_try_init(|| async {
                if let Some(Ok(started)) = match self.take_started() {
                    Some(handle) => Some(handle.await),
                    None => None,
                } {
                    match started {
                        Ok(client) if !client.is_sound() => {
                            // A kept client that died or failed since: never used again.
                            tracing::info!(
                                "playwright mcp (replay): kept client pid {} is gone or failed: a new one starts",
                                client.pid()
                            );
                            let _ = client.stop().await;
                        }
                        started => return started,
                    }
                }
                let (command, reused) = self.prepare();
                if let Some(client) = reused {
                    return Ok(client);
                }
                PlaywrightClient::start(&command, self.owner.clone(), &self.cwd, self.env.clone())
                    .await
            })
            .await
    }

    /// Ends the client and its server, if one was started (a client started ahead and never
    /// used too).
    pub async fn stop(self) {
        if let Some(Ok(Ok(client))) = match self.take_started() {
            Some(handle) => Some(handle.await),
            None => None,
        } {
            let _ = client.stop().await;
        }
        if let Some(client) = self.client.into_inner() {
            let _ = client.stop().await;
        }
    }

    /// Keeps a `browser_snapshot` answer: the page, and the refs Playwright MCP now knows.
    pub(super) fn saw(&self, answer: &str) {
        if answer.contains("### Snapshot") {
            if let Ok(mut last) = self.last_snapshot.lock() {
                *last = Some(answer.to_string());
            }
        }
    }

    /// A call other than a snapshot was made: the page may differ from the last snapshot.
    pub(super) fn forget_snapshot(&self) {
        if let Ok(mut last) = self.last_snapshot.lock() {
            *last = None;
        }
        if let Ok(mut settled) = self.settled.lock() {
            *settled = None;
        }
    }

    /// Keeps the settled page action `at` (step, index) left, proven to stay so until `until`.
    pub(super) fn keep_settled(&self, at: (StepId, usize), until: Instant, page: &str) {
        if let Ok(mut settled) = self.settled.lock() {
            *settled = Some((at, until, page.to_string()));
        }
    }

    /// The settled page the action just before `index` in step `step_id` left, if it was
    /// proven settled, no call came after it and its proof still holds.
    pub(super) fn settled_before(&self, step_id: StepId, index: usize) -> Option<String> {
        let mut settled = self.settled.lock().ok()?;
        let ((step, at), until, _) = settled.as_ref()?;
        if *step != step_id || at + 1 != index || Instant::now() > *until {
            *settled = None;
            return None;
        }
        settled.take().map(|(_, _, page)| page)
    }

    /// The last page snapshot the client took, if no other call came after it.
    pub(super) fn last_snapshot(&self) -> Option<String> {
        self.last_snapshot.lock().ok().and_then(|l| l.clone())
    }
}

/// The kept form of a replay client's `command` for `slot`, and what it runs as (its key: the
/// command, its settings and secrets, with the run's own paths and the browser's endpoint left
/// out, its folder and the environment Node and Playwright MCP read). With `dir`, its files are
/// written there: its config (the browser's client endpoint in place of the session's), the
/// page script, and `output`, a link to the session's `--output-dir`.
fn kept_form(
    command: &McpCommand,
    slot: &KeptSlot,
    run_dir: &Path,
    cwd: &Path,
    env: &[(String, String)],
    dir: Option<&Path>,
) -> std::io::Result<(McpCommand, String)> {
    let run = run_dir.display().to_string();
    let mut key = vec![command.program.clone(), cwd.display().to_string()];
    let mut args = Vec::new();
    let mut given = command.args.iter();
    let mut has_config = false;
    while let Some(arg) = given.next() {
        let (flag, value) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        if !["--config", "--output-dir", "--init-script", "--secrets"].contains(&flag) {
            key.push(arg.replace(&run, "<run>"));
            args.push(arg.clone());
            continue;
        }
        let Some(value) = value.or_else(|| given.next().cloned()) else {
            continue;
        };
        let at = |name: &str| dir.map(|d| d.join(name));
        let kept = match flag {
            "--config" => {
                has_config = true;
                let bytes = super::super::bounded::read(Path::new(&value), 1024 * 1024)
                    .map_err(|e| std::io::Error::other(e.to_string()))?;
                let mut settings: serde_json::Value = serde_json::from_slice(&bytes)?;
                if let Some(browser) = settings["browser"].as_object_mut() {
                    browser.remove("cdpEndpoint");
                }
                key.push(format!("--config {settings}"));
                settings["browser"]["cdpEndpoint"] =
                    serde_json::Value::String(slot.cdp_url.clone());
                let path = at("config.json");
                if let Some(path) = &path {
                    crate::model::user_file::write_private(path, settings.to_string().as_bytes())?;
                }
                path
            }
            "--output-dir" => {
                key.push("--output-dir".into());
                let path = at("output");
                if let Some(path) = &path {
                    std::fs::create_dir_all(&value)?;
                    let _ = std::fs::remove_file(path);
                    std::os::unix::fs::symlink(&value, path)?;
                }
                path
            }
            "--init-script" => {
                let script = std::fs::read_to_string(&value)?;
                key.push(format!("--init-script {script}"));
                let path = at("page_idle.js");
                if let Some(path) = &path {
                    std::fs::write(path, script)?;
                }
                path
            }
            _ => {
                // Read once, when the server starts: the same secrets, the same client.
                let secrets = std::fs::read_to_string(&value)?;
                key.push(format!("--secrets {secrets}"));
                Some(PathBuf::from(&value))
            }
        };
        args.push(flag.to_string());
        args.push(kept.map_or(value, |p| p.display().to_string()));
    }
    if !has_config {
        return Err(std::io::Error::other("no config file holds its endpoint"));
    }
    let mut read: Vec<&(String, String)> = env
        .iter()
        .filter(|(name, _)| {
            ["PLAYWRIGHT", "NODE", "NPM_", "npm_", "DEBUG"]
                .iter()
                .any(|p| name.starts_with(p))
                || ["PATH", "HOME", "TMPDIR"].contains(&name.as_str())
        })
        .collect();
    read.sort();
    key.extend(read.into_iter().map(|(n, v)| format!("{n}={v}")));
    let mut kept = command.clone();
    kept.args = args;
    Ok((kept, key.join("\0")))
}

/// How long a Playwright MCP run as `command` with `env` lets the page settle after an action,
/// found as it finds it (its command line over its environment over its `--config` file): its
/// `--timeout-settle`, `PLAYWRIGHT_MCP_TIMEOUT_SETTLE` (`env`, else the supervisor's own, which
/// it inherits), the config file's `timeouts.settle` (milliseconds), else its default. The replay
/// must wait as long as the agent's server did.
pub(super) fn settle_of(command: &McpCommand, env: &[(String, String)]) -> Duration {
    const VAR: &str = "PLAYWRIGHT_MCP_TIMEOUT_SETTLE";
    let mut args = command.args.iter();
    let mut cli = None;
    let mut config = None;
    while let Some(arg) = args.next() {
        if arg == "--timeout-settle" {
            cli = args.next().cloned();
        } else if let Some(ms) = arg.strip_prefix("--timeout-settle=") {
            cli = Some(ms.to_string());
        } else if arg == "--config" {
            config = args.next().map(PathBuf::from);
        } else if let Some(path) = arg.strip_prefix("--config=") {
            config = Some(PathBuf::from(path));
        }
    }
    let from_env = || {
        env.iter()
            .rev()
            .find(|(name, _)| name == VAR)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(VAR).ok())
    };
    let from_file = || {
        let bytes = super::super::bounded::read(config.as_deref()?, 1024 * 1024).ok()?;
        let json: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        json["timeouts"]["settle"].as_f64().map(|ms| ms.to_string())
    };
    [cli, from_env(), from_file()]
        .into_iter()
        .flatten()
        .find_map(|ms| {
            let ms = ms.trim().parse::<f64>().ok()?;
            (ms.is_finite() && ms >= 0.0).then(|| Duration::from_secs_f64(ms / 1000.0))
        })
        .unwrap_or(DEFAULT_SETTLE)
}

/// A Playwright MCP command's `--output-dir` (`--output-dir X` or `--output-dir=X`).
pub(super) fn output_dir_of(command: &McpCommand) -> Option<PathBuf> {
    let mut args = command.args.iter();
    while let Some(arg) = args.next() {
        if arg == "--output-dir" {
            return args.next().map(PathBuf::from);
        }
        if let Some(dir) = arg.strip_prefix("--output-dir=") {
            return Some(PathBuf::from(dir));
        }
    }
    None
}

/// Makes the call; an action Playwright MCP answers after letting the page settle is answered
/// with the page once settled ([`settled_page`]) in place of the one it showed at once. A page
/// proven settled is kept for a snapshot right after (`at`: the step and the action's index).
pub(super) async fn call_and_settle(
    browser: &BrowserReplay,
    client: &PlaywrightClient,
    at: (StepId, usize),
    tool: &str,
    arguments: serde_json::Value,
) -> Result<crate::browser::mcp_client::ToolAnswer, McpClientError> {
    let answer = client.call(tool, arguments).await?;
    // Any other call may have changed the page since the last snapshot.
    browser.forget_snapshot();
    if tool == "browser_snapshot" {
        browser.saw(&answer.text);
    }
    if !SETTLING_TOOLS.contains(&tool) || answer.is_error {
        return Ok(answer);
    }
    let settled = settled_page(client, Instant::now(), browser.settle).await?;
    browser.saw(&settled.text);
    if let Some(until) = settled.valid_until {
        browser.keep_settled(at, until, &settled.text);
    }
    Ok(crate::browser::mcp_client::ToolAnswer {
        text: with_page_of(&answer.text, &settled.text, PAGE_TOOLS.contains(&tool)),
        ..answer
    })
}

/// One look at the page through `page_idle.js`: the page was idle when asked at `sent`, with
/// `mutations` DOM changes so far, and nothing in it could change it for `horizon` from then.
pub(super) struct Look {
    sent: Instant,
    horizon: Duration,
    mutations: u64,
}

/// Asks the page whether it is idle to the end of the settle time (`settle` after `answered`),
/// with a margin for the look itself; `None` when it is busy or could not say.
pub(super) async fn look(
    client: &PlaywrightClient,
    answered: Instant,
    settle: Duration,
) -> Option<Look> {
    let horizon = settle.saturating_sub(answered.elapsed()) + Duration::from_millis(100);
    let function = format!(
        "() => window.__bugattiIdle ? window.__bugattiIdle({}) : {{ idle: false }}",
        horizon.as_millis()
    );
    let sent = Instant::now();
    let answer = client
        .call(
            "browser_evaluate",
            serde_json::json!({ "function": function }),
        )
        .await
        .ok()?;
    idle_of(&answer.text).map(|mutations| Look {
        sent,
        horizon,
        mutations,
    })
}

/// The page after an action, as the agent saw it once Playwright MCP's settle time was over.
pub(super) struct SettledPage {
    /// A `browser_snapshot` answer.
    text: String,
    /// Until when the page is proven to stay as `text` shows it, if it was proven idle (else
    /// the settle time ran out and the page was taken as it was then).
    valid_until: Option<Instant>,
}

/// The page once `settle` has passed since `answered`, or sooner when the page proves nothing
/// in it can change before then: a look finds it idle to the end of the settle time, a
/// snapshot is taken, and a second look, at least [`IDLE_LOOK_GAP`] later and still within the
/// first look's horizon, finds it idle with the same count of DOM changes. Nothing could run
/// between the two looks and the DOM did not change, so the snapshot between them is the page
/// as it will be at the end of the settle time.
pub(super) async fn settled_page(
    client: &PlaywrightClient,
    answered: Instant,
    settle: Duration,
) -> Result<SettledPage, McpClientError> {
    let snapshot = || client.call("browser_snapshot", serde_json::json!({}));
    while answered.elapsed() < settle {
        let Some(first) = look(client, answered, settle).await else {
            let left = settle.saturating_sub(answered.elapsed());
            tokio::time::sleep(IDLE_LOOK_GAP.min(left)).await;
            continue;
        };
        let page = snapshot().await?;
        let waited = first.sent.elapsed();
        if waited < IDLE_LOOK_GAP {
            tokio::time::sleep(IDLE_LOOK_GAP - waited).await;
        }
        if let Some(second) = look(client, answered, settle).await {
            if second.mutations == first.mutations && Instant::now() <= first.sent + first.horizon {
                return Ok(SettledPage {
                    text: page.text,
                    valid_until: Some(second.sent + second.horizon),
                });
            }
        }
    }
    // The page could not prove it: taken as it is at the end of the settle time, as the
    // agent's Playwright MCP took it.
    Ok(SettledPage {
        text: snapshot().await?.text,
        valid_until: None,
    })
}

/// The DOM change count of an idle page from `browser_evaluate`'s answer (`### Result` then the
/// JSON value); `None` when the page is busy or could not say.
pub(super) fn idle_of(answer: &str) -> Option<u64> {
    let json = answer.split("### Result").nth(1)?;
    let json = json.split("\n### ").next()?.trim();
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    (value["idle"] == serde_json::Value::Bool(true))
        .then(|| value["mutations"].as_u64())
        .flatten()
}

/// An action's answer with its page (`### Page` onwards) replaced by `page`'s, a snapshot's
/// answer: what the action ran, then the page as it is now.
/// An answer that shows no page is kept as it is (`browser_evaluate`'s result), unless the
/// tool's answer shows one (`shows_page`, [`PAGE_TOOLS`]) and the client left it out
/// (`--snapshot-mode none` shows no page whose header did not change): then what the action
/// ran (its sections before the page's) is followed by `page`'s tabs and page.
pub(super) fn with_page_of(answer: &str, page: &str, shows_page: bool) -> String {
    match (answer.find("### Page"), page.find("### Page")) {
        (Some(ran), Some(now)) => format!("{}{}", &answer[..ran], &page[now..]),
        (None, Some(now)) if shows_page => {
            let ran = ["### Modal state", "### Snapshot", "### Events"]
                .iter()
                .filter_map(|section| section_at(answer, section))
                .min()
                .unwrap_or(answer.len());
            let now = section_at(page, "### Open tabs").map_or(now, |tabs| tabs.min(now));
            let mut text = answer[..ran].to_string();
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&page[now..]);
            text
        }
        _ => answer.to_string(),
    }
}

/// Where a `### Title` section line starts in an answer.
pub(super) fn section_at(answer: &str, title: &str) -> Option<usize> {
    let mut at = 0;
    for line in answer.split_inclusive('\n') {
        if line.trim_end() == title {
            return Some(at);
        }
        at += line.len();
    }
    None
}

/// Where the replay's Playwright MCP client kept with a pooled browser (docs/browser.md, "One
/// browser per worker") comes from and goes back to: the browser's client endpoint (its token
/// is the pool's, in no agent's or harness's environment), whose processes they are, and the
/// client the browser's last session handed back, taken by the first client of this session
/// that would run the same.
#[derive(Clone)]
pub struct KeptSlot {
    pub cdp_url: String,
    pub scope: crate::process::owner::Scope,
    pub previous: std::sync::Arc<std::sync::Mutex<Option<crate::browser::pool::KeptClient>>>,
}

impl std::fmt::Debug for KeptSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeptSlot")
    }
}

impl KeptSlot {
    /// The kept client no client of the session took.
    pub fn take_previous(&self) -> Option<crate::browser::pool::KeptClient> {
        self.previous.lock().ok().and_then(|mut p| p.take())
    }
}
