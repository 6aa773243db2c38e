//! `supervisor check` on checked-in projects: a Bugatti 0.7 project loads as it is, and the
//! documented example configs in `config/` are valid.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use predicates::str::contains;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn supervisor(dir: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("supervisor"));
    cmd.current_dir(dir)
        .env_remove("BUGATTI_PROVIDER")
        .env_remove("BUGATTI_BASE_URL")
        .env_remove("BUGATTI_STEP_TIMEOUT")
        .env("BUGATTI_CONFIG_HOME", dir.join(".no-global"));
    cmd
}

#[test]
fn bugatti_07_project_checks_clean_as_it_is() {
    let dir = repo().join("tests/fixtures/bugatti07");
    supervisor(&dir)
        .arg("check")
        .assert()
        .success()
        .stdout(contains("root tests:   2 selected of 2 discovered"))
        .stdout(contains("== api.test.toml — \"API\""))
        .stdout(contains(
            "[checkpoint: user-created] Create a user named ada",
        ))
        .stdout(contains("[skip] Check the admin endpoints"))
        .stdout(contains("[timeout: 60s] GET /api/users"))
        .stdout(contains("features/_a_login.test.toml#1 (via ui.test.toml)"))
        .stdout(contains("commands.server.readiness[2]"))
        .stdout(contains(
            "http http://localhost:3000/api/health (every 50 ms, up to 45 s)",
        ))
        .stdout(contains("provider.step_timeout_secs  120").and(contains("(test overrides)")))
        .stdout(contains("ok: 2 root tests, 5 steps; nothing was run"));
    // Short names, Bugatti's spelling of the command.
    supervisor(&dir)
        .args(["check", "ui"])
        .assert()
        .success()
        .stdout(contains("root tests:   1 selected of 1 discovered"));
}

/// Copy an example config into a fresh project with the folders and test it expects.
fn example_project(config: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    fs::copy(
        repo().join("config").join(config),
        d.path().join("bugatti.config.toml"),
    )
    .expect("copy config");
    fs::create_dir_all(d.path().join("tests")).expect("mkdir");
    fs::write(
        d.path().join("tests/smoke.test.toml"),
        "tags = [\"nightly\"]\n[[steps]]\ninstruction = \"Open ${BUGATTI_WORKDIR}\"\n",
    )
    .expect("write test");
    d
}

#[test]
fn documented_example_config_is_valid() {
    let d = example_project("bugatti.config.toml");
    supervisor(d.path())
        .arg("check")
        .assert()
        .success()
        .stdout(contains("commands.server.depends_on").and(contains("[\"migrate\"]")))
        .stdout(contains("ports.APP_PORT").and(contains("auto")));
}

#[test]
fn nightly_example_config_is_valid_and_needs_its_secret() {
    let d = example_project("nightly.config.toml");
    supervisor(d.path())
        .args(["check", "--tag", "nightly"])
        .env_remove("SHOP_API_TOKEN")
        .assert()
        .code(2)
        .stderr(contains(
            "secret `API_TOKEN` is read from environment variable `SHOP_API_TOKEN`, which is not set",
        ));
    supervisor(d.path())
        .args(["check", "--tag", "nightly"])
        .env("SHOP_API_TOKEN", "tok-123")
        .assert()
        .success()
        .stdout(contains("secrets.API_TOKEN").and(contains("[REDACTED] (from $SHOP_API_TOKEN)")))
        .stdout(contains("tok-123").not())
        .stdout(contains("commands.server.scope").and(contains("suite")));
}
