//! Claude Code's read-only file tools — `Read`, `Grep`, `Glob` — as replayable checks.
//!
//! A step in which the agent only *looked* at files is as replayable as one in which it ran
//! `cat` or `grep` through Bash, but the look goes through Claude Code's own tools, whose answers
//! are shaped for the model (a line-number gutter, `Found 2 files`, paths made relative). So a
//! check keeps what the tool was asked and the part of its answer that says something about the
//! project, in a form that can be produced again without the model:
//!
//! - `Read`: the file's lines in the range the agent read, as text, without the gutter;
//! - `Grep`: the set of matching files, `path:line:text` lines or `path:count` entries
//!   (ripgrep's defaults: hidden files and `.gitignore`d ones are not searched);
//! - `Glob`: the set of matching paths.
//!
//! Sets, because the CLI orders its answers by modification time. A call whose answer cannot be
//! made again faithfully (context lines, multiline patterns, a `head_limit` that cut the answer,
//! a truncated glob, a tool error) is not a check: the step is then not recorded.

use regex::RegexBuilder;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Claude Code's default `Read` limit (lines), when the agent gives none.
pub const DEFAULT_READ_LIMIT: usize = 2000;

/// How a `Grep` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrepMode {
    /// The paths of the files that match (the tool's default).
    FilesWithMatches,
    /// The matching lines, `path:line:text` (`path:text` without line numbers).
    Content,
    /// `path:count` per matching file.
    Count,
}

/// One read-only file tool call, as a check that can be run again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "tool")]
pub enum FileCheck {
    /// `Read`: lines `offset ..= offset + limit - 1` (1-based) of `file`.
    Read {
        /// The path as the agent gave it (absolute, as the tool requires).
        file: String,
        /// The first line read (1-based).
        offset: usize,
        /// How many lines at most.
        limit: usize,
        /// The lines as the agent saw them, without the gutter.
        seen: String,
    },
    /// `Grep`: a regex over the files under `path`.
    Grep {
        /// The regex (Rust/ripgrep syntax).
        pattern: String,
        /// Where to search (relative to the agent's directory, or absolute); `None`: there.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// A glob the searched files must match.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        glob: Option<String>,
        /// `-i`.
        #[serde(default)]
        ignore_case: bool,
        /// How the answer is shaped.
        mode: GrepMode,
        /// `-n` (content mode).
        #[serde(default)]
        line_numbers: bool,
        /// The answer's entries, sorted.
        seen: Vec<String>,
    },
    /// `Glob`: the paths matching a glob under `path`.
    Glob {
        /// The glob.
        pattern: String,
        /// Where to look; `None`: the agent's directory.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// The paths, sorted.
        seen: Vec<String>,
    },
}

/// Why a file tool call is not a check (the step is then not recorded).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{tool}: {reason}")]
pub struct NotReplayable {
    /// The tool.
    pub tool: String,
    /// Why.
    pub reason: String,
}

/// The tools this module makes checks of.
pub fn is_file_tool(tool: &str) -> bool {
    matches!(tool, "Read" | "Grep" | "Glob")
}

/// A check from a Claude Code `tool_use` (`tool`, `input`) and the answer the agent got: the
/// `tool_result` text, and the stream's structured `tool_use_result` when it carries one.
/// `cwd` is the agent's working directory (the tool's paths are relative to it).
pub fn from_claude(
    tool: &str,
    input: &Value,
    answer: &str,
    structured: Option<&Value>,
    is_error: bool,
    cwd: &Path,
) -> Result<FileCheck, NotReplayable> {
    let refuse = |reason: &str| NotReplayable {
        tool: tool.to_string(),
        reason: reason.to_string(),
    };
    if is_error {
        return Err(refuse("the call failed"));
    }
    match tool {
        "Read" => read_check(input, answer, structured).ok_or_else(|| refuse("no file range")),
        "Grep" => grep_check(input, answer, structured, cwd).map_err(|r| refuse(&r)),
        "Glob" => glob_check(input, answer, structured, cwd).map_err(|r| refuse(&r)),
        _ => Err(refuse("not a read-only file tool")),
    }
}

fn read_check(input: &Value, answer: &str, structured: Option<&Value>) -> Option<FileCheck> {
    let file = input["file_path"].as_str()?.to_string();
    let offset = input["offset"].as_u64().map_or(1, |o| o.max(1) as usize);
    let limit = input["limit"]
        .as_u64()
        .map_or(DEFAULT_READ_LIMIT, |l| l as usize);
    // The structured result is the file's own text; the answer has a gutter (and, at times, a
    // reminder appended for the model).
    let seen = match structured.and_then(|s| s["file"]["content"].as_str()) {
        Some(content) => content.to_string(),
        None => strip_gutter(answer)?,
    };
    Some(FileCheck::Read {
        file,
        offset,
        limit,
        seen,
    })
}

/// `   2\tttl 30 minutes` lines → `ttl 30 minutes`; `None` when a line has no gutter.
fn strip_gutter(answer: &str) -> Option<String> {
    let body = answer
        .split("\n\n<system-reminder>")
        .next()
        .unwrap_or(answer);
    let lines: Option<Vec<&str>> = body
        .lines()
        .map(|line| {
            let (number, text) = line.split_once(['\t', '→'])?;
            number.trim().parse::<usize>().ok().map(|_| text)
        })
        .collect();
    lines.map(|l| l.join("\n"))
}

fn grep_check(
    input: &Value,
    answer: &str,
    structured: Option<&Value>,
    cwd: &Path,
) -> Result<FileCheck, String> {
    for flag in ["-A", "-B", "-C", "context", "multiline", "type", "offset"] {
        if !input[flag].is_null() && input[flag] != Value::Bool(false) {
            return Err(format!("`{flag}` is not replayed"));
        }
    }
    let pattern = input["pattern"].as_str().ok_or("no pattern")?.to_string();
    let mode = match input["output_mode"].as_str() {
        None | Some("files_with_matches") => GrepMode::FilesWithMatches,
        Some("content") => GrepMode::Content,
        Some("count") => GrepMode::Count,
        Some(other) => return Err(format!("output_mode {other}")),
    };
    let entries = match (mode, structured) {
        (GrepMode::FilesWithMatches, Some(s)) if s["filenames"].is_array() => s["filenames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        (_, Some(s)) if s["content"].is_string() => lines(s["content"].as_str().unwrap_or("")),
        _ => answer_entries(answer),
    };
    if let Some(limit) = input["head_limit"].as_u64() {
        if entries.len() as u64 >= limit {
            return Err("its answer was cut by head_limit".into());
        }
    }
    Ok(FileCheck::Grep {
        pattern,
        path: input["path"].as_str().map(str::to_string),
        glob: input["glob"].as_str().map(str::to_string),
        ignore_case: input["-i"].as_bool().unwrap_or(false),
        line_numbers: input["-n"].as_bool().unwrap_or(mode == GrepMode::Content),
        mode,
        seen: relative_set(entries, cwd),
    })
}

fn glob_check(
    input: &Value,
    answer: &str,
    structured: Option<&Value>,
    cwd: &Path,
) -> Result<FileCheck, String> {
    let pattern = input["pattern"].as_str().ok_or("no pattern")?.to_string();
    let entries = match structured {
        Some(s) if s["truncated"].as_bool() == Some(true) => {
            return Err("its answer was truncated".into())
        }
        Some(s) if s["filenames"].is_array() => s["filenames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => answer_entries(answer),
    };
    Ok(FileCheck::Glob {
        pattern,
        path: input["path"].as_str().map(str::to_string),
        seen: relative_set(entries, cwd),
    })
}

fn lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// The entries of a textual answer, without the tool's own sentences.
fn answer_entries(answer: &str) -> Vec<String> {
    answer
        .lines()
        .filter(|l| {
            !l.is_empty()
                && !l.starts_with("Found ")
                && !l.starts_with("No files found")
                && !l.starts_with("No matches found")
        })
        .map(str::to_string)
        .collect()
}

/// Entries with `cwd/` taken off their paths, sorted and unique.
fn relative_set(entries: Vec<String>, cwd: &Path) -> Vec<String> {
    let prefix = format!("{}/", cwd.display());
    let set: BTreeSet<String> = entries
        .into_iter()
        .map(|e| e.strip_prefix(&prefix).map(str::to_string).unwrap_or(e))
        .map(|e| e.strip_prefix("./").map(str::to_string).unwrap_or(e))
        .collect();
    set.into_iter().collect()
}

/// What a check's tool would answer now, in the check's own form (`seen`): the file range's
/// text for `Read`, the sorted entries (joined by newlines) for `Grep` and `Glob`.
pub fn observe(check: &FileCheck, cwd: &Path) -> Result<String, String> {
    match check {
        FileCheck::Read {
            file,
            offset,
            limit,
            ..
        } => {
            let text = std::fs::read_to_string(resolve(cwd, file))
                .map_err(|e| format!("Read {file}: {e}"))?;
            Ok(text
                .lines()
                .skip(offset.saturating_sub(1))
                .take(*limit)
                .collect::<Vec<_>>()
                .join("\n"))
        }
        FileCheck::Grep {
            pattern,
            path,
            glob,
            ignore_case,
            mode,
            line_numbers,
            ..
        } => {
            let regex = RegexBuilder::new(pattern)
                .case_insensitive(*ignore_case)
                .build()
                .map_err(|e| format!("Grep pattern {pattern}: {e}"))?;
            let filter = glob
                .as_deref()
                .map(file_glob)
                .transpose()
                .map_err(|e| format!("Grep glob: {e}"))?;
            // ripgrep names the file in each line only when it searched more than one: a
            // search of one file answers `2:due …`, not `notes.txt:2:due …`. Claude Code's
            // count answer names it all the same (`notes.txt:2`).
            let one_file = path.as_deref().is_some_and(|p| resolve(cwd, p).is_file());
            let mut entries = Vec::new();
            for file in walk(cwd, path.as_deref()) {
                let relative = relative_to(&file, cwd);
                if filter.as_ref().is_some_and(|f| !f.is_match(&relative)) {
                    continue;
                }
                let Ok(text) = std::fs::read_to_string(&file) else {
                    continue; // binary or unreadable: ripgrep skips it too
                };
                let matching: Vec<(usize, &str)> = text
                    .lines()
                    .enumerate()
                    .filter(|(_, l)| regex.is_match(l))
                    .collect();
                if matching.is_empty() {
                    continue;
                }
                let named = if one_file {
                    String::new()
                } else {
                    format!("{relative}:")
                };
                match mode {
                    GrepMode::FilesWithMatches => entries.push(relative),
                    GrepMode::Count => entries.push(format!("{relative}:{}", matching.len())),
                    GrepMode::Content => entries.extend(matching.iter().map(|(n, l)| {
                        if *line_numbers {
                            format!("{named}{}:{l}", n + 1)
                        } else {
                            format!("{named}{l}")
                        }
                    })),
                }
            }
            Ok(sorted(entries))
        }
        FileCheck::Glob { pattern, path, .. } => {
            let matcher = globset::GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("Glob {pattern}: {e}"))?
                .compile_matcher();
            let root = path
                .as_deref()
                .map_or(cwd.to_path_buf(), |p| resolve(cwd, p));
            let entries = walk(cwd, path.as_deref())
                .into_iter()
                .filter(|f| {
                    f.strip_prefix(&root)
                        .is_ok_and(|under| matcher.is_match(under))
                })
                .map(|f| relative_to(&f, cwd))
                .collect();
            Ok(sorted(entries))
        }
    }
}

impl FileCheck {
    /// The same call as `other` (same tool and arguments), whatever each saw.
    pub fn same_call(&self, other: &Self) -> bool {
        let asked = |c: &Self| {
            let mut c = c.clone();
            match &mut c {
                Self::Read { seen, .. } => seen.clear(),
                Self::Grep { seen, .. } | Self::Glob { seen, .. } => seen.clear(),
            }
            c
        };
        asked(self) == asked(other)
    }

    /// The check with each path it names (the file read, the folder searched) passed through
    /// `f`: the session's values made placeholders when recorded, filled again at replay.
    pub fn map_paths(&self, f: impl Fn(&str) -> String) -> Self {
        let mut c = self.clone();
        match &mut c {
            Self::Read { file, .. } => *file = f(file),
            Self::Grep { path, .. } | Self::Glob { path, .. } => {
                if let Some(p) = path.as_mut() {
                    *p = f(p);
                }
            }
        }
        c
    }

    /// The check with what the agent saw passed through `f` (each entry of a set).
    pub fn map_seen(&self, f: impl Fn(&str) -> String) -> Self {
        let mut c = self.clone();
        match &mut c {
            Self::Read { seen, .. } => *seen = f(seen),
            Self::Grep { seen, .. } | Self::Glob { seen, .. } => {
                for entry in seen.iter_mut() {
                    *entry = f(entry);
                }
            }
        }
        c
    }

    /// The file a `Read` read.
    pub fn read_file(&self) -> Option<&str> {
        match self {
            Self::Read { file, .. } => Some(file),
            _ => None,
        }
    }
}

/// What the agent saw, in the same form as [`observe`].
pub fn seen(check: &FileCheck) -> String {
    match check {
        FileCheck::Read { seen, .. } => seen.clone(),
        FileCheck::Grep { seen, .. } | FileCheck::Glob { seen, .. } => seen.join("\n"),
    }
}

/// The call as one line for reports: `Grep "due" (content)`, `Read app/settings.txt:2-3`.
pub fn describe(check: &FileCheck) -> String {
    match check {
        FileCheck::Read {
            file,
            offset,
            limit,
            ..
        } => format!("Read {file}:{offset}-{}", offset + limit.saturating_sub(1)),
        FileCheck::Grep {
            pattern,
            path,
            mode,
            ..
        } => format!(
            "Grep {pattern:?} in {} ({mode:?})",
            path.as_deref().unwrap_or(".")
        ),
        FileCheck::Glob { pattern, path, .. } => {
            format!("Glob {pattern:?} in {}", path.as_deref().unwrap_or("."))
        }
    }
}

fn sorted(entries: Vec<String>) -> String {
    let set: BTreeSet<String> = entries.into_iter().collect();
    set.into_iter().collect::<Vec<_>>().join("\n")
}

fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

fn relative_to(file: &Path, cwd: &Path) -> String {
    file.strip_prefix(cwd).unwrap_or(file).display().to_string()
}

/// ripgrep's glob filter: a glob without `/` matches a file's name anywhere.
fn file_glob(glob: &str) -> Result<globset::GlobMatcher, globset::Error> {
    let glob = if glob.contains('/') {
        glob.to_string()
    } else {
        format!("**/{glob}")
    };
    Ok(globset::Glob::new(&glob)?.compile_matcher())
}

/// The files under `path` (or `cwd`) as ripgrep walks them: hidden files and `.gitignore`d ones
/// left out, sorted.
fn walk(cwd: &Path, path: Option<&str>) -> Vec<PathBuf> {
    let root = path.map_or(cwd.to_path_buf(), |p| resolve(cwd, p));
    if root.is_file() {
        return vec![root];
    }
    // ripgrep's defaults, which Claude Code's tools run with: `.gitignore` counts inside a git
    // repository only.
    let mut files: Vec<PathBuf> = ignore::WalkBuilder::new(&root)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.into_path())
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stream of the real Claude Code 2.1.197 calling Grep (content, files), Glob, Read and
    /// Grep (count) over a small project (`${PROJECT}` where it lived), against a scripted API.
    const STREAM: &str = include_str!("file_tool_fixtures/claude-2.x-read-grep-glob.jsonl");

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("app")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("sub")).expect("mkdir");
        std::fs::write(
            dir.path().join("app/settings.txt"),
            "due 2026-12-31\nttl 30 minutes\nowner 1b4e28ba-2fa1-11d2-883f-0016d3cca427\n",
        )
        .expect("write");
        std::fs::write(
            dir.path().join("sub/conf.ini"),
            "port=8080\n# due date here\n",
        )
        .expect("write");
        dir
    }

    /// The checks of the recorded stream, as the project now lives in `root`.
    fn recorded(root: &Path) -> Vec<FileCheck> {
        let stream = STREAM.replace("${PROJECT}", &root.display().to_string());
        let events: Vec<Value> = stream
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        let mut checks = Vec::new();
        for (i, event) in events.iter().enumerate() {
            let Some(tool_use) = event["message"]["content"]
                .as_array()
                .and_then(|c| c.iter().find(|b| b["type"] == "tool_use"))
            else {
                continue;
            };
            let result_event = &events[i + 1];
            let result = &result_event["message"]["content"][0];
            checks.push(
                from_claude(
                    tool_use["name"].as_str().expect("name"),
                    &tool_use["input"],
                    result["content"].as_str().expect("content"),
                    result_event.get("tool_use_result"),
                    false,
                    root,
                )
                .expect("a check"),
            );
        }
        checks
    }

    #[test]
    fn every_recorded_call_of_the_real_cli_is_made_again_equal_on_an_unchanged_project() {
        let dir = project();
        let checks = recorded(dir.path());
        assert_eq!(checks.len(), 5);
        for check in &checks {
            assert_eq!(
                observe(check, dir.path()).expect("observe"),
                seen(check),
                "{}",
                describe(check)
            );
        }
        assert_eq!(
            seen(&checks[0]),
            "app/settings.txt:1:due 2026-12-31\nsub/conf.ini:2:# due date here"
        );
        assert_eq!(
            seen(&checks[3]),
            "ttl 30 minutes\nowner 1b4e28ba-2fa1-11d2-883f-0016d3cca427"
        );
    }

    #[test]
    fn a_changed_value_is_seen_where_the_agent_looked_and_only_there() {
        let dir = project();
        let checks = recorded(dir.path());
        std::fs::write(
            dir.path().join("app/settings.txt"),
            "due 2027-01-15\nttl 30 minutes\nowner 1b4e28ba-2fa1-11d2-883f-0016d3cca427\n",
        )
        .expect("write");
        let differs: Vec<bool> = checks
            .iter()
            .map(|c| observe(c, dir.path()).expect("observe") != seen(c))
            .collect();
        // Grep content sees the new date; files/count/glob answers are the same; the Read of
        // lines 2-3 did not cover line 1.
        assert_eq!(differs, vec![true, false, false, false, false]);
    }

    #[test]
    fn a_new_file_changes_the_sets() {
        let dir = project();
        let checks = recorded(dir.path());
        std::fs::write(dir.path().join("app/more.txt"), "due soon\n").expect("write");
        let differs: Vec<bool> = checks
            .iter()
            .map(|c| observe(c, dir.path()).expect("observe") != seen(c))
            .collect();
        assert_eq!(differs, vec![true, true, true, false, true]);
    }

    #[test]
    fn a_search_of_one_file_answers_without_its_name() {
        // The real Claude Code 2.1.197: Grep {"pattern":"due","path":"notes.txt",
        // "output_mode":"content","-n":true} answered `2:due: 2026-12-31`.
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("notes.txt"), "title: r\ndue: 2026-12-31\n").expect("w");
        let input = serde_json::json!({"pattern": "due", "path": "notes.txt",
            "output_mode": "content", "-n": true});
        let check = from_claude("Grep", &input, "2:due: 2026-12-31", None, false, dir.path())
            .expect("a check");
        assert_eq!(observe(&check, dir.path()).expect("observe"), seen(&check));
        std::fs::write(dir.path().join("notes.txt"), "due: 2027-01-15\n").expect("w");
        assert_eq!(
            observe(&check, dir.path()).expect("observe"),
            "1:due: 2027-01-15"
        );
    }

    #[test]
    fn a_count_in_one_file_answers_with_its_name() {
        // The real Claude Code 2.1.197: Grep {"pattern":"due","path":"notes.txt",
        // "output_mode":"count"} answered `notes.txt:2` and "Found 2 total occurrences across
        // 1 file.", the structured `content` being `notes.txt:2`.
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("notes.txt"), "due on Friday\ndue again\n").expect("w");
        let input = serde_json::json!({"pattern": "due", "path": "notes.txt",
            "output_mode": "count"});
        let structured = serde_json::json!({"mode": "count", "numFiles": 1, "filenames": [],
            "content": "notes.txt:2", "numMatches": 2});
        let answer = "notes.txt:2\n\nFound 2 total occurrences across 1 file.";
        let check = from_claude("Grep", &input, answer, Some(&structured), false, dir.path())
            .expect("a check");
        assert_eq!(observe(&check, dir.path()).expect("observe"), seen(&check));
    }

    #[test]
    fn hidden_and_ignored_files_are_not_searched() {
        let dir = project();
        let checks = recorded(dir.path());
        std::fs::create_dir_all(dir.path().join(".git")).expect("a git repository");
        std::fs::write(dir.path().join(".hidden.txt"), "due\n").expect("write");
        std::fs::write(dir.path().join(".gitignore"), "build/\n").expect("write");
        std::fs::create_dir_all(dir.path().join("build")).expect("mkdir");
        std::fs::write(dir.path().join("build/out.txt"), "due\n").expect("write");
        for check in &checks {
            assert_eq!(observe(check, dir.path()).expect("observe"), seen(check));
        }
    }

    #[test]
    fn calls_whose_answer_cannot_be_made_again_are_not_checks() {
        let cwd = Path::new("/p");
        let context = serde_json::json!({"pattern": "x", "-C": 2, "output_mode": "content"});
        assert!(from_claude("Grep", &context, "a", None, false, cwd).is_err());
        let cut = serde_json::json!({"pattern": "x", "head_limit": 2});
        assert!(from_claude("Grep", &cut, "Found 2 files\na\nb", None, false, cwd).is_err());
        let truncated = serde_json::json!({"truncated": true, "filenames": ["a"]});
        assert!(from_claude(
            "Glob",
            &serde_json::json!({"pattern": "*"}),
            "a",
            Some(&truncated),
            false,
            cwd
        )
        .is_err());
        let read = serde_json::json!({"file_path": "/p/a"});
        assert!(from_claude("Read", &read, "File does not exist.", None, true, cwd).is_err());
        assert!(from_claude("Edit", &read, "", None, false, cwd).is_err());
    }

    #[test]
    fn a_read_answer_without_structure_loses_its_gutter() {
        let check = from_claude(
            "Read",
            &serde_json::json!({"file_path": "/p/a", "offset": 2, "limit": 2}),
            "     2\tttl 30 minutes\n     3\towner x\n\n<system-reminder>\nbe careful\n</system-reminder>",
            None,
            false,
            Path::new("/p"),
        )
        .expect("check");
        assert_eq!(seen(&check), "ttl 30 minutes\nowner x");
    }
}
