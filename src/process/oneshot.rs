//! One command run to its end between other work (`[checkpoint]` save and restore): started by
//! [`spawn`] like every harness command (`sh -c` in its own registered process group, the given
//! environment, output into its log through the pump), bounded by the spec's timeout, stoppable,
//! and its group torn down — whatever it left running too — before the result is returned.

use super::exit::ExitStatus;
use super::output::OutputHub;
use super::owner::Owner;
use super::spawn::{spawn, SpawnError};
use super::spec::CommandSpec;
use super::teardown::TeardownReport;
use std::future::Future;
use std::time::{Duration, Instant};

/// How the command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OneShotEnd<R> {
    /// The leader exited by itself.
    Exited(ExitStatus),
    /// It ran past `spec.timeout` and was stopped.
    TimedOut(Duration),
    /// `stop` fired first (with its value) and the command was stopped.
    Stopped(R),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OneShot<R> {
    pub end: OneShotEnd<R>,
    /// How the group's teardown went (leftovers of a finished command are killed here).
    pub teardown: TeardownReport,
    pub duration: Duration,
}

/// Runs `spec` to its end (or its timeout, or `stop`), its group registered under `owner`.
pub async fn run_once<R>(
    spec: &CommandSpec,
    owner: Owner,
    stop: impl Future<Output = R>,
) -> Result<OneShot<R>, SpawnError> {
    let started = Instant::now();
    let mut running = spawn(spec, &OutputHub::new(), owner)?;
    let limit = async {
        match spec.timeout {
            Some(limit) => {
                tokio::time::sleep(limit).await;
                limit
            }
            None => std::future::pending().await,
        }
    };
    let end = tokio::select! {
        status = running.wait() => OneShotEnd::Exited(status),
        limit = limit => OneShotEnd::TimedOut(limit),
        value = stop => OneShotEnd::Stopped(value),
    };
    let grace = match end {
        // Nothing should be left of a command that finished: what is, goes without ceremony.
        OneShotEnd::Exited(_) => spec.stop_timeout.min(Duration::from_secs(1)),
        _ => spec.stop_timeout,
    };
    let report = running.stop(spec.stop_signal, grace).await;
    Ok(OneShot {
        end,
        teardown: report,
        duration: started.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::owner::{Role, Scope};
    use crate::process::spec::CommandKind;

    fn owner() -> Owner {
        Owner::new(Scope::run("once-test"), Role::Other("once test".into()))
    }

    fn spec(dir: &std::path::Path, cmd: &str) -> CommandSpec {
        let mut spec = CommandSpec::new(
            "once",
            CommandKind::ShortLived,
            cmd,
            dir,
            dir.join("logs/once.log"),
        );
        spec.env = vec![("ONCE_VALUE".into(), "42".into())];
        spec
    }

    #[tokio::test]
    async fn runs_to_its_exit_with_its_env_and_logs_its_output() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = spec(dir.path(), "echo value=$ONCE_VALUE; exit 3");
        let done = run_once(&s, owner(), std::future::pending::<()>())
            .await
            .expect("spawn");
        assert_eq!(done.end, OneShotEnd::Exited(ExitStatus::Code(3)));
        let log = std::fs::read_to_string(dir.path().join("logs/once.log")).expect("log");
        assert_eq!(log, "value=42\n");
    }

    #[tokio::test]
    async fn a_timeout_or_a_stop_ends_it_and_its_group() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut s = spec(dir.path(), "sleep 30 & sleep 30");
        s.timeout = Some(Duration::from_millis(200));
        s.stop_timeout = Duration::from_millis(200);
        let done = run_once(&s, owner(), std::future::pending::<()>())
            .await
            .expect("spawn");
        assert_eq!(done.end, OneShotEnd::TimedOut(Duration::from_millis(200)));
        assert!(done.duration < Duration::from_secs(5), "{done:?}");
        s.timeout = None;
        let done = run_once(&s, owner(), tokio::time::sleep(Duration::from_millis(100)))
            .await
            .expect("spawn");
        assert_eq!(done.end, OneShotEnd::Stopped(()));
        assert!(done.teardown.leaked.is_empty(), "{done:?}");
    }
}
