//! The `shell` provider (docs/providers.md "Providers"): no model, the instruction's own commands decide. It
//! makes every test runnable offline and is the demo's provider.
//!
//! - Commands are the instruction's fenced code blocks (no language tag, or `sh`, `bash`, `shell`,
//!   `console`; other languages are data, not commands) and its inline `` `backtick` `` spans outside
//!   fences, in order of appearance. Each runs as `sh -c` (stderr merged into stdout) in the
//!   workspace, with the session's environment plus `BUGATTI_STEP_ID`, in its own process group.
//! - The first command that exits non-zero ends the step: `RESULT ERROR: <command> exited <code>`
//!   with the tail of its output. All exit 0: `RESULT OK`.
//! - The commands' output is scanned like an agent's reply: `BUGATTI_LOG` and `BUGATTI_EVIDENCE`
//!   lines count, and so do result markers: when every command exits 0, the last
//!   `RESULT WARN: …` / `RESULT ERROR: …` printed by a command decides (that is how a shell step
//!   reports a warning). A non-zero exit always wins over a printed marker.
//! - An instruction without any command is a `protocol_error`: nothing could be checked.
//! - Background processes do not outlive their step: when a command exits, what is left of its
//!   process group (and anything carrying the agent marker) is killed.
//!
//! The output goes to `transcripts/agent.log` as `$ command` headers, the raw output, and the
//! step's `RESULT` line, like a reply from an agent.

use super::reply::ReplyCollector;
use super::transcript::SharedTranscript;
use super::{
    agent_env, command::cancelled, AgentContext, AgentError, CancelSignal, Provider, ProviderKind,
    StepRequest, StepVerdict, AGENT_MARKER_ENV,
};
use crate::model::ids::StepId;
use crate::model::markers::{ResultMarker, ResultVerdict};
use crate::model::outcome::{StepStatus, TeardownState};
use crate::process::exit::ExitStatus;
use crate::process::handle::{self, EnvMarker, Io, Launch};
use crate::process::job_control::Deadline;
use crate::process::owner::{Owner, Role, Scope};
use crate::process::piped::read_to_exit;
use crate::process::teardown::{terminate, Ladder};
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

/// Bytes of a failing command's output quoted in the step message.
const OUTPUT_TAIL: usize = 2048;

/// Fenced-block languages that are commands.
const SHELL_LANGUAGES: [&str; 5] = ["", "sh", "bash", "shell", "console"];

/// The commands of an instruction, in order.
pub fn extract_commands(instruction: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut fence: Option<(String, bool, Vec<&str>)> = None; // (marker, is shell, lines)
    for line in instruction.lines() {
        let trimmed = line.trim_start();
        if let Some((marker, is_shell, lines)) = fence.as_mut() {
            if trimmed.starts_with(marker.as_str())
                && trimmed.trim_start_matches('`').trim().is_empty()
            {
                let body = lines.join("\n");
                if *is_shell && !body.trim().is_empty() {
                    commands.push(body.trim_matches('\n').to_string());
                }
                fence = None;
            } else {
                lines.push(line);
            }
            continue;
        }
        if trimmed.starts_with("```") {
            let ticks = trimmed.len() - trimmed.trim_start_matches('`').len();
            let language = trimmed[ticks..].trim().to_ascii_lowercase();
            let is_shell = SHELL_LANGUAGES.contains(&language.as_str());
            fence = Some(("`".repeat(ticks), is_shell, Vec::new()));
            continue;
        }
        commands.extend(inline_spans(line));
    }
    // An unclosed fence still holds commands: take them rather than silently skipping.
    if let Some((_, true, lines)) = fence {
        let body = lines.join("\n");
        if !body.trim().is_empty() {
            commands.push(body.trim_matches('\n').to_string());
        }
    }
    commands
}

/// `` `a` `` and ``` ``a `b` c`` ``` spans of one line (Markdown's rule: a run of N backticks
/// closes at the next run of exactly N).
fn inline_spans(line: &str) -> Vec<String> {
    let bytes = line.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
        let start = i + run;
        let mut j = start;
        let mut closed = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let r = bytes[j..].iter().take_while(|&&b| b == b'`').count();
                if r == run {
                    closed = Some(j);
                    break;
                }
                j += r;
            } else {
                j += 1;
            }
        }
        match closed {
            Some(end) => {
                let span = line[start..end].trim();
                if !span.is_empty() {
                    spans.push(span.to_string());
                }
                i = end + run;
            }
            None => i = start,
        }
    }
    spans
}

pub struct ShellProvider {
    ctx: AgentContext,
    transcript: Option<SharedTranscript>,
    teardown: TeardownState,
}

/// How one command ended.
enum CommandEnd {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
    SpawnFailed(std::io::Error),
}

impl ShellProvider {
    pub fn new(ctx: AgentContext) -> Self {
        Self {
            ctx,
            transcript: None,
            teardown: TeardownState::Clean,
        }
    }

    fn write(&self, bytes: &[u8]) {
        if let Some(t) = &self.transcript {
            t.write(bytes);
        }
    }

    /// Runs one command to its end; its output feeds the collector and `tail`.
    async fn run_command(
        &mut self,
        command: &str,
        step_id: StepId,
        deadline: Deadline,
        cancel: &mut CancelSignal,
        collector: &mut ReplyCollector,
        tail: &mut Vec<u8>,
    ) -> CommandEnd {
        let facts = &self.ctx.facts;
        let mut env = agent_env(&self.ctx.spec, facts);
        env.push(("BUGATTI_STEP_ID".into(), step_id.to_string()));
        env.push(super::step_traceparent(facts, step_id));
        let script = format!("exec 2>&1\n{command}");
        let owner = Owner::new(Scope::run(facts.run_id.clone()), Role::ShellStep(step_id));
        let mut launch = Launch::shell(
            owner,
            script,
            Io::Piped {
                stdin: false,
                stdout: true,
                stderr: false,
            },
        );
        launch.cwd = Some(self.ctx.spec.cwd.clone());
        launch.env = env;
        launch.inherit_env = false;
        launch.marker = EnvMarker {
            var: AGENT_MARKER_ENV,
            value: facts.run_id.to_string(),
        };
        launch.kill_on_drop = true;
        let mut group = match handle::start(launch) {
            Ok(group) => group,
            Err(e) => return CommandEnd::SpawnFailed(e),
        };
        // A background job may hold the pipe open after the exit: what it writes in half a
        // second is read too.
        let stop = async {
            tokio::select! {
                _ = deadline.reached() => CommandEnd::TimedOut,
                _ = cancelled(cancel) => CommandEnd::Cancelled,
            }
        };
        let read = read_to_exit(
            &mut group,
            Duration::from_millis(500),
            |chunk| {
                self.write(chunk);
                collector.push(chunk);
                tail.extend_from_slice(chunk);
                if tail.len() > 2 * OUTPUT_TAIL {
                    tail.drain(..tail.len() - OUTPUT_TAIL);
                }
            },
            stop,
        )
        .await;
        let end = read.map_or_else(|stopped| stopped, CommandEnd::Exited);
        // Cut short: its stop signal and grace. Exited: nothing it started outlives the step.
        let ladder = if matches!(end, CommandEnd::Exited(_)) {
            Ladder::kill()
        } else {
            Ladder::harness(Signal::SIGTERM, self.ctx.spec.stop_timeout)
        };
        if !terminate(&mut group, &ladder).await.leaked.is_empty() {
            self.teardown = TeardownState::Leaked;
        }
        end
    }
}

/// `exited 3`, `was killed by signal 9 (SIGKILL)`.
fn exit_words(status: &ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("exited {code}"),
        None => format!("ended by {}", super::process::describe(status)),
    }
}

/// The first line of a command, for messages.
fn short(command: &str) -> String {
    let mut lines = command.lines();
    let first = lines.next().unwrap_or_default();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first.to_string()
    }
}

fn tail_text(tail: &[u8]) -> String {
    let start = tail.len().saturating_sub(OUTPUT_TAIL);
    String::from_utf8_lossy(&tail[start..])
        .trim_end()
        .to_string()
}

#[async_trait::async_trait]
impl Provider for ShellProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Shell
    }

    async fn start(&mut self) -> Result<(), AgentError> {
        let facts = &self.ctx.facts;
        self.transcript = Some(SharedTranscript::create(
            &facts.run_paths().agent_log(),
            facts.secrets.clone(),
        )?);
        let cwd = &self.ctx.spec.cwd;
        if !cwd.is_dir() {
            return Err(AgentError::Config {
                provider: "shell",
                problem: format!("its working directory {} is not a directory", cwd.display()),
            });
        }
        Ok(())
    }

    async fn bootstrap(&mut self) -> Result<(), AgentError> {
        Ok(())
    }

    async fn run_step(&mut self, request: &StepRequest, mut cancel: CancelSignal) -> StepVerdict {
        let started = Instant::now();
        // Stopped time (Ctrl+Z) does not count against it.
        let deadline = Deadline::after(request.timeout);
        let mut collector = self.ctx.collector(request.step_id);
        let commands = extract_commands(&request.instruction);
        self.write(format!("### step {}\n", request.step_id).as_bytes());
        let mut failure: Option<StepVerdict> = None;
        if commands.is_empty() {
            failure = Some(collector.verdict_with(
                StepStatus::ProtocolError,
                "the shell provider found no command in the instruction \
                 (write commands in `backticks` or a fenced code block)",
            ));
        }
        for command in &commands {
            self.write(format!("$ {command}\n").as_bytes());
            let mut tail = Vec::new();
            let end = self
                .run_command(
                    command,
                    request.step_id,
                    deadline,
                    &mut cancel,
                    &mut collector,
                    &mut tail,
                )
                .await;
            collector.finish();
            let verdict = match end {
                CommandEnd::Exited(status) if status.success() => continue,
                CommandEnd::Exited(status) => {
                    let output = tail_text(&tail);
                    let mut message = format!("{} {}", short(command), exit_words(&status));
                    if !output.is_empty() {
                        message.push('\n');
                        message.push_str(&output);
                    }
                    collector.verdict_with(StepStatus::Error, message)
                }
                CommandEnd::TimedOut => super::turn::timed_out_verdict(
                    &collector,
                    request.timeout,
                    &format!(" while running {}", short(command)),
                ),
                CommandEnd::Cancelled => collector.interrupted_verdict(),
                CommandEnd::SpawnFailed(e) => collector.verdict_with(
                    StepStatus::Error,
                    format!("could not run `sh -c {}`: {e}", short(command)),
                ),
            };
            failure = Some(verdict);
            break;
        }
        let mut verdict = match failure {
            Some(v) => v,
            None => {
                let printed = collector.last_result().cloned();
                let result = printed.unwrap_or(ResultMarker {
                    verdict: ResultVerdict::Ok,
                    text: String::new(),
                });
                collector.verdict(Some(&result))
            }
        };
        let line = match verdict.status {
            StepStatus::Ok => "RESULT OK".to_string(),
            StepStatus::Warn => format!("RESULT WARN: {}", verdict.message),
            status => format!("RESULT ERROR: [{}] {}", status.as_str(), verdict.message),
        };
        self.write(format!("{line}\n").as_bytes());
        if let Some(t) = &self.transcript {
            t.flush();
        }
        verdict.duration = started.elapsed();
        verdict
    }

    async fn close(&mut self) -> TeardownState {
        if let Some(t) = &self.transcript {
            t.finish();
        }
        self.teardown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_backticks_and_shell_fences_in_order() {
        let text = "Check `curl -sf http://x/health` then\n\n```sh\necho one\necho two\n```\n\
                    and ``printf '`x`'`` too.\n```json\n{\"not\": \"a command\"}\n```\n`true`";
        assert_eq!(
            extract_commands(text),
            vec![
                "curl -sf http://x/health".to_string(),
                "echo one\necho two".to_string(),
                "printf '`x`'".to_string(),
                "true".to_string(),
            ]
        );
        assert!(extract_commands("no commands here, just `` and text").is_empty());
        assert_eq!(extract_commands("```\nls\n"), vec!["ls".to_string()]);
    }
}
