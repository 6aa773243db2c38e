//! The login pre-check under `--replay auto` (docs/replay.md, "Without the agent's login"): a run
//! whose every step has a recording is not refused when the real Claude Code CLI is not logged in
//! (an empty HOME, no key): it warns and replays; a step that drifts then needs the agent and ends
//! as `agent_error` (auth); a test without a recording is still refused. Skips loudly without the
//! CLI.

use crate::common;
use crate::common::claude::{claude_bin, Stub};
use crate::common::records::*;
use crate::common::{stderr, stdout, Project};
use serde_json::json;
use std::path::Path;

/// `supervisor start ARGS` with the CLI and nobody logged in: an empty HOME, no key, no API.
fn start_logged_out(p: &Project, bin: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    std::fs::create_dir_all(home).expect("home");
    let out = p
        .supervisor()
        .arg("start")
        .args(args)
        .env("BUGATTI_CLAUDE_BIN", bin)
        .env("HOME", home)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("CLAUDE_CODE_OAUTH_TOKEN")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    out
}

#[test]
fn a_run_every_step_of_which_is_recorded_is_not_refused_for_want_of_a_login() {
    let Some(bin) = claude_bin("replay_login_claude_real") else {
        return;
    };
    let p = Project::new();
    let side = tempfile::tempdir().expect("side dir");
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"claude-code\"\nagent_args = [\"--allowedTools\", \"Bash\"]\nstep_timeout_secs = 120\n",
    );
    p.write("version.txt", "version 1\n");
    p.write(
        "version.test.toml",
        "name = \"Version\"\n[[steps]]\ninstruction = \"Check the version file says version 1.\"\n",
    );

    // 1. Logged in (a key, the scripted API): the agent passes and the step is recorded.
    let stub = Stub::start(
        side.path(),
        json!([
            {"bash": "cat version.txt"},
            {"text": "It says version 1.\nRESULT OK"},
            {"facts": ["1 equals \"version 1\""]},
        ]),
    );
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CLAUDE_BIN", &bin)
        .envs(stub.client_env(&side.path().join("home")))
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    common::assert_exit(&out, 0);
    assert!(p.newest_record().steps[0].recorded, "{}", stdout(&out));

    // 2. Nobody logged in: every step has a recording, so the run is warned about, not refused.
    let home = side.path().join("empty-home");
    let out = start_logged_out(&p, &bin, &home, &[]);
    let said = format!("{}\n{}", stdout(&out), stderr(&out));
    common::assert_exit(&out, 0);
    assert!(said.contains("the agent cannot log in"), "{said}");
    assert!(said.contains("every step has a recording"), "{said}");
    assert!(!said.contains("cannot start:"), "{said}");
    let record = p.newest_record();
    assert_eq!(record.steps[0].mode, Some(StepMode::Replayed), "{record:?}");

    // 3. A test without a recording needs the agent: refused as before (exit 3, the fix named).
    p.write(
        "new.test.toml",
        "name = \"New\"\n[[steps]]\ninstruction = \"Check the version file exists.\"\n",
    );
    let out = start_logged_out(&p, &bin, &home, &[]);
    common::assert_exit(&out, 3);
    assert!(
        stderr(&out).contains("cannot start: the agent cannot log in"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(p.root().join("new.test.toml")).expect("remove");

    // 4. The app changed: the step drifts, needs the agent, and the agent cannot log in.
    p.write("version.txt", "version 2\n");
    let out = start_logged_out(&p, &bin, &home, &[]);
    let said = format!("{}\n{}", stdout(&out), stderr(&out));
    let record = p.newest_record();
    let step = &record.steps[0];
    assert!(step.replay_drift.is_some(), "{said}\n{step:?}");
    assert_eq!(step.status, StepStatus::AgentError, "{said}\n{step:?}");
    assert_eq!(
        step.agent_fault.as_ref().map(|f| f.kind),
        Some(FaultKind::Auth),
        "{said}\n{step:?}"
    );
    common::assert_exit(&out, 3);
}
