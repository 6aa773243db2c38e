//! The browser kind of action (see docs/replay.md): a Playwright MCP tool the agent called on the
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

use super::browser_refs::{
    element_targets, mask_refs, retarget, ElementPath, Resolution, Snapshot,
};
use super::compare::drift;
use super::context::{ActionAt, ReplayContext};
use super::verdict::Fallback;
use crate::browser::mcp::McpCommand;
use crate::browser::mcp_client::{McpClientError, PlaywrightClient};
use crate::model::ids::StepId;
use crate::process::owner::Owner;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::{Duration, Instant};
use tracing::Instrument as _;

/// The MCP server name of the session's browser, as a tool-name prefix (`mcp__browser__…`).
const PREFIX: &str = "mcp__browser__";

/// The Playwright MCP tools a recording keeps. Any other (`browser_run_code`,
/// `browser_file_upload`, tools added later) keeps the step unrecorded.
pub const RECORDED_TOOLS: &[&str] = &[
    "browser_navigate",
    "browser_navigate_back",
    "browser_click",
    "browser_type",
    "browser_fill_form",
    "browser_select_option",
    "browser_press_key",
    "browser_hover",
    "browser_drag",
    "browser_wait_for",
    "browser_snapshot",
    "browser_tabs",
    "browser_handle_dialog",
    "browser_evaluate",
    "browser_take_screenshot",
];

/// The tool whose answer is evidence, not compared.
const SCREENSHOT: &str = "browser_take_screenshot";

/// The tools Playwright MCP answers after letting the page settle: their page is compared after
/// [`settle`].
const SETTLING_TOOLS: &[&str] = &[
    "browser_navigate",
    "browser_navigate_back",
    "browser_click",
    "browser_type",
    "browser_fill_form",
    "browser_select_option",
    "browser_press_key",
    "browser_hover",
    "browser_drag",
    "browser_handle_dialog",
    "browser_evaluate",
];

/// The tools whose answer shows the page (its header and snapshot) in Playwright MCP's default
/// snapshot mode (`full`). The replay's client runs with `--snapshot-mode none` when it can
/// (see [`needs_action_pages`]): a settling tool's page is then taken once settled
/// ([`with_page_of`]), as it is replaced by that page in any case.
const PAGE_TOOLS: &[&str] = &[
    "browser_navigate",
    "browser_navigate_back",
    "browser_click",
    "browser_type",
    "browser_select_option",
    "browser_press_key",
    "browser_hover",
    "browser_drag",
    "browser_wait_for",
    "browser_tabs",
];

/// Whether a replay of `tools` (the recorded browser actions' tools) needs the page in the
/// client's own answers: a tool of [`PAGE_TOOLS`] that does not settle (`browser_wait_for`,
/// `browser_tabs`) is compared with the page as its own answer showed it, the moment it ended,
/// and only the server's snapshot of that moment is that page. Otherwise the client's action
/// snapshots are thrown away unread, and it runs without them (`--snapshot-mode none`).
pub fn needs_action_pages<'a>(mut tools: impl Iterator<Item = &'a str>) -> bool {
    tools.any(|tool| PAGE_TOOLS.contains(&tool) && !SETTLING_TOOLS.contains(&tool))
}

/// Playwright MCP's settle time when the command does not set one.
const DEFAULT_SETTLE: Duration = Duration::from_millis(500);

/// How long apart two looks at an idle page must be for its DOM to count as unchanged.
const IDLE_LOOK_GAP: Duration = Duration::from_millis(15);

/// The script that tells whether a page has work pending (installed with `--init-script`).
const PAGE_IDLE_SCRIPT: &str = include_str!("page_idle.js");

/// The largest snapshot file put inline.
const MAX_SNAPSHOT_BYTES: u64 = 8 * 1024 * 1024;

/// The Playwright MCP tool an agent's tool name calls on the session's browser
/// (`mcp__browser__browser_click` → `browser_click`), if it is one a recording keeps.
pub fn recorded_tool(agent_tool: &str) -> Option<&'static str> {
    let tool = agent_tool.strip_prefix(PREFIX)?;
    RECORDED_TOOLS.iter().copied().find(|t| *t == tool)
}

/// Whether an agent's tool name is a tool of the session's browser at all.
pub fn is_browser_tool(agent_tool: &str) -> bool {
    agent_tool.starts_with(PREFIX)
}

/// The call in a few words: `browser_click "Add to basket button"`, `browser_navigate http://…`.
pub fn describe(tool: &str, arguments: &serde_json::Value) -> String {
    let detail = ["element", "url", "key", "text", "function", "action"]
        .iter()
        .find_map(|k| arguments.get(*k).and_then(|v| v.as_str()));
    match detail {
        Some(d) => format!("{tool} {}", cut_words(d, 120)),
        None => tool.to_string(),
    }
}

fn cut_words(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() <= max && line.len() == text.len() {
        return text.to_string();
    }
    format!("{} …", line.chars().take(max).collect::<String>())
}

/// Two calls are the same when their arguments are, each element ref read as the element it
/// names (two runs number the same page's elements differently).
pub fn same_call(
    x: &serde_json::Value,
    p: &BTreeMap<String, ElementPath>,
    y: &serde_json::Value,
    q: &BTreeMap<String, ElementPath>,
) -> bool {
    let named = |args: &serde_json::Value, paths: &BTreeMap<String, ElementPath>| {
        let by_path: BTreeMap<String, String> = paths
            .iter()
            .map(|(r, path)| (r.clone(), serde_json::to_string(path).unwrap_or_default()))
            .collect();
        retarget(args, &by_path)
    };
    named(x, p) == named(y, q)
}

/// Each element ref in `arguments` with its path, from the latest of `snapshots` (oldest
/// first) that has it; `Err` names a ref no snapshot shows (the step is then not recorded).
pub fn element_paths(
    arguments: &serde_json::Value,
    snapshots: &[Snapshot],
) -> Result<BTreeMap<String, ElementPath>, String> {
    let mut paths = BTreeMap::new();
    for target in element_targets(arguments) {
        let path = snapshots
            .iter()
            .rev()
            .find_map(|s| s.path_of(&target))
            .ok_or_else(|| {
                format!(
                    "the agent named element {target}, which no page snapshot it was shown holds"
                )
            })?;
        paths.insert(target, path);
    }
    Ok(paths)
}

/// `- [Snapshot](…/page-….yml)` links in a Playwright MCP answer, each replaced by the snapshot
/// file's YAML (found by its name in `output_dir`, the server's `--output-dir`), as a fenced
/// block like the one `browser_snapshot` answers with. A link whose file cannot be read is kept.
pub fn inline_snapshots(answer: &str, output_dir: Option<&Path>) -> String {
    let mut out = String::with_capacity(answer.len());
    for line in answer.split_inclusive('\n') {
        let inlined = output_dir.and_then(|dir| snapshot_link(line).and_then(|f| read(dir, f)));
        match inlined {
            Some(yaml) => {
                out.push_str("```yaml\n");
                out.push_str(yaml.trim_end());
                out.push_str("\n```\n");
            }
            None => out.push_str(line),
        }
    }
    out
}

/// The file name of a `- [Snapshot](path)` line.
fn snapshot_link(line: &str) -> Option<&str> {
    let path = line
        .trim()
        .strip_prefix("- [Snapshot](")?
        .strip_suffix(')')?;
    let name = path.rsplit('/').next()?;
    (name.ends_with(".yml") || name.ends_with(".yaml")).then_some(name)
}

/// A snapshot file `name` in `dir`: only a plain name (never a path out of the folder), a
/// regular file, not too big.
fn read(dir: &Path, name: &str) -> Option<String> {
    if name.is_empty() || name.starts_with('.') || name.contains(['/', '\\']) {
        return None;
    }
    let path = dir.join(name);
    // Not a symlink out of the folder; then opened without blocking, within its bound.
    if !std::fs::symlink_metadata(&path).ok()?.is_file() {
        return None;
    }
    let bytes = super::bounded::read(&path, MAX_SNAPSHOT_BYTES).ok()?;
    String::from_utf8(bytes).ok()
}

/// The server's own file names (`page-2026-11-25T15-19-11-864Z.yml`, `console-….log#L1`):
/// they name when its files were written, nothing about the page.
static OUTPUT_FILE: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"[^\s()\[\]]*\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d(?:-\d+)?Z\.[A-Za-z0-9]+(?:#L\d+(?:-L?\d+)?)?",
    )
    .expect("a valid regex")
});

/// An answer in the form both sides are compared in: refs masked, the server's file names
/// masked, its `Console: N errors, M warnings` line (compared as a bound by
/// [`console_errors`]) and `### Events` section left out.
pub fn compared(answer: &str) -> String {
    let mut out = Vec::new();
    let mut in_events = false;
    for line in answer.lines() {
        if line.starts_with("### ") {
            in_events = line.trim() == "### Events";
        }
        if in_events || line.starts_with("- Console: ") {
            continue;
        }
        out.push(line);
    }
    let text = mask_refs(&out.join("\n"));
    OUTPUT_FILE.replace_all(&text, "<file>").into_owned()
}

/// The snapshots an answer holds (a `browser_snapshot`'s, or the files it linked, inlined).
pub fn snapshot_of(inlined_answer: &str) -> Option<Snapshot> {
    let snapshot = Snapshot::parse(inlined_answer);
    (!snapshot.is_empty()).then_some(snapshot)
}

/// The page an action left, proven settled: the action (its step and index in the step), until
/// when the page is proven to stay so, and its snapshot.
type KeptPage = ((StepId, usize), Instant, String);

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
        }
    }

    /// The client's command: the agent's, with no settle of its own (the replay waits as long
    /// itself, or proves it need not), no snapshot in its action answers unless the replay
    /// reads them ([`needs_action_pages`]; an explicit `browser_snapshot` always has one), and
    /// the page script that lets a page prove it is idle.
    fn client_command(&self) -> McpCommand {
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
    fn keep_screenshot(&self, step_id: StepId, images: &[Vec<u8>]) {
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
        let (command, owner, cwd, env) = (
            self.client_command(),
            self.owner.clone(),
            self.cwd.clone(),
            self.env.clone(),
        );
        *starting = Some(tokio::spawn(
            async move {
                let began = std::time::Instant::now();
                let client = PlaywrightClient::start(&command, owner, &cwd, env).await?;
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
    fn take_started(
        &self,
    ) -> Option<tokio::task::JoinHandle<Result<PlaywrightClient, McpClientError>>> {
        self.starting.lock().ok().and_then(|mut s| s.take())
    }

    async fn client(&self) -> Result<&PlaywrightClient, McpClientError> {
        self.client
            .get_or_try_init(|| async {
                if let Some(Ok(started)) = match self.take_started() {
                    Some(handle) => Some(handle.await),
                    None => None,
                } {
                    return started;
                }
                PlaywrightClient::start(
                    &self.client_command(),
                    self.owner.clone(),
                    &self.cwd,
                    self.env.clone(),
                )
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
    fn saw(&self, answer: &str) {
        if answer.contains("### Snapshot") {
            if let Ok(mut last) = self.last_snapshot.lock() {
                *last = Some(answer.to_string());
            }
        }
    }

    /// A call other than a snapshot was made: the page may differ from the last snapshot.
    fn forget_snapshot(&self) {
        if let Ok(mut last) = self.last_snapshot.lock() {
            *last = None;
        }
        if let Ok(mut settled) = self.settled.lock() {
            *settled = None;
        }
    }

    /// Keeps the settled page action `at` (step, index) left, proven to stay so until `until`.
    fn keep_settled(&self, at: (StepId, usize), until: Instant, page: &str) {
        if let Ok(mut settled) = self.settled.lock() {
            *settled = Some((at, until, page.to_string()));
        }
    }

    /// The settled page the action just before `index` in step `step_id` left, if it was
    /// proven settled, no call came after it and its proof still holds.
    fn settled_before(&self, step_id: StepId, index: usize) -> Option<String> {
        let mut settled = self.settled.lock().ok()?;
        let ((step, at), until, _) = settled.as_ref()?;
        if *step != step_id || at + 1 != index || Instant::now() > *until {
            *settled = None;
            return None;
        }
        settled.take().map(|(_, _, page)| page)
    }

    /// The last page snapshot the client took, if no other call came after it.
    fn last_snapshot(&self) -> Option<String> {
        self.last_snapshot.lock().ok().and_then(|l| l.clone())
    }
}

/// How long a Playwright MCP run as `command` with `env` lets the page settle after an action,
/// found as it finds it (its command line over its environment over its `--config` file): its
/// `--timeout-settle`, `PLAYWRIGHT_MCP_TIMEOUT_SETTLE` (`env`, else the supervisor's own, which
/// it inherits), the config file's `timeouts.settle` (milliseconds), else its default. The replay
/// must wait as long as the agent's server did.
fn settle_of(command: &McpCommand, env: &[(String, String)]) -> Duration {
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
        let bytes = super::bounded::read(config.as_deref()?, 1024 * 1024).ok()?;
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
fn output_dir_of(command: &McpCommand) -> Option<PathBuf> {
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

/// A browser action as recorded.
pub(super) struct Recorded<'a> {
    pub(super) tool: &'a str,
    pub(super) arguments: &'a serde_json::Value,
    pub(super) elements: &'a BTreeMap<String, ElementPath>,
    pub(super) output: &'a str,
    pub(super) is_error: bool,
}

/// Makes the call again on the session's browser and compares its answer.
pub(super) async fn replay(
    ctx: &ReplayContext<'_>,
    browser: Option<&BrowserReplay>,
    at: &ActionAt<'_>,
    recorded: Recorded<'_>,
) -> Result<(), Fallback> {
    let failed = |reason: String| Fallback::Failed {
        action: at.index,
        reason,
    };
    let Some(browser) = browser else {
        return Err(failed(
            "this session gives the agent no browser ([browser] with mcp = true): a browser \
             action cannot run"
                .into(),
        ));
    };
    let client = browser.client().await.map_err(|e| failed(e.to_string()))?;
    let output_dir = browser.output_dir();
    let mut current = BTreeMap::new();
    if !recorded.elements.is_empty() {
        // The refs Playwright MCP knows are those of the last snapshot the client took, as the
        // agent's ref came from the last snapshot it read: resolved there when every element
        // is found once, else in a snapshot taken now.
        let known = browser
            .last_snapshot()
            .map(|page| Snapshot::parse(&inline_snapshots(&page, output_dir)))
            .and_then(|snapshot| resolve_all(&snapshot, recorded.elements));
        current = match known {
            Some(found) => found,
            None => {
                let page = client
                    .call("browser_snapshot", serde_json::json!({}))
                    .await
                    .map_err(|e| failed(e.to_string()))?;
                browser.saw(&page.text);
                let snapshot = Snapshot::parse(&inline_snapshots(&page.text, output_dir));
                resolve_or_drift(at, &snapshot, recorded.elements)?
            }
        };
    }
    let arguments = ctx
        .placeholders
        .fill_json(&retarget(recorded.arguments, &current));
    // A snapshot right after an action whose page was proven settled: that page, as a
    // snapshot taken now would show it (nothing called since, nothing in the page can have
    // changed it yet).
    let settled = (recorded.tool == "browser_snapshot"
        && recorded.arguments == &serde_json::json!({}))
        .then(|| browser.settled_before(ctx.step_id, at.index))
        .flatten();
    let answer = match settled {
        Some(text) => crate::browser::mcp_client::ToolAnswer {
            text,
            images: Vec::new(),
            is_error: false,
        },
        None => call_and_settle(
            browser,
            client,
            (ctx.step_id, at.index),
            recorded.tool,
            arguments,
        )
        .await
        .map_err(|e| failed(e.to_string()))?,
    };
    if recorded.tool == SCREENSHOT && !answer.is_error {
        browser.keep_screenshot(ctx.step_id, &answer.images);
        return Ok(());
    }
    let seen = inline_snapshots(&answer.text, output_dir);
    if answer.is_error != recorded.is_error {
        let word = |e: bool| if e { "an error" } else { "an answer" };
        return Err(Fallback::hard(drift(
            at.index,
            &at.what,
            "error",
            word(recorded.is_error),
            &format!("{}: {}", word(answer.is_error), compared(&seen)),
        )));
    }
    console_check(at, recorded.output, &seen)?;
    ctx.check(at, &compared(recorded.output), &compared(&seen))
}

/// Makes the call; an action Playwright MCP answers after letting the page settle is answered
/// with the page once settled ([`settled_page`]) in place of the one it showed at once. A page
/// proven settled is kept for a snapshot right after (`at`: the step and the action's index).
async fn call_and_settle(
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

/// Every recorded element's ref in `snapshot`, when each path is found there once.
fn resolve_all(
    snapshot: &Snapshot,
    elements: &BTreeMap<String, ElementPath>,
) -> Option<BTreeMap<String, String>> {
    elements
        .iter()
        .map(|(old, path)| match snapshot.resolve(path) {
            Resolution::Found(now) => Some((old.clone(), now)),
            Resolution::Missing | Resolution::Ambiguous(_) => None,
        })
        .collect()
}

/// Every recorded element's ref in `snapshot`; an element not found there once is a drift.
fn resolve_or_drift(
    at: &ActionAt<'_>,
    snapshot: &Snapshot,
    elements: &BTreeMap<String, ElementPath>,
) -> Result<BTreeMap<String, String>, Fallback> {
    let mut current = BTreeMap::new();
    for (old, path) in elements {
        let seen = match snapshot.resolve(path) {
            Resolution::Found(now) => {
                current.insert(old.clone(), now);
                continue;
            }
            Resolution::Missing => "no element on the page has this path".to_string(),
            Resolution::Ambiguous(n) => format!("{n} elements on the page have this path"),
        };
        return Err(Fallback::hard(drift(
            at.index,
            &at.what,
            "element",
            &describe_path(path),
            &seen,
        )));
    }
    Ok(current)
}

/// The console errors a page showed with an answer: Playwright MCP's `- Console: N errors, M
/// warnings` line of its `### Page` section, which counts the page's errors since it was last
/// navigated to (no line: none). `None` for an answer without a `### Page` section.
pub fn console_errors(answer: &str) -> Option<u64> {
    let mut in_page = false;
    let mut errors = None;
    for line in answer.lines() {
        if line.starts_with("### ") {
            in_page = line.trim() == "### Page";
            if in_page {
                errors = Some(0);
            }
            continue;
        }
        if let Some(counts) = line.strip_prefix("- Console: ").filter(|_| in_page) {
            errors = counts
                .split_once(" errors")
                .and_then(|(n, _)| n.trim().parse().ok())
                .or(errors);
        }
    }
    errors
}

/// The agent was shown how many console errors the page had logged: a replayed answer that
/// shows more is a drift (the agent, told "Console: 1 errors", looks and may well fail the
/// step), not a pass that only warns.
fn console_check(at: &ActionAt<'_>, recorded: &str, seen: &str) -> Result<(), Fallback> {
    match (console_errors(recorded), console_errors(seen)) {
        (Some(expected), Some(now)) if now > expected => Err(Fallback::hard(drift(
            at.index,
            &at.what,
            "console errors",
            &format!("{expected} console errors shown to the agent"),
            &format!("{now} console errors"),
        ))),
        _ => Ok(()),
    }
}

/// One look at the page through `page_idle.js`: the page was idle when asked at `sent`, with
/// `mutations` DOM changes so far, and nothing in it could change it for `horizon` from then.
struct Look {
    sent: Instant,
    horizon: Duration,
    mutations: u64,
}

/// Asks the page whether it is idle to the end of the settle time (`settle` after `answered`),
/// with a margin for the look itself; `None` when it is busy or could not say.
async fn look(client: &PlaywrightClient, answered: Instant, settle: Duration) -> Option<Look> {
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
struct Settled {
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
async fn settled_page(
    client: &PlaywrightClient,
    answered: Instant,
    settle: Duration,
) -> Result<Settled, McpClientError> {
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
                return Ok(Settled {
                    text: page.text,
                    valid_until: Some(second.sent + second.horizon),
                });
            }
        }
    }
    // The page could not prove it: taken as it is at the end of the settle time, as the
    // agent's Playwright MCP took it.
    Ok(Settled {
        text: snapshot().await?.text,
        valid_until: None,
    })
}

/// The DOM change count of an idle page from `browser_evaluate`'s answer (`### Result` then the
/// JSON value); `None` when the page is busy or could not say.
fn idle_of(answer: &str) -> Option<u64> {
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
fn with_page_of(answer: &str, page: &str, shows_page: bool) -> String {
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
fn section_at(answer: &str, title: &str) -> Option<usize> {
    let mut at = 0;
    for line in answer.split_inclusive('\n') {
        if line.trim_end() == title {
            return Some(at);
        }
        at += line.len();
    }
    None
}

/// An element's path in one line: `main > list > listitem "Red mug" > button "Add to basket"`.
pub fn describe_path(path: &ElementPath) -> String {
    path.0
        .iter()
        .map(|s| {
            let mut part = s.role.clone();
            if let Some(name) = &s.name {
                part.push_str(&format!(" {name:?}"));
            }
            if let Some(label) = &s.label {
                part.push_str(&format!(" ({label})"));
            }
            part
        })
        .collect::<Vec<_>>()
        .join(" > ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // A real `browser_click` answer of Playwright MCP 0.0.83 and the snapshot file it linked.
    const CLICK: &str = "### Ran Playwright code\n```js\nawait page.getByRole('button', { name: 'Add to basket' }).click();\n```\n### Page\n- Page URL: http://127.0.0.1:8765/page.html\n- Page Title: Shop\n- Console: 1 errors, 0 warnings\n### Snapshot\n- [Snapshot](out/page-2026-11-25T15-19-12-597Z.yml)\n### Events\n- New console entries: out/console-2026-11-25T15-19-11-703Z.log#L1\n";
    const FILE: &str = "- main [ref=e2]:\n  - heading \"Products\" [level=1] [ref=e3]\n  - list [ref=e4]:\n    - listitem [ref=e5]:\n      - text: Red mug\n      - button \"Add to basket\" [active] [ref=e6]\n  - paragraph [ref=e7]: \"Basket: Red mug\"\n";

    #[test]
    fn a_linked_snapshot_is_put_inline_and_compared_without_refs_files_or_counters() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("page-2026-11-25T15-19-12-597Z.yml"), FILE).expect("w");
        let inlined = inline_snapshots(CLICK, Some(dir.path()));
        assert!(
            inlined.contains("paragraph [ref=e7]: \"Basket: Red mug\""),
            "{inlined}"
        );
        let seen = compared(&inlined);
        assert!(!seen.contains("e7") && seen.contains("[ref=…]"), "{seen}");
        assert!(
            !seen.contains("Console:") && !seen.contains("New console"),
            "{seen}"
        );
        // Another run: other refs, other file names, another console count: the same.
        let other = inlined
            .replace("e7]", "e9]")
            .replace("1 errors", "0 errors");
        assert_eq!(compared(&other), seen);
        // Another basket: different.
        let changed = inlined.replace("Basket: Red mug", "Basket: Blue mug");
        assert_ne!(compared(&changed), seen);
        // The agent was shown 1 error: as many or fewer replay; more is a drift.
        assert_eq!(console_errors(&inlined), Some(1));
        assert_eq!(console_errors(&other), Some(0));
        assert_eq!(
            console_errors(&inlined.replace("- Console: 1 errors, 0 warnings\n", "")),
            Some(0)
        );
        assert_eq!(console_errors("### Result\nok\n"), None);
        let seen_so_far = std::sync::Mutex::new(Default::default());
        let at = ActionAt {
            index: 0,
            what: "browser_click".into(),
            recorded: None,
            volatile: &[],
            relations: &[],
            seen: &seen_so_far,
        };
        assert!(console_check(&at, &inlined, &other).is_ok());
        assert!(console_check(&at, &other, &inlined).is_err());
        // A link without its file stays a link, its name masked.
        let kept = compared(&inline_snapshots(CLICK, Some(&dir.path().join("none"))));
        assert!(kept.contains("- [Snapshot](<file>)"), "{kept}");
    }

    #[test]
    fn a_settled_page_takes_the_place_of_the_unsettled_one() {
        let snapshot = "### Page\n- Page URL: http://x/\n### Snapshot\n```yaml\n- paragraph: \"Basket: 1\"\n```\n";
        let merged = with_page_of(CLICK, snapshot, true);
        assert!(merged.starts_with("### Ran Playwright code"), "{merged}");
        assert!(
            merged.contains("Basket: 1") && !merged.contains("[Snapshot]"),
            "{merged}"
        );
        let evaluate = "### Result\n42\n### Ran Playwright code\n```js\nx\n```\n";
        assert_eq!(with_page_of(evaluate, snapshot, false), evaluate);
        // With `--snapshot-mode none` a click's answer shows no page when its header did not
        // change: the settled page is put after what the click ran, tabs included; what it
        // shows of a dialog goes with the page as the snapshot shows it.
        let ran = "### Ran Playwright code\n```js\nawait page.click();\n```\n";
        let none = format!("{ran}### Events\n- New console entries: out/c.log#L1\n");
        assert_eq!(
            with_page_of(&none, snapshot, true),
            format!("{ran}{snapshot}")
        );
        let tabs = format!("### Open tabs\n- 0: (current) [Shop]\n- 1: [Other]\n{snapshot}");
        assert_eq!(with_page_of(ran, &tabs, true), format!("{ran}{tabs}"));
        let modal = format!("{ran}### Modal state\n- [\"alert\" dialog]\n");
        let page_with_modal =
            "### Page\n- Page URL: http://x/\n### Modal state\n- [\"alert\" dialog]\n";
        assert_eq!(
            with_page_of(&modal, page_with_modal, true),
            format!("{ran}{page_with_modal}")
        );
        // Which answers the client shows no page in, and when it must show them.
        assert!(!needs_action_pages(
            [
                "browser_navigate",
                "browser_click",
                "browser_snapshot",
                "browser_evaluate"
            ]
            .into_iter()
        ));
        assert!(needs_action_pages(
            ["browser_click", "browser_wait_for"].into_iter()
        ));
        assert!(needs_action_pages(["browser_tabs"].into_iter()));
    }

    #[test]
    fn only_an_idle_answer_counts_as_idle() {
        let answer = |v: &str| format!("### Result\n{v}\n### Ran Playwright code\n```js\n```");
        assert_eq!(
            idle_of(&answer("{\"idle\": true, \"mutations\": 3}")),
            Some(3)
        );
        assert_eq!(
            idle_of(&answer("{\"idle\": false, \"mutations\": 3}")),
            None
        );
        assert_eq!(idle_of(&answer("{\"idle\": false}")), None);
        assert_eq!(idle_of("### Result\nnot json"), None);
    }

    #[test]
    fn a_proven_page_answers_only_the_snapshot_right_after_its_action_while_its_proof_holds() {
        let replay = || {
            BrowserReplay::new(
                McpCommand {
                    program: "playwright-mcp".into(),
                    args: Vec::new(),
                    source: crate::browser::mcp::McpSource::Configured,
                    cdp_endpoint: None,
                },
                Owner::new(
                    crate::process::owner::Scope::run("run"),
                    crate::process::owner::Role::Other("test".into()),
                ),
                PathBuf::from("."),
                Vec::new(),
                PathBuf::from("."),
                false,
            )
        };
        let later = Instant::now() + Duration::from_secs(60);
        let b = replay();
        b.keep_settled((StepId::from(2), 0), later, "page");
        // Not the next action, another step: not answered, and the page is not kept.
        assert_eq!(b.settled_before(StepId::from(2), 2), None);
        assert_eq!(b.settled_before(StepId::from(2), 1), None);
        b.keep_settled((StepId::from(2), 0), later, "page");
        assert_eq!(b.settled_before(StepId::from(3), 1), None);
        // The next action of the same step: answered, once.
        b.keep_settled((StepId::from(2), 0), later, "page");
        assert_eq!(
            b.settled_before(StepId::from(2), 1).as_deref(),
            Some("page")
        );
        assert_eq!(b.settled_before(StepId::from(2), 1), None);
        // Any call since: the page may have changed.
        b.keep_settled((StepId::from(2), 0), later, "page");
        b.forget_snapshot();
        assert_eq!(b.settled_before(StepId::from(2), 1), None);
        // The proof ran out: nothing says the page is still so.
        b.keep_settled((StepId::from(2), 0), Instant::now(), "page");
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(b.settled_before(StepId::from(2), 1), None);
    }

    #[test]
    fn the_client_waits_the_settle_time_the_agent_had() {
        let command = |args: &[&str]| McpCommand {
            program: "playwright-mcp".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            source: crate::browser::mcp::McpSource::Configured,
            cdp_endpoint: None,
        };
        let none: &[(String, String)] = &[];
        assert_eq!(settle_of(&command(&[]), none), DEFAULT_SETTLE);
        assert_eq!(
            settle_of(&command(&["--timeout-settle", "200"]), none),
            Duration::from_millis(200)
        );
        assert_eq!(
            settle_of(&command(&["--timeout-settle=0"]), none),
            Duration::ZERO
        );
        // Its environment, then its config file, as Playwright MCP reads them.
        let dir = tempfile::tempdir().expect("dir");
        let config = dir.path().join("config.json");
        std::fs::write(&config, r#"{"timeouts": {"settle": 3000}}"#).expect("write");
        let config = config.display().to_string();
        let env = vec![(
            "PLAYWRIGHT_MCP_TIMEOUT_SETTLE".to_string(),
            "1500".to_string(),
        )];
        assert_eq!(
            settle_of(&command(&["--config", &config]), none),
            Duration::from_secs(3)
        );
        assert_eq!(
            settle_of(&command(&["--config", &config]), &env),
            Duration::from_millis(1500)
        );
        assert_eq!(
            settle_of(
                &command(&["--config", &config, "--timeout-settle", "200"]),
                &env
            ),
            Duration::from_millis(200)
        );
    }

    #[test]
    fn a_link_never_reads_outside_the_output_folder() {
        let dir = tempfile::tempdir().expect("dir");
        let answer = "- [Snapshot](../../etc/passwd.yml)\n- [Snapshot](/etc/x/.hidden.yml)\n";
        assert_eq!(inline_snapshots(answer, Some(dir.path())), answer);
    }

    #[test]
    fn only_the_listed_tools_of_the_browser_server_are_recorded() {
        assert_eq!(
            recorded_tool("mcp__browser__browser_click"),
            Some("browser_click")
        );
        assert_eq!(recorded_tool("mcp__browser__browser_run_code"), None);
        assert_eq!(recorded_tool("mcp__browser__browser_file_upload"), None);
        assert_eq!(recorded_tool("mcp__shop__browser_click"), None);
        assert!(is_browser_tool("mcp__browser__browser_run_code"));
    }

    #[test]
    fn a_ref_is_kept_with_its_path_from_the_latest_snapshot_that_has_it() {
        let older = Snapshot::parse("- button \"Old\" [ref=e6]\n");
        let newer = Snapshot::parse(FILE);
        let paths = element_paths(&json!({"target": "e6"}), &[older, newer]).expect("found");
        assert_eq!(
            describe_path(&paths["e6"]),
            "main > list > listitem (Red mug) > button \"Add to basket\""
        );
        let missing = element_paths(&json!({"target": "e99"}), &[Snapshot::parse(FILE)]);
        assert!(missing.expect_err("no such ref").contains("e99"));
        // Same element, other refs: the same call.
        let p = element_paths(&json!({"target": "e6"}), &[Snapshot::parse(FILE)]).expect("p");
        let q = element_paths(
            &json!({"target": "e16"}),
            &[Snapshot::parse(&FILE.replace("e6]", "e16]"))],
        )
        .expect("q");
        assert!(same_call(
            &json!({"target": "e6"}),
            &p,
            &json!({"target": "e16"}),
            &q
        ));
        assert!(!same_call(
            &json!({"target": "e6", "doubleClick": true}),
            &p,
            &json!({"target": "e16"}),
            &q
        ));
    }
}
