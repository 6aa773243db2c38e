//! The `supervisor` binary: the CLI edge only. Parse (clap), load and validate (`model`), hand
//! to the runner, map to an exit code. Invalid input is exit 2 before anything runs.

use std::path::PathBuf;
use std::process::ExitCode;

use bugatti::model::layers::Layer;
use bugatti::model::load::{load_suite, Suite, CONFIG_FILE_NAME};
use bugatti::model::options::{RunOptions, Verbosity};
use bugatti::model::replay::ReplayMode;
use bugatti::model::shard::{self, ShardArg, ShardBy};
use bugatti::report::{records::history, store::artifact_dir};
use clap::{Args, Parser, Subcommand};

#[path = "supervisor/doctor.rs"]
mod doctor;
#[path = "supervisor/init.rs"]
mod init;
use doctor::doctor;

const EXIT_CODES: &str = "\
Exit codes:
  0        every root test passed (warnings allowed unless --strict-warnings)
  1        at least one root test failed (a step ERROR, protocol error or step timeout), or
           passed only on a retry under --fail-on-flaky (quarantined tests never count)
  2        invalid input: bad flags, config or test file, include cycle, unknown --skip-cmd,
           missing asset, --from-checkpoint of a checkpoint never saved; nothing was run
  3        harness error: a setup command, readiness check, the provider's start, a
           long-lived command or a [checkpoint] save / restore failed
  130/143  interrupted by SIGINT / SIGTERM (reports are still written)
Across several root tests the highest-ranked code wins: 130/143, then 2, then 3, then 1, then 0.";

#[derive(Parser, Debug)]
#[command(
    name = "supervisor",
    version,
    about = "Plain-English, agent-assisted verification of local applications",
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run root tests, supervised: the main job.
    #[command(after_help = EXIT_CODES)]
    Start(RunArgs),
    /// The same as `start` (Bugatti's spelling).
    #[command(after_help = EXIT_CODES)]
    Test(RunArgs),
    /// Parse, expand and validate; print each root test's plan and effective config. Runs
    /// nothing, writes nothing. Exit 0, or 2 with every problem found.
    Check(RunArgs),
    /// Print the root tests a `start` with the same selection (PATH, -g, --grep-invert, --tag,
    /// --shard, --rerun-failed) would run, one test file per line (--json: one array). Runs
    /// nothing, writes nothing. Exit 0, or 2 on invalid input or an empty selection.
    List(ListArgs),
    /// Write a commented starter config and an example test into the current directory.
    Init,
    /// Check the config and tests, the provider's program, fixed ports and the artifact
    /// directory. Exit 0 when all is well, 1 when a check failed, 2 on invalid input.
    Doctor {
        /// Project config [default: ./bugatti.config.toml if present]
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Merge suite directories (the shards of one CI run, e.g. copied from artifacts) into one
    /// suite: summary.json, summary.md, junit.xml and report.html. Exit 0 when every root test
    /// passed, 1 when one did not, 2 on unreadable input.
    Merge {
        /// Suite directories (`.bugatti/suites/<suite_id>`, their runs beside them in `../../runs`)
        #[arg(value_name = "DIR", required = true)]
        dirs: Vec<PathBuf>,
        /// Where to write the merged suite [default: a new suite under the project's artifact directory]
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Project config (for the artifact directory) [default: ./bugatti.config.toml if present]
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Append the merged suite's history entry to FILE (the one the shards read with
        /// `--history`) [default: the project's history, <artifact_dir>/history.jsonl]
        #[arg(long, value_name = "FILE")]
        history: Option<PathBuf>,
        /// A shard that is missing still lists its tests as not run, but the merge exits by the
        /// tests that ran (without it, a missing shard fails the merge)
        #[arg(long = "allow-partial")]
        allow_partial: bool,
    },
    /// Print where a suite's reports are and its summary. Exit 0 when every root test passed,
    /// 1 when one did not, 2 when there is no such suite.
    Report {
        /// A suite id (or a unique prefix of one), `last`, or a suite folder such as `merge
        /// --out`'s [default: last; with --history FILE, the last whole suite FILE records]
        #[arg(value_name = "SUITE_ID|last|DIR")]
        suite: Option<String>,
        /// Also open report.html in the desktop's browser (xdg-open / open)
        #[arg(long)]
        open: bool,
        /// Also print the trends of the suite's selection from history: pass rate, duration and
        /// cost over the last 30 suites, the tests that flip most, the slowest, the costliest
        #[arg(long)]
        trends: bool,
        /// The history file to read the trends from [default: <artifact_dir>/history.jsonl]
        #[arg(long, value_name = "FILE")]
        history: Option<PathBuf>,
        /// Also write the suite's timeline as Chrome trace events to FILE (Perfetto,
        /// chrome://tracing): a process per test, threads setup / steps / agent
        #[arg(long = "chrome-trace", value_name = "FILE")]
        chrome_trace: Option<PathBuf>,
        /// Project config [default: ./bugatti.config.toml if present]
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Prune old suites with their runs and kept workspaces. With neither option, applies
    /// `[supervisor] keep_runs` (default 200 runs).
    Clean {
        /// Keep the newest suites holding at most N runs (the newest suite always stays)
        #[arg(long, value_name = "N")]
        keep: Option<usize>,
        /// Remove suites that started more than DAYS days ago
        #[arg(long = "older-than", value_name = "DAYS")]
        older_than: Option<u64>,
        /// Project config [default: ./bugatti.config.toml if present]
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

#[derive(Args, Debug, Default)]
struct RunArgs {
    /// Test files, directories to discover in, or short names (`checkout` →
    /// `checkout.test.toml` under the project root). Default: the whole project root, or the
    /// `[supervisor] tests` globs.
    #[arg(value_name = "PATH")]
    paths: Vec<String>,
    /// Project config; its directory is the project root [default: ./bugatti.config.toml if present]
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Root tests run at once [default: `[supervisor] max_parallel`, else 4]
    #[arg(short = 'j', long, value_name = "N")]
    jobs: Option<usize>,
    /// Do not launch this harness command: you run it yourself (its readiness is still checked,
    /// so a probe on an `auto` port or on its own output is refused). Repeatable.
    #[arg(long = "skip-cmd", value_name = "NAME")]
    skip_cmd: Vec<String>,
    /// Do not wait for this command's readiness. Repeatable.
    #[arg(long = "skip-readiness", value_name = "NAME")]
    skip_readiness: Vec<String>,
    /// Override `[provider] name` (claude-code, codex, pi, command, shell)
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// Default per-step timeout in seconds [default: 300]
    #[arg(long = "step-timeout", value_name = "SECS")]
    step_timeout: Option<u64>,
    /// Whole-invocation deadline in seconds; on expiry behaves like SIGTERM
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Re-run a failed root test up to N times; a pass after a failure is reported as flaky [default: 0]
    #[arg(long, value_name = "N")]
    retries: Option<u32>,
    /// After the first failed root test, start no new ones
    #[arg(long = "fail-fast")]
    fail_fast: bool,
    /// After N failed root tests, start no new ones: the rest are `not_run`, each named
    /// (`--fail-fast` is `--max-fail 1`; also `[supervisor] max_fail`)
    #[arg(long = "max-fail", value_name = "N")]
    max_fail: Option<u32>,
    /// Run each selected root test N times (`-j` still bounds how many run at once) and
    /// classify its stability: stable, app-flaky, verdict-flaky, broken (also `[supervisor]
    /// repeat`) [default: 1]
    #[arg(long, value_name = "N")]
    repeat: Option<u32>,
    /// The session's browser with a window (`[browser] headless = false`); needs a display
    /// (DISPLAY or WAYLAND_DISPLAY)
    #[arg(long)]
    headed: bool,
    #[command(flatten)]
    grep: GrepArgs,
    /// A root test that passed only on a retry fails the suite (also `[supervisor] flaky = "fail"`)
    #[arg(long = "fail-on-flaky")]
    fail_on_flaky: bool,
    /// A WARN step fails its test
    #[arg(long = "strict-warnings")]
    strict_warnings: bool,
    /// Run only the K-th of N slices of the discovered root tests (1-based). `auto`: K and N from
    /// the CI's environment (BUGATTI_SHARD=K/N; GitLab CI_NODE_INDEX/CI_NODE_TOTAL; CircleCI
    /// CIRCLE_NODE_*; Buildkite BUILDKITE_PARALLEL_JOB*; Kubernetes JOB_COMPLETION_INDEX with
    /// BUGATTI_SHARD_TOTAL), the whole suite when none is set
    #[arg(long, value_name = "K/N|auto")]
    shard: Option<ShardArg>,
    /// How shards are split: count (round-robin by path) or duration (longest first into the
    /// least loaded shard, from each test's recent durations in history) [default: duration when
    /// history holds durations for the selection, else count]
    #[arg(long = "shard-by", value_name = "count|duration")]
    shard_by: Option<ShardBy>,
    /// Read and write history in FILE instead of <artifact_dir>/history.jsonl (a CI cache or
    /// artifact can carry it between runs)
    #[arg(long, value_name = "FILE")]
    history: Option<PathBuf>,
    /// Resume each root test from checkpoint NAME, saved by an earlier run: `[checkpoint] restore`
    /// runs after setup, then the steps up to and including NAME's are `skipped` (steps with
    /// `setup = true` still run). A checkpoint never saved is an error (exit 2)
    #[arg(long = "from-checkpoint", value_name = "NAME")]
    from_checkpoint: Option<String>,
    /// Run only root tests carrying one of these tags. Repeatable.
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// Also write the suite's JUnit XML there
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Also write the suite's JSON summary there
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write the suite's HTML report (report.html) there
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Run only the root tests that did not pass in the previous suite of this project
    #[arg(long = "rerun-failed", visible_alias = "last-failed")]
    rerun_failed: bool,
    /// Replay mode over `[replay] mode` (default auto): off (always the agent), auto (replay a
    /// step's recording, the agent on a miss or drift), record (always the agent, recordings
    /// renewed) or only (no agent: a step without a usable recording is an error)
    #[arg(long, value_name = "MODE")]
    replay: Option<ReplayMode>,
    /// Less console output
    #[arg(short, long, conflicts_with = "verbose")]
    quiet: bool,
    /// More console output
    #[arg(short, long)]
    verbose: bool,
}

/// `-g` / `--grep-invert`: shared by `start`, `test`, `check` and `list`.
#[derive(Args, Debug, Clone, Default)]
struct GrepArgs {
    /// Run only root tests whose test name or file path matches the regular expression PATTERN
    /// (as Playwright's -g)
    #[arg(short = 'g', long = "grep", value_name = "PATTERN")]
    grep: Option<String>,
    /// Run only root tests whose test name and file path do not match PATTERN (as Playwright's
    /// --grep-invert)
    #[arg(long = "grep-invert", value_name = "PATTERN")]
    grep_invert: Option<String>,
}

/// `supervisor list`: the selection flags of `start`, and how to print.
#[derive(Args, Debug)]
struct ListArgs {
    /// Test files, directories to discover in, or short names (as `start`)
    #[arg(value_name = "PATH")]
    paths: Vec<String>,
    /// Project config; its directory is the project root [default: ./bugatti.config.toml if present]
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    grep: GrepArgs,
    /// Only root tests carrying one of these tags. Repeatable.
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// Only the K-th of N slices, split as `start --shard` splits them
    #[arg(long, value_name = "K/N|auto")]
    shard: Option<ShardArg>,
    /// How shards are split (as `start --shard-by`)
    #[arg(long = "shard-by", value_name = "count|duration")]
    shard_by: Option<ShardBy>,
    /// The history file the split and --rerun-failed read [default: <artifact_dir>/history.jsonl]
    #[arg(long, value_name = "FILE")]
    history: Option<PathBuf>,
    /// Only the root tests that did not pass in the previous whole suite
    #[arg(long = "rerun-failed", visible_alias = "last-failed")]
    rerun_failed: bool,
    /// One JSON array of the root tests (test_file, name, tags, quarantined) instead of lines
    #[arg(long)]
    json: bool,
}

impl ListArgs {
    fn into_options(self) -> Result<(RunOptions, bool), String> {
        let json = self.json;
        let run = RunArgs {
            paths: self.paths,
            config: self.config,
            grep: self.grep,
            tags: self.tags,
            shard: self.shard,
            shard_by: self.shard_by,
            history: self.history,
            rerun_failed: self.rerun_failed,
            ..RunArgs::default()
        };
        Ok((run.into_options()?, json))
    }
}

impl RunArgs {
    /// The options, `--shard auto` read from this process's environment (said on stderr).
    fn into_options(self) -> Result<RunOptions, String> {
        let shard = match self.shard {
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
        };
        Ok(RunOptions {
            config: self.config,
            paths: self.paths,
            jobs: self.jobs,
            skip_cmd: self.skip_cmd,
            skip_readiness: self.skip_readiness,
            provider: self.provider,
            step_timeout: self.step_timeout,
            timeout: self.timeout,
            retries: self.retries,
            fail_fast: self.fail_fast,
            max_fail: self.max_fail,
            grep: self.grep.grep,
            grep_invert: self.grep.grep_invert,
            repeat: self.repeat,
            headed: self.headed,
            fail_on_flaky: self.fail_on_flaky,
            strict_warnings: self.strict_warnings,
            shard,
            shard_by: self.shard_by,
            history: self.history,
            from_checkpoint: self.from_checkpoint,
            tags: self.tags,
            junit: self.junit,
            json: self.json,
            html: self.html,
            rerun_failed: self.rerun_failed,
            replay: self.replay,
            verbosity: if self.quiet {
                Verbosity::Quiet
            } else if self.verbose {
                Verbosity::Verbose
            } else {
                Verbosity::Normal
            },
        })
    }
}

/// A line on stdout for the commands whose exit code is a run's verdict (`start`, `merge`): a
/// reader that went away (`supervisor start | head -1`) must not turn a finished run into a panic
/// or a SIGPIPE death, so a failed write is dropped and the run's own exit code stands. The
/// commands that only print (`check`, `report`, `doctor`, …) end with SIGPIPE (141) instead, as
/// Unix filters do.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

#[path = "supervisor/suites.rs"]
mod suites;
use suites::{merge, report};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Start(args) | Command::Test(args) => {
            let options = match args.into_options() {
                Ok(options) => options,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            if let Err(e) = check_copies(&options) {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
            match load(&options) {
                Some(mut suite) => {
                    say!("supervisor: {}", suite.config_summary());
                    print_notes(&suite);
                    let artifacts = bugatti::actors::run::artifact_dir_path(&suite);
                    if let Err(e) =
                        artifact_dir::check_dir_writable("the artifact directory", &artifacts)
                    {
                        eprintln!("error: {e}");
                        return ExitCode::from(2);
                    }
                    if options.rerun_failed {
                        match select_failed(&mut suite, false) {
                            Ok(true) => {}
                            Ok(false) => return ExitCode::SUCCESS,
                            Err(code) => return code,
                        }
                    }
                    run_suite(suite, options)
                }
                None => ExitCode::from(2),
            }
        }
        Command::Check(args) => {
            restore_default_sigpipe();
            let options = match args.into_options() {
                Ok(options) => options,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            match load(&options) {
                Some(suite) => {
                    if suite.config_path.is_none() {
                        eprintln!("note: {}", suite.config_summary());
                    }
                    print_notes(&suite);
                    print_check(&suite, options.verbosity);
                    ExitCode::SUCCESS
                }
                None => ExitCode::from(2),
            }
        }
        Command::List(args) => list(args),
        Command::Init => init::init(),
        Command::Doctor { config } => doctor(config),
        Command::Merge {
            dirs,
            out,
            config,
            history,
            allow_partial,
        } => merge(&dirs, out, config, history, allow_partial),
        Command::Report {
            suite,
            open,
            trends,
            history,
            chrome_trace,
            config,
        } => report(
            suite.as_deref(),
            open,
            trends.then_some(history),
            chrome_trace,
            config,
        ),
        Command::Clean {
            keep,
            older_than,
            config,
        } => clean(keep, older_than, config),
    }
}

/// `--junit` / `--json` / `--html` targets must be writable before anything runs (exit 2).
fn check_copies(options: &RunOptions) -> Result<(), String> {
    for (flag, path) in [
        ("--junit", &options.junit),
        ("--json", &options.json),
        ("--html", &options.html),
        ("--history", &options.history),
    ] {
        if let Some(path) = path {
            artifact_dir::check_writable(flag, path).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// The artifact directory of the project `config` (or the one found from here), without
/// loading its tests: `report`, `clean` and `merge` work even when a test file is broken.
/// Also `[supervisor] keep_runs`.
pub(crate) fn artifact_dir_of(config: Option<PathBuf>) -> Result<(PathBuf, usize), String> {
    let cwd = std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?;
    let config = match config {
        Some(c) if !c.is_file() => {
            return Err(format!("config file {} does not exist", c.display()))
        }
        Some(c) => Some(std::path::absolute(&c).unwrap_or(c)),
        None => bugatti::model::load::find_config_upward(&cwd),
    };
    let root = config
        .as_deref()
        .and_then(std::path::Path::parent)
        .map_or(cwd, std::path::Path::to_path_buf);
    let table: Option<toml::Table> = config
        .as_deref()
        .and_then(|c| {
            bugatti::model::user_file::read_to_string(c, bugatti::model::user_file::CONFIG_MAX).ok()
        })
        .and_then(|t| t.parse().ok());
    let sup = table.as_ref().and_then(|t| t.get("supervisor"));
    let dir = sup
        .and_then(|s| s.get("artifact_dir"))
        .and_then(|v| v.as_str())
        .unwrap_or(bugatti::model::layers::DEFAULT_ARTIFACT_DIR);
    let keep = sup
        .and_then(|s| s.get("keep_runs"))
        .and_then(toml::Value::as_integer)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(bugatti::model::layers::DEFAULT_KEEP_RUNS);
    Ok((root.join(dir), keep))
}

/// `--rerun-failed`: keeps the root tests that did not pass in the previous suite. Ok(false):
/// nothing to run (said why); Err: the exit code.
/// The previous suite is the last one that ran the whole selection (an unsharded run, a merge of
/// shards, or an earlier `--rerun-failed`), never one shard's own entry, which holds only its
/// share of the tests. `list` says what it selected on stderr (its stdout is the list).
fn select_failed(suite: &mut Suite, on_stderr: bool) -> Result<bool, ExitCode> {
    let say = |line: String| {
        if on_stderr {
            eprintln!("{line}");
        } else {
            say!("{line}");
        }
    };
    let Some(last) = history::read(&suite.history_file)
        .into_iter()
        .rev()
        .find(|e| e.selection.shard.is_none())
    else {
        eprintln!(
            "error: --rerun-failed: no previous suite (other than one shard's) in {} to take the failed tests from",
            suite.history_file.display()
        );
        return Err(ExitCode::from(2));
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
        eprintln!("error: --rerun-failed: none of them is among the selected root tests any more");
        return Err(ExitCode::from(2));
    }
    Ok(true)
}

/// `supervisor list`: the root tests the same selection would run, as `start` selects them
/// (discovery, tags, -g, shard, --rerun-failed), without running or writing anything.
fn list(args: ListArgs) -> ExitCode {
    restore_default_sigpipe();
    let (options, json) = match args.into_options() {
        Ok(found) => found,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let Some(mut suite) = load(&options) else {
        return ExitCode::from(2);
    };
    print_notes(&suite);
    if options.rerun_failed {
        match select_failed(&mut suite, true) {
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
    ExitCode::SUCCESS
}

fn clean(keep: Option<usize>, older_than: Option<u64>, config: Option<PathBuf>) -> ExitCode {
    let (dir, keep_runs) = match artifact_dir_of(config) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let keep = match (keep, older_than) {
        (None, None) => Some(keep_runs),
        (keep, _) => keep,
    };
    let age = older_than
        .map(|d| chrono::Duration::days(i64::try_from(d).unwrap_or(i64::MAX / 86_400_000)));
    let pruned = artifact_dir::prune(&dir, keep, age, &[]);
    for p in &pruned.problems {
        eprintln!("warning: {p}");
    }
    println!(
        "removed {} suite(s), {} run(s), {} workspace(s) from {}",
        pruned.suites.len(),
        pruned.runs,
        pruned.workspaces,
        dir.display()
    );
    if pruned.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `check` only prints: like any Unix filter it should end quietly when its reader goes away
/// (`supervisor check | head`) instead of panicking on a broken pipe. Not for `start`, where a
/// dead agent's closed stdin must be an error to handle, not a death.
pub(crate) fn restore_default_sigpipe() {
    // SAFETY: resetting a signal disposition to its default touches no memory of ours.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Load and validate; on problems print them all to stderr and return None.
fn load(options: &RunOptions) -> Option<Suite> {
    match load_suite(options) {
        Ok(suite) => Some(suite),
        Err(problems) => {
            eprintln!("{problems}");
            None
        }
    }
}

fn print_notes(suite: &Suite) {
    for note in &suite.notes {
        eprintln!("note: {note}");
    }
}

fn first_line(text: &str) -> String {
    let mut lines = text.trim().lines();
    let first = lines.next().unwrap_or("").trim().to_string();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first
    }
}

/// `writeln!` into a String, which cannot fail.
macro_rules! outln {
    ($out:expr) => {
        $out.push('\n')
    };
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}

fn print_rows(out: &mut String, rows: &[(String, String, Layer)], indent: &str) {
    let kw = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let vw = rows
        .iter()
        .map(|r| r.1.chars().count())
        .max()
        .unwrap_or(0)
        .min(60);
    for (k, v, l) in rows {
        outln!(out, "{indent}{k:kw$}  {v:vw$}  ({l})");
    }
}

/// `-q`: plans only; default: the shared config once, then what each test changes; `-v`: every
/// test's whole effective config.
fn print_check(suite: &Suite, verbosity: Verbosity) {
    let mut text = String::new();
    let out = &mut text;
    print_check_header(out, suite);
    let base_rows = suite.base.rows();
    if verbosity == Verbosity::Normal {
        outln!(out);
        outln!(out, "effective config (before test overrides):");
        print_rows(out, &base_rows, "  ");
    }
    print_agent_facts(out, suite);
    let mut steps = 0;
    for test in &suite.tests {
        // Which steps have a recording this run could replay (see docs/replay.md).
        let replay = &test.effective.replay;
        let replays =
            bugatti::model::replay::applies(replay.mode.value, test.effective.provider.name.value);
        let recording_path = bugatti::replay::store::recording_path(
            &replay.dir_in(&suite.project_root),
            &test.rel_path,
        );
        let test_path = test.rel_path.to_string_lossy().into_owned();
        let recording = replays
            .then(|| bugatti::replay::store::load(&recording_path, &test_path))
            // No file at all: one line for the test rather than a mark on every step.
            .filter(|loaded| !matches!(loaded, Ok(None)));
        let shown_path = recording_path
            .strip_prefix(&suite.project_root)
            .unwrap_or(&recording_path)
            .display()
            .to_string();
        print_test_heading(out, test, replays, &recording, &shown_path);
        let shown = PlanShown {
            replays,
            max_age_days: replay.max_age_days.value,
            timeouts: verbosity == Verbosity::Verbose,
        };
        print_plan(out, test, &recording, &shown);
        steps += test.plan.len();
        print_test_config(out, test, &base_rows, verbosity);
    }
    outln!(out);
    outln!(
        out,
        "ok: {} root test{}, {steps} step{}; nothing was run",
        suite.tests.len(),
        if suite.tests.len() == 1 { "" } else { "s" },
        if steps == 1 { "" } else { "s" }
    );
    // A closed stdout (`| head`) is not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
}

/// Where the project and its configs are, and how many root tests were selected.
fn print_check_header(out: &mut String, suite: &Suite) {
    outln!(out, "project root: {}", suite.project_root.display());
    match &suite.config_path {
        Some(p) => outln!(out, "config:       {}", p.display()),
        None => outln!(
            out,
            "config:       none ({CONFIG_FILE_NAME} not found; defaults apply)"
        ),
    }
    if let Some(g) = &suite.global_config_path {
        outln!(out, "global:       {}", g.display());
    }
    outln!(
        out,
        "root tests:   {} selected of {} discovered",
        suite.tests.len(),
        suite.discovered
    );
}

/// What the agent will have that `check` can tell now: Codex's price (it reports tokens only,
/// so whether max_cost_usd can stop it), the MCP servers a claude-code agent gets.
fn print_agent_facts(out: &mut String, suite: &Suite) {
    let p = &suite.base.provider;
    if p.name.value.info().prices_tokens {
        let config = bugatti::providers::codex_home::user_home().map(|h| h.dir.join("config.toml"));
        match bugatti::providers::pricing::codex_price(
            p.price_per_mtok.value,
            &p.agent_args.value,
            config.as_deref(),
        ) {
            Ok((price, from)) => outln!(out, "codex price:  {price} ({from})"),
            Err(why) => outln!(
                out,
                "codex price:  unknown, so cost_usd stays empty and max_cost_usd cannot stop Codex: {why}"
            ),
        }
    }
    // docs/browser.md: the MCP servers a claude-code agent gets.
    if p.name.value.info().mcp.reads_project_mcp_json() {
        let mut servers = Vec::new();
        if p.console.value {
            servers.push("bugatti (the console)".to_string());
        }
        if suite.base.browser.as_ref().is_some_and(|b| b.value.mcp) {
            servers.push("browser (Playwright MCP on the session's browser)".to_string());
        }
        let cwd = match p.cwd.value.as_deref() {
            Some(dir) => suite.project_root.join(dir),
            None => suite.project_root.clone(),
        };
        if let Ok(Some(project)) = bugatti::model::mcp_json::read(&cwd, &[]) {
            let file = project.path.display();
            servers.extend(project.names().iter().map(|n| format!("{n} ({file})")));
        }
        if !servers.is_empty() {
            outln!(out, "mcp servers:  {}", servers.join(", "));
        }
    }
}

/// What the replay check found for one test: `None` when it does not replay or has no file.
type Loaded =
    Option<Result<Option<bugatti::replay::format::Recording>, bugatti::replay::store::LoadError>>;

/// A test's heading: its path, name and tags, its plan's size, and its recording's state.
fn print_test_heading(
    out: &mut String,
    test: &bugatti::model::load::RootTest,
    replays: bool,
    recording: &Loaded,
    shown_path: &str,
) {
    outln!(out);
    let tags = if test.tags.is_empty() {
        String::new()
    } else {
        format!("  [tags: {}]", test.tags.join(", "))
    };
    outln!(
        out,
        "== {} — \"{}\"{tags}{}",
        test.rel_path.display(),
        test.name,
        if test.quarantined {
            "  [quarantined: runs, never decides the exit code]"
        } else {
            ""
        }
    );
    outln!(
        out,
        "  plan ({} step{}):",
        test.plan.len(),
        if test.plan.len() == 1 { "" } else { "s" }
    );
    if replays && recording.is_none() {
        outln!(
            out,
            "  replay: no recording yet ({shown_path} is written when the agent passes a step)"
        );
    }
    if let Some(Err(e)) = recording {
        outln!(
            out,
            "  replay: {shown_path} is unusable, the agent will run every step: {e}"
        );
    }
}

/// What a plan's lines say besides each step.
struct PlanShown {
    replays: bool,
    max_age_days: u32,
    /// Every step's timeout and where it comes from (`-v`), not only a step's own.
    timeouts: bool,
}

/// A test's steps, one line each, with their marks (setup, skip, checkpoint, timeout, replay).
fn print_plan(
    out: &mut String,
    test: &bugatti::model::load::RootTest,
    recording: &Loaded,
    shown: &PlanShown,
) {
    let PlanShown {
        replays,
        max_age_days,
        ..
    } = *shown;
    let pw = test
        .plan
        .iter()
        .map(|s| s.provenance().chars().count())
        .max()
        .unwrap_or(0);
    for s in &test.plan {
        let mut marks = Vec::new();
        if s.setup {
            marks.push("setup".to_string());
        }
        if s.skip {
            marks.push("skip".to_string());
        }
        if let Some(c) = &s.checkpoint {
            marks.push(format!("checkpoint: {c}"));
        }
        let t = s.timeout.value.as_secs();
        match (s.timeout.source, shown.timeouts) {
            (Layer::Step, false) => marks.push(format!("timeout: {t}s")),
            (Layer::Step, true) => {
                marks.push(format!("timeout: {t}s from the step's timeout_secs"))
            }
            (layer, true) => marks.push(format!(
                "timeout: {t}s from provider.step_timeout_secs ({layer})"
            )),
            (_, false) => {}
        }
        if replays && !s.replay {
            marks.push("replay = false: always the agent".to_string());
        } else if let (Some(Ok(Some(loaded))), false) = (recording, s.skip) {
            marks.push(format!(
                "replay: {}",
                bugatti::replay::store::check_status(
                    loaded,
                    &bugatti::replay::store::StepKey {
                        step: s.step_id,
                        provenance: s.provenance(),
                        instruction_hash: String::new(),
                        provider: test.effective.provider.name.value,
                    },
                    chrono::Utc::now(),
                    max_age_days,
                )
            ));
        }
        let marks = if marks.is_empty() {
            String::new()
        } else {
            format!("[{}] ", marks.join(", "))
        };
        outln!(
            out,
            "  {:>3}  {:pw$}  {marks}{}",
            s.step_id,
            s.provenance(),
            first_line(&s.instruction)
        );
    }
}

/// A test's effective config: whole (`-v`), or what differs from the shared one (default).
fn print_test_config(
    out: &mut String,
    test: &bugatti::model::load::RootTest,
    base_rows: &[(String, String, Layer)],
    verbosity: Verbosity,
) {
    match verbosity {
        Verbosity::Quiet => {}
        Verbosity::Verbose => {
            outln!(out, "  effective config:");
            print_rows(out, &test.effective.rows(), "    ");
        }
        Verbosity::Normal => {
            let own: Vec<(String, String, Layer)> = test
                .effective
                .rows()
                .into_iter()
                .filter(|r| !base_rows.contains(r))
                .collect();
            if own.is_empty() {
                outln!(out, "  effective config: as above");
            } else {
                outln!(out, "  effective config: as above, except");
                print_rows(out, &own, "    ");
            }
        }
    }
}

/// Run a validated suite under the actors; map why it ended to the exit code of docs/signals.md.
fn run_suite(suite: Suite, options: RunOptions) -> ExitCode {
    ExitCode::from(bugatti::actors::run::run_suite(suite, &options).code())
}
