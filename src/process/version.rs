//! `<program> --version`, run once and bounded: what `doctor` shows for an agent CLI, the browser
//! and Playwright MCP. Below both `providers` and `browser`, so neither imports the other for it.

use super::exit::{describe, ExitStatus};
use super::oneshot::{run_once, OneShotEnd};
use super::owner::{Owner, Role, Scope};
use super::spec::CommandSpec;
use crate::model::config::CommandKind;
use std::path::Path;

/// How long `<agent CLI> --version` may take in `doctor` (Claude Code answers in 0.13 s, Codex in
/// 0.12 s; a CLI that hangs here would hang every session).
pub const VERSION_LIMIT: std::time::Duration = std::time::Duration::from_secs(20);

/// What a program answered: how it ended and its output (stdout and stderr, merged).
pub struct VersionAnswer {
    /// `Some(code)` when it exited; `None` when it was killed at `limit` or died by a signal.
    pub code: Option<i32>,
    pub output: String,
}

/// Runs `<program> <args>` once through the one spawn path, bounded by `limit`, with `env` over
/// the supervisor's own environment and stdin empty: an agent CLI's login state for preflight
/// and `doctor`, without a model call.
pub async fn program_answer(
    program: &Path,
    args: &[&str],
    env: &[(String, String)],
    cwd: &Path,
    limit: std::time::Duration,
) -> Result<VersionAnswer, String> {
    let log = tempfile::NamedTempFile::new().map_err(|e| format!("no temporary file: {e}"))?;
    let mut words = vec![program.display().to_string()];
    words.extend(args.iter().map(|a| a.to_string()));
    // stdin from /dev/null: a CLI that reads its input must not wait for ours.
    let line = format!("{} </dev/null", shell_words::join(&words));
    let mut spec = CommandSpec::new("login", CommandKind::ShortLived, &line, cwd, log.path());
    spec.timeout = Some(limit);
    spec.env = env.to_vec();
    spec.stop_timeout = std::time::Duration::from_millis(500);
    let owner = Owner::new(
        Scope::run(format!("preflight-{}", std::process::id())),
        Role::Agent("login check".into()),
    );
    let ran = run_once(&spec, owner, std::future::pending::<()>())
        .await
        .map_err(|e| format!("`{}` did not start: {e}", shell_words::join(&words)))?;
    let output = std::fs::read_to_string(log.path()).unwrap_or_default();
    let code = match ran.end {
        OneShotEnd::Exited(ExitStatus::Code(code)) => Some(code),
        _ => None,
    };
    Ok(VersionAnswer { code, output })
}

/// Runs `<program> --version` through the one spawn path, bounded by [`VERSION_LIMIT`], its
/// output in a temporary log. The answer is the first line of its output that `is_version`
/// accepts (Debian's `chromium` wrapper prints a shell warning first).
pub async fn program_version(
    program: &Path,
    cwd: &Path,
    is_version: fn(&str) -> bool,
) -> Result<String, String> {
    let log = tempfile::NamedTempFile::new().map_err(|e| format!("no temporary file: {e}"))?;
    let line = shell_words::join([program.display().to_string(), "--version".to_string()]);
    let mut spec = CommandSpec::new("version", CommandKind::ShortLived, &line, cwd, log.path());
    spec.timeout = Some(VERSION_LIMIT);
    let owner = Owner::new(
        Scope::run(format!("doctor-{}", std::process::id())),
        Role::Agent("version check".into()),
    );
    let ran = run_once(&spec, owner, std::future::pending::<()>())
        .await
        .map_err(|e| format!("`{line}` did not start: {e}"))?;
    let output = std::fs::read_to_string(log.path()).unwrap_or_default();
    let first = output
        .lines()
        .find(|l| !l.trim().is_empty() && is_version(l))
        .or_else(|| output.lines().find(|l| !l.trim().is_empty()))
        .unwrap_or("");
    match ran.end {
        OneShotEnd::Exited(ExitStatus::Code(0)) => Ok(first.trim().to_string()),
        // A Node CLI that died on an uncaught error names the Node it ran on last
        // (`Node.js v20.20.2`): kept, so the caller can tell a Node too old (docs/providers.md).
        OneShotEnd::Exited(status) => Err(format!(
            "`{line}` failed ({}): {}{}",
            describe(&status),
            first.trim(),
            output
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("Node.js v"))
                .map(|node| format!(" ({node})"))
                .unwrap_or_default()
        )),
        OneShotEnd::TimedOut(limit) => Err(format!(
            "`{line}` did not answer within {}s",
            limit.as_secs()
        )),
        OneShotEnd::Stopped(()) => Err(format!("`{line}` was stopped")),
    }
}
