//! CommandActor: one per launched harness command. It spawns the process, learns of its exit by
//! event (a waiter task casts `Exited`), applies the restart policy with a doubling backoff (a
//! timer, not a sleep), re-checks readiness after each restart, reports to the session through the
//! harness event channel, and tears its group down on request, answering with the command's record.
//!
//! The process layer does the OS work; this actor only decides. Its process group is in the
//! registry from spawn to teardown, so even if this actor is killed nothing is left running.

use crate::actors::readiness;
use crate::process::error::HarnessError;
use crate::process::event::{HarnessEvent, HarnessEventKind, HarnessEventSink};
use crate::process::exit::ExitStatus;
use crate::process::output::{log_tail, OutputHub};
use crate::process::owner::Owner;
use crate::process::probe::ProbeContext;
use crate::process::record::{worse, HarnessRecord, HarnessStatus, RestartRecord};
use crate::process::spawn::{spawn, Running};
use crate::process::spec::{CommandKind, CommandSpec, RestartPolicy};
use crate::process::teardown::TeardownReport;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use std::time::Duration;
use tokio::time::Instant;

/// Lines shown of a failed command's log.
pub const LOG_TAIL_LINES: usize = 20;
/// How long a finished process's output may take to reach its log before the tail is read.
const TAIL_DRAIN_WAIT: Duration = Duration::from_secs(1);

pub struct CommandArgs {
    pub spec: CommandSpec,
    pub hub: OutputHub,
    pub events: HarnessEventSink,
    /// Whose process group it is, in the registry: this command of this run (or suite).
    pub owner: Owner,
}

/// What `Launch` answers: the pid of the process (group), and for a short-lived command its exit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launched {
    pub pid: i32,
    pub completed: Option<ExitStatus>,
}

pub enum CommandMsg {
    /// Spawn the process. Long-lived: answers once spawned. Short-lived: answers when it has
    /// exited 0, or with the failure (exit status or timeout, and the log's tail).
    Launch(RpcReplyPort<Result<Launched, HarnessError>>),
    /// Stop the group (`skip_grace`: SIGKILL at once) and answer with the final record. The actor
    /// stops afterwards.
    Teardown {
        skip_grace: bool,
        reply: RpcReplyPort<HarnessRecord>,
    },
    /// The record so far, without stopping anything.
    Record(RpcReplyPort<HarnessRecord>),
    /// From the waiter: process `incarnation` exited.
    Exited {
        incarnation: u32,
        status: ExitStatus,
    },
    /// Timer: short-lived `incarnation` ran past its timeout.
    SetupTimeout { incarnation: u32 },
    /// Timer: the backoff after `incarnation`'s exit has elapsed.
    Restart { incarnation: u32 },
    /// Readiness after restart `attempt` finished.
    RestartReadiness {
        incarnation: u32,
        attempt: u32,
        result: Result<(), HarnessError>,
    },
}

pub struct CommandState {
    /// What to run; fixed for the actor's life.
    spec: CommandSpec,
    /// Its output fan-out (log probes, `wait_for_log`); one for every incarnation.
    hub: OutputHub,
    /// To the session, through the harness: started, exited, restarted, gave up.
    events: HarnessEventSink,
    /// Its process groups' key in the registry (this command of this run or suite).
    owner: Owner,
    /// The current process group; `None` before launch, between a death and its restart, and
    /// after teardown took it.
    running: Option<Running>,
    /// Counts spawns, so that messages about an earlier process are recognised and ignored.
    incarnation: u32,
    /// Where the command is in its life (for run.json); set by launch, exits and teardown.
    status: HarnessStatus,
    /// The last process's exit, set by its `Exited` message (or by teardown's report).
    last_exit: Option<ExitStatus>,
    /// One entry per restart, appended when the restart is spawned.
    restarts: Vec<RestartRecord>,
    /// When each restart happened, for `max_restarts` within `restart_window`.
    restart_times: Vec<Instant>,
    /// A short-lived command's pending `Launch`.
    waiting: Option<RpcReplyPort<Result<Launched, HarnessError>>>,
    /// Set by `Teardown`: exits are expected from then on, nothing restarts.
    stopping: bool,
    /// The worst teardown state over every incarnation (`None` until one was torn down).
    teardown: Option<crate::model::outcome::TeardownState>,
    /// Pids found alive after a group was gone (and killed), over every incarnation.
    leaked: Vec<i32>,
}

impl CommandState {
    fn emit(&self, kind: HarnessEventKind) {
        self.events.send(HarnessEvent::now(&self.spec.name, kind));
    }

    fn record(&self) -> HarnessRecord {
        HarnessRecord {
            name: self.spec.name.clone(),
            kind: self.spec.kind,
            status: self.status,
            exit_code: self.last_exit.as_ref().and_then(ExitStatus::code),
            exit: self.last_exit.clone(),
            restarts: self.restarts.clone(),
            log: self.spec.log_path.clone(),
            teardown: self.teardown,
            leaked_pids: self.leaked.clone(),
            skipped: false,
            log_truncated_bytes: self.hub.log_truncated_bytes(),
        }
    }

    fn absorb(&mut self, report: TeardownReport) {
        self.teardown = worse(self.teardown, Some(report.state));
        self.leaked.extend(report.leaked);
        if self.last_exit.is_none() {
            self.last_exit = report.exit;
        }
    }

    /// Stops the current process group (if any) and folds the result into the record.
    async fn stop_current(&mut self, skip_grace: bool) {
        if let Some(mut running) = self.running.take() {
            let grace = if skip_grace {
                Duration::ZERO
            } else {
                self.spec.stop_timeout
            };
            let report = running.stop(self.spec.stop_signal, grace).await;
            self.absorb(report);
        }
    }

    async fn tail(&self) -> String {
        if let Some(running) = &self.running {
            running.pump.drained(TAIL_DRAIN_WAIT).await;
        }
        log_tail(&self.spec.log_path, LOG_TAIL_LINES)
    }

    fn start_process(&mut self, myself: &ActorRef<CommandMsg>) -> Result<i32, HarnessError> {
        let running = spawn(&self.spec, &self.hub, self.owner.clone())?;
        self.incarnation += 1;
        let incarnation = self.incarnation;
        let pid = running.pid();
        let mut exit = running.exit_watch();
        let me = myself.clone();
        tokio::spawn(async move {
            let status = match exit.wait_for(|s| s.is_some()).await {
                Ok(s) => s.clone(),
                Err(_) => None,
            };
            if let Some(status) = status {
                let _ = me.cast(CommandMsg::Exited {
                    incarnation,
                    status,
                });
            }
        });
        self.running = Some(running);
        self.emit(HarnessEventKind::Started { pid });
        Ok(pid)
    }

    fn probe_context(&self) -> ProbeContext {
        ProbeContext {
            cwd: self.spec.cwd.clone(),
            env: self.spec.env.clone(),
            owner: self.owner.clone(),
        }
    }

    fn give_up(&mut self, reason: String) {
        self.status = HarnessStatus::Exited;
        self.emit(HarnessEventKind::GaveUp { reason });
    }
}

pub struct CommandActor;

impl Actor for CommandActor {
    type Msg = CommandMsg;
    type State = CommandState;
    type Arguments = CommandArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(CommandState {
            status: HarnessStatus::NotStarted,
            spec: args.spec,
            hub: args.hub,
            events: args.events,
            owner: args.owner,
            running: None,
            incarnation: 0,
            last_exit: None,
            restarts: Vec::new(),
            restart_times: Vec::new(),
            waiting: None,
            stopping: false,
            teardown: None,
            leaked: Vec::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            CommandMsg::Launch(reply) => launch(&myself, state, reply),
            CommandMsg::Record(reply) => {
                let _ = reply.send(state.record());
            }
            CommandMsg::Teardown { skip_grace, reply } => {
                state.stopping = true;
                if let Some(waiting) = state.waiting.take() {
                    state.status = HarnessStatus::Interrupted;
                    let _ = waiting.send(Err(HarnessError::Interrupted {
                        command: state.spec.name.clone(),
                    }));
                } else if state.status == HarnessStatus::NotStarted && state.running.is_some() {
                    state.status = HarnessStatus::Stopped;
                }
                state.stop_current(skip_grace).await;
                let _ = reply.send(state.record());
                myself.stop(None);
            }
            CommandMsg::Exited {
                incarnation,
                status,
            } => {
                if incarnation != state.incarnation || state.stopping {
                    return Ok(());
                }
                state.last_exit = Some(status.clone());
                match state.spec.kind {
                    CommandKind::ShortLived => short_lived_exited(state, status).await,
                    CommandKind::LongLived => long_lived_exited(&myself, state, status).await,
                }
            }
            CommandMsg::SetupTimeout { incarnation } => {
                if incarnation != state.incarnation || state.waiting.is_none() {
                    return Ok(());
                }
                state.status = HarnessStatus::TimedOut;
                let tail_before = state.tail().await;
                state.stop_current(false).await;
                let tail = match log_tail(&state.spec.log_path, LOG_TAIL_LINES) {
                    t if t.is_empty() => tail_before,
                    t => t,
                };
                if let Some(waiting) = state.waiting.take() {
                    // Always name the setting that raises the limit.
                    let mut why = if state.spec.default_timeout {
                        " (the default for short-lived commands; set `timeout_secs` on the command to change it)"
                    } else {
                        " (its `timeout_secs`; raise it to wait longer)"
                    }
                    .to_string();
                    if state.spec.pty {
                        why.push_str(
                            " — it may be waiting for input on its terminal (pty = true): see its last output",
                        );
                    }
                    let error = HarnessError::SetupTimedOut {
                        command: state.spec.name.clone(),
                        timeout: state.spec.timeout.unwrap_or_default(),
                        why,
                        log: state.spec.log_path.clone(),
                        tail,
                    };
                    state.emit(HarnessEventKind::SetupTimedOut {
                        reason: error.to_string(),
                    });
                    let _ = waiting.send(Err(error));
                }
            }
            CommandMsg::Restart { incarnation } => {
                if incarnation != state.incarnation || state.stopping {
                    return Ok(());
                }
                restart(&myself, state).await;
            }
            CommandMsg::RestartReadiness {
                incarnation,
                attempt,
                result,
            } => {
                if incarnation != state.incarnation || state.stopping {
                    return Ok(());
                }
                match result {
                    Ok(()) => state.emit(HarnessEventKind::ReadyAgain { attempt }),
                    Err(why) => {
                        state.give_up(format!("readiness failed after restart {attempt}: {why}"))
                    }
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Self::Msg>,
        message: SupervisionEvent,
        _state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // Children are readiness probes: they answer through their own channel; a probe actor's
        // end (or panic, which its dropped answer reports) must not stop the command.
        if let SupervisionEvent::ActorFailed(who, err) = message {
            tracing::warn!("readiness probe {who:?} failed: {err}");
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // Stopped without a teardown (the harness is going away): take the group down now.
        state.stopping = true;
        state.stop_current(true).await;
        Ok(())
    }
}

fn launch(
    myself: &ActorRef<CommandMsg>,
    state: &mut CommandState,
    reply: RpcReplyPort<Result<Launched, HarnessError>>,
) {
    if state.stopping || state.running.is_some() {
        let _ = reply.send(Err(HarnessError::Actor {
            what: format!("command `{}`", state.spec.name),
            reason: "launched twice, or after teardown".into(),
        }));
        return;
    }
    let pid = match state.start_process(myself) {
        Ok(pid) => pid,
        Err(e) => {
            state.status = HarnessStatus::Failed;
            let _ = reply.send(Err(e));
            return;
        }
    };
    match state.spec.kind {
        CommandKind::LongLived => {
            state.status = HarnessStatus::Stopped;
            let _ = reply.send(Ok(Launched {
                pid,
                completed: None,
            }));
        }
        CommandKind::ShortLived => {
            state.waiting = Some(reply);
            if let Some(limit) = state.spec.timeout {
                let incarnation = state.incarnation;
                myself.send_after(limit, move || CommandMsg::SetupTimeout { incarnation });
            }
        }
    }
}

async fn short_lived_exited(state: &mut CommandState, status: ExitStatus) {
    let Some(waiting) = state.waiting.take() else {
        return;
    };
    let pid = state.running.as_ref().map_or(0, Running::pid);
    if status.success() {
        state.status = HarnessStatus::Succeeded;
        state.emit(HarnessEventKind::Completed {
            status: status.clone(),
        });
        let _ = waiting.send(Ok(Launched {
            pid,
            completed: Some(status),
        }));
    } else {
        state.status = HarnessStatus::Failed;
        let tail = state.tail().await;
        let error = HarnessError::SetupFailed {
            command: state.spec.name.clone(),
            status: status.clone(),
            log: state.spec.log_path.clone(),
            tail,
        };
        state.emit(HarnessEventKind::SetupFailed {
            status,
            reason: error.to_string(),
        });
        let _ = waiting.send(Err(error));
    }
}

async fn long_lived_exited(
    myself: &ActorRef<CommandMsg>,
    state: &mut CommandState,
    status: ExitStatus,
) {
    let policy = state.spec.restart;
    let refusal = match policy {
        RestartPolicy::Never => Some("restart = \"never\"".to_string()),
        RestartPolicy::OnFailure if status.success() => {
            Some("restart = \"on-failure\" does not restart a successful exit".to_string())
        }
        _ => {
            let now = Instant::now();
            let window = state.spec.restart_window;
            state
                .restart_times
                .retain(|t| now.duration_since(*t) < window);
            (state.restart_times.len() as u32 >= state.spec.max_restarts).then(|| {
                format!(
                    "{} restarts within {:?} already (max_restarts = {})",
                    state.restart_times.len(),
                    window,
                    state.spec.max_restarts
                )
            })
        }
    };
    // The leader is gone; whatever it left in its group goes too, before anything else starts.
    state.stop_current(false).await;
    match refusal {
        Some(why) => {
            state.emit(HarnessEventKind::Exited {
                status: status.clone(),
                restart_in: None,
            });
            let tail = log_tail(&state.spec.log_path, 5);
            state.give_up(format!(
                "exited with {status}; no restart: {why}; log tail:\n{tail}"
            ));
        }
        None => {
            let backoff = state.spec.backoff_for(state.restart_times.len() as u32);
            state.emit(HarnessEventKind::Exited {
                status,
                restart_in: Some(backoff),
            });
            let incarnation = state.incarnation;
            myself.send_after(backoff, move || CommandMsg::Restart { incarnation });
        }
    }
}

async fn restart(myself: &ActorRef<CommandMsg>, state: &mut CommandState) {
    let attempt = state.restarts.len() as u32 + 1;
    let after = state
        .last_exit
        .clone()
        .unwrap_or_else(|| ExitStatus::Unknown("not recorded".into()));
    state.restarts.push(RestartRecord {
        attempt,
        at: chrono::Utc::now(),
        after,
    });
    state.restart_times.push(Instant::now());
    // Subscribe before spawning, so a log probe cannot miss the new process's ready line.
    let probes = match readiness::subscribe_probes(&state.spec.name, &state.spec.probes, &state.hub)
    {
        Ok(p) => p,
        Err(f) => {
            state.give_up(HarnessError::from(f).to_string());
            return;
        }
    };
    let pid = match state.start_process(myself) {
        Ok(pid) => pid,
        Err(e) => {
            state.give_up(format!("restart {attempt} failed: {e}"));
            return;
        }
    };
    state.emit(HarnessEventKind::Restarted { attempt, pid });
    let incarnation = state.incarnation;
    let me = myself.clone();
    let name = state.spec.name.clone();
    let ctx = state.probe_context();
    tokio::spawn(async move {
        let result = readiness::check_all(me.get_cell(), &name, probes, &ctx)
            .await
            .map(|_| ())
            .map_err(HarnessError::from);
        let _ = me.cast(CommandMsg::RestartReadiness {
            incarnation,
            attempt,
            result,
        });
    });
}
