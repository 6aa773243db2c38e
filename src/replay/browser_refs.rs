//! Element refs of a Playwright MCP page snapshot, resolved afresh at replay.
//!
//! Browser steps are not recorded yet (docs/replay.md, "What is never replayed"); this module is
//! the settled part of their replay: how a recorded element is found again on today's page.
//!
//! The agent names an element by its ref (`target: "f1e12"`), and refs are numbered per snapshot:
//! one element more above it and every ref below shifts; one element fewer and the old ref may
//! name a *different* element (remove the second of three "Add to basket" buttons and the
//! third takes the second's ref). So a recording never replays a ref as such. It keeps the
//! element's path — the role, accessible name and label of the element and of each of its
//! ancestors, from the snapshot the agent read the ref in — and replay looks that path up in
//! the current snapshot: exactly one element with the same path → its current ref; none or
//! several → drift.
//!
//! A node's *label* is the text the snapshot shows under it (`- text: Blue mug`) or beside it
//! (`- paragraph [ref=e7]: Sale today`): list items and table rows usually have no accessible
//! name, and it is their text that tells "the Blue mug row" from "the Red mug row".
//!
//! Everything here is pure: a snapshot's text in, paths and refs out.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One element of the path from the snapshot's root down to an element.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathStep {
    /// The ARIA role as the snapshot prints it (`button`, `listitem`, `generic`, …).
    pub role: String,
    /// The accessible name (the quoted string after the role), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The first text the snapshot shows under or beside the node, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl PathStep {
    /// A `generic` node with neither name nor label: a layout `<div>`. Chromium's accessibility
    /// tree adds or folds such wrappers as siblings come and go (one banner more above the
    /// products and the whole page gains a `generic` root), so they are left out of ancestor
    /// paths; they say nothing about which element the agent meant.
    fn is_layout_wrapper(&self) -> bool {
        self.role == "generic" && self.name.is_none() && self.label.is_none()
    }
}

/// The path of one element: its meaningful ancestors from the root (layout wrappers left out),
/// then the element itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElementPath(pub Vec<PathStep>);

/// What a recorded path finds in a current snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Exactly one element has the path: its current ref.
    Found(String),
    /// No element has it: the page changed.
    Missing,
    /// This many elements have it: replay cannot tell which one the agent meant.
    Ambiguous(usize),
}

/// One node of a parsed snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Node {
    step: PathStep,
    reference: Option<String>,
    parent: Option<usize>,
}

/// A page snapshot as Playwright MCP prints it (the YAML inside a tool answer's ```` ```yaml ````
/// fence, or a bare `.yml` snapshot file), parsed into a tree of nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    nodes: Vec<Node>,
}

impl Snapshot {
    /// Parses a snapshot. Lines that are not snapshot nodes (the answer's Markdown around the
    /// fence, `/url:` properties) are skipped; text lines become their parent's label.
    pub fn parse(text: &str) -> Self {
        let mut nodes: Vec<Node> = Vec::new();
        // (indent, node index) of the open ancestors, innermost last.
        let mut open: Vec<(usize, usize)> = Vec::new();
        for line in yaml_lines(text) {
            let indent = line.len() - line.trim_start().len();
            let Some(item) = line.trim_start().strip_prefix("- ") else {
                continue;
            };
            while open.last().is_some_and(|&(i, _)| i >= indent) {
                open.pop();
            }
            let parent = open.last().map(|&(_, index)| index);
            if let Some(text) = item.strip_prefix("text: ") {
                if let Some(p) = parent {
                    nodes[p].step.label.get_or_insert_with(|| unquote(text));
                }
                continue;
            }
            if item.starts_with('/') {
                continue; // a property such as `/url: /basket`
            }
            let Some(node) = parse_node(item, parent) else {
                continue;
            };
            nodes.push(node);
            open.push((indent, nodes.len() - 1));
        }
        Snapshot { nodes }
    }

    /// The number of element nodes parsed.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when nothing was parsed (the text held no snapshot).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The path of the element with `reference`, if the snapshot has it.
    pub fn path_of(&self, reference: &str) -> Option<ElementPath> {
        let index = self
            .nodes
            .iter()
            .position(|n| n.reference.as_deref() == Some(reference))?;
        Some(self.path_at(index))
    }

    /// The element of this snapshot that has `path`, by its current ref.
    pub fn resolve(&self, path: &ElementPath) -> Resolution {
        let Some(leaf) = path.0.last() else {
            return Resolution::Missing;
        };
        let found: Vec<&str> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].step == *leaf && self.path_at(i) == *path)
            .filter_map(|i| self.nodes[i].reference.as_deref())
            .collect();
        match found.as_slice() {
            [] => Resolution::Missing,
            [one] => Resolution::Found((*one).to_string()),
            many => Resolution::Ambiguous(many.len()),
        }
    }

    fn path_at(&self, index: usize) -> ElementPath {
        let mut steps = vec![self.nodes[index].step.clone()];
        let mut at = self.nodes[index].parent;
        while let Some(i) = at {
            let step = &self.nodes[i].step;
            if !step.is_layout_wrapper() {
                steps.push(step.clone());
            }
            at = self.nodes[i].parent;
        }
        steps.reverse();
        ElementPath(steps)
    }
}

/// The snapshot's lines: those inside the first ```` ```yaml ```` fence when the text has one
/// (a tool answer), else every line (a `.yml` snapshot file).
fn yaml_lines(text: &str) -> Vec<&str> {
    let mut lines = text.lines();
    if !text.contains("```yaml") {
        return lines.collect();
    }
    lines.by_ref().find(|l| l.trim() == "```yaml");
    lines.take_while(|l| l.trim() != "```").collect()
}

/// `button "Add to basket" [ref=f1e12] [cursor=pointer]: inline text` → a node.
fn parse_node(item: &str, parent: Option<usize>) -> Option<Node> {
    let item = item.trim_end();
    let role_end = item.find([' ', ':', '[', '"']).unwrap_or(item.len());
    let role = &item[..role_end];
    if role.is_empty() || !role.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return None;
    }
    let mut rest = item[role_end..].trim_start();
    let mut name = None;
    if rest.starts_with('"') {
        let (quoted, after) = split_quoted(rest)?;
        name = Some(quoted);
        rest = after.trim_start();
    }
    let mut attributes = BTreeMap::new();
    while let Some(inner) = rest.strip_prefix('[') {
        let close = inner.find(']')?;
        let attribute = &inner[..close];
        let (key, value) = attribute.split_once('=').unwrap_or((attribute, ""));
        attributes.insert(key.to_string(), value.to_string());
        rest = inner[close + 1..].trim_start();
    }
    let label = rest
        .strip_prefix(':')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(unquote);
    Some(Node {
        step: PathStep {
            role: role.to_string(),
            name,
            label,
        },
        reference: attributes.remove("ref"),
        parent,
    })
}

/// A double-quoted, JSON-escaped string at the start of `text`, and what follows it.
fn split_quoted(text: &str) -> Option<(String, &str)> {
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => {
                let literal = &text[..=i];
                let value = serde_json::from_str::<String>(literal)
                    .unwrap_or_else(|_| literal[1..literal.len() - 1].to_string());
                return Some((value, &text[i + 1..]));
            }
            _ => escaped = false,
        }
    }
    None
}

/// A label as written: quoted (YAML-style, when it holds special characters) or plain.
fn unquote(text: &str) -> String {
    let text = text.trim();
    if text.starts_with('"') {
        if let Some((value, _)) = split_quoted(text) {
            return value;
        }
    }
    text.to_string()
}

/// The snapshot text with every `[ref=…]` masked, so two snapshots of the same page compare
/// equal however their refs were numbered.
pub fn mask_refs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("[ref=") {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        match after.find(']') {
            Some(end) => {
                out.push_str("[ref=…]");
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(after);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The argument fields of Playwright MCP's tools that hold an element reference
/// (`target`, `startTarget`, `endTarget`, and `fields[].target` of `browser_fill_form`).
pub fn element_targets(arguments: &serde_json::Value) -> Vec<String> {
    let mut targets = Vec::new();
    for key in ["target", "startTarget", "endTarget"] {
        if let Some(t) = arguments.get(key).and_then(|v| v.as_str()) {
            targets.push(t.to_string());
        }
    }
    if let Some(fields) = arguments.get("fields").and_then(|v| v.as_array()) {
        targets.extend(
            fields
                .iter()
                .filter_map(|f| f.get("target").and_then(|t| t.as_str()))
                .map(str::to_string),
        );
    }
    targets
}

/// `arguments` with each element reference replaced through `current` (recorded ref → the ref
/// it resolved to now); references missing from `current` are left as they are.
pub fn retarget(
    arguments: &serde_json::Value,
    current: &BTreeMap<String, String>,
) -> serde_json::Value {
    let mut out = arguments.clone();
    let swap = |v: &mut serde_json::Value| {
        if let Some(new) = v.as_str().and_then(|old| current.get(old)) {
            *v = serde_json::Value::String(new.clone());
        }
    };
    for key in ["target", "startTarget", "endTarget"] {
        if let Some(v) = out.get_mut(key) {
            swap(v);
        }
    }
    if let Some(fields) = out.get_mut("fields").and_then(|v| v.as_array_mut()) {
        for field in fields {
            if let Some(v) = field.get_mut("target") {
                swap(v);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Real answers of Playwright MCP 0.0.83 (`browser_snapshot`) attached over CDP to Debian's
    // Chromium: a shop page; the same page with an aside inserted above the products (every ref
    // below it renumbered); the page without its second product.
    const SHOP: &str = include_str!("snapshot_fixtures/shop.md");
    const RENUMBERED: &str = include_str!("snapshot_fixtures/shop-renumbered.md");
    const WITHOUT_BLUE: &str = include_str!("snapshot_fixtures/shop-without-blue.md");

    fn step(role: &str, name: Option<&str>, label: Option<&str>) -> PathStep {
        PathStep {
            role: role.to_string(),
            name: name.map(str::to_string),
            label: label.map(str::to_string),
        }
    }

    #[test]
    fn a_tool_answer_is_parsed_from_its_yaml_fence() {
        let snapshot = Snapshot::parse(SHOP);
        assert_eq!(
            snapshot.len(),
            18,
            "f1e1 … f1e18, text lines folded into labels"
        );
        let path = snapshot.path_of("f1e12").expect("the Blue mug's button");
        assert_eq!(
            path.0,
            vec![
                step("main", None, None),
                step("list", None, None),
                step("listitem", None, Some("Blue mug")),
                step("button", Some("Add to basket"), None),
            ]
        );
    }

    #[test]
    fn a_bare_snapshot_file_parses_the_same() {
        let fenced = Snapshot::parse(SHOP);
        let bare: String = yaml_lines(SHOP).join("\n");
        assert_eq!(Snapshot::parse(&bare), fenced);
    }

    #[test]
    fn renumbered_refs_resolve_to_the_same_element() {
        let recorded = Snapshot::parse(SHOP);
        let now = Snapshot::parse(RENUMBERED);
        let blue = recorded.path_of("f1e12").expect("path");
        assert_eq!(now.resolve(&blue), Resolution::Found("f1e15".to_string()));
        let coupon = recorded.path_of("f1e17").expect("path");
        assert_eq!(now.resolve(&coupon), Resolution::Found("f1e20".to_string()));
    }

    #[test]
    fn an_element_gone_is_missing_even_when_its_old_ref_names_another() {
        let recorded = Snapshot::parse(SHOP);
        let now = Snapshot::parse(WITHOUT_BLUE);
        // The old ref f1e12 now names the *Green* mug's button: replaying it as such would
        // click the wrong product. The path finds nothing.
        let green_now = now.path_of("f1e12").expect("a node with the old ref");
        assert_eq!(green_now.0[2].label.as_deref(), Some("Green mug"));
        let blue = recorded.path_of("f1e12").expect("path");
        assert_eq!(now.resolve(&blue), Resolution::Missing);
    }

    #[test]
    fn a_layout_wrapper_that_comes_and_goes_changes_no_path() {
        // Chromium wraps the page in a `generic` root only when the body has several children.
        let alone = "- main [ref=e1]:\n  - button \"Buy\" [ref=e2]\n";
        let wrapped = "- generic [ref=e1]:\n  - complementary [ref=e2]:\n    - paragraph [ref=e3]: Sale\n  - main [ref=e4]:\n    - generic [ref=e5]:\n      - button \"Buy\" [ref=e6]\n";
        let path = Snapshot::parse(alone).path_of("e2").expect("path");
        assert_eq!(
            Snapshot::parse(wrapped).resolve(&path),
            Resolution::Found("e6".to_string())
        );
    }

    #[test]
    fn identical_paths_are_ambiguous() {
        let page = "- list [ref=e1]:\n  - listitem [ref=e2]:\n    - button \"Buy\" [ref=e3]\n  - listitem [ref=e4]:\n    - button \"Buy\" [ref=e5]\n";
        let snapshot = Snapshot::parse(page);
        let path = snapshot.path_of("e3").expect("path");
        assert_eq!(snapshot.resolve(&path), Resolution::Ambiguous(2));
    }

    #[test]
    fn names_with_quotes_and_inline_labels_parse() {
        let page = "- generic [ref=e1]:\n  - button \"Say \\\"hi\\\"\" [ref=e2] [cursor=pointer]\n  - paragraph [ref=e3]: Sale today\n";
        let snapshot = Snapshot::parse(page);
        assert_eq!(
            snapshot.path_of("e2").expect("e2").0,
            vec![step("button", Some("Say \"hi\""), None)]
        );
        assert_eq!(
            snapshot.path_of("e3").expect("e3").0,
            vec![step("paragraph", None, Some("Sale today"))]
        );
        let quoted = Snapshot::parse("- paragraph [ref=e1]: \"Basket: empty\"\n");
        assert_eq!(
            quoted.path_of("e1").expect("e1").0,
            vec![step("paragraph", None, Some("Basket: empty"))]
        );
    }

    #[test]
    fn text_without_a_snapshot_parses_to_nothing() {
        assert!(Snapshot::parse("### Error\nRef e12 not found").is_empty());
        assert!(Snapshot::parse("").is_empty());
        assert_eq!(
            Snapshot::parse("").resolve(&ElementPath(vec![])),
            Resolution::Missing
        );
    }

    #[test]
    fn masked_snapshots_of_renumbered_pages_differ_only_where_the_page_did() {
        let a = mask_refs(SHOP);
        assert!(!a.contains("f1e"), "{a}");
        assert_eq!(
            mask_refs("- button \"Add\" [ref=e9] [cursor=pointer]"),
            "- button \"Add\" [ref=…] [cursor=pointer]"
        );
        assert_eq!(mask_refs("[ref=e1"), "[ref=e1");
    }

    #[test]
    fn targets_are_found_and_swapped_in_every_argument_shape() {
        let args = json!({"element": "Blue", "target": "f1e12"});
        assert_eq!(element_targets(&args), vec!["f1e12"]);
        let form = json!({"fields": [{"target": "f1e17", "value": "x"}, {"target": "f1e3"}]});
        assert_eq!(element_targets(&form), vec!["f1e17", "f1e3"]);
        let drag = json!({"startTarget": "e1", "endTarget": "e2"});
        assert_eq!(element_targets(&drag), vec!["e1", "e2"]);

        let now: BTreeMap<String, String> = [("f1e12", "f1e15"), ("f1e17", "f1e20")]
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(
            retarget(&args, &now),
            json!({"element": "Blue", "target": "f1e15"})
        );
        assert_eq!(
            retarget(&form, &now),
            json!({"fields": [{"target": "f1e20", "value": "x"}, {"target": "f1e3"}]})
        );
    }
}
