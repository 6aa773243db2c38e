//! `junit.xml` for CI (quick-junit): one `testcase` per root test, named by its test file.
//!
//! failed → `failure`, error and interrupted → `error`, each with the failing step's message;
//! a pass after failed attempts → success with `flakyFailure`/`flakyError` entries; a test that
//! failed every attempt carries the earlier ones as `rerunFailure`/`rerunError`. The final
//! attempt's step list goes to `system-out`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Duration;

use quick_junit::{
    NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestRerun, TestSuite,
};

use crate::model::outcome::RunOutcome;
use crate::report::error::ReportError;
use crate::report::run_record::RunRecord;
use crate::report::suite::{AttemptSummary, SuiteSummary};

fn kind_of(outcome: RunOutcome, strict_warnings: bool) -> Option<NonSuccessKind> {
    match outcome {
        RunOutcome::Passed => None,
        RunOutcome::Warned if !strict_warnings => None,
        RunOutcome::Warned | RunOutcome::Failed => Some(NonSuccessKind::Failure),
        RunOutcome::Error | RunOutcome::Interrupted => Some(NonSuccessKind::Error),
    }
}

fn rerun(attempt: &AttemptSummary, kind: NonSuccessKind) -> TestRerun {
    let mut rerun = TestRerun::new(kind);
    rerun
        .set_type(attempt.outcome.as_str())
        .set_time(Duration::from_millis(attempt.duration_ms))
        .set_system_out(format!("run {} ({})", attempt.run_id, attempt.report));
    if let Some(msg) = &attempt.message {
        rerun.set_message(msg.as_str());
    }
    rerun
}

/// The steps of a run, one per line, for `system-out`.
pub fn step_list(record: &RunRecord) -> String {
    let mut s = format!("run {} ({})\n", record.run_id, record.run_dir);
    for step in &record.steps {
        let _ = write!(
            s,
            "{:>3}. {:<14} {}",
            step.step_id,
            step.status.as_str(),
            step.instruction.lines().next().unwrap_or("")
        );
        if let Some(msg) = &step.message {
            let _ = write!(s, " — {}", msg.replace('\n', " "));
        }
        s.push('\n');
    }
    s
}

/// The JUnit report of a suite. `records` are looked up by run id for the step lists.
pub fn build(summary: &SuiteSummary, records: &[RunRecord]) -> Report {
    let by_id: HashMap<&str, &RunRecord> = records.iter().map(|r| (r.run_id.as_str(), r)).collect();
    let mut suite = TestSuite::new("bugatti");
    suite
        .set_timestamp(summary.started_at)
        .set_time(Duration::from_millis(summary.duration_ms))
        .add_property(Property::new("suite_id", summary.suite_id.as_str()));
    if let Some(cost) = summary.cost_usd {
        suite.add_property(Property::new("cost_usd", format!("{cost:.6}").as_str()));
    }
    for (name, value) in [
        ("agent_turns", summary.agent_turns),
        ("input_tokens", summary.input_tokens),
        ("output_tokens", summary.output_tokens),
    ] {
        suite.add_property(Property::new(name, value.to_string().as_str()));
    }
    for test in &summary.tests {
        let earlier = &test.history[..test.history.len().saturating_sub(1)];
        let status = match kind_of(test.outcome, summary.strict_warnings) {
            None => TestCaseStatus::Success {
                flaky_runs: earlier
                    .iter()
                    .filter_map(|a| {
                        kind_of(a.outcome, summary.strict_warnings).map(|k| rerun(a, k))
                    })
                    .collect(),
            },
            Some(kind) => {
                let mut status = TestCaseStatus::non_success(kind);
                status.set_type(test.outcome.as_str());
                if let Some(msg) = &test.message {
                    status.set_message(msg.as_str());
                }
                status.add_reruns(earlier.iter().map(|a| {
                    rerun(
                        a,
                        kind_of(a.outcome, summary.strict_warnings)
                            .unwrap_or(NonSuccessKind::Failure),
                    )
                }));
                status
            }
        };
        let mut case = TestCase::new(test.test_file.as_str(), status);
        case.set_classname(test.test_name.as_str())
            .set_time(Duration::from_millis(test.duration_ms));
        if let Some(cost) = test.cost_usd {
            case.add_property(Property::new("cost_usd", format!("{cost:.6}").as_str()));
        }
        for (name, value) in [
            ("agent_turns", test.agent_turns),
            ("input_tokens", test.input_tokens),
            ("output_tokens", test.output_tokens),
            ("agent_restarts", test.agent_restarts as u64),
        ] {
            case.add_property(Property::new(name, value.to_string().as_str()));
        }
        if let Some(record) = by_id.get(test.run_id.as_str()) {
            case.set_timestamp(record.started_at)
                .set_system_out(step_list(record));
        }
        suite.add_test_case(case);
    }
    for file in &summary.not_run {
        // A suite whose own harness failed ran nothing: an error a CI dashboard must show, not
        // a skip it would count as green.
        let status = match &summary.harness_error {
            Some(reason) => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                status
                    .set_message(format!("the suite's harness failed: {reason}"))
                    .set_type("harness error");
                status
            }
            None => {
                let mut status = TestCaseStatus::skipped();
                match &summary.not_run_reason {
                    Some(reason) => status.set_message(format!("not run: {reason}")),
                    None => {
                        status.set_message("not run: the suite stopped before this test started")
                    }
                };
                status
            }
        };
        suite.add_test_case(TestCase::new(file.as_str(), status));
    }
    let mut report = Report::new("bugatti");
    report
        .set_timestamp(summary.started_at)
        .set_time(Duration::from_millis(summary.duration_ms))
        .add_test_suite(suite);
    report
}

/// The report as XML text (not yet redacted).
pub fn to_xml(summary: &SuiteSummary, records: &[RunRecord]) -> Result<String, ReportError> {
    build(summary, records)
        .to_string()
        .map_err(|e| ReportError::Junit(e.to_string()))
}
