//! When Claude Code's reply to a step is over (docs/providers.md, "When a reply ends"): when the
//! agent is idle, not at its first `result`.
//!
//! Since 2.1.198 Claude Code runs subagents (and MCP calls past `CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS`)
//! in the background: it sends a `result` while `system/background_tasks_changed` still lists a
//! live task, then, once the task reports, a later turn and another `result` (`result_index`
//! counts them per process). So a `result` ends the reply only when nothing holds it:
//!
//! - no live background task other than a shell (`local_bash`: a dev server the agent started
//!   does not hold the reply), and no turn queued (`queued_turn_count`);
//! - where the CLI reports its session state (`session_state_changed`, which the supervisor asks
//!   for with `CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS`), the reply ends at `idle` after a result.
//!
//! A `result` seen before the step's own turn began (its `init`, or `running`), from a process
//! that marks its turns so, is a late one of the previous step: counted, never this step's
//! answer. A `result_index` already counted is not counted again.

use serde_json::Value;

/// The background task type that never holds a reply: a shell the agent started.
const SHELL_TASK: &str = "local_bash";

/// What a `result` is to the step being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultIs {
    /// The reply is over: its verdict decides the step.
    Final,
    /// More is coming (a live subagent, a queued turn, the CLI not idle yet): counted, and
    /// kept as the verdict should the reply end without another.
    Interim,
    /// It came before this step's turn began: the previous step's, counted only.
    Late,
    /// Its `result_index` was counted already.
    Repeated,
}

/// The end-of-reply bookkeeping of one Claude Code process.
#[derive(Debug, Default)]
pub struct ReplyEnd {
    /// Live background tasks that hold the reply, by task id.
    holding: Vec<String>,
    /// The CLI reports its session state: the reply ends at `idle`.
    reports_state: bool,
    /// This step's own turn began.
    began: bool,
    /// The process marks the start of its turns (`init`, `running`): without that mark, a
    /// result cannot be told late.
    marks_turns: bool,
    /// A result of this step's own turn was read.
    answered: bool,
    /// The highest `result_index` counted.
    counted: Option<u64>,
}

impl ReplyEnd {
    /// A new step's message was sent.
    pub fn new_step(&mut self) {
        self.began = false;
        self.answered = false;
    }

    /// A restarted process numbers its results afresh and has no live tasks.
    pub fn restarted(&mut self) {
        *self = Self::default();
    }

    /// `system/init`: the CLI started a turn.
    pub fn turn_began(&mut self) {
        self.began = true;
        self.marks_turns = true;
    }

    /// `system/background_tasks_changed`: the live tasks, all of them.
    pub fn tasks_changed(&mut self, event: &Value) {
        self.holding = event["tasks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|task| task["task_type"].as_str() != Some(SHELL_TASK))
            .filter_map(|task| task["task_id"].as_str().map(str::to_string))
            .collect();
    }

    /// Background tasks that hold the reply now.
    pub fn holding(&self) -> usize {
        self.holding.len()
    }

    /// `system/session_state_changed`; `true` when it ends the reply.
    pub fn state(&mut self, state: &str) -> bool {
        self.reports_state = true;
        match state {
            "running" => {
                self.turn_began();
                false
            }
            "idle" => self.began && self.answered && self.holding.is_empty(),
            _ => false,
        }
    }

    /// A `result` event.
    pub fn result(&mut self, event: &Value) -> ResultIs {
        if let Some(index) = event["result_index"].as_u64() {
            if self.counted.is_some_and(|counted| index <= counted) {
                return ResultIs::Repeated;
            }
            self.counted = Some(index);
        }
        if !self.began && self.marks_turns {
            return ResultIs::Late;
        }
        self.answered = true;
        let queued = event["queued_turn_count"].as_u64().unwrap_or(0) > 0;
        if self.reports_state || queued || !self.holding.is_empty() {
            ResultIs::Interim
        } else {
            ResultIs::Final
        }
    }
}

/// Whether a Claude Code version keeps its Bash tool's working directory across user messages
/// (a `cd` in one step holds in the next): 2.1.265 and later. `None` (unknown) does not.
pub fn keeps_cd_across_messages(version: &str) -> bool {
    let numbers: Vec<u64> = version
        .split(|c: char| !c.is_ascii_digit())
        .take_while(|part| !part.is_empty())
        .filter_map(|part| part.parse().ok())
        .collect();
    numbers.as_slice() >= [2, 1, 265].as_slice()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(fixture: &str) -> Vec<Value> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude-code")
            .join(fixture);
        let text = std::fs::read_to_string(&path).expect("fixture");
        text.lines()
            .map(|l| serde_json::from_str(l).expect("json line"))
            .collect()
    }

    /// The replies of a captured stream as the reply's end cuts them: for each, the text of
    /// its last `result`, and how many interim results came before it.
    fn replies(fixture: &str) -> Vec<(String, usize)> {
        let mut end = ReplyEnd::default();
        let mut replies = Vec::new();
        let (mut last, mut interim) = (String::new(), 0);
        let mut over = |last: &mut String, interim: &mut usize, end: &mut ReplyEnd| {
            replies.push((std::mem::take(last), std::mem::take(interim)));
            end.new_step();
        };
        for event in lines(fixture) {
            match (event["type"].as_str(), event["subtype"].as_str()) {
                (Some("system"), Some("init")) => end.turn_began(),
                (Some("system"), Some("background_tasks_changed")) => end.tasks_changed(&event),
                (Some("system"), Some("session_state_changed"))
                    if end.state(event["state"].as_str().unwrap_or_default()) =>
                {
                    // The last result was counted as interim: it is the reply's.
                    interim -= 1;
                    over(&mut last, &mut interim, &mut end);
                }
                (Some("result"), _) => {
                    let is = end.result(&event);
                    last = event["result"].as_str().unwrap_or_default().to_string();
                    match is {
                        ResultIs::Final => over(&mut last, &mut interim, &mut end),
                        ResultIs::Interim => interim += 1,
                        ResultIs::Late | ResultIs::Repeated => panic!("{event}"),
                    }
                }
                _ => {}
            }
        }
        replies
    }

    #[test]
    fn a_background_subagent_holds_the_reply_until_its_report_on_2_1_332() {
        let replies = replies("2.1.332/background_subagent.jsonl");
        assert_eq!(replies.len(), 2, "{replies:?}");
        assert!(replies[0]
            .0
            .contains("RESULT ERROR: the endpoint answers 500"));
        assert_eq!(replies[0].1, 1, "one interim result first: {replies:?}");
        assert!(replies[1].0.contains("second step's own answer"));
        assert_eq!(replies[1].1, 0, "{replies:?}");
    }

    #[test]
    fn a_foreground_subagent_ends_at_the_first_result_on_2_1_197() {
        let replies = replies("2.1.197/background_subagent.jsonl");
        assert_eq!(replies.len(), 2, "{replies:?}");
        assert!(replies[0]
            .0
            .contains("RESULT ERROR: the endpoint answers 500"));
        assert!(replies.iter().all(|(_, interim)| *interim == 0));
    }

    #[test]
    fn a_backgrounded_console_call_holds_the_reply_until_its_report() {
        let replies = replies("2.1.332/mcp_auto_background.jsonl");
        assert_eq!(replies.len(), 1, "{replies:?}");
        assert_eq!(replies[0].1, 1, "{replies:?}");
    }

    #[test]
    fn every_other_capture_is_one_reply_a_message() {
        for version in ["2.1.197", "2.1.332"] {
            for (fixture, n) in [("cd_across_messages", 2), ("retry_429", 1)] {
                let replies = replies(&format!("{version}/{fixture}.jsonl"));
                assert_eq!(replies.len(), n, "{version} {fixture}: {replies:?}");
                assert!(replies
                    .iter()
                    .all(|(text, interim)| *interim == 0 && text.contains("RESULT OK")));
            }
        }
    }

    #[test]
    fn with_session_states_the_reply_ends_at_idle_after_the_last_result() {
        let mut end = ReplyEnd::default();
        assert!(!end.state("running"));
        end.tasks_changed(&json!({"tasks": [{"task_id": "a1", "task_type": "local_agent"}]}));
        assert_eq!(end.result(&json!({"result_index": 0})), ResultIs::Interim);
        assert!(!end.state("idle"), "a live subagent holds the reply");
        end.tasks_changed(&json!({"tasks": []}));
        assert_eq!(end.result(&json!({"result_index": 1})), ResultIs::Interim);
        assert!(end.state("idle"));
    }

    #[test]
    fn a_background_shell_does_not_hold_the_reply() {
        let mut end = ReplyEnd::default();
        end.turn_began();
        end.tasks_changed(&json!({"tasks": [{"task_id": "b1", "task_type": "local_bash"}]}));
        assert_eq!(end.holding(), 0);
        assert_eq!(end.result(&json!({"result_index": 0})), ResultIs::Final);
    }

    #[test]
    fn a_result_before_the_step_began_is_late_and_an_index_counts_once() {
        let mut end = ReplyEnd::default();
        end.turn_began();
        assert_eq!(end.result(&json!({"result_index": 0})), ResultIs::Final);
        end.new_step();
        assert_eq!(end.result(&json!({"result_index": 0})), ResultIs::Repeated);
        assert_eq!(end.result(&json!({"result_index": 1})), ResultIs::Late);
        end.turn_began();
        assert_eq!(
            end.result(&json!({"result_index": 2, "queued_turn_count": 1})),
            ResultIs::Interim
        );
        assert_eq!(end.result(&json!({"result_index": 3})), ResultIs::Final);
    }

    #[test]
    fn a_process_that_never_marks_its_turns_has_no_late_result() {
        let mut end = ReplyEnd::default();
        assert_eq!(end.result(&json!({})), ResultIs::Final);
        end.new_step();
        assert_eq!(end.result(&json!({})), ResultIs::Final);
    }

    #[test]
    fn versions_from_2_1_265_keep_cd() {
        assert!(keeps_cd_across_messages("2.1.332"));
        assert!(keeps_cd_across_messages("2.1.265"));
        assert!(keeps_cd_across_messages("2.2.0"));
        assert!(keeps_cd_across_messages("3.0.1"));
        assert!(!keeps_cd_across_messages("2.1.264"));
        assert!(!keeps_cd_across_messages("2.1.197"));
        assert!(!keeps_cd_across_messages(""));
        assert!(!keeps_cd_across_messages("garbage"));
    }
}
