//! The harness of a session on a pooled browser (docs/browser.md, "One browser per worker")
//! reaches the browser the session is served by, with Debian's Chromium and the `shell` agent: a
//! command given `BUGATTI_CDP_URL` asks `/json/version` through it as soon as it starts. Test `a`
//! takes a browser started for it, its harness started beside the browser (the command's request
//! waits until the session's context is made, then gets `200`); once `a` has given its browser
//! back, `a`'s command kills it. Test `b` is then lent that dead browser, which gives way to a new
//! one at another address: `b`'s command gets that address and reaches it. Nothing survives.
//! Skips without Chromium.

use crate::common::records::*;
use crate::common::{stderr, stdout, Project, RecordExt};

/// The harness command: reaches the browser through `BUGATTI_CDP_URL` and says so (the port, the
/// status; never the token). On SIGTERM, where the marker is (the first session only), it waits
/// until the session's token is shut out (its browser given back), leaves the pool a moment to
/// keep the browser, and kills it.
const CDP_PY: &str = r#"import json, os, re, signal, sys, time, urllib.error, urllib.request

url = os.environ["BUGATTI_CDP_URL"]
base = url.replace("ws://", "http://", 1).rsplit("/devtools/browser", 1)[0]
port = base.split(":")[2].split("/")[0]


def version():
    try:
        with urllib.request.urlopen(base + "/json/version", timeout=60) as answer:
            return answer.status, json.load(answer)["Browser"]
    except urllib.error.HTTPError as e:
        return e.code, None


status, browser = version()
print(f"reached port {port}: HTTP {status} {browser}", flush=True)
if status != 200:
    sys.exit(1)


def stop(*_):
    marker = os.path.join(os.environ["BUGATTI_PROJECT_ROOT"], "kill-after-give-back")
    try:
        os.remove(marker)
    except FileNotFoundError:
        sys.exit(0)
    while version()[0] != 403:
        time.sleep(0.05)
    time.sleep(1)
    with open(os.path.join(os.environ["BUGATTI_RUN_DIR"], "logs", "browser.log")) as log:
        pid = int(re.search(r"pooled browser pid (\d+)", log.read()).group(1))
    os.kill(pid, signal.SIGKILL)
    print(f"killed {pid}", flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
while True:
    signal.pause()
"#;

const CONFIG: &str = r#"[provider]
name = "shell"

[commands.cdp]
kind = "long_lived"
cmd = "python3 cdp.py"
readiness = { log = "HTTP 200" }
stop_timeout_secs = 30

[browser]
mcp = false
reuse = true
"#;

/// The pid and the endpoint's port in a pooled browser's setup line.
fn pooled_browser(record: &RunRecord) -> (u32, u16) {
    let probe = record
        .command("browser")
        .ready_probe
        .clone()
        .unwrap_or_default();
    let number_after = |text: &str| -> Option<u64> {
        probe
            .split(text)
            .nth(1)?
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    let pid = number_after("pooled browser pid ").and_then(|n| u32::try_from(n).ok());
    let port = number_after("ws://127.0.0.1:").and_then(|n| u16::try_from(n).ok());
    match (pid, port) {
        (Some(pid), Some(port)) => (pid, port),
        _ => panic!("not a pooled browser's setup line: {probe}"),
    }
}

#[test]
fn a_pooled_sessions_harness_reaches_its_browser_started_beside_it_or_moved_after_a_crash() {
    if crate::common::skip::chromium("a pooled browser's harness").is_none() {
        return;
    }
    let p = Project::new();
    p.write("bugatti.config.toml", CONFIG);
    p.write("cdp.py", CDP_PY);
    p.write("kill-after-give-back", "");
    for name in ["a", "b"] {
        p.write(
            &format!("{name}.test.toml"),
            "[[steps]]\ninstruction = \"`true`\"\n",
        );
    }
    let out = p
        .supervisor()
        .args(["start", "-j", "1"])
        .output()
        .expect("run");
    p.assert_nothing_survives();
    let console = format!("{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{console}");
    let (a, b) = (p.record_for("a.test.toml"), p.record_for("b.test.toml"));
    let (a_pid, a_port) = pooled_browser(&a);
    let (b_pid, b_port) = pooled_browser(&b);

    // `a`: its command, started beside the browser, was let in once the context was made.
    let a_log = a.read("logs/cdp.log");
    assert!(
        a_log.contains(&format!("reached port {a_port}: HTTP 200")),
        "{a_log}"
    );
    assert!(a_log.contains(&format!("killed {a_pid}")), "{a_log}");

    // `b`: the idle browser was dead; another took its place at another address, and `b`'s
    // command got that one.
    assert_ne!(b_pid, a_pid, "a dead browser is never lent");
    assert_ne!(b_port, a_port, "the new browser is served at another port");
    let b_log = b.read("logs/cdp.log");
    assert!(
        b_log.contains(&format!("reached port {b_port}: HTTP 200")),
        "{b_log}"
    );
    let diagnostics = b.read("diagnostics/harness.log");
    assert!(
        diagnostics.contains(&format!("pooled browser pid {a_pid} ends: ")),
        "{diagnostics}"
    );
    for record in [&a, &b] {
        assert_eq!(record.statuses(), [StepStatus::Ok], "{record:#?}");
        assert_eq!(
            record.command("browser").teardown,
            Some(TeardownState::Clean),
            "{record:#?}"
        );
    }
}
