//! Which agent runs the steps (`[provider] name`, `BUGATTI_PROVIDER`, `--provider`): parsed once,
//! where the config, the environment or the flag gives it, and a [`ProviderKind`] from there on.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    ClaudeCode,
    Codex,
    Pi,
    Command,
    Shell,
}

impl ProviderKind {
    /// Every provider, in the order messages list them.
    pub const ALL: [ProviderKind; 5] = [
        Self::ClaudeCode,
        Self::Codex,
        Self::Pi,
        Self::Command,
        Self::Shell,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::Pi => "pi",
            Self::Command => "command",
            Self::Shell => "shell",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// `claude-code, codex, pi, command, shell`: what an unknown name is told.
    pub fn names() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }

    /// The providers that ask a model (and so are recorded and replayed); `shell` does not.
    pub fn is_agent(self) -> bool {
        self != Self::Shell
    }
}

impl std::fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back() {
        for kind in ProviderKind::ALL {
            assert_eq!(ProviderKind::parse(kind.as_str()), Some(kind));
            assert_eq!(
                serde_json::to_value(kind).expect("json"),
                serde_json::json!(kind.as_str())
            );
        }
        assert_eq!(ProviderKind::parse("claude"), None);
        assert_eq!(
            ProviderKind::names(),
            "claude-code, codex, pi, command, shell"
        );
    }
}
