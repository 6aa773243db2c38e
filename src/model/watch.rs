//! `[watch]` (docs/cli.md "supervisor watch") as written and effective: the app files whose save
//! makes `supervisor watch` run the whole selection. What a save touches is `touched`.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::sourced::{Layer, Origin, Sourced};

/// `[watch]` as written; every field optional.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WatchSection {
    /// Globs of the app's own files (relative to the project root, the config's directory): a
    /// save of one re-runs the whole selection.
    pub paths: Option<Spanned<Vec<String>>>,
}

/// The effective `[watch]`, each value with the layer it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchConfig {
    /// As written: globs relative to the project root, checked to compile when applied.
    pub paths: Sourced<Vec<String>>,
}

impl Default for WatchConfig {
    fn default() -> Self {
        Self {
            paths: Sourced::default_value(Vec::new()),
        }
    }
}

impl WatchConfig {
    /// `paths` set by a config file: the layer applying it has checked each glob.
    pub(super) fn set_paths(&mut self, paths: Vec<String>, layer: Layer, at: Option<Origin>) {
        self.paths.set(paths, layer, at);
    }
}

/// One `[watch] paths` glob: `*` stays within a path segment, `**` crosses them (as
/// `[supervisor] tests`).
pub fn app_glob(glob: &str) -> Result<globset::Glob, globset::Error> {
    globset::GlobBuilder::new(glob.trim_start_matches("./"))
        .literal_separator(true)
        .build()
}

/// The folder a glob's matches all lie under (its components before the first with a
/// wildcard), relative to where the glob is: what must be watched for it.
pub fn glob_base(glob: &str) -> PathBuf {
    Path::new(glob.trim_start_matches("./"))
        .components()
        .take_while(|c| {
            !c.as_os_str()
                .to_string_lossy()
                .contains(['*', '?', '[', '{'])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_base_is_its_literal_folders() {
        assert_eq!(glob_base("app/**/*.py"), PathBuf::from("app"));
        assert_eq!(glob_base("./src/main.rs"), PathBuf::from("src/main.rs"));
        assert_eq!(glob_base("../server/*.go"), PathBuf::from("../server"));
        assert_eq!(glob_base("**/*.py"), PathBuf::new());
    }
}
