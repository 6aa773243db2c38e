//! Shared helpers for the end-to-end tests: a temporary project, the real binary run on it, the
//! files it wrote, and the check that no process it started survives. Each test binary
//! (`tests/*/main.rs`) includes this module; its children serve some of them:
//! - `skip`: finding an optional program (a real CLI, Chromium, xmllint…) or a loud skip;
//! - `claude`, `codex`, `scripted_api`: the real agent CLIs and their API stubs on loopback;
//! - `rig`: a provider driven directly, without the binary (the agent tests);
//! - `harness`: the harness actor driven directly (the harness tests);
//! - `fault`: waiting for a run's steps, sending signals (the fault-injection tests);
//! - `report`: plans and event sequences as a session produces them (the report tests).
#![allow(dead_code)]

pub mod claude;
pub mod codex;
pub mod fault;
pub mod harness;
pub mod pi;
pub mod report;
pub mod rig;
pub mod scripted_api;
pub mod skip;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

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
    pub fn newest_run_by_test(&self) -> std::collections::BTreeMap<String, serde_json::Value> {
        let mut records = self.run_records();
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

    /// Every `run.json` written under `.bugatti/runs`, parsed.
    pub fn run_records(&self) -> Vec<serde_json::Value> {
        let runs = self.root().join(".bugatti/runs");
        let Ok(entries) = std::fs::read_dir(&runs) else {
            return Vec::new();
        };
        let mut records: Vec<serde_json::Value> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| std::fs::read_to_string(e.path().join("run.json")).ok())
            .map(|text| serde_json::from_str(&text).expect("run.json is JSON"))
            .collect();
        records.sort_by_key(|r| r["test_file"].as_str().unwrap_or_default().to_string());
        records
    }

    pub fn record_for(&self, test_file_suffix: &str) -> serde_json::Value {
        self.run_records()
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

    /// The (only) invocation's summary.json, parsed.
    pub fn suite_summary(&self) -> serde_json::Value {
        let text =
            std::fs::read_to_string(self.suite_dir().join("summary.json")).expect("summary.json");
        serde_json::from_str(&text).expect("summary.json is JSON")
    }

    /// Fails when any process whose environment names this project survives the supervisor.
    /// Waits briefly, because a killed process needs a moment to disappear from /proc.
    pub fn assert_nothing_survives(&self) {
        let needle = format!("BUGATTI_PROJECT_ROOT={}", self.root().display());
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let survivors = processes_with_env_entry(&needle);
            if survivors.is_empty() {
                return;
            }
            if Instant::now() > deadline {
                for pid in &survivors {
                    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                }
                panic!("processes survived the supervisor: {survivors:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
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
