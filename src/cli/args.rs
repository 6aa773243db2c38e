//! The options of the subcommands that run or select root tests, as clap reads them, and
//! their plain form (`RunOptions`): `start`, `test`, `watch`, `check`, `list`, and the pending
//! recordings of `replay`. In the library beside `copy_flags` so that the binary stays the
//! parser's edge and the exit code (tests/cli/import_graph.rs).

use std::path::PathBuf;

use super::copy_flags::CopyFlags;
use crate::model::options::{NoTests, Reporter, RunOptions, Verbosity};
use crate::model::replay::ReplayMode;
use crate::model::shard::{ShardArg, ShardBy};
use clap::Args;

#[derive(Args, Debug)]
pub struct PendingArgs {
    /// Test files (`tests/checkout.test.toml`, or `checkout` from the project root)
    #[arg(value_name = "TEST")]
    pub tests: Vec<String>,
    /// Every test with a pending recording
    #[arg(long)]
    pub all: bool,
    /// Project config [default: ./bugatti.config.toml if present]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Args, Debug, Default)]
pub struct RunArgs {
    /// Test files, directories to discover in, or short names (`checkout` →
    /// `checkout.test.toml` under the project root). Default: the whole project root, or the
    /// `[supervisor] tests` globs.
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    /// Project config; its directory is the project root [default: ./bugatti.config.toml if present]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Root tests run at once [default: `[supervisor] max_parallel`, else 4]
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Do not launch this harness command: you run it yourself (its readiness is still checked,
    /// so a probe on an `auto` port or on its own output is refused). Repeatable.
    #[arg(long = "skip-cmd", value_name = "NAME")]
    pub skip_cmd: Vec<String>,
    /// Do not wait for this command's readiness. Repeatable.
    #[arg(long = "skip-readiness", value_name = "NAME")]
    pub skip_readiness: Vec<String>,
    /// Override `[provider] name` (claude-code, codex, pi, command, shell)
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Default per-step timeout in seconds [default: 300]
    #[arg(long = "step-timeout", value_name = "SECS")]
    pub step_timeout: Option<u64>,
    /// Whole-invocation deadline in seconds; on expiry behaves like SIGTERM
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Re-run a failed root test up to N times; a pass after a failure is reported as flaky [default: 0]
    #[arg(long, value_name = "N")]
    pub retries: Option<u32>,
    /// After the first failed root test, start no new ones
    #[arg(long = "fail-fast")]
    pub fail_fast: bool,
    /// After N failed root tests, start no new ones: the rest are `not_run`, each named
    /// (`--fail-fast` is `--max-fail 1`; also `[supervisor] max_fail`)
    #[arg(long = "max-fail", value_name = "N")]
    pub max_fail: Option<u32>,
    /// Run each selected root test N times (`-j` still bounds how many run at once) and
    /// classify its stability: stable, app-flaky, verdict-flaky, broken (also `[supervisor]
    /// repeat`) [default: 1]
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// The session's browser with a window (`[browser] headless = false`); needs a display
    /// (DISPLAY or WAYLAND_DISPLAY)
    #[arg(long)]
    pub headed: bool,
    #[command(flatten)]
    pub grep: GrepArgs,
    /// A root test that passed only on a retry fails the suite (also `[supervisor] flaky = "fail"`)
    #[arg(long = "fail-on-flaky")]
    pub fail_on_flaky: bool,
    /// A WARN step fails its test
    #[arg(long = "strict-warnings")]
    pub strict_warnings: bool,
    /// Run only the K-th of N slices of the discovered root tests (1-based). `auto`: K and N from
    /// the CI's environment (BUGATTI_SHARD=K/N; GitLab CI_NODE_INDEX/CI_NODE_TOTAL; CircleCI
    /// CIRCLE_NODE_*; Buildkite BUILDKITE_PARALLEL_JOB*; Kubernetes JOB_COMPLETION_INDEX with
    /// BUGATTI_SHARD_TOTAL), the whole suite when none is set
    #[arg(long, value_name = "K/N|auto")]
    pub shard: Option<ShardArg>,
    /// How shards are split: count (round-robin by path) or duration (longest first into the
    /// least loaded shard, from each test's recent durations in history) [default: duration when
    /// history holds durations for the selection, else count]
    #[arg(long = "shard-by", value_name = "count|duration")]
    pub shard_by: Option<ShardBy>,
    /// Read and write history in FILE instead of <artifact_dir>/history.jsonl (a CI cache or
    /// artifact can carry it between runs)
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// One cost cap for the whole CI run: shards sharing FILE (on their shared volume) keep
    /// the run's spend under `[supervisor] max_cost_usd`, keyed by the CI run's id
    /// (BUGATTI_CI_RUN_ID, GITHUB_RUN_ID, CI_PIPELINE_ID, …)
    #[arg(long = "cost-ledger", value_name = "FILE")]
    pub cost_ledger: Option<PathBuf>,
    /// Resume each root test from checkpoint NAME, saved by an earlier run: `[checkpoint] restore`
    /// runs after setup, then the steps up to and including NAME's are `skipped` (steps with
    /// `setup = true` still run). A checkpoint never saved is an error (exit 2)
    #[arg(long = "from-checkpoint", value_name = "NAME")]
    pub from_checkpoint: Option<String>,
    /// Run only root tests carrying one of these tags. Repeatable.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// `--junit FILE`, `--json FILE`, `--html FILE`: one flag per copy format.
    #[command(flatten)]
    pub copies: CopyFlags,
    /// Run only the root tests that did not pass in the previous suite of this project
    #[arg(long = "rerun-failed", visible_alias = "last-failed")]
    pub rerun_failed: bool,
    /// Replay mode over `[replay] mode` (default auto): off (always the agent), auto (replay a
    /// step's recording, the agent on a miss or drift), record (always the agent, recordings
    /// renewed) or only (no agent: a step without a usable recording is an error)
    #[arg(long, value_name = "MODE")]
    pub replay: Option<ReplayMode>,
    /// Also export the suite as OpenTelemetry spans when it ends: OTLP/JSON to FILE, or POSTed
    /// to a collector's URL; `env`: the collector OTEL_EXPORTER_OTLP_ENDPOINT names (as
    /// `report --otlp`). A failed export is said, never the exit code
    #[arg(long, value_name = "FILE|URL|env")]
    pub otlp: Option<String>,
    /// An output beside the console's: github (`::error` annotations at each failing step's
    /// line, summary.md appended to $GITHUB_STEP_SUMMARY); on by itself under GITHUB_ACTIONS=true
    #[arg(long, value_name = "NAME")]
    pub reporter: Option<Reporter>,
    /// Less console output
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// More console output
    #[arg(short, long)]
    pub verbose: bool,
}

/// `supervisor watch`: `start`'s options, and whether drifted steps go to the agent.
#[derive(Args, Debug)]
pub struct WatchArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Drifted and unrecorded steps go to the agent (`--replay auto`) instead of failing
    /// (`--replay only`, the default of `watch`)
    #[arg(long, conflicts_with = "replay")]
    pub agent: bool,
}

/// `-g` / `--grep-invert` / `-E` / `--only-changed` / `--no-tests`: shared by `start`, `test`,
/// `check` and `list`.
#[derive(Args, Debug, Clone, Default)]
pub struct GrepArgs {
    /// Run only root tests whose test name or file path matches the regular expression PATTERN
    /// (as Playwright's -g)
    #[arg(short = 'g', long = "grep", value_name = "PATTERN")]
    pub grep: Option<String>,
    /// Run only root tests whose test name and file path do not match PATTERN (as Playwright's
    /// --grep-invert)
    #[arg(long = "grep-invert", value_name = "PATTERN")]
    pub grep_invert: Option<String>,
    /// Run only root tests the filter expression selects (as nextest's -E): test(/regex/),
    /// file(glob), tag(name), provider(name), class(app-flaky), last(failed), changed(REF),
    /// joined with & | ! (and, or, not) and parentheses
    #[arg(short = 'E', long = "filter", value_name = "EXPR")]
    pub filter: Option<String>,
    /// Run only root tests whose test file, includes, assets, the config or recording changed
    /// against REF: the working tree, untracked files included [default REF: HEAD]
    #[arg(
        long = "only-changed",
        value_name = "REF",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "HEAD"
    )]
    pub only_changed: Option<String>,
    /// What a selection holding no root test is: pass, warn (both exit 0) or fail (exit 2)
    #[arg(
        long = "no-tests",
        value_name = "pass|warn|fail",
        default_value = "fail"
    )]
    pub no_tests: NoTests,
}

/// `supervisor list`: the selection flags of `start`, and how to print.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// Test files, directories to discover in, or short names (as `start`)
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    /// Project config; its directory is the project root [default: ./bugatti.config.toml if present]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub grep: GrepArgs,
    /// Only root tests carrying one of these tags. Repeatable.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Only the K-th of N slices, split as `start --shard` splits them
    #[arg(long, value_name = "K/N|auto")]
    pub shard: Option<ShardArg>,
    /// How shards are split (as `start --shard-by`)
    #[arg(long = "shard-by", value_name = "count|duration")]
    pub shard_by: Option<ShardBy>,
    /// The history file the split and --rerun-failed read [default: <artifact_dir>/history.jsonl]
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Only the root tests that did not pass in the previous whole suite
    #[arg(long = "rerun-failed", visible_alias = "last-failed")]
    pub rerun_failed: bool,
    /// One JSON array of the root tests (test_file, name, tags, quarantined) instead of lines
    #[arg(long)]
    pub json: bool,
}

impl ListArgs {
    pub fn into_options(self) -> Result<(RunOptions, bool), String> {
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
    pub fn into_options(self) -> Result<RunOptions, String> {
        let shard = super::resolve_shard(self.shard)?;
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
            otlp: self.otlp,
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
