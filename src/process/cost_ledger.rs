//! `--cost-ledger FILE` (docs/ci.md, "One cost cap for the whole run"): the spend of one CI run
//! shared by its shards. One JSON line per reservation and per settlement, each keyed by the CI
//! run's id so an earlier night's lines never count; every read-and-append holds an advisory
//! lock (`flock`) on the file, so shards on a shared volume admit one test at a time.
//!
//! A root test reserves its expected cost before it starts, and settles what it spent when it
//! ends: the run's total is what was settled plus what is reserved and not yet settled.

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The variables a CI run's id is read from, first found first: ours, then each engine's.
pub const RUN_ID_VARIABLES: [&str; 6] = [
    "BUGATTI_CI_RUN_ID",
    "GITHUB_RUN_ID",
    "CI_PIPELINE_ID",
    "BUILDKITE_BUILD_ID",
    "CIRCLE_WORKFLOW_ID",
    "BUILD_TAG",
];

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("--cost-ledger: no CI run id: set BUGATTI_CI_RUN_ID (or run under a CI that sets one of {})", RUN_ID_VARIABLES[1..].join(", "))]
    NoRunId,
    #[error("--cost-ledger {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// One line of the ledger.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LedgerLine {
    /// The CI run's id.
    ci_run: String,
    /// The reservation's key: a run id of one shard.
    key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reserve: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    settle: Option<f64>,
}

/// The ledger of one CI run.
#[derive(Debug, Clone)]
pub struct CostLedger {
    path: PathBuf,
    ci_run: String,
}

/// What the ledger said to a reservation.
#[derive(Debug, Clone, PartialEq)]
pub enum Reserved {
    /// Reserved; the run's total before it.
    Yes { total_before: f64 },
    /// Refused: the run's total and the expected cost would pass the cap.
    CapReached { total: f64 },
}

impl CostLedger {
    /// The ledger at `path` for the CI run named by `env` (see [`RUN_ID_VARIABLES`]; GitHub's
    /// run attempt is part of its id, so a re-run is a run of its own).
    pub fn open(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, LedgerError> {
        let found = RUN_ID_VARIABLES
            .iter()
            .find_map(|name| env(name).filter(|v| !v.is_empty()).map(|v| (*name, v)))
            .ok_or(LedgerError::NoRunId)?;
        let ci_run = match (found.0, env("GITHUB_RUN_ATTEMPT")) {
            ("GITHUB_RUN_ID", Some(attempt)) => format!("{}-{attempt}", found.1),
            _ => found.1,
        };
        let ledger = Self {
            path: path.to_path_buf(),
            ci_run,
        };
        // Fails now, before anything runs, if the file cannot be opened.
        ledger.locked(|_| Ok(((), Vec::new())))?;
        Ok(ledger)
    }

    pub fn ci_run(&self) -> &str {
        &self.ci_run
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, source: std::io::Error) -> LedgerError {
        LedgerError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Runs `f` over this run's lines with the file locked; lines it returns are appended.
    fn locked<T>(
        &self,
        f: impl FnOnce(&[LedgerLine]) -> Result<(T, Vec<LedgerLine>), LedgerError>,
    ) -> Result<T, LedgerError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&self.path)
            .map_err(|e| self.io(e))?;
        let mut file = Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, errno)| self.io(std::io::Error::from(errno)))?;
        let mut text = String::new();
        file.seek(SeekFrom::Start(0)).map_err(|e| self.io(e))?;
        file.read_to_string(&mut text).map_err(|e| self.io(e))?;
        let lines: Vec<LedgerLine> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<LedgerLine>(l).ok())
            .filter(|l| l.ci_run == self.ci_run)
            .collect();
        let (answer, append) = f(&lines)?;
        let mut out = String::new();
        for line in append {
            if let Ok(json) = serde_json::to_string(&line) {
                out.push_str(&json);
                out.push('\n');
            }
        }
        if !out.is_empty() {
            file.write_all(out.as_bytes()).map_err(|e| self.io(e))?;
            file.flush().map_err(|e| self.io(e))?;
        }
        Ok(answer)
    }

    /// The run's total: what was settled, plus what is reserved and not settled yet.
    fn total_of(lines: &[LedgerLine]) -> f64 {
        let mut by_key: HashMap<&str, (f64, Option<f64>)> = HashMap::new();
        for l in lines {
            let entry = by_key.entry(l.key.as_str()).or_default();
            if let Some(r) = l.reserve {
                entry.0 += r;
            }
            if let Some(s) = l.settle {
                entry.1 = Some(entry.1.unwrap_or(0.0) + s);
            }
        }
        by_key
            .values()
            .map(|(reserved, settled)| settled.unwrap_or(*reserved))
            .sum()
    }

    /// The run's total so far.
    pub fn total(&self) -> Result<f64, LedgerError> {
        self.locked(|lines| Ok((Self::total_of(lines), Vec::new())))
    }

    /// Reserves `expected` under `key` unless the run's total and it would pass `cap`.
    pub fn reserve(&self, key: &str, expected: f64, cap: f64) -> Result<Reserved, LedgerError> {
        self.locked(|lines| {
            let total = Self::total_of(lines);
            // The first test of a run with nothing spent starts even if its guess is above the
            // cap: otherwise nothing could ever learn a cost.
            if total >= cap || (total > 0.0 && total + expected > cap) {
                return Ok((Reserved::CapReached { total }, Vec::new()));
            }
            let line = LedgerLine {
                ci_run: self.ci_run.clone(),
                key: key.to_string(),
                reserve: Some(expected.max(0.0)),
                settle: None,
            };
            Ok((
                Reserved::Yes {
                    total_before: total,
                },
                vec![line],
            ))
        })
    }

    /// The run under `key` ended having spent `spent`: its reservation is replaced by it.
    pub fn settle(&self, key: &str, spent: f64) -> Result<(), LedgerError> {
        self.locked(|_| {
            let line = LedgerLine {
                ci_run: self.ci_run.clone(),
                key: key.to_string(),
                reserve: None,
                settle: Some(spent.max(0.0)),
            };
            Ok(((), vec![line]))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn a_run_counts_its_own_lines_only_and_a_reservation_until_it_is_settled() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("ledger.jsonl");
        let last_night =
            CostLedger::open(&path, &env(&[("BUGATTI_CI_RUN_ID", "1")])).expect("open");
        last_night.reserve("a", 0.9, 1.0).expect("reserve");
        last_night.settle("a", 0.9).expect("settle");
        let tonight = CostLedger::open(
            &path,
            &env(&[("GITHUB_RUN_ID", "7"), ("GITHUB_RUN_ATTEMPT", "2")]),
        )
        .expect("open");
        assert_eq!(tonight.ci_run(), "7-2");
        assert_eq!(
            tonight.total().expect("total"),
            0.0,
            "last night never counts"
        );
        assert_eq!(
            tonight.reserve("x", 0.4, 1.0).expect("reserve"),
            Reserved::Yes { total_before: 0.0 }
        );
        assert_eq!(
            tonight.reserve("y", 0.4, 1.0).expect("reserve"),
            Reserved::Yes { total_before: 0.4 }
        );
        assert_eq!(
            tonight.reserve("z", 0.4, 1.0).expect("reserve"),
            Reserved::CapReached { total: 0.8 }
        );
        tonight.settle("x", 0.1).expect("settle");
        assert!((tonight.total().expect("total") - 0.5).abs() < 1e-9);
        assert!(matches!(
            tonight.reserve("z", 0.4, 1.0).expect("reserve"),
            Reserved::Yes { .. }
        ));
    }

    #[test]
    fn without_a_run_id_the_ledger_is_refused() {
        let dir = tempfile::tempdir().expect("tmp");
        let e = CostLedger::open(&dir.path().join("l"), &env(&[])).unwrap_err();
        assert!(e.to_string().contains("BUGATTI_CI_RUN_ID"), "{e}");
    }
}
