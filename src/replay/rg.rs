//! Claude Code's `Grep` and `Glob` made again as Claude Code makes them: with ripgrep, whose own
//! crates (`ignore`, `grep-searcher`, `grep-regex`, `grep-printer`) do the walking, matching and
//! printing here, with the arguments Claude Code 2.1 passes to its embedded `rg` (see
//! docs/replay.md). A reimplementation of its rules saw other files than the agent did (no
//! hidden `.env`, no Latin-1 file, `*.md,*.cfg` read as one glob): "no file holds the key"
//! passed by replay while the agent found the key.
//!
//! - `Grep`: `rg --hidden --glob '!.git' … --max-columns 500 [-i] [-l | -c -H] [-n] PATTERN
//!   [--type T] [--glob G]… PATH`: hidden files searched but not the VCS folders, `.gitignore`
//!   respected (inside a git repository, as rg does), binary files left as rg leaves them, text
//!   that is not UTF-8 searched as bytes, `glob` split on whitespace and commas (a piece with
//!   braces kept whole). Each file is read through [`super::bounded`].
//! - `Glob`: `rg --files --glob PATTERN --sort=modified --no-ignore --hidden PATH`: everything
//!   under the folder (ignored and hidden files too, symlinks not followed), the glob matched as
//!   rg matches globs (a glob without `/` matches at any depth), at most 100 paths.
//!
//! Paths are shown as Claude Code shows them: relative to the agent's directory, unless outside
//! it.

use super::bounded;
use grep_printer::{StandardBuilder, SummaryBuilder, SummaryKind};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::overrides::OverrideBuilder;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The version-control folders Claude Code's `Grep` excludes (`--glob '!.git'`, …).
const VCS_FOLDERS: [&str; 6] = [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];
/// `--max-columns 500`: a longer matching line is shown as `[Omitted long matching line]`.
const MAX_COLUMNS: u64 = 500;
/// How many paths Claude Code's `Glob` lists before it says the list was truncated.
pub const GLOB_LIMIT: usize = 100;

/// How a `Grep` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Files,
    Count,
    Content { line_numbers: bool },
}

/// A `Grep` call as Claude Code received it.
pub struct Grep<'a> {
    pub pattern: &'a str,
    pub path: Option<&'a str>,
    pub glob: Option<&'a str>,
    pub file_type: Option<&'a str>,
    pub ignore_case: bool,
    pub shape: Shape,
}

/// What a search found: its answer's lines, and how many bytes it read.
pub struct Found {
    pub lines: Vec<String>,
    pub bytes: u64,
}

/// `glob` as Claude Code splits it into `--glob` arguments: on whitespace, then each piece on
/// commas unless it holds braces (`{a,b}` is one glob).
pub fn split_globs(glob: &str) -> Vec<String> {
    let mut globs = Vec::new();
    for piece in glob.split_whitespace() {
        if piece.contains('{') && piece.contains('}') {
            globs.push(piece.to_string());
        } else {
            globs.extend(
                piece
                    .split(',')
                    .filter(|g| !g.is_empty())
                    .map(str::to_string),
            );
        }
    }
    globs
}

/// `path` made absolute from `cwd`.
pub fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

/// A path as Claude Code shows it: relative to its directory, unless that climbs out of it.
fn shown(path: &Path, cwd: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// The files a search walks, as rg walks them: each with whether it was named itself (an
/// explicit path is searched whatever the filters say, as rg does).
fn walk(
    cwd: &Path,
    root: &Path,
    overrides: &[String],
    file_type: Option<&str>,
    standard_filters: bool,
    cancel: &AtomicBool,
) -> Result<Vec<(PathBuf, bool)>, String> {
    let mut globs = OverrideBuilder::new(cwd);
    for glob in overrides {
        globs.add(glob).map_err(|e| format!("glob {glob:?}: {e}"))?;
    }
    let globs = globs.build().map_err(|e| format!("globs: {e}"))?;
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .standard_filters(standard_filters)
        // `--hidden`: hidden files are searched (the VCS folders are excluded by glob).
        .hidden(false)
        .overrides(globs)
        .follow_links(false);
    if standard_filters {
        builder.add_custom_ignore_filename(".rgignore");
    }
    if let Some(name) = file_type {
        let mut types = ignore::types::TypesBuilder::new();
        types.add_defaults();
        types.select(name);
        builder.types(types.build().map_err(|e| format!("type {name}: {e}"))?);
    }
    let mut files = Vec::new();
    for entry in builder.build() {
        if cancel.load(Ordering::Relaxed) {
            return Err("stopped".into());
        }
        // rg goes on past an unreadable folder (it says so on stderr, which the agent did not
        // see).
        let Ok(entry) = entry else { continue };
        let explicit = entry.depth() == 0;
        let is_file = entry.file_type().is_some_and(|t| t.is_file());
        if is_file || (explicit && !entry.path().is_dir()) {
            files.push((entry.into_path(), explicit));
        }
    }
    files.sort();
    Ok(files)
}

/// Runs `grep` in `cwd`, reading at most `budget` bytes in all; `cancel` stops it.
pub fn grep(
    cwd: &Path,
    grep: &Grep<'_>,
    budget: u64,
    cancel: &AtomicBool,
) -> Result<Found, String> {
    let root = grep.path.map_or(cwd.to_path_buf(), |p| resolve(cwd, p));
    if std::fs::symlink_metadata(&root).is_err() {
        return Err(format!("Path does not exist: {}", root.display()));
    }
    let mut overrides: Vec<String> = VCS_FOLDERS.iter().map(|f| format!("!{f}")).collect();
    overrides.extend(grep.glob.map(split_globs).unwrap_or_default());
    let files = walk(cwd, &root, &overrides, grep.file_type, true, cancel)?;
    let mut matcher = RegexMatcherBuilder::new();
    matcher
        .multi_line(true)
        .unicode(true)
        .octal(false)
        .case_insensitive(grep.ignore_case)
        .line_terminator(Some(b'\n'))
        .dot_matches_new_line(false)
        .ban_byte(Some(b'\x00'));
    let matcher = matcher
        .build(grep.pattern)
        .map_err(|e| format!("pattern {:?}: {e}", grep.pattern))?;
    // rg names the file on each line only when it searched more than one (`-c` always: `-H`).
    let one_file = files.len() == 1 && files[0].1;
    let mut out: Vec<u8> = Vec::new();
    let mut read = 0u64;
    for (file, explicit) in &files {
        if cancel.load(Ordering::Relaxed) {
            return Err("stopped".into());
        }
        let bytes = match bounded::read(file, budget.saturating_sub(read)) {
            Ok(b) => b,
            // A file rg found but could not open is left out (rg says so on stderr only, which
            // the agent did not see); one it was given is the call's error.
            Err(bounded::ReadRefused::Io { .. }) if !explicit => continue,
            Err(bounded::ReadRefused::TooBig { path, size, .. }) => {
                return Err(format!(
                    "{path} is {size} bytes: the search would read over {budget} bytes, the \
                     recorded size × 2 + 1 MiB"
                ))
            }
            Err(other) => return Err(other.to_string()),
        };
        read += bytes.len() as u64;
        let mut searcher = SearcherBuilder::new();
        searcher
            .line_number(matches!(grep.shape, Shape::Content { line_numbers: true }))
            // rg converts the binary data of a file it was given, and stops at it in a file it
            // found.
            .binary_detection(if *explicit {
                BinaryDetection::convert(b'\x00')
            } else {
                BinaryDetection::quit(b'\x00')
            });
        let mut searcher = searcher.build();
        let path = shown(file, cwd);
        let result = match grep.shape {
            Shape::Content { .. } => {
                let mut printer = StandardBuilder::new()
                    .max_columns(Some(MAX_COLUMNS))
                    .path(!one_file)
                    .build_no_color(&mut out);
                let sink = printer.sink_with_path(&matcher, &path);
                search(&mut searcher, *explicit && one_file, &bytes, &matcher, sink)
            }
            Shape::Files | Shape::Count => {
                let kind = if grep.shape == Shape::Files {
                    SummaryKind::PathWithMatch
                } else {
                    SummaryKind::Count
                };
                let mut printer = SummaryBuilder::new()
                    .kind(kind)
                    .path(true)
                    .build_no_color(&mut out);
                let sink = printer.sink_with_path(&matcher, &path);
                search(&mut searcher, *explicit && one_file, &bytes, &matcher, sink)
            }
        };
        result.map_err(|e| format!("{path}: {e}"))?;
    }
    // Claude Code reads rg's output as UTF-8 (invalid bytes replaced) and drops a line's `\r`.
    let text = String::from_utf8_lossy(&out);
    let lines = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    Ok(Found { lines, bytes: read })
}

/// One file searched as rg searches it: a single file it was given through a memory map (its
/// binary data looked for in the first 64 KiB), any other file read in buffers.
fn search<S: grep_searcher::Sink>(
    searcher: &mut grep_searcher::Searcher,
    mapped: bool,
    bytes: &[u8],
    matcher: &grep_regex::RegexMatcher,
    sink: S,
) -> Result<(), S::Error> {
    if mapped && !bytes.is_empty() {
        searcher.search_slice(matcher, bytes, sink)
    } else {
        searcher.search_reader(matcher, bytes, sink)
    }
}

/// `Glob`'s folder and pattern: an absolute pattern is split where its first glob character's
/// folder ends (`/srv/app/*.md` looks for `*.md` in `/srv/app`).
fn glob_root(cwd: &Path, pattern: &str, path: Option<&str>) -> (PathBuf, String) {
    let dir = path.map_or(cwd.to_path_buf(), |p| resolve(cwd, p));
    if !pattern.starts_with('/') {
        return (dir, pattern.to_string());
    }
    let Some(meta) = pattern.find(['*', '?', '[', '{']) else {
        let p = Path::new(pattern);
        let base = p.parent().map_or(dir.clone(), Path::to_path_buf);
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        return (base, name);
    };
    match pattern[..meta].rfind('/') {
        Some(0) => (PathBuf::from("/"), pattern[1..].to_string()),
        Some(slash) => (
            PathBuf::from(&pattern[..slash]),
            pattern[slash + 1..].to_string(),
        ),
        None => (dir, pattern.to_string()),
    }
}

/// Runs `Glob`: the paths it lists (at most [`GLOB_LIMIT`], then a line saying there were more),
/// oldest first as Claude Code lists them.
pub fn glob(
    cwd: &Path,
    pattern: &str,
    path: Option<&str>,
    cancel: &AtomicBool,
) -> Result<Vec<String>, String> {
    let (root, pattern) = glob_root(cwd, pattern, path);
    if !root.is_dir() {
        return Err(format!("Directory does not exist: {}", root.display()));
    }
    let files = walk(cwd, &root, &[pattern], None, false, cancel)?;
    let mut dated: Vec<(std::time::SystemTime, String)> = files
        .into_iter()
        .map(|(f, _)| {
            let modified = std::fs::symlink_metadata(&f)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            (modified, shown(&f, cwd))
        })
        .collect();
    dated.sort();
    let total = dated.len();
    let mut paths: Vec<String> = dated.into_iter().take(GLOB_LIMIT).map(|(_, p)| p).collect();
    if total > GLOB_LIMIT {
        paths.push(format!(
            "(Results are truncated: {total} paths match, {GLOB_LIMIT} are listed.)"
        ));
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_is_split_on_whitespace_and_commas_but_not_inside_braces() {
        assert_eq!(split_globs("*.md,*.cfg"), ["*.md", "*.cfg"]);
        assert_eq!(split_globs("{*.md,*.cfg} *.env"), ["{*.md,*.cfg}", "*.env"]);
        assert_eq!(split_globs(" a,,b  c "), ["a", "b", "c"]);
    }

    #[test]
    fn an_absolute_glob_looks_in_its_own_folder() {
        let cwd = Path::new("/p");
        assert_eq!(
            glob_root(cwd, "/srv/app/*.md", None),
            (PathBuf::from("/srv/app"), "*.md".to_string())
        );
        assert_eq!(
            glob_root(cwd, "/*.md", None),
            (PathBuf::from("/"), "*.md".to_string())
        );
        assert_eq!(
            glob_root(cwd, "**/*.md", Some("sub")),
            (PathBuf::from("/p/sub"), "**/*.md".to_string())
        );
    }
}
