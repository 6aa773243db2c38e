//! Files the supervisor reads by name that are not what they seem (docs/troubleshooting.md): a
//! FIFO, `/dev/zero` behind a symlink, a 2 GB sparse file, as the history, the config or a test.
//! Each command ends on its own, at once, with a clear error or warning naming the file: none
//! blocks on the FIFO, spins on `/dev/zero` or reads the 2 GB. A command that does not end within
//! the bound is killed and the test fails.

use crate::common::Project;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Far above what any of these takes when it does not block (a fraction of a second each), far
/// below "hangs".
const BOUND: Duration = Duration::from_secs(30);

struct Ended {
    code: Option<i32>,
    out: String,
}

/// Runs `cmd`, killing it (and failing) past [`BOUND`]; stdout and stderr together.
fn bounded(mut cmd: Command, what: &str) -> Ended {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let readers = [
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stdout.read_to_string(&mut s);
            s
        }),
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        }),
    ];
    let begun = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if begun.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not end within {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out: Vec<String> = readers
        .into_iter()
        .map(|r| r.join().expect("reader"))
        .collect();
    Ended {
        code: status.code(),
        out: out.join("\n"),
    }
}

fn project() -> Project {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write(
        "tests/ok.test.toml",
        "[[steps]]\ninstruction = \"`echo ok`\"\n",
    );
    p
}

fn fifo(path: &Path) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("dir");
    }
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o644)).expect("mkfifo");
}

fn zero(path: &Path) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("dir");
    }
    std::os::unix::fs::symlink("/dev/zero", path).expect("symlink");
}

fn huge(path: &Path) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("dir");
    }
    std::fs::File::create(path)
        .and_then(|f| f.set_len(2 * 1024 * 1024 * 1024))
        .expect("sparse file");
}

fn run(p: &Project, args: &[&str]) -> Ended {
    let mut cmd = p.supervisor();
    cmd.args(args);
    let ended = bounded(cmd, &format!("supervisor {}", args.join(" ")));
    p.assert_nothing_survives();
    ended
}

#[test]
fn a_special_or_huge_history_is_refused_at_once_by_every_command() {
    for (make, says) in [
        (fifo as fn(&Path), "not a regular file (a FIFO)"),
        (zero, "not a regular file (a character device)"),
    ] {
        let p = project();
        let history = p.root().join(".bugatti/history.jsonl");
        make(&history);
        // `start`: the tests run and their records are written; the history line cannot be, and
        // that lost record is a harness error, said naming the file.
        let e = run(&p, &["start"]);
        assert_eq!(e.code, Some(3), "{}", e.out);
        assert!(
            e.out.contains("history.jsonl") && e.out.contains(says),
            "{}",
            e.out
        );
        let suite = p.suite_dir();
        for file in ["summary.json", "junit.xml", "report.html"] {
            assert!(suite.join(file).is_file(), "{file} is written");
        }
        let e = run(&p, &["start", "--shard", "1/2"]);
        assert!(e.out.contains(says), "--shard: {}", e.out);
        let e = run(&p, &["report", "--trends"]);
        assert!(e.out.contains(says), "report --trends: {}", e.out);
        let merged = p.root().join("merged");
        let e = run(
            &p,
            &[
                "merge",
                &suite.display().to_string(),
                "--out",
                &merged.display().to_string(),
            ],
        );
        assert!(e.out.contains(says), "merge: {}", e.out);
        assert!(merged.join("summary.json").is_file(), "merge: {}", e.out);
        let e = run(&p, &["check"]);
        assert_eq!(e.code, Some(0), "check: {}", e.out);
        // The special file is left as it was, not replaced.
        let meta = std::fs::symlink_metadata(&history).expect("still there");
        assert!(!meta.is_file(), "the history was replaced");
    }

    // 2 GB (sparse): only its newest part is read, with a warning; the run passes.
    let p = project();
    huge(&p.root().join(".bugatti/history.jsonl"));
    let e = run(&p, &["start"]);
    assert_eq!(e.code, Some(0), "{}", e.out);
    assert!(e.out.contains("only its newest"), "{}", e.out);
    let e = run(&p, &["report", "--trends"]);
    assert!(e.out.contains("only its newest"), "{}", e.out);
}

#[test]
fn a_special_or_huge_config_is_a_clear_error_at_once() {
    for (make, says) in [
        (fifo as fn(&Path), "not a regular file (a FIFO)"),
        (zero, "not a regular file (a character device)"),
        (huge, "2147483648 bytes"),
    ] {
        let p = Project::new();
        p.write(
            "tests/ok.test.toml",
            "[[steps]]\ninstruction = \"`echo ok`\"\n",
        );
        make(&p.root().join("bugatti.config.toml"));
        for args in [&["check"][..], &["start"][..]] {
            let e = run(&p, args);
            assert_eq!(e.code, Some(2), "{args:?}: {}", e.out);
            assert!(
                e.out.contains("bugatti.config.toml") && e.out.contains(says),
                "{args:?}: {}",
                e.out
            );
        }
    }
}

#[test]
fn a_special_file_named_like_a_test_is_skipped_with_a_note_and_a_huge_one_refused() {
    let p = project();
    fifo(&p.root().join("tests/pipe.test.toml"));
    zero(&p.root().join("tests/zero.test.toml"));
    for args in [&["check"][..], &["start"][..]] {
        let e = run(&p, args);
        assert_eq!(e.code, Some(0), "{args:?}: {}", e.out);
        assert!(
            e.out
                .contains("pipe.test.toml: not a regular file (a FIFO)")
                && e.out
                    .contains("zero.test.toml: not a regular file (a character device)"),
            "{args:?}: {}",
            e.out
        );
    }
    let p = project();
    huge(&p.root().join("tests/big.test.toml"));
    let e = run(&p, &["check"]);
    assert_eq!(e.code, Some(2), "{}", e.out);
    assert!(
        e.out.contains("big.test.toml") && e.out.contains("2147483648 bytes"),
        "{}",
        e.out
    );
}
