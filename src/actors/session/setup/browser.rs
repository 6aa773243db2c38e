//! The session's browser (docs/browser.md) and what reaches it: the agent's Playwright MCP
//! command and its files, and the replay's client for it, started ahead beside the browser.

use super::*;
use crate::replay::session::{BrowserAhead, BrowserClientSpec, ReplaySession};

impl Setup<'_> {
    /// Whether the session takes a kept browser of the suite's pool, in a fresh context of its
    /// own (docs/browser.md, "One browser per worker"): with `[browser] reuse = true`, and always
    /// for a replay session, one whose steps all replay under `--replay only`, or all have a
    /// recording in force at its start under `--replay auto`. A replay session whose step later
    /// drifts to the agent keeps its pooled browser: the agent takes over the page replay left.
    pub(super) fn uses_browser_pool(&self, config: &crate::model::browser::BrowserConfig) -> bool {
        let test = &self.session.test;
        let replay = &test.effective.replay;
        let replays_only = replay.mode.value == crate::model::replay::ReplayMode::Only
            && crate::model::replay::applies(replay.mode.value, test.effective.provider.name.value);
        config.reuse
            || replays_only
            || ReplaySession::every_step_recorded(test, &self.session.suite.project_root)
    }

    /// As [`Self::start_browser`], on a browser of the suite's pool: a fresh browser context
    /// behind the session's own token, the browser's output in the session's `browser.log`. The
    /// browser is held first, so that its endpoint's address is known before it is up: the
    /// session's variables and the replay's Playwright MCP client (Node takes about a second)
    /// need not wait for a browser that is still starting. The held browser, with the variables
    /// made with that address, is for [`Self::pooled_browser_up`] (or
    /// [`pooled_browser_started`] beside the harness) to bring up.
    pub(super) fn hold_pooled_browser(
        &mut self,
        config: &crate::model::browser::BrowserConfig,
        id: &SessionIdentity,
        workdir: &std::path::Path,
    ) -> Result<HeldBrowser, Ending> {
        let mut places =
            crate::browser::session::BrowserPlaces::new(workdir, &self.session.run_paths());
        places.max_log_bytes = self.session.test.effective.supervisor.max_log_bytes.value;
        places.token = Some(self.session.tokens.cdp.clone());
        let path_var = std::env::var("PATH").ok();
        // Only what every session of the suite shares: the browser outlives this one.
        let env = vec![(
            "BUGATTI_PROJECT_ROOT".to_string(),
            self.session.suite.project_root.display().to_string(),
        )];
        let pool = self.session.suite.browser_pool.clone();
        let held = crate::browser::SessionBrowser::pool_request(
            config,
            &places,
            self.session.run_id.as_str(),
            env,
            path_var.as_deref(),
        )
        .and_then(|request| {
            let reservation = pool.reserve(&request.key)?;
            Ok((request, reservation))
        });
        let (request, mut reservation) = match held {
            Ok(held) => held,
            Err(e) => return Err(browser_failed(self.session, &e)),
        };
        let early = crate::browser::endpoint::ws_url(reservation.port(), &self.session.tokens.cdp);
        self.started.early_cdp_url = Some(early.clone());
        self.started.kept_replay = Some(crate::replay::session::KeptSlot {
            cdp_url: reservation.client_cdp_url(),
            scope: reservation.client_scope(),
            previous: Arc::new(std::sync::Mutex::new(reservation.take_kept_client())),
        });
        let vars = self.session_vars_now(id)?;
        let browser_up = self.start_replay_browser_before(id, &vars)?;
        Ok(HeldBrowser {
            config: config.clone(),
            pool,
            request,
            reservation,
            early,
            vars,
            browser_up,
        })
    }

    /// [`pooled_browser_started`], then the session's variables for the harness: the
    /// held ones, or, where the held browser could not serve the session and another took its
    /// place (another address), new ones, the client started for the first one's address gone
    /// and one for this one started.
    pub(super) async fn pooled_browser_up(
        &mut self,
        held: HeldBrowser,
        id: &SessionIdentity,
    ) -> Result<SessionVars, Ending> {
        let (browser, up) = pooled_browser_started(self.session, held).await?;
        self.started.browser = Some(browser);
        if let PooledUp::AsHeld(vars) = up {
            return Ok(vars);
        }
        if let Some(ahead) = self.started.replay_browser.take() {
            ahead.stop().await;
        }
        if let Some(slot) = self.started.kept_replay.take() {
            if let Some(kept) = slot.take_previous() {
                kept.stop().await;
            }
        }
        let vars = self.session_vars_now(id)?;
        self.start_replay_browser_ahead(id, &vars, None)?;
        Ok(vars)
    }

    /// The agent's Playwright MCP command for the session's browser (`None` without one, or
    /// with `mcp = false`), found on the session's `PATH`. Its files are written the first time
    /// (and again only if the `PATH` changed): a client started ahead may be reading them.
    pub(super) fn browser_mcp_command(
        &mut self,
        vars: &SessionVars,
    ) -> Result<Option<crate::browser::mcp::McpCommand>, Ending> {
        let path_var = vars
            .env
            .iter()
            .rev()
            .find(|(name, _)| name == "PATH")
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var("PATH").ok());
        if let Some((found_on, command)) = &self.started.browser_mcp {
            if *found_on == path_var {
                return Ok(Some(command.clone()));
            }
        }
        // The browser's endpoint address, known ahead of the browser itself.
        let resolved = self.started.cdp_url().and_then(|url| {
            self.session
                .test
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
                    .attach(&self.session.run_paths().browser_mcp_config())
                    .map_err(|e| Ending::error(e.to_string()))?;
                // Its snapshots and downloads go with the run, not into the project.
                if !command.args.iter().any(|a| a.starts_with("--output-dir")) {
                    command.args.push("--output-dir".to_string());
                    command
                        .args
                        .push(self.session.run_paths().browser_dir().display().to_string());
                }
                // What it returns shows `<secret>NAME</secret>`, never a `[secrets]` value.
                let secrets = self.session.test.effective.secret_pairs();
                if !secrets.is_empty() && !command.args.iter().any(|a| a == "--secrets") {
                    let file = self.session.run_paths().browser_secrets();
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
        self.started.browser_mcp = Some((path_var, command.clone()));
        Ok(Some(command))
    }

    /// What the replay's Playwright MCP client for `command` runs: in the agent's directory,
    /// with the agent's environment but for the console.
    pub(super) fn replay_browser(
        &self,
        command: crate::browser::mcp::McpCommand,
        agent: &crate::providers::AgentSpec,
        vars: &SessionVars,
    ) -> BrowserClientSpec {
        BrowserClientSpec {
            command,
            run_id: self.session.run_id.clone(),
            cwd: agent.cwd.clone(),
            env: crate::providers::agent_env_without_console(
                agent,
                &vars.env,
                &self.session.run_id,
            ),
            run_dir: self.session.run_dir(),
            kept: self.started.kept_replay.clone(),
        }
    }

    /// Starts the replay's Playwright MCP client now, beside the harness's start, when this
    /// session will replay browser actions: Node and Playwright MCP take about a second to come
    /// up, the harness often as long. Only a client the session's replay would run is started
    /// (the replay takes it over only if it is the same).
    pub(super) fn start_replay_browser_ahead(
        &mut self,
        id: &SessionIdentity,
        vars: &SessionVars,
        browser_up: Option<tokio::sync::oneshot::Receiver<()>>,
    ) -> Result<bool, Ending> {
        let no_browser = self.started.browser.is_none() && self.started.early_cdp_url.is_none();
        if no_browser || self.started.replay_browser.is_some() {
            return Ok(false);
        }
        let Some(action_pages) = ReplaySession::browser_replay_ahead(
            &self.session.test,
            &self.session.suite.project_root,
        ) else {
            return Ok(false);
        };
        // An agent that cannot be planned is reported where it is planned for good.
        let Ok(agent) = agent_spec(&self.session.test.effective, id, vars) else {
            return Ok(false);
        };
        if let Some(command) = self.browser_mcp_command(vars)? {
            let spec = self.replay_browser(command, &agent, vars);
            self.started.replay_browser =
                Some(BrowserAhead::start(&spec, action_pages, browser_up));
            return Ok(true);
        }
        Ok(false)
    }

    /// [`Self::start_replay_browser_ahead`] before the browser is up (its endpoint's address
    /// known ahead, `vars` the first setup's): the client comes up beside Chromium and attaches
    /// once the returned sender says the browser is up (dropped unsent: never).
    pub(super) fn start_replay_browser_before(
        &mut self,
        id: &SessionIdentity,
        vars: &SessionVars,
    ) -> Result<Option<tokio::sync::oneshot::Sender<()>>, Ending> {
        let (up, browser_up) = tokio::sync::oneshot::channel();
        let started_ahead = self.start_replay_browser_ahead(id, vars, Some(browser_up))?;
        Ok(started_ahead.then_some(up))
    }
}

/// A browser of the suite's pool held for a session ([`Setup::hold_pooled_browser`]), not yet
/// brought up.
pub(super) struct HeldBrowser {
    config: crate::model::browser::BrowserConfig,
    pool: crate::browser::pool::BrowserPool,
    request: crate::browser::pool::PoolRequest,
    reservation: crate::browser::pool::BrowserReservation,
    /// The `BUGATTI_CDP_URL` it is held at.
    early: String,
    /// The session's variables with that address.
    vars: SessionVars,
    /// Tells the replay's client started ahead that the browser is up.
    browser_up: Option<tokio::sync::oneshot::Sender<()>>,
}

impl HeldBrowser {
    /// Whether it may come up at another address than it is held at
    /// ([`crate::browser::pool::BrowserReservation::may_move`]).
    pub(super) fn may_move(&self) -> bool {
        self.reservation.may_move()
    }

    /// The session's variables with the address it is held at.
    pub(super) fn vars(&self) -> &SessionVars {
        &self.vars
    }
}

/// Where a held pooled browser came up.
pub(super) enum PooledUp {
    /// At the address it was held at: the held variables.
    AsHeld(SessionVars),
    /// At another (the held one could not serve): the variables are to be made again.
    Moved,
}

/// The name the session's browser goes by in setup and teardown lines.
pub(in super::super) const BROWSER: &str = "browser";

/// The `held` browser up for `session`, in the session's context (or the session's stop), and the
/// replay's client started ahead told so. It runs beside the
/// harness's start where the browser's address cannot move
/// ([`crate::browser::pool::BrowserReservation::may_move`]).
pub(super) async fn pooled_browser_started(
    session: &Driver,
    held: HeldBrowser,
) -> Result<(crate::browser::SessionBrowser, PooledUp), Ending> {
    let HeldBrowser {
        config,
        pool,
        request,
        reservation,
        early,
        vars,
        browser_up,
    } = held;
    let start = crate::browser::SessionBrowser::from_pool(&config, &pool, reservation, &request);
    let browser = browser_started(session, start).await?;
    if browser.cdp_url() == early {
        if let Some(up) = browser_up {
            let _ = up.send(());
        }
        return Ok((browser, PooledUp::AsHeld(vars)));
    }
    Ok((browser, PooledUp::Moved))
}

/// Waits for the browser `start` brings up (or the session's stop), and reports it like a
/// harness command named `browser`.
async fn browser_started(
    session: &Driver,
    start: impl std::future::Future<
        Output = Result<crate::browser::SessionBrowser, crate::browser::BrowserError>,
    >,
) -> Result<crate::browser::SessionBrowser, Ending> {
    let browser = tokio::select! {
        started = start => started,
        reason = Driver::until_stopped(session.stop.clone()) => return Err(Ending::from_stop(reason)),
    };
    match browser {
        Ok(browser) => {
            let b = browser.browser();
            let sandbox = if b.no_sandbox() {
                ", --no-sandbox: running as root"
            } else {
                ""
            };
            let pooled = browser.pooled_session().map_or(String::new(), |n| {
                format!(
                    ", pooled browser pid {} in a browser context of the session's own (its session {n})",
                    b.pid()
                )
            });
            session.emit(EventKind::SetupStatus {
                command: BROWSER.to_string(),
                state: SetupState::Ready {
                    probe: format!(
                        "{} at {}{sandbox}{pooled}",
                        b.version().browser,
                        b.shown_endpoint()
                    ),
                },
            });
            Ok(browser)
        }
        Err(e) => Err(browser_failed(session, &e)),
    }
}

/// The browser did not start: said like a harness command's failure.
fn browser_failed(session: &Driver, e: &crate::browser::BrowserError) -> Ending {
    let reason = format!("the browser did not start: {e}");
    session.emit(EventKind::SetupStatus {
        command: BROWSER.to_string(),
        state: SetupState::Failed {
            reason: reason.clone(),
            exit_code: None,
        },
    });
    Ending::error(reason)
}

/// Starts the session's browser (docs/browser.md), reported like a harness command named `browser`.
pub(super) async fn start_browser(
    session: &Driver,
    config: &crate::model::browser::BrowserConfig,
    workdir: &std::path::Path,
    listener: Option<Arc<std::net::TcpListener>>,
) -> Result<crate::browser::SessionBrowser, Ending> {
    let mut places = crate::browser::session::BrowserPlaces::new(workdir, &session.run_paths());
    places.max_log_bytes = session.test.effective.supervisor.max_log_bytes.value;
    places.token = Some(session.tokens.cdp.clone());
    places.listener = listener;
    let path_var = std::env::var("PATH").ok();
    // The session's identity, as every harness process has it (the launch adds the run id).
    let env = vec![
        (
            "BUGATTI_SESSION_ID".to_string(),
            session.session_id.to_string(),
        ),
        (
            "BUGATTI_PROJECT_ROOT".to_string(),
            session.suite.project_root.display().to_string(),
        ),
    ];
    let start = crate::browser::SessionBrowser::start(
        config,
        &places,
        Scope::run(session.run_id.clone()),
        env,
        path_var.as_deref(),
    );
    browser_started(session, start).await
}
