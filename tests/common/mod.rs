//! Shared helpers for the end-to-end tests: a temporary project, the real binary run on it, the
//! files it wrote, and the check that no process it started survives. Each test binary
//! (`tests/*/main.rs`) includes this module; its children serve some of them:
//! - `skip`: finding an optional program (a real CLI, Chromium, xmllint…) or a loud skip;
//! - `claude`, `codex`, `scripted_api`: the real agent CLIs and their API stubs on loopback;
//! - `mcp`: the JSON-RPC answers of an MCP server, read as types;
//! - `rig`: a provider driven directly, without the binary (the agent tests);
//! - `harness`: the harness actor driven directly (the harness tests);
//! - `fault`: waiting for a run's steps, sending signals (the fault-injection tests);
//! - `report`: plans and event sequences as a session produces them (the report tests).
#![allow(dead_code)]

pub mod claude;
pub mod codex;
pub mod fault;
pub mod harness;
pub mod mcp;
pub mod pi;
pub mod report;
pub mod rig;
pub mod scripted_api;
pub mod skip;

use bugatti::report::records::run_record::{CommandRecord, RunRecord};
use bugatti::report::records::suite::SuiteSummary;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// What a test reading run.json and summary.json needs: `use crate::common::records::*;`.
#[allow(unused_imports)]
pub mod records {
    pub use super::RecordExt;
    pub use bugatti::console::record::CallRecord as ConsoleCall;
    pub use bugatti::model::agent_fault::FaultKind;
    pub use bugatti::model::history::{HistoryEntry, StabilityClass};
    pub use bugatti::model::outcome::{RunOutcome, StepStatus, TeardownState};
    pub use bugatti::model::replay::StepMode;
    pub use bugatti::report::records::events::{Event, EventKind};
    pub use bugatti::report::records::run_record::{CommandStatus, RunRecord, StepRecord};
    pub use bugatti::report::records::stability::Stability;
    pub use bugatti::report::records::suite::SuiteSummary;
}

pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    pub fn new() -> Self {
        Self {
            dir: tempfile::Builder::new()
                .prefix("bugatti-e2e-")
                .tempdir()
                .expect("temp project"),
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.root().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&path, text).expect("write");
        path
    }

    /// A project whose agent is the scripted directive agent (`[provider] name = "command"`,
    /// a 60 s step timeout), with `extra` appended to its config.
    pub fn with_directive_agent(extra: &str) -> Self {
        let p = Self::new();
        p.write(
            "bugatti.config.toml",
            &format!(
                "[provider]\nname = \"command\"\ncmd = \"{}\"\nstep_timeout_secs = 60\n{extra}",
                Self::directive_agent_cmd()
            ),
        );
        p
    }

    /// The newest run.json of each test, by test file without `.test.toml`.
    pub fn newest_run_by_test(&self) -> std::collections::BTreeMap<String, RunRecord> {
        let mut records = self.run_records();
        records.sort_by_key(|r| r.identity.started_at);
        records
            .into_iter()
            .map(|r| {
                let name = r
                    .identity
                    .test_file
                    .trim_end_matches(".test.toml")
                    .to_string();
                (name, r)
            })
            .collect()
    }

    /// The newest run.json of each test, as JSON (for what [`RunRecord`] does not hold).
    pub fn newest_run_json_by_test(&self) -> std::collections::BTreeMap<String, serde_json::Value> {
        let mut records = self.run_records_json();
        records.sort_by_key(|r| r["started_at"].as_str().unwrap_or_default().to_string());
        records
            .into_iter()
            .map(|r| {
                let name = r["test_file"]
                    .as_str()
                    .unwrap_or_default()
                    .trim_end_matches(".test.toml")
                    .to_string();
                (name, r)
            })
            .collect()
    }

    /// The scripted agent of tests/support, for `[provider] name = "command"`.
    pub fn directive_agent_cmd() -> String {
        format!(
            "python3 {}/tests/support/directive_agent.py",
            env!("CARGO_MANIFEST_DIR")
        )
    }

    pub fn supervisor(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_supervisor"));
        cmd.current_dir(self.root())
            .env_remove("BUGATTI_PROVIDER")
            .env_remove("BUGATTI_BASE_URL")
            .env_remove("BUGATTI_STEP_TIMEOUT")
            // Under GitHub Actions the GitHub reporter turns itself on: these tests' suites must
            // not annotate the job running them nor append to its summary.
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("GITHUB_WORKSPACE")
            .env("BUGATTI_CONFIG_HOME", self.root().join(".no-global-config"))
            .env("NO_COLOR", "1");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        let out = self
            .supervisor()
            .args(args)
            .output()
            .expect("run supervisor");
        self.assert_nothing_survives();
        out
    }

    /// `supervisor start` on the whole project, waited for (nothing it started may survive).
    pub fn start(&self) -> Output {
        self.run(&["start"])
    }

    /// `supervisor check` on the whole project.
    pub fn check(&self) -> Output {
        self.run(&["check"])
    }

    /// `supervisor list` on the whole project.
    pub fn list(&self) -> Output {
        self.run(&["list"])
    }

    /// Every `run.json` written under `.bugatti/runs`, read as the library's own [`RunRecord`],
    /// by test file.
    pub fn run_records(&self) -> Vec<RunRecord> {
        let mut records: Vec<RunRecord> = self
            .run_json_files()
            .iter()
            .map(|path| read_run_record(path))
            .collect();
        records.sort_by(|a, b| a.identity.test_file.cmp(&b.identity.test_file));
        records
    }

    /// The run.json of the test whose file ends with `test_file_suffix`.
    pub fn record_for(&self, test_file_suffix: &str) -> RunRecord {
        self.run_records()
            .into_iter()
            .find(|r| r.identity.test_file.ends_with(test_file_suffix))
            .unwrap_or_else(|| panic!("no run.json for {test_file_suffix}"))
    }

    /// The newest run.json of the project (for a project each invocation of which runs one test).
    pub fn newest_record(&self) -> RunRecord {
        let mut records = self.run_records();
        records.sort_by_key(|r| r.identity.started_at);
        records.pop().expect("a run.json")
    }

    /// Every `run.json` under `.bugatti/runs`.
    fn run_json_files(&self) -> Vec<PathBuf> {
        let runs = self.root().join(".bugatti/runs");
        let Ok(entries) = std::fs::read_dir(&runs) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("run.json"))
            .filter(|p| p.is_file())
            .collect()
    }

    /// Every `run.json` written under `.bugatti/runs`, as JSON (for what [`RunRecord`] does not
    /// hold: keys it flattens away or never reads).
    pub fn run_records_json(&self) -> Vec<serde_json::Value> {
        let mut records: Vec<serde_json::Value> = self
            .run_json_files()
            .iter()
            .filter_map(|path| std::fs::read_to_string(path).ok())
            .map(|text| serde_json::from_str(&text).expect("run.json is JSON"))
            .collect();
        records.sort_by_key(|r| r["test_file"].as_str().unwrap_or_default().to_string());
        records
    }

    /// [`Project::record_for`] as JSON.
    pub fn record_json_for(&self, test_file_suffix: &str) -> serde_json::Value {
        self.run_records_json()
            .into_iter()
            .find(|r| {
                r["test_file"]
                    .as_str()
                    .is_some_and(|f| f.ends_with(test_file_suffix))
            })
            .unwrap_or_else(|| panic!("no run.json for {test_file_suffix}"))
    }

    /// The suite directory of the (only) invocation.
    pub fn suite_dir(&self) -> PathBuf {
        let suites = self.root().join(".bugatti/suites");
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&suites)
            .expect("suites dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        dirs.sort();
        dirs.pop().expect("a suite dir")
    }

    /// The (only) invocation's summary.json, read as the library's own [`SuiteSummary`].
    pub fn suite_summary(&self) -> SuiteSummary {
        read_json_file(&self.suite_dir().join("summary.json"))
    }

    /// The (only) invocation's summary.json, as JSON.
    pub fn suite_summary_json(&self) -> serde_json::Value {
        read_json_file(&self.suite_dir().join("summary.json"))
    }

    /// Fails when any process whose environment names this project survives the supervisor.
    pub fn assert_nothing_survives(&self) {
        assert_nothing_survives(&[("BUGATTI_PROJECT_ROOT", &self.root().display().to_string())]);
    }
}

/// Fails when any process carrying one of `entries` (`KEY`, `value`) in its environment is still
/// alive; survivors are SIGKILLed first, so one failing test does not leak into the next. Waits
/// up to 5 s, because a killed process needs a moment to disappear from /proc. The one survivor
/// check of the tests: a project's ([`Project::assert_nothing_survives`]) and a run's
/// ([`rig::Rig::assert_no_survivors`]).
#[track_caller]
pub fn assert_nothing_survives(entries: &[(&str, &str)]) {
    let needles: Vec<String> = entries.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut survivors: Vec<(String, i32)> = needles
            .iter()
            .flat_map(|n| {
                processes_with_env_entry(n)
                    .into_iter()
                    .map(move |pid| (n.clone(), pid))
            })
            .collect();
        if survivors.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            survivors.sort_by_key(|(_, pid)| *pid);
            survivors.dedup_by_key(|(_, pid)| *pid);
            for (_, pid) in &survivors {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
            panic!("processes survived the supervisor: {survivors:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What the tests ask of a [`RunRecord`] beyond its fields.
pub trait RecordExt {
    /// The run directory (`.bugatti/runs/<run_id>`, absolute).
    fn run_dir(&self) -> PathBuf;
    /// The harness command `name`; fails, showing the record, without it.
    fn command(&self, name: &str) -> &CommandRecord;
    /// Each step's status, in order.
    fn statuses(&self) -> Vec<records::StepStatus>;
    /// A file of the run directory, read as text; fails naming it when it cannot be read.
    fn read(&self, rel: &str) -> String;
    /// The run's events.jsonl, each line read as the library's own [`Event`](records::Event).
    fn events(&self) -> Vec<records::Event>;
}

impl RecordExt for RunRecord {
    fn run_dir(&self) -> PathBuf {
        PathBuf::from(&self.identity.run_dir)
    }

    #[track_caller]
    fn command(&self, name: &str) -> &CommandRecord {
        self.commands
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no command {name} in {self:?}"))
    }

    fn statuses(&self) -> Vec<records::StepStatus> {
        self.steps.iter().map(|s| s.status).collect()
    }

    #[track_caller]
    fn read(&self, rel: &str) -> String {
        let path = self.run_dir().join(rel);
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
    }

    fn events(&self) -> Vec<records::Event> {
        read_events(&self.run_dir().join("events.jsonl"))
    }
}

/// An events.jsonl, each line read as the library's own [`Event`](records::Event) (the line's
/// `run_id` and `schema_version` aside); the failure names the file and the line.
pub fn read_events(path: &Path) -> Vec<records::Event> {
    read_jsonl(path)
}

/// A JSON-lines file, each line read into `T`; the failure names the file and the line.
pub fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Vec<T> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .enumerate()
        .map(|(n, line)| {
            serde_json::from_str(line).unwrap_or_else(|e| {
                panic!(
                    "{}:{}: does not read as expected: {e}\n{line}",
                    path.display(),
                    n + 1
                )
            })
        })
        .collect()
}

/// A `run.json` (by its path, or its run directory's), read as the library's own [`RunRecord`].
pub fn read_run_record(path: &Path) -> RunRecord {
    if path.is_dir() {
        return read_json_file(&path.join("run.json"));
    }
    read_json_file(path)
}

/// A JSON file read into `T`; the failure names the file and shows its text.
pub fn read_json_file<T: serde::de::DeserializeOwned>(path: &Path) -> T {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} does not read as expected: {e}\n{text}", path.display()))
}

/// The process ended with `code`; on failure, its stdout and stderr are shown.
#[track_caller]
pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "exit status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        stdout(out),
        stderr(out)
    );
}

pub fn processes_with_env_entry(entry: &str) -> Vec<i32> {
    let own = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != own)
        .filter(|pid| {
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| {
                    s.rsplit(')')
                        .next()
                        .unwrap_or("")
                        .trim_start()
                        .starts_with('Z')
                })
                .unwrap_or(true);
            !zombie
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .map(|env| env.split(|b| *b == 0).any(|e| e == entry.as_bytes()))
                    .unwrap_or(false)
        })
        .collect()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
