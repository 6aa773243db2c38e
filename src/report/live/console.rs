//! The console: what a person (or a CI log) sees while the suite runs.
//!
//! Off a terminal, with `NO_COLOR` or in CI ([`ConsoleMode::Plain`]): one line per event, no colour,
//! no redraws — setup status, step start and result, `LOG ........` lines. On a terminal
//! ([`ConsoleMode::Live`]): an indicatif view with one line per running session showing its current
//! step; results worth reading are printed above it. Both end with one line per root test (outcome,
//! run id, report path) and an aggregate summary. Every line passes through redaction.

use crate::model::ids::{RunId, StepId};
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::model::outcome::{RunOutcome, StepStatus, TeardownState};
use crate::report::ground::printable::{escape_controls, secs, Newlines};
use crate::report::ground::scrub::Redactor;
use crate::report::live::console_event::{event_line, Phase, NOTABLE_WAIT_MS};
use crate::report::live::console_text::{
    failure_lines, fit, message_block, terminal_width, DEFAULT_WIDTH,
};
use crate::report::live::live_term::LineTerm;
use crate::report::live::terminal_echo::QuietControlEcho;
use crate::report::records::events::{
    summarize_instruction, CheckpointState, Event, EventKind, SetupState,
};
use crate::report::records::run_record::RunRecord;
use crate::report::records::suite::SuiteSummary;

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

/// Where a run is: its label and the step it is running (once steps began).
struct RunPlace {
    label: String,
    step: Option<StepId>,
    /// The step in `step` has not finished yet.
    step_running: bool,
    /// Commands restarted in this run: their later `started` / `ready` are mid-run news.
    restarted: std::collections::HashSet<String>,
}

impl RunPlace {
    fn new(label: String) -> Self {
        Self {
            label,
            step: None,
            step_running: false,
            restarted: Default::default(),
        }
    }

    /// When `kind` came, as the line words it; follows the run's steps and restarts.
    fn phase_of(&mut self, kind: &EventKind) -> Phase {
        match kind {
            EventKind::StepStarted { step_id, .. } => {
                self.step = Some(*step_id);
                self.step_running = true;
                return Phase::Setup;
            }
            EventKind::StepFinished { .. } => self.step_running = false,
            EventKind::SetupStatus { command, state } => match state {
                SetupState::Restarted { .. } => {
                    self.restarted.insert(command.clone());
                }
                // The harness is up, every command started and ready, before the first step:
                // a first start or ready reaching the console after a step began is the
                // setup's, not news of that step.
                SetupState::Started | SetupState::Ready { .. } | SetupState::Skipped
                    if !self.restarted.contains(command) =>
                {
                    return Phase::Setup
                }
                _ => {}
            },
            _ => {}
        }
        match (self.step, self.step_running) {
            (None, _) => Phase::Setup,
            (Some(step), true) => Phase::Step(step),
            (Some(step), false) => Phase::After(step),
        }
    }
}

/// The redrawn part of a live view: one progress line per running session.
struct Bars {
    multi: MultiProgress,
    /// The terminal the bars are drawn on, its lines newline-terminated (`None`: a test's
    /// captured target).
    term: Option<LineTerm>,
    bars: HashMap<RunId, ProgressBar>,
    /// The terminal's `^C` echo, off while the bars are drawn (dropped, so restored, when the
    /// suite's summary is printed, also on the way out after a third signal).
    echo: Option<QuietControlEcho>,
}

impl Drop for Bars {
    /// However the view ends (a third signal too), the shell's prompt starts on a line of its own.
    fn drop(&mut self) {
        if let Some(term) = &self.term {
            term.end_line();
        }
    }
}

/// The live terminal view of a suite (plain lines, or lines above redrawn bars on a terminal):
/// where console lines go. Not the agent console (`crate::console::Console`, docs/console.md).
pub struct LiveView {
    verbosity: Verbosity,
    out: Box<dyn Write + Send>,
    live: Option<Bars>,
    runs: HashMap<RunId, RunPlace>,
    /// Paths are shown relative to this directory (the cwd) when they are under it.
    cwd: Option<PathBuf>,
    /// Root tests of the suite (from `suite_started`) and how many have finished a first
    /// attempt: the `[3/12]` progress count.
    total: usize,
    done: usize,
    /// A run has started: suite-scoped commands are past their setup.
    runs_seen: bool,
    /// 1 + `--retries`: a failed attempt below this is shown as `TRY n FAIL`, not `FAILED`, so a
    /// suite that ends green has no FAILED line in its log (as nextest's TRY lines).
    max_attempts: u32,
    /// `--repeat N`: each root test runs N times, so the progress count is of runs.
    repeat: usize,
    /// The columns a line may use ([`terminal_width`]).
    width: usize,
}

/// The indent of a root test's second and later lines.
const INDENT: &str = "      ";

/// An event that reports something going wrong: its line is printed whole.
fn is_failure(kind: &EventKind) -> bool {
    match kind {
        EventKind::StepFinished { status, replay, .. } => {
            !matches!(status, StepStatus::Ok | StepStatus::Skipped)
                || replay.as_ref().is_some_and(|r| r.unusable_recording)
        }
        EventKind::SetupStatus { state, .. } => {
            matches!(
                state,
                SetupState::Failed { .. } | SetupState::TimedOut { .. }
            )
        }
        EventKind::Checkpoint { state, .. } => matches!(state, CheckpointState::Failed { .. }),
        EventKind::CommandTornDown { teardown, .. } => *teardown == TeardownState::Leaked,
        EventKind::Evidence { problem, .. } => problem.is_some(),
        _ => false,
    }
}

impl std::fmt::Debug for LiveView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveView")
            .field("verbosity", &self.verbosity)
            .field("live", &self.live.is_some())
            .finish()
    }
}

/// A short, unique-enough label for a run: the test file's stem and the end of the run id
/// (two parallel runs of one test must be told apart).
pub fn run_label(test_file: &str, run_id: &RunId) -> String {
    let name = test_file.rsplit('/').next().unwrap_or(test_file);
    let stem = name.strip_suffix(".test.toml").unwrap_or(name);
    let tail: String = {
        let chars: Vec<char> = run_id.as_str().chars().collect();
        chars[chars.len().saturating_sub(6)..].iter().collect()
    };
    format!("{stem} {tail}")
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

impl LiveView {
    /// A console on stdout in `mode`.
    pub fn new(mode: ConsoleMode, verbosity: Verbosity) -> Self {
        let live = match mode {
            ConsoleMode::Plain => None,
            ConsoleMode::Live if verbosity == Verbosity::Quiet => None,
            ConsoleMode::Live => Some({
                let term = LineTerm::stdout();
                // 20 Hz, as indicatif's own stdout target.
                let target = ProgressDrawTarget::term_like_with_hz(Box::new(term.clone()), 20);
                Bars {
                    multi: MultiProgress::with_draw_target(target),
                    term: Some(term),
                    bars: HashMap::new(),
                    echo: QuietControlEcho::start(),
                }
            }),
        };
        Self {
            verbosity,
            out: Box::new(std::io::stdout()),
            live,
            runs: HashMap::new(),
            cwd: std::env::current_dir().ok(),
            total: 0,
            done: 0,
            runs_seen: false,
            max_attempts: 1,
            repeat: 1,
            width: terminal_width(),
        }
    }

    /// `path` as the console shows it: relative to the cwd when it is under it.
    pub fn shown_path(&self, path: &Path) -> String {
        match self
            .cwd
            .as_deref()
            .and_then(|cwd| path.strip_prefix(cwd).ok())
        {
            Some(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
            _ => path.display().to_string(),
        }
    }

    /// A live console drawing to `target` (a terminal, or a captured one in tests).
    pub fn live_to(target: ProgressDrawTarget, verbosity: Verbosity) -> Self {
        Self {
            verbosity,
            out: Box::new(std::io::sink()),
            live: Some(Bars {
                multi: MultiProgress::with_draw_target(target),
                term: None,
                bars: HashMap::new(),
                echo: None,
            }),
            runs: HashMap::new(),
            cwd: None,
            total: 0,
            done: 0,
            runs_seen: false,
            max_attempts: 1,
            repeat: 1,
            width: DEFAULT_WIDTH,
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
            runs: HashMap::new(),
            cwd: None,
            total: 0,
            done: 0,
            runs_seen: false,
            max_attempts: 1,
            repeat: 1,
            width: DEFAULT_WIDTH,
        }
    }

    fn print(&mut self, line: &str) {
        match &self.live {
            Some(live) => {
                let _ = live.multi.println(line);
                // With no bar below it, the line can end now (the last line of the suite too).
                if let (true, Some(term)) = (live.bars.is_empty(), &live.term) {
                    term.end_line();
                }
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
        if let EventKind::SuiteStarted { root_tests, .. } = &event.kind {
            self.total = *root_tests * self.repeat;
        }
        if self.verbosity == Verbosity::Quiet {
            return;
        }
        let phase = if self.runs_seen {
            Phase::Tests
        } else {
            Phase::Setup
        };
        if let Some((line, level)) = event_line(&event.kind, phase) {
            if level <= self.verbosity {
                // A suite-scoped command's status belongs to no run.
                let prefix = match &event.kind {
                    EventKind::SetupStatus { .. } | EventKind::CommandTornDown { .. } => "[suite] ",
                    _ => "",
                };
                let line = if is_failure(&event.kind) {
                    failure_lines(prefix, &redactor.str(&line))
                } else {
                    let line = redactor.str(&format!("{prefix}{line}"));
                    fit(&escape_controls(&line, Newlines::Escape), self.width)
                };
                self.print(&line);
            }
        }
    }

    /// A run begins: remembers its label, adds its line to the live view.
    pub fn run_started(&mut self, run_id: &RunId, test_file: &str) {
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
            live.bars.insert(run_id.clone(), bar);
        }
        self.runs.insert(run_id.clone(), RunPlace::new(label));
        self.runs_seen = true;
    }

    /// An event of run `run_id`.
    pub fn run_event(&mut self, run_id: &RunId, event: &Event, redactor: &Redactor) {
        if self.verbosity == Verbosity::Quiet {
            return;
        }
        let (phase, steps_began) = match self.runs.get_mut(run_id) {
            Some(place) => (place.phase_of(&event.kind), place.step.is_some()),
            None => (Phase::Setup, false),
        };
        let Some((line, level)) = event_line(&event.kind, phase) else {
            return;
        };
        let label = self
            .runs
            .get(run_id)
            .map(|p| p.label.clone())
            .unwrap_or_else(|| run_id.to_string());
        // A failure's line is the cause: never cut, and a setup command's log tail below it a
        // line per line. Any other event is one line: a newline in a message or a file name must
        // not split it.
        let line = if is_failure(&event.kind) {
            failure_lines(&format!("[{label}] "), &redactor.str(&line))
        } else {
            let line = redactor.str(&format!("[{label}] {line}"));
            fit(&escape_controls(&line, Newlines::Escape), self.width)
        };
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
                    // Mid-step, the bar keeps showing the step.
                    EventKind::SetupStatus { command, .. }
                        if phase == Phase::Setup && !steps_began =>
                    {
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
                EventKind::AgentRestarted { .. } => true,
                EventKind::ModelWait { waited_ms, .. } => *waited_ms >= NOTABLE_WAIT_MS,
                EventKind::Checkpoint { state, .. } => {
                    matches!(state, CheckpointState::Failed { .. })
                }
                EventKind::Evidence { problem, .. } => problem.is_some(),
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

    /// How many attempts a root test may have (1 + `--retries`).
    pub fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts.max(1);
        self
    }

    /// `--repeat N`: the `[k/N]` count is of runs, N per root test.
    pub fn with_repeat(mut self, repeat: u32) -> Self {
        self.repeat = repeat.max(1) as usize;
        self
    }

    /// The final line of a run: outcome, run id, report path (and why, when it did not pass).
    pub fn run_finished(&mut self, record: &RunRecord, report_path: &str, redactor: &Redactor) {
        if let Some(live) = &mut self.live {
            if let Some(bar) = live.bars.remove(&record.identity.run_id) {
                bar.finish_and_clear();
                live.multi.remove(&bar);
            }
        }
        let outcome = record.outcome.unwrap_or(RunOutcome::Interrupted);
        // A failed attempt with attempts left is not the test's verdict: the retry decides.
        // The run's own limit (a test file's `retries`), else the suite's.
        let max_attempts = match record.identity.max_attempts {
            0 => self.max_attempts,
            own => own,
        };
        let retry_may_follow = matches!(outcome, RunOutcome::Failed | RunOutcome::Error)
            && record.identity.attempt.max(1) < max_attempts;
        let word = if retry_may_follow {
            format!(
                "{:<11}",
                format!("TRY {} FAIL", record.identity.attempt.max(1))
            )
        } else {
            format!("{:<11}", outcome_word(outcome))
        };
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
        // A root test's first attempt moves the count; a retry repeats it (as nextest's TRY lines).
        if record.identity.attempt <= 1 {
            self.done += 1;
        }
        let progress = if self.total > 0 {
            format!("[{}/{}] ", self.done, self.total)
        } else {
            String::new()
        };
        // The console's own line breaks and colours stay; those of a file name or a message are
        // escaped. One line names the outcome and the report path, which names the run id
        // (docs/reports.md: scripts read it); it is the one line allowed past 80 columns. The failing step's
        // message follows, wrapped.
        let mut line = format!(
            "{progress}{} {}",
            word,
            escape_controls(&record.identity.test_file, Newlines::Escape),
        );
        if let Some(ms) = record.duration_ms {
            line.push_str(&format!("  {}", secs(ms)));
        }
        if retry_may_follow {
            line.push_str(&format!(
                "  (retrying: attempt {} of {})",
                record.identity.attempt.max(1) + 1,
                max_attempts
            ));
        } else if record.identity.attempt > 1 {
            line.push_str(&format!("  (attempt {})", record.identity.attempt));
        }
        line.push_str(&format!("  {}", self.shown_path(Path::new(report_path))));
        if outcome != RunOutcome::Passed && self.verbosity >= Verbosity::Normal {
            if let Some(msg) = record.failure_message() {
                line.push('\n');
                line.push_str(&message_block(&msg, INDENT, self.width));
            }
        }
        self.print(&redactor.str(&line));
        self.runs.remove(&record.identity.run_id);
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
            live.echo = None;
        }
        if let Some(recap) = self.recap(summary) {
            self.print(&redactor.str(&recap));
        }
        // One line, however long: scripts and CI logs grep for it.
        let mut line = totals_line(summary);
        for test in summary.tests.iter().filter(|t| t.flaky) {
            line.push_str(&format!(
                "\nFLAKY       {} passed on attempt {}",
                escape_controls(&test.test_file, Newlines::Escape),
                test.attempts
            ));
        }
        // Whole, at every verbosity: the step line is cut to the terminal's width.
        for pending in &summary.replay_pending {
            line.push_str(&format!(
                "\nPENDING     {} {}",
                escape_controls(&pending.test_file, Newlines::Escape),
                escape_controls(&pending.note, Newlines::Escape)
            ));
        }
        if self.verbosity >= Verbosity::Normal {
            line.push_str(&format!(
                "\nSuite report: {}",
                self.shown_path(Path::new(summary_path))
            ));
        }
        self.print(&redactor.str(&line));
    }

    /// Every failure again at the end, at every verbosity (as nextest does): with many tests in
    /// parallel the per-test lines are far apart. Then the tests not run and the quarantined
    /// ones; `None` when there is nothing to list.
    fn recap(&self, summary: &SuiteSummary) -> Option<String> {
        // What fails the suite (a flaky pass too, under --fail-on-flaky); quarantined tests
        // are listed apart, after.
        let failing: Vec<_> = summary
            .tests
            .iter()
            .filter_map(|t| summary.failure_reason(t).map(|why| (t, why)))
            .collect();
        // A quarantined test whose harness failed does decide the exit code: it is a failure
        // above, never "not deciding" here.
        let quarantined: Vec<_> = summary
            .tests
            .iter()
            .filter(|t| t.quarantined && !summary.fails_suite(t))
            .collect();
        // Tests never started are failures only when the suite's harness failed (ERROR); after
        // --fail-fast, a budget or the deadline they are listed apart, as not run.
        let not_run_are_errors = summary.harness_error.is_some();
        let failure_count = failing.len()
            + if not_run_are_errors {
                summary.not_run.len()
            } else {
                0
            };
        if failing.is_empty() && summary.not_run.is_empty() && quarantined.is_empty() {
            return None;
        }
        let mut recap = String::new();
        if failure_count > 0 {
            recap.push_str(&format!("Failures ({failure_count}):"));
        }
        for (test, why) in failing {
            let flaky = test.outcome.is_pass(summary.strict_warnings);
            recap.push_str(&format!(
                "\n  {:<11} {}{}\n{}\n{INDENT}report: {}",
                if flaky {
                    "FLAKY"
                } else {
                    outcome_word(test.outcome)
                },
                escape_controls(&test.test_file, Newlines::Escape),
                if test.quarantined {
                    " (quarantined, but its harness failed: that decides the exit code)"
                } else {
                    ""
                },
                message_block(
                    if flaky {
                        &why
                    } else {
                        test.message.as_deref().unwrap_or("(no message)")
                    },
                    INDENT,
                    self.width
                ),
                self.shown_path(Path::new(&test.report))
            ));
        }
        let why = match &summary.harness_error {
            Some(reason) => format!("the suite's harness failed: {reason}"),
            None => summary
                .not_run_reason
                .clone()
                .unwrap_or_else(|| "the suite stopped before it started".to_string()),
        };
        let word = if not_run_are_errors {
            "ERROR"
        } else {
            "NOT RUN"
        };
        if !not_run_are_errors && !summary.not_run.is_empty() {
            if !recap.is_empty() {
                recap.push('\n');
            }
            recap.push_str(&format!("Not run ({}):", summary.not_run.len()));
        }
        for file in &summary.not_run {
            let why = summary.not_run_reasons.get(file).unwrap_or(&why);
            recap.push_str(&format!(
                "\n  {word:<11} {}\n{}",
                escape_controls(file, Newlines::Escape),
                message_block(why, INDENT, self.width)
            ));
        }
        if !quarantined.is_empty() {
            recap.push_str(&format!(
                "{}Quarantined ({}), not deciding the exit code:",
                if recap.is_empty() { "" } else { "\n" },
                quarantined.len()
            ));
        }
        for test in quarantined {
            recap.push_str(&format!(
                "\n  {:<11} {}{}",
                outcome_word(test.outcome),
                escape_controls(&test.test_file, Newlines::Escape),
                if test.flaky { " (flaky)" } else { "" }
            ));
        }
        Some(recap)
    }
}

/// `Summary: N root tests in T: counts; cost; steps; tokens`: the suite's totals on one line.
fn totals_line(summary: &SuiteSummary) -> String {
    let t = &summary.totals;
    // Counts that are zero are left out (passed and failed always shown): the line fits.
    let mut counts = vec![format!("{} passed", t.passed)];
    for (n, what) in [(t.warned, "warned")] {
        if n > 0 {
            counts.push(format!("{n} {what}"));
        }
    }
    counts.push(format!("{} failed", t.failed));
    for (n, what) in [
        (t.error, "error"),
        (t.interrupted, "interrupted"),
        (t.not_run, "not run"),
        (t.flaky, "flaky"),
    ] {
        if n > 0 {
            counts.push(format!("{n} {what}"));
        }
    }
    let mut text = format!(
        "Summary: {} root tests in {}: {}",
        t.total,
        secs(summary.duration_ms),
        counts.join(", ")
    );
    let replayed = summary.replay_counts();
    match (
        summary.cost_usd,
        summary.cost_saved_usd.filter(|s| *s > 0.0),
    ) {
        (Some(cost), _) => text.push_str(&format!("; agent cost ${cost:.4}")),
        // Nothing spent on the model: every step replayed.
        (None, Some(saved)) if replayed.agent == 0 => {
            text.push_str(&format!("; agent cost $0.0000 (saved ${saved:.4})"))
        }
        _ => {}
    }
    if replayed.any() {
        text.push_str(&format!("; steps: {}", replayed.describe()));
        if let Some(saved) = summary.cost_saved_usd.filter(|s| *s > 0.0) {
            text.push_str(&format!(", ${saved:.4} saved"));
        }
    }
    if summary.input_tokens + summary.output_tokens > 0 {
        text.push_str(&format!(
            "; {} input / {} output tokens",
            summary.input_tokens, summary.output_tokens
        ));
    }
    let unrecorded = summary.unrecorded.len();
    if unrecorded > 0 {
        text.push_str(&format!("; {unrecorded} run(s) NOT RECORDED (exit 3)"));
    }
    if let Some(waited) = summary.model_wait_text() {
        text.push_str(&format!("; {}", waited.to_lowercase()));
    }
    text
}

/// A line for the user when no reporter can print it (before it starts, after it stopped, or when
/// it is gone): `supervisor: <message>` on stderr, and traced. Everything else goes through the
/// reporter's `Notice` ([`crate::actors::reporter::Notices`]).
pub fn stderr_notice(message: &str) {
    eprintln!("supervisor: {message}");
    tracing::warn!("{message}");
}
