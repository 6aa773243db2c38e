//! The terminal's echo of control characters while the live view draws (see
//! [`QuietControlEcho`]): the one place the supervisor changes a terminal setting.

use std::io::IsTerminal;

/// While the live view draws, the terminal does not echo control characters as `^C`. The bars
/// leave the cursor in the last column (indicatif pads every line to the terminal's width), so a
/// `^C` echoed by Ctrl+C wrapped to a line the view did not know of, and its next redraw, one
/// line too high, left a stale spinner on the screen. The setting is restored when the view ends.
pub struct QuietControlEcho {
    original: nix::sys::termios::Termios,
}

impl QuietControlEcho {
    /// `None` when stdin is not a terminal, the supervisor is not its foreground job (started
    /// with `&`: the terminal is someone else's to set), or it already echoes no control
    /// characters.
    pub fn start() -> Option<Self> {
        use nix::sys::termios::{tcgetattr, LocalFlags};
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return None;
        }
        let foreground = nix::unistd::tcgetpgrp(&stdin).ok()? == nix::unistd::getpgrp();
        if !foreground {
            return None;
        }
        let original = tcgetattr(&stdin).ok()?;
        if !original.local_flags.contains(LocalFlags::ECHOCTL) {
            return None;
        }
        let mut quiet = original.clone();
        quiet.local_flags.remove(LocalFlags::ECHOCTL);
        set_terminal(&quiet).then_some(Self { original })
    }
}

/// Sets stdin's terminal attributes with SIGTTOU blocked in this thread: a job moved to the
/// background (Ctrl+Z, `bg`) would otherwise be stopped by the change instead of ending.
fn set_terminal(attributes: &nix::sys::termios::Termios) -> bool {
    use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow, Signal};
    let mut block = SigSet::empty();
    block.add(Signal::SIGTTOU);
    let mut before = SigSet::empty();
    let blocked = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&block), Some(&mut before)).is_ok();
    let set = nix::sys::termios::tcsetattr(
        std::io::stdin(),
        nix::sys::termios::SetArg::TCSANOW,
        attributes,
    )
    .is_ok();
    if blocked {
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&before), None);
    }
    set
}

impl Drop for QuietControlEcho {
    fn drop(&mut self) {
        set_terminal(&self.original);
    }
}
