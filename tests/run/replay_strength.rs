//! A recording never weakens in silence (docs/replay.md): the real supervisor with the scripted
//! `command` agent (tests/support/directive_agent.py), whose actions come from a plan file so that
//! they change between runs while the instruction stays the same. A hurried pass that checks
//! less than the recording in force is kept as pending and the step goes to the agent until a
//! person decides (`supervisor replay review|accept|reject`); a step the agent fails under
//! `--replay record` is never replayed again; a `command` agent gets the replayed steps in their
//! own field of the step line.

use crate::common;

use bugatti::model::replay::ReplayedStep;
use bugatti::replay::format::Recording;
use common::records::*;
use common::{stdout, Project};

/// A console app: `data.txt` names the item, `stock.txt` counts it.
fn project() -> Project {
    let p = Project::with_directive_agent("");
    p.write("data.txt", "item: mug\n");
    p.write("stock.txt", "mugs: 3\n");
    p.write(
        "stock.test.toml",
        "[[steps]]\ninstruction = '''\nCheck the item is listed and in stock.\n\
         plan ${BUGATTI_PROJECT_ROOT}/plan.txt\n'''\n",
    );
    p
}

/// The careful check: both files read, a fact on each.
const CAREFUL: &str = "mcp exec_command {\"cmd\": \"cat data.txt\", \"yield_time_ms\": 10000}\n\
    mcp exec_command {\"cmd\": \"cat stock.txt\", \"yield_time_ms\": 10000}\n\
    fact 1 contains \"item: mug\"\nfact 2 contains \"mugs: 3\"\n";

/// The hurried one: the first file only.
const HURRIED: &str = "mcp exec_command {\"cmd\": \"cat data.txt\", \"yield_time_ms\": 10000}\n\
    fact 1 contains \"item\"\n";

const WEAKER: &str = "recording for step 1 would drop 1 console action and 1 fact: pending \
                      review (supervisor replay review)";

/// `supervisor ARGS`: its exit code, its console, and the newest run's only step.
/// `supervisor start` on the project: see [`run`].
fn start(p: &Project) -> (Option<i32>, String, StepRecord) {
    run(p, &["start"])
}

fn run(p: &Project, args: &[&str]) -> (Option<i32>, String, StepRecord) {
    let out = p.run(args);
    let console = format!("{}\n{}", stdout(&out), common::stderr(&out));
    (
        out.status.code(),
        console,
        p.newest_record().steps[0].clone(),
    )
}

fn in_force(p: &Project) -> Recording {
    common::read_json_file(&p.root().join("bugatti.replay/stock.replay.json"))
}

fn pending_file(p: &Project) -> std::path::PathBuf {
    p.root().join("bugatti.replay/pending/stock.replay.json")
}

#[test]
fn a_weaker_re_recording_waits_for_review_and_the_step_goes_to_the_agent() {
    let p = project();
    p.write("plan.txt", CAREFUL);
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    assert!(step.recorded, "{step:?}");

    // The item's line drifts; the agent passes in a hurry, reading the first file only.
    p.write("data.txt", "item: mug (blue)\n");
    p.write("plan.txt", HURRIED);
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    assert!(!step.recorded, "{step:?}");
    assert_eq!(step.replay_pending.as_deref(), Some(WEAKER), "{step:?}");
    assert!(
        console.contains(&format!("PENDING     stock.test.toml {WEAKER}")),
        "{console}"
    );
    let run_dir = p.newest_record().run_dir();
    let report = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(report.contains(WEAKER), "{report}");
    let html = std::fs::read_to_string(p.suite_dir().join("report.html")).expect("report.html");
    assert!(
        html.contains("would drop 1 console action and 1 fact"),
        "report.html"
    );
    let summary = p.suite_summary();
    assert_eq!(
        summary.replay_pending.len(),
        1,
        "{:?}",
        summary.replay_pending
    );
    assert_eq!(summary.replay_pending[0].test_file, "stock.test.toml");
    assert_eq!(summary.replay_pending[0].note, WEAKER);
    // The recording in force is as it was; the weaker one waits beside it.
    assert_eq!(in_force(&p).steps[0].actions.len(), 2);
    let pending: Recording = common::read_json_file(&pending_file(&p));
    assert_eq!(pending.steps[0].actions.len(), 1);

    // The second file loses its item. A weak recording in force would replay this as a pass:
    // the step goes to the agent instead, every run until a person decides.
    p.write("data.txt", "item: mug\n");
    p.write("stock.txt", "mugs: 0\n");
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(step.mode, Some(StepMode::Agent), "{step:?}");
    let note = step.replay_note.as_deref().unwrap_or_default();
    assert!(note.contains("waits for review"), "{note}");

    // `--replay only` replays the recording in force (which now sees the empty stock: a
    // drift, not a pass) and warns of the pending one.
    let (code, console, step) = run(&p, &["start", "--replay", "only"]);
    assert_ne!(code, Some(0), "{console}");
    assert!(step.replay_pending.is_some(), "{step:?}");
    p.write("stock.txt", "mugs: 3\n");
    let (code, console, step) = run(&p, &["start", "--replay", "only"]);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(step.mode, Some(StepMode::Replayed), "{step:?}");
    assert!(console.contains("pending review"), "{console}");
    p.assert_nothing_survives();
}

#[test]
fn review_shows_the_two_side_by_side_and_accept_or_reject_decides() {
    let p = project();
    p.write("plan.txt", CAREFUL);
    assert_eq!(start(&p).0, Some(0));
    p.write("data.txt", "item: mug (blue)\n");
    p.write("plan.txt", HURRIED);
    assert_eq!(start(&p).0, Some(0));

    // Not a terminal: the comparison is printed, nothing decided.
    let out = p.run(&["replay", "review"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("stock.test.toml step 1: would drop 1 console action and 1 fact\n"),
        "{text}"
    );
    let dropped = text
        .lines()
        .find(|l| l.contains("cat stock.txt"))
        .expect("the dropped action");
    assert!(
        dropped.starts_with("- 2 exec_command cat stock.txt"),
        "{text}"
    );
    assert!(pending_file(&p).exists());
    // `check` marks the step.
    let out = p.check();
    assert!(
        stdout(&out).contains("a weaker re-recording waits for review"),
        "{}",
        stdout(&out)
    );

    // Accept and reject need a test, or --all.
    let out = p.run(&["replay", "accept"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let out = p.run(&["replay", "reject", "nosuch"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));

    // Rejected: the recording in force stays, and replays again.
    let out = p.run(&["replay", "reject", "stock"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert!(stdout(&out).contains("rejected: stock.test.toml (1 step)"));
    assert!(!pending_file(&p).exists());
    p.write("data.txt", "item: mug\n");
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(step.mode, Some(StepMode::Replayed), "{step:?}");

    // Weakened again, and accepted this time: the hurried recording is in force.
    p.write("data.txt", "item: mug (blue)\n");
    assert_eq!(start(&p).0, Some(0));
    let out = p.run(&["replay", "accept", "--all"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert!(!pending_file(&p).exists());
    assert_eq!(in_force(&p).steps[0].actions.len(), 1);
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(step.mode, Some(StepMode::Replayed), "{step:?}");
    let out = p.run(&["replay", "review"]);
    assert!(
        stdout(&out).contains("no pending recordings"),
        "{}",
        stdout(&out)
    );
    p.assert_nothing_survives();
}

#[test]
fn a_step_failed_under_record_is_never_replayed_again_and_stays_the_baseline() {
    let p = project();
    p.write("plan.txt", CAREFUL);
    assert_eq!(start(&p).0, Some(0));

    // Under `--replay record` the agent fails the step, for what its outputs do not show.
    p.write(
        "plan.txt",
        &format!("{CAREFUL}say RESULT ERROR: the mug is the wrong colour\n"),
    );
    let (code, console, step) = run(&p, &["start", "--replay", "record"]);
    assert_eq!(code, Some(1), "{console}");
    let note = step.replay_note.as_deref().unwrap_or_default();
    assert!(
        note.contains("never replayed again")
            && note.contains("baseline a new pass must match in strength"),
        "{note}"
    );
    let report =
        std::fs::read_to_string(p.newest_record().run_dir().join("report.md")).expect("report.md");
    assert!(report.contains("never replayed again"), "{report}");
    let kept = in_force(&p);
    assert!(
        kept.steps[0]
            .failed
            .as_deref()
            .is_some_and(|w| w.contains("--replay record")),
        "{kept:?}"
    );

    // The outputs still match the recording: `auto` does not replay it, the agent decides.
    p.write("plan.txt", HURRIED);
    let (code, console, step) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(step.mode, Some(StepMode::Agent), "{step:?}");
    let note = step.replay_note.as_deref().unwrap_or_default();
    assert!(note.contains("not replayed again"), "{note}");
    // Its hurried pass is measured against the failed recording: pending, not in force.
    assert_eq!(step.replay_pending.as_deref(), Some(WEAKER), "{step:?}");
    assert!(in_force(&p).steps[0].failed.is_some());
    p.assert_nothing_survives();
}

/// One line of a `command` agent's transcripts/agent.jsonl.
#[derive(serde::Deserialize)]
struct TranscriptLine {
    dir: String,
    line: String,
}

/// A step line as the agent read it.
#[derive(serde::Deserialize)]
struct StepLine {
    #[serde(rename = "type")]
    kind: String,
    step_id: u32,
    instruction: String,
    #[serde(default)]
    question: Option<String>,
    #[serde(default)]
    replayed: Vec<ReplayedStep>,
}

#[test]
fn a_command_agent_gets_the_replayed_steps_in_their_own_field() {
    let p = Project::with_directive_agent("");
    p.write("basket.txt", "1 mug\n");
    p.write("total.txt", "total 4\n");
    let second = "Check the total.\n\
                  mcp exec_command {\"cmd\": \"cat total.txt\", \"yield_time_ms\": 10000}\n\
                  fact 1 contains \"total\"";
    p.write(
        "shop.test.toml",
        &format!(
            "[[steps]]\ninstruction = '''\nAdd a mug.\n\
             mcp exec_command {{\"cmd\": \"cat basket.txt\", \"yield_time_ms\": 10000}}\n\
             fact 1 contains \"1 mug\"\n'''\n\n[[steps]]\ninstruction = '''\n{second}\n'''\n"
        ),
    );
    assert_eq!(p.start().status.code(), Some(0));
    // Step 2 drifts: step 1 replays, and the agent takes step 2 over.
    p.write("total.txt", "total 5\n");
    let out = p.start();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let record = p.newest_record();
    assert_eq!(
        record.steps[0].mode,
        Some(StepMode::Replayed),
        "{:?}",
        record.steps[0]
    );
    assert_eq!(
        record.steps[1].mode,
        Some(StepMode::Agent),
        "{:?}",
        record.steps[1]
    );
    let transcript = std::fs::read_to_string(record.run_dir().join("transcripts/agent.jsonl"))
        .expect("agent.jsonl");
    let steps: Vec<StepLine> = transcript
        .lines()
        .map(|l| serde_json::from_str::<TranscriptLine>(l).expect("a transcript line"))
        .filter(|t| t.dir == "to_agent")
        .filter_map(|t| serde_json::from_str::<StepLine>(&t.line).ok())
        .filter(|s| s.kind == "step" && s.question.is_none())
        .collect();
    assert_eq!(steps.len(), 1, "only step 2 went to the agent");
    let step = &steps[0];
    assert_eq!(step.step_id, 2);
    assert_eq!(
        step.instruction.trim(),
        second,
        "the instruction is the step's own"
    );
    assert_eq!(step.replayed.len(), 2, "step 1 whole, step 2 part way");
    assert_eq!(
        step.replayed[0].step_id,
        bugatti::model::ids::StepId::new(1)
    );
    assert!(step.replayed[0]
        .instruction
        .as_deref()
        .is_some_and(|i| i.starts_with("Add a mug.")));
    assert_eq!(
        step.replayed[0].actions[0].what,
        "exec_command cat basket.txt"
    );
    assert!(step.replayed[0].actions[0].output.contains("1 mug"));
    p.assert_nothing_survives();
}

/// On a terminal, `review` asks for each test: an answer it does not know is asked again, `a`
/// accepts.
#[test]
fn review_on_a_terminal_asks_and_accepts() {
    let p = project();
    p.write("plan.txt", CAREFUL);
    assert_eq!(start(&p).0, Some(0));
    p.write("data.txt", "item: mug (blue)\n");
    p.write("plan.txt", HURRIED);
    assert_eq!(start(&p).0, Some(0));
    let pty = match nix::pty::openpty(None, None) {
        Ok(pty) => pty,
        Err(e) => {
            common::skip::skip(
                "replay review on a terminal",
                format!("no pseudo-terminal ({e})"),
            );
            return;
        }
    };
    // Typed ahead: the terminal holds the answers until the review reads them.
    nix::unistd::write(&pty.master, b"x\na\n").expect("type the answers");
    let out = p
        .supervisor()
        .args(["replay", "review"])
        .stdin(std::process::Stdio::from(pty.slave))
        .output()
        .expect("review");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", common::stderr(&out));
    assert!(
        text.contains("would drop 1 console action and 1 fact"),
        "{text}"
    );
    assert_eq!(
        text.matches("stock.test.toml: a accept, r reject, s skip? ")
            .count(),
        2,
        "asked again after an unknown answer: {text}"
    );
    assert!(
        text.contains("accepted: stock.test.toml (1 step)"),
        "{text}"
    );
    assert!(!pending_file(&p).exists());
    assert_eq!(in_force(&p).steps[0].actions.len(), 1);
    p.assert_nothing_survives();
}
