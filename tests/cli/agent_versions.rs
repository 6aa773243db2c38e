//! The agent CLI versions are a contract (docs/providers.md, "Supported versions"): the table
//! there, the versions `.ci/run` installs and the supervisor's own list (`Cli::tested`, which
//! `doctor`'s "newer than tested" and the `cli_version` floor read) say the same, and `.ci/run`
//! installs exact versions only.

use bugatti::model::provider::{rows, Version};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

fn repo_text(path: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn version(text: &str) -> Option<Version> {
    let mut parts = text.trim().split('.').map(|p| p.parse::<u64>().ok());
    let v = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(v)
}

/// One row of the table: npm package → (oldest, newest, tested on).
type Table = BTreeMap<String, (Version, Version, String)>;

/// The rows of the table under "### Supported versions" in docs/providers.md.
fn documented() -> Table {
    let doc = repo_text("docs/providers.md");
    let section = doc
        .split("### Supported versions")
        .nth(1)
        .expect("docs/providers.md has a Supported versions section")
        .split("\n#")
        .next()
        .unwrap_or_default();
    let mut table = Table::new();
    for line in section.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let (Some(package), Some(oldest), Some(newest)) = (
            cells.get(1).and_then(|c| c.split('`').nth(1)),
            cells.get(2).and_then(|c| version(c)),
            cells.get(3).and_then(|c| version(c)),
        ) else {
            continue;
        };
        let on = cells.get(4).map(|c| c.to_string()).unwrap_or_default();
        table.insert(package.to_string(), (oldest, newest, on));
    }
    table
}

/// Every `package@version` `.ci/run` installs for `package`, the version as written.
fn installed(run: &str, package: &str) -> Vec<String> {
    let needle = format!("{package}@");
    run.match_indices(&needle)
        .filter(|(at, _)| {
            // `@scope/name@…`, not a longer package ending in the same name.
            let before = run[..*at].chars().last();
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '/')
        })
        .map(|(at, found)| {
            run[at + found.len()..]
                .chars()
                .take_while(|c| !c.is_whitespace() && !matches!(c, ')' | '\\' | '"' | '\''))
                .collect()
        })
        .collect()
}

#[test]
fn the_table_ci_run_and_the_supervisor_agree_on_every_agent_cli_version() {
    let table = documented();
    let run = repo_text(".ci/run");
    let mut seen = BTreeSet::new();
    for row in rows() {
        let Some(cli) = row.cli() else { continue };
        for line in cli.tested {
            seen.insert(line.npm.to_string());
            let documented = table
                .get(line.npm)
                .unwrap_or_else(|| panic!("docs/providers.md's table has no row for {}", line.npm));
            assert_eq!(
                (documented.0, documented.1, documented.2.as_str()),
                (line.oldest, line.newest, line.on),
                "{}: docs/providers.md and src/model/provider.rs disagree",
                line.npm
            );
            let written = installed(&run, line.npm);
            let versions: BTreeSet<Option<Version>> = written.iter().map(|v| version(v)).collect();
            assert!(
                !versions.contains(&None),
                ".ci/run installs {} at {written:?}: exact versions only, nothing floating",
                line.npm
            );
            let want: BTreeSet<Option<Version>> =
                [Some(line.oldest), Some(line.newest)].into_iter().collect();
            assert_eq!(
                versions, want,
                ".ci/run installs {} at {written:?}; the table says oldest {:?}, newest {:?}",
                line.npm, line.oldest, line.newest
            );
        }
        assert_eq!(
            Some(cli.floor.0),
            cli.tested.iter().map(|l| l.oldest).min(),
            "{}: the cli_version floor is the table's oldest supported",
            row.name
        );
    }
    let extra: Vec<&String> = table.keys().filter(|k| !seen.contains(*k)).collect();
    assert!(extra.is_empty(), "table rows no CLI has: {extra:?}");
}

#[test]
fn a_floating_version_is_found() {
    let run = "npm_into .ci/node @openai/codex@0.171.0 x@2\n(cd d && npm install @openai/codex@0)";
    assert_eq!(installed(run, "@openai/codex"), ["0.171.0", "0"]);
    assert_eq!(version("0"), None);
    assert_eq!(installed("@x/pi@1.2.3 pi@9", "pi"), ["9"]);
}
