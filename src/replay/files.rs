//! The file kind of action ([`FileAction`]): Claude Code's read-only file tools — `Read`,
//! `Grep`, `Glob` — as replayable checks.
//!
//! A step in which the agent only *looked* at files is as replayable as one in which it ran
//! `cat` or `grep` through Bash, but the look goes through Claude Code's own tools, whose answers
//! are shaped for the model (a line-number gutter, `Found 2 files`, paths made relative). So a
//! check keeps what the tool was asked and the part of its answer that says something about the
//! project, in a form that can be produced again without the model:
//!
//! - `Read`: the file's lines in the range the agent read, as text, without the gutter;
//! - `Grep`: the multiset of matching files, `path:line:text` lines or `path:count` entries (a
//!   line that is there twice is shown twice: without line numbers, two equal lines read the
//!   same and still count as two);
//! - `Glob`: the set of matching paths;
//!
//! each made again as Claude Code makes it ([`super::rg`]: ripgrep's own crates with the
//! arguments Claude Code gives its `rg`), every file read without blocking and bounded by the
//! size it had when recorded ([`super::bounded`]).
//!
//! Sets, because the CLI orders its answers by modification time. A call whose answer cannot be
//! made again faithfully (context lines, multiline patterns, a `head_limit` that cut the answer,
//! a truncated glob, a tool error) is not a check: the step is then not recorded.

use super::context::{ActionAt, AgentTools, ReplayContext};
use super::domains::Learned;
use super::kind::RecordedKind;
use super::placeholders::Placeholders;
use super::rg;
use super::verdict::Fallback;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::AtomicBool;

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
        /// The lines as the agent saw them, without the gutter: exactly the text it got (a
        /// final newline included).
        seen: String,
        /// The file's size when recorded: a replay reads at most twice that and a mebibyte.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<u64>,
    },
    /// `Grep`: a regex over the files under `path`.
    Grep {
        /// The regex (Rust/ripgrep syntax).
        pattern: String,
        /// Where to search (relative to the agent's directory, or absolute); `None`: there.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// The globs the searched files must match, as the agent wrote them (split on
        /// whitespace and commas when run).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        glob: Option<String>,
        /// A ripgrep file type (`rust`, `py`).
        #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
        file_type: Option<String>,
        /// `-i`.
        #[serde(default)]
        ignore_case: bool,
        /// How the answer is shaped.
        mode: GrepMode,
        /// `-n` (content mode).
        #[serde(default)]
        line_numbers: bool,
        /// The answer's entries, sorted, each as often as the answer had it.
        seen: Vec<String>,
        /// What the search read when recorded: a replay reads at most twice that and a
        /// mebibyte.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<u64>,
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

/// The tools this module makes checks of: a provider's read-only file tools (its row says
/// which: Claude Code's `Read`, `Grep`, `Glob`).
pub fn is_file_tool(tool: &str) -> bool {
    crate::model::provider::rows().any(|row| row.is_file_tool(tool))
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
        "Read" => read_check(input, answer, structured).map_err(|r| refuse(&r)),
        "Grep" => grep_check(input, answer, structured, cwd).map_err(|r| refuse(&r)),
        "Glob" => glob_check(input, answer, structured, cwd).map_err(|r| refuse(&r)),
        _ => Err(refuse("not a read-only file tool")),
    }
}

fn read_check(
    input: &Value,
    answer: &str,
    structured: Option<&Value>,
) -> Result<FileCheck, String> {
    let file = input["file_path"].as_str().ok_or("no file")?.to_string();
    if !input["pages"].is_null() {
        return Err("a PDF's pages are not replayed".into());
    }
    let offset = input["offset"].as_u64().map_or(1, |o| o.max(1) as usize);
    let limit = input["limit"]
        .as_u64()
        .map_or(DEFAULT_READ_LIMIT, |l| l as usize);
    // The structured result is the file's own text, exactly as the agent got it; the answer has
    // a gutter (and, at times, a reminder appended for the model).
    let seen = match structured {
        Some(s) if s["type"].is_string() && s["type"] != "text" => {
            return Err(format!(
                "a {} is not replayed",
                s["type"].as_str().unwrap_or("file")
            ))
        }
        Some(s) if s["file"]["truncatedByTokenCap"].as_bool() == Some(true) => {
            return Err("its answer was cut to the token cap".into())
        }
        Some(s) if s["file"]["content"].is_string() => s["file"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        _ => strip_gutter(answer).ok_or("no file range")?,
    };
    Ok(FileCheck::Read {
        file,
        offset,
        limit,
        seen,
        bytes: None,
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
    for flag in ["-A", "-B", "-C", "context", "multiline", "offset", "-o"] {
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
    // Claude Code cuts an answer at 250 entries unless told otherwise, and says so.
    if structured.is_some_and(|s| s["appliedLimit"].is_number()) {
        return Err("its answer was cut by head_limit".into());
    }
    Ok(FileCheck::Grep {
        pattern,
        path: input["path"].as_str().map(str::to_string),
        glob: input["glob"].as_str().map(str::to_string),
        file_type: input["type"].as_str().map(str::to_string),
        ignore_case: input["-i"].as_bool().unwrap_or(false),
        line_numbers: input["-n"].as_bool().unwrap_or(mode == GrepMode::Content),
        mode,
        seen: relative_sorted(entries, cwd),
        bytes: None,
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
    let set: BTreeSet<String> = relative_sorted(entries, cwd).into_iter().collect();
    set.into_iter().collect()
}

/// Entries with `cwd/` taken off their paths, sorted, duplicates kept.
fn relative_sorted(entries: Vec<String>, cwd: &Path) -> Vec<String> {
    let prefix = format!("{}/", cwd.display());
    let mut all: Vec<String> = entries
        .into_iter()
        .map(|e| e.strip_prefix(&prefix).map(str::to_string).unwrap_or(e))
        .map(|e| e.strip_prefix("./").map(str::to_string).unwrap_or(e))
        .collect();
    all.sort();
    all
}

/// What a check's tool answers now, in the check's own form (`seen`), and how many bytes it read.
pub struct Observed {
    pub text: String,
    pub bytes: u64,
}

/// What a check's tool would answer now, in the check's own form (`seen`): the file range's
/// text for `Read`, the sorted entries (joined by newlines) for `Grep` and `Glob`. Every file is
/// read without blocking and within the bound its recorded size sets; `cancel` stops a walk.
pub fn observe(check: &FileCheck, cwd: &Path, cancel: &AtomicBool) -> Result<Observed, String> {
    match check {
        FileCheck::Read {
            file,
            offset,
            limit,
            bytes,
            ..
        } => {
            let data =
                super::bounded::read(&rg::resolve(cwd, file), super::bounded::bound_for(*bytes))
                    .map_err(|e| format!("Read {e}"))?;
            Ok(Observed {
                text: read_range(&data, *offset, *limit),
                bytes: data.len() as u64,
            })
        }
        FileCheck::Grep {
            pattern,
            path,
            glob,
            file_type,
            ignore_case,
            mode,
            line_numbers,
            bytes,
            ..
        } => {
            let call = rg::Grep {
                pattern,
                path: path.as_deref(),
                glob: glob.as_deref(),
                file_type: file_type.as_deref(),
                ignore_case: *ignore_case,
                shape: match mode {
                    GrepMode::FilesWithMatches => rg::Shape::Files,
                    GrepMode::Count => rg::Shape::Count,
                    GrepMode::Content => rg::Shape::Content {
                        line_numbers: *line_numbers,
                    },
                },
            };
            let found = rg::grep(cwd, &call, super::bounded::bound_for(*bytes), cancel)
                .map_err(|e| format!("Grep: {e}"))?;
            Ok(Observed {
                text: sorted_keeping_duplicates(found.lines),
                bytes: found.bytes,
            })
        }
        FileCheck::Glob { pattern, path, .. } => {
            let paths = rg::glob(cwd, pattern, path.as_deref(), cancel)
                .map_err(|e| format!("Glob: {e}"))?;
            Ok(Observed {
                text: sorted(paths),
                bytes: 0,
            })
        }
    }
}

/// The check with what its call reads now measured in (`bytes`): at record time, the bound of
/// later replays. A call that cannot be made again now keeps no size (the default bound).
pub fn measured(check: FileCheck, cwd: &Path) -> FileCheck {
    let Ok(observed) = observe(&check, cwd, &AtomicBool::new(false)) else {
        return check;
    };
    let mut check = check;
    match &mut check {
        FileCheck::Read { bytes, .. } | FileCheck::Grep { bytes, .. } => {
            *bytes = Some(observed.bytes);
        }
        FileCheck::Glob { .. } => {}
    }
    check
}

/// Lines `offset ..` (1-based, `limit` of them) of a file as Claude Code's `Read` gives them:
/// the bytes as UTF-8 (an invalid byte replaced), split at each `\n` with a `\r` before it
/// dropped, joined by `\n` again, so that a final newline is an empty last line.
pub fn read_range(data: &[u8], offset: usize, limit: usize) -> String {
    let text = String::from_utf8_lossy(data);
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .skip(offset.saturating_sub(1))
        .take(limit)
        .collect::<Vec<_>>()
        .join("\n")
}

impl FileCheck {
    /// The same call as `other` (same tool and arguments), whatever each saw.
    pub fn same_call(&self, other: &Self) -> bool {
        let asked = |c: &Self| {
            let mut c = c.clone();
            match &mut c {
                Self::Read { seen, bytes, .. } => {
                    seen.clear();
                    *bytes = None;
                }
                Self::Grep { seen, bytes, .. } => {
                    seen.clear();
                    *bytes = None;
                }
                Self::Glob { seen, .. } => seen.clear(),
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

/// `Grep`'s entries as a multiset: sorted (Claude Code orders files by when they changed), each
/// as often as it was found.
fn sorted_keeping_duplicates(mut entries: Vec<String>) -> String {
    entries.sort();
    entries.join("\n")
}

/// One of a provider's read-only file tools as recorded: a check made again over today's files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileAction {
    /// What was asked and what the agent saw (paths with placeholders).
    pub check: FileCheck,
    /// Learned volatile tokens of the compared text (`[line, token, {domain}]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volatile: Vec<Learned>,
}

impl FileAction {
    /// A file check as recorded: the paths it names and what it saw with the session's values
    /// as placeholders. `Err` for a look at the run's own records (a browser snapshot file, a
    /// log): their names and contents differ every run.
    pub fn recorded(placeholders: &Placeholders, check: &FileCheck) -> Result<Self, String> {
        let check = check
            .map_paths(|p| placeholders.insert(p))
            .map_seen(|seen| placeholders.insert(&placeholders.redact(seen)));
        if let Some(file) = check
            .read_file()
            .filter(|f| f.starts_with("${BUGATTI_RUN_DIR}"))
        {
            return Err(format!(
                "the agent read {file}, a file of the run's own records, which differ every run"
            ));
        }
        Ok(Self {
            check,
            volatile: Vec::new(),
        })
    }
}

impl RecordedKind for FileAction {
    type State = ();
    const NAME: &'static str = "file";

    fn describe(&self) -> String {
        describe(&self.check)
    }

    fn output(&self) -> Cow<'_, str> {
        Cow::Owned(seen(&self.check))
    }

    fn volatile(&self) -> &[Learned] {
        &self.volatile
    }

    fn volatile_mut(&mut self) -> &mut Vec<Learned> {
        &mut self.volatile
    }

    fn same_call(&self, other: &Self) -> bool {
        self.check.same_call(&other.check)
    }

    /// A `Read` by its file (which lines it read aside), a search by its pattern and place.
    fn target(&self) -> String {
        match &self.check {
            FileCheck::Read { file, .. } => format!("Read {file}"),
            other => describe(other),
        }
    }

    fn compared(&self, _: &mut ()) -> Option<String> {
        Some(seen(&self.check))
    }

    /// The check run again over today's files (its paths filled with this session's values),
    /// off the runtime's threads and within the action timeout: a walk of a huge tree never
    /// holds the session (or its signals) up.
    async fn replay(
        &self,
        ctx: &ReplayContext<'_>,
        _: AgentTools<'_>,
        _: &mut (),
        at: &ActionAt<'_>,
    ) -> Result<(), Fallback> {
        let check = &self.check;
        let filled = check.map_paths(|p| ctx.placeholders.fill(p));
        let cwd = ctx.agent_cwd.clone();
        let cancel = std::sync::Arc::new(AtomicBool::new(false));
        let stop = cancel.clone();
        let work = tokio::task::spawn_blocking(move || observe(&filled, &cwd, &cancel));
        let today = match tokio::time::timeout(ctx.action_timeout, work).await {
            Ok(Ok(Ok(observed))) => observed.text,
            Ok(Ok(Err(e))) => e,
            Ok(Err(e)) => format!("the file check failed: {e}"),
            Err(_) => {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                return Err(Fallback::Failed {
                    action: at.index,
                    reason: format!(
                        "{} still running after {}s",
                        at.what,
                        ctx.action_timeout.as_secs()
                    ),
                });
            }
        };
        ctx.check(at, &seen(check), &today)
    }
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
