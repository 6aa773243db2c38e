//! ReadinessActor: one per probe. It runs the probe (polling for http / tcp / exec, waiting on the
//! command's output lines for a log probe), owns the deadline as a timer, answers once through a
//! oneshot and stops. Its probe task ends with it, even when the actor is killed (the task watches
//! a channel whose sender lives in the actor's state).

use crate::process::output::{LineSubscription, OutputHub};
use crate::process::probe::{run_until_ready, LastSeen, ProbeContext, ProbeError};
use crate::process::spec::ProbeKind;
use crate::process::spec::ProbeSpec;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// A probe that passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeReady {
    pub command: String,
    pub probe: String,
    /// What made it ready: `HTTP 200`, the matching line, …
    pub detail: String,
    pub elapsed: Duration,
}

/// A probe that did not pass in time, or could not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeFailure {
    TimedOut {
        command: String,
        probe: String,
        timeout: Duration,
        last_seen: String,
    },
    Invalid {
        command: String,
        probe: String,
        reason: String,
    },
}

impl From<ProbeFailure> for crate::process::error::HarnessError {
    fn from(f: ProbeFailure) -> Self {
        match f {
            ProbeFailure::TimedOut {
                command,
                probe,
                timeout,
                last_seen,
            } => Self::Readiness {
                command,
                probe,
                timeout,
                last_seen,
            },
            ProbeFailure::Invalid {
                command,
                probe,
                reason,
            } => Self::InvalidProbe {
                command,
                probe,
                reason,
            },
        }
    }
}

pub type ProbeResult = Result<ProbeReady, ProbeFailure>;

pub struct ReadinessArgs {
    pub command: String,
    pub probe: ProbeSpec,
    pub ctx: ProbeContext,
    /// The command's output lines; required for a log probe. Subscribe before the command starts,
    /// so the readiness line cannot slip by.
    pub lines: Option<LineSubscription>,
    pub reply: oneshot::Sender<ProbeResult>,
}

pub enum ReadinessMsg {
    /// The probe task finished.
    Finished(Result<String, ProbeError>),
    /// The probe's timeout elapsed.
    Deadline,
}

pub struct ReadinessState {
    command: String,
    probe: ProbeSpec,
    seen: LastSeen,
    started: Instant,
    reply: Option<oneshot::Sender<ProbeResult>>,
    /// Dropped with the state: tells the probe task to stop.
    _stop: oneshot::Sender<()>,
}

pub struct ReadinessActor;

impl Actor for ReadinessActor {
    type Msg = ReadinessMsg;
    type State = ReadinessState;
    type Arguments = ReadinessArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        let seen = match &args.lines {
            Some(sub) => LastSeen::from_hub(sub.hub().clone()),
            None => LastSeen::default(),
        };
        seen.set("no attempt yet");
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let task_probe = args.probe.clone();
        let task_seen = seen.clone();
        let task_ctx = args.ctx;
        let lines = args.lines;
        let me = myself.clone();
        tokio::spawn(async move {
            tokio::select! {
                result = run_until_ready(&task_probe, &task_ctx, lines, &task_seen) => {
                    let _ = me.cast(ReadinessMsg::Finished(result));
                }
                _ = stop_rx => {}
            }
        });
        myself.send_after(args.probe.timeout, || ReadinessMsg::Deadline);
        Ok(ReadinessState {
            command: args.command,
            probe: args.probe,
            seen,
            started: Instant::now(),
            reply: Some(args.reply),
            _stop: stop_tx,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let Some(reply) = state.reply.take() else {
            return Ok(());
        };
        let probe = state.probe.describe();
        let result = match message {
            ReadinessMsg::Finished(Ok(detail)) => Ok(ProbeReady {
                command: state.command.clone(),
                probe,
                detail,
                elapsed: state.started.elapsed(),
            }),
            ReadinessMsg::Finished(Err(e)) => Err(ProbeFailure::Invalid {
                command: state.command.clone(),
                probe,
                reason: e.to_string(),
            }),
            ReadinessMsg::Deadline => Err(ProbeFailure::TimedOut {
                command: state.command.clone(),
                probe,
                timeout: state.probe.timeout,
                last_seen: state.seen.get(),
            }),
        };
        let _ = reply.send(result);
        myself.stop(None);
        Ok(())
    }
}

/// Spawns one ReadinessActor per probe, linked under `parent`, and waits for all of them; the first
/// failure returns at once. Emits nothing; callers turn the results into events.
pub async fn check_all(
    parent: ractor::ActorCell,
    command: &str,
    probes: Vec<(ProbeSpec, Option<LineSubscription>)>,
    ctx: &ProbeContext,
) -> Result<Vec<ProbeReady>, ProbeFailure> {
    let mut waiting = Vec::new();
    for (probe, lines) in probes {
        let (tx, rx) = oneshot::channel();
        let described = probe.describe();
        let args = ReadinessArgs {
            command: command.to_string(),
            probe,
            ctx: ctx.clone(),
            lines,
            reply: tx,
        };
        if let Err(e) = Actor::spawn_linked(None, ReadinessActor, args, parent.clone()).await {
            return Err(ProbeFailure::Invalid {
                command: command.to_string(),
                probe: described,
                reason: format!("could not start its actor: {e}"),
            });
        }
        waiting.push((described, rx));
    }
    futures::future::try_join_all(waiting.into_iter().map(|(described, rx)| async move {
        rx.await.unwrap_or_else(|_| {
            Err(ProbeFailure::Invalid {
                command: command.to_string(),
                probe: described,
                reason: "its actor stopped without an answer".into(),
            })
        })
    }))
    .await
}

/// Subscribes each log probe to `hub` with its pattern (do this before the command starts, so the
/// ready line cannot slip by); other probes get no subscription.
pub fn subscribe_probes(
    command: &str,
    probes: &[ProbeSpec],
    hub: &OutputHub,
) -> Result<Vec<(ProbeSpec, Option<LineSubscription>)>, ProbeFailure> {
    probes
        .iter()
        .map(|p| match &p.kind {
            ProbeKind::Log(pattern) => match hub.subscribe_matching(pattern) {
                Ok(sub) => Ok((p.clone(), Some(sub))),
                Err(e) => Err(ProbeFailure::Invalid {
                    command: command.to_string(),
                    probe: p.describe(),
                    reason: format!("invalid regex: {e}"),
                }),
            },
            _ => Ok((p.clone(), None)),
        })
        .collect()
}
