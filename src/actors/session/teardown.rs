//! The session's end: the agent, the console and every harness command torn down concurrently, then
//! the run's leftovers swept by its run id, each command's teardown reported.

use super::*;

impl Driver {
    /// Stops the agent and every command (concurrently), records how each went, sweeps what
    /// escaped, and keeps or removes the workspace.
    pub(super) async fn teardown(&self, mut started: Started, ending: &Ending) {
        let skip_grace = grace_is_over();
        let console_down = async {
            if let Some(server) = started.console.as_mut() {
                server.shutdown().await;
            }
        };
        let agent_close = async {
            if let Some(agent) = &started.agent {
                let limit = u64::try_from(AGENT_CLOSE_LIMIT.as_millis()).unwrap_or(u64::MAX);
                match ractor::call_t!(agent, AgentMsg::Close, limit) {
                    Ok(state) => tracing::info!("agent teardown: {}", state.as_str()),
                    Err(e) => tracing::warn!("agent teardown did not answer: {e}"),
                }
            }
        };
        let harness_down = async {
            match &started.harness {
                Some(harness) => harness.teardown_all(skip_grace).await,
                None => Vec::new(),
            }
        };
        // The replay's own Playwright MCP client ends beside the browser, as the agent's own
        // Playwright MCP does: a client whose browser went first only has less to close.
        let replay_browser_down = async {
            if let Some(replay) = started.replay.as_mut() {
                replay.stop_browser().await;
            }
            // One started ahead that no replay took over (the setup ended before).
            if let Some(ahead) = started.replay_browser.take() {
                ahead.stop().await;
            }
        };
        let browser = started.browser.take();
        let browser_down = async {
            let (report, ()) = tokio::join!(
                async {
                    match browser {
                        Some(browser) => Some(browser.stop(skip_grace).await),
                        None => None,
                    }
                },
                replay_browser_down
            );
            report
        };
        let ((), records, (), browser) =
            tokio::join!(agent_close, harness_down, console_down, browser_down);
        // Playwright MCP has ended with the agent: the secrets it was given go too.
        crate::browser::secrets_file::remove(&self.run_paths().browser_secrets());
        crate::browser::secrets_file::remove(&self.run_paths().browser_mcp_config());
        if let Some(report) = browser {
            self.report_browser_teardown(&report);
        }
        for record in records.iter().filter(|r| !r.skipped) {
            self.report_teardown(record);
        }
        let escaped = sweep_run(&Scope::run(self.run_id.clone()));
        if !escaped.is_empty() {
            tracing::warn!(
                "processes of run {} outlived teardown and were killed: {escaped:?}",
                self.run_id
            );
        }
        if let Some(workdir) = started.workdir {
            let keep = match self.test.effective.supervisor.keep_workspace.value {
                KeepWorkspace::Always => true,
                KeepWorkspace::Never => false,
                KeepWorkspace::OnFailure => {
                    !matches!(ending.outcome, RunOutcome::Passed | RunOutcome::Warned)
                }
            };
            if keep {
                // The browser's profile holds the app's cookies and storage: kept only when asked
                // ([browser] keep_profile, docs/browser.md).
                let keep_profile = self
                    .test
                    .effective
                    .browser
                    .as_ref()
                    .is_some_and(|b| b.value.keep_profile);
                if !keep_profile {
                    let workspace = crate::model::artifacts::WorkspacePaths::new(&workdir);
                    let _ = std::fs::remove_dir_all(workspace.browser_profile());
                    let _ = std::fs::remove_dir_all(workspace.browser_tmp());
                }
                tracing::info!("workspace kept at {}", workdir.display());
            } else if let Err(e) = std::fs::remove_dir_all(&workdir) {
                tracing::warn!("cannot remove workspace {}: {e}", workdir.display());
            }
        }
    }

    fn report_browser_teardown(&self, report: &crate::process::teardown::TeardownReport) {
        self.emit(EventKind::CommandTornDown {
            name: super::setup::BROWSER.to_string(),
            teardown: report.state,
            log_truncated_bytes: None,
        });
        if !report.leaked.is_empty() {
            tracing::warn!("the browser leaked processes {:?} (killed)", report.leaked);
        }
    }

    pub(super) fn report_teardown(&self, record: &HarnessRecord) {
        if let Some(teardown) = record.teardown {
            self.emit(EventKind::CommandTornDown {
                name: record.name.clone(),
                teardown,
                log_truncated_bytes: (record.log_truncated_bytes > 0)
                    .then_some(record.log_truncated_bytes),
            });
        }
        if !record.leaked_pids.is_empty() {
            tracing::warn!(
                "command `{}` leaked processes {:?} (killed)",
                record.name,
                record.leaked_pids
            );
        }
    }
}
