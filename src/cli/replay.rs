//! `supervisor replay review|accept|reject`: the re-recordings that would weaken a recording,
//! waiting for a person (docs/replay.md, "A recording never weakens in silence").

use super::Exit;
use crate::replay::pending::{self, PendingTest};
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

/// What to do with the pending re-recordings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingAction {
    /// Each beside the recording in force; asked one by one on a terminal.
    Review,
    /// Put in force.
    Accept,
    /// Dropped: the recording in force stays.
    Reject,
}

/// `replay review|accept|reject [TEST…] [--all]` in the project of `config` (or the one found
/// from here). Accept and reject need the tests named, or `--all`.
pub fn replay(action: PendingAction, tests: &[String], all: bool, config: Option<PathBuf>) -> Exit {
    let (root, table) = match super::project_config(config) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::USAGE;
        }
    };
    let dir = root.join(
        table
            .as_ref()
            .and_then(|t| t.get("replay"))
            .and_then(|r| r.get("dir"))
            .and_then(|d| d.as_str())
            .unwrap_or(crate::model::replay::DEFAULT_DIR),
    );
    let pending = match pending::list(&dir) {
        Ok(pending) => pending,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::FAILED;
        }
    };
    if action != PendingAction::Review && tests.is_empty() && !all {
        eprintln!(
            "error: name the tests whose pending recordings to {}, or pass --all",
            if action == PendingAction::Accept {
                "accept"
            } else {
                "reject"
            }
        );
        return Exit::USAGE;
    }
    let chosen = match chosen(&pending, tests, &root) {
        Ok(chosen) => chosen,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::USAGE;
        }
    };
    if chosen.is_empty() {
        println!("no pending recordings in {}", dir.display());
        return Exit::SUCCESS;
    }
    match action {
        PendingAction::Review if std::io::stdin().is_terminal() => review_asking(&dir, &chosen),
        PendingAction::Review => {
            for test in &chosen {
                print!("{}", pending::side_by_side(test));
            }
            println!(
                "{} test(s) with a pending recording: `supervisor replay accept TEST` puts one \
                 in force, `supervisor replay reject TEST` keeps the one in force (or --all)",
                chosen.len()
            );
            Exit::SUCCESS
        }
        PendingAction::Accept | PendingAction::Reject => {
            let mut exit = Exit::SUCCESS;
            for test in &chosen {
                if !decide(&dir, test, action) {
                    exit = Exit::FAILED;
                }
            }
            exit
        }
    }
}

/// The pending tests named by `tests` (as given, from here, or from the project root; a short
/// name without `.test.toml` too), or all of them when none is named.
fn chosen<'a>(
    pending: &'a [PendingTest],
    tests: &[String],
    root: &Path,
) -> Result<Vec<&'a PendingTest>, String> {
    if tests.is_empty() {
        return Ok(pending.iter().collect());
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| root.to_path_buf());
    let mut chosen: Vec<&PendingTest> = Vec::new();
    for name in tests {
        let from_root = crate::model::paths::normalize(&cwd.join(name));
        let relative = from_root
            .strip_prefix(root)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| name.clone());
        let found = pending.iter().find(|p| {
            [name.as_str(), relative.as_str()]
                .iter()
                .any(|n| p.test == *n || p.test == format!("{n}.test.toml"))
        });
        match found {
            Some(p) if !chosen.iter().any(|c| c.test == p.test) => chosen.push(p),
            Some(_) => {}
            None => return Err(format!("{name} has no pending recording")),
        }
    }
    Ok(chosen)
}

/// One test accepted or rejected, said on stdout (a failure on stderr): whether it was done.
fn decide(dir: &Path, test: &PendingTest, action: PendingAction) -> bool {
    let (done, word) = match action {
        PendingAction::Accept => (pending::accept(dir, test), "accepted"),
        _ => (pending::reject(test), "rejected"),
    };
    match done {
        Ok(steps) => {
            println!(
                "{word}: {} ({steps} step{})",
                test.test,
                if steps == 1 { "" } else { "s" }
            );
            true
        }
        Err(e) => {
            eprintln!("error: {}: {e}", test.test);
            false
        }
    }
}

/// On a terminal: each test shown, then asked: accept, reject or skip.
fn review_asking(dir: &Path, chosen: &[&PendingTest]) -> Exit {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut exit = Exit::SUCCESS;
    for test in chosen {
        print!("{}", pending::side_by_side(test));
        let answer = loop {
            print!("{}: a accept, r reject, s skip? ", test.test);
            let _ = std::io::stdout().flush();
            match lines.next() {
                Some(Ok(line)) if ["a", "r", "s"].contains(&line.trim()) => {
                    break line.trim().to_string()
                }
                Some(Ok(_)) => continue,
                // End of input: the rest stay pending.
                _ => return exit,
            }
        };
        let action = match answer.as_str() {
            "a" => PendingAction::Accept,
            "r" => PendingAction::Reject,
            _ => continue,
        };
        if !decide(dir, test, action) {
            exit = Exit::FAILED;
        }
    }
    exit
}
