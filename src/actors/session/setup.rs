//! The session's setup: workspace, ports, environment and the harness brought up, with the one
//! retry of a setup that lost its auto port to another process ("address already in use").

use super::*;
use crate::replay::session::{BrowserAhead, BrowserClientSpec, ReplaySession, SessionValues};

impl Driver {
    /// Workspace, variables, harness, console, the agent's arguments, replay: the session's kit.
    /// What it starts is in `started` until the kit takes it (a failed setup's, for teardown).
    pub(super) async fn setup(&self, started: &mut Started) -> Result<SessionKit, Ending> {
        // Owner-only whatever the umask: a kept workspace holds what the session left.
        use std::os::unix::fs::PermissionsExt;
        let workdir = tempfile::Builder::new()
            .prefix(crate::model::artifacts::WORKSPACE_PREFIX)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|e| Ending::error(format!("cannot create the session workspace: {e}")))?
            .keep();
        started.workdir = Some(workdir.clone());
        let id = SessionIdentity {
            run_id: self.run_id.clone(),
            session_id: self.session_id.clone(),
            run_dir: self.run_dir(),
            workdir: workdir.clone(),
            project_root: self.suite.project_root.clone(),
        };
        let effective = &self.test.effective;
        // docs/browser.md: the browser first, so that the commands get its BUGATTI_CDP_URL.
        let mut first_vars = None;
        if let Some(config) = &effective.browser {
            // Its endpoint's address is known before it is up: the session's variables and the
            // replay's Playwright MCP client (Node takes about a second) need not wait for it.
            let listener = crate::browser::endpoint::bind_ahead().ok().map(Arc::new);
            let mut browser_up = None;
            if let Some(port) = listener
                .as_ref()
                .and_then(|l| l.local_addr().ok())
                .map(|a| a.port())
            {
                started.early_cdp_url =
                    Some(crate::browser::endpoint::ws_url(port, &self.tokens.cdp));
                let vars = self.session_vars_now(started, &id)?;
                browser_up = self.start_replay_browser_before(started, &id, &vars)?;
                first_vars = Some(vars);
            }
            started.browser = Some(
                self.start_browser(&config.value, &workdir, listener)
                    .await?,
            );
            if let Some(up) = browser_up {
                let _ = up.send(());
            }
        }
        let mut retry = None;
        let (vars, log_sources, harness, harness_flush) = loop {
            match self
                .start_harness(started, &id, retry.take(), first_vars.take())
                .await?
            {
                HarnessUp::Up(up) => break *up,
                HarnessUp::PortTaken(given_up) => retry = Some(given_up),
            }
        };
        let agent = agent_spec(effective, &id, &vars).map_err(|e| Ending::error(e.to_string()))?;

        // Resuming: the saved state comes back once the harness is up, before the agent starts.
        if let Some(name) = &self.suite.from_checkpoint {
            self.checkpoint(CheckpointAction::Restore, name, None, &vars)
                .await?;
        }

        // The console: served before the agent starts, so that its first turn finds it.
        let console = self
            .serve_console(started, &agent, &vars, log_sources, &harness)
            .await?;
        let mcp = self.mcp_servers(started, &agent, &vars)?;

        // The agent: one conversation for the whole session.
        let (agent_tx, agent_rx) = mpsc::unbounded_channel();
        let facts = crate::providers::SessionFacts {
            run_id: self.run_id.as_str().into(),
            session_id: self.session_id.as_str().into(),
            suite_id: self.suite.suite_id.as_str().into(),
            test_name: self.test.name.clone(),
            test_file: self.test.rel_path.clone(),
            project_root: self.suite.project_root.clone(),
            run_dir: self.run_dir(),
            workdir: workdir.clone(),
            env: vars.env.clone(),
            secrets: Arc::clone(&vars.secrets),
            max_log_bytes: effective.supervisor.max_log_bytes.value,
            console,
            mcp,
        };
        let replay_env = crate::providers::agent_env(&agent, &facts);
        let agent_cwd = agent.cwd.clone();
        let replay_browser = facts.mcp.browser.clone();
        let args = AgentArgs {
            spec: agent,
            facts,
            events: agent_tx,
        };
        let replay = ReplaySession::new(
            &self.test,
            &self.suite.project_root,
            SessionValues {
                vars: &vars.vars,
                ports: &vars.ports,
                env: replay_env,
                agent_cwd: &agent_cwd,
            },
        );
        let replay = match (replay, replay_browser) {
            // Browser steps replay through the same Playwright MCP the agent gets.
            (Some(replay), Some(command)) => {
                let spec = self.replay_browser(command, &args.spec, &vars);
                Some(replay.with_browser_client(&spec, &mut started.replay_browser))
            }
            (replay, _) => replay,
        };
        // A client started ahead that is not this one (a retried setup's other ports) goes.
        if let Some(unused) = started.replay_browser.take() {
            unused.stop().await;
        }
        // Everything started is the kit's now: teardown gets it back from the kit.
        let kit = SessionKit {
            workdir,
            vars,
            harness,
            console: started.console.take(),
            browser: started.browser.take(),
            agent: AgentSlot::Waiting {
                args: Box::new(args),
                news: agent_rx,
            },
            replay,
            harness_flush,
        };
        *started = Started::default();
        Ok(kit)
    }

    /// The agent console (docs/console.md), unless `[provider] console = false` or the provider
    /// is `shell` (it runs no model: nothing would call it); its endpoint for the agent.
    async fn serve_console(
        &self,
        started: &mut Started,
        agent: &crate::providers::AgentSpec,
        vars: &SessionVars,
        log_sources: Vec<crate::console::logs::LogSource>,
        harness: &Harness,
    ) -> Result<Option<crate::console::server::Endpoint>, Ending> {
        let effective = &self.test.effective;
        // `shell` runs no model: nothing would call it.
        let wanted = effective.provider.console.value && agent.provider.info().mcp.serves_console();
        if wanted {
            let mut logs = log_sources;
            for log in &mut logs {
                log.hub = harness.output(&log.name).await;
            }
            let console = Arc::new(
                Console::new(ConsoleSetup {
                    run_id: self.run_id.as_str().into(),
                    run_dir: self.run_dir(),
                    // docs/console.md: where the agent itself runs, so a command means the same through the
                    // console as through the agent's own shell.
                    workdir: agent.cwd.clone(),
                    env: vars.env.clone(),
                    secrets: Arc::clone(&vars.secrets),
                    logs,
                })
                .with_max_log_bytes(effective.supervisor.max_log_bytes.value),
            );
            let server = ConsoleServer::start_with_token(console, self.tokens.console.clone())
                .await
                .map_err(|e| Ending::error(e.to_string()))?;
            let endpoint = server.endpoint().clone();
            started.console = Some(server);
            Ok(Some(endpoint))
        } else {
            Ok(None)
        }
    }

    /// The agent's MCP servers besides the console: the browser's Playwright MCP (its output
    /// and secrets file in the run directory), the project's own `.mcp.json` for Claude Code.
    fn mcp_servers(
        &self,
        started: &mut Started,
        agent: &crate::providers::AgentSpec,
        vars: &SessionVars,
    ) -> Result<crate::providers::McpServers, Ending> {
        Ok(crate::providers::McpServers {
            browser: self.browser_mcp_command(started, vars)?,
            // Claude Code's format; the other agents do not read it.
            project: if agent.provider.info().mcp.reads_project_mcp_json() {
                project_mcp_servers(&agent.cwd, started.browser.is_some())
                    .map_err(|e| Ending::error(e.to_string()))?
            } else {
                None
            },
        })
    }

    /// The agent's Playwright MCP command for the session's browser (`None` without one, or
    /// with `mcp = false`), found on the session's `PATH`. Its files are written the first time
    /// (and again only if the `PATH` changed): a client started ahead may be reading them.
    fn browser_mcp_command(
        &self,
        started: &mut Started,
        vars: &SessionVars,
    ) -> Result<Option<crate::browser::mcp::McpCommand>, Ending> {
        let path_var = vars
            .env
            .iter()
            .rev()
            .find(|(name, _)| name == "PATH")
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var("PATH").ok());
        if let Some((found_on, command)) = &started.browser_mcp {
            if *found_on == path_var {
                return Ok(Some(command.clone()));
            }
        }
        // The browser's endpoint address, known ahead of the browser itself.
        let resolved = started.cdp_url().and_then(|url| {
            self.test
                .effective
                .browser
                .as_ref()
                .filter(|config| config.value.mcp)
                .map(|config| {
                    crate::browser::mcp::McpCommand::resolve(
                        config.value.mcp_cmd.as_deref(),
                        path_var.as_deref(),
                        &url,
                    )
                })
        });
        let command = match resolved {
            Some(Ok(mut command)) => {
                // The endpoint (and its token) in an owner-only file, not on its command line.
                command
                    .attach(&self.run_paths().browser_mcp_config())
                    .map_err(|e| Ending::error(e.to_string()))?;
                // Its snapshots and downloads go with the run, not into the project.
                if !command.args.iter().any(|a| a.starts_with("--output-dir")) {
                    command.args.push("--output-dir".to_string());
                    command
                        .args
                        .push(self.run_paths().browser_dir().display().to_string());
                }
                // What it returns shows `<secret>NAME</secret>`, never a `[secrets]` value.
                let secrets = self.test.effective.secret_pairs();
                if !secrets.is_empty() && !command.args.iter().any(|a| a == "--secrets") {
                    let file = self.run_paths().browser_secrets();
                    crate::browser::secrets_file::write(&file, &secrets).map_err(|e| {
                        Ending::error(format!(
                            "cannot write Playwright MCP's secrets file {}: {e}",
                            file.display()
                        ))
                    })?;
                    command.args.push("--secrets".to_string());
                    command.args.push(file.display().to_string());
                }
                command
            }
            Some(Err(e)) => return Err(Ending::error(e.to_string())),
            None => return Ok(None),
        };
        started.browser_mcp = Some((path_var, command.clone()));
        Ok(Some(command))
    }

    /// What the replay's Playwright MCP client for `command` runs: in the agent's directory,
    /// with the agent's environment but for the console.
    fn replay_browser(
        &self,
        command: crate::browser::mcp::McpCommand,
        agent: &crate::providers::AgentSpec,
        vars: &SessionVars,
    ) -> BrowserClientSpec {
        BrowserClientSpec {
            command,
            run_id: self.run_id.clone(),
            cwd: agent.cwd.clone(),
            env: crate::providers::agent_env_without_console(agent, &vars.env, &self.run_id),
            run_dir: self.run_dir(),
        }
    }

    /// Starts the replay's Playwright MCP client now, beside the harness's start, when this
    /// session will replay browser actions: Node and Playwright MCP take about a second to come
    /// up, the harness often as long. Only a client the session's replay would run is started
    /// (the replay takes it over only if it is the same).
    fn start_replay_browser_ahead(
        &self,
        started: &mut Started,
        id: &SessionIdentity,
        vars: &SessionVars,
        browser_up: Option<tokio::sync::oneshot::Receiver<()>>,
    ) -> Result<bool, Ending> {
        let no_browser = started.browser.is_none() && started.early_cdp_url.is_none();
        if no_browser || started.replay_browser.is_some() {
            return Ok(false);
        }
        let Some(action_pages) =
            ReplaySession::browser_replay_ahead(&self.test, &self.suite.project_root)
        else {
            return Ok(false);
        };
        // An agent that cannot be planned is reported where it is planned for good.
        let Ok(agent) = agent_spec(&self.test.effective, id, vars) else {
            return Ok(false);
        };
        if let Some(command) = self.browser_mcp_command(started, vars)? {
            let spec = self.replay_browser(command, &agent, vars);
            started.replay_browser = Some(BrowserAhead::start(&spec, action_pages, browser_up));
            return Ok(true);
        }
        Ok(false)
    }

    /// [`Self::start_replay_browser_ahead`] before the browser is up (its endpoint's address
    /// known ahead, `vars` the first setup's): the client comes up beside Chromium and attaches
    /// once the returned sender says the browser is up (dropped unsent: never).
    fn start_replay_browser_before(
        &self,
        started: &mut Started,
        id: &SessionIdentity,
        vars: &SessionVars,
    ) -> Result<Option<tokio::sync::oneshot::Sender<()>>, Ending> {
        let (up, browser_up) = tokio::sync::oneshot::channel();
        let started_ahead = self.start_replay_browser_ahead(started, id, vars, Some(browser_up))?;
        Ok(started_ahead.then_some(up))
    }

    /// The session's variables for one setup: its ports picked, its secrets, the browser's
    /// `BUGATTI_CDP_URL` (known before the browser is up).
    fn session_vars_now(
        &self,
        started: &Started,
        id: &SessionIdentity,
    ) -> Result<SessionVars, Ending> {
        let mut vars = session_vars(&self.test.effective, id, &self.suite.shared_ports)
            .map_err(|e| Ending::error(e.to_string()))?;
        vars.secrets = Arc::clone(&self.secrets);
        if let Some(url) = started.cdp_url() {
            vars.env
                .push((crate::browser::CDP_URL_ENV.to_string(), url));
        }
        Ok(vars)
    }

    /// Spawns the waiting agent's actor and has it start its process and send the bootstrap; a
    /// slot not waiting is left as it is.
    pub(super) async fn start_agent(&self, slot: &mut AgentSlot) -> Result<(), AgentStartFailure> {
        let nothing_sent = |ending| AgentStartFailure {
            ending,
            nothing_sent: true,
        };
        let (args, news) = match std::mem::replace(slot, AgentSlot::Gone) {
            AgentSlot::Waiting { args, news } => (args, news),
            other => {
                *slot = other;
                return Ok(());
            }
        };
        let (actor, _) = Actor::spawn_linked(None, AgentActor, *args, self.myself.get_cell())
            .await
            .map_err(|e| {
                nothing_sent(Ending::error(format!("cannot start the agent actor: {e}")))
            })?;
        *slot = AgentSlot::Spawned {
            actor: actor.clone(),
            news,
        };
        for phase in ["start", "bootstrap"] {
            let call = async {
                if phase == "start" {
                    ractor::call!(actor, AgentMsg::Start)
                } else {
                    ractor::call!(actor, AgentMsg::Bootstrap)
                }
            };
            let failed = |ending| AgentStartFailure {
                ending,
                nothing_sent: phase == "start",
            };
            tokio::select! {
                answer = call => match answer {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => return Err(failed(Ending::error(e.to_string()))),
                    Err(e) => return Err(failed(Ending::error(format!("the agent actor did not answer {phase}: {e}")))),
                },
                reason = Self::until_stopped(self.stop.clone()) => return Err(failed(Ending::from_stop(reason))),
            }
        }
        Ok(())
    }

    /// Starts the session's browser (docs/browser.md), reported like a harness command named `browser`.
    async fn start_browser(
        &self,
        config: &crate::model::browser::BrowserConfig,
        workdir: &std::path::Path,
        listener: Option<Arc<std::net::TcpListener>>,
    ) -> Result<crate::browser::SessionBrowser, Ending> {
        let mut places = crate::browser::session::BrowserPlaces::new(workdir, &self.run_paths());
        places.max_log_bytes = self.test.effective.supervisor.max_log_bytes.value;
        places.token = Some(self.tokens.cdp.clone());
        places.listener = listener;
        let path_var = std::env::var("PATH").ok();
        // The session's identity, as every harness process has it (the launch adds the run id).
        let env = vec![
            (
                "BUGATTI_SESSION_ID".to_string(),
                self.session_id.to_string(),
            ),
            (
                "BUGATTI_PROJECT_ROOT".to_string(),
                self.suite.project_root.display().to_string(),
            ),
        ];
        let start = crate::browser::SessionBrowser::start(
            config,
            &places,
            Scope::run(self.run_id.clone()),
            env,
            path_var.as_deref(),
        );
        let browser = tokio::select! {
            started = start => started,
            reason = Self::until_stopped(self.stop.clone()) => return Err(Ending::from_stop(reason)),
        };
        match browser {
            Ok(browser) => {
                let b = browser.browser();
                let sandbox = if b.no_sandbox() {
                    ", --no-sandbox: running as root"
                } else {
                    ""
                };
                self.emit(EventKind::SetupStatus {
                    command: BROWSER.to_string(),
                    state: SetupState::Ready {
                        probe: format!(
                            "{} at {}{sandbox}",
                            b.version().browser,
                            b.shown_endpoint()
                        ),
                    },
                });
                Ok(browser)
            }
            Err(e) => {
                let reason = format!("the browser did not start: {e}");
                self.emit(EventKind::SetupStatus {
                    command: BROWSER.to_string(),
                    state: SetupState::Failed {
                        reason: reason.clone(),
                        exit_code: None,
                    },
                });
                Err(Ending::error(reason))
            }
        }
    }

    /// Picks the session's ports, tells them, and brings the harness up. When a command says its
    /// address is in use while the session has `auto` ports (one was taken between its pick and
    /// the server's bind), that harness is torn down and, unless this already is the retry
    /// (`retry`: what the first try said and the ports it gave up), the caller tries once more.
    pub(super) async fn start_harness(
        &self,
        started: &mut Started,
        id: &SessionIdentity,
        retry: Option<PortRetry>,
        first_vars: Option<SessionVars>,
    ) -> Result<HarnessUp, Ending> {
        let effective = &self.test.effective;
        let is_retry = retry.is_some();
        // The first setup's, when the replay's client was started with them before the browser.
        let vars = match first_vars {
            Some(vars) => vars,
            None => self.session_vars_now(started, id)?,
        };
        self.emit(EventKind::SessionPrepared {
            workspace: id.workdir.display().to_string(),
            ports: vars.ports.clone(),
            retried_after: retry,
        });
        let mut specs = command_specs(
            effective,
            CommandScope::Test,
            &vars,
            &self.suite.project_root,
            &self.run_paths().logs_dir(),
            &self.suite.skip_cmd,
        )
        .map_err(|e| Ending::error(e.to_string()))?;
        for spec in &mut specs {
            if self.suite.skip_readiness.contains(&spec.name) {
                spec.probes.clear();
            }
            if spec.skipped {
                self.emit(EventKind::SetupStatus {
                    command: spec.name.clone(),
                    state: SetupState::Skipped,
                });
            }
        }

        let auto_ports: BTreeMap<String, u16> = vars
            .ports
            .iter()
            .filter(|(name, _)| {
                !self.suite.shared_ports.contains_key(*name)
                    && effective
                        .ports
                        .get(*name)
                        .is_some_and(|p| p.value == PortSpec::Auto)
            })
            .map(|(name, port)| (name.clone(), *port))
            .collect();
        let may_retry = !is_retry && !auto_ports.is_empty();

        // The harness: its events come back through the session's mailbox. While a setup that
        // may be retried runs, a command giving up is held back (start reports it anyway): it
        // must not stop the session before the retry is decided.
        let gate = Arc::new(std::sync::Mutex::new(if may_retry {
            GiveUpGate::Hold(Vec::new())
        } else {
            GiveUpGate::Forward
        }));
        let (harness_tx, harness_rx) = mpsc::unbounded_channel();
        let harness_flush =
            forward_harness_events(self.myself.clone(), Arc::clone(&gate), harness_rx);
        started.harness_flush = Some(harness_flush.clone());
        let log_sources: Vec<LogSource> = specs
            .iter()
            .filter(|spec| !spec.skipped)
            .map(|spec| LogSource {
                name: spec.name.clone(),
                kind: spec.kind.as_str().to_string(),
                path: spec.log_path.clone(),
                hub: None,
            })
            .collect();
        let harness = Harness::spawn(
            self.myself.get_cell(),
            Scope::run(self.run_id.clone()),
            harness_tx,
        )
        .await
        .map_err(|e| Ending::error(e.to_string()))?;
        started.harness = Some(harness.clone());
        if !is_retry {
            self.start_replay_browser_ahead(started, id, &vars, None)?;
        }
        if !specs.is_empty() {
            let result = tokio::select! {
                result = harness.start(specs) => result,
                reason = Self::until_stopped(self.stop.clone()) => return Err(Ending::from_stop(reason)),
            };
            let retrying =
                matches!(&result, Err(e) if may_retry && says_address_in_use(&e.to_string()));
            let held = std::mem::replace(
                &mut *gate.lock().unwrap_or_else(|poisoned| poisoned.into_inner()),
                if retrying {
                    GiveUpGate::Drop
                } else {
                    GiveUpGate::Forward
                },
            );
            if let GiveUpGate::Hold(held) = held {
                if !retrying {
                    for event in held {
                        let _ = self.myself.cast(SessionMsg::Harness(event));
                    }
                }
            }
            if let Err(e) = result {
                if !retrying {
                    return Err(Ending::error(e.to_string()));
                }
                // What the first try started goes down before fresh ports are picked.
                for record in harness.teardown_all(grace_is_over()).await {
                    if !record.skipped {
                        self.report_teardown(&record);
                    }
                }
                started.harness = None;
                return Ok(HarnessUp::PortTaken(PortRetry {
                    reason: e.to_string(),
                    ports: auto_ports,
                }));
            }
        }
        Ok(HarnessUp::Up(Box::new((
            vars,
            log_sources,
            harness,
            harness_flush,
        ))))
    }
}

/// Asks a harness's event forwarder to answer once the session has reported what it sent.
pub(super) type HarnessFlush = mpsc::UnboundedSender<tokio::sync::oneshot::Sender<()>>;

/// Forwards a harness's events to the session (through `gate`) in a task of their own; the
/// returned sender asks it to answer once the session has reported everything sent before
/// (see `SessionMsg::HarnessFlushed`).
fn forward_harness_events(
    me: ActorRef<SessionMsg>,
    gate: Arc<std::sync::Mutex<GiveUpGate>>,
    mut harness_rx: mpsc::UnboundedReceiver<HarnessEvent>,
) -> mpsc::UnboundedSender<tokio::sync::oneshot::Sender<()>> {
    let (flush_tx, mut flush_rx) = mpsc::unbounded_channel::<tokio::sync::oneshot::Sender<()>>();
    tokio::spawn(async move {
        let forward = |event| {
            let event = gate
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .pass(event);
            match event {
                Some(event) => me.cast(SessionMsg::Harness(event)).is_ok(),
                None => true,
            }
        };
        loop {
            tokio::select! {
                // Events first: a flush answers after everything already sent.
                biased;
                event = harness_rx.recv() => {
                    let Some(event) = event else { break };
                    if !forward(event) {
                        break;
                    }
                }
                Some(done) = flush_rx.recv() => {
                    while let Ok(event) = harness_rx.try_recv() {
                        if !forward(event) {
                            return;
                        }
                    }
                    // The session answers once it has reported what came before.
                    if me.cast(SessionMsg::HarnessFlushed(done)).is_err() {
                        return;
                    }
                }
            }
        }
    });
    flush_tx
}

/// How [`Session::start_harness`] went, short of an error that ends the run.
pub(super) enum HarnessUp {
    Up(Box<(SessionVars, Vec<LogSource>, Harness, HarnessFlush)>),
    /// An `auto` port was taken before its server bound it: try once more with fresh ones.
    PortTaken(PortRetry),
}

/// What becomes of a harness's `GaveUp` events on their way to the session.
pub(super) enum GiveUpGate {
    Forward,
    /// Setup may yet be retried: kept until that is decided.
    Hold(Vec<HarnessEvent>),
    /// Setup is retried: that harness's give-ups are the failure being retried.
    Drop,
}

impl GiveUpGate {
    fn pass(&mut self, event: HarnessEvent) -> Option<HarnessEvent> {
        if !matches!(event.kind, HarnessEventKind::GaveUp { .. }) {
            return Some(event);
        }
        match self {
            Self::Forward => Some(event),
            Self::Hold(held) => {
                held.push(event);
                None
            }
            Self::Drop => None,
        }
    }
}

/// What a server says when its port is taken (Python, Node, Go, Rust, C, Java wordings).
pub(super) fn says_address_in_use(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    ["address already in use", "eaddrinuse", "address in use"]
        .iter()
        .any(|s| text.contains(s))
}

/// The agent could not be brought up; `nothing_sent`: its process never got a message (it did
/// not start at all), as opposed to dying or being stopped while it read its bootstrap.
pub(super) struct AgentStartFailure {
    pub(super) ending: Ending,
    pub(super) nothing_sent: bool,
}

/// The name the session's browser goes by in setup and teardown lines.
pub(super) const BROWSER: &str = "browser";

/// The project's own `.mcp.json` servers in the agent's working directory; a clash with the
/// supervisor's own servers is an error (`load` refuses it before anything runs, too).
pub(super) fn project_mcp_servers(
    agent_cwd: &std::path::Path,
    browser: bool,
) -> Result<Option<crate::model::mcp_json::ProjectServers>, crate::model::mcp_json::McpJsonError> {
    let reserved: &[&str] = if browser {
        &[
            crate::console::SERVER_NAME,
            crate::browser::mcp::SERVER_NAME,
        ]
    } else {
        &[crate::console::SERVER_NAME]
    };
    crate::model::mcp_json::read(agent_cwd, reserved)
}
