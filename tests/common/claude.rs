//! The real Claude Code CLI for end-to-end tests: where it is (or a loud skip), and the scripted
//! Anthropic API stub it talks to on loopback (tests/support/anthropic_stub.py).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The CLI `.ci/run` installs (or `$BUGATTI_CLAUDE_BIN`); `None`, said on stderr, when absent.
pub fn claude_bin(test: &str) -> Option<PathBuf> {
    let candidate = std::env::var_os("BUGATTI_CLAUDE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".ci/node/node_modules/.bin/claude")
        });
    if candidate.is_file() {
        return Some(candidate);
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\nSKIPPED ({test}): no Claude Code CLI at {}; `.ci/run` installs it \
         (cd .ci/node && npm install @anthropic-ai/claude-code@2)",
        candidate.display()
    );
    None
}

/// The stub, killed with its group when the test ends.
pub struct Stub {
    child: Child,
    pub port: u16,
    /// Every request body the CLI sent, one JSON object a line.
    pub requests: PathBuf,
}

impl Drop for Stub {
    fn drop(&mut self) {
        let _ = bugatti::process::group::signal_group(
            self.child.id() as i32,
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}

impl Stub {
    /// Starts the stub with `script` (see anthropic_stub.py), its files in `dir`.
    pub fn start(dir: &Path, script: serde_json::Value) -> Stub {
        use std::os::unix::process::CommandExt;
        let script_path = dir.join("script.json");
        std::fs::write(&script_path, script.to_string()).expect("script");
        let requests = dir.join("requests.jsonl");
        let mut child = Command::new("python3")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/support/anthropic_stub.py"
            ))
            .arg(&script_path)
            .arg(&requests)
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("stub");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("PORT line");
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .expect("a port");
        Stub {
            child,
            port,
            requests,
        }
    }

    /// The environment that points the CLI at the stub, offline, with its own `HOME`.
    pub fn client_env(&self, home: &Path) -> Vec<(String, String)> {
        std::fs::create_dir_all(home).expect("home");
        [
            ("HOME", home.display().to_string()),
            (
                "ANTHROPIC_BASE_URL",
                format!("http://127.0.0.1:{}", self.port),
            ),
            ("ANTHROPIC_API_KEY", "dummy".to_string()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
            ("CLAUDE_CODE_MAX_RETRIES", "1".to_string()),
            ("API_TIMEOUT_MS", "60000".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    pub fn requests_text(&self) -> String {
        std::fs::read_to_string(&self.requests).unwrap_or_default()
    }
}
