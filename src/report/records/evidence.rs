//! An evidence path the agent named (`BUGATTI_EVIDENCE kind path`), checked before it is
//! recorded: it must name a file inside the run directory. A path that leaves the directory
//! (`../..`, an absolute path elsewhere, a symlink out) or names nothing is still recorded, with
//! the problem, so the report and the console warn instead of linking to nothing.

use std::path::{Component, Path};

/// What is wrong with evidence `path` (relative to `run_dir`), or `None` when it names a file
/// inside it.
pub fn problem(run_dir: &Path, path: &str) -> Option<String> {
    let relative = Path::new(path);
    if relative.is_absolute() {
        return Some("outside the run directory (an absolute path)".to_string());
    }
    if relative
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
    {
        return Some("outside the run directory (`..` in the path)".to_string());
    }
    let full = run_dir.join(relative);
    let real = match full.canonicalize() {
        Ok(real) => real,
        Err(_) => return Some("no such file in the run directory".to_string()),
    };
    // The run directory itself resolved too (it may sit behind a symlinked temp dir).
    let base = run_dir
        .canonicalize()
        .unwrap_or_else(|_| run_dir.to_path_buf());
    if !real.starts_with(&base) {
        return Some(format!(
            "outside the run directory (a link to {})",
            real.display()
        ));
    }
    if !real.is_file() {
        return Some("not a file".to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_inside_passes_and_everything_else_says_why() {
        let dir = tempfile::tempdir().expect("tempdir");
        let run = dir.path().join("run");
        std::fs::create_dir_all(run.join("screenshots")).expect("mkdir");
        std::fs::write(run.join("screenshots/a.png"), b"png").expect("write");
        std::fs::write(dir.path().join("outside.png"), b"png").expect("write");
        std::os::unix::fs::symlink(dir.path().join("outside.png"), run.join("link.png"))
            .expect("symlink");
        assert_eq!(problem(&run, "screenshots/a.png"), None);
        assert_eq!(
            problem(&run, "screenshots/missing.png").as_deref(),
            Some("no such file in the run directory")
        );
        assert!(problem(&run, "../outside.png").is_some_and(|p| p.contains("`..`")));
        assert!(problem(&run, "/etc/passwd").is_some_and(|p| p.contains("absolute")));
        assert!(problem(&run, "link.png").is_some_and(|p| p.contains("a link to")));
        assert_eq!(problem(&run, "screenshots").as_deref(), Some("not a file"));
    }
}
