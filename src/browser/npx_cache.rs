//! The replay's Playwright MCP client without npx (docs/replay.md, "Browser steps"):
//! `npx -y @playwright/mcp@<pinned>` spends most of a second loading npm and finding the package
//! in its cache before it runs the server, and a replayed browser test's first step waits for
//! that. When npx's cache already holds the exact pinned package, and nothing would make
//! npx run another copy, the package's own bin from that cache entry is what npx would run: the
//! replay's client runs it directly, with the same arguments.
//!
//! Conservative by design: anything this cannot prove (no cache entry, a version range or a tag,
//! an npm config naming another cache or prefix, a project's `node_modules` that may hold the
//! package or shadow its bin, a global install) keeps the npx command unchanged. Only the
//! replay's client is resolved here; the agent's Playwright MCP command stays as it is.

use super::mcp::{is_executable, on_path};
use sha2::{Digest, Sha512};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

/// How much of a `package.json` or an npmrc is read; more is not a file npm wrote.
const SMALL_FILE_MAX: u64 = 1024 * 1024;
/// How much of a hidden lockfile (`node_modules/.package-lock.json`) is read.
const LOCKFILE_MAX: u64 = 64 * 1024 * 1024;

/// The environment names the resolution reads (npm's own are also read in any case).
const VARS: &[&str] = &[
    "HOME",
    "PATH",
    "PREFIX",
    "npm_config_cache",
    "npm_config_userconfig",
    "npm_config_globalconfig",
    "npm_config_prefix",
];

/// The command to run instead of `npx -y <pkg>@<version> args…`: the cached bin and `args…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Direct {
    /// The bin in npx's cache entry (`…/_npx/<hash>/node_modules/.bin/<bin>`).
    pub program: PathBuf,
    /// The arguments after the package.
    pub args: Vec<String>,
}

/// Decisions already taken in this process, by what they were taken from.
type Memo = HashMap<(String, PathBuf, Vec<Option<String>>), Option<PathBuf>>;
static RESOLVED: LazyLock<Mutex<Memo>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// The cached bin for `program args` run in `cwd` with `env` over the supervisor's own
/// environment, if that command is `npx -y <pkg>@<exact version> …` and npx would run exactly
/// that cache entry's bin; `None` keeps the command as it is. Decided once per process for the
/// same package, folder and npm-related environment; the bin is checked to still be there.
pub fn resolve(
    program: &str,
    args: &[String],
    cwd: &Path,
    env: &[(String, String)],
) -> Option<Direct> {
    let var = |name: &str| {
        env.iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(name) && is_npm_var_or_exact(k, name))
            .map(|(_, v)| v.clone())
            .or_else(|| {
                std::env::vars()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name) && is_npm_var_or_exact(k, name))
                    .map(|(_, v)| v)
            })
    };
    let (spec, rest) = npx_package(program, args)?;
    let key = (
        spec.to_string(),
        cwd.to_path_buf(),
        VARS.iter().map(|name| var(name)).collect(),
    );
    let found = {
        let mut memo = RESOLVED.lock().ok()?;
        memo.entry(key)
            .or_insert_with(|| cached_bin(spec, cwd, &var))
            .clone()?
    };
    // The cache may have been cleared since: then npx it is.
    is_executable(&found).then(|| Direct {
        program: found,
        args: rest.to_vec(),
    })
}

/// npm reads its `npm_config_*` variables whatever their case; other names are exact.
fn is_npm_var_or_exact(key: &str, name: &str) -> bool {
    key == name || name.starts_with("npm_config_")
}

/// The package spec and the arguments after it, for `npx -y|--yes <spec> args…`.
fn npx_package<'a>(program: &str, args: &'a [String]) -> Option<(&'a str, &'a [String])> {
    if program != "npx" {
        return None;
    }
    let (yes, rest) = args.split_first()?;
    if yes != "-y" && yes != "--yes" {
        return None;
    }
    let (spec, rest) = rest.split_first()?;
    Some((spec.as_str(), rest))
}

/// `<name>@<exact version>` split, or `None` for anything else (a range, a tag, a path, a URL,
/// a name npm would not publish).
fn exact_spec(spec: &str) -> Option<(&str, &str)> {
    static NAME: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
        regex::Regex::new(r"^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$").ok()
    });
    static VERSION: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
        regex::Regex::new(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$")
            .ok()
    });
    let at = spec.rfind('@').filter(|&at| at > 0)?;
    let (name, version) = (&spec[..at], &spec[at + 1..]);
    let valid = NAME.as_ref()?.is_match(name) && VERSION.as_ref()?.is_match(version);
    valid.then_some((name, version))
}

/// The decision itself: the cache entry's bin, when every check holds.
fn cached_bin(spec: &str, cwd: &Path, var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let (name, version) = exact_spec(spec)?;
    let home = var("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let path_var = var("PATH");
    let node = on_path("node", path_var.as_deref())?;
    let npx = on_path("npx", path_var.as_deref())?;
    // npm's global prefix: configured, else the folder above node's `bin`.
    let prefix = match var("npm_config_prefix").or_else(|| var("PREFIX")) {
        Some(p) => PathBuf::from(p),
        None => std::fs::canonicalize(&node)
            .ok()?
            .parent()?
            .parent()?
            .to_path_buf(),
    };
    let user_config = match var("npm_config_userconfig") {
        Some(file) => PathBuf::from(file),
        None => home.as_ref()?.join(".npmrc"),
    };
    let global_config = match var("npm_config_globalconfig") {
        Some(file) => PathBuf::from(file),
        None => prefix.join("etc/npmrc"),
    };
    // npm's own builtin config, beside its `bin/npx-cli.js`.
    let builtin = std::fs::canonicalize(&npx)
        .ok()?
        .parent()?
        .parent()?
        .join("npmrc");
    for config in [&user_config, &global_config, &builtin] {
        if !config_keeps_defaults(config) {
            return None;
        }
    }
    let cache = match var("npm_config_cache") {
        Some(dir) => PathBuf::from(dir),
        None => home?.join(".npm"),
    };
    let bin_name = bin_of_entry(&cache, spec, name, version)?;
    let cwd = std::fs::canonicalize(cwd).ok()?;
    if cwd
        .ancestors()
        .any(|dir| !project_leaves_it_to_npx(dir, name, &bin_name))
    {
        return None;
    }
    // A global install npx would prefer.
    if exists(&prefix.join("lib/node_modules").join(name))
        || exists(&prefix.join("bin").join(&bin_name))
    {
        return None;
    }
    let program = cache
        .join("_npx")
        .join(entry_hash(spec))
        .join("node_modules/.bin")
        .join(&bin_name);
    is_executable(&program).then_some(program)
}

/// The cache entry npx uses for `spec` (`_npx/<first 16 hex digits of sha512(spec)>`), if it was
/// made for exactly that spec and holds exactly that version: the name of the bin npx runs from
/// it (its `.bin` link leading to the package's bin file).
fn bin_of_entry(cache: &Path, spec: &str, name: &str, version: &str) -> Option<String> {
    let entry = cache.join("_npx").join(entry_hash(spec));
    let made_for = read_json(&entry.join("package.json"))?;
    if made_for["_npx"]["packages"] != serde_json::json!([spec]) {
        return None;
    }
    let package_dir = entry.join("node_modules").join(name);
    let manifest = read_json(&package_dir.join("package.json"))?;
    if manifest["name"] != name || manifest["version"] != version {
        return None;
    }
    let (bin_name, bin_file) = bin_of_manifest(&manifest, name)?;
    let link = entry.join("node_modules/.bin").join(&bin_name);
    let same_file = std::fs::canonicalize(&link).ok()?
        == std::fs::canonicalize(package_dir.join(bin_file.trim_start_matches("./"))).ok()?;
    same_file.then_some(bin_name)
}

/// npx's cache folder name for a single registry spec (npm 7 and later).
fn entry_hash(spec: &str) -> String {
    let digest = Sha512::digest(spec.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The bin npx picks from a manifest (its `getBinFromManifest`): the only one (or all aliases
/// of one file), else the one named as the package without its scope.
fn bin_of_manifest(manifest: &serde_json::Value, name: &str) -> Option<(String, String)> {
    let unscoped = name.rsplit('/').next()?;
    match &manifest["bin"] {
        serde_json::Value::String(file) => Some((unscoped.to_string(), file.clone())),
        serde_json::Value::Object(bins) => {
            let files: std::collections::BTreeSet<_> =
                bins.values().filter_map(|v| v.as_str()).collect();
            if files.len() == 1 && bins.values().all(serde_json::Value::is_string) {
                let (bin, file) = bins.iter().next()?;
                return Some((bin.clone(), file.as_str()?.to_string()));
            }
            let file = bins.get(unscoped)?.as_str()?;
            Some((unscoped.to_string(), file.to_string()))
        }
        _ => None,
    }
}

/// Whether the folder `dir` (the working folder or one above it) leaves the package to npx's
/// cache: no project there is the package, no `.npmrc` there names another cache or prefix, and
/// its `node_modules` neither holds the package (npx would run a project's copy) nor puts its bin
/// or a `node` first on the `PATH` npx gives the bin. A `node_modules` npm did not describe in
/// a hidden lockfile cannot be proven free of the package: npx is left to decide.
fn project_leaves_it_to_npx(dir: &Path, name: &str, bin_name: &str) -> bool {
    if !config_keeps_defaults(&dir.join(".npmrc")) {
        return false;
    }
    let manifest = dir.join("package.json");
    if exists(&manifest) && read_json(&manifest).is_none_or(|m| m["name"] == name) {
        return false;
    }
    let modules = dir.join("node_modules");
    if !exists(&modules) {
        return true;
    }
    if exists(&modules.join(name))
        || exists(&modules.join(".bin").join(bin_name))
        || exists(&modules.join(".bin/node"))
    {
        return false;
    }
    let Ok(lock) = crate::model::user_file::read(&modules.join(".package-lock.json"), LOCKFILE_MAX)
    else {
        return false;
    };
    let quoted = format!("node_modules/{name}\"");
    memchr::memmem::find(&lock, quoted.as_bytes()).is_none()
}

/// Whether the npmrc at `path` is absent or sets neither `cache` nor `prefix` (the two settings
/// that would make npx look elsewhere). One that cannot be read is not proven either way.
fn config_keeps_defaults(path: &Path) -> bool {
    if !exists(path) {
        return true;
    }
    let Ok(text) = crate::model::user_file::read_to_string(path, SMALL_FILE_MAX) else {
        return false;
    };
    !text.lines().any(|line| {
        let key = line
            .split('=')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        matches!(
            key.as_str(),
            "cache" | "prefix" | "userconfig" | "globalconfig"
        )
    })
}

fn read_json(path: &Path) -> Option<serde_json::Value> {
    let bytes = crate::model::user_file::read(path, SMALL_FILE_MAX).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Anything at `path`, a dangling link included.
fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

#[cfg(test)]
mod tests;
