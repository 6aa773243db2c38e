//! Replay of recorded actions with real processes (docs/replay.md): a step recorded in one session
//! replays in another with other ports, paths and ids; output carrying the session's port, a
//! timestamp, a UUID and a duration still matches; a changed output or exit code is a drift with
//! a diff; an interactive console session replays by its accumulated output; nothing a replay
//! started survives it.

use crate::common::processes_with_env_entry;
use bugatti::console::{Console, ConsoleSetup};
use bugatti::model::ids::StepId;
use bugatti::model::redact::Secrets;
use bugatti::replay::action::Action;
use bugatti::replay::compare::Drift;
use bugatti::replay::console::{ConsoleAction, ConsoleTool};
use bugatti::replay::context::ReplayContext;
use bugatti::replay::domains::{Domain, Learned};
use bugatti::replay::format::RecordedStep;
use bugatti::replay::masks::{Kind, Position};
use bugatti::replay::normalize::Normalizer;
use bugatti::replay::placeholders::Placeholders;
use bugatti::replay::replayer::{replay_step, AgentTools};
use bugatti::replay::shell::AgentShell;
use bugatti::replay::shell::ShellAction;
use bugatti::replay::verdict::{Fallback, ReplayVerdict};
use std::sync::Arc;
use std::time::Duration;

const SECRET: &str = "hunter2-very-secret";

/// One test session: its run, workspace, port, console and placeholders.
struct Session {
    _dir: tempfile::TempDir,
    run_id: String,
    workdir: String,
    console: Console,
    placeholders: Placeholders,
    normalizer: Normalizer,
    env: Vec<(String, String)>,
}

impl Session {
    fn new(port: u16) -> Self {
        let dir = tempfile::tempdir().expect("dir");
        let workdir = dir.path().join("ws");
        std::fs::create_dir_all(&workdir).expect("ws");
        let workdir = workdir.to_string_lossy().into_owned();
        let run_id = format!("replay-test-{}", uuid::Uuid::new_v4());
        let values = vec![
            ("APP_PORT".to_string(), port.to_string()),
            ("BUGATTI_WORKDIR".to_string(), workdir.clone()),
            ("BUGATTI_RUN_ID".to_string(), run_id.clone()),
        ];
        let mut env = values.clone();
        env.push(("API_TOKEN".into(), SECRET.into()));
        env.push(("PATH".into(), std::env::var("PATH").unwrap_or_default()));
        let console = Console::new(ConsoleSetup {
            run_id: run_id.clone().into(),
            run_dir: dir.path().join("run"),
            workdir: workdir.clone().into(),
            env: env.clone(),
            secrets: Arc::new(Secrets::new([("API_TOKEN", SECRET)])),
            logs: Vec::new(),
        });
        let placeholders = Placeholders::new(values, [("API_TOKEN".into(), SECRET.into())]);
        let normalizer = Normalizer::new(placeholders.volatiles(), &[]).expect("normalizer");
        Self {
            _dir: dir,
            run_id,
            workdir,
            console,
            placeholders,
            normalizer,
            env,
        }
    }

    fn ctx(&self) -> ReplayContext<'_> {
        ReplayContext {
            console: Some(&self.console),
            placeholders: &self.placeholders,
            normalizer: &self.normalizer,
            run_id: self.run_id.clone().into(),
            step_id: StepId::new(1),
            env: self.env.clone(),
            action_timeout: Duration::from_secs(10),
            instruction: "Check the app answers.".into(),
            session_started: chrono::Utc::now(),
            agent_cwd: self.workdir.clone().into(),
        }
    }

    /// The agent's tools as Codex ran them: its shell `sh`, no browser.
    fn tools(&self) -> AgentTools<'_> {
        AgentTools {
            shell: AgentShell::Sh,
            browser: None,
        }
    }

    /// What the agent's shell tool would have seen: the command run by `sh` in the workspace.
    fn run_shell(&self, command: &str) -> Action {
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("exec 2>&1\n{command}")])
            .current_dir(&self.workdir)
            .env_clear()
            .envs(self.env.iter().cloned())
            .output()
            .expect("sh");
        let output = String::from_utf8_lossy(&out.stdout).replace(SECRET, "[REDACTED:API_TOKEN]");
        shell_action(
            &self.placeholders,
            command,
            &self.workdir,
            out.status.code(),
            &output,
        )
    }

    /// A console call as the agent made it, recorded.
    async fn call(&self, tool: &str, args: serde_json::Value) -> (Action, String) {
        let answer = self.console.call(tool, args.clone()).await;
        let action = ConsoleAction::recorded(&self.placeholders, tool, &args, &answer)
            .map(Action::Console)
            .expect("replayable");
        (action, answer.text)
    }

    /// Ends the console and checks nothing of this session's runs on.
    async fn finish(self) {
        self.console.shutdown().await;
        for entry in [
            format!("BUGATTI_RUN_ID={}", self.run_id),
            format!("BUGATTI_AGENT_RUN_ID={}", self.run_id),
        ] {
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while !processes_with_env_entry(&entry).is_empty() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "survivors with {entry}: {:?}",
                    processes_with_env_entry(&entry)
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

fn step(actions: Vec<Action>) -> RecordedStep {
    RecordedStep {
        step: StepId::new(1),
        provenance: "tests/a.test.toml#1".into(),
        instruction_hash: "h".into(),
        provider: bugatti::model::provider::ProviderKind::ClaudeCode,
        recorded_at: chrono::Utc::now(),
        run_started_at: None,
        cost_usd: Some(0.03),
        actions,
        relations: None,
        facts: None,
        agent_version: Some("2.1.197".into()),
        failed: None,
        first_look_ms: None,
    }
}

/// Position `token` of line 1 learned as an agent's passes would have taught it: the request's
/// UUID (token 1, untied) and its duration (token 2, seen from 1 to 97 ms).
fn learned_at(token: usize) -> Learned {
    let (kind, range) = match token {
        // The timestamp is the run's own time: offset 0.
        0 => (Kind::Timestamp, Some((0.0, 0.0))),
        1 => (Kind::Uuid, None),
        _ => (Kind::Duration, Some((0.001, 0.097))),
    };
    Learned {
        at: Position { line: 1, token },
        domain: Some(Domain {
            kind,
            range,
            tie: None,
            apart: Vec::new(),
            quiet: 0,
            widened: 0,
        }),
    }
}

fn drift(verdict: ReplayVerdict) -> Drift {
    match verdict {
        ReplayVerdict::Fallback(Fallback::Drift(d)) => *d,
        other => panic!("expected a drift, got {other:?}"),
    }
}

/// Prints the session's port, where it runs, a timestamp, a UUID, a duration; uses the secret.
const VOLATILE_ECHO: &str = r#"echo "listening on 127.0.0.1:$APP_PORT in $(pwd)"; echo "at $(date -u +%Y-%m-%dT%H:%M:%S.%NZ) request $(cat /proc/sys/kernel/random/uuid) took $(( $$ % 97 + 1 ))ms"; echo "token ${API_TOKEN}"; echo status: ok"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_step_replays_in_another_session() {
    let a = Session::new(41234);
    let recorded = step(vec![a.run_shell(VOLATILE_ECHO), a.run_shell("test -d .")]);
    let text = serde_json::to_string(&recorded).expect("json");
    assert!(!text.contains("41234") && !text.contains(SECRET), "{text}");
    assert!(
        text.contains("${APP_PORT}") && text.contains("${API_TOKEN}"),
        "{text}"
    );

    // The port, the directory and the secret are the session's own values: exact placeholders.
    // The timestamp, the UUID and the duration were never seen to vary (the timestamp was the
    // run's time when recorded and is now, but no more than that is known of it): a soft drift
    // at exactly those three tokens, for the agent to judge.
    let b = Session::new(50321);
    let verdict = replay_step(&b.ctx(), b.tools(), &recorded).await;
    let learn = match &verdict {
        ReplayVerdict::Fallback(Fallback::SoftDrift { drift, learn }) => {
            assert!(drift.soft, "{drift:?}");
            learn.clone()
        }
        other => panic!("expected a soft drift: {other:?}"),
    };
    let line1 = |token| (0, Position { line: 1, token });
    assert_eq!(learn, vec![line1(0), line1(1), line1(2)], "{verdict:?}");
    // Once learned, those positions (and only those) are masked: the step replays.
    let mut learned = recorded.clone();
    learned.actions[0].set_volatile(learn.iter().map(|(_, p)| learned_at(p.token)).collect());
    let verdict = replay_step(&b.ctx(), b.tools(), &learned).await;
    assert!(verdict.passed(), "{}", verdict.describe());
    assert!(matches!(
        verdict,
        ReplayVerdict::Replayed {
            actions: 2,
            cost_saved_usd: Some(_),
            ..
        }
    ));
    a.finish().await;
    b.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_output_or_exit_code_is_a_drift() {
    let a = Session::new(41234);
    let b = Session::new(50321);
    // Recorded when the app said ok; it says down now.
    let mut recorded = step(vec![a.run_shell("true"), a.run_shell(VOLATILE_ECHO)]);
    let d = {
        let b_echo = VOLATILE_ECHO.replace("status: ok", "status: down");
        if let Action::Shell(shell) = &mut recorded.actions[1] {
            shell.command = b.placeholders.insert(&b_echo);
        }
        drift(replay_step(&b.ctx(), b.tools(), &recorded).await)
    };
    assert_eq!(d.action, 1);
    assert_eq!(d.field, "output");
    assert!(d.diff.contains("-status: ok\n+status: down"), "{}", d.diff);
    // Only the real change is in the diff: port, timestamp, UUID and duration were masked.
    assert!(!d.diff.contains("-listening"), "{}", d.diff);

    let recorded = step(vec![a.run_shell("exit 0")]);
    let mut changed = recorded.clone();
    if let Action::Shell(shell) = &mut changed.actions[0] {
        shell.command = "exit 3".into();
    }
    let d = drift(replay_step(&b.ctx(), b.tools(), &changed).await);
    assert_eq!(d.field, "exit code");
    assert_eq!((d.expected.as_str(), d.seen.as_str()), ("0", "3"));
    a.finish().await;
    b.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_calls_replay_through_the_console() {
    let a = Session::new(41234);
    let (exec, text) = a
        .call(
            "exec_command",
            serde_json::json!({"cmd": VOLATILE_ECHO, "tty": true, "yield_time_ms": 5000}),
        )
        .await;
    assert!(text.contains("Process exited with code 0"), "{text}");
    // An interactive program: asks, waits for a line, answers.
    let (ask, text) = a
        .call(
            "exec_command",
            serde_json::json!({"cmd": "printf 'name? '; read -r n; echo \"hi $n on $APP_PORT\"", "yield_time_ms": 1000}),
        )
        .await;
    let id: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("Process running with session ID "))
        .and_then(|id| id.trim().parse().ok())
        .unwrap_or_else(|| panic!("not running: {text}"));
    let (answer, text) = a
        .call(
            "write_stdin",
            serde_json::json!({"session_id": id, "chars": "bob\n", "yield_time_ms": 2000}),
        )
        .await;
    assert!(text.contains("hi bob on 41234"), "{text}");
    let mut recorded = step(vec![exec, ask, answer]);
    // The timestamp, the UUID and the duration of the first call, as learned when an agent
    // passed it twice.
    recorded.actions[0].set_volatile(vec![learned_at(0), learned_at(1), learned_at(2)]);

    let b = Session::new(50321);
    let verdict = replay_step(&b.ctx(), b.tools(), &recorded).await;
    assert!(verdict.passed(), "{}", verdict.describe());

    // The same program answering otherwise is a drift at the write.
    let mut changed = recorded.clone();
    if let Action::Console(call) = &mut changed.actions[2] {
        call.output = call.output.replace("hi bob", "hi alice");
    }
    let d = drift(replay_step(&b.ctx(), b.tools(), &changed).await);
    assert_eq!(d.action, 2);
    assert!(d.diff.contains("-hi alice"), "{}", d.diff);
    a.finish().await;
    b.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_to_a_session_the_step_did_not_start_is_no_pass() {
    let b = Session::new(50321);
    let recorded = step(vec![Action::Console(ConsoleAction {
        tool: ConsoleTool::WriteStdin,
        arguments: serde_json::json!({"session_id": 4242, "chars": "x\n"}),
        output: "Process exited with code 0\nOutput:\n".into(),
        exit_code: Some(0),
        is_error: false,
        after_ms: None,
        volatile: Vec::new(),
    })]);
    let verdict = replay_step(&b.ctx(), b.tools(), &recorded).await;
    assert!(
        matches!(
            verdict,
            ReplayVerdict::Fallback(Fallback::Failed { action: 0, .. })
        ),
        "{verdict:?}"
    );
    b.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_slower_than_its_recorded_wait_is_awaited() {
    let a = Session::new(41234);
    let (mut exec, text) = a
        .call(
            "exec_command",
            serde_json::json!({"cmd": "echo start; sleep 0.6; echo done", "yield_time_ms": 5000}),
        )
        .await;
    assert!(text.contains("Process exited with code 0"), "{text}");
    // The replay's first answer comes before the end; what it printed then and later is the
    // output, compared whole.
    if let Action::Console(call) = &mut exec {
        call.arguments["yield_time_ms"] = serde_json::json!(250);
    }
    let b = Session::new(50321);
    let verdict = replay_step(&b.ctx(), b.tools(), &step(vec![exec.clone()])).await;
    assert!(verdict.passed(), "{}", verdict.describe());
    // And a recorded output the program does not print is still a drift.
    if let Action::Console(call) = &mut exec {
        call.output = call.output.replace("done", "failed");
    }
    let d = drift(replay_step(&b.ctx(), b.tools(), &step(vec![exec])).await);
    assert!(d.diff.contains("-failed\n+done"), "{}", d.diff);
    a.finish().await;
    b.finish().await;
}

/// Claude Code's Bash keeps the directory a command left only when the command succeeded: after
/// a failing `cd sub && …` the next command runs where the failing one started, and a replay
/// that carried `sub/` on would delete a file in the wrong folder while its output matched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_cd_does_not_move_the_replayed_bash() {
    let a = Session::new(41234);
    let ws = std::path::Path::new(&a.workdir);
    std::fs::create_dir_all(ws.join("sub")).expect("sub");
    for file in ["victim.txt", "sub/victim.txt"] {
        std::fs::write(ws.join(file), "x\n").expect("victim");
    }
    // As the agent's Bash ran them: the failing `cd` left it in the workspace.
    let recorded = step(vec![
        shell_action(&a.placeholders, "cd sub && false", &a.workdir, Some(1), ""),
        shell_action(
            &a.placeholders,
            "rm -f victim.txt; echo removed",
            &a.workdir,
            Some(0),
            "removed",
        ),
    ]);
    let ctx = a.ctx();
    let bash = AgentTools {
        shell: AgentShell::Bash,
        browser: None,
    };
    let verdict = replay_step(&ctx, bash, &recorded).await;
    assert!(verdict.passed(), "{}", verdict.describe());
    assert!(!ws.join("victim.txt").exists(), "the workspace's file went");
    assert!(
        ws.join("sub/victim.txt").exists(),
        "the replay acted in sub/ after a failing cd"
    );
    a.finish().await;
}

/// A replayed command may run as long as the agent's own tool let it: the timeout its call
/// asked for, else Claude Code's Bash default (2 minutes), not the replay's own limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_command_has_the_agents_own_timeout() {
    let a = Session::new(41234);
    let slow = shell_action(
        &a.placeholders,
        "sleep 1.5; echo done",
        &a.workdir,
        Some(0),
        "done",
    );
    let asked = bugatti::replay::record::with_timeout(slow.clone(), Some(5_000));
    let mut ctx = a.ctx();
    ctx.action_timeout = Duration::from_millis(500);
    let bash = AgentTools {
        shell: AgentShell::Bash,
        browser: None,
    };
    for action in [slow, asked.clone()] {
        let verdict = replay_step(&ctx, bash, &step(vec![action])).await;
        assert!(verdict.passed(), "{}", verdict.describe());
    }
    // A call that asked for less than the command now takes stops there.
    let short = bugatti::replay::record::with_timeout(asked, Some(300));
    let verdict = replay_step(&ctx, bash, &step(vec![short])).await;
    assert!(
        matches!(verdict, ReplayVerdict::Fallback(Fallback::Failed { .. })),
        "{}",
        verdict.describe()
    );
    a.finish().await;
}

/// Claude Code's Bash reads its default timeout from `BASH_DEFAULT_TIMEOUT_MS` in its
/// environment: a replay of a call that asked for none stops where the agent's would have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_bash_command_has_the_agents_configured_default() {
    let mut a = Session::new(41235);
    let slow = shell_action(
        &a.placeholders,
        "sleep 30; echo done",
        &a.workdir,
        Some(0),
        "done",
    );
    a.env.push(("BASH_DEFAULT_TIMEOUT_MS".into(), "300".into()));
    let mut ctx = a.ctx();
    // The step's own timeout is far longer: the agent's tool, not the step, stops the command.
    ctx.action_timeout = Duration::from_secs(600);
    let bash = AgentTools {
        shell: AgentShell::Bash,
        browser: None,
    };
    let verdict = replay_step(&ctx, bash, &step(vec![slow])).await;
    match &verdict {
        ReplayVerdict::Fallback(Fallback::Failed { reason, .. }) => {
            assert!(reason.contains("0.3s"), "{reason}");
        }
        other => panic!("{}", other.describe()),
    }
    a.finish().await;
}

/// Codex's and pi's shell tools set no timeout of their own (pi: "no default timeout"; Codex
/// keeps a slow command running and waits on it): a call that asked for none runs as long as
/// the step may, and one that asked for a timeout stops there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_codex_or_pi_command_runs_as_its_call_allowed() {
    let a = Session::new(41236);
    let slow = shell_action(
        &a.placeholders,
        "sleep 30; echo done",
        &a.workdir,
        Some(0),
        "done",
    );
    // The call asked for 2 s (pi's `timeout: 2`): the replay stops it there.
    let asked = bugatti::replay::record::with_timeout(slow, Some(2_000));
    let mut ctx = a.ctx();
    ctx.action_timeout = Duration::from_secs(600);
    let verdict = replay_step(&ctx, a.tools(), &step(vec![asked])).await;
    match &verdict {
        ReplayVerdict::Fallback(Fallback::Failed { reason, .. }) => {
            assert!(reason.contains("after 2s"), "{reason}");
        }
        other => panic!("{}", other.describe()),
    }
    // Without one, the bound is the step's (the replay's context), not a limit of the replay's.
    assert_eq!(
        AgentShell::Sh.timeout(None, &[], Duration::from_secs(900)),
        Duration::from_secs(900)
    );
    assert_eq!(
        AgentShell::Bash.timeout(None, &[], Duration::from_secs(900)),
        Duration::from_secs(120)
    );
    a.finish().await;
}

/// A call of the agent's shell tool as recorded.
fn shell_action(
    placeholders: &Placeholders,
    command: &str,
    cwd: &str,
    exit_code: Option<i32>,
    output: &str,
) -> Action {
    Action::Shell(ShellAction::recorded(
        placeholders,
        command,
        cwd,
        exit_code,
        output,
    ))
}
