//! One console line per event: the words of each event kind, and whether the plain console
//! prints it at `Normal` verbosity or only at `Verbose`.

use crate::model::ids::StepId;
use crate::model::options::Verbosity;
use crate::model::outcome::{StepStatus, TeardownState};
use crate::model::replay::{StepMode, StepReplay};
use crate::report::ground::printable::secs;
use crate::report::records::events::{
    summarize_instruction, CheckpointState, EventKind, PortRetry, SetupState, Usage,
};

use Verbosity::{Normal, Verbose};

/// When an event came, for the words of a command's line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Before a run's first step (or, for the suite, before its first run).
    Setup,
    /// While this step of the run ran.
    Step(StepId),
    /// After this step had finished, before the next one started (or the run ended).
    After(StepId),
    /// Suite-scoped: once runs had started.
    Tests,
}

/// A console line and the verbosity it needs.
type ConsoleLine = (String, Verbosity);

fn step_word(status: StepStatus) -> &'static str {
    match status {
        StepStatus::Ok => "OK",
        StepStatus::Warn => "WARN",
        StepStatus::Error => "ERROR",
        StepStatus::ProtocolError => "PROTOCOL ERROR",
        StepStatus::Timeout => "TIMEOUT",
        StepStatus::OverBudget => "OVER BUDGET",
        StepStatus::Skipped => "SKIPPED",
        StepStatus::Interrupted => "INTERRUPTED",
        StepStatus::NotRun => "NOT RUN",
        StepStatus::AgentError => "AGENT ERROR",
    }
}

/// One line of a run event, and whether it is worth printing at `Normal` verbosity (`None`: not
/// printed at all by the plain console). `phase` is when it came: a command that dies while steps
/// run is not a setup failure, and the line says which step it hit.
pub(crate) fn event_line(kind: &EventKind, phase: Phase) -> Option<ConsoleLine> {
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
        // The run id's tail is in the line's label; the whole id is in the report path at the end.
        EventKind::RunStarted {
            test_file,
            attempt,
            provider,
            ..
        } => (
            format!("RUN {test_file} attempt {attempt} on {provider}"),
            Normal,
        ),
        EventKind::SetupStatus { command, state } => setup_line(command, state, phase),
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
        EventKind::AgentFault { step_id, kind, fix } => (
            format!(
                "AGENT ERROR ({kind}) in step {step_id}: the agent, not the app, failed; to fix: {fix}"
            ),
            Normal,
        ),
        EventKind::AgentRestarted { step_id, reason } => (
            format!("AGENT RESTARTED during step {step_id}: it {reason}; the step is retried"),
            Normal,
        ),
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
        EventKind::SessionPrepared {
            workspace,
            ports,
            retried_after,
        } => session_line(workspace, ports, retried_after.as_ref()),
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
            problem,
        } => match problem {
            None => (
                format!("EVIDENCE {step_id} ........ {kind} {path}"),
                Verbose,
            ),
            Some(problem) => (
                format!("EVIDENCE {step_id} ........ WARNING: {kind} {path}: {problem}"),
                Normal,
            ),
        },
        EventKind::StepFinished {
            step_id,
            status,
            message,
            duration_ms,
            usage,
            replay,
        } => step_finished_line(
            *step_id,
            *status,
            message.as_deref(),
            *duration_ms,
            usage.as_ref(),
            replay.as_deref(),
        ),
        EventKind::CommandTornDown { name, teardown, .. } => {
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

/// A harness command's status, worded by when it came: `SETUP` before the steps, `COMMAND …
/// during step N` while a step ran, `after step N` between steps.
fn setup_line(command: &str, state: &SetupState, phase: Phase) -> ConsoleLine {
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
    let line = match phase {
        Phase::Setup => format!("SETUP {command} ........ {what}"),
        Phase::Step(step) => format!("COMMAND {command} ........ during step {step}: {what}"),
        Phase::After(step) => format!("COMMAND {command} ........ after step {step}: {what}"),
        Phase::Tests => format!("COMMAND {command} ........ while tests ran: {what}"),
    };
    (line, Normal)
}

/// The session's workspace and ports (verbose), or the setup retried on fresh ports.
fn session_line(
    workspace: &str,
    ports: &std::collections::BTreeMap<String, u16>,
    retried_after: Option<&PortRetry>,
) -> ConsoleLine {
    match retried_after {
        Some(retry) => (
            format!(
                "PORTS .......... setup retried: {} (a port was taken: address in use)",
                retry
                    .ports
                    .iter()
                    .map(|(name, old)| format!(
                        "{name} {old} -> {}",
                        ports.get(name).map_or("?".into(), u16::to_string)
                    ))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            Normal,
        ),
        None => (
            format!(
                "SESSION ........ workspace {workspace}{}",
                ports
                    .iter()
                    .map(|(name, port)| format!(", {name}={port}"))
                    .collect::<String>()
            ),
            Verbose,
        ),
    }
}

/// A step's verdict: the status word, duration and cost, then the message.
fn step_finished_line(
    step_id: StepId,
    status: StepStatus,
    message: Option<&str>,
    duration_ms: u64,
    usage: Option<&Usage>,
    replay: Option<&StepReplay>,
) -> ConsoleLine {
    // Duration and cost before the message: a line cut to 80 columns loses only the
    // message's end (whole in report.md and the recap).
    let replayed = replay.is_some_and(|r| r.mode == StepMode::Replayed);
    let mut line = if replayed {
        format!(
            "STEP {step_id} ........ {} (replayed {duration_ms}ms",
            step_word(status)
        )
    } else {
        format!(
            "STEP {step_id} ........ {} ({}",
            step_word(status),
            secs(duration_ms)
        )
    };
    if let Some(cost) = usage.and_then(|u| u.cost_usd) {
        line.push_str(&format!(", ${cost:.4}"));
    }
    line.push(')');
    if let Some(msg) = message {
        line.push_str(": ");
        line.push_str(&summarize_instruction(msg, 200));
    }
    // A recording the user may have edited by hand and can no longer be used: said on
    // every step it concerns, as the agent (and its cost) ran instead.
    if let Some(note) = replay
        .filter(|r| r.unusable_recording)
        .and_then(|r| r.note.as_ref())
    {
        line.push_str(&format!(" — WARNING: {}", summarize_instruction(note, 300)));
    }
    (line, Normal)
}
