//! No secret on any command line (docs/browser.md, docs/console.md): a command line is readable by
//! every local user (`/proc/<pid>/cmdline`), so the browser's DevTools token and the console's
//! bearer token never reach one. A real session (Claude Code, Playwright MCP, Chromium, the
//! console) is held mid-step while every process the supervisor started is scanned; then a second
//! local user (`nobody`) gathers every 32-hex-digit string it can read (command lines,
//! environments, the run's files) and tries each on the DevTools endpoint and the console: none
//! lets it in. The same gathering as the supervisor's own user does get in (the test could fail).
//! Skips without Chromium, Claude Code or Playwright MCP, and the `nobody` half when not root.

use crate::browser_claude_real::{shop_project, start, tools};
use crate::common::assert_exit;
use crate::common::claude::Stub;
use crate::common::records::*;
use crate::common::stderr;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// Every descendant of `root` (by parent pid), `root` excluded.
fn descendants(root: i32) -> Vec<i32> {
    let parents: Vec<(i32, i32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let ppid = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    found.remove(0);
    found
}

fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .unwrap_or_default()
}

/// The attacker: every 32-hex-digit string readable in /proc and under `run_dir`, tried on the
/// DevTools endpoint and the console. Prints `{"tried": n, "in": [...]}`.
const ATTACKER: &str = r#"
import json, os, re, sys, urllib.request
port, console, run_dir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
found = set()
def gather(path):
    try:
        found.update(re.findall(rb'[0-9a-f]{32}', open(path, 'rb').read(1 << 22)))
    except Exception:
        pass
for pid in os.listdir('/proc'):
    if pid.isdigit():
        for f in ('cmdline', 'environ'):
            gather(f'/proc/{pid}/{f}')
for root, dirs, files in os.walk(run_dir):
    for f in files:
        gather(os.path.join(root, f))
inside = []
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-03-26", "capabilities": {},
    "clientInfo": {"name": "x", "version": "1"}}}).encode()
for t in sorted(found):
    t = t.decode()
    try:
        urllib.request.urlopen(f'http://127.0.0.1:{port}/{t}/json/version', timeout=3)
        inside.append('browser')
    except Exception:
        pass
    req = urllib.request.Request(console, data=body, headers={
        'Authorization': 'Bearer ' + t, 'Content-Type': 'application/json',
        'Accept': 'application/json, text/event-stream'})
    try:
        urllib.request.urlopen(req, timeout=3)
        inside.append('console')
    except Exception:
        pass
print(json.dumps({"tried": len(found), "in": sorted(set(inside))}))
"#;

fn attack(as_nobody: bool, port: u16, console: &str, run_dir: &Path) -> serde_json::Value {
    let mut cmd = if as_nobody {
        let mut c = std::process::Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            // The system's: a per-user interpreter (pyenv's shim under /root) is not theirs.
            "/usr/bin/python3",
        ]);
        c
    } else {
        std::process::Command::new("python3")
    };
    let out = cmd
        .args(["-c", ATTACKER, &port.to_string(), console])
        .arg(run_dir)
        .output()
        .expect("attacker");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("attacker said {e}: {}", stderr(&out)))
}

#[test]
fn no_token_on_any_command_line_and_another_user_cannot_get_in() {
    let test = "no secret on a command line";
    let Some((claude, mcp)) = tools(test) else {
        return;
    };
    let (p, port) = shop_project("\n[browser]\n");
    let side = tempfile::tempdir().expect("side");
    let env_file = side.path().join("agent-env.txt");
    let script = json!([
        {"tool": "mcp__browser__browser_navigate", "input": {"url": format!("http://127.0.0.1:{port}/")}},
        // Held here while the test looks: the agent, Playwright MCP, the browser and the app run.
        {"bash": format!("env | grep ^BUGATTI_ > {}.tmp && mv {0}.tmp {0} && sleep 8", env_file.display()),
         "expect": ["Shop"]},
        {"text": "Looked.\nRESULT OK"},
    ]);
    let stub = Stub::start(side.path(), script);
    let mut child = start(&p, &claude, &mcp, &stub, &side.path().join("home"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("supervisor");
    let deadline = Instant::now() + Duration::from_secs(90);
    while !env_file.exists() {
        assert!(Instant::now() < deadline, "the agent never ran its command");
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the supervisor ended early"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let env = std::fs::read_to_string(&env_file).expect("env");
    let var = |name: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("{name} not in the agent's environment: {env}"))
            .to_string()
    };
    let cdp_url = var("BUGATTI_CDP_URL");
    let console_url = var("BUGATTI_MCP_URL");
    let console_token = var("BUGATTI_MCP_TOKEN");
    let cdp_token = cdp_url
        .split('/')
        .nth(3)
        .expect("token segment")
        .to_string();
    let cdp_port: u16 = cdp_url
        .split('/')
        .nth(2)
        .and_then(|hp| hp.rsplit(':').next()?.parse().ok())
        .expect("port");
    assert_eq!(cdp_token.len(), 32, "{cdp_url}");

    let pids = descendants(child.id() as i32);
    let lines: Vec<(i32, String)> = pids.iter().map(|&p| (p, cmdline(p))).collect();
    assert!(
        lines.iter().any(|(_, c)| c.contains("playwright")),
        "Playwright MCP is among the scanned processes: {lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|(_, c)| c.contains("--remote-debugging-pipe")),
        "the browser is among them: {lines:#?}"
    );
    for (pid, line) in &lines {
        for (what, token) in [("DevTools", &cdp_token), ("console", &console_token)] {
            assert!(
                !line.contains(token.as_str()),
                "the {what} token is on the command line of {pid}: {line}"
            );
        }
    }

    let run_dir = p.root().join(".bugatti/runs");
    // The same gathering, as the supervisor's user, gets in: the attacker would see a way in.
    let own = attack(false, cdp_port, &console_url, &run_dir);
    assert_eq!(own["in"], json!(["browser", "console"]), "{own}");
    if unsafe { libc::geteuid() } == 0 && Path::new("/usr/bin/python3").exists() {
        let other = attack(true, cdp_port, &console_url, &run_dir);
        assert_eq!(other["in"], json!([]), "another user got in: {other}");
    } else {
        crate::common::skip::skip(
            test,
            "not root (or no /usr/bin/python3): no second user to try as",
        );
    }

    let out = child.wait_with_output().expect("supervisor");
    p.assert_nothing_survives();
    assert_exit(&out, 0);
    // The records redact both tokens (agent/mcp.json, Claude Code's owner-only config, holds the
    // console's token by design: docs/reports.md; the token is dead with the run).
    let record = p.record_for("shop.test.toml");
    let run_dir = record.run_dir();
    for entry in walk(&run_dir) {
        if entry.ends_with("agent/mcp.json") {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&entry).unwrap_or_default()).into_owned();
        for token in [&cdp_token, &console_token] {
            assert!(
                !text.contains(token.as_str()),
                "{} holds a token",
                entry.display()
            );
        }
    }
    assert!(!run_dir.join("browser/.playwright-mcp.json").exists());
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
