//! Readiness by each probe kind, a slow start, a readiness timeout, and `--skip-cmd`, with real
//! processes. Every test ends by checking that nothing it started survives.

use crate::common::harness::{self, Fixture};
use bugatti::model::outcome::TeardownState;
use bugatti::process::error::HarnessError;
use bugatti::process::event::HarnessEventKind;
use bugatti::process::ports::allocate_loopback_port;
use bugatti::process::record::HarnessStatus;
use bugatti::process::spec::{CommandKind, ProbeSpec};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn ready_by_http_against_a_real_python_server() {
    let mut fx = Fixture::new().await;
    let port = allocate_loopback_port().expect("port");
    let mut server = fx.spec(
        "web",
        CommandKind::LongLived,
        &harness::python_http_server(port),
    );
    server.probes = vec![ProbeSpec::http(format!("http://127.0.0.1:{port}/"))];
    fx.harness.start(vec![server]).await.expect("ready");
    let ready = fx
        .next_event(|e| matches!(e.kind, HarnessEventKind::Ready { .. }))
        .await;
    match ready.kind {
        HarnessEventKind::Ready { probe, detail } => {
            assert_eq!(probe, format!("http http://127.0.0.1:{port}/"));
            assert_eq!(detail, "HTTP 200");
        }
        other => panic!("unexpected {other:?}"),
    }
    let records = fx.harness.teardown_all(false).await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].status, HarnessStatus::Stopped);
    assert_eq!(records[0].teardown, Some(TeardownState::Clean));
    fx.assert_nothing_left().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ready_by_tcp_log_and_exec() {
    let fx = Fixture::new().await;
    let port = allocate_loopback_port().expect("port");
    let listener = format!(
        "exec python3 -u -c 'import socket,time\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind((\"127.0.0.1\",{port}))\ns.listen()\nprint(\"listening\", flush=True)\ntime.sleep(600)'"
    );
    let mut tcp = fx.spec("tcp", CommandKind::LongLived, &listener);
    tcp.probes = vec![ProbeSpec::tcp(format!("127.0.0.1:{port}"))];
    let mut log = fx.spec(
        "log",
        CommandKind::LongLived,
        "echo starting; sleep 0.3; echo 'server listening on port 1234'; exec sleep 600",
    );
    log.probes = vec![ProbeSpec::log(r"listening on port \d+")];
    let mut exec = fx.spec(
        "exec",
        CommandKind::LongLived,
        "sleep 0.3; touch ready.flag; exec sleep 600",
    );
    exec.probes = vec![ProbeSpec::exec("test -f ready.flag")];
    fx.harness
        .start(vec![tcp, log, exec])
        .await
        .expect("all three ready");
    assert!(fx.dir.path().join("ready.flag").exists());
    let records = fx.harness.teardown_all(false).await;
    assert_eq!(records.len(), 3);
    for r in &records {
        assert_eq!(r.teardown, Some(TeardownState::Clean), "{r:?}");
    }
    let log_text = std::fs::read_to_string(fx.log("log")).expect("log file");
    assert_eq!(log_text, "starting\nserver listening on port 1234\n");
    fx.assert_nothing_left().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_start_is_waited_for() {
    let fx = Fixture::new().await;
    let port = allocate_loopback_port().expect("port");
    let cmd = format!("sleep 2; {}", harness::python_http_server(port));
    let mut server = fx.spec("slow", CommandKind::LongLived, &cmd);
    server.probes = vec![ProbeSpec::http(format!("http://127.0.0.1:{port}/"))];
    fx.harness
        .start(vec![server])
        .await
        .expect("ready after the slow start");
    let records = fx.harness.teardown_all(false).await;
    assert_eq!(records[0].teardown, Some(TeardownState::Clean));
    fx.assert_nothing_left().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn readiness_timeout_names_the_probe_and_what_it_last_saw() {
    let fx = Fixture::new().await;
    let port = allocate_loopback_port().expect("port");
    // Answers 503 forever.
    let cmd = format!(
        "exec python3 -u -c 'import http.server as h\nclass H(h.BaseHTTPRequestHandler):\n    def do_GET(self):\n        self.send_response(503); self.end_headers()\nh.HTTPServer((\"127.0.0.1\",{port}),H).serve_forever()'"
    );
    let mut server = fx.spec("sick", CommandKind::LongLived, &cmd);
    server.probes = vec![ProbeSpec::http(format!("http://127.0.0.1:{port}/health"))
        .with_timeout(Duration::from_secs(3))];
    let mut quiet = fx.spec(
        "quiet",
        CommandKind::LongLived,
        "echo booting; exec sleep 600",
    );
    quiet.probes = vec![ProbeSpec::log("never printed").with_timeout(Duration::from_secs(3))];
    let err = fx
        .harness
        .start(vec![server, quiet])
        .await
        .expect_err("readiness must fail");
    match &err {
        HarnessError::Readiness {
            command,
            probe,
            last_seen,
            ..
        } => {
            if command == "sick" {
                assert_eq!(probe, &format!("http http://127.0.0.1:{port}/health"));
                // Before the server listens it sees a refused connection; after, the 503.
                assert!(
                    last_seen == "HTTP 503" || last_seen.contains("onnect"),
                    "{last_seen}"
                );
            } else {
                assert_eq!(command, "quiet");
                assert_eq!(probe, "log /never printed/");
                assert_eq!(last_seen, "last line: booting");
            }
        }
        other => panic!("unexpected error {other}"),
    }
    let message = err.to_string();
    assert!(message.contains("not ready after 3s"), "{message}");
    assert!(message.contains("readiness_timeout_secs"), "{message}");
    let records = fx.harness.teardown_all(false).await;
    assert_eq!(records.len(), 2);
    fx.assert_nothing_left().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn skipped_command_is_not_launched_but_its_probe_runs() {
    let fx = Fixture::new().await;
    let port = allocate_loopback_port().expect("port");
    // The user started the server by hand (here: the test, outside the harness).
    let mut by_hand = std::process::Command::new("sh")
        .args(["-c", &harness::python_http_server(port)])
        .env("BUGATTI_RUN_ID", &fx.run_id)
        .process_group(0)
        .spawn()
        .expect("manual server");
    let mut server = fx.spec(
        "web",
        CommandKind::LongLived,
        "echo launched > launched.flag; exec sleep 600",
    );
    server.skipped = true;
    server.probes = vec![ProbeSpec::http(format!("http://127.0.0.1:{port}/"))];
    fx.harness.start(vec![server]).await.expect("probe passes");
    assert!(!fx.dir.path().join("launched.flag").exists());
    assert!(!fx.log("web").exists());
    let records = fx.harness.teardown_all(false).await;
    assert_eq!(records[0].status, HarnessStatus::Skipped);
    assert!(records[0].skipped);
    assert_eq!(records[0].teardown, None);
    // Teardown left the hand-started server alone.
    assert!(by_hand.try_wait().expect("try_wait").is_none());
    bugatti::process::group::signal_group(by_hand.id() as i32, nix::sys::signal::Signal::SIGKILL)
        .expect("kill manual server");
    by_hand.wait().expect("reap manual server");
    fx.assert_nothing_left().await;
}

use std::os::unix::process::CommandExt;

#[tokio::test(flavor = "multi_thread")]
async fn live_output_can_be_subscribed_to_by_others() {
    let fx = Fixture::new().await;
    let mut chatty = fx.spec(
        "chatty",
        CommandKind::LongLived,
        "echo up; while true; do echo tick; sleep 0.05; done",
    );
    chatty.probes = vec![ProbeSpec::log("^up$")];
    fx.harness.start(vec![chatty]).await.expect("ready");
    let hub = fx
        .harness
        .output("chatty")
        .await
        .expect("hub of a launched command");
    assert!(fx.harness.output("nope").await.is_none());
    let mut everything = hub.subscribe();
    let mut ticks = hub.subscribe_matching("^tick$").expect("regex");
    let line = tokio::time::timeout(Duration::from_secs(30), everything.recv())
        .await
        .expect("a line within 30 s")
        .expect("open");
    assert_eq!(&*line, "tick");
    let tick = tokio::time::timeout(Duration::from_secs(30), ticks.recv())
        .await
        .expect("a tick within 30 s")
        .expect("open");
    assert_eq!(&*tick, "tick");
    assert_eq!(hub.last_line().as_deref(), Some("tick"));
    let records = fx.harness.teardown_all(false).await;
    assert_eq!(records[0].teardown, Some(TeardownState::Clean));
    fx.assert_nothing_left().await;
}
