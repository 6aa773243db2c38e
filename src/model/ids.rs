//! Typed ids. A run id and a suite id are both uuid texts; as types they cannot be swapped (a
//! suite-scoped harness used to be labelled with its suite id passed as a "run id").

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Wraps an id read from elsewhere (a file name, an event, an environment variable).
            pub fn new(id: impl Into<String>) -> Self {
                Self(id.into())
            }
            /// A fresh id, ordered by creation time (uuid v7).
            pub fn fresh() -> Self {
                Self(uuid::Uuid::now_v7().to_string())
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(id)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(id.to_string())
            }
        }
    };
}

id_type!(
    /// One run of one root test (`BUGATTI_RUN_ID`, `runs/<run id>/`).
    RunId
);
id_type!(
    /// One invocation of the supervisor over a set of tests (`suites/<suite id>/`).
    SuiteId
);
id_type!(
    /// One root-test session (`BUGATTI_SESSION_ID`, the agent's conversation is one per session).
    SessionId
);
