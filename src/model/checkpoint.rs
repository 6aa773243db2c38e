//! Where checkpoints live (docs/checkpoints.md "Checkpoints"): `<artifact_dir>/checkpoints/<test>/<NAME>/`, a
//! directory that survives the run, plus `<NAME>.saved.json` beside it once a save succeeded.
//!
//! `<test>` is the root test's path relative to the project root, made one safe file name: the
//! `.test.toml` suffix dropped, `/` turned into `__`, and any character other than ASCII letters,
//! digits, `.`, `-` and `_` turned into `_` (`tests/cli.test.toml` → `tests__cli`). Two tests that
//! differ only in such characters would share a folder; checkpoint names are unique per plan.

use std::path::{Component, Path, PathBuf};

/// The folder holding every checkpoint, under the artifact directory.
pub const CHECKPOINTS_DIR: &str = "checkpoints";

/// Suffix of the file written beside a checkpoint's directory when its save succeeded.
pub const SAVED_SUFFIX: &str = ".saved.json";

/// The artifact directory as configured, made absolute against the project root.
pub fn artifact_root(project_root: &Path, configured: &str) -> PathBuf {
    let configured = PathBuf::from(configured);
    if configured.is_absolute() {
        configured
    } else {
        project_root.join(configured)
    }
}

/// The one-folder form of a root test's relative path: `tests/cli.test.toml` → `tests__cli`.
pub fn test_key(rel_test: &Path) -> String {
    let parts: Vec<String> = rel_test
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    let joined = parts.join("/");
    let stem = joined.strip_suffix(".test.toml").unwrap_or(&joined);
    let key: String = stem
        .split('/')
        .map(|part| {
            part.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                        c
                    } else {
                        '_'
                    }
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("__");
    if key.is_empty() || key.chars().all(|c| c == '.') {
        format!("_{key}")
    } else {
        key
    }
}

/// Why a checkpoint name cannot be a folder name, if it cannot.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.trim().is_empty() {
        Some("it is empty")
    } else if name == "." || name == ".." {
        Some("`.` and `..` are not folder names")
    } else if name.contains('/') || name.contains('\\') {
        Some("it may not contain `/` or `\\`")
    } else if name.chars().any(char::is_control) {
        Some("it may not contain control characters")
    } else {
        None
    }
}

/// Where one checkpoint of one root test lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointPaths {
    /// `BUGATTI_CHECKPOINT_PATH`: the folder the save command fills and restore reads.
    pub dir: PathBuf,
    /// Written by the supervisor after a successful save (removed before each save).
    pub saved: PathBuf,
}

impl CheckpointPaths {
    pub fn new(artifact_root: &Path, rel_test: &Path, name: &str) -> Self {
        let base = artifact_root.join(CHECKPOINTS_DIR).join(test_key(rel_test));
        Self {
            dir: base.join(name),
            saved: base.join(format!("{name}{SAVED_SUFFIX}")),
        }
    }

    /// What is wrong with resuming from this checkpoint, if anything: its folder is missing, or
    /// its last save did not succeed.
    pub fn resume_problem(&self) -> Option<String> {
        if !self.dir.is_dir() {
            Some(format!(
                "no saved checkpoint: {} does not exist (run the test without \
                 --from-checkpoint first to save it)",
                self.dir.display()
            ))
        } else if !self.saved.is_file() {
            Some(format!(
                "the checkpoint in {} was never saved successfully (its last save failed or did \
                 not finish; {} is missing)",
                self.dir.display(),
                self.saved.display()
            ))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_keys_are_one_readable_folder_name() {
        assert_eq!(test_key(Path::new("tests/cli.test.toml")), "tests__cli");
        assert_eq!(test_key(Path::new("checkout.test.toml")), "checkout");
        assert_eq!(test_key(Path::new("./a b/ü/x.test.toml")), "a_b_____x");
        assert_eq!(test_key(Path::new("a b/x.test.toml")), "a_b__x");
        assert_eq!(test_key(Path::new("..test.toml")), "_.");
    }

    #[test]
    fn names_that_are_not_folder_names_are_refused() {
        assert!(name_problem("logged-in").is_none());
        assert!(name_problem("after signup").is_none());
        assert!(name_problem("..").is_some());
        assert!(name_problem("a/b").is_some());
        assert!(name_problem(" ").is_some());
        assert!(name_problem("a\nb").is_some());
    }

    #[test]
    fn paths_sit_under_the_artifact_dir() {
        let p = CheckpointPaths::new(
            Path::new("/p/.bugatti"),
            Path::new("tests/cli.test.toml"),
            "in",
        );
        assert_eq!(p.dir, Path::new("/p/.bugatti/checkpoints/tests__cli/in"));
        assert_eq!(
            p.saved,
            Path::new("/p/.bugatti/checkpoints/tests__cli/in.saved.json")
        );
        assert_eq!(
            artifact_root(Path::new("/p"), ".bugatti"),
            Path::new("/p/.bugatti")
        );
        assert_eq!(artifact_root(Path::new("/p"), "/a"), Path::new("/a"));
    }
}
