//! Which browser runs: `[browser] executable` as a path (it has a `/`), a name looked up on
//! `PATH`, or, unset, the first of [`CANDIDATES`] on `PATH`. The error names every place tried,
//! so a CI log says what to install.

use super::error::BrowserError;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The names looked for on `PATH` when none is configured, in order.
pub const CANDIDATES: [&str; 3] = ["chromium", "chromium-browser", "google-chrome"];

/// Finds the browser: `configured` (a path or a name), else the first candidate on `path_var`
/// (the `PATH` to search, passed in so a test can aim it).
pub fn find(configured: Option<&str>, path_var: Option<&str>) -> Result<PathBuf, BrowserError> {
    match configured {
        Some(given) if given.contains('/') => {
            let path = PathBuf::from(given);
            match why_not_executable(&path) {
                None => Ok(path),
                Some(reason) => Err(BrowserError::BadPath { path, reason }),
            }
        }
        Some(name) => on_path(&[name], path_var),
        None => on_path(&CANDIDATES, path_var),
    }
}

/// Finds the browser on this process's `PATH`.
pub fn find_on_env_path(configured: Option<&str>) -> Result<PathBuf, BrowserError> {
    let path = std::env::var("PATH").ok();
    find(configured, path.as_deref())
}

fn on_path(names: &[&str], path_var: Option<&str>) -> Result<PathBuf, BrowserError> {
    let dirs: Vec<&str> = path_var
        .unwrap_or("")
        .split(':')
        .filter(|d| !d.is_empty())
        .collect();
    for name in names {
        for dir in &dirs {
            let candidate = Path::new(dir).join(name);
            if why_not_executable(&candidate).is_none() {
                return Ok(candidate);
            }
        }
    }
    let searched = if dirs.is_empty() {
        "an empty PATH".to_string()
    } else {
        format!("PATH={}", dirs.join(":"))
    };
    Err(BrowserError::NotFound {
        tried: names
            .iter()
            .map(|n| format!("`{n}` on {searched}"))
            .collect(),
    })
}

/// Why `path` cannot be executed, or `None` when it is an executable file.
fn why_not_executable(path: &Path) -> Option<String> {
    match std::fs::metadata(path) {
        Err(e) => Some(e.to_string()),
        Ok(meta) if !meta.is_file() => Some("not a file".to_string()),
        Ok(meta) if meta.permissions().mode() & 0o111 == 0 => {
            Some("not executable (no x permission)".to_string())
        }
        Ok(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exe(dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    #[test]
    fn candidates_are_tried_in_order_across_path() {
        let a = tempfile::tempdir().expect("tempdir");
        let b = tempfile::tempdir().expect("tempdir");
        exe(b.path(), "google-chrome");
        let chromium_browser = exe(b.path(), "chromium-browser");
        let path = format!("{}:{}", a.path().display(), b.path().display());
        assert_eq!(find(None, Some(&path)).expect("found"), chromium_browser);
        let chromium = exe(a.path(), "chromium");
        assert_eq!(find(None, Some(&path)).expect("found"), chromium);
    }

    #[test]
    fn nothing_found_names_every_candidate_and_the_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Present but not executable: does not count.
        std::fs::write(dir.path().join("chromium"), "").expect("write");
        let path = dir.path().display().to_string();
        let message = find(None, Some(&path)).expect_err("nothing").to_string();
        for name in CANDIDATES {
            assert!(message.contains(&format!("`{name}`")), "{message}");
        }
        assert!(message.contains(&path), "{message}");
        let message = find(Some("my-chrome"), Some(""))
            .expect_err("nothing")
            .to_string();
        assert!(
            message.contains("`my-chrome` on an empty PATH"),
            "{message}"
        );
    }

    #[test]
    fn a_configured_path_is_used_as_is_or_refused_with_why() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mine = exe(dir.path(), "my-browser");
        let given = mine.display().to_string();
        assert_eq!(find(Some(&given), None).expect("path"), mine);
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "").expect("write");
        let message = find(Some(&plain.display().to_string()), None)
            .expect_err("not executable")
            .to_string();
        assert!(message.contains("not executable"), "{message}");
        let message = find(Some("/no/such/browser"), None)
            .expect_err("missing")
            .to_string();
        assert!(message.contains("/no/such/browser"), "{message}");
        assert!(message.contains("No such file"), "{message}");
    }
}
