//! The `supervisor` subcommands behind the binary's parser: each takes plain options (`model`),
//! prints what the user sees and returns its exit code (docs/signals.md). The binary
//! (`src/bin/supervisor.rs`) keeps clap and the process's exit code only.

use crate::model::load::{load_suite, Suite};
use crate::model::options::RunOptions;
use crate::report::store::artifact_dir;
use std::path::PathBuf;

/// A line on stdout for the commands whose exit code is a run's verdict (`start`, `merge`): a
/// reader that went away (`supervisor start | head -1`) must not turn a finished run into a panic
/// or a SIGPIPE death, so a failed write is dropped and the run's own exit code stands. The
/// commands that only print (`check`, `report`, `doctor`, …) end with SIGPIPE (141) instead, as
/// Unix filters do.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

pub mod args;
mod check;
mod clean;
pub mod copy_flags;
mod doctor;
mod init;
mod replay;
mod selection;
mod start;
mod suites;
#[cfg(test)]
mod tests;
mod watch;

pub use check::check;
pub use clean::clean;
pub use doctor::doctor;
pub use init::init;
pub use replay::{replay, PendingAction};
pub use selection::{list, resolve_shard};
pub use start::start;
pub use suites::{merge, report};
pub use watch::watch;

/// A subcommand's exit code (docs/signals.md; the binary's `--help` lists them all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit(u8);

impl Exit {
    /// All is well: every root test passed, every check held.
    pub const SUCCESS: Exit = Exit(0);
    /// A root test or a check failed.
    pub const FAILED: Exit = Exit(1);
    /// Invalid input: nothing was run.
    pub const USAGE: Exit = Exit(2);

    /// The number the process exits with.
    pub fn code(self) -> u8 {
        self.0
    }
}

impl From<crate::model::outcome::ExitReason> for Exit {
    fn from(reason: crate::model::outcome::ExitReason) -> Self {
        Exit(reason.code())
    }
}

/// `check` only prints: like any Unix filter it should end quietly when its reader goes away
/// (`supervisor check | head`) instead of panicking on a broken pipe. Not for `start`, where a
/// dead agent's closed stdin must be an error to handle, not a death.
pub fn restore_default_sigpipe() {
    // SAFETY: resetting a signal disposition to its default touches no memory of ours.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Load and validate; on problems print them all to stderr and return None.
fn load(options: &RunOptions) -> Option<Suite> {
    match load_suite(options) {
        Ok(suite) => Some(suite),
        Err(problems) => {
            eprintln!("{problems}");
            None
        }
    }
}

fn print_notes(suite: &Suite) {
    for note in &suite.notes {
        eprintln!("note: {note}");
    }
}

/// The artifact directory of the project `config` (or the one found from here), without
/// loading its tests: `report`, `clean` and `merge` work even when a test file is broken.
/// Also `[supervisor] keep_runs`.
fn artifact_dir_of(config: Option<PathBuf>) -> Result<(PathBuf, usize), String> {
    let (root, table) = project_config(config)?;
    let sup = table.as_ref().and_then(|t| t.get("supervisor"));
    let dir = sup
        .and_then(|s| s.get("artifact_dir"))
        .and_then(|v| v.as_str())
        .unwrap_or(crate::model::layers::DEFAULT_ARTIFACT_DIR);
    let keep = sup
        .and_then(|s| s.get("keep_runs"))
        .and_then(toml::Value::as_integer)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(crate::model::layers::DEFAULT_KEEP_RUNS);
    Ok((root.join(dir), keep))
}

/// The project root of `config` (or of the one found from here) and the config's table, read
/// leniently (`None`: no config, or one that does not parse).
fn project_config(config: Option<PathBuf>) -> Result<(PathBuf, Option<toml::Table>), String> {
    let cwd = std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?;
    let config = match config {
        Some(c) if !c.is_file() => {
            return Err(format!("config file {} does not exist", c.display()))
        }
        Some(c) => Some(std::path::absolute(&c).unwrap_or(c)),
        None => crate::model::load::find_config_upward(&cwd),
    };
    let root = config
        .as_deref()
        .and_then(std::path::Path::parent)
        .map_or(cwd, std::path::Path::to_path_buf);
    let table: Option<toml::Table> = config
        .as_deref()
        .and_then(|c| {
            crate::model::user_file::read_to_string(c, crate::model::user_file::CONFIG_MAX).ok()
        })
        .and_then(|t| t.parse().ok());
    Ok((root, table))
}

/// The copies' and `--history`'s targets must be writable before anything runs (exit 2).
fn check_outputs(options: &RunOptions) -> Result<(), String> {
    let copies = options
        .copies
        .iter()
        .map(|c| (format!("--{}", c.format), &c.path));
    let history = options
        .history
        .iter()
        .map(|path| ("--history".to_string(), path));
    for (flag, path) in copies.chain(history) {
        artifact_dir::check_writable(&flag, path).map_err(|e| e.to_string())?;
    }
    Ok(())
}
