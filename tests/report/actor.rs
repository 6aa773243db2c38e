//! The ReporterActor end to end: sessions (tokio tasks) send plans and events concurrently; the
//! replies come when files are final; the suite files, the console and the harness logs hold
//! what they must, and no secret survives in any file or console line.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::common::report::{all_files, assert_absent_everywhere, events, plan, SharedBuf, SECRET};
use crate::common::{read_events, read_json_file, read_run_record};
use bugatti::actors::reporter::{ReporterActor, ReporterArgs, ReporterMsg};
use bugatti::model::ids::{RunId, StepId};
use bugatti::model::options::SuiteCopy;
use bugatti::model::outcome::{RunOutcome, StepStatus};
use bugatti::model::redact::Secrets;
use bugatti::report::live::console::{LiveView, Verbosity};
use bugatti::report::records::events::{EventClock, EventKind, SetupState};
use bugatti::report::records::suite::SuiteSummary;
use bugatti::report::store::harness_log::HarnessLogs;
use quick_junit::{NonSuccessKind, Report, TestCaseStatus};
use ractor::{call, cast, ActorRef};
use tracing_subscriber::layer::SubscriberExt;

/// One global subscriber for this test binary: the reporter runs on tokio worker threads.
fn harness_logs() -> HarnessLogs {
    static LOGS: OnceLock<HarnessLogs> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = HarnessLogs::new();
        let subscriber = tracing_subscriber::registry().with(logs.layer());
        tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        logs
    })
    .clone()
}

fn secrets() -> Arc<Secrets> {
    Arc::new(Secrets::new([("API_TOKEN", SECRET)]))
}

struct Suite {
    reporter: ActorRef<ReporterMsg>,
    console: SharedBuf,
    artifacts: PathBuf,
    copies: (PathBuf, PathBuf),
}

async fn start_suite(root: &Path, strict: bool) -> Suite {
    let console = SharedBuf::default();
    let artifacts = root.join(".bugatti");
    let copies = (root.join("out/junit.xml"), root.join("out/summary.json"));
    std::fs::create_dir_all(root.join("out")).expect("out dir");
    let (reporter, _) = ReporterActor::spawn(ReporterArgs {
        suite_id: "suite-1".into(),
        artifact_dir: artifacts.clone(),
        root_tests: 6,
        jobs: 4,
        strict_warnings: strict,
        console: LiveView::plain_to(Box::new(console.clone()), Verbosity::Normal),
        secrets: secrets(),
        harness_logs: Some(harness_logs()),
        copies: vec![
            SuiteCopy {
                format: "junit".into(),
                path: copies.0.clone(),
            },
            SuiteCopy {
                format: "json".into(),
                path: copies.1.clone(),
            },
        ],
        extras: Default::default(),
    })
    .await
    .expect("spawn reporter");
    Suite {
        reporter,
        console,
        artifacts,
        copies,
    }
}

/// What one session does: start the run, trace inside its span, send its events, finish.
/// One simulated session: which run, how its last step and the run end, whether it finishes.
#[derive(Clone, Copy)]
struct Run {
    run_id: &'static str,
    test_file: &'static str,
    attempt: u32,
    last: StepStatus,
    outcome: RunOutcome,
    finish: bool,
}

fn run(
    run_id: &'static str,
    test_file: &'static str,
    attempt: u32,
    last: StepStatus,
    outcome: RunOutcome,
    finish: bool,
) -> Run {
    Run {
        run_id,
        test_file,
        attempt,
        last,
        outcome,
        finish,
    }
}

async fn session(reporter: ActorRef<ReporterMsg>, artifacts: PathBuf, run: Run) {
    let Run {
        run_id,
        test_file,
        attempt,
        last,
        outcome,
        finish,
    } = run;
    let plan = plan(&artifacts, run_id, test_file, attempt);
    let paths = call!(reporter, |reply| ReporterMsg::RunStarted {
        plan: Box::new(plan),
        secrets: secrets(),
        reply
    })
    .expect("reporter answers")
    .expect("run files created");
    assert!(paths.run_json().is_file() && paths.events().is_file());
    let span = tracing::info_span!("run", run_id = %run_id);
    let clock = EventClock::start();
    let mut evs = if outcome == RunOutcome::Error {
        vec![
            clock.event(EventKind::SetupStatus {
                command: "server".into(),
                state: SetupState::Failed {
                    reason: "readiness timed out after 60s".into(),
                    exit_code: None,
                },
            }),
            clock.event(EventKind::RunFinished {
                outcome,
                message: Some("setup failed: server readiness timed out".into()),
            }),
        ]
    } else {
        events(&clock, last, outcome)
    };
    if !finish {
        evs.truncate(6);
    }
    for ev in evs {
        {
            let _entered = span.enter();
            tracing::info!(secret = SECRET, "session {run_id} sends {}", ev.kind.name());
        }
        cast!(
            reporter,
            ReporterMsg::Event {
                run_id: RunId::new(run_id),
                event: ev
            }
        )
        .expect("cast");
        tokio::task::yield_now().await;
    }
    if finish {
        let files = call!(reporter, |reply| ReporterMsg::RunFinished {
            run_id: RunId::new(run_id),
            reply
        })
        .expect("reporter answers")
        .expect("files final");
        assert_eq!(files.outcome, outcome);
        // The reply means the files are final on disk.
        let record = read_run_record(&files.run_json);
        assert_eq!(record.outcome, Some(outcome));
        assert!(files.report_md.is_file());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_sessions_leave_every_file_and_a_suite_summary() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let suite = start_suite(tmp.path(), false).await;
    let a = &suite.artifacts;
    let r = &suite.reporter;
    // a fails then passes (flaky); b warns; c fails; d cannot set up; e is cut off; f never runs.
    session(
        r.clone(),
        a.clone(),
        run(
            "run-a1",
            "a.test.toml",
            1,
            StepStatus::Error,
            RunOutcome::Failed,
            true,
        ),
    )
    .await;
    let tasks = vec![
        tokio::spawn(session(
            r.clone(),
            a.clone(),
            run(
                "run-a2",
                "a.test.toml",
                2,
                StepStatus::Ok,
                RunOutcome::Warned,
                true,
            ),
        )),
        tokio::spawn(session(
            r.clone(),
            a.clone(),
            run(
                "run-b",
                "b.test.toml",
                1,
                StepStatus::Ok,
                RunOutcome::Warned,
                true,
            ),
        )),
        tokio::spawn(session(
            r.clone(),
            a.clone(),
            run(
                "run-c",
                "c.test.toml",
                1,
                StepStatus::Timeout,
                RunOutcome::Failed,
                true,
            ),
        )),
        tokio::spawn(session(
            r.clone(),
            a.clone(),
            run(
                "run-d",
                "d.test.toml",
                1,
                StepStatus::NotRun,
                RunOutcome::Error,
                true,
            ),
        )),
        tokio::spawn(session(
            r.clone(),
            a.clone(),
            run(
                "run-e",
                "e.test.toml",
                1,
                StepStatus::Ok,
                RunOutcome::Passed,
                false,
            ),
        )),
    ];
    for t in tasks {
        t.await.expect("session task");
    }
    cast!(
        suite.reporter,
        ReporterMsg::Notice {
            message: format!("SIGINT received while holding {SECRET}: stopping")
        }
    )
    .expect("cast");
    let files = call!(suite.reporter, |reply| ReporterMsg::SuiteFinished {
        not_run: vec!["f.test.toml".into()],
        harness_error: None,
        not_run_reason: None,
        reply
    })
    .expect("reporter answers")
    .expect("suite files");

    // Per run: events.jsonl holds every event of that run only, in order.
    for (run_id, expected) in [("run-a2", 16), ("run-c", 16), ("run-d", 3), ("run-e", 8)] {
        let lines = read_events(&a.join("runs").join(run_id).join("events.jsonl"));
        assert_eq!(lines.len(), expected, "{run_id}: {lines:#?}");
        assert!(
            matches!(&lines[0].kind, EventKind::RunStarted { run_id: id, .. } if id.as_str() == run_id),
            "{:?}",
            lines[0]
        );
        let last = lines.last().expect("last");
        assert_eq!(last.kind.name(), "run_finished", "{run_id}");
        let elapsed: Vec<u64> = lines[1..].iter().map(|l| l.elapsed_ms).collect();
        assert!(
            elapsed.windows(2).all(|w| w[0] <= w[1]),
            "{run_id} out of order"
        );
    }
    let e = read_run_record(&a.join("runs/run-e/run.json"));
    assert_eq!(e.outcome, Some(RunOutcome::Interrupted));
    assert_eq!(
        e.error.as_deref(),
        Some("the suite ended before this run finished")
    );
    assert!(a.join("runs/run-e/report.md").is_file());
    let d = std::fs::read_to_string(a.join("runs/run-d/report.md")).expect("d report");
    assert!(
        d.contains("**Outcome: ERROR**") && d.contains("readiness timed out"),
        "{d}"
    );

    // summary.json
    let summary: SuiteSummary = read_json_file(&files.summary_json);
    let tests = &summary.tests;
    assert_eq!(tests.len(), 5);
    let a_test = &tests[0];
    assert_eq!(a_test.test_file, "a.test.toml");
    assert_eq!(a_test.run_id.as_str(), "run-a2");
    assert_eq!(a_test.outcome, RunOutcome::Warned);
    assert_eq!(a_test.attempts, 2);
    assert!(a_test.flaky);
    assert!(!tests[1].flaky);
    let t = &summary.totals;
    assert_eq!(
        (
            t.total,
            t.passed,
            t.warned,
            t.failed,
            t.error,
            t.interrupted,
            t.flaky,
            t.not_run
        ),
        (6, 0, 2, 1, 1, 1, 1, 1)
    );
    assert_eq!(summary.not_run, ["f.test.toml"]);

    // junit.xml, parsed back.
    let xml = std::fs::read_to_string(&files.junit).expect("junit.xml");
    let report = Report::deserialize_from_str(&xml).expect("junit parses");
    assert_eq!(report.tests, 6);
    assert_eq!(report.failures, 1);
    assert_eq!(report.errors, 2);
    let suite_xml = &report.test_suites[0];
    let cases: Vec<_> = suite_xml.test_cases.iter().collect();
    assert_eq!(cases[0].name.as_str(), "a.test.toml");
    match &cases[0].status {
        TestCaseStatus::Success { flaky_runs } => {
            assert_eq!(flaky_runs.len(), 1);
            assert_eq!(flaky_runs[0].kind, NonSuccessKind::Failure);
        }
        other => panic!("a.test.toml should be a flaky success: {other:?}"),
    }
    let flaky = cases
        .iter()
        .filter(|c| matches!(&c.status, TestCaseStatus::Success { flaky_runs } if !flaky_runs.is_empty()))
        .count();
    assert_eq!(flaky, 1);
    match &cases[2].status {
        TestCaseStatus::NonSuccess { kind, message, .. } => {
            assert_eq!(*kind, NonSuccessKind::Failure);
            let msg = message.as_ref().map(|m| m.as_str()).unwrap_or("");
            assert!(msg.starts_with("step 3: no checkout button"), "{msg}");
        }
        other => panic!("c.test.toml should fail: {other:?}"),
    }
    match &cases[3].status {
        TestCaseStatus::NonSuccess { kind, message, .. } => {
            assert_eq!(*kind, NonSuccessKind::Error);
            let msg = message.as_ref().map(|m| m.as_str()).unwrap_or("");
            assert_eq!(msg, "setup failed: server readiness timed out");
        }
        other => panic!("d.test.toml should be an error: {other:?}"),
    }
    assert!(matches!(cases[5].status, TestCaseStatus::Skipped { .. }));
    let out = cases[2]
        .system_out
        .as_ref()
        .map(|s| s.as_str().to_string())
        .unwrap_or_default();
    assert!(out.contains("  3. timeout"), "{out}");
    assert!(out.contains("  2. warn"), "{out}");

    // Copies, identical.
    assert_eq!(
        files.copies,
        vec![suite.copies.0.clone(), suite.copies.1.clone()]
    );
    assert_eq!(
        std::fs::read_to_string(&suite.copies.0).expect("junit copy"),
        xml
    );
    // The same summary, but the `--json` copy (elsewhere) names the run reports by absolute path
    // and the suite folder's own summary.json relative to that folder.
    let parse = |path: &std::path::Path| -> bugatti::report::records::suite::SuiteSummary {
        serde_json::from_slice(&std::fs::read(path).expect("summary")).expect("a summary")
    };
    let (copy, local) = (parse(&suite.copies.1), parse(&files.summary_json));
    assert_ne!(copy, local, "the suite folder's summary.json is relative");
    let suite_dir =
        std::path::absolute(files.summary_json.parent().expect("suite dir")).expect("absolute");
    assert_eq!(copy.with_paths_relative_to(&suite_dir), local);
    let md = std::fs::read_to_string(&files.summary_md).expect("summary.md");
    assert!(md.contains("| `a.test.toml` | warned | 2 | yes |"), "{md}");
    assert!(
        md.contains("## Not run") && md.contains("`f.test.toml`"),
        "{md}"
    );

    // Harness logs: each run's tracing in its own file.
    let a2_log = std::fs::read_to_string(a.join("runs/run-a2/diagnostics/harness.log"))
        .expect("harness.log");
    assert!(
        a2_log.contains("session run-a2 sends step_finished"),
        "{a2_log}"
    );
    assert!(!a2_log.contains("session run-b"), "{a2_log}");
    assert!(a2_log.contains("secret=[REDACTED:API_TOKEN]"), "{a2_log}");

    // Console: event lines, final lines with run id and report path, the aggregate summary.
    let console = suite.console.text();
    for needle in [
        "Running 6 root tests, 4 at once (suite suite-1)",
        "SETUP server ........ restarted (#1) after exit status 1",
        "SETUP server ........ ready (http://127.0.0.1:8000/health)",
        "STEP 2 ........ Step 2",
        "LOG ........ cart total is 0, token [REDACTED:API_TOKEN]",
        "STEP 2 ........ WARN (",
        "): cart slow to load",
        "TIMEOUT (30ms): no checkout button ([REDACTED:API_TOKEN])",
        "STEP 3 ........ TIMEOUT (",
        "SETUP server ........ FAILED: readiness timed out after 60s",
        "Summary: 6 root tests in ",
        "0 passed, 2 warned, 1 failed, 1 error, 1 interrupted, 1 not run, 1 flaky",
        "FLAKY       a.test.toml passed on attempt 2",
        "SIGINT received while holding [REDACTED:API_TOKEN]: stopping",
    ] {
        // A long line wraps at 80 columns: compare with the wraps undone.
        assert!(
            console.contains(needle) || console.replace('\n', " ").contains(needle),
            "console lacks {needle:?}:\n{console}"
        );
    }
    for (word, file, run_id) in [
        ("FAILED", "c.test.toml", "run-c"),
        ("WARNED", "b.test.toml", "run-b"),
        ("ERROR", "d.test.toml", "run-d"),
        ("INTERRUPTED", "e.test.toml", "run-e"),
    ] {
        let report = a.join("runs").join(run_id).join("report.md");
        // One line: the outcome and the report path (which names the run id).
        let line = format!("{word:<11} {file}");
        let path = report.display().to_string();
        assert!(
            console
                .lines()
                .any(|l| l.contains(&line) && l.ends_with(&path)),
            "console lacks {line:?} … {path:?}:\n{console}"
        );
    }

    // No secret anywhere: every file written, and the console.
    let n = assert_absent_everywhere(tmp.path(), SECRET);
    assert!(n >= 5 * 3 + 3 + 2, "only {n} files");
    assert!(!console.contains(SECRET));
    assert!(all_files(tmp.path()).iter().all(|f| !f
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(".tmp-"))));
    suite.reporter.stop(None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_warnings_make_a_warned_test_a_junit_failure() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let suite = start_suite(tmp.path(), true).await;
    session(
        suite.reporter.clone(),
        suite.artifacts.clone(),
        run(
            "run-s",
            "s.test.toml",
            1,
            StepStatus::Ok,
            RunOutcome::Warned,
            true,
        ),
    )
    .await;
    let files = call!(suite.reporter, |reply| ReporterMsg::SuiteFinished {
        not_run: vec![],
        harness_error: None,
        not_run_reason: None,
        reply
    })
    .expect("answer")
    .expect("files");
    let report = Report::deserialize_from_str(&std::fs::read_to_string(files.junit).expect("xml"))
        .expect("parse");
    assert_eq!((report.tests, report.failures, report.errors), (1, 1, 0));
    suite.reporter.stop(None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unwritable_run_directory_is_an_error_reply_naming_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let suite = start_suite(tmp.path(), false).await;
    // A file where the runs directory must be: the run cannot start, and the reply says where.
    std::fs::create_dir_all(&suite.artifacts).expect("artifacts");
    std::fs::write(suite.artifacts.join("runs"), b"not a dir").expect("block");
    let plan = plan(&suite.artifacts, "run-x", "x.test.toml", 1);
    let err = call!(suite.reporter, |reply| ReporterMsg::RunStarted {
        plan: Box::new(plan),
        secrets: secrets(),
        reply
    })
    .expect("reporter answers")
    .expect_err("cannot create the run directory");
    assert!(err.to_string().contains("runs/run-x"), "{err}");
    // Events and the end of an unknown run do not stop the reporter.
    cast!(
        suite.reporter,
        ReporterMsg::Event {
            run_id: "run-x".into(),
            event: EventClock::start().event(EventKind::AgentLog {
                step_id: StepId::new(1),
                message: "late".into()
            })
        }
    )
    .expect("cast");
    let unknown = call!(suite.reporter, |reply| ReporterMsg::RunFinished {
        run_id: "run-x".into(),
        reply
    })
    .expect("reporter still answers");
    assert!(unknown.is_err());
    let files = call!(suite.reporter, |reply| ReporterMsg::SuiteFinished {
        not_run: vec!["x.test.toml".into()],
        harness_error: None,
        not_run_reason: None,
        reply
    })
    .expect("answer")
    .expect("suite files");
    // It did run, and failed to: an error in the summary, not a test that never started.
    assert_eq!(files.summary.totals.not_run, 0);
    assert_eq!(files.summary.totals.error, 1);
    assert!(files.summary.tests[0]
        .message
        .as_deref()
        .is_some_and(|m| m.contains("cannot create the run directory")));
    assert!(
        files.notes.iter().any(|n| n.contains("run-x")),
        "{:?}",
        files.notes
    );
    suite.reporter.stop(None);
}

/// A session written against the `RunReporter` handle, fed by a real `sh` process that plays the
/// agent: its `BUGATTI_LOG` / `BUGATTI_EVIDENCE` / `RESULT` lines become events. The secret comes
/// from the process's environment and must not reach any file or console line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_reporter_handle_records_a_real_process_step() {
    use bugatti::actors::reporter::{finish_suite, RunReporter};
    use bugatti::report::records::events::{summarize_instruction, Provenance};
    use tokio::io::{AsyncBufReadExt, BufReader};

    let tmp = tempfile::tempdir().expect("tempdir");
    let suite = start_suite(tmp.path(), false).await;
    let mut p = plan(&suite.artifacts, "run-sh", "sh.test.toml", 1);
    p.steps.truncate(1);
    let run = RunReporter::start(&suite.reporter, p.clone(), secrets())
        .await
        .expect("run opened");
    assert!(run.paths().events().is_file());
    let marker = format!("bugatti-report-test-{}", std::process::id());
    let script = r#"
        echo "thinking about it"
        echo "BUGATTI_LOG cart page answered with token $TOKEN"
        mkdir -p "$RUN_DIR/screenshots" && echo png > "$RUN_DIR/screenshots/cart.png"
        echo "BUGATTI_EVIDENCE screenshot screenshots/cart.png"
        echo "RESULT WARN: total shown as $TOKEN"
    "#;
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("TOKEN", SECRET)
        .env("RUN_DIR", &p.identity.run_dir)
        .env("BUGATTI_TEST_MARKER", &marker)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn sh");
    let pid = child.id().expect("pid");
    run.emit(EventKind::StepStarted {
        step_id: StepId::new(1),
        instruction: summarize_instruction(&p.steps[0].instruction, 80),
        instruction_sent: None,
        provenance: Provenance {
            source_file: "sh.test.toml".into(),
            source_index: 0,
            include_chain: vec![],
        },
    })
    .expect("emit");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut verdict = None;
    while let Some(line) = lines.next_line().await.expect("read") {
        if let Some(msg) = line.strip_prefix("BUGATTI_LOG ") {
            run.emit(EventKind::AgentLog {
                step_id: StepId::new(1),
                message: msg.to_string(),
            })
            .expect("emit");
        } else if let Some(rest) = line.strip_prefix("BUGATTI_EVIDENCE ") {
            let (kind, path) = rest.split_once(' ').expect("kind and path");
            run.emit(EventKind::Evidence {
                step_id: StepId::new(1),
                kind: kind.into(),
                path: path.into(),
                problem: None,
            })
            .expect("emit");
        } else if let Some(msg) = line.strip_prefix("RESULT WARN: ") {
            verdict = Some(msg.to_string());
        }
    }
    let status = child.wait().await.expect("wait");
    assert!(status.success());
    run.emit(EventKind::StepFinished {
        step_id: StepId::new(1),
        status: StepStatus::Warn,
        message: verdict,
        duration_ms: u64::try_from(run.clock().elapsed().as_millis()).unwrap_or(0),
        usage: None,
        replay: None,
    })
    .expect("emit");
    let files = run
        .finish(RunOutcome::Warned, None)
        .await
        .expect("files final");
    let md = std::fs::read_to_string(&files.report_md).expect("report.md");
    assert!(md.contains("### Step 1: WARN"), "{md}");
    assert!(md.contains("total shown as [REDACTED:API_TOKEN]"), "{md}");
    assert!(
        md.contains("- cart page answered with token [REDACTED:API_TOKEN]"),
        "{md}"
    );
    assert!(
        md.contains("- screenshot: [`screenshots/cart.png`](screenshots/cart.png)\n"),
        "evidence present on disk: {md}"
    );
    let suite_files = finish_suite(&suite.reporter, vec![]).await.expect("suite");
    assert_eq!(suite_files.summary.totals.warned, 1);
    assert_absent_everywhere(tmp.path(), SECRET);
    assert!(!suite.console.text().contains(SECRET));
    // The process is gone, and nothing carrying our marker survives.
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
    assert!(
        bugatti::process::group::live_processes_with_env("BUGATTI_TEST_MARKER", &marker).is_empty()
    );
    suite.reporter.stop(None);
}

/// Many sessions sending many events at once: each run's events.jsonl holds exactly its own
/// events, in the order its session sent them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sessions_keep_their_own_event_order() {
    use bugatti::actors::reporter::{finish_suite, RunReporter};

    const SESSIONS: usize = 8;
    const LOGS: usize = 200;
    let tmp = tempfile::tempdir().expect("tempdir");
    let suite = start_suite(tmp.path(), false).await;
    let mut tasks = Vec::new();
    for i in 0..SESSIONS {
        let reporter = suite.reporter.clone();
        let artifacts = suite.artifacts.clone();
        tasks.push(tokio::spawn(async move {
            let run_id = format!("run-{i}");
            let p = plan(&artifacts, &run_id, &format!("t{i}.test.toml"), 1);
            let run = RunReporter::start(&reporter, p, secrets())
                .await
                .expect("start");
            for n in 0..LOGS {
                run.emit(EventKind::AgentLog {
                    step_id: StepId::new(1),
                    message: format!("{run_id} message {n}"),
                })
                .expect("emit");
                if n % 16 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            run.finish(RunOutcome::Passed, None).await.expect("finish")
        }));
    }
    for t in tasks {
        let files = t.await.expect("task");
        let lines = read_events(&files.events);
        assert_eq!(lines.len(), LOGS + 2);
        for (n, line) in lines[1..=LOGS].iter().enumerate() {
            let expected = format!("{} message {n}", files.run_id);
            assert!(
                matches!(&line.kind, EventKind::AgentLog { message, .. } if *message == expected),
                "{line:?}"
            );
        }
        let record = read_run_record(&files.run_json);
        assert_eq!(record.steps[0].logs.len(), LOGS);
    }
    let files = finish_suite(&suite.reporter, vec![]).await.expect("suite");
    assert_eq!(files.summary.totals.passed, SESSIONS);
    suite.reporter.stop(None);
}
