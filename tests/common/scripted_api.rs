//! What the real-CLI tests share: a scripted API stub (a Python server in tests/support) on
//! loopback, killed with its group. Finding the CLI itself (or a loud skip) is `common::skip`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A scripted API server: `tests/support/<stub>` run with a script and a request log.
pub struct ScriptedApi {
    child: Child,
    pub port: u16,
    /// Every request the CLI sent, one JSON object a line.
    pub requests: PathBuf,
}

impl Drop for ScriptedApi {
    fn drop(&mut self) {
        let _ = bugatti::process::group::signal_group(
            self.child.id() as i32,
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}

impl ScriptedApi {
    /// Starts `tests/support/<stub>` with `script` (written to `dir/<name>-script.json`), its
    /// request log at `dir/<name>-requests.jsonl`; returns once it printed `PORT n`.
    pub fn start(stub: &str, name: &str, dir: &Path, script: serde_json::Value) -> ScriptedApi {
        use std::os::unix::process::CommandExt;
        let script_path = dir.join(format!("{name}-script.json"));
        std::fs::write(&script_path, script.to_string()).expect("script");
        let requests = dir.join(format!("{name}-requests.jsonl"));
        let mut child = Command::new("python3")
            .arg(
                PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/support")
                    .join(stub),
            )
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
        ScriptedApi {
            child,
            port,
            requests,
        }
    }
}
