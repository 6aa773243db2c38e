//! Which root tests a `start` or `list` selects beyond discovery: the shard `--shard auto` finds
//! in the CI's environment, the tests `--rerun-failed` takes from history, and `supervisor list`,
//! which prints the selection without running it.

use super::{load, print_notes, restore_default_sigpipe, Exit};
use crate::model::load::Suite;
use crate::model::options::{NoTests, RunOptions};
use crate::model::shard::{self, Shard, ShardArg};
use crate::report::records::history;

/// `--shard`'s shard, `auto` read from this process's environment (said on stderr).
pub fn resolve_shard(arg: Option<ShardArg>) -> Result<Option<Shard>, String> {
    Ok(match arg {
        None => None,
        Some(ShardArg::Fixed(shard)) => Some(shard),
        Some(ShardArg::Auto) => match shard::from_env(|name| std::env::var(name).ok())? {
            Some(found) => {
                eprintln!(
                    "note: --shard auto: shard {} from {}",
                    found.shard, found.from
                );
                Some(found.shard)
            }
            None => {
                eprintln!(
                    "note: --shard auto: no CI shard variable is set (BUGATTI_SHARD, CI_NODE_INDEX, \
                     CIRCLE_NODE_INDEX, BUILDKITE_PARALLEL_JOB, JOB_COMPLETION_INDEX): the whole suite runs"
                );
                None
            }
        },
    })
}

/// `--rerun-failed`: keeps the root tests that did not pass in the previous suite. Ok(false):
/// nothing to run (said why); Err: the exit code.
/// The previous suite is the last one that ran the whole selection (an unsharded run, a merge of
/// shards, or an earlier `--rerun-failed`), never one shard's own entry, which holds only its
/// share of the tests. `list` says what it selected on stderr (its stdout is the list).
pub(super) fn select_failed(
    suite: &mut Suite,
    options: &RunOptions,
    on_stderr: bool,
) -> Result<bool, Exit> {
    let say = |line: String| {
        if on_stderr {
            eprintln!("{line}");
        } else {
            say!("{line}");
        }
    };
    let entries = history::read(&suite.history_file);
    let Some(last) = crate::model::history::previous_whole(&entries) else {
        eprintln!(
            "error: --rerun-failed: no previous suite (other than one shard's) in {} to take the failed tests from",
            suite.history_file.display()
        );
        return Err(Exit::USAGE);
    };
    let failed = last.not_passed();
    if failed.is_empty() {
        say(format!(
            "supervisor: --rerun-failed: every root test passed in the previous suite {}; nothing to run",
            last.suite_id
        ));
        return Ok(false);
    }
    suite
        .tests
        .retain(|t| failed.iter().any(|f| std::path::Path::new(f) == t.rel_path));
    say(format!(
        "supervisor: --rerun-failed: {} root test(s) that did not pass in suite {}: {}",
        suite.tests.len(),
        last.suite_id,
        failed.join(", ")
    ));
    if suite.tests.is_empty() {
        let why = "--rerun-failed: none of them is among the selected root tests any more";
        return match no_tests(options, why) {
            Exit::SUCCESS => Ok(false),
            code => Err(code),
        };
    }
    Ok(true)
}

/// `--no-tests`: an empty selection (`why`) is an error (exit 2, the default), a warning or a
/// note; the exit code to end with, nothing having run.
pub(super) fn no_tests(options: &RunOptions, why: &str) -> Exit {
    match options.no_tests {
        NoTests::Fail => {
            eprintln!(
                "error: {why}\n  = help: `--no-tests pass` makes an empty selection a success"
            );
            Exit::USAGE
        }
        NoTests::Warn => {
            eprintln!("warning: no root tests to run: {why}");
            Exit::SUCCESS
        }
        NoTests::Pass => {
            eprintln!("note: no root tests to run: {why}");
            Exit::SUCCESS
        }
    }
}

/// The selection is empty, said as `--no-tests` wants: Some(exit code) to end with.
pub(super) fn empty_selection(suite: &Suite, options: &RunOptions) -> Option<Exit> {
    let why = suite.no_tests.as_ref()?;
    Some(no_tests(options, why))
}

/// `supervisor list`: the root tests the same selection would run, as `start` selects them
/// (discovery, tags, -g, -E, --only-changed, shard, --rerun-failed), without running or writing
/// anything.
pub fn list(options: &RunOptions, json: bool) -> Exit {
    restore_default_sigpipe();
    let Some(mut suite) = load(options) else {
        return Exit::USAGE;
    };
    print_notes(&suite);
    if let Some(code) = empty_selection(&suite, options) {
        return code;
    }
    if options.rerun_failed {
        match select_failed(&mut suite, options, true) {
            Ok(true) => {}
            Ok(false) => suite.tests.clear(),
            Err(code) => return code,
        }
    }
    if json {
        let tests: Vec<serde_json::Value> = suite
            .tests
            .iter()
            .map(|t| {
                serde_json::json!({
                    "test_file": t.rel_path.to_string_lossy(),
                    "name": t.name,
                    "tags": t.tags,
                    "quarantined": t.quarantined,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&tests).unwrap_or_else(|_| "[]".to_string())
        );
    } else {
        for t in &suite.tests {
            println!("{}", t.rel_path.display());
        }
    }
    Exit::SUCCESS
}
