//! The checks before the first session (docs/providers.md, "Before anything runs"): every
//! agent program the selected tests will start, and the browser and Playwright MCP where
//! `[browser]` asks for them. A missing one would fail every test only after its servers came up,
//! with `No such file or directory`; here it is refused at once (exit 2), naming the program and
//! the fix. The same resolution as `supervisor doctor` and the sessions (`providers::locate`,
//! `browser::executable`, `browser::mcp`).

use crate::browser::mcp::McpCommand;
use crate::model::agent_fault::FaultKind;
use crate::model::load::Suite;
use crate::model::provider::ProviderKind;
use crate::model::replay::ReplayMode;
use crate::providers::locate::check_agent_program;

/// What is missing, one line each with its fix; empty when every session can start.
pub fn problems(suite: &Suite) -> Vec<String> {
    let path_var = std::env::var("PATH").ok();
    let mut out: Vec<String> = Vec::new();
    let mut push = |line: String| {
        if !out.contains(&line) {
            out.push(line);
        }
    };
    for test in &suite.tests {
        let effective = &test.effective;
        // `--replay only` never starts the agent.
        if effective.replay.mode.value != ReplayMode::Only {
            for finding in check_agent_program(&effective.provider, &suite.project_root) {
                if !finding.ok {
                    push(format!(
                        "{}; {}",
                        finding.message,
                        effective.provider.name.value.info().install_fix()
                    ));
                }
            }
        }
        let Some(browser) = &effective.browser else {
            continue;
        };
        let browser = &browser.value;
        if let Err(e) =
            crate::browser::executable::find(browser.executable.as_deref(), path_var.as_deref())
        {
            push(format!(
                "browser: {e}; install Chromium (Debian: apt-get install chromium) or name the \
                 browser with [browser] executable"
            ));
        }
        if browser.mcp {
            if let Err(e) = McpCommand::resolve(
                browser.mcp_cmd.as_deref(),
                path_var.as_deref(),
                "http://127.0.0.1:0",
            ) {
                push(format!(
                    "Playwright MCP: {e}; install it (npm install -g @playwright/mcp) or name \
                     it with [browser] mcp_cmd, or set [browser] mcp = false"
                ));
            }
        }
    }
    out
}

/// One agent CLI the selected tests will start, as preflight asks it: once per program and
/// environment.
struct Asked {
    kind: ProviderKind,
    program: std::path::PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    cwd: std::path::PathBuf,
    /// The first test that starts it, for the message.
    test: std::path::PathBuf,
    /// Every test that starts it (indices into the suite's tests): whether they may never need
    /// it is asked only of an agent that cannot log in (it reads their recordings).
    tests: Vec<usize>,
}

/// The agent CLIs the selected tests will start (not under `--replay only`), each once.
fn agents_to_ask(suite: &Suite) -> Vec<Asked> {
    let mut asked: Vec<Asked> = Vec::new();
    for (index, test) in suite.tests.iter().enumerate() {
        let provider = &test.effective.provider;
        let kind = provider.name.value;
        // Only agent CLIs are asked (their version, their login).
        let program = match provider.program() {
            Some(program) if kind.info().cli().is_some() => std::path::PathBuf::from(program),
            _ => continue,
        };
        if test.effective.replay.mode.value == ReplayMode::Only {
            continue;
        }
        // What the agent will get: the supervisor's environment under the test's own `[env]` and
        // `[secrets]` (a value still naming a session variable is not known yet).
        let mut env: Vec<(String, String)> = std::env::vars().collect();
        env.extend(
            test.effective
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.value.clone()))
                .chain(
                    test.effective
                        .secrets
                        .iter()
                        .map(|(k, v)| (k.clone(), v.value.value.clone())),
                )
                .filter(|(_, v)| !v.contains("${")),
        );
        if let Some(same) = asked
            .iter_mut()
            .find(|a| a.kind == kind && a.program == program && a.env == env)
        {
            same.tests.push(index);
            continue;
        }
        asked.push(Asked {
            kind,
            program,
            args: provider.agent_args.value.clone(),
            env,
            cwd: crate::providers::locate::agent_cwd(provider, &suite.project_root),
            test: test.rel_path.clone(),
            tests: vec![index],
        });
    }
    asked
}

/// The agent CLIs the selected tests will start that speak a protocol this supervisor does not
/// (docs/providers.md, "Before anything runs"): a `--version` below the oldest supported, the
/// fault `cli_version`, one line each with its fix. Empty when every agent's version is
/// supported or not known.
pub async fn version_problems(suite: &Suite) -> Vec<String> {
    use crate::providers::cli_version::{check, Verdict};
    let mut out = Vec::new();
    let mut asked: Vec<(ProviderKind, std::path::PathBuf)> = Vec::new();
    for agent in agents_to_ask(suite) {
        // The version is the program's own, whatever the environment.
        if asked.contains(&(agent.kind, agent.program.clone())) {
            continue;
        }
        asked.push((agent.kind, agent.program.clone()));
        match check(agent.kind, &agent.program, &agent.env, &agent.cwd).await {
            Verdict::TooOld(why) => out.push(format!(
                "the agent speaks a protocol this supervisor does not: {why} (`{}`)",
                agent.test.display()
            )),
            Verdict::NeedsNode(why) => out.push(format!(
                "the agent CLI cannot run here: {why} ({}) (`{}`)",
                FaultKind::CliVersion.as_str(),
                agent.test.display()
            )),
            _ => {}
        }
    }
    out
}

/// What the login pre-check found: agents that cannot log in and are needed (refused, exit 3),
/// and those whose tests have a recording of every step under `--replay auto` (a warning: only a
/// step that drifts needs the agent, and it then ends as `agent_error` auth).
#[derive(Debug, Default)]
pub struct LoginProblems {
    pub refused: Vec<String>,
    pub warned: Vec<String>,
}

/// The agents the selected tests will start that plainly cannot log in (docs/providers.md,
/// "Logging the agent in"), one line each with its fix; asked of each CLI without a model call.
/// Empty when every agent can authenticate, or its state is not known (a later fault is still
/// named by kind).
pub async fn login_problems(suite: &Suite) -> LoginProblems {
    use crate::providers::login::{check, Login};
    let mut out = LoginProblems::default();
    for agent in agents_to_ask(suite) {
        let login = check(
            agent.kind,
            &agent.program,
            &agent.args,
            &agent.env,
            &agent.cwd,
        )
        .await;
        if let Login::No(_) = login {
            let line = format!(
                "the agent cannot log in: {} (`{}`)",
                login.describe(agent.kind),
                agent.test.display()
            );
            // Under `--replay auto`, tests with a recording of every step may never need it.
            let replayable = agent.tests.iter().all(|&i| {
                suite.tests.get(i).is_some_and(|test| {
                    crate::replay::session::ReplaySession::every_step_recorded(
                        test,
                        &suite.project_root,
                    )
                })
            });
            let list = if replayable {
                &mut out.warned
            } else {
                &mut out.refused
            };
            if !list.contains(&line) {
                list.push(line);
            }
        }
    }
    out
}
