//! The live view on a real terminal (a pseudo-terminal the supervisor has as its controlling
//! terminal, as in a shell): Ctrl+C typed mid-step stops the suite, the terminal does not echo
//! `^C` into the bars while they are drawn (the bars end in the last column, so an echoed `^C`
//! wrapped to a line the view did not know of and left a stale spinner on the screen), and the
//! terminal's own setting is back once the supervisor has gone.

use crate::common;
use crate::common::Project;
use nix::pty::{openpty, Winsize};
use nix::sys::termios::{tcgetattr, LocalFlags};
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Reads the terminal's output into a channel until the supervisor has gone.
fn reader(master: &OwnedFd) -> mpsc::Receiver<Vec<u8>> {
    let mut file = std::fs::File::from(master.try_clone().expect("dup master"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 65536];
        while let Ok(n) = file.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    rx
}

/// What a run on a terminal interrupted by `presses` Ctrl+C showed: its exit code, its output,
/// whether the terminal echoed control characters while the bars were drawn and after it ended.
struct TerminalRun {
    code: Option<i32>,
    text: String,
    echoes_during: bool,
    echoes_after: bool,
}

fn run_on_a_terminal(presses: usize) -> Option<TerminalRun> {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write("a.test.toml", "[[steps]]\ninstruction = \"`sleep 30`\"\n");
    p.write("b.test.toml", "[[steps]]\ninstruction = \"`sleep 30`\"\n");
    let size = Winsize {
        ws_row: 30,
        ws_col: 100,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = match openpty(Some(&size), None) {
        Ok(pty) => pty,
        Err(e) => {
            common::skip::skip(
                "live view on a terminal",
                format!("no pseudo-terminal here ({e})"),
            );
            return None;
        }
    };
    let echoes_before = tcgetattr(&pty.master)
        .expect("termios")
        .local_flags
        .contains(LocalFlags::ECHOCTL);
    assert!(echoes_before, "a new terminal echoes control characters");
    let slave = pty.slave.as_raw_fd();
    let mut cmd = p.supervisor();
    cmd.arg("start")
        .env_remove("NO_COLOR")
        .env_remove("CI")
        .env("TERM", "xterm")
        .stdin(Stdio::from(pty.slave.try_clone().expect("dup")))
        .stdout(Stdio::from(pty.slave.try_clone().expect("dup")))
        .stderr(Stdio::from(pty.slave.try_clone().expect("dup")));
    // Its own session with the terminal as controlling terminal: Ctrl+C reaches it as a shell's
    // foreground job.
    unsafe {
        cmd.pre_exec(move || {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            if libc::ioctl(slave, libc::TIOCSCTTY, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("supervisor starts");
    drop(pty.slave);
    let output = reader(&pty.master);
    let mut seen = Vec::new();
    // Both steps running: the bars are drawn.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !String::from_utf8_lossy(&seen).contains("step 1: `sleep 30`") {
        assert!(
            Instant::now() < deadline,
            "no bars: {}",
            String::from_utf8_lossy(&seen)
        );
        if let Ok(chunk) = output.recv_timeout(Duration::from_millis(100)) {
            seen.extend(chunk);
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let echoes_during = tcgetattr(&pty.master)
        .expect("termios")
        .local_flags
        .contains(LocalFlags::ECHOCTL);
    for _ in 0..presses {
        nix::unistd::write(&pty.master, b"\x03").expect("Ctrl+C");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The steps' timeout is the default (far away): only the interrupt ends this run.
    let status = child.wait().expect("wait");
    while let Ok(chunk) = output.recv_timeout(Duration::from_millis(500)) {
        seen.extend(chunk);
    }
    let text = String::from_utf8_lossy(&seen).into_owned();
    let echoes_after = tcgetattr(&pty.master)
        .expect("termios")
        .local_flags
        .contains(LocalFlags::ECHOCTL);
    p.assert_nothing_survives();
    Some(TerminalRun {
        code: status.code(),
        text,
        echoes_during,
        echoes_after,
    })
}

#[test]
fn ctrl_c_on_a_terminal_leaves_no_echo_in_the_bars_and_the_terminal_as_it_was() {
    let Some(run) = run_on_a_terminal(1) else {
        return;
    };
    let text = &run.text;
    assert_eq!(run.code, Some(130), "{text}");
    assert!(!run.echoes_during, "the live view turned the ^C echo off");
    assert!(!text.contains("^C"), "^C was echoed into the bars: {text}");
    assert!(text.contains("SIGINT: stopping"), "{text}");
    assert!(
        run.echoes_after,
        "the terminal's echo is restored when the supervisor ends"
    );
}

#[test]
fn three_ctrl_c_still_give_the_terminal_back_as_it_was() {
    let Some(run) = run_on_a_terminal(3) else {
        return;
    };
    assert_eq!(run.code, Some(130), "{}", run.text);
    assert!(
        run.echoes_after,
        "restored on the way out of a third signal: {}",
        run.text
    );
}

/// What a row of a terminal shows of one line of a log: the text after its last carriage
/// return, its escape sequences taken out (a redraw of the same row is a `\r` and the new text).
fn shown(line: &str) -> String {
    let tail = line.rsplit('\r').next().unwrap_or_default();
    let mut out = String::new();
    let mut chars = tail.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.next_if_eq(&'[').is_some() {
                while chars.next().is_some_and(|c| !c.is_ascii_alphabetic()) {}
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// `script -qc 'supervisor start' log`, as a user keeps a terminal session: each event is a line
/// of the log, newline-terminated, none padded to the terminal's width and run into the next.
#[test]
fn a_script_log_of_the_live_view_has_one_line_per_event() {
    let Some(script) = common::skip::on_path("script") else {
        common::skip::skip(
            "a script log of the live view",
            "no `script` (util-linux) on PATH",
        );
        return;
    };
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "a.test.toml",
        "[[steps]]\ninstruction = \"`sleep 0.3`\"\n[[steps]]\ninstruction = \"`sleep 0.2; false`\"\n",
    );
    p.write("b.test.toml", "[[steps]]\ninstruction = \"`sleep 0.2`\"\n");
    let log = p.root().join("terminal.log");
    let status = std::process::Command::new(script)
        .current_dir(p.root())
        .env_remove("NO_COLOR")
        .env_remove("CI")
        .env("TERM", "xterm")
        .env("BUGATTI_CONFIG_HOME", p.root().join(".no-global-config"))
        .arg("-qec")
        .arg(format!("{} start", env!("CARGO_BIN_EXE_supervisor")))
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .expect("script runs");
    p.assert_nothing_survives();
    let bytes = std::fs::read(&log).expect("the log");
    let text = String::from_utf8_lossy(&bytes);
    assert_eq!(status.code(), Some(1), "a failing suite: {text}");
    assert!(text.contains('\x1b'), "the live view was drawn: {text}");
    let rows: Vec<String> = text.lines().map(shown).collect();
    let row_of = |start: &str| {
        let found: Vec<&String> = rows.iter().filter(|r| r.contains(start)).collect();
        assert_eq!(found.len(), 1, "one row has {start:?}: {rows:#?}");
        found[0].clone()
    };
    for (start, end) in [
        ("Running 2 root tests", ")"),
        ("] PASSED", "report.md"),
        ("] FAILED", "report.md"),
        ("Summary: 2 root tests", "1 failed"),
        ("HTML report: ", "report.html"),
    ] {
        let row = row_of(start);
        assert!(
            row.starts_with(start) || row.starts_with('[') && row[4..].starts_with(start),
            "{start:?} begins its row: {row:?}"
        );
        assert!(
            row.ends_with(end),
            "{start:?} ends its row, unpadded: {row:?}"
        );
    }
    assert!(
        rows.iter().all(|r| !r.ends_with("   ")),
        "no row padded to the width: {rows:#?}"
    );
}
