//! The real Codex CLI for end-to-end tests: where it is (or a loud skip), and the scripted
//! OpenAI Responses API stub it talks to on loopback (tests/support/responses_stub.py).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The CLI `.ci/run` installs (or `$BUGATTI_CODEX_BIN`); `None`, said on stderr, when absent.
pub fn codex_bin(test: &str) -> Option<PathBuf> {
    let candidate = std::env::var_os("BUGATTI_CODEX_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".ci/node/node_modules/.bin/codex")
        });
    if candidate.is_file() {
        return Some(candidate);
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\nSKIPPED ({test}): no Codex CLI at {}; `.ci/run` installs it \
         (cd .ci/node && npm install @openai/codex@0.169)",
        candidate.display()
    );
    None
}

/// The stub, killed with its group when the test ends.
pub struct ResponsesStub {
    child: Child,
    pub port: u16,
    /// Every request the CLI sent: path, headers that matter, body; one JSON object a line.
    pub requests: PathBuf,
}

impl Drop for ResponsesStub {
    fn drop(&mut self) {
        let _ = bugatti::process::group::signal_group(
            self.child.id() as i32,
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}

impl ResponsesStub {
    /// Starts the stub with `script` (see responses_stub.py), its files in `dir`.
    pub fn start(dir: &Path, script: serde_json::Value) -> ResponsesStub {
        use std::os::unix::process::CommandExt;
        let script_path = dir.join("responses-script.json");
        std::fs::write(&script_path, script.to_string()).expect("script");
        let requests = dir.join("responses-requests.jsonl");
        let mut child = Command::new("python3")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/support/responses_stub.py"
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
        ResponsesStub {
            child,
            port,
            requests,
        }
    }

    /// The `agent_args` that point Codex at the stub (a custom model provider, no websockets, no
    /// sandbox so its shell tool reaches loopback), as a TOML array body. Codex does not retry a
    /// failed request.
    pub fn agent_args_toml(&self) -> String {
        self.agent_args_with("request_max_retries=0,stream_max_retries=0", true)
    }

    /// The same with Codex's own retry policy (5 retries with backoff, "Reconnecting…" events).
    pub fn agent_args_toml_retrying(&self) -> String {
        self.agent_args_with("", true)
    }

    /// As [`Self::agent_args_toml`] but as the README's example: model and provider only, Codex's
    /// own sandbox and approval policy left at their defaults (`exec`: read-only, never ask).
    pub fn agent_args_toml_as_readme(&self) -> String {
        self.agent_args_with("request_max_retries=0,stream_max_retries=0", false)
    }

    fn agent_args_with(&self, retries: &str, bypass: bool) -> String {
        let provider = format!(
            "model_providers.stub={{name=\"stub\",base_url=\"http://127.0.0.1:{}/v1\",\
             wire_api=\"responses\",env_key=\"STUB_API_KEY\",supports_websockets=false{}{retries}}}",
            self.port,
            if retries.is_empty() { "" } else { "," }
        );
        let mut args = vec!["-m", "gpt-5.5"];
        if bypass {
            args.push("--dangerously-bypass-approvals-and-sandbox");
        }
        args.extend(["-c", "model_provider=stub", "-c", &provider]);
        args.iter()
            .map(|a| toml::Value::String(a.to_string()).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Every logged request body, one a line, for failure messages.
    pub fn requests_text(&self) -> String {
        std::fs::read_to_string(&self.requests).unwrap_or_default()
    }

    /// Every logged request, parsed.
    pub fn request_log(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.requests)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}
