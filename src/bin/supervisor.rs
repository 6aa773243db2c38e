//! The `supervisor` binary: the CLI edge only. Parse (clap) into plain options (`model`), hand
//! them to the subcommand (`bugatti::cli`), exit with its code. Invalid input is exit 2 before
//! anything runs.

use std::path::PathBuf;
use std::process::ExitCode;

use bugatti::cli::args::{ListArgs, PendingArgs, RunArgs, WatchArgs};
use bugatti::cli::{self, Exit};
use clap::{Parser, Subcommand};

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
    /// Watch the project: on each save of a test file, an include, an asset, the config or an
    /// app file `[watch] paths` names, run the root tests it touches again with `--replay only`
    /// (an app file or the config: the whole selection). One suite at a time; Ctrl+C stops it
    /// and whatever is running. Takes `start`'s options.
    #[command(after_help = EXIT_CODES)]
    Watch(WatchArgs),
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
        /// Also export the suite as OpenTelemetry spans: OTLP/JSON to FILE, or POSTed to a
        /// collector's URL (OTLP/HTTP; a bare `http://host:port` gets `/v1/traces`); `env`: the
        /// collector OTEL_EXPORTER_OTLP_ENDPOINT names. A failed export is said, never the exit code
        #[arg(long, value_name = "FILE|URL|env")]
        otlp: Option<String>,
        /// Project config [default: ./bugatti.config.toml if present]
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// The re-recordings that would weaken a recording, waiting for review (docs/replay.md):
    /// `review` shows each beside the recording in force, `accept` puts it in force, `reject`
    /// keeps the one in force.
    Replay {
        #[command(subcommand)]
        action: ReplayCommand,
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

#[derive(Subcommand, Debug)]
enum ReplayCommand {
    /// Show each pending recording beside the one in force, actions and facts side by side;
    /// on a terminal, ask for each: accept, reject or skip. Exit 0, 1 when one could not be
    /// changed, 2 on invalid input.
    Review(PendingArgs),
    /// Put the pending recordings of TEST (or all) in force.
    Accept(PendingArgs),
    /// Drop the pending recordings of TEST (or all): the recordings in force stay.
    Reject(PendingArgs),
}

fn main() -> ExitCode {
    let exit = match Cli::parse().command {
        Command::Start(args) | Command::Test(args) => match args.into_options() {
            Ok(options) => cli::start(options),
            Err(e) => usage(&e),
        },
        Command::Watch(args) => match args.run.into_options() {
            Ok(options) => cli::watch(options, args.agent),
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
            otlp,
            config,
        } => cli::report(
            suite.as_deref(),
            open,
            trends.then_some(history),
            chrome_trace,
            otlp,
            config,
        ),
        Command::Clean {
            keep,
            older_than,
            config,
        } => cli::clean(keep, older_than, config),
        Command::Replay { action } => {
            let (action, args) = match action {
                ReplayCommand::Review(args) => (cli::PendingAction::Review, args),
                ReplayCommand::Accept(args) => (cli::PendingAction::Accept, args),
                ReplayCommand::Reject(args) => (cli::PendingAction::Reject, args),
            };
            cli::replay(action, &args.tests, args.all, args.config)
        }
    };
    ExitCode::from(exit.code())
}

/// Invalid flags: said on stderr, exit 2 (nothing was run).
fn usage(error: &str) -> Exit {
    eprintln!("error: {error}");
    Exit::USAGE
}
