//! The harness brought up: the session's ports picked and told, its commands started, and the
//! one retry of a setup that lost an `auto` port to another process ("address already in use").

use super::*;
use crate::process::event::{relay, HarnessFlush};

impl Setup<'_> {
    /// Picks the session's ports, tells them, and brings the harness up. When a command says its
    /// address is in use while the session has `auto` ports (one was taken between its pick and
    /// the server's bind), that harness is torn down and, unless this already is the retry
    /// (`retry`: what the first try said and the ports it gave up), the caller tries once more.
    pub(super) async fn start_harness(
        &mut self,
        id: &SessionIdentity,
        retry: Option<PortRetry>,
        first_vars: Option<SessionVars>,
    ) -> Result<HarnessUp, Ending> {
        let effective = &self.session.test.effective;
        let is_retry = retry.is_some();
        // The first setup's, when the replay's client was started with them before the browser.
        let vars = match first_vars {
            Some(vars) => vars,
            None => self.session_vars_now(id)?,
        };
        self.session.emit(EventKind::SessionPrepared {
            workspace: id.workdir.display().to_string(),
            ports: vars.ports.clone(),
            retried_after: retry,
        });
        let mut specs = command_specs(
            effective,
            CommandScope::Test,
            &vars,
            &self.session.suite.project_root,
            &self.session.run_paths().logs_dir(),
            &self.session.suite.skip_cmd,
        )
        .map_err(|e| Ending::error(e.to_string()))?;
        for spec in &mut specs {
            if self.session.suite.skip_readiness.contains(&spec.name) {
                spec.probes.clear();
            }
            if spec.skipped {
                self.session.emit(EventKind::SetupStatus {
                    command: spec.name.clone(),
                    state: SetupState::Skipped,
                });
            }
        }

        let auto_ports: BTreeMap<String, u16> = vars
            .ports
            .iter()
            .filter(|(name, _)| {
                !self.session.suite.shared_ports.contains_key(*name)
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
            forward_harness_events(self.session.myself.clone(), Arc::clone(&gate), harness_rx);
        self.started.harness_flush = Some(harness_flush.clone());
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
            self.session.myself.get_cell(),
            Scope::run(self.session.run_id.clone()),
            harness_tx,
        )
        .await
        .map_err(|e| Ending::error(e.to_string()))?;
        self.started.harness = Some(harness.clone());
        if !is_retry {
            self.start_replay_browser_ahead(id, &vars, None)?;
        }
        if !specs.is_empty() {
            let result = tokio::select! {
                result = harness.start(specs) => result,
                reason = Driver::until_stopped(self.session.stop.clone()) => return Err(Ending::from_stop(reason)),
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
                        let _ = self.session.myself.cast(SessionMsg::Harness(event));
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
                        self.session.report_teardown(&record);
                    }
                }
                self.started.harness = None;
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

/// Forwards a harness's events to the session (through `gate`) in a task of their own; the
/// returned sender asks it to answer once the session has reported everything sent before
/// (see `SessionMsg::HarnessFlushed`).
fn forward_harness_events(
    me: ActorRef<SessionMsg>,
    gate: Arc<std::sync::Mutex<GiveUpGate>>,
    harness_rx: mpsc::UnboundedReceiver<HarnessEvent>,
) -> HarnessFlush {
    let to_session = me.clone();
    let forward = move |event| {
        let event = gate
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pass(event);
        match event {
            Some(event) => to_session.cast(SessionMsg::Harness(event)).is_ok(),
            None => true,
        }
    };
    // The session answers once it has reported what came before.
    let flushed = move |done| me.cast(SessionMsg::HarnessFlushed(done)).is_ok();
    relay(harness_rx, forward, flushed)
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
    pub(super) fn pass(&mut self, event: HarnessEvent) -> Option<HarnessEvent> {
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
