//! The browser's tools as a recording sees them: which are recorded, a call in a few words, the
//! compared form of an answer, the snapshot files it links put inline.

use super::super::browser_refs::{element_targets, mask_refs, retarget, ElementPath, Snapshot};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::LazyLock;

/// The MCP server name of the session's browser, as a tool-name prefix (`mcp__browser__…`).
pub(super) const PREFIX: &str = "mcp__browser__";

/// The Playwright MCP tools a recording keeps. Any other (`browser_run_code`,
/// `browser_file_upload`, tools added later) keeps the step unrecorded.
pub const RECORDED_TOOLS: &[&str] = &[
    "browser_navigate",
    "browser_navigate_back",
    "browser_click",
    "browser_type",
    "browser_fill_form",
    "browser_select_option",
    "browser_press_key",
    "browser_hover",
    "browser_drag",
    "browser_wait_for",
    "browser_snapshot",
    "browser_tabs",
    "browser_handle_dialog",
    "browser_evaluate",
    "browser_take_screenshot",
];

/// The tool whose answer is evidence, not compared.
pub(super) const SCREENSHOT: &str = "browser_take_screenshot";

/// The tools Playwright MCP answers after letting the page settle: their page is compared after
/// [`settle`].
pub(super) const SETTLING_TOOLS: &[&str] = &[
    "browser_navigate",
    "browser_navigate_back",
    "browser_click",
    "browser_type",
    "browser_fill_form",
    "browser_select_option",
    "browser_press_key",
    "browser_hover",
    "browser_drag",
    "browser_handle_dialog",
    "browser_evaluate",
];

/// The tools whose answer shows the page (its header and snapshot) in Playwright MCP's default
/// snapshot mode (`full`). The replay's client runs with `--snapshot-mode none` when it can
/// (see [`needs_action_pages`]): a settling tool's page is then taken once settled
/// ([`with_page_of`]), as it is replaced by that page in any case.
pub(super) const PAGE_TOOLS: &[&str] = &[
    "browser_navigate",
    "browser_navigate_back",
    "browser_click",
    "browser_type",
    "browser_select_option",
    "browser_press_key",
    "browser_hover",
    "browser_drag",
    "browser_wait_for",
    "browser_tabs",
];

/// Whether a replay of `tools` (the recorded browser actions' tools) needs the page in the
/// client's own answers: a tool of [`PAGE_TOOLS`] that does not settle (`browser_wait_for`,
/// `browser_tabs`) is compared with the page as its own answer showed it, the moment it ended,
/// and only the server's snapshot of that moment is that page. Otherwise the client's action
/// snapshots are thrown away unread, and it runs without them (`--snapshot-mode none`).
pub fn needs_action_pages<'a>(mut tools: impl Iterator<Item = &'a str>) -> bool {
    tools.any(|tool| PAGE_TOOLS.contains(&tool) && !SETTLING_TOOLS.contains(&tool))
}

/// The largest snapshot file put inline.
pub(super) const MAX_SNAPSHOT_BYTES: u64 = 8 * 1024 * 1024;

/// The Playwright MCP tool an agent's tool name calls on the session's browser
/// (`mcp__browser__browser_click` → `browser_click`), if it is one a recording keeps.
pub fn recorded_tool(agent_tool: &str) -> Option<&'static str> {
    let tool = agent_tool.strip_prefix(PREFIX)?;
    RECORDED_TOOLS.iter().copied().find(|t| *t == tool)
}

/// Whether an agent's tool name is a tool of the session's browser at all.
pub fn is_browser_tool(agent_tool: &str) -> bool {
    agent_tool.starts_with(PREFIX)
}

/// The call in a few words: `browser_click "Add to basket button"`, `browser_navigate http://…`.
pub fn describe(tool: &str, arguments: &serde_json::Value) -> String {
    let detail = ["element", "url", "key", "text", "function", "action"]
        .iter()
        .find_map(|k| arguments.get(*k).and_then(|v| v.as_str()));
    match detail {
        Some(d) => format!("{tool} {}", cut_words(d, 120)),
        None => tool.to_string(),
    }
}

pub(super) fn cut_words(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() <= max && line.len() == text.len() {
        return text.to_string();
    }
    format!("{} …", line.chars().take(max).collect::<String>())
}

/// Two calls are the same when their arguments are, each element ref read as the element it
/// names (two runs number the same page's elements differently).
pub fn same_call(
    x: &serde_json::Value,
    p: &BTreeMap<String, ElementPath>,
    y: &serde_json::Value,
    q: &BTreeMap<String, ElementPath>,
) -> bool {
    named(x, p) == named(y, q)
}

/// The arguments with each element ref read as the element it names.
fn named(args: &serde_json::Value, paths: &BTreeMap<String, ElementPath>) -> serde_json::Value {
    let by_path: BTreeMap<String, String> = paths
        .iter()
        .map(|(r, path)| (r.clone(), serde_json::to_string(path).unwrap_or_default()))
        .collect();
    retarget(args, &by_path)
}

/// The arguments as one line, each element ref read as the element it names (and the
/// reference text Playwright MCP asks for left out: it is the agent's own words).
pub fn named_arguments(args: &serde_json::Value, paths: &BTreeMap<String, ElementPath>) -> String {
    let mut named = named(args, paths);
    if let Some(map) = named.as_object_mut() {
        map.remove("element");
    }
    named.to_string()
}

/// Each element ref in `arguments` with its path, from the latest of `snapshots` (oldest
/// first) that has it; `Err` names a ref no snapshot shows (the step is then not recorded).
pub fn element_paths(
    arguments: &serde_json::Value,
    snapshots: &[Snapshot],
) -> Result<BTreeMap<String, ElementPath>, String> {
    let mut paths = BTreeMap::new();
    for target in element_targets(arguments) {
        let path = snapshots
            .iter()
            .rev()
            .find_map(|s| s.path_of(&target))
            .ok_or_else(|| {
                format!(
                    "the agent named element {target}, which no page snapshot it was shown holds"
                )
            })?;
        paths.insert(target, path);
    }
    Ok(paths)
}

/// `- [Snapshot](…/page-….yml)` links in a Playwright MCP answer, each replaced by the snapshot
/// file's YAML (found by its name in `output_dir`, the server's `--output-dir`), as a fenced
/// block like the one `browser_snapshot` answers with. A link whose file cannot be read is kept.
pub fn inline_snapshots(answer: &str, output_dir: Option<&Path>) -> String {
    let mut out = String::with_capacity(answer.len());
    for line in answer.split_inclusive('\n') {
        let inlined = output_dir.and_then(|dir| snapshot_link(line).and_then(|f| read(dir, f)));
        match inlined {
            Some(yaml) => {
                out.push_str("```yaml\n");
                out.push_str(yaml.trim_end());
                out.push_str("\n```\n");
            }
            None => out.push_str(line),
        }
    }
    out
}

/// The file name of a `- [Snapshot](path)` line.
pub(super) fn snapshot_link(line: &str) -> Option<&str> {
    let path = line
        .trim()
        .strip_prefix("- [Snapshot](")?
        .strip_suffix(')')?;
    let name = path.rsplit('/').next()?;
    (name.ends_with(".yml") || name.ends_with(".yaml")).then_some(name)
}

/// A snapshot file `name` in `dir`: only a plain name (never a path out of the folder), a
/// regular file, not too big.
pub(super) fn read(dir: &Path, name: &str) -> Option<String> {
    if name.is_empty() || name.starts_with('.') || name.contains(['/', '\\']) {
        return None;
    }
    let path = dir.join(name);
    // Not a symlink out of the folder; then opened without blocking, within its bound.
    if !std::fs::symlink_metadata(&path).ok()?.is_file() {
        return None;
    }
    let bytes = super::super::bounded::read(&path, MAX_SNAPSHOT_BYTES).ok()?;
    String::from_utf8(bytes).ok()
}

/// The server's own file names (`page-2026-11-25T15-19-11-864Z.yml`, `console-….log#L1`):
/// they name when its files were written, nothing about the page.
pub(super) static OUTPUT_FILE: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"[^\s()\[\]]*\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d(?:-\d+)?Z\.[A-Za-z0-9]+(?:#L\d+(?:-L?\d+)?)?",
    )
    .expect("a valid regex")
});

/// An answer in the form both sides are compared in: refs masked, the server's file names
/// masked, its `Console: N errors, M warnings` line (compared as a bound by
/// [`console_errors`]) and `### Events` section left out.
pub fn compared(answer: &str) -> String {
    let mut out = Vec::new();
    let mut in_events = false;
    for line in answer.lines() {
        if line.starts_with("### ") {
            in_events = line.trim() == "### Events";
        }
        if in_events || line.starts_with("- Console: ") {
            continue;
        }
        out.push(line);
    }
    let text = mask_refs(&out.join("\n"));
    OUTPUT_FILE.replace_all(&text, "<file>").into_owned()
}

/// The snapshots an answer holds (a `browser_snapshot`'s, or the files it linked, inlined).
pub fn snapshot_of(inlined_answer: &str) -> Option<Snapshot> {
    let snapshot = Snapshot::parse(inlined_answer);
    (!snapshot.is_empty()).then_some(snapshot)
}

/// The console errors a page showed with an answer: Playwright MCP's `- Console: N errors, M
/// warnings` line of its `### Page` section, which counts the page's errors since it was last
/// navigated to (no line: none). `None` for an answer without a `### Page` section.
pub fn console_errors(answer: &str) -> Option<u64> {
    let mut in_page = false;
    let mut errors = None;
    for line in answer.lines() {
        if line.starts_with("### ") {
            in_page = line.trim() == "### Page";
            if in_page {
                errors = Some(0);
            }
            continue;
        }
        if let Some(counts) = line.strip_prefix("- Console: ").filter(|_| in_page) {
            errors = counts
                .split_once(" errors")
                .and_then(|(n, _)| n.trim().parse().ok())
                .or(errors);
        }
    }
    errors
}

/// An element's path in one line: `main > list > listitem "Red mug" > button "Add to basket"`.
pub fn describe_path(path: &ElementPath) -> String {
    path.0
        .iter()
        .map(|s| {
            let mut part = s.role.clone();
            if let Some(name) = &s.name {
                part.push_str(&format!(" {name:?}"));
            }
            if let Some(label) = &s.label {
                part.push_str(&format!(" ({label})"));
            }
            part
        })
        .collect::<Vec<_>>()
        .join(" > ")
}
