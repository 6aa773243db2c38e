//! Which files are root-test candidates: PATH arguments (files, folders, short names), or the
//! project root / `[supervisor] tests` globs. Sorted by path, no duplicates. Parsing (and the
//! `include_only` rule) happens in `load`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use walkdir::WalkDir;

use super::paths::{is_inside, is_skipped_dir, normalize, relative_to};

/// Why a candidate could not be found; the caller positions it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    #[error(
        "`{arg}` is not a file, a directory, or the short name of a test (looked for {looked})"
    )]
    NotFound { arg: String, looked: String },
    #[error("short name `{arg}` is ambiguous: {candidates}")]
    Ambiguous { arg: String, candidates: String },
    #[error("`{glob}` is not a valid glob: {reason}")]
    BadGlob { glob: String, reason: String },
    #[error("tests glob `{glob}` matches no file under {root}")]
    GlobMatchesNothing { glob: String, root: String },
    #[error("directory {dir} holds no root tests (*.test.toml, not starting with `_`)")]
    EmptyDir { dir: String },
    #[error("cannot read directory {dir}: {reason}")]
    Walk { dir: String, reason: String },
}

/// Every `*.test.toml` below `dir`, skipping hidden dirs, `target/`, `node_modules/`;
/// `_`-prefixed files only when `include_underscore`. A symlinked directory leading out of `dir`
/// is not entered: discovery never lists (say) `/etc` because a project links to it.
pub fn walk_test_files(
    dir: &Path,
    include_underscore: bool,
) -> Result<Vec<PathBuf>, DiscoveryError> {
    walk_test_files_noting(dir, include_underscore, &mut Vec::new())
}

/// [`walk_test_files`], noting in `notes` each symlink that loops back to one of its own
/// ancestors (skipped: a loop anywhere under the root must not stop discovery).
pub fn walk_test_files_noting(
    dir: &Path,
    include_underscore: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<PathBuf>, DiscoveryError> {
    let mut out = Vec::new();
    let walker = WalkDir::new(dir).follow_links(true).into_iter();
    for entry in walker.filter_entry(|e| {
        e.depth() == 0
            || !e.file_type().is_dir()
            || !(is_skipped_dir(&e.file_name().to_string_lossy())
                || (e.path_is_symlink() && !is_inside(dir, e.path())))
    }) {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) if e.loop_ancestor().is_some() => {
                let at = e
                    .path()
                    .map_or_else(String::new, |p| p.display().to_string());
                notes.push(format!(
                    "skipped {at}: a symlink loop (it points to one of its own parent folders)"
                ));
                continue;
            }
            // Below the root, what cannot be read or stat'ed (a dangling symlink such as an
            // Emacs lock file `.#a.test.toml`, a link that loops through another, a folder
            // without permission) is skipped with a note: it must not stop every run.
            Err(e) if e.depth() > 0 => {
                let at = e
                    .path()
                    .map_or_else(String::new, |p| p.display().to_string());
                let reason = e
                    .io_error()
                    .map_or_else(|| e.to_string(), ToString::to_string);
                notes.push(format!("skipped {at}: cannot read it ({reason})"));
                continue;
            }
            Err(e) => {
                return Err(DiscoveryError::Walk {
                    dir: dir.display().to_string(),
                    reason: e.to_string(),
                })
            }
        };
        let name = entry.file_name().to_string_lossy();
        if !entry.file_type().is_file() {
            // A FIFO or a device named like a test (or a link to one): reading it would block
            // or never end, and passing over it in silence would hide a test the user meant.
            if !entry.file_type().is_dir() && name.ends_with(".test.toml") {
                notes.push(format!(
                    "skipped {}: not a regular file (a {})",
                    entry.path().display(),
                    crate::model::user_file::kind_of(&entry.file_type())
                ));
            }
            continue;
        }
        if name.ends_with(".test.toml") && (include_underscore || !name.starts_with('_')) {
            out.push(entry.path().to_path_buf());
        }
    }
    out.sort();
    Ok(out)
}

/// A glob over `/`-separated paths where `*` stays within one path segment.
pub fn glob_matcher(glob: &str) -> Result<GlobMatcher, DiscoveryError> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| DiscoveryError::BadGlob {
            glob: glob.to_string(),
            reason: e.kind().to_string(),
        })
}

/// One PATH argument → its candidate files. `explicit` files are returned even if `_`-prefixed.
pub fn resolve_arg(arg: &str, cwd: &Path, root: &Path) -> Result<Vec<PathBuf>, DiscoveryError> {
    let direct = normalize(&cwd.join(arg));
    if direct.is_file() {
        return Ok(vec![direct]);
    }
    // A short name wins over a directory of the same name: `checkout` next to `checkout/` (its
    // asset folder) means `checkout.test.toml`.
    let short = if arg.ends_with(".test.toml") {
        arg.to_string()
    } else {
        format!("{arg}.test.toml")
    };
    let beside = normalize(&cwd.join(&short));
    if beside.is_file() {
        return Ok(vec![beside]);
    }
    let at_root = normalize(&root.join(&short));
    if at_root.is_file() {
        return Ok(vec![at_root]);
    }
    if direct.is_dir() {
        let found = walk_test_files(&direct, false)?;
        if found.is_empty() {
            return Err(DiscoveryError::EmptyDir {
                dir: direct.display().to_string(),
            });
        }
        return Ok(found);
    }
    // A bare short name may also name a test deeper in the tree, if unambiguous.
    if !arg.contains('/') {
        let found: Vec<PathBuf> = walk_test_files(root, true)?
            .into_iter()
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy() == short))
            .collect();
        match found.len() {
            1 => return Ok(found),
            0 => {}
            _ => {
                return Err(DiscoveryError::Ambiguous {
                    arg: arg.to_string(),
                    candidates: found
                        .iter()
                        .map(|p| relative_to(root, p).display().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                })
            }
        }
    }
    Err(DiscoveryError::NotFound {
        arg: arg.to_string(),
        looked: format!("{} and {}", direct.display(), at_root.display()),
    })
}

/// Files matched by the `[supervisor] tests` globs (relative to the root), one error per
/// glob that is invalid or matches nothing; what the walk skipped goes to `notes`.
pub fn from_globs(
    root: &Path,
    globs: &[String],
    notes: &mut Vec<String>,
) -> (Vec<PathBuf>, Vec<DiscoveryError>) {
    let mut errors = Vec::new();
    let all = match walk_test_files_noting(root, false, notes) {
        Ok(all) => all,
        Err(e) => return (Vec::new(), vec![e]),
    };
    let mut found = BTreeSet::new();
    for glob in globs {
        let matcher = match glob_matcher(glob.trim_start_matches("./")) {
            Ok(m) => m,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let hits: Vec<&PathBuf> = all
            .iter()
            .filter(|p| matcher.is_match(relative_to(root, p)))
            .collect();
        if hits.is_empty() {
            errors.push(DiscoveryError::GlobMatchesNothing {
                glob: glob.clone(),
                root: root.display().to_string(),
            });
        }
        found.extend(hits.into_iter().cloned());
    }
    (found.into_iter().collect(), errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn project() -> tempfile::TempDir {
        let d = tempfile::tempdir().expect("tempdir");
        for f in [
            "a.test.toml",
            "_shared.test.toml",
            "sub/b.test.toml",
            "sub/notes.toml",
            "target/x.test.toml",
            "node_modules/y.test.toml",
            ".bugatti/z.test.toml",
            ".git/w.test.toml",
            "deep/er/checkout.test.toml",
        ] {
            let p = d.path().join(f);
            fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            fs::write(p, "").expect("write");
        }
        d
    }

    fn rel(root: &Path, ps: &[PathBuf]) -> Vec<String> {
        ps.iter()
            .map(|p| relative_to(root, p).display().to_string())
            .collect()
    }

    #[test]
    fn walk_skips_hidden_target_node_modules_and_underscore() {
        let d = project();
        let found = walk_test_files(d.path(), false).unwrap();
        assert_eq!(
            rel(d.path(), &found),
            vec![
                "a.test.toml",
                "deep/er/checkout.test.toml",
                "sub/b.test.toml"
            ]
        );
    }

    #[test]
    fn args_accept_files_dirs_and_short_names() {
        let d = project();
        let r = d.path();
        assert_eq!(
            rel(r, &resolve_arg("sub", r, r).unwrap()),
            vec!["sub/b.test.toml"]
        );
        assert_eq!(
            rel(r, &resolve_arg("a", r, r).unwrap()),
            vec!["a.test.toml"]
        );
        assert_eq!(
            rel(r, &resolve_arg("checkout", r, r).unwrap()),
            vec!["deep/er/checkout.test.toml"]
        );
        assert_eq!(
            rel(r, &resolve_arg("_shared.test.toml", r, r).unwrap()),
            vec!["_shared.test.toml"]
        );
    }

    #[test]
    fn short_name_wins_over_its_asset_folder_and_empty_dirs_are_errors() {
        let d = project();
        let r = d.path();
        fs::create_dir_all(r.join("a")).unwrap();
        fs::write(r.join("a/data.json"), "{}").unwrap();
        assert_eq!(
            rel(r, &resolve_arg("a", r, r).unwrap()),
            vec!["a.test.toml"]
        );
        fs::create_dir_all(r.join("empty")).unwrap();
        let e = resolve_arg("empty", r, r).unwrap_err().to_string();
        assert!(e.contains("empty holds no root tests"), "{e}");
    }

    #[test]
    fn unknown_and_ambiguous_args_are_errors() {
        let d = project();
        let r = d.path();
        let e = resolve_arg("nope", r, r).unwrap_err().to_string();
        assert!(
            e.starts_with("`nope` is not a file, a directory, or the short name"),
            "{e}"
        );
        fs::create_dir_all(r.join("other")).unwrap();
        fs::write(r.join("other/checkout.test.toml"), "").unwrap();
        let e = resolve_arg("checkout", r, r).unwrap_err().to_string();
        assert!(e.contains("ambiguous"), "{e}");
        assert!(e.contains("deep/er/checkout.test.toml"), "{e}");
    }

    #[test]
    fn globs_match_relative_paths_and_report_empty_or_bad_ones() {
        let d = project();
        let r = d.path();
        let (found, errs) = from_globs(
            r,
            &["sub/*.test.toml".into(), "*.test.toml".into()],
            &mut Vec::new(),
        );
        assert!(errs.is_empty(), "{errs:?}");
        // `*` does not cross `/`
        assert_eq!(rel(r, &found), vec!["a.test.toml", "sub/b.test.toml"]);
        let (_, errs) = from_globs(
            r,
            &["none/*.test.toml".into(), "a[".into()],
            &mut Vec::new(),
        );
        assert_eq!(errs.len(), 2);
        assert!(
            errs[0].to_string().contains("matches no file"),
            "{}",
            errs[0]
        );
        assert!(
            errs[1].to_string().contains("not a valid glob"),
            "{}",
            errs[1]
        );
    }

    #[test]
    fn what_cannot_be_stated_is_skipped_with_a_note() {
        let d = project();
        let r = d.path();
        // An Emacs lock file: a dangling symlink named like a test.
        std::os::unix::fs::symlink("root@host.1234:1700000000", r.join("sub/.#b.test.toml"))
            .unwrap();
        // Two links pointing at each other (ELOOP), not at an ancestor.
        fs::create_dir_all(r.join("docs")).unwrap();
        std::os::unix::fs::symlink("y", r.join("docs/x")).unwrap();
        std::os::unix::fs::symlink("x", r.join("docs/y")).unwrap();
        let mut notes = Vec::new();
        let found = walk_test_files_noting(r, false, &mut notes).unwrap();
        assert_eq!(
            rel(r, &found),
            vec![
                "a.test.toml",
                "deep/er/checkout.test.toml",
                "sub/b.test.toml"
            ]
        );
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(
            notes
                .iter()
                .any(|n| n.contains(".#b.test.toml") && n.starts_with("skipped ")),
            "{notes:?}"
        );
        let (found, errs) = from_globs(r, &["**/*.test.toml".into()], &mut notes);
        assert!(errs.is_empty() && found.len() == 3, "{errs:?} {found:?}");
    }
}
