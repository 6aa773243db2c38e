//! The session kit: what setup hands the steps as one value. What always exists once setup is
//! done (the workspace, the session's variables, the harness, the agent's slot) is there without
//! an `Option`; what the config may leave out (the console, the browser, replay) is an `Option`
//! for that reason alone. Teardown takes the kit back as [`Started`], the same pieces as far as
//! a setup got.

use super::*;

/// Everything the steps of a session run with.
pub(super) struct SessionKit {
    pub(super) workdir: PathBuf,
    pub(super) vars: SessionVars,
    pub(super) harness: Harness,
    /// The agent console's MCP server; `None` with `[provider] console = false` or a provider
    /// that runs no model (docs/console.md).
    pub(super) console: Option<ConsoleServer>,
    /// The session's browser (`[browser]`, docs/browser.md).
    pub(super) browser: Option<crate::browser::SessionBrowser>,
    pub(super) agent: AgentSlot,
    /// Replay and recording (docs/replay.md), where they apply.
    pub(super) replay: Option<crate::replay::session::ReplaySession>,
    /// Where the replay's client kept with a pooled browser is handed back.
    pub(super) kept_replay: Option<crate::replay::session::KeptSlot>,
    /// Asks the harness's event forwarder to hand the session everything it holds.
    pub(super) harness_flush: crate::process::event::HarnessFlush,
}

/// What the agent's actor reports besides its verdicts: logs, evidence, its death.
pub(super) type AgentNews = mpsc::UnboundedReceiver<AgentEvent>;

/// The session's one agent, from its arguments to its running actor.
pub(super) enum AgentSlot {
    /// Not started yet: with replay on, it starts when a step first needs it.
    Waiting {
        args: Box<AgentArgs>,
        news: AgentNews,
    },
    /// Its actor is up (it may have failed to start or bootstrap: teardown still closes it).
    /// `news`: its logs, evidence and death, read by the step that runs, so a step's logs are
    /// reported before that step's verdict.
    Spawned {
        actor: ActorRef<AgentMsg>,
        news: AgentNews,
    },
    /// Its start failed before an actor existed: nothing is left to start.
    Gone,
}

impl AgentSlot {
    /// The actor, once there is one.
    pub(super) fn actor(&self) -> Option<&ActorRef<AgentMsg>> {
        match self {
            Self::Spawned { actor, .. } => Some(actor),
            Self::Waiting { .. } | Self::Gone => None,
        }
    }
}

impl From<SessionKit> for Started {
    fn from(kit: SessionKit) -> Self {
        Started {
            harness: Some(kit.harness),
            agent: kit.agent.actor().cloned(),
            workdir: Some(kit.workdir),
            console: kit.console,
            replay: kit.replay,
            browser: kit.browser,
            kept_replay: kit.kept_replay,
            harness_flush: Some(kit.harness_flush),
            ..Started::default()
        }
    }
}
