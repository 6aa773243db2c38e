//! Shared rig for the agent tests: a run directory and workspace in a temp dir, session facts with
//! a unique run id, and the check that no process of the run survives.
#![allow(dead_code)]

use bugatti::model::redact::Secrets;
use bugatti::process::{group, registry, subreaper};
use bugatti::providers::{
    AgentEvent, AgentSpec, ProviderKind, SessionFacts, StepRequest, AGENT_MARKER_ENV,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

pub fn support_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support")
}

pub struct Rig {
    pub dir: tempfile::TempDir,
    pub facts: SessionFacts,
    pub events: UnboundedSender<AgentEvent>,
    pub received: UnboundedReceiver<AgentEvent>,
}

impl Rig {
    pub fn new(secrets: &[(&str, &str)]) -> Self {
        subreaper::become_child_subreaper();
        let dir = tempfile::tempdir().expect("tempdir");
        let run_id = uuid::Uuid::now_v7().to_string();
        let run_dir = dir.path().join("runs").join(&run_id);
        let workdir = dir.path().join("work");
        std::fs::create_dir_all(run_dir.join("screenshots")).expect("run dir");
        std::fs::create_dir_all(&workdir).expect("workdir");
        let mut env = vec![
            ("BUGATTI_RUN_ID".to_string(), run_id.clone()),
            ("BUGATTI_SESSION_ID".to_string(), format!("s-{run_id}")),
            ("BUGATTI_RUN_DIR".to_string(), run_dir.display().to_string()),
            ("BUGATTI_WORKDIR".to_string(), workdir.display().to_string()),
        ];
        env.extend(secrets.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let facts = SessionFacts {
            run_id: run_id.clone().into(),
            session_id: format!("s-{run_id}").into(),
            suite_id: "suite-test".into(),
            traceparent: None,
            test_name: "agent test".into(),
            test_file: PathBuf::from("agent.test.toml"),
            project_root: dir.path().to_path_buf(),
            run_dir,
            workdir,
            env,
            secrets: Arc::new(Secrets::new(secrets.iter().map(|(k, v)| (*k, *v)))),
            max_log_bytes: bugatti::process::log_limit::DEFAULT_MAX_LOG_BYTES,
            console: None,
            mcp: Default::default(),
        };
        let (events, received) = unbounded_channel();
        Self {
            dir,
            facts,
            events,
            received,
        }
    }

    pub fn command_spec(&self) -> AgentSpec {
        let mut spec = AgentSpec::new(ProviderKind::Command);
        spec.cmd = Some(format!(
            "python3 {}",
            support_dir().join("scripted_agent.py").display()
        ));
        spec.stop_timeout = Duration::from_secs(3);
        spec.cwd = self.facts.project_root.clone();
        spec
    }

    /// The `shell` provider as a session configures it by default: its steps run in the workspace.
    pub fn shell_spec(&self) -> AgentSpec {
        let mut spec = AgentSpec::new(ProviderKind::Shell);
        spec.cwd = self.facts.workdir.clone();
        spec
    }

    pub fn transcript(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.facts.run_dir.join("transcripts").join(name)).unwrap_or_default()
    }

    pub fn drain_events(&mut self) -> Vec<AgentEvent> {
        let mut out = Vec::new();
        while let Ok(e) = self.received.try_recv() {
            out.push(e);
        }
        out
    }

    /// No agent process of this run is alive and none is registered (helpers such as a test's
    /// own app may still run).
    pub fn assert_agent_stopped(&self) {
        let run_id = self.facts.run_id.as_str();
        let marked = group::live_processes_with_env(AGENT_MARKER_ENV, run_id);
        assert!(marked.is_empty(), "agent processes survive: {marked:?}");
        let left: Vec<_> = registry::registered()
            .into_iter()
            .filter(|g| g.owner.scope.id() == run_id)
            .collect();
        assert!(left.is_empty(), "groups still registered: {left:?}");
    }

    /// Nothing of this run is alive: no process with the agent marker or the run id (the one
    /// survivor check, [`crate::common::assert_nothing_survives`]), no group of this run left in
    /// the registry.
    pub fn assert_no_survivors(&self) {
        let run_id = self.facts.run_id.as_str();
        crate::common::assert_nothing_survives(&[
            (AGENT_MARKER_ENV, run_id),
            ("BUGATTI_RUN_ID", run_id),
        ]);
        let left: Vec<_> = registry::registered()
            .into_iter()
            .filter(|g| g.owner.scope.id() == run_id)
            .collect();
        assert!(left.is_empty(), "groups still registered: {left:?}");
    }
}

pub fn step(step_id: u32, instruction: impl Into<String>, timeout: Duration) -> StepRequest {
    StepRequest {
        step_id: bugatti::model::ids::StepId::new(step_id),
        source_file: "agent.test.toml".into(),
        source_index: step_id as usize,
        include_chain: vec!["root.test.toml".into(), "agent.test.toml".into()],
        instruction: instruction.into(),
        timeout,
        question: None,
        replayed: Vec::new(),
        throttle: Default::default(),
    }
}

/// A step for the scripted agent: its actions as JSON.
pub fn scripted(step_id: u32, actions: serde_json::Value, timeout: Duration) -> StepRequest {
    step(step_id, actions.to_string(), timeout)
}
