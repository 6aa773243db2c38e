//! The replay's `Grep`, `Glob` and `Read` against the real Claude Code's (docs/replay.md): the
//! real CLI, driven by the scripted Messages stub, calls each tool over one tree of tricky files
//! (hidden files and folders, a VCS folder, `.gitignore`d files, a binary file, Latin-1 and
//! UTF-16 text, a symlink, a large file with a long line, CRLF, no final newline, comma and brace
//! globs); every answer it got is then made again by the replay's own code over the same tree
//! and must be the same. Then the supervisor records steps that rest on a hidden file, a comma
//! glob and a `Read` of a file with a final newline, and replays them with no model call.
//! Skips loudly without the CLI.

use crate::common;
use crate::common::records::*;

use crate::common::claude::{claude_bin, StreamEvent, Stub};
use crate::common::{stdout, Project};
use bugatti::replay::files::{describe, from_claude, observe, seen};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// The tree every call looks at.
fn tricky_tree(root: &Path) {
    let write = |rel: &str, bytes: &[u8]| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, bytes).expect("write");
    };
    // A git repository (what makes rg read .gitignore), holding the key in its own files too.
    write(".git/HEAD", b"ref: refs/heads/main\n");
    write(".git/key-notes.txt", b"key-123 in the VCS folder\n");
    write(".gitignore", b"ignored/\n*.log\n");
    write(".env", b"SECRET=key-123\n");
    write(".hid/h.txt", b"key-123 in a hidden folder\n");
    write("ignored/i.txt", b"key-123 ignored\n");
    write("app.log", b"key-123 in a log\n");
    write("latin1.txt", b"caf\xe9 key-123 latin1\n");
    write(
        "utf16.txt",
        b"\xff\xfek\x00e\x00y\x00-\x001\x002\x003\x00\n\x00",
    );
    write("bin.dat", b"bin\x00ary key-123\n");
    write("notes.md", b"line1\nkey-123 two\n");
    write("sub/a.cfg", b"key-123 cfg\n");
    write("sub/deep/b.md", b"KEY-123 upper\n");
    write("nonl.txt", b"no newline key-123");
    write("crlf.txt", b"crlf key-123\r\nsecond\r\n");
    let mut large = "filler line\n".repeat(150_000);
    large.push_str(&"x".repeat(600));
    large.push_str(" key-123\nlast key-123 line\n");
    write("large.txt", large.as_bytes());
    std::os::unix::fs::symlink("notes.md", root.join("link.md")).expect("symlink");
    std::os::unix::fs::symlink("sub", root.join("sublink")).expect("symlink");
}

/// Each call the agent makes (Claude Code's own input schema).
fn calls(root: &Path) -> Vec<Value> {
    let file = |rel: &str| root.join(rel).display().to_string();
    let grep = |input: Value| json!({"tool": "Grep", "input": input});
    let glob = |input: Value| json!({"tool": "Glob", "input": input});
    let read = |input: Value| json!({"tool": "Read", "input": input});
    vec![
        grep(json!({"pattern": "key-123", "output_mode": "content"})),
        grep(json!({"pattern": "key-123"})),
        grep(json!({"pattern": "key-123", "output_mode": "count"})),
        grep(json!({"pattern": "key-123", "glob": "*.md,*.cfg"})),
        grep(json!({"pattern": "key-123", "glob": "{*.md,*.txt} *.env", "output_mode": "content"})),
        grep(json!({"pattern": "key-123", "-i": true, "path": "sub"})),
        grep(json!({"pattern": "key-123", "path": "notes.md", "output_mode": "content"})),
        grep(json!({"pattern": "key-123", "path": "bin.dat", "output_mode": "content"})),
        grep(json!({"pattern": "key-123", "type": "md"})),
        grep(
            json!({"pattern": "^last", "path": "large.txt", "output_mode": "content", "-n": false}),
        ),
        glob(json!({"pattern": "*.md"})),
        glob(json!({"pattern": "**/*.txt"})),
        glob(json!({"pattern": "*"})),
        glob(json!({"pattern": "{*.md,sub/*.cfg}"})),
        glob(json!({"pattern": "*.cfg", "path": "sub"})),
        glob(json!({"pattern": format!("{}/sub/**/*.md", root.display())})),
        read(json!({"file_path": file("notes.md")})),
        read(json!({"file_path": file("notes.md"), "offset": 2, "limit": 5})),
        read(json!({"file_path": file("crlf.txt")})),
        read(json!({"file_path": file("latin1.txt")})),
        read(json!({"file_path": file("nonl.txt")})),
        read(json!({"file_path": file("link.md")})),
        read(json!({"file_path": file(".env")})),
        read(json!({"file_path": file("large.txt"), "offset": 149_999, "limit": 4})),
    ]
}

/// The real CLI's tool calls over `root`: each (tool, input, answer text, structured result,
/// is_error).
fn real_answers(
    claude: &Path,
    root: &Path,
    side: &Path,
    script: Vec<Value>,
) -> Vec<(String, Value, String, Value, bool)> {
    let mut script = script;
    script.push(json!({"text": "RESULT OK"}));
    let stub = Stub::start(side, Value::Array(script));
    let out = std::process::Command::new(claude)
        .args(["-p", "Look at the files.", "--output-format", "stream-json"])
        .args(["--verbose", "--allowedTools", "Bash,Read,Grep,Glob"])
        .current_dir(root)
        .envs(stub.client_env(&side.join("home")))
        .env("BUGATTI_CONFORMANCE_TREE", root)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("claude");
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(
        common::processes_with_env_entry(&format!("BUGATTI_CONFORMANCE_TREE={}", root.display()))
            .is_empty(),
        "nothing the CLI started survives it"
    );
    let mut uses: Vec<(String, String, Value)> = Vec::new();
    let mut answers = Vec::new();
    for line in stdout(&out).lines() {
        let event: StreamEvent = serde_json::from_str(line).unwrap_or_default();
        for block in event.blocks() {
            if block.kind == "tool_use" {
                uses.push((
                    block.id.clone().unwrap_or_default(),
                    block.name.clone().unwrap_or_default(),
                    block.input.clone(),
                ));
            }
            if block.kind == "tool_result" {
                let id = block.tool_use_id.as_deref().unwrap_or_default();
                let (_, tool, input) = uses
                    .iter()
                    .find(|(u, _, _)| u == id)
                    .cloned()
                    .expect("a tool_use for each result");
                let text = block.content.as_ref().map(|c| c.text()).unwrap_or_default();
                answers.push((
                    tool,
                    input,
                    text,
                    event.tool_use_result.clone(),
                    block.is_error.unwrap_or(false),
                ));
            }
        }
    }
    answers
}

#[test]
fn the_replays_grep_glob_and_read_find_what_the_real_claude_codes_find() {
    let Some(claude) = claude_bin("conformance of the replayed Grep, Glob and Read") else {
        return;
    };
    let tree = tempfile::tempdir().expect("tree");
    let side = tempfile::tempdir().expect("side");
    // The CLI resolves its directory's symlinks: so do the paths compared here.
    let root = tree.path().canonicalize().expect("canonical");
    tricky_tree(&root);
    let script = calls(&root);
    let answers = real_answers(&claude, &root, side.path(), script.clone());
    assert_eq!(answers.len(), script.len(), "every call was answered");
    let mut differ = Vec::new();
    let mut checked = 0;
    for (tool, input, text, structured, is_error) in &answers {
        let structured = (!structured.is_null()).then_some(structured);
        let check = match from_claude(tool, input, text, structured, *is_error, &root) {
            Ok(check) => check,
            // Not a check (a call that failed, an answer cut): such a step is not recorded.
            Err(why) => {
                eprintln!("not a check: {tool} {input}: {why}");
                continue;
            }
        };
        checked += 1;
        let now = observe(&check, &root, &AtomicBool::new(false))
            .map(|o| o.text)
            .unwrap_or_else(|e| e);
        if now != seen(&check) {
            differ.push(format!(
                "{} {input}\n  the CLI: {:?}\n  replay:  {now:?}",
                describe(&check),
                seen(&check)
            ));
        }
    }
    assert!(
        checked >= 20,
        "{checked} of {} calls were checks",
        answers.len()
    );
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    // What the conformance is about: the CLI saw the hidden file, the Latin-1 text and both
    // globs' files; the VCS folder and the ignored files it did not search.
    let content = &answers[0].2;
    for found in [
        ".env:1:",
        ".hid/h.txt:1:",
        "latin1.txt:1:caf\u{fffd}",
        "utf16.txt:1:",
    ] {
        assert!(content.contains(found), "{found}: {content}");
    }
    for not in [".git/", "ignored/", "app.log", "bin.dat"] {
        assert!(!content.contains(not), "{not}: {content}");
    }
    let comma = &answers[3].2;
    assert!(
        comma.starts_with("Found 2 files")
            && comma.contains("notes.md")
            && comma.contains("sub/a.cfg"),
        "{comma}"
    );
}

/// A project whose steps rest on a hidden file, a comma glob and a `Read` of a file ending in a
/// newline: recorded by the real CLI, replayed with no model call; the hidden file's key
/// changed, the `Grep` step drifts to the agent.
#[test]
fn steps_resting_on_a_hidden_file_a_comma_glob_and_a_final_newline_replay_and_then_drift() {
    let Some(claude) = claude_bin("replay of Grep over hidden files and Read of a final newline")
    else {
        return;
    };
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"claude-code\"\nagent_args = [\"--allowedTools\", \"Bash,Read,Grep,Glob\"]\nstep_timeout_secs = 120\n",
    );
    // A git repository that ignores the supervisor's own records (its runs and recordings hold
    // the key too, once the agent has seen it), as `supervisor init` sets it up.
    p.write(".git/HEAD", "ref: refs/heads/main\n");
    p.write(".gitignore", ".bugatti/\nbugatti.replay/\n");
    p.write(".env", "API_KEY=key-123\n");
    p.write("docs/notes.md", "the key is not here\n");
    p.write("conf/app.cfg", "port = 8080\n");
    p.write("notes.txt", "invoice 17\ndue on Friday\n");
    p.write(
        "t.test.toml",
        "[[steps]]\ninstruction = \"Check which files set API_KEY=key-123.\"\n\n\
         [[steps]]\ninstruction = \"Check no .md or .cfg file holds key-123.\"\n\n\
         [[steps]]\ninstruction = \"Check notes.txt says invoice 17 is due on Friday.\"\n",
    );
    let side = tempfile::tempdir().expect("side");
    let run = |name: &str, script: Value| {
        let dir = side.path().join(name);
        std::fs::create_dir_all(&dir).expect("stub dir");
        let stub = Stub::start(&dir, script);
        let out = p
            .supervisor()
            .arg("start")
            .env("BUGATTI_CLAUDE_BIN", &claude)
            .envs(stub.client_env(&side.path().join("home")))
            .output()
            .expect("supervisor");
        p.assert_nothing_survives();
        let mut records = p.run_records();
        records.sort_by_key(|r| r.identity.started_at);
        let record = records.pop().expect("run.json");
        let console = format!("{}\n{}", stdout(&out), common::stderr(&out));
        (
            out.status.code(),
            console,
            record,
            stub.requests_text().lines().count(),
        )
    };
    let notes = p.root().join("notes.txt").display().to_string();
    let script = json!([
        {"tool": "Grep", "input": {"pattern": "API_KEY=key-123"}},
        {"text": "Only .env holds it.\nRESULT OK", "expect": [".env"]},
        {"tool": "Grep", "input": {"pattern": "key-123", "glob": "*.md,*.cfg"}},
        {"text": "None does.\nRESULT OK", "expect": ["No files found"]},
        {"tool": "Read", "input": {"file_path": notes}},
        {"text": "Due on Friday.\nRESULT OK", "expect": ["due on Friday"]},
    ]);
    let (code, console, record, _) = run("first", script);
    assert_eq!(code, Some(0), "{console}\n{:#?}", record.steps);
    for step in &record.steps {
        assert!(step.recorded, "{step:#?}");
    }

    let (code, console, record, requests) = run("second", json!([]));
    assert_eq!(code, Some(0), "{console}\n{:#?}", record.steps);
    assert_eq!(requests, 0, "no model call: {:#?}", record.steps);
    assert_eq!(record.replayed_steps, 3, "{:#?}", record.steps);

    // A .cfg file now holds the key: the comma glob's step drifts, and the agent fails it.
    p.write("conf/app.cfg", "port = 8080\nkey = key-123\n");
    let script = json!([
        {"tool": "Grep", "input": {"pattern": "key-123", "glob": "*.md,*.cfg"}},
        {"text": "None does.\nRESULT OK", "expect": ["No files found"]},
    ]);
    let (code, console, record, requests) = run("third", script);
    let steps = &record.steps;
    assert_eq!(code, Some(1), "{console}\n{steps:#?}");
    assert!(requests >= 1);
    assert_eq!(steps[0].mode, Some(StepMode::Replayed), "{steps:#?}");
    assert_eq!(steps[1].mode, Some(StepMode::Agent), "{steps:#?}");
    assert_ne!(steps[1].status, StepStatus::Ok, "{steps:#?}");
    assert!(
        steps[1]
            .replay_drift
            .as_ref()
            .is_some_and(|d| d.diff.contains("conf/app.cfg")),
        "{:#?}",
        steps[1]
    );
}

/// Turns a path into another kind of file.
type Make = dyn Fn(&Path);

/// A `Read` target that became a FIFO, a symlink to `/dev/zero` or a huge sparse file: the
/// replay neither blocks nor reads it, the step drifts to the agent (which is told the file
/// cannot be read and fails the step), and the run ends with its report.
#[test]
fn a_read_target_that_became_a_fifo_a_device_or_huge_drifts_and_the_run_ends() {
    let Some(claude) = claude_bin("replay of a Read whose file became a FIFO") else {
        return;
    };
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"claude-code\"\nagent_args = [\"--allowedTools\", \"Bash,Read\"]\nstep_timeout_secs = 60\n",
    );
    p.write("status.txt", "state: green\n");
    p.write(
        "t.test.toml",
        "[[steps]]\ninstruction = \"Check status.txt says green.\"\n",
    );
    let side = tempfile::tempdir().expect("side");
    let status = p.root().join("status.txt");
    let read = json!([
        {"tool": "Read", "input": {"file_path": status.display().to_string()}},
        {"text": "Green.\nRESULT OK", "expect": ["state: green"]},
    ]);
    let run = |name: &str, script: Value| {
        let dir = side.path().join(name);
        std::fs::create_dir_all(&dir).expect("stub dir");
        let stub = Stub::start(&dir, script);
        let mut child = p
            .supervisor()
            .arg("start")
            .env("BUGATTI_CLAUDE_BIN", &claude)
            .envs(stub.client_env(&side.path().join("home")))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("supervisor");
        // The step's own timeout is 60 s: a replay blocked on the file would outlive it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
        let code = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status.code();
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("{name}: the run did not end");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        p.assert_nothing_survives();
        let mut records = p.run_records();
        records.sort_by_key(|r| r.identity.started_at);
        (code, records.pop().expect("run.json"))
    };
    let (code, record) = run("first", read.clone());
    assert_eq!(code, Some(0), "{:#?}", record.steps);
    assert!(record.steps[0].recorded, "{:#?}", record.steps);

    let fifo = |path: &Path| {
        nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    };
    let zero = |path: &Path| std::os::unix::fs::symlink("/dev/zero", path).expect("symlink");
    let huge = |path: &Path| {
        std::fs::File::create(path)
            .and_then(|f| f.set_len(1536 << 20))
            .expect("a sparse file");
    };
    let makes: [(&str, &Make, &str); 3] = [
        ("fifo", &fifo, "a FIFO"),
        ("zero", &zero, "a character device"),
        ("huge", &huge, "bytes"),
    ];
    for (name, make, said) in makes {
        std::fs::remove_file(&status).expect("rm");
        make(&status);
        // The agent is asked again; its Read cannot give it the status: it fails the step.
        let script = json!([
            {"tool": "Bash", "input": {"command": "test -f status.txt && test -s status.txt && [ $(stat -c %s status.txt) -lt 1000 ] && cat status.txt || echo unreadable"}},
            {"text": "Not green.\nRESULT OK", "expect": ["state: green"]},
        ]);
        let (code, record) = run(name, script);
        let step = &record.steps[0];
        assert_eq!(code, Some(1), "{name}: {step:#?}");
        assert_eq!(step.mode, Some(StepMode::Agent), "{name}: {step:#?}");
        assert_ne!(step.status, StepStatus::Ok, "{name}: {step:#?}");
        let drift = format!("{:?}", step.replay_drift);
        assert!(drift.contains(said), "{name}: {drift}");
        std::fs::remove_file(&status).expect("rm");
        p.write("status.txt", "state: green\n");
    }
}
