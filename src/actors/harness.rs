//! The harness of one session (or of the suite): brings its commands up in dependency order, then
//! holds them until `teardown_all`, which stops every command at once and returns their records.
//!
//! `HarnessActor` is spawned linked under the caller's actor (the session) and is the parent of
//! every CommandActor and startup ReadinessActor, so the session sees one child, not dozens, and
//! a command's end never stops the session by ractor's default supervision. [`Harness`] is the
//! handle the session keeps: plain async methods over messages to that actor.

use crate::actors::command::{CommandActor, CommandArgs, CommandMsg};
use crate::actors::readiness;
use crate::model::outcome::TeardownState;
use crate::process::error::HarnessError;
use crate::process::event::{HarnessEvent, HarnessEventKind, HarnessEventSink};
use crate::process::order::start_layers;
use crate::process::output::{log_tail, OutputHub};
use crate::process::owner::{Owner, Role, Scope};
use crate::process::probe::ProbeContext;
use crate::process::record::{HarnessRecord, HarnessStatus};
use crate::process::spec::CommandSpec;
use crate::process::teardown::kill_owner;
use crate::report::records::events::SetupState;
use ractor::rpc::CallResult;
use ractor::{
    Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent,
};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// Added to a command's stop timeout as the bound on one command's teardown answer.
const TEARDOWN_SLACK: Duration = Duration::from_secs(30);

pub enum HarnessMsg {
    /// Every command of this harness, in declaration order (records come back in this order).
    Plan(Vec<CommandSpec>),
    /// Spawn the CommandActor for `spec` (not yet its process).
    AddCommand {
        spec: Box<CommandSpec>,
        reply: RpcReplyPort<Result<(ActorRef<CommandMsg>, OutputHub), HarnessError>>,
    },
    /// The output fan-out of a launched command (for log probes, the agent console).
    Output {
        command: String,
        reply: RpcReplyPort<Option<OutputHub>>,
    },
    /// Tear every command down concurrently; answers one record per planned command. The actor
    /// stops afterwards.
    TeardownAll {
        skip_grace: bool,
        reply: RpcReplyPort<Vec<HarnessRecord>>,
    },
}

struct CommandEntry {
    spec: CommandSpec,
    actor: Option<ActorRef<CommandMsg>>,
    hub: Option<OutputHub>,
}

pub struct HarnessState {
    /// The run (or, for suite-scoped commands, the suite) whose commands these are.
    scope: Scope,
    events: HarnessEventSink,
    entries: Vec<CommandEntry>,
}

impl HarnessState {
    fn owner_of(&self, command: &str) -> Owner {
        Owner::new(self.scope.clone(), Role::Command(command.to_string()))
    }

    fn name_of(&self, id: ActorId) -> Option<String> {
        self.entries
            .iter()
            .find(|e| e.actor.as_ref().is_some_and(|a| a.get_id() == id))
            .map(|e| e.spec.name.clone())
    }
}

pub struct HarnessArgs {
    pub scope: Scope,
    pub events: HarnessEventSink,
}

pub struct HarnessActor;

impl Actor for HarnessActor {
    type Msg = HarnessMsg;
    type State = HarnessState;
    type Arguments = HarnessArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(HarnessState {
            scope: args.scope,
            events: args.events,
            entries: Vec::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            HarnessMsg::Plan(specs) => {
                for spec in specs {
                    if !state.entries.iter().any(|e| e.spec.name == spec.name) {
                        state.entries.push(CommandEntry {
                            spec,
                            actor: None,
                            hub: None,
                        });
                    }
                }
            }
            HarnessMsg::AddCommand { spec, reply } => {
                let spec = *spec;
                let hub = OutputHub::new();
                let args = CommandArgs {
                    owner: state.owner_of(&spec.name),
                    spec: spec.clone(),
                    hub: hub.clone(),
                    events: state.events.clone(),
                };
                let spawned =
                    Actor::spawn_linked(None, CommandActor, args, myself.get_cell()).await;
                let answer = match spawned {
                    Ok((actor, _)) => {
                        let entry =
                            match state.entries.iter_mut().find(|e| e.spec.name == spec.name) {
                                Some(entry) => entry,
                                None => {
                                    state.entries.push(CommandEntry {
                                        spec: spec.clone(),
                                        actor: None,
                                        hub: None,
                                    });
                                    let last = state.entries.len() - 1;
                                    &mut state.entries[last]
                                }
                            };
                        entry.actor = Some(actor.clone());
                        entry.hub = Some(hub.clone());
                        Ok((actor, hub))
                    }
                    Err(e) => Err(HarnessError::Actor {
                        what: format!("command `{}`", spec.name),
                        reason: e.to_string(),
                    }),
                };
                let _ = reply.send(answer);
            }
            HarnessMsg::Output { command, reply } => {
                let hub = state
                    .entries
                    .iter()
                    .find(|e| e.spec.name == command)
                    .and_then(|e| e.hub.clone());
                let _ = reply.send(hub);
            }
            HarnessMsg::TeardownAll { skip_grace, reply } => {
                let records = teardown_entries(state, skip_grace).await;
                let _ = reply.send(records);
                myself.stop(None);
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Self::Msg>,
        message: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // A command actor that fails leaves its process group to the registry and to
        // `teardown_all`'s fallback; the session is told, and decides. Normal ends are expected.
        if let SupervisionEvent::ActorFailed(who, err) = message {
            if let Some(name) = state.name_of(who.get_id()) {
                state.events.send(HarnessEvent::now(
                    name,
                    HarnessEventKind::GaveUp {
                        reason: format!("its actor failed: {err}"),
                    },
                ));
            } else {
                tracing::warn!("harness child {who:?} failed: {err}");
            }
        }
        Ok(())
    }
}

async fn teardown_entries(state: &mut HarnessState, skip_grace: bool) -> Vec<HarnessRecord> {
    let jobs = state.entries.iter().map(|entry| {
        let owner = state.owner_of(&entry.spec.name);
        async move {
            let Some(actor) = &entry.actor else {
                return HarnessRecord::unstarted(&entry.spec);
            };
            let bound = entry.spec.stop_timeout + TEARDOWN_SLACK;
            let answer = actor
                .call(
                    |reply| CommandMsg::Teardown { skip_grace, reply },
                    Some(bound),
                )
                .await;
            match answer {
                Ok(CallResult::Success(record)) => record,
                _ => fallback_teardown(&entry.spec, &owner),
            }
        }
    });
    futures::future::join_all(jobs).await
}

/// The command's actor is gone (failed or unresponsive): kill its registered groups directly.
fn fallback_teardown(spec: &CommandSpec, owner: &Owner) -> HarnessRecord {
    let mut record = HarnessRecord::unstarted(spec);
    if kill_owner(owner) > 0 {
        record.teardown = Some(TeardownState::Killed);
        record.status = HarnessStatus::Exited;
    }
    record
}

/// A harness event as the reports record it. `last_exit` is how the command's previous process
/// ended (a restart names it).
pub fn setup_state(kind: &HarnessEventKind, last_exit: Option<&str>) -> SetupState {
    match kind {
        HarnessEventKind::Started { .. } => SetupState::Started,
        HarnessEventKind::Completed { status } => SetupState::Exited {
            exit_code: status.code(),
        },
        HarnessEventKind::SetupFailed { status, reason } => SetupState::Failed {
            reason: reason.clone(),
            exit_code: status.code(),
        },
        HarnessEventKind::SetupTimedOut { reason } => SetupState::TimedOut {
            reason: reason.clone(),
        },
        HarnessEventKind::Ready { probe, .. } => SetupState::Ready {
            probe: probe.clone(),
        },
        HarnessEventKind::Exited { status, .. } => SetupState::Exited {
            exit_code: status.code(),
        },
        HarnessEventKind::Restarted { attempt, .. } => SetupState::Restarted {
            attempt: *attempt,
            exit_status: last_exit.unwrap_or("unknown").to_string(),
        },
        HarnessEventKind::ReadyAgain { attempt } => SetupState::Ready {
            probe: format!("ready again after restart {attempt}"),
        },
        HarnessEventKind::GaveUp { reason } => SetupState::Failed {
            reason: reason.clone(),
            exit_code: None,
        },
    }
}

/// The session's handle on its harness. Cheap to clone.
#[derive(Clone)]
pub struct Harness {
    actor: ActorRef<HarnessMsg>,
    /// The first command that gave up: startup watches it.
    gave_up: watch::Receiver<Option<HarnessEvent>>,
    events: HarnessEventSink,
    /// Owns the exec probes' process groups.
    scope: Scope,
}

impl Harness {
    /// Spawns the harness actor linked under `parent`. `scope` owns its process groups in the
    /// registry (the run, or the suite); `events` receives every [`HarnessEvent`] of its commands.
    pub async fn spawn(
        parent: ActorCell,
        scope: Scope,
        events: mpsc::UnboundedSender<HarnessEvent>,
    ) -> Result<Self, HarnessError> {
        let (events, gave_up) = HarnessEventSink::new(events);
        let args = HarnessArgs {
            scope: scope.clone(),
            events: events.clone(),
        };
        let (actor, _) = Actor::spawn_linked(None, HarnessActor, args, parent)
            .await
            .map_err(|e| HarnessError::Actor {
                what: "harness".into(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            actor,
            gave_up,
            events,
            scope,
        })
    }

    pub fn actor(&self) -> &ActorRef<HarnessMsg> {
        &self.actor
    }

    /// Brings the commands up: setup commands to completion and long-lived ones started, in
    /// dependency order, then every probe ready (skipped commands' probes included). Fails fast
    /// on the first failure; what was started stays up until [`Harness::teardown_all`], which the
    /// caller must call either way. Dropping this future midway is safe for the same reason.
    pub async fn start(&self, specs: Vec<CommandSpec>) -> Result<(), HarnessError> {
        let layers = start_layers(&specs)?;
        self.actor
            .cast(HarnessMsg::Plan(specs.clone()))
            .map_err(|e| actor_error("harness", e))?;
        for layer in layers {
            let bring_up =
                futures::future::try_join_all(layer.iter().map(|&i| self.bring_up(&specs[i])));
            let mut gave_up = self.gave_up.clone();
            tokio::select! {
                result = bring_up => { result?; }
                event = gave_up.wait_for(|e| e.is_some()) => {
                    let event = event.ok().and_then(|e| e.clone());
                    return Err(died(&specs, event));
                }
            }
        }
        if let Some(event) = self.gave_up.borrow().clone() {
            return Err(died(&specs, Some(event)));
        }
        Ok(())
    }

    async fn bring_up(&self, spec: &CommandSpec) -> Result<(), HarnessError> {
        let ctx = ProbeContext {
            cwd: spec.cwd.clone(),
            env: spec.env.clone(),
            owner: Owner::new(self.scope.clone(), Role::Command(spec.name.clone())),
        };
        if spec.skipped {
            let probes = spec.probes.iter().map(|p| (p.clone(), None)).collect();
            return self.check(spec, probes, &ctx).await;
        }
        let answer = self
            .actor
            .call(
                |reply| HarnessMsg::AddCommand {
                    spec: Box::new(spec.clone()),
                    reply,
                },
                None,
            )
            .await;
        let (command, hub) = unwrap_call(answer, &spec.name)??;
        // Subscribe before launching, so a log probe cannot miss the ready line.
        let probes = readiness::subscribe_probes(&spec.name, &spec.probes, &hub)?;
        let launched = command.call(CommandMsg::Launch, None).await;
        unwrap_call(launched, &spec.name)??;
        self.check(spec, probes, &ctx).await
    }

    async fn check(
        &self,
        spec: &CommandSpec,
        probes: Vec<(
            crate::process::spec::ProbeSpec,
            Option<crate::process::output::LineSubscription>,
        )>,
        ctx: &ProbeContext,
    ) -> Result<(), HarnessError> {
        if probes.is_empty() {
            return Ok(());
        }
        let ready = readiness::check_all(self.actor.get_cell(), &spec.name, probes, ctx).await?;
        for r in ready {
            self.events.send(HarnessEvent::now(
                &spec.name,
                HarnessEventKind::Ready {
                    probe: r.probe,
                    detail: r.detail,
                },
            ));
        }
        Ok(())
    }

    /// The live output of a launched command: subscribe to get its lines from now on.
    pub async fn output(&self, command: &str) -> Option<OutputHub> {
        let answer = self
            .actor
            .call(
                |reply| HarnessMsg::Output {
                    command: command.to_string(),
                    reply,
                },
                None,
            )
            .await;
        unwrap_call(answer, command).ok().flatten()
    }

    /// Tears every command down concurrently (`skip_grace`: SIGKILL without the stop timeout, for
    /// a second Ctrl-C) and returns one record per command, in declaration order. The harness
    /// actor stops afterwards (its parent sees a normal termination).
    pub async fn teardown_all(&self, skip_grace: bool) -> Vec<HarnessRecord> {
        let answer = self
            .actor
            .call(|reply| HarnessMsg::TeardownAll { skip_grace, reply }, None)
            .await;
        match answer {
            Ok(CallResult::Success(records)) => records,
            _ => {
                // The actor is gone: its groups are still in the registry; nothing more to report.
                Vec::new()
            }
        }
    }
}

fn actor_error(what: &str, e: impl std::fmt::Display) -> HarnessError {
    HarnessError::Actor {
        what: what.to_string(),
        reason: e.to_string(),
    }
}

fn unwrap_call<T, E: std::fmt::Display>(
    answer: Result<CallResult<T>, E>,
    command: &str,
) -> Result<T, HarnessError> {
    match answer {
        Ok(CallResult::Success(value)) => Ok(value),
        Ok(CallResult::Timeout) => Err(actor_error(
            &format!("command `{command}`"),
            "no answer in time",
        )),
        Ok(CallResult::SenderError) => Err(actor_error(
            &format!("command `{command}`"),
            "the actor stopped before answering",
        )),
        Err(e) => Err(actor_error(&format!("command `{command}`"), e)),
    }
}

fn died(specs: &[CommandSpec], event: Option<HarnessEvent>) -> HarnessError {
    let Some(event) = event else {
        return actor_error("harness", "event channel closed");
    };
    let reason = match event.kind {
        HarnessEventKind::GaveUp { reason } => reason,
        other => format!("{other:?}"),
    };
    let log = specs
        .iter()
        .find(|s| s.name == event.command)
        .map(|s| s.log_path.clone())
        .unwrap_or_default();
    HarnessError::DiedDuringStartup {
        tail: log_tail(&log, crate::actors::command::LOG_TAIL_LINES),
        command: event.command,
        reason,
        log,
    }
}
