//! Signals and the deadline: SIGINT / SIGTERM / SIGHUP mid-step stop the run, tear everything down,
//! write every report as `interrupted` and exit 130 / 143 / 129; `--timeout` behaves like SIGTERM
//! and says it was the deadline. The first signal is acknowledged on the console.

mod common;
#[path = "support/fault/mod.rs"]
mod fault;

use common::{stdout, Project};
use std::process::Stdio;
use std::time::Duration;

fn project_with_a_long_step() -> Project {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!(
            r#"
[provider]
name = "command"
cmd = "{agent}"

[ports]
APP_PORT = "auto"

[commands.server]
kind = "long_lived"
cmd = "python3 -m http.server ${{APP_PORT}} --bind 127.0.0.1"
readiness = {{ tcp = "127.0.0.1:${{APP_PORT}}" }}
stop_timeout_secs = 2

[commands.stubborn]
kind = "long_lived"
cmd = "trap '' TERM; echo up; while true; do sleep 1; done"
readiness = {{ log = "^up$" }}
stop_timeout_secs = 30
"#,
            agent = Project::directive_agent_cmd()
        ),
    );
    for name in ["one", "two"] {
        p.write(
            &format!("{name}.test.toml"),
            "name = \"Long\"\n[[steps]]\ninstruction = \"sleep 60\"\n[[steps]]\ninstruction = \"say never\"\n",
        );
    }
    p
}

fn interrupt_mid_step(signals: &[&str]) -> (Project, std::process::Output) {
    let p = project_with_a_long_step();
    let mut child = p
        .supervisor()
        .args(["start", "-j", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn supervisor");
    fault::wait_for_steps(&p, 2, &mut child);
    for signal in signals {
        let status = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = child.wait_with_output().expect("wait");
    p.assert_nothing_survives();
    (p, out)
}

fn assert_all_interrupted(p: &Project) {
    let records = p.run_records();
    assert_eq!(records.len(), 2);
    for record in records {
        assert_eq!(record["outcome"], "interrupted", "{record}");
        assert_eq!(record["steps"][0]["status"], "interrupted", "{record}");
        let message = record["steps"][0]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("interrupted: SIG"),
            "names the signal: {message}"
        );
        assert_eq!(record["steps"][1]["status"], "not_run");
        let run_dir = std::path::Path::new(record["run_dir"].as_str().expect("run_dir"));
        let report = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
        assert!(report.contains("INTERRUPTED"), "{report}");
    }
    assert!(p.suite_dir().join("junit.xml").exists());
}

#[test]
fn sigint_mid_step_interrupts_every_session_and_exits_130() {
    // The second SIGINT skips the 30 s grace period of the server that ignores SIGTERM.
    let (p, out) = interrupt_mid_step(&["INT", "INT"]);
    let console = stdout(&out);
    assert_eq!(out.status.code(), Some(130), "{console}");
    assert!(
        console.contains("SIGINT: stopping") && console.contains("a second signal skips them"),
        "the first signal is acknowledged: {console}"
    );
    assert!(
        console.contains("SIGINT: second signal — skipping the grace periods"),
        "{console}"
    );
    assert_all_interrupted(&p);
    let record = &p.run_records()[0];
    let stubborn = record["commands"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "stubborn"))
        .expect("stubborn command");
    assert_eq!(stubborn["teardown"], "killed", "{stubborn}");
}

#[test]
fn sigterm_mid_step_exits_143() {
    let (p, out) = interrupt_mid_step(&["TERM", "INT"]);
    assert_eq!(out.status.code(), Some(143), "{}", stdout(&out));
    assert_all_interrupted(&p);
}

#[test]
fn sighup_mid_step_with_servers_up_exits_129_with_every_report() {
    // The terminal or SSH session closed: the same orderly stop, not a death with leftovers.
    let (p, out) = interrupt_mid_step(&["HUP", "HUP"]);
    let console = stdout(&out);
    assert_eq!(out.status.code(), Some(129), "{console}");
    assert!(console.contains("SIGHUP: stopping"), "{console}");
    assert_all_interrupted(&p);
}

#[test]
fn the_invocation_deadline_behaves_like_sigterm() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "slow.test.toml",
        "name = \"Slow\"\n[[steps]]\ninstruction = \"`sleep 60`\"\n",
    );
    let out = p.run(&["start", "--timeout", "2"]);
    let console = stdout(&out);
    assert_eq!(out.status.code(), Some(143), "{console}");
    assert!(
        console.contains("--timeout: the 2s deadline passed"),
        "the deadline is named as the reason: {console}"
    );
    let record = p.record_for("slow.test.toml");
    assert_eq!(record["outcome"], "interrupted");
    assert_eq!(record["steps"][0]["status"], "interrupted", "{record}");
    for said in [&record["steps"][0]["message"], &record["error"]] {
        assert_eq!(
            said, "interrupted: the --timeout deadline (2s) passed",
            "the deadline is named in run.json: {record}"
        );
    }
    let report = std::fs::read_to_string(
        std::path::Path::new(record["run_dir"].as_str().expect("run_dir")).join("report.md"),
    )
    .expect("report.md");
    assert!(
        report.contains("the --timeout deadline (2s) passed"),
        "{report}"
    );
}

#[test]
fn the_suite_harness_log_records_the_signals_received() {
    let (p, out) = interrupt_mid_step(&["INT", "INT"]);
    assert_eq!(out.status.code(), Some(130), "{}", stdout(&out));
    let log = std::fs::read_to_string(p.suite_dir().join("harness.log")).expect("suite log");
    assert!(
        log.contains("signal SIGINT received: SIGINT: stopping"),
        "{log}"
    );
    assert!(
        log.contains("signal SIGINT received: SIGINT: second signal"),
        "{log}"
    );
}
