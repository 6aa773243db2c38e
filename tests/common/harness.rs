//! Shared fixtures of the harness integration tests: a parent actor standing in for the session,
//! specs tagged with a fresh run id, and the check that nothing a test started survives.
#![allow(dead_code)]

use bugatti::actors::harness::Harness;
use bugatti::process::event::{HarnessEvent, HarnessEventKind};
use bugatti::process::group;
use bugatti::process::spec::{CommandKind, CommandSpec};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc;

/// Stands in for the session: owns the harness as a linked child and ignores its end.
pub struct Parent;

impl Actor for Parent {
    type Msg = ();
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _myself: ActorRef<()>, _args: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<()>,
        _message: SupervisionEvent,
        _state: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub run_id: String,
    pub parent: ActorRef<()>,
    pub harness: Harness,
    pub events: mpsc::UnboundedReceiver<HarnessEvent>,
}

impl Fixture {
    pub async fn new() -> Self {
        bugatti::process::subreaper::become_child_subreaper();
        let dir = tempfile::tempdir().expect("tempdir");
        let run_id = uuid::Uuid::now_v7().to_string();
        let (parent, _) = Actor::spawn(None, Parent, ()).await.expect("parent");
        let (tx, events) = mpsc::unbounded_channel();
        let harness = Harness::spawn(
            parent.get_cell(),
            bugatti::process::Scope::run(run_id.clone()),
            tx,
        )
        .await
        .expect("harness");
        Self {
            dir,
            run_id,
            parent,
            harness,
            events,
        }
    }

    pub fn log(&self, name: &str) -> PathBuf {
        self.dir.path().join("logs").join(format!("{name}.log"))
    }

    /// A spec running in the fixture's directory with `BUGATTI_RUN_ID` set.
    pub fn spec(&self, name: &str, kind: CommandKind, cmd: &str) -> CommandSpec {
        let mut spec = CommandSpec::new(name, kind, cmd, self.dir.path(), self.log(name));
        spec.env
            .push(("BUGATTI_RUN_ID".to_string(), self.run_id.clone()));
        spec.stop_timeout = Duration::from_secs(2);
        spec
    }

    /// Waits (bounded) for the next event matching `want`.
    pub async fn next_event(&mut self, want: impl Fn(&HarnessEvent) -> bool) -> HarnessEvent {
        let events = &mut self.events;
        tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                let event = events.recv().await.expect("event channel open");
                if want(&event) {
                    return event;
                }
            }
        })
        .await
        .expect("expected event did not arrive within 60 s")
    }

    /// Every event received so far.
    pub fn drain_events(&mut self) -> Vec<HarnessEvent> {
        std::iter::from_fn(|| self.events.try_recv().ok()).collect()
    }

    /// Asserts that no process carrying this run id is alive (after a bounded settle, because
    /// killed processes take a moment to leave /proc), then stops the parent.
    pub async fn assert_nothing_left(self) {
        let mut left = Vec::new();
        for _ in 0..200 {
            left = group::live_processes_with_env("BUGATTI_RUN_ID", &self.run_id);
            if left.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(left.is_empty(), "processes survived: {}", describe(&left));
        let ours: Vec<_> = bugatti::process::registry::registered()
            .into_iter()
            .filter(|g| g.owner.scope.id() == self.run_id)
            .collect();
        assert!(ours.is_empty(), "groups still registered: {ours:?}");
        self.parent.stop(None);
    }
}

fn describe(pids: &[i32]) -> String {
    pids.iter()
        .map(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            format!("{p} `{cmd}`")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn is_gave_up(e: &HarnessEvent) -> bool {
    matches!(e.kind, HarnessEventKind::GaveUp { .. })
}

/// A small Python HTTP server answering 200 on every path, printing a line once listening.
pub fn python_http_server(port: u16) -> String {
    format!("exec python3 -u -m http.server {port} --bind 127.0.0.1")
}
