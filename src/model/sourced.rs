//! A setting's value and where it came from: the layer (`default` < `global` < `project` < `env`
//! < `test` < `flag`) and, from a file, the place; a problem found with a setting before it is
//! rendered with its position. What the layering (`layers/`) and the command tables
//! (`commands.rs`) both build on.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Where a value came from, lowest precedence first. Serialized as `default`, `global`,
/// `project`, `env`, `test`, `flag`; above them all `step`, a step's own `timeout_secs` (the
/// one setting a step writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    Default,
    Global,
    Project,
    Env,
    Test,
    Flag,
    Step,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Default => "default",
            Layer::Global => "global config",
            Layer::Project => "project config",
            Layer::Env => "environment",
            Layer::Test => "test overrides",
            Layer::Flag => "command line",
            Layer::Step => "the step",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A place in a file: for error messages about a value after parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub file: PathBuf,
    pub span: Range<usize>,
}

/// A value and the layer it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Layer,
    pub origin: Option<Origin>,
}

impl<T> Sourced<T> {
    pub fn default_value(value: T) -> Self {
        Sourced {
            value,
            source: Layer::Default,
            origin: None,
        }
    }
    pub(super) fn set(&mut self, value: T, source: Layer, origin: Option<Origin>) {
        *self = Sourced {
            value,
            source,
            origin,
        };
    }
}

/// A problem found while layering, before it gets a rendered position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerProblem {
    pub message: String,
    pub origin: Option<Origin>,
}

pub(super) fn problem(message: impl Into<String>, origin: Option<Origin>) -> LayerProblem {
    LayerProblem {
        message: message.into(),
        origin,
    }
}

pub(super) fn origin(file: &Path, span: Range<usize>) -> Option<Origin> {
    Some(Origin {
        file: file.to_path_buf(),
        span,
    })
}

/// The commands defined, for a message about `unknown` (which is not among them), with the
/// closest name first when one is close: ` (did you mean `api`? defined: api, db)`.
pub(super) fn known_list<'a>(unknown: &str, names: impl Iterator<Item = &'a String>) -> String {
    let names: Vec<&str> = names.map(String::as_str).collect();
    if names.is_empty() {
        return " (no commands are defined)".to_string();
    }
    match super::diagnostics::did_you_mean(unknown, &names) {
        Some(hint) => format!(" ({hint} defined: {})", names.join(", ")),
        None => format!(" (defined: {})", names.join(", ")),
    }
}
