//! The ReporterActor: fans in the events of every session and is the only writer of each run's
//! `run.json`, `events.jsonl` and `report.md`, of the console, and of the suite's `summary.json`,
//! `summary.md` and `junit.xml` (plus the `--junit` / `--json` / `--html` copies).
//!
//! A session calls [`ReporterMsg::RunStarted`] before it launches anything (the reply says the run
//! directory and its files exist, or why not), casts [`ReporterMsg::Event`]s as things happen, and
//! calls [`ReporterMsg::RunFinished`], whose reply comes when every file of the run is final. The
//! supervisor calls [`ReporterMsg::SuiteFinished`] last; its reply lists the suite files written.
//! A write failure never stops the actor: it is kept as a note in the report and in the replies.
//!
//! Wiring, in short (see [`RunReporter`] for a session's side):
//!
//! ```text
//! let logs = HarnessLogs::new();                       // before anything traces
//! tracing_subscriber::registry().with(logs.layer()).init();
//! let (reporter, _) = ReporterActor::spawn(ReporterArgs { harness_logs: Some(logs), .. }).await?;
//! // per session:
//! let run = RunReporter::start(&reporter, plan, secrets).await?;   // Err → exit 3, launch nothing
//! let span = tracing::info_span!("run", run_id = %run.run_id()); // → diagnostics/harness.log
//! // Spans do not cross actor tasks: each actor of the session keeps `span` (or a child of it)
//! // in its state and runs its work inside it: `work.instrument(span.clone()).await`, or
//! // `span.in_scope(|| ..)`. Never hold `span.enter()` across an `.await`.
//! run.emit(EventKind::StepStarted { .. })?;  ...
//! run.finish(outcome, message).await?;                 // files final on disk
//! // a session that panicked: cast Event(run_id, RunFinished{error, panic message}), then close_run
//! let suite_files = finish_suite(&reporter, not_run).await?;
//! ```

pub mod copies;
mod finished;
mod outlets;
mod suite_end;

use crate::model::ids::{RunId, SuiteId};
use crate::model::options::SuiteCopy;
use crate::model::provider::ProviderName;
use finished::FinishedRun;
pub use outlets::*;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::atomic::write_atomic;
use crate::model::artifacts::{RunPaths, SuitePaths};
use crate::model::outcome::RunOutcome;
use crate::model::redact::{SecretValues, Secrets};
use crate::report::ground::error::ReportError;
use crate::report::live::console::stderr_notice;
use crate::report::live::console::LiveView;
use crate::report::records::events::{millis, Event, EventClock, EventKind};
use crate::report::records::history::{self, HistoryEntry, Selection};
use crate::report::store::harness_log::HarnessLogs;

use crate::report::ground::scrub::Redactor;
use crate::report::records::run_record::{RunPlan, RunRecord};
use crate::report::records::suite::SuiteSummary;
use crate::report::store::run_writer::{RunFiles, RunWriter};

/// The facts of the invocation the reporter needs from the start.
pub struct ReporterArgs {
    pub suite_id: SuiteId,
    /// `<project root>/.bugatti` (or `[supervisor] artifact_dir`).
    pub artifact_dir: PathBuf,
    /// How many root tests the suite will run (after shard/tag filtering).
    pub root_tests: usize,
    pub jobs: usize,
    pub strict_warnings: bool,
    pub console: LiveView,
    /// The suite's secrets: applied to every file and line, on top of each run's own.
    pub secrets: Arc<Secrets>,
    /// The harness log files, when the lead installed [`HarnessLogs::layer`]; the reporter opens
    /// `diagnostics/harness.log` per run and the suite's `harness.log`.
    pub harness_logs: Option<HarnessLogs>,
    /// `--junit FILE`, `--json FILE`, `--html FILE` (their formats: [`copies::FORMATS`]).
    pub copies: Vec<SuiteCopy>,
    /// The history and the summary's context: what `report.html` and `history.jsonl` need.
    pub extras: SuiteExtras,
}

/// The suite-level extras of issue 15: the selection the history compares by, and more.
#[derive(Debug, Clone, Default)]
pub struct SuiteExtras {
    /// What the user asked to run; the previous suite of the same selection is compared with.
    pub selection: Selection,
    /// Do not record this suite in history.jsonl (tests of the reporter alone).
    pub no_history: bool,
    /// The history file (`--history FILE`); None: `<artifact_dir>/history.jsonl`.
    pub history_file: Option<PathBuf>,
    /// With `--shard`: how the split was made, recorded in the summary for `merge`.
    pub shard: Option<crate::model::shard::ShardInfo>,
    /// `--fail-on-flaky` / `[supervisor] flaky = "fail"`, recorded in the summary.
    pub fail_on_flaky: bool,
    /// `[supervisor] max_cost_usd`, the whole CI run's cap: recorded so `merge` reports the
    /// run's total against it.
    pub cost_cap_usd: Option<f64>,
    /// The commit the suite ran against (docs/ci.md), recorded in summary and history.
    pub revision: crate::model::revision::PendingRevision,
    /// The suite's provider: history compares only suites of the same one.
    pub provider: Option<ProviderName>,
    /// What `[supervisor] auto_quarantine` changed before the suite started.
    pub quarantine_changes: Vec<crate::report::records::stability::QuarantineChange>,
    /// `--reporter github` (or GitHub Actions): annotations and the job summary at the end.
    pub github: Option<crate::report::renderers::github::GithubTarget>,
}

impl std::fmt::Debug for ReporterArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReporterArgs")
            .field("suite_id", &self.suite_id)
            .field("artifact_dir", &self.artifact_dir)
            .finish_non_exhaustive()
    }
}

/// The suite files written at the end.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteFiles {
    pub summary: SuiteSummary,
    pub summary_json: PathBuf,
    pub summary_md: PathBuf,
    pub junit: PathBuf,
    /// `report.html`.
    pub html: PathBuf,
    /// The `--junit` / `--json` / `--html` copies that were written.
    pub copies: Vec<PathBuf>,
    /// Problems met (a run that had to be closed by the reporter, a file that could not be written).
    pub notes: Vec<String>,
    /// Every record of the invocation that could not be written (a run's or the suite's), each
    /// naming the file and why: the exit code is then 3 (docs/signals.md).
    pub lost: Vec<String>,
}

pub enum ReporterMsg {
    /// A run begins. Creates `.bugatti/runs/<run_id>/` with its subdirectories, events.jsonl
    /// (first line: `run_started`) and run.json; opens its harness log. Replies with the run's
    /// paths, or the error that must stop the session before it launches anything (exit 3).
    RunStarted {
        plan: Box<RunPlan>,
        /// The run's own secrets (its `[secrets]` values).
        secrets: Arc<Secrets>,
        reply: RpcReplyPort<Result<RunPaths, ReportError>>,
    },
    /// One event of run `run_id`, in order. A `run_started` event is written by `RunStarted`;
    /// sessions need not send one.
    Event { run_id: RunId, event: Event },
    /// The run is over: closes it (as `error` if no `run_finished` event came), writes the final
    /// run.json and report.md, prints its final console line. Replies when the files are on disk.
    RunFinished {
        run_id: RunId,
        reply: RpcReplyPort<Result<RunFiles, ReportError>>,
    },
    /// An event of the suite's own (a suite-scoped command's setup status): on the console as
    /// `[suite] …`, and traced to the suite log.
    SuiteEvent { kind: EventKind },
    /// A line for the console that belongs to no run ("no config file: defaults apply",
    /// "SIGINT: stopping"), printed above the live view, redacted, also traced to the suite log.
    Notice { message: String },
    /// The suite is over. Runs still open are closed as `interrupted`; `not_run` lists root tests
    /// never started. Writes summary.json, summary.md, junit.xml and the copies; prints the
    /// aggregate summary. Replies when the files are on disk.
    SuiteFinished {
        not_run: Vec<String>,
        /// The suite-scoped harness failed (the reason): the root tests not run are errors.
        harness_error: Option<String>,
        /// Why the suite stopped starting root tests (its budget), if it did.
        not_run_reason: Option<String>,
        reply: RpcReplyPort<Result<SuiteFiles, ReportError>>,
    },
    /// Rewrite run `run_id`'s run.json if it is behind its events (sent by the reporter to itself
    /// when a rewrite was put off; see `RunWriter::run_json_due_in`).
    FlushRunJson { run_id: RunId },
    /// A third shutdown signal: the process exits within a second. What is in memory is written
    /// now — every open run closed as `interrupted`, the summaries, JUnit and the copies — with
    /// the root tests never started (of `tests`, by path) as not run. Nothing if the suite was
    /// already finished. `message` is said on the console first.
    LastWord {
        message: String,
        tests: Vec<String>,
        reply: RpcReplyPort<()>,
    },
}

pub struct ReporterState {
    args: ReporterArgs,
    started_at: DateTime<Utc>,
    started: std::time::Instant,
    redactor: Redactor,
    open: HashMap<RunId, RunWriter>,
    /// In the order they finished; their records are read back at the suite's end.
    finished: Vec<FinishedRun>,
    /// The secrets of finished runs, values only (no automaton per run kept to the suite's
    /// end): the suite files quote their messages.
    finished_secrets: SecretValues,
    notes: Vec<String>,
    /// Runs with a `FlushRunJson` on its way.
    flush_scheduled: std::collections::HashSet<RunId>,
    /// Records that could not be written, each naming the file and why (deduplicated: a vanished
    /// directory fails every later write the same way).
    lost: Vec<String>,
    /// Runs whose outcome did not reach their run.json (named in the summary, exit 3).
    unrecorded: Vec<crate::report::records::suite::UnrecordedRun>,
    /// Set once the suite files were written: a later `SuiteFinished` / `LastWord` answers with
    /// them instead of writing (and recording history) twice.
    suite_files: Option<SuiteFiles>,
}

pub struct ReporterActor;

impl ReporterActor {
    /// Spawns the reporter (unlinked: it must outlive any session that fails).
    pub async fn spawn(
        args: ReporterArgs,
    ) -> Result<(ActorRef<ReporterMsg>, tokio::task::JoinHandle<()>), ractor::SpawnErr> {
        Actor::spawn(None, ReporterActor, args).await
    }
}

impl ReporterState {
    fn suite_event(&self, kind: EventKind) -> Event {
        Event {
            timestamp: Utc::now(),
            elapsed_ms: millis(self.started.elapsed()),
            kind,
        }
    }

    fn suite_paths(&self) -> SuitePaths {
        SuitePaths::under(&self.args.artifact_dir, &self.args.suite_id)
    }

    fn run_started(
        &mut self,
        plan: &RunPlan,
        secrets: Arc<Secrets>,
    ) -> Result<RunPaths, ReportError> {
        let redactor = self.redactor.with(secrets.clone());
        let writer = match RunWriter::start(plan, redactor.clone()) {
            Ok(writer) => writer,
            Err(e) => {
                // No files for this run, but the suite summary and JUnit must still count it.
                let mut record = RunRecord::from_plan(plan);
                record.finish(
                    RunOutcome::Error,
                    Some(format!("cannot create the run directory: {e}")),
                    Utc::now(),
                );
                self.unrecorded(&record, e.to_string());
                self.finished.push(FinishedRun::Held(Box::new(record)));
                self.finished_secrets.add(&secrets);
                self.lose(format!("run {}: {e}", plan.identity.run_id));
                return Err(e);
            }
        };
        let paths = writer.paths().clone();
        if let Some(logs) = &self.args.harness_logs {
            if let Err(e) = logs.open_run(
                &plan.identity.run_id,
                &paths.harness_log(),
                redactor.clone(),
            ) {
                self.lose(e.to_string());
                return Err(e);
            }
        }
        self.args
            .console
            .run_started(&plan.identity.run_id, &plan.identity.test_file);
        let first = plan.identity.started_event();
        self.args
            .console
            .run_event(&plan.identity.run_id, &first, &redactor);
        // For the next start, should this supervisor be SIGKILLed before the run is final.
        crate::process::ledger::run_opened(&plan.identity.run_id, &paths.dir);
        self.open.insert(plan.identity.run_id.clone(), writer);
        Ok(paths)
    }

    fn event(&mut self, run_id: &RunId, event: &Event) {
        #[cfg(feature = "fault-injection")]
        if matches!(event.kind, EventKind::StepStarted { .. }) {
            fault_panic(
                self.open
                    .get(run_id)
                    .map(|w| &w.record().identity.test_file),
            );
        }
        let Some(writer) = self.open.get_mut(run_id) else {
            let note = format!(
                "an event ({}) arrived for run {run_id}, which is not open",
                event.kind.name()
            );
            tracing::warn!("{note}");
            self.notes.push(note);
            return;
        };
        // The error is already kept as a note of the run (shown in its report.md).
        let _ = writer.apply(event);
        self.args
            .console
            .run_event(run_id, event, writer.redactor());
    }

    fn run_finished(&mut self, run_id: &RunId) -> Result<RunFiles, ReportError> {
        let writer = self
            .open
            .remove(run_id)
            .ok_or_else(|| ReportError::UnknownRun {
                run_id: run_id.clone(),
            })?;
        let redactor = writer.redactor().clone();
        let report_path = writer.paths().report_md().display().to_string();
        // Closed first, so that the report lists a harness.log that is complete on disk.
        if let Some(logs) = &self.args.harness_logs {
            if let Err(e) = logs.close_run(run_id) {
                self.lose(e.to_string());
            }
        }
        // The run's notes so far are writes that failed (events.jsonl lines, run.json).
        for failed in writer.notes().to_vec() {
            self.lose(failed);
        }
        let run_json = writer.paths().run_json();
        let closed = writer.finish_checked();
        let (record, files) = (closed.record, closed.files);
        let on_disk = closed.unrecorded.is_none();
        if let Some(why) = closed.unrecorded {
            self.unrecorded(&record, why);
        }
        crate::process::ledger::run_closed(run_id);
        match &files {
            Ok(files) => {
                for failed in files.notes.clone() {
                    self.lose(failed);
                }
            }
            Err(e) => self.lose(e.to_string()),
        }
        self.args
            .console
            .run_finished(&record, &report_path, &redactor);
        self.finished.push(if on_disk {
            FinishedRun::OnDisk {
                run_id: record.identity.run_id.clone(),
                test_file: record.identity.test_file.clone(),
                run_json,
            }
        } else {
            FinishedRun::Held(Box::new(record))
        });
        for set in redactor.sets() {
            self.finished_secrets.add(set);
        }
        files
    }
}

impl ReporterState {
    /// `record`'s outcome did not reach its run.json: named in the summary and on the console
    /// now, so that a stale run.json is never the only word on the run (exit 3).
    fn unrecorded(&mut self, record: &RunRecord, why: String) {
        let outcome = record.outcome.unwrap_or(RunOutcome::Error);
        let test_file = record.identity.test_file.clone();
        let run_id = record.identity.run_id.clone();
        let notice = format!(
            "NOT RECORDED {test_file} (run {run_id}): {}, but its run.json could not be \
             written ({why}); the suite exits 3",
            outcome.as_str()
        );
        self.args.console.notice(&notice, &self.redactor);
        self.unrecorded
            .push(crate::report::records::suite::UnrecordedRun {
                run_id,
                test_file,
                outcome,
                why,
            });
    }
}

/// Test-only fault injection: the reporter panics handling a step's start in a run whose test
/// file path contains this value (proves that a panic in the reporter costs that record, said
/// as a record lost, exit 3, and nothing else).
#[cfg(feature = "fault-injection")]
pub const FAULT_REPORTER_PANIC_ENV: &str = "BUGATTI_FAULT_REPORTER_PANIC_IN";

#[cfg(feature = "fault-injection")]
fn fault_panic(test_file: Option<&String>) {
    let hit = std::env::var(FAULT_REPORTER_PANIC_ENV)
        .is_ok_and(|needle| !needle.is_empty() && test_file.is_some_and(|t| t.contains(&needle)));
    if hit {
        panic!("fault injection: {FAULT_REPORTER_PANIC_ENV}");
    }
}

/// Runs `f`, turning a panic into an error that names the message being handled.
fn guarded<T>(
    what: &'static str,
    f: impl FnOnce() -> Result<T, ReportError>,
) -> Result<T, ReportError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".to_string());
        tracing::error!("the reporter panicked handling {what}: {why}");
        Err(ReportError::Panicked { what, why })
    })
}

/// `data` with every string redacted, by a round trip through a JSON value.
fn redact_data<T>(redactor: &Redactor, data: &T) -> Result<T, ReportError>
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let mut value = serde_json::to_value(data).map_err(|source| ReportError::Json {
        what: "suite data",
        source,
    })?;
    redactor.value(&mut value);
    serde_json::from_value(value).map_err(|source| ReportError::Json {
        what: "suite data",
        source,
    })
}

impl Actor for ReporterActor {
    type Msg = ReporterMsg;
    type State = ReporterState;
    type Arguments = ReporterArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        mut args: ReporterArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let redactor = Redactor::new([args.secrets.clone()]);
        let suite_paths = SuitePaths::under(&args.artifact_dir, &args.suite_id);
        let mut notes = Vec::new();
        if let Some(logs) = &args.harness_logs {
            // Not fatal: the runs can still be reported without the suite's own log.
            if let Err(e) = logs.open_suite(&suite_paths.harness_log(), redactor.clone()) {
                notes.push(e.to_string());
            }
        }
        let started = std::time::Instant::now();
        let event = Event {
            timestamp: Utc::now(),
            elapsed_ms: 0,
            kind: EventKind::SuiteStarted {
                suite_id: args.suite_id.clone(),
                root_tests: args.root_tests,
                jobs: args.jobs,
            },
        };
        args.console.suite_event(&event, &redactor);
        Ok(ReporterState {
            args,
            started_at: event.timestamp,
            started,
            redactor,
            open: HashMap::new(),
            finished: Vec::new(),
            finished_secrets: SecretValues::default(),
            notes,
            lost: Vec::new(),
            unrecorded: Vec::new(),
            flush_scheduled: std::collections::HashSet::new(),
            suite_files: None,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // Never return an error or let a panic out: either would stop the reporter and lose every
        // later report. A bug while handling one message fails that message's reply only.
        match message {
            ReporterMsg::RunStarted {
                plan,
                secrets,
                reply,
            } => {
                let result = guarded("run_started", || state.run_started(&plan, secrets));
                let _ = reply.send(result);
            }
            ReporterMsg::Event { run_id, event } => {
                let result = guarded("event", || {
                    state.event(&run_id, &event);
                    Ok(())
                });
                // Only a panic fails here, and the event it was writing is not in the record:
                // a record lost (exit 3), not a note.
                if let Err(e) = result {
                    state.lose(e.to_string());
                }
                let due = state.open.get(&run_id).and_then(RunWriter::run_json_due_in);
                if let Some(wait) = due {
                    if state.flush_scheduled.insert(run_id.clone()) {
                        myself.send_after(wait, move || ReporterMsg::FlushRunJson { run_id });
                    }
                }
            }
            ReporterMsg::SuiteEvent { kind } => {
                let result = guarded("suite event", || {
                    let event = state.suite_event(kind);
                    state.args.console.suite_event(&event, &state.redactor);
                    Ok(())
                });
                if let Err(e) = result {
                    state.notes.push(e.to_string());
                }
            }
            ReporterMsg::Notice { message } => {
                let result = guarded("notice", || {
                    tracing::info!("{message}");
                    state.args.console.notice(&message, &state.redactor);
                    Ok(())
                });
                if let Err(e) = result {
                    state.notes.push(e.to_string());
                }
            }
            ReporterMsg::RunFinished { run_id, reply } => {
                let result = guarded("run_finished", || state.run_finished(&run_id));
                let _ = reply.send(result);
            }
            ReporterMsg::SuiteFinished {
                not_run,
                harness_error,
                not_run_reason,
                reply,
            } => {
                let result = guarded("suite_finished", || {
                    state.suite_finished(&not_run, harness_error.clone(), not_run_reason.clone())
                });
                let _ = reply.send(result);
            }
            ReporterMsg::FlushRunJson { run_id } => {
                state.flush_scheduled.remove(&run_id);
                let result = guarded("flush", || {
                    if let Some(writer) = state.open.get_mut(&run_id) {
                        // A failure is kept as a note of the run (and counted when it closes).
                        let _ = writer.flush_run_json();
                    }
                    Ok(())
                });
                if let Err(e) = result {
                    state.lose(e.to_string());
                }
            }
            ReporterMsg::LastWord {
                message,
                tests,
                reply,
            } => {
                let result = guarded("last_word", || {
                    state.args.console.notice(&message, &state.redactor);
                    let not_run = state.never_started(&tests);
                    state.suite_finished(&not_run, None, None)
                });
                if let Err(e) = result {
                    stderr_notice(&format!("the suite summary is incomplete: {e}"));
                }
                let _ = reply.send(());
            }
        }
        Ok(())
    }
}
