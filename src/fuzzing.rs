//! The bodies of the `cargo fuzz` targets (`fuzz/fuzz_targets/*.rs`), as plain functions so the
//! property tests (`tests/props/`) run the very same checks on stable Rust.
//!
//! Each takes arbitrary bytes, feeds them to one reader of user or agent input, and panics only
//! when an invariant breaks: a panic inside the product, an error that names no file, a plan whose
//! step ids are not `1..=n`, a scanner that disagrees with the plain definition, and so on.
//! Nothing here is used by the supervisor itself.

use crate::model::ids::StepId;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::model::config::parse_config;
use crate::model::diagnostics::Problem;
use crate::model::layers::{EffectiveConfig, Layer};
use crate::model::markers::{parse_line, Marker, MarkerScanner, MAX_MARKER_LINE};
use crate::model::plan::{expand, PlannedStep, TestFiles, MAX_PLAN_STEPS};
use crate::model::redact::Secrets;
use crate::model::substitute::{check_known, references, session_vars, substitute, SubstError};
use crate::model::test_file::{parse_test_file, test_name};
use crate::providers::claude_code::ClaudeCode;
use crate::providers::reply::ReplyCollector;
use crate::providers::{AgentContext, SessionFacts, StepVerdict};

/// A problem from reading `file` must say so, and its position must be inside `text`.
fn check_problem(problem: &Problem, file: &Path, text: &str) {
    assert_eq!(problem.file.as_deref(), Some(file), "{problem:?}");
    assert!(!problem.message.is_empty(), "{problem:?}");
    if let Some(at) = &problem.location {
        assert_eq!(at.file, file);
        assert!(
            at.line >= 1 && at.line <= text.split('\n').count(),
            "{at:?}"
        );
        assert!(at.col >= 1 && at.width >= 1, "{at:?}");
    }
    let shown = problem.to_string();
    assert!(shown.contains(&file.display().to_string()), "{shown}");
}

/// Config parsing, then layering and validation of what parsed.
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let file = Path::new("/project/bugatti.config.toml");
    match parse_config(file, &text) {
        Err(problem) => check_problem(&problem, file, &text),
        Ok(cfg) => {
            let mut effective = EffectiveConfig::default();
            let mut problems = effective.apply_file(&cfg, file, Layer::Project, &|_| None);
            problems.extend(effective.validate());
            for p in problems {
                assert!(!p.message.is_empty(), "{p:?}");
            }
            let _ = effective.rows();
        }
    }
}

/// Test-file parsing, and each step's kind.
pub fn test_file(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let file = Path::new("/project/tests/fuzz.test.toml");
    match parse_test_file(file, &text) {
        Err(problem) => check_problem(&problem, file, &text),
        Ok(parsed) => {
            assert!(!test_name(&parsed, file).is_empty());
            for step in &parsed.steps {
                assert!(step.span().end <= text.len());
                let _ = step.get_ref().kind();
            }
        }
    }
}

/// The files a fuzzed plan is spread over, in the order of the `\0`-separated parts of the input.
pub const PLAN_FILES: [&str; 4] = [
    "root.test.toml",
    "inc/a.test.toml",
    "inc/_b.test.toml",
    "c.test.toml",
];

/// What one expansion gave: the steps and the rendered problems.
pub type Expansion = (Vec<PlannedStep>, Vec<String>);

/// Expands `root` in a fresh cache; the plan's own invariants are checked here.
pub fn expand_checked(project: &Path, root: &Path) -> Expansion {
    let mut files = TestFiles::default();
    let (steps, problems) = expand(project, root, &mut files);
    assert!(steps.len() <= MAX_PLAN_STEPS, "{} steps", steps.len());
    let ids: Vec<StepId> = steps.iter().map(|s| s.step_id).collect();
    let expected: Vec<StepId> = (0..steps.len()).map(StepId::from_index).collect();
    assert_eq!(ids, expected, "step ids");
    for s in &steps {
        assert!(s.source_file.is_relative(), "{s:?}");
        assert!(!s.source_file.starts_with(".."), "{s:?}");
        assert!(project.join(&s.source_file).is_file(), "{s:?}");
        let _ = s.provenance();
    }
    let mut shown = Vec::new();
    for p in files.problems.iter().chain(problems.iter()) {
        assert!(p.file.is_some(), "a plan problem names its file: {p:?}");
        assert!(!p.message.is_empty());
        shown.push(p.to_string());
    }
    (steps, shown)
}

/// Plan expansion over up to four files written from the input into a fresh project directory;
/// expanding twice gives the same plan and the same problems.
pub fn plan(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let Ok(project) = dir.path().canonicalize() else {
        return;
    };
    if std::fs::create_dir_all(project.join("inc")).is_err() {
        return;
    }
    for (part, name) in data.split(|&b| b == 0).zip(PLAN_FILES) {
        if std::fs::write(project.join(name), part).is_err() {
            return;
        }
    }
    let root = project.join(PLAN_FILES[0]);
    let first = expand_checked(&project, &root);
    let again = expand_checked(&project, &root);
    assert_eq!(first, again, "expansion is deterministic");
}

/// Puts `text` through substitution unchanged: every `${` is written `$${`.
pub fn escape(text: &str) -> String {
    text.replace("${", "$${")
}

/// The variables the substitution target knows.
pub fn fuzz_vars() -> BTreeMap<String, String> {
    [("A", "1"), ("B_2", "${A}"), ("EMPTY", ""), ("_x", "$")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Substitution, reference listing and the check-time validation agree with each other; an
/// escaped text comes back unchanged; `[env]`-style resolution never panics.
pub fn substitution(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let vars = fuzz_vars();
    let known = vars.keys().cloned().collect();
    let subst = substitute(&text, &vars);
    let refs = references(&text);
    match (&subst, &refs) {
        (Ok(_), Ok(names)) => assert!(names.iter().all(|n| vars.contains_key(n))),
        (Err(SubstError::Unknown { name }), Ok(names)) => {
            assert!(!vars.contains_key(name));
            let first_unknown = names.iter().find(|n| !vars.contains_key(*n));
            assert_eq!(first_unknown, Some(name));
        }
        (Err(e), Err(f)) => assert_eq!(e, f),
        (s, r) => panic!("substitute gave {s:?} but references gave {r:?}"),
    }
    assert_eq!(subst.is_ok(), check_known(&text, &known).is_ok());
    assert_eq!(
        substitute(&escape(&text), &BTreeMap::new()),
        Ok(text.to_string())
    );
    // The text as an [env] value next to the fixed ones: resolved, or a clear error.
    let mut env = vars.clone();
    env.insert("FUZZ".into(), text.to_string());
    match session_vars(&BTreeMap::new(), &env) {
        Ok(out) => assert_eq!(out.len(), env.len()),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

/// The plain definition the streaming scanner must match: split on `\n`, keep at most
/// [`MAX_MARKER_LINE`] bytes of a line, decode lossily, drop a trailing `\r`, read the line.
pub fn reference_markers(bytes: &[u8]) -> Vec<Marker> {
    bytes
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let line = &line[..line.len().min(MAX_MARKER_LINE)];
            let text = String::from_utf8_lossy(line);
            parse_line(text.strip_suffix('\r').unwrap_or(&text))
        })
        .collect()
}

/// Feeds `bytes` cut at `cuts` (positions, any order, clamped) to one scanner.
pub fn scan_chunked(bytes: &[u8], cuts: &[usize]) -> (Vec<Marker>, MarkerScanner) {
    let mut points: Vec<usize> = cuts.iter().map(|&c| c.min(bytes.len())).collect();
    points.sort_unstable();
    let mut scanner = MarkerScanner::new();
    let mut out = Vec::new();
    let mut start = 0;
    for p in points {
        scanner.push(&bytes[start..p], &mut out);
        start = p;
    }
    scanner.push(&bytes[start..], &mut out);
    scanner.finish(&mut out);
    (out, scanner)
}

/// The marker scanner on arbitrary bytes cut into chunks where the input's first bytes say:
/// the same markers as the plain definition, the last result deciding, every byte counted.
pub fn markers(data: &[u8]) {
    let (head, body) = data.split_at(data.len().min(8));
    // Each head byte cuts the body somewhere (scaled so cuts fall all over it).
    let cuts: Vec<usize> = head
        .iter()
        .map(|&b| usize::from(b) * body.len() / 255)
        .collect();
    let (out, scanner) = scan_chunked(body, &cuts);
    assert_eq!(out, reference_markers(body));
    let last = out.iter().rev().find_map(|m| match m {
        Marker::Result(r) => Some(r),
        _ => None,
    });
    assert_eq!(scanner.last_result(), last);
    assert_eq!(scanner.bytes_seen(), body.len() as u64);
    let (byte_by_byte, _) = scan_chunked(body, &(0..body.len()).collect::<Vec<_>>());
    assert_eq!(byte_by_byte, out);
}

/// What the Claude Code stream reader made of some output lines.
#[derive(Debug)]
pub struct StreamReading {
    /// Lines handed to the reader, up to and including the one that ended the turn.
    pub lines_read: usize,
    /// The turn's verdict, once a `result` event was read.
    pub verdict: Option<StepVerdict>,
}

/// Reads `data` as Claude Code's stdout, line by line as the provider does, until a `result`
/// event ends the turn. No process, no transcripts.
pub fn read_stream(data: &[u8]) -> StreamReading {
    let (events, _receiver) = tokio::sync::mpsc::unbounded_channel();
    let secrets = Arc::new(Secrets::new(Vec::<(String, String)>::new()));
    let facts = SessionFacts {
        run_id: "fuzz".into(),
        session_id: "fuzz".into(),
        suite_id: "fuzz".into(),
        traceparent: None,
        test_name: "fuzz".into(),
        test_file: PathBuf::from("fuzz.test.toml"),
        project_root: PathBuf::from("/nonexistent"),
        run_dir: PathBuf::from("/nonexistent/run"),
        workdir: PathBuf::from("/nonexistent/work"),
        env: Vec::new(),
        secrets: secrets.clone(),
        max_log_bytes: crate::process::log_limit::DEFAULT_MAX_LOG_BYTES,
        console: None,
        mcp: Default::default(),
    };
    let mut reader = ClaudeCode::new(AgentContext {
        spec: crate::providers::claude_code::spec(),
        facts,
        events: events.clone(),
    });
    let mut collector = ReplyCollector::new(StepId::FIRST, events, secrets);
    let mut lines_read = 0;
    for line in data.split_inclusive(|&b| b == b'\n') {
        lines_read += 1;
        if let Some(verdict) = reader.handle_line(line, &mut collector, StepId::FIRST) {
            return StreamReading {
                lines_read,
                verdict: Some(verdict),
            };
        }
    }
    StreamReading {
        lines_read,
        verdict: None,
    }
}

/// The line is a JSON `result` event: what ends a turn here. (A reply also ends at an API retry
/// of a refused key, an `init` naming a rejected MCP server, or `session_state_changed` `idle`
/// after a result; these properties generate none of them.)
pub fn is_result_event(line: &[u8]) -> bool {
    let text = String::from_utf8_lossy(line);
    serde_json::from_str::<serde_json::Value>(text.trim())
        .map(|v| v["type"] == "result")
        .unwrap_or(false)
}

/// The stream-json reader on arbitrary output: only a `result` event ends the turn, and its
/// verdict follows `is_error` and the result text.
pub fn stream_json(data: &[u8]) {
    let reading = read_stream(data);
    let lines: Vec<&[u8]> = data.split_inclusive(|&b| b == b'\n').collect();
    let before = &lines[..reading.lines_read.saturating_sub(1).min(lines.len())];
    assert!(!before.iter().any(|l| is_result_event(l)));
    match reading.verdict {
        None => assert!(!lines.iter().any(|l| is_result_event(l))),
        Some(verdict) => {
            let last = lines[reading.lines_read - 1];
            assert!(is_result_event(last));
            let text = String::from_utf8_lossy(last);
            let event: serde_json::Value =
                serde_json::from_str(text.trim()).unwrap_or(serde_json::Value::Null);
            let usage = verdict.usage.as_ref().map(|u| u.step_cost_usd);
            assert!(usage.is_some_and(|c| c >= 0.0), "{verdict:?}");
            // A failed turn is never a pass: a step error, or (the CLI's own API failure) an
            // agent error.
            if event["is_error"] == true {
                assert!(matches!(
                    verdict.status,
                    crate::model::outcome::StepStatus::Error
                        | crate::model::outcome::StepStatus::AgentError
                        | crate::model::outcome::StepStatus::OverBudget
                ));
            }
        }
    }
}
