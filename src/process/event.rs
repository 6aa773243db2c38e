//! What a running harness tells its session, as plain data over a channel the session owns (no
//! dependency on the session's message type). `GaveUp` is the one that fails the session.

use super::exit::ExitStatus;
use chrono::{DateTime, Utc};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessEvent {
    pub command: String,
    pub at: DateTime<Utc>,
    pub kind: HarnessEventKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HarnessEventKind {
    /// A process was started (pid = its process group).
    Started { pid: i32 },
    /// A short-lived command finished successfully.
    Completed { status: ExitStatus },
    /// A short-lived command exited non-zero: the session fails. `reason` names the command,
    /// the status and the end of its log.
    SetupFailed { status: ExitStatus, reason: String },
    /// A short-lived command outlived its `timeout_secs` and was stopped: the session fails.
    SetupTimedOut { reason: String },
    /// A readiness probe passed (`probe` as in [`super::spec::ProbeSpec::describe`]).
    Ready { probe: String, detail: String },
    /// A long-lived command exited on its own; `restart_in` is set when a restart is scheduled.
    Exited {
        status: ExitStatus,
        restart_in: Option<Duration>,
    },
    /// A new process replaced the one that exited.
    Restarted { attempt: u32, pid: i32 },
    /// Every probe passed again after restart number `attempt`.
    ReadyAgain { attempt: u32 },
    /// No restart left, not allowed one, or readiness failed after a restart: the session fails.
    GaveUp { reason: String },
}

impl HarnessEvent {
    pub fn now(command: impl Into<String>, kind: HarnessEventKind) -> Self {
        Self {
            command: command.into(),
            at: Utc::now(),
            kind,
        }
    }
}

/// One line for the harness log: what happened, in words (no `Debug` dumps).
impl std::fmt::Display for HarnessEventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Started { pid } => write!(f, "started (process group {pid})"),
            Self::Completed { status } => write!(f, "finished: {status}"),
            Self::SetupFailed { reason, .. } => write!(f, "failed: {reason}"),
            Self::SetupTimedOut { reason } => write!(f, "timed out: {reason}"),
            Self::Ready { probe, detail } => write!(f, "ready ({probe}: {detail})"),
            Self::Exited { status, restart_in } => match restart_in {
                Some(delay) => write!(
                    f,
                    "exited: {status}; restarting in {:.1}s",
                    delay.as_secs_f64()
                ),
                None => write!(f, "exited: {status}"),
            },
            Self::Restarted { attempt, pid } => {
                write!(f, "restarted (#{attempt}, process group {pid})")
            }
            Self::ReadyAgain { attempt } => write!(f, "ready again after restart {attempt}"),
            Self::GaveUp { reason } => write!(f, "gave up: {reason}"),
        }
    }
}

/// Where a harness's commands send their events: straight into the owner's channel, in order,
/// with the first `GaveUp` also kept where startup watches for it. No task of its own in between,
/// so every event sent before `Harness::start` returns is already in the owner's channel when it
/// does, and a flush of that channel (see [`relay`]) covers it.
#[derive(Clone)]
pub struct HarnessEventSink {
    owner: mpsc::UnboundedSender<HarnessEvent>,
    first_give_up: Arc<watch::Sender<Option<HarnessEvent>>>,
}

impl HarnessEventSink {
    /// The sink, and the watch of its first `GaveUp`.
    pub fn new(
        owner: mpsc::UnboundedSender<HarnessEvent>,
    ) -> (Self, watch::Receiver<Option<HarnessEvent>>) {
        let (first_give_up, watched) = watch::channel(None);
        let sink = Self {
            owner,
            first_give_up: Arc::new(first_give_up),
        };
        (sink, watched)
    }

    /// Best effort: an owner already gone has nothing left to tell.
    pub fn send(&self, event: HarnessEvent) {
        if matches!(event.kind, HarnessEventKind::GaveUp { .. }) {
            self.first_give_up.send_if_modified(|first| {
                let fresh = first.is_none();
                if fresh {
                    *first = Some(event.clone());
                }
                fresh
            });
        }
        let _ = self.owner.send(event);
    }
}

/// Asks a [`relay`] to answer once everything sent before the ask has been forwarded.
pub type HarnessFlush = mpsc::UnboundedSender<oneshot::Sender<()>>;

/// Relays a harness's events, in order, through `forward` in a task of their own (`forward`
/// returns false once there is no one left to tell). The returned [`HarnessFlush`] hands its
/// answer to `flushed` after every event queued before it was forwarded, so whoever waits on
/// it knows those events are ahead of anything it sends next (`flushed` returns false, too,
/// once there is no one left to tell).
pub fn relay(
    mut events: mpsc::UnboundedReceiver<HarnessEvent>,
    mut forward: impl FnMut(HarnessEvent) -> bool + Send + 'static,
    mut flushed: impl FnMut(oneshot::Sender<()>) -> bool + Send + 'static,
) -> HarnessFlush {
    let (flush_tx, mut flush_rx) = mpsc::unbounded_channel::<oneshot::Sender<()>>();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                // Events first: a flush answers after everything already sent.
                biased;
                event = events.recv() => {
                    let Some(event) = event else { break };
                    if !forward(event) {
                        break;
                    }
                }
                Some(done) = flush_rx.recv() => {
                    while let Ok(event) = events.try_recv() {
                        if !forward(event) {
                            return;
                        }
                    }
                    if !flushed(done) {
                        return;
                    }
                }
            }
        }
    });
    flush_tx
}

/// How long a flush is waited for: the events are already queued, so this only bounds a
/// receiver that is no longer answering.
const FLUSH_LIMIT: Duration = Duration::from_secs(2);

/// Waits until `flush`'s [`relay`] has passed on every event sent so far; a relay already gone
/// has nothing left to pass on.
pub async fn wait_for_flush(flush: &HarnessFlush) {
    let (done, flushed) = oneshot::channel();
    if flush.send(done).is_ok() {
        let _ = tokio::time::timeout(FLUSH_LIMIT, flushed).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn ready(command: &str) -> HarnessEvent {
        HarnessEvent::now(
            command,
            HarnessEventKind::Ready {
                probe: "log /up/".into(),
                detail: "up".into(),
            },
        )
    }

    #[test]
    fn an_event_sent_to_the_sink_is_in_the_owners_channel_when_send_returns() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (sink, gave_up) = HarnessEventSink::new(tx);
        sink.send(ready("db"));
        assert_eq!(rx.try_recv().map(|e| e.command).ok(), Some("db".into()));
        assert!(gave_up.borrow().is_none());
        let give_up = |reason: &str| {
            HarnessEvent::now(
                "db",
                HarnessEventKind::GaveUp {
                    reason: reason.into(),
                },
            )
        };
        sink.send(give_up("first"));
        sink.send(give_up("second"));
        assert_eq!(
            gave_up.borrow().as_ref().map(|e| e.kind.clone()),
            Some(HarnessEventKind::GaveUp {
                reason: "first".into()
            })
        );
        assert_eq!(rx.try_recv().ok(), gave_up.borrow().clone());
    }

    #[tokio::test]
    async fn a_flush_answers_after_every_event_sent_before_it_was_forwarded() {
        let (tx, rx) = mpsc::unbounded_channel();
        let forwarded = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&forwarded);
        let flush = relay(
            rx,
            move |event| {
                seen.lock().unwrap().push(event.command);
                true
            },
            |done| done.send(()).is_ok(),
        );
        let names: Vec<String> = (0..500).map(|i| format!("c{i}")).collect();
        for name in &names {
            tx.send(ready(name)).unwrap();
        }
        wait_for_flush(&flush).await;
        assert_eq!(*forwarded.lock().unwrap(), names);
    }
}
