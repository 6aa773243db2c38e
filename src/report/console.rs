//! The console: what a person (or a CI log) sees while the suite runs.
//!
//! Off a terminal, with `NO_COLOR` or in CI ([`ConsoleMode::Plain`]): one line per event, no colour,
//! no redraws — setup status, step start and result, `LOG ........` lines. On a terminal
//! ([`ConsoleMode::Live`]): an indicatif view with one line per running session showing its current
//! step; results worth reading are printed above it. Both end with one line per root test (outcome,
//! run id, report path) and an aggregate summary. Every line passes through redaction.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::model::outcome::{RunOutcome, StepStatus, TeardownState};
use crate::report::events::{summarize_instruction, CheckpointState, Event, EventKind, SetupState};
use crate::report::printable::{escape_controls, Newlines};
use crate::report::run_record::RunRecord;
use crate::report::scrub::Redactor;
use crate::report::suite::SuiteSummary;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsoleMode {
    /// One plain line per event.
    Plain,
    /// A live view of running sessions.
    Live,
}

impl ConsoleMode {
    /// Live only on a terminal stdout, without `NO_COLOR` and outside CI.
    pub fn detect() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
        let dumb = std::env::var_os("TERM").is_some_and(|v| v == "dumb");
        if std::io::stdout().is_terminal() && !no_color && !ci && !dumb {
            Self::Live
        } else {
            Self::Plain
        }
    }
}

/// The console's verbosity is the command line's (one type, in `model::options`).
pub use crate::model::options::Verbosity;

struct LiveView {
    multi: MultiProgress,
    bars: HashMap<String, ProgressBar>,
}

/// Where console lines go.
pub struct Console {
    verbosity: Verbosity,
    out: Box<dyn Write + Send>,
    live: Option<LiveView>,
    labels: HashMap<String, String>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console")
            .field("verbosity", &self.verbosity)
            .field("live", &self.live.is_some())
            .finish()
    }
}

/// A short, unique-enough label for a run: the test file's stem and the end of the run id
/// (two parallel runs of one test must be told apart).
pub fn run_label(test_file: &str, run_id: &str) -> String {
    let name = test_file.rsplit('/').next().unwrap_or(test_file);
    let stem = name.strip_suffix(".test.toml").unwrap_or(name);
    let tail: String = {
        let chars: Vec<char> = run_id.chars().collect();
        chars[chars.len().saturating_sub(6)..].iter().collect()
    };
    format!("{stem} {tail}")
}

fn secs(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

fn outcome_word(outcome: RunOutcome) -> &'static str {
    match outcome {
        RunOutcome::Passed => "PASSED",
        RunOutcome::Warned => "WARNED",
        RunOutcome::Failed => "FAILED",
        RunOutcome::Error => "ERROR",
        RunOutcome::Interrupted => "INTERRUPTED",
    }
}

fn step_word(status: StepStatus) -> &'static str {
    match status {
        StepStatus::Ok => "OK",
        StepStatus::Warn => "WARN",
        StepStatus::Error => "ERROR",
        StepStatus::ProtocolError => "PROTOCOL ERROR",
        StepStatus::Timeout => "TIMEOUT",
        StepStatus::Skipped => "SKIPPED",
        StepStatus::Interrupted => "INTERRUPTED",
        StepStatus::NotRun => "NOT RUN",
    }
}

/// One line of a run event, and whether it is worth printing at `Normal` verbosity (`None`: not
/// printed at all by the plain console).
fn event_line(kind: &EventKind) -> Option<(String, Verbosity)> {
    use Verbosity::{Normal, Verbose};
    let line = match kind {
        EventKind::SuiteStarted {
            suite_id,
            root_tests,
            jobs,
        } => (
            format!("Running {root_tests} root tests, {jobs} at once (suite {suite_id})"),
            Normal,
        ),
        EventKind::SuiteFinished { .. } | EventKind::RunFinished { .. } => return None,
        EventKind::RunStarted {
            run_id,
            test_file,
            attempt,
            provider,
            ..
        } => (
            format!("RUN {test_file} attempt {attempt} on {provider}: run {run_id}"),
            Normal,
        ),
        EventKind::SetupStatus { command, state } => {
            let what = match state {
                SetupState::Started => "started".to_string(),
                SetupState::Ready { probe } => format!("ready ({probe})"),
                SetupState::Skipped => "skipped".to_string(),
                SetupState::Exited { exit_code } => match exit_code {
                    Some(code) => format!("exited with {code}"),
                    None => "exited (killed by a signal)".to_string(),
                },
                SetupState::Restarted {
                    attempt,
                    exit_status,
                } => format!("restarted (#{attempt}) after {exit_status}"),
                SetupState::Failed { reason, .. } => format!("FAILED: {reason}"),
                SetupState::TimedOut { reason } => format!("TIMED OUT: {reason}"),
            };
            (format!("SETUP {command} ........ {what}"), Normal)
        }
        EventKind::StepStarted {
            step_id,
            instruction,
            ..
        } => (
            format!(
                "STEP {step_id} ........ {}",
                summarize_instruction(instruction, 100)
            ),
            Normal,
        ),
        EventKind::AgentLog { message, .. } => (format!("LOG ........ {message}"), Normal),
        EventKind::ConsoleCall {
            tool,
            summary,
            duration_ms,
            exit_code,
            is_error,
            ..
        } => (
            format!(
                "CONSOLE ........ {tool} {summary} ({duration_ms} ms{}{})",
                exit_code.map_or(String::new(), |c| format!(", exit {c}")),
                if *is_error { ", failed" } else { "" }
            ),
            Verbose,
        ),
        EventKind::SessionPrepared { workspace, ports } => (
            format!(
                "SESSION ........ workspace {workspace}{}",
                ports
                    .iter()
                    .map(|(name, port)| format!(", {name}={port}"))
                    .collect::<String>()
            ),
            Verbose,
        ),
        EventKind::HarnessLogExcerpt { step_id, excerpt } => (
            format!(
                "HARNESS LOG {step_id} ........ lines from {} while the step ran (in run.json and report.md)",
                excerpt.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            Verbose,
        ),
        EventKind::Evidence {
            step_id,
            kind,
            path,
        } => (
            format!("EVIDENCE {step_id} ........ {kind} {path}"),
            Verbose,
        ),
        EventKind::StepFinished {
            step_id,
            status,
            message,
            duration_ms,
            usage,
        } => {
            let mut line = format!("STEP {step_id} ........ {}", step_word(*status));
            if let Some(msg) = message {
                line.push_str(": ");
                line.push_str(&summarize_instruction(msg, 200));
            }
            line.push_str(&format!(" ({})", secs(*duration_ms)));
            if let Some(cost) = usage.as_ref().and_then(|u| u.cost_usd) {
                line.push_str(&format!(" ${cost:.4}"));
            }
            (line, Normal)
        }
        EventKind::CommandTornDown { name, teardown } => {
            let (word, level) = match teardown {
                TeardownState::Clean => ("clean", Verbose),
                TeardownState::Killed => ("killed (needed SIGKILL)", Normal),
                TeardownState::Leaked => ("LEAKED (a process outlived its group)", Normal),
            };
            (format!("TEARDOWN {name} ........ {word}"), level)
        }
        EventKind::Checkpoint {
            name,
            action,
            state,
            ..
        } => {
            let what = match state {
                CheckpointState::Started => "started".to_string(),
                CheckpointState::Done { duration_ms } => format!("done ({})", secs(*duration_ms)),
                CheckpointState::Failed { reason, .. } => {
                    format!("FAILED: {}", summarize_instruction(reason, 200))
                }
            };
            (
                format!("CHECKPOINT {} {name} ........ {what}", action.as_str()),
                Normal,
            )
        }
    };
    Some(line)
}

impl Console {
    /// A console on stdout in `mode`.
    pub fn new(mode: ConsoleMode, verbosity: Verbosity) -> Self {
        let live = match mode {
            ConsoleMode::Plain => None,
            ConsoleMode::Live if verbosity == Verbosity::Quiet => None,
            ConsoleMode::Live => Some(LiveView {
                multi: MultiProgress::with_draw_target(ProgressDrawTarget::stdout()),
                bars: HashMap::new(),
            }),
        };
        Self {
            verbosity,
            out: Box::new(std::io::stdout()),
            live,
            labels: HashMap::new(),
        }
    }

    /// A live console drawing to `target` (a terminal, or a captured one in tests).
    pub fn live_to(target: ProgressDrawTarget, verbosity: Verbosity) -> Self {
        Self {
            verbosity,
            out: Box::new(std::io::sink()),
            live: Some(LiveView {
                multi: MultiProgress::with_draw_target(target),
                bars: HashMap::new(),
            }),
            labels: HashMap::new(),
        }
    }

    /// The live view's lines now: each running session's label and current activity, sorted.
    pub fn live_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .live
            .iter()
            .flat_map(|live| live.bars.values())
            .map(|bar| format!("{} {}", bar.prefix(), bar.message()))
            .collect();
        lines.sort();
        lines
    }

    /// A plain console writing to `out` (tests, files).
    pub fn plain_to(out: Box<dyn Write + Send>, verbosity: Verbosity) -> Self {
        Self {
            verbosity,
            out,
            live: None,
            labels: HashMap::new(),
        }
    }

    fn print(&mut self, line: &str) {
        match &self.live {
            Some(live) => {
                let _ = live.multi.println(line);
            }
            None => {
                // A closed pipe must not stop the run: console output is best effort.
                let _ = writeln!(self.out, "{line}");
                let _ = self.out.flush();
            }
        }
    }

    /// A line that belongs to no run; printed at every verbosity (it is rare and matters).
    pub fn notice(&mut self, message: &str, redactor: &Redactor) {
        self.print(&escape_controls(&redactor.str(message), Newlines::Keep));
    }

    /// A suite-level event (not tied to a run).
    pub fn suite_event(&mut self, event: &Event, redactor: &Redactor) {
        if self.verbosity == Verbosity::Quiet {
            return;
        }
        if let Some((line, level)) = event_line(&event.kind) {
            if level <= self.verbosity {
                self.print(&redactor.str(&line));
            }
        }
    }

    /// A run begins: remembers its label, adds its line to the live view.
    pub fn run_started(&mut self, run_id: &str, test_file: &str) {
        let label = run_label(test_file, run_id);
        if let Some(live) = &mut self.live {
            let bar = live.multi.add(ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix:.bold} {elapsed:>4} {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_prefix(label.clone());
            bar.set_message("setting up");
            bar.enable_steady_tick(Duration::from_millis(120));
            live.bars.insert(run_id.to_string(), bar);
        }
        self.labels.insert(run_id.to_string(), label);
    }

    /// An event of run `run_id`.
    pub fn run_event(&mut self, run_id: &str, event: &Event, redactor: &Redactor) {
        if self.verbosity == Verbosity::Quiet {
            return;
        }
        let Some((line, level)) = event_line(&event.kind) else {
            return;
        };
        let label = self
            .labels
            .get(run_id)
            .cloned()
            .unwrap_or_else(|| run_id.to_string());
        let line = redactor.str(&format!("[{label}] {line}"));
        // One event, one line: a newline in a message or a file name must not split it.
        let line = escape_controls(&line, Newlines::Escape).into_owned();
        if let Some(live) = &self.live {
            if let Some(bar) = live.bars.get(run_id) {
                match &event.kind {
                    EventKind::StepStarted {
                        step_id,
                        instruction,
                        ..
                    } => bar.set_message(redactor.str(&format!(
                        "step {step_id}: {}",
                        summarize_instruction(instruction, 80)
                    ))),
                    EventKind::SetupStatus { command, .. } => {
                        bar.set_message(redactor.str(&format!("setup: {command}")))
                    }
                    EventKind::Checkpoint {
                        name,
                        action,
                        state: CheckpointState::Started,
                        ..
                    } => bar.set_message(
                        redactor.str(&format!("checkpoint {}: {name}", action.as_str())),
                    ),
                    _ => {}
                }
            }
            // Live: the bar shows progress; print only what a person needs to read.
            let worth = match &event.kind {
                EventKind::StepFinished { status, .. } => {
                    !matches!(status, StepStatus::Ok | StepStatus::Skipped)
                }
                EventKind::SetupStatus { state, .. } => matches!(
                    state,
                    SetupState::Failed { .. }
                        | SetupState::TimedOut { .. }
                        | SetupState::Restarted { .. }
                ),
                EventKind::CommandTornDown { teardown, .. } => *teardown != TeardownState::Clean,
                EventKind::Checkpoint { state, .. } => {
                    matches!(state, CheckpointState::Failed { .. })
                }
                _ => false,
            };
            if !(worth || self.verbosity == Verbosity::Verbose) {
                return;
            }
        } else if level > self.verbosity {
            return;
        }
        self.print(&line);
    }

    /// The final line of a run: outcome, run id, report path (and why, when it did not pass).
    pub fn run_finished(&mut self, record: &RunRecord, report_path: &str, redactor: &Redactor) {
        if let Some(live) = &mut self.live {
            if let Some(bar) = live.bars.remove(&record.run_id) {
                bar.finish_and_clear();
                live.multi.remove(&bar);
            }
        }
        let outcome = record.outcome.unwrap_or(RunOutcome::Interrupted);
        let word = format!("{:<11}", outcome_word(outcome));
        // Colour only in the live view: plain output (pipes, CI, NO_COLOR) stays plain text.
        let word = if self.live.is_some() {
            let styled = console::style(word);
            match outcome {
                RunOutcome::Passed => styled.green(),
                RunOutcome::Warned => styled.yellow(),
                RunOutcome::Failed | RunOutcome::Error => styled.red(),
                RunOutcome::Interrupted => styled.magenta(),
            }
            .bold()
            .force_styling(true)
            .to_string()
        } else {
            word
        };
        // The console's own line breaks and colours stay; those of a file name or a message are
        // escaped.
        let mut line = format!(
            "{} {}  run {}  {}",
            word,
            escape_controls(&record.test_file, Newlines::Escape),
            record.run_id,
            report_path
        );
        if record.attempt > 1 {
            line.push_str(&format!("  (attempt {})", record.attempt));
        }
        if outcome != RunOutcome::Passed && self.verbosity >= Verbosity::Normal {
            if let Some(msg) = record.failure_message() {
                line.push_str(&format!(
                    "\n            {}",
                    escape_controls(&summarize_instruction(&msg, 200), Newlines::Escape)
                ));
            }
        }
        self.print(&redactor.str(&line));
        self.labels.remove(&record.run_id);
    }

    /// The aggregate summary after every root test.
    pub fn suite_finished(
        &mut self,
        summary: &SuiteSummary,
        summary_path: &str,
        redactor: &Redactor,
    ) {
        if let Some(live) = &mut self.live {
            for (_, bar) in live.bars.drain() {
                bar.finish_and_clear();
            }
            let _ = live.multi.clear();
        }
        // Every failure again at the end, at every verbosity (as nextest does): with many tests
        // in parallel the per-test lines are far apart.
        let failing: Vec<_> = summary
            .tests
            .iter()
            .filter(|t| !t.outcome.is_pass(summary.strict_warnings))
            .collect();
        if !failing.is_empty() || !summary.not_run.is_empty() {
            let mut recap = format!("Failures ({}):", failing.len() + summary.not_run.len());
            for test in failing {
                recap.push_str(&format!(
                    "\n  {:<11} {}\n      {}\n      report: {}",
                    outcome_word(test.outcome),
                    escape_controls(&test.test_file, Newlines::Escape),
                    escape_controls(
                        &summarize_instruction(
                            test.message.as_deref().unwrap_or("(no message)"),
                            300
                        ),
                        Newlines::Escape
                    ),
                    test.report
                ));
            }
            let why = match &summary.harness_error {
                Some(reason) => format!(
                    "the suite's harness failed: {}",
                    summarize_instruction(reason, 300)
                ),
                None => "the suite stopped before it started".to_string(),
            };
            let word = if summary.harness_error.is_some() {
                "ERROR"
            } else {
                "NOT RUN"
            };
            for file in &summary.not_run {
                recap.push_str(&format!(
                    "\n  {word:<11} {}\n      {}",
                    escape_controls(file, Newlines::Escape),
                    escape_controls(&why, Newlines::Escape)
                ));
            }
            self.print(&redactor.str(&recap));
        }
        let t = &summary.totals;
        let mut line = format!(
            "Summary: {} root tests in {}: {} passed, {} warned, {} failed, {} error, {} interrupted",
            t.total,
            secs(summary.duration_ms),
            t.passed,
            t.warned,
            t.failed,
            t.error,
            t.interrupted
        );
        if t.not_run > 0 {
            line.push_str(&format!(", {} not run", t.not_run));
        }
        line.push_str(&format!("; {} flaky", t.flaky));
        for test in summary.tests.iter().filter(|t| t.flaky) {
            line.push_str(&format!(
                "\nFLAKY       {} passed on attempt {}",
                escape_controls(&test.test_file, Newlines::Escape),
                test.attempts
            ));
        }
        if self.verbosity >= Verbosity::Normal {
            line.push_str(&format!("\nSuite report: {summary_path}"));
        }
        self.print(&redactor.str(&line));
    }
}

/// A line for the user when no reporter can print it (before it starts, after it stopped, or when
/// it is gone): `supervisor: <message>` on stderr, and traced. Everything else goes through the
/// reporter's `Notice` ([`crate::actors::reporter::Notices`]).
pub fn stderr_notice(message: &str) {
    eprintln!("supervisor: {message}");
    tracing::warn!("{message}");
}
