//! Whether an agent CLI can authenticate, asked of the CLI itself without a model call
//! (docs/providers.md, "Logging the agent in"): `claude auth status`, `codex login status`, pi's
//! `auth.json` and `models.json`. An API key in the environment counts as logged in. Preflight
//! refuses a run whose agent is plainly not logged in (exit 3, the fix named, nothing started);
//! `doctor` shows each CLI's state.
//!
//! Only a clear "not logged in" refuses: a CLI that answers something else (an older version, a
//! stand-in, a custom model provider) is let through, and a fault later is still named by kind.

use crate::model::agent_fault::FaultKind;
use crate::model::provider::ProviderKind;
use crate::process::version::program_answer;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a login check may take: the CLIs answer in well under a second, offline.
pub const LOGIN_LIMIT: Duration = Duration::from_secs(10);

/// What a CLI says of its login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Login {
    /// Logged in; how (`api key in ANTHROPIC_API_KEY`, `claude.ai`, …).
    Yes(String),
    /// Not logged in; what the CLI said.
    No(String),
    /// Not known (the CLI's answer was not one we read); why.
    Unknown(String),
}

impl Login {
    /// One line for `doctor` and preflight.
    pub fn describe(&self, agent: ProviderKind) -> String {
        match self {
            Self::Yes(how) => format!("{agent}: logged in ({how})"),
            Self::No(said) => format!(
                "{agent}: not logged in ({said}); to fix: {}",
                FaultKind::Auth.fix(agent.as_str())
            ),
            Self::Unknown(why) => format!("{agent}: login state unknown ({why})"),
        }
    }
}

/// The environment variables that log each CLI in by themselves (its provider's row).
fn key_vars(agent: ProviderKind) -> &'static [&'static str] {
    agent.info().cli().map_or(&[], |cli| cli.key_vars)
}

fn get<'a>(env: &'a [(String, String)], key: &str) -> Option<&'a str> {
    env.iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// The agent's login state. `env` is what the agent will get (the supervisor's environment and
/// the test's `[env]` and `[secrets]`), later entries winning; `agent_args` its extra arguments.
pub async fn check(
    agent: ProviderKind,
    program: &Path,
    agent_args: &[String],
    env: &[(String, String)],
    cwd: &Path,
) -> Login {
    if let Some(var) = key_vars(agent).iter().find(|v| get(env, v).is_some()) {
        return Login::Yes(format!("{var} is set"));
    }
    match agent {
        ProviderKind::ClaudeCode => claude(program, env, cwd).await,
        ProviderKind::Codex => codex(program, agent_args, env, cwd).await,
        ProviderKind::Pi => pi(agent_args, env),
        ProviderKind::Command | ProviderKind::Shell => {
            Login::Unknown("not an agent CLI".to_string())
        }
    }
}

/// `claude auth status` (2.1: JSON with `loggedIn`, exit 1 when not).
async fn claude(program: &Path, env: &[(String, String)], cwd: &Path) -> Login {
    let answer = match program_answer(program, &["auth", "status"], env, cwd, LOGIN_LIMIT).await {
        Ok(a) => a,
        Err(e) => return Login::Unknown(e),
    };
    read_claude_status(&answer.output)
}

/// Reads `claude auth status`'s JSON answer.
pub fn read_claude_status(output: &str) -> Login {
    let start = output.find('{');
    let end = output.rfind('}');
    let status = match (start, end) {
        (Some(a), Some(b)) if a < b => serde_json::from_str::<serde_json::Value>(&output[a..=b]),
        _ => return Login::Unknown("`claude auth status` gave no status".into()),
    };
    let Ok(status) = status else {
        return Login::Unknown("`claude auth status` gave no status".into());
    };
    match status["loggedIn"].as_bool() {
        Some(true) => Login::Yes(
            status["authMethod"]
                .as_str()
                .unwrap_or("logged in")
                .replace('_', " "),
        ),
        Some(false) => Login::No("`claude auth status`: not logged in".into()),
        None => Login::Unknown("`claude auth status` gave no status".into()),
    }
}

/// A model provider of the user's own (`model_provider` in Codex's config or in `agent_args`):
/// its key is in a variable of its choosing, which `codex login status` does not know of.
fn codex_custom_provider(agent_args: &[String], env: &[(String, String)]) -> bool {
    if agent_args.iter().any(|a| a.contains("model_provider")) {
        return true;
    }
    let home = get(env, "CODEX_HOME")
        .map(PathBuf::from)
        .or_else(|| get(env, "HOME").map(|h| Path::new(h).join(".codex")));
    home.and_then(|h| std::fs::read_to_string(h.join("config.toml")).ok())
        .is_some_and(|config| {
            config
                .lines()
                .any(|l| l.trim_start().starts_with("model_provider"))
        })
}

/// `codex login status` (0.169: `Not logged in`, exit 1; exit 0 when logged in).
async fn codex(
    program: &Path,
    agent_args: &[String],
    env: &[(String, String)],
    cwd: &Path,
) -> Login {
    if codex_custom_provider(agent_args, env) {
        return Login::Unknown("a model provider of its own is configured".into());
    }
    let answer = match program_answer(program, &["login", "status"], env, cwd, LOGIN_LIMIT).await {
        Ok(a) => a,
        Err(e) => return Login::Unknown(e),
    };
    read_codex_status(answer.code, &answer.output)
}

/// Reads `codex login status`'s answer (its PATH-alias warning aside).
pub fn read_codex_status(code: Option<i32>, output: &str) -> Login {
    let said: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("WARNING"))
        .collect();
    let said = said.join("; ");
    if said.to_ascii_lowercase().contains("not logged in") {
        return Login::No(format!("`codex login status`: {said}"));
    }
    match code {
        Some(0) if !said.is_empty() => Login::Yes(said),
        _ => Login::Unknown(format!("`codex login status` said: {said}")),
    }
}

/// pi keeps its logins in `<agent dir>/auth.json` and custom providers (with their keys) in
/// `<agent dir>/models.json`; its agent dir is `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
fn pi(agent_args: &[String], env: &[(String, String)]) -> Login {
    if agent_args.iter().any(|a| a == "--api-key") {
        return Login::Yes("--api-key in agent_args".into());
    }
    // pi reads the key of whichever provider it uses from that provider's variable.
    if let Some((var, _)) = env
        .iter()
        .rev()
        .find(|(k, v)| k.ends_with("_API_KEY") && !v.is_empty())
    {
        return Login::Yes(format!("{var} is set"));
    }
    let dir = get(env, "PI_CODING_AGENT_DIR")
        .map(PathBuf::from)
        .or_else(|| get(env, "HOME").map(|h| Path::new(h).join(".pi/agent")));
    let Some(dir) = dir else {
        return Login::Unknown("neither PI_CODING_AGENT_DIR nor HOME is set".into());
    };
    read_pi_dir(&dir)
}

/// What pi's agent directory holds: a login in `auth.json`, or a provider in `models.json`.
pub fn read_pi_dir(dir: &Path) -> Login {
    let json = |name: &str| -> Option<serde_json::Value> {
        serde_json::from_slice(&std::fs::read(dir.join(name)).ok()?).ok()
    };
    if let Some(auth) = json("auth.json") {
        if auth.as_object().is_some_and(|o| !o.is_empty()) {
            return Login::Yes(format!("{}", dir.join("auth.json").display()));
        }
    }
    if let Some(models) = json("models.json") {
        if models["providers"]
            .as_object()
            .is_some_and(|o| !o.is_empty())
        {
            return Login::Yes(format!(
                "a provider in {}",
                dir.join("models.json").display()
            ));
        }
    }
    Login::No(format!(
        "no login in {} and no provider in {}",
        dir.join("auth.json").display(),
        dir.join("models.json").display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_real_clis_print_offline_is_read() {
        // claude 2.1.197 `auth status`, logged out (exit 1) and with ANTHROPIC_API_KEY (exit 0).
        let out = "{\n  \"loggedIn\": false,\n  \"authMethod\": \"none\",\n  \"apiProvider\": \"firstParty\"\n}\n";
        assert!(matches!(read_claude_status(out), Login::No(_)));
        let out = "{\"loggedIn\": true, \"authMethod\": \"api_key\", \"apiKeySource\": \"ANTHROPIC_API_KEY\"}";
        assert_eq!(read_claude_status(out), Login::Yes("api key".into()));
        assert!(matches!(read_claude_status("garbage"), Login::Unknown(_)));
        // codex 0.169 `login status`.
        let warn = "WARNING: proceeding, even though we could not create PATH aliases\n";
        assert!(matches!(
            read_codex_status(Some(1), &format!("{warn}Not logged in\n")),
            Login::No(_)
        ));
        assert!(matches!(
            read_codex_status(Some(0), "API key configured - ***\n"),
            Login::Yes(_)
        ));
        assert!(matches!(read_codex_status(Some(2), "?"), Login::Unknown(_)));
    }

    #[test]
    fn pi_is_logged_in_by_auth_json_or_a_provider_of_models_json() {
        let dir = tempfile::tempdir().expect("dir");
        assert!(matches!(read_pi_dir(dir.path()), Login::No(_)));
        std::fs::write(dir.path().join("auth.json"), "{}").expect("write");
        assert!(matches!(read_pi_dir(dir.path()), Login::No(_)));
        std::fs::write(
            dir.path().join("models.json"),
            r#"{"providers":{"stub":{"apiKey":"x"}}}"#,
        )
        .expect("write");
        assert!(matches!(read_pi_dir(dir.path()), Login::Yes(_)));
    }
}
