//! `[replay]` and `--replay MODE` (SPEC §10) as written, validated, and resolved to settings.
//!
//! Replay itself is not wired into sessions yet: these settings are read and checked (a wrong
//! mode or an invalid `ignore` regex is an error with its file and line, like any config
//! problem) but do not change how a run goes.

use super::diagnostics::{did_you_mean, Problem};
use serde::Deserialize;
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
}

/// `[replay] dir` when unset.
pub const DEFAULT_DIR: &str = "bugatti.replay";

impl ReplaySection {
    /// What is wrong in the section beyond its types: an `ignore` entry that is not a regex, an
    /// empty `dir`. `file` and `text` are the config file's, for positions.
    pub fn problems(&self, file: &Path, text: &str) -> Vec<Problem> {
        let mut problems = Vec::new();
        for pattern in self.ignore.iter().flatten() {
            if let Err(e) = regex::Regex::new(pattern.get_ref()) {
                let reason = e.to_string();
                let reason = reason.lines().last().unwrap_or_default().trim().to_string();
                problems.push(Problem::at(
                    file,
                    text,
                    pattern.span(),
                    format!(
                        "[replay] ignore: `{}` is not a valid regex: {reason}",
                        pattern.get_ref()
                    ),
                ));
            }
        }
        if let Some(dir) = &self.dir {
            if dir.get_ref().trim().is_empty() {
                problems.push(
                    Problem::at(file, text, dir.span(), "[replay] dir is empty")
                        .with_help(format!("leave it out for the default `{DEFAULT_DIR}`")),
                );
            }
        }
        problems
    }
}

/// The effective replay settings of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplaySettings {
    pub mode: ReplayMode,
    /// Absolute: the project root joined with `[replay] dir`.
    pub dir: PathBuf,
    pub ignore: Vec<String>,
    pub max_age_days: u32,
}

impl ReplaySettings {
    /// `section` over the defaults, `flag` (`--replay`) over both.
    pub fn resolve(project_root: &Path, section: &ReplaySection, flag: Option<ReplayMode>) -> Self {
        let mode = flag
            .or_else(|| section.mode.as_ref().map(|m| *m.get_ref()))
            .unwrap_or_default();
        let dir = section
            .dir
            .as_ref()
            .map_or(DEFAULT_DIR, |d| d.get_ref().as_str());
        Self {
            mode,
            dir: project_root.join(dir),
            ignore: section
                .ignore
                .iter()
                .flatten()
                .map(|p| p.get_ref().clone())
                .collect(),
            max_age_days: section
                .max_age_days
                .as_ref()
                .map_or(crate::replay::store::DEFAULT_MAX_AGE_DAYS, |d| *d.get_ref()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::parse_config;

    fn file() -> &'static Path {
        Path::new("bugatti.config.toml")
    }

    #[test]
    fn defaults_and_overrides() {
        let none = ReplaySettings::resolve(Path::new("/p"), &ReplaySection::default(), None);
        assert_eq!(none.mode, ReplayMode::Auto);
        assert_eq!(none.dir, Path::new("/p/bugatti.replay"));
        assert_eq!(none.max_age_days, 30);
        let text = "[replay]\nmode = \"record\"\ndir = \"rec\"\nignore = ['order #[0-9]+']\nmax_age_days = 7\n";
        let cfg = parse_config(file(), text).expect("valid");
        let s = ReplaySettings::resolve(Path::new("/p"), &cfg.replay, None);
        assert_eq!(
            s,
            ReplaySettings {
                mode: ReplayMode::Record,
                dir: PathBuf::from("/p/rec"),
                ignore: vec!["order #[0-9]+".into()],
                max_age_days: 7
            }
        );
        assert!(cfg.replay.problems(file(), text).is_empty());
        let flagged = ReplaySettings::resolve(Path::new("/p"), &cfg.replay, Some(ReplayMode::Off));
        assert_eq!(flagged.mode, ReplayMode::Off);
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
    fn a_bad_ignore_regex_and_an_unknown_key_are_positioned() {
        let text = "[replay]\nignore = ['ok', 'order (']\ndir = ' '\n";
        let cfg = parse_config(file(), text).expect("types are fine");
        let problems: Vec<String> = cfg
            .replay
            .problems(file(), text)
            .iter()
            .map(|p| p.to_string())
            .collect();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains("bugatti.config.toml:2"),
            "{problems:?}"
        );
        assert!(
            problems[0].contains("`order (` is not a valid regex"),
            "{problems:?}"
        );
        assert!(
            problems[1].contains("bugatti.config.toml:3"),
            "{problems:?}"
        );
        let p = parse_config(file(), "[replay]\nmax_age_day = 3\n").expect_err("unknown key");
        assert!(
            p.to_string().contains("did you mean `max_age_days`?"),
            "{p}"
        );
    }
}
