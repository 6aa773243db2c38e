//! `supervisor watch [PATH]` (docs/cli.md "supervisor watch"): on each save of a test file, an include, an
//! asset, the config or an app file `[watch] paths` names, the root tests the change touches run
//! again, as an ordinary suite, with `--replay only` (`--agent`: `auto`, drifted steps go to the
//! agent). One suite at a time: what is saved during a run is gathered into one more run, after
//! the saves have been quiet for [`QUIET`]. Each run is `actors::run::run_suite` in this very
//! process, so it is set up, reported and torn down as `start`'s is; an ending signal during a
//! run tears it down as `start` does, and the watch exits by that signal; between runs nothing is
//! running and the watch exits at once.

mod files;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use files::{Files, Heard};

use super::{check_outputs, load, print_notes, Exit};
use crate::model::load::Suite;
use crate::model::options::RunOptions;
use crate::model::outcome::ExitReason;
use crate::model::replay::ReplayMode;
use crate::model::touched::{may_matter, touched, Touched, WatchScope};
use crate::report::store::artifact_dir;

/// How long the saves must be quiet before a run starts: an editor's save is often several
/// writes (a temporary file, a rename, a `chmod`), and a `git checkout` many, each within a few
/// milliseconds of the last (watchexec waits 50 ms); every millisecond more is the user's wait.
pub const QUIET: Duration = Duration::from_millis(100);

/// The longest a run waits for the saves to be quiet: a file written without pause does not
/// hold every run back.
const SETTLE_AT_MOST: Duration = Duration::from_secs(2);

/// Watches the project of `options` and runs what each save touches, until an ending signal.
/// `agent`: drifted and unrecorded steps go to the agent (`--replay auto`) instead of failing.
pub fn watch(mut options: RunOptions, agent: bool) -> Exit {
    options.replay = Some(if agent {
        ReplayMode::Auto
    } else {
        ReplayMode::Only
    });
    if options.rerun_failed {
        eprintln!("error: --rerun-failed does not apply to watch: each save selects what runs");
        return Exit::USAGE;
    }
    if let Err(e) = check_outputs(&options) {
        eprintln!("error: {e}");
        return Exit::USAGE;
    }
    let Some(mut suite) = load(&options) else {
        return Exit::USAGE;
    };
    say!("supervisor: {}", suite.config_summary());
    print_notes(&suite);
    let artifacts = crate::actors::run::artifact_dir_path(&suite);
    if let Err(e) = artifact_dir::check_dir_writable("the artifact directory", &artifacts) {
        eprintln!("error: {e}");
        return Exit::USAGE;
    }
    let outputs = own_outputs(&options);
    let mut scope = WatchScope::of(&suite, &outputs);
    let (to_loop, heard) = std::sync::mpsc::channel();
    if let Err(e) = listen_for_signals(to_loop.clone()) {
        eprintln!("error: cannot listen for signals ({e}): Ctrl+C could not stop the watch");
        return Exit::from(ExitReason::HarnessError);
    }
    let mut files = match Files::watch(&suite, &scope, to_loop) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("error: cannot watch {}: {e}", suite.project_root.display());
            return Exit::from(ExitReason::HarnessError);
        }
    };
    say!(
        "watch: watching {} root test(s) in {} folder(s) of {} ({}); save a file to run what it touches, Ctrl+C to stop",
        suite.tests.len(),
        files.count(),
        suite.project_root.display(),
        if agent { "--replay auto" } else { "--replay only" },
    );
    let mut runs = 0u32;
    loop {
        let changed = match next_changes(&heard, &mut files, &suite, &scope) {
            Ok(changed) => changed,
            Err(signal) => return stopped(signal),
        };
        let said = describe(&changed, &suite.project_root);
        // The files changed: the suite is read again (a new test, a new include, a new config).
        let Some(reloaded) = load(&options) else {
            say!("watch: {said} changed: the tests do not load (the problems are above); waiting for the next save");
            continue;
        };
        suite = reloaded;
        scope = WatchScope::of(&suite, &outputs);
        if let Err(e) = files.add_app_folders(&suite, &scope) {
            say!("watch: cannot watch every folder of [watch] paths: {e}");
        }
        let (selected, options) = match touched(&suite, &scope, &changed) {
            Touched::Nothing => {
                say!("watch: {said} changed: no root test of the selection uses it");
                continue;
            }
            Touched::All => (suite.clone(), options.clone()),
            Touched::Tests(indices) => narrowed(&suite, &options, &indices),
        };
        runs += 1;
        let names = test_names(&selected);
        say!("watch: run {runs}: {said} changed; running {names}");
        let began = Instant::now();
        let reason = crate::actors::run::run_suite(selected, &options);
        say!(
            "watch: run {runs} {} in {:.2} s: {names} ({said} changed)",
            outcome(reason),
            began.elapsed().as_secs_f64()
        );
        if let ExitReason::Interrupted(_) = reason {
            return Exit::from(reason);
        }
    }
}

/// The copies and `--history`: files each run writes, so never a trigger.
fn own_outputs(options: &RunOptions) -> Vec<PathBuf> {
    options
        .copies
        .iter()
        .map(|c| &c.path)
        .chain(options.history.iter())
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
        .collect()
}

/// The suite cut to the root tests at `indices`, and the options recording that selection (its
/// history entry names those tests, not the whole selection).
fn narrowed(suite: &Suite, options: &RunOptions, indices: &[usize]) -> (Suite, RunOptions) {
    let mut cut = suite.clone();
    cut.tests = indices
        .iter()
        .filter_map(|&i| suite.tests.get(i).cloned())
        .collect();
    let mut options = options.clone();
    options.paths = cut
        .tests
        .iter()
        .map(|t| t.rel_path.display().to_string())
        .collect();
    (cut, options)
}

/// Waits for the next changes that may matter, then for the saves to be quiet; `Err` with the
/// signal that stops the watch.
fn next_changes(
    heard: &Receiver<Heard>,
    files: &mut Files,
    suite: &Suite,
    scope: &WatchScope,
) -> Result<Vec<PathBuf>, i32> {
    let mut changed = BTreeSet::new();
    let mut take = |event: Heard, changed: &mut BTreeSet<PathBuf>| -> Result<bool, i32> {
        match event {
            Heard::Signal(signal) => Err(signal),
            Heard::Files(Err(e)) => {
                tracing::warn!("watch: {e}");
                Ok(false)
            }
            Heard::Files(Ok(event)) => {
                let before = changed.len();
                changed.extend(
                    files
                        .written(event, scope)
                        .into_iter()
                        .filter(|p| may_matter(suite, scope, p)),
                );
                Ok(changed.len() > before)
            }
        }
    };
    while changed.is_empty() {
        // The sender lives as long as the watcher: a closed channel is a watcher gone.
        let event = heard.recv().map_err(|_| signal_hook::consts::SIGTERM)?;
        take(event, &mut changed)?;
    }
    let first = Instant::now();
    let mut quiet_from = first;
    loop {
        let until = (quiet_from + QUIET).min(first + SETTLE_AT_MOST);
        match heard.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok(event) => {
                if take(event, &mut changed)? {
                    quiet_from = Instant::now();
                }
            }
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    Ok(changed.into_iter().collect())
}

/// The ending signals (`process::signals::ENDING`) to the watch loop. A run installs its own
/// listener besides this one (both hear a signal): the run tears down, then the loop ends. A
/// signal heard while a run is starting, before its listener is up, is noted for that listener.
fn listen_for_signals(to: Sender<Heard>) -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new(crate::process::signals::ENDING)?;
    std::thread::Builder::new()
        .name("watch-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                // A suite that is starting has no listener yet: it answers this one when it has.
                crate::process::signals::note_unanswered(signal);
                if to.send(Heard::Signal(signal)).is_err() {
                    return;
                }
            }
        })?;
    Ok(())
}

/// Between runs: nothing is running, the watch ends by the signal's code.
fn stopped(signal: i32) -> Exit {
    let kind = crate::process::signals::interrupt_signal(signal);
    say!("watch: stopped by {}", kind.name());
    Exit::from(ExitReason::Interrupted(kind))
}

/// The changed files for the console: relative to the project root, the first three.
fn describe(changed: &[PathBuf], root: &Path) -> String {
    let shown: Vec<String> = changed
        .iter()
        .take(3)
        .map(|p| {
            crate::model::paths::relative_to(root, p)
                .display()
                .to_string()
        })
        .collect();
    match changed.len() {
        n if n > 3 => format!("{} and {} more", shown.join(", "), n - 3),
        _ => shown.join(", "),
    }
}

/// The root tests of a run, for the console.
fn test_names(suite: &Suite) -> String {
    let names: Vec<String> = suite
        .tests
        .iter()
        .map(|t| t.rel_path.display().to_string())
        .collect();
    format!(
        "{} test{}: {}",
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        names.join(", ")
    )
}

/// A run's verdict in a word or two.
fn outcome(reason: ExitReason) -> String {
    match reason {
        ExitReason::Success => "passed".into(),
        ExitReason::TestFailed => "failed".into(),
        ExitReason::HarnessError => "harness error".into(),
        ExitReason::InvalidInput => "not run (invalid input)".into(),
        ExitReason::Interrupted(signal) => format!("interrupted by {}", signal.name()),
    }
}
