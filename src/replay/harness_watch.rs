//! The harness watched as long as the agent would have watched it (see docs/replay.md, "What
//! replay watches"). A replay runs its actions at shell speed: a test whose steps all replay can
//! end ~70 ms after the harness is ready, while the agent's first look came seconds later, when
//! a worker that dies (or logs `FATAL`) a second after printing `ready` had already done so. So
//! the watch begins when the harness is ready, and a replayed step's pass stands only once the
//! harness has been up for [`window`] (the recorded time from readiness to the agent's first
//! look in the step, `first_look_ms`, at most [`CAP`]) and then:
//! - every long-lived harness command that ran when the harness was ready still runs;
//! - the logs the step read (`read_log`, `wait_for_log`) have no new error-level line (`FATAL`,
//!   `ERROR`, `panic`, a traceback, …) that the step's recorded answers did not have.
//!
//! Either is a drift: the step goes to the agent, which looks for itself. A step that ends
//! before its window does is checked at once, and again when the window ends ([`WatchRecheck`]): the
//! later steps replay meanwhile, their passes held back with it (the session's doing).

use super::action::Action;
use super::console::{ConsoleAction, ConsoleTool};
use super::format::RecordedStep;
use super::verdict::{Fallback, ReplayVerdict as Verdict};
use crate::console::logs::{self, LogSource};
use crate::console::Console;
use crate::model::ids::StepId;
use regex::Regex;
use std::collections::BTreeMap;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// The longest a replay watches the harness before its first step may pass.
pub const CAP: Duration = Duration::from_secs(2);

/// The most bytes of one log's new lines looked at (a chatty worker is not read whole).
const MAX_NEW_BYTES: usize = 1 << 20;

/// A log line at error level, as loggers and runtimes write one.
static ERROR_LEVEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"\b(FATAL|ERROR|CRITICAL|PANIC|EMERG|ALERT|Traceback|panicked|Unhandled|Uncaught)\b|(?i:\blevel"?[=:]\s*"?(error|fatal|critical)\b)|(?i:^\s*\[?(error|fatal|critical)\]?[:\s])"#,
    )
    .expect("a valid regex")
});

/// What a line keeps when compared with a recorded one: its words, not its numbers (a time, a
/// pid, a count differ every run; the error does not).
static NUMBERS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[0-9a-fA-F]*[0-9][0-9a-fA-F]*").expect("a valid regex"));

/// How long the replay watches: the recorded time from readiness to the agent's first look,
/// at most [`CAP`] (a recording that does not say: [`CAP`]).
pub fn window(first_look: Option<Duration>) -> Duration {
    first_look.map_or(CAP, |d| d.min(CAP))
}

/// The error-level lines of `text`, each as compared (numbers masked).
pub fn error_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| ERROR_LEVEL.is_match(l))
        .map(|l| NUMBERS.replace_all(l.trim(), "0").into_owned())
        .collect()
}

fn long_lived(log: &LogSource) -> bool {
    log.kind.replace('-', "_") == "long_lived" && log.hub.is_some()
}

/// A long-lived command whose output has not ended.
fn runs(log: &LogSource) -> bool {
    long_lived(log) && log.hub.as_ref().is_some_and(|h| !h.output_ended())
}

/// One test's watch of its harness, from the moment its replay began (the harness was ready).
#[derive(Debug)]
pub struct HarnessWatch {
    began: Instant,
    /// The long-lived commands that are to keep running.
    running: Vec<String>,
    /// Each log's length then: what follows is new.
    offsets: BTreeMap<String, u64>,
}

impl HarnessWatch {
    /// The harness as it is now, once ready (`logs`: its commands' logs); `None` without
    /// long-lived commands (nothing runs that could die unseen). Every long-lived command that
    /// started is to be running: the harness was ready, so each one was (one that died before
    /// this look died unseen).
    pub fn begin(logs: &[LogSource]) -> Option<Self> {
        let running: Vec<String> = logs
            .iter()
            .filter(|l| long_lived(l))
            .map(|l| l.name.clone())
            .collect();
        if running.is_empty() {
            return None;
        }
        Some(Self {
            began: Instant::now(),
            running,
            offsets: logs
                .iter()
                .map(|l| (l.name.clone(), logs::log_len(&l.path)))
                .collect(),
        })
    }

    /// How long after the harness was ready (this watch began) the agent first acted in a
    /// step: its earliest console call or tool call. `None` when it made none.
    pub fn first_look(
        &self,
        console_calls: &[crate::console::record::CallRecord],
        tool_calls: &[crate::model::tool_call::ToolCall],
    ) -> Option<Duration> {
        let first = console_calls
            .iter()
            .filter_map(|c| c.began)
            .chain(tool_calls.iter().map(|c| c.at))
            .min()?;
        Some(first.saturating_duration_since(self.began))
    }

    /// When the watch ends: `window` after the replay began.
    pub fn until(&self, window: Duration) -> Instant {
        self.began + window
    }

    /// The harness checked now, for a replayed step that read `read` (each log it read, with
    /// the step's recorded answers from it). `Err`: the drift, in words.
    pub fn check(&self, console: &Console, read: &BTreeMap<String, String>) -> Result<(), String> {
        let harness = console.harness_logs();
        for name in &self.running {
            let Some(log) = harness.iter().find(|l| &l.name == name) else {
                continue;
            };
            if !runs(log) {
                return Err(format!(
                    "the harness command `{name}` is no longer running {:.1} s after the \
                     harness was ready; the agent, looking then, would have seen it stopped",
                    self.began.elapsed().as_secs_f64()
                ));
            }
        }
        for (name, recorded) in read {
            let Some(log) = harness.iter().find(|l| &l.name == name) else {
                continue;
            };
            let from = self.offsets.get(name).copied().unwrap_or(0);
            let new = logs::read_at(&log.path, from, MAX_NEW_BYTES)
                .map(|c| String::from_utf8_lossy(&c.bytes).into_owned())
                .unwrap_or_default();
            if let Some(line) = unrecorded_error(&new, recorded) {
                return Err(format!(
                    "`{name}`'s log has an error-level line the recording did not have: {line}"
                ));
            }
        }
        Ok(())
    }
}

/// A replayed step whose pass waits for the end of its window: checked again then
/// ([`WatchRecheck::check`]), while the steps after it replay.
#[derive(Debug, Clone)]
pub struct WatchRecheck {
    pub step: StepId,
    /// When its window ends.
    pub until: Instant,
    /// The logs the step read, each with the step's recorded answers.
    read: BTreeMap<String, String>,
    /// Its last action (0-based): where a drift found then is placed.
    pub last_action: usize,
}

impl WatchRecheck {
    /// The step's check, due once its window has ended: `Err` is the drift that sends it to
    /// the agent (at its last action: every action of it ran).
    pub fn check(&self, watch: &HarnessWatch, console: &Console) -> Result<(), Fallback> {
        watch
            .check(console, &self.read)
            .map_err(|reason| Fallback::Failed {
                action: self.last_action,
                reason,
            })
    }
}

/// A replayed step's verdict under the watch (`watch`: the test's, begun when the harness was
/// ready; `None` when nothing long-lived runs): the harness checked now (a drift: at the
/// step's last action), and, for a pass that came before its window ended, the check due then
/// ([`WatchRecheck`]): the pass stands only once that holds too.
pub fn watched(
    watch: Option<&HarnessWatch>,
    console: Option<&Console>,
    step: &RecordedStep,
    verdict: Verdict,
) -> (Verdict, Option<WatchRecheck>) {
    let (Verdict::Replayed { .. }, Some(watch), Some(console)) = (&verdict, watch, console) else {
        return (verdict, None);
    };
    let read = logs_read(step);
    let held = WatchRecheck {
        step: step.step,
        until: watch.until(window(step.first_look_ms.map(Duration::from_millis))),
        read,
        last_action: step.actions.len().saturating_sub(1),
    };
    if let Err(why) = held.check(watch, console) {
        return (Verdict::Fallback(why), None);
    }
    let due = (Instant::now() < held.until).then_some(held);
    (verdict, due)
}

/// The logs `step` read (`read_log`, `wait_for_log`), each with the step's recorded answers.
fn logs_read(step: &RecordedStep) -> BTreeMap<String, String> {
    let mut read: BTreeMap<String, String> = BTreeMap::new();
    for action in &step.actions {
        if let Action::Console(ConsoleAction {
            tool: ConsoleTool::ReadLog | ConsoleTool::WaitForLog,
            arguments,
            output,
            ..
        }) = action
        {
            if let Some(name) = arguments["name"].as_str() {
                let all = read.entry(name.to_string()).or_default();
                all.push_str(output);
                all.push('\n');
            }
        }
    }
    read
}

/// The first error-level line of `new` that `recorded` does not have (as many times), numbers
/// aside.
pub fn unrecorded_error(new: &str, recorded: &str) -> Option<String> {
    let mut known: BTreeMap<String, usize> = BTreeMap::new();
    for l in error_lines(recorded) {
        *known.entry(l).or_default() += 1;
    }
    new.lines().find_map(|line| {
        let key = error_lines(line).pop()?;
        match known.get_mut(&key) {
            Some(n) if *n > 0 => {
                *n -= 1;
                None
            }
            _ => Some(line.trim().chars().take(300).collect()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_level_lines_are_told_from_others() {
        let log = "ready on :8080\nINFO tick 3\nFATAL: queue gone\n\
                   2026-11-28T10:00:00Z ERROR db timeout\nlevel=error msg=x\n\
                   {\"level\":\"error\"}\nthread 'main' panicked at src/main.rs:3\n\
                   0 errors, 0 warnings\nerror_count=0\nTraceback (most recent call last):\n\
                   [error] upstream closed";
        assert_eq!(error_lines(log).len(), 7, "{:?}", error_lines(log));
    }

    #[test]
    fn a_new_error_line_the_recording_lacked_is_found_and_a_recorded_one_is_not() {
        let recorded = "Output:\nready\nERROR cache miss for key 17\n";
        assert_eq!(
            unrecorded_error("INFO ok\nERROR cache miss for key 42\n", recorded),
            None
        );
        // Twice where it was once: the second one is new.
        assert_eq!(
            unrecorded_error(
                "ERROR cache miss for key 1\nERROR cache miss for key 2\n",
                recorded
            ),
            Some("ERROR cache miss for key 2".to_string())
        );
        assert_eq!(
            unrecorded_error("FATAL worker lost its queue\n", recorded),
            Some("FATAL worker lost its queue".to_string())
        );
        assert_eq!(unrecorded_error("tick\ntick\n", ""), None);
    }

    #[test]
    fn the_window_is_the_agents_first_look_at_most_two_seconds() {
        assert_eq!(window(None), CAP);
        assert_eq!(
            window(Some(Duration::from_millis(300))),
            Duration::from_millis(300)
        );
        assert_eq!(window(Some(Duration::from_secs(40))), CAP);
    }
}
