//! The resolution over real folders laid out as npm lays out its npx cache, node, npm and a
//! project: what npx would run is found, anything that could make npx run another copy keeps npx.

use super::*;
use std::collections::BTreeMap;
use std::os::unix::fs::{symlink, PermissionsExt};

const SPEC: &str = "@playwright/mcp@0.0.83";

/// A machine in a folder: `bin/node`, npm under `lib/node_modules/npm` (its `npx` linked into
/// `bin/`), a home with npx's cache holding `SPEC`, and an empty project folder.
struct Machine {
    root: tempfile::TempDir,
    vars: BTreeMap<String, String>,
}

impl Machine {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("tempdir");
        let r = root.path();
        write_exec(&r.join("bin/node"), "#!/bin/sh\n");
        write_exec(
            &r.join("lib/node_modules/npm/bin/npx-cli.js"),
            "#!/bin/sh\n",
        );
        symlink("../lib/node_modules/npm/bin/npx-cli.js", r.join("bin/npx")).expect("link npx");
        std::fs::create_dir_all(r.join("home")).expect("home");
        std::fs::create_dir_all(r.join("project")).expect("project");
        let mut vars = BTreeMap::new();
        vars.insert("HOME".into(), r.join("home").display().to_string());
        vars.insert("PATH".into(), r.join("bin").display().to_string());
        let machine = Self { root, vars };
        machine.cache_entry(&machine.cache(), SPEC, "0.0.83");
        machine
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    fn cache(&self) -> PathBuf {
        self.path("home/.npm")
    }

    /// An npx cache entry as npx makes it: `_npx/<hash>/package.json` naming the spec, the
    /// package in its `node_modules`, its bin linked from `node_modules/.bin`.
    fn cache_entry(&self, cache: &Path, spec: &str, version: &str) -> PathBuf {
        let entry = cache.join("_npx").join(entry_hash(spec));
        write(
            &entry.join("package.json"),
            &serde_json::json!({
                "dependencies": {"@playwright/mcp": format!("^{version}")},
                "_npx": {"packages": [spec]},
            })
            .to_string(),
        );
        let package = entry.join("node_modules/@playwright/mcp");
        write(
            &package.join("package.json"),
            &serde_json::json!({
                "name": "@playwright/mcp",
                "version": version,
                "bin": {"playwright-mcp": "cli.js"},
            })
            .to_string(),
        );
        write_exec(&package.join("cli.js"), "#!/usr/bin/env node\n");
        std::fs::create_dir_all(entry.join("node_modules/.bin")).expect(".bin");
        let _ = symlink(
            "../@playwright/mcp/cli.js",
            entry.join("node_modules/.bin/playwright-mcp"),
        );
        entry
    }

    fn bin(&self) -> PathBuf {
        self.cache()
            .join("_npx")
            .join(entry_hash(SPEC))
            .join("node_modules/.bin/playwright-mcp")
    }

    /// What the resolution decides for `spec` run in the project.
    fn decide(&self, spec: &str) -> Option<PathBuf> {
        self.decide_in(spec, &self.path("project"))
    }

    fn decide_in(&self, spec: &str, cwd: &Path) -> Option<PathBuf> {
        let var = |name: &str| self.vars.get(name).cloned();
        cached_bin(spec, cwd, &var)
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn write_exec(path: &Path, text: &str) {
    write(path, text);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn the_cache_folder_is_the_one_npx_names_for_the_spec() {
    // What npm 11 made on this kind of machine for the pinned version: `~/.npm/_npx/381c…`.
    assert_eq!(entry_hash("@playwright/mcp@0.0.83"), "381cec31605a419a");
}

#[test]
fn only_an_exact_registry_version_is_resolved() {
    assert_eq!(exact_spec(SPEC), Some(("@playwright/mcp", "0.0.83")));
    assert_eq!(
        exact_spec("pw@1.2.3-alpha.1"),
        Some(("pw", "1.2.3-alpha.1"))
    );
    for spec in [
        "@playwright/mcp",
        "@playwright/mcp@latest",
        "@playwright/mcp@^0.0.83",
        "@playwright/mcp@~0.0.83",
        "@playwright/mcp@0.0",
        "@playwright/mcp@v0.0.83",
        "@playwright/mcp@0.0.83+build",
        "@playwright/mcp@>=0.0.83",
        "@playwright/mcp@0.0.83 || 0.0.84",
        "../mcp@0.0.83",
        "@playwright/../../x@0.0.83",
        "github:microsoft/playwright-mcp",
        "@0.0.83",
    ] {
        assert_eq!(exact_spec(spec), None, "{spec}");
    }
}

#[test]
fn the_cached_bin_of_the_exact_version_is_run_with_the_same_arguments() {
    let m = Machine::new();
    assert_eq!(m.decide(SPEC), Some(m.bin()));
    // Through the command itself: `-y` or `--yes`, the arguments after the package kept.
    let mut env: Vec<(String, String)> = m.vars.clone().into_iter().collect();
    env.push(("npm_config_prefix".into(), m.path("").display().to_string()));
    env.push((
        "npm_config_userconfig".into(),
        m.path("home/.npmrc").display().to_string(),
    ));
    env.push((
        "npm_config_globalconfig".into(),
        m.path("etc/npmrc").display().to_string(),
    ));
    env.push(("npm_config_cache".into(), m.cache().display().to_string()));
    let args = |yes: &str| -> Vec<String> {
        [yes, SPEC, "--config", "c.json", "--headless"]
            .map(String::from)
            .to_vec()
    };
    for yes in ["-y", "--yes"] {
        let direct = resolve("npx", &args(yes), &m.path("project"), &env).expect("resolved");
        assert_eq!(direct.program, m.bin());
        assert_eq!(direct.args, ["--config", "c.json", "--headless"]);
    }
    assert_eq!(resolve("npx", &args("-q"), &m.path("project"), &env), None);
    assert_eq!(resolve("node", &args("-y"), &m.path("project"), &env), None);
    assert_eq!(
        resolve("npx", &args("-y")[..1], &m.path("project"), &env),
        None
    );
    // Decided once, but a cache cleared since then is not run.
    std::fs::remove_dir_all(m.cache().join("_npx")).expect("clear");
    assert_eq!(resolve("npx", &args("-y"), &m.path("project"), &env), None);
}

#[test]
fn no_entry_or_another_version_or_another_spec_keeps_npx() {
    let m = Machine::new();
    assert_eq!(m.decide("@playwright/mcp@0.0.84"), None, "no entry for it");
    assert_eq!(m.decide("@playwright/mcp@latest"), None, "a tag");

    // The entry's package is another version than its name says (an interrupted install).
    let m = Machine::new();
    m.cache_entry(&m.cache(), SPEC, "0.0.82");
    assert_eq!(m.decide(SPEC), None);

    // An entry made for more than the one package.
    let m = Machine::new();
    let made_for = m
        .cache()
        .join("_npx")
        .join(entry_hash(SPEC))
        .join("package.json");
    write(
        &made_for,
        r#"{"_npx": {"packages": ["@playwright/mcp@0.0.83", "other@1.0.0"]}}"#,
    );
    assert_eq!(m.decide(SPEC), None);

    // The bin link missing: npx would not find it either.
    let m = Machine::new();
    std::fs::remove_file(m.bin()).expect("unlink");
    assert_eq!(m.decide(SPEC), None);
}

#[test]
fn an_npm_config_naming_another_cache_or_prefix_keeps_npx() {
    for (file, line) in [
        ("home/.npmrc", "cache=/elsewhere"),
        ("home/.npmrc", " prefix = /elsewhere"),
        ("etc/npmrc", "cache=/elsewhere"),
        ("lib/node_modules/npm/npmrc", "prefix=/elsewhere"),
        ("project/.npmrc", "cache=/elsewhere"),
    ] {
        let m = Machine::new();
        write(
            &m.path(file),
            &format!("registry=http://127.0.0.1:1/\n{line}\n"),
        );
        assert_eq!(m.decide(SPEC), None, "{file}: {line}");
    }
    // Other settings are no reason.
    let m = Machine::new();
    write(
        &m.path("home/.npmrc"),
        "registry=http://127.0.0.1:1/\n; cache in a comment\n",
    );
    assert_eq!(m.decide(SPEC), Some(m.bin()));
}

#[test]
fn the_cache_named_by_the_environment_is_the_one_looked_in() {
    let mut m = Machine::new();
    let other = m.path("other-cache");
    m.vars
        .insert("npm_config_cache".into(), other.display().to_string());
    assert_eq!(m.decide(SPEC), None, "the home cache is not npx's then");
    let entry = m.cache_entry(&other, SPEC, "0.0.83");
    assert_eq!(
        m.decide(SPEC),
        Some(entry.join("node_modules/.bin/playwright-mcp"))
    );
}

#[test]
fn a_project_that_may_hold_the_package_or_shadow_its_bin_keeps_npx() {
    for (what, layout) in [
        (
            "the package itself",
            vec!["node_modules/@playwright/mcp/package.json"],
        ),
        (
            "its bin on the PATH npx gives",
            vec!["node_modules/.bin/playwright-mcp"],
        ),
        ("a node on that PATH", vec!["node_modules/.bin/node"]),
        (
            "modules npm did not describe",
            vec!["node_modules/left-pad/index.js"],
        ),
    ] {
        let m = Machine::new();
        for file in &layout {
            write(&m.path("project").join(file), "");
        }
        assert_eq!(m.decide(SPEC), None, "{what}");
    }
    // A hidden lockfile without the package: npx's cache it is; with it, nested, npx decides.
    let m = Machine::new();
    let lock = m.path("project/node_modules/.package-lock.json");
    write(
        &lock,
        r#"{"packages": {"node_modules/left-pad": {"version": "1.3.0"}}}"#,
    );
    assert_eq!(m.decide(SPEC), Some(m.bin()));
    write(
        &lock,
        r#"{"packages": {"node_modules/x/node_modules/@playwright/mcp": {"version": "0.0.83"}}}"#,
    );
    assert_eq!(m.decide(SPEC), None);
    // The project is the package; or is found in a folder above the working one.
    let m = Machine::new();
    write(
        &m.path("project/package.json"),
        r#"{"name": "@playwright/mcp"}"#,
    );
    assert_eq!(m.decide(SPEC), None);
    write(&m.path("project/package.json"), r#"{"name": "my-app"}"#);
    assert_eq!(m.decide(SPEC), Some(m.bin()));
    let app = m.path("project/app");
    std::fs::create_dir_all(&app).expect("app");
    write(&m.path("project/node_modules/.bin/playwright-mcp"), "");
    assert_eq!(m.decide_in(SPEC, &app), None);
}

#[test]
fn a_global_install_npx_would_prefer_keeps_npx() {
    let m = Machine::new();
    write(
        &m.path("lib/node_modules/@playwright/mcp/package.json"),
        r#"{"name": "@playwright/mcp", "version": "0.0.83"}"#,
    );
    assert_eq!(m.decide(SPEC), None);
    let m = Machine::new();
    write_exec(&m.path("bin/playwright-mcp"), "#!/bin/sh\n");
    assert_eq!(m.decide(SPEC), None);
}

#[test]
fn the_bin_is_the_one_npx_picks_from_the_manifest() {
    let pick =
        |bin: serde_json::Value| bin_of_manifest(&serde_json::json!({"bin": bin}), "@s/tool");
    assert_eq!(
        pick(serde_json::json!("cli.js")),
        Some(("tool".into(), "cli.js".into()))
    );
    assert_eq!(
        pick(serde_json::json!({"a": "cli.js", "b": "cli.js"})),
        Some(("a".into(), "cli.js".into()))
    );
    assert_eq!(
        pick(serde_json::json!({"x": "x.js", "tool": "t.js"})),
        Some(("tool".into(), "t.js".into()))
    );
    assert_eq!(pick(serde_json::json!({"x": "x.js", "y": "y.js"})), None);
    assert_eq!(pick(serde_json::Value::Null), None);
}
