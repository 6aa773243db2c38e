//! Secrets never reach an artifact or the console, and the artifact directory is owner-only.
//!
//! The real binary runs a project whose `[secrets]` value is printed in every way a harness
//! command and an agent can: in a command's argv, on stdout one character per write, split across
//! two stderr writes, through a PTY, at the end of output without a newline, by the scripted agent
//! (`env`, `say`, `log`, a `RESULT WARN` text), by `shell` provider steps (output and a failing
//! step's output tail), in a setup command that fails (its output tail in the harness error).
//! Then every file under `.bugatti`, and the console, is searched byte by byte for the value.

use crate::common::assert_exit;
use crate::common::records::*;
use crate::common::Project;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const SECRET: &str = "tok-9Qx7LmZ2pW4vR8sK";
const SECRET_ENV: &str = "BUGATTI_SECURITY_TEST_TOKEN";

/// A harness command that prints `$API_TOKEN` in pieces, for the stream redactors to reassemble.
const DRIP: &str = r#"
import os, sys, time
token = os.environ["API_TOKEN"]
assert sys.argv[-1] == token, "the token also travels in argv"
for c in token:
    sys.stdout.write(c)
    sys.stdout.flush()
    time.sleep(0.003)
sys.stdout.write("\n")
sys.stdout.flush()
half = len(token) // 2
sys.stderr.write("err " + token[:half])
sys.stderr.flush()
time.sleep(0.05)
sys.stderr.write(token[half:] + "\n")
sys.stderr.flush()
os.write(1, ("raw " + token + "\n").encode())
if "--serve" in sys.argv:
    print("ready", flush=True)
    while True:
        time.sleep(0.2)
        print("still " + token, flush=True)
if "--fail" in sys.argv:
    print("failing with " + token, flush=True)
    sys.exit(4)
sys.stdout.write("end " + token)
sys.stdout.flush()
"#;

fn config(extra: &str) -> String {
    format!(
        r#"
[provider]
name = "command"
cmd = "{agent}"
step_timeout_secs = 60

[secrets]
API_TOKEN = {{ from_env = "{SECRET_ENV}" }}

[env]
DSN = "postgres://app:${{API_TOKEN}}@localhost/db"

[commands.drip]
kind = "short_lived"
cmd = "python3 drip.py ${{API_TOKEN}}"

[commands.server]
kind = "long_lived"
cmd = "python3 drip.py --serve ${{API_TOKEN}}"
pty = true
depends_on = ["drip"]
readiness = {{ log = "ready" }}
{extra}
"#,
        agent = Project::directive_agent_cmd()
    )
}

const AGENT_TEST: &str = r#"
name = "agent prints the token"

[[steps]]
instruction = """
env API_TOKEN
say the token is ${API_TOKEN}
log token ${API_TOKEN}
# long enough for the server to print its `still` line (every 0.2 s) while the session runs
sleep 0.6
"""

[[steps]]
instruction = """
env DSN
say RESULT WARN: leaked ${API_TOKEN}
"""
"#;

const SHELL_TEST: &str = r#"
name = "shell prints the token"

[overrides.provider]
name = "shell"

[[steps]]
instruction = '''
Print it.
```
printf '%s\n' "$API_TOKEN"
printf '%s' "${API_TOKEN}" >&2
```
'''

[[steps]]
instruction = '''
Print it and fail.
```
echo "token $API_TOKEN"; exit 3
```
'''
"#;

/// Every file under `dir` (symlinks not followed), with its bytes.
fn files_under(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let bytes = std::fs::read(e.path()).expect("read artifact");
            (e.path().to_path_buf(), bytes)
        })
        .collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// No file under `.bugatti`, no file name and no console byte holds the secret; the redaction
/// mark shows where it was. Returns how many files were searched.
fn assert_no_secret(p: &Project, console: &[u8]) -> usize {
    let artifacts = p.root().join(".bugatti");
    let files = files_under(&artifacts);
    assert!(!files.is_empty(), "the run wrote no artifact");
    let mut leaks = Vec::new();
    let mut marked = 0;
    for (path, bytes) in &files {
        if contains(bytes, SECRET.as_bytes()) || path.to_string_lossy().contains(SECRET) {
            leaks.push(path.display().to_string());
        }
        if contains(bytes, b"[REDACTED:API_TOKEN]") {
            marked += 1;
        }
    }
    assert!(leaks.is_empty(), "the secret leaked into: {leaks:#?}");
    assert!(
        !contains(console, SECRET.as_bytes()),
        "the secret leaked to the console:\n{}",
        String::from_utf8_lossy(console)
    );
    assert!(marked > 0, "no artifact shows [REDACTED:API_TOKEN]");
    files.len()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
}

/// `.bugatti` and each run's and suite's directory are owner-only.
fn assert_owner_only(p: &Project) {
    let artifacts = p.root().join(".bugatti");
    assert_eq!(mode(&artifacts), 0o700, "{}", artifacts.display());
    for parent in ["runs", "suites"] {
        let dirs: Vec<_> = std::fs::read_dir(artifacts.join(parent))
            .expect("runs / suites dir")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        assert!(!dirs.is_empty(), "nothing in {parent}");
        for dir in dirs {
            assert_eq!(mode(&dir), 0o700, "{:o}: {}", mode(&dir), dir.display());
        }
    }
}

#[test]
fn the_secret_never_reaches_an_artifact_or_the_console() {
    let p = Project::new();
    p.write("drip.py", DRIP);
    p.write("bugatti.config.toml", &config(""));
    p.write("tests/agent.test.toml", AGENT_TEST);
    p.write("tests/shell.test.toml", SHELL_TEST);
    let out = p
        .supervisor()
        .args(["start", "-v"])
        .env(SECRET_ENV, SECRET)
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let mut console = out.stdout.clone();
    console.extend_from_slice(&out.stderr);
    // The shell test's last step fails on purpose; the run itself must have happened.
    assert_exit(&out, 1);
    let agent = p.record_for("agent.test.toml");
    assert_eq!(agent.outcome, Some(RunOutcome::Warned), "{agent:#?}");
    assert_eq!(
        agent.steps[1].message.as_deref(),
        Some("leaked [REDACTED:API_TOKEN]"),
        "{agent:#?}"
    );
    let shell = p.record_for("shell.test.toml");
    assert_eq!(shell.steps[1].status, StepStatus::Error, "{shell:#?}");

    // The value did go through every channel: the commands' logs and the agent's transcript
    // show the mark where it was.
    let files = assert_no_secret(&p, &console);
    assert!(files >= 10, "only {files} artifacts searched");
    let logs: Vec<String> = files_under(&p.root().join(".bugatti"))
        .into_iter()
        .filter(|(path, _)| path.to_string_lossy().contains("/logs/"))
        .map(|(_, b)| String::from_utf8_lossy(&b).into_owned())
        .collect();
    let all_logs = logs.join("\n");
    for shown in [
        "raw [REDACTED:API_TOKEN]",
        "err [REDACTED:API_TOKEN]",
        "end [REDACTED:API_TOKEN]",
        "still [REDACTED:API_TOKEN]",
    ] {
        assert!(
            all_logs.contains(shown),
            "{shown} missing from logs:\n{all_logs}"
        );
    }
    assert_owner_only(&p);

    // `check` and `doctor` print the effective config: never the value.
    for args in [["check", "-v"].as_slice(), ["doctor"].as_slice()] {
        let out = p
            .supervisor()
            .args(args)
            .env(SECRET_ENV, SECRET)
            .output()
            .expect("run supervisor");
        p.assert_nothing_survives();
        let mut console = out.stdout.clone();
        console.extend_from_slice(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{args:?}: {}",
            String::from_utf8_lossy(&console)
        );
        assert!(
            !contains(&console, SECRET.as_bytes()),
            "{args:?} printed the secret:\n{}",
            String::from_utf8_lossy(&console)
        );
    }
}

#[test]
fn a_failing_setup_command_does_not_leak_the_secret_in_its_error() {
    let p = Project::new();
    p.write("drip.py", DRIP);
    p.write(
        "bugatti.config.toml",
        &config(
            "\n[commands.broken]\nkind = \"short_lived\"\ncmd = \"python3 drip.py --fail ${API_TOKEN}\"\n",
        ),
    );
    p.write("tests/agent.test.toml", AGENT_TEST);
    let out = p
        .supervisor()
        .args(["start", "-v"])
        .env(SECRET_ENV, SECRET)
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let mut console = out.stdout.clone();
    console.extend_from_slice(&out.stderr);
    assert_exit(&out, 3);
    assert_no_secret(&p, &console);
    assert_owner_only(&p);
}
