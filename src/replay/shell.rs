//! The shell kind of action ([`ShellAction`]): a call of the provider's own shell tool, replayed as that tool ran
//! it (see docs/replay.md).
//!
//! Claude Code's Bash runs `bash` and keeps its working directory between calls, so a replay
//! does too: one working directory carried through the step's shell actions (a recorded
//! `cd sub && pwd` then `rm -f victim.txt` acts in `sub/`), and, as Claude Code's, carried only
//! past a command that succeeded (after a failing `cd sub && false` the next command runs where
//! the failing one started). Codex records the command line it ran (`/bin/bash -lc '…'`), which
//! `sh -c` runs as written: the shell Codex used. A command may run as long as the agent's
//! tool let it: the timeout its call asked for, else the tool's default (Claude Code's Bash:
//! 2 minutes).
//!
//! A replayed command runs in a process group of its own with a marker of its own (a fresh
//! `BUGATTI_HARNESS_TAG`, not the agent's `BUGATTI_AGENT_RUN_ID`), so that ending what it left
//! behind never reaches the agent process running beside it.

use super::compare::drift;
use super::context::{ActionAt, AgentTools, ReplayContext};
use super::domains::Learned;
use super::kind::RecordedKind;
use super::placeholders::Placeholders;
use super::verdict::Fallback;
use crate::process::handle::AGENT_MARKER_ENV;
use crate::process::handle::{self, EnvMarker, Io, Launch};
use crate::process::owner::{Owner, Role, Scope};
use crate::process::piped::read_to_exit;
use crate::process::teardown::{terminate, Ladder};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How the agent's shell tool ran a command: its provider's row says.
pub use crate::model::provider::AgentShell;

impl AgentShell {
    /// How long the agent's own tool let a command run: the timeout its call asked for, else
    /// the tool's default. Claude Code's Bash: `BASH_DEFAULT_TIMEOUT_MS` from the agent's
    /// environment, else 2 minutes. Codex's and pi's shell tools set none of their own (pi's
    /// `timeout` is "optional, no default"; Codex waits on a slow command), so there the bound
    /// is the step's: `step_timeout`.
    pub fn timeout(
        self,
        asked_ms: Option<u64>,
        env: &[(String, String)],
        step_timeout: Duration,
    ) -> Duration {
        if let Some(ms) = asked_ms {
            return Duration::from_millis(ms);
        }
        match self {
            Self::Bash => env
                .iter()
                .rev()
                .find(|(name, _)| name == CLAUDE_BASH_DEFAULT_ENV)
                .and_then(|(_, value)| value.trim().parse::<u64>().ok())
                .filter(|ms| *ms > 0)
                .map_or(CLAUDE_BASH_TIMEOUT, Duration::from_millis),
            Self::Sh => step_timeout,
        }
    }
}

/// Claude Code's Bash timeout when the call gives none and its environment sets none.
pub const CLAUDE_BASH_TIMEOUT: Duration = Duration::from_secs(120);

/// The variable Claude Code reads its Bash tool's default timeout from (ms).
const CLAUDE_BASH_DEFAULT_ENV: &str = "BASH_DEFAULT_TIMEOUT_MS";

/// A call of the provider's own shell tool as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellAction {
    pub command: String,
    /// Where it ran (with placeholders: usually `${BUGATTI_WORKDIR}`).
    pub cwd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// stdout and stderr as the tool result showed them.
    pub output: String,
    /// The timeout the agent's call asked for (Claude Code's Bash `timeout`), in ms; without
    /// one, the tool's own default applies when replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Learned volatile tokens of the output (`[line, token, {domain}]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volatile: Vec<Learned>,
}

impl ShellAction {
    /// A call of the provider's own shell tool as recorded: the session's values as
    /// placeholders.
    pub fn recorded(
        placeholders: &Placeholders,
        command: &str,
        cwd: &str,
        exit_code: Option<i32>,
        output: &str,
    ) -> Self {
        Self {
            command: placeholders.insert(command),
            cwd: placeholders.insert(cwd),
            exit_code,
            output: placeholders.insert(output),
            timeout_ms: None,
            volatile: Vec::new(),
        }
    }
}

impl RecordedKind for ShellAction {
    /// The directory the previous command left (Claude Code's Bash keeps it between calls).
    type State = Option<PathBuf>;
    const NAME: &'static str = "shell";

    fn describe(&self) -> String {
        format!("shell {}", self.command)
    }

    fn output(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.output)
    }

    fn volatile(&self) -> &[Learned] {
        &self.volatile
    }

    fn volatile_mut(&mut self) -> &mut Vec<Learned> {
        &mut self.volatile
    }

    fn same_call(&self, other: &Self) -> bool {
        self.command == other.command && self.cwd == other.cwd
    }

    fn target(&self) -> String {
        super::normalize::collapsed(&self.command)
    }

    fn compared(&self, _: &mut Self::State) -> Option<String> {
        Some(self.output.trim_end().to_string())
    }

    async fn replay(
        &self,
        ctx: &ReplayContext<'_>,
        tools: AgentTools<'_>,
        cwd: &mut Self::State,
        at: &ActionAt<'_>,
    ) -> Result<(), Fallback> {
        replay(ctx, tools.shell, cwd, at, self).await
    }
}

/// How long after a replayed command's exit its pipe is still read (a background job it
/// left may hold it open).
const BACKGROUND_DRAIN: Duration = Duration::from_millis(150);

/// The script and program a command runs with; for `bash`, where its last directory is written.
fn launch_for(ctx: &ReplayContext<'_>, command: &str, cwd_file: Option<&Path>) -> Launch {
    let owner = Owner::new(Scope::run(ctx.run_id.clone()), Role::ShellStep(ctx.step_id));
    let io = Io::Piped {
        stdin: false,
        stdout: true,
        stderr: false,
    };
    // stderr joins stdout, as the tool result showed both.
    let mut launch = match cwd_file {
        Some(file) => {
            let quoted = shell_words::quote(&file.to_string_lossy()).into_owned();
            let script = format!(
                "exec 2>&1\n__bugatti_cwd_file={quoted}\n\
                 trap 'pwd -P >| \"$__bugatti_cwd_file\" 2>/dev/null' EXIT\n{command}"
            );
            let mut launch = Launch::shell(owner, script, io);
            launch.program = PathBuf::from("bash");
            launch
        }
        None => Launch::shell(owner, format!("exec 2>&1\n{command}"), io),
    };
    launch.env = ctx
        .env
        .iter()
        .filter(|(name, _)| name != AGENT_MARKER_ENV)
        .cloned()
        .collect();
    launch.inherit_env = false;
    // A marker of its own: the agent's is swept with the agent.
    launch.marker = EnvMarker::fresh();
    launch.kill_on_drop = true;
    launch
}

/// The file a replayed `bash` writes its last directory to, in a memory file system when there
/// is one (the user's runtime folder, `/dev/shm`): one is made per action, and on a disk file
/// system (ext4) each costs an inode allocation that grows with the files deleted lately.
fn cwd_file() -> std::io::Result<tempfile::NamedTempFile> {
    let in_memory = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from("/dev/shm")]);
    for dir in in_memory.filter(|d| d.is_absolute() && d.is_dir()) {
        let made = tempfile::Builder::new()
            .prefix(".bugatti-cwd-")
            .tempfile_in(&dir);
        if made.is_ok() {
            return made;
        }
    }
    tempfile::NamedTempFile::new()
}

/// Replays one shell action; `cwd` is the directory the previous one left (bash only).
async fn replay(
    ctx: &ReplayContext<'_>,
    shell: AgentShell,
    cwd: &mut Option<PathBuf>,
    at: &ActionAt<'_>,
    recorded: &ShellAction,
) -> Result<(), Fallback> {
    let failed = |reason: String| Fallback::Failed {
        action: at.index,
        reason,
    };
    let command = ctx.placeholders.fill(&recorded.command);
    let dir = match (shell, cwd.as_ref()) {
        (AgentShell::Bash, Some(carried)) => carried.clone(),
        _ => PathBuf::from(ctx.placeholders.fill(&recorded.cwd)),
    };
    if !dir.is_dir() {
        return Err(failed(format!("cwd {} is not a directory", dir.display())));
    }
    let cwd_file = match shell {
        AgentShell::Bash => {
            Some(cwd_file().map_err(|e| failed(format!("cannot make a temporary file: {e}")))?)
        }
        AgentShell::Sh => None,
    };
    let mut launch = launch_for(ctx, &command, cwd_file.as_ref().map(|f| f.path()));
    launch.cwd = Some(dir);
    let program = launch.program.display().to_string();
    let mut group =
        handle::start(launch).map_err(|e| failed(format!("cannot start {program}: {e}")))?;
    let mut bytes = Vec::new();
    let timeout = shell.timeout(recorded.timeout_ms, &ctx.env, ctx.action_timeout);
    // A background job may hold the pipe: what it wrote shortly after the exit is the output.
    let end = read_to_exit(
        &mut group,
        BACKGROUND_DRAIN,
        |chunk| bytes.extend_from_slice(chunk),
        tokio::time::sleep(timeout),
    )
    .await;
    // Whatever it left running is killed now: nothing a replayed action started outlives it.
    terminate(&mut group, &Ladder::kill()).await;
    let status = match end {
        Ok(status) => status,
        Err(()) => {
            return Err(failed(format!(
                "still running after {}s, the timeout the agent's tool gave it",
                timeout.as_secs_f64()
            )))
        }
    };
    // Claude Code's Bash keeps the directory a command left only when the command succeeded.
    if let Some(file) = cwd_file.as_ref().filter(|_| status.success()) {
        let left = std::fs::read_to_string(file.path()).unwrap_or_default();
        let left = left.trim_end_matches('\n');
        if !left.is_empty() && Path::new(left).is_dir() {
            *cwd = Some(PathBuf::from(left));
        }
    }
    let seen_code = status.code();
    if seen_code != recorded.exit_code {
        let show = |c: Option<i32>| c.map_or("none".to_string(), |c| c.to_string());
        return Err(Fallback::hard(drift(
            at.index,
            &at.what,
            "exit code",
            &show(recorded.exit_code),
            &show(seen_code),
        )));
    }
    let seen = ctx.placeholders.redact(&String::from_utf8_lossy(&bytes));
    // A large output reached the agent cut (Claude Code's preview): the replay's is cut alike.
    let seen = super::cut::as_recorded(&recorded.output, seen.trim_end()).unwrap_or(seen);
    // The agents' shell tools hand the model their output without its final newline(s) (Claude
    // Code's Bash) or with them (Codex): trailing whitespace is not a difference.
    ctx.check(at, recorded.output.trim_end(), seen.trim_end())
}
