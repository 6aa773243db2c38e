//! Why a recording could not be read: typed, so that the session, `check` and the report each
//! say it their way, and a step's verdict carries the reason itself. (A recording not written
//! is [`crate::atomic::WriteError`].)

use std::path::PathBuf;
use std::sync::Arc;

/// Why a recording file could not be used. (Cloned into the verdict of every step that could
/// not replay because of it: the I/O error is shared.)
#[derive(Debug, Clone, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: Arc<std::io::Error>,
    },
    #[error("{}:{line}:{column}: not a recording: {message}", path.display())]
    Corrupt {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error(
        "{}: written by a newer supervisor (schema {found}, this one reads {supported})",
        path.display()
    )]
    Newer {
        path: PathBuf,
        found: u64,
        supported: u32,
    },
    #[error(
        "{}: not a regular file ({kind}); a recording is read only from a regular file",
        path.display()
    )]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error(
        "{}: {size} bytes, more than the {max} a recording may have",
        path.display()
    )]
    TooBig { path: PathBuf, size: u64, max: u64 },
    #[error("{}: the recording of {found}, not of {expected}", path.display())]
    OtherTest {
        path: PathBuf,
        found: String,
        expected: String,
    },
}
