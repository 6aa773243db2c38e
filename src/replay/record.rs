//! What a recording learns from the agent's passes: the volatile positions a renewed recording
//! keeps (with their domains and ties), the relations between timestamps, the expiry count
//! ([`age`]); which tools replay at all; and the two details set on an action once its step's
//! order is known (a `list_logs` call's delay, a shell call's timeout).
//!
//! Each kind builds its own action as recorded (`ShellAction::recorded`,
//! `ConsoleAction::recorded`, …): inputs with the session's values and secrets as `${NAME}`,
//! outputs likewise (so that the file shows no session's port or path, and a diff in review
//! shows only real changes); [`super::replayer`] compares in the same form.

use super::action::Action;
use super::console::ConsoleTool;
use super::domains::{learn_domain, Learned, SeenValue};
use super::format::RecordedStep;
use super::masks::{candidates, compare, named_in, Kind, MaskedDiff, Position, Rules};
use super::normalize::Normalizer;
use super::replayer::{compared_outputs, relations_of};

/// A `list_logs` call made `gap` after the step's previous action began (other actions keep
/// none: they are compared whenever they run).
pub fn set_after(action: &mut Action, gap: std::time::Duration) {
    if let Action::Console(call) = action {
        if call.tool == ConsoleTool::ListLogs {
            call.after_ms = Some(u64::try_from(gap.as_millis()).unwrap_or(u64::MAX));
        }
    }
}

/// A shell action that ran under the timeout its call asked for (ms).
pub fn with_timeout(mut action: Action, timeout: Option<u64>) -> Action {
    if let Action::Shell(shell) = &mut action {
        shell.timeout_ms = timeout;
    }
    action
}

/// What learning from an agent's pass needs besides the two recordings.
pub struct Learning<'a> {
    /// The step's instruction as sent: a value it names is never learned.
    pub instruction: &'a str,
    /// When the previous recording's run ran (start, end).
    pub previous_window: Option<(chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>)>,
    /// When the agent's new pass ran (its session's start, now).
    pub window: (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>),
    /// When the new pass's step began.
    pub step_began: Option<chrono::DateTime<chrono::Utc>>,
}

/// The volatile tokens a renewed recording keeps, each with its domain: for each new action that
/// is the same call as the previous recording's action at its place, the positions learned
/// before, those `soft` drift found, and those in which the previous recording and the agent's
/// new pass differ as a soft drift would (only in candidate tokens, not a timestamp current in
/// both, never a value the instruction names). Each keeps what both passes showed of it
/// ([`super::domains::learn_domain`]); an id, the earlier token it equalled in both. A position
/// whose bound cannot be told, and everything else, stays exact.
pub fn learn(
    previous: &RecordedStep,
    new: &mut [Action],
    soft: &[(usize, Position)],
    normalizer: &Normalizer,
    learning: &Learning<'_>,
) {
    let instruction = learning.instruction;
    let texts = |actions: &[Action]| -> Vec<Option<String>> {
        compared_outputs(actions)
            .into_iter()
            .map(|t| t.map(|t| normalizer.normalize_with(&t, instruction)))
            .collect()
    };
    let (old_texts, new_texts) = (texts(&previous.actions), texts(new));
    let old_tokens = all_tokens(&old_texts);
    let new_tokens = all_tokens(&new_texts);
    for (i, action) in new.iter_mut().enumerate() {
        let Some(old) = previous.actions.get(i).filter(|old| old.same_input(action)) else {
            continue;
        };
        let (Some(Some(a)), Some(Some(b))) = (old_texts.get(i), new_texts.get(i)) else {
            continue;
        };
        let mut positions: Vec<Position> = old.volatile().iter().map(|l| l.at).collect();
        positions.extend(soft.iter().filter(|(x, _)| *x == i).map(|(_, p)| *p));
        // What a replay would have called a soft drift: a timestamp "current" in both passes is
        // learned too (its offset from the run's clock, 0 inside the run).
        let rules = Rules::plain(instruction, learning.previous_window, learning.window);
        if let MaskedDiff::Soft(varied) = compare(a, b, &rules) {
            positions.extend(varied);
        }
        positions.sort();
        positions.dedup();
        let learned = positions
            .into_iter()
            .filter_map(|p| {
                let (ka, va) = kind_and_value(a, p)?;
                let (kb, vb) = kind_and_value(b, p)?;
                // A learned position never covers a value the instruction names, whatever
                // taught it.
                if ka != kb || named_in(instruction, va) || named_in(instruction, vb) {
                    return None;
                }
                let before = old.volatile().iter().find(|l| l.at == p);
                let mut domain = learn_domain(
                    ka,
                    before.and_then(|l| l.domain.as_ref()),
                    &SeenValue {
                        value: va,
                        window: learning.previous_window,
                        step_began: None,
                    },
                    &SeenValue {
                        value: vb,
                        window: Some(learning.window),
                        step_began: learning.step_began,
                    },
                )?;
                if matches!(ka, Kind::Uuid | Kind::Hex) {
                    let had = before.and_then(|l| l.domain.as_ref());
                    domain.tie = tie(had, (i, p), &old_tokens, &new_tokens);
                    domain.apart = apart(had, (i, p), &old_tokens, &new_tokens);
                }
                Some(Learned {
                    at: p,
                    domain: Some(domain),
                })
            })
            .collect();
        action.set_volatile(learned);
    }
}

/// The relations a renewed recording keeps: those of the agent's new pass, less (for an action
/// that is the same call as before) those that did not hold in the previous recording's.
pub fn relations(
    previous: Option<&RecordedStep>,
    new: &[Action],
    normalizer: &Normalizer,
    instruction: &str,
) -> Vec<super::domains::Relation> {
    let now = relations_of(new, normalizer, instruction);
    let Some(previous) = previous else {
        return now;
    };
    let before = match &previous.relations {
        Some(r) => r.clone(),
        None => relations_of(&previous.actions, normalizer, instruction),
    };
    let same = |i: usize| matches!((previous.actions.get(i), new.get(i)), (Some(a), Some(b)) if a.same_input(b));
    let (kept, fresh): (Vec<_>, Vec<_>) = now
        .into_iter()
        .partition(|r| same(r.action) && r.from.is_none_or(same));
    let mut out = super::domains::intersect(&before, &kept);
    out.extend(fresh);
    out.sort_by_key(|r| (r.action, r.a, r.b));
    out
}

/// After a replay of `step`: a learned position in `varied` (action, position) starts its count
/// of quiet replays again, the others count one more, and one quiet for
/// [`super::domains::EXPIRES_AFTER`] replays is dropped (exact again). True when a count changed.
pub fn age(step: &mut RecordedStep, varied: &[(usize, Position)]) -> bool {
    let mut changed = false;
    for (i, action) in step.actions.iter_mut().enumerate() {
        let mut learned = action.volatile().to_vec();
        for l in &mut learned {
            let Some(d) = &mut l.domain else { continue };
            let quiet = if varied.contains(&(i, l.at)) {
                0
            } else {
                d.quiet.saturating_add(1)
            };
            changed |= quiet != d.quiet;
            d.quiet = quiet;
        }
        learned.retain(|l| {
            l.domain
                .as_ref()
                .is_none_or(|d| d.quiet < super::domains::EXPIRES_AFTER)
        });
        action.set_volatile(learned);
    }
    changed
}

/// A token in a step's outputs: (action, position), kind, value.
type Placed<'a> = ((usize, Position), Kind, &'a str);

/// Every candidate token of the step's outputs, in reading order.
fn all_tokens(texts: &[Option<String>]) -> Vec<Placed<'_>> {
    let mut out = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let Some(text) = text else { continue };
        for (line, l) in text.split('\n').enumerate() {
            for (token, t) in candidates(l).iter().enumerate() {
                out.push(((i, Position { line, token }), t.kind, &l[t.start..t.end]));
            }
        }
    }
    out
}

fn value_at<'a>(tokens: &[Placed<'a>], p: (usize, Position)) -> Option<(Kind, &'a str)> {
    tokens
        .iter()
        .find(|(q, _, _)| *q == p)
        .map(|(_, k, v)| (*k, *v))
}

fn kind_and_value(text: &str, p: Position) -> Option<(Kind, &str)> {
    let line = text.split('\n').nth(p.line)?;
    candidates(line)
        .get(p.token)
        .map(|t| (t.kind, &line[t.start..t.end]))
}

/// The earlier token id `at` equalled in both passes (and, when it was learned before, the one
/// it was tied to then, if that still holds; an id learned untied stays untied).
fn tie(
    had: Option<&super::domains::Domain>,
    at: (usize, Position),
    old: &[Placed<'_>],
    new: &[Placed<'_>],
) -> Option<(usize, usize, usize)> {
    let value = value_at;
    let (here_old, here_new) = (value(old, at)?, value(new, at)?);
    let equal_in_both =
        |q: (usize, Position)| value(old, q) == Some(here_old) && value(new, q) == Some(here_new);
    if let Some(d) = had {
        let (a, line, token) = d.tie?;
        return equal_in_both((a, Position { line, token })).then_some((a, line, token));
    }
    new.iter()
        .take_while(|(q, _, _)| *q != at)
        .map(|(q, _, _)| *q)
        .find(|q| equal_in_both(*q))
        .map(|(a, p)| (a, p.line, p.token))
}

/// The earlier ids of the same kind and length that the token at `at` differed from in both
/// passes (and in every pass before, when `had` says), the nearest [`MAX_APART`] of them.
fn apart(
    had: Option<&super::domains::Domain>,
    at: (usize, Position),
    old: &[Placed<'_>],
    new: &[Placed<'_>],
) -> Vec<(usize, usize, usize)> {
    let (Some((kind, here_old)), Some((_, here_new))) = (value_at(old, at), value_at(new, at))
    else {
        return Vec::new();
    };
    let differs_in_both = |q: (usize, Position)| {
        matches!((value_at(old, q), value_at(new, q)),
            (Some((ko, vo)), Some((kn, vn)))
                if ko == kind && kn == kind && vo.len() == here_old.len()
                    && vn.len() == here_new.len() && vo != here_old && vn != here_new)
    };
    let as_triple = |(a, p): (usize, Position)| (a, p.line, p.token);
    let at_triple = |(a, line, token): (usize, usize, usize)| (a, Position { line, token });
    // Learned before: only what still holds (an id once equal to another stays untold).
    if let Some(d) = had {
        return d
            .apart
            .iter()
            .copied()
            .filter(|q| differs_in_both(at_triple(*q)))
            .collect();
    }
    let mut found: Vec<(usize, usize, usize)> = new
        .iter()
        .take_while(|(q, _, _)| *q != at)
        .map(|(q, _, _)| *q)
        .filter(|q| differs_in_both(*q))
        .map(as_triple)
        .collect();
    found.reverse();
    found.truncate(super::domains::MAX_APART);
    found
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
        || crate::model::provider::rows().any(|row| row.is_shell_tool(tool))
        || super::files::is_file_tool(tool)
        || super::browser::tools::recorded_tool(tool).is_some();
    (!known).then(|| format!("the agent used {tool}, which is not replayed"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::Answer;
    use crate::model::ids::StepId;
    use crate::replay::console::ConsoleAction;
    use crate::replay::placeholders::Placeholders;

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

    fn shell(command: &str, output: &str) -> Action {
        Action::Shell(crate::replay::shell::ShellAction::recorded(
            &Placeholders::new([], []),
            command,
            "/w",
            Some(0),
            output,
        ))
    }

    fn pass(actions: Vec<Action>) -> RecordedStep {
        RecordedStep {
            step: StepId::new(1),
            provenance: "t#1".into(),
            instruction_hash: "h".into(),
            provider: "command".parse().expect("a provider"),
            recorded_at: "2026-11-24T12:01:00Z".parse().expect("ts"),
            run_started_at: Some("2026-11-24T12:00:00Z".parse().expect("ts")),
            cost_usd: None,
            actions,
            relations: None,
            facts: None,
            agent_version: None,
            failed: None,
            first_look_ms: None,
        }
    }

    fn learning(instruction: &str) -> Learning<'_> {
        Learning {
            instruction,
            previous_window: Some((
                "2026-11-24T12:00:00Z".parse().expect("ts"),
                "2026-11-24T12:01:00Z".parse().expect("ts"),
            )),
            step_began: None,
            window: (
                "2026-11-25T12:00:00Z".parse().expect("ts"),
                "2026-11-25T12:01:00Z".parse().expect("ts"),
            ),
        }
    }

    #[test]
    fn an_id_that_never_equalled_another_in_any_pass_is_kept_apart() {
        let session =
            |who: &str, n: u32| format!("{who} session={n:08x}-3d4e-4f50-8a61-7b8c9d0e1f23");
        let before = pass(vec![
            shell("login", &session("login", 1)),
            shell("sudo", &session("admin", 2)),
        ]);
        let mut after = vec![
            shell("login", &session("login", 3)),
            shell("sudo", &session("admin", 4)),
        ];
        learn(
            &before,
            &mut after,
            &[],
            &Normalizer::generic(),
            &learning("Check it."),
        );
        let admin = after[1].volatile()[0].domain.clone().expect("a domain");
        assert_eq!(admin.apart, vec![(0, 0, 0)]);
        assert_eq!(admin.tie, None);
        // A pass in which the session did not rotate: apart no more, for good.
        let mut third = vec![
            shell("login", &session("login", 5)),
            shell("sudo", &session("admin", 5)),
        ];
        learn(
            &pass(after.clone()),
            &mut third,
            &[],
            &Normalizer::generic(),
            &learning("Check it."),
        );
        let admin = third[1].volatile()[0].domain.clone().expect("a domain");
        assert!(admin.apart.is_empty(), "{admin:?}");
    }

    #[test]
    fn what_two_passes_teach_is_bounded_and_tied() {
        let user = |n: u32| format!("user {n:08x}-3d4e-4f50-8a61-7b8c9d0e1f23");
        let owner = |n: u32| format!("owner {n:08x}-3d4e-4f50-8a61-7b8c9d0e1f23 took {n}0ms");
        let before = pass(vec![
            shell("create", &user(1)),
            shell("show", &owner(1)),
            shell("snap", "snapshot 2026-11-24T11:00:00Z"),
        ]);
        let mut after = vec![
            shell("create", &user(2)),
            shell("show", &owner(2)),
            shell("snap", "snapshot 2026-11-25T10:00:00Z"),
        ];
        learn(
            &before,
            &mut after,
            &[],
            &Normalizer::generic(),
            &learning("Check it."),
        );
        let domain = |a: usize, token: usize| {
            after[a]
                .volatile()
                .iter()
                .find(|l| l.at == Position { line: 0, token })
                .and_then(|l| l.domain.clone())
        };
        // The user's id is the first: untied. The owner's is tied to it.
        assert_eq!(domain(0, 0).map(|d| d.tie), Some(None));
        assert_eq!(domain(1, 0).and_then(|d| d.tie), Some((0, 0, 0)));
        assert_eq!(domain(1, 1).and_then(|d| d.range), Some((0.01, 0.02)));
        // An hour old, then two hours old (each as a whole second).
        assert_eq!(domain(2, 0).and_then(|d| d.range), Some((-7199.0, -3599.0)));
        // A pass in which the owner was not the user unties it for good.
        let mut third = vec![
            shell("create", &user(3)),
            shell("show", &owner(4)),
            shell("snap", "snapshot 2026-11-25T10:00:00Z"),
        ];
        learn(
            &pass(after.clone()),
            &mut third,
            &[],
            &Normalizer::generic(),
            &learning("Check it."),
        );
        let owner_domain = third[1].volatile()[0].domain.clone();
        assert_eq!(owner_domain.and_then(|d| d.tie), None);
    }

    #[test]
    fn a_position_quiet_for_30_replays_is_exact_again() {
        let mut step = pass(vec![shell("a", "took 12ms"), shell("b", "took 15ms")]);
        let p = Position { line: 0, token: 0 };
        let domain = crate::replay::domains::Domain {
            kind: Kind::Duration,
            range: Some((0.012, 0.02)),
            tie: None,
            apart: Vec::new(),
            quiet: 0,
            widened: 0,
        };
        for a in &mut step.actions {
            a.set_volatile(vec![Learned {
                at: p,
                domain: Some(domain.clone()),
            }]);
        }
        // Action 0 varies every replay; action 1 never does.
        for n in 1..crate::replay::domains::EXPIRES_AFTER {
            assert!(age(&mut step, &[(0, p)]));
            assert_eq!(
                step.actions[1].volatile()[0]
                    .domain
                    .as_ref()
                    .map(|d| d.quiet),
                Some(n)
            );
        }
        assert!(age(&mut step, &[(0, p)]));
        assert!(step.actions[1].volatile().is_empty(), "expired");
        assert_eq!(
            step.actions[0].volatile()[0]
                .domain
                .as_ref()
                .map(|d| d.quiet),
            Some(0)
        );
        // Nothing to count: nothing to write.
        assert!(!age(&mut step, &[(0, p)]));
    }

    #[test]
    fn relations_keep_what_held_in_every_pass() {
        let n = Normalizer::generic();
        let out = |m: u32| format!("created 2026-11-24T12:00:00Z\nupdated 2026-11-24T12:0{m}:00Z");
        let first = pass(vec![shell("show", &out(5))]);
        let now = relations(None, &first.actions, &n, "");
        assert_eq!(now.len(), 1);
        assert_eq!(now[0].diff, Some(300.0));
        let mut renewed = first.clone();
        renewed.relations = Some(now);
        let kept = relations(Some(&renewed), &[shell("show", &out(7))], &n, "");
        assert_eq!(kept.len(), 1);
        assert_eq!(
            kept[0].diff, None,
            "the difference changed: only the order is kept"
        );
        // Another command: its relations are its own.
        let other = relations(Some(&renewed), &[shell("other", &out(7))], &n, "");
        assert_eq!(other[0].diff, Some(420.0));
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
        let recorded = |tool| ConsoleAction::recorded(&p, tool, &args, &answer);
        let action = recorded("exec_command").expect("replayable");
        let text = serde_json::to_string(&action).expect("json");
        assert!(
            !text.contains("41234") && !text.contains("s3cr3t"),
            "{text}"
        );
        assert!(recorded("list_sessions").is_none());
    }
}
