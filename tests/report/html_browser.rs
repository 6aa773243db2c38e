//! report.html looked at in a real headless Chromium (docs/reports.md): a mixed suite (steps by
//! the agent, replayed, drifted, soft-drifted, audited, failed, a browser test with a pageless
//! step) from two shards. With scripts on: the timeline (lanes, shard groups, bars named and
//! showing their details on focus), the film strip (no frame for the pageless step), the drift's
//! side-by-side diff, deep links, the failure groups, the accessibility snapshot's search and
//! "Copy as prompt" (the clipboard's text read back). With scripts off: the same facts are in the
//! page. Screenshots at 1280 and 390 px wide are written under target/ and named in the output.

use crate::common;
use crate::common::report::plan;
use bugatti::browser::cdp::CdpClient;
use bugatti::browser::{Browser, BrowserLaunch};
use bugatti::model::ids::SuiteId;
use bugatti::model::outcome::{RunOutcome, StepStatus};
use bugatti::model::replay::{Drift, ReplayedAction, StepMode};
use bugatti::process::Scope;
use bugatti::report::records::run_record::{
    ConsoleCallRecord, EvidenceRecord, RunRecord, ToolCallRecord,
};
use bugatti::report::records::suite::SuiteSummary;
use bugatti::report::renderers::html::{render, HtmlInput};
use chrono::{Duration as Span, Utc};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(20);
const FAILURE: &str = "Expected a 'Pay now' button, found none (order 1234)";

struct Shots {
    shop: Vec<u8>,
}

/// A step of `record`: started `at_ms` after the run, taking `ms`.
#[allow(clippy::too_many_arguments)]
fn step(
    r: &mut RunRecord,
    i: usize,
    at_ms: i64,
    ms: u64,
    status: StepStatus,
    mode: Option<StepMode>,
) -> &mut bugatti::report::records::run_record::StepRecord {
    let start = r.identity.started_at + Span::milliseconds(at_ms);
    let s = &mut r.steps[i];
    s.started_at = Some(start);
    s.duration_ms = Some(ms);
    s.status = status;
    s.mode = mode;
    s.instruction_sent = Some(s.instruction.clone());
    s
}

fn finish(r: &mut RunRecord, outcome: RunOutcome, ms: u64) {
    r.outcome = Some(outcome);
    r.duration_ms = Some(ms);
    r.finished_at = Some(r.identity.started_at + Span::milliseconds(ms as i64));
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

fn run_dir(r: &RunRecord) -> PathBuf {
    PathBuf::from(&r.identity.run_dir)
}

/// The four root tests of the mixed suite, their run directories written under `artifacts`.
fn mixed_suite(artifacts: &Path, shots: &Shots) -> Vec<RunRecord> {
    let t0 = Utc::now() - Span::minutes(5);
    let mut records = Vec::new();

    // A browser test that fails at step 3; step 2 only called an API (no page, no screenshot).
    let mut r = RunRecord::from_plan(&plan(artifacts, "run-checkout", "checkout.test.toml", 1));
    r.identity.started_at = t0;
    r.identity.suite_id = "shard-1".into();
    let dir = run_dir(&r);
    step(&mut r, 0, 400, 2100, StepStatus::Ok, Some(StepMode::Agent)).agent_turns = Some(4);
    r.steps[0].evidence.push(EvidenceRecord {
        kind: "screenshot".into(),
        path: "screenshots/step-1-1.png".into(),
        problem: None,
    });
    // The agent's own tools and its console call, at the times they happened.
    r.steps[0].tool_calls.push(ToolCallRecord {
        tool: "mcp__browser__browser_navigate".into(),
        summary: "http://127.0.0.1:8080/cart".into(),
        started_at: t0 + Span::milliseconds(600),
        duration_ms: Some(250),
        is_error: false,
    });
    r.steps[0].tool_calls.push(ToolCallRecord {
        tool: "Read".into(),
        summary: "app/cart.py".into(),
        started_at: t0 + Span::milliseconds(1900),
        duration_ms: Some(20),
        is_error: false,
    });
    r.steps[0].console_calls.push(ConsoleCallRecord {
        tool: "exec_command".into(),
        summary: "curl -s http://127.0.0.1:8080/api/cart".into(),
        started_at: Some(t0 + Span::milliseconds(1000)),
        duration_ms: 300,
        exit_code: Some(0),
        bytes: 120,
        is_error: false,
    });
    r.steps[0].cost_usd = Some(0.0123);
    step(
        &mut r,
        1,
        2600,
        800,
        StepStatus::Ok,
        Some(StepMode::Replayed),
    )
    .replay_actions
    .push(ReplayedAction {
        what: "exec_command curl -s -X POST /api/order".into(),
        output: "{\"ok\":true}".into(),
    });
    let s3 = step(
        &mut r,
        2,
        3500,
        3000,
        StepStatus::Error,
        Some(StepMode::Agent),
    );
    s3.message = Some(FAILURE.into());
    s3.agent_turns = Some(6);
    s3.evidence = vec![
        EvidenceRecord {
            kind: "screenshot".into(),
            path: "screenshots/step-3-1.png".into(),
            problem: None,
        },
        EvidenceRecord {
            kind: "console".into(),
            path: "browser/step-3.console.jsonl".into(),
            problem: None,
        },
    ];
    s3.harness_log_excerpt.insert(
        "app".into(),
        "POST /api/pay 500 PAYMENT-GATEWAY-DOWN".into(),
    );
    write(&dir.join("screenshots/step-1-1.png"), &shots.shop);
    write(&dir.join("screenshots/step-3-1.png"), &shots.shop);
    write(
        &dir.join("screenshots/step-3-1.a11y.txt"),
        b"RootWebArea \"Shop\"\n  heading \"Shop\"\n  StaticText \"3 items\"\n  button \"Empty basket\"\n",
    );
    write(
        &dir.join("browser/step-3.console.jsonl"),
        br#"{"at":"2026-01-01T00:00:00Z","level":"error","source":"exception","text":"Uncaught TypeError: pay is not a function","page":"http://127.0.0.1/"}
"#,
    );
    write(
        &dir.join("transcripts/agent.log"),
        b"### step 3\nI looked for the Pay now button.\nTRANSCRIPT-TAIL-MARK: it is not on the page.\n",
    );
    finish(&mut r, RunOutcome::Failed, 6600);
    records.push(r);

    // The same failure in another test, another order number: one group of two.
    let mut r = RunRecord::from_plan(&plan(artifacts, "run-search", "search.test.toml", 1));
    r.identity.started_at = t0 + Span::milliseconds(300);
    r.identity.suite_id = "shard-1".into();
    step(
        &mut r,
        0,
        200,
        900,
        StepStatus::Ok,
        Some(StepMode::Replayed),
    );
    let s = step(
        &mut r,
        1,
        1200,
        1500,
        StepStatus::Error,
        Some(StepMode::Agent),
    );
    s.message = Some("Expected a 'Pay now' button, found none (order 99)".into());
    finish(&mut r, RunOutcome::Failed, 3000);
    records.push(r);

    // Replay: a drift (masked port highlighted) and a soft drift, both passed by the agent.
    let mut r = RunRecord::from_plan(&plan(artifacts, "run-cart", "cart.test.toml", 1));
    r.identity.started_at = t0 + Span::milliseconds(100);
    r.identity.suite_id = "shard-2".into();
    step(
        &mut r,
        0,
        300,
        700,
        StepStatus::Ok,
        Some(StepMode::Replayed),
    );
    step(&mut r, 1, 1000, 4000, StepStatus::Ok, Some(StepMode::Agent)).replay_drift = Some(Drift {
        action: 0,
        what: "exec_command curl /api/cart".into(),
        field: "output".into(),
        expected: "GET http://127.0.0.1:⟨APP_PORT⟩/api/cart\nitems: 3\ntotal: 30".into(),
        seen: "GET http://127.0.0.1:⟨APP_PORT⟩/api/cart\nitems: 2\ntotal: 20".into(),
        diff: "--- recorded\n+++ replayed\n-items: 3\n+items: 2".into(),
        soft: false,
    });
    step(&mut r, 2, 5100, 1200, StepStatus::Ok, Some(StepMode::Agent)).replay_drift = Some(Drift {
        action: 1,
        what: "exec_command date".into(),
        field: "output".into(),
        expected: "at 12:00:01".into(),
        seen: "at 12:03:09".into(),
        diff: "-at 12:00:01\n+at 12:03:09".into(),
        soft: true,
    });
    finish(&mut r, RunOutcome::Passed, 6500);
    records.push(r);

    // An audited step, and a step that never ran (the run was interrupted).
    let mut r = RunRecord::from_plan(&plan(artifacts, "run-audit", "audit.test.toml", 1));
    r.identity.started_at = t0 + Span::milliseconds(200);
    r.identity.suite_id = "shard-2".into();
    step(&mut r, 0, 250, 1800, StepStatus::Ok, Some(StepMode::Agent)).replay_audited = true;
    step(&mut r, 1, 2100, 600, StepStatus::Ok, None);
    finish(&mut r, RunOutcome::Passed, 2900);
    records.push(r);
    for r in &records {
        write(
            &run_dir(r).join("run.json"),
            &serde_json::to_vec(r).expect("run.json"),
        );
    }
    records
}

/// A DevTools `Runtime.evaluate` answer (`returnByValue`), as far as the test reads it.
#[derive(serde::Deserialize)]
struct Evaluated<T> {
    result: EvaluatedValue<T>,
    #[serde(rename = "exceptionDetails", default)]
    exception: Option<Value>,
}

#[derive(serde::Deserialize)]
struct EvaluatedValue<T> {
    value: T,
}

/// A DevTools `Page.captureScreenshot` answer.
#[derive(serde::Deserialize)]
struct Screenshot {
    /// The PNG, base64.
    data: String,
}

/// A Chrome trace event as the test reads it: phase, thread, category, duration (µs).
#[derive(Debug, serde::Deserialize)]
struct TraceEvent {
    ph: String,
    #[serde(default)]
    tid: Option<u64>,
    #[serde(default)]
    cat: Option<String>,
    #[serde(default)]
    dur: Option<u64>,
    /// Microseconds from the suite's start.
    #[serde(default)]
    ts: Option<i64>,
}

/// What the page script reads from report.html with scripts on.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageFacts {
    lanes: u64,
    groups: u64,
    names: Vec<Option<String>>,
    focusable: bool,
    ticks: u64,
    frames: Vec<String>,
    broken: u64,
    big_shot: bool,
    a11y: String,
    first_diff: Vec<String>,
    masks: Vec<String>,
    groups_of: Vec<Option<String>>,
    reran: Vec<String>,
    copy_hidden: Vec<bool>,
}

/// What the page script reads from report.html with scripts off.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct NoScriptFacts {
    ran: bool,
    bars: u64,
    frames: u64,
    prompt: String,
    copy_hidden: bool,
    first: bool,
    groups: u64,
    diff: u64,
}

async fn eval(client: &CdpClient, page: &str, expression: &str) -> Value {
    eval_as(client, page, expression).await
}

/// `expression`'s value, read as `T`.
async fn eval_as<T: serde::de::DeserializeOwned>(
    client: &CdpClient,
    page: &str,
    expression: &str,
) -> T {
    let answer = client
        .call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true, "userGesture": true}),
            Some(page),
            LIMIT,
        )
        .await
        .unwrap_or_else(|e| panic!("{expression}: {e}"));
    let answer: Evaluated<Value> = serde_json::from_value(answer.clone())
        .unwrap_or_else(|e| panic!("{expression}: {e}: {answer}"));
    if let Some(ex) = answer.exception {
        panic!("{expression}: {ex}");
    }
    let value = answer.result.value;
    serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{expression}: {e}: {value:#}"))
}

async fn navigate(client: &CdpClient, page: &str, url: &str) {
    client
        .call("Page.navigate", json!({ "url": url }), Some(page), LIMIT)
        .await
        .expect("navigate");
    // The page is one file: loaded once its body's last element is there.
    for _ in 0..100 {
        let ready = client
            .call(
                "Runtime.evaluate",
                json!({"expression": "document.readyState === 'complete' && location.href", "returnByValue": true}),
                Some(page),
                LIMIT,
            )
            .await
            .expect("evaluate");
        let ready: Evaluated<Value> = serde_json::from_value(ready).expect("an evaluation");
        if ready.result.value.as_str() == Some(url) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{url} did not load");
}

async fn screenshot(client: &CdpClient, page: &str, width: u32, clip: Option<Value>) -> Vec<u8> {
    client
        .call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600}),
            Some(page),
            LIMIT,
        )
        .await
        .expect("viewport");
    let mut params = json!({"format": "png", "captureBeyondViewport": clip.is_some()});
    if let Some(clip) = clip {
        params
            .as_object_mut()
            .expect("an object")
            .insert("clip".into(), clip);
    }
    let shot = client
        .call("Page.captureScreenshot", params, Some(page), LIMIT)
        .await
        .expect("screenshot");
    let shot: Screenshot = serde_json::from_value(shot).expect("a screenshot");
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(shot.data)
        .expect("png")
}

/// Where the test's screenshots are left for a person to look at.
fn shots_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/report-screenshots");
    std::fs::create_dir_all(&dir).expect("mkdir");
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_html_timeline_film_strip_diff_groups_and_copy_in_a_real_browser() {
    let Some(exe) = common::skip::chromium("report.html in a real browser") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let run = format!("report-html-{}", std::process::id());
    let _ = &run;
    let profile = dir.path().join("profile");
    let mut launch = BrowserLaunch::new(exe, profile.clone(), Scope::run(run.clone()));
    launch.log_path = Some(dir.path().join("browser.log"));
    let mut browser = Browser::start(launch).await.expect("the browser starts");
    let client = CdpClient::connect(browser.ws_url(), |_| {})
        .await
        .expect("connect");
    let page = client.open_page("about:blank", LIMIT).await.expect("page");

    // The app's page, as a browser test's screenshot.
    navigate(
        &client,
        &page,
        "data:text/html,<title>Shop</title><h1 style='font:40px sans-serif'>Shop</h1><p>3 items</p><button>Empty basket</button>",
    )
    .await;
    let shots = Shots {
        shop: screenshot(&client, &page, 480, None).await,
    };

    let artifacts = dir.path().join(".bugatti");
    let records = mixed_suite(&artifacts, &shots);
    let now = Utc::now();
    let summary = SuiteSummary::build(
        &SuiteId::new("merged-suite"),
        now - Span::minutes(5),
        now,
        false,
        &records,
        &[],
    );
    let report_dir = artifacts.join("suites/merged-suite");
    let html = render(&HtmlInput {
        summary: &summary,
        records: &records,
        comparison: None,
        report_dir: &report_dir,
        notes: &[],
        trends: None,
    });
    // The same suite as Chrome trace events: the checkout test's agent actions are complete
    // events on its agent thread, at their measured times (its console call 300 ms from 1 s
    // after the run's start; its browser action 250 ms from 600 ms); no turns spread.
    let trace = bugatti::report::renderers::chrome_trace::events(&summary, &records);
    let trace: Vec<TraceEvent> = serde_json::from_value(Value::from(trace)).expect("trace events");
    let agent: Vec<&TraceEvent> = trace
        .iter()
        .filter(|e| e.ph == "X" && e.tid == Some(3))
        .collect();
    let at = |cat: &str, dur: u64| {
        agent
            .iter()
            .find(|e| e.cat.as_deref() == Some(cat) && e.dur == Some(dur))
            .and_then(|e| e.ts)
            .unwrap_or_else(|| panic!("no {cat} event of {dur} µs: {agent:#?}"))
    };
    let browser_at = at("browser", 250_000);
    assert_eq!(at("console", 300_000) - browser_at, 400_000, "{agent:#?}");
    assert_eq!(at("tool", 20_000) - browser_at, 1_300_000, "{agent:#?}");
    assert!(
        !agent.iter().any(|e| e.cat.as_deref() == Some("turn")),
        "turns are not drawn: {agent:#?}"
    );
    let file = report_dir.join("report.html");
    write(&file, html.as_bytes());
    assert!(!html.contains("http://127.0.0.1:8080/api/cart\"") && !html.contains("src=\"http"));
    let url = format!("file://{}", file.display());

    // Scripts on.
    client
        .call(
            "Browser.grantPermissions",
            json!({"permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]}),
            None,
            LIMIT,
        )
        .await
        .expect("clipboard permission");
    navigate(&client, &page, &url).await;
    let facts: PageFacts = eval_as(
        &client,
        &page,
        r#"(() => {
          const bars = [...document.querySelectorAll('.suite-tl a.bar')];
          const film = document.querySelector('[data-file="checkout.test.toml"] .film');
          const frames = film ? [...film.querySelectorAll('.frame')].map(f => f.textContent) : [];
          const imgs = [...document.querySelectorAll('img')];
          return {
            lanes: document.querySelectorAll('.suite-tl .lane').length,
            groups: document.querySelectorAll('.suite-tl .lgroup').length,
            names: bars.map(b => b.getAttribute('aria-label')),
            focusable: bars.every(b => b.tabIndex >= 0),
            classes: bars.map(b => b.className),
            ticks: document.querySelectorAll('.suite-tl .tk').length,
            frames,
            broken: imgs.filter(i => !i.complete || i.naturalWidth === 0).length,
            bigShot: !!document.querySelector('.failshot img.shot.big'),
            a11y: (document.querySelector('.a11y-tree') || {}).textContent || '',
            firstDiff: [...document.querySelector('.sbs').querySelectorAll('mark.first-diff')].map(m => m.textContent),
            masks: [...document.querySelector('.sbs').querySelectorAll('mark.mask')].map(m => m.textContent),
            groupsOf: [...document.querySelectorAll('.fgroup')].map(g => g.getAttribute('data-count')),
            reran: [...document.querySelectorAll('.reran')].map(r => r.textContent),
            copyHidden: [...document.querySelectorAll('button.copy')].map(b => b.hidden),
          };
        })()"#,
    )
    .await;
    assert_eq!(facts.lanes, 4, "{facts:#?}");
    assert_eq!(facts.groups, 2, "a lane group per shard: {facts:#?}");
    let names: Vec<&str> = facts.names.iter().filter_map(|n| n.as_deref()).collect();
    for want in [
        "step 1: agent, 2.1s",
        "step 2: replayed, 800ms",
        "step 2: drift → agent, 4.0s",
        "step 3: soft drift → agent, 1.2s",
        "step 1: audited by the agent, 1.8s",
    ] {
        assert!(names.contains(&want), "{want:?} in {names:?}");
    }
    assert!(facts.focusable);
    assert!(facts.ticks >= 4, "{facts:#?}");
    assert_eq!(
        facts.frames,
        ["step 1", "step 3"],
        "no frame for the pageless step 2: {facts:#?}"
    );
    assert_eq!(facts.broken, 0, "every image shows: {facts:#?}");
    assert!(facts.big_shot);
    assert!(facts.a11y.contains("button \"Empty basket\""));
    assert_eq!(facts.first_diff, ["items: 3", "items: 2"], "{facts:#?}");
    assert_eq!(facts.masks, ["⟨APP_PORT⟩", "⟨APP_PORT⟩"]);
    assert_eq!(
        facts.groups_of,
        [Some("2".to_string())],
        "one group of two: {facts:#?}"
    );
    assert!(
        facts.reran.iter().any(|r| r.contains("1 recorded action")),
        "{facts:#?}"
    );
    assert_eq!(
        facts.copy_hidden,
        [false, false],
        "the script shows the buttons"
    );

    // A bar's details show on keyboard focus.
    let tip = eval(
        &client,
        &page,
        r#"(() => { const b = [...document.querySelectorAll('.suite-tl a.bar')].find(b => b.getAttribute('aria-label').startsWith('step 1: agent')); b.focus();
             const t = b.querySelector('.tip'); return [getComputedStyle(t).display, t.textContent]; })()"#,
    )
    .await;
    assert_eq!(tip[0], "block", "{tip}");
    assert!(
        tip[1].as_str().unwrap_or("").contains("$0.0123"),
        "cost: {tip}"
    );
    assert!(
        tip[1].as_str().unwrap_or("").contains("exec_command curl"),
        "action: {tip}"
    );

    // The accessibility snapshot's search.
    let matches = eval(
        &client,
        &page,
        r#"(() => { const q = document.querySelector('.a11y-q'); q.value = 'button'; q.dispatchEvent(new Event('input'));
             return document.querySelector('.a11y-tree').getAttribute('data-matches'); })()"#,
    )
    .await;
    assert_eq!(matches, "1");

    // Screenshots of the whole page at two widths, and of the timeline for docs/reports.md.
    let out = shots_dir();
    for width in [1280, 390] {
        let png = screenshot(&client, &page, width, None).await;
        let path = out.join(format!("report-{width}.png"));
        write(&path, &png);
        println!("report.html at {width} px: {}", path.display());
    }
    client
        .call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
            Some(&page),
            LIMIT,
        )
        .await
        .expect("viewport");
    let rect = eval(
        &client,
        &page,
        "(() => { document.activeElement.blur(); window.scrollTo(0,0); const a = document.getElementById('timeline').getBoundingClientRect(); const b = document.querySelector('.suite-tl').getBoundingClientRect(); return [a.x, a.y + window.scrollY, Math.max(a.width, b.width), b.bottom - a.top + 8]; })()",
    )
    .await;
    let clip = json!({"x": 0, "y": rect[1], "width": 1280, "height": rect[3], "scale": 1});
    let timeline = screenshot(&client, &page, 1280, Some(clip)).await;
    let path = out.join("report-timeline.png");
    write(&path, &timeline);
    println!("the timeline: {}", path.display());
    if std::env::var_os("BUGATTI_UPDATE_DOCS_IMAGES").is_some() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/images/report-timeline.png");
        write(&docs, &timeline);
    }

    // Copy as prompt: the clipboard holds the prompt's text.
    let copied = eval(
        &client,
        &page,
        r#"(async () => { const b = document.querySelector('button.copy'); b.click();
             for (let i = 0; i < 50 && !b.getAttribute('data-copied'); i++) await new Promise(r => setTimeout(r, 50));
             const clip = await navigator.clipboard.readText();
             return [b.getAttribute('data-copied'), clip, document.getElementById(b.getAttribute('data-for')).textContent]; })()"#,
    )
    .await;
    assert_eq!(copied[0], "1", "{copied:#}");
    let clip = copied[1].as_str().unwrap_or_default();
    assert_eq!(clip, copied[2].as_str().unwrap_or_default());
    for part in [
        "Instruction:\nStep 3: check the page",
        FAILURE,
        "PAYMENT-GATEWAY-DOWN",
        "Uncaught TypeError: pay is not a function",
        "TRANSCRIPT-TAIL-MARK",
    ] {
        assert!(clip.contains(part), "{part:?} in the prompt: {clip}");
    }

    // Deep links: a step of a test; the first failure, one click from the top.
    navigate(&client, &page, &format!("{url}#test=cart.test.toml&step=2")).await;
    let landed = eval(&client, &page, "document.body.getAttribute('data-landed')").await;
    let cart = eval(
        &client,
        &page,
        "document.querySelector('[data-file=\"cart.test.toml\"]').id + '-s2'",
    )
    .await;
    assert_eq!(landed, cart);
    let first = eval(
        &client,
        &page,
        r#"(() => { document.getElementById('to-first-failure').click(); const el = document.getElementById(location.hash.slice(1));
             return [location.hash, el && el.classList.contains('bad'), el && el.querySelector('.msg').textContent]; })()"#,
    )
    .await;
    assert_eq!(first[1], true, "{first:#}");
    assert_eq!(first[2], FAILURE, "{first:#}");

    // Scripts off: the page still reads.
    let quiet = client.open_page("about:blank", LIMIT).await.expect("page");
    client
        .call(
            "Emulation.setScriptExecutionDisabled",
            json!({"value": true}),
            Some(&quiet),
            LIMIT,
        )
        .await
        .expect("scripts off");
    navigate(&client, &quiet, &url).await;
    let off: NoScriptFacts = eval_as(
        &client,
        &quiet,
        r#"(() => ({
          ran: document.body.hasAttribute('data-landed'),
          bars: document.querySelectorAll('.suite-tl a.bar').length,
          frames: document.querySelectorAll('.film .frame').length,
          prompt: (document.querySelector('.prompt-text') || {}).textContent || '',
          copyHidden: document.querySelector('button.copy').hidden,
          first: !!document.getElementById(document.getElementById('to-first-failure').getAttribute('href').slice(1)),
          groups: document.querySelectorAll('.fgroup').length,
          diff: document.querySelectorAll('.sbs').length,
        }))()"#,
    )
    .await;
    assert!(!off.ran, "scripts were off: {off:#?}");
    assert!(off.bars >= 9, "{off:#?}");
    assert_eq!(off.frames, 2);
    assert!(off.prompt.contains(FAILURE));
    assert!(off.copy_hidden, "no button that cannot work");
    assert!(off.first, "the first failure's link lands without a script");
    assert_eq!(off.groups, 1);
    assert_eq!(off.diff, 2);
    let png = screenshot(&client, &quiet, 1280, None).await;
    write(&out.join("report-1280-noscript.png"), &png);

    client.close().await;
    browser.stop(false).await;
    assert_none_left(&profile);
}

/// No process started with the browser's profile is left (a crash handler may take a moment).
fn assert_none_left(profile: &Path) {
    let needle = profile.display().to_string();
    let alive = || -> Vec<i32> {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .map(|s| {
                        s.rsplit(')')
                            .next()
                            .unwrap_or("")
                            .trim_start()
                            .starts_with('Z')
                    })
                    .unwrap_or(true);
                !zombie
                    && std::fs::read(format!("/proc/{pid}/cmdline"))
                        .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
            })
            .collect()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let left = alive();
        if left.is_empty() {
            return;
        }
        if std::time::Instant::now() > deadline {
            for pid in &left {
                let _ = std::process::Command::new("kill")
                    .args(["-9", &pid.to_string()])
                    .status();
            }
            panic!("browser processes left: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What the page shows of a real run's one step: its console ticks' places (% of the bar) and
/// its details.
#[derive(Debug, serde::Deserialize)]
struct StepTicks {
    console: Vec<f64>,
    tip: String,
}

/// A real run (the scripted `command` agent calls the console, waits 1.5 s, calls it again):
/// run.json keeps when each call began, and report.html, opened in headless Chromium, draws the
/// two calls as ticks as far apart on the step's bar as they were in time, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_runs_console_calls_are_ticks_at_their_measured_times_on_report_html() {
    let Some(exe) = common::skip::chromium("measured ticks on report.html in a real browser")
    else {
        return;
    };
    let p = common::Project::with_directive_agent("");
    p.write(
        "t.test.toml",
        "[[steps]]\ninstruction = '''\nmcp exec_command {\"cmd\": \"echo one\", \"yield_time_ms\": 5000}\nsleep 1.5\nmcp exec_command {\"cmd\": \"echo two\", \"yield_time_ms\": 5000}\n'''\n",
    );
    let out = tokio::task::block_in_place(|| p.start());
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let record = p.record_for("t.test.toml");
    let step = &record.steps[0];
    let calls = &step.console_calls;
    assert_eq!(calls.len(), 2, "{calls:?}");
    let began = |k: usize| calls[k].started_at.expect("when the call began");
    let apart_ms = (began(1) - began(0)).num_milliseconds();
    assert!(
        apart_ms - i64::try_from(calls[0].duration_ms).expect("ms") >= 1500,
        "the agent slept 1.5 s between the calls: {calls:?}"
    );
    // The bar spans the step from its start to its end, its actions included (the agent's
    // turn, `duration_ms`, leaves out the agent's own start before the step's first message).
    let step_start = step.started_at.expect("the step started");
    let last_end = (began(1) - step_start).num_milliseconds()
        + i64::try_from(calls[1].duration_ms).expect("ms");
    let step_ms = i64::try_from(step.duration_ms.expect("the step's duration"))
        .expect("ms")
        .max(last_end);

    let dir = tempfile::tempdir().expect("tempdir");
    let profile = dir.path().join("profile");
    let run = format!("measured-ticks-{}", std::process::id());
    let mut launch = BrowserLaunch::new(exe, profile.clone(), Scope::run(run));
    launch.log_path = Some(dir.path().join("browser.log"));
    let mut browser = Browser::start(launch).await.expect("the browser starts");
    let client = CdpClient::connect(browser.ws_url(), |_| {})
        .await
        .expect("connect");
    let page = client.open_page("about:blank", LIMIT).await.expect("page");
    let url = format!("file://{}", p.suite_dir().join("report.html").display());
    navigate(&client, &page, &url).await;
    let ticks: StepTicks = eval_as(
        &client,
        &page,
        r#"(() => {
          const bar = document.querySelector('.suite-tl a.bar');
          return {
            console: [...bar.querySelectorAll('.tk.tk-console')].map(t => parseFloat(t.style.left)),
            tip: bar.querySelector('.tip').textContent,
          };
        })()"#,
    )
    .await;
    client.close().await;
    browser.stop(false).await;
    assert_none_left(&profile);

    assert_eq!(ticks.console.len(), 2, "each call once: {ticks:?}");
    let drawn = ticks.console[1] - ticks.console[0];
    let measured = apart_ms as f64 * 100.0 / step_ms as f64;
    assert!(drawn > 30.0, "the calls are drawn apart: {ticks:?}");
    assert!(
        (drawn - measured).abs() <= 0.3,
        "the ticks are {drawn:.1}% of the bar apart, the calls {measured:.1}% of the step: {ticks:?}"
    );
    for call in [
        "console exec_command echo one",
        "console exec_command echo two",
    ] {
        assert!(ticks.tip.contains(call), "{call:?} in {:?}", ticks.tip);
    }
}
