//! The cause next to the failure: a step that fails while the server prints a traceback carries
//! that traceback (and only what the server wrote during that step) in run.json's
//! `harness_log_excerpt`, in report.md and in events.jsonl, before the step's verdict.

use crate::common::assert_exit;
use crate::common::records::*;
use crate::common::Project;

const SERVER: &str = r#"
import sys, traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        print("served " + (fmt % args), flush=True)

    def do_GET(self):
        try:
            if self.path == "/boom":
                basket = {}
                basket["items"] += 1
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok\n")
        except Exception:
            traceback.print_exc()
            sys.stderr.flush()
            self.send_response(500)
            self.end_headers()


print("listening", flush=True)
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"#;

#[test]
fn a_traceback_printed_while_a_step_fails_is_in_that_steps_excerpt_only() {
    let p = Project::new();
    p.write("app/server.py", SERVER);
    p.write(
        "bugatti.config.toml",
        r#"[provider]
name = "shell"

[ports]
APP_PORT = "auto"

[commands.server]
kind = "long_lived"
cmd = "python3 app/server.py ${APP_PORT}"
readiness = { log = "^listening" }
"#,
    );
    p.write(
        "tests/basket.test.toml",
        r#"name = "Basket"

# The step ends once the server's line for it is in its log: what the server wrote during a
# step is that step's, and the log's pump is not raced (it may lag on a loaded machine).
[[steps]]
instruction = "The home page answers: `curl -sf http://127.0.0.1:${APP_PORT}/home && until grep -q 'GET /home' \"$BUGATTI_RUN_DIR/logs/server.log\"; do sleep 0.05; done`"

[[steps]]
instruction = "The basket answers: `curl -sf http://127.0.0.1:${APP_PORT}/boom`"
"#,
    );
    let out = p.start();
    assert_exit(&out, 1);
    let record = p.record_for("basket.test.toml");
    let steps = &record.steps;
    assert_eq!(steps[0].status, StepStatus::Ok);
    assert!(
        steps[0].harness_log_excerpt.is_empty(),
        "a passing step carries no excerpt: {:?}",
        steps[0]
    );
    assert_eq!(steps[1].status, StepStatus::Error);
    let excerpt = steps[1]
        .harness_log_excerpt
        .get("server")
        .map(String::as_str)
        .unwrap_or_default();
    assert!(
        excerpt.contains("Traceback (most recent call last)")
            && excerpt.contains("KeyError: 'items'"),
        "the traceback is next to the failure: {excerpt:?}"
    );
    assert!(
        !excerpt.contains("GET /home"),
        "the lines of the step before are not: {excerpt:?}"
    );
    let run_dir = record.run_dir();
    let report = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("Harness log `server` while the step ran")
            && report.contains("KeyError: 'items'"),
        "{report}"
    );
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events.jsonl");
    let position = |needle: &str| {
        events
            .lines()
            .position(|l| l.contains(needle) && l.contains(r#""step_id":2"#))
            .unwrap_or_else(|| panic!("no {needle} for step 2 in:\n{events}"))
    };
    assert!(
        position(r#""type":"harness_log_excerpt""#) < position(r#""type":"step_finished""#),
        "the excerpt comes before the verdict"
    );
}
