//! Path helpers shared by discovery, includes and assets: lexical normalization, the
//! "stays inside the project root" rule, and the directories discovery never enters.

use std::path::{Component, Path, PathBuf};

/// Resolve `.` and `..` without touching the filesystem (the file may not exist yet).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Whether `path` is inside `root`, following symlinks when the path exists.
pub fn is_inside(root: &Path, path: &Path) -> bool {
    let real = path.canonicalize().unwrap_or_else(|_| normalize(path));
    let root = root.canonicalize().unwrap_or_else(|_| normalize(root));
    real.starts_with(&root)
}

/// `path` relative to `base` when it is below it, else `path` unchanged.
pub fn relative_to(base: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(base)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}

/// Directories discovery and include globs never descend into.
pub fn is_skipped_dir(name: &str) -> bool {
    name.starts_with('.') || name == "target" || name == "node_modules"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_resolves_dots() {
        assert_eq!(
            normalize(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
        assert_eq!(normalize(Path::new("a/../../b")), PathBuf::from("../b"));
    }

    #[test]
    fn inside_checks_prefix_after_normalizing() {
        assert!(is_inside(Path::new("/p"), Path::new("/p/x/../y")));
        assert!(!is_inside(Path::new("/p"), Path::new("/p/../q")));
    }

    #[test]
    fn skipped_dirs() {
        for d in [".git", ".bugatti", "target", "node_modules", ".hidden"] {
            assert!(is_skipped_dir(d), "{d}");
        }
        assert!(!is_skipped_dir("tests"));
    }
}
