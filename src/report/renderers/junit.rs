//! `junit.xml` for CI (quick-junit): one `testcase` per root test, ran or not, each with the
//! same identity — `classname` and `name` are the test file's path relative to the project root —
//! because Jenkins and GitLab key a test's history on classname + name, and a human title or a
//! missing classname would break that history when the title changes or the test is not run.
//!
//! failed → `failure`, error and interrupted → `error`: a one-line `message` attribute (XML
//! parsers fold newlines in attributes into spaces) and the full diagnosis in the element body;
//! a pass after failed attempts → success with `flakyFailure`/`flakyError` entries; a test that
//! failed every attempt carries the earlier ones as `rerunFailure`/`rerunError`. The final
//! attempt's step list goes to `system-out`. The shape follows Maven Surefire's
//! `surefire-test-report-3.0.xsd` (tests/fixtures/junit/): no `timestamp` or `properties` on a
//! testcase, no `time` on rerun/flaky entries (their duration is in their `system-out`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Duration;

use quick_junit::{
    NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestRerun, TestSuite,
};

use crate::model::outcome::RunOutcome;
use crate::report::ground::error::ReportError;
use crate::report::records::run_record::RunRecord;
use crate::report::records::suite::{AttemptSummary, SuiteSummary};

fn kind_of(outcome: RunOutcome, strict_warnings: bool) -> Option<NonSuccessKind> {
    match outcome {
        RunOutcome::Passed => None,
        RunOutcome::Warned if !strict_warnings => None,
        RunOutcome::Warned | RunOutcome::Failed => Some(NonSuccessKind::Failure),
        RunOutcome::Error | RunOutcome::Interrupted => Some(NonSuccessKind::Error),
    }
}

/// The first non-blank line of a diagnosis, for a `message` attribute.
fn one_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

fn rerun(attempt: &AttemptSummary, kind: NonSuccessKind) -> TestRerun {
    let mut rerun = TestRerun::new(kind);
    let text = attempt.message.as_deref().unwrap_or("no message");
    // Surefire's schema requires `stackTrace` on a rerun/flaky entry and allows no body text, so
    // the full diagnosis goes there.
    rerun
        .set_type(attempt.outcome.as_str())
        .set_message(one_line(text))
        .set_stack_trace(text)
        .set_system_out(format!(
            "attempt {}: run {} ({}), {:.3}s",
            attempt.attempt,
            attempt.run_id,
            attempt.report,
            attempt.duration_ms as f64 / 1000.0
        ));
    rerun
}

/// The steps of a run, one per line, for `system-out`.
pub fn step_list(record: &RunRecord) -> String {
    let mut s = format!(
        "run {} ({})\n",
        record.identity.run_id, record.identity.run_dir
    );
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

/// A testcase named by its test file (relative to the project root), as `name` and `classname`
/// alike, whether it ran or not.
fn identified(test_file: &str, status: TestCaseStatus) -> TestCase {
    let mut case = TestCase::new(test_file, status);
    case.set_classname(test_file);
    case
}

/// The JUnit report of a suite. `records` are looked up by run id for the step lists.
pub fn build(summary: &SuiteSummary, records: &[RunRecord]) -> Report {
    let by_id: HashMap<&str, &RunRecord> = records
        .iter()
        .map(|r| (r.identity.run_id.as_str(), r))
        .collect();
    let mut suite = TestSuite::new("bugatti");
    // No suite `timestamp`: Surefire's 3.0 schema has none there; the wrapping `testsuites`
    // element carries it.
    suite
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
    // Quarantined tests, one property each: Surefire's schema has no properties on a testcase,
    // and a dashboard reading the suite's properties can list them apart (docs/ci.md).
    for test in summary.tests.iter().filter(|t| t.quarantined) {
        suite.add_property(Property::new("quarantined", test.test_file.as_str()));
    }
    if summary.fail_on_flaky {
        suite.add_property(Property::new("flaky_result", "fail"));
    }
    for test in &summary.tests {
        // Every run but the deciding one (with `--repeat`, a failed run may come before passes).
        let earlier: Vec<_> = test
            .history
            .iter()
            .filter(|a| a.run_id != test.run_id)
            .collect();
        // Under `--fail-on-flaky` a pass on a retry fails the suite: a failure here too.
        let flaky_fails = summary.fail_on_flaky && test.flaky && !test.quarantined;
        let kind = kind_of(test.outcome, summary.strict_warnings)
            .or(flaky_fails.then_some(NonSuccessKind::Failure));
        let status = match kind {
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
                let reason = summary.failure_reason(test);
                let text = match (&reason, test.message.as_deref()) {
                    (Some(why), _) if flaky_fails => why.as_str(),
                    (_, Some(m)) => m,
                    _ => "no message",
                };
                status.set_type(if flaky_fails {
                    "flaky"
                } else {
                    test.outcome.as_str()
                });
                status.set_message(one_line(text)).set_description(text);
                // A run that passed is no rerun failure; under `--fail-on-flaky` the failures
                // before the deciding pass are.
                status.add_reruns(earlier.iter().filter_map(|a| {
                    kind_of(a.outcome, summary.strict_warnings).map(|k| rerun(a, k))
                }));
                status
            }
        };
        let mut case = identified(&test.test_file, status);
        case.set_time(Duration::from_millis(test.duration_ms));
        // The title and the agent's usage go to `system-out`: Surefire's schema allows no
        // `properties` on a testcase, and the title is no identity (it may change).
        let mut out = format!("test: {}\n", test.test_name);
        if test.quarantined {
            out.push_str("quarantined: its outcome does not decide the suite's\n");
        }
        if let Some(cost) = test.cost_usd {
            let _ = writeln!(out, "cost_usd: {cost:.6}");
        }
        let _ = writeln!(
            out,
            "agent_turns: {}, input_tokens: {}, output_tokens: {}, agent_restarts: {}",
            test.agent_turns, test.input_tokens, test.output_tokens, test.agent_restarts
        );
        if let Some(record) = by_id.get(test.run_id.as_str()) {
            let _ = write!(
                out,
                "started_at: {}\n{}",
                record.identity.started_at.to_rfc3339(),
                step_list(record)
            );
        }
        case.set_system_out(out);
        suite.add_test_case(case);
    }
    for file in &summary.not_run {
        // A suite whose own harness failed ran nothing: an error a CI dashboard must show, not
        // a skip it would count as green.
        let status = match &summary.harness_error {
            Some(reason) => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                let text = format!("the suite's harness failed: {reason}");
                status
                    .set_message(one_line(&text))
                    .set_description(text.as_str())
                    .set_type("harness error");
                status
            }
            None => {
                let mut status = TestCaseStatus::skipped();
                match summary
                    .not_run_reasons
                    .get(file)
                    .or(summary.not_run_reason.as_ref())
                {
                    Some(reason) => {
                        status.set_message(format!("not run: {}", reason.replace('\n', " ")))
                    }
                    None => {
                        status.set_message("not run: the suite stopped before this test started")
                    }
                };
                status
            }
        };
        let mut case = identified(file, status);
        case.set_time(Duration::ZERO);
        suite.add_test_case(case);
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
