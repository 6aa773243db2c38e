//! The console kind of action ([`ConsoleAction`]): a call to the agent console replayed through the session's own
//! console, and compared as the agent saw it (see docs/replay.md).
//!
//! Everything the agent saw is compared: the output, the exit code and whether the process was
//! still running (always, on both sides), and the answer's wall time as a ceiling (slower than
//! `max(2 × recorded, recorded + 1 s)` is drift). Interactive sessions are compared by their
//! accumulated output: when the text seen so far is not yet the recorded one, the replay polls
//! the session (an empty `write_stdin`) until it is, the program exits, or the recorded wait has
//! passed, so different chunking is no drift.

use super::compare::{drift, Checked};
use super::context::{ActionAt, AgentTools, ReplayContext};
use super::domains::Learned;
use super::kind::RecordedKind;
use super::placeholders::Placeholders;
use super::verdict::Fallback;
use crate::console::Answer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The least time an interactive session is polled for its recorded output.
const MIN_CATCH_UP: Duration = Duration::from_millis(1_000);
/// How long one catch-up poll waits.
const POLL_MS: u64 = 250;

/// A console tool the agent called (see docs/console.md). `list_sessions` changes nothing and its
/// answer holds only volatile ids, so it is not recorded; `list_logs` tells the agent whether the
/// harness's commands still run, which a pass may rest on ("the worker is up").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConsoleTool {
    ExecCommand,
    WriteStdin,
    ReadLog,
    WaitForLog,
    KillSession,
    ListLogs,
}

impl ConsoleTool {
    /// The tool's name on the MCP server.
    pub fn name(self) -> &'static str {
        match self {
            Self::ExecCommand => "exec_command",
            Self::WriteStdin => "write_stdin",
            Self::ReadLog => "read_log",
            Self::WaitForLog => "wait_for_log",
            Self::KillSession => "kill_session",
            Self::ListLogs => "list_logs",
        }
    }

    /// The tool of a name on the MCP server; `None` for one that is not replayable.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "exec_command" => Self::ExecCommand,
            "write_stdin" => Self::WriteStdin,
            "read_log" => Self::ReadLog,
            "wait_for_log" => Self::WaitForLog,
            "kill_session" => Self::KillSession,
            "list_logs" => Self::ListLogs,
            _ => return None,
        })
    }
}

/// A call to the agent console as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsoleAction {
    pub tool: ConsoleTool,
    /// The call's arguments as sent (a JSON object; keys sorted).
    pub arguments: serde_json::Value,
    /// The whole answer text the agent got.
    pub output: String,
    /// The process's exit code, when the call saw it exit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The answer was an error (bad arguments, unknown session).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// For `list_logs`: how long after the step's previous action began the agent asked
    /// (ms). A replay asks no sooner: a worker that dies a second after "ready" was alive
    /// when the agent looked, and is dead when the replay looks as late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<u64>,
    /// Learned volatile tokens of the compared output (`[line, token, {domain}]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volatile: Vec<Learned>,
}

impl ConsoleAction {
    /// A console call as recorded; `None` for a tool that is not replayed (`list_sessions`: it
    /// changes nothing and says nothing of the app).
    pub fn recorded(
        placeholders: &Placeholders,
        tool: &str,
        arguments: &serde_json::Value,
        answer: &Answer,
    ) -> Option<Self> {
        let tool = ConsoleTool::from_name(tool)?;
        Some(Self {
            tool,
            arguments: placeholders.insert_json(arguments),
            output: placeholders.insert(&answer.text),
            exit_code: answer.exit_code,
            is_error: answer.is_error,
            after_ms: None,
            volatile: Vec::new(),
        })
    }
}

impl RecordedKind for ConsoleAction {
    type State = Sessions;
    const NAME: &'static str = "console";

    fn describe(&self) -> String {
        let arguments = &self.arguments;
        let detail = match self.tool {
            ConsoleTool::ExecCommand => arguments["cmd"].as_str().map(str::to_string),
            ConsoleTool::WriteStdin => arguments["chars"]
                .as_str()
                .map(|c| format!("session {}: {c:?}", arguments["session_id"])),
            ConsoleTool::KillSession => Some(format!("session {}", arguments["session_id"])),
            ConsoleTool::ReadLog | ConsoleTool::WaitForLog => {
                arguments["name"].as_str().map(str::to_string)
            }
            ConsoleTool::ListLogs => None,
        };
        match detail {
            Some(d) => format!("{} {d}", self.tool.name()),
            None => self.tool.name().to_string(),
        }
    }

    fn output(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.output)
    }

    fn volatile(&self) -> &[Learned] {
        &self.volatile
    }

    fn volatile_mut(&mut self) -> &mut Vec<Learned> {
        &mut self.volatile
    }

    fn same_call(&self, other: &Self) -> bool {
        self.tool == other.tool
            && without_session(&self.arguments) == without_session(&other.arguments)
    }

    /// The tool and what it named, without the session's id (numbered afresh each run) and
    /// without how long it waited.
    fn target(&self) -> String {
        let arguments = &self.arguments;
        let named = |key: &str| {
            arguments[key]
                .as_str()
                .map(super::normalize::collapsed)
                .unwrap_or_default()
        };
        let detail = match self.tool {
            ConsoleTool::ExecCommand => named("cmd"),
            ConsoleTool::WriteStdin => named("chars"),
            ConsoleTool::ReadLog => named("name"),
            ConsoleTool::WaitForLog => format!("{} {}", named("name"), named("pattern")),
            ConsoleTool::KillSession | ConsoleTool::ListLogs => String::new(),
        };
        format!("{} {detail}", self.tool.name())
            .trim_end()
            .to_string()
    }

    fn compared(&self, sessions: &mut Sessions) -> Option<String> {
        sessions.compared(self.tool, &self.arguments, &self.output, self.is_error)
    }

    async fn replay(
        &self,
        ctx: &ReplayContext<'_>,
        _: AgentTools<'_>,
        sessions: &mut Sessions,
        at: &ActionAt<'_>,
    ) -> Result<(), Fallback> {
        replay(ctx, sessions, at, self).await
    }
}

/// Call arguments without the console session's id (it differs between two runs by design).
fn without_session(arguments: &serde_json::Value) -> serde_json::Value {
    let mut a = arguments.clone();
    if let Some(map) = a.as_object_mut() {
        map.remove("session_id");
    }
    a
}

/// Console sessions of this replay: recorded id → live id, and each one's output so far.
#[derive(Default)]
pub struct Sessions {
    live: HashMap<u64, u64>,
    expected: HashMap<u64, String>,
    seen: HashMap<u64, String>,
}

impl Sessions {
    /// The text a replay of this recorded call compares (see `replayer::compared_outputs`).
    pub(super) fn compared(
        &mut self,
        tool: ConsoleTool,
        arguments: &Value,
        output: &str,
        is_error: bool,
    ) -> Option<String> {
        match tool {
            _ if is_error => None,
            ConsoleTool::ExecCommand | ConsoleTool::WriteStdin => {
                let parsed = parse_answer(output);
                let key = match tool {
                    ConsoleTool::ExecCommand => parsed.running,
                    _ => arguments["session_id"].as_u64(),
                };
                match key {
                    None => Some(parsed.body),
                    Some(key) => {
                        let acc = self.expected.entry(key).or_default();
                        acc.push_str(&parsed.body);
                        Some(acc.clone())
                    }
                }
            }
            ConsoleTool::ReadLog | ConsoleTool::WaitForLog => Some(stable_lines(output)),
            ConsoleTool::ListLogs => Some(log_states(output)),
            ConsoleTool::KillSession => None,
        }
    }
}

impl ConsoleAction {
    /// The status lines of the answer the agent read above the compared output of an
    /// `exec_command` or `write_stdin` (empty for the other tools and an error): what a fact about
    /// the console's header (`contains "Process exited with code 0"`, `/Wall time: (\S+)/ number
    /// in [0, 2]`) is checked on, with the compared output below it.
    pub(super) fn fact_header(&self) -> String {
        if self.is_error
            || !matches!(
                self.tool,
                ConsoleTool::ExecCommand | ConsoleTool::WriteStdin
            )
        {
            return String::new();
        }
        let parsed = parse_answer(&self.output);
        fact_header(
            self.exit_code.or(parsed.exit_code),
            parsed.running,
            parsed.wall,
            parsed.tokens,
        )
    }
}

/// The answer's status lines as [`crate::console::reply::header`] writes them, without the chunk
/// id (new every call): its wall time, how the process stood, its token count, `Output:`.
fn fact_header(
    exit_code: Option<i32>,
    running: Option<u64>,
    wall: Option<Duration>,
    tokens: Option<usize>,
) -> String {
    let mut text = String::new();
    if let Some(wall) = wall {
        text.push_str(&format!("Wall time: {:.4} seconds\n", wall.as_secs_f64()));
    }
    match (exit_code, running) {
        (Some(code), _) => text.push_str(&format!("Process exited with code {code}\n")),
        (None, Some(id)) => text.push_str(&format!("Process running with session ID {id}\n")),
        (None, None) => {}
    }
    if let Some(tokens) = tokens {
        text.push_str(&format!("Original token count: {tokens}\n"));
    }
    text.push_str("Output:\n");
    text
}

/// The parts of a console answer (Codex's layout, [`crate::console::reply`]).
#[derive(Debug, Default, PartialEq)]
pub(super) struct Parsed {
    exit_code: Option<i32>,
    running: Option<u64>,
    wall: Option<Duration>,
    tokens: Option<usize>,
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
        } else if let Some(tokens) = line.strip_prefix("Original token count: ") {
            parsed.tokens = tokens.trim().parse().ok();
        } else if let Some(wall) = line.strip_prefix("Wall time: ") {
            parsed.wall = wall
                .trim_end_matches(" seconds")
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(Duration::from_secs_f64);
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

/// A `list_logs` answer without what grows every run (each log's size) and the session's paths:
/// each command's name, kind and state (`worker: long_lived, running`).
fn log_states(text: &str) -> String {
    text.lines()
        .map(|line| match line.split_once(": ") {
            Some((name, rest)) => {
                let kept: Vec<&str> = rest.splitn(4, ", ").take(2).collect();
                format!("{name}: {}", kept.join(", "))
            }
            None => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The longest a replay waits to look at the logs as late as the agent did.
const MAX_LOOK_DELAY: Duration = Duration::from_secs(30);

/// The slowest a replayed answer may be: `max(2 × recorded, recorded + 1 s)`.
pub fn wall_ceiling(recorded: Duration) -> Duration {
    (recorded * 2).max(recorded + Duration::from_secs(1))
}

fn exit_drift(at: &ActionAt<'_>, expected: Option<i32>, seen: Option<i32>) -> Fallback {
    let show = |c: Option<i32>| c.map_or("none (still running)".to_string(), |c| c.to_string());
    Fallback::hard(drift(
        at.index,
        &at.what,
        "exit code",
        &show(expected),
        &show(seen),
    ))
}

fn wall_check(
    at: &ActionAt<'_>,
    recorded: Option<Duration>,
    took: Duration,
) -> Result<(), Fallback> {
    match recorded {
        Some(wall) if took > wall_ceiling(wall) => Err(Fallback::hard(drift(
            at.index,
            &at.what,
            "wall time",
            &format!(
                "{:.3} seconds (at most {:.3} allowed)",
                wall.as_secs_f64(),
                wall_ceiling(wall).as_secs_f64()
            ),
            &format!("{:.3} seconds", took.as_secs_f64()),
        ))),
        _ => Ok(()),
    }
}

/// Replays one console call.
async fn replay(
    ctx: &ReplayContext<'_>,
    sessions: &mut Sessions,
    at: &ActionAt<'_>,
    recorded: &ConsoleAction,
) -> Result<(), Fallback> {
    let (tool, arguments) = (recorded.tool, &recorded.arguments);
    let failed = |reason: &str| Fallback::Failed {
        action: at.index,
        reason: reason.to_string(),
    };
    let mut args = ctx.placeholders.fill_json(arguments);
    let recorded_session = arguments["session_id"].as_u64();
    if matches!(tool, ConsoleTool::WriteStdin | ConsoleTool::KillSession) {
        let Some(live) = recorded_session.and_then(|id| sessions.live.get(&id)) else {
            return Err(failed("a console session this step did not start"));
        };
        args["session_id"] = Value::from(*live);
    }
    let Some(console) = ctx.console else {
        return Err(failed("the agent console is off in this run"));
    };
    // The agent looked at the commands' states this long after its previous action began: a
    // replay looks no sooner (a worker that died since is what the agent would have seen).
    if let (ConsoleTool::ListLogs, Some(after), Some(previous)) =
        (tool, recorded.after_ms, at.previous_began)
    {
        let at = previous + Duration::from_millis(after).min(MAX_LOOK_DELAY);
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
    }
    let began = Instant::now();
    let answer = console.call(tool.name(), args).await;
    if answer.is_error != recorded.is_error {
        return Err(Fallback::hard(drift(
            at.index,
            &at.what,
            "error",
            &format!("is_error = {}\n{}", recorded.is_error, recorded.output),
            &format!("is_error = {}\n{}", answer.is_error, answer.text),
        )));
    }
    match tool {
        ConsoleTool::ExecCommand | ConsoleTool::WriteStdin if !recorded.is_error => {
            let mut expected = parse_answer(&recorded.output);
            expected.exit_code = recorded.exit_code.or(expected.exit_code);
            let seen = parse_answer(&answer.text);
            let key = match tool {
                ConsoleTool::ExecCommand => expected.running,
                _ => recorded_session,
            };
            if let (ConsoleTool::ExecCommand, Some(old), Some(new)) =
                (tool, expected.running, seen.running)
            {
                sessions.live.insert(old, new);
            }
            let wall = expected.wall;
            // What a fact about the answer's status lines reads, as the agent read them (the
            // exit code is checked equal to the recorded one).
            let (exit_code, tokens) = (expected.exit_code, seen.tokens);
            let running = key.and_then(|k| sessions.live.get(&k).copied());
            match key {
                None => one_call(ctx, at, arguments, expected, seen).await?,
                Some(key) => in_session(ctx, sessions, at, arguments, key, expected, seen).await?,
            }
            let took = began.elapsed();
            wall_check(at, wall, took)?;
            ctx.note_fact_header(at, &fact_header(exit_code, running, Some(took), tokens));
            Ok(())
        }
        ConsoleTool::ReadLog | ConsoleTool::WaitForLog => {
            let wall = parse_answer(&recorded.output).wall;
            ctx.check(
                at,
                &stable_lines(&recorded.output),
                &stable_lines(&answer.text),
            )?;
            wall_check(at, wall, began.elapsed())
        }
        ConsoleTool::ListLogs => {
            ctx.check(at, &log_states(&recorded.output), &log_states(&answer.text))
        }
        // kill_session: that it worked (or failed) as recorded is the whole check.
        _ => Ok(()),
    }
}

/// A call that ran to its end when recorded: this call's output and exit code.
async fn one_call(
    ctx: &ReplayContext<'_>,
    at: &ActionAt<'_>,
    arguments: &Value,
    expected: Parsed,
    mut seen: Parsed,
) -> Result<(), Fallback> {
    if expected.exit_code.is_some() && seen.exit_code.is_none() {
        // Slower this time: let it finish within the recorded wait (the wall-time ceiling
        // judges the delay).
        if let Some(live) = seen.running {
            let mut body = std::mem::take(&mut seen.body);
            let end = catch_up(ctx, at, live, &args_yield(arguments), &mut body, None).await;
            seen.exit_code = end.exit_code;
            seen.body = body;
        }
    }
    if expected.exit_code != seen.exit_code {
        return Err(exit_drift(at, expected.exit_code, seen.exit_code));
    }
    ctx.check(at, &expected.body, &seen.body)
}

/// A call in a session that was still running when recorded: the session's output so far, and
/// whether it is still running, as recorded.
async fn in_session(
    ctx: &ReplayContext<'_>,
    sessions: &mut Sessions,
    at: &ActionAt<'_>,
    arguments: &Value,
    key: u64,
    expected: Parsed,
    mut seen: Parsed,
) -> Result<(), Fallback> {
    let exp_acc = sessions.expected.entry(key).or_default();
    exp_acc.push_str(&expected.body);
    let expected_text = exp_acc.clone();
    let live = sessions.live.get(&key).copied().or(seen.running);
    let seen_acc = sessions.seen.entry(key).or_default();
    seen_acc.push_str(&seen.body);
    if let (Some(live), None) = (live, seen.exit_code) {
        let end = catch_up(
            ctx,
            at,
            live,
            &args_yield(arguments),
            seen_acc,
            Some(&expected_text),
        )
        .await;
        seen.exit_code = end.exit_code;
    }
    ctx.check(at, &expected_text, seen_acc)?;
    // Exited where the recording's was still running, or the reverse, or another code: drift.
    if expected.exit_code != seen.exit_code {
        return Err(exit_drift(at, expected.exit_code, seen.exit_code));
    }
    Ok(())
}

/// The recorded call's wait, the least a catch-up allows.
fn args_yield(arguments: &Value) -> Duration {
    arguments["yield_time_ms"]
        .as_u64()
        .map(Duration::from_millis)
        .unwrap_or(MIN_CATCH_UP)
        .max(MIN_CATCH_UP)
}

/// Polls live console session `live` until its accumulated output (`acc`) matches `wanted`
/// (or, with `None`, until it exits), it exits, or `wait` has passed.
async fn catch_up(
    ctx: &ReplayContext<'_>,
    at: &ActionAt<'_>,
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
        let matched = wanted.is_some_and(|w| ctx.compare(at, w, acc) == Checked::Same);
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
        assert_eq!(p.wall, Some(Duration::from_secs_f64(0.5005)));
        assert_eq!(p.body, "hi\n");
        let p = parse_answer("Process running with session ID 51363\nOutput:\n");
        assert_eq!(p.running, Some(51363));
        assert_eq!(
            stable_lines("Matched: yes\nNext offset: 120\nx"),
            "Matched: yes\nx"
        );
    }

    #[test]
    fn the_wall_time_ceiling() {
        let ms = Duration::from_millis;
        assert_eq!(wall_ceiling(ms(50)), ms(1050));
        assert_eq!(wall_ceiling(ms(3000)), ms(6000));
    }

    #[test]
    fn a_list_logs_answer_is_compared_by_name_kind_and_state() {
        assert_eq!(
            log_states(
                "worker: long_lived, running, 6 bytes, /run/a/logs/worker.log\n\
                 seed: short_lived, finished, 120 bytes, /run/a/logs/seed.log\n"
            ),
            "worker: long_lived, running\nseed: short_lived, finished"
        );
    }
}
