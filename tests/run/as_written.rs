//! Projects configured the way the docs tell users to, run through the real binary: the
//! docs' own `command` agent (`agents/my_agent.py`, taken from docs/providers.md at test time) with
//! `cmd = "python3 agents/my_agent.py"`, started from the project root and from a subdirectory;
//! `${NAME}` in the agent's `cmd` and `cwd`; `doctor` on a missing script; an agent that never
//! answers the bootstrap.

use crate::common;
use crate::common::assert_exit;
use crate::common::records::*;
use crate::common::{stderr, stdout, Project};
use std::path::Path;

/// The fenced block of the docs (README.md, then `docs/*.md`) whose first line is `# <name>`,
/// without that line.
fn readme_block(name: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<std::path::PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    pages.insert(0, root.join("README.md"));
    let readme = pages
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect::<Vec<_>>()
        .join("\n");
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        let fence = line.trim_start();
        if !fence.starts_with("```") || fence.len() == 3 {
            continue;
        }
        let indent = line.len() - fence.len();
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.trim_start().starts_with("```"))
            .map(|l| l.get(indent..).unwrap_or("").trim_end())
            .collect();
        if body.first().map(|l| l.trim()) == Some(&format!("# {name}")) {
            return body[1..].join("\n") + "\n";
        }
    }
    panic!("neither README.md nor docs/ has a fenced block starting with `# {name}`");
}

const CONFIG: &str = r#"[provider]
name = "command"
cmd = "python3 agents/my_agent.py"
step_timeout_secs = 60

[ports]
APP_PORT = "auto"
"#;

/// A project as a user lays it out: the agent beside the tests, notes for it at the root.
fn project(config: &str) -> Project {
    let p = Project::new();
    p.write("bugatti.config.toml", config);
    p.write("agents/my_agent.py", &readme_block("agents/my_agent.py"));
    p.write("CLAUDE.md", "The greeting is in notes/greeting.txt.\n");
    p.write("notes/greeting.txt", "hello\n");
    for name in ["first", "second"] {
        p.write(
            &format!("tests/{name}.test.toml"),
            "[[steps]]\ninstruction = \"Read the notes: `test -f CLAUDE.md` and `grep -q hello notes/greeting.txt`.\"\n\
             [[steps]]\ninstruction = \"Note where we are: `echo cwd=$PWD work=$BUGATTI_WORKDIR port=$APP_PORT > \\\"$BUGATTI_WORKDIR/where.txt\\\"` and `cp \\\"$BUGATTI_WORKDIR/where.txt\\\" \\\"$BUGATTI_RUN_DIR/where.txt\\\"`.\"\n",
        );
    }
    p
}

fn where_of(record: &RunRecord) -> String {
    record.read("where.txt")
}

/// In events.jsonl, every `agent_log` of a step comes before that step's `step_finished`, even
/// when the agent answers at once.
fn assert_logs_precede_their_verdict(run_dir: &Path) {
    let events = common::read_events(&run_dir.join("events.jsonl"));
    let mut finished = std::collections::BTreeSet::new();
    let mut logs = 0;
    for event in &events {
        match &event.kind {
            EventKind::StepFinished { step_id, .. } => {
                finished.insert(*step_id);
            }
            EventKind::AgentLog { step_id, .. } => {
                logs += 1;
                assert!(
                    !finished.contains(step_id),
                    "a log of step {step_id} after its verdict:\n{events:#?}"
                );
            }
            _ => {}
        }
    }
    assert!(
        logs >= 2,
        "the agent's logs are in events.jsonl:\n{events:#?}"
    );
}

fn canonical(p: &Path) -> String {
    p.canonicalize().expect("canonical").display().to_string()
}

#[test]
fn the_readme_command_agent_runs_from_the_project_root_and_from_a_subdirectory() {
    let p = project(CONFIG);
    let root = canonical(p.root());
    for (from, label) in [
        (p.root().to_path_buf(), "root"),
        (p.root().join("tests"), "subdir"),
    ] {
        let _ = std::fs::remove_dir_all(p.root().join(".bugatti"));
        let out = p
            .supervisor()
            .current_dir(&from)
            .args(["start", "-j", "2"])
            .output()
            .expect("run");
        p.assert_nothing_survives();
        let console = stdout(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "from the {label}:\n{console}\n{}",
            stderr(&out)
        );
        let first = console.lines().next().unwrap_or_default();
        assert_eq!(
            first,
            format!("supervisor: config {root}/bugatti.config.toml (project root {root})"),
            "the first line names the config, from the {label}"
        );
        assert!(
            !p.root().join("tests/.bugatti").exists(),
            "artifacts go to the project root, also from the {label}"
        );
        let records = p.run_records();
        assert_eq!(records.len(), 2, "from the {label}");
        let mut workspaces = Vec::new();
        let mut ports = Vec::new();
        for record in &records {
            assert_eq!(record.outcome, Some(RunOutcome::Passed), "{record:?}");
            assert_eq!(record.steps[0].status, StepStatus::Ok);
            let line = where_of(record);
            let field = |name: &str| {
                line.split_whitespace()
                    .find_map(|w| w.strip_prefix(&format!("{name}=")))
                    .unwrap_or_default()
                    .to_string()
            };
            assert_eq!(field("cwd"), root, "the agent runs in the project root");
            // run.json records the session's places as the agent saw them.
            assert_eq!(
                record.workspace.as_deref(),
                Some(field("work").as_str()),
                "{record:?}"
            );
            assert_eq!(
                record.ports["APP_PORT"].to_string(),
                field("port"),
                "{record:?}"
            );
            workspaces.push(field("work"));
            ports.push(field("port"));
        }
        assert_ne!(
            workspaces[0], workspaces[1],
            "parallel sessions: own workspaces"
        );
        assert_ne!(ports[0], ports[1], "parallel sessions: own ports");
        // Both directions of the conversation are in agent.jsonl.
        let run_dir = records[0].identity.run_dir.as_str();
        assert_logs_precede_their_verdict(Path::new(run_dir));
        let jsonl = std::fs::read_to_string(Path::new(run_dir).join("transcripts/agent.jsonl"))
            .expect("agent.jsonl");
        assert!(
            jsonl.contains(r#""dir":"to_agent""#) && jsonl.contains(r#""dir":"from_agent""#),
            "{jsonl}"
        );
    }
}

#[test]
fn variables_in_the_agent_cmd_and_cwd_are_substituted() {
    let p = project(
        &CONFIG
            .replace(
                "cmd = \"python3 agents/my_agent.py\"",
                "cmd = \"python3 ${BUGATTI_PROJECT_ROOT}/agents/my_agent.py\"\ncwd = \"${BUGATTI_WORKDIR}\"",
            ),
    );
    p.write(
        "tests/first.test.toml",
        "[[steps]]\ninstruction = \"`test ! -f CLAUDE.md` and `echo cwd=$PWD work=$BUGATTI_WORKDIR > \\\"$BUGATTI_RUN_DIR/where.txt\\\"`\"\n",
    );
    std::fs::remove_file(p.root().join("tests/second.test.toml")).expect("rm");
    let out = p.start();
    assert_exit(&out, 0);
    let record = p.record_for("first.test.toml");
    let line = where_of(&record);
    let cwd = line.split_whitespace().next().unwrap_or_default();
    let work = line.split_whitespace().nth(1).unwrap_or_default();
    assert_eq!(
        cwd.strip_prefix("cwd="),
        work.strip_prefix("work="),
        "{line}"
    );
}

#[test]
fn doctor_names_a_missing_agent_script_and_passes_once_it_exists() {
    let p = project(CONFIG);
    std::fs::remove_file(p.root().join("agents/my_agent.py")).expect("rm");
    let out = p.supervisor().arg("doctor").output().expect("doctor");
    let text = stdout(&out);
    assert_exit(&out, 1);
    assert!(
        text.contains("FAIL provider command: script `agents/my_agent.py` not found at"),
        "{text}"
    );
    // From a subdirectory, the same project root and the same finding.
    let out = p
        .supervisor()
        .current_dir(p.root().join("tests"))
        .arg("doctor")
        .output()
        .expect("doctor");
    assert_exit(&out, 1);
    p.write("agents/my_agent.py", &readme_block("agents/my_agent.py"));
    let out = p.supervisor().arg("doctor").output().expect("doctor");
    let text = stdout(&out);
    assert_exit(&out, 0);
    assert!(text.contains("ok   provider command: script"), "{text}");
}

#[test]
fn an_agent_that_never_answers_the_bootstrap_gets_an_error_that_says_so() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"command\"\ncmd = \"sh agents/silent.sh\"\nno_output_timeout_secs = 1\n",
    );
    p.write("agents/silent.sh", "exec sleep 60\n");
    p.write("a.test.toml", "[[steps]]\ninstruction = \"anything\"\n");
    let out = p.start();
    assert_exit(&out, 3);
    let record = p.record_for("a.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Error));
    let report = std::fs::read_to_string(record.run_dir().join("report.md")).expect("report.md");
    assert!(
        report.contains("did not answer the bootstrap message"),
        "{report}"
    );
}

#[test]
fn output_without_a_result_line_is_a_protocol_error_after_the_silence_limit() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"command\"\ncmd = \"python3 agents/chatty.py\"\nno_output_timeout_secs = 3\n",
    );
    p.write(
        "agents/chatty.py",
        "import json, sys, time\nfor line in sys.stdin:\n    m = json.loads(line)\n    if m['type'] == 'bootstrap':\n        print('RESULT OK', flush=True)\n    else:\n        print('it all looks fine to me', flush=True)\n",
    );
    p.write("a.test.toml", "[[steps]]\ninstruction = \"anything\"\n");
    let out = p.start();
    assert_exit(&out, 1);
    let record = p.record_for("a.test.toml");
    let step = &record.steps[0];
    assert_eq!(step.status, StepStatus::ProtocolError, "{step:?}");
    let message = step.message.as_deref().unwrap_or_default();
    assert!(
        message.contains("no RESULT line") && message.contains("no_output_timeout_secs"),
        "{message}"
    );
}

#[test]
fn a_slow_agent_that_wrote_something_is_a_timeout_at_the_step_timeout() {
    // docs/providers.md: a step that outlives its timeout is `timeout`. The agent printed a progress line
    // and is still working (not silent for no_output_timeout_secs): it is slow, not off-protocol.
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"command\"\ncmd = \"python3 agents/slow.py\"\n",
    );
    p.write(
        "agents/slow.py",
        "import json, sys, time\nfor line in sys.stdin:\n    m = json.loads(line)\n    if m['type'] == 'bootstrap':\n        print('RESULT OK', flush=True)\n    else:\n        print('working…', flush=True)\n        time.sleep(60)\n",
    );
    p.write(
        "a.test.toml",
        "[[steps]]\ninstruction = \"anything\"\ntimeout_secs = 1\n",
    );
    let out = p.start();
    assert_exit(&out, 1);
    let record = p.record_for("a.test.toml");
    let step = &record.steps[0];
    assert_eq!(step.status, StepStatus::Timeout, "{step:?}");
    let message = step.message.as_deref().unwrap_or_default();
    assert!(
        message.contains("timed out after 1s") && message.contains("no RESULT line"),
        "{message}"
    );
    // The message names every setting that raises the limit.
    for setting in [
        "timeout_secs",
        "[provider] step_timeout_secs",
        "--step-timeout",
    ] {
        assert!(message.contains(setting), "{setting}: {message}");
    }
    assert_eq!(message.matches("--step-timeout").count(), 1, "{message}");
}

#[test]
fn a_silent_agent_is_told_the_silence_limit_not_the_step_timeout() {
    // The watchdog stopped it, not the step's timeout: its message names no_output_timeout_secs,
    // and raising the step's timeout would not help.
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"command\"\ncmd = \"sh agents/mute.sh\"\nno_output_timeout_secs = 1\n",
    );
    // `sh` starts at once: the bootstrap is answered well within the silence limit.
    p.write(
        "agents/mute.sh",
        "read bootstrap\necho 'RESULT OK'\nread step\nexec sleep 60\n",
    );
    p.write("a.test.toml", "[[steps]]\ninstruction = \"anything\"\n");
    let out = p.start();
    assert_exit(&out, 1);
    let record = p.record_for("a.test.toml");
    let step = &record.steps[0];
    assert_eq!(step.status, StepStatus::Timeout, "{step:?}");
    let message = step.message.as_deref().unwrap_or_default();
    assert!(
        message.contains("wrote nothing for 1s (no_output_timeout_secs)"),
        "{message}"
    );
    for wrong in ["step_timeout_secs", "--step-timeout", "timed out after"] {
        assert!(!message.contains(wrong), "{wrong}: {message}");
    }
}

#[test]
fn the_open_files_limit_is_raised_to_the_hard_limit_for_the_run() {
    // Started with a low soft limit (a login shell's 1024, or less): the supervisor and what it
    // starts get the hard limit, so `-j 16` with servers does not run out of descriptors.
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "limit.test.toml",
        "name = \"Limit\"\n[[steps]]\ninstruction = '''`test \"$(ulimit -Sn)\" = \"$(ulimit -Hn)\" || { echo \"soft $(ulimit -Sn) hard $(ulimit -Hn)\"; exit 1; }`'''\n",
    );
    let hard = std::process::Command::new("sh")
        .args(["-c", "ulimit -Hn"])
        .output()
        .expect("sh");
    let hard = String::from_utf8_lossy(&hard.stdout).trim().to_string();
    if hard == "unlimited" || hard.parse::<u64>().is_ok_and(|h| h <= 256) {
        common::skip::skip(
            "too many open files",
            format!("the hard open-files limit ({hard}) leaves no room to lower the soft one"),
        );
        return;
    }
    let out = std::process::Command::new("sh")
        .args([
            "-c",
            &format!(
                "ulimit -Sn 256 && exec {} start",
                env!("CARGO_BIN_EXE_supervisor")
            ),
        ])
        .current_dir(p.root())
        .env("BUGATTI_CONFIG_HOME", p.root().join(".no-global-config"))
        .env("NO_COLOR", "1")
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let record = p.record_for("limit.test.toml");
    assert_eq!(out.status.code(), Some(0), "{record:?}\n{}", stdout(&out));
}
