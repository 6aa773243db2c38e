//! Typed ids. A run id and a suite id are both uuid texts; as types they cannot be swapped (a
//! suite-scoped harness used to be labelled with its suite id passed as a "run id"). A step id
//! is a number, not an index: as a type it is not mixed up with a 0-based position.
//!
//! Every id is serde-transparent and its JSON Schema is its inner type's, so the files that
//! hold ids (events.jsonl, run.json, summary.json, history.jsonl, recordings, `schemas/`) are
//! the same as when the ids were plain strings and numbers.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
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

        impl From<&$name> for $name {
            fn from(id: &$name) -> Self {
                id.clone()
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        // By hand rather than derived: a derived schema of a documented newtype carries the
        // type's doc as a title, which would change `schemas/`.
        impl schemars::JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                String::schema_name()
            }
            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                String::json_schema(generator)
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

/// A step's 1-based number within its run's plan, in plan order (includes inlined): `step_id` in
/// events.jsonl and run.json, `BUGATTI_STEP_ID`, a recording's step, `step-<n>-…` evidence names.
/// Number 0 is no step of the plan: the agent's bootstrap exchange ([`StepId::BOOTSTRAP`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StepId(u32);

impl StepId {
    /// The first step of a plan.
    pub const FIRST: StepId = StepId(1);
    /// The agent's bootstrap exchange, before the first step: what the agent says then belongs
    /// to no step.
    pub const BOOTSTRAP: StepId = StepId(0);

    pub const fn new(number: u32) -> Self {
        Self(number)
    }
    /// The step at 0-based `index` in its plan (saturating: a plan never holds 4 billion steps).
    pub fn from_index(index: usize) -> Self {
        Self(
            u32::try_from(index)
                .unwrap_or(u32::MAX - 1)
                .saturating_add(1),
        )
    }
    /// The number as written (1-based).
    pub const fn get(self) -> u32 {
        self.0
    }
    /// A step of the plan (not the bootstrap).
    pub const fn is_step(self) -> bool {
        self.0 > 0
    }
    /// Its 0-based position in the plan's list of steps.
    pub fn index(self) -> usize {
        (self.0 as usize).saturating_sub(1)
    }
}

impl fmt::Display for StepId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::str::FromStr for StepId {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(Self)
    }
}

impl From<u32> for StepId {
    fn from(number: u32) -> Self {
        Self(number)
    }
}

impl From<StepId> for u32 {
    fn from(id: StepId) -> Self {
        id.0
    }
}

impl PartialEq<u32> for StepId {
    fn eq(&self, other: &u32) -> bool {
        self.0 == *other
    }
}

impl schemars::JsonSchema for StepId {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        u32::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        u32::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_serialise_and_describe_themselves_as_their_inner_type() {
        assert_eq!(serde_json::to_string(&RunId::new("r1")).unwrap(), "\"r1\"");
        assert_eq!(serde_json::to_string(&StepId::new(3)).unwrap(), "3");
        assert_eq!(serde_json::from_str::<StepId>("7").unwrap(), StepId::new(7));
        assert_eq!(
            schemars::schema_for!(SuiteId).as_value(),
            schemars::schema_for!(String).as_value()
        );
        assert_eq!(
            schemars::schema_for!(StepId).as_value(),
            schemars::schema_for!(u32).as_value()
        );
    }

    #[test]
    fn a_step_id_is_one_past_its_index() {
        assert_eq!(StepId::from_index(0), StepId::FIRST);
        assert_eq!(StepId::new(4).index(), 3);
        assert_eq!(StepId::new(0).index(), 0);
        assert_eq!(StepId::new(12).to_string(), "12");
    }
}
