//! An action as a recording keeps it, built from what the agent did and what it saw: inputs with
//! the session's values and secrets as `${NAME}`, outputs likewise (so that the file shows no
//! session's port or path, and a diff in review shows only real changes).
//!
//! The session's recorder (console calls from the console, shell calls from the provider's
//! stream) is to build every action through here; [`super::replayer`] compares in the same form.

use super::format::RecordedStep;
use super::format::{Action, ConsoleTool};
use super::masks::{candidates, compare, named_in, MaskedDiff, Position, Rules};
use super::normalize::Normalizer;
use super::placeholders::Placeholders;
use super::replayer::compared_outputs;
use crate::console::Answer;

/// A console call as recorded; `None` for a tool that is not replayed (`list_sessions`: it
/// changes nothing and says nothing of the app).
pub fn console_action(
    placeholders: &Placeholders,
    tool: &str,
    arguments: &serde_json::Value,
    answer: &Answer,
) -> Option<Action> {
    let tool = ConsoleTool::from_name(tool)?;
    Some(Action::Console {
        tool,
        arguments: placeholders.insert_json(arguments),
        output: placeholders.insert(&answer.text),
        exit_code: answer.exit_code,
        is_error: answer.is_error,
        after_ms: None,
        volatile: Vec::new(),
    })
}

/// A call of the provider's own shell tool as recorded.
pub fn shell_action(
    placeholders: &Placeholders,
    command: &str,
    cwd: &str,
    exit_code: Option<i32>,
    output: &str,
) -> Action {
    Action::Shell {
        command: placeholders.insert(command),
        cwd: placeholders.insert(cwd),
        exit_code,
        output: placeholders.insert(output),
        timeout_ms: None,
        volatile: Vec::new(),
    }
}

/// A `list_logs` call made `gap` after the step's previous action began (other actions keep
/// none: they are compared whenever they run).
pub fn set_after(action: &mut Action, gap: std::time::Duration) {
    if let Action::Console {
        tool: ConsoleTool::ListLogs,
        after_ms,
        ..
    } = action
    {
        *after_ms = Some(u64::try_from(gap.as_millis()).unwrap_or(u64::MAX));
    }
}

/// A shell action that ran under the timeout its call asked for (ms).
pub fn with_timeout(mut action: Action, timeout: Option<u64>) -> Action {
    if let Action::Shell { timeout_ms, .. } = &mut action {
        *timeout_ms = timeout;
    }
    action
}

/// One of Claude Code's read-only file tools as recorded: the paths it names and what it saw
/// with the session's values as placeholders. `Err` for a look at the run's own records (a
/// browser snapshot file, a log): their names and contents differ every run.
pub fn file_action(
    placeholders: &Placeholders,
    check: &super::files::FileCheck,
) -> Result<Action, String> {
    let check = check
        .map_paths(|p| placeholders.insert(p))
        .map_seen(|seen| placeholders.insert(&placeholders.redact(seen)));
    if let Some(file) = check
        .read_file()
        .filter(|f| f.starts_with("${BUGATTI_RUN_DIR}"))
    {
        return Err(format!(
            "the agent read {file}, a file of the run's own records, which differ every run"
        ));
    }
    Ok(Action::File {
        check,
        volatile: Vec::new(),
    })
}

/// A Playwright MCP call as recorded: `output` is the answer with its snapshot links put
/// inline ([`super::browser::inline_snapshots`]).
pub fn browser_action(
    placeholders: &Placeholders,
    tool: &str,
    arguments: &serde_json::Value,
    elements: std::collections::BTreeMap<String, super::browser_refs::ElementPath>,
    output: &str,
    is_error: bool,
) -> Action {
    Action::Browser {
        tool: tool.to_string(),
        arguments: placeholders.insert_json(arguments),
        elements,
        output: placeholders.insert(&placeholders.redact(output)),
        is_error,
        volatile: Vec::new(),
    }
}

/// What learning from an agent's pass needs besides the two recordings.
pub struct Learning<'a> {
    /// The step's instruction as sent: a value it names is never learned.
    pub instruction: &'a str,
    /// When the previous recording's run ran (start, end).
    pub previous_window: Option<(chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>)>,
    /// When the agent's new pass ran (its session's start, now).
    pub window: (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>),
}

/// The volatile tokens a renewed recording keeps: for each new action that is the same call as
/// the previous recording's action at its place, the positions learned before, those `soft`
/// drift found, and those in which the previous recording and the agent's new pass differ as a
/// soft drift would (only in candidate tokens, not a timestamp current in both, never a value the
/// instruction names). Everything else stays exact.
pub fn learn(
    previous: &RecordedStep,
    new: &mut [Action],
    soft: &[(usize, Position)],
    normalizer: &Normalizer,
    learning: &Learning<'_>,
) {
    let previous = &previous.actions[..];
    let instruction = learning.instruction;
    let old_texts = compared_outputs(previous);
    let new_texts = compared_outputs(new);
    for (i, action) in new.iter_mut().enumerate() {
        let Some(old) = previous.get(i).filter(|old| old.same_input(action)) else {
            continue;
        };
        let mut positions: Vec<Position> = old.volatile().to_vec();
        positions.extend(soft.iter().filter(|(a, _)| *a == i).map(|(_, p)| *p));
        if let (Some(Some(a)), Some(Some(b))) = (old_texts.get(i), new_texts.get(i)) {
            let a = normalizer.normalize_with(a, instruction);
            let b = normalizer.normalize_with(b, instruction);
            // What a replay would have called a soft drift: a timestamp current in both passes
            // is not learned (a clock that later sticks is still caught).
            let rules = Rules {
                volatile: &[],
                instruction,
                recorded: learning.previous_window,
                now: learning.window,
            };
            if let MaskedDiff::Soft(varied) = compare(&a, &b, &rules) {
                positions.extend(varied);
            }
        }
        // A learned position never covers a value the instruction names, whatever taught it.
        positions.retain(|p| !names_position(&new_texts, i, *p, instruction, normalizer));
        action.set_volatile(positions);
    }
}

/// The token at `p` of action `i`'s compared output is a value the instruction names.
fn names_position(
    texts: &[Option<String>],
    i: usize,
    p: Position,
    instruction: &str,
    normalizer: &Normalizer,
) -> bool {
    let Some(Some(text)) = texts.get(i) else {
        return false;
    };
    let text = normalizer.normalize_with(text, instruction);
    let Some(line) = text.split('\n').nth(p.line) else {
        return false;
    };
    candidates(line)
        .get(p.token)
        .is_some_and(|t| named_in(instruction, &line[t.start..t.end]))
}

/// Whether a tool the agent used can be replayed; a step that used any other tool is not
/// recorded (see docs/replay.md), and this says why for the report.
pub fn unreplayable_tool(tool: &str) -> Option<String> {
    let console = tool
        .strip_prefix("mcp__bugatti__")
        .is_some_and(|t| ConsoleTool::from_name(t).is_some() || t == "list_sessions");
    // The providers' shell tools: Claude Code's `Bash`, Codex's `command_execution`, pi's
    // `bash`; Claude Code's read-only file tools; the session browser's recorded tools.
    let known = console
        || ["Bash", "command_execution", "bash"].contains(&tool)
        || super::files::is_file_tool(tool)
        || super::browser::recorded_tool(tool).is_some();
    (!known).then(|| format!("the agent used {tool}, which is not replayed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_console_and_shell_tools_replay() {
        assert_eq!(unreplayable_tool("Bash"), None);
        assert_eq!(unreplayable_tool("mcp__bugatti__exec_command"), None);
        assert_eq!(unreplayable_tool("mcp__bugatti__list_logs"), None);
        assert!(unreplayable_tool("Edit").is_some());
        assert!(unreplayable_tool("WebFetch").is_some());
        assert!(unreplayable_tool("mcp__playwright__click").is_some());
        assert_eq!(unreplayable_tool("Grep"), None);
        assert_eq!(unreplayable_tool("mcp__browser__browser_click"), None);
        assert!(unreplayable_tool("mcp__browser__browser_run_code").is_some());
        assert!(unreplayable_tool("Write").is_some());
        assert!(unreplayable_tool("NotebookEdit").is_some());
        assert!(unreplayable_tool("WebSearch").is_some());
    }

    #[test]
    fn a_console_call_is_recorded_without_the_sessions_values() {
        let p = Placeholders::new(
            [("APP_PORT".to_string(), "41234".to_string())],
            [("TOKEN".to_string(), "s3cr3t-x".to_string())],
        );
        let answer = Answer {
            text: "Process exited with code 0\nOutput:\n:41234 [REDACTED:TOKEN]\n".into(),
            is_error: false,
            exit_code: Some(0),
            bytes: 10,
        };
        let args = serde_json::json!({"cmd": "curl -H 'T: s3cr3t-x' :41234"});
        let action = console_action(&p, "exec_command", &args, &answer).expect("replayable");
        let text = serde_json::to_string(&action).expect("json");
        assert!(
            !text.contains("41234") && !text.contains("s3cr3t"),
            "{text}"
        );
        assert!(console_action(&p, "list_sessions", &args, &answer).is_none());
    }
}
