//! What the loader needs from the outside world (the working directory, the environment), so
//! that tests can give their own.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// What the loader needs from the outside world, so tests can give their own.
#[derive(Debug, Clone, Default)]
pub struct HostEnv {
    pub cwd: PathBuf,
    pub vars: BTreeMap<String, String>,
}

impl HostEnv {
    pub fn from_process() -> Self {
        HostEnv {
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            vars: std::env::vars().collect(),
        }
    }

    pub(super) fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }

    /// `$BUGATTI_CONFIG_HOME/config.toml`, else `~/.bugatti/config.toml`.
    pub fn global_config_path(&self) -> Option<PathBuf> {
        if let Some(home) = self.var("BUGATTI_CONFIG_HOME").filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(home).join("config.toml"));
        }
        self.var("HOME")
            .filter(|v| !v.is_empty())
            .map(|h| PathBuf::from(h).join(".bugatti").join("config.toml"))
    }
}
