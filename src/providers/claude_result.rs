//! What Claude Code's `init` and `result` events say beyond the reply: the tokens a turn sent,
//! the API fault a failed result reports, the MCP servers the CLI rejected, and the tools it
//! refused to run.

use crate::model::agent_fault::{classify_api_failure, FaultKind};
use serde_json::Value;

/// The input tokens of a turn's `usage`: the fresh ones and those written to or read from the
/// prompt cache (all of them were sent to the model).
pub(super) fn input_tokens(usage: &Value) -> Option<u64> {
    let fresh = usage["input_tokens"].as_u64()?;
    let cached = ["cache_creation_input_tokens", "cache_read_input_tokens"]
        .iter()
        .filter_map(|k| usage[*k].as_u64())
        .sum::<u64>();
    Some(fresh + cached)
}

/// The agent fault a failed `result` reports: Claude Code (2.1) says an API failure, a missing
/// login included, as `is_error: true` under `subtype: "success"` (with `api_error_status` and
/// `terminal_reason: "api_error"` where the API answered). Other failed subtypes (an interrupt,
/// `error_during_execution`) are not the API's and stay step errors.
pub(super) fn api_fault(result: &Value, detail: &str) -> Option<FaultKind> {
    let status = result["api_error_status"].as_u64();
    let api = result["subtype"] == "success"
        || status.is_some()
        || result["terminal_reason"] == "api_error";
    api.then(|| classify_api_failure(status, detail))
}

/// The MCP servers `init` says the CLI rejected (`mcp_server_errors`, 2.1.2xx), each named with
/// its reason; `None` when it rejected none.
pub(super) fn rejected_servers(init: &Value) -> Option<String> {
    let rejected: Vec<String> = init["mcp_server_errors"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let name = e["name"].as_str().unwrap_or("?");
            let why = e["message"]
                .as_str()
                .or(e["type"].as_str())
                .unwrap_or("rejected");
            format!("`{name}`: {why}")
        })
        .collect();
    (!rejected.is_empty()).then(|| rejected.join("; "))
}

/// The tools Claude Code refused to run in a turn (its `result` event's `permission_denials`),
/// each once, in the order first refused, with how often: `["Bash (2×)", "Write"]`.
pub(super) fn denied_tools(result: &Value) -> Vec<String> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for denial in result["permission_denials"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let tool = denial["tool_name"].as_str().unwrap_or("a tool").to_string();
        match counts.iter_mut().find(|(t, _)| *t == tool) {
            Some((_, n)) => *n += 1,
            None => counts.push((tool, 1)),
        }
    }
    counts
        .into_iter()
        .map(|(tool, n)| {
            if n > 1 {
                format!("{tool} ({n}×)")
            } else {
                tool
            }
        })
        .collect()
}

/// What a step's message says of refused tools, and how to allow them.
pub(super) fn denial_note(denied: &[String]) -> Option<String> {
    (!denied.is_empty()).then(|| {
        format!(
            "Claude Code refused to run {}: a non-interactive Claude Code runs only the tools it \
             is allowed; add them to [provider] agent_args, e.g. [\"--allowedTools\", \"Bash\"]",
            denied.join(", ")
        )
    })
}
