//! How a harness process ended, in one form for piped and PTY children alike.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitStatus {
    /// Exited on its own with this code.
    Code(i32),
    /// Killed by a signal (its name, e.g. `SIGKILL`, or the PTY layer's description).
    Signal(String),
    /// The wait itself failed; the text says why.
    Unknown(String),
}

impl ExitStatus {
    pub fn success(&self) -> bool {
        matches!(self, Self::Code(0))
    }

    pub fn code(&self) -> Option<i32> {
        match self {
            Self::Code(code) => Some(*code),
            _ => None,
        }
    }

    pub fn from_std(status: std::process::ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        if let Some(code) = status.code() {
            return Self::Code(code);
        }
        match status.signal() {
            Some(sig) => Self::Signal(
                nix::sys::signal::Signal::try_from(sig)
                    .map(|s| s.as_str().to_string())
                    .unwrap_or_else(|_| format!("signal {sig}")),
            ),
            None => Self::Unknown(format!("{status}")),
        }
    }

    pub fn from_pty(status: &portable_pty::ExitStatus) -> Self {
        match status.signal() {
            Some(name) => Self::Signal(name.to_string()),
            None => Self::Code(i32::try_from(status.exit_code()).unwrap_or(i32::MAX)),
        }
    }
}

/// `exit code 3`, `signal 9 (SIGKILL)`: how an agent's or a `--version` run's end is told.
pub fn describe(status: &ExitStatus) -> String {
    match status {
        ExitStatus::Code(code) => format!("exit code {code}"),
        ExitStatus::Signal(name) => match name.parse::<nix::sys::signal::Signal>() {
            Ok(sig) => format!("signal {} ({name})", sig as i32),
            Err(_) => name.clone(),
        },
        ExitStatus::Unknown(_) => "unknown exit status".to_string(),
    }
}

impl fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Code(code) => write!(f, "exit code {code}"),
            Self::Signal(name) => write!(f, "killed by {name}"),
            Self::Unknown(why) => write!(f, "unknown exit ({why})"),
        }
    }
}
