//! SIGINT, SIGTERM, SIGHUP (the terminal or SSH session closed) and SIGQUIT become shutdown
//! requests, and so does every other signal whose default action would end the supervisor on the
//! spot with no record written and its children left running ([`ENDING`]: SIGUSR1, SIGALRM,
//! SIGXCPU from a CPU limit, …, sent by a stray `kill` or a CI runner). They escalate: the first is graceful (teardown with
//! grace periods), the second skips the grace periods, the third ends the process at once after
//! SIGKILLing every registered process group and giving the caller's last word (the reports held
//! in memory) [`LAST_WORD_LIMIT`] to be written. Installing handlers removes Ctrl-C's default
//! death, so the escalation is ours to build.

use crate::model::outcome::InterruptSignal;
use futures::StreamExt;
use nix::libc::SIGPWR;
use signal_hook::consts::{
    SIGALRM, SIGHUP, SIGINT, SIGIO, SIGPROF, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGVTALRM,
    SIGXCPU, SIGXFSZ,
};

/// The signals that end the supervisor in order: every signal whose default action terminates a
/// process and that can be caught (not SIGKILL; SIGPIPE is ignored by Rust's runtime; SIGSEGV and
/// its kind are faults of our own, not requests).
pub const ENDING: [i32; 13] = [
    SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGIO, SIGPWR,
    SIGXCPU, SIGXFSZ,
];
use signal_hook_tokio::Signals;
use std::sync::atomic::{AtomicI32, Ordering};

/// How long the third signal waits for the last word before the process exits regardless.
pub const LAST_WORD_LIMIT: std::time::Duration = std::time::Duration::from_secs(1);

/// What a received signal asks of the supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownRequest {
    /// Stop dispatching, stop agents, tear down with grace periods.
    Graceful(InterruptSignal),
    /// Tear down now: SIGKILL without waiting for grace periods.
    SkipGrace(InterruptSignal),
}

/// An ending signal the process received while no [`listen`]er was installed yet (0: none):
/// `supervisor watch` hears signals with a listener of its own and notes each here, so that a
/// suite it is starting, whose listener is not up yet, still answers it. Taken by the next
/// listener as its first signal.
static UNANSWERED: AtomicI32 = AtomicI32::new(0);

/// Notes `signal` for the next [`listen`]er (see [`UNANSWERED`]).
pub fn note_unanswered(signal: i32) {
    UNANSWERED.store(signal, Ordering::SeqCst);
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

/// What signal number `signal` is called (SIGUSR1 and the others: by its number).
pub fn interrupt_signal(signal: i32) -> InterruptSignal {
    match signal {
        SIGTERM => InterruptSignal::Terminate,
        SIGHUP => InterruptSignal::Hangup,
        SIGQUIT => InterruptSignal::Quit,
        SIGINT => InterruptSignal::Interrupt,
        other => InterruptSignal::Other(other),
    }
}

/// Listens for the [`ENDING`] signals. Must be called inside a tokio runtime. A signal noted
/// unanswered before (see [`note_unanswered`]) counts as the first one received.
/// `last_word` runs on the third signal, after every registered group was SIGKILLed, for at most
/// [`LAST_WORD_LIMIT`]; then the process exits with the first signal's code.
pub fn listen<F>(
    on_request: impl Fn(ShutdownRequest) + Send + 'static,
    last_word: impl FnOnce(InterruptSignal) -> F + Send + 'static,
) -> std::io::Result<SignalListener>
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let mut signals = Signals::new(ENDING)?;
    let handle = signals.handle();
    let task = tokio::spawn(async move {
        let mut first: Option<InterruptSignal> = None;
        let mut received = 0u32;
        let mut last_word = Some(last_word);
        // Taken after the handlers are installed: a signal from now on reaches the stream.
        let early = UNANSWERED.swap(0, Ordering::SeqCst);
        if early != 0 {
            received = 1;
            on_request(ShutdownRequest::Graceful(
                *first.get_or_insert(interrupt_signal(early)),
            ));
        }
        while let Some(signal) = signals.next().await {
            received += 1;
            let kind = *first.get_or_insert(interrupt_signal(signal));
            match received {
                1 => on_request(ShutdownRequest::Graceful(kind)),
                2 => on_request(ShutdownRequest::SkipGrace(kind)),
                _ => {
                    // The supervisor did not finish in time: nothing may survive us, and what is
                    // known is written, within a bound, before we go.
                    super::registry::sweep();
                    if let Some(last_word) = last_word.take() {
                        let _ = tokio::time::timeout(LAST_WORD_LIMIT, last_word(kind)).await;
                    }
                    // The ledger stays: should the last word not have been written, the next
                    // start finalises these runs from it.
                    super::registry::sweep();
                    super::subreaper::sweep_descendants();
                    let code = crate::model::outcome::ExitReason::Interrupted(kind).code();
                    std::process::exit(i32::from(code));
                }
            }
        }
    });
    Ok(SignalListener { handle, task })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_signal_noted_before_the_listener_is_its_first_request() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        note_unanswered(SIGTERM);
        let _listener = listen(
            move |request| {
                let _ = tx.send(request);
            },
            |_| async {},
        )
        .expect("listen");
        let request = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv()).await;
        assert_eq!(
            request.ok().flatten(),
            Some(ShutdownRequest::Graceful(InterruptSignal::Terminate))
        );
        assert_eq!(UNANSWERED.load(Ordering::SeqCst), 0, "taken once");
    }

    #[test]
    fn every_ending_signal_is_named_and_exits_128_plus_its_number() {
        use crate::model::outcome::ExitReason;
        for n in ENDING {
            let kind = interrupt_signal(n);
            let signal = nix::sys::signal::Signal::try_from(n).expect("a signal");
            assert_eq!(kind.name(), signal.as_str(), "{n}");
            assert_eq!(
                i32::from(ExitReason::Interrupted(kind).code()),
                128 + n,
                "{n}"
            );
        }
    }
}
