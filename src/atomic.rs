//! Atomic file replacement: a reader sees the old file or the new one, never half of one.
//!
//! Below both of its writers: `report` (run.json, the suite's files, history) and `replay` (a
//! recording), neither of which imports the other for it.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A file that could not be written, named with the reason.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct WriteError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl WriteError {
    pub fn new(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self {
            path: path.into(),
            source,
        }
    }
}

/// Writes `bytes` to a temp file beside `path` and renames it over `path`.
///
/// No fsync: readers (a CI job polling run.json) need atomicity, not durability across a power
/// cut, and an fsync per rewrite costs hundreds of milliseconds on a busy disk — in the one
/// reporter every session waits on.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(dir)
        .map_err(|e| WriteError::new(path, without_temp_name(e)))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.flush())
        .map_err(|e| WriteError::new(path, e))?;
    tmp.persist(path)
        .map_err(|e| WriteError::new(path, e.error))?;
    Ok(())
}

/// The OS error under tempfile's, which appends the random temp file's name: a message that
/// names `path` and the reason reads better, and the same failure twice reads the same.
fn without_temp_name(e: std::io::Error) -> std::io::Error {
    // tempfile's wrapper exposes neither the OS error nor the path, only its text.
    let text = e.to_string();
    match text.split_once(" at path ") {
        Some((reason, _temp)) => std::io::Error::new(e.kind(), reason.to_string()),
        None => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_file_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("run.json");
        write_atomic(&path, b"first version, long").expect("write");
        write_atomic(&path, b"second").expect("rewrite");
        assert_eq!(std::fs::read(&path).expect("read"), b"second");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("run.json")]);
    }

    #[test]
    fn names_the_file_when_the_directory_is_missing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("missing/run.json");
        let err = write_atomic(&path, b"x").expect_err("must fail");
        assert!(err.to_string().contains("missing/run.json"), "{err}");
        assert!(
            !err.to_string().contains(".tmp-"),
            "no temp file name: {err}"
        );
    }
}
