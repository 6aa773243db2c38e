//! One browser per worker end to end (docs/browser.md, "One browser per worker") through the real
//! Claude Code CLI, the real Playwright MCP and Debian's Chromium, the model played by the scripted
//! Messages stub, with `[browser] reuse = true` and one worker: test `a` leaves a cookie,
//! localStorage, an IndexedDB database, a Cache API entry, a service worker and an extra tab in
//! its browser (permissions and downloads, which a page cannot leave by itself, are proven over
//! CDP in `browser_pool.rs`); test `b`, served by the same browser process, sees none of them. The
//! next run replays both tests (no model request) on one pooled browser again, and `b`'s recorded
//! page (nothing seen) still matches. Nothing survives either run. Skips loudly without Chromium,
//! the Claude Code CLI or Playwright MCP.

use crate::browser_claude_real::{start, tools};
use crate::common::claude::Stub;
use crate::common::records::*;
use crate::common::{stderr, stdout, Project, RecordExt};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// `leave()` leaves everything a page can in its context; `look()` says what it finds. The page
/// itself never changes, so that its snapshots replay as recorded.
const PAGE: &str = r#"<!doctype html>
<html><head><title>Pool</title><link rel="icon" href="data:,"></head>
<body><h1>Pool</h1>
<script>
async function leave() {
  document.cookie = "pooled=1; max-age=3600; path=/";
  localStorage.setItem("pooled", "1");
  await new Promise((ok, no) => {
    const open = indexedDB.open("pooled", 1);
    open.onupgradeneeded = () => open.result.createObjectStore("s");
    open.onerror = () => no(open.error);
    open.onsuccess = () => { open.result.close(); ok(); };
  });
  await (await caches.open("pooled")).put("/cached", new Response("1"));
  await navigator.serviceWorker.register("/sw.js");
  await navigator.serviceWorker.ready;
  return "Left everything";
}
async function look() {
  const found = [];
  if (document.cookie) found.push("cookie " + document.cookie);
  if (localStorage.getItem("pooled")) found.push("localStorage");
  if ((await indexedDB.databases()).length) found.push("IndexedDB");
  if ((await caches.keys()).length) found.push("cache");
  if ((await navigator.serviceWorker.getRegistrations()).length) found.push("service worker");
  return "Seen: " + (found.length ? found.join(", ") : "nothing");
}
</script></body></html>
"#;

/// Once `kill-kept` exists, SIGKILLs the replay's Playwright MCP client an earlier session of
/// this suite handed back to be kept with the pooled browser (said in its run's log, newer than
/// the marker): the next session finds it dead.
const KILL_KEPT: &str = r#"marker="$BUGATTI_PROJECT_ROOT/kill-kept"
[ -f "$marker" ] || exit 0
for log in "$BUGATTI_PROJECT_ROOT"/.bugatti/runs/*/diagnostics/harness.log; do
  [ "$log" -nt "$marker" ] || continue
  pid=$(grep -o 'kept client pid [0-9]* handed back' "$log" | grep -o '[0-9][0-9]*' | head -n 1)
  [ -n "$pid" ] || continue
  kill -9 "$pid" && echo "killed $pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
done
"#;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

fn project() -> (Project, u16) {
    let p = Project::new();
    let port = free_port();
    p.write("site/index.html", PAGE);
    p.write("site/sw.js", "self.addEventListener('fetch', () => {});\n");
    p.write("kill-kept.sh", KILL_KEPT);
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

[commands.killer]
kind = "short_lived"
cmd = "sh kill-kept.sh"

[browser]
reuse = true
"#
        ),
    );
    p.write(
        "a.test.toml",
        "name = \"Leaves\"\n[[steps]]\ninstruction = \"Open the page that leaves everything, open a second tab, and check the page still holds it all.\"\n",
    );
    p.write(
        "b.test.toml",
        "name = \"Finds nothing\"\n[[steps]]\ninstruction = \"Open the page and check it finds nothing of an earlier test, in one tab.\"\n",
    );
    (p, port)
}

/// Test `a` leaves everything, sees it, and opens a second tab; test `b` sees nothing, in one
/// tab.
fn script(port: u16) -> Value {
    let site = format!("http://127.0.0.1:{port}/");
    let evaluate = |function: &str| json!({"tool": "mcp__browser__browser_evaluate", "input": {"function": function}});
    let mut look = evaluate("async () => await look()");
    look["expect"] = json!(["Left everything"]);
    json!([
        {"tool": "mcp__browser__browser_navigate", "input": {"url": site}},
        evaluate("async () => await leave()"),
        look,
        {"tool": "mcp__browser__browser_tabs", "input": {"action": "new"},
         "expect": ["Seen: cookie pooled=1, localStorage, IndexedDB, cache, service worker"]},
        {"text": "It holds it all.\nRESULT OK"},
        {"tool": "mcp__browser__browser_navigate", "input": {"url": site}},
        evaluate("async () => await look()"),
        {"tool": "mcp__browser__browser_tabs", "input": {"action": "list"}, "expect": ["Seen: nothing"]},
        {"text": "Nothing of test a, one tab.\nRESULT OK", "expect": ["- 0:"], "expect_absent": ["- 1:"]},
    ])
}

/// The pid in a pooled browser's setup line.
fn pooled_pid(record: &RunRecord) -> u32 {
    let probe = record
        .command("browser")
        .ready_probe
        .clone()
        .unwrap_or_default();
    let after = probe
        .split("pooled browser pid ")
        .nth(1)
        .unwrap_or_else(|| panic!("not a pooled browser: {probe}"));
    after
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {probe}"))
}

/// The records of `p` not in `before`, by test file (`a`, `b`).
fn new_records(p: &Project, before: &BTreeSet<String>) -> (RunRecord, RunRecord) {
    let fresh: Vec<RunRecord> = p
        .run_records()
        .into_iter()
        .filter(|r| !before.contains(r.identity.run_id.as_str()))
        .collect();
    let of = |name: &str| {
        fresh
            .iter()
            .find(|r| r.identity.test_file.ends_with(name))
            .cloned()
            .unwrap_or_else(|| panic!("no run of {name}"))
    };
    (of("a.test.toml"), of("b.test.toml"))
}

#[test]
fn with_reuse_the_next_test_on_the_same_browser_sees_nothing_of_the_last_by_agent_and_by_replay() {
    let Some((claude, mcp)) = tools("one browser per worker through claude-code") else {
        return;
    };
    let (p, port) = project();
    let side = tempfile::tempdir().expect("side");
    let home = side.path().join("home");

    // 1. The agent, through Playwright MCP: `b` is served by `a`'s browser and finds nothing.
    let stub_dir = |name: &str| {
        let dir = side.path().join(name);
        std::fs::create_dir_all(&dir).expect("stub dir");
        dir
    };
    let stub = Stub::start(&stub_dir("first"), script(port));
    let out = start(&p, &claude, &mcp, &stub, &home)
        .args(["-j", "1"])
        .output()
        .expect("run");
    p.assert_nothing_survives();
    let console = format!("{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{console}");
    let (a, b) = new_records(&p, &BTreeSet::new());
    for record in [&a, &b] {
        assert_eq!(record.statuses(), [StepStatus::Ok], "{record:#?}");
        assert_eq!(record.steps[0].mode, Some(StepMode::Agent));
        assert!(record.steps[0].recorded, "{record:#?}");
        assert_eq!(
            record.command("browser").teardown,
            Some(TeardownState::Clean),
            "{record:#?}"
        );
    }
    assert_eq!(pooled_pid(&a), pooled_pid(&b), "one browser served both");
    let log = b.read("logs/browser.log");
    assert!(
        log.contains(&format!("pooled browser pid {}", pooled_pid(&b))),
        "{log}"
    );
    // `a` (first, one worker) left everything; `b` found nothing of it.
    let transcript = |record: &RunRecord| record.read("transcripts/agent.jsonl");
    assert!(
        transcript(&a).contains("Seen: cookie pooled=1"),
        "a saw what it left"
    );
    assert!(
        transcript(&b).contains("Seen: nothing"),
        "b saw nothing of a's"
    );

    // 2. Replayed: no model request, both pass on one pooled browser, `b`'s page unchanged.
    let before: BTreeSet<String> = [&a, &b]
        .map(|r| r.identity.run_id.as_str().to_string())
        .into();
    let stub = Stub::start(&stub_dir("second"), json!([]));
    let out = start(&p, &claude, &mcp, &stub, &home)
        .args(["-j", "1", "--replay", "only"])
        .output()
        .expect("replay");
    p.assert_nothing_survives();
    let console = format!("{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{console}");
    assert_eq!(stub.requests_text().lines().count(), 0, "no model request");
    let (a, b) = new_records(&p, &before);
    for record in [&a, &b] {
        assert_eq!(record.statuses(), [StepStatus::Ok], "{record:#?}");
        assert_eq!(
            record.steps[0].mode,
            Some(StepMode::Replayed),
            "{record:#?}"
        );
    }
    assert_eq!(pooled_pid(&a), pooled_pid(&b), "one browser replayed both");
    // One Playwright MCP client replayed both, `b` in its own fresh context (it saw nothing).
    let handed = kept_client_pid(&a, "handed back").unwrap_or_else(|| {
        panic!(
            "a handed its client back: {}",
            a.read("diagnostics/harness.log")
        )
    });
    assert_eq!(
        kept_client_pid(&b, "reused"),
        Some(handed),
        "{}",
        b.read("diagnostics/harness.log")
    );

    // 3. The kept client killed between the sessions: `b` starts a new one and replays as
    // recorded, in its own fresh context; nothing survives.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    p.write("kill-kept", "");
    let before: BTreeSet<String> = p
        .run_records()
        .iter()
        .map(|r| r.identity.run_id.as_str().to_string())
        .collect();
    let stub = Stub::start(&stub_dir("third"), json!([]));
    let out = start(&p, &claude, &mcp, &stub, &home)
        .args(["-j", "1", "--replay", "only"])
        .output()
        .expect("replay");
    p.assert_nothing_survives();
    let console = format!("{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{console}");
    let (a, b) = new_records(&p, &before);
    for record in [&a, &b] {
        assert_eq!(record.statuses(), [StepStatus::Ok], "{record:#?}");
        assert_eq!(record.steps[0].mode, Some(StepMode::Replayed));
    }
    let killed = kept_client_pid(&a, "handed back").expect("a handed its client back");
    assert!(
        b.read("logs/killer.log")
            .contains(&format!("killed {killed}")),
        "the kept client was killed"
    );
    let log = b.read("diagnostics/harness.log");
    assert!(
        log.contains(&format!("kept client pid {killed} is gone or failed")),
        "{log}"
    );
    let replaced = kept_client_pid(&b, "handed back").expect("b handed its new client back");
    assert_ne!(replaced, killed, "a new client replayed b");
}

/// The pid of the replay's kept Playwright MCP client in a run's diagnostics line that says
/// it was `what` ("handed back", "reused").
fn kept_client_pid(record: &RunRecord, what: &str) -> Option<u32> {
    let log = record.read("diagnostics/harness.log");
    log.lines()
        .filter(|line| line.contains("pid ") && line.contains(what))
        .find_map(|line| {
            line.split("kept client pid ")
                .nth(1)?
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
}

/// SIGINT while a pooled browser serves a step: the session gives it back unclean, so it is
/// ended, and the suite's end leaves no browser process.
#[test]
fn sigint_mid_step_leaves_no_pooled_browser_process() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let Some((claude, mcp)) = tools("SIGINT with a pooled browser") else {
        return;
    };
    let (p, port) = crate::browser_claude_real::shop_project("\n[browser]\nreuse = true\n");
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
    crate::common::assert_exit(&out, 130);
    let record = p.record_for("shop.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Interrupted), "{record:?}");
    pooled_pid(&record);
}
