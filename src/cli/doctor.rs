//! `supervisor doctor`: the provider CLI and its version, the config and tests, ports, the artifact
//! directory, the browser and Playwright MCP, and the dead runs a SIGKILLed supervisor left.

use super::{load, Exit};
use crate::model::options::RunOptions;
use crate::providers::cli_version::Level;
use crate::report::store::artifact_dir;
use std::path::{Path, PathBuf};

/// Check what a run will need, without running anything.
pub fn doctor(config: Option<PathBuf>) -> Exit {
    let options = RunOptions {
        config,
        ..RunOptions::default()
    };
    let Some(suite) = load(&options) else {
        println!("FAIL config and tests: see the problems above");
        return Exit::USAGE;
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
    let seeds_user_home = providers
        .iter()
        .any(|p| p.name.value.info().seeds_user_home);
    // A non-interactive agent (Claude Code) runs only the tools it is allowed: without any, the
    // agent's shell calls are refused and the step says so only after the fact.
    let mut tool_notes: Vec<&str> = providers
        .iter()
        .filter_map(|p| {
            let permission = p.name.value.info().tool_permission?;
            let allowed = p
                .agent_args
                .value
                .iter()
                .any(|a| permission.flags.iter().any(|flag| a.starts_with(flag)));
            (!allowed).then_some(permission.note)
        })
        .collect();
    tool_notes.dedup();
    let versions = agent_versions(&providers, &suite.project_root);
    let mut findings: Vec<_> = providers
        .into_iter()
        .flat_map(|p| crate::providers::locate::check_agent_program(p, &suite.project_root))
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
    if seeds_user_home {
        let home = crate::providers::codex_home::user_home();
        println!(
            "ok   {}",
            crate::providers::codex_home::describe(home.as_ref())
        );
    }
    for note in tool_notes {
        println!("note {note}");
    }
    for (level, line) in versions {
        failed |= level == Level::Fail;
        println!("{} {line}", level.tag());
    }
    for (name, port) in &suite.base.ports {
        if let crate::model::config::PortSpec::Fixed(n) = port.value {
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
    match artifact_dir::check_dir_writable("artifacts:", &artifacts) {
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
        Exit::FAILED
    } else {
        Exit::SUCCESS
    }
}

/// `doctor` for `[browser]`: the browser's and Playwright MCP's versions, or why they are
/// missing; `true` when a session with this browser would fail.
pub(super) fn browser_doctor(
    config: &crate::model::browser::BrowserConfig,
    project_root: &Path,
) -> bool {
    use crate::browser::doctor::{findings, BrowserFinding};
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
    use crate::process::dead_runs;
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
    providers: &[&crate::model::layers::ProviderSettings],
    project_root: &std::path::Path,
) -> Vec<(Level, String)> {
    use crate::providers::locate::{agent_version, find_program};
    let mut seen = std::collections::BTreeSet::new();
    let mut wanted = Vec::new();
    for p in providers {
        let kind = p.name.value;
        let bin = match p.program() {
            Some(bin) if kind.info().cli().is_some() => bin,
            _ => continue,
        };
        if let Ok(path) = find_program(bin, project_root) {
            if seen.insert(path.clone()) {
                wanted.push((kind, path));
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
        Err(e) => return vec![(Level::Fail, format!("cannot check agent versions: {e}"))],
    };
    let env: Vec<(String, String)> = std::env::vars().collect();
    wanted
        .into_iter()
        .flat_map(|(kind, path)| {
            let name = kind.as_str();
            let version = match runtime.block_on(agent_version(&path, project_root)) {
                // One older than the protocol we read is the fault `cli_version` (preflight
                // refuses it).
                Ok(version) => crate::providers::cli_version::doctor_line(kind, &version),
                Err(why) => crate::providers::cli_version::doctor_failure(kind, why),
            };
            let version = (version.0, format!("provider {name}: {}", version.1));
            // Its login, asked of the CLI without a model call (docs/providers.md).
            let args: Vec<String> = providers
                .iter()
                .find(|p| p.name.value == kind)
                .map(|p| p.agent_args.value.clone())
                .unwrap_or_default();
            let login = runtime.block_on(crate::providers::login::check(
                kind,
                &path,
                &args,
                &env,
                project_root,
            ));
            let level = match login {
                crate::providers::login::Login::No(_) => Level::Fail,
                _ => Level::Ok,
            };
            [
                version,
                (level, format!("login of {}", login.describe(kind))),
            ]
        })
        .collect()
}
