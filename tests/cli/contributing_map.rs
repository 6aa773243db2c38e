//! The map for contributors stays true: CONTRIBUTING.md names only files and code that exist, and
//! every `README "…"` / `docs/<page>.md "…"` citation in the code names a section that exists.
//! A recipe that tells the next person to edit a constant that was removed, or a doc comment that
//! sends them to a heading that moved, fails here instead of wasting their afternoon.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use regex::Regex;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Every file under `dir` whose name ends with one of `extensions`, as (path, text).
fn sources(dir: &str, extensions: &[&str]) -> Vec<(PathBuf, String)> {
    walkdir::WalkDir::new(repo().join(dir))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            let name = e.file_name().to_string_lossy();
            extensions.iter().any(|ext| name.ends_with(ext))
        })
        .filter_map(|e| {
            let bytes = std::fs::read(e.path()).ok()?;
            Some((e.path().to_path_buf(), String::from_utf8(bytes).ok()?))
        })
        .collect()
}

/// The backticked spans of CONTRIBUTING.md outside its fenced blocks (the module tree is a fenced
/// block of file names, checked by `contributing_module_tree_names_files_that_exist`).
fn contributing_spans() -> Vec<String> {
    let text = read(&repo().join("CONTRIBUTING.md"));
    let mut prose = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    let span = Regex::new(r"`([^`\n]+)`").expect("regex");
    span.captures_iter(&prose)
        .map(|c| c[1].to_string())
        .collect()
}

/// A span that names a path in the repository (no placeholder, no glob).
fn as_repo_path(span: &str) -> Option<&str> {
    let roots = [
        "src/",
        "tests/",
        "bench/",
        "docs/",
        "schemas/",
        "examples/",
        "config/",
        ".ci/",
        "fuzz/",
        "benches/",
    ];
    let path = span.split([' ', '#']).next()?;
    let placeholder = path.contains(['<', '*', '{', '…']);
    (roots.iter().any(|r| path.starts_with(r)) && !placeholder).then_some(path)
}

#[test]
fn contributing_names_only_paths_that_exist() {
    let missing: BTreeSet<String> = contributing_spans()
        .iter()
        .filter_map(|s| as_repo_path(s))
        .filter(|p| !repo().join(p.trim_end_matches('/')).exists())
        .map(str::to_string)
        .collect();
    assert!(
        missing.is_empty(),
        "CONTRIBUTING.md names paths that do not exist: {missing:?}"
    );
}

/// A span that names code: a Rust path (`teardown::sweep_run`), a type (`ProviderKind`), a
/// function or constant with an underscore (`apply_flags`, `AGENT_MARKER_ENV`). A plain lowercase
/// word (`parse`, `create`) says too little to check; a span with spaces or punctuation is prose or
/// a command.
fn as_code_name(span: &str) -> Option<String> {
    let code =
        Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*(\(\))?$").expect("regex");
    if !code.is_match(span) {
        return None;
    }
    let name = span.trim_end_matches("()");
    let last = name.rsplit("::").next().unwrap_or(name);
    let camel = last.chars().next().is_some_and(char::is_uppercase)
        && last.chars().any(char::is_lowercase)
        && last.chars().filter(|c| c.is_uppercase()).count() >= 2;
    let worded = last.contains('_') && last.len() > 3;
    (name.contains("::") || camel || worded).then(|| last.to_string())
}

#[test]
fn contributing_names_only_code_that_exists() {
    let mut corpus = String::new();
    for dir in ["src", "tests", "bench", "benches", "fuzz", ".ci"] {
        for (path, text) in sources(
            dir,
            &[".rs", ".py", ".sh", ".toml", "/run", "long-functions"],
        ) {
            if path.ends_with("contributing_map.rs") {
                continue; // this file names the stale names it guards against
            }
            corpus.push_str(&text);
        }
    }
    let word = |name: &str| {
        Regex::new(&format!(r"\b{}\b", regex::escape(name)))
            .expect("regex")
            .is_match(&corpus)
    };
    let missing: BTreeSet<String> = contributing_spans()
        .iter()
        .filter_map(|s| as_code_name(s))
        .filter(|name| !word(name))
        .collect();
    assert!(
        missing.is_empty(),
        "CONTRIBUTING.md names code that no longer exists: {missing:?}"
    );
}

#[test]
fn the_check_catches_a_stale_recipe() {
    // The provider recipe once sent readers to these three names after they were removed.
    for stale in [
        "AVAILABLE_PROVIDERS",
        "the_provider_lists_agree",
        "`src/providers/gone.rs`",
    ] {
        let span = stale.trim_matches('`');
        let caught = as_code_name(span).is_some() || as_repo_path(span).is_some();
        assert!(caught, "{stale} would not be checked");
    }
    assert_eq!(as_code_name("parse"), None, "a plain word is not checked");
    assert_eq!(as_code_name("cargo test"), None);
}

#[test]
fn contributing_module_tree_names_files_that_exist() {
    let text = read(&repo().join("CONTRIBUTING.md"));
    let start = text.find("## Module tree").expect("a module tree section");
    let block = &text[start..];
    let body = block
        .split("```")
        .nth(1)
        .expect("the module tree's fenced block");
    // Each entry is the first word of a line that ends in `.rs` or `/`, two spaces deeper than
    // the folder entry it belongs to.
    let mut folders: Vec<(usize, PathBuf)> = Vec::new();
    let mut missing = Vec::new();
    let entry = Regex::new(r"^( *)([A-Za-z0-9_./-]+?(\.rs|/))(\s|$)").expect("regex");
    for line in body.lines() {
        let Some(c) = entry.captures(line) else {
            continue;
        };
        let indent = c[1].len();
        let name = c[2].trim_end_matches('/');
        while folders.last().is_some_and(|(i, _)| *i >= indent) {
            folders.pop();
        }
        let depth = folders.last().map_or(0, |(i, _)| i + 2);
        if indent != depth {
            continue; // a description's continuation line that happens to start with a path
        }
        let path = folders
            .last()
            .map(|(_, p)| p.join(name))
            .unwrap_or_else(|| PathBuf::from(name));
        if !repo().join(&path).exists() {
            missing.push(path.display().to_string());
        }
        if c[2].ends_with('/') {
            folders.push((indent, path));
        }
    }
    assert!(
        missing.is_empty(),
        "CONTRIBUTING.md's module tree names files that do not exist: {missing:?}"
    );
}

/// The headings of a markdown document, without their `#`s, and the bold lead-ins that open a
/// paragraph (`**Merging artifacts you did not make.**`), which pages use as small sections.
fn headings(doc: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(line.trim_start_matches('#').trim().to_string());
        } else if let Some(lead) = line.strip_prefix("**").and_then(|l| l.split_once("**")) {
            out.push(lead.0.trim_end_matches(['.', ':']).to_string());
        }
    }
    out
}

#[test]
fn code_citations_name_sections_that_exist() {
    let citation = Regex::new(r#"(README|docs/[a-z-]+\.md),? "([^"]+)""#).expect("regex");
    let comment_prefix = Regex::new(r"(?m)^\s*//[/!]?\s?").expect("regex");
    let mut wrong = Vec::new();
    for (path, text) in sources("src", &[".rs"]) {
        // A citation may wrap onto the next comment line: read comments as one text.
        let comments: String = text
            .lines()
            .filter(|l| l.trim_start().starts_with("//"))
            .map(|l| comment_prefix.replace(l, "").into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        for c in citation.captures_iter(&comments) {
            let doc = if &c[1] == "README" {
                "README.md"
            } else {
                &c[1]
            };
            let cited = &c[2];
            let Ok(doc_text) = std::fs::read_to_string(repo().join(doc)) else {
                wrong.push(format!("{}: {doc} does not exist", path.display()));
                continue;
            };
            let found = headings(&doc_text)
                .iter()
                .map(|h| h.replace('`', ""))
                .any(|h| {
                    h == cited
                        || h.strip_prefix(cited)
                            .is_some_and(|rest| rest.starts_with([' ', ':', '(', ',']))
                });
            if !found {
                wrong.push(format!(
                    "{}: {doc} has no section \"{cited}\"",
                    path.display()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "doc citations that point nowhere:\n{}",
        wrong.join("\n")
    );
}

/// The recipes a contributor follows to add a kind of thing: each is to be in CONTRIBUTING.md.
const RECIPES: &[&str] = &[
    "Add a provider.",
    "Add a probe kind.",
    "Add an event kind.",
    "Add a config field.",
    "Add a CLI flag.",
    "Add a recorded action kind.",
    "Add a report format.",
];

#[test]
fn contributing_has_every_recipe() {
    let text = read(&repo().join("CONTRIBUTING.md"));
    let missing: Vec<&str> = RECIPES
        .iter()
        .copied()
        .filter(|r| !text.contains(&format!("**{r}**")))
        .collect();
    assert!(
        missing.is_empty(),
        "CONTRIBUTING.md lacks recipes: {missing:?}"
    );
}

/// Each "`Name` (`src/…rs`)" of the prose: a name said to be in a file, as (name, file).
fn names_with_their_file(prose: &str) -> Vec<(String, String)> {
    let pair = Regex::new(
        r"`([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)(?:\(\))?` \(`(src/[A-Za-z0-9_/.]+\.rs)`",
    )
    .expect("regex");
    pair.captures_iter(prose)
        .map(|c| {
            let name = c[1].rsplit("::").next().unwrap_or(&c[1]).to_string();
            (name, c[2].to_string())
        })
        .collect()
}

/// A recipe's step names a symbol and the file it is in: the file has it (a recipe that sends
/// the reader to the right name in the wrong file fails here, not in their afternoon).
#[test]
fn contributing_names_each_symbol_in_the_file_it_gives() {
    let text = read(&repo().join("CONTRIBUTING.md"));
    let pairs = names_with_their_file(&text);
    assert!(
        pairs.iter().any(|(n, _)| n == "RecordedKind")
            && pairs.iter().any(|(n, _)| n == "RenderedSuite"),
        "the action kind and report format recipes name their symbols with their files: {pairs:?}"
    );
    let wrong: Vec<String> = pairs
        .iter()
        .filter(|(name, file)| {
            let path = repo().join(file);
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            !Regex::new(&format!(r"\b{}\b", regex::escape(name)))
                .expect("regex")
                .is_match(&text)
        })
        .map(|(name, file)| format!("{name} in {file}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "CONTRIBUTING.md names symbols in files that do not have them: {wrong:?}"
    );
}

#[test]
fn the_symbol_check_reads_a_name_and_its_file() {
    assert_eq!(
        names_with_their_file(
            "its variant in `action_kinds` (`src/replay/action.rs`) and `a::B()` (`src/x.rs`, …)"
        ),
        vec![
            (
                "action_kinds".to_string(),
                "src/replay/action.rs".to_string()
            ),
            ("B".to_string(), "src/x.rs".to_string())
        ]
    );
}
