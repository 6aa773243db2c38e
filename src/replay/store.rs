//! Where a root test's recording lives, reading it, and finding a step in it.
//!
//! Reading never fails a run: every way a file can be unusable (unreadable, not JSON, hand-edited
//! into another shape, written by a newer supervisor, for another test) is a [`LoadError`] the
//! caller turns into a warning before asking the agent. Finding a step either gives its recording
//! or a [`Miss`](super::verdict::Miss) that says why not.

pub use super::error::LoadError;
use super::format::{RecordedStep, Recording, LEARNED_MASKS_SINCE, SCHEMA_VERSION};
use super::verdict::Miss;
use crate::atomic::WriteError;
/// Where a root test's recording lives (in the model: `-E 'changed()'` looks at it too).
pub use crate::model::artifacts::recording_path;
use crate::model::ids::StepId;
use crate::model::provider::ProviderKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The folder of the recordings waiting for review, beside the ones in force (docs/replay.md,
/// "A recording never weakens in silence").
pub const PENDING_DIR: &str = "pending";

/// `<dir>/pending/<test path without .test.toml>.replay.json`: the re-recordings of `test` that
/// would weaken the one in force, waiting for a person's word.
pub fn pending_path(dir: &Path, test: &Path) -> PathBuf {
    recording_path(&dir.join(PENDING_DIR), test)
}

/// The largest recording read (docs/replay.md): a recording is the project's input, and a
/// symlink to `/dev/zero` or a giant file must not take the supervisor's memory.
pub const MAX_RECORDING_BYTES: u64 = 64 * 1024 * 1024;

/// The text of the file at `path` if it is a regular file (a symlink to one is fine) of at most
/// [`MAX_RECORDING_BYTES`]; `Ok(None)` when there is none. A FIFO or a device is never opened
/// for blocking: its type is checked before the open, the open does not block, and the opened
/// file is checked again (it may have been swapped in between).
fn read_regular(path: &Path) -> Result<Option<String>, LoadError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let read_err = |source| LoadError::Read {
        path: path.to_path_buf(),
        source: Arc::new(source),
    };
    let check = |meta: &std::fs::Metadata| {
        if !meta.is_file() {
            return Err(LoadError::NotRegular {
                path: path.to_path_buf(),
                kind: super::bounded::file_kind(meta),
            });
        }
        if meta.len() > MAX_RECORDING_BYTES {
            return Err(LoadError::TooBig {
                path: path.to_path_buf(),
                size: meta.len(),
                max: MAX_RECORDING_BYTES,
            });
        }
        Ok(())
    };
    match std::fs::metadata(path) {
        Ok(meta) => check(&meta)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(read_err(e)),
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(read_err)?;
    check(&file.metadata().map_err(read_err)?)?;
    let mut bytes = Vec::new();
    // One byte past the cap tells a file that grew after its size was read.
    file.take(MAX_RECORDING_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() as u64 > MAX_RECORDING_BYTES {
        return Err(LoadError::TooBig {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
            max: MAX_RECORDING_BYTES,
        });
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| read_err(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

/// Reads the recording of `test` at `path`: `Ok(None)` when there is none.
pub fn load(path: &Path, test: &str) -> Result<Option<Recording>, LoadError> {
    let Some(recording) = load_any(path)? else {
        return Ok(None);
    };
    if recording.test != test {
        return Err(LoadError::OtherTest {
            path: path.to_path_buf(),
            found: recording.test,
            expected: test.to_string(),
        });
    }
    Ok(Some(recording))
}

/// Reads the recording at `path`, whichever test it is of: `Ok(None)` when there is none.
pub fn load_any(path: &Path) -> Result<Option<Recording>, LoadError> {
    let Some(text) = read_regular(path)? else {
        return Ok(None);
    };
    let corrupt = |e: serde_json::Error| LoadError::Corrupt {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    };
    // The version first: a newer file's other fields may well not parse here, and "newer" is the
    // useful thing to say about it.
    let value: serde_json::Value = serde_json::from_str(&text).map_err(corrupt)?;
    if let Some(found) = value.get("schema").and_then(serde_json::Value::as_u64) {
        if found > u64::from(SCHEMA_VERSION) {
            return Err(LoadError::Newer {
                path: path.to_path_buf(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
    }
    // From the text, not the value, so that the error has the line and column.
    let recording: Recording = serde_json::from_str(&text).map_err(corrupt)?;
    Ok(Some(recording))
}

/// Writes `recording` to `path`, or removes the file when it has no step left.
pub fn save_or_remove(path: &Path, recording: &Recording) -> Result<(), WriteError> {
    if !recording.steps.is_empty() {
        return save(path, recording);
    }
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(WriteError::new(path, e)),
    }
}

/// Writes `recording` to `path` (atomically: a reader sees the old file or the new one),
/// creating its directory.
pub fn save(path: &Path, recording: &Recording) -> Result<(), WriteError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| WriteError::new(dir, e))?;
    }
    let text = recording
        .to_text()
        .map_err(|e| WriteError::new(path, std::io::Error::other(e)))?;
    crate::atomic::write_atomic(path, text.as_bytes())
}

/// What identifies a step's recording (docs/replay.md): its place and provenance, its instruction as
/// sent (hashed, volatile values masked), and the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepKey {
    pub step: StepId,
    pub provenance: String,
    pub instruction_hash: String,
    pub provider: ProviderKind,
}

impl Recording {
    /// The recording of the step `key`, if it is current at `now`.
    pub fn lookup(
        &self,
        key: &StepKey,
        now: chrono::DateTime<chrono::Utc>,
        max_age_days: u32,
    ) -> Result<&RecordedStep, Miss> {
        let step = self
            .steps
            .iter()
            .find(|s| s.step == key.step)
            .ok_or(Miss::NoStep)?;
        if self.schema < LEARNED_MASKS_SINCE {
            return Err(Miss::OldSchema {
                schema: self.schema,
            });
        }
        if step.provenance != key.provenance {
            return Err(Miss::Moved {
                recorded: step.provenance.clone(),
                now: key.provenance.clone(),
            });
        }
        if step.provider != key.provider {
            return Err(Miss::OtherProvider {
                recorded: step.provider,
                now: key.provider,
            });
        }
        if step.instruction_hash != key.instruction_hash {
            return Err(Miss::InstructionChanged);
        }
        if let Some(why) = &step.failed {
            return Err(Miss::Failed(why.clone()));
        }
        let age_days = (now - step.recorded_at).num_days();
        if age_days > i64::from(max_age_days) || age_days < 0 {
            return Err(Miss::TooOld {
                age_days,
                max_age_days,
            });
        }
        if step.actions.is_empty() {
            // A step passed without touching anything proves nothing when replayed.
            return Err(Miss::NoActions);
        }
        // Claude Code from 2.1.265 starts a step's shell where the last one left it: without
        // the version that made it, a recorded shell action's directory is a guess.
        let shell = step
            .actions
            .iter()
            .any(|a| matches!(a, crate::replay::format::Action::Shell(_)));
        if step.provider == ProviderKind::ClaudeCode && shell && step.agent_version.is_none() {
            return Err(Miss::NoAgentVersion);
        }
        Ok(step)
    }
}

/// What `supervisor check` says of a step's recording: whether there is one this run could use,
/// by the same rules as a run ([`Recording::lookup`]). The instruction's hash needs the session's
/// values, so a changed instruction is found only when the step runs (it is then a miss).
pub fn check_status(
    recording: &Recording,
    key: &StepKey,
    now: chrono::DateTime<chrono::Utc>,
    max_age_days: u32,
) -> String {
    let recorded_hash = recording
        .steps
        .iter()
        .find(|s| s.step == key.step)
        .map(|s| s.instruction_hash.clone());
    let key = StepKey {
        instruction_hash: recorded_hash.unwrap_or_default(),
        ..key.clone()
    };
    match recording.lookup(&key, now, max_age_days) {
        Ok(recorded) => format!(
            "recorded {} ({} action{}: {})",
            recorded.recorded_at.format("%Y-%m-%d"),
            recorded.actions.len(),
            if recorded.actions.len() == 1 { "" } else { "s" },
            kinds(recorded)
        ),
        Err(miss) => format!("not replayable, {miss}"),
    }
}

/// What kinds of action a step's recording holds, with their counts: `2 browser, 1 shell`.
fn kinds(step: &RecordedStep) -> String {
    super::action::KIND_NAMES
        .iter()
        .filter_map(|kind| {
            let n = step
                .actions
                .iter()
                .filter(|a| a.kind_name() == *kind)
                .count();
            (n > 0).then(|| format!("{n} {kind}"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::format::Action;
    use crate::replay::shell::ShellAction;

    fn recording() -> Recording {
        let mut rec = Recording::new("tests/a.test.toml");
        rec.upsert(RecordedStep {
            step: StepId::new(1),
            provenance: "tests/a.test.toml#1".into(),
            instruction_hash: "h1".into(),
            provider: "claude-code".parse().expect("a provider"),
            recorded_at: "2026-11-01T00:00:00Z".parse().expect("ts"),
            run_started_at: None,
            cost_usd: Some(0.02),
            relations: None,
            facts: None,
            agent_version: Some("2.1.197".into()),
            failed: None,
            first_look_ms: None,
            actions: vec![Action::Shell(ShellAction {
                command: "true".into(),
                cwd: "${BUGATTI_WORKDIR}".into(),
                exit_code: Some(0),
                output: String::new(),
                timeout_ms: None,
                volatile: Vec::new(),
            })],
        });
        rec
    }

    fn key() -> StepKey {
        StepKey {
            step: StepId::new(1),
            provenance: "tests/a.test.toml#1".into(),
            instruction_hash: "h1".into(),
            provider: "claude-code".parse().expect("a provider"),
        }
    }

    fn at(day: &str) -> chrono::DateTime<chrono::Utc> {
        format!("{day}T00:00:00Z").parse().expect("ts")
    }

    #[test]
    fn path_mirrors_the_test_path() {
        assert_eq!(
            recording_path(
                Path::new("bugatti.replay"),
                Path::new("tests/login.test.toml")
            ),
            Path::new("bugatti.replay/tests/login.replay.json")
        );
    }

    #[test]
    fn saved_and_loaded_back() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = recording_path(dir.path(), Path::new("tests/a.test.toml"));
        assert!(load(&path, "tests/a.test.toml").expect("none").is_none());
        save(&path, &recording()).expect("saved");
        let back = load(&path, "tests/a.test.toml")
            .expect("loads")
            .expect("some");
        assert_eq!(back, recording());
        // The typed provider is written as its name, as the string was.
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.contains("\"provider\": \"claude-code\""), "{text}");
    }

    #[test]
    fn unusable_files_are_typed_errors() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("a.replay.json");
        let good = recording().to_text().expect("text");
        let cases = [
            ("{\"schema\": 1, \"test\": ", "Corrupt"),
            (
                &good.replace("\"provider\"", "\"providr\"") as &str,
                "Corrupt",
            ),
            // A provider no supervisor has: unreadable, so the agent runs the step.
            (
                &good.replace("\"claude-code\"", "\"claude\"") as &str,
                "Corrupt",
            ),
            (
                &good.replace(&format!("\"schema\": {SCHEMA_VERSION}"), "\"schema\": 99"),
                "Newer",
            ),
            (&good.replace("\"step\": 1", "\"step\": \"one\""), "Corrupt"),
            ("[]", "Corrupt"),
        ];
        for (text, kind) in cases {
            std::fs::write(&path, text).expect("write");
            let e = load(&path, "tests/a.test.toml").expect_err(text);
            let got = match &e {
                LoadError::Corrupt { line, .. } => {
                    assert!(*line >= 1, "{e}");
                    "Corrupt"
                }
                LoadError::Newer { found, .. } => {
                    assert_eq!(*found, 99);
                    "Newer"
                }
                _ => "other",
            };
            assert_eq!(got, kind, "{text}: {e}");
            assert!(e.to_string().contains("a.replay.json"), "{e}");
        }
        std::fs::write(&path, &good).expect("write");
        assert!(matches!(
            load(&path, "tests/b.test.toml"),
            Err(LoadError::OtherTest { .. })
        ));
    }

    #[test]
    fn a_miss_says_why() {
        let rec = recording();
        let now = at("2026-11-24");
        assert!(rec.lookup(&key(), now, 30).is_ok());
        let with = |f: fn(&mut StepKey)| {
            let mut k = key();
            f(&mut k);
            rec.lookup(&k, now, 30).expect_err("miss")
        };
        assert_eq!(with(|k| k.step = StepId::new(2)), Miss::NoStep);
        assert_eq!(
            with(|k| k.instruction_hash = "h2".into()),
            Miss::InstructionChanged
        );
        assert!(matches!(
            with(|k| k.provider = "codex".parse().expect("a provider")),
            Miss::OtherProvider { .. }
        ));
        assert!(matches!(
            with(|k| k.provenance = "tests/b.test.toml#1".into()),
            Miss::Moved { .. }
        ));
        assert_eq!(
            rec.lookup(&key(), now, 10).expect_err("old"),
            Miss::TooOld {
                age_days: 23,
                max_age_days: 10
            }
        );
        // A recording of the first layout (masks up front) is read, and not replayed.
        let mut old = rec.clone();
        old.schema = 1;
        let miss = old.lookup(&key(), now, 30).expect_err("old layout");
        assert_eq!(miss, Miss::OldSchema { schema: 1 });
        assert!(miss.to_string().contains("older supervisor"), "{miss}");
        let mut empty = rec.clone();
        empty.steps[0].actions.clear();
        assert_eq!(
            empty.lookup(&key(), now, 30).expect_err("empty"),
            Miss::NoActions
        );
        // Where Claude Code's shell started the step depends on its version: a recording that
        // does not name it is made again, never replayed in a guessed directory.
        let mut unversioned = rec.clone();
        unversioned.steps[0].agent_version = None;
        let miss = unversioned.lookup(&key(), now, 30).expect_err("no version");
        assert_eq!(miss, Miss::NoAgentVersion);
        assert!(miss.to_string().contains("records it anew"), "{miss}");
    }

    #[test]
    fn check_reports_by_the_same_rules_as_a_run() {
        let rec = recording();
        let now = at("2026-11-24");
        let status = |k: StepKey, days| check_status(&rec, &k, now, days);
        let unknown_hash = StepKey {
            instruction_hash: String::new(),
            ..key()
        };
        assert_eq!(
            status(unknown_hash, 30),
            "recorded 2026-11-01 (1 action: 1 shell)"
        );
        assert_eq!(
            status(
                StepKey {
                    step: StepId::new(2),
                    ..key()
                },
                30
            ),
            "not replayable, step not recorded"
        );
        assert!(status(key(), 10).contains("23 days old"));
        assert!(status(
            StepKey {
                provider: "codex".parse().expect("a provider"),
                ..key()
            },
            30
        )
        .contains("provider claude-code"));
    }
}
