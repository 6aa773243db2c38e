//! The options of `start` / `test` (docs/getting-started.md "Commands") as plain data, independent of the CLI
//! parser.

use std::path::PathBuf;

pub use super::shard::Shard;

/// Console verbosity: `-q` / default / `-v`. Ordered: a line of level `l` shows when
/// `l <= verbosity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Verbosity {
    /// Only the final line per root test and the summary.
    Quiet,
    #[default]
    Normal,
    /// Also run starts, evidence, teardown and usage details.
    Verbose,
}

/// `--no-tests pass|warn|fail`: what a selection that holds no root test is (nextest's flag). An
/// empty shard of a selection that holds some is not one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NoTests {
    /// Exit 0, saying so in a note.
    Pass,
    /// Exit 0 with a warning.
    Warn,
    /// Exit 2: invalid input, nothing was run.
    #[default]
    Fail,
}

impl std::str::FromStr for NoTests {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "pass" => Ok(NoTests::Pass),
            "warn" => Ok(NoTests::Warn),
            "fail" => Ok(NoTests::Fail),
            other => Err(format!("--no-tests `{other}`: expected pass, warn or fail")),
        }
    }
}

/// `--reporter NAME`: an output beside the console's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reporter {
    /// `::error` / `::warning` workflow commands and `$GITHUB_STEP_SUMMARY` (docs/ci.md).
    Github,
}

impl std::str::FromStr for Reporter {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "github" => Ok(Reporter::Github),
            other => Err(format!("--reporter `{other}`: the one reporter is github")),
        }
    }
}

/// A copy of one of the suite's files, written to `path` besides the suite folder's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteCopy {
    /// The format, as its flag names it without the dashes (`junit` for `--junit FILE`).
    pub format: String,
    pub path: PathBuf,
}

/// Every option of `start` / `test` / `check`. `None` / empty / false = not given on the
/// command line, so lower layers (config, env, defaults) decide.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOptions {
    pub config: Option<PathBuf>,
    /// PATH arguments: files, directories or short names.
    pub paths: Vec<String>,
    pub jobs: Option<usize>,
    pub skip_cmd: Vec<String>,
    pub skip_readiness: Vec<String>,
    pub provider: Option<String>,
    pub step_timeout: Option<u64>,
    /// Whole-invocation deadline in seconds.
    pub timeout: Option<u64>,
    pub retries: Option<u32>,
    pub fail_fast: bool,
    /// `--max-fail N`: after N failed root tests, none new starts (`--fail-fast` is 1).
    pub max_fail: Option<u32>,
    /// `-g, --grep PATTERN`: only root tests whose name or file path matches the regex.
    pub grep: Option<String>,
    /// `--grep-invert PATTERN`: only root tests whose name and file path do not match.
    pub grep_invert: Option<String>,
    /// `--repeat N`: each selected root test runs N times and its stability is classified.
    pub repeat: Option<u32>,
    /// `--headed`: the session's browser with a window (`[browser] headless = false`).
    pub headed: bool,
    /// `--fail-on-flaky`: a root test that passed only on a retry fails the suite.
    pub fail_on_flaky: bool,
    pub strict_warnings: bool,
    pub shard: Option<Shard>,
    /// `--shard-by`: None = duration when history holds durations for the selection, else count.
    pub shard_by: Option<super::shard::ShardBy>,
    /// `--history FILE`: read and write history there instead of `<artifact_dir>/history.jsonl`.
    pub history: Option<PathBuf>,
    /// `--cost-ledger FILE`: the spend of the whole CI run, shared by its shards, under
    /// `[supervisor] max_cost_usd` (docs/ci.md).
    pub cost_ledger: Option<PathBuf>,
    pub from_checkpoint: Option<String>,
    pub tags: Vec<String>,
    /// `--junit FILE`, `--json FILE`, `--html FILE`: copies of the suite's files, in the order of
    /// the formats' list (`actors::reporter::copies::FORMATS`).
    pub copies: Vec<SuiteCopy>,
    /// `-E, --filter EXPR`: a filter expression over the root tests (docs/cli.md), parsed by
    /// the loader (`model::filter`).
    pub filter: Option<String>,
    /// `--only-changed[=REF]`: only root tests whose files changed against REF (`HEAD` when
    /// the flag has no value).
    pub only_changed: Option<String>,
    /// `--reporter github`: GitHub Actions annotations and job summary (also on by itself under
    /// `GITHUB_ACTIONS=true`).
    pub reporter: Option<Reporter>,
    /// `--no-tests`: what an empty selection is.
    pub no_tests: NoTests,
    /// `--rerun-failed` / `--last-failed`: applied by the caller after loading (it needs the
    /// history under the artifact directory).
    pub rerun_failed: bool,
    pub verbosity: Verbosity,
    /// `--replay MODE`: over `[replay] mode` (docs/replay.md). Validated.
    pub replay: Option<super::replay::ReplayMode>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_parses_and_rejects_bad_forms() {
        assert_eq!("2/3".parse::<Shard>(), Ok(Shard { index: 2, count: 3 }));
        let e = "4/3".parse::<Shard>().unwrap_err().to_string();
        assert_eq!(e, "--shard `4/3`: K must be between 1 and N (3)");
        let e = "0/3".parse::<Shard>().unwrap_err().to_string();
        assert!(e.contains("between 1 and N"), "{e}");
        let e = "1/0".parse::<Shard>().unwrap_err().to_string();
        assert!(e.contains("N must be at least 1"), "{e}");
        let e = "3".parse::<Shard>().unwrap_err().to_string();
        assert!(e.contains("not of the form K/N"), "{e}");
        let e = "a/b".parse::<Shard>().unwrap_err().to_string();
        assert!(e.contains("whole numbers"), "{e}");
    }

    #[test]
    fn shards_partition_every_position_exactly_once() {
        for n in 1..6 {
            for pos in 0..20 {
                let hits = (1..=n)
                    .filter(|k| {
                        Shard {
                            index: *k,
                            count: n,
                        }
                        .contains(pos)
                    })
                    .count();
                assert_eq!(hits, 1, "pos {pos} n {n}");
            }
        }
    }
}
