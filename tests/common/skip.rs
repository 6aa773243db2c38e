//! Tests that need a program this machine may lack (a real agent CLI, Playwright MCP, Chromium,
//! a pseudo-terminal, xmllint, jsonschema, actionlint) go through here. Without it a test skips
//! *loudly*: a `SKIPPED (test): why` line straight to the process's stderr, which `cargo test`
//! shows even for a passing test. Under `CI=true` (`.ci/run` sets it, and installs every one of
//! these) a test that cannot run is a failure instead: a skip must never pass for a pass there.

use std::fmt::Display;
use std::path::{Path, PathBuf};

/// Whether this is CI, where every optional program is installed and a skip is a failure.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// Says why `test` cannot run; panics (naming what is missing) under `CI=true`.
pub fn skip(test: &str, why: impl Display) {
    if in_ci() {
        panic!("{test} cannot run, and CI=true makes that a failure: {why}");
    }
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "\nSKIPPED ({test}): {why}");
}

/// `Ok` as `Some`; an `Err` skips `test` (see [`skip`]) with the error as its reason.
pub fn require<T, E: Display>(test: &str, found: Result<T, E>) -> Option<T> {
    match found {
        Ok(value) => Some(value),
        Err(why) => {
            skip(test, why);
            None
        }
    }
}

/// Where `.ci/run` installed the npm packages: this checkout's `.ci/node/node_modules`, else the
/// `node_modules` above a `node_modules/.bin` on `PATH` (a worktree sharing another's install).
pub fn npm_modules() -> Option<PathBuf> {
    let own = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/node/node_modules");
    if own.is_dir() {
        return Some(own);
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .find(|dir| dir.ends_with("node_modules/.bin") && dir.is_dir())
        .and_then(|bin| bin.parent().map(Path::to_path_buf))
}

/// The npm-installed CLI `bin`: the file `$env_var` names, else `.ci/node`'s (see
/// [`npm_modules`]), else one on `PATH`. `None` after [`skip`] saying how to install `package`.
pub fn npm_cli(test: &str, env_var: &str, bin: &str, package: &str) -> Option<PathBuf> {
    if let Some(named) = std::env::var_os(env_var) {
        let named = PathBuf::from(named);
        if named.is_file() {
            return Some(named);
        }
        skip(
            test,
            format!("${env_var}={} is not a file", named.display()),
        );
        return None;
    }
    let installed = npm_modules()
        .map(|modules| modules.join(".bin").join(bin))
        .filter(|path| path.is_file())
        .or_else(|| on_path(bin));
    if installed.is_none() {
        skip(
            test,
            format!(
                "no {bin} CLI in .ci/node or on PATH and ${env_var} is unset; `.ci/run` installs \
                 it (cd .ci/node && npm install {package})"
            ),
        );
    }
    installed
}

/// The executable `bin` on `PATH`, if any.
pub fn on_path(bin: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(bin))
        .find(|path| path.is_file())
}

/// The program `bin` on `PATH`, or `None` after [`skip`] saying which Debian `package` has it.
pub fn tool(test: &str, bin: &str, package: &str) -> Option<PathBuf> {
    let found = on_path(bin);
    if found.is_none() {
        skip(
            test,
            format!("no {bin} on PATH (Debian: apt-get install {package}; `.ci/run` installs it)"),
        );
    }
    found
}

/// The browser the supervisor would find (chromium, chromium-browser or google-chrome on
/// `PATH`), or `None` after [`skip`].
pub fn chromium(test: &str) -> Option<PathBuf> {
    require(test, bugatti::browser::executable::find_on_env_path(None))
}

/// Playwright MCP as `.ci/run` installs it (or `$BUGATTI_PLAYWRIGHT_MCP_BIN`), or `None` after
/// [`skip`]. The version is `browser::mcp::PINNED_VERSION`.
pub fn playwright_mcp(test: &str) -> Option<PathBuf> {
    npm_cli(
        test,
        "BUGATTI_PLAYWRIGHT_MCP_BIN",
        "playwright-mcp",
        "@playwright/mcp@0.0.83",
    )
}

/// The `playwright` package `.ci/run` installs into `.ci/playwright` (its `node_modules`), or the
/// folder `$BUGATTI_PLAYWRIGHT_DIR` names (holding `node_modules/playwright`); `None` after
/// [`skip`]. Its `npx playwright mcp` is a `[browser] mcp_cmd` users write.
pub fn playwright_modules(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("BUGATTI_PLAYWRIGHT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/playwright"));
    let modules = dir.join("node_modules");
    if modules.join("playwright/package.json").is_file() {
        return Some(modules);
    }
    skip(
        test,
        format!(
            "no playwright package in {} ($BUGATTI_PLAYWRIGHT_DIR); `.ci/run` installs it \
             (npm install playwright@1.65.1 in .ci/playwright)",
            dir.display()
        ),
    );
    None
}
