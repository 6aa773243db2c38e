//! How the rest of the supervisor talks to the reporter: [`RunEvents`], the one outlet for a run's
//! events; [`Notices`], lines for the user that are not events; [`RunReporter`], a session's side of a
//! run; and the calls that close a run or the suite.

use super::*;
use crate::model::ids::RunId;

/// The one outlet for a run's events: stamps each with the run's clock, traces it into the run's
/// harness.log (routed by `run_id`) and sends it to the reporter. Made by the supervisor when it
/// starts the session, so that even a session that panics is closed with its true elapsed time.
/// Cheap to clone: the session's actor and its driver each hold one.
#[derive(Debug, Clone)]
pub struct RunEvents {
    reporter: ActorRef<ReporterMsg>,
    run_id: RunId,
    clock: EventClock,
}

impl RunEvents {
    /// A run's outlet, its clock started now.
    pub fn start(reporter: ActorRef<ReporterMsg>, run_id: impl Into<RunId>) -> Self {
        Self {
            reporter,
            run_id: run_id.into(),
            clock: EventClock::start(),
        }
    }

    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    pub fn clock(&self) -> &EventClock {
        &self.clock
    }

    pub fn reporter(&self) -> &ActorRef<ReporterMsg> {
        &self.reporter
    }

    /// Sends one event, stamped now. Fails only when the reporter is gone.
    pub fn emit(&self, kind: EventKind) -> Result<(), ReportError> {
        self.send(self.clock.event(kind))
    }

    /// Sends one event stamped earlier (one whose record waited). Fails only when the reporter
    /// is gone.
    pub fn send(&self, event: crate::report::records::events::Event) -> Result<(), ReportError> {
        let detail = serde_json::to_string(&event.kind).unwrap_or_default();
        tracing::info!(run_id = %self.run_id, "{} {detail}", event.kind.name());
        self.reporter
            .cast(ReporterMsg::Event {
                run_id: self.run_id.clone(),
                event,
            })
            .map_err(|e| ReportError::ReporterGone(e.to_string()))
    }

    /// Opens the run (its directory, run.json, events.jsonl, harness log) and waits until it is
    /// on disk. The plan's `started_at` is set to the start of the run's clock. An error here
    /// means nothing may be launched (exit 3).
    pub async fn open(
        &self,
        mut plan: RunPlan,
        secrets: Arc<Secrets>,
    ) -> Result<RunPaths, ReportError> {
        plan.identity.started_at = self.clock.started_at();
        ractor::call!(self.reporter, |reply| ReporterMsg::RunStarted {
            plan: Box::new(plan),
            secrets,
            reply
        })
        .map_err(|e| ReportError::ReporterGone(e.to_string()))?
    }

    /// Closes the run: waits until run.json, report.md and the rest are final.
    pub async fn close(&self) -> Result<RunFiles, ReportError> {
        close_run(&self.reporter, &self.run_id).await
    }
}

/// The one outlet for user-facing lines that belong to no run event ("cannot start a session",
/// "the session panicked"): the reporter's `Notice` — redacted, printed above the live view, traced
/// into the suite's harness.log — or, when the reporter is gone, [`stderr_notice`]. Actors never
/// write to stdout or stderr themselves.
#[derive(Debug, Clone)]
pub struct Notices {
    reporter: ActorRef<ReporterMsg>,
}

impl Notices {
    pub fn new(reporter: ActorRef<ReporterMsg>) -> Self {
        Self { reporter }
    }

    pub fn send(&self, message: impl Into<String>) {
        let message = message.into();
        if let Err(e) = self.reporter.cast(ReporterMsg::Notice {
            message: message.clone(),
        }) {
            tracing::debug!("the reporter is gone: {e}");
            stderr_notice(&message);
        }
    }
}

/// A session's handle on the reporter for its run: stamps events with the run's clock and sends
/// them with its run id. Cheap to clone (the agent and command actors of a session may each hold
/// one).
#[derive(Clone)]
pub struct RunReporter {
    events: RunEvents,
    paths: RunPaths,
}

impl std::fmt::Debug for RunReporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunReporter")
            .field("run_id", &self.events.run_id)
            .finish_non_exhaustive()
    }
}

impl RunReporter {
    /// Opens the run (its directory, run.json, events.jsonl, harness log) and waits until it is
    /// on disk. The plan's `started_at` is set to the start of the run's clock. An error here
    /// means nothing may be launched (exit 3).
    pub async fn start(
        reporter: &ActorRef<ReporterMsg>,
        plan: RunPlan,
        secrets: Arc<Secrets>,
    ) -> Result<Self, ReportError> {
        let events = RunEvents::start(reporter.clone(), plan.identity.run_id.clone());
        let paths = events.open(plan, secrets).await?;
        Ok(Self { events, paths })
    }

    pub fn run_id(&self) -> &RunId {
        &self.events.run_id
    }

    pub fn paths(&self) -> &RunPaths {
        &self.paths
    }

    pub fn clock(&self) -> &EventClock {
        &self.events.clock
    }

    /// The run's event outlet.
    pub fn events(&self) -> &RunEvents {
        &self.events
    }

    /// Sends one event, stamped now. Fails only when the reporter is gone.
    pub fn emit(&self, kind: EventKind) -> Result<(), ReportError> {
        self.events.emit(kind)
    }

    /// Ends the run with `outcome` and waits until all its files are final.
    pub async fn finish(
        &self,
        outcome: RunOutcome,
        message: Option<String>,
    ) -> Result<RunFiles, ReportError> {
        self.emit(EventKind::RunFinished { outcome, message })?;
        self.events.close().await
    }
}

/// Closes run `run_id` (as `error` if it never sent `run_finished`) and waits for its files.
/// The supervisor uses this for a session that panicked, after sending its `run_finished`.
pub async fn close_run(
    reporter: &ActorRef<ReporterMsg>,
    run_id: &RunId,
) -> Result<RunFiles, ReportError> {
    ractor::call!(reporter, |reply| ReporterMsg::RunFinished {
        run_id: run_id.clone(),
        reply
    })
    .map_err(|e| ReportError::ReporterGone(e.to_string()))?
}

/// Ends the suite and waits for summary.json, summary.md, junit.xml and the copies.
pub async fn finish_suite(
    reporter: &ActorRef<ReporterMsg>,
    not_run: Vec<String>,
) -> Result<SuiteFiles, ReportError> {
    ractor::call!(reporter, |reply| ReporterMsg::SuiteFinished {
        not_run,
        harness_error: None,
        not_run_reason: None,
        reply
    })
    .map_err(|e| ReportError::ReporterGone(e.to_string()))?
}
