//! The evidence a step's capture yields, typed: each names its file relative to the run
//! directory (as `BUGATTI_EVIDENCE` paths are) and carries what the report shows beside it.

use serde::{Deserialize, Serialize};

/// One piece of browser evidence on a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BrowserEvidence {
    /// A PNG of one open page (`screenshots/step-<id>-<n>.png`).
    Screenshot {
        /// Relative to the run directory.
        path: String,
        /// The page's URL when it was taken.
        url: String,
        /// The page's title.
        title: String,
    },
    /// The console's errors and warnings during the step (`browser/step-<id>.console.jsonl`).
    Console {
        /// Relative to the run directory.
        path: String,
        /// How many errors.
        errors: usize,
        /// How many warnings.
        warnings: usize,
    },
    /// The requests that failed during the step (`browser/step-<id>.network.jsonl`).
    Network {
        /// Relative to the run directory.
        path: String,
        /// How many: HTTP 4xx/5xx answers and requests that got none.
        failed: usize,
    },
}

impl BrowserEvidence {
    /// `screenshot`, `console` or `network`: the evidence kind recorded on the step.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Screenshot { .. } => "screenshot",
            Self::Console { .. } => "console",
            Self::Network { .. } => "network",
        }
    }

    /// The file, relative to the run directory.
    pub fn path(&self) -> &str {
        match self {
            Self::Screenshot { path, .. }
            | Self::Console { path, .. }
            | Self::Network { path, .. } => path,
        }
    }
}
