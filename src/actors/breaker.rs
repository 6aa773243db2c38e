//! The circuit breaker of agent faults (docs/providers.md, "When the agent, not the app,
//! fails"): once two root tests have ended by the same lasting fault (`auth`, `quota`,
//! `cli_missing`, `cli_version`), every later test would meet it too, so no new test starts and
//! the rest are `not_run` ("agent unavailable: auth — …"), instead of each paying its setup and
//! timeouts.

use crate::model::agent_fault::FaultKind;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// How many root tests must end by the same lasting fault before the breaker trips.
pub const TRIP_AFTER: usize = 2;

/// The lasting agent faults seen so far in a suite; shared by its sessions and the supervisor.
#[derive(Debug, Default)]
pub struct FaultBreaker {
    seen: Mutex<BTreeMap<&'static str, FaultSeen>>,
}

#[derive(Debug)]
struct FaultSeen {
    /// Root tests (by test file) ended by this fault; a retried test counts once.
    tests: BTreeSet<String>,
    /// What the first of them said.
    message: String,
}

impl FaultBreaker {
    /// Books the root test `test` ended by `kind` (with the step's message); faults that may
    /// pass by themselves are not booked.
    pub fn record(&self, test: &str, kind: FaultKind, message: &str) {
        if !kind.is_persistent() {
            return;
        }
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        seen.entry(kind.as_str())
            .or_insert_with(|| FaultSeen {
                tests: BTreeSet::new(),
                message: message.to_string(),
            })
            .tests
            .insert(test.to_string());
    }

    /// Why no new root test may start (`agent unavailable: auth — …`), once tripped.
    pub fn tripped(&self) -> Option<String> {
        let seen = self.seen.lock().ok()?;
        seen.iter()
            .find(|(_, s)| s.tests.len() >= TRIP_AFTER)
            .map(|(kind, s)| format!("agent unavailable: {kind} — {}", s.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_tests_ended_by_the_same_lasting_fault_trip_it() {
        let b = FaultBreaker::default();
        b.record("a.test.toml", FaultKind::Auth, "not logged in");
        b.record("a.test.toml", FaultKind::Auth, "not logged in");
        b.record("b.test.toml", FaultKind::Overloaded, "529");
        b.record("c.test.toml", FaultKind::Overloaded, "529");
        b.record("c.test.toml", FaultKind::Quota, "credit");
        assert_eq!(
            b.tripped(),
            None,
            "a retried test counts once; transient never"
        );
        b.record("b.test.toml", FaultKind::Auth, "again");
        assert_eq!(
            b.tripped().as_deref(),
            Some("agent unavailable: auth — not logged in")
        );
    }

    #[test]
    fn a_rejected_mcp_server_in_two_tests_trips_it() {
        let b = FaultBreaker::default();
        b.record("a.test.toml", FaultKind::CliConfig, "server `x` rejected");
        assert_eq!(b.tripped(), None);
        b.record("b.test.toml", FaultKind::CliConfig, "server `x` rejected");
        assert_eq!(
            b.tripped().as_deref(),
            Some("agent unavailable: cli_config — server `x` rejected")
        );
    }
}
