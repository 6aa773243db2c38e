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
    /// A version at or above the floor (or an agent with none).
    Supported(String),
    /// Older than the floor: the fault `cli_version`, one line saying what and why.
    TooOld(String),
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
        _ => Verdict::Supported(shown(found)),
    }
}

/// What to install.
fn fix(agent: ProviderKind) -> String {
    let fix = FaultKind::CliVersion.fix(agent.as_str());
    match agent.info().cli() {
        Some(cli) => format!("{fix} (npm install -g {})", cli.npm),
        None => fix,
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
        assert!(line.starts_with("pi 0.60.2 is older than 0.73.0"), "{line}");
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
