//! The console: plain one-line-per-event output at each verbosity, and the live view drawn to a
//! captured terminal. Every line redacted.

use std::io;
use std::sync::{Arc, Mutex};

use crate::common::report::{events, plan, SharedBuf, SECRET};
use bugatti::model::ids::{RunId, StepId, SuiteId};
use bugatti::model::outcome::{RunOutcome, StepStatus};
use bugatti::model::redact::Secrets;
use bugatti::report::ground::scrub::Redactor;
use bugatti::report::live::console::{LiveView, Verbosity};
use bugatti::report::records::events::EventClock;
use bugatti::report::records::run_record::RunRecord;
use bugatti::report::records::suite::SuiteSummary;
use indicatif::{ProgressDrawTarget, TermLike};

fn redactor() -> Redactor {
    Redactor::new([Arc::new(Secrets::new([("API_TOKEN", SECRET)]))])
}

/// Plays one run (step 3 ends as `last`) through `console`; returns the final record.
fn play(console: &mut LiveView, last: StepStatus, outcome: RunOutcome) -> (RunRecord, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(
        &dir.path().join(".bugatti"),
        "0192-abcdef",
        "shop/cart.test.toml",
        1,
    );
    let mut record = RunRecord::from_plan(&plan);
    let r = redactor();
    console.run_started(&plan.identity.run_id, &plan.identity.test_file);
    let clock = EventClock::start();
    for ev in events(&clock, last, outcome) {
        record.apply(&ev);
        console.run_event(&plan.identity.run_id, &ev, &r);
    }
    let report = format!("{}/report.md", plan.identity.run_dir);
    console.run_finished(&record, &report, &r);
    (record, report)
}

fn summary(records: &[RunRecord]) -> SuiteSummary {
    let now = chrono::Utc::now();
    SuiteSummary::build(&SuiteId::new("suite-9"), now, now, false, records, &[])
}

#[test]
fn plain_normal_prints_one_line_per_event_and_the_final_lines() {
    let buf = SharedBuf::default();
    let mut console = LiveView::plain_to(Box::new(buf.clone()), Verbosity::Normal);
    let (record, report) = play(&mut console, StepStatus::Error, RunOutcome::Failed);
    console.suite_finished(&summary(&[record]), "/x/summary.md", &redactor());
    let text = buf.text();
    let expected = [
        "[cart abcdef] SETUP seed ........ skipped",
        "[cart abcdef] SETUP server ........ started",
        "[cart abcdef] SETUP server ........ restarted (#1) after exit status 1",
        "[cart abcdef] SETUP server ........ ready (http://127.0.0.1:8000/health)",
        "[cart abcdef] STEP 1 ........ Step 1",
        "[cart abcdef] STEP 1 ........ OK (10ms)",
        "[cart abcdef] STEP 2 ........ Step 2",
        "[cart abcdef] LOG ........ cart total is 0, token [REDACTED:API_TOKEN]",
        "[cart abcdef] STEP 2 ........ WARN (20ms, $0.0123): cart slow to load",
        "[cart abcdef] STEP 3 ........ Step 3",
        "[cart abcdef] LOG ........ button missing",
        "[cart abcdef] STEP 3 ........ ERROR (30ms): no checkout button ([REDACTED:API_TOKEN])",
    ]
    .join("\n");
    assert!(text.starts_with(&expected), "got:\n{text}");
    // The outcome and the report path (which names the run id) on one line, then the failing step.
    // (The duration is the test's own clock, a few ms on a busy machine: any number is taken.)
    let final_lines = regex::Regex::new(&format!(
        r"FAILED      shop/cart\.test\.toml  \d+ms  {}\n      step 3: no checkout button \(\[REDACTED:API_TOKEN\]\)\n",
        regex::escape(&report)
    ))
    .expect("pattern");
    assert!(final_lines.is_match(&text), "{text}");
    assert!(
        text.contains("Summary: 1 root tests in 0ms: 0 passed, 1 failed; agent cost $0.0123\n"),
        "{text}"
    );
    assert!(text.contains("Suite report: /x/summary.md"));
    // A clean teardown is a detail for -v.
    assert!(!text.contains("TEARDOWN"), "{text}");
    assert!(!text.contains(SECRET));
    assert!(!text.contains('\u{1b}'), "no escape codes off a terminal");
}

#[test]
fn quiet_prints_only_final_lines_and_summary_and_verbose_adds_details() {
    let buf = SharedBuf::default();
    let mut console = LiveView::plain_to(Box::new(buf.clone()), Verbosity::Quiet);
    let (record, _) = play(&mut console, StepStatus::Ok, RunOutcome::Warned);
    console.suite_finished(&summary(&[record]), "/x/summary.md", &redactor());
    let quiet = buf.text();
    let lines: Vec<&str> = quiet.lines().collect();
    assert_eq!(lines.len(), 2, "{quiet}");
    assert!(lines[0].starts_with("WARNED      shop/cart.test.toml"));
    assert!(lines[0].ends_with("/0192-abcdef/report.md"), "{quiet}");
    assert!(lines[1].starts_with("Summary: 1 root tests"));

    let buf = SharedBuf::default();
    let mut console = LiveView::plain_to(Box::new(buf.clone()), Verbosity::Verbose);
    play(&mut console, StepStatus::Ok, RunOutcome::Warned);
    let verbose = buf.text();
    assert!(verbose.contains("[cart abcdef] EVIDENCE 2 ........ screenshot screenshots/cart.png"));
    assert!(verbose.contains("[cart abcdef] TEARDOWN server ........ clean"));
    assert!(!verbose.contains(SECRET));
}

/// A terminal that records what indicatif writes.
#[derive(Debug, Clone, Default)]
struct CapturedTerm(Arc<Mutex<String>>);

impl CapturedTerm {
    fn text(&self) -> String {
        self.0.lock().expect("lock").clone()
    }
}

impl TermLike for CapturedTerm {
    fn width(&self) -> u16 {
        120
    }
    fn move_cursor_up(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_down(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_right(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_left(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn write_line(&self, s: &str) -> io::Result<()> {
        let mut t = self.0.lock().expect("lock");
        t.push_str(s);
        t.push('\n');
        Ok(())
    }
    fn write_str(&self, s: &str) -> io::Result<()> {
        self.0.lock().expect("lock").push_str(s);
        Ok(())
    }
    fn clear_line(&self) -> io::Result<()> {
        Ok(())
    }
    fn flush(&self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn live_view_shows_each_running_session_and_prints_results_above() {
    let term = CapturedTerm::default();
    let mut console = LiveView::live_to(
        ProgressDrawTarget::term_like(Box::new(term.clone())),
        Verbosity::Normal,
    );
    let r = redactor();
    let dir = tempfile::tempdir().expect("tempdir");
    let a = plan(&dir.path().join(".bugatti"), "run-aaaaaa", "a.test.toml", 1);
    let b = plan(&dir.path().join(".bugatti"), "run-bbbbbb", "b.test.toml", 1);
    console.run_started(&a.identity.run_id, &a.identity.test_file);
    console.run_started(&b.identity.run_id, &b.identity.test_file);
    assert_eq!(
        console.live_lines(),
        vec!["a aaaaaa setting up", "b bbbbbb setting up"]
    );
    let clock = EventClock::start();
    let evs = events(&clock, StepStatus::Error, RunOutcome::Failed);
    // a is at its second step; b has only started its server.
    let mut record_a = RunRecord::from_plan(&a);
    for ev in evs.iter().take(7) {
        record_a.apply(ev);
        console.run_event(&a.identity.run_id, ev, &r);
    }
    console.run_event(&b.identity.run_id, &evs[1], &r);
    assert_eq!(
        console.live_lines(),
        vec!["a aaaaaa step 2: Step 2", "b bbbbbb setup: server"]
    );
    for ev in evs.iter().skip(7) {
        record_a.apply(ev);
        console.run_event(&a.identity.run_id, ev, &r);
    }
    console.run_finished(&record_a, "/r/a/report.md", &r);
    assert_eq!(console.live_lines(), vec!["b bbbbbb setup: server"]);
    console.suite_finished(&summary(&[record_a]), "/x/summary.md", &r);
    assert!(console.live_lines().is_empty());
    let raw = term.text();
    assert!(
        raw.contains("\u{1b}["),
        "final lines are coloured on a terminal"
    );
    let drawn = strip_ansi_escapes::strip_str(&raw);
    // Results worth reading are printed above the bars; routine lines are not.
    assert!(
        drawn.contains("STEP 2 ........ WARN (20ms, $0.0123): cart slow to load"),
        "{drawn}"
    );
    assert!(
        drawn.contains("STEP 3 ........ ERROR (30ms): no checkout button ([REDACTED:API_TOKEN])")
    );
    assert!(drawn.contains("FAILED      a.test.toml"));
    assert!(
        drawn
            .lines()
            .any(|l| l.contains("FAILED      a.test.toml") && l.contains("  /r/a/report.md")),
        "{drawn}"
    );
    assert!(drawn.contains("Summary: 1 root tests"), "{drawn}");
    assert!(!drawn.contains("STEP 1 ........ OK"), "{drawn}");
    assert!(!drawn.contains(SECRET));
}

/// A command's status says when it came relative to the steps: a first `ready` that reaches the
/// console after step 1 began is the setup's (the harness is up before any step), news while a
/// step runs is `during step N`, news between steps is `after step N`.
#[test]
fn a_command_line_says_whether_it_came_before_during_or_after_a_step() {
    use bugatti::report::records::events::{EventKind, Provenance, SetupState};
    let buf = SharedBuf::default();
    let mut console = LiveView::plain_to(Box::new(buf.clone()), Verbosity::Normal);
    let run_id = &RunId::new("0192-abcdef");
    console.run_started(run_id, "c.test.toml");
    let clock = EventClock::start();
    let status = |command: &str, state: SetupState| EventKind::SetupStatus {
        command: command.into(),
        state,
    };
    let ready = |probe: &str| SetupState::Ready {
        probe: probe.into(),
    };
    let kinds = [
        status("server", SetupState::Started),
        EventKind::StepStarted {
            step_id: StepId::new(1),
            instruction: "Step 1".into(),
            instruction_sent: None,
            provenance: Provenance {
                source_file: "t.test.toml".into(),
                source_index: 0,
                include_chain: vec![],
            },
        },
        // Late news of the setup: the step cannot have started before the server was ready.
        status("server", ready("http http://127.0.0.1:8000/")),
        status(
            "server",
            SetupState::Restarted {
                attempt: 1,
                exit_status: "exit 1".into(),
            },
        ),
        status("server", ready("again after restart 1")),
        EventKind::StepFinished {
            step_id: StepId::new(1),
            status: StepStatus::Ok,
            message: None,
            duration_ms: 10,
            usage: None,
            replay: None,
        },
        status("worker", SetupState::Exited { exit_code: Some(7) }),
    ];
    for kind in kinds {
        console.run_event(run_id, &clock.event(kind), &redactor());
    }
    let text = buf.text();
    let expected = [
        "[c abcdef] SETUP server ........ started",
        "[c abcdef] STEP 1 ........ Step 1",
        "[c abcdef] SETUP server ........ ready (http http://127.0.0.1:8000/)",
        "[c abcdef] COMMAND server ........ during step 1: restarted (#1) after exit 1",
        "[c abcdef] COMMAND server ........ during step 1: ready (again after restart 1)",
        "[c abcdef] STEP 1 ........ OK (10ms)",
        "[c abcdef] COMMAND worker ........ after step 1: exited with 7",
    ]
    .join("\n");
    assert!(text.starts_with(&expected), "got:\n{text}");
}
