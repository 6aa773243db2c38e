//! The files of one run, built from event sequences as a session would send them: run.json,
//! events.jsonl, report.md; atomic rewrites; redaction; a report written when a part fails.

use std::sync::Arc;

use crate::common::read_events;
use crate::common::read_run_record;
use crate::common::records::{CommandStatus, TeardownState};
use crate::common::report::{assert_absent_everywhere, events, plan, SECRET};
use bugatti::model::ids::StepId;
use bugatti::model::outcome::{RunOutcome, StepStatus};
use bugatti::model::redact::Secrets;
use bugatti::report::ground::scrub::Redactor;
use bugatti::report::records::events::{Event, EventClock, EventKind};
use bugatti::report::records::run_record::RunRecord;
use bugatti::report::renderers::markdown::{ReportInput, Section, SectionError, SECTIONS};
use bugatti::report::store::run_writer::RunWriter;
use serde_json::Value;

fn redactor() -> Redactor {
    Redactor::new([Arc::new(Secrets::new([("API_TOKEN", SECRET)]))])
}

fn run_json(dir: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(dir.join("run.json")).expect("run.json");
    serde_json::from_str(&text).expect("run.json is valid JSON")
}

#[test]
fn failed_run_leaves_complete_run_json_events_and_report() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let artifacts = tmp.path().join(".bugatti");
    let plan = plan(&artifacts, "run-failed", "checkout.test.toml", 1);
    let run_dir = std::path::PathBuf::from(&plan.identity.run_dir);
    let mut writer = RunWriter::start(&plan, redactor()).expect("start");

    // Before anything is launched: the directory tree and a run.json with every step not_run.
    for sub in ["diagnostics", "transcripts", "logs", "screenshots"] {
        assert!(run_dir.join(sub).is_dir(), "{sub} missing");
    }
    let initial = read_run_record(&run_dir);
    assert_eq!(initial.outcome, None);
    assert!(initial.steps.iter().all(|s| s.status == StepStatus::NotRun));

    std::fs::write(run_dir.join("screenshots/cart.png"), b"png").expect("evidence file");
    let clock = EventClock::start();
    let evs: Vec<Event> = events(&clock, StepStatus::Error, RunOutcome::Failed);
    for (i, ev) in evs.iter().enumerate() {
        writer.apply(ev).expect("apply");
        // run.json is whole and valid after every event: it is only ever replaced atomically.
        let _ = run_json(&run_dir);
        // events.jsonl is on disk as soon as the event is applied (run_started + i + 1 lines).
        let on_disk = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
        assert_eq!(on_disk.lines().count(), i + 2);
    }
    let (record, files) = writer.finish();
    let files = files.expect("final files");
    assert_eq!(files.outcome, RunOutcome::Failed);
    assert!(files.notes.is_empty(), "{:?}", files.notes);
    assert_eq!(record.outcome, Some(RunOutcome::Failed));

    // run.json: every docs/reports.md field.
    let json = run_json(&run_dir);
    for key in [
        "run_id",
        "session_id",
        "suite_id",
        "test_file",
        "test_name",
        "project_root",
        "provider",
        "started_at",
        "finished_at",
        "duration_ms",
        "outcome",
        "skipped_commands",
        "steps",
        "commands",
        "effective_config",
        "attempt",
    ] {
        assert!(json.get(key).is_some(), "run.json lacks {key}");
    }
    let record = read_run_record(&run_dir);
    assert_eq!(record.identity.run_id.as_str(), "run-failed");
    assert_eq!(record.outcome, Some(RunOutcome::Failed));
    assert_eq!(record.skipped_commands, ["seed"]);
    let steps = json.get("steps").and_then(Value::as_array).expect("steps");
    assert_eq!(steps.len(), 3);
    for key in [
        "step_id",
        "source_file",
        "source_index",
        "include_chain",
        "instruction",
        "status",
        "message",
        "duration_ms",
        "logs",
        "evidence",
    ] {
        assert!(steps[0].get(key).is_some(), "step lacks {key}");
    }
    assert_eq!(
        record.steps.iter().map(|s| s.status).collect::<Vec<_>>(),
        [StepStatus::Ok, StepStatus::Warn, StepStatus::Error]
    );
    let login = &record.steps[1];
    assert_eq!(login.provenance.source_file, "shared/login.test.toml");
    assert_eq!(login.provenance.include_chain, ["checkout.test.toml"]);
    assert_eq!(login.logs, ["cart total is 0, token [REDACTED:API_TOKEN]"]);
    assert_eq!(login.evidence[0].kind, "screenshot");
    let usage = login.usage.as_ref().expect("usage");
    assert_eq!(usage.session_id.as_deref(), Some("claude-abc"));
    assert_eq!(usage.turns, Some(4));
    let server = &record.commands[0];
    assert_eq!(
        (server.name.as_str(), server.kind.as_str(), server.status),
        ("server", "long_lived", CommandStatus::Ready)
    );
    assert_eq!(server.restarts.len(), 1);
    assert_eq!(server.log, "logs/server.log");
    assert_eq!(server.teardown, Some(TeardownState::Clean));
    assert_eq!(record.commands[1].status, CommandStatus::Skipped);
    assert_eq!(record.effective_config[0].source, "project");
    assert_eq!(record.effective_config[1].value, "[REDACTED:API_TOKEN]");

    // events.jsonl: run_started first, then every event in order, one object per line.
    let lines = read_events(&run_dir.join("events.jsonl"));
    assert_eq!(lines.len(), evs.len() + 1);
    assert_eq!(lines[0].kind.name(), "run_started");
    let types: Vec<&str> = lines[1..].iter().map(|l| l.kind.name()).collect();
    let expected: Vec<&str> = evs.iter().map(|e| e.kind.name()).collect();
    assert_eq!(types, expected);
    assert!(
        matches!(
            lines.last().map(|l| &l.kind),
            Some(EventKind::RunFinished {
                outcome: RunOutcome::Failed,
                ..
            })
        ),
        "{:?}",
        lines.last()
    );

    // report.md: ids, provider, skip list, ordered steps, WARN/ERROR logs and evidence, commands,
    // artifacts, config with sources.
    let md = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    for needle in [
        "# Bugatti run: Test checkout.test.toml",
        "**Outcome: FAILED**",
        "| run id | `run-failed` |",
        "| test file | `checkout.test.toml` |",
        "| provider | shell |",
        "| started |",
        "| finished |",
        "## Skipped commands",
        "- `seed`",
        "| 2 | WARN |",
        "shared/login.test.toml#2 (via checkout.test.toml)",
        "### Step 2: WARN",
        "cart slow to load",
        "- cart total is 0, token [REDACTED:API_TOKEN]",
        "- screenshot: [`screenshots/cart.png`](screenshots/cart.png)",
        "Usage: session claude-abc, 4 turns",
        "### Step 3: ERROR",
        "- button missing",
        "| reason | step 3: no checkout button ([REDACTED:API_TOKEN]) |",
        "| server | long_lived | test | ready | — | #1 after exit status 1 | clean | [`logs/server.log`](logs/server.log) |",
        "## Artifacts",
        "- [`events.jsonl`](events.jsonl)",
        "- [`run.json`](run.json)",
        "- [`report.md`](report.md)",
        "| `provider.name` | shell | project |",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle:?}:\n{md}");
    }
    let step_rows: Vec<usize> = ["| 1 | OK |", "| 2 | WARN |", "| 3 | ERROR |"]
        .iter()
        .map(|n| md.find(n).expect("step row"))
        .collect();
    assert!(
        step_rows.windows(2).all(|w| w[0] < w[1]),
        "steps out of order"
    );
    assert!(!md.contains("## Notes"), "{md}");

    // Redaction, byte by byte, over every file of the run.
    assert!(assert_absent_everywhere(&run_dir, SECRET) >= 3);
}

#[test]
fn interrupted_run_marks_the_started_step_interrupted_and_keeps_the_rest_not_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let plan = plan(&tmp.path().join(".bugatti"), "run-int", "a.test.toml", 1);
    let mut writer = RunWriter::start(&plan, Redactor::default()).expect("start");
    let clock = EventClock::start();
    // Only the first six events (through step 2 starting), then the interruption.
    let evs = events(&clock, StepStatus::Ok, RunOutcome::Passed);
    for ev in evs.iter().take(7) {
        writer.apply(ev).expect("apply");
    }
    writer
        .apply(
            &clock.event(bugatti::report::records::events::EventKind::RunFinished {
                outcome: RunOutcome::Interrupted,
                message: Some("SIGINT".into()),
            }),
        )
        .expect("apply");
    let (record, files) = writer.finish();
    files.expect("files");
    assert_eq!(record.outcome, Some(RunOutcome::Interrupted));
    assert_eq!(record.steps[1].status, StepStatus::Interrupted);
    assert_eq!(
        record.steps[1].message.as_deref(),
        Some("started but did not finish: run interrupted")
    );
    assert_eq!(record.steps[2].status, StepStatus::NotRun);
    assert_eq!(record.error.as_deref(), Some("SIGINT"));
    let md =
        std::fs::read_to_string(std::path::Path::new(&plan.identity.run_dir).join("report.md"))
            .expect("report.md");
    assert!(md.contains("**Outcome: INTERRUPTED**"), "{md}");
    assert!(md.contains("| reason | SIGINT |"), "{md}");
}

#[test]
fn a_run_that_never_reports_its_end_is_closed_as_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let plan = plan(&tmp.path().join(".bugatti"), "run-lost", "a.test.toml", 1);
    let writer = RunWriter::start(&plan, Redactor::default()).expect("start");
    let (record, files) = writer.finish();
    assert_eq!(files.expect("files").outcome, RunOutcome::Error);
    let json = read_run_record(std::path::Path::new(&plan.identity.run_dir));
    assert_eq!(json.outcome, Some(RunOutcome::Error));
    assert_eq!(
        json.error.as_deref(),
        Some("the run ended without reporting an outcome")
    );
    assert_eq!(record.steps.len(), 3);
}

fn broken(_: &ReportInput<'_>) -> Result<String, SectionError> {
    Err(SectionError::Format(std::fmt::Error))
}

fn panicking(_: &ReportInput<'_>) -> Result<String, SectionError> {
    panic!("renderer bug")
}

#[test]
fn report_md_is_still_written_when_a_part_fails() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let plan = plan(&tmp.path().join(".bugatti"), "run-part", "a.test.toml", 1);
    let mut writer = RunWriter::start(&plan, redactor()).expect("start");
    let clock = EventClock::start();
    for ev in events(&clock, StepStatus::Ok, RunOutcome::Warned) {
        writer.apply(&ev).expect("apply");
    }
    let mut sections: Vec<Section> = SECTIONS.to_vec();
    sections.insert(1, ("broken part", broken));
    sections.insert(3, ("buggy part", panicking));
    let (_, files) = writer.finish_with_sections(&sections);
    files.expect("files");
    let md =
        std::fs::read_to_string(std::path::Path::new(&plan.identity.run_dir).join("report.md"))
            .expect("report.md");
    assert!(md.contains("**Outcome: WARNED**"), "{md}");
    assert!(
        md.contains("## Steps") && md.contains("## Effective config"),
        "{md}"
    );
    assert!(md.contains("## Notes"), "{md}");
    assert!(
        md.contains(&format!(
            "- the broken part section could not be written: {}",
            std::fmt::Error
        )),
        "{md}"
    );
    assert!(
        md.contains("- the buggy part section could not be written: renderer bug"),
        "{md}"
    );
}

#[test]
fn run_json_write_failure_is_reported_and_the_rest_still_written() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let plan = plan(&tmp.path().join(".bugatti"), "run-bad", "a.test.toml", 1);
    let run_dir = std::path::PathBuf::from(&plan.identity.run_dir);
    let mut writer = RunWriter::start(&plan, Redactor::default()).expect("start");
    // A directory where run.json must go: the atomic rename cannot replace it (even as root).
    std::fs::remove_file(run_dir.join("run.json")).expect("rm");
    std::fs::create_dir(run_dir.join("run.json")).expect("mkdir");
    std::fs::write(run_dir.join("run.json/keep"), b"x").expect("fill");
    let clock = EventClock::start();
    let mut errors = 0;
    for ev in events(&clock, StepStatus::Ok, RunOutcome::Warned) {
        if writer.apply(&ev).is_err() {
            errors += 1;
        }
    }
    assert!(errors > 0);
    let (record, files) = writer.finish();
    let err = files.expect_err("run.json cannot be written");
    assert!(err.to_string().contains("run.json"), "{err}");
    assert_eq!(record.outcome, Some(RunOutcome::Warned));
    let md = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md still written");
    assert!(
        md.contains("## Notes") && md.contains("cannot write"),
        "{md}"
    );
    assert!(md.contains("| 3 | OK |"), "{md}");
}

#[test]
fn run_record_round_trips_through_run_json() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let plan = plan(&tmp.path().join(".bugatti"), "run-rt", "a.test.toml", 2);
    let mut writer = RunWriter::start(&plan, Redactor::default()).expect("start");
    let clock = EventClock::start();
    for ev in events(&clock, StepStatus::Timeout, RunOutcome::Failed) {
        writer.apply(&ev).expect("apply");
    }
    let (record, files) = writer.finish();
    let files = files.expect("files");
    let back: RunRecord =
        serde_json::from_str(&std::fs::read_to_string(files.run_json).expect("read"))
            .expect("run.json parses back into a RunRecord");
    assert_eq!(back, record);
    assert_eq!(back.identity.attempt, 2);
    assert_eq!(back.steps[2].status, StepStatus::Timeout);
}

#[test]
fn a_large_run_json_is_rewritten_at_a_bounded_rate_and_catches_up_on_flush() {
    // 5 000 steps: a rewrite of run.json costs milliseconds, so the rewrite for an event that
    // follows at once is put off (run.json rewritten whole per event made long tests quadratic).
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut plan = plan(&tmp.path().join(".bugatti"), "run-big", "big.test.toml", 1);
    let template = plan.steps[0].clone();
    plan.steps = (1..=5_000)
        .map(|i| {
            let mut step = template.clone();
            step.step_id = StepId::new(i);
            step.instruction = format!("Check item {i} of the catalogue and its price.");
            step
        })
        .collect();
    let run_dir = std::path::PathBuf::from(&plan.identity.run_dir);
    let mut writer = RunWriter::start(&plan, Redactor::default()).expect("start");
    let clock = EventClock::start();
    let started = |step_id| {
        clock.event(bugatti::report::records::events::EventKind::StepStarted {
            step_id,
            instruction: format!("Check item {step_id}"),
            instruction_sent: None,
            provenance: template.provenance.clone(),
        })
    };
    writer.apply(&started(StepId::new(1))).expect("apply");
    let due = writer.run_json_due_in();
    assert!(
        due.is_some(),
        "the rewrite right after a costly one is put off"
    );
    assert!(
        due.is_some_and(|d| d <= bugatti::report::store::run_writer::MAX_GAP),
        "{due:?}"
    );
    assert_eq!(read_run_record(&run_dir).steps[0].started_at, None);
    // events.jsonl is never put off.
    let lines = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
    assert_eq!(lines.lines().count(), 2);
    writer.flush_run_json().expect("flush");
    assert_eq!(writer.run_json_due_in(), None);
    assert!(read_run_record(&run_dir).steps[0].started_at.is_some());
}
