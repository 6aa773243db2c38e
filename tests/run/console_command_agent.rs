//! The agent console (docs/console.md) end to end with a `command` agent: the real supervisor on a temp
//! project, a scripted Python agent (tests/support/directive_agent.py) speaking MCP over HTTP to
//! `$BUGATTI_MCP_URL` with `$BUGATTI_MCP_TOKEN`. It drives an interactive program through a PTY,
//! waits for the harness app's log line, and the records say what it did. Needs only python3.

use crate::common;
use crate::common::assert_exit;
use crate::common::records::*;
use bugatti::console::ExecArgs;

use crate::common::{stdout, Project};

fn project(app_steps: &str) -> Project {
    let p = Project::new();
    let app = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/console_app.py");
    p.write(
        "bugatti.config.toml",
        &format!(
            r#"
[provider]
name = "command"
cmd = "{agent}"
step_timeout_secs = 60

[ports]
APP_PORT = "auto"

[commands.app]
kind = "long_lived"
cmd = "python3 {app} --port ${{APP_PORT}}"
readiness_url = "http://127.0.0.1:${{APP_PORT}}/health"
"#,
            agent = Project::directive_agent_cmd(),
        ),
    );
    p.write("console.test.toml", app_steps);
    p
}

/// The console.jsonl of the (only) run, parsed.
fn console_calls(p: &Project) -> Vec<ConsoleCall> {
    let record = p.record_for("console.test.toml");
    let run_dir = p
        .root()
        .join(".bugatti/runs")
        .join(record.identity.run_id.as_str());
    common::read_jsonl(&run_dir.join("transcripts/console.jsonl"))
}

const STEPS: &str = r#"
name = "Console"

[[steps]]
instruction = '''
Start a program that asks for a name, answer it, and read the greeting.
mcp exec_command {"cmd": "read -p 'name? ' n; echo \"hello $n\"", "yield_time_ms": 3000}
expect name?
mcp write_stdin {"session_id": {session_id}, "chars": "bugatti\n", "yield_time_ms": 5000}
expect hello bugatti
'''

[[steps]]
instruction = '''
Place an order and see the server log it.
mcp exec_command {"cmd": "sleep 1; curl -s http://127.0.0.1:$APP_PORT/checkout?order=7", "tty": false, "yield_time_ms": 250}
expect Process running with session ID
mcp wait_for_log {"name": "app", "pattern": "checkout hit order=\\d+", "timeout_ms": 20000}
expect checkout hit order=7
mcp read_log {"name": "app", "offset": {next_offset}}
expect Original token count: 0
mcp read_log {"name": "app", "tail_lines": 1}
expect checkout hit order=7
'''
"#;

#[test]
fn a_command_agent_drives_a_pty_and_waits_for_the_servers_log_line() {
    let p = project(STEPS);
    let out = p.start();
    let record = p.record_for("console.test.toml");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}\n{record:#?}",
        stdout(&out),
        common::stderr(&out)
    );
    let calls = console_calls(&p);
    let tools: Vec<&str> = calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(
        tools,
        [
            "exec_command",
            "write_stdin",
            "exec_command",
            "wait_for_log",
            "read_log",
            "read_log"
        ]
    );
    // wait_for_log's cursor is just past the line it matched: reading on from it gives nothing.
    assert_eq!(calls[4].bytes, 0, "{:#?}", calls[4]);
    assert_eq!(calls[1].exit_code, Some(0), "{:#?}", calls[1]);
    assert!(calls[1].bytes > 0);
    let exec: ExecArgs =
        serde_json::from_value(calls[0].arguments.clone()).expect("exec_command's arguments");
    assert_eq!(exec.yield_time_ms, Some(3000));
    // The PTY session's full output is kept.
    let run_dir = p
        .root()
        .join(".bugatti/runs")
        .join(record.identity.run_id.as_str());
    let logs: Vec<_> = std::fs::read_dir(run_dir.join("console"))
        .expect("console dir")
        .filter_map(|e| e.ok())
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    assert!(
        logs.iter()
            .any(|l| l.contains("name? ") && l.contains("hello bugatti")),
        "{logs:?}"
    );
    // The reports show each step's console calls; events.jsonl has them before the verdict.
    let report = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(report.contains("## Console calls"), "{report}");
    assert!(
        report.contains("- `write_stdin` `session ") && report.contains("exit 0"),
        "{report}"
    );
    assert!(
        report.contains("- `wait_for_log` `app /checkout hit order=\\d+/`"),
        "{report}"
    );
    let html = std::fs::read_to_string(p.suite_dir().join("report.html")).expect("report.html");
    assert!(html.contains("Console calls") && html.contains("<code>wait_for_log</code>"));
    let events = common::read_events(&run_dir.join("events.jsonl"));
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e.kind.name())
        .filter(|t| *t == "console_call" || *t == "step_finished")
        .collect();
    assert_eq!(
        kinds,
        [
            "console_call",
            "console_call",
            "step_finished",
            "console_call",
            "console_call",
            "console_call",
            "console_call",
            "step_finished"
        ]
    );
    // The agent saw Codex's layout: the question while the program ran, then its exit.
    let transcript =
        std::fs::read_to_string(run_dir.join("transcripts/agent.log")).expect("agent.log");
    assert!(
        transcript.contains("Process running with session ID")
            && transcript.contains("Process exited with code 0\nOriginal token count: 6\nOutput:\nbugatti\nhello bugatti\n"),
        "{transcript}"
    );
}

#[test]
fn console_false_gives_the_agent_no_console() {
    // With `console = false` the agent gets no endpoint: its call fails, the step says so.
    let p = project(
        r#"
name = "Console"
[[steps]]
instruction = '''
mcp list_logs {}
expect app: long-lived
'''
"#,
    );
    let config = std::fs::read_to_string(p.root().join("bugatti.config.toml")).expect("config");
    p.write(
        "bugatti.config.toml",
        &config.replace(
            "step_timeout_secs = 60",
            "step_timeout_secs = 60\nconsole = false",
        ),
    );
    let out = p.start();
    assert_exit(&out, 1);
    let record = p.record_for("console.test.toml");
    // The agent found no BUGATTI_MCP_URL, so its call failed and the step said so.
    let written = record.read("run.json");
    assert!(written.contains("BUGATTI_MCP_URL"), "{written}");
    let run_dir = p
        .root()
        .join(".bugatti/runs")
        .join(record.identity.run_id.as_str());
    assert!(!run_dir.join("transcripts/console.jsonl").exists());
}

#[test]
fn exec_command_runs_where_the_agent_runs_the_project_root_by_default() {
    // docs/console.md: `workdir` defaults to the agent's own working directory, so `cat data.txt` means
    // the same through the console as through the agent's own shell. Run from a subdirectory, as
    // users do.
    let p = project(
        r#"
name = "Console"
[[steps]]
instruction = '''
mcp exec_command {"cmd": "cat data.txt; cat notes/greeting.txt", "tty": false, "yield_time_ms": 5000}
expect the data of the project
expect hello from notes
'''
"#,
    );
    p.write("data.txt", "the data of the project\n");
    p.write("notes/greeting.txt", "hello from notes\n");
    std::fs::create_dir_all(p.root().join("sub")).expect("sub");
    let out = p
        .supervisor()
        .current_dir(p.root().join("sub"))
        .arg("start")
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    let record = p.record_for("console.test.toml");
    assert_eq!(out.status.code(), Some(0), "{}\n{record:#?}", stdout(&out));
    let calls = console_calls(&p);
    assert_eq!(calls[0].exit_code, Some(0), "{:#?}", calls[0]);
}

#[test]
fn list_logs_tells_a_finished_setup_command_from_a_running_server() {
    let p = project(
        r#"
name = "Console"
[[steps]]
instruction = '''
mcp list_logs {}
expect app: long_lived, running
expect seed: short_lived, finished
'''
"#,
    );
    let config = std::fs::read_to_string(p.root().join("bugatti.config.toml")).expect("config");
    p.write(
        "bugatti.config.toml",
        &format!("{config}\n[commands.seed]\nkind = \"short_lived\"\ncmd = \"echo seeded\"\n"),
    );
    let out = p.start();
    let record = p.record_for("console.test.toml");
    assert_eq!(out.status.code(), Some(0), "{}\n{record:#?}", stdout(&out));
}
