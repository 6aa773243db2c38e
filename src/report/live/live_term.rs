//! The live view's terminal: indicatif's drawing with real line ends.
//!
//! indicatif pads every line it draws with spaces to the terminal's width and lets the terminal's
//! automatic wrap move to the next line: on screen the same, but a `script` log, `tmux
//! capture-pane` or a copied recap gets one endless line (docs/reports.md, "What a run leaves behind"). This
//! [`TermLike`] keeps indicatif's model of the cursor (at the end of the last line it drew) and
//! writes what the padding stood for instead: the rest of the line erased, and a newline *when
//! the next line is written*. A newline written at once would put the cursor one row lower than
//! indicatif thinks when it moves back up to redraw its bars; a cursor movement before the next
//! line therefore cancels the pending newline, as it cancels a real terminal's pending wrap.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use console::Term;
use indicatif::TermLike;

#[derive(Debug, Default)]
struct TermState {
    /// The last write was a line's text: the next all-spaces write is its padding.
    expect_filler: bool,
    /// A line was ended by its padding: the next text starts on the next line.
    pending_newline: bool,
}

/// A terminal (stdout, buffered) whose drawn lines end in `\n`; cheap to clone, every clone
/// shares one cursor state.
#[derive(Debug, Clone)]
pub struct LineTerm {
    term: Term,
    state: Arc<Mutex<TermState>>,
}

impl LineTerm {
    pub fn stdout() -> Self {
        Self::new(Term::buffered_stdout())
    }

    pub fn new(term: Term) -> Self {
        Self {
            term,
            state: Arc::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, TermState> {
        // A poisoned lock only means a panic mid-draw: the state is two flags, still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ends the last line drawn, when nothing more is drawn below it (no bar left, or the view
    /// is going away): the next output, the shell's prompt included, starts on a line of its own.
    pub fn end_line(&self) {
        let mut state = self.state();
        if state.pending_newline {
            state.pending_newline = false;
            state.expect_filler = false;
            let _ = self.term.write_str("\n");
        }
        let _ = self.term.flush();
    }

    fn moved(&self) {
        let mut state = self.state();
        state.pending_newline = false;
        state.expect_filler = false;
    }
}

impl TermLike for LineTerm {
    fn width(&self) -> u16 {
        self.term.size().1
    }

    fn height(&self) -> u16 {
        self.term.size().0
    }

    fn move_cursor_up(&self, n: usize) -> io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.moved();
        self.term.move_cursor_up(n)
    }

    fn move_cursor_down(&self, n: usize) -> io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.moved();
        self.term.move_cursor_down(n)
    }

    fn move_cursor_right(&self, n: usize) -> io::Result<()> {
        self.term.move_cursor_right(n)
    }

    fn move_cursor_left(&self, n: usize) -> io::Result<()> {
        self.term.move_cursor_left(n)
    }

    fn write_line(&self, s: &str) -> io::Result<()> {
        let newline = std::mem::take(&mut self.state().pending_newline);
        self.state().expect_filler = false;
        if newline {
            self.term.write_str("\n")?;
        }
        self.term.write_line(s)
    }

    fn write_str(&self, s: &str) -> io::Result<()> {
        let mut state = self.state();
        if state.expect_filler && s.bytes().all(|b| b == b' ') {
            // The padding: erase whatever an older, longer line left, and end the line later.
            state.expect_filler = false;
            state.pending_newline = true;
            // A line as wide as the terminal has no padding: its cursor sits on its last
            // character, which an erase would take away.
            if s.is_empty() {
                return Ok(());
            }
            return self.term.write_str("\x1b[K");
        }
        state.expect_filler = false;
        if s.starts_with('\r') {
            // Back to the start of the same row: a pending wrap is cancelled in a terminal too.
            state.pending_newline = false;
            return self.term.write_str(s);
        }
        if s.is_empty() {
            return Ok(());
        }
        if std::mem::take(&mut state.pending_newline) {
            self.term.write_str("\n")?;
        }
        state.expect_filler = true;
        self.term.write_str(s)
    }

    fn clear_line(&self) -> io::Result<()> {
        self.moved();
        self.term.clear_line()
    }

    fn flush(&self) -> io::Result<()> {
        self.term.flush()
    }
}
