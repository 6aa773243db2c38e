//! What the agent did in a step, as a recording keeps it: its own tool calls (a shell command,
//! Claude Code's `Read`/`Grep`/`Glob`, a Playwright MCP call) and its console calls, in the
//! order they ran, each an [`Action`] — or why the step cannot be recorded. A new kind of
//! replayed action is added here and in [`super::record`], never in the session.

use super::action::Action;
use super::browser::action::BrowserAction;
use super::browser::tools::{element_paths, inline_snapshots, is_browser_tool, recorded_tool};
use super::browser_refs::Snapshot;
use super::console::ConsoleAction;
use super::files::FileAction;
use super::placeholders::Placeholders;
use super::record::unreplayable_tool;
use super::shell::ShellAction;
use crate::console::record::CallRecord;
use crate::model::tool_call::ToolCall;
use std::path::Path;

/// What the calls are read against.
pub struct CallsContext<'a> {
    pub placeholders: &'a Placeholders,
    /// Where the agent's own tools ran.
    pub agent_cwd: &'a Path,
    /// The last page snapshot the agent was shown before this step: a ref it names may come
    /// from there.
    pub last_snapshot: Option<&'a Snapshot>,
    /// Where the agent's Playwright MCP writes the snapshot files its answers link to.
    pub browser_output_dir: Option<&'a Path>,
}

/// The step's actions as a recording keeps them, or why it cannot be recorded.
pub fn actions_of(
    ctx: &CallsContext<'_>,
    console_calls: &[CallRecord],
    tool_calls: &[ToolCall],
) -> Result<Vec<Action>, String> {
    let mut timed: Vec<(Option<std::time::Instant>, Action)> = Vec::new();
    // The page snapshots the agent was shown, oldest first: a ref it names comes from one.
    let mut snapshots: Vec<Snapshot> = ctx.last_snapshot.into_iter().cloned().collect();
    for call in tool_calls {
        if let Some(why) = &call.unreplayable {
            return Err(why.clone());
        }
        if let Some(why) = unreplayable_tool(&call.tool) {
            return Err(why);
        }
        for record in TOOL_KINDS {
            if let Some(action) = record(ctx, call, &mut snapshots)? {
                timed.push((Some(call.at), action));
                break;
            }
        }
    }
    for call in console_calls {
        if call.is_error {
            // A refused or failed call would fail the same way every run: nothing to check.
            return Err(format!(
                "the console refused a call ({}): a refused or failed call is not replayed",
                call.tool
            ));
        }
        let answer = crate::console::Answer {
            text: call.answer.clone(),
            is_error: call.is_error,
            exit_code: call.exit_code,
            bytes: call.bytes,
        };
        if let Some(action) =
            ConsoleAction::recorded(ctx.placeholders, &call.tool, &call.arguments, &answer)
        {
            timed.push((call.began, Action::Console(action)));
        }
    }
    // Stable: a console call and a shell call seen at the same instant keep their order.
    timed.sort_by_key(|(at, _)| *at);
    // A look at the commands' states keeps how long after the previous action it came.
    for i in 1..timed.len() {
        if let (Some(now), Some(before)) = (timed[i].0, timed[i - 1].0) {
            let gap = now.saturating_duration_since(before);
            super::record::set_after(&mut timed[i].1, gap);
        }
    }
    let actions: Vec<Action> = timed.into_iter().map(|(_, a)| a).collect();
    if actions.is_empty() {
        return Err(
            "the agent ran no command in this step: there is nothing to check again".into(),
        );
    }
    Ok(actions)
}

/// A tool call of the agent's own as one kind of action (`None`: not of this kind); `Err` says
/// why the step cannot be recorded. `snapshots`: the pages the agent was shown so far.
type KindRecorder =
    fn(&CallsContext<'_>, &ToolCall, &mut Vec<Snapshot>) -> Result<Option<Action>, String>;

/// The kinds a call of the agent's own tools may be, tried in order, one line each (a console
/// call is the console's own record, below).
const TOOL_KINDS: &[KindRecorder] = &[file_action, browser_action, shell_action];

/// The provider's shell tool's call as recorded.
fn shell_action(
    ctx: &CallsContext<'_>,
    call: &ToolCall,
    _: &mut Vec<Snapshot>,
) -> Result<Option<Action>, String> {
    let Some(shell) = &call.shell else {
        return Ok(None);
    };
    // Where the agent's shell was, where the CLI said so (a `cd` kept from the step before),
    // else the agent's own directory.
    let cwd = ctx.agent_cwd.display().to_string();
    let mut action = ShellAction::recorded(
        ctx.placeholders,
        &shell.command,
        shell.started_in.as_deref().unwrap_or(&cwd),
        shell.exit_code,
        &ctx.placeholders.redact(&shell.output),
    );
    action.timeout_ms = shell.timeout_ms;
    Ok(Some(Action::Shell(action)))
}

/// A read-only file tool's call as recorded.
fn file_action(
    ctx: &CallsContext<'_>,
    call: &ToolCall,
    _: &mut Vec<Snapshot>,
) -> Result<Option<Action>, String> {
    if !super::files::is_file_tool(&call.tool) {
        return Ok(None);
    }
    let answer = answer_of(call)?;
    let check = super::files::from_claude(
        &call.tool,
        &call.input,
        &answer.text,
        answer.structured.as_ref(),
        answer.is_error,
        ctx.agent_cwd,
    )
    .map_err(|e| e.to_string())?;
    // What it reads now bounds what a replay will read of it.
    let check = super::files::measured(check, ctx.agent_cwd);
    FileAction::recorded(ctx.placeholders, &check).map(|a| Some(Action::File(a)))
}

/// A browser tool's call as recorded, the page its answer showed added to `snapshots`.
fn browser_action(
    ctx: &CallsContext<'_>,
    call: &ToolCall,
    snapshots: &mut Vec<Snapshot>,
) -> Result<Option<Action>, String> {
    let Some(tool) = recorded_tool(&call.tool) else {
        return Ok(None);
    };
    let answer = answer_of(call)?;
    let elements = element_paths(&call.input, snapshots)?;
    let output = inline_snapshots(&answer.text, ctx.browser_output_dir);
    if let Some(snapshot) = super::browser::tools::snapshot_of(&output) {
        snapshots.push(snapshot);
    }
    Ok(Some(Action::Browser(BrowserAction::recorded(
        ctx.placeholders,
        tool,
        &call.input,
        elements,
        &output,
        answer.is_error,
    ))))
}

/// The answer the agent got to a tool's call; a call without one is not recorded.
fn answer_of(call: &ToolCall) -> Result<&crate::model::tool_call::ToolOutput, String> {
    call.answer
        .as_ref()
        .ok_or_else(|| format!("the agent's {} call got no answer", call.tool))
}

/// The last page snapshot the agent was shown in `tool_calls`, if any.
pub fn last_snapshot(
    tool_calls: &[ToolCall],
    browser_output_dir: Option<&Path>,
) -> Option<Snapshot> {
    tool_calls
        .iter()
        .rev()
        .filter(|c| is_browser_tool(&c.tool))
        .filter_map(|c| c.answer.as_ref())
        .find_map(|a| {
            super::browser::tools::snapshot_of(&inline_snapshots(&a.text, browser_output_dir))
        })
}
