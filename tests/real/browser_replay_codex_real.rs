//! A browser step replayed (docs/replay.md, docs/browser.md) through the real Codex CLI, the real
//! Playwright MCP and Debian's Chromium, the model played by the scripted Responses stub: Codex
//! opens the shop through Playwright MCP (its `mcp_tool_call` items of server `browser`) and
//! passes the step; the step is recorded with those browser calls; the next run replays it with
//! no model request and no Codex process; once the page changed, the step drifts to Codex, which
//! fails it on the page as it is. Skips loudly without Chromium, the Codex CLI or Playwright MCP.

use crate::common;
use crate::common::records::*;
use bugatti::replay::format::{Action, Recording};

use crate::common::codex::{codex_bin, ResponsesStub};
use crate::common::{stderr, stdout, Project};
use serde_json::json;
use std::path::Path;

/// A project as docs/browser.md sets one up, with Codex pointed at `stub`: the `site/` folder
/// served on an auto port, `[browser]` with its defaults, one step.
fn configure(p: &Project, stub: &ResponsesStub) {
    p.write(
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"codex\"\nagent_args = [{}]\nstep_timeout_secs = 180\n\n\
             [ports]\nWEB_PORT = \"auto\"\n\n\
             [commands.web]\nkind = \"long_lived\"\n\
             cmd = \"python3 -m http.server ${{WEB_PORT}} --bind 127.0.0.1 --directory site\"\n\
             readiness_url = \"http://127.0.0.1:${{WEB_PORT}}/\"\n\n[browser]\n",
            stub.agent_args_toml_as_readme()
        ),
    );
}

/// One invocation: (exit code, console, run.json).
fn run(p: &Project, codex: &Path, mcp: &Path) -> (Option<i32>, String, RunRecord) {
    let path = format!(
        "{}:{}",
        mcp.parent().expect("bin dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = p
        .supervisor()
        .arg("start")
        .env("BUGATTI_CODEX_BIN", codex)
        .env("STUB_API_KEY", "dummy")
        .env("PATH", path)
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let console = format!("{}\n{}", stdout(&out), stderr(&out));
    let mut records = p.run_records();
    records.sort_by_key(|r| r.identity.started_at);
    (
        out.status.code(),
        console,
        records.pop().expect("a run.json"),
    )
}

#[test]
fn a_codex_browser_step_replays_without_a_model_request_and_a_changed_page_fails() {
    const TEST: &str = "browser replay through codex";
    let Some(codex) = codex_bin(TEST) else {
        return;
    };
    if common::skip::chromium(TEST).is_none() {
        return;
    }
    let Some(mcp) = common::skip::playwright_mcp(TEST) else {
        return;
    };
    let p = Project::new();
    // A data: favicon: no failed request, no console error (either would make a pass a warning).
    p.write(
        "site/index.html",
        "<!doctype html><html><head><title>Shop</title><link rel=\"icon\" href=\"data:,\"></head><body>\
         <h1>Shop</h1><p id=\"state\">Basket empty</p>\
         <button onclick=\"document.getElementById('state').textContent = 'Basket: 1 item'\">Add to basket</button>\
         </body></html>\n",
    );
    p.write(
        "shop.test.toml",
        "name = \"Shop\"\n\n[[steps]]\ninstruction = \"Open http://127.0.0.1:${WEB_PORT}/ in the browser and check the shop offers an Add to basket button.\"\n",
    );
    let side = tempfile::tempdir().expect("side dir");

    // 1. Codex opens the page through Playwright MCP, reads it and passes the step.
    let first = side.path().join("first");
    std::fs::create_dir_all(&first).expect("dir");
    let browser = "mcp__browser";
    let stub = ResponsesStub::start(
        &first,
        json!([
            {"tool_search": "browser navigate snapshot", "retry_until": "browser_navigate"},
            {"expect": ["browser_navigate"], "tool": "browser_navigate", "namespace": browser,
             "input": {"url": "{url}"}},
            {"expect": ["Page Title: Shop"], "tool": "browser_snapshot", "namespace": browser,
             "input": {}},
            {"expect": ["Add to basket"], "text": "The shop offers Add to basket.\nRESULT OK"},
        ]),
    );
    configure(&p, &stub);
    let (code, console, record) = run(&p, &codex, &mcp);
    let step = &record.steps[0];
    assert_eq!(
        code,
        Some(0),
        "{console}\n{step:#?}\n{}",
        stub.requests_text()
    );
    assert_eq!(step.status, StepStatus::Ok, "{step:#?}");
    assert_eq!(step.mode, Some(StepMode::Agent), "{step:#?}");
    assert!(step.recorded, "{step:#?}");
    assert!(stub.request_log().len() >= 4, "the model was asked");
    let path = p.root().join("bugatti.replay/shop.replay.json");
    let text = std::fs::read_to_string(&path).expect("a recording");
    let recording: Recording = common::read_json_file(&path);
    let tools: Vec<&str> = recording.steps[0]
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Browser(browser) => Some(browser.tool.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        tools,
        ["browser_navigate", "browser_snapshot"],
        "{recording:#?}"
    );
    assert!(
        text.contains("${WEB_PORT}"),
        "the session's port is a placeholder in the recorded URL: {text}"
    );

    // 2. The next run (another port): replayed, no model request, no Codex process.
    let second = side.path().join("second");
    std::fs::create_dir_all(&second).expect("dir");
    let stub = ResponsesStub::start(&second, json!([]));
    configure(&p, &stub);
    let (code, console, record) = run(&p, &codex, &mcp);
    let step = &record.steps[0];
    assert_eq!(code, Some(0), "{console}\n{step:#?}");
    assert_eq!(stub.request_log().len(), 0, "no model request");
    assert_eq!(step.mode, Some(StepMode::Replayed), "{step:#?}");
    assert_eq!(step.status, StepStatus::Ok, "{step:#?}");
    let run_dir = record.run_dir();
    assert!(
        !run_dir.join("transcripts/agent.jsonl").exists(),
        "Codex never started"
    );
    assert!(
        format!("{:?}", step.evidence).contains("screenshots/step-1-"),
        "the replayed step has the browser's screenshot: {step:#?}"
    );

    // 3. The shop sold out: the button is gone, the replayed page differs, the step drifts to
    //    Codex, which looks at the page as it is and fails the step. Never a replayed pass.
    p.write(
        "site/index.html",
        "<!doctype html><html><head><title>Shop</title><link rel=\"icon\" href=\"data:,\"></head><body>\
         <h1>Shop</h1><p id=\"state\">Sold out</p></body></html>\n",
    );
    let third = side.path().join("third");
    std::fs::create_dir_all(&third).expect("dir");
    let stub = ResponsesStub::start(
        &third,
        json!([
            {"tool_search": "browser snapshot", "retry_until": "browser_snapshot"},
            {"expect": ["browser_snapshot"], "tool": "browser_snapshot", "namespace": browser,
             "input": {}},
            {"expect": ["Add to basket"], "text": "The shop offers Add to basket.\nRESULT OK"},
        ]),
    );
    configure(&p, &stub);
    let (code, console, record) = run(&p, &codex, &mcp);
    let step = &record.steps[0];
    assert_eq!(code, Some(1), "{console}\n{step:#?}");
    assert_eq!(step.mode, Some(StepMode::Agent), "{step:#?}");
    assert_eq!(step.status, StepStatus::Error, "{step:#?}");
    let diff = step
        .replay_drift
        .as_ref()
        .map(|d| d.diff.as_str())
        .unwrap_or_default();
    assert!(
        diff.contains("Add to basket") && diff.contains("Sold out"),
        "the drift shows what changed on the page: {step:#?}"
    );
    let message = step.message.as_deref().unwrap_or_default();
    assert!(
        message.contains("Sold out"),
        "Codex judged the page as it is (its verdict quotes the snapshot): {message}"
    );
}
