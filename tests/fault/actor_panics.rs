//! A panic in the supervisor's own actors, injected by test-only variables (as the session's
//! `BUGATTI_FAULT_PANIC_IN`): the supervisor actor (the queue of root tests) and the reporter (the
//! one writer of records). Either way every run's records are final, the suite's files are
//! written, nothing the suite started survives, and the exit code says a harness error (3).

use crate::common::fault::{hook_env, Hook};
use crate::common::records::*;
use crate::common::{stderr, stdout, Project, RecordExt};

/// Two tests beside a long-lived server: `boom` ends at once, `slow` is mid-step for seconds.
fn project() -> Project {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n[commands.server]\nkind = \"long_lived\"\n\
         cmd = \"echo up; exec sleep 300\"\nreadiness = { log = \"^up$\" }\n",
    );
    p.write(
        "boom.test.toml",
        "name = \"Boom\"\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    p.write(
        "slow.test.toml",
        "name = \"Slow\"\n[[steps]]\ninstruction = \"`sleep 4`\"\n",
    );
    p
}

fn assert_final(record: &RunRecord) {
    let run_dir = record.run_dir();
    assert!(run_dir.join("report.md").is_file(), "{record:?}");
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
    assert!(events.contains("run_finished"), "{events}");
}

/// The supervisor actor panics when it hears that `boom` is done, while `slow` is mid-step: its
/// sessions can no longer report to it. The run started with it kills every process, and the
/// reporter ends the open run (`interrupted`) and writes the suite's files.
#[test]
fn a_panic_in_the_supervisor_actor_leaves_every_record_and_exit_3() {
    let p = project();
    let out = p
        .supervisor()
        .args(["start", "-j", "2"])
        .env(hook_env(Hook::Supervisor), "boom")
        .output()
        .expect("run");
    p.assert_nothing_survives();
    let console = format!("{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(3), "{console}");
    let boom = p.record_for("boom.test.toml");
    assert_eq!(boom.outcome, Some(RunOutcome::Passed), "{boom:?}");
    assert_final(&boom);
    let slow = p.record_for("slow.test.toml");
    assert_eq!(slow.outcome, Some(RunOutcome::Interrupted), "{slow:?}");
    assert_final(&slow);
    assert!(p.suite_dir().join("summary.json").is_file(), "{console}");
    assert!(p.suite_dir().join("report.html").is_file(), "{console}");
    assert!(console.contains("the supervisor failed"), "{console}");
}

/// The reporter panics handling `boom`'s step start. The panic is caught where the message is
/// handled: that event is a record lost (said, exit 3), the reporter goes on, both runs are
/// final, the suite's files are written.
#[test]
fn a_panic_in_the_reporter_is_a_lost_record_and_exit_3() {
    let p = project();
    let out = p
        .supervisor()
        .args(["start", "-j", "2"])
        .env(hook_env(Hook::Reporter), "boom")
        .output()
        .expect("run");
    p.assert_nothing_survives();
    let console = format!("{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(3), "{console}");
    assert!(
        console.contains("the reporter failed while handling event"),
        "{console}"
    );
    assert_final(&p.record_for("boom.test.toml"));
    let slow = p.record_for("slow.test.toml");
    assert_eq!(slow.outcome, Some(RunOutcome::Passed), "{slow:?}");
    assert_final(&slow);
    assert!(p.suite_dir().join("summary.json").is_file(), "{console}");
    assert!(p.suite_dir().join("report.html").is_file(), "{console}");
}
