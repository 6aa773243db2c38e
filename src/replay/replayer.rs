//! Running a recorded step again in a new session and comparing each output (SPEC §10).
//!
//! Console actions go through the session's own [`Console`] (the same PTY or pipes, env and cwd
//! the agent's calls get); the provider's shell actions are started by [`handle::start`] like a
//! `shell` step (`sh -c`, stderr into stdout, the agent's environment, its run marker) and their
//! group ended by [`terminate`]. Inputs are filled with this session's values; outputs on both
//! sides have the session's values turned back into placeholders, then are normalised, then
//! compared. The first difference stops the replay: the step goes to the agent with the drift.
//!
//! Interactive console sessions are compared by their accumulated output: when the text seen so
//! far is not yet the recorded one, the replay polls the session (an empty `write_stdin`) until
//! it is, the program exits, or the recorded wait has passed, so different chunking is no drift.

use super::compare::{compare_output, drift, Drift};
use super::format::{Action, ConsoleTool, RecordedStep};
use super::normalize::Normalizer;
use super::placeholders::Placeholders;
use super::verdict::{Fallback, Verdict};
use crate::console::Console;
use crate::process::exit::ExitStatus;
use crate::process::handle::{self, EnvMarker, Io, Launch};
use crate::process::owner::{Owner, Role, Scope};
use crate::process::teardown::{terminate, Ladder};
use crate::providers::AGENT_MARKER_ENV;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

/// The least time an interactive session is polled for its recorded output.
const MIN_CATCH_UP: Duration = Duration::from_millis(1_000);
/// How long one catch-up poll waits.
const POLL_MS: u64 = 250;

/// What a replay needs from its session.
pub struct ReplayContext<'a> {
    /// The session's console: console actions run through it (`None` when `[provider] console`
    /// is off: a recording with console actions then falls back to the agent).
    pub console: Option<&'a Console>,
    pub placeholders: &'a Placeholders,
    pub normalizer: &'a Normalizer,
    /// The run: owner of shell actions' groups and their marker.
    pub run_id: String,
    pub step_id: u32,
    /// A shell action's whole environment (the agent's: `providers::agent_env`).
    pub env: Vec<(String, String)>,
    /// The longest a shell action may run before it is stopped and the replay falls back.
    pub action_timeout: Duration,
}

/// Replays `step`: [`Verdict::Replayed`] only when every action ran and matched.
pub async fn replay_step(ctx: &ReplayContext<'_>, step: &RecordedStep) -> Verdict {
    let started = Instant::now();
    let mut sessions = Sessions::default();
    for (i, action) in step.actions.iter().enumerate() {
        let result = match action {
            Action::Console {
                tool,
                arguments,
                output,
                exit_code,
                is_error,
            } => {
                let recorded = Recorded {
                    output,
                    exit_code: *exit_code,
                    is_error: *is_error,
                };
                replay_console(ctx, &mut sessions, i, action, *tool, arguments, recorded).await
            }
            Action::Shell {
                command,
                cwd,
                exit_code,
                output,
            } => replay_shell(ctx, i, action, command, cwd, *exit_code, output).await,
        };
        if let Err(fallback) = result {
            return Verdict::Fallback(fallback);
        }
    }
    Verdict::Replayed {
        actions: step.actions.len(),
        took: started.elapsed(),
        cost_saved_usd: step.cost_usd,
    }
}

struct Recorded<'a> {
    output: &'a str,
    exit_code: Option<i32>,
    is_error: bool,
}

/// Console sessions of this replay: recorded id → live id, and each one's output so far.
#[derive(Default)]
struct Sessions {
    live: HashMap<u64, u64>,
    expected: HashMap<u64, String>,
    seen: HashMap<u64, String>,
}

/// The parts of a console answer (Codex's layout, [`crate::console::reply`]).
#[derive(Debug, Default, PartialEq)]
struct Parsed {
    exit_code: Option<i32>,
    running: Option<u64>,
    body: String,
}

fn parse_answer(text: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let (head, body) = match text.split_once("\nOutput:\n") {
        Some((head, body)) => (head, body.to_string()),
        None => (text, String::new()),
    };
    for line in head.lines() {
        if let Some(code) = line.strip_prefix("Process exited with code ") {
            parsed.exit_code = code.trim().parse().ok();
        } else if let Some(id) = line.strip_prefix("Process running with session ID ") {
            parsed.running = id.trim().parse().ok();
        }
    }
    parsed.body = body;
    parsed
}

/// A log tool's answer without what differs every run by construction (offsets, timings, ids).
fn stable_lines(text: &str) -> String {
    const VOLATILE: [&str; 5] = [
        "Chunk ID:",
        "Wall time:",
        "Next offset:",
        "Original token count:",
        "Process running with session ID",
    ];
    text.lines()
        .filter(|l| !VOLATILE.iter().any(|p| l.starts_with(p)))
        .collect::<Vec<_>>()
        .join("\n")
}

impl ReplayContext<'_> {
    /// An output in the form both sides are compared in: this session's values as placeholders
    /// (the recording's were written so), secrets redacted.
    fn comparable(&self, text: &str) -> String {
        self.placeholders.insert(text)
    }

    fn compare(&self, action: usize, what: &str, expected: &str, seen: &str) -> Option<Drift> {
        compare_output(
            self.normalizer,
            action,
            what,
            &self.comparable(expected),
            &self.comparable(seen),
        )
    }
}

fn exit_drift(i: usize, what: &str, expected: Option<i32>, seen: Option<i32>) -> Fallback {
    let show = |c: Option<i32>| c.map_or("none (still running)".to_string(), |c| c.to_string());
    Fallback::Drift(drift(i, what, "exit code", &show(expected), &show(seen)))
}

async fn replay_console(
    ctx: &ReplayContext<'_>,
    sessions: &mut Sessions,
    i: usize,
    action: &Action,
    tool: ConsoleTool,
    arguments: &Value,
    recorded: Recorded<'_>,
) -> Result<(), Fallback> {
    let what = action.describe();
    let mut args = ctx.placeholders.fill_json(arguments);
    let recorded_session = arguments["session_id"].as_u64();
    if matches!(tool, ConsoleTool::WriteStdin | ConsoleTool::KillSession) {
        let Some(live) = recorded_session.and_then(|id| sessions.live.get(&id)) else {
            return Err(Fallback::Failed {
                action: i,
                reason: "a console session this step did not start".into(),
            });
        };
        args["session_id"] = Value::from(*live);
    }
    let Some(console) = ctx.console else {
        return Err(Fallback::Failed {
            action: i,
            reason: "the agent console is off in this run".into(),
        });
    };
    let answer = console.call(tool.name(), args).await;
    if answer.is_error != recorded.is_error {
        return Err(Fallback::Drift(drift(
            i,
            &what,
            "error",
            &format!("is_error = {}\n{}", recorded.is_error, recorded.output),
            &format!("is_error = {}\n{}", answer.is_error, answer.text),
        )));
    }
    match tool {
        ConsoleTool::ExecCommand | ConsoleTool::WriteStdin if !recorded.is_error => {
            let mut expected = parse_answer(recorded.output);
            expected.exit_code = recorded.exit_code.or(expected.exit_code);
            let mut seen = parse_answer(&answer.text);
            let key = match tool {
                ConsoleTool::ExecCommand => expected.running,
                _ => recorded_session,
            };
            if let (ConsoleTool::ExecCommand, Some(old), Some(new)) =
                (tool, expected.running, seen.running)
            {
                sessions.live.insert(old, new);
            }
            let Some(key) = key else {
                // Ran to its end in one call, as recorded: compare this call's output.
                if expected.exit_code.is_some() && seen.exit_code.is_none() {
                    // Slower this time: let it finish within the recorded wait.
                    if let Some(live) = seen.running {
                        let mut body = std::mem::take(&mut seen.body);
                        let end =
                            catch_up(ctx, live, &args_yield(arguments), &mut body, None).await;
                        seen.exit_code = end.exit_code;
                        seen.body = body;
                    }
                }
                if expected.exit_code != seen.exit_code {
                    return Err(exit_drift(i, &what, expected.exit_code, seen.exit_code));
                }
                return match ctx.compare(i, &what, &expected.body, &seen.body) {
                    Some(d) => Err(Fallback::Drift(d)),
                    None => Ok(()),
                };
            };
            let exp_acc = sessions.expected.entry(key).or_default();
            exp_acc.push_str(&expected.body);
            let expected_text = exp_acc.clone();
            let seen_acc = sessions.seen.entry(key).or_default();
            seen_acc.push_str(&seen.body);
            let wanted = ctx.normalizer.normalize(&ctx.comparable(&expected_text));
            let live = sessions.live.get(&key).copied().or(seen.running);
            if let (Some(live), None) = (live, seen.exit_code) {
                let end =
                    catch_up(ctx, live, &args_yield(arguments), seen_acc, Some(&wanted)).await;
                seen.exit_code = end.exit_code;
            }
            if let Some(d) = ctx.compare(i, &what, &expected_text, seen_acc) {
                return Err(Fallback::Drift(d));
            }
            if expected.exit_code.is_some() && expected.exit_code != seen.exit_code {
                return Err(exit_drift(i, &what, expected.exit_code, seen.exit_code));
            }
            Ok(())
        }
        ConsoleTool::ReadLog | ConsoleTool::WaitForLog => {
            let expected = stable_lines(recorded.output);
            let seen = stable_lines(&answer.text);
            match ctx.compare(i, &what, &expected, &seen) {
                Some(d) => Err(Fallback::Drift(d)),
                None => Ok(()),
            }
        }
        // kill_session: that it worked (or failed) as recorded is the whole check.
        _ => Ok(()),
    }
}

/// The recorded call's wait, the least a catch-up allows.
fn args_yield(arguments: &Value) -> Duration {
    arguments["yield_time_ms"]
        .as_u64()
        .map(Duration::from_millis)
        .unwrap_or(MIN_CATCH_UP)
        .max(MIN_CATCH_UP)
}

/// Polls live console session `live` until its accumulated output (`acc`) normalises to
/// `wanted` (or, with `None`, until it exits), it exits, or `wait` has passed.
async fn catch_up(
    ctx: &ReplayContext<'_>,
    live: u64,
    wait: &Duration,
    acc: &mut String,
    wanted: Option<&str>,
) -> Parsed {
    let deadline = Instant::now() + *wait;
    let mut last = Parsed {
        running: Some(live),
        ..Parsed::default()
    };
    loop {
        let matched = wanted.is_some_and(|w| ctx.normalizer.normalize(&ctx.comparable(acc)) == w);
        if matched || last.exit_code.is_some() || Instant::now() >= deadline {
            return last;
        }
        let Some(console) = ctx.console else {
            return last;
        };
        let answer = console
            .call(
                ConsoleTool::WriteStdin.name(),
                serde_json::json!({"session_id": live, "chars": "", "yield_time_ms": POLL_MS}),
            )
            .await;
        if answer.is_error {
            return last;
        }
        last = parse_answer(&answer.text);
        acc.push_str(&last.body);
    }
}

/// How a shell action's process ended.
enum ShellEnd {
    Exited(ExitStatus),
    TimedOut,
}

async fn replay_shell(
    ctx: &ReplayContext<'_>,
    i: usize,
    action: &Action,
    command: &str,
    cwd: &str,
    exit_code: Option<i32>,
    output: &str,
) -> Result<(), Fallback> {
    let what = action.describe();
    let failed = |reason: String| Fallback::Failed { action: i, reason };
    let command = ctx.placeholders.fill(command);
    let cwd = PathBuf::from(ctx.placeholders.fill(cwd));
    if !cwd.is_dir() {
        return Err(failed(format!("cwd {} is not a directory", cwd.display())));
    }
    let owner = Owner::new(Scope::run(ctx.run_id.clone()), Role::ShellStep(ctx.step_id));
    // As the shell provider runs a command: stderr joins stdout, as the tool result showed both.
    let mut launch = Launch::shell(
        owner,
        format!("exec 2>&1\n{command}"),
        Io::Piped {
            stdin: false,
            stdout: true,
            stderr: false,
        },
    );
    launch.cwd = Some(cwd);
    launch.env = ctx.env.clone();
    launch.inherit_env = false;
    launch.marker = EnvMarker {
        var: AGENT_MARKER_ENV,
        value: ctx.run_id.clone(),
    };
    launch.kill_on_drop = true;
    let mut group = handle::start(launch).map_err(|e| failed(format!("cannot start sh: {e}")))?;
    let mut stdout = group.take_stdout();
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let limit = tokio::time::sleep(ctx.action_timeout);
    tokio::pin!(limit);
    let mut status = None;
    let end = loop {
        tokio::select! {
            read = async { match stdout.as_mut() {
                Some(out) => out.read(&mut buf).await,
                None => std::future::pending().await,
            } } => match read {
                Ok(0) | Err(_) => {
                    stdout = None;
                    if let Some(s) = status.take() { break ShellEnd::Exited(s); }
                }
                Ok(n) => bytes.extend_from_slice(&buf[..n]),
            },
            s = group.wait(), if status.is_none() => {
                if stdout.is_none() { break ShellEnd::Exited(s); }
                // A background job may hold the pipe: what it wrote by now is the output.
                status = Some(s);
                tokio::time::sleep(Duration::from_millis(100)).await;
                while let Ok(Ok(n)) = tokio::time::timeout(
                    Duration::from_millis(50),
                    async { match stdout.as_mut() {
                        Some(out) => out.read(&mut buf).await,
                        None => Ok(0),
                    } },
                ).await {
                    if n == 0 { break; }
                    bytes.extend_from_slice(&buf[..n]);
                }
                if let Some(s) = status.take() { break ShellEnd::Exited(s); }
            }
            _ = &mut limit => break ShellEnd::TimedOut,
        }
    };
    drop(stdout);
    // Whatever it left running is killed now: nothing a replayed action started outlives it.
    terminate(&mut group, &Ladder::kill()).await;
    let status = match end {
        ShellEnd::Exited(status) => status,
        ShellEnd::TimedOut => {
            return Err(failed(format!(
                "still running after {}s",
                ctx.action_timeout.as_secs()
            )))
        }
    };
    let seen_code = status.code();
    if seen_code != exit_code {
        return Err(exit_drift(i, &what, exit_code, seen_code));
    }
    let seen = ctx.placeholders.redact(&String::from_utf8_lossy(&bytes));
    // The agents' shell tools hand the model their output without its final newline(s) (Claude
    // Code's Bash) or with them (Codex): trailing whitespace is not a difference.
    match ctx.compare(i, &what, output.trim_end(), seen.trim_end()) {
        Some(d) => Err(Fallback::Drift(d)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_parsed() {
        let p = parse_answer(
            "Chunk ID: 5b7a79\nWall time: 0.5005 seconds\nProcess exited with code 3\n\
             Original token count: 2\nOutput:\nhi\n",
        );
        assert_eq!(p.exit_code, Some(3));
        assert_eq!(p.running, None);
        assert_eq!(p.body, "hi\n");
        let p = parse_answer("Process running with session ID 51363\nOutput:\n");
        assert_eq!(p.running, Some(51363));
        assert_eq!(
            stable_lines("Matched: yes\nNext offset: 120\nx"),
            "Matched: yes\nx"
        );
    }
}
