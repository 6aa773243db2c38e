//! The watchdog and budget contract every agent CLI provider keeps, written once and run against
//! each real CLI (Claude Code, Codex, pi 0.73 and pi 1.x, as `.ci/run` installs them) through its
//! scripted API stub
//! on loopback: an API that goes silent mid-step gets the agent restarted and the conversation
//! resumed; an agent SIGKILLed mid-step is restarted and the step passes; a step that would take
//! sixty turns stops over budget at five. Skips loudly without the CLI (fails under `CI=true`).
//! Wall time is asserted only against the timeouts each test configures.

use crate::common::assert_exit;
use crate::common::claude::{claude_bin, Stub};
use crate::common::codex::{codex_bin, ResponsesStub};
use crate::common::pi::{pi1_bin, pi_bin};
use crate::common::records::*;
use crate::common::scripted_api::RequestBody;
use crate::common::{stdout, Project};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Which real CLI a contract test drives.
#[derive(Clone, Copy, PartialEq)]
enum Cli {
    Claude,
    Codex,
    /// pi 0.73 (`@mariozechner/pi-coding-agent`, in `.ci/node`).
    Pi,
    /// pi 1.x (`@earendil-works/pi-coding-agent`, in `.ci/pi1`).
    Pi1,
}

/// The scripted API the CLI talks to.
enum Api {
    Messages(Stub),
    Responses(ResponsesStub),
}

/// A real CLI found on this machine, with a side directory for its stub and home.
struct Agent {
    cli: Cli,
    bin: PathBuf,
    side: tempfile::TempDir,
}

impl Cli {
    /// The CLI, or `None` after a loud skip naming `test`.
    fn find(self, test: &str) -> Option<Agent> {
        let bin = match self {
            Cli::Claude => claude_bin(&format!("claude-code: {test}"))?,
            Cli::Codex => codex_bin(&format!("codex: {test}"))?,
            Cli::Pi => pi_bin(&format!("pi: {test}"))?,
            Cli::Pi1 => pi1_bin(&format!("pi 1.x: {test}"))?,
        };
        let side = tempfile::tempdir().expect("side dir");
        Some(Agent {
            cli: self,
            bin,
            side,
        })
    }

    /// A scripted tool call that runs `command` (the stubs name the tool differently).
    fn tool_call(self, command: &str) -> Value {
        match self {
            Cli::Claude | Cli::Pi | Cli::Pi1 => json!({ "bash": command }),
            Cli::Codex => json!({ "shell": command }),
        }
    }

    /// `no_output_timeout_secs` for the silence test: long enough that a slow start on a loaded
    /// machine is not taken for silence. pi 0.73 loads for seconds before its first request;
    /// Claude Code (Node) took over 5 s to show its first progress beside a benchmark run.
    fn silence_limit_secs(self) -> u64 {
        match self {
            Cli::Pi => 15,
            Cli::Claude => 10,
            _ => 5,
        }
    }

    /// A shell test that is true when `/proc/$p/comm` is this CLI's process.
    fn is_the_cli(self) -> &'static str {
        match self {
            Cli::Claude => "case \"$(cat /proc/$p/comm)\" in claude*) true;; *) false;; esac",
            Cli::Codex => "[ \"$(cat /proc/$p/comm)\" = codex ]",
            // pi names its Node process `pi` (`process.title`).
            Cli::Pi | Cli::Pi1 => "[ \"$(cat /proc/$p/comm)\" = pi ]",
        }
    }
}

impl Agent {
    fn api(&self, script: Value) -> Api {
        match self.cli {
            // pi speaks the Messages API too, to the same stub (a custom provider of its own).
            Cli::Claude | Cli::Pi | Cli::Pi1 => {
                Api::Messages(Stub::start(self.side.path(), script))
            }
            Cli::Codex => Api::Responses(ResponsesStub::start(self.side.path(), script)),
        }
    }

    /// A project whose one test runs `steps` with this agent, `extra` appended to `[provider]`.
    fn project(&self, api: &Api, extra: &str, steps: &[&str]) -> Project {
        let (name, args) = match api {
            Api::Messages(_) if self.cli == Cli::Claude => {
                ("claude-code", "\"--allowedTools\", \"Bash\"".to_string())
            }
            Api::Messages(_) => ("pi", String::new()),
            Api::Responses(stub) => ("codex", stub.agent_args_toml()),
        };
        let p = Project::new();
        p.write(
            "bugatti.config.toml",
            &format!(
                "[provider]\nname = \"{name}\"\nagent_args = [{args}]\nstep_timeout_secs = 120\n\
                 {extra}\n"
            ),
        );
        let mut test = String::from("name = \"Agent\"\n");
        for step in steps {
            test.push_str(&format!("[[steps]]\ninstruction = {step:?}\n"));
        }
        p.write("agent.test.toml", &test);
        p
    }

    /// `supervisor start` with the CLI pointed at the stub; nothing of it may survive.
    fn run(&self, p: &Project, api: &Api) -> (std::process::Output, Duration) {
        let mut cmd = p.supervisor();
        cmd.arg("start");
        match api {
            Api::Messages(stub) if self.cli == Cli::Claude => cmd
                .env("BUGATTI_CLAUDE_BIN", &self.bin)
                .envs(stub.client_env(&self.side.path().join("home"))),
            Api::Messages(stub) => {
                cmd.env("BUGATTI_PI_BIN", &self.bin)
                    .envs(crate::common::pi::client_env(
                        &self.side.path().join("pi-agent"),
                        stub.port,
                    ))
            }
            Api::Responses(_) => cmd
                .env("BUGATTI_CODEX_BIN", &self.bin)
                .env("STUB_API_KEY", "dummy"),
        };
        let started = Instant::now();
        let out = cmd.output().expect("run supervisor");
        let took = started.elapsed();
        p.assert_nothing_survives();
        (out, took)
    }
}

impl Api {
    /// The model requests of the agent's own loop (Claude Code also asks for titles and the
    /// like, without tools).
    fn turn_requests(&self) -> Vec<RequestBody> {
        match self {
            Api::Messages(stub) => stub
                .logged_requests()
                .into_iter()
                .map(|r| r.body)
                .filter(|b| {
                    b.tools
                        .as_ref()
                        .and_then(|t| t.as_array())
                        .is_some_and(|t| !t.is_empty())
                })
                .collect(),
            Api::Responses(stub) => stub.request_log().into_iter().map(|r| r.body).collect(),
        }
    }

    /// The request after the restart continues the first step's conversation.
    fn assert_resumed(&self) {
        let requests = self.turn_requests();
        match self {
            Api::Messages(_) => {
                let last = requests.last().expect("a request after the restart");
                let messages = serde_json::to_string(&last.messages).expect("JSON");
                assert!(messages.contains("First done."), "{last:?}");
            }
            Api::Responses(_) => {
                assert_eq!(requests.len(), 3, "{requests:?}");
                assert_eq!(requests[2].prompt_cache_key, requests[0].prompt_cache_key);
            }
        }
    }
}

fn report_md(record: &RunRecord) -> String {
    let run_dir = record.run_dir();
    std::fs::read_to_string(run_dir.join("report.md")).expect("report.md")
}

fn an_api_gone_silent_mid_step_gets_the_agent_restarted_and_resumed(cli: Cli) {
    let Some(agent) = cli.find("watchdog: silence, restart, resume") else {
        return;
    };
    let api = agent.api(json!([
        {"text": "First done.\nRESULT OK"},
        {"hang": true},
        {"text": "Back again.\nRESULT OK"},
    ]));
    let limit = cli.silence_limit_secs();
    let p = agent.project(
        &api,
        &format!("no_output_timeout_secs = {limit}"),
        &["First.", "Second."],
    );
    let (out, took) = agent.run(&p, &api);
    assert_exit(&out, 0);
    let record = p.record_for("agent.test.toml");
    assert_eq!(record.steps[1].status, StepStatus::Ok, "{record:?}");
    let restarts = &record.agent_restarts;
    assert_eq!(restarts.len(), 1, "{record:?}");
    assert_eq!(restarts[0].step_id, 2);
    let reason = restarts[0].reason.as_str();
    assert!(
        reason.contains(&format!("no progress for {limit}s")),
        "{restarts:?}"
    );
    api.assert_resumed();
    assert_eq!(
        record.steps[0]
            .usage
            .as_ref()
            .and_then(|u| u.session_id.clone()),
        record.steps[1]
            .usage
            .as_ref()
            .and_then(|u| u.session_id.clone()),
        "the same conversation"
    );
    assert!(
        stdout(&out).contains("AGENT RESTARTED during step 2"),
        "{}",
        stdout(&out)
    );
    let events = record.events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e.kind, EventKind::AgentRestarted { .. })),
        "{events:#?}"
    );
    let md = report_md(&record);
    assert!(
        md.contains("| agent restarted | during step 2: it made no progress"),
        "{md}"
    );
    let html = std::fs::read_to_string(p.suite_dir().join("report.html")).expect("report.html");
    assert!(html.contains("agent restarted during step 2: it made no progress"));
    // Bounded by the configured silence: one limit of waiting, not the step timeout (120 s).
    assert!(took < Duration::from_secs(limit * 2 + 40), "took {took:?}");
}

fn an_agent_killed_mid_step_is_restarted_and_the_step_passes(cli: Cli) {
    killed_mid_step(cli, "watchdog: SIGKILL mid-step", "");
}

/// The tool call runs `before` (as the CLI's own shell), then SIGKILLs the CLI's process above
/// it, as an OOM killer would; the agent is restarted and the step passes.
fn killed_mid_step(cli: Cli, test: &str, before: &str) {
    let Some(agent) = cli.find(test) else {
        return;
    };
    let kill = format!(
        "{before}p=$PPID; while [ \"$p\" -gt 1 ]; do if {}; then kill -9 $p; break; fi; \
         p=$(awk '{{print $4}}' /proc/$p/stat); done; sleep 5",
        cli.is_the_cli()
    );
    let api = agent.api(json!([
        {"text": "First done.\nRESULT OK"},
        cli.tool_call(&kill),
        {"text": "Survived.\nRESULT OK"},
    ]));
    let p = agent.project(&api, "no_output_timeout_secs = 60", &["First.", "Second."]);
    let (out, _) = agent.run(&p, &api);
    assert_exit(&out, 0);
    let record = p.record_for("agent.test.toml");
    assert_eq!(record.steps[1].status, StepStatus::Ok, "{record:?}");
    let restarts = &record.agent_restarts;
    assert_eq!(restarts.len(), 1, "{record:?}");
    let reason = restarts[0].reason.as_str();
    assert!(reason.contains("died"), "{restarts:?}");
}

fn a_step_that_would_take_sixty_turns_stops_over_budget_at_five(cli: Cli) {
    let Some(agent) = cli.find("budgets: max_turns_per_step") else {
        return;
    };
    let script: Vec<Value> = (0..60)
        .map(|i| cli.tool_call(&format!("echo {i}")))
        .collect();
    let api = agent.api(Value::Array(script));
    let p = agent.project(&api, "max_turns_per_step = 5", &["Loop."]);
    let (out, _) = agent.run(&p, &api);
    assert_exit(&out, 1);
    let record = p.record_for("agent.test.toml");
    let step = &record.steps[0];
    assert_eq!(step.status, StepStatus::OverBudget, "{record:?}");
    let message = step.message.as_deref().unwrap_or("");
    assert!(message.contains("max_turns_per_step = 5"), "{step:?}");
    let requests = api.turn_requests().len();
    match api {
        // Claude Code's sixth request is its first turn over the limit.
        Api::Messages(_) if cli == Cli::Claude => {
            assert!(requests <= 6, "stopped at the budget: {requests} requests")
        }
        // pi is stopped when its sixth turn ends; by then it may have sent its seventh request.
        Api::Messages(_) => {
            assert_eq!(step.agent_turns, Some(6), "the first turn over the limit");
            assert!(requests <= 7, "stopped at the budget: {requests} requests");
        }
        Api::Responses(_) => {
            assert_eq!(step.agent_turns, Some(6), "the first turn over the limit");
            assert!(
                requests < 60,
                "Codex was stopped, not left to loop: {requests}"
            );
        }
    }
    assert!(report_md(&record).contains("OVER BUDGET"));
}

mod claude {
    use super::Cli::Claude;

    #[test]
    fn an_api_gone_silent_mid_step_gets_the_agent_restarted_and_resumed() {
        super::an_api_gone_silent_mid_step_gets_the_agent_restarted_and_resumed(Claude);
    }

    #[test]
    fn an_agent_killed_mid_step_is_restarted_and_the_step_passes() {
        super::an_agent_killed_mid_step_is_restarted_and_the_step_passes(Claude);
    }

    #[test]
    fn a_step_that_would_take_sixty_turns_stops_over_budget_at_five() {
        super::a_step_that_would_take_sixty_turns_stops_over_budget_at_five(Claude);
    }

    /// Killed before it had saved its session (here: its session files removed first), Claude
    /// Code cannot `--resume` it ("No conversation found"): the restarted agent starts a new
    /// conversation and the step passes, rather than failing for the lost one.
    #[test]
    fn an_agent_killed_before_it_saved_its_session_starts_a_new_one_and_the_step_passes() {
        super::killed_mid_step(
            Claude,
            "watchdog: SIGKILL before the session was saved",
            "rm -f \"$HOME\"/.claude/projects/*/*.jsonl; ",
        );
    }
}

mod codex {
    use super::Cli::Codex;

    #[test]
    fn an_api_gone_silent_mid_step_gets_the_agent_restarted_and_resumed() {
        super::an_api_gone_silent_mid_step_gets_the_agent_restarted_and_resumed(Codex);
    }

    #[test]
    fn an_agent_killed_mid_step_is_restarted_and_the_step_passes() {
        super::an_agent_killed_mid_step_is_restarted_and_the_step_passes(Codex);
    }

    #[test]
    fn a_step_that_would_take_sixty_turns_stops_over_budget_at_five() {
        super::a_step_that_would_take_sixty_turns_stops_over_budget_at_five(Codex);
    }
}

mod pi {
    use super::Cli::Pi;

    #[test]
    fn an_api_gone_silent_mid_step_gets_the_agent_restarted_and_resumed() {
        super::an_api_gone_silent_mid_step_gets_the_agent_restarted_and_resumed(Pi);
    }

    #[test]
    fn an_agent_killed_mid_step_is_restarted_and_the_step_passes() {
        super::an_agent_killed_mid_step_is_restarted_and_the_step_passes(Pi);
    }

    #[test]
    fn a_step_that_would_take_sixty_turns_stops_over_budget_at_five() {
        super::a_step_that_would_take_sixty_turns_stops_over_budget_at_five(Pi);
    }
}

mod pi1 {
    use super::Cli::Pi1;

    #[test]
    fn an_api_gone_silent_mid_step_gets_the_agent_restarted_and_resumed() {
        super::an_api_gone_silent_mid_step_gets_the_agent_restarted_and_resumed(Pi1);
    }

    #[test]
    fn an_agent_killed_mid_step_is_restarted_and_the_step_passes() {
        super::an_agent_killed_mid_step_is_restarted_and_the_step_passes(Pi1);
    }

    #[test]
    fn a_step_that_would_take_sixty_turns_stops_over_budget_at_five() {
        super::a_step_that_would_take_sixty_turns_stops_over_budget_at_five(Pi1);
    }
}
