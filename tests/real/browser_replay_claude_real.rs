//! Browser steps replayed (docs/replay.md, docs/browser.md) through the real Claude Code CLI, the
//! real Playwright MCP and Debian's Chromium, the model played by the scripted Messages stub: a
//! three-step shop test (open the shop, add an item to the basket, check the basket) that the
//! agent passed through the browser is recorded; the next run replays all three steps with no
//! model request and still keeps the browser's screenshots as evidence; a page whose basket now
//! says something else drifts at the step that saw it, and the agent, shown the page as it is,
//! fails it (never a replayed pass); a page whose element refs were renumbered still replays.
//! Skips loudly without Chromium, the Claude Code CLI or Playwright MCP.

use crate::common;
use crate::common::assert_exit;

use crate::browser_claude_real::rendered_screenshot_widths;
use crate::common::claude::{claude_bin, Stub};
use crate::common::records::*;
use crate::common::scripted_api::logged_requests;
use crate::common::{stderr, stdout, Project};
use bugatti::model::ids::StepId;
use bugatti::replay::format::{Action, Recording};
use bugatti::report::records::run_record::EvidenceRecord;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The shop: adding to the basket makes it say `added` (`Basket: 1 item` when recorded). A
/// data: favicon, so that the page makes no failed request and logs no console error (either
/// would turn a pass into a warning, see docs/browser.md).
fn shop_page(added: &str, wrapped: bool) -> String {
    let button = format!(
        "<button onclick=\"document.getElementById('state').textContent = '{added}'\">Add to basket</button>"
    );
    // An unnamed <div> around a single element is left out of Playwright MCP's snapshot, but it
    // still takes a ref number: with two, the button's ref (and every later one) is two higher,
    // while the snapshot reads the same otherwise.
    let button = if wrapped {
        format!("<div><div>{button}</div></div>")
    } else {
        button
    };
    format!(
        "<!doctype html>\n<html><head><title>Shop</title><link rel=\"icon\" href=\"data:,\"></head>\n\
         <body>\n<h1>Shop</h1>\n<p id=\"state\">Basket empty</p>\n{button}\n</body></html>\n"
    )
}

/// Chromium, the Claude Code CLI and Playwright MCP, or `None` after a loud skip.
fn tools(test: &str) -> Option<(PathBuf, PathBuf)> {
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

/// A project as docs/browser.md sets one up: the `site/` folder served by a harness command,
/// `[browser]` with its defaults, and the three-step shop test. The port is fixed because the
/// scripted model must know the URL it navigates to.
fn shop_project() -> (Project, u16) {
    let p = Project::new();
    let port = free_port();
    p.write("site/index.html", &shop_page("Basket: 1 item", false));
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
        r#"name = "Shop"

[[steps]]
instruction = "Open http://127.0.0.1:${WEB_PORT}/ in the browser and check the shop offers an Add to basket button."

[[steps]]
instruction = "Add an item to the basket."

[[steps]]
instruction = "Check the basket says 1 item."
"#,
    );
    (p, port)
}

/// The agent's three steps through the browser, each judged on what the page showed.
fn agent_script(port: u16) -> Value {
    json!([
        {"tool": "mcp__browser__browser_navigate", "input": {"url": format!("http://127.0.0.1:{port}/")}},
        {"tool": "mcp__browser__browser_snapshot", "input": {}},
        {"text": "The shop offers Add to basket.\nRESULT OK", "expect": ["Add to basket"]},
        {"tool": "mcp__browser__browser_click",
         "input": {"element": "Add to basket button", "target": "{ref:Add to basket}"}},
        {"tool": "mcp__browser__browser_snapshot", "input": {}},
        {"text": "Added.\nRESULT OK", "expect": ["Basket: 1 item"]},
        {"tool": "mcp__browser__browser_snapshot", "input": {}},
        {"text": "The basket says 1 item.\nRESULT OK", "expect": ["Basket: 1 item"]},
    ])
}

/// One invocation and what it left.
struct Outcome {
    code: Option<i32>,
    console: String,
    record: RunRecord,
    /// Requests the stub got (model calls and the CLI's side queries alike).
    requests: usize,
    /// The stub's request log, one JSON body a line.
    log: String,
}

/// Runs `supervisor start` (plus `extra`) against a fresh stub holding `script`, with
/// Playwright MCP's folder first on PATH as a user who installed it has it.
fn run(p: &Project, tools: &(PathBuf, PathBuf), side: &Path, name: &str, script: Value) -> Outcome {
    run_with(p, tools, side, name, script, &[])
}

fn run_with(
    p: &Project,
    (claude, mcp): &(PathBuf, PathBuf),
    side: &Path,
    name: &str,
    script: Value,
    extra: &[&str],
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
        .args(extra)
        .env("BUGATTI_CLAUDE_BIN", claude)
        .env("PATH", path)
        .envs(stub.client_env(&side.join("home")))
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let console = format!("{}\n{}", stdout(&out), stderr(&out));
    let log = stub.requests_text();
    Outcome {
        code: out.status.code(),
        console,
        record: p.newest_record(),
        requests: log.lines().count(),
        log,
    }
}

fn modes(record: &RunRecord) -> Vec<Option<StepMode>> {
    record.steps.iter().map(|s| s.mode).collect()
}

/// The recording of `shop.test.toml`, at the documented default place.
fn recording(p: &Project) -> Recording {
    common::read_json_file(&p.root().join("bugatti.replay/shop.replay.json"))
}

/// The recorded actions of plan step `step` (1-based).
fn recorded_actions(recording: &Recording, step: u32) -> Vec<Action> {
    recording
        .steps
        .iter()
        .find(|s| s.step == StepId::new(step))
        .map(|s| s.actions.clone())
        .unwrap_or_else(|| panic!("no recorded step {step}: {recording:#?}"))
}

fn browser_tools(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Browser(browser) => Some(browser.tool.clone()),
            _ => None,
        })
        .collect()
}

/// The text of every tool result in the stub's last logged request: what the agent had seen
/// when it gave its final answer.
fn last_tool_results(log: &str) -> String {
    logged_requests(log)
        .iter()
        .rev()
        .find(|r| r.is_main_loop())
        .map(|last| last.tool_results().join("\n"))
        .unwrap_or_default()
}

/// The evidence of `kind` of a step, by path.
fn evidence<'a>(step: &'a StepRecord, kind: &str) -> Vec<&'a EvidenceRecord> {
    step.evidence.iter().filter(|e| e.kind == kind).collect()
}

/// The screenshot evidence of a step, each checked to be a PNG in the run directory.
fn screenshots(record: &RunRecord, step: usize) -> Vec<String> {
    let shots: Vec<String> = evidence(&record.steps[step], "screenshot")
        .into_iter()
        .map(|e| e.path.clone())
        .collect();
    for shot in &shots {
        let png = std::fs::read(record.run_dir().join(shot)).expect("screenshot file");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{shot} is not a PNG");
    }
    shots
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shop_test_through_the_browser_replays_without_the_model_and_a_changed_basket_fails() {
    let Some(tools) = tools("browser replay through claude-code") else {
        return;
    };
    let (p, port) = shop_project();
    let side = tempfile::tempdir().expect("side");

    // 1. The agent passes the three steps through the browser; each is recorded with its
    //    browser actions.
    let first = run(&p, &tools, side.path(), "first", agent_script(port));
    assert_eq!(first.code, Some(0), "{}", first.console);
    assert_eq!(
        first.record.statuses(),
        [StepStatus::Ok; 3],
        "{:#?}",
        first.record.steps
    );
    assert_eq!(modes(&first.record), [Some(StepMode::Agent); 3]);
    for step in &first.record.steps {
        assert!(step.recorded, "{step:#?}");
    }
    assert!(
        first.requests >= 8,
        "the agent was asked: {}",
        first.requests
    );
    let recorded = recording(&p);
    assert_eq!(
        browser_tools(&recorded_actions(&recorded, 1)),
        ["browser_navigate", "browser_snapshot"],
        "{recorded:#?}"
    );
    assert_eq!(
        browser_tools(&recorded_actions(&recorded, 2)),
        ["browser_click", "browser_snapshot"],
        "{recorded:#?}"
    );
    assert_eq!(
        browser_tools(&recorded_actions(&recorded, 3)),
        ["browser_snapshot"],
        "{recorded:#?}"
    );
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let check = p.supervisor().arg("check").output().expect("check");
    let listed = stdout(&check);
    assert_exit(&check, 0);
    for line in [
        format!("replay: recorded {today} (2 actions: 2 browser)"),
        format!("replay: recorded {today} (1 action: 1 browser)"),
    ] {
        assert!(listed.contains(&line), "`check` shows {line:?}:\n{listed}");
    }

    // 2. The same page: every step replays, the model is never asked, the agent never starts,
    //    and each step still has the browser's screenshot, shown in report.html.
    let second = run(&p, &tools, side.path(), "second", json!([]));
    assert_eq!(
        second.code,
        Some(0),
        "{}\n{:#?}",
        second.console,
        second.record.steps
    );
    assert_eq!(second.requests, 0, "no model request on a replayed run");
    assert_eq!(
        modes(&second.record),
        [Some(StepMode::Replayed); 3],
        "{:#?}",
        second.record.steps
    );
    assert_eq!(second.record.statuses(), [StepStatus::Ok; 3]);
    assert_eq!(second.record.replayed_steps, 3, "{:#?}", second.record);
    assert_eq!(
        second.console.matches("OK (replayed ").count(),
        3,
        "{}",
        second.console
    );
    assert!(
        !second
            .record
            .run_dir()
            .join("transcripts/agent.jsonl")
            .exists(),
        "the agent CLI never started"
    );
    for step in 0..3 {
        assert!(
            !screenshots(&second.record, step).is_empty(),
            "step {} of the replayed run has a screenshot: {:#?}",
            step + 1,
            second.record.steps[step]
        );
    }
    let widths = rendered_screenshot_widths(&p.suite_dir().join("report.html")).await;
    assert!(
        widths.len() >= 3 && widths.iter().all(|w| *w > 0),
        "report.html shows the replayed steps' screenshots: {widths:?}"
    );

    // 2b. The same basket, but the click now logs a console error. The agent's Playwright MCP
    //     would show it "Console: 1 errors" with the click's answer: the replay, shown the
    //     same, drifts to the agent (not a pass that only warns), and the agent fails it.
    p.write(
        "site/index.html",
        &shop_page("Basket: 1 item", false).replace(
            "onclick=\"",
            "onclick=\"console.error('basket service failed'); ",
        ),
    );
    let erring = run(
        &p,
        &tools,
        side.path(),
        "console-error",
        json!([
            {"tool": "mcp__browser__browser_snapshot", "input": {}},
            {"text": "The page logged an error.\nRESULT ERROR: the basket logs a console error",
             "expect": ["Console: 1 errors"]},
        ]),
    );
    let steps2b = &erring.record.steps;
    assert_eq!(erring.code, Some(1), "{}\n{steps2b:#?}", erring.console);
    assert_eq!(steps2b[0].mode, Some(StepMode::Replayed), "{steps2b:#?}");
    assert_eq!(steps2b[1].mode, Some(StepMode::Agent), "{steps2b:#?}");
    assert_eq!(steps2b[1].status, StepStatus::Error, "{steps2b:#?}");
    assert_eq!(
        steps2b[1].replay_drift.as_ref().map(|d| d.field.as_str()),
        Some("console errors"),
        "{:#?}",
        steps2b[1]
    );

    // 3. The shop now puts two items in the basket: opening it still replays, adding to it
    //    drifts, and the agent, looking at the page as it is, fails the step. Nothing after it
    //    passes on a recording.
    p.write("site/index.html", &shop_page("Basket: 2 items", false));
    let third = run(
        &p,
        &tools,
        side.path(),
        "third",
        json!([
            {"tool": "mcp__browser__browser_snapshot", "input": {}},
            {"text": "The basket says 1 item.\nRESULT OK", "expect": ["Basket: 1 item"]},
            {"tool": "mcp__browser__browser_snapshot", "input": {}},
            {"text": "The basket says 1 item.\nRESULT OK", "expect": ["Basket: 1 item"]},
        ]),
    );
    let steps3 = &third.record.steps;
    assert_eq!(third.code, Some(1), "{}\n{steps3:#?}", third.console);
    assert_eq!(steps3[0].mode, Some(StepMode::Replayed), "{steps3:#?}");
    assert_eq!(steps3[0].status, StepStatus::Ok, "{steps3:#?}");
    let added = &steps3[1];
    assert_eq!(added.mode, Some(StepMode::Agent), "{added:#?}");
    assert_eq!(added.status, StepStatus::Error, "{added:#?}");
    let drift = added
        .replay_drift
        .as_ref()
        .unwrap_or_else(|| panic!("the drift is kept: {added:#?}"));
    assert!(
        drift.diff.contains("Basket: 1 item") && drift.diff.contains("Basket: 2 items"),
        "{drift:#?}"
    );
    let note = format!(
        "{} {}",
        added.replay_note.as_deref().unwrap_or_default(),
        added.message.as_deref().unwrap_or_default()
    );
    assert!(note.contains("drift"), "the step says it drifted: {note}");
    assert!(third.requests >= 1, "the drifted step went to the agent");
    assert!(
        last_tool_results(&third.log).contains("Basket: 2 items"),
        "the agent judged the page as it is:\n{}",
        third.log
    );
    for later in &steps3[2..] {
        assert!(
            !(later.mode == Some(StepMode::Replayed) || later.status == StepStatus::Ok),
            "a step after the drift passed: {later:#?}"
        );
    }
    assert_eq!(
        third.record.outcome,
        Some(RunOutcome::Failed),
        "{:#?}",
        third.record
    );
}

/// The shop recorded with its button inside two unnamed `<div>`s, replayed without them:
/// Playwright MCP leaves such wrappers out of the snapshot but numbers them, so today's button
/// has a lower ref and the recorded one names no element at all (a replay that reused it would
/// fail). The recorded click is made on the button found by its role and name: every step
/// replays. An agent run on today's page afterwards shows that the refs did move and that the
/// snapshots are otherwise equal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_whose_refs_were_renumbered_still_replays_without_the_model() {
    let Some(tools) = tools("browser replay of a renumbered page through claude-code") else {
        return;
    };
    let (p, port) = shop_project();
    p.write("site/index.html", &shop_page("Basket: 1 item", true));
    let side = tempfile::tempdir().expect("side");
    let first = run(&p, &tools, side.path(), "first", agent_script(port));
    assert_eq!(first.code, Some(0), "{}", first.console);
    assert_eq!(modes(&first.record), [Some(StepMode::Agent); 3]);
    let recorded = recording(&p);
    let click = recorded_actions(&recorded, 2)
        .into_iter()
        .find_map(|a| match a {
            Action::Browser(browser) if browser.tool == "browser_click" => Some(browser.arguments),
            _ => None,
        })
        .unwrap_or_else(|| panic!("a recorded click: {recorded:#?}"));
    let recorded_ref = button_ref(&first.log);
    assert!(
        click.to_string().contains(&recorded_ref),
        "the recorded click holds the ref it used ({recorded_ref}): {click:#}"
    );

    p.write("site/index.html", &shop_page("Basket: 1 item", false));
    let second = run(&p, &tools, side.path(), "second", json!([]));
    assert_eq!(
        second.code,
        Some(0),
        "{}\n{:#?}",
        second.console,
        second.record.steps
    );
    assert_eq!(
        second.requests, 0,
        "no model request on the renumbered page"
    );
    assert_eq!(
        modes(&second.record),
        [Some(StepMode::Replayed); 3],
        "{:#?}",
        second.record.steps
    );

    // The agent on today's page: the button has another ref, the recorded one names nothing,
    // and the page reads the same.
    let third = run_with(
        &p,
        &tools,
        side.path(),
        "third",
        agent_script(port),
        &["--replay", "off"],
    );
    assert_eq!(third.code, Some(0), "{}", third.console);
    let now_ref = button_ref(&third.log);
    assert_ne!(now_ref, recorded_ref, "the wrappers renumbered the button");
    let seen_today = last_tool_results(&third.log);
    assert!(
        !seen_today.contains(&format!("[ref={recorded_ref}]")),
        "the recorded ref {recorded_ref} names no element on today's page: {seen_today}"
    );
    assert_eq!(
        masked_snapshots(&third.log),
        masked_snapshots(&first.log),
        "the snapshots differ only in their refs"
    );
}

/// The ref of the `Add to basket` button in the first snapshot the agent was shown.
fn button_ref(log: &str) -> String {
    let pattern =
        regex::Regex::new(r#"button \\?"Add to basket\\?" \[ref=([a-z0-9]+)\]"#).expect("regex");
    pattern
        .captures(log)
        .map(|c| c[1].to_string())
        .unwrap_or_else(|| panic!("no button in what the agent saw:\n{log}"))
}

/// The snapshot lines (`- role "name" [ref=…]`) the agent was shown in its last request, refs
/// and the run's own snapshot files (`[Snapshot](….yml)`) masked.
fn masked_snapshots(log: &str) -> Vec<String> {
    let refs = regex::Regex::new(r"\[ref=[a-z0-9]+\]").expect("regex");
    let files = regex::Regex::new(r"\[Snapshot\]\([^)]*\)").expect("regex");
    last_tool_results(log)
        .split("\\n")
        .filter(|l| l.trim_start().starts_with("- "))
        .map(|l| refs.replace_all(l, "[ref=…]").into_owned())
        .map(|l| files.replace_all(&l, "[Snapshot](…)").into_owned())
        .collect()
}

/// A step the agent passed, with a screenshot it took, on a page that logs a console error (the
/// agent was shown `Console: 1 errors`) replays while the page logs no more errors than that:
/// the replayed step takes the same evidence as an agent step, warns of the error the same way,
/// and the agent's screenshot is taken again. (A page that logs more errors than the agent was
/// shown drifts: see the shop test.)
/// A step in which the agent read the browser's console (`browser_console_messages`, not a
/// replayed tool) is not recorded, says why, and goes to the agent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_step_takes_the_evidence_and_warns_of_console_errors_and_unlisted_tools_never_replay(
) {
    let Some(tools) = tools("browser replay evidence through claude-code") else {
        return;
    };
    let (p, port) = shop_project();
    p.write(
        "shop.test.toml",
        r#"name = "Shop"

[[steps]]
instruction = "Open http://127.0.0.1:${WEB_PORT}/ in the browser, take a screenshot and check the shop offers an Add to basket button."

[[steps]]
instruction = "Open http://127.0.0.1:${WEB_PORT}/ again and read the browser console."
"#,
    );
    let url = format!("http://127.0.0.1:{port}/");
    let console_step = json!([
        {"tool": "mcp__browser__browser_navigate", "input": {"url": url}},
        {"tool": "mcp__browser__browser_console_messages", "input": {}},
        {"text": "Read it.\nRESULT OK"},
    ]);
    let mut script = json!([
        {"tool": "mcp__browser__browser_navigate", "input": {"url": url}},
        {"tool": "mcp__browser__browser_take_screenshot", "input": {}},
        {"tool": "mcp__browser__browser_snapshot", "input": {}},
        {"text": "The shop offers Add to basket.\nRESULT OK", "expect": ["Add to basket"]},
    ]);
    script
        .as_array_mut()
        .expect("array")
        .extend(console_step.as_array().expect("array").iter().cloned());
    let side = tempfile::tempdir().expect("side");
    p.write(
        "site/index.html",
        &shop_page("Basket: 1 item", false).replace(
            "</body>",
            "<script>console.error(\"deliberate console error\");</script></body>",
        ),
    );

    let first = run(&p, &tools, side.path(), "first", script);
    let steps1 = &first.record.steps;
    assert_eq!(first.code, Some(0), "{}\n{steps1:#?}", first.console);
    assert_eq!(steps1[0].status, StepStatus::Warn, "{steps1:#?}");
    assert!(steps1[0].recorded, "{:#?}", steps1[0]);
    assert!(!steps1[1].recorded, "{:#?}", steps1[1]);
    let why = steps1[1].replay_note.as_deref().unwrap_or_default();
    assert!(
        why.contains("browser_console_messages"),
        "the step says which tool kept it from being recorded: {why}"
    );
    assert_eq!(
        browser_tools(&recorded_actions(&recording(&p), 1)),
        [
            "browser_navigate",
            "browser_take_screenshot",
            "browser_snapshot"
        ]
    );

    let second = run(&p, &tools, side.path(), "second", console_step);
    let steps2 = &second.record.steps;
    assert_eq!(second.code, Some(0), "{}\n{steps2:#?}", second.console);
    assert_eq!(
        modes(&second.record),
        [Some(StepMode::Replayed), Some(StepMode::Agent)],
        "{steps2:#?}"
    );
    assert!(
        second.requests >= 1,
        "the unrecorded step went to the agent"
    );
    let replayed = &steps2[0];
    assert_eq!(replayed.status, StepStatus::Warn, "{replayed:#?}");
    assert!(
        replayed
            .message
            .as_deref()
            .is_some_and(|m| m.contains("console error")),
        "the replayed step warns of the page's console error: {replayed:#?}"
    );
    let console_log = evidence(replayed, "console")
        .first()
        .map(|e| second.record.read(&e.path))
        .unwrap_or_else(|| panic!("console evidence: {replayed:#?}"));
    assert!(
        console_log.contains("deliberate console error"),
        "{console_log}"
    );
    // The supervisor's own end-of-step screenshot, and the agent's screenshot taken again,
    // both the step's evidence (the latter kept as `step-1-replayed-1.png`), both PNGs.
    let shots = screenshots(&second.record, 0);
    assert!(
        shots.iter().any(|s| s.ends_with("step-1-replayed-1.png"))
            && shots.iter().any(|s| !s.contains("replayed")),
        "{replayed:#?}"
    );
    let remade: Vec<PathBuf> = std::fs::read_dir(second.record.run_dir().join("browser"))
        .expect("the run's browser folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|path| {
            path.extension().is_some_and(|x| x == "png")
                && std::fs::read(path).is_ok_and(|png| png.starts_with(b"\x89PNG\r\n\x1a\n"))
        })
        .collect();
    assert_eq!(
        remade.len(),
        1,
        "the recorded screenshot was taken again: {remade:?}"
    );

    // The agent passes the step on the page that logs the error: the step warns (the
    // supervisor's console check), and it is recorded all the same (the agent said RESULT OK).
    let agent_pass = json!([
        {"tool": "mcp__browser__browser_navigate", "input": {"url": url}},
        {"tool": "mcp__browser__browser_take_screenshot", "input": {}},
        {"tool": "mcp__browser__browser_snapshot", "input": {}},
        {"text": "The shop offers Add to basket.\nRESULT OK", "expect": ["Add to basket"]},
    ]);
    let third = run_with(
        &p,
        &tools,
        side.path(),
        "third",
        agent_pass,
        &["--replay", "record"],
    );
    let steps3 = &third.record.steps;
    assert_eq!(steps3[0].mode, Some(StepMode::Agent), "{:#?}", steps3[0]);
    assert_eq!(steps3[0].status, StepStatus::Warn, "{:#?}", steps3[0]);
    assert!(steps3[0].recorded, "{:#?}", steps3[0]);
    p.assert_nothing_survives();
}

/// The shop whose basket changes by a timer after the click: `first` at once (or nothing when
/// empty), then `then` after `delay_ms`.
fn timed_shop_page(first: &str, then: &str, delay_ms: u32) -> String {
    let at_once = if first.is_empty() {
        String::new()
    } else {
        format!("document.getElementById('state').textContent = '{first}'; ")
    };
    format!(
        "<!doctype html>\n<html><head><title>Shop</title><link rel=\"icon\" href=\"data:,\"></head>\n\
         <body>\n<h1>Shop</h1>\n<p id=\"state\">Basket empty</p>\n\
         <button onclick=\"{at_once}setTimeout(() => {{ document.getElementById('state').textContent = '{then}'; }}, {delay_ms})\">Add to basket</button>\n\
         </body></html>\n"
    )
}

/// The shop that asks `stock_url` as it loads and says it is closed unless the answer is `ok`.
/// Playwright MCP answers a navigation once the page's `load` event fired, without waiting for
/// the requests the page still has pending.
fn stock_checking_shop_page(stock_url: &str) -> String {
    format!(
        "<!doctype html>\n<html><head><title>Shop</title><link rel=\"icon\" href=\"data:,\"></head>\n\
         <body>\n<h1>Shop</h1>\n<p id=\"state\">Basket empty</p>\n\
         <button onclick=\"document.getElementById('state').textContent = 'Basket: 1 item'\">Add to basket</button>\n\
         <script>fetch('{stock_url}').then((r) => r.text()).then((t) => {{ \
         if (t.trim() !== 'ok') document.getElementById('state').textContent = 'Shop closed (no stock)'; }});</script>\n\
         </body></html>\n"
    )
}

/// A loopback HTTP server that answers every request `body` after `delay`, to any origin: a
/// request the page has pending for that long. Ends with the test process.
fn slow_server(body: &'static str, delay: std::time::Duration) -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                std::thread::sleep(delay);
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nAccess-Control-Allow-Origin: *\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    port
}

/// Replay looks at the page when the agent did, after Playwright MCP's settle time, or sooner
/// only when the page proves nothing in it can change before then. A shop whose basket updates
/// by a timer 200 ms after the click replays (the replay waits for it, the model is not asked);
/// a shop that shows the item at once and takes it back 250 ms later (an optimistic page the
/// server overrules) drifts, and the agent, shown the page as it is, fails it: the first look
/// matched the recording, and a replay that had trusted it would have passed a broken shop. So
/// does a shop whose stock request, made as it loads, answers 1.5 s later and closes the shop,
/// under a Playwright MCP that lets pages settle for 3 s: the page is not settled while its
/// request is pending, however quiet it looks, and the snapshot the agent took right after
/// opening it is not answered from a page read before the request came back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_sees_the_page_after_the_agents_settle_time_so_a_page_that_takes_back_a_change_drifts(
) {
    let Some(tools) = tools("browser replay and the settle time through claude-code") else {
        return;
    };
    let (p, port) = shop_project();
    p.write(
        "site/index.html",
        &timed_shop_page("", "Basket: 1 item", 200),
    );
    let side = tempfile::tempdir().expect("side");

    let first = run(&p, &tools, side.path(), "first", agent_script(port));
    assert_eq!(first.code, Some(0), "{}", first.console);
    assert!(
        first.record.steps.iter().all(|s| s.recorded),
        "{:#?}",
        first.record
    );
    let second = run(&p, &tools, side.path(), "second", json!([]));
    assert_eq!(second.code, Some(0), "{}", second.console);
    assert_eq!(second.requests, 0, "{}", second.console);
    assert_eq!(
        modes(&second.record),
        [Some(StepMode::Replayed); 3],
        "the replay waited for the timer: {:#?}",
        second.record
    );

    // Shown at once, taken back 250 ms later.
    p.write(
        "site/index.html",
        &timed_shop_page("Basket: 1 item", "Basket empty (out of stock)", 250),
    );
    let third = run(
        &p,
        &tools,
        side.path(),
        "third",
        json!([
            {"tool": "mcp__browser__browser_snapshot", "input": {}},
            {"text": "The basket holds the item.\nRESULT OK", "expect": ["Basket: 1 item"]},
        ]),
    );
    assert_eq!(third.code, Some(1), "{}", third.console);
    let step = &third.record.steps[1];
    assert_agent_failed_on_drift(step, "out of stock");
    assert!(
        last_tool_results(&third.log).contains("out of stock"),
        "the agent saw the page as it is"
    );

    // The shop closes when its stock request answers, 1.5 s after it was made: within the
    // settle time of its Playwright MCP, and far past the first look at the page on any machine.
    let stock = slow_server("none", std::time::Duration::from_millis(1500));
    let config = std::fs::read_to_string(p.root().join("bugatti.config.toml")).expect("config");
    p.write(
        "bugatti.config.toml",
        &config.replace(
            "[browser]\n",
            "[browser]\nmcp_cmd = \"playwright-mcp --timeout-settle 3000\"\n",
        ),
    );
    p.write(
        "site/index.html",
        &stock_checking_shop_page(&format!("http://127.0.0.1:{stock}/stock")),
    );
    let fourth = run(
        &p,
        &tools,
        side.path(),
        "fourth",
        json!([
            {"tool": "mcp__browser__browser_snapshot", "input": {}},
            {"text": "The shop is open.\nRESULT OK", "expect": ["Basket empty"]},
        ]),
    );
    assert_eq!(fourth.code, Some(1), "{}", fourth.console);
    let step = &fourth.record.steps[0];
    assert_agent_failed_on_drift(step, "Shop closed");
}

/// The step drifted on a diff holding `seen`, and the agent then failed it.
#[track_caller]
fn assert_agent_failed_on_drift(step: &StepRecord, seen: &str) {
    assert_eq!(step.mode, Some(StepMode::Agent), "{step:#?}");
    assert_eq!(step.status, StepStatus::Error, "{step:#?}");
    let drift = step.replay_drift.as_ref().map(|d| d.diff.as_str());
    assert!(drift.unwrap_or_default().contains(seen), "{step:#?}");
}

/// The replay's own Playwright MCP client starts before the browser is up, not after it: on
/// the replayed run the browser (a wrapper around Chromium) waits, before it starts, until a
/// Playwright MCP has started (the `mcp_cmd` wrapper leaves a file behind), and so does the web
/// server before it listens; only a client started before the browser can be that (the agent
/// never starts on a replayed run). That client then takes a second more to come up, while the
/// first step is already due: the step waits for it, and every step replays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replays_browser_client_starts_before_the_browser_and_is_waited_for() {
    let test = "browser replay's client started before the browser";
    let (Some(tools), Some(chromium)) = (tools(test), common::skip::chromium(test)) else {
        return;
    };
    let (p, port) = shop_project();
    let root = p.root().display().to_string();
    p.write(
        "mcp.sh",
        &format!(
            "#!/bin/sh\n: > '{root}/client-started'\n[ -e '{root}/await-client' ] && sleep 1\nexec '{}' \"$@\"\n",
            tools.1.display()
        ),
    );
    // Waits at most 10 s, then starts all the same: the run says whether the client was first.
    p.write(
        "chromium.sh",
        &format!(
            "#!/bin/sh\nif [ -e '{root}/await-client' ]; then\n  i=0\n  while [ ! -e '{root}/client-started' ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n  [ -e '{root}/client-started' ] && : > '{root}/browser-saw-client'\nfi\nexec '{}' \"$@\"\n",
            chromium.display()
        ),
    );
    std::fs::set_permissions(
        p.root().join("chromium.sh"),
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .expect("chmod");
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
cmd = "while [ -e await-client ] && [ ! -e client-started ]; do sleep 0.05; done; exec python3 -m http.server ${{WEB_PORT}} --bind 127.0.0.1 --directory site"
readiness_url = "http://127.0.0.1:${{WEB_PORT}}/"
readiness_timeout_secs = 30

[browser]
mcp_cmd = "sh '{root}/mcp.sh'"
executable = "{root}/chromium.sh"
"#
        ),
    );
    let side = tempfile::tempdir().expect("side");
    let first = run(&p, &tools, side.path(), "first", agent_script(port));
    assert_eq!(first.code, Some(0), "{}", first.console);
    assert_eq!(modes(&first.record), [Some(StepMode::Agent); 3]);

    std::fs::remove_file(p.root().join("client-started")).expect("the agent's server started");
    p.write("await-client", "");
    let second = run(&p, &tools, side.path(), "second", json!([]));
    assert_eq!(
        second.code,
        Some(0),
        "{}\n{:#?}",
        second.console,
        second.record.steps
    );
    assert!(p.root().join("client-started").exists());
    assert!(
        p.root().join("browser-saw-client").exists(),
        "the replay's client started only after the browser"
    );
    assert_eq!(second.requests, 0, "no model request on a replayed run");
    assert_eq!(
        modes(&second.record),
        [Some(StepMode::Replayed); 3],
        "{:#?}",
        second.record.steps
    );
    assert_eq!(second.record.statuses(), [StepStatus::Ok; 3]);
}
