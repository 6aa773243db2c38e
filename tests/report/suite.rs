//! The suite summary and JUnit from finished run records: attempts, flaky detection, strict
//! warnings, reruns of a test that never passed, not-run tests; JUnit parsed back.

use crate::common::report::{events, plan};
use bugatti::model::ids::SuiteId;
use bugatti::model::outcome::{RunOutcome, StepStatus};
use bugatti::report::records::events::EventClock;
use bugatti::report::records::run_record::RunRecord;
use bugatti::report::records::suite::SuiteSummary;
use bugatti::report::renderers::junit;
use quick_junit::{FlakyOrRerun, NonSuccessKind, Report, TestCaseStatus};

fn record(
    run_id: &str,
    file: &str,
    attempt: u32,
    last: StepStatus,
    outcome: RunOutcome,
) -> RunRecord {
    let dir = std::path::Path::new("/tmp/never-written/.bugatti");
    let mut r = RunRecord::from_plan(&plan(dir, run_id, file, attempt));
    let clock = EventClock::start();
    for ev in events(&clock, last, outcome) {
        r.apply(&ev);
    }
    r
}

fn parse(summary: &SuiteSummary, records: &[RunRecord]) -> Report {
    let xml = junit::to_xml(summary, records).expect("xml");
    Report::deserialize_from_str(&xml).expect("junit parses back")
}

#[test]
fn a_test_failing_every_attempt_carries_its_reruns_and_is_not_flaky() {
    let records = vec![
        record(
            "r1",
            "x.test.toml",
            1,
            StepStatus::Error,
            RunOutcome::Failed,
        ),
        record(
            "r2",
            "x.test.toml",
            2,
            StepStatus::ProtocolError,
            RunOutcome::Failed,
        ),
        record(
            "r3",
            "x.test.toml",
            3,
            StepStatus::Timeout,
            RunOutcome::Failed,
        ),
        record("p1", "p.test.toml", 1, StepStatus::Ok, RunOutcome::Passed),
    ];
    let now = chrono::Utc::now();
    let s = SuiteSummary::build(&SuiteId::new("s"), now, now, false, &records, &[]);
    assert_eq!(s.tests.len(), 2);
    assert_eq!(s.tests[0].test_file, "p.test.toml");
    let x = &s.tests[1];
    assert_eq!((x.attempts, x.flaky, x.run_id.as_str()), (3, false, "r3"));
    assert_eq!(
        x.history.iter().map(|a| a.attempt).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(
        (
            s.totals.total,
            s.totals.passed,
            s.totals.failed,
            s.totals.flaky
        ),
        (2, 1, 1, 0)
    );
    let report = parse(&s, &records);
    assert_eq!((report.tests, report.failures, report.errors), (2, 1, 0));
    let case = &report.test_suites[0].test_cases[1];
    assert_eq!(case.name.as_str(), "x.test.toml");
    match &case.status {
        TestCaseStatus::NonSuccess {
            kind,
            message,
            reruns,
            ..
        } => {
            assert_eq!(*kind, NonSuccessKind::Failure);
            assert!(message
                .as_ref()
                .is_some_and(|m| m.as_str().starts_with("step 3: no checkout button")));
            assert_eq!(reruns.kind, FlakyOrRerun::Rerun);
            assert_eq!(reruns.runs.len(), 2);
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn strict_warnings_turn_a_warned_attempt_into_a_failure_and_a_later_pass_into_flaky() {
    let records = vec![
        record("w1", "w.test.toml", 1, StepStatus::Ok, RunOutcome::Warned),
        record("w2", "w.test.toml", 2, StepStatus::Ok, RunOutcome::Passed),
    ];
    let now = chrono::Utc::now();
    let lenient = SuiteSummary::build(&SuiteId::new("s"), now, now, false, &records, &[]);
    assert!(!lenient.tests[0].flaky);
    let strict = SuiteSummary::build(&SuiteId::new("s"), now, now, true, &records, &[]);
    assert!(strict.tests[0].flaky);
    assert_eq!(strict.totals.flaky, 1);
    let report = parse(&strict, &records);
    assert_eq!((report.tests, report.failures, report.errors), (1, 0, 0));
    match &report.test_suites[0].test_cases[0].status {
        TestCaseStatus::Success { flaky_runs } => {
            assert_eq!(flaky_runs.len(), 1);
            assert_eq!(flaky_runs[0].kind, NonSuccessKind::Failure);
        }
        other => panic!("expected a flaky success, got {other:?}"),
    }
}

#[test]
fn interrupted_and_error_are_junit_errors_and_not_run_tests_are_skipped() {
    let records = vec![
        record(
            "e1",
            "e.test.toml",
            1,
            StepStatus::NotRun,
            RunOutcome::Error,
        ),
        record(
            "i1",
            "i.test.toml",
            1,
            StepStatus::NotRun,
            RunOutcome::Interrupted,
        ),
    ];
    let now = chrono::Utc::now();
    let not_run = vec![
        "z.test.toml".to_string(),
        "e.test.toml".to_string(),
        "z.test.toml".to_string(),
    ];
    let s = SuiteSummary::build(&SuiteId::new("s"), now, now, false, &records, &not_run);
    // A test that ran is not also "not run"; duplicates collapse.
    assert_eq!(s.not_run, vec!["z.test.toml".to_string()]);
    assert_eq!(
        (
            s.totals.total,
            s.totals.error,
            s.totals.interrupted,
            s.totals.not_run
        ),
        (3, 1, 1, 1)
    );
    let report = parse(&s, &records);
    assert_eq!((report.tests, report.failures, report.errors), (3, 0, 2));
    let types: Vec<Option<String>> = report.test_suites[0]
        .test_cases
        .iter()
        .map(|c| match &c.status {
            TestCaseStatus::NonSuccess { ty, .. } => ty.as_ref().map(|t| t.as_str().to_string()),
            TestCaseStatus::Skipped { .. } => Some("skipped".into()),
            TestCaseStatus::Success { .. } => None,
        })
        .collect();
    assert_eq!(
        types,
        vec![
            Some("error".to_string()),
            Some("interrupted".to_string()),
            Some("skipped".to_string())
        ]
    );
    let md = s.to_markdown();
    assert!(md.contains("3 root tests: 0 passed, 0 warned, 0 failed, 1 error, 1 interrupted, 1 not run; 0 flaky"), "{md}");
}

#[test]
fn summary_json_round_trips() {
    let records = vec![record(
        "a",
        "a.test.toml",
        1,
        StepStatus::Ok,
        RunOutcome::Passed,
    )];
    let now = chrono::Utc::now();
    let s = SuiteSummary::build(&SuiteId::new("s"), now, now, false, &records, &[]);
    let json = serde_json::to_string_pretty(&s).expect("json");
    assert!(json.contains("\"schema_version\": 2"), "{json}");
    let back: SuiteSummary = serde_json::from_str(&json).expect("parse");
    assert_eq!(back, s);
}

/// A shard written by another version may name a provider this one does not know: `merge` and
/// `report` still read its run (they only show the name) and keep the name as it was written.
#[test]
fn a_run_naming_a_provider_this_version_does_not_know_still_loads() {
    use bugatti::model::artifacts::{RunPaths, SuitePaths};
    use bugatti::report::store::artifact_dir::load_suite;
    let tmp = tempfile::tempdir().expect("tempdir");
    let artifacts = tmp.path().join(".bugatti");
    let mut r = RunRecord::from_plan(&plan(&artifacts, "r1", "a.test.toml", 1));
    let clock = EventClock::start();
    for ev in events(&clock, StepStatus::Ok, RunOutcome::Passed) {
        r.apply(&ev);
    }
    let mut run_json = serde_json::to_value(&r).expect("json");
    run_json["provider"] = "a-provider-of-a-later-version".into();
    let run = RunPaths::new(&r.identity.run_dir);
    std::fs::create_dir_all(&run.dir).expect("run dir");
    std::fs::write(run.run_json(), run_json.to_string()).expect("run.json");
    let now = chrono::Utc::now();
    let suite_id = SuiteId::new("s1");
    let summary = SuiteSummary::build(&suite_id, now, now, false, &[r], &[]);
    let suite = SuitePaths::under(&artifacts, &suite_id);
    std::fs::create_dir_all(&suite.dir).expect("suite dir");
    std::fs::write(
        suite.summary_json(),
        serde_json::to_string(&summary).expect("json"),
    )
    .expect("summary.json");

    let loaded = load_suite(&suite.dir).expect("the suite loads");
    assert!(loaded.missing_runs.is_empty(), "{:?}", loaded.missing_runs);
    assert_eq!(loaded.records.len(), 1);
    let provider = &loaded.records[0].identity.provider;
    assert_eq!(provider.as_str(), "a-provider-of-a-later-version");
    assert_eq!(provider.kind(), None);
    let again = serde_json::to_value(&loaded.records[0]).expect("json");
    assert_eq!(again["provider"], run_json["provider"]);
}
