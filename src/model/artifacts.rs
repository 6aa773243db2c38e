//! Every name the supervisor gives a file or folder it leaves behind (docs/reports.md, "What a
//! run leaves behind"), in one place: the artifact directory (`runs/`, `suites/`, `ledger/`,
//! `history.jsonl`), a run directory, a suite directory, and the supervisor's own folders inside
//! a session's workspace. Nothing else joins one of these names by hand, so the layout can be
//! read here whole and changed here alone.
//!
//! In the model, the lowest layer, because every layer above names these files: `process/` (the
//! ledger, dead runs), `browser/`, `console/`, `providers/` (transcripts), `actors/` and
//! `report/`. Checkpoints keep their own module (`checkpoint.rs`): their layout is a function of
//! the test's path.

use super::ids::{RunId, StepId, SuiteId};
use std::path::{Path, PathBuf};

const RUNS: &str = "runs";
const SUITES: &str = "suites";
const LEDGER: &str = "ledger";
const HISTORY: &str = "history.jsonl";

const LOGS: &str = "logs";
const TRANSCRIPTS: &str = "transcripts";
const SCREENSHOTS: &str = "screenshots";
const BROWSER: &str = "browser";

/// `run.json`, in a run directory.
pub const RUN_JSON: &str = "run.json";
/// A run's events, one JSON object a line.
pub const EVENTS_JSONL: &str = "events.jsonl";
/// `report.md`, in a run directory.
pub const REPORT_MD: &str = "report.md";
/// `summary.json`, in a suite directory.
pub const SUMMARY_JSON: &str = "summary.json";
/// `summary.md`, in a suite directory.
pub const SUMMARY_MD: &str = "summary.md";
/// `junit.xml`, in a suite directory.
pub const JUNIT_XML: &str = "junit.xml";
/// `report.html`, in a suite directory.
pub const REPORT_HTML: &str = "report.html";
/// The agent's transcript, relative to its run directory.
pub const AGENT_LOG: &str = "transcripts/agent.log";
/// `[checkpoint]` save / restore output, relative to the run directory.
pub const CHECKPOINT_LOG: &str = "logs/checkpoint.log";
/// `[supervisor] on_finish` output, relative to the suite directory.
pub const ON_FINISH_LOG: &str = "logs/on_finish.log";

/// `<artifact_dir>/runs`: one directory per run of a root test.
pub fn runs_dir(artifact_dir: &Path) -> PathBuf {
    artifact_dir.join(RUNS)
}

/// `<artifact_dir>/suites`: one directory per invocation.
pub fn suites_dir(artifact_dir: &Path) -> PathBuf {
    artifact_dir.join(SUITES)
}

/// The folder name a suite directory sits in (`report` and `merge` recognise a suites folder).
pub fn is_suites_folder(name: &std::ffi::OsStr) -> bool {
    name == SUITES
}

/// The artifact directory's parts from its root to a run directory, `runs/<run_id>`.
pub fn run_dir_parts(run_id: &RunId) -> [std::ffi::OsString; 2] {
    [RUNS.into(), run_id.as_str().into()]
}

/// The artifact directory's parts from its root to a suite directory, `suites/<suite_id>`.
pub fn suite_dir_parts(suite_id: &std::ffi::OsStr) -> [std::ffi::OsString; 2] {
    [SUITES.into(), suite_id.to_os_string()]
}

/// `<dir>/<test path without .test.toml>.replay.json`: `tests/login.test.toml` in
/// `bugatti.replay` is `bugatti.replay/tests/login.replay.json`.
pub fn recording_path(dir: &Path, test: &Path) -> PathBuf {
    let text = test.to_string_lossy();
    let stem = text
        .strip_suffix(".test.toml")
        .or_else(|| text.strip_suffix(".toml"))
        .unwrap_or(&text);
    dir.join(format!("{stem}.replay.json"))
}

/// `<artifact_dir>/history.jsonl`: one line per suite.
pub fn history_path(artifact_dir: &Path) -> PathBuf {
    artifact_dir.join(HISTORY)
}

/// `<artifact_dir>/ledger`: one file per running invocation.
pub fn ledger_dir(artifact_dir: &Path) -> PathBuf {
    artifact_dir.join(LEDGER)
}

/// `<artifact_dir>/ledger/<suite_id>.json`: this invocation's process groups.
pub fn ledger_file(artifact_dir: &Path, suite_id: &SuiteId) -> PathBuf {
    ledger_dir(artifact_dir).join(format!("{suite_id}.json"))
}

/// `<name>.log` in a logs folder (a run's or a suite's): a harness command's output.
pub fn command_log(logs_dir: &Path, name: &str) -> PathBuf {
    logs_dir.join(format!("{name}.log"))
}

/// A run's harness command log, relative to the run directory: `logs/<name>.log`.
pub fn command_log_rel(name: &str) -> String {
    format!("{LOGS}/{name}.log")
}

/// A suite-scoped command's log, relative to a run directory (`runs/<id>/`), like a run's own
/// command logs: `../../suites/<suite_id>/logs/<name>.log`.
pub fn suite_command_log_rel(suite_id: &SuiteId, name: &str) -> String {
    format!("../../{SUITES}/{suite_id}/{LOGS}/{name}.log")
}

/// A page's screenshot after a step, relative to the run directory (`index` from 1).
pub fn screenshot_rel(step_id: StepId, index: usize) -> String {
    format!("{SCREENSHOTS}/step-{step_id}-{index}.png")
}

/// The accessibility snapshot beside a screenshot (`step-<id>-<n>.png` → `step-<id>-<n>.a11y.txt`):
/// found by its name, so a run.json from before it was taken reads the same.
pub fn a11y_snapshot_rel(screenshot_rel: &str) -> String {
    let stem = screenshot_rel
        .strip_suffix(".png")
        .unwrap_or(screenshot_rel);
    format!("{stem}.a11y.txt")
}

/// A screenshot the agent had taken, taken again by a replay, relative to the run directory
/// (`index` from 1).
pub fn replayed_screenshot_rel(step_id: StepId, index: usize) -> String {
    format!("{SCREENSHOTS}/step-{step_id}-replayed-{index}.png")
}

/// The prefix of a step's browser files, relative to the run directory (`browser/` is
/// [`RunPaths::browser_dir`]).
pub const BROWSER_STEP_PREFIX: &str = "browser/step-";

/// How a step's page console file name ends (after [`BROWSER_STEP_PREFIX`] and the step id).
pub const BROWSER_CONSOLE_SUFFIX: &str = ".console.jsonl";

/// A step's page console messages, relative to the run directory.
pub fn browser_console_rel(step_id: StepId) -> String {
    format!("{BROWSER_STEP_PREFIX}{step_id}{BROWSER_CONSOLE_SUFFIX}")
}

/// A step's failed requests, relative to the run directory.
pub fn browser_network_rel(step_id: StepId) -> String {
    format!("{BROWSER_STEP_PREFIX}{step_id}.network.jsonl")
}

/// Files of one run directory, `.bugatti/runs/<run_id>/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPaths {
    pub dir: PathBuf,
}

impl RunPaths {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }
    /// `<artifact_dir>/runs/<run_id>`.
    pub fn under(artifact_dir: &Path, run_id: &RunId) -> Self {
        Self {
            dir: runs_dir(artifact_dir).join(run_id.as_str()),
        }
    }
    pub fn run_json(&self) -> PathBuf {
        self.dir.join(RUN_JSON)
    }
    pub fn events(&self) -> PathBuf {
        self.dir.join(EVENTS_JSONL)
    }
    pub fn report_md(&self) -> PathBuf {
        self.dir.join(REPORT_MD)
    }
    pub fn diagnostics_dir(&self) -> PathBuf {
        self.dir.join("diagnostics")
    }
    pub fn harness_log(&self) -> PathBuf {
        self.diagnostics_dir().join("harness.log")
    }
    pub fn transcripts_dir(&self) -> PathBuf {
        self.dir.join(TRANSCRIPTS)
    }
    /// The agent's output as it arrived.
    pub fn agent_log(&self) -> PathBuf {
        self.dir.join(AGENT_LOG)
    }
    /// The agent's JSON lines (claude-code, codex, pi, command).
    pub fn agent_jsonl(&self) -> PathBuf {
        self.transcripts_dir().join("agent.jsonl")
    }
    pub fn agent_stderr_log(&self) -> PathBuf {
        self.transcripts_dir().join("agent.stderr.log")
    }
    /// Every agent console call (docs/console.md).
    pub fn console_calls(&self) -> PathBuf {
        self.transcripts_dir().join("console.jsonl")
    }
    /// A console session's full output, `console/<id>.log`.
    pub fn console_session_log(&self, id: u32) -> PathBuf {
        self.dir.join("console").join(format!("{id}.log"))
    }
    /// claude-code's MCP config folder, `agent/` (its `mcp.json` holds the console's token).
    fn agent_dir(&self) -> PathBuf {
        self.dir.join("agent")
    }
    /// claude-code's `--mcp-config` file, `agent/mcp.json`.
    pub fn agent_mcp_config(&self) -> PathBuf {
        self.agent_dir().join("mcp.json")
    }
    /// pi's extension registering the session's MCP servers, `agent/pi-mcp.js`.
    pub fn agent_pi_extension(&self) -> PathBuf {
        self.agent_dir().join("pi-mcp.js")
    }
    pub fn logs_dir(&self) -> PathBuf {
        self.dir.join(LOGS)
    }
    /// The session's browser output (`logs/browser.log` beside the harness commands').
    pub fn browser_log(&self) -> PathBuf {
        command_log(&self.logs_dir(), BROWSER)
    }
    /// Playwright MCP's `--output-dir` and the per-step browser files: `browser/`.
    pub fn browser_dir(&self) -> PathBuf {
        self.dir.join(BROWSER)
    }
    /// `[secrets]` as Playwright MCP's dotenv file: `browser/.secrets.env`.
    pub fn browser_secrets(&self) -> PathBuf {
        self.browser_dir().join(".secrets.env")
    }
    /// Playwright MCP's `--config`, which holds the DevTools endpoint and its token (owner-only,
    /// removed when the session ends): `browser/.playwright-mcp.json`.
    pub fn browser_mcp_config(&self) -> PathBuf {
        self.browser_dir().join(".playwright-mcp.json")
    }
    /// The page script the replay's Playwright MCP client installs: `browser/replay-page-idle.js`.
    pub fn browser_replay_script(&self) -> PathBuf {
        self.browser_dir().join("replay-page-idle.js")
    }
    pub fn screenshots_dir(&self) -> PathBuf {
        self.dir.join(SCREENSHOTS)
    }
    /// A file named relative to the run directory (as run.json names them).
    pub fn file(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }
    /// The subdirectories created before anything is launched.
    pub fn subdirs(&self) -> [PathBuf; 4] {
        [
            self.diagnostics_dir(),
            self.transcripts_dir(),
            self.logs_dir(),
            self.screenshots_dir(),
        ]
    }
}

/// Files of one suite directory, `.bugatti/suites/<suite_id>/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuitePaths {
    pub dir: PathBuf,
}

impl SuitePaths {
    /// `<artifact_dir>/suites/<suite_id>`.
    pub fn under(artifact_dir: &Path, suite_id: &SuiteId) -> Self {
        Self {
            dir: suites_dir(artifact_dir).join(suite_id.as_str()),
        }
    }
    /// A suite directory found elsewhere (`report`, `merge --out`).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }
    /// The artifact directory of a suite directory in it (`<dir>/../..`).
    pub fn artifact_dir(&self) -> PathBuf {
        self.dir.join("../..")
    }
    pub fn report_html(&self) -> PathBuf {
        self.dir.join(REPORT_HTML)
    }
    pub fn summary_json(&self) -> PathBuf {
        self.dir.join(SUMMARY_JSON)
    }
    pub fn summary_md(&self) -> PathBuf {
        self.dir.join(SUMMARY_MD)
    }
    pub fn junit(&self) -> PathBuf {
        self.dir.join(JUNIT_XML)
    }
    pub fn harness_log(&self) -> PathBuf {
        self.dir.join("harness.log")
    }
    /// The suite-scoped commands' logs.
    pub fn logs_dir(&self) -> PathBuf {
        self.dir.join(LOGS)
    }
    /// The suite-scoped commands' workspace.
    pub fn workspace(&self) -> PathBuf {
        self.dir.join("workspace")
    }
    /// `[supervisor] on_finish`'s output.
    pub fn on_finish_log(&self) -> PathBuf {
        self.dir.join(ON_FINISH_LOG)
    }
}

/// A session's workspace is a temporary directory named with this prefix: the only kind of
/// directory `start` (dead runs) and `clean` ever remove.
pub const WORKSPACE_PREFIX: &str = "bugatti-ws-";

/// Whether `path` is named as a session workspace is.
pub fn is_workspace(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(WORKSPACE_PREFIX))
}

/// The supervisor's own folders inside a session's workspace (removed with it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspacePaths {
    pub dir: PathBuf,
}

impl WorkspacePaths {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }
    /// The files of `[[asset:NAME]]` / `{{path:NAME}}`, copied in (docs/config.md).
    pub fn assets_dir(&self) -> PathBuf {
        self.dir.join("assets")
    }
    /// The browser's profile (`--user-data-dir`).
    pub fn browser_profile(&self) -> PathBuf {
        self.dir.join("browser-profile")
    }
    /// The browser's `TMPDIR`.
    pub fn browser_tmp(&self) -> PathBuf {
        self.dir.join("browser-tmp")
    }
    /// The session's `CODEX_HOME`.
    pub fn codex_home(&self) -> PathBuf {
        self.dir.join(".codex-home")
    }
    /// pi's `--session-dir`.
    pub fn pi_sessions(&self) -> PathBuf {
        self.dir.join(".pi-sessions")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names docs/reports.md documents, as written there.
    #[test]
    fn the_layout_is_the_documented_one() {
        let a = Path::new("/p/.bugatti");
        let run = RunPaths::under(a, &RunId::new("r1"));
        assert_eq!(run.dir, Path::new("/p/.bugatti/runs/r1"));
        assert_eq!(run.file(AGENT_LOG), run.agent_log());
        assert_eq!(
            run.agent_log(),
            Path::new("/p/.bugatti/runs/r1/transcripts/agent.log")
        );
        assert_eq!(
            run.console_session_log(3),
            Path::new("/p/.bugatti/runs/r1/console/3.log")
        );
        assert_eq!(
            run.browser_log(),
            Path::new("/p/.bugatti/runs/r1/logs/browser.log")
        );
        assert_eq!(
            run.file(&command_log_rel("web")),
            command_log(&run.logs_dir(), "web")
        );
        assert_eq!(
            run.browser_secrets(),
            Path::new("/p/.bugatti/runs/r1/browser/.secrets.env")
        );
        let suite = SuitePaths::under(a, &SuiteId::new("s1"));
        assert_eq!(
            suite.on_finish_log(),
            Path::new("/p/.bugatti/suites/s1/logs/on_finish.log")
        );
        assert_eq!(
            run.dir
                .join(suite_command_log_rel(&SuiteId::new("s1"), "db")),
            Path::new("/p/.bugatti/runs/r1/../../suites/s1/logs/db.log")
        );
        assert_eq!(
            ledger_file(a, &SuiteId::new("s1")),
            Path::new("/p/.bugatti/ledger/s1.json")
        );
        assert_eq!(history_path(a), Path::new("/p/.bugatti/history.jsonl"));
        assert_eq!(
            browser_console_rel(StepId::new(2)),
            "browser/step-2.console.jsonl"
        );
        assert_eq!(
            screenshot_rel(StepId::new(2), 1),
            "screenshots/step-2-1.png"
        );
    }
}
