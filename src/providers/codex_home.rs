//! The user's own Codex setup, for each session's `CODEX_HOME`.
//!
//! Codex keeps its settings (`config.toml`: model, model provider, profiles, MCP servers) and its
//! login (`auth.json`, written by `codex login`) in `$CODEX_HOME`, else `~/.codex`. A session
//! runs Codex with a `CODEX_HOME` of its own, so that its threads and logs stay with the session
//! and never mix with the user's; that home starts as a copy of the user's config and login, so a
//! Codex that works from the user's shell works through the supervisor. Copies, never links:
//! whatever Codex writes during a session stays in the session.

use std::path::{Path, PathBuf};

/// The files of the user's Codex home a session starts with.
pub const SEEDED: [&str; 2] = ["config.toml", "auth.json"];

/// Where the user's Codex home is, and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserHome {
    pub dir: PathBuf,
    /// `$CODEX_HOME` or `~/.codex`, for messages.
    pub found_by: &'static str,
}

/// The user's Codex home as Codex itself finds it: `$CODEX_HOME`, else `$HOME/.codex`. `None`
/// when neither variable is set.
pub fn user_home() -> Option<UserHome> {
    if let Some(dir) = std::env::var_os("CODEX_HOME").filter(|d| !d.is_empty()) {
        return Some(UserHome {
            dir: PathBuf::from(dir),
            found_by: "$CODEX_HOME",
        });
    }
    let home = std::env::var_os("HOME").filter(|d| !d.is_empty())?;
    Some(UserHome {
        dir: PathBuf::from(home).join(".codex"),
        found_by: "~/.codex",
    })
}

/// Copies the user's config and login (those that exist) into `session_home`, which must exist.
/// Returns the files copied.
pub fn seed(user: &UserHome, session_home: &Path) -> std::io::Result<Vec<&'static str>> {
    let mut copied = Vec::new();
    for name in SEEDED {
        let from = user.dir.join(name);
        if !from.is_file() {
            continue;
        }
        // fs::copy keeps the mode: auth.json stays private to its owner.
        std::fs::copy(&from, session_home.join(name))?;
        copied.push(name);
    }
    Ok(copied)
}

/// One line for `doctor`: which home was found, what of it a session gets, and which login.
/// Never shows a key or token.
pub fn describe(user: Option<&UserHome>) -> String {
    let Some(user) = user else {
        return "codex home: neither $CODEX_HOME nor $HOME is set: sessions start without the \
                user's Codex config and login"
            .into();
    };
    let config = if user.dir.join("config.toml").is_file() {
        "config.toml copied into each session"
    } else {
        "no config.toml (Codex's defaults)"
    };
    let login = match std::fs::read(user.dir.join("auth.json")) {
        Ok(bytes) => match login_kind(&bytes) {
            Some(kind) => format!("login: auth.json ({kind}) copied into each session"),
            None => "login: auth.json (unreadable as JSON) copied into each session".into(),
        },
        Err(_) => "no login (no auth.json: `codex login`, or an API key in the environment \
                   the model provider names)"
            .into(),
    };
    format!(
        "codex home: {} ({}): {config}; {login}",
        user.dir.display(),
        user.found_by
    )
}

/// What kind of login an auth.json holds: a ChatGPT sign-in or an API key.
fn login_kind(auth_json: &[u8]) -> Option<&'static str> {
    let auth: serde_json::Value = serde_json::from_slice(auth_json).ok()?;
    let key = auth["OPENAI_API_KEY"]
        .as_str()
        .is_some_and(|k| !k.is_empty());
    let tokens = auth["tokens"].is_object();
    Some(match (auth["auth_mode"].as_str(), key, tokens) {
        (Some("chatgpt"), _, _) | (None, false, true) => "ChatGPT sign-in",
        (Some("apikey"), _, _) | (None, true, _) => "API key",
        (Some(_), _, _) => "a login",
        (None, false, false) => "no credentials in it",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_of_login_is_named_without_showing_it() {
        assert_eq!(login_kind(br#"{"OPENAI_API_KEY":"sk-x"}"#), Some("API key"));
        assert_eq!(
            login_kind(br#"{"auth_mode":"chatgpt","tokens":{"id_token":"x"}}"#),
            Some("ChatGPT sign-in")
        );
        assert_eq!(login_kind(b"not json"), None);
    }

    #[test]
    fn seeding_copies_what_exists_and_leaves_the_user_home_alone() {
        let user = tempfile::tempdir().expect("user");
        let session = tempfile::tempdir().expect("session");
        std::fs::write(user.path().join("config.toml"), "model = \"m\"\n").expect("write");
        let home = UserHome {
            dir: user.path().to_path_buf(),
            found_by: "$CODEX_HOME",
        };
        assert_eq!(seed(&home, session.path()).expect("seed"), ["config.toml"]);
        std::fs::write(session.path().join("config.toml"), "changed").expect("write");
        assert_eq!(
            std::fs::read_to_string(user.path().join("config.toml")).expect("read"),
            "model = \"m\"\n"
        );
    }
}
