//! A `*.test.toml` file (docs/config.md "Test files") as written, Bugatti 0.7 fields included, and the
//! per-step rule "exactly one of instruction / include_path / include_glob".

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::config::{CommandSection, ProviderSection};
use super::diagnostics::Problem;

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TestFile {
    /// Defaults to the file name without `.test.toml`.
    pub name: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub include_only: bool,
    /// Runs and is reported, but its failure or flakiness never changes the exit code
    /// (see docs/ci.md).
    #[serde(default)]
    pub quarantine: bool,
    #[serde(default)]
    pub overrides: Overrides,
    /// `replay = false`: every step of this file (and of the files it includes) always goes to
    /// the agent, never replayed (see docs/replay.md, "When to write replay = false").
    pub replay: Option<bool>,
    /// This test's `retries`, over `[supervisor] retries` (a number or a table, docs/config.md).
    pub retries: Option<crate::model::retries::RetriesSetting>,
    #[serde(default)]
    pub steps: Vec<Spanned<StepSection>>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Overrides {
    #[serde(default)]
    pub provider: ProviderSection,
    #[serde(default)]
    pub commands: BTreeMap<String, Spanned<CommandSection>>,
}

/// One `[[steps]]` entry as written.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StepSection {
    pub instruction: Option<String>,
    pub include_path: Option<String>,
    pub include_glob: Option<String>,
    pub timeout_secs: Option<u64>,
    /// Bugatti 0.7's spelling of `timeout_secs`.
    pub step_timeout_secs: Option<u64>,
    pub checkpoint: Option<String>,
    pub setup: Option<bool>,
    /// Bugatti 0.7: a skipped step is not sent to the agent and counts as passed.
    pub skip: Option<bool>,
    /// `replay = false`: this step always goes to the agent.
    pub replay: Option<bool>,
}

/// What a step is, once the exactly-one rule holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepKind {
    Instruction {
        text: String,
        timeout_secs: Option<u64>,
        checkpoint: Option<String>,
        setup: bool,
        skip: bool,
        /// `false`: never replayed.
        replay: bool,
    },
    IncludePath(String),
    IncludeGlob(String),
}

impl StepSection {
    /// Classify the step; the error says what is wrong with it (the caller adds the position).
    pub fn kind(&self) -> Result<StepKind, String> {
        let given: Vec<&str> = [
            ("instruction", self.instruction.is_some()),
            ("include_path", self.include_path.is_some()),
            ("include_glob", self.include_glob.is_some()),
        ]
        .iter()
        .filter(|(_, set)| *set)
        .map(|(n, _)| *n)
        .collect();
        if given.len() != 1 {
            let what = if given.is_empty() {
                "none".to_string()
            } else {
                given.join(" and ")
            };
            return Err(format!(
                "a step needs exactly one of `instruction`, `include_path`, `include_glob` (this one has {what})"
            ));
        }
        if self.timeout_secs.is_some() && self.step_timeout_secs.is_some() {
            return Err(
                "a step may set `timeout_secs` or its Bugatti spelling `step_timeout_secs`, not both"
                    .to_string(),
            );
        }
        if let Some(text) = &self.instruction {
            if text.trim().is_empty() {
                return Err("`instruction` is empty".to_string());
            }
            if matches!(self.checkpoint.as_deref(), Some(c) if c.trim().is_empty()) {
                return Err("`checkpoint` name is empty".to_string());
            }
            return Ok(StepKind::Instruction {
                text: text.clone(),
                timeout_secs: self.timeout_secs.or(self.step_timeout_secs),
                checkpoint: self.checkpoint.clone(),
                setup: self.setup.unwrap_or(false),
                skip: self.skip.unwrap_or(false),
                replay: self.replay.unwrap_or(true),
            });
        }
        let extras: Vec<&str> = [
            ("timeout_secs", self.timeout_secs.is_some()),
            ("step_timeout_secs", self.step_timeout_secs.is_some()),
            ("checkpoint", self.checkpoint.is_some()),
            ("setup", self.setup.is_some()),
            ("skip", self.skip.is_some()),
            ("replay", self.replay.is_some()),
        ]
        .iter()
        .filter(|(_, set)| *set)
        .map(|(n, _)| *n)
        .collect();
        if !extras.is_empty() {
            return Err(format!(
                "{} only applies to `instruction` steps, not to includes",
                extras
                    .iter()
                    .map(|e| format!("`{e}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        match (&self.include_path, &self.include_glob) {
            (Some(p), _) => Ok(StepKind::IncludePath(p.clone())),
            (_, Some(g)) => Ok(StepKind::IncludeGlob(g.clone())),
            _ => Err("unreachable: no step kind".to_string()),
        }
    }
}

/// Parse a test file's text; `path` is only for the error's location.
pub fn parse_test_file(path: &Path, text: &str) -> Result<TestFile, Problem> {
    let file: TestFile = super::toml_read::read_first(path, text)?;
    no_kind_override(path, text, file)
}

/// [`parse_test_file`] with every problem of the file, in file order.
pub fn parse_test_file_all(path: &Path, text: &str) -> Result<TestFile, Vec<Problem>> {
    let file: TestFile = super::toml_read::read_all(path, text)?;
    no_kind_override(path, text, file).map_err(|p| vec![p])
}

/// A test may override any field of a command but its kind.
fn no_kind_override(path: &Path, text: &str, file: TestFile) -> Result<TestFile, Problem> {
    if let Some(name) = file
        .overrides
        .commands
        .iter()
        .find_map(|(name, c)| c.get_ref().kind.is_some().then_some(name))
    {
        let span = file.overrides.commands[name].span();
        return Err(Problem::at(
            path,
            text,
            span,
            format!("`[overrides.commands.{name}]` may not change `kind`"),
        )
        .with_help("a test may override any field of a command except its kind"));
    }
    Ok(file)
}

/// The test's display name: `name`, else (also for a blank `name = ""`, which would leave the
/// test nameless in every report) the file name without `.test.toml`.
pub fn test_name(file: &TestFile, path: &Path) -> String {
    file.name
        .clone()
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| file_stem(path))
}

/// `checkout.test.toml` → `checkout`.
pub fn file_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.strip_suffix(".test.toml")
        .map(str::to_string)
        .unwrap_or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or(name)
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_blank_name_is_the_file_name() {
        let path = std::path::Path::new("/project/tests/checkout.test.toml");
        for text in ["name = \"\"", "name = \"  \"", ""] {
            let file = super::parse_test_file(path, text).expect("parses");
            assert_eq!(super::test_name(&file, path), "checkout", "{text}");
        }
        let file = super::parse_test_file(path, "name = \"Checkout\"").expect("parses");
        assert_eq!(super::test_name(&file, path), "Checkout");
    }

    use super::*;

    fn parse(text: &str) -> Result<TestFile, Problem> {
        parse_test_file(Path::new("t.test.toml"), text)
    }

    #[test]
    fn spec_example_parses() {
        let t = parse(
            r#"
name = "Checkout"
tags = ["nightly"]
include_only = false
[overrides.provider]
extra_system_prompt = "..."
[overrides.commands.server]
cmd = "python3 app/server.py --seed big"
[[steps]]
instruction = "Open it"
timeout_secs = 120
checkpoint = "logged-in"
setup = false
[[steps]]
include_path = "shared/login.test.toml"
[[steps]]
include_glob = "shared/smoke/*.test.toml"
"#,
        )
        .unwrap();
        assert_eq!(t.steps.len(), 3);
        assert_eq!(
            t.steps[0].get_ref().kind().unwrap(),
            StepKind::Instruction {
                text: "Open it".into(),
                timeout_secs: Some(120),
                checkpoint: Some("logged-in".into()),
                setup: false,
                skip: false,
                replay: true
            }
        );
        assert_eq!(
            t.steps[2].get_ref().kind().unwrap(),
            StepKind::IncludeGlob("shared/smoke/*.test.toml".into())
        );
    }

    #[test]
    fn bugatti_step_fields_are_accepted() {
        let t = parse(
            "name = \"x\"\n[[steps]]\ninstruction = \"a\"\nstep_timeout_secs = 9\nskip = true\n",
        )
        .unwrap();
        match t.steps[0].get_ref().kind().unwrap() {
            StepKind::Instruction {
                timeout_secs, skip, ..
            } => assert_eq!((timeout_secs, skip), (Some(9), true)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn step_with_two_kinds_or_none_is_refused() {
        let s = StepSection {
            instruction: Some("a".into()),
            include_path: Some("b".into()),
            ..Default::default()
        };
        assert_eq!(
            s.kind().unwrap_err(),
            "a step needs exactly one of `instruction`, `include_path`, `include_glob` (this one has instruction and include_path)"
        );
        let e = StepSection::default().kind().unwrap_err();
        assert!(e.ends_with("(this one has none)"), "{e}");
    }

    #[test]
    fn include_with_step_only_fields_is_refused() {
        let s = StepSection {
            include_path: Some("b".into()),
            timeout_secs: Some(3),
            setup: Some(true),
            ..Default::default()
        };
        assert_eq!(
            s.kind().unwrap_err(),
            "`timeout_secs`, `setup` only applies to `instruction` steps, not to includes"
        );
    }

    #[test]
    fn both_timeout_spellings_refused_and_empty_instruction_refused() {
        let s = StepSection {
            instruction: Some("a".into()),
            timeout_secs: Some(1),
            step_timeout_secs: Some(2),
            ..Default::default()
        };
        assert!(s.kind().unwrap_err().contains("not both"));
        let s = StepSection {
            instruction: Some("  ".into()),
            ..Default::default()
        };
        assert_eq!(s.kind().unwrap_err(), "`instruction` is empty");
    }

    #[test]
    fn unknown_step_field_has_line() {
        let p = parse("name = \"x\"\n[[steps]]\ninstruction = \"a\"\ntimeout = 3\n").unwrap_err();
        assert!(
            p.message.contains("unknown field `timeout`"),
            "{}",
            p.message
        );
        assert_eq!(p.location.unwrap().line, 4);
    }

    #[test]
    fn overriding_kind_is_refused() {
        let p = parse("[overrides.commands.server]\nkind = \"short_lived\"\n").unwrap_err();
        assert!(p.message.contains("may not change `kind`"), "{}", p.message);
    }

    #[test]
    fn name_defaults_to_file_stem() {
        let t = parse("[[steps]]\ninstruction = \"a\"\n").unwrap();
        assert_eq!(test_name(&t, Path::new("a/checkout.test.toml")), "checkout");
    }
}
