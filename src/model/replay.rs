//! `[replay]` and `--replay MODE` (see docs/replay.md) as written, validated, and resolved to settings.
//!
//! A wrong mode or an invalid `ignore` regex is an error with its file and line, like any config
//! problem. Also here: what replay did for a step (`StepMode`, `StepReplay`, `Drift`), as the
//! reports keep it.

use super::diagnostics::did_you_mean;
use super::sourced::Sourced;
use crate::model::ids::StepId;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use toml::Spanned;

/// What replay does in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplayMode {
    /// Never replay, never record: every step goes to the agent.
    Off,
    /// Replay where a current recording matches; the agent on a miss or drift (and it records).
    #[default]
    Auto,
    /// Always the agent; recordings refreshed.
    Record,
    /// No agent: a step without a usable recording is `error` "no recording".
    Only,
}

/// The modes' names, as written.
pub const MODES: [&str; 4] = ["off", "auto", "record", "only"];

impl ReplayMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Auto => "auto",
            Self::Record => "record",
            Self::Only => "only",
        }
    }
}

impl std::fmt::Display for ReplayMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `--replay` with a mode that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown replay mode `{given}`: expected one of off, auto, record, only{}", help.as_ref().map(|h| format!(" ({h})")).unwrap_or_default())]
pub struct UnknownMode {
    pub given: String,
    pub help: Option<String>,
}

impl std::str::FromStr for ReplayMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "off" => Self::Off,
            "auto" => Self::Auto,
            "record" => Self::Record,
            "only" => Self::Only,
            _ => {
                return Err(UnknownMode {
                    given: s.to_string(),
                    help: did_you_mean(s, &MODES),
                })
            }
        })
    }
}

/// Whether replay applies to a run at all: not with `mode = "off"`, and not for the built-in
/// `shell` provider (it is deterministic already). The one rule a run and `check` both use.
pub fn applies(mode: ReplayMode, provider: crate::model::provider::ProviderKind) -> bool {
    mode != ReplayMode::Off && provider.is_agent()
}

/// `[replay]` as written; every field optional.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReplaySection {
    pub mode: Option<Spanned<ReplayMode>>,
    /// Relative to the project root.
    pub dir: Option<Spanned<String>>,
    /// Extra regexes masked before comparison.
    pub ignore: Option<Vec<Spanned<String>>>,
    pub max_age_days: Option<Spanned<u32>>,
    /// The share (0.0–1.0) of replayable steps sent to the agent anyway.
    pub audit: Option<Spanned<f64>>,
}

/// `[replay] dir` when unset.
pub const DEFAULT_DIR: &str = "bugatti.replay";

/// `[replay] max_age_days` when unset.
pub const DEFAULT_MAX_AGE_DAYS: u32 = 30;

/// The effective `[replay]` of a run, each value with the layer it came from (applied by
/// `layers`: config files, then `--replay`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayConfig {
    pub mode: Sourced<ReplayMode>,
    /// As written: relative to the project root ([`ReplayConfig::dir_in`]).
    pub dir: Sourced<String>,
    /// Checked to be regexes when applied.
    pub ignore: Sourced<Vec<String>>,
    pub max_age_days: Sourced<u32>,
    /// `[replay] audit`, checked to be within 0.0–1.0.
    pub audit: Sourced<AuditShare>,
}

/// `[replay] audit` in millionths (a whole number, so that the config compares exactly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuditShare(u32);

impl AuditShare {
    /// `share` (0.0–1.0) or `None` outside that range.
    pub fn new(share: f64) -> Option<Self> {
        (0.0..=1.0)
            .contains(&share)
            .then(|| Self((share * 1_000_000.0).round() as u32))
    }

    pub fn fraction(self) -> f64 {
        f64::from(self.0) / 1_000_000.0
    }

    /// Whether step `step` of `test` is audited on `date` (`YYYY-MM-DD`): a hash of the three
    /// below the share, so that every shard of a run chooses the same steps.
    pub fn picks(self, test: &str, step: StepId, date: &str) -> bool {
        use sha2::{Digest, Sha256};
        if self.0 == 0 {
            return false;
        }
        let digest = Sha256::digest(format!("{test}\n{step}\n{date}").as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        let draw = u64::from_be_bytes(first) % 1_000_000;
        draw < u64::from(self.0)
    }
}

impl Default for ReplayConfig {
    fn default() -> Self {
        Self {
            mode: Sourced::default_value(ReplayMode::default()),
            dir: Sourced::default_value(DEFAULT_DIR.to_string()),
            ignore: Sourced::default_value(Vec::new()),
            max_age_days: Sourced::default_value(DEFAULT_MAX_AGE_DAYS),
            audit: Sourced::default_value(AuditShare::default()),
        }
    }
}

impl ReplayConfig {
    /// The recordings' directory of a project.
    pub fn dir_in(&self, project_root: &Path) -> PathBuf {
        project_root.join(&self.dir.value)
    }
}

/// Where and how a replay stopped matching its recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Drift {
    /// 0-based index of the action in the recorded step.
    pub action: usize,
    /// The action in a few words (`exec_command curl …`).
    pub what: String,
    /// Which part differed: `output`, `exit code`, `error`.
    pub field: String,
    /// Recorded, after normalisation, cut.
    pub expected: String,
    /// Seen now, after normalisation, cut.
    pub seen: String,
    /// `--- recorded` / `+++ replayed` unified diff of the two, cut.
    pub diff: String,
    /// The outputs differ only in timestamps, UUIDs, durations or hex values not learned yet:
    /// when the agent passes the step, the positions that varied are masked from then on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub soft: bool,
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "action {} ({}): {} differs\n{}",
            self.action + 1,
            self.what,
            self.field,
            self.diff
        )
    }
}

/// How a step of an agent provider was carried out (run.json `steps[].mode`, see docs/replay.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepMode {
    /// Every recorded action ran again and matched: passed without the model.
    Replayed,
    /// The agent carried it out (replay off, no usable recording, or a drift).
    Agent,
    /// Neither: `--replay only` found no usable recording, and there is no agent to ask.
    NotReplayed,
}

impl StepMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Replayed => "replayed",
            Self::Agent => "agent",
            Self::NotReplayed => "not_replayed",
        }
    }
}

/// What replay did for one step: carried on its `step_finished` event and in run.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepReplay {
    pub mode: StepMode,
    /// Why the step was not replayed, or why the agent's pass was not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The first difference a replay found (the step then went to the agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
    /// The agent's pass was written to the recording.
    #[serde(default)]
    pub recorded: bool,
    /// For a replayed step: what the model cost when it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_saved_usd: Option<f64>,
    /// The recording file could not be used (corrupt, hand-edited, newer): the console warns.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unusable_recording: bool,
    /// `[replay] audit` sent this replayable step to the agent anyway.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub audited: bool,
    /// An audited step the agent failed: its recording would have passed it, and is never
    /// replayed again (kept as the baseline a new pass must match in strength).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub audit_disagreed: bool,
    /// The agent ran it because there was no usable recording (the note says why).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_recording: bool,
    /// For a replayed step: each action it ran (command or tool, cut output).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<ReplayedAction>,
    /// For a replayed step: when its recording was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_at: Option<chrono::DateTime<chrono::Utc>>,
    /// For a replayed step: the provider whose agent passed it then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_by: Option<String>,
    /// The facts the pass rests on (docs/replay.md): for a replayed step, those that held on
    /// today's outputs; for a recorded one, those the agent stated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<String>,
    /// A re-recording of the step that would weaken the one in force waits for review (what it
    /// would drop, "…: pending review"): the console, the reports and summary.json say so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_review: Option<String>,
}

/// How a run's (or a suite's) steps went through replay: the summary line's words.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayCounts {
    pub replayed: u64,
    /// Carried out by the agent with replay on (every reason below included).
    pub agent: u64,
    /// Of those, after a drift (hard and soft).
    pub drift: u64,
    /// Of the drifts, the soft ones.
    pub soft_drift: u64,
    /// Of the agent's, sent by `[replay] audit`.
    pub audited: u64,
    /// Audited steps the agent failed: the recording would have passed them.
    pub disagreed: u64,
    /// Of the agent's, those with no usable recording (new, changed, too old, unreadable, opted
    /// out, not replayable).
    pub no_recording: u64,
    /// `--replay only` steps without a usable recording (no agent asked).
    pub not_replayed: u64,
}

impl ReplayCounts {
    /// Whether replay applied to any step.
    pub fn any(&self) -> bool {
        self.replayed + self.agent + self.not_replayed > 0
    }

    /// `12 replayed, 3 by the agent (1 drift, 1 soft drift, 1 no recording), 1 audited`; with
    /// `--replay only` never "by the agent".
    pub fn describe(&self) -> String {
        let mut text = format!("{} replayed", self.replayed);
        if self.agent > 0 || self.not_replayed == 0 {
            text.push_str(&format!(", {} by the agent", self.agent));
            let hard = self.drift.saturating_sub(self.soft_drift);
            let parts: Vec<String> = [
                (hard, "drift"),
                (self.soft_drift, "soft drift"),
                (self.no_recording, "no recording"),
            ]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
            if !parts.is_empty() {
                text.push_str(&format!(" ({})", parts.join(", ")));
            }
        }
        if self.not_replayed > 0 {
            text.push_str(&format!(
                ", {} not replayed (no usable recording; --replay only asks no agent)",
                self.not_replayed
            ));
        }
        if self.audited > 0 {
            text.push_str(&format!(", {} audited", self.audited));
            if self.disagreed > 0 {
                text.push_str(&format!(
                    " ({} failed by the agent: replay would have passed a failing step)",
                    self.disagreed
                ));
            }
        }
        text
    }
}

/// A step replayed before the one the agent takes over, as the agent is told of it: context,
/// never instructions (a `command` agent gets it as the step line's `"replayed"`, the CLIs as a
/// block marked not to be run again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayedStep {
    pub step_id: crate::model::ids::StepId,
    /// Its instruction; `None` for the step the agent now takes, whose replay stopped part way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// What happened to it: `replayed`, or how far a replay that stopped got.
    pub status: String,
    /// Each action that ran again and its recorded output, cut (the last one of a drift: its
    /// output differed, and says so).
    pub actions: Vec<ReplayedAction>,
}

/// One action a replayed step ran, as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReplayedAction {
    /// The command or tool call, in a few words.
    pub what: String,
    /// Its recorded output, cut.
    pub output: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::parse_config;
    use crate::model::layers::{EffectiveConfig, Layer};
    use crate::model::options::RunOptions;

    fn file() -> &'static Path {
        Path::new("bugatti.config.toml")
    }

    /// `text` applied as the project config, then `flag`; the problems rendered.
    fn effective(text: &str, flag: Option<ReplayMode>) -> (EffectiveConfig, Vec<String>) {
        let cfg = parse_config(file(), text).expect("types are fine");
        let mut e = EffectiveConfig::default();
        let mut problems = e.apply_file(&cfg, file(), Layer::Project, &|_| None);
        problems.extend(e.apply_flags(&RunOptions {
            replay: flag,
            ..RunOptions::default()
        }));
        let shown = problems
            .iter()
            .map(|p| {
                let line = p
                    .origin
                    .as_ref()
                    .map(|o| text[..o.span.start].matches('\n').count() + 1);
                format!("{line:?} {}", p.message)
            })
            .collect();
        (e, shown)
    }

    #[test]
    fn defaults_file_and_flag() {
        let (e, problems) = effective("", None);
        assert!(problems.is_empty());
        assert_eq!(e.replay.mode.value, ReplayMode::Auto);
        assert_eq!(e.replay.mode.source, Layer::Default);
        assert_eq!(
            e.replay.dir_in(Path::new("/p")),
            Path::new("/p/bugatti.replay")
        );
        assert_eq!(e.replay.max_age_days.value, 30);
        let text = "[replay]\nmode = \"record\"\ndir = \"rec\"\nignore = ['order #[0-9]+']\nmax_age_days = 7\n";
        let (e, problems) = effective(text, None);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(e.replay.mode.value, ReplayMode::Record);
        assert_eq!(e.replay.mode.source, Layer::Project);
        assert_eq!(e.replay.dir_in(Path::new("/p")), Path::new("/p/rec"));
        assert_eq!(e.replay.ignore.value, vec!["order #[0-9]+".to_string()]);
        assert_eq!(e.replay.max_age_days.value, 7);
        let (e, _) = effective(text, Some(ReplayMode::Off));
        assert_eq!(e.replay.mode.value, ReplayMode::Off);
        assert_eq!(e.replay.mode.source, Layer::Flag);
    }

    #[test]
    fn the_summary_says_what_happened() {
        let c = |replayed, agent, drift, soft_drift, audited, disagreed, not_replayed| {
            ReplayCounts {
                replayed,
                agent,
                drift,
                soft_drift,
                audited,
                disagreed,
                not_replayed,
                no_recording: agent - drift - audited,
            }
            .describe()
        };
        assert_eq!(c(6, 0, 0, 0, 0, 0, 0), "6 replayed, 0 by the agent");
        assert_eq!(
            c(1, 1, 1, 0, 0, 0, 0),
            "1 replayed, 1 by the agent (1 drift)"
        );
        assert_eq!(
            c(5, 4, 2, 1, 1, 1, 0),
            "5 replayed, 4 by the agent (1 drift, 1 soft drift, 1 no recording), 1 audited \
             (1 failed by the agent: replay would have passed a failing step)"
        );
        assert_eq!(
            c(0, 3, 0, 0, 0, 0, 0),
            "0 replayed, 3 by the agent (3 no recording)"
        );
        let only = c(2, 0, 0, 0, 0, 0, 3);
        assert!(!only.contains("by the agent"), "{only}");
        assert!(only.starts_with("2 replayed, 3 not replayed"), "{only}");
    }

    #[test]
    fn audit_is_a_share_and_picks_by_hash() {
        let (e, problems) = effective("[replay]\naudit = 1.0\n", None);
        assert!(problems.is_empty(), "{problems:?}");
        let all = e.replay.audit.value;
        assert!((1..20).all(|s| all.picks("t.test.toml", StepId::new(s), "2026-11-25")));
        let none = AuditShare::default();
        assert!(!(1..20).any(|s| none.picks("t.test.toml", StepId::new(s), "2026-11-25")));
        let half = AuditShare::new(0.5).expect("in range");
        let picked = (1..200)
            .filter(|s| half.picks("t", StepId::new(*s), "2026-11-25"))
            .count();
        assert!((50..150).contains(&picked), "{picked}");
        assert_eq!(
            half.picks("t", StepId::new(7), "2026-11-25"),
            half.picks("t", StepId::new(7), "2026-11-25")
        );
        let (_, problems) = effective("[replay]\naudit = 1.5\n", None);
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("Some(2) ") && p.contains("0.0 to 1.0")),
            "{problems:?}"
        );
    }

    #[test]
    fn an_unknown_mode_is_positioned_with_a_suggestion() {
        let text = "[replay]\nmode = \"recrod\"\n";
        let p = parse_config(file(), text).expect_err("invalid");
        let shown = p.to_string();
        assert!(shown.contains("bugatti.config.toml:2"), "{shown}");
        assert!(shown.contains("did you mean `record`?"), "{shown}");
        let e = "autoo".parse::<ReplayMode>().expect_err("invalid");
        assert_eq!(e.help.as_deref(), Some("did you mean `auto`?"));
        assert!(
            e.to_string()
                .contains("expected one of off, auto, record, only"),
            "{e}"
        );
        assert_eq!("only".parse::<ReplayMode>(), Ok(ReplayMode::Only));
    }

    #[test]
    fn a_bad_ignore_regex_and_an_empty_dir_are_positioned() {
        let (_, problems) = effective("[replay]\nignore = ['ok', 'order (']\ndir = ' '\n", None);
        assert_eq!(problems.len(), 2, "{problems:?}");
        let regex = problems
            .iter()
            .find(|p| p.contains("`order (` is not a valid regex"));
        assert!(
            regex.is_some_and(|p| p.starts_with("Some(2) ")),
            "{problems:?}"
        );
        let dir = problems.iter().find(|p| p.contains("dir is empty"));
        assert!(
            dir.is_some_and(|p| p.starts_with("Some(3) ")),
            "{problems:?}"
        );
        let p = parse_config(file(), "[replay]\nmax_age_day = 3\n").expect_err("unknown key");
        assert!(
            p.to_string().contains("did you mean `max_age_days`?"),
            "{p}"
        );
    }
}
