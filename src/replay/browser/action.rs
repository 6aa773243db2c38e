//! The browser kind's action ([`BrowserAction`]): a Playwright MCP call as recorded, and its
//! replay on the session's browser through the supervisor's own client.

use super::super::browser_refs::{retarget, ElementPath, Resolution, Snapshot};
use super::super::compare::drift;
use super::super::context::{ActionAt, AgentTools, ReplayContext};
use super::super::domains::Learned;
use super::super::kind::RecordedKind;
use super::super::placeholders::Placeholders;
use super::super::verdict::Fallback;
use super::client::{call_and_settle, BrowserReplay};
use super::tools::{
    compared, console_errors, describe, describe_path, inline_snapshots, same_call, SCREENSHOT,
};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// A Playwright MCP tool the agent called on the session's browser, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserAction {
    /// The tool (`browser_navigate`, `browser_click`, …).
    pub tool: String,
    /// The call's arguments as sent, with placeholders; element refs as the agent gave them.
    pub arguments: serde_json::Value,
    /// For each element ref in `arguments`: the element's path in the snapshot the agent
    /// read it in, by which replay finds the element again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub elements: BTreeMap<String, ElementPath>,
    /// The answer the agent got, each page snapshot it linked to put inline.
    pub output: String,
    /// The answer was an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Learned volatile tokens of the compared output (`[line, token, {domain}]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volatile: Vec<Learned>,
}

impl BrowserAction {
    /// A Playwright MCP call as recorded: `output` is the answer with its snapshot links put
    /// inline ([`inline_snapshots`]).
    pub fn recorded(
        placeholders: &Placeholders,
        tool: &str,
        arguments: &serde_json::Value,
        elements: BTreeMap<String, ElementPath>,
        output: &str,
        is_error: bool,
    ) -> Self {
        Self {
            tool: tool.to_string(),
            arguments: placeholders.insert_json(arguments),
            elements,
            output: placeholders.insert(&placeholders.redact(output)),
            is_error,
            volatile: Vec::new(),
        }
    }
}

impl RecordedKind for BrowserAction {
    type State = ();
    const NAME: &'static str = "browser";

    fn describe(&self) -> String {
        describe(&self.tool, &self.arguments)
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
            && same_call(
                &self.arguments,
                &self.elements,
                &other.arguments,
                &other.elements,
            )
    }

    fn target(&self) -> String {
        format!(
            "{} {}",
            self.tool,
            super::tools::named_arguments(&self.arguments, &self.elements)
        )
    }

    /// A screenshot is made again, not compared: its image is evidence.
    fn compared(&self, _: &mut ()) -> Option<String> {
        (self.tool != SCREENSHOT).then(|| compared(&self.output))
    }

    async fn replay(
        &self,
        ctx: &ReplayContext<'_>,
        tools: AgentTools<'_>,
        _: &mut (),
        at: &ActionAt<'_>,
    ) -> Result<(), Fallback> {
        replay(ctx, tools.browser, at, self).await
    }
}

/// Makes the call again on the session's browser and compares its answer.
pub(super) async fn replay(
    ctx: &ReplayContext<'_>,
    browser: Option<&BrowserReplay>,
    at: &ActionAt<'_>,
    recorded: &BrowserAction,
) -> Result<(), Fallback> {
    let failed = |reason: String| Fallback::Failed {
        action: at.index,
        reason,
    };
    let Some(browser) = browser else {
        return Err(failed(
            "this session gives the agent no browser ([browser] with mcp = true): a browser \
             action cannot run"
                .into(),
        ));
    };
    let client = browser.client().await.map_err(|e| failed(e.to_string()))?;
    let output_dir = browser.output_dir();
    let mut current = BTreeMap::new();
    if !recorded.elements.is_empty() {
        // The refs Playwright MCP knows are those of the last snapshot the client took, as the
        // agent's ref came from the last snapshot it read: resolved there when every element
        // is found once, else in a snapshot taken now.
        let known = browser
            .last_snapshot()
            .map(|page| Snapshot::parse(&inline_snapshots(&page, output_dir)))
            .and_then(|snapshot| resolve_all(&snapshot, &recorded.elements));
        current = match known {
            Some(found) => found,
            None => {
                let page = client
                    .call("browser_snapshot", serde_json::json!({}))
                    .await
                    .map_err(|e| failed(e.to_string()))?;
                browser.saw(&page.text);
                let snapshot = Snapshot::parse(&inline_snapshots(&page.text, output_dir));
                resolve_or_drift(at, &snapshot, &recorded.elements)?
            }
        };
    }
    let arguments = ctx
        .placeholders
        .fill_json(&retarget(&recorded.arguments, &current));
    // A snapshot right after an action whose page was proven settled: that page, as a
    // snapshot taken now would show it (nothing called since, nothing in the page can have
    // changed it yet).
    let settled = (recorded.tool == "browser_snapshot"
        && recorded.arguments == serde_json::json!({}))
    .then(|| browser.settled_before(ctx.step_id, at.index))
    .flatten();
    let answer = match settled {
        Some(text) => crate::browser::mcp_client::ToolAnswer {
            text,
            images: Vec::new(),
            is_error: false,
        },
        None => call_and_settle(
            browser,
            client,
            (ctx.step_id, at.index),
            &recorded.tool,
            arguments,
        )
        .await
        .map_err(|e| failed(e.to_string()))?,
    };
    if recorded.tool == SCREENSHOT && !answer.is_error {
        browser.keep_screenshot(ctx.step_id, &answer.images);
        return Ok(());
    }
    let seen = inline_snapshots(&answer.text, output_dir);
    if answer.is_error != recorded.is_error {
        let word = |e: bool| if e { "an error" } else { "an answer" };
        return Err(Fallback::hard(drift(
            at.index,
            &at.what,
            "error",
            word(recorded.is_error),
            &format!("{}: {}", word(answer.is_error), compared(&seen)),
        )));
    }
    console_check(at, &recorded.output, &seen)?;
    ctx.check(at, &compared(&recorded.output), &compared(&seen))
}

/// Every recorded element's ref in `snapshot`, when each path is found there once.
pub(super) fn resolve_all(
    snapshot: &Snapshot,
    elements: &BTreeMap<String, ElementPath>,
) -> Option<BTreeMap<String, String>> {
    elements
        .iter()
        .map(|(old, path)| match snapshot.resolve(path) {
            Resolution::Found(now) => Some((old.clone(), now)),
            Resolution::Missing | Resolution::Ambiguous(_) => None,
        })
        .collect()
}

/// Every recorded element's ref in `snapshot`; an element not found there once is a drift.
pub(super) fn resolve_or_drift(
    at: &ActionAt<'_>,
    snapshot: &Snapshot,
    elements: &BTreeMap<String, ElementPath>,
) -> Result<BTreeMap<String, String>, Fallback> {
    let mut current = BTreeMap::new();
    for (old, path) in elements {
        let seen = match snapshot.resolve(path) {
            Resolution::Found(now) => {
                current.insert(old.clone(), now);
                continue;
            }
            Resolution::Missing => "no element on the page has this path".to_string(),
            Resolution::Ambiguous(n) => format!("{n} elements on the page have this path"),
        };
        return Err(Fallback::hard(drift(
            at.index,
            &at.what,
            "element",
            &describe_path(path),
            &seen,
        )));
    }
    Ok(current)
}

/// The agent was shown how many console errors the page had logged: a replayed answer that
/// shows more is a drift (the agent, told "Console: 1 errors", looks and may well fail the
/// step), not a pass that only warns.
pub(super) fn console_check(at: &ActionAt<'_>, recorded: &str, seen: &str) -> Result<(), Fallback> {
    match (console_errors(recorded), console_errors(seen)) {
        (Some(expected), Some(now)) if now > expected => Err(Fallback::hard(drift(
            at.index,
            &at.what,
            "console errors",
            &format!("{expected} console errors shown to the agent"),
            &format!("{now} console errors"),
        ))),
        _ => Ok(()),
    }
}
