//! SIGINT, SIGTERM, SIGHUP (the terminal or SSH session closed) and SIGQUIT become shutdown
//! requests that escalate: the first is graceful (teardown with
//! grace periods), the second skips the grace periods, the third ends the process at once after
//! SIGKILLing every registered process group. Installing handlers removes Ctrl-C's default death,
//! so the escalation is ours to build.

use crate::model::outcome::InterruptSignal;
use futures::StreamExt;
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook_tokio::Signals;

/// What a received signal asks of the supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownRequest {
    /// Stop dispatching, stop agents, tear down with grace periods.
    Graceful(InterruptSignal),
    /// Tear down now: SIGKILL without waiting for grace periods.
    SkipGrace(InterruptSignal),
}

/// Keeps the signal handlers installed while alive.
pub struct SignalListener {
    handle: signal_hook_tokio::Handle,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SignalListener {
    fn drop(&mut self) {
        self.handle.close();
        self.task.abort();
    }
}

fn interrupt_signal(signal: i32) -> InterruptSignal {
    match signal {
        SIGTERM => InterruptSignal::Terminate,
        SIGHUP => InterruptSignal::Hangup,
        SIGQUIT => InterruptSignal::Quit,
        _ => InterruptSignal::Interrupt,
    }
}

/// Listens for SIGINT, SIGTERM, SIGHUP and SIGQUIT. Must be called inside a tokio runtime.
pub fn listen(
    on_request: impl Fn(ShutdownRequest) + Send + 'static,
) -> std::io::Result<SignalListener> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT])?;
    let handle = signals.handle();
    let task = tokio::spawn(async move {
        let mut first: Option<InterruptSignal> = None;
        let mut received = 0u32;
        while let Some(signal) = signals.next().await {
            received += 1;
            let kind = *first.get_or_insert(interrupt_signal(signal));
            match received {
                1 => on_request(ShutdownRequest::Graceful(kind)),
                2 => on_request(ShutdownRequest::SkipGrace(kind)),
                _ => {
                    // The supervisor did not finish in time: nothing may survive us.
                    super::registry::sweep();
                    let code = crate::model::outcome::ExitReason::Interrupted(kind).code();
                    std::process::exit(i32::from(code));
                }
            }
        }
    });
    Ok(SignalListener { handle, task })
}
