//! `report.html`: one self-contained page per suite (docs/reports.md): inline CSS and JS, no network
//! (a Content-Security-Policy forbids every fetch but `data:` images), opens from disk or a CI
//! artifact, readable at phone width.
//!
//! The page is rendered on the server side (every fact is in the DOM with JS off); a little JS
//! adds the "failures only" filter and the deep links `#test=<file>&step=<id>`,
//! `#first-failure` and `#filter=failures`. Everything that came from a test, an agent or an
//! app is HTML-escaped; sizes are bounded (transcripts, log excerpts, inline screenshots) so a
//! suite of thousands of steps still makes a page a browser opens at once.

use crate::model::ids::{RunId, StepId};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

use crate::model::artifacts::{self, RunPaths};
use crate::model::outcome::StepStatus;
use crate::model::paths::normalize;
use crate::report::ground::confined::{self, Refused};
pub use crate::report::ground::html_escape::escape;
use crate::report::records::history::{run_cost, Comparison};
use crate::report::records::run_record::{RunRecord, StepRecord};
use crate::report::records::suite::{RootTestSummary, SuiteSummary};
use crate::report::renderers::html_assets::{CSS, JS};

mod step;
mod timeline;
mod why;

/// A step's transcript shown in the page, at most (failing steps; passing ones get a quarter).
pub const TRANSCRIPT_STEP_BYTES: usize = 16 * 1024;
/// All transcripts of the page together, at most; later ones become links to the file.
pub const TRANSCRIPT_TOTAL_BYTES: usize = 2 * 1024 * 1024;
/// Of that, what the transcripts of steps that passed may take: the ones that did not pass are
/// what a reader of a large report opens, so they keep the rest. Past the budget, a passing
/// step's transcript is in its run's `agent.log` (linked once per test).
pub const PASSED_TRANSCRIPTS_BYTES: usize = 256 * 1024;
/// A screenshot up to this size is inlined as a `data:` URI; a larger one is linked.
pub const INLINE_IMAGE_BYTES: u64 = 384 * 1024;
/// All inlined screenshots together, at most.
pub const INLINE_IMAGES_TOTAL: u64 = 3 * 1024 * 1024;
/// Lines of each harness command's log shown for a step that did not pass.
pub const EXCERPT_LINES: usize = 40;
const EXCERPT_BYTES: u64 = 16 * 1024;

/// What the page is made from.
pub struct HtmlInput<'a> {
    pub summary: &'a SuiteSummary,
    /// Every run of the suite (all attempts), found by run id.
    pub records: &'a [RunRecord],
    pub comparison: Option<&'a Comparison>,
    /// Where report.html is written: links to run files are relative to it.
    pub report_dir: &'a Path,
    /// Extra lines for the header ("merged from 2 suites: …").
    pub notes: &'a [String],
    /// Trends of this selection from history (docs/ci.md), when there is an earlier suite.
    pub trends: Option<&'a crate::report::records::trends::Trends>,
}

/// Percent-encodes a relative path or a fragment value for an `href`.
fn encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// `to` relative to directory `from` (both absolute), as a URL path. Both are resolved first
/// (`runs/x/../../y` is `y`): a suite's runs are often named from its folder as `../../runs/…`.
pub fn relative(from: &Path, to: &Path) -> String {
    let (from, to) = (normalize(from), normalize(to));
    let from: Vec<Component> = from.components().collect();
    let to_c: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to_c).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> =
        std::iter::repeat_n("..".to_string(), from.len() - common).collect();
    parts.extend(
        to_c[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    encode(&parts.join("/"))
}

/// Base64 (standard alphabet, padded) for `data:` URIs.
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn ms(ms: Option<u64>) -> String {
    match ms {
        Some(ms) if ms >= 60_000 => format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000),
        Some(ms) if ms >= 1000 => format!("{:.1}s", ms as f64 / 1000.0),
        Some(ms) => format!("{ms}ms"),
        None => "—".to_string(),
    }
}

fn step_passed(status: StepStatus) -> bool {
    matches!(
        status,
        StepStatus::Ok | StepStatus::Warn | StepStatus::Skipped
    )
}

/// Cuts `text` to about `max` bytes (UTF-8-safe), keeping the head and the tail.
fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let half = max / 2;
    let mut head = half;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - half;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n…{} bytes cut…\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// The agent transcript split per step (`### step N` headers, as the providers write them).
fn transcript_by_step(run_dir: &Path) -> HashMap<StepId, String> {
    let mut map: HashMap<StepId, String> = HashMap::new();
    let Ok(text) = confined::read(run_dir, artifacts::AGENT_LOG) else {
        return map;
    };
    let text = String::from_utf8_lossy(&text);
    let mut current: Option<StepId> = None;
    for line in text.split_inclusive('\n') {
        if let Some(n) = line
            .strip_prefix("### step ")
            .and_then(|r| r.trim().parse::<StepId>().ok())
        {
            current = Some(n);
            continue;
        }
        if let Some(n) = current {
            map.entry(n).or_default().push_str(line);
        }
    }
    map
}

/// The last `EXCERPT_LINES` lines of log `path` of the run in `run_dir` (read only inside it:
/// the path comes from run.json, see [`confined`]).
fn tail_lines(run_dir: &Path, path: &str) -> Result<String, Refused> {
    let io = |e: std::io::Error| Refused::Io(e.to_string());
    let mut file = confined::open_file(run_dir, path)?;
    let len = file.metadata().map_err(io)?.len();
    let start = len.saturating_sub(EXCERPT_BYTES);
    file.seek(SeekFrom::Start(start)).map_err(io)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io)?;
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(EXCERPT_LINES);
    let skip_partial = usize::from(start > 0 && from == 0);
    Ok(lines[from.max(skip_partial)..].join("\n"))
}

/// The harness log excerpt of a step that did not pass: `harness_log_excerpt` from run.json
/// when the run recorded one, else the last lines of each harness command's log.
fn excerpts(
    run_json: Option<&serde_json::Value>,
    record: &RunRecord,
    run_dir: &Path,
    step: &StepRecord,
) -> Vec<(String, String)> {
    let recorded = run_json
        .and_then(|v| v["steps"].as_array())
        .and_then(|steps| {
            steps
                .iter()
                .find(|s| s["step_id"].as_u64() == Some(u64::from(step.step_id.get())))
        })
        .map(|s| &s["harness_log_excerpt"]);
    match recorded {
        Some(serde_json::Value::String(text)) if !text.is_empty() => {
            return vec![("harness log excerpt".to_string(), text.clone())]
        }
        Some(serde_json::Value::Object(map)) if !map.is_empty() => {
            return map
                .iter()
                .map(|(name, v)| {
                    let text = match v {
                        serde_json::Value::String(s) => s.clone(),
                        serde_json::Value::Array(a) => a
                            .iter()
                            .map(|l| l.as_str().map_or_else(|| l.to_string(), str::to_string))
                            .collect::<Vec<_>>()
                            .join("\n"),
                        other => other.to_string(),
                    };
                    (format!("{name} (while the step ran)"), text)
                })
                .collect()
        }
        _ => {}
    }
    record
        .commands
        .iter()
        .filter_map(|c| match tail_lines(run_dir, &c.log) {
            Ok(text) => (!text.trim().is_empty()).then(|| {
                (
                    format!("{} (last {EXCERPT_LINES} lines of {})", c.name, c.log),
                    text,
                )
            }),
            Err(Refused::Missing) => None,
            Err(why) => Some((
                format!("{} ({} not read: {why})", c.name, c.log),
                String::new(),
            )),
        })
        .collect()
}

fn image_mime(path: &str) -> Option<&'static str> {
    let lower = path.to_ascii_lowercase();
    [
        (".png", "image/png"),
        (".jpg", "image/jpeg"),
        (".jpeg", "image/jpeg"),
        (".gif", "image/gif"),
        (".webp", "image/webp"),
    ]
    .iter()
    .find(|(ext, _)| lower.ends_with(ext))
    .map(|(_, m)| *m)
}

/// An evidence path is relative to its run directory and may not leave it.
fn safe_relative(path: &str) -> bool {
    let p = Path::new(path);
    !path.contains("://")
        && !p.is_absolute()
        && p.components().all(|c| matches!(c, Component::Normal(_)))
}

struct ReportPage<'a> {
    input: &'a HtmlInput<'a>,
    out: String,
    transcript_budget: usize,
    passed_transcript_budget: usize,
    image_budget: u64,
    first_failure: Option<String>,
    /// Each shown run's timeline, by run id (docs/reports.md).
    lanes: HashMap<RunId, crate::report::records::timeline::Lane>,
    /// Screenshots already inlined in a film strip (`run_id/path`): a step links to them.
    in_film: HashSet<String>,
    /// Bytes the timelines may still take, and the prompts of "Copy as prompt": a suite of
    /// thousands of tests still makes a page under 5 MiB (docs/reports.md).
    timeline_budget: usize,
    prompt_budget: usize,
    /// Every step gets an id (the bars link to it, scripts off too); past [`BIG_SUITE_STEPS`]
    /// only the failing ones, and the script finds the others.
    all_step_ids: bool,
}

/// Past this many steps, the page spends less on what it can cut: timelines, prompts, ids.
pub const BIG_SUITE_STEPS: usize = 3000;
/// What the timelines may take: of a suite, of a big one.
pub const TIMELINE_BYTES: usize = 1024 * 1024;
pub const BIG_TIMELINE_BYTES: usize = 24 * 1024;
/// What the "Copy as prompt" texts may take: of a suite, of a big one.
pub const PROMPT_BYTES: usize = 256 * 1024;
pub const BIG_PROMPT_BYTES: usize = 12 * 1024;

impl<'a> ReportPage<'a> {
    fn w(&mut self, s: &str) {
        self.out.push_str(s);
    }

    fn header(&mut self) {
        let s = self.input.summary;
        let t = &s.totals;
        let title = format!("Bugatti suite {}", s.suite_id);
        let _ = write!(
            self.out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
             <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\
             <title>{}</title><style>{CSS}</style></head><body data-filter=\"all\">\n",
            escape(&title)
        );
        let failed_total = t.failed + t.error + t.interrupted + t.not_run;
        let (verdict, headline) = if s.passed() {
            ("passed", "PASSED")
        } else if s.failed_by_agent_only() {
            ("error", "AGENT ERROR (not the app)")
        } else {
            ("failed", "FAILED")
        };
        let cost: Option<f64> = {
            let costs: Vec<f64> = self.input.records.iter().filter_map(run_cost).collect();
            (!costs.is_empty()).then(|| costs.iter().sum())
        };
        let _ = write!(
            self.out,
            "<h1><span class=\"badge b-{verdict}\">{headline}</span> {}</h1>\n<div class=\"meta\">started {} · <span id=\"commit\">commit {}</span> · duration {}{}</div>\n",
            escape(&title),
            s.started_at.format("%Y-%m-%d %H:%M:%S UTC"),
            escape(&s.revision_text()),
            ms(Some(s.duration_ms)),
            cost.map_or(String::new(), |c| format!(" · cost ${c:.4}")),
        );
        let _ = writeln!(
            self.out,
            "<div class=\"chips\" id=\"totals\"><span>{} root tests</span><span class=\"{}\">{} passed</span><span>{} warned</span><span class=\"{}\">{} failed</span><span>{} error</span><span>{} interrupted</span><span>{} not run</span><span>{} flaky</span></div>",
            t.total,
            if t.passed > 0 { "good" } else { "" },
            t.passed,
            t.warned,
            if failed_total > 0 { "bad" } else { "" },
            t.failed,
            t.error,
            t.interrupted,
            t.not_run,
            t.flaky
        );
        for note in self.input.notes {
            let _ = writeln!(self.out, "<div class=\"meta\">{}</div>", escape(note));
        }
        if let Some(c) = self.input.comparison {
            let _ = write!(
                self.out,
                "<div class=\"changes\" id=\"changes\"><b>{}</b><ul>",
                escape(&c.heading())
            );
            for line in c.lines() {
                let class = if line.starts_with("new failure") {
                    "new"
                } else if line.starts_with("fixed") {
                    "fixed"
                } else {
                    ""
                };
                let _ = write!(self.out, "<li class=\"{class}\">{}</li>", escape(&line));
            }
            self.w("</ul></div>\n");
        } else {
            self.w("<div class=\"changes meta\" id=\"changes\">No earlier suite of the same selection to compare with.</div>\n");
        }
        // The first failure is a plain link to its step: one click, scripts on or off.
        let first = match &self.first_failure {
            Some(id) => format!(" · <a id=\"to-first-failure\" href=\"#{id}\">first failure</a>"),
            None => String::new(),
        };
        let _ = writeln!(
            self.out,
            "<div class=\"controls\"><label><input type=\"checkbox\" id=\"only-failures\"> failures only</label>{first} · <a href=\"#timeline\">timeline</a></div>"
        );
    }

    fn table(&mut self, records: &HashMap<&str, &RunRecord>) {
        let s = self.input.summary;
        self.w("<h2>Root tests</h2><div class=\"tablewrap\"><table id=\"tests\"><tr><th>test</th><th>outcome</th><th>duration</th><th class=\"hide-narrow\">attempts</th><th>reason</th></tr>\n");
        for test in &s.tests {
            let bad = !test.outcome.is_pass(s.strict_warnings);
            let _ = writeln!(
                self.out,
                "<tr class=\"row{}\"><td><a href=\"#test={}\">{}</a>{}</td><td><span class=\"badge b-{}\">{}</span></td><td>{}</td><td class=\"hide-narrow\">{}</td><td>{}</td></tr>",
                if bad { " bad" } else { "" },
                encode(&test.test_file),
                escape(&test.test_file),
                match (test.flaky, test.quarantined) {
                    (true, true) => " <b>flaky</b> <b>quarantined</b>",
                    (true, false) => " <b>flaky</b>",
                    (false, true) => " <b>quarantined</b>",
                    (false, false) => "",
                },
                test.outcome.as_str(),
                test.badge_text(),
                ms(Some(test.duration_ms)),
                test.attempts,
                escape(&bounded(
                    &s.failure_reason(test)
                        .filter(|why| why.starts_with("flaky"))
                        .or_else(|| test.message.clone())
                        .unwrap_or_default(),
                    600
                )),
            );
            let _ = records;
        }
        let (badge, why) = match &s.harness_error {
            Some(reason) => (
                "<span class=\"badge b-error\">error</span>",
                format!("the suite's harness failed: {reason}"),
            ),
            None => (
                "<span class=\"badge b-not_run\">not run</span>",
                s.not_run_reason
                    .clone()
                    .unwrap_or_else(|| "the suite stopped before this test started".to_string()),
            ),
        };
        for file in &s.not_run {
            let why = s.not_run_reasons.get(file).unwrap_or(&why);
            let _ = writeln!(
                self.out,
                "<tr class=\"row bad\"><td>{}</td><td>{badge}</td><td>—</td><td class=\"hide-narrow\">0</td><td>{}</td></tr>",
                escape(file),
                escape(why)
            );
        }
        self.w("</table></div>\n");
        self.agent_errors(records);
        self.quarantined();
    }

    /// Root tests ended by an agent fault, apart (docs/providers.md): the agent, not the app,
    /// failed, and one line says what to do about it.
    fn agent_errors(&mut self, records: &HashMap<&str, &RunRecord>) {
        let s = self.input.summary;
        let hit: Vec<_> = s.tests.iter().filter(|t| t.agent_fault.is_some()).collect();
        if hit.is_empty() {
            return;
        }
        self.w("<h2 id=\"agent-errors\">Agent errors</h2><div class=\"meta\">The agent, not the app, failed: these tests say nothing of the app.</div><ul>");
        for test in hit {
            let fault = records
                .get(test.run_id.as_str())
                .and_then(|r| r.agent_fault.as_ref());
            let kind = test.agent_fault.map_or("", |k| k.as_str());
            let fix = fault.map_or(String::new(), |f| format!(" — to fix: {}", f.fix));
            let _ = write!(
                self.out,
                "<li class=\"agent-error\"><a href=\"#test={}\">{}</a> <span class=\"badge b-error\">agent error: {}</span>{}</li>",
                encode(&test.test_file),
                escape(&test.test_file),
                escape(kind),
                escape(&fix)
            );
        }
        self.w("</ul>\n");
    }

    /// Quarantined tests listed apart: they ran, and their outcome did not decide the suite's.
    fn quarantined(&mut self) {
        let s = self.input.summary;
        let quarantined: Vec<_> = s.tests.iter().filter(|t| t.quarantined).collect();
        if quarantined.is_empty() {
            return;
        }
        self.w("<h2 id=\"quarantined\">Quarantined</h2><div class=\"meta\">Run and reported; their outcome does not decide the suite's.</div><ul>");
        for test in quarantined {
            let _ = write!(
                self.out,
                "<li><a href=\"#test={}\">{}</a> <span class=\"badge b-{}\">{}</span>{}</li>",
                encode(&test.test_file),
                escape(&test.test_file),
                test.outcome.as_str(),
                test.outcome.as_str(),
                if test.flaky { " flaky" } else { "" }
            );
        }
        self.w("</ul>\n");
    }

    fn test(&mut self, index: usize, test: &RootTestSummary, records: &HashMap<&str, &RunRecord>) {
        let s = self.input.summary;
        let bad = !test.outcome.is_pass(s.strict_warnings);
        let _ = writeln!(
            self.out,
            "<details class=\"test{}\" id=\"t{index}\" data-file=\"{}\"{}><summary><span class=\"badge b-{}\">{}</span> <b>{}</b> <span class=\"meta\">{} · {} · attempt {}{}</span></summary><div class=\"body\">",
            if bad { " bad" } else { "" },
            escape(&test.test_file),
            if bad { " open" } else { "" },
            test.outcome.as_str(),
            test.badge_text(),
            escape(&test.test_file),
            escape(&test.test_name),
            ms(Some(test.duration_ms)),
            test.attempts,
            match (test.flaky, test.quarantined) {
                (true, true) => " · flaky · quarantined",
                (true, false) => " · flaky",
                (false, true) => " · quarantined",
                (false, false) => "",
            },
        );
        if let Some(st) = s.stability.iter().find(|st| st.test_file == test.test_file) {
            self.w(&crate::report::records::stability::html_block(st));
        }
        for earlier in &test.history[..test.history.len().saturating_sub(1)] {
            let _ = writeln!(
                self.out,
                "<div class=\"meta\">attempt {}: <span class=\"badge b-{}\">{}</span> {} — {}</div>",
                earlier.attempt,
                earlier.outcome.as_str(),
                earlier.outcome.as_str(),
                ms(Some(earlier.duration_ms)),
                escape(earlier.message.as_deref().unwrap_or(""))
            );
        }
        let Some(record) = records.get(test.run_id.as_str()).copied() else {
            let _ = writeln!(
                self.out,
                "<div class=\"msg\">{}</div><div class=\"meta\">run {} (its run.json was not found)</div></div></details>",
                escape(test.message.as_deref().unwrap_or("")),
                escape(test.run_id.as_str())
            );
            return;
        };
        let run_dir = PathBuf::from(&record.identity.run_dir);
        let run = RunPaths::new(&run_dir);
        let report_md = relative(self.input.report_dir, &run.report_md());
        let _ = writeln!(
            self.out,
            "<div class=\"meta\">run <code>{}</code> · provider {} · <a href=\"{report_md}\">report.md</a> · <a href=\"{}\">agent.log</a></div>",
            escape(record.identity.run_id.as_str()),
            escape(record.identity.provider.as_str()),
            relative(self.input.report_dir, &run.agent_log()),
        );
        if let Some(cost) = record.cost_usd {
            let _ = writeln!(
                self.out,
                "<div class=\"meta\">agent cost ${cost:.4} · {} turns · {} input / {} output tokens</div>",
                record.agent_turns, record.input_tokens, record.output_tokens
            );
        }
        for restart in &record.agent_restarts {
            let _ = writeln!(
                self.out,
                "<div class=\"msg\">agent restarted during step {}: it {}</div>",
                restart.step_id,
                escape(&restart.reason)
            );
        }
        if let Some(err) = record
            .error
            .as_deref()
            .filter(|_| record.failing_step().is_none())
        {
            let _ = writeln!(
                self.out,
                "<div class=\"msg\" style=\"color:var(--bad)\">{}</div>",
                escape(&bounded(err, 4000))
            );
        }
        self.test_timeline(index, record, &run_dir);
        let transcripts = transcript_by_step(&run_dir);
        // Only a step that did not pass quotes run.json (its harness log excerpt): the run.json
        // of a run whose steps all passed is not read back a second time (a night's suite end
        // read and parsed every one of them for nothing).
        let run_json: Option<serde_json::Value> = record
            .steps
            .iter()
            .any(|step| !step_passed(step.status))
            .then(|| confined::read(&run_dir, artifacts::RUN_JSON).ok())
            .flatten()
            .and_then(|b| serde_json::from_slice(&b).ok());
        for step in &record.steps {
            self.step(
                index,
                record,
                &run_dir,
                step,
                &transcripts,
                run_json.as_ref(),
            );
        }
        self.w("</div></details>\n");
    }
}

/// The whole page (the caller redacts it).
pub fn render(input: &HtmlInput<'_>) -> String {
    let records: HashMap<&str, &RunRecord> = input
        .records
        .iter()
        .map(|r| (r.identity.run_id.as_str(), r))
        .collect();
    let s = input.summary;
    // Failing tests first: the morning reader opens the page for them.
    let mut order: Vec<usize> = (0..s.tests.len()).collect();
    order.sort_by_key(|i| s.tests[*i].outcome.is_pass(s.strict_warnings));
    let shown: Vec<(usize, &RootTestSummary, &RunRecord)> = (0..s.tests.len())
        .filter_map(|i| {
            let test = &s.tests[i];
            Some((i + 1, test, *records.get(test.run_id.as_str())?))
        })
        .collect();
    let lanes = shown
        .iter()
        .map(|(_, _, r)| {
            (
                r.identity.run_id.clone(),
                crate::report::records::timeline::lane(r),
            )
        })
        .collect();
    let first_failure = order
        .iter()
        .map(|&i| (i, &s.tests[i]))
        .filter(|(_, t)| !t.outcome.is_pass(s.strict_warnings))
        .map(|(i, t)| {
            let step = records
                .get(t.run_id.as_str())
                .and_then(|r| r.steps.iter().find(|st| st.status.is_failure()));
            match step {
                Some(st) => format!("t{}-s{}", i + 1, st.step_id),
                None => format!("t{}", i + 1),
            }
        })
        .next();
    let steps: usize = shown.iter().map(|(_, _, r)| r.steps.len()).sum();
    let big = steps > BIG_SUITE_STEPS;
    let mut page = ReportPage {
        input,
        out: String::with_capacity(64 * 1024),
        transcript_budget: TRANSCRIPT_TOTAL_BYTES,
        passed_transcript_budget: PASSED_TRANSCRIPTS_BYTES,
        image_budget: INLINE_IMAGES_TOTAL,
        first_failure,
        lanes,
        in_film: HashSet::new(),
        timeline_budget: if big {
            BIG_TIMELINE_BYTES
        } else {
            TIMELINE_BYTES
        },
        prompt_budget: if big { BIG_PROMPT_BYTES } else { PROMPT_BYTES },
        all_step_ids: !big,
    };
    page.header();
    page.failure_groups(&order, &records);
    page.table(&records);
    page.suite_timeline(&shown);
    if let Some(trends) = input.trends {
        page.w(&trends.html());
    }
    page.w("<h2>Steps</h2>\n");
    for i in order {
        page.test(i + 1, &s.tests[i], &records);
    }
    let _ = writeln!(
        page.out,
        "<div class=\"meta\" id=\"first-failure-id\" data-id=\"{}\"></div><script>{JS}</script></body></html>",
        page.first_failure.as_deref().unwrap_or("")
    );
    page.out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// WCAG 2 contrast ratio of white text on `#rrggbb`.
    fn contrast_with_white(hex: &str) -> f64 {
        let channel = |i: usize| {
            let c = f64::from(u8::from_str_radix(&hex[i..i + 2], 16).expect("hex")) / 255.0;
            if c <= 0.03928 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        let l = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
        1.05 / (l + 0.05)
    }

    #[test]
    fn every_badge_colour_reads_white_text_at_wcag_aa() {
        // Badges are white bold 12 px text: WCAG AA asks 4.5:1 for text that small.
        let vars: std::collections::BTreeMap<&str, &str> = CSS
            .split(";")
            .filter_map(|d| d.trim().trim_start_matches(":root{").split_once(":#"))
            .filter(|(k, _)| k.starts_with("--"))
            .map(|(k, v)| (k, &v[..6]))
            .collect();
        let mut checked = 0;
        for rule in CSS
            .split('}')
            .filter(|r| r.contains(".b-") || r.contains(".badge{"))
        {
            let Some(bg) = rule.split("background:").nth(1) else {
                continue;
            };
            let hex = match bg.strip_prefix("var(") {
                Some(name) => format!("#{}", vars[name.trim_end_matches(')')]),
                None => bg.to_string(),
            };
            let ratio = contrast_with_white(&hex);
            assert!(ratio >= 4.5, "{rule}: {hex} gives {ratio:.2}:1");
            checked += 1;
        }
        assert!(checked >= 4, "the badge rules were found ({checked})");
    }

    #[test]
    fn escapes_and_encodes() {
        assert_eq!(
            escape("<script>\"a\" & 'b'</script>"),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;"
        );
        assert_eq!(escape("a\u{1b}[31m"), "a\\u{1b}[31m");
        assert_eq!(base64(b"hello!?"), "aGVsbG8hPw==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(
            relative(
                Path::new("/p/.bugatti/suites/s1"),
                Path::new("/p/.bugatti/runs/r 1/report.md")
            ),
            "../../runs/r%201/report.md"
        );
        assert!(!safe_relative("../x.png"));
        assert!(!safe_relative("/etc/passwd"));
        assert!(!safe_relative("http://x/y.png"));
        assert!(safe_relative("screenshots/a.png"));
        let b = bounded(&"é".repeat(100), 21);
        assert!(b.contains("bytes cut"), "{b}");
    }
}
