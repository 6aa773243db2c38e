//! The main job (`supervisor start`): builds the runtime, the reporter and the supervisor, wires
//! signals to it, waits for the exit reason, and sweeps the process registry on the way out so
//! that nothing the supervisor started outlives it. First, it kills what supervisors that died
//! without a sweep (SIGKILL) left running, found through their process ledgers.

use crate::actors::reporter::Notices;
use crate::actors::reporter::{ReporterActor, ReporterArgs, ReporterMsg};
use crate::actors::supervisor::{SupervisorActor, SupervisorArgs, SupervisorMsg};
use crate::model::artifacts::{RunPaths, SuitePaths};
use crate::model::ids::SuiteId;
use crate::model::load::Suite;
use crate::model::options::RunOptions;
use crate::model::outcome::ExitReason;
use crate::model::redact::Secrets;
use crate::process::{dead_runs, job_control, ledger, limits, registry, signals, subreaper};
use crate::report::live::console::{stderr_notice, ConsoleMode, LiveView};
use crate::report::store::harness_log::HarnessLogs;
use ractor::Actor;
use std::path::PathBuf;
use std::sync::Arc;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// Runs a validated suite to its end and returns why the process should exit as it does.
pub fn run_suite(suite: Suite, options: &RunOptions) -> ExitReason {
    // As many workers as cores, even for one test: its harness's log pumps, its session and the
    // reporter run at once.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            stderr_notice(&format!("cannot start the async runtime: {e}"));
            return ExitReason::HarnessError;
        }
    };
    let reason = runtime.block_on(run(suite, options));
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    let swept = registry::sweep();
    for group in &swept {
        stderr_notice(&format!(
            "killed process group {} left by {}",
            group.pgid, group.label
        ));
    }
    let escaped = subreaper::sweep_descendants();
    if !escaped.is_empty() {
        stderr_notice(&format!(
            "killed {} process(es) that escaped their process group and outlived their run: {escaped:?}",
            escaped.len()
        ));
    }
    ledger::close();
    reason
}

/// Where the suite's artifacts go: `[supervisor] artifact_dir`, relative to the project root.
pub fn artifact_dir_path(suite: &Suite) -> PathBuf {
    let configured = PathBuf::from(&suite.base.supervisor.artifact_dir.value);
    if configured.is_absolute() {
        configured
    } else {
        suite.project_root.join(configured)
    }
}

/// The artifact directory, created owner-only: reports may hold what the app printed.
fn artifact_dir(suite: &Suite) -> std::io::Result<PathBuf> {
    let dir = artifact_dir_path(suite);
    crate::report::store::artifact_dir::create_owner_only(&dir)?;
    Ok(dir)
}

/// Kills what earlier supervisors that died without cleaning up (SIGKILL, OOM, power cut) left
/// running, before anything of ours starts (their servers may hold our ports), and makes the
/// files of the runs they left open final, as `interrupted`.
fn reap_dead_runs(artifact_dir: &std::path::Path) {
    let reaped = ledger::reap_dead(artifact_dir);
    for leftovers in &reaped.leftovers {
        stderr_notice(&leftovers.describe());
    }
    // Their workspaces before their records: finalising a run gives it an outcome, and only runs
    // with none are found dead.
    for line in dead_runs::remove_workspaces(artifact_dir) {
        stderr_notice(&line);
    }
    for run in &reaped.open_runs {
        match crate::report::store::recover::finalise_dead_run(&run.run_dir) {
            Ok(Some(outcome)) => stderr_notice(&format!(
                "run {} of a supervisor that was killed: its reports are final now ({}): {}",
                run.run_id,
                outcome.as_str(),
                RunPaths::new(&run.run_dir).report_md().display()
            )),
            Ok(None) => {}
            Err(e) => stderr_notice(&format!(
                "run {} of a supervisor that was killed could not be finalised: {e}",
                run.run_id
            )),
        }
    }
}

async fn run(suite: Suite, options: &RunOptions) -> ExitReason {
    // Before anything starts: an agent program or a browser that is missing is refused here.
    let missing = crate::actors::preflight::problems(&suite);
    if !missing.is_empty() {
        for line in &missing {
            stderr_notice(&format!("cannot start: {line}"));
        }
        return ExitReason::InvalidInput;
    }
    // An agent CLI older than the protocol we read would fail every step the same way: the
    // fault `cli_version`, refused before any harness starts (docs/providers.md, "Before
    // anything runs").
    let versions = crate::actors::preflight::version_problems(&suite).await;
    if !versions.is_empty() {
        for line in &versions {
            stderr_notice(&format!("cannot start: {line}"));
        }
        return ExitReason::HarnessError;
    }
    // An agent that cannot log in would fail every test, the app untested: refused in seconds,
    // the fix named, before any harness starts (docs/providers.md, "Logging the agent in").
    let logins = crate::actors::preflight::login_problems(&suite).await;
    if !logins.refused.is_empty() {
        for line in &logins.refused {
            stderr_notice(&format!("cannot start: {line}"));
        }
        return ExitReason::HarnessError;
    }
    // Under `--replay auto` a test whose every step has a recording may finish without its
    // agent: it runs, and only a step that drifts would need the agent (docs/replay.md).
    for line in &logins.warned {
        stderr_notice(&format!(
            "warning: {line}; every step has a recording, so the run goes on: a step that drifts \
             from its recording would need the agent and end as agent_error (auth)"
        ));
    }
    let ledger = match &options.cost_ledger {
        None => None,
        Some(path) => match crate::process::cost_ledger::CostLedger::open(path, &|name| {
            std::env::var(name).ok()
        }) {
            Ok(ledger) => Some(ledger),
            Err(e) => {
                stderr_notice(&format!("cannot start: {e}"));
                return ExitReason::InvalidInput;
            }
        },
    };
    let logs = prepare_process();
    let artifact_dir = match artifact_dir(&suite) {
        Ok(dir) => dir,
        Err(e) => {
            stderr_notice(&format!(
                "cannot create the artifact directory `{}`: {e}",
                suite.base.supervisor.artifact_dir.value
            ));
            return ExitReason::HarnessError;
        }
    };
    let suite_id = SuiteId::fresh();
    reap_dead_runs(&artifact_dir);
    prune_old_runs(&suite, &artifact_dir);
    if let Err(e) = ledger::open(&artifact_dir, &suite_id) {
        stderr_notice(&format!(
            "cannot record this run's processes in the ledger: {e}"
        ));
    }
    let mut suite = suite;
    let quarantine_changes = if suite.base.supervisor.auto_quarantine.value {
        let selection = crate::report::records::history::Selection::of(
            options,
            suite.base.supervisor.repeat.value,
        );
        crate::report::records::stability::apply_auto_quarantine(&mut suite, &selection)
    } else {
        Vec::new()
    };
    let mut reporter_args = reporter_args(&suite, options, &suite_id, &artifact_dir, &logs);
    reporter_args.extras.quarantine_changes = quarantine_changes;
    let (reporter, reporter_task) = match ReporterActor::spawn(reporter_args).await {
        Ok(spawned) => spawned,
        Err(e) => {
            stderr_notice(&format!("cannot start the reporter: {e}"));
            return ExitReason::HarnessError;
        }
    };
    let tests: Vec<String> = suite
        .tests
        .iter()
        .map(|t| t.rel_path.display().to_string())
        .collect();
    let on_finish = suite
        .base
        .supervisor
        .on_finish
        .value
        .clone()
        .map(|cmd| OnFinish {
            cmd,
            project_root: suite.project_root.clone(),
            limit: std::time::Duration::from_secs(
                suite.base.supervisor.on_finish_timeout_secs.value,
            ),
            suite: SuitePaths::under(&artifact_dir, &suite_id),
            suite_id: suite_id.clone(),
            max_log_bytes: suite.base.supervisor.max_log_bytes.value,
        });
    let suite_dir = SuitePaths::under(&artifact_dir, &suite_id).dir;
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let args = SupervisorArgs {
        suite,
        suite_id,
        artifact_dir,
        reporter: reporter.clone(),
        skip_cmd: options.skip_cmd.clone(),
        skip_readiness: options.skip_readiness.clone(),
        from_checkpoint: options.from_checkpoint.clone(),
        cost_ledger: ledger,
        done: done_tx,
    };
    let (supervisor, supervisor_task) = match Actor::spawn(None, SupervisorActor, args).await {
        Ok(spawned) => spawned,
        Err(e) => {
            stderr_notice(&format!("cannot start the supervisor actor: {e}"));
            reporter.stop(None);
            return ExitReason::HarnessError;
        }
    };
    let (listener, job_control, requests) =
        listen_for_signals(&supervisor, &reporter, tests.clone());
    let reason = match done_rx.await {
        Ok(reason) => reason,
        Err(_) => supervisor_gone(&reporter, tests).await,
    };
    let _ = supervisor_task.await;
    reporter.stop(None);
    let _ = reporter_task.await;
    let _ = logs.close_all();
    export_otlp(options.otlp.clone(), suite_dir).await;
    drop(job_control);
    // Signals are still honoured while the hook runs: the listener lives until it is done.
    let reason = match on_finish {
        Some(hook) => hook.run(reason, requests).await,
        None => reason,
    };
    drop(listener);
    reason
}

/// `start --otlp`: the suite just written, exported as OpenTelemetry spans; a failure is said
/// on stderr and changes nothing else (docs/reports.md, "OpenTelemetry").
async fn export_otlp(value: Option<String>, suite_dir: PathBuf) {
    use crate::report::store::{artifact_dir::load_suite, otlp_export::export_suite};
    let Some(value) = value else {
        return;
    };
    // A POST may wait on a slow collector: not on a worker of the runtime.
    let exported = tokio::task::spawn_blocking(move || {
        load_suite(&suite_dir)
            .map_err(|e| format!("the OpenTelemetry export to {value} failed: {e}"))
            .and_then(|loaded| export_suite(&loaded.summary, &loaded.records, &value))
    })
    .await
    .unwrap_or_else(|e| Err(format!("the OpenTelemetry export failed: {e}")));
    match exported {
        Ok(target) => println!("supervisor: OpenTelemetry spans exported to {target}"),
        Err(line) => stderr_notice(&line),
    }
}

/// The supervisor actor ended without answering (a panic in it: a bug). Its sessions cannot
/// report to it any more, so every process of the suite is killed now and the reporter writes
/// what it has, as after a third signal: each run still open ended (`interrupted`, "the suite
/// ended before this run finished"), then the suite's files. Always exit 3.
async fn supervisor_gone(
    reporter: &ractor::ActorRef<ReporterMsg>,
    tests: Vec<String>,
) -> ExitReason {
    let message = "the supervisor failed (a bug: its panic is printed above); every process \
                   killed, writing the reports from what was recorded"
        .to_string();
    for group in registry::sweep() {
        tracing::info!(
            "killed process group {} left by {}",
            group.pgid,
            group.label
        );
    }
    if let Err(e) = ractor::call!(reporter, |reply| ReporterMsg::LastWord {
        message,
        tests,
        reply
    }) {
        stderr_notice(&format!("the reporter is gone too: {e}"));
    }
    ExitReason::HarnessError
}

/// The process made ready to supervise: the open-files limit raised, the supervisor a child
/// subreaper, tracing routed into the per-run harness logs it returns (the same handle for
/// every suite the process runs).
fn prepare_process() -> HarnessLogs {
    if let Err(e) = limits::raise_open_files() {
        tracing::warn!("could not raise the open-files limit: {e}");
    }
    if !subreaper::become_child_subreaper() {
        tracing::warn!("could not become a child subreaper: escaped processes may go unseen");
    }
    // One for the process: the subscriber can be installed only once, and `supervisor watch`
    // runs one suite after another in this process, each opening its logs on this handle.
    static LOGS: std::sync::OnceLock<HarnessLogs> = std::sync::OnceLock::new();
    let mut installed = false;
    let logs = LOGS
        .get_or_init(|| {
            installed = true;
            HarnessLogs::new()
        })
        .clone();
    if installed {
        let filter = tracing_subscriber::EnvFilter::try_from_env("BUGATTI_LOG_LEVEL")
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,ractor=warn"));
        let _ = tracing_subscriber::registry()
            .with(logs.layer().with_filter(filter))
            .try_init();
    }
    logs
}

/// Retention (`[supervisor] keep_runs`), before this suite adds its own runs: room is left for
/// one run per root test of this suite, so that `keep_runs` runs remain after it (the previous
/// suite is always kept, as `clean` keeps the newest).
fn prune_old_runs(suite: &Suite, artifact_dir: &std::path::Path) {
    let keep_runs = suite.base.supervisor.keep_runs.value;
    if keep_runs > 0 {
        let keep_old = keep_runs.saturating_sub(suite.tests.len()).max(1);
        let pruned =
            crate::report::store::artifact_dir::prune(artifact_dir, Some(keep_old), None, &[]);
        if !pruned.suites.is_empty() {
            tracing::info!(
                "keep_runs = {keep_runs}: removed {} old suite(s) and {} run(s)",
                pruned.suites.len(),
                pruned.runs
            );
        }
        for problem in pruned.problems {
            stderr_notice(&format!("retention: {problem}"));
        }
    }
}

/// What the reporter is started with: the suite's identity and files, its live view, the
/// secrets it redacts, the copies and history the flags ask for.
fn reporter_args(
    suite: &Suite,
    options: &RunOptions,
    suite_id: &SuiteId,
    artifact_dir: &std::path::Path,
    logs: &HarnessLogs,
) -> ReporterArgs {
    let secrets = Arc::new(Secrets::new(suite.base.secret_pairs()));
    ReporterArgs {
        suite_id: suite_id.clone(),
        artifact_dir: artifact_dir.to_path_buf(),
        root_tests: suite.tests.len(),
        jobs: suite.base.supervisor.jobs.value,
        strict_warnings: suite.base.provider.strict_warnings.value,
        console: LiveView::new(ConsoleMode::detect(), options.verbosity)
            .with_max_attempts(1 + suite.base.supervisor.retries.value.count)
            .with_repeat(suite.base.supervisor.repeat.value),
        secrets,
        harness_logs: Some(logs.clone()),
        copies: options.copies.clone(),
        extras: crate::actors::reporter::SuiteExtras {
            selection: crate::report::records::history::Selection::of(
                options,
                suite.base.supervisor.repeat.value,
            ),
            no_history: false,
            history_file: Some(suite.history_file.clone()),
            shard: suite.shard.clone(),
            fail_on_flaky: suite.base.supervisor.flaky.value
                == crate::model::config::FlakyPolicy::Fail,
            cost_cap_usd: suite.base.supervisor.max_cost_usd.value,
            revision: crate::model::revision::PendingRevision::ask(&suite.project_root),
            provider: Some(suite.base.provider.name.value.into()),
            quarantine_changes: Vec::new(),
            github: crate::report::renderers::github::GithubTarget::from_env(
                options.reporter == Some(crate::model::options::Reporter::Github),
                |name| std::env::var(name).ok(),
            ),
        },
    }
}

/// SIGINT / SIGTERM to the supervisor (the third one: the reporter's last word), Ctrl+Z to
/// every group; a listener that cannot start is a notice. Dropped when the suite ends.
fn listen_for_signals(
    supervisor: &ractor::ActorRef<SupervisorMsg>,
    reporter: &ractor::ActorRef<ReporterMsg>,
    tests: Vec<String>,
) -> (
    std::io::Result<signals::SignalListener>,
    std::io::Result<job_control::JobControl>,
    tokio::sync::watch::Receiver<Option<signals::ShutdownRequest>>,
) {
    let to_supervisor = supervisor.clone();
    let to_reporter = reporter.clone();
    // Every request is also published, for the phase after the supervisor actor is gone
    // (`on_finish`): signals are honoured there too.
    let (requests_tx, requests) = tokio::sync::watch::channel(None);
    let listener = signals::listen(
        move |request| {
            let _ = to_supervisor.cast(SupervisorMsg::Shutdown(request));
            requests_tx.send_replace(Some(request));
        },
        move |signal| async move {
            let message = format!(
                "{}: third signal — every process killed; writing the reports from memory and exiting",
                signal.name()
            );
            let _ = ractor::call!(to_reporter, |reply| ReporterMsg::LastWord {
                message,
                tests,
                reply
            });
        },
    );
    if let Err(e) = &listener {
        Notices::new(reporter.clone()).send(format!(
            "cannot listen for signals ({e}); Ctrl-C will not tear down cleanly"
        ));
    }
    let job_control = job_control::listen();
    if let Err(e) = &job_control {
        Notices::new(reporter.clone()).send(format!(
            "cannot handle Ctrl+Z ({e}); time stopped will count against step timeouts"
        ));
    }
    (listener, job_control, requests)
}

/// `[supervisor] on_finish`, run after every report is written.
struct OnFinish {
    cmd: String,
    project_root: PathBuf,
    limit: std::time::Duration,
    suite: SuitePaths,
    suite_id: SuiteId,
    /// `[supervisor] max_log_bytes`: the hook's log is capped like every other.
    max_log_bytes: u64,
}

impl OnFinish {
    /// Runs the hook. Its outcome never changes the exit code (docs/ci.md), but the next
    /// shutdown request published on `requests` stops it (a second one ends its grace at once)
    /// and the supervisor then exits by that signal (docs/signals.md). Answers the exit reason:
    /// the suite's, or the signal's when one stopped the hook.
    async fn run(
        self,
        reason: ExitReason,
        mut requests: tokio::sync::watch::Receiver<Option<signals::ShutdownRequest>>,
    ) -> ExitReason {
        // A signal received during the suite was answered there: only the ones from now on count.
        requests.mark_unchanged();
        let stop = async move {
            loop {
                if requests.changed().await.is_err() {
                    // No listener: nothing will ever stop the hook but its timeout.
                    return std::future::pending().await;
                }
                match *requests.borrow_and_update() {
                    Some(signals::ShutdownRequest::Graceful(signal)) => return signal,
                    Some(signals::ShutdownRequest::SkipGrace(signal)) => {
                        crate::process::teardown::end_grace();
                        return signal;
                    }
                    None => {}
                }
            }
        };
        let summary: Option<crate::report::records::suite::SuiteSummary> =
            std::fs::read_to_string(self.suite.summary_json())
                .ok()
                .and_then(|text| serde_json::from_str(&text).ok());
        let facts = super::on_finish::SuiteFacts {
            suite_id: &self.suite_id,
            reason,
            suite_dir: &self.suite.dir,
            summary: summary.as_ref(),
            max_log_bytes: self.max_log_bytes,
        };
        match super::on_finish::run(&self.cmd, &self.project_root, self.limit, &facts, stop).await {
            Ok(line) => tracing::info!("{line}"),
            Err(super::on_finish::HookFailed::Stopped(why, signal)) => {
                stderr_notice(&why);
                return ExitReason::Interrupted(signal);
            }
            Err(super::on_finish::HookFailed::Failed(why)) => stderr_notice(&why),
        }
        reason
    }
}
