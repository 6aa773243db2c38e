//! `supervisor doctor`: the provider CLI and its version, the config and tests, ports, the artifact
//! directory, the browser and Playwright MCP, and the dead runs a SIGKILLed supervisor left.

use super::*;
use std::path::Path;

/// Check what a run will need, without running anything.
pub(super) fn doctor(config: Option<PathBuf>) -> ExitCode {
    let options = RunOptions {
        config,
        ..RunOptions::default()
    };
    let Some(suite) = load(&options) else {
        println!("FAIL config and tests: see the problems above");
        return ExitCode::from(2);
    };
    println!(
        "ok   config and tests: {} root test(s) in {}",
        suite.tests.len(),
        suite.project_root.display()
    );
    let mut failed = false;
    // Every distinct provider setting (tests may override it), checked as a session starts it.
    let mut providers: Vec<_> = suite.tests.iter().map(|t| &t.effective.provider).collect();
    providers.push(&suite.base.provider);
    let uses_codex = providers
        .iter()
        .any(|p| p.name.value == ProviderKind::Codex);
    // A non-interactive Claude Code runs only the tools it is allowed: without any, the agent's
    // Bash calls are refused and the step says so only after the fact.
    let claude_without_tools = providers.iter().any(|p| {
        p.name.value == ProviderKind::ClaudeCode
            && !p.agent_args.value.iter().any(|a| {
                a.starts_with("--allowedTools")
                    || a.starts_with("--allowed-tools")
                    || a.starts_with("--permission-mode")
                    || a == "--dangerously-skip-permissions"
            })
    });
    let claude = bugatti::actors::session_plan::claude_bin(&suite.base);
    let versions = agent_versions(&providers, &suite.project_root, &claude);
    let mut findings: Vec<_> = providers
        .into_iter()
        .flat_map(|p| {
            bugatti::providers::locate::check_agent_program(p, &suite.project_root, &claude)
        })
        .collect();
    findings.dedup();
    let mut seen = std::collections::BTreeSet::new();
    for finding in findings {
        if !seen.insert(finding.message.clone()) {
            continue;
        }
        if finding.ok {
            println!("ok   {}", finding.message);
        } else {
            failed = true;
            println!("FAIL {}", finding.message);
        }
    }
    // Codex sessions start from the user's own Codex home: say which one, and which login.
    if uses_codex {
        let home = bugatti::providers::codex_home::user_home();
        println!(
            "ok   {}",
            bugatti::providers::codex_home::describe(home.as_ref())
        );
    }
    if claude_without_tools {
        println!(
            "note claude-code: agent_args allow no tools, so Claude Code will refuse the agent's \
             Bash calls (the step names each refusal); allow them with \
             agent_args = [\"--allowedTools\", \"Bash\"]"
        );
    }
    for (ok, line) in versions {
        if ok {
            println!("ok   {line}");
        } else {
            failed = true;
            println!("FAIL {line}");
        }
    }
    for (name, port) in &suite.base.ports {
        if let bugatti::model::config::PortSpec::Fixed(n) = port.value {
            match std::net::TcpListener::bind(("127.0.0.1", n)) {
                Ok(_) => println!("ok   port {name} = {n} is free"),
                Err(e) => {
                    failed = true;
                    println!("FAIL port {name} = {n}: {e}");
                }
            }
        }
    }
    let artifacts = suite
        .project_root
        .join(&suite.base.supervisor.artifact_dir.value);
    match store::check_dir_writable("artifacts:", &artifacts) {
        Ok(()) => println!("ok   artifacts: {} is writable", artifacts.display()),
        Err(e) => {
            failed = true;
            println!("FAIL {e}");
        }
    }
    if let Some(browser) = &suite.base.browser {
        failed |= browser_doctor(&browser.value, &suite.project_root);
    }
    report_dead_runs(&artifacts);
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `doctor` for `[browser]`: the browser's and Playwright MCP's versions, or why they are
/// missing; `true` when a session with this browser would fail.
pub(super) fn browser_doctor(
    config: &bugatti::model::browser::BrowserConfig,
    project_root: &Path,
) -> bool {
    use bugatti::browser::doctor::{findings, BrowserFinding};
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            println!("FAIL browser: cannot check it: {e}");
            return true;
        }
    };
    let path = std::env::var("PATH").ok();
    let mut failed = false;
    for finding in runtime.block_on(findings(config, path.as_deref(), project_root)) {
        match finding {
            BrowserFinding::Ok(line) => println!("ok   {line}"),
            BrowserFinding::Note(line) => println!("warn {line}"),
            BrowserFinding::Fail(line) => {
                failed = true;
                println!("FAIL {line}");
            }
        }
    }
    failed
}

/// What supervisors that died (SIGKILL, OOM) left behind: a warning, not a failure — the next
/// `start` cleans it up.
pub(super) fn report_dead_runs(artifacts: &Path) {
    use bugatti::process::dead_runs;
    let ledgers = dead_runs::dead_ledgers(artifacts);
    let leftover_workspaces: Vec<_> = dead_runs::find(artifacts)
        .into_iter()
        .filter(|run| run.workspace.is_some() && !run.keep)
        .collect();
    if ledgers.is_empty() && leftover_workspaces.is_empty() {
        println!("ok   no leftovers of dead runs");
        return;
    }
    for ledger in &ledgers {
        let what = if ledger.groups_alive.is_empty() {
            "no process group still running".to_string()
        } else {
            format!("still running: {}", ledger.groups_alive.join(", "))
        };
        println!(
            "warn dead supervisor (pid {}, suite {}) left its ledger {}: {what}",
            ledger.supervisor_pid,
            ledger.suite_id,
            ledger.path.display()
        );
    }
    for run in &leftover_workspaces {
        if let Some(ws) = &run.workspace {
            println!(
                "warn dead run {} ({}) left its workspace {}",
                run.run_id,
                run.test_file,
                ws.display()
            );
        }
    }
    println!(
        "     the next `supervisor start` here kills those processes and removes those workspaces"
    );
}

/// `doctor`: each distinct Claude Code / Codex CLI the providers use answers `--version` (a CLI
/// that is present but broken fails every session). Missing ones are the program check's news.
pub(super) fn agent_versions(
    providers: &[&bugatti::model::layers::ProviderSettings],
    project_root: &std::path::Path,
    claude: &std::path::Path,
) -> Vec<(bool, String)> {
    use bugatti::providers::locate::{agent_version, find_program};
    let mut seen = std::collections::BTreeSet::new();
    let mut wanted = Vec::new();
    for p in providers {
        let name = p.name.value.as_str();
        let bin = match p.name.value {
            ProviderKind::ClaudeCode => claude.display().to_string(),
            ProviderKind::Codex => p.codex_bin.value.clone(),
            ProviderKind::Pi => p.pi_bin.value.clone(),
            ProviderKind::Command | ProviderKind::Shell => continue,
        };
        if let Ok(path) = find_program(&bin, project_root) {
            if seen.insert(path.clone()) {
                wanted.push((name.to_string(), path));
            }
        }
    }
    if wanted.is_empty() {
        return Vec::new();
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return vec![(false, format!("cannot check agent versions: {e}"))],
    };
    let env: Vec<(String, String)> = std::env::vars().collect();
    wanted
        .into_iter()
        .flat_map(|(name, path)| {
            let kind = ProviderKind::parse(&name).unwrap_or(ProviderKind::Command);
            let version = match runtime.block_on(agent_version(&path, project_root)) {
                // One older than the protocol we read is the fault `cli_version` (preflight
                // refuses it).
                Ok(version) => match bugatti::providers::cli_version::judge(kind, &version) {
                    bugatti::providers::cli_version::Verdict::TooOld(why) => {
                        (false, format!("provider {name}: {why}"))
                    }
                    _ => (true, format!("provider {name}: {version}")),
                },
                Err(why) => (false, format!("provider {name}: {why}")),
            };
            // Its login, asked of the CLI without a model call (docs/providers.md).
            let args: Vec<String> = providers
                .iter()
                .find(|p| p.name.value == kind)
                .map(|p| p.agent_args.value.clone())
                .unwrap_or_default();
            let login = runtime.block_on(bugatti::providers::login::check(
                kind,
                &path,
                &args,
                &env,
                project_root,
            ));
            let ok = !matches!(login, bugatti::providers::login::Login::No(_));
            [version, (ok, format!("login of {}", login.describe(kind)))]
        })
        .collect()
}
