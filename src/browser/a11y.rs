//! The page's accessibility snapshot beside its screenshot (`screenshots/step-<id>-<n>.a11y.txt`):
//! the tree Chromium exposes to screen readers (`Accessibility.getFullAXTree`), one node a line
//! (`role "name"`, indented by depth), so report.html can show the text of a failing step's page
//! beside its picture, searchable (docs/reports.md).

use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write as _;

/// The most a snapshot keeps: a page of thousands of rows is cut, not copied whole.
pub const MAX_SNAPSHOT_BYTES: usize = 64 * 1024;

/// Roles that only structure the tree: their children are shown one level up.
const SKIPPED_ROLES: &[&str] = &["none", "generic", "InlineTextBox", "LineBreak", "ignored"];

fn text<'a>(node: &'a Value, key: &str) -> &'a str {
    node.get(key)
        .and_then(|v| v.get("value"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `Accessibility.getFullAXTree`'s answer as indented lines.
pub fn render(answer: &Value) -> String {
    let Some(nodes) = answer.get("nodes").and_then(Value::as_array) else {
        return String::new();
    };
    let by_id: HashMap<&str, &Value> = nodes
        .iter()
        .filter_map(|n| Some((n.get("nodeId")?.as_str()?, n)))
        .collect();
    let mut out = String::new();
    // The first node is the root; walked depth first, iteratively (a deep page is no stack risk).
    let mut stack: Vec<(&Value, usize)> = nodes.first().map(|n| (n, 0)).into_iter().collect();
    while let Some((node, depth)) = stack.pop() {
        if out.len() > MAX_SNAPSHOT_BYTES {
            out.push_str("…cut\n");
            break;
        }
        let role = text(node, "role");
        let ignored = node.get("ignored").and_then(Value::as_bool) == Some(true);
        let name = text(node, "name").trim();
        let hidden =
            ignored || SKIPPED_ROLES.contains(&role) || (role == "StaticText" && name.is_empty());
        let shown = !hidden;
        let child_depth = if shown { depth + 1 } else { depth };
        if shown {
            let _ = write!(out, "{}{role}", "  ".repeat(depth.min(40)));
            if !name.is_empty() {
                let one_line: String = name.chars().take(300).collect();
                let _ = write!(out, " {:?}", one_line.replace('\n', " "));
            }
            out.push('\n');
        }
        let children: Vec<&Value> = node
            .get("childIds")
            .and_then(Value::as_array)
            .map(|ids| {
                ids.iter()
                    .filter_map(|id| by_id.get(id.as_str()?).copied())
                    .collect()
            })
            .unwrap_or_default();
        for child in children.into_iter().rev() {
            stack.push((child, child_depth));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tree_becomes_indented_roles_and_names() {
        let answer = json!({"nodes": [
            {"nodeId": "1", "role": {"value": "RootWebArea"}, "name": {"value": "Shop"}, "childIds": ["2", "5"]},
            {"nodeId": "2", "role": {"value": "generic"}, "childIds": ["3", "4"]},
            {"nodeId": "3", "role": {"value": "heading"}, "name": {"value": "Cart"}, "childIds": []},
            {"nodeId": "4", "role": {"value": "button"}, "name": {"value": "Pay\nnow"}},
            {"nodeId": "5", "ignored": true, "role": {"value": "paragraph"}, "childIds": ["6"]},
            {"nodeId": "6", "role": {"value": "StaticText"}, "name": {"value": "3 items"}}
        ]});
        assert_eq!(
            render(&answer),
            "RootWebArea \"Shop\"\n  heading \"Cart\"\n  button \"Pay now\"\n  StaticText \"3 items\"\n"
        );
        assert_eq!(render(&json!({})), "");
    }
}
