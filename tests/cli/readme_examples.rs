//! Every documented example goes through the real binary, so an example that does not work
//! fails CI. The documents are README.md and every `docs/**/*.md` (the manual), read at test
//! time: a new page or block is tested without touching this file.
//!
//! - every ```toml block is put into a temporary project the way its page implies and must pass
//!   `supervisor check`;
//! - every `supervisor …` command of their shell blocks is run as `check` with the same
//!   flags (or parsed with `--help`), and every synopsis line names real subcommands and flags;
//! - every relative link names a file that exists (and a heading of it, for `#anchor`s);
//! - every file in `config/` passes `supervisor check --config <file>` beside a minimal test.
//!
//! How a toml block becomes a project: a leading `# path/to/file.toml` comment names the file; a
//! block without one is a test file when it has `[[steps]]` and a project config when it has
//! config tables (`[provider]`, `[commands.…]`, …). The blocks of one section of a page (between two
//! headings) are one project: a test block is checked with the config block beside it, else with
//! a minimal shell-provider config; a config block with no test beside it gets a minimal test.
//! Files an example only refers to (included files, assets, command `cwd`s) are created minimal,
//! and the variables its `[secrets] from_env` read are set, so the check is about the example.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common::Project;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, then every `docs/**/*.md` in path order: (path relative to the repository, text).
fn documents() -> Vec<(String, String)> {
    let mut docs = vec![(
        "README.md".to_string(),
        std::fs::read_to_string(repo().join("README.md")).expect("read README.md"),
    )];
    let mut pages: Vec<PathBuf> = walkdir::WalkDir::new(repo().join("docs"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    assert!(!pages.is_empty(), "docs/ holds the manual's pages");
    for page in pages {
        let rel = page
            .strip_prefix(repo())
            .expect("under the repository")
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("read {rel}: {e}"));
        docs.push((rel, text));
    }
    docs
}

// ---------------------------------------------------------------------------------------------
// Markdown: fenced blocks with their line and section.

#[derive(Debug, Clone, PartialEq, Eq)]
struct Block {
    /// The document it is in (`README.md`, `docs/config.md`).
    file: String,
    /// 1-based line of the opening fence.
    line: usize,
    /// The info string's first word (`toml`, `sh`, or empty).
    lang: String,
    text: String,
    /// The heading the block sits under (empty before the first heading).
    section: String,
}

fn fenced_blocks(markdown: &str) -> Vec<Block> {
    fenced_blocks_of("README.md", markdown)
}

fn fenced_blocks_of(file: &str, markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut section = String::new();
    // (fence, block being collected)
    let mut open: Option<(String, Block)> = None;
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some((fence, block)) = &mut open {
            if trimmed.starts_with(fence.as_str())
                && trimmed
                    .trim_end()
                    .chars()
                    .all(|c| c == fence.as_bytes()[0] as char)
            {
                blocks.push(open.take().expect("open block").1);
            } else {
                block.text.push_str(line);
                block.text.push('\n');
            }
            continue;
        }
        let fence_char = trimmed.chars().next();
        if matches!(fence_char, Some('`') | Some('~')) {
            let c = fence_char.expect("fence char");
            let fence: String = trimmed.chars().take_while(|x| *x == c).collect();
            if fence.len() >= 3 {
                let lang = trimmed[fence.len()..]
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_string();
                open = Some((
                    fence,
                    Block {
                        file: file.to_string(),
                        line: i + 1,
                        lang,
                        text: String::new(),
                        section: section.clone(),
                    },
                ));
                continue;
            }
        }
        if trimmed.starts_with('#') && trimmed.trim_start_matches('#').starts_with(' ') {
            section = trimmed.trim_start_matches('#').trim().to_string();
        }
    }
    assert!(open.is_none(), "{file} has an unclosed code fence");
    blocks
}

// ---------------------------------------------------------------------------------------------
// TOML blocks: what file each one is.

#[derive(Debug, Clone, PartialEq, Eq)]
enum Role {
    /// A project config, at this path relative to the temp project.
    Config(String),
    /// The user's global config (`~/.bugatti/config.toml`, `$BUGATTI_CONFIG_HOME/config.toml`).
    GlobalConfig,
    /// A test file, at the path its leading comment names (else a made-up one).
    Test(Option<String>),
}

/// The `path.toml` a leading `# path.toml …` comment names.
fn leading_path(text: &str) -> Option<String> {
    let first = text.lines().find(|l| !l.trim().is_empty())?.trim();
    let word = first.strip_prefix('#')?.split_whitespace().next()?;
    word.ends_with(".toml").then(|| word.to_string())
}

const CONFIG_TABLES: &[&str] = &[
    "provider",
    "supervisor",
    "env",
    "secrets",
    "ports",
    "commands",
    "checkpoint",
];

fn role(text: &str) -> Result<Role, String> {
    if let Some(path) = leading_path(text) {
        return Ok(if path.ends_with(".test.toml") {
            Role::Test(Some(path))
        } else if path.starts_with("~/") || path.starts_with("$BUGATTI_CONFIG_HOME") {
            Role::GlobalConfig
        } else {
            Role::Config(path)
        });
    }
    let tables: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('['))
        .map(|l| {
            l.trim_start_matches('[')
                .split([']', '.'])
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        })
        .collect();
    let is_test = tables.iter().any(|t| t == "steps" || t == "overrides");
    let is_config = tables.iter().any(|t| CONFIG_TABLES.contains(&t.as_str()));
    match (is_test, is_config) {
        (true, false) => Ok(Role::Test(None)),
        (false, true) => Ok(Role::Config("bugatti.config.toml".into())),
        (true, true) => Err("has both test-file and config tables; \
                             start it with a `# path/to/file.toml` comment naming the file"
            .into()),
        (false, false) => Err("is neither a test file (no `[[steps]]`) nor a config \
                               (no `[provider]`, `[commands.…]`, … table); start it with a \
                               `# path/to/file.toml` comment naming the file"
            .into()),
    }
}

// ---------------------------------------------------------------------------------------------
// A temporary project holding one example, and `supervisor check` on it.

const MINIMAL_CONFIG: &str = "# minimal config added by tests/cli/readme_examples.rs\n\
                              [provider]\nname = \"shell\"\n";

fn minimal_test(tags: &[String]) -> String {
    let mut text = String::from("# minimal test added by tests/cli/readme_examples.rs\n");
    if !tags.is_empty() {
        let quoted: Vec<String> = tags.iter().map(|t| format!("{t:?}")).collect();
        text.push_str(&format!("tags = [{}]\n", quoted.join(", ")));
    }
    text.push_str("\n[[steps]]\ninstruction = \"Check that the example works.\"\n");
    text
}

const INCLUDED_TEST: &str = "# included file added by tests/cli/readme_examples.rs\n\
                             include_only = true\n\n[[steps]]\ninstruction = \"An included step.\"\n";

#[derive(Debug, Clone)]
struct TestFile {
    /// Relative to the project root (the config's folder); None: made up.
    path: Option<String>,
    text: String,
    /// `check` must print it as a root test (the example was really checked).
    must_be_root: bool,
    /// The document line of its opening fence, to translate check's `file:line`s.
    readme_line: Option<usize>,
}

#[derive(Debug, Clone, Default)]
struct Example {
    /// What to say on failure ("README.md:37 (toml block)").
    what: String,
    /// The document the example's blocks are in (`README.md`, `docs/config.md`).
    doc: String,
    /// Config path (relative to the temp project) and text; None: a minimal shell config.
    config: Option<(String, String)>,
    /// The document line of the config's opening fence.
    config_readme_line: Option<usize>,
    global: Option<String>,
    tests: Vec<TestFile>,
    /// `check`'s arguments; None: `--config <config path>`.
    args: Option<Vec<String>>,
}

/// Builds the project and runs `check`; Ok(stdout), or Err(why, with check's output).
fn check_example(ex: &Example) -> Result<String, String> {
    let project = Project::new();
    let root = project.root().to_path_buf();
    let (config_rel, config_text) = ex
        .config
        .clone()
        .unwrap_or_else(|| ("bugatti.config.toml".into(), MINIMAL_CONFIG.into()));
    project.write(&config_rel, &config_text);
    let base = Path::new(&config_rel)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut env: Vec<(String, String)> = Vec::new();
    let mut test_globs: Vec<String> = Vec::new();
    let mut configs = vec![config_text.clone()];
    if let Some(global) = &ex.global {
        project.write(".no-global-config/config.toml", global);
        configs.push(global.clone());
    }
    for text in &configs {
        let Ok(table) = text.parse::<toml::Table>() else {
            continue; // check will say why
        };
        env.extend(secret_vars(&table));
        for dir in cwds(&table) {
            std::fs::create_dir_all(root.join(&base).join(dir)).expect("mkdir cwd");
        }
        if let Some(globs) = table
            .get("supervisor")
            .and_then(|s| s.get("tests"))
            .and_then(|t| t.as_array())
        {
            test_globs.extend(globs.iter().filter_map(|g| g.as_str()).map(String::from));
        }
    }
    // A path discovery finds (the first `[supervisor] tests` glob, else the root).
    let discoverable = |stem: &str| match test_globs.first() {
        Some(glob) => glob_instance(glob, stem),
        None => format!("{stem}.test.toml"),
    };
    let made_up = |i: usize| match i {
        0 => discoverable("example"),
        _ => discoverable(&format!("example{}", i + 1)),
    };
    let mut tests = ex.tests.clone();
    if tests.is_empty() {
        tests.push(TestFile {
            path: None,
            text: minimal_test(&[]),
            must_be_root: true,
            readme_line: None,
        });
    }
    let tests: Vec<(PathBuf, TestFile)> = tests
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let rel = t.path.clone().unwrap_or_else(|| made_up(i));
            (PathBuf::from(rel), t)
        })
        .collect();
    let written: BTreeSet<PathBuf> = tests.iter().map(|(p, _)| base.join(p)).collect();
    for (rel, t) in &tests {
        project.write(&base.join(rel).to_string_lossy(), &t.text);
    }
    // What the tests refer to: included files, assets, command cwds of their overrides.
    for (rel, t) in &tests {
        let dir = base
            .join(rel)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let Ok(table) = t.text.parse::<toml::Table>() else {
            continue;
        };
        let steps = table.get("steps").and_then(|s| s.as_array());
        for step in steps.into_iter().flatten() {
            let included = match (step.get("include_path"), step.get("include_glob")) {
                (Some(p), _) => p.as_str().map(String::from),
                (_, Some(g)) => g.as_str().map(|g| glob_instance(g, "included")),
                _ => None,
            };
            if let Some(inc) = included {
                let path = dir.join(inc);
                if !written.contains(&path) && !root.join(&path).exists() {
                    project.write(&path.to_string_lossy(), INCLUDED_TEST);
                }
            }
        }
        let stem = rel
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".test.toml"))
            .unwrap_or("example");
        for asset in asset_names(&t.text) {
            let path = dir.join(stem).join(&asset);
            if !root.join(&path).exists() {
                project.write(&path.to_string_lossy(), "example asset\n");
            }
        }
        if let Some(overrides) = table.get("overrides").and_then(|o| o.as_table()) {
            for dir in cwds(overrides) {
                std::fs::create_dir_all(root.join(&base).join(dir)).expect("mkdir cwd");
            }
        }
        if table.get("include_only").and_then(|v| v.as_bool()) == Some(true) {
            // Only ever included: a root test including it gets it checked.
            let wrapper = base.join(discoverable(&format!("wrapper_of_{stem}")));
            let target = pathdiff(&base.join(rel), wrapper.parent().unwrap_or(Path::new("")));
            project.write(
                &wrapper.to_string_lossy(),
                &format!("[[steps]]\ninclude_path = {target:?}\n"),
            );
        }
    }

    let args = ex
        .args
        .clone()
        .unwrap_or_else(|| vec!["--config".into(), config_rel.clone()]);
    let mut cmd = project.supervisor();
    cmd.arg("check").args(&args);
    for (k, v) in &env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run supervisor check");
    let stdout = common::stdout(&out);
    let mut problems = Vec::new();
    if !out.status.success() {
        problems.push(format!("`supervisor check` exited {}", out.status));
    }
    for (rel, t) in &tests {
        let shown = format!("== {} ", rel.display());
        if t.must_be_root
            && out.status.success()
            && !stdout.contains(&shown)
            && !t.text.contains("include_only = true")
        {
            problems.push(format!(
                "`check` passed but did not check {} as a root test (do the config's \
                 `[supervisor] tests` globs match it?)",
                rel.display()
            ));
        }
    }
    if problems.is_empty() {
        return Ok(stdout);
    }
    let files: Vec<String> = walkdir::WalkDir::new(&root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            e.path()
                .strip_prefix(&root)
                .unwrap_or(e.path())
                .display()
                .to_string()
        })
        .collect();
    // `--> tests/a.test.toml:5:1` → `--> tests/a.test.toml:5:1 (README.md:57)`.
    let doc = &ex.doc;
    let mut origins: Vec<(String, usize)> = tests
        .iter()
        .filter_map(|(rel, t)| Some((base.join(rel).display().to_string(), t.readme_line?)))
        .collect();
    if let Some(line) = ex.config_readme_line {
        origins.push((config_rel.clone(), line));
    }
    let mut stderr = common::stderr(&out);
    for (path, fence) in origins {
        let re = regex::Regex::new(&format!(
            r"(?m)^(\s*--> {}:(\d+):\d+)$",
            regex::escape(&path)
        ))
        .expect("regex");
        stderr = re
            .replace_all(&stderr, |c: &regex::Captures| {
                let n: usize = c[2].parse().unwrap_or(0);
                format!("{} ({doc}:{})", &c[1], fence + n)
            })
            .into_owned();
    }
    Err(format!(
        "{}: {}\n  ran: supervisor check {}\n  project files: {}\n--- stdout ---\n{}--- stderr ---\n{}",
        ex.what,
        problems.join("; "),
        args.join(" "),
        files.join(", "),
        stdout,
        stderr,
    ))
}

/// `[secrets] NAME = { from_env = "VAR" }`: VAR must be set for the check.
fn secret_vars(config: &toml::Table) -> Vec<(String, String)> {
    let Some(secrets) = config.get("secrets").and_then(|s| s.as_table()) else {
        return Vec::new();
    };
    secrets
        .values()
        .filter_map(|v| v.get("from_env")?.as_str())
        .map(|var| (var.to_string(), format!("readme-example-value-of-{var}")))
        .collect()
}

/// Literal `cwd`s of `[commands.*]` and `[provider]` (checked to exist at load time).
fn cwds(config: &toml::Table) -> Vec<String> {
    let mut tables: Vec<&toml::Value> = Vec::new();
    if let Some(p) = config.get("provider") {
        tables.push(p);
    }
    if let Some(c) = config.get("commands").and_then(|c| c.as_table()) {
        tables.extend(c.values());
    }
    tables
        .into_iter()
        .filter_map(|t| t.get("cwd")?.as_str())
        .filter(|cwd| !cwd.contains("${") && !Path::new(cwd).is_absolute())
        .map(String::from)
        .collect()
}

/// `[[asset:NAME]]` and `{{path:NAME}}` in a test file.
fn asset_names(text: &str) -> BTreeSet<String> {
    let re = regex::Regex::new(r"\[\[asset:([^\]]+)\]\]|\{\{path:([^}]+)\}\}").expect("regex");
    re.captures_iter(text)
        .filter_map(|c| c.get(1).or_else(|| c.get(2)))
        .map(|m| m.as_str().to_string())
        .collect()
}

/// A path the glob matches: `tests/**/*.test.toml` → `tests/STEM.test.toml`.
fn glob_instance(glob: &str, stem: &str) -> String {
    assert!(
        !glob.contains(['[', '{']),
        "glob {glob:?}: character classes and alternatives are not supported by \
         tests/cli/readme_examples.rs; extend glob_instance"
    );
    glob.replace("**/", "")
        .replace("**", "x")
        .replace('*', stem)
        .replace('?', "x")
}

/// `target` relative to `from` (both relative to the same root, no `..` in them).
fn pathdiff(target: &Path, from: &Path) -> String {
    let t: Vec<_> = target.components().collect();
    let f: Vec<_> = from.components().collect();
    let common = t.iter().zip(&f).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c);
    }
    out.to_string_lossy().into_owned()
}

// ---------------------------------------------------------------------------------------------
// Toml blocks of a document → examples.

fn readme_examples(markdown: &str) -> Result<Vec<Example>, Vec<String>> {
    doc_examples("README.md", markdown)
}

fn doc_examples(doc: &str, markdown: &str) -> Result<Vec<Example>, Vec<String>> {
    let blocks: Vec<Block> = fenced_blocks_of(doc, markdown)
        .into_iter()
        .filter(|b| b.lang == "toml")
        .collect();
    let mut errors = Vec::new();
    let mut sections: Vec<(String, Vec<(Block, Role)>)> = Vec::new();
    for b in blocks {
        match role(&b.text) {
            Err(e) => errors.push(format!("{doc}:{}: the toml block {e}", b.line)),
            Ok(r) => match sections.last_mut() {
                Some((s, v)) if *s == b.section => v.push((b, r)),
                _ => sections.push((b.section.clone(), vec![(b, r)])),
            },
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut examples = Vec::new();
    for (section, blocks) in sections {
        let tests: Vec<&(Block, Role)> = blocks
            .iter()
            .filter(|(_, r)| matches!(r, Role::Test(_)))
            .collect();
        let global: Option<&Block> = blocks
            .iter()
            .find(|(_, r)| *r == Role::GlobalConfig)
            .map(|(b, _)| b);
        let configs: Vec<(&Block, &String)> = blocks
            .iter()
            .filter_map(|(b, r)| match r {
                Role::Config(p) => Some((b, p)),
                _ => None,
            })
            .collect();
        let config_choices: Vec<Option<(&Block, &String)>> = if configs.is_empty() {
            vec![None]
        } else {
            configs.into_iter().map(Some).collect()
        };
        for config in config_choices {
            let mut lines: Vec<String> = Vec::new();
            let mut describe = |b: &Block, what: String| {
                lines.push(format!("{doc}:{} ({what})", b.line));
            };
            if let Some((b, p)) = config {
                describe(b, format!("config {p}"));
            }
            if let Some(b) = global {
                describe(b, "global config".into());
            }
            for (b, r) in &tests {
                let Role::Test(p) = r else { unreachable!() };
                describe(
                    b,
                    format!("test file {}", p.as_deref().unwrap_or("without a path")),
                );
            }
            examples.push(Example {
                what: format!("section \"{section}\": {}", lines.join(" + ")),
                doc: doc.to_string(),
                config: config.map(|(b, p)| (p.clone(), b.text.clone())),
                config_readme_line: config.map(|(b, _)| b.line),
                global: global.map(|b| b.text.clone()),
                tests: tests
                    .iter()
                    .map(|(b, r)| TestFile {
                        path: match r {
                            Role::Test(p) => p.clone(),
                            _ => None,
                        },
                        text: b.text.clone(),
                        must_be_root: true,
                        readme_line: Some(b.line),
                    })
                    .collect(),
                args: None,
            });
        }
    }
    Ok(examples)
}

#[test]
fn every_readme_toml_block_passes_check() {
    let mut examples = Vec::new();
    for (doc, markdown) in documents() {
        let fences = markdown
            .lines()
            .filter(|l| l.trim_start().starts_with("```toml"))
            .count();
        let found = fenced_blocks_of(&doc, &markdown)
            .iter()
            .filter(|b| b.lang == "toml")
            .count();
        assert_eq!(fences, found, "every ```toml fence of {doc} is read");
        if doc == "README.md" {
            assert!(found > 0, "README.md has toml examples");
        }
        examples
            .extend(doc_examples(&doc, &markdown).unwrap_or_else(|e| panic!("{}", e.join("\n"))));
    }
    assert!(
        examples.iter().any(|ex| ex.doc.starts_with("docs/")),
        "docs/ has toml examples"
    );
    let failures: Vec<String> = examples
        .iter()
        .filter_map(|ex| {
            eprintln!("checking {}", ex.what);
            check_example(ex).err()
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} documented example(s) fail `supervisor check`:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Shell blocks: `supervisor …` commands.

#[derive(Debug, Clone, PartialEq, Eq)]
struct Invocation {
    /// The document it is in.
    file: String,
    line: usize,
    /// Arguments after `supervisor`.
    args: Vec<String>,
    /// `cargo run … --bin supervisor -- …`: meant to be run in this repository.
    in_repo: bool,
    /// A synopsis (`[--config FILE]`, `[PATH ...]`), not a command to run.
    synopsis: bool,
}

/// The `supervisor` commands of a block: `supervisor …` lines, also after `VAR=x`, `cd … &&`,
/// and `cargo run … --bin supervisor -- …`; `\` continues a line, `#` starts a comment.
fn invocations(block: &Block) -> Vec<Invocation> {
    let mut out = Vec::new();
    let mut logical = String::new();
    let mut start = 0;
    for (i, raw) in block.text.lines().enumerate() {
        if logical.is_empty() {
            start = block.line + 1 + i;
        }
        let line = strip_comment(raw);
        if let Some(cont) = line.trim_end().strip_suffix('\\') {
            logical.push_str(cont);
            logical.push(' ');
            continue;
        }
        logical.push_str(line);
        let text = std::mem::take(&mut logical);
        for segment in text.split("&&").flat_map(|s| s.split(['|', ';'])) {
            let synopsis = segment.contains('[') || segment.contains("...");
            let words = if synopsis {
                segment.split_whitespace().map(String::from).collect()
            } else {
                match shell_words::split(segment) {
                    Ok(w) => w,
                    Err(_) => continue,
                }
            };
            let words: Vec<String> = words
                .into_iter()
                .skip_while(|w| {
                    w.split_once('=').is_some_and(|(k, _)| {
                        !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    })
                })
                .collect();
            let Some(first) = words.first() else { continue };
            if first == "supervisor" {
                out.push(Invocation {
                    file: block.file.clone(),
                    line: start,
                    args: words[1..].to_vec(),
                    in_repo: false,
                    synopsis,
                });
            } else if first == "cargo"
                && words.iter().any(|w| w == "run")
                && words
                    .windows(2)
                    .any(|w| w[0] == "--bin" && w[1] == "supervisor")
            {
                if let Some(dash) = words.iter().position(|w| w == "--") {
                    out.push(Invocation {
                        file: block.file.clone(),
                        line: start,
                        args: words[dash + 1..].to_vec(),
                        in_repo: true,
                        synopsis,
                    });
                }
            }
        }
    }
    out
}

fn strip_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'#' && (i == 0 || bytes[i - 1].is_ascii_whitespace()) {
            return &line[..i];
        }
    }
    line
}

/// Checks one documented command: `start` / `test` / `check` run as `check` with the same flags
/// (in this repository for `cargo run`, else in a temp project holding what the flags name),
/// `init` runs and its files pass `check`, anything else is parsed with `--help`; a synopsis
/// must name a real subcommand and flags its `--help` lists.
fn check_invocation(inv: &Invocation) -> Result<(), String> {
    let what = format!(
        "{}:{}: `supervisor {}`",
        inv.file,
        inv.line,
        inv.args.join(" ")
    );
    let Some(sub) = inv.args.first().map(String::as_str) else {
        return Err(format!("{what}: no subcommand"));
    };
    let help = |args: &[String]| -> Result<String, String> {
        let out = Project::new()
            .supervisor()
            .args(args)
            .arg("--help")
            .output()
            .expect("run supervisor");
        if out.status.success() {
            Ok(common::stdout(&out))
        } else {
            Err(format!(
                "{what}: `supervisor {} --help` exited {}\n{}{}",
                args.join(" "),
                out.status,
                common::stdout(&out),
                common::stderr(&out)
            ))
        }
    };
    if inv.synopsis {
        let text = help(&inv.args[..1])?;
        let flag = regex::Regex::new(r"(?:^|[\s\[])(--?[a-zA-Z][a-zA-Z-]*)").expect("regex");
        let missing: Vec<String> = inv.args[1..]
            .iter()
            .filter_map(|a| flag.captures(a).map(|c| c[1].to_string()))
            .filter(|f| !help_lists(&text, f))
            .collect();
        return if missing.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{what}: `supervisor {sub} --help` does not list {}\n{text}",
                missing.join(", ")
            ))
        };
    }
    match sub {
        "start" | "test" | "check" if inv.in_repo => {
            let out = Project::new()
                .supervisor()
                .current_dir(repo())
                .arg("check")
                .args(&inv.args[1..])
                .output()
                .expect("run supervisor");
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "{what}, checked in the repository as `supervisor check {}`, exited {}\n--- stdout ---\n{}--- stderr ---\n{}",
                    inv.args[1..].join(" "),
                    out.status,
                    common::stdout(&out),
                    common::stderr(&out)
                ))
            }
        }
        "start" | "test" | "check" => {
            check_example(&project_for(&inv.args[1..], &what)).map(|_| ())
        }
        "init" => {
            let project = Project::new();
            let out = project.supervisor().arg("init").output().expect("run init");
            if !out.status.success() {
                return Err(format!(
                    "{what}: exited {}\n{}",
                    out.status,
                    common::stderr(&out)
                ));
            }
            let out = project.supervisor().arg("check").output().expect("check");
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "{what}: the files `init` wrote fail `check` ({})\n{}{}",
                    out.status,
                    common::stdout(&out),
                    common::stderr(&out)
                ))
            }
        }
        _ => help(&inv.args).map(|_| ()),
    }
}

/// Whether `--help` output lists a flag (as a word, not a prefix of a longer one; clap shows an
/// optional value as `--flag[=<V>]`).
fn help_lists(help: &str, flag: &str) -> bool {
    let re = regex::Regex::new(&format!(
        r"(?:^|[\s,]){}(?:$|[\s,=\[])",
        regex::escape(flag)
    ))
    .expect("regex");
    re.is_match(help)
}

/// A temp project for `supervisor check ARGS`: the config `--config` names (minimal, with the
/// commands `--skip-cmd` / `--skip-readiness` name), the tests the PATHs name, each carrying the
/// `--tag`s.
fn project_for(args: &[String], what: &str) -> Example {
    let mut config_path = "bugatti.config.toml".to_string();
    let mut commands = BTreeSet::new();
    let mut tags = Vec::new();
    let mut paths = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let takes_value = [
            "--config",
            "-j",
            "--jobs",
            "--skip-cmd",
            "--skip-readiness",
            "--provider",
            "--step-timeout",
            "--timeout",
            "--retries",
            "--shard",
            "--from-checkpoint",
            "--tag",
            "--junit",
            "--json",
            "-g",
            "--grep",
            "--grep-invert",
            "-E",
            "--filter",
            "--no-tests",
            "--reporter",
        ]
        .contains(&flag);
        let value = if takes_value && inline.is_none() {
            it.next().cloned()
        } else {
            inline
        };
        match (flag, value) {
            ("--config", Some(v)) => config_path = v,
            ("--skip-cmd" | "--skip-readiness", Some(v)) => {
                commands.insert(v);
            }
            ("--tag", Some(v)) => tags.push(v),
            (f, None) if !f.starts_with('-') => paths.push(f.to_string()),
            _ => {}
        }
    }
    let mut config = MINIMAL_CONFIG.to_string();
    for c in &commands {
        config.push_str(&format!(
            "\n[commands.{c}]\nkind = \"short_lived\"\ncmd = \"true\"\n"
        ));
    }
    if paths.is_empty() {
        paths.push("example.test.toml".into());
    }
    let tests = paths
        .iter()
        .map(|p| TestFile {
            path: Some(if p.ends_with(".test.toml") {
                p.clone()
            } else if p.ends_with('/') {
                format!("{p}example.test.toml")
            } else {
                format!("{p}.test.toml")
            }),
            text: minimal_test(&tags),
            must_be_root: false,
            readme_line: None,
        })
        .collect();
    Example {
        what: what.to_string(),
        doc: String::new(),
        config: Some((config_path, config)),
        config_readme_line: None,
        global: None,
        tests,
        args: Some(args.to_vec()),
    }
}

#[test]
fn every_supervisor_command_in_readme_blocks_is_valid() {
    let invs: Vec<Invocation> = documents()
        .iter()
        .flat_map(|(doc, markdown)| fenced_blocks_of(doc, markdown))
        .filter(|b| ["sh", "bash", "console", "shell", ""].contains(&b.lang.as_str()))
        .flat_map(|b| invocations(&b))
        .collect();
    assert!(
        invs.iter().any(|i| !i.synopsis && i.file == "README.md"),
        "README.md shows supervisor commands: {invs:?}"
    );
    assert!(
        invs.iter()
            .any(|i| i.synopsis && i.file.starts_with("docs/")),
        "docs/ shows the commands' synopsis: {invs:?}"
    );
    let failures: Vec<String> = invs
        .iter()
        .filter_map(|i| {
            eprintln!(
                "checking {}:{}: supervisor {}",
                i.file,
                i.line,
                i.args.join(" ")
            );
            check_invocation(i).err()
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} documented command(s) fail:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// "`supervisor start --help` lists every option: `-j/--jobs`, …" — each is in the help.
#[test]
fn options_the_readme_says_help_lists_are_in_help() {
    let markdown = documents()
        .iter()
        .map(|(_, text)| text.replace('\n', " "))
        .collect::<Vec<_>>()
        .join(" ");
    let claim =
        regex::Regex::new(r"`supervisor (\w+) --help` lists every option: (.*?)\.\s").expect("re");
    let span = regex::Regex::new(r"`([^`]+)`").expect("re");
    let mut seen = 0;
    for c in claim.captures_iter(&markdown) {
        let out = Project::new()
            .supervisor()
            .args([&c[1], "--help"])
            .output()
            .expect("run supervisor");
        assert!(out.status.success(), "supervisor {} --help", &c[1]);
        let help = common::stdout(&out);
        for s in span.captures_iter(&c[2]) {
            let first = s[1].split_whitespace().next().unwrap_or("");
            for flag in first.split('/').filter(|f| f.starts_with('-')) {
                seen += 1;
                assert!(
                    help_lists(&help, flag),
                    "the docs say `supervisor {} --help` lists {flag}; it does not:\n{help}",
                    &c[1]
                );
            }
        }
    }
    assert!(seen > 0, "the docs' list of `start` options was found");
}

// ---------------------------------------------------------------------------------------------
// Links: every relative link of a document names a file that exists, and a heading of it.

/// GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces → `-`.
fn heading_anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a markdown text's headings (outside code blocks).
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut fence: Option<char> = None;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if let Some(c) = trimmed.chars().next().filter(|c| matches!(c, '`' | '~')) {
            if trimmed.starts_with(&String::from(c).repeat(3)) {
                fence = match fence {
                    Some(open) if open == c => None,
                    None => Some(c),
                    other => other,
                };
                continue;
            }
        }
        if fence.is_none() && trimmed.starts_with('#') {
            let text = trimmed.trim_start_matches('#');
            if text.starts_with(' ') {
                out.insert(heading_anchor(text));
            }
        }
    }
    out
}

/// `(line, target)` of every `[text](target)` link outside code blocks and code spans.
fn links(markdown: &str) -> Vec<(usize, String)> {
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").expect("regex");
    let code = regex::Regex::new(r"`[^`]*`").expect("regex");
    let mut out = Vec::new();
    let mut in_fence = false;
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let prose = code.replace_all(line, "");
        for c in link.captures_iter(&prose) {
            out.push((i + 1, c[1].to_string()));
        }
    }
    out
}

/// Why a relative link of `doc` (a path relative to the repository) does not resolve, if it
/// does not.
fn broken_link(
    doc: &str,
    target: &str,
    text_of: &dyn Fn(&Path) -> Option<String>,
) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let here = Path::new(doc).parent().unwrap_or(Path::new(""));
    let file = if path.is_empty() {
        PathBuf::from(doc)
    } else {
        here.join(path)
    };
    // Resolve `..` lexically: the link must stay in the repository.
    let mut resolved = PathBuf::new();
    for part in file.components() {
        match part {
            std::path::Component::ParentDir => {
                if !resolved.pop() {
                    return Some(format!("{target} leaves the repository"));
                }
            }
            std::path::Component::CurDir => {}
            other => resolved.push(other),
        }
    }
    let Some(text) = text_of(&resolved) else {
        return Some(format!("{target}: {} does not exist", resolved.display()));
    };
    match anchor {
        Some(a)
            if resolved.extension().is_some_and(|x| x == "md") && !anchors(&text).contains(a) =>
        {
            Some(format!(
                "{target}: {} has no heading with the anchor #{a} (it has: {})",
                resolved.display(),
                anchors(&text).into_iter().collect::<Vec<_>>().join(", ")
            ))
        }
        _ => None,
    }
}

/// What a repository path holds: a file's text ("" for a directory or a binary file), or None.
fn repo_text(path: &Path) -> Option<String> {
    let full = repo().join(path);
    if full.is_dir() {
        return Some(String::new());
    }
    full.is_file()
        .then(|| std::fs::read_to_string(&full).unwrap_or_default())
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let mut seen = 0;
    let mut failures = Vec::new();
    for (doc, markdown) in documents() {
        for (line, target) in links(&markdown) {
            seen += 1;
            if let Some(why) = broken_link(&doc, &target, &repo_text) {
                failures.push(format!("{doc}:{line}: {why}"));
            }
        }
    }
    assert!(seen > 0, "the docs link to each other");
    assert!(
        failures.is_empty(),
        "{} broken link(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn links_and_anchors_are_read_as_github_renders_them() {
    assert_eq!(
        heading_anchor(" Project config (`bugatti.config.toml`)"),
        "project-config-bugatticonfigtoml"
    );
    assert_eq!(
        heading_anchor("Supervision: the watchdog, restarts and budgets"),
        "supervision-the-watchdog-restarts-and-budgets"
    );
    let md = "# Top\n\nSee [a](b.md#two), `[not](a-link.md)`, [web](https://x.org/y).\n\n\
              ```sh\necho [x](y.md)\n```\n\n## Two\n";
    assert_eq!(
        links(md),
        vec![
            (3, "b.md#two".to_string()),
            (3, "https://x.org/y".to_string())
        ]
    );
    assert_eq!(
        anchors(md),
        BTreeSet::from(["top".to_string(), "two".to_string()])
    );
    let files = |p: &Path| match p.to_str() {
        Some("docs/b.md") => Some(md.to_string()),
        Some("README.md") => Some(String::new()),
        _ => None,
    };
    assert_eq!(broken_link("docs/a.md", "b.md#two", &files), None);
    assert_eq!(broken_link("docs/a.md", "../README.md", &files), None);
    assert_eq!(broken_link("docs/a.md", "https://x.org/y", &files), None);
    let missing = broken_link("docs/a.md", "c.md", &files).expect("a missing file");
    assert!(missing.contains("docs/c.md does not exist"), "{missing}");
    let bad_anchor = broken_link("docs/a.md", "b.md#three", &files).expect("a missing anchor");
    assert!(
        bad_anchor.contains("no heading with the anchor #three"),
        "{bad_anchor}"
    );
    assert!(broken_link("README.md", "../../etc/passwd", &files).is_some());
}

// ---------------------------------------------------------------------------------------------
// config/: every file.

#[test]
fn every_file_in_config_passes_check() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("config"))
        .expect("config/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "config/ holds example configs");
    let failures: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let name = path.file_name()?.to_string_lossy().into_owned();
            let text = std::fs::read_to_string(path).expect("read config");
            eprintln!("checking config/{name}");
            check_example(&Example {
                what: format!("config/{name}"),
                config: Some((name, text)),
                ..Example::default()
            })
            .err()
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} file(s) in config/ fail `supervisor check`:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

// ---------------------------------------------------------------------------------------------
// The helpers themselves: they find what they should, and a broken example fails.

#[test]
fn fenced_blocks_have_their_lines_languages_and_sections() {
    let md =
        "# Title\n\n```toml\na = 1\n```\n\n## Two\n\n````sh\nls\n```\n````\n\n```\nplain\n```\n";
    let blocks = fenced_blocks(md);
    assert_eq!(blocks.len(), 3, "{blocks:?}");
    assert_eq!(
        (
            blocks[0].line,
            blocks[0].lang.as_str(),
            blocks[0].text.as_str()
        ),
        (3, "toml", "a = 1\n")
    );
    assert_eq!(blocks[0].section, "Title");
    assert_eq!(
        (
            blocks[1].line,
            blocks[1].lang.as_str(),
            blocks[1].text.as_str()
        ),
        (9, "sh", "ls\n```\n")
    );
    assert_eq!(blocks[1].section, "Two");
    assert_eq!(
        (blocks[2].lang.as_str(), blocks[2].text.as_str()),
        ("", "plain\n")
    );
}

#[test]
fn roles_come_from_the_leading_comment_else_the_tables() {
    assert_eq!(
        role("# tests/a.test.toml\nname = \"A\"\n"),
        Ok(Role::Test(Some("tests/a.test.toml".into())))
    );
    assert_eq!(
        role("# bugatti.config.toml — at the root\n[provider]\n"),
        Ok(Role::Config("bugatti.config.toml".into()))
    );
    assert_eq!(
        role("# ~/.bugatti/config.toml\n[provider]\n"),
        Ok(Role::GlobalConfig)
    );
    assert_eq!(
        role("[[steps]]\ninstruction = \"x\"\n"),
        Ok(Role::Test(None))
    );
    assert_eq!(
        role("[overrides.provider]\nname = \"shell\"\n[[steps]]\n"),
        Ok(Role::Test(None))
    );
    assert_eq!(
        role("[commands.server]\nkind = \"long_lived\"\n"),
        Ok(Role::Config("bugatti.config.toml".into()))
    );
    assert!(role("name = \"x\"\n").is_err());
    assert!(role("[provider]\n[[steps]]\n").is_err());
}

#[test]
fn invocations_are_found_in_shell_lines() {
    let block = Block {
        file: "README.md".into(),
        line: 10,
        lang: "sh".into(),
        text: "cargo test\n\
               cargo run --release --bin supervisor -- start --config a.toml\n\
               supervisor start --tag nightly \\\n  -j 8   # comment\n\
               0 2 * * * cd /srv && FOO=1 supervisor check -q\n\
               supervisor check [--config FILE] [PATH ...]\n\
               cargo +nightly fuzz run config -- -max_total_time=300\n"
            .into(),
        section: String::new(),
    };
    let invs = invocations(&block);
    let args: Vec<(usize, String, bool, bool)> = invs
        .iter()
        .map(|i| (i.line, i.args.join(" "), i.in_repo, i.synopsis))
        .collect();
    assert_eq!(
        args,
        vec![
            (12, "start --config a.toml".into(), true, false),
            (13, "start --tag nightly -j 8".into(), false, false),
            (15, "check -q".into(), false, false),
            (16, "check [--config FILE] [PATH ...]".into(), false, true),
        ]
    );
}

#[test]
fn a_working_example_passes_with_what_it_refers_to_created() {
    let md = "## Ex\n\n```toml\n# bugatti.config.toml\n[supervisor]\ntests = [\"tests/**/*.test.toml\"]\n\n\
              [secrets]\nTOKEN = { from_env = \"README_TEST_TOKEN\" }\n\n[ports]\nAPP_PORT = \"auto\"\n\n\
              [commands.server]\nkind = \"long_lived\"\ncmd = \"python3 server.py ${APP_PORT}\"\ncwd = \"app\"\n```\n\n\
              ```toml\n# tests/a.test.toml\n[[steps]]\ninstruction = \"Open :${APP_PORT} with ${TOKEN}, upload {{path:cart.json}}\"\n\n\
              [[steps]]\ninclude_path = \"shared/login.test.toml\"\n\n[[steps]]\ninclude_glob = \"checks/*.test.toml\"\n```\n";
    let examples = readme_examples(md).expect("examples");
    assert_eq!(examples.len(), 1);
    let stdout = check_example(&examples[0]).unwrap_or_else(|e| panic!("{e}"));
    assert!(stdout.contains("== tests/a.test.toml "), "{stdout}");
    assert!(stdout.contains("plan (3 steps)"), "{stdout}");
}

#[test]
fn an_include_only_example_is_checked_through_a_root_test_including_it() {
    let md = "```toml\n[supervisor]\ntests = [\"tests/**/*.test.toml\"]\n```\n\n\
              ```toml\n# tests/shared/login.test.toml\ninclude_only = true\n\n\
              [[steps]]\ninstruction = \"Log in\"\n```\n";
    let examples = readme_examples(md).expect("examples");
    let stdout = check_example(&examples[0]).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        stdout.contains("tests/shared/login.test.toml#1 (via tests/wrapper_of_login.test.toml)"),
        "{stdout}"
    );
    let broken = md.replace("instruction", "instrution");
    let err = check_example(&readme_examples(&broken).expect("examples")[0]).unwrap_err();
    assert!(err.contains("unknown field `instrution`"), "{err}");
}

/// The test can fail: the same path rejects a broken block, naming the README line.
#[test]
fn a_broken_block_fails_and_names_its_line() {
    // (blocks, what the failure says, where check's `file:line` points in the README)
    for (broken, expect, at) in [
        // An unknown field in a test file.
        (
            "```toml\n# tests/a.test.toml\n[[steps]]\ninstrution = \"typo\"\n```\n",
            "unknown field `instrution`",
            Some("tests/a.test.toml:3:1 (README.md:8)"),
        ),
        // An unknown field in a config.
        (
            "```toml\n[provider]\nnmae = \"shell\"\n```\n",
            "unknown field `nmae`",
            Some("bugatti.config.toml:2:1 (README.md:7)"),
        ),
        // A name nothing defines (the README's first example once did this).
        (
            "```toml\n[[steps]]\ninstruction = \"Open ${BASE_URL}\"\n```\n",
            "unknown variable `${BASE_URL}`",
            Some("example.test.toml:1:1 (README.md:6)"),
        ),
        // A config whose `[supervisor] tests` globs match no test.
        (
            "```toml\n[supervisor]\ntests = [\"e2e/*.test.toml\"]\n```\n\n\
             ```toml\n# tests/a.test.toml\n[[steps]]\ninstruction = \"x\"\n```\n",
            "matches no file",
            Some("bugatti.config.toml:2:9 (README.md:7)"),
        ),
        // A test shown beside a config whose globs skip it: check passes, but not on it.
        (
            "```toml\n[supervisor]\ntests = [\"tests/*.test.toml\"]\n```\n\n\
             ```toml\n# tests/a.test.toml\n[[steps]]\ninstruction = \"x\"\n```\n\n\
             ```toml\n# other/b.test.toml\n[[steps]]\ninstruction = \"x\"\n```\n",
            "did not check other/b.test.toml as a root test",
            None,
        ),
    ] {
        let md = format!("# Section\n\ntext\n\n{broken}");
        let examples = readme_examples(&md).expect("examples");
        let err = examples
            .iter()
            .find_map(|ex| check_example(ex).err())
            .unwrap_or_else(|| panic!("a broken block passed:\n{broken}"));
        assert!(err.contains("README.md:5 "), "{err}");
        assert!(err.contains(expect), "{err}");
        if let Some(at) = at {
            assert!(err.contains(&format!("--> {at}")), "{err}");
        }
    }
    // A block that is neither a test nor a config is an error too.
    assert!(readme_examples("```toml\na = 1\n```\n").is_err());
    // And so is a documented command with a flag that does not exist.
    let bad = Invocation {
        file: "README.md".into(),
        line: 1,
        args: vec!["start".into(), "--no-such-flag".into()],
        in_repo: false,
        synopsis: false,
    };
    assert!(check_invocation(&bad).is_err());
    let bad_synopsis = Invocation {
        synopsis: true,
        args: vec!["check".into(), "[--no-such-flag]".into()],
        ..bad
    };
    assert!(check_invocation(&bad_synopsis).is_err());
}
