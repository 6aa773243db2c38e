//! Command lifecycles with real processes: stubborn servers and their grandchildren, crashes under
//! each restart policy, failing and timed-out setup commands, setsid escapees, PTYs, dependency
//! order, raw and redacted logs. Every test ends by checking that nothing it started survives.

use crate::common::harness::{self, Fixture};
use bugatti::model::outcome::TeardownState;
use bugatti::process::error::HarnessError;
use bugatti::process::event::HarnessEventKind;
use bugatti::process::exit::ExitStatus;
use bugatti::process::record::HarnessStatus;
use bugatti::process::spec::{CommandKind, ProbeSpec, RestartPolicy};
use std::time::Duration;

fn is_alive(pid: i32) -> bool {
    bugatti::process::group::read_stat(pid).is_some_and(|p| !p.is_zombie())
}

#[tokio::test(flavor = "multi_thread")]
async fn server_ignoring_sigterm_with_a_grandchild_is_killed() {
    let fx = Fixture::new().await;
    let mut stubborn = fx.spec(
        "stubborn",
        CommandKind::LongLived,
        "trap '' TERM; sleep 600 & echo started; while true; do sleep 0.1; done",
    );
    stubborn.stop_timeout = Duration::from_secs(1);
    stubborn.probes = vec![ProbeSpec::log("^started$")];
    let mut polite = fx.spec("polite", CommandKind::LongLived, "echo up; exec sleep 600");
    polite.probes = vec![ProbeSpec::log("up")];
    fx.harness
        .start(vec![stubborn, polite])
        .await
        .expect("ready");
    let records = fx.harness.teardown_all(false).await;
    assert_eq!(records[0].name, "stubborn");
    assert_eq!(records[0].teardown, Some(TeardownState::Killed));
    assert_eq!(records[0].exit, Some(ExitStatus::Signal("SIGKILL".into())));
    assert_eq!(records[1].name, "polite");
    assert_eq!(records[1].teardown, Some(TeardownState::Clean));
    assert_eq!(records[1].exit, Some(ExitStatus::Signal("SIGTERM".into())));
    fx.assert_nothing_left().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn on_failure_restarts_are_recorded_and_readiness_rechecked() {
    let mut fx = Fixture::new().await;
    let mut flaky = fx.spec(
        "flaky",
        CommandKind::LongLived,
        "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; echo \"run $n\"; \
         if [ $n -le 2 ]; then exit 3; fi; echo ready; exec sleep 600",
    );
    flaky.restart = RestartPolicy::OnFailure;
    flaky.max_restarts = 5;
    flaky.backoff = Duration::from_millis(50);
    flaky.probes = vec![ProbeSpec::log("^ready$")];
    fx.harness
        .start(vec![flaky])
        .await
        .expect("ready on the third run");
    // Crash the running server: it is restarted and its readiness checked again.
    let started = fx
        .next_event(|e| matches!(e.kind, HarnessEventKind::Restarted { attempt: 2, .. }))
        .await;
    let HarnessEventKind::Restarted { pid, .. } = started.kind else {
        unreachable!()
    };
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("crash it");
    fx.next_event(|e| matches!(e.kind, HarnessEventKind::ReadyAgain { attempt: 3 }))
        .await;
    let records = fx.harness.teardown_all(false).await;
    let r = &records[0];
    assert_eq!(r.status, HarnessStatus::Stopped);
    let afters: Vec<_> = r.restarts.iter().map(|x| x.after.clone()).collect();
    assert_eq!(
        afters,
        vec![
            ExitStatus::Code(3),
            ExitStatus::Code(3),
            ExitStatus::Signal("SIGKILL".into())
        ]
    );
    assert_eq!(
        r.restarts.iter().map(|x| x.attempt).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(r.teardown, Some(TeardownState::Clean));
    let log = std::fs::read_to_string(fx.log("flaky")).expect("log");
    assert_eq!(
        log, "run 1\nrun 2\nrun 3\nready\nrun 4\nready\n",
        "one log across restarts"
    );
    fx.assert_nothing_left().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn restarts_stop_at_max_restarts_and_the_session_is_told() {
    let mut fx = Fixture::new().await;
    let mut crashy = fx.spec(
        "crashy",
        CommandKind::LongLived,
        "echo up; sleep 0.2; exit 1",
    );
    crashy.restart = RestartPolicy::Always;
    crashy.max_restarts = 2;
    crashy.backoff = Duration::from_millis(20);
    crashy.probes = vec![ProbeSpec::log("up")];
    // It may already be giving up by the time readiness passes: either outcome of start is fine.
    let _ = fx.harness.start(vec![crashy]).await;
    let gave_up = fx.next_event(harness::is_gave_up).await;
    let HarnessEventKind::GaveUp { reason } = gave_up.kind else {
        unreachable!()
    };
    assert!(reason.contains("max_restarts = 2"), "{reason}");
    let records = fx.harness.teardown_all(false).await;
    assert_eq!(records[0].status, HarnessStatus::Exited);
    assert_eq!(records[0].restarts.len(), 2);
    assert_eq!(records[0].exit_code, Some(1));
    fx.assert_nothing_left().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn crash_with_never_is_an_event_for_the_session() {
    let mut fx = Fixture::new().await;
    let mut server = fx.spec("server", CommandKind::LongLived, "echo up; sleep 2; exit 7");
    server.probes = vec![ProbeSpec::log("up")];
    fx.harness.start(vec![server]).await.expect("ready");
    let exited = fx
        .next_event(|e| matches!(e.kind, HarnessEventKind::Exited { .. }))
        .await;
    assert_eq!(
        exited.kind,
        HarnessEventKind::Exited {
            status: ExitStatus::Code(7),
            restart_in: None
        }
    );
    let gave_up = fx.next_event(harness::is_gave_up).await;
    assert_eq!(gave_up.command, "server");
    let records = fx.harness.teardown_all(false).await;
    assert_eq!(records[0].status, HarnessStatus::Exited);
    assert_eq!(records[0].exit_code, Some(7));
    assert!(records[0].restarts.is_empty());
    fx.assert_nothing_left().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_dying_during_startup_fails_start_without_waiting_for_the_probe() {
    let fx = Fixture::new().await;
    let mut server = fx.spec(
        "server",
        CommandKind::LongLived,
        "echo 'fatal: port in use' >&2; exit 5",
    );
    server.probes = vec![ProbeSpec::http("http://127.0.0.1:9/never")];
    let err = fx.harness.start(vec![server]).await.expect_err("dies");
    match &err {
        HarnessError::DiedDuringStartup {
            command,
            reason,
            tail,
            ..
        } => {
            assert_eq!(command, "server");
            assert!(reason.contains("exit code 5"), "{reason}");
            assert!(tail.contains("fatal: port in use"), "{tail}");
        }
        other => panic!("unexpected {other}"),
    }
    fx.harness.teardown_all(false).await;
    fx.assert_nothing_left().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn failing_setup_command_reports_status_and_log_tail() {
    let fx = Fixture::new().await;
    let migrate = fx.spec(
        "migrate",
        CommandKind::ShortLived,
        "echo migrating; echo 'boom: table missing' >&2; exit 4",
    );
    let mut server = fx.spec("server", CommandKind::LongLived, "exec sleep 600");
    server.depends_on = vec!["migrate".into()];
    let err = fx
        .harness
        .start(vec![migrate, server])
        .await
        .expect_err("setup fails");
    match &err {
        HarnessError::SetupFailed {
            command,
            status,
            tail,
            ..
        } => {
            assert_eq!(command, "migrate");
            assert_eq!(status, &ExitStatus::Code(4));
            assert_eq!(tail, "migrating\nboom: table missing");
        }
        other => panic!("unexpected {other}"),
    }
    assert!(err.to_string().contains("failed with exit code 4"));
    let records = fx.harness.teardown_all(false).await;
    assert_eq!(records[0].status, HarnessStatus::Failed);
    assert_eq!(records[0].exit_code, Some(4));
    assert_eq!(records[1].status, HarnessStatus::NotStarted);
    assert_eq!(records[1].teardown, None);
    fx.assert_nothing_left().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn setup_command_timeout_stops_it_and_says_so() {
    let fx = Fixture::new().await;
    let mut slow = fx.spec("slow", CommandKind::ShortLived, "echo working; sleep 600");
    slow.timeout = Some(Duration::from_secs(1));
    let err = fx.harness.start(vec![slow]).await.expect_err("times out");
    match &err {
        HarnessError::SetupTimedOut {
            command,
            timeout,
            tail,
            ..
        } => {
            assert_eq!(command, "slow");
            assert_eq!(*timeout, Duration::from_secs(1));
            assert_eq!(tail, "working");
        }
        other => panic!("unexpected {other}"),
    }
    let records = fx.harness.teardown_all(false).await;
    assert_eq!(records[0].status, HarnessStatus::TimedOut);
    assert_eq!(records[0].teardown, Some(TeardownState::Clean));
    fx.assert_nothing_left().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn setsid_escapees_are_recorded_leaked_and_killed() {
    let fx = Fixture::new().await;
    // One escapee keeps the environment (found by tag / run id), one clears it (found only by
    // the parentage snapshot taken before the stop signal).
    let mut server = fx.spec(
        "server",
        CommandKind::LongLived,
        "setsid sh -c 'echo > esc1.flag; exec sleep 600' & \
         setsid /usr/bin/env -i /bin/sh -c 'echo > esc2.flag; exec /bin/sleep 601' & \
         wait",
    );
    server.probes = vec![ProbeSpec::exec("test -f esc1.flag && test -f esc2.flag")];
    fx.harness.start(vec![server]).await.expect("ready");
    let records = fx.harness.teardown_all(false).await;
    let r = &records[0];
    assert_eq!(r.teardown, Some(TeardownState::Leaked));
    assert_eq!(r.leaked_pids.len(), 2, "{:?}", r.leaked_pids);
    for pid in &r.leaked_pids {
        assert!(!is_alive(*pid), "leaked pid {pid} still alive");
    }
    fx.assert_nothing_left().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pty_command_sees_a_terminal_and_its_cwd() {
    let fx = Fixture::new().await;
    let mut tty = fx.spec(
        "tty",
        CommandKind::LongLived,
        "if [ -t 1 ]; then echo 'tty yes'; else echo 'tty no'; fi; echo \"cwd $(pwd)\"; \
         echo \"run $BUGATTI_RUN_ID\"; exec sleep 600",
    );
    tty.pty = true;
    tty.probes = vec![ProbeSpec::log("^run ")];
    fx.harness.start(vec![tty]).await.expect("ready");
    let records = fx.harness.teardown_all(false).await;
    assert_eq!(records[0].teardown, Some(TeardownState::Clean));
    let log = std::fs::read_to_string(fx.log("tty")).expect("log");
    let cwd = fx.dir.path().canonicalize().expect("cwd");
    assert_eq!(
        log,
        format!("tty yes\r\ncwd {}\r\nrun {}\r\n", cwd.display(), fx.run_id)
    );
    fx.assert_nothing_left().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_cwd_is_an_error_naming_it() {
    let fx = Fixture::new().await;
    for pty in [false, true] {
        let mut spec = fx.spec("lost", CommandKind::LongLived, "exec sleep 600");
        spec.cwd = fx.dir.path().join("does-not-exist");
        spec.pty = pty;
        let err = fx.harness.start(vec![spec]).await.expect_err("bad cwd");
        assert!(
            err.to_string().contains("does-not-exist") && err.to_string().contains("`lost`"),
            "{err}"
        );
    }
    fx.harness.teardown_all(false).await;
    fx.assert_nothing_left().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn setup_runs_first_and_logs_are_raw_and_redacted() {
    let fx = Fixture::new().await;
    let mut seed = fx.spec(
        "seed",
        CommandKind::ShortLived,
        "echo data > seed.txt; printf 'raw \\377\\376 bytes\\n'; echo \"token=$API_TOKEN\"",
    );
    seed.env.push(("API_TOKEN".into(), "s3cr3t-value".into()));
    seed.secrets = std::sync::Arc::new(bugatti::model::redact::Secrets::new([(
        "API_TOKEN",
        "s3cr3t-value",
    )]));
    // Declared first, but the setup command runs before it.
    let mut reader = fx.spec(
        "reader",
        CommandKind::LongLived,
        "cat seed.txt; exec sleep 600",
    );
    reader.probes = vec![ProbeSpec::log("^data$")];
    fx.harness.start(vec![reader, seed]).await.expect("ready");
    let records = fx.harness.teardown_all(false).await;
    assert_eq!(records[1].status, HarnessStatus::Succeeded);
    assert_eq!(records[1].exit_code, Some(0));
    let log = std::fs::read(fx.log("seed")).expect("log");
    assert_eq!(
        log,
        b"raw \xff\xfe bytes\ntoken=[REDACTED:API_TOKEN]\n".to_vec()
    );
    fx.assert_nothing_left().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn abandoning_startup_then_tearing_down_stops_everything() {
    let fx = Fixture::new().await;
    let server = fx.spec("server", CommandKind::LongLived, "exec sleep 600");
    let mut setup = fx.spec("setup", CommandKind::ShortLived, "echo working; sleep 600");
    setup.depends_on = vec![];
    let mut waits = fx.spec("waits", CommandKind::LongLived, "exec sleep 600");
    waits.probes = vec![ProbeSpec::exec("false")];
    // The session was interrupted: it stops waiting for start and tears down (second Ctrl-C:
    // no grace).
    let start = fx.harness.start(vec![setup, server, waits]);
    assert!(tokio::time::timeout(Duration::from_secs(1), start)
        .await
        .is_err());
    let records = fx.harness.teardown_all(true).await;
    assert_eq!(records[0].name, "setup");
    assert_eq!(records[0].status, HarnessStatus::Interrupted);
    assert_eq!(records[0].teardown, Some(TeardownState::Killed));
    // The long-lived ones wait for the setup command, so they never started.
    assert_eq!(records[1].status, HarnessStatus::NotStarted);
    assert_eq!(records[2].status, HarnessStatus::NotStarted);
    fx.assert_nothing_left().await;
}
