//! The session's setup, in the order of docs/reports.md: workspace, ports and variables, the
//! browser and the harness together (the commands get its `BUGATTI_CDP_URL`, known before it is
//! up), a checkpoint restored, the agent's console and MCP servers, the agent's arguments and
//! replay. It ends in the [`SessionKit`] the steps run with; what a failed setup started is left
//! in [`Started`], for teardown.

mod agent;
mod browser;
mod harness;
mod servers;

use super::*;
use crate::process::event::HarnessFlush;
use crate::replay::session::HarnessWatch;
use crate::replay::session::{ReplaySession, SessionValues};
pub(super) use agent::AgentStartFailure;
pub(super) use browser::BROWSER;
use harness::HarnessUp;

/// A setup under way: the session it is for and what it has started so far.
pub(super) struct Setup<'s> {
    session: &'s Driver,
    started: &'s mut Started,
}

impl<'s> Setup<'s> {
    pub(super) fn new(session: &'s Driver, started: &'s mut Started) -> Self {
        Self { session, started }
    }

    /// Workspace, variables, harness, console, the agent's arguments, replay: the session's kit.
    /// What it starts is in `started` until the kit takes it (a failed setup's, for teardown).
    pub(super) async fn kit(mut self) -> Result<SessionKit, Ending> {
        let session = self.session;
        let workdir = workspace()?;
        self.started.workdir = Some(workdir.clone());
        let id = SessionIdentity {
            run_id: session.run_id.clone(),
            session_id: session.session_id.clone(),
            run_dir: session.run_dir(),
            workdir: workdir.clone(),
            project_root: session.suite.project_root.clone(),
        };
        let (vars, log_sources, harness, harness_flush) =
            self.browser_and_harness(&id, &workdir).await?;
        let agent = agent_spec(&session.test.effective, &id, &vars)
            .map_err(|e| Ending::error(e.to_string()))?;

        // Resuming: the saved state comes back once the harness is up, before the agent starts.
        if let Some(name) = &session.suite.from_checkpoint {
            session
                .checkpoint(CheckpointAction::Restore, name, None, &vars)
                .await?;
        }

        // The console: served before the agent starts, so that its first turn finds it.
        let console = self.serve_console(&agent, &vars, log_sources).await?;
        let mcp = self.mcp_servers(&agent, &vars)?;
        let (args, news) = agent_args(session, agent, &vars, &workdir, console, mcp);
        let replay = self.replay(&args, &vars).await;
        // Everything started is the kit's now: teardown gets it back from the kit.
        let kit = SessionKit {
            workdir,
            vars,
            harness,
            console: self.started.console.take(),
            browser: self.started.browser.take(),
            agent: AgentSlot::Waiting {
                args: Box::new(args),
                news,
            },
            replay,
            kept_replay: self.started.kept_replay.take(),
            harness_flush,
        };
        *self.started = Started::default();
        Ok(kit)
    }

    /// docs/browser.md: the browser and the harness, started together. The browser's endpoint
    /// is bound before Chromium starts, so its address (`BUGATTI_CDP_URL`) is in the session's
    /// variables from the start: the harness commands and the replay's Playwright MCP client
    /// (Node takes about a second) come up beside Chromium instead of after it, and a command
    /// that connects before the browser is up waits in the endpoint's backlog until it is. So
    /// does a pooled browser started for the session; an idle pooled browser's context comes
    /// first (the browser may give way to another at another address), and so does a browser
    /// whose address could not be bound ahead. What either started is in `started` whatever the
    /// other came to, for teardown.
    async fn browser_and_harness(
        &mut self,
        id: &SessionIdentity,
        workdir: &Path,
    ) -> Result<(SessionVars, Vec<LogSource>, Harness, HarnessFlush), Ending> {
        let session = self.session;
        let Some(config) = &session.test.effective.browser else {
            return self.harness_up(id, None).await;
        };
        if self.uses_browser_pool(&config.value) {
            let held = self.hold_pooled_browser(&config.value, id, workdir)?;
            if held.may_move() {
                // An idle browser may be unable to serve and give way to one at another address:
                // the harness gets the address the session is served at (its context is made in
                // a few milliseconds).
                let vars = self.pooled_browser_up(held, id).await?;
                return self.harness_up(id, Some(vars)).await;
            }
            // A browser started on the session's own listener is served at the held address:
            // the harness starts beside it, its connections held until the context is made.
            let vars = held.vars().clone();
            let (browser, harness) = tokio::join!(
                browser::pooled_browser_started(session, held),
                self.harness_up(id, Some(vars))
            );
            let (browser, up) = browser?;
            self.started.browser = Some(browser);
            if let browser::PooledUp::Moved = up {
                return Err(Ending::error(
                    "the pooled browser started for the session is served at another address than it was held at",
                ));
            }
            return harness;
        }
        let listener = crate::browser::endpoint::bind_ahead().ok().map(Arc::new);
        let Some(port) = listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.port())
        else {
            self.started.browser =
                Some(browser::start_browser(session, &config.value, workdir, None).await?);
            return self.harness_up(id, None).await;
        };
        self.started.early_cdp_url =
            Some(crate::browser::endpoint::ws_url(port, &session.tokens.cdp));
        let vars = self.session_vars_now(id)?;
        let browser_up = self.start_replay_browser_before(id, &vars)?;
        // The browser's start reads the session only: it runs beside the harness's, which
        // keeps what it starts in `started`.
        let browser = async {
            let started = browser::start_browser(session, &config.value, workdir, listener).await;
            if let (Ok(_), Some(up)) = (&started, browser_up) {
                let _ = up.send(());
            }
            started
        };
        let (browser, harness) = tokio::join!(browser, self.harness_up(id, Some(vars)));
        self.started.browser = Some(browser?);
        harness
    }

    /// The harness up, once more with fresh ports if an `auto` one was taken (see
    /// [`Self::start_harness`]).
    async fn harness_up(
        &mut self,
        id: &SessionIdentity,
        mut first_vars: Option<SessionVars>,
    ) -> Result<(SessionVars, Vec<LogSource>, Harness, HarnessFlush), Ending> {
        let mut retry = None;
        loop {
            match self
                .start_harness(id, retry.take(), first_vars.take())
                .await?
            {
                HarnessUp::Up(mut up) => {
                    // The commands' live output, for the console and the watch.
                    let (_, logs, harness, _) = &mut *up;
                    for log in logs.iter_mut() {
                        log.hub = harness.output(&log.name).await;
                    }
                    // Ready now: replay watches the harness from here, beside the browser's
                    // start.
                    self.started.harness_watch = Some(HarnessWatch::begin(logs));
                    return Ok(*up);
                }
                HarnessUp::PortTaken(given_up) => retry = Some(given_up),
            }
        }
    }

    /// Replay and recording for the session (`None` where they do not apply); browser steps
    /// replay through the same Playwright MCP the agent gets.
    async fn replay(&mut self, args: &AgentArgs, vars: &SessionVars) -> Option<ReplaySession> {
        let replay = ReplaySession::new(
            &self.session.test,
            &self.session.suite.project_root,
            SessionValues {
                vars: &vars.vars,
                ports: &vars.ports,
                env: crate::providers::agent_env(&args.spec, &args.facts),
                agent_cwd: &args.spec.cwd,
            },
        );
        let replay = match (replay, args.facts.mcp.browser.clone()) {
            (Some(replay), Some(command)) => {
                let spec = self.replay_browser(command, &args.spec, vars);
                Some(replay.with_browser_client(&spec, &mut self.started.replay_browser))
            }
            (replay, _) => replay,
        };
        // Watched where the agent console is on (the agent looks through it).
        let watch = self
            .started
            .harness_watch
            .take()
            .and_then(|w| w.filter(|_| self.started.console.is_some()));
        let replay = replay.map(|r| r.with_harness_watch(watch));
        // A client started ahead that is not this one (a retried setup's other ports) goes.
        if let Some(unused) = self.started.replay_browser.take() {
            unused.stop().await;
        }
        replay
    }

    /// The session's variables for one setup: its ports picked, its secrets, the browser's
    /// `BUGATTI_CDP_URL` (known before the browser is up).
    pub(super) fn session_vars_now(&self, id: &SessionIdentity) -> Result<SessionVars, Ending> {
        let mut vars = session_vars(
            &self.session.test.effective,
            id,
            &self.session.suite.shared_ports,
        )
        .map_err(|e| Ending::error(e.to_string()))?;
        vars.secrets = Arc::clone(&self.session.secrets);
        if let Some(url) = self.started.cdp_url() {
            vars.env
                .push((crate::browser::CDP_URL_ENV.to_string(), url));
        }
        Ok(vars)
    }
}

/// The session's workspace, owner-only whatever the umask: a kept one holds what the session left.
fn workspace() -> Result<PathBuf, Ending> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix(crate::model::artifacts::WORKSPACE_PREFIX)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .map(|dir| dir.keep())
        .map_err(|e| Ending::error(format!("cannot create the session workspace: {e}")))
}

/// The agent's arguments: its spec, what it is told of `session`, its news channel (the
/// receiving end returned, for the kit).
fn agent_args(
    session: &Driver,
    spec: crate::providers::AgentSpec,
    vars: &SessionVars,
    workdir: &Path,
    console: Option<crate::console::server::Endpoint>,
    mcp: crate::providers::McpServers,
) -> (AgentArgs, AgentNews) {
    let (events, news) = mpsc::unbounded_channel();
    let facts = crate::providers::SessionFacts {
        run_id: session.run_id.as_str().into(),
        session_id: session.session_id.as_str().into(),
        suite_id: session.suite.suite_id.as_str().into(),
        traceparent: session.suite.traceparent.clone(),
        test_name: session.test.name.clone(),
        test_file: session.test.rel_path.clone(),
        project_root: session.suite.project_root.clone(),
        run_dir: session.run_dir(),
        workdir: workdir.to_path_buf(),
        env: vars.env.clone(),
        secrets: Arc::clone(&vars.secrets),
        max_log_bytes: session.test.effective.supervisor.max_log_bytes.value,
        console,
        mcp,
    };
    (
        AgentArgs {
            spec,
            facts,
            events,
            // An agent CLI talks to a model whose API can tell it to slow down; a `command` or
            // `shell` agent is the project's own program.
            gate: session
                .test
                .effective
                .provider
                .name
                .value
                .info()
                .cli()
                .map(|_| session.suite.model_gate.clone()),
        },
        news,
    )
}
