//! The re-recordings waiting for a person (docs/replay.md, "A recording never weakens in
//! silence"): `<dir>/pending/<test>.replay.json` beside the recordings in force, in the same
//! format. `supervisor replay review` shows each beside the one in force; `accept` puts it in
//! force, `reject` drops it. The session writes them ([`super::session`]); this module is what
//! the command line does with them.

use super::error::LoadError;
use super::format::{RecordedStep, Recording};
use super::store;
use super::strength::{weakening, Weakening};
use crate::atomic::WriteError;
use std::path::{Path, PathBuf};

/// Why the pending recordings could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum PendingError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error("cannot list {path}: {source}")]
    List {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is a pending recording of {found}, not of the test its path names")]
    Misplaced { path: PathBuf, found: String },
}

/// One test's pending re-recordings, with the recording in force they would replace.
#[derive(Debug, Clone)]
pub struct PendingTest {
    /// The root test, relative to the project root (as the recordings name it).
    pub test: String,
    /// The pending file.
    pub path: PathBuf,
    pub pending: Recording,
    /// The recording in force (`None`: there is none any more).
    pub in_force: Option<Recording>,
}

impl PendingTest {
    /// Each pending step beside the step in force it would replace, and what it would drop.
    pub fn compared(&self) -> Vec<(&RecordedStep, Option<&RecordedStep>, Option<Weakening>)> {
        self.pending
            .steps
            .iter()
            .map(|new| {
                let old = self
                    .in_force
                    .as_ref()
                    .and_then(|r| r.steps.iter().find(|s| s.step == new.step));
                let weaker = old.and_then(|old| {
                    weakening(old, &new.actions, new.facts.as_deref().unwrap_or_default())
                });
                (new, old, weaker)
            })
            .collect()
    }
}

/// Every test with a pending re-recording under the recordings' folder `dir`, by test path.
pub fn list(dir: &Path) -> Result<Vec<PendingTest>, PendingError> {
    let root = dir.join(store::PENDING_DIR);
    let mut files = Vec::new();
    walk(&root, &mut files)?;
    files.sort();
    let mut tests = Vec::new();
    for path in files {
        let Some(pending) = store::load_any(&path)? else {
            continue;
        };
        if store::pending_path(dir, Path::new(&pending.test)) != path {
            return Err(PendingError::Misplaced {
                path,
                found: pending.test,
            });
        }
        let in_force = store::load(
            &store::recording_path(dir, Path::new(&pending.test)),
            &pending.test,
        )?;
        tests.push(PendingTest {
            test: pending.test.clone(),
            path,
            pending,
            in_force,
        });
    }
    Ok(tests)
}

/// The `*.replay.json` files under `dir` (none when it does not exist); symlinks not followed.
fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), PendingError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(PendingError::List {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    for entry in entries {
        let entry = entry.map_err(|source| PendingError::List {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        let kind = entry.file_type().map_err(|source| PendingError::List {
            path: path.clone(),
            source,
        })?;
        if kind.is_dir() {
            walk(&path, files)?;
        } else if path.to_string_lossy().ends_with(".replay.json") {
            files.push(path);
        }
    }
    Ok(())
}

/// Puts `test`'s pending steps in force (each replaces the step it was recorded for) and
/// removes the pending file; how many steps.
pub fn accept(dir: &Path, test: &PendingTest) -> Result<usize, PendingError> {
    let mut in_force = test
        .in_force
        .clone()
        .unwrap_or_else(|| Recording::new(test.test.clone()));
    for step in &test.pending.steps {
        in_force.upsert(step.clone());
    }
    store::save(
        &store::recording_path(dir, Path::new(&test.test)),
        &in_force,
    )?;
    store::save_or_remove(&test.path, &Recording::new(test.test.clone()))?;
    Ok(test.pending.steps.len())
}

/// Drops `test`'s pending steps: the recording in force stays as it is; how many steps.
pub fn reject(test: &PendingTest) -> Result<usize, PendingError> {
    store::save_or_remove(&test.path, &Recording::new(test.test.clone()))?;
    Ok(test.pending.steps.len())
}

/// The width of one column of [`side_by_side`].
const COLUMN: usize = 58;

/// Each pending step of `test` beside the step in force, actions and facts in two columns: an
/// old action whose target the pending one lacks marked `-`, a new target `+` (as `cargo insta
/// review` marks a snapshot's lines).
pub fn side_by_side(test: &PendingTest) -> String {
    let mut out = String::new();
    for (new, old, weaker) in test.compared() {
        let what = weaker.as_ref().map_or(
            "no longer weaker than the recording in force".to_string(),
            |w| format!("would drop {}", w.what()),
        );
        out.push_str(&format!("{} step {}: {what}\n", test.test, new.step));
        let header = |s: &RecordedStep| {
            format!(
                "recorded {} by {}",
                s.recorded_at.format("%Y-%m-%d %H:%M UTC"),
                s.provider
            )
        };
        let left_head = old.map_or("in force: none".to_string(), |o| {
            format!(
                "in force{}, {}",
                if o.failed.is_some() { " (failed)" } else { "" },
                header(o)
            )
        });
        row(
            &mut out,
            ' ',
            &left_head,
            ' ',
            &format!("pending, {}", header(new)),
        );
        let new_targets: Vec<String> = new.actions.iter().map(|a| a.target()).collect();
        let old_targets: Vec<String> = old
            .map(|o| o.actions.iter().map(|a| a.target()).collect())
            .unwrap_or_default();
        row(&mut out, ' ', "actions", ' ', "actions");
        let old_actions = old.map_or(&[][..], |o| &o.actions[..]);
        for i in 0..old_actions.len().max(new.actions.len()) {
            let left = old_actions.get(i);
            let right = new.actions.get(i);
            row(
                &mut out,
                left.map_or(' ', |a| mark(!new_targets.contains(&a.target()), '-')),
                &left.map_or(String::new(), |a| format!("{} {}", i + 1, a.describe())),
                right.map_or(' ', |a| mark(!old_targets.contains(&a.target()), '+')),
                &right.map_or(String::new(), |a| format!("{} {}", i + 1, a.describe())),
            );
        }
        row(&mut out, ' ', "facts", ' ', "facts");
        let none = Vec::new();
        let old_facts = old.and_then(|o| o.facts.as_ref()).unwrap_or(&none);
        let new_facts = new.facts.as_ref().unwrap_or(&none);
        let uncovered = weaker.as_ref().map_or(&none, |w| &w.uncovered_facts);
        for i in 0..old_facts.len().max(new_facts.len()).max(1) {
            let left = old_facts.get(i);
            row(
                &mut out,
                left.map_or(' ', |f| mark(uncovered.contains(f), '-')),
                left.map_or(if i == 0 { "(none)" } else { "" }, String::as_str),
                ' ',
                new_facts
                    .get(i)
                    .map_or(if i == 0 { "(none)" } else { "" }, String::as_str),
            );
        }
        out.push('\n');
    }
    out
}

fn mark(marked: bool, sign: char) -> char {
    if marked {
        sign
    } else {
        ' '
    }
}

/// One line of two columns, each cut to [`COLUMN`] characters.
fn row(out: &mut String, left_mark: char, left: &str, right_mark: char, right: &str) {
    let cell = |text: &str| {
        let one_line = text.replace('\n', " ");
        if one_line.chars().count() > COLUMN {
            let cut: String = one_line.chars().take(COLUMN - 1).collect();
            format!("{cut}…")
        } else {
            one_line
        }
    };
    let left = cell(left);
    let pad = COLUMN.saturating_sub(left.chars().count());
    let line = format!(
        "{left_mark} {left}{} │ {right_mark} {}",
        " ".repeat(pad),
        cell(right)
    );
    out.push_str(line.trim_end());
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::StepId;
    use crate::replay::format::Action;
    use crate::replay::shell::ShellAction;

    fn step(commands: &[&str], facts: &[&str]) -> RecordedStep {
        RecordedStep {
            step: StepId::new(1),
            provenance: "tests/a.test.toml#1".into(),
            instruction_hash: "h".into(),
            provider: "command".parse().expect("a provider"),
            recorded_at: "2026-11-24T12:00:00Z".parse().expect("timestamp"),
            run_started_at: None,
            cost_usd: None,
            actions: commands
                .iter()
                .map(|c| {
                    Action::Shell(ShellAction {
                        command: (*c).into(),
                        cwd: "${BUGATTI_WORKDIR}".into(),
                        exit_code: Some(0),
                        output: "x".into(),
                        timeout_ms: None,
                        volatile: Vec::new(),
                    })
                })
                .collect(),
            relations: None,
            facts: Some(facts.iter().map(|f| (*f).to_string()).collect()),
            agent_version: None,
            failed: None,
            first_look_ms: None,
        }
    }

    fn project() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("bugatti.replay");
        let test = Path::new("tests/a.test.toml");
        let mut in_force = Recording::new("tests/a.test.toml");
        in_force.upsert(step(
            &["cat data.txt", "cat stock.txt"],
            &["2 contains \"x\""],
        ));
        store::save(&store::recording_path(&dir, test), &in_force).expect("in force");
        let mut pending = Recording::new("tests/a.test.toml");
        pending.upsert(step(&["cat data.txt"], &[]));
        store::save(&store::pending_path(&dir, test), &pending).expect("pending");
        (tmp, dir)
    }

    #[test]
    fn review_shows_the_two_side_by_side_and_marks_what_would_go() {
        let (_tmp, dir) = project();
        let tests = list(&dir).expect("listed");
        assert_eq!(tests.len(), 1);
        let text = side_by_side(&tests[0]);
        assert!(
            text.starts_with("tests/a.test.toml step 1: would drop 1 shell action and 1 fact\n"),
            "{text}"
        );
        let stock = text
            .lines()
            .find(|l| l.contains("cat stock.txt"))
            .expect("the dropped action shown");
        assert!(stock.starts_with("- 2 shell cat stock.txt"), "{text}");
        let fact = text
            .lines()
            .find(|l| l.contains("contains"))
            .expect("the dropped fact shown");
        assert!(fact.starts_with("- 2 contains"), "{text}");
        assert!(fact.ends_with("(none)"), "{text}");
    }

    #[test]
    fn accept_puts_it_in_force_and_reject_drops_it() {
        let (_tmp, dir) = project();
        let test = Path::new("tests/a.test.toml");
        let tests = list(&dir).expect("listed");
        assert_eq!(reject(&tests[0]).expect("rejected"), 1);
        assert!(list(&dir).expect("listed").is_empty());
        let kept = store::load(&store::recording_path(&dir, test), "tests/a.test.toml")
            .expect("loads")
            .expect("some");
        assert_eq!(kept.steps[0].actions.len(), 2, "the one in force stays");

        let (_tmp, dir) = project();
        let tests = list(&dir).expect("listed");
        assert_eq!(accept(&dir, &tests[0]).expect("accepted"), 1);
        assert!(!store::pending_path(&dir, test).exists());
        let now = store::load(&store::recording_path(&dir, test), "tests/a.test.toml")
            .expect("loads")
            .expect("some");
        assert_eq!(now.steps[0].actions.len(), 1, "the pending one is in force");
    }
}
