//! Whether a renewed recording checks at least as much as the one in force (docs/replay.md, "A
//! recording never weakens in silence"). A pass the agent made in a hurry (one `curl /health`
//! where the recording drove the page, one `cat` where it read two files) must not replace a
//! stronger recording without a person's word: it is kept as pending instead.
//!
//! At least as strong means: every target of the old actions (their kind, tool and normalised
//! input, [`Action::target`]) is still among the new ones, so every kind is kept; no fewer facts;
//! and each old fact's action is still the action of a new fact. Pure: no I/O.

use super::format::{Action, RecordedStep};
use std::collections::{BTreeMap, BTreeSet};

/// What a renewed recording would give up, against the one in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Weakening {
    /// Each old action whose target the new recording does not have: (its kind, its target).
    pub dropped_actions: Vec<(&'static str, String)>,
    /// The kinds of action the old recording had and the new one has none of.
    pub dropped_kinds: Vec<&'static str>,
    /// How many facts it gives up: fewer facts, or old facts whose action no new fact is about
    /// (the larger of the two).
    pub dropped_facts: usize,
    /// The old facts whose action no new fact is about, as the recording has them.
    pub uncovered_facts: Vec<String>,
}

impl Weakening {
    /// What it would drop, in a few words: `4 browser actions and 1 fact`.
    pub fn what(&self) -> String {
        let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
        for (kind, _) in &self.dropped_actions {
            *by_kind.entry(kind).or_default() += 1;
        }
        let mut parts: Vec<String> = super::action::KIND_NAMES
            .iter()
            .filter_map(|kind| {
                let n = *by_kind.get(kind)?;
                Some(format!("{n} {kind} action{}", plural(n)))
            })
            .collect();
        if self.dropped_facts > 0 {
            let n = self.dropped_facts;
            parts.push(format!("{n} fact{}", plural(n)));
        }
        match parts.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => "nothing".into(),
        }
    }

    /// The step's note: `recording for step 2 would drop 4 browser actions and 1 fact: pending
    /// review`.
    pub fn note(&self, step: impl std::fmt::Display) -> String {
        format!(
            "recording for step {step} would drop {}: pending review (supervisor replay review)",
            self.what()
        )
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `None` when `new_actions` with `new_facts` are at least as strong as `old`; else what they
/// would drop.
pub fn weakening(
    old: &RecordedStep,
    new_actions: &[Action],
    new_facts: &[String],
) -> Option<Weakening> {
    let new_targets: BTreeSet<String> = new_actions.iter().map(Action::target).collect();
    let dropped_actions: Vec<(&'static str, String)> = old
        .actions
        .iter()
        .filter(|a| !new_targets.contains(&a.target()))
        .map(|a| (a.kind_name(), a.target()))
        .collect();
    let new_kinds: BTreeSet<&str> = new_actions.iter().map(Action::kind_name).collect();
    let dropped_kinds: Vec<&'static str> = super::action::KIND_NAMES
        .iter()
        .copied()
        .filter(|k| old.actions.iter().any(|a| a.kind_name() == *k) && !new_kinds.contains(k))
        .collect();
    let old_facts = old.facts.as_deref().unwrap_or_default();
    // The targets new facts are about.
    let covered: BTreeSet<String> = new_facts
        .iter()
        .filter_map(|f| fact_action(f, new_actions.len()))
        .filter_map(|i| new_actions.get(i).map(Action::target))
        .collect();
    let uncovered_facts: Vec<String> = old_facts
        .iter()
        .filter(|f| {
            fact_action(f, old.actions.len())
                .and_then(|i| old.actions.get(i))
                .is_some_and(|a| !covered.contains(&a.target()))
        })
        .cloned()
        .collect();
    let fewer = old_facts.len().saturating_sub(new_facts.len());
    let dropped_facts = fewer.max(uncovered_facts.len());
    if dropped_actions.is_empty() && dropped_kinds.is_empty() && dropped_facts == 0 {
        return None;
    }
    Some(Weakening {
        dropped_actions,
        dropped_kinds,
        dropped_facts,
        uncovered_facts,
    })
}

/// The action (0-based) a fact of a step with `actions` actions is about; `None` for a line that
/// is not a fact (a recording holds only facts that parsed).
fn fact_action(fact: &str, actions: usize) -> Option<usize> {
    // Only the action it names matters here, not how its text is compared: no refs masked.
    super::facts::parse(
        std::slice::from_ref(&fact.to_string()),
        &vec![false; actions],
    )
    .ok()?
    .first()
    .map(|f| f.action)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::StepId;
    use crate::replay::shell::ShellAction;

    fn shell(command: &str, output: &str) -> Action {
        Action::Shell(ShellAction {
            command: command.into(),
            cwd: "${BUGATTI_WORKDIR}".into(),
            exit_code: Some(0),
            output: output.into(),
            timeout_ms: None,
            volatile: Vec::new(),
        })
    }

    fn browser(tool: &str, arguments: serde_json::Value) -> Action {
        serde_json::from_value(serde_json::json!({
            "kind": "browser", "tool": tool, "arguments": arguments, "output": "- Page"
        }))
        .expect("a browser action")
    }

    fn step(actions: Vec<Action>, facts: &[&str]) -> RecordedStep {
        RecordedStep {
            step: StepId::new(2),
            provenance: "t.test.toml#2".into(),
            instruction_hash: "h".into(),
            provider: "command".parse().expect("a provider"),
            recorded_at: "2026-11-24T12:00:00Z".parse().expect("timestamp"),
            run_started_at: None,
            cost_usd: None,
            actions,
            relations: None,
            facts: Some(facts.iter().map(|f| (*f).to_string()).collect()),
            agent_version: None,
            failed: None,
            first_look_ms: None,
        }
    }

    fn facts(list: &[&str]) -> Vec<String> {
        list.iter().map(|f| (*f).to_string()).collect()
    }

    #[test]
    fn the_same_checks_respaced_and_more_are_at_least_as_strong() {
        let old = step(
            vec![shell("cat data.txt", "a"), shell("cat  stock.txt", "b")],
            &["2 contains \"b\""],
        );
        let new = [
            shell("cat stock.txt", "b"),
            shell("cat data.txt", "a"),
            shell("wc -l stock.txt", "1"),
        ];
        assert_eq!(weakening(&old, &new, &facts(&["1 contains \"b\""])), None);
    }

    #[test]
    fn two_cats_that_became_one_are_weaker() {
        let old = step(
            vec![shell("cat data.txt", "a"), shell("cat stock.txt", "b")],
            &["2 contains \"b\""],
        );
        let new = [shell("cat data.txt", "a")];
        let weaker = weakening(&old, &new, &facts(&["1 contains \"a\""])).expect("weaker");
        assert_eq!(
            weaker.dropped_actions,
            [("shell", "shell cat stock.txt".to_string())]
        );
        // The fact on the second file's action is about nothing the new recording reads.
        assert_eq!(weaker.uncovered_facts, ["2 contains \"b\""]);
        assert_eq!(weaker.what(), "1 shell action and 1 fact");
        assert!(weaker.dropped_kinds.is_empty());
    }

    #[test]
    fn a_browser_step_replaced_by_a_curl_drops_every_browser_action_and_its_fact() {
        let old = step(
            vec![
                browser("browser_navigate", serde_json::json!({"url": "http://x/"})),
                browser(
                    "browser_click",
                    serde_json::json!({"element": "Add", "ref": "e3"}),
                ),
                browser("browser_snapshot", serde_json::json!({})),
                browser("browser_snapshot", serde_json::json!({})),
            ],
            &["4 contains \"1 item\""],
        );
        let new = [shell("curl -s localhost:${APP_PORT}/health", "ok")];
        let weaker = weakening(&old, &new, &[]).expect("weaker");
        assert_eq!(weaker.dropped_kinds, ["browser"]);
        assert_eq!(weaker.dropped_facts, 1);
        assert_eq!(weaker.what(), "4 browser actions and 1 fact");
        assert_eq!(
            weaker.note(2),
            "recording for step 2 would drop 4 browser actions and 1 fact: pending review \
             (supervisor replay review)"
        );
    }

    #[test]
    fn fewer_facts_on_the_same_actions_are_weaker() {
        let old = step(
            vec![shell("cat stock.txt", "mugs 3\ncups 2")],
            &["1 contains \"mugs 3\"", "1 contains \"cups 2\""],
        );
        let new = [shell("cat stock.txt", "mugs 3\ncups 2")];
        let weaker = weakening(&old, &new, &facts(&["1 contains \"mugs\""])).expect("weaker");
        assert!(weaker.dropped_actions.is_empty());
        assert_eq!(weaker.what(), "1 fact");
        // As many facts, on the same action, is as strong (the agent may word them otherwise).
        let two = facts(&["1 contains \"mugs\"", "1 contains \"cups\""]);
        assert_eq!(weakening(&old, &new, &two), None);
    }

    #[test]
    fn a_fact_moved_to_another_action_leaves_the_old_one_uncovered() {
        let old = step(
            vec![shell("cat data.txt", "a"), shell("cat stock.txt", "b")],
            &["2 contains \"b\""],
        );
        let new = [shell("cat data.txt", "a"), shell("cat stock.txt", "b")];
        let weaker = weakening(&old, &new, &facts(&["1 contains \"a\""])).expect("weaker");
        assert!(weaker.dropped_actions.is_empty());
        assert_eq!(weaker.uncovered_facts, ["2 contains \"b\""]);
        assert_eq!(weaker.what(), "1 fact");
    }

    #[test]
    fn an_old_recording_without_facts_asks_only_for_its_targets() {
        let mut old = step(vec![shell("cat data.txt", "a")], &[]);
        old.facts = None;
        assert_eq!(weakening(&old, &[shell("cat data.txt", "a")], &[]), None);
    }

    #[test]
    fn spaces_collapse() {
        assert_eq!(
            crate::replay::normalize::collapsed("  cat \t data.txt\n"),
            "cat data.txt"
        );
    }
}
