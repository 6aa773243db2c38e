//! The supervised browser through the real pi 1.x CLI (`.ci/pi1`, or `$BUGATTI_PI1_BIN`), Debian's
//! Chromium and the real Playwright MCP, the model played by the scripted Messages stub: pi 1.x
//! takes MCP servers, so the session browser's Playwright MCP reaches it as it reaches Claude Code
//! (docs/browser.md): the agent opens the page, clicks by ref and sees the page change. Skips,
//! saying why, without Chromium, pi 1.x or Playwright MCP.

use crate::browser_claude_real::{browsing_script, path_with, shop_project};
use crate::common;
use crate::common::pi::{client_env, pi1_bin};
use crate::common::records::*;
use crate::common::scripted_api::ScriptedApi;
use crate::common::{stderr, stdout};

#[test]
fn pi_1_drives_the_supervised_browser_through_playwright_mcp() {
    let test = "the supervised browser through pi 1.x";
    let Some(_) = common::skip::chromium(test) else {
        return;
    };
    let (Some(pi), Some(mcp)) = (pi1_bin(test), common::skip::playwright_mcp(test)) else {
        return;
    };
    let (p, port) = shop_project("\n[browser]\n");
    let config = std::fs::read_to_string(p.root().join("bugatti.config.toml")).expect("config");
    p.write(
        "bugatti.config.toml",
        &config.replace(
            "name = \"claude-code\"\nagent_args = [\"--allowedTools\", \"Bash\"]",
            "name = \"pi\"",
        ),
    );
    let side = tempfile::tempdir().expect("side");
    let stub = ScriptedApi::start(
        "anthropic_stub.py",
        "messages",
        side.path(),
        browsing_script("browser", port),
    );
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_PI_BIN", &pi)
        .env("PATH", path_with(&mcp))
        .envs(client_env(&side.path().join("pi-agent"), stub.port))
        .output()
        .expect("run");
    p.assert_nothing_survives();
    let console = format!("{}\n{}", stdout(&out), stderr(&out));
    let requests = std::fs::read_to_string(&stub.requests).unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "{console}\n{requests}");
    let record = p.record_for("shop.test.toml");
    let step = &record.steps[0];
    // The page's deliberate console error makes the passing step a warning (docs/browser.md).
    assert_eq!(step.status, StepStatus::Warn, "{step:?}");
    assert!(
        requests.contains("Basket: 1 item"),
        "the agent saw the page change"
    );
    assert!(
        requests.contains("\"mcp__bugatti__exec_command\""),
        "the console's tools are declared beside the browser's"
    );
}
