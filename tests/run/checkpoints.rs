//! Checkpoints and skipped steps end to end (docs/config.md): the real binary on temporary projects
//! configured as a user would (`bugatti.config.toml`, relative paths, the `shell` provider), its
//! exit codes, and what run.json, report.md, events.jsonl and the checkpoint folder hold.

use crate::common::assert_exit;
use crate::common::records::*;
use crate::common::{stderr, stdout, Project};
use bugatti::model::ids::StepId;
use bugatti::report::records::events::CheckpointAction;
use bugatti::report::records::run_record::CheckpointStatus;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A project whose `[checkpoint]` commands copy `app/state.txt` in and out of the checkpoint
/// folder; every harness command, step, save and restore appends a line to `trace.txt` in the
/// project root (outside every session's workspace), so the order of what ran is on record.
fn project(save: &str, restore: &str) -> Project {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!(
            r#"
[provider]
name = "shell"
step_timeout_secs = 30

[env]
TRACE = "${{BUGATTI_PROJECT_ROOT}}/trace.txt"
STATE = "${{BUGATTI_PROJECT_ROOT}}/app/state.txt"

[commands.migrate]
kind = "short_lived"
cmd = "echo migrate >> trace.txt"

[checkpoint]
save = '{save}'
restore = '{restore}'
timeout_secs = 10
"#
        ),
    );
    p.write("app/.keep", "");
    p.write(
        "tests/flow.test.toml",
        r#"name = "Flow"

[[steps]]
instruction = "Log in again (setup): `echo setup >> $TRACE`"
setup = true

[[steps]]
instruction = "Create the state: `echo step-2 >> $TRACE` and `printf one > $STATE`"

[[steps]]
instruction = "Add to it: `echo step-3 >> $TRACE` and `printf ' two' >> $STATE`"
checkpoint = "seeded"

[[steps]]
instruction = 'Check it: `echo step-4 >> $TRACE` and `test "$(cat $STATE)" = "one two"`'
"#,
    );
    p
}

const SAVE: &str = r#"cp app/state.txt "$BUGATTI_CHECKPOINT_PATH/state.txt" && pwd > "${BUGATTI_CHECKPOINT_PATH}/cwd.txt" && echo "save $BUGATTI_CHECKPOINT_ID" >> trace.txt"#;
const RESTORE: &str = r#"test "$BUGATTI_CHECKPOINT_ID" = seeded && cp "${BUGATTI_CHECKPOINT_PATH}/state.txt" app/state.txt && echo "restore $BUGATTI_CHECKPOINT_ID" >> trace.txt && echo restored-ok"#;

fn statuses(record: &RunRecord) -> Vec<&'static str> {
    record.steps.iter().map(|s| s.status.as_str()).collect()
}

fn run_dir(record: &RunRecord) -> PathBuf {
    record.run_dir()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The run.json of the newest run (run ids are UUIDv7: they sort by time).
fn newest_record(p: &Project) -> RunRecord {
    p.run_records()
        .into_iter()
        .max_by_key(|r| r.identity.run_id.clone())
        .expect("a run.json")
}

#[test]
fn a_passed_checkpoint_step_saves_and_from_checkpoint_restores_skips_and_reruns_setup() {
    let p = project(SAVE, RESTORE);

    // First run: every step runs; the checkpoint is saved after step 3.
    let out = p.start();
    assert_exit(&out, 0);
    let first = newest_record(&p);
    assert_eq!(first.outcome, Some(RunOutcome::Passed));
    assert_eq!(statuses(&first), ["ok", "ok", "ok", "ok"]);
    assert_eq!(first.checkpoints[0].name, "seeded");
    assert_eq!(first.checkpoints[0].action, CheckpointAction::Save);
    assert_eq!(first.checkpoints[0].status, CheckpointStatus::Done);
    assert_eq!(first.checkpoints[0].step_id, Some(StepId::new(3)));
    let saved = p.root().join(".bugatti/checkpoints/tests__flow/seeded");
    assert_eq!(
        Some(first.checkpoints[0].path.as_str()),
        Some(
            saved
                .canonicalize()
                .expect("saved dir")
                .to_str()
                .expect("utf-8")
        )
    );
    assert_eq!(read(&saved.join("state.txt")), "one two");
    // The save ran in the project root.
    assert_eq!(
        PathBuf::from(read(&saved.join("cwd.txt")).trim()),
        p.root().canonicalize().expect("root")
    );
    let marker: Value =
        serde_json::from_str(&read(&saved.with_file_name("seeded.saved.json"))).expect("json");
    assert_eq!(marker["run_id"], first.identity.run_id.as_str());
    let report = read(&run_dir(&first).join("report.md"));
    assert!(
        report.contains("## Checkpoints") && report.contains("| `seeded` | save | 3 | done |"),
        "{report}"
    );

    // The app's state moves on (or breaks); resuming brings back the saved state.
    std::fs::write(p.root().join("app/state.txt"), "garbage").expect("write");
    let out = p.run(&["start", "--from-checkpoint", "seeded"]);
    let console = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{console}{}", stderr(&out));
    let second = newest_record(&p);
    assert_ne!(second.identity.run_id, first.identity.run_id);
    assert_eq!(second.outcome, Some(RunOutcome::Passed));
    assert_eq!(statuses(&second), ["ok", "skipped", "skipped", "ok"]);
    for i in [1, 2] {
        assert_eq!(
            second.steps[i].message.as_deref(),
            Some("restored from checkpoint `seeded`"),
            "{second:?}"
        );
    }
    assert_eq!(Some(second.checkpoints.len()), Some(1));
    assert_eq!(second.checkpoints[0].action, CheckpointAction::Restore);
    assert_eq!(second.checkpoints[0].status, CheckpointStatus::Done);
    assert_eq!(read(&p.root().join("app/state.txt")), "one two");

    // What ran, in order: the harness, then the restore, then the setup step, then step 4; the
    // resumed checkpoint is not saved again.
    assert_eq!(
        read(&p.root().join("trace.txt")),
        "migrate\nsetup\nstep-2\nstep-3\nsave seeded\nstep-4\n\
         migrate\nrestore seeded\nsetup\nstep-4\n"
    );

    let dir = run_dir(&second);
    let report = read(&dir.join("report.md"));
    assert!(
        report.contains("| resumed from | checkpoint `seeded` (restore done) |"),
        "{report}"
    );
    assert!(
        report.contains("| 2 | skipped |") && report.contains("| 3 | skipped |"),
        "{report}"
    );
    assert!(
        report.contains("restored from checkpoint `seeded`"),
        "{report}"
    );
    assert!(
        report.contains("| `seeded` | restore | — | done | 0 |"),
        "{report}"
    );
    let log = read(&dir.join("logs/checkpoint.log"));
    assert!(
        log.contains("--- checkpoint restore `seeded` ---\nrestored-ok\n"),
        "{log}"
    );
    let events = read(&dir.join("events.jsonl"));
    assert!(
        events.contains(r#""type":"checkpoint""#) && events.contains(r#""action":"restore""#),
        "{events}"
    );
    assert!(console.contains("CHECKPOINT restore seeded"), "{console}");
    assert!(
        console.contains("SKIPPED (0ms): restored from checkpoint"),
        "{console}"
    );
    let junit = read(&p.suite_dir().join("junit.xml"));
    assert!(junit.contains("skipped"), "{junit}");
}

#[test]
fn resuming_from_a_checkpoint_never_saved_is_exit_2_and_runs_nothing() {
    let p = project(SAVE, RESTORE);
    let out = p.run(&["start", "--from-checkpoint", "seeded"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{}{err}", stdout(&out));
    assert!(err.contains("--from-checkpoint `seeded`"), "{err}");
    assert!(err.contains("tests/flow.test.toml"), "{err}");
    assert!(
        err.contains(".bugatti/checkpoints/tests__flow/seeded"),
        "{err}"
    );
    assert!(
        !p.root().join(".bugatti/runs").exists(),
        "a run was started"
    );
    assert!(!p.root().join("trace.txt").exists(), "something ran");

    // An unknown name lists the checkpoints the test has.
    let out = p.run(&["start", "--from-checkpoint", "nope"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("(it has: seeded)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_failing_save_is_an_error_naming_the_command_and_cannot_be_resumed_from() {
    let p = project("echo saving; echo disk full >&2; exit 4", RESTORE);
    let out = p.start();
    assert_exit(&out, 3);
    let record = newest_record(&p);
    assert_eq!(record.outcome, Some(RunOutcome::Error));
    assert_eq!(statuses(&record), ["ok", "ok", "ok", "not_run"]);
    let error = record.error.as_deref().expect("error");
    assert!(
        error.contains("checkpoint save `seeded` failed")
            && error.contains("echo saving")
            && error.contains("exit code 4")
            && error.contains("disk full"),
        "{error}"
    );
    assert_eq!(record.checkpoints[0].status, CheckpointStatus::Failed);
    assert_eq!(record.checkpoints[0].exit_code, Some(4));
    let report = read(&run_dir(&record).join("report.md"));
    assert!(
        report.contains("checkpoint save `seeded` failed"),
        "{report}"
    );
    assert!(read(&run_dir(&record).join("logs/checkpoint.log")).contains("saving\ndisk full\n"));

    // The folder was created for the save, but a failed save is not a checkpoint.
    let out = p.run(&["start", "--from-checkpoint", "seeded"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("was never saved successfully"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_save_past_its_timeout_is_stopped_with_what_it_started() {
    let p = project("echo slow; sleep 60 & sleep 60", RESTORE);
    let text = read(&p.root().join("bugatti.config.toml"))
        .replace("timeout_secs = 10", "timeout_secs = 1");
    p.write("bugatti.config.toml", &text);
    let started = std::time::Instant::now();
    let out = p.start();
    assert_exit(&out, 3);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let record = newest_record(&p);
    let error = record.error.as_deref().expect("error");
    assert!(
        error.contains("did not finish within [checkpoint] timeout_secs = 1")
            && error.contains("slow"),
        "{error}"
    );
}

#[test]
fn a_failing_restore_is_an_error_before_the_agent_starts() {
    let p = project(SAVE, "echo no backup here; exit 9");
    let out = p.start();
    assert_exit(&out, 0);
    let out = p.run(&["start", "--from-checkpoint", "seeded"]);
    assert_exit(&out, 3);
    let record = newest_record(&p);
    assert_eq!(record.outcome, Some(RunOutcome::Error));
    assert_eq!(
        statuses(&record),
        ["not_run", "not_run", "not_run", "not_run"]
    );
    let error = record.error.as_deref().expect("error");
    assert!(
        error.contains("checkpoint restore `seeded` failed")
            && error.contains("exit code 9")
            && error.contains("no backup here"),
        "{error}"
    );
    // The harness was up (migrate ran), the setup step was not sent.
    assert!(read(&p.root().join("trace.txt")).ends_with("step-4\nmigrate\n"));
}

#[test]
fn skip_true_steps_are_skipped_not_sent_and_the_test_passes() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\nstep_timeout_secs = 30\n\n[env]\nTRACE = \"${BUGATTI_PROJECT_ROOT}/trace.txt\"\n",
    );
    p.write(
        "tests/skip.test.toml",
        "name = \"Skip\"\n\
         [[steps]]\ninstruction = \"First: `echo one >> $TRACE`\"\n\
         [[steps]]\ninstruction = \"Broken for now: `echo two >> $TRACE` and `false`\"\nskip = true\n\
         [[steps]]\ninstruction = \"Last: `echo three >> $TRACE`\"\n",
    );
    let out = p.start();
    let console = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{console}{}", stderr(&out));
    let record = newest_record(&p);
    assert_eq!(record.outcome, Some(RunOutcome::Passed));
    assert_eq!(statuses(&record), ["ok", "skipped", "ok"]);
    assert_eq!(record.steps[1].message.as_deref(), Some("skip = true"));
    assert!(
        record.steps[1].instruction_sent.is_none(),
        "a skipped step sends nothing: {:?}",
        record.steps[1]
    );
    assert!(record.steps[0].instruction_sent.is_some());
    assert_eq!(read(&p.root().join("trace.txt")), "one\nthree\n");
    let report = read(&run_dir(&record).join("report.md"));
    assert!(report.contains("**Outcome: PASSED**"), "{report}");
    assert!(report.contains("| 2 | skipped |"), "{report}");
    assert!(
        console.contains("STEP 2 ........ SKIPPED (0ms): skip = true"),
        "{console}"
    );
    let events = read(&run_dir(&record).join("events.jsonl"));
    assert!(events.contains(r#""status":"skipped""#), "{events}");
    let junit = read(&p.suite_dir().join("junit.xml"));
    assert!(junit.contains("2. skipped"), "{junit}");
    assert_eq!(p.suite_summary().tests[0].outcome, RunOutcome::Passed);
}
