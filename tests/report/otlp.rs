//! `--otlp FILE|URL` (docs/reports.md, "OpenTelemetry"): the suite as OTLP/JSON spans, suite →
//! run → step → action. What is exported is decoded by a real receiver built on PyPI's
//! `opentelemetry-proto` (tests/support/otlp_receiver.py, over loopback HTTP), and every step ran
//! under the span the export names (`TRACEPARENT`; a `command` agent's step message).

use crate::common::skip::skip;
use crate::common::{read_json_file, stderr, stdout, Project};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What the receiver wrote: the request it got, its spans as `opentelemetry-proto` decoded them.
#[derive(Debug, serde::Deserialize)]
struct Received {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    path: String,
    #[serde(default)]
    content_type: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    spans: Vec<DecodedSpan>,
}

#[derive(Debug, Clone, serde::Deserialize)]
struct DecodedSpan {
    trace_id: String,
    span_id: String,
    parent_span_id: Option<String>,
    name: String,
    start_unix_nano: u64,
    end_unix_nano: u64,
    attributes: BTreeMap<String, serde_json::Value>,
}

/// A span of the OTLP/JSON file as written (ids in hex), the fields these tests read.
#[derive(Debug, serde::Deserialize)]
struct Request {
    #[serde(rename = "resourceSpans")]
    resource_spans: Vec<ResourceSpans>,
}

#[derive(Debug, serde::Deserialize)]
struct ResourceSpans {
    #[serde(rename = "scopeSpans")]
    scope_spans: Vec<ScopeSpans>,
}

#[derive(Debug, serde::Deserialize)]
struct ScopeSpans {
    spans: Vec<FileSpan>,
}

#[derive(Debug, serde::Deserialize)]
struct FileSpan {
    #[serde(rename = "traceId")]
    trace_id: String,
    #[serde(rename = "spanId")]
    span_id: String,
    #[serde(rename = "parentSpanId")]
    parent_span_id: Option<String>,
    name: String,
    #[serde(default)]
    events: Vec<FileEvent>,
}

#[derive(Debug, serde::Deserialize)]
struct FileEvent {
    name: String,
}

fn file_spans(path: &Path) -> Vec<FileSpan> {
    let request: Request = read_json_file(path);
    request
        .resource_spans
        .into_iter()
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans)
        .collect()
}

fn receiver_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/otlp_receiver.py")
}

/// Whether `opentelemetry-proto` can be imported; skips `test` (loudly, a failure under CI)
/// when not.
fn have_otlp_proto(test: &str) -> bool {
    let probe = Command::new("python3")
        .args([
            "-c",
            "from opentelemetry.proto.collector.trace.v1 import trace_service_pb2",
        ])
        .output();
    match probe {
        Ok(out) if out.status.success() => true,
        Ok(out) => {
            skip(
                test,
                format!(
                    "python3 cannot import opentelemetry-proto (`python3 -m pip install --user \
                     opentelemetry-proto`; `.ci/run` installs it): {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            );
            false
        }
        Err(e) => {
            skip(test, format!("no python3: {e}"));
            false
        }
    }
}

/// The receiver, listening; killed (by its pid) when dropped if it is still there.
struct Receiver {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
}

impl Receiver {
    fn start() -> Self {
        let dir = tempfile::tempdir().expect("receiver dir");
        let child = Command::new("python3")
            .arg(receiver_script())
            .arg("serve")
            .arg(dir.path())
            .stdin(Stdio::null())
            .spawn()
            .expect("start the receiver");
        let port_file = dir.path().join("port");
        let began = Instant::now();
        while !port_file.is_file() {
            assert!(
                began.elapsed() < Duration::from_secs(30),
                "the receiver never wrote its port"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let port: u16 = read_json_file(&port_file);
        Self { child, dir, port }
    }

    /// What it received: it exits after its one request.
    fn received(mut self) -> Received {
        let status = self.child.wait().expect("the receiver ends");
        assert!(status.success(), "the receiver got no request: {status}");
        read_json_file(&self.dir.path().join("received.json"))
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `path` decoded by the receiver's file mode.
fn decode_file(path: &Path) -> Received {
    let out = path.with_extension("decoded.json");
    let status = Command::new("python3")
        .arg(receiver_script())
        .arg("file")
        .arg(path)
        .arg(&out)
        .status()
        .expect("run the decoder");
    let received: Received = read_json_file(&out);
    assert!(status.success(), "{path:?} does not decode: {received:?}");
    received
}

/// The demo's files as a clone has them: not the `.bugatti/` an earlier run of it left in this
/// checkout (its runs are not this export's).
fn copy_dir(from: &Path, to: &Path) {
    let walk = walkdir::WalkDir::new(from)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".bugatti");
    for entry in walk {
        let entry = entry.expect("walk the demo");
        let rel = entry.path().strip_prefix(from).expect("under the demo");
        let target = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The span tree holds: one trace, one root (the suite), every parent present, each run under
/// the suite, each step under its run, and a span per step run.json has.
fn assert_tree(spans: &[DecodedSpan], p: &Project) {
    let traces: BTreeSet<&str> = spans.iter().map(|s| s.trace_id.as_str()).collect();
    assert_eq!(traces.len(), 1, "one trace: {traces:?}");
    let ids: BTreeMap<&str, &DecodedSpan> = spans.iter().map(|s| (s.span_id.as_str(), s)).collect();
    assert_eq!(ids.len(), spans.len(), "span ids are unique");
    let roots: Vec<&DecodedSpan> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_none())
        .collect();
    assert_eq!(roots.len(), 1, "{roots:?}");
    let suite = roots[0];
    assert!(suite.name.starts_with("suite "), "{suite:?}");
    for span in spans {
        assert!(span.end_unix_nano >= span.start_unix_nano, "{span:?}");
        if let Some(parent) = &span.parent_span_id {
            assert!(ids.contains_key(parent.as_str()), "no parent for {span:?}");
        }
    }
    let records = p.run_records();
    assert!(!records.is_empty());
    for record in &records {
        let run = spans
            .iter()
            .find(|s| {
                s.attributes.get("bugatti.run.id")
                    == Some(&serde_json::json!(record.identity.run_id.as_str()))
                    && s.name.contains("(attempt ")
            })
            .unwrap_or_else(|| panic!("no span for run {}", record.identity.run_id));
        assert_eq!(run.parent_span_id.as_deref(), Some(suite.span_id.as_str()));
        let steps: Vec<&DecodedSpan> = spans
            .iter()
            .filter(|s| {
                s.parent_span_id.as_deref() == Some(run.span_id.as_str())
                    && s.name.starts_with("step ")
            })
            .collect();
        assert_eq!(
            steps.len(),
            record.steps.len(),
            "a span per step of {}: {steps:?}",
            record.identity.test_file
        );
        for step in steps {
            assert!(
                step.start_unix_nano >= run.start_unix_nano,
                "{step:?} in {run:?}"
            );
            assert!(
                step.attributes.contains_key("bugatti.step.status"),
                "{step:?}"
            );
        }
    }
}

#[test]
fn the_readme_demo_sent_to_a_collector_decodes_as_otlp_with_its_span_tree() {
    let test = "the_readme_demo_sent_to_a_collector_decodes_as_otlp_with_its_span_tree";
    if !have_otlp_proto(test) {
        return;
    }
    let p = Project::new();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo"),
        p.root(),
    );
    let receiver = Receiver::start();
    let base = format!("http://127.0.0.1:{}", receiver.port);
    let out = p
        .supervisor()
        .args(["start", "--otlp", &base])
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s3cret%20value")
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).contains(&format!("exported to {base}/v1/traces")),
        "{}",
        stdout(&out)
    );
    let received = receiver.received();
    assert_eq!(received.error, None, "{received:?}");
    assert_eq!(received.path, "/v1/traces");
    assert_eq!(received.content_type, "application/json");
    assert_eq!(
        received.headers.get("x-api-key").map(String::as_str),
        Some("s3cret value")
    );
    assert_tree(&received.spans, &p);

    // The same suite written to a file by `report --otlp` decodes to the same spans.
    let out = p.run(&["report", "--otlp", "suite.otlp.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("otlp:         suite.otlp.json"),
        "{}",
        stdout(&out)
    );
    let from_file = decode_file(&p.root().join("suite.otlp.json"));
    assert_tree(&from_file.spans, &p);
    let ids = |spans: &[DecodedSpan]| -> BTreeSet<String> {
        spans.iter().map(|s| s.span_id.clone()).collect()
    };
    assert_eq!(ids(&from_file.spans), ids(&received.spans));
}

#[test]
fn a_failed_export_is_said_with_its_target_and_keeps_the_exit_code() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write("a.test.toml", "[[steps]]\ninstruction = \"`false`\"\n");
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}/v1/traces");
    let out = p.run(&["start", "--otlp", &url]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the test failed: {}",
        stderr(&out)
    );
    let said = format!("the OpenTelemetry export to {url} failed");
    assert!(stderr(&out).contains(&said), "{}", stderr(&out));
    let out = p.run(&["report", "--otlp", &url]);
    assert_eq!(out.status.code(), Some(1), "report's code is the suite's");
    assert!(stderr(&out).contains(&said), "{}", stderr(&out));
    // `env`: the collector OTEL_EXPORTER_OTLP_ENDPOINT names, with `/v1/traces`.
    let out = p
        .supervisor()
        .args(["report", "--otlp", "env"])
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        )
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .output()
        .expect("run supervisor");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(&said), "{}", stderr(&out));
    let out = p.run(&["report", "--otlp", "no/such/dir/out.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("the OpenTelemetry export to no/such/dir/out.json failed"),
        "{}",
        stderr(&out)
    );
}

/// `TRACEPARENT=00-<trace>-<span>-01` (or the message's `traceparent=…`) in `text`: (trace, span).
fn traceparent_in(text: &str, key: &str) -> (String, String) {
    let at = text
        .find(&format!("{key}=00-"))
        .unwrap_or_else(|| panic!("no {key} in {text}"));
    let value: String = text[at + key.len() + 1..]
        .chars()
        .take_while(|c| c.is_ascii_hexdigit() || *c == '-')
        .collect();
    let parts: Vec<&str> = value.split('-').collect();
    assert_eq!(parts.len(), 4, "{value}");
    assert_eq!((parts[0], parts[3]), ("00", "01"), "{value}");
    assert_eq!((parts[1].len(), parts[2].len()), (32, 16), "{value}");
    (parts[1].to_string(), parts[2].to_string())
}

#[test]
fn each_step_runs_under_the_span_the_export_gives_it() {
    // A process per step (the shell provider): TRACEPARENT is the step's own span.
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "a.test.toml",
        "[[steps]]\ninstruction = \"`echo BUGATTI_LOG TRACEPARENT=$TRACEPARENT`\"\n[[steps]]\ninstruction = \"`echo BUGATTI_LOG TRACEPARENT=$TRACEPARENT`\"\n",
    );
    assert_eq!(p.start().status.code(), Some(0));
    let out = p.run(&["report", "--otlp", "out.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let spans = file_spans(&p.root().join("out.json"));
    let record = p.record_for("a.test.toml");
    let mut seen = BTreeSet::new();
    for step in &record.steps {
        let (trace, span) = traceparent_in(&step.logs.join("\n"), "TRACEPARENT");
        let exported = spans
            .iter()
            .find(|s| s.span_id == span)
            .unwrap_or_else(|| panic!("step {}'s TRACEPARENT span is not exported", step.step_id));
        assert_eq!(exported.trace_id, trace);
        assert!(
            exported
                .name
                .starts_with(&format!("step {}:", step.step_id)),
            "{exported:?}"
        );
        seen.insert(span);
    }
    assert_eq!(seen.len(), 2, "each step its own span");

    // A `command` agent lives across steps: it starts under the run's span, and each step
    // message names the step's.
    let p = Project::with_directive_agent("");
    p.write(
        "b.test.toml",
        "[[steps]]\ninstruction = \"field traceparent\\nenv TRACEPARENT\"\n",
    );
    assert_eq!(p.start().status.code(), Some(0));
    let out = p.run(&["report", "--otlp", "out.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let spans = file_spans(&p.root().join("out.json"));
    let record = p.record_for("b.test.toml");
    let (trace, span) = traceparent_in(&record.steps[0].logs.join("\n"), "traceparent");
    let step = spans
        .iter()
        .find(|s| s.span_id == span)
        .expect("the step's span");
    assert_eq!(step.trace_id, trace);
    assert!(step.name.starts_with("step 1:"), "{step:?}");
    let log =
        std::fs::read_to_string(Path::new(&record.identity.run_dir).join("transcripts/agent.log"))
            .expect("agent.log");
    let (trace, span) = traceparent_in(&log, "TRACEPARENT");
    let run = spans
        .iter()
        .find(|s| s.span_id == span)
        .expect("the run's span");
    assert_eq!(run.trace_id, trace);
    assert_eq!(step.parent_span_id.as_deref(), Some(run.span_id.as_str()));
}

#[test]
fn a_replayed_step_carries_its_decision_as_an_event_and_its_action_once() {
    let p = Project::with_directive_agent("");
    p.write(
        "c.test.toml",
        "[[steps]]\ninstruction = '''\nmcp exec_command {\"cmd\": \"echo hello-otlp\", \"yield_time_ms\": 5000}\nexpect hello-otlp\n'''\n",
    );
    // The agent's pass is recorded; the next suite replays it without the agent.
    assert_eq!(p.start().status.code(), Some(0));
    let out = p.run(&["report", "--otlp", "first.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(p.start().status.code(), Some(0));
    let out = p.run(&["report", "--otlp", "second.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let step_of = |spans: &[FileSpan]| -> (String, Vec<String>) {
        let step = spans
            .iter()
            .find(|s| s.name.starts_with("step 1:"))
            .expect("the step's span");
        let events = step.events.iter().map(|e| e.name.clone()).collect();
        (step.span_id.clone(), events)
    };
    let first = file_spans(&p.root().join("first.json"));
    let (_, events) = step_of(&first);
    assert!(
        events.contains(&"replay.recorded".to_string()),
        "{events:?}"
    );
    let second = file_spans(&p.root().join("second.json"));
    let (step, events) = step_of(&second);
    assert_eq!(events, ["replay.replayed"], "{second:?}");
    let actions: Vec<&FileSpan> = second
        .iter()
        .filter(|s| s.parent_span_id.as_deref() == Some(step.as_str()))
        .collect();
    assert_eq!(
        actions.len(),
        1,
        "the replayed console call is one action: {actions:?}"
    );
    assert!(actions[0].name.contains("echo hello-otlp"), "{actions:?}");
}

#[test]
fn a_suite_started_under_a_span_joins_its_trace_down_to_each_step() {
    // As a CI job traced with OpenTelemetry starts the supervisor.
    let (trace, job_span) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "a.test.toml",
        "[[steps]]\ninstruction = \"`echo BUGATTI_LOG TRACEPARENT=$TRACEPARENT`\"\n",
    );
    let out = p
        .supervisor()
        .arg("start")
        .env("TRACEPARENT", format!("00-{trace}-{job_span}-01"))
        .output()
        .expect("run supervisor");
    p.assert_nothing_survives();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // `report` runs later, without the variable: run.json kept the suite's parent.
    let out = p
        .supervisor()
        .args(["report", "--otlp", "out.json"])
        .env_remove("TRACEPARENT")
        .output()
        .expect("run supervisor");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let spans = file_spans(&p.root().join("out.json"));
    assert!(spans.iter().all(|s| s.trace_id == trace), "{spans:?}");
    let suite = spans
        .iter()
        .find(|s| s.name.starts_with("suite "))
        .expect("the suite's span");
    assert_eq!(suite.parent_span_id.as_deref(), Some(job_span));
    let record = p.record_for("a.test.toml");
    let (step_trace, step_span) = traceparent_in(&record.steps[0].logs.join("\n"), "TRACEPARENT");
    assert_eq!(step_trace, trace);
    assert!(
        spans
            .iter()
            .any(|s| s.span_id == step_span && s.name.starts_with("step 1:")),
        "{spans:?}"
    );
}
