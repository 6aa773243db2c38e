//! The agent console's MCP server and tools against real processes: the bearer token is
//! required, the protocol answers as `bugatti` with the tools of docs/console.md, a PTY session takes
//! control characters, over-long canonical lines are refused, at most 16 sessions live at once,
//! floods are cut in the middle, and shutdown leaves nothing running.

use crate::common;
use crate::common::mcp::RpcAnswer;

use bugatti::console::server::ConsoleServer;
use bugatti::console::{Console, ConsoleSetup, ExecArgs, WriteArgs, MAX_SESSIONS};
use bugatti::model::redact::Secrets;
use serde_json::{json, Value};
use std::sync::Arc;

struct Rig {
    _dir: tempfile::TempDir,
    marker: String,
    console: Arc<Console>,
}

fn rig() -> Rig {
    let dir = tempfile::tempdir().expect("dir");
    let workdir = dir.path().join("ws");
    std::fs::create_dir_all(&workdir).expect("ws");
    let run_id = format!("console-test-{}", uuid::Uuid::new_v4());
    let console = Arc::new(Console::new(ConsoleSetup {
        run_id: run_id.clone().into(),
        run_dir: dir.path().join("run"),
        workdir,
        env: vec![
            ("BUGATTI_RUN_ID".into(), run_id.clone()),
            ("SECRET_TOKEN".into(), "hunter2-very-secret".into()),
        ],
        secrets: Arc::new(Secrets::new([("SECRET_TOKEN", "hunter2-very-secret")])),
        logs: Vec::new(),
    }));
    Rig {
        _dir: dir,
        marker: format!("BUGATTI_RUN_ID={run_id}"),
        console,
    }
}

fn exec(cmd: &str, yield_ms: u64) -> ExecArgs {
    ExecArgs {
        cmd: cmd.into(),
        workdir: None,
        shell: None,
        login: None,
        tty: None,
        yield_time_ms: Some(yield_ms),
        max_output_tokens: None,
    }
}

fn post(url: &str, token: Option<&str>, body: Value) -> Result<Value, u16> {
    post_from(url, token, None, body)
}

/// A POST as a browser page at `origin` would send it (`None`: no Origin header, as CLIs do).
fn post_from(
    url: &str,
    token: Option<&str>,
    origin: Option<&str>,
    body: Value,
) -> Result<Value, u16> {
    let mut request = ureq::post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream");
    if let Some(token) = token {
        request = request.header("Authorization", &format!("Bearer {token}"));
    }
    if let Some(origin) = origin {
        request = request.header("Origin", origin);
    }
    match request.send(body.to_string()) {
        Ok(mut response) => {
            let text = response.body_mut().read_to_string().expect("body");
            Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
        }
        Err(ureq::Error::StatusCode(code)) => Err(code),
        Err(e) => panic!("request failed: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_wants_its_token_and_serves_the_tools() {
    let r = rig();
    let mut server = ConsoleServer::start(Arc::clone(&r.console))
        .await
        .expect("serve");
    let endpoint = server.endpoint().clone();
    assert!(endpoint.url.starts_with("http://127.0.0.1:"));
    let url = endpoint.url.clone();
    let token = endpoint.token.clone();
    let answers = tokio::task::spawn_blocking(move || {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}});
        let refused = post(&url, None, init.clone());
        let wrong = post(&url, Some("not-the-token"), init.clone());
        let ok = post(&url, Some(&token), init).expect("initialize");
        let list = post(
            &url,
            Some(&token),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        .expect("tools/list");
        let call = post(
            &url,
            Some(&token),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "exec_command",
                "arguments": {"cmd": "echo \"key $SECRET_TOKEN\"; exit 3", "yield_time_ms": 10000}}}),
        )
        .expect("tools/call");
        (refused, wrong, ok, list, call)
    })
    .await
    .expect("client");
    let (refused, wrong, ok, list, call) = answers;
    assert_eq!(refused, Err(401));
    assert_eq!(wrong, Err(401));
    let ok = RpcAnswer::from_json(&ok);
    assert_eq!(ok.server_name(), Some("bugatti"), "{ok:#?}");
    let list = RpcAnswer::from_json(&list);
    let tools = list.tool_names();
    assert_eq!(
        tools,
        [
            "exec_command",
            "write_stdin",
            "list_sessions",
            "kill_session",
            "list_logs",
            "read_log",
            "wait_for_log"
        ]
    );
    let call = RpcAnswer::from_json(&call);
    let text = call.first_text().expect("text");
    assert!(text.contains("Process exited with code 3\n"), "{text}");
    assert!(
        text.ends_with("Output:\nkey [REDACTED:SECRET_TOKEN]\n"),
        "{text}"
    );
    server.shutdown().await;
    // The record has the call, the secret redacted.
    let record = std::fs::read_to_string(r.console.recorder().path()).expect("console.jsonl");
    assert!(record.contains("\"exit_code\":3"), "{record}");
    assert!(!record.contains("hunter2"), "{record}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_origin_is_refused_even_with_the_token() {
    // The MCP transport spec: servers must validate Origin. A page on another site that learnt
    // the token must not drive the console; loopback pages and clients without Origin may.
    let r = rig();
    let mut server = ConsoleServer::start(Arc::clone(&r.console))
        .await
        .expect("serve");
    let url = server.endpoint().url.clone();
    let token = server.endpoint().token.clone();
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_string();
    let answers = tokio::task::spawn_blocking(move || {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}});
        let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "exec_command",
            "arguments": {"cmd": "echo ran", "tty": false, "yield_time_ms": 10000}}});
        [
            post_from(
                &url,
                Some(&token),
                Some("http://evil.example"),
                init.clone(),
            ),
            post_from(
                &url,
                Some(&token),
                Some("http://evil.example"),
                call.clone(),
            ),
            post_from(&url, Some(&token), Some("null"), call.clone()),
            post_from(
                &url,
                Some(&token),
                Some(&format!("http://127.0.0.1:{port}")),
                init.clone(),
            ),
            post_from(&url, Some(&token), Some("http://localhost:3000"), init),
            post_from(&url, Some(&token), None, call),
        ]
    })
    .await
    .expect("client");
    let [evil_init, evil_call, null_call, own, localhost, cli] = answers;
    assert_eq!(evil_init, Err(403));
    assert_eq!(evil_call, Err(403));
    assert_eq!(null_call, Err(403));
    let own = RpcAnswer::from_json(&own.expect("a loopback origin"));
    assert_eq!(own.server_name(), Some("bugatti"));
    assert!(localhost.is_ok(), "{localhost:?}");
    let cli = RpcAnswer::from_json(&cli.expect("no Origin: served"));
    assert!(
        cli.first_text()
            .is_some_and(|t| t.ends_with("Output:\nran\n")),
        "{cli:#?}"
    );
    server.shutdown().await;
    // Only the call without an Origin ran.
    let record = std::fs::read_to_string(r.console.recorder().path()).expect("console.jsonl");
    assert_eq!(record.lines().count(), 1, "{record}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_long_lines_the_session_cap_floods_and_shutdown() {
    let r = rig();
    let c = &r.console;
    // ^C reaches the foreground program through the terminal.
    let started = c.exec_command(exec("echo ready; sleep 30", 300)).await;
    let id: u32 = started
        .text
        .split("session ID ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("running: {}", started.text));
    assert!(
        started.text.ends_with("Output:\nready\n"),
        "{}",
        started.text
    );
    let interrupted = c
        .write_stdin(WriteArgs {
            session_id: id,
            chars: Some("\u{3}".into()),
            yield_time_ms: Some(10_000),
            max_output_tokens: None,
        })
        .await;
    assert!(
        interrupted.text.contains("Process exited with code 130"),
        "{}",
        interrupted.text
    );

    // A line longer than the terminal's canonical limit is refused, not silently cut.
    let cat = c.exec_command(exec("cat", 250)).await;
    let cat_id: u32 = cat
        .text
        .split("session ID ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .and_then(|n| n.trim().parse().ok())
        .expect("cat runs");
    let long = c
        .write_stdin(WriteArgs {
            session_id: cat_id,
            chars: Some(format!("{}\n", "x".repeat(5000))),
            yield_time_ms: None,
            max_output_tokens: None,
        })
        .await;
    assert!(long.is_error && long.text.contains("4095"), "{long:?}");

    // At most 16 live sessions (cat is one).
    let more =
        futures::future::join_all((1..MAX_SESSIONS).map(|_| c.exec_command(exec("sleep 30", 250))))
            .await;
    assert!(more.iter().all(|a| !a.is_error), "{more:?}");
    let refused = c.exec_command(exec("true", 250)).await;
    assert!(
        refused.is_error && refused.text.contains("16 console sessions"),
        "{refused:?}"
    );

    // A flood is cut in the middle, head and tail kept.
    c.kill_session(bugatti::console::KillArgs { session_id: cat_id })
        .await;
    let mut flood = exec("seq 1 200000", 30_000);
    flood.max_output_tokens = Some(100);
    let flood = c.exec_command(flood).await;
    let output = flood.text.split_once("Output:\n").expect("output").1;
    assert!(
        output.starts_with("Warning: truncated output (original token count: "),
        "{output}"
    );
    let body = output.split_once("\n\n").expect("body").1;
    assert!(body.starts_with("1\n2\n"), "{body}");
    assert!(body.ends_with("\n200000\n"), "{body}");
    assert!(body.contains(" tokens truncated…"), "{body}");
    assert!(body.len() <= 400, "{}", body.len());

    // A daemon that left the session's process group and terminal is found by its marker.
    let daemon = c
        .exec_command(exec(
            "setsid sleep 300 > /dev/null 2>&1 < /dev/null &",
            5_000,
        ))
        .await;
    assert!(
        daemon.text.contains("Process exited with code 0"),
        "{}",
        daemon.text
    );
    assert!(!common::processes_with_env_entry(&r.marker).is_empty());
    c.shutdown().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let left = common::processes_with_env_entry(&r.marker);
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "console processes survived shutdown: {left:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let refused = c.exec_command(exec("true", 250)).await;
    assert!(refused.is_error, "{refused:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_names_its_scheme_and_a_body_that_is_not_json_gets_a_json_rpc_parse_error() {
    let r = rig();
    let mut server = ConsoleServer::start(Arc::clone(&r.console))
        .await
        .expect("serve");
    let endpoint = server.endpoint().clone();
    let (unauthorized, malformed) = tokio::task::spawn_blocking(move || {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .new_agent();
        let send = |token: Option<&str>, body: &str| {
            let mut request = agent
                .post(&endpoint.url)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream");
            if let Some(token) = token {
                request = request.header("Authorization", &format!("Bearer {token}"));
            }
            let mut response = request.send(body.to_string()).expect("an answer");
            let status = response.status().as_u16();
            let auth = response
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let text = response.body_mut().read_to_string().unwrap_or_default();
            (status, auth, text)
        };
        (
            send(None, "{}"),
            send(Some(&endpoint.token), "{\"jsonrpc\": \"2.0\", \"id\": 1, "),
        )
    })
    .await
    .expect("client");
    server.shutdown().await;
    assert_eq!(unauthorized.0, 401);
    assert!(
        unauthorized
            .1
            .as_deref()
            .is_some_and(|h| h.starts_with("Bearer")),
        "{unauthorized:?}"
    );
    assert_eq!(malformed.0, 400, "{malformed:?}");
    let answer: RpcAnswer = serde_json::from_str(&malformed.2).expect("a JSON-RPC answer");
    assert_eq!(
        answer.error.as_ref().map(|e| e.code),
        Some(-32700),
        "{answer:#?}"
    );
    assert_eq!(answer.jsonrpc, "2.0");
    common::processes_with_env_entry(&r.marker)
        .is_empty()
        .then_some(())
        .expect("nothing survives");
}

/// The session cap holds under concurrent calls: the count and the insert are one step, so 60
/// `exec_command`s racing on two threads open at most 16 sessions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_concurrent_calls_open_at_most_the_session_cap() {
    let r = rig();
    let calls: Vec<_> = (0..60)
        .map(|_| {
            let c = Arc::clone(&r.console);
            tokio::spawn(async move { c.exec_command(exec("sleep 30", 250)).await })
        })
        .collect();
    let answers = futures::future::join_all(calls).await;
    let opened = answers
        .iter()
        .filter(|a| a.as_ref().is_ok_and(|a| !a.is_error))
        .count();
    let listed = r.console.list_sessions().text.lines().count();
    r.console.shutdown().await;
    let refused = answers
        .iter()
        .filter_map(|a| a.as_ref().ok())
        .find(|a| a.is_error)
        .map(|a| a.text.clone());
    assert_eq!(opened, MAX_SESSIONS, "a refusal: {refused:?}");
    assert_eq!(listed, MAX_SESSIONS);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !common::processes_with_env_entry(&r.marker).is_empty() {
        assert!(std::time::Instant::now() < deadline, "sessions survived");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
