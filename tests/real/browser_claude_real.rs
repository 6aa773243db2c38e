//! The supervised browser end to end (docs/browser.md) through the real Claude Code CLI, Debian's
//! Chromium and the real Playwright MCP, the model played by the scripted Messages stub: the
//! agent opens the harness's page, reads its snapshot, clicks a button and sees the page change;
//! the run holds the step's screenshot, the page's console error and its 404 as evidence, and
//! report.html shows the screenshot (checked in headless Chromium). Also: Playwright MCP declared
//! only in the project's `.mcp.json`, with the console on; and SIGINT mid-step leaves nothing.
//! Each skips, saying why, without Chromium, the Claude Code CLI or Playwright MCP.

use crate::common;
use crate::common::assert_exit;
use crate::common::records::*;

use crate::common::claude::{claude_bin, Stub};
use crate::common::{stderr, Project};
use bugatti::browser::cdp::CdpClient;
use bugatti::browser::{executable, Browser, BrowserLaunch};
use bugatti::process::Scope;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const PAGE: &str = r#"<!doctype html>
<html><head><title>Shop</title></head>
<body>
<h1>Shop</h1>
<p id="state">Basket empty</p>
<button onclick="document.getElementById('state').textContent = 'Basket: 1 item'">Add to basket</button>
<img src="/missing.png" alt="logo">
<script>console.error("deliberate console error");</script>
</body></html>
"#;

/// Chromium, the Claude Code CLI and Playwright MCP, or `None` after a loud skip.
pub(crate) fn tools(test: &str) -> Option<(PathBuf, PathBuf)> {
    common::skip::chromium(test)?;
    let claude = claude_bin(test)?;
    let mcp = common::skip::playwright_mcp(test)?;
    Some((claude, mcp))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// The shop page served by a harness command on a fixed port (the script needs its URL).
pub(crate) fn shop_project(extra_config: &str) -> (Project, u16) {
    let p = Project::new();
    let port = free_port();
    p.write("site/index.html", PAGE);
    p.write(
        "bugatti.config.toml",
        &format!(
            r#"[provider]
name = "claude-code"
agent_args = ["--allowedTools", "Bash"]
step_timeout_secs = 120

[ports]
WEB_PORT = {port}

[commands.web]
kind = "long_lived"
cmd = "python3 -m http.server ${{WEB_PORT}} --bind 127.0.0.1 --directory site"
readiness_url = "http://127.0.0.1:${{WEB_PORT}}/"
{extra_config}"#
        ),
    );
    p.write(
        "shop.test.toml",
        "name = \"Shop\"\n[[steps]]\ninstruction = \"Open the shop, add an item to the basket and check the basket says 1 item.\"\n",
    );
    (p, port)
}

/// The agent's turn: navigate, snapshot, click the button by its ref, snapshot again.
pub(crate) fn browsing_script(server: &str, port: u16) -> Value {
    let tool = |name: &str| format!("mcp__{server}__{name}");
    json!([
        {"tool": tool("browser_navigate"), "input": {"url": format!("http://127.0.0.1:{port}/")}},
        {"tool": tool("browser_snapshot"), "input": {}},
        {"tool": tool("browser_click"), "input": {"element": "Add to basket button", "target": "{ref:Add to basket}"},
         "expect": ["Add to basket"]},
        {"tool": tool("browser_snapshot"), "input": {}},
        {"text": "The basket says 1 item.\nRESULT OK", "expect": ["Basket: 1 item"]},
    ])
}

/// PATH with Playwright MCP's folder first, as a user who installed it has it.
pub(crate) fn path_with(mcp: &Path) -> String {
    let dir = mcp.parent().expect("bin dir");
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

pub(crate) fn start(
    p: &Project,
    claude: &Path,
    mcp: &Path,
    stub: &Stub,
    home: &Path,
) -> std::process::Command {
    let mut cmd = p.supervisor();
    cmd.arg("start")
        .env("BUGATTI_CLAUDE_BIN", claude)
        .env("PATH", path_with(mcp))
        .envs(stub.client_env(home));
    cmd
}

/// The screenshots `report.html` shows once loaded in Chromium (the film strip's frames and any
/// shown large or inline, `img.shot`): their natural widths (0 for an image that did not decode).
pub(crate) async fn rendered_screenshot_widths(report: &Path) -> Vec<u64> {
    let exe = executable::find_on_env_path(None).expect("chromium");
    let dir = tempfile::tempdir().expect("dir");
    let run = format!("browser-report-check-{}", std::process::id());
    let spec = BrowserLaunch::new(exe, dir.path().join("profile"), Scope::run(run));
    let mut browser = Browser::start(spec).await.expect("the browser starts");
    let client = CdpClient::connect(browser.ws_url(), |_| {})
        .await
        .expect("connect");
    let limit = Duration::from_secs(10);
    let url = format!("file://{}", report.display());
    let session = client.open_page(&url, limit).await.expect("page");
    let deadline = Instant::now() + limit;
    let widths = loop {
        let answer = client
            .call(
                "Runtime.evaluate",
                json!({"expression": "location.protocol === 'file:' && document.readyState === 'complete' ? JSON.stringify([...document.querySelectorAll('img.shot, .film img')].map(i => i.naturalWidth)) : null", "returnByValue": true}),
                Some(&session),
                limit,
            )
            .await
            .expect("evaluate");
        if let Some(text) = answer["result"]["value"].as_str() {
            break serde_json::from_str::<Vec<u64>>(text).expect("widths");
        }
        assert!(Instant::now() < deadline, "report.html never loaded");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    client.close().await;
    browser.stop(false).await;
    widths
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_drives_the_supervised_browser_and_the_run_keeps_the_evidence() {
    let Some((claude, mcp)) = tools("the supervised browser through claude-code") else {
        return;
    };
    let (p, port) = shop_project("\n[browser]\n");
    let side = tempfile::tempdir().expect("side");
    let stub = Stub::start(side.path(), browsing_script("browser", port));
    let out = start(&p, &claude, &mcp, &stub, &side.path().join("home"))
        .output()
        .expect("run");
    p.assert_nothing_survives();
    assert_exit(&out, 0);
    let record = p.record_for("shop.test.toml");
    let step = &record.steps[0];
    // The page's deliberate console error makes the passing step a warning (docs/browser.md).
    assert_eq!(step.status, StepStatus::Warn, "{step:?}");
    assert!(
        step.message
            .as_deref()
            .is_some_and(|m| m.contains("console error")),
        "{step:?}"
    );
    let requests = stub.requests_text();
    assert!(
        requests.contains("Basket: 1 item"),
        "the agent saw the page change"
    );

    let run_dir = record.run_dir();
    let evidence = &step.evidence;
    let of_kind = |kind: &str| -> Vec<String> {
        evidence
            .iter()
            .filter(|e| e.kind == kind)
            .map(|e| e.path.clone())
            .collect()
    };
    let shots = of_kind("screenshot");
    assert!(!shots.is_empty(), "{evidence:?}");
    for shot in &shots {
        let png = std::fs::read(run_dir.join(shot)).expect("screenshot");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{shot} is not a PNG");
    }
    let console_log =
        std::fs::read_to_string(run_dir.join(&of_kind("console")[0])).expect("console");
    assert!(
        console_log.contains("deliberate console error"),
        "{console_log}"
    );
    let network = std::fs::read_to_string(run_dir.join(&of_kind("network")[0])).expect("network");
    assert!(
        network.contains("/missing.png") && network.contains("404"),
        "{network}"
    );
    let browser = record.command("browser");
    assert_eq!(browser.kind, "browser");
    assert_eq!(browser.teardown, Some(TeardownState::Clean), "{browser:?}");

    let suite = p.suite_dir();
    let widths = rendered_screenshot_widths(&suite.join("report.html")).await;
    assert!(
        !widths.is_empty() && widths.iter().all(|w| *w > 0),
        "report.html shows the screenshots: {widths:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn playwright_mcp_declared_only_in_the_projects_mcp_json_works_beside_the_console() {
    let Some((claude, mcp)) = tools("a project's own .mcp.json through claude-code") else {
        return;
    };
    let (p, port) = shop_project("");
    // The project's own server's tools are allowed the way the project says (here agent_args).
    let config = std::fs::read_to_string(p.root().join("bugatti.config.toml")).expect("config");
    p.write(
        "bugatti.config.toml",
        &config.replace(
            r#"["--allowedTools", "Bash"]"#,
            r#"["--allowedTools", "Bash,mcp__pw"]"#,
        ),
    );
    let chromium = executable::find_on_env_path(None).expect("chromium");
    p.write(
        ".mcp.json",
        &json!({"mcpServers": {"pw": {"command": "playwright-mcp", "args": [
            "--headless", "--no-sandbox", "--isolated", "--executable-path", chromium.display().to_string()
        ]}}})
        .to_string(),
    );
    let side = tempfile::tempdir().expect("side");
    let stub = Stub::start(side.path(), browsing_script("pw", port));
    let out = start(&p, &claude, &mcp, &stub, &side.path().join("home"))
        .output()
        .expect("run");
    p.assert_nothing_survives();
    assert_exit(&out, 0);
    let record = p.record_for("shop.test.toml");
    assert_eq!(record.steps[0].status, StepStatus::Ok, "{record:?}");
    let requests = stub.requests_text();
    assert!(
        requests.contains("Basket: 1 item"),
        "the project's server drove the page"
    );
    assert!(
        requests.contains("mcp__bugatti__exec_command"),
        "the console's tools are offered beside it"
    );
}

#[test]
fn a_project_mcp_json_naming_the_supervisors_servers_is_refused_before_anything_runs() {
    let (p, _) = shop_project("\n[browser]\n");
    p.write(
        ".mcp.json",
        r#"{"mcpServers": {"browser": {"command": "playwright-mcp"}}}"#,
    );
    let out = p.supervisor().arg("start").output().expect("run");
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains(".mcp.json") && stderr(&out).contains("browser"),
        "{}",
        stderr(&out)
    );
    assert!(p.run_records().is_empty(), "nothing ran");
}

#[test]
fn sigint_mid_step_leaves_no_browser_process() {
    let Some((claude, mcp)) = tools("SIGINT with a supervised browser") else {
        return;
    };
    let (p, port) = shop_project("\n[browser]\n");
    let side = tempfile::tempdir().expect("side");
    let stub = Stub::start(
        side.path(),
        json!([
            {"tool": "mcp__browser__browser_navigate", "input": {"url": format!("http://127.0.0.1:{port}/")}},
            {"hang": true},
        ]),
    );
    let mut child = start(&p, &claude, &mcp, &stub, &side.path().join("home"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Mid-step: the page was opened through Playwright MCP (the stub saw its result).
    let deadline = Instant::now() + Duration::from_secs(120);
    while !stub.requests_text().contains("Shop") {
        assert!(Instant::now() < deadline, "the page was never opened");
        assert!(child.try_wait().expect("wait").is_none(), "ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = child.wait_with_output().expect("wait");
    p.assert_nothing_survives();
    assert_exit(&out, 130);
    let record = p.record_for("shop.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Interrupted), "{record:?}");
    let browser = record.command("browser");
    // `leaked` is Chromium's crash handler, which leaves the group by design and is found and
    // killed by the sweep when it has not exited on its own yet (see browser/launch.rs); that
    // nothing survives is asserted above.
    assert!(
        ["clean", "killed", "leaked"].contains(&browser.teardown.map_or("", |t| t.as_str())),
        "{browser:?}"
    );
}

/// A page that shows a `[secrets]` value: Playwright MCP (given the secrets with `--secrets`)
/// returns `<secret>NAME</secret>` instead, so the model never sees the value; the secrets file
/// is gone once the run ends.
#[test]
fn a_secret_shown_on_a_page_reaches_the_agent_as_its_name_only() {
    let Some((claude, mcp)) = tools("secrets through Playwright MCP") else {
        return;
    };
    let value = "tok-4f9a2c-do-not-leak";
    let (p, port) = shop_project(&format!(
        "\n[secrets]\nSHOP_TOKEN = \"{value}\"\n\n[browser]\ncapture = []\n"
    ));
    p.write(
        "site/index.html",
        &format!(
            "<!doctype html><html><body><h1>Shop</h1><p>Your token: {value}</p></body></html>"
        ),
    );
    let side = tempfile::tempdir().expect("side");
    let script = json!([
        {"tool": "mcp__browser__browser_navigate", "input": {"url": format!("http://127.0.0.1:{port}/")}},
        {"tool": "mcp__browser__browser_snapshot", "input": {}},
        {"text": "The page shows the token.\nRESULT OK", "expect": ["<secret>SHOP_TOKEN</secret>"]},
    ]);
    let stub = Stub::start(side.path(), script);
    let out = start(&p, &claude, &mcp, &stub, &side.path().join("home"))
        .output()
        .expect("run");
    p.assert_nothing_survives();
    assert_exit(&out, 0);
    let record = p.record_for("shop.test.toml");
    assert_eq!(record.steps[0].status, StepStatus::Ok, "{record:?}");
    let requests = stub.requests_text();
    assert!(
        requests.contains("<secret>SHOP_TOKEN</secret>"),
        "the model saw the secret's name"
    );
    assert!(!requests.contains(value), "the model never saw the value");
    let run_dir = record.run_dir();
    let transcript =
        std::fs::read_to_string(run_dir.join("transcripts/agent.jsonl")).expect("agent.jsonl");
    assert!(
        transcript.contains("<secret>SHOP_TOKEN</secret>") && !transcript.contains(value),
        "the transcript holds the name, never the value"
    );
    assert!(
        !run_dir.join("browser/.secrets.env").exists(),
        "the secrets file is removed at the end"
    );
}
