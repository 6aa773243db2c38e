//! The `supervisor` binary: the CLI edge only. Parse (clap) into plain options (`model`), hand
//! them to the subcommand (`bugatti::cli`), exit with its code. Invalid input is exit 2 before
//! anything runs.

use std::path::PathBuf;
use std::process::ExitCode;

use bugatti::cli::{self, copy_flags::CopyFlags, Exit};
use bugatti::model::options::{NoTests, Reporter, RunOptions, Verbosity};
use bugatti::model::replay::ReplayMode;
use bugatti::model::shard::{ShardArg, ShardBy};
use clap::{Args, Parser, Subcommand};

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
    /// Print the root tests a `start` with the same selection (PATH, -g, --grep-invert, -E,
    /// --only-changed, --tag, --shard, --rerun-failed) would run, one test file per line (--json: one array). Runs
    /// nothing, writes nothing. Exit 0, or 2 on invalid input or an empty selection (exit 0
    /// with --no-tests pass or warn).
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
    /// One cost cap for the whole CI run: shards sharing FILE (on their shared volume) keep
    /// the run's spend under `[supervisor] max_cost_usd`, keyed by the CI run's id
    /// (BUGATTI_CI_RUN_ID, GITHUB_RUN_ID, CI_PIPELINE_ID, …)
    #[arg(long = "cost-ledger", value_name = "FILE")]
    cost_ledger: Option<PathBuf>,
    /// Resume each root test from checkpoint NAME, saved by an earlier run: `[checkpoint] restore`
    /// runs after setup, then the steps up to and including NAME's are `skipped` (steps with
    /// `setup = true` still run). A checkpoint never saved is an error (exit 2)
    #[arg(long = "from-checkpoint", value_name = "NAME")]
    from_checkpoint: Option<String>,
    /// Run only root tests carrying one of these tags. Repeatable.
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// `--junit FILE`, `--json FILE`, `--html FILE`: one flag per copy format.
    #[command(flatten)]
    copies: CopyFlags,
    /// Run only the root tests that did not pass in the previous suite of this project
    #[arg(long = "rerun-failed", visible_alias = "last-failed")]
    rerun_failed: bool,
    /// Replay mode over `[replay] mode` (default auto): off (always the agent), auto (replay a
    /// step's recording, the agent on a miss or drift), record (always the agent, recordings
    /// renewed) or only (no agent: a step without a usable recording is an error)
    #[arg(long, value_name = "MODE")]
    replay: Option<ReplayMode>,
    /// An output beside the console's: github (`::error` annotations at each failing step's
    /// line, summary.md appended to $GITHUB_STEP_SUMMARY); on by itself under GITHUB_ACTIONS=true
    #[arg(long, value_name = "NAME")]
    reporter: Option<Reporter>,
    /// Less console output
    #[arg(short, long, conflicts_with = "verbose")]
    quiet: bool,
    /// More console output
    #[arg(short, long)]
    verbose: bool,
}

/// `-g` / `--grep-invert` / `-E` / `--only-changed` / `--no-tests`: shared by `start`, `test`,
/// `check` and `list`.
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
    /// Run only root tests the filter expression selects (as nextest's -E): test(/regex/),
    /// file(glob), tag(name), provider(name), class(app-flaky), last(failed), changed(REF),
    /// joined with & | ! (and, or, not) and parentheses
    #[arg(short = 'E', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// Run only root tests whose test file, includes, assets, the config or recording changed
    /// against REF: the working tree, untracked files included [default REF: HEAD]
    #[arg(
        long = "only-changed",
        value_name = "REF",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "HEAD"
    )]
    only_changed: Option<String>,
    /// What a selection holding no root test is: pass, warn (both exit 0) or fail (exit 2)
    #[arg(
        long = "no-tests",
        value_name = "pass|warn|fail",
        default_value = "fail"
    )]
    no_tests: NoTests,
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
        let shard = cli::resolve_shard(self.shard)?;
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
            filter: self.grep.filter,
            only_changed: self.grep.only_changed,
            no_tests: self.grep.no_tests,
            repeat: self.repeat,
            headed: self.headed,
            fail_on_flaky: self.fail_on_flaky,
            strict_warnings: self.strict_warnings,
            shard,
            shard_by: self.shard_by,
            history: self.history,
            cost_ledger: self.cost_ledger,
            from_checkpoint: self.from_checkpoint,
            tags: self.tags,
            copies: self.copies.copies,
            rerun_failed: self.rerun_failed,
            replay: self.replay,
            reporter: self.reporter,
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

fn main() -> ExitCode {
    let exit = match Cli::parse().command {
        Command::Start(args) | Command::Test(args) => match args.into_options() {
            Ok(options) => cli::start(options),
            Err(e) => usage(&e),
        },
        Command::Check(args) => match args.into_options() {
            Ok(options) => cli::check(&options),
            Err(e) => usage(&e),
        },
        Command::List(args) => match args.into_options() {
            Ok((options, json)) => cli::list(&options, json),
            Err(e) => usage(&e),
        },
        Command::Init => cli::init(),
        Command::Doctor { config } => cli::doctor(config),
        Command::Merge {
            dirs,
            out,
            config,
            history,
            allow_partial,
        } => cli::merge(&dirs, out, config, history, allow_partial),
        Command::Report {
            suite,
            open,
            trends,
            history,
            chrome_trace,
            config,
        } => cli::report(
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
        } => cli::clean(keep, older_than, config),
    };
    ExitCode::from(exit.code())
}

/// Invalid flags: said on stderr, exit 2 (nothing was run).
fn usage(error: &str) -> Exit {
    eprintln!("error: {error}");
    Exit::USAGE
}
