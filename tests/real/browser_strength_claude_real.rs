//! A browser recording never weakens in silence (docs/replay.md, "A recording never weakens in
//! silence"), through the real Claude Code CLI, the real Playwright MCP and Debian's Chromium,
//! the model played by the scripted Messages stub: a shop step the agent passed through the
//! browser (four Playwright calls, a fact on the basket) drifts; the agent takes it over and
//! passes it having run one `curl`. That pass would drop every browser action and the fact: it
//! is kept pending, and when the basket then breaks, the step goes to the agent again instead of
//! replaying the curl as a pass. Skips loudly without Chromium, the Claude Code CLI or
//! Playwright MCP.

use crate::common;

use crate::common::claude::{claude_bin, Stub};
use crate::common::records::*;
use crate::common::{stderr, stdout, Project};
use bugatti::replay::format::{Action, Recording};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The shop; a click on the button makes the basket say `added`.
fn shop_page(title: &str, added: &str) -> String {
    format!(
        "<!doctype html>\n<html><head><title>Shop</title><link rel=\"icon\" href=\"data:,\"></head>\n\
         <body>\n<h1>{title}</h1>\n<p id=\"state\">Basket empty</p>\n\
         <button onclick=\"document.getElementById('state').textContent = '{added}'\">Add to basket</button>\n\
         </body></html>\n"
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

fn shop_project() -> (Project, u16) {
    let p = Project::new();
    let port = free_port();
    p.write("site/index.html", &shop_page("Shop", "Basket: 1 item"));
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

[browser]
"#
        ),
    );
    p.write(
        "shop.test.toml",
        "[[steps]]\ninstruction = \"Open http://127.0.0.1:${WEB_PORT}/, add an item to the basket and check the basket says 1 item.\"\n",
    );
    (p, port)
}

/// The careful pass: through the browser, a fact on the basket the last snapshot showed.
fn careful(port: u16) -> Value {
    json!([
        {"tool": "mcp__browser__browser_navigate", "input": {"url": format!("http://127.0.0.1:{port}/")}},
        {"tool": "mcp__browser__browser_snapshot", "input": {}},
        {"tool": "mcp__browser__browser_click",
         "input": {"element": "Add to basket button", "target": "{ref:Add to basket}"}},
        {"tool": "mcp__browser__browser_snapshot", "input": {}},
        {"text": "The basket says 1 item.\nRESULT OK", "expect": ["Basket: 1 item"]},
        {"facts": ["4 contains \"Basket: 1 item\""]},
    ])
}

/// The hurried pass: one curl of the page, a fact on it.
fn hurried(port: u16) -> Value {
    json!([
        {"tool": "Bash", "input": {"command": format!("curl -s http://127.0.0.1:{port}/")}},
        {"text": "The shop answers.\nRESULT OK"},
        {"facts": ["1 contains \"Add to basket\""]},
    ])
}

struct Outcome {
    code: Option<i32>,
    console: String,
    record: RunRecord,
    requests: usize,
}

fn run(
    p: &Project,
    (claude, mcp): &(PathBuf, PathBuf),
    side: &Path,
    name: &str,
    script: Value,
) -> Outcome {
    let dir = side.join(name);
    std::fs::create_dir_all(&dir).expect("stub dir");
    let stub = Stub::start(&dir, script);
    let path = format!(
        "{}:{}",
        mcp.parent().expect("bin dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CLAUDE_BIN", claude)
        .env("PATH", path)
        .envs(stub.client_env(&side.join("home")))
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    Outcome {
        code: out.status.code(),
        console: format!("{}\n{}", stdout(&out), stderr(&out)),
        record: p.newest_record(),
        requests: stub.requests_text().lines().count(),
    }
}

fn kinds(recording: &Recording) -> Vec<&'static str> {
    recording.steps[0]
        .actions
        .iter()
        .map(Action::kind_name)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curl_that_took_over_a_browser_step_waits_for_review_and_never_replays_as_a_pass() {
    let test = "browser strength through claude-code";
    if common::skip::chromium(test).is_none() {
        return;
    }
    let Some(claude) = claude_bin(test) else {
        return;
    };
    let Some(mcp) = common::skip::playwright_mcp(test) else {
        return;
    };
    let tools = (claude, mcp);
    let (p, port) = shop_project();
    let side = tempfile::tempdir().expect("side");
    let in_force = || -> Recording {
        common::read_json_file(&p.root().join("bugatti.replay/shop.replay.json"))
    };

    // 1. The careful pass is recorded: four browser actions and the fact.
    let first = run(&p, &tools, side.path(), "first", careful(port));
    assert_eq!(first.code, Some(0), "{}", first.console);
    assert!(first.record.steps[0].recorded, "{:#?}", first.record.steps);
    assert_eq!(kinds(&in_force()), ["browser"; 4]);

    // 2. The page drifts (a new title); the agent takes the step over and passes it with a curl.
    p.write(
        "site/index.html",
        &shop_page("Shop (sale)", "Basket: 1 item"),
    );
    let second = run(&p, &tools, side.path(), "second", hurried(port));
    assert_eq!(second.code, Some(0), "{}", second.console);
    let step = &second.record.steps[0];
    assert_eq!(step.mode, Some(StepMode::Agent), "{step:#?}");
    assert!(!step.recorded, "{step:#?}");
    let weaker = "recording for step 1 would drop 4 browser actions and 1 fact: pending review \
                  (supervisor replay review)";
    assert_eq!(step.replay_pending.as_deref(), Some(weaker), "{step:#?}");
    assert!(
        second
            .console
            .contains(&format!("PENDING     shop.test.toml {weaker}")),
        "{}",
        second.console
    );
    assert_eq!(
        kinds(&in_force()),
        ["browser"; 4],
        "the recording in force stays"
    );
    let pending: Recording =
        common::read_json_file(&p.root().join("bugatti.replay/pending/shop.replay.json"));
    assert_eq!(kinds(&pending), ["shell"]);

    // 3. The basket breaks. The curl still sees the same page: recorded, it would have replayed
    //    green with no model call. The step goes to the agent.
    p.write("site/index.html", &shop_page("Shop (sale)", "Basket empty"));
    let third = run(&p, &tools, side.path(), "third", hurried(port));
    let step = &third.record.steps[0];
    assert_eq!(step.mode, Some(StepMode::Agent), "{step:#?}");
    assert!(third.requests > 0, "the model was asked");
    assert!(
        step.replay_note
            .as_deref()
            .is_some_and(|n| n.contains("waits for review")),
        "{step:#?}"
    );
    assert!(third.code.is_some(), "{}", third.console);
}
