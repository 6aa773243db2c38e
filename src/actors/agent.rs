//! The AgentActor: one provider conversation per root-test session (docs/providers.md "Providers"), owned by
//! the session actor (spawned linked under it).
//!
//! The actor keeps its mailbox free while a step runs: the step runs in a task that holds the
//! provider and answers the caller's reply port itself, so a `Cancel` (shutdown) or `Close` is
//! handled at once. The per-step timeout is a tokio timer inside the provider; the agent's output
//! never passes through this mailbox (it goes from the pipe to the transcript files, and only
//! marker lines reach the session, as [`AgentEvent`]s on the channel it passed in).
//!
//! Teardown cannot live only in `post_stop` (skipped after a panic or kill): every agent process
//! group is in the process registry, which the supervisor sweeps on the way out. `post_stop`
//! still closes a provider that was never closed, so a stopped actor leaves nothing behind.

use crate::actors::model_gate::{ModelGate, ModelPermit};
use crate::model::agent_fault::FaultKind;
use crate::model::outcome::{StepStatus, TeardownState};
use crate::providers::{
    self, AgentContext, AgentError, AgentEvent, AgentSpec, Provider, SessionFacts, StepRequest,
    StepVerdict,
};
use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, RpcReplyPort, SpawnErr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc::UnboundedSender, watch, Mutex};

pub struct AgentActor;

impl AgentActor {
    /// Spawns the agent linked under `parent` (the session): its failure reaches the parent as a
    /// supervision event. The parent must override `handle_supervisor_evt` (ractor's default
    /// stops the parent when a child exits, and this actor exits after `Close`).
    pub async fn spawn_under(
        parent: ActorCell,
        args: AgentArgs,
    ) -> Result<(ActorRef<AgentMsg>, tokio::task::JoinHandle<()>), SpawnErr> {
        Actor::spawn_linked(None, AgentActor, args, parent).await
    }
}

/// What the actor is spawned with.
pub struct AgentArgs {
    pub spec: AgentSpec,
    pub facts: SessionFacts,
    pub events: UnboundedSender<AgentEvent>,
    /// The suite's gate to the model, for an agent CLI (none for `command` and `shell`).
    pub gate: Option<ModelGate>,
}

pub enum AgentMsg {
    /// Start the agent process (an agent CLI's once its session's first step has its place at
    /// the model). Errors name the command line.
    Start(RpcReplyPort<Result<(), AgentError>>),
    /// Send the bootstrap (harness, result contract, run facts).
    Bootstrap(RpcReplyPort<Result<(), AgentError>>),
    /// Run one step; the reply comes when the step has its verdict (or timed out).
    RunStep(StepRequest, RpcReplyPort<StepVerdict>),
    /// Cut the running step short (shutdown): it ends `interrupted`, the agent is stopped.
    Cancel,
    /// Stop the agent and everything it started; the actor stops after replying.
    Close(RpcReplyPort<TeardownState>),
}

pub struct AgentState {
    provider: Arc<Mutex<Box<dyn Provider>>>,
    /// The session's news channel, for the watchdog's restarts.
    events: UnboundedSender<AgentEvent>,
    cancel: watch::Sender<bool>,
    closed: bool,
    /// The suite's gate to the model, and whether a step went through it yet (the session's
    /// first step is the one staggered).
    gate: Option<ModelGate>,
    stepped: bool,
    /// The first step's place at the model, taken before the agent CLI was started (see
    /// [`AgentMsg::Start`]): the first step goes with it.
    seated: Arc<std::sync::Mutex<Option<Seated>>>,
}

/// A place at the model taken ahead of the step, and how long it took.
type Seated = (ModelPermit, Duration);

impl Actor for AgentActor {
    type Msg = AgentMsg;
    type State = AgentState;
    type Arguments = AgentArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: AgentArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let events = args.events.clone();
        let gate = args.gate;
        let provider = providers::create(AgentContext {
            spec: args.spec,
            facts: args.facts,
            events: args.events,
        });
        let (cancel, _) = watch::channel(false);
        Ok(AgentState {
            provider: Arc::new(Mutex::new(provider)),
            events,
            cancel,
            closed: false,
            gate,
            stepped: false,
            seated: Arc::default(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: AgentMsg,
        state: &mut AgentState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            AgentMsg::Start(reply) => {
                let provider = Arc::clone(&state.provider);
                let gate = state.gate.clone().filter(|_| !state.stepped);
                state.stepped |= gate.is_some();
                let seated = Arc::clone(&state.seated);
                let cancel = state.cancel.subscribe();
                tokio::spawn(async move {
                    let result = match seat_before_start(gate, cancel).await {
                        Ok(place) => {
                            *lock_seated(&seated) = place;
                            provider.lock().await.start().await
                        }
                        Err(e) => Err(e),
                    };
                    let _ = reply.send(result);
                });
            }
            AgentMsg::Bootstrap(reply) => {
                let provider = Arc::clone(&state.provider);
                tokio::spawn(async move {
                    let result = provider.lock().await.bootstrap().await;
                    let _ = reply.send(result);
                });
            }
            AgentMsg::RunStep(request, reply) => {
                let provider = Arc::clone(&state.provider);
                let cancel = state.cancel.subscribe();
                let events = state.events.clone();
                let seat = Seat {
                    gate: state.gate.clone(),
                    starting: !std::mem::replace(&mut state.stepped, true),
                    seated: lock_seated(&state.seated).take(),
                };
                tokio::spawn(async move {
                    let mut provider = provider.lock().await;
                    let verdict =
                        supervised_step(provider.as_mut(), &request, cancel, &events, seat).await;
                    let _ = reply.send(verdict);
                });
            }
            AgentMsg::Cancel => {
                state.cancel.send_replace(true);
            }
            AgentMsg::Close(reply) => {
                // A running step ends first (interrupted); the lock waits for it.
                state.cancel.send_replace(true);
                state.closed = true;
                let provider = Arc::clone(&state.provider);
                tokio::spawn(async move {
                    let teardown = provider.lock().await.close().await;
                    let _ = reply.send(teardown);
                    myself.stop(Some("agent closed".into()));
                });
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut AgentState,
    ) -> Result<(), ActorProcessingErr> {
        if !state.closed {
            state.cancel.send_replace(true);
            let provider = Arc::clone(&state.provider);
            tokio::spawn(async move {
                provider.lock().await.close().await;
            });
        }
        Ok(())
    }
}

/// How often a transient agent fault other than a rate limit (`api_error`) is retried, at
/// most, before it is declared; each retry waits twice as long as the one before, from
/// [`FIRST_BACKOFF`] up to [`MAX_BACKOFF`], and only while the step's timeout leaves room for
/// another attempt. A step the API limited (`rate_limit`, `overloaded`) is retried for as long
/// as its timeout leaves room: it was held back, it did not fail; when the API said how long to
/// wait (`retry-after`), the retry waits at least that long.
const TRANSIENT_RETRIES: u32 = 3;
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// The least time an attempt is started with: less than this is not worth a model call.
const LEAST_ATTEMPT: Duration = Duration::from_secs(2);

/// The session's first place at the model, for an agent CLI (`gate`), before its process is
/// started (docs/ci.md, "A rate-limited nightly"): a session held back by the gate has not
/// started its CLI yet, so twelve sessions at `-j 12` do not start twelve CLIs at once while only
/// the few the API admits could talk. `None` without a gate; an error when the session stopped
/// while it waited.
async fn seat_before_start(
    gate: Option<ModelGate>,
    mut cancel: watch::Receiver<bool>,
) -> Result<Option<Seated>, AgentError> {
    let Some(gate) = gate else {
        return Ok(None);
    };
    tokio::select! {
        entered = gate.enter(true) => Ok(Some(entered)),
        _ = crate::providers::command::cancelled(&mut cancel) => Err(AgentError::Stopped),
    }
}

/// The place taken before the start, whole after any panic (it is one `Option`).
fn lock_seated(
    seated: &std::sync::Mutex<Option<Seated>>,
) -> std::sync::MutexGuard<'_, Option<Seated>> {
    seated
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where a step waits for its place at the model: the suite's gate (none: it does not wait),
/// whether it is the session's first step (started staggered), and the place its session took
/// before the agent started, which its first attempt uses.
struct Seat {
    gate: Option<ModelGate>,
    starting: bool,
    seated: Option<Seated>,
}

impl Seat {
    /// A place at the model (`None` inside when there is no gate), and how long it took; `None`
    /// when the step was cancelled while it waited.
    async fn enter(
        &mut self,
        cancel: &watch::Receiver<bool>,
    ) -> Option<(Option<ModelPermit>, Duration)> {
        if let Some((permit, waited)) = self.seated.take() {
            self.starting = false;
            return Some((Some(permit), waited));
        }
        let Some(gate) = &self.gate else {
            return Some((None, Duration::ZERO));
        };
        let starting = std::mem::replace(&mut self.starting, false);
        let mut waiting = cancel.clone();
        tokio::select! {
            (permit, waited) = gate.enter(starting) => Some((Some(permit), waited)),
            _ = crate::providers::command::cancelled(&mut waiting) => None,
        }
    }
}

/// The API limited the step: the kind it ended on, if a rate limit.
fn limited(verdict: &StepVerdict) -> Option<FaultKind> {
    verdict
        .agent_fault
        .filter(|k| matches!(k, FaultKind::RateLimit | FaultKind::Overloaded))
}

/// One step under the watchdog, the fault policy and the model gate (docs/providers.md, "When
/// the agent, not the app, fails"; docs/ci.md, "A rate-limited nightly"): each attempt waits for
/// its place at the model, a transient API fault is retried with backoff within the step's
/// timeout (the waits at the gate not counted), a watchdog fault left after the restart is the
/// agent's `crashed` or `stalled`.
async fn supervised_step(
    provider: &mut dyn Provider,
    request: &StepRequest,
    cancel: watch::Receiver<bool>,
    events: &UnboundedSender<AgentEvent>,
    mut seat: Seat,
) -> StepVerdict {
    let started = Instant::now();
    let mut waited = Duration::ZERO;
    let mut backoff = FIRST_BACKOFF;
    let mut retries = 0;
    let mut asked = request.clone();
    let mut before: Option<StepVerdict> = None;
    let mut verdict = loop {
        let Some((permit, wait)) = seat.enter(&cancel).await else {
            let mut verdict = StepVerdict::new(
                request.step_id,
                StepStatus::Error,
                "step interrupted: the session is stopping (it was waiting for the model)",
            );
            verdict.interrupted = true;
            if let Some(before) = before.take() {
                verdict.restarts = before.restarts;
                verdict.duration = before.duration;
            }
            break verdict;
        };
        waited += wait;
        asked.throttle = permit.as_ref().map(ModelPermit::signal).unwrap_or_default();
        let mut verdict = restarted_step(provider, &asked, cancel.clone(), events).await;
        if let Some(permit) = permit {
            let faulted = verdict.agent_fault.is_some() || verdict.fault.is_some();
            permit.release(limited(&verdict), faulted);
        }
        if let Some(before) = before.take() {
            verdict.restarts += before.restarts;
            verdict.duration += before.duration;
        }
        let transient = verdict.agent_fault.is_some_and(|k| k.is_transient());
        let bounded = limited(&verdict).is_none();
        if !transient || verdict.interrupted || *cancel.borrow() {
            break verdict;
        }
        if bounded && retries >= TRANSIENT_RETRIES {
            break verdict;
        }
        let left = request
            .timeout
            .saturating_sub(started.elapsed().saturating_sub(waited));
        // The API said how long to stay away (`retry-after`): asking sooner is refused again.
        let pause = backoff.max(verdict.retry_after.unwrap_or_default());
        if left < pause + LEAST_ATTEMPT {
            break verdict;
        }
        tracing::info!(
            "step {}: {}; retrying in {:.1}s",
            request.step_id,
            verdict.message,
            pause.as_secs_f64()
        );
        let mut waiting = cancel.clone();
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            _ = crate::providers::command::cancelled(&mut waiting) => break verdict,
        }
        asked.timeout = left.saturating_sub(pause);
        verdict.duration += pause;
        before = Some(verdict);
        retries += 1;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    };
    verdict.model_wait = waited;
    watchdog_fault(verdict, provider.kind())
}

/// A watchdog fault left after the restart, for an agent CLI: the agent `crashed` (or, when its
/// last words were the CLI's own login error, `auth`) or `stalled`.
fn watchdog_fault(mut verdict: StepVerdict, agent: providers::ProviderKind) -> StepVerdict {
    use crate::model::agent_fault::classify_api_failure;
    let is_cli = agent.info().cli().is_some();
    if !is_cli || verdict.interrupted || verdict.agent_fault.is_some() {
        return verdict;
    }
    let kind = match &verdict.fault {
        Some(providers::AgentFault::Silent { .. }) => FaultKind::Stalled,
        Some(providers::AgentFault::Died(death)) => {
            // The CLI's own last words (its stderr, its last error event), never the model's.
            let said = format!("{}\n{}", death.stderr_tail, verdict.message);
            match classify_api_failure(None, &said) {
                FaultKind::Auth => FaultKind::Auth,
                _ => FaultKind::Crashed,
            }
        }
        None => return verdict,
    };
    verdict.agent_error(kind, agent);
    verdict
}

/// One attempt at a step, with the agent restarted once (its conversation resumed) after a
/// watchdog fault.
async fn restarted_step(
    provider: &mut dyn Provider,
    request: &StepRequest,
    cancel: watch::Receiver<bool>,
    events: &UnboundedSender<AgentEvent>,
) -> StepVerdict {
    let first = provider.run_step(request, cancel.clone()).await;
    let Some(fault) = first.fault.clone() else {
        return first;
    };
    if first.interrupted || *cancel.borrow() {
        return first;
    }
    match provider.restart().await {
        Ok(true) => {}
        Ok(false) => return first,
        Err(e) => {
            let mut verdict = first;
            verdict.message = format!("{}; restarting the agent failed: {e}", verdict.message);
            return verdict;
        }
    }
    let _ = events.send(AgentEvent::Restarted {
        step_id: request.step_id,
        reason: fault.to_string(),
    });
    let mut second = provider.run_step(request, cancel).await;
    second.restarts = first.restarts + 1;
    second.duration += first.duration;
    second
}
