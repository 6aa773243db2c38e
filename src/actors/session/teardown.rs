//! The session's end: the agent, the console and every harness command torn down concurrently, then
//! the run's leftovers swept by its run id, each command's teardown reported.

use super::*;

impl Started {
    /// Stops the agent and every command (concurrently), records how each went in `session`'s
    /// events, sweeps what escaped, and keeps or removes the workspace.
    pub(super) async fn tear_down(mut self, session: &Driver, ending: &Ending) {
        let skip_grace = grace_is_over();
        let console_down = async {
            if let Some(server) = self.console.as_mut() {
                server.shutdown().await;
            }
        };
        let agent_close = async {
            if let Some(agent) = &self.agent {
                let limit = u64::try_from(AGENT_CLOSE_LIMIT.as_millis()).unwrap_or(u64::MAX);
                match ractor::call_t!(agent, AgentMsg::Close, limit) {
                    Ok(state) => tracing::info!("agent teardown: {}", state.as_str()),
                    Err(e) => tracing::warn!("agent teardown did not answer: {e}"),
                }
            }
        };
        let harness_down = async {
            match &self.harness {
                Some(harness) => harness.teardown_all(skip_grace).await,
                None => Vec::new(),
            }
        };
        // The replay's own Playwright MCP client ends beside the browser, as the agent's own
        // Playwright MCP does: a client whose browser went first only has less to close.
        let mut browser = self.browser.take();
        // A pooled browser is lent again only after a session that ended as a test does.
        let sound = matches!(
            ending.outcome,
            RunOutcome::Passed | RunOutcome::Warned | RunOutcome::Failed
        );
        // A sound session's replay client stays with its pooled browser for the next session
        // (docs/browser.md, "One browser per worker"): handed back before the browser is, whose
        // give-back closes its connection.
        let kept_slot = self.kept_replay.take();
        if sound && !skip_grace && kept_slot.is_some() && browser.is_some() {
            let mut kept = match self.replay.as_mut() {
                Some(replay) => replay.hand_back_browser().await,
                None => None,
            };
            if let Some(ahead) = self.replay_browser.take() {
                if let Some(more) = ahead.hand_back().await {
                    match kept {
                        Some(_) => more.stop().await,
                        None => kept = Some(more),
                    }
                }
            }
            let kept = kept.or_else(|| kept_slot.as_ref().and_then(|s| s.take_previous()));
            if let (Some(kept), Some(browser)) = (kept, browser.as_mut()) {
                browser.keep_replay_client(kept).await;
            }
        }
        let replay_browser_down = async {
            if let Some(replay) = self.replay.as_mut() {
                replay.stop_browser().await;
            }
            // One started ahead that no replay took over (the setup ended before).
            if let Some(ahead) = self.replay_browser.take() {
                ahead.stop().await;
            }
            // One kept from before that nobody took.
            if let Some(kept) = kept_slot.and_then(|s| s.take_previous()) {
                kept.stop().await;
            }
        };
        let browser_down = async {
            let (report, ()) = tokio::join!(
                async {
                    match browser {
                        Some(browser) => Some(browser.end(skip_grace, sound).await),
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
        crate::browser::secrets_file::remove(&session.run_paths().browser_secrets());
        crate::browser::secrets_file::remove(&session.run_paths().browser_mcp_config());
        if let Some(report) = browser {
            session.report_browser_teardown(&report);
        }
        for record in records.iter().filter(|r| !r.skipped) {
            session.report_teardown(record);
        }
        // What is left is file system and `/proc` work (a browser's profile is hundreds of files
        // and takes a tenth of a second or more to remove): on a blocking thread, so that the
        // other sessions' actors keep the runtime's workers meanwhile.
        let run_id = session.run_id.clone();
        let keep = self.workdir.as_ref().map(|_| {
            let keep = match session.test.effective.supervisor.keep_workspace.value {
                KeepWorkspace::Always => true,
                KeepWorkspace::Never => false,
                KeepWorkspace::OnFailure => {
                    !matches!(ending.outcome, RunOutcome::Passed | RunOutcome::Warned)
                }
            };
            // The browser's profile holds the app's cookies and storage: kept only when asked
            // ([browser] keep_profile, docs/browser.md).
            let keep_profile = session
                .test
                .effective
                .browser
                .as_ref()
                .is_some_and(|b| b.value.keep_profile);
            (keep, keep_profile)
        });
        let workdir = self.workdir.take();
        // Its lines go to the run's diagnostics with the rest of the session's.
        let span = tracing::Span::current();
        let swept = tokio::task::spawn_blocking(move || {
            let _in_run = span.enter();
            let escaped = sweep_run(&Scope::run(run_id.clone()));
            if !escaped.is_empty() {
                tracing::warn!(
                    "processes of run {run_id} outlived teardown and were killed: {escaped:?}"
                );
            }
            match (workdir, keep) {
                (Some(workdir), Some((keep, keep_profile))) => {
                    dispose_workspace(&workdir, keep, keep_profile)
                }
                _ => None,
            }
        });
        match swept.await {
            // Its last close frees the removed folder's blocks, off the run's way.
            Ok(Some(removed)) => drop(tokio::task::spawn_blocking(move || drop(removed))),
            Ok(None) => {}
            Err(e) => tracing::warn!("the run's sweep and workspace removal did not finish: {e}"),
        }
    }
}

/// Keeps the workspace (without the browser's profile unless `keep_profile`) or removes it. A
/// removed workspace is answered as an open handle on the folder, now gone from every path: the
/// kernel frees a removed folder's blocks when its last handle closes, and on a file system
/// mounted with `discard` that waits for the device (milliseconds) in the closing thread, which
/// then need not be the run's. Without the handle (the folder could not be opened) it is removed
/// as before.
fn dispose_workspace(workdir: &Path, keep: bool, keep_profile: bool) -> Option<std::fs::File> {
    if keep {
        if !keep_profile {
            let workspace = crate::model::artifacts::WorkspacePaths::new(workdir);
            let _ = std::fs::remove_dir_all(workspace.browser_profile());
            let _ = std::fs::remove_dir_all(workspace.browser_tmp());
        }
        tracing::info!("workspace kept at {}", workdir.display());
        return None;
    }
    let held = std::fs::File::open(workdir).ok();
    match std::fs::remove_dir_all(workdir) {
        Ok(()) => held,
        Err(e) => {
            tracing::warn!("cannot remove workspace {}: {e}", workdir.display());
            None
        }
    }
}
