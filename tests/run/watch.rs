//! `supervisor watch` (docs/cli.md "watch"): the real binary watching a temporary project. A saved
//! test file runs that test again, replayed with no agent (`--replay only`, from the recordings a
//! first `start` made with the scripted `command` agent); an app file `[watch] paths` names runs
//! the whole selection; the watch's own outputs (`.bugatti/`, the recordings) run nothing; a
//! recording that no longer holds fails the run with its drift. One suite at a time: saves during
//! a run make one more run, not one each. SIGINT during a run tears it down as `start` does and
//! SIGTERM between runs ends the watch at once; no process of either survives. Every wait is on
//! an event: a line the watch printed, a file a step wrote.

use crate::common::fault;
use crate::common::records::*;
use crate::common::Project;
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long any one awaited event may take before the test fails (a guard, not a measurement).
const GUARD: Duration = Duration::from_secs(120);

/// A running `supervisor watch` and the lines it printed.
struct Watch {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Watch {
    fn start(p: &Project, args: &[&str]) -> Self {
        let mut child = p
            .supervisor()
            .arg("watch")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn supervisor watch");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut watch = Self {
            child,
            lines,
            seen: Vec::new(),
        };
        watch.wait_for("the watch to be ready", |l| {
            l.starts_with("watch: watching")
        });
        watch
    }

    /// The next printed line that `wanted` accepts; fails (with every line seen) when the watch
    /// ends first or the guard runs out.
    #[track_caller]
    fn wait_for(&mut self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + GUARD;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if wanted(&line) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "waited for {what}; the watch printed:\n{}",
                        self.seen.join("\n")
                    )
                }
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "the watch ended before {what}; it printed:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// The end line of run `n`: `watch: run N <outcome> in …`.
    #[track_caller]
    fn run_ended(&mut self, n: u32) -> String {
        let prefix = format!("watch: run {n} ");
        self.wait_for(&format!("run {n} to end"), |l| l.starts_with(&prefix))
    }

    /// Signals the watch and waits for it to exit; its exit code and the lines it printed last.
    fn stop(mut self, signal: &str) -> (Option<i32>, Vec<String>) {
        fault::signal(self.child.id(), signal);
        let deadline = Instant::now() + GUARD;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the watch did not end after SIG{signal}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let rest: Vec<String> = self.lines.try_iter().collect();
        (status.code(), rest)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Every suite the project holds, oldest first.
fn suites(p: &Project) -> Vec<SuiteSummary> {
    let dir = p.root().join(".bugatti/suites");
    let mut dirs: Vec<_> = std::fs::read_dir(&dir)
        .expect("suites")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|d| d.join("summary.json").is_file())
        .collect();
    dirs.sort();
    let mut summaries: Vec<SuiteSummary> = dirs
        .iter()
        .map(|d| crate::common::read_json_file(&d.join("summary.json")))
        .collect();
    summaries.sort_by_key(|s| s.started_at);
    summaries
}

/// The root tests of the newest suite, by file.
fn newest_suite_tests(p: &Project) -> Vec<String> {
    let newest = suites(p).pop().expect("a suite");
    let mut tests: Vec<String> = newest.tests.iter().map(|t| t.test_file.clone()).collect();
    tests.sort();
    tests
}

/// A one-step test whose directive agent runs `app/<name>.sh` through the console and expects
/// `expected` in its output; the script prints `says`.
fn write_check(p: &Project, name: &str, says: &str, expected: &str) {
    p.write(&format!("app/{name}.sh"), &format!("echo '{says}'\n"));
    p.write(
        &format!("{name}.test.toml"),
        &format!(
            "[[steps]]\ninstruction = '''\nmcp exec_command {{\"cmd\": \"sh ${{BUGATTI_PROJECT_ROOT}}/app/{name}.sh\", \"yield_time_ms\": 10000}}\nexpect {expected}\n'''\n"
        ),
    );
}

/// Appends to a file of the project: a save that leaves what it means as it was.
fn append(p: &Project, rel: &str, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(p.root().join(rel))
        .expect("open");
    file.write_all(text.as_bytes()).expect("append");
}

#[test]
fn a_saved_test_replays_alone_an_app_file_replays_all_and_the_outputs_run_nothing() {
    // The app globs also name what the watch writes (the `--junit` copy, notes in its folders):
    // those must still run nothing.
    let p = Project::with_directive_agent(
        "\n[watch]\npaths = [\"app/*.sh\", \"**/*.txt\", \"**/*.xml\"]\n",
    );
    p.write("report/README.txt", "the junit copy goes here\n");
    write_check(&p, "stock", "stock 12", "stock 12");
    write_check(&p, "price", "price 4.20", "price 4.20");
    let first = p.start();
    crate::common::assert_exit(&first, 0);
    assert!(p.root().join("bugatti.replay/stock.replay.json").is_file());

    let mut watch = Watch::start(&p, &["--junit", "report/junit.xml"]);
    // A test file saved: that test alone, replayed.
    append(&p, "stock.test.toml", "# saved\n");
    let line = watch.run_ended(1);
    assert!(line.starts_with("watch: run 1 passed"), "{line}");
    assert!(
        line.contains("1 test: stock.test.toml (stock.test.toml changed)"),
        "{line}"
    );
    assert_eq!(newest_suite_tests(&p), ["stock.test.toml"]);
    let stock = p
        .newest_run_by_test()
        .remove("stock")
        .expect("a run of stock");
    assert_eq!(stock.steps[0].mode, Some(StepMode::Replayed), "{stock:?}");

    // The watch's own outputs, then an app file: the outputs run nothing (the next run is the app
    // file's, and names it alone), the app file runs the whole selection.
    p.write(".bugatti/scratch/notes.txt", "written by hand\n");
    p.write("bugatti.replay/notes.txt", "written by hand\n");
    p.write("app/price.sh", "echo 'price 4.20'\n");
    let line = watch.run_ended(2);
    assert!(line.starts_with("watch: run 2 passed"), "{line}");
    assert!(
        line.contains("2 tests: price.test.toml, stock.test.toml (app/price.sh changed)"),
        "{line}"
    );
    assert_eq!(
        newest_suite_tests(&p),
        ["price.test.toml", "stock.test.toml"]
    );

    // The app changed what it prints: the recording no longer holds, and without an agent the
    // run fails with the drift.
    p.write("app/price.sh", "echo 'price 9.99'\n");
    let line = watch.run_ended(3);
    assert!(line.starts_with("watch: run 3 failed"), "{line}");
    let price = p
        .newest_run_by_test()
        .remove("price")
        .expect("a run of price");
    assert_eq!(price.steps[0].status, StepStatus::Error, "{price:?}");
    let message = price.steps[0].message.clone().unwrap_or_default();
    assert!(message.contains("not replayed"), "{message}");

    // SIGTERM between runs: the watch ends at once, by the signal's code.
    let (code, rest) = watch.stop("TERM");
    assert_eq!(code, Some(143), "{rest:?}");
    assert_eq!(
        rest.last().map(String::as_str),
        Some("watch: stopped by SIGTERM")
    );
    assert!(p.root().join("report/junit.xml").is_file());
    // The first `start` and the watch's three runs: none for the outputs.
    assert_eq!(suites(&p).len(), 4);
    p.assert_nothing_survives();
}

/// A shell-provider project: a server, and a test whose step writes its shell's pid to `out/`
/// and waits there until `out/release` exists.
fn project_with_a_held_step() -> Project {
    let p = Project::new();
    let out = p.root().join("out");
    std::fs::create_dir_all(&out).expect("out");
    p.write(
        "bugatti.config.toml",
        r#"[provider]
name = "shell"

[ports]
APP_PORT = "auto"

[commands.server]
kind = "long_lived"
cmd = "python3 -m http.server ${APP_PORT} --bind 127.0.0.1"
readiness = { tcp = "127.0.0.1:${APP_PORT}" }
stop_timeout_secs = 2
"#,
    );
    p.write(
        "held.test.toml",
        &format!(
            "[[steps]]\ninstruction = '''\nWait for the release:\n```sh\necho $$ > {out}/step.pid.tmp && mv {out}/step.pid.tmp {out}/step.pid\nwhile [ ! -f {out}/release ]; do sleep 0.1; done\n```\n'''\n",
            out = out.display()
        ),
    );
    p
}

/// The pid a held step wrote, once it has.
fn held_step_pid(out: &Path) -> i32 {
    let deadline = Instant::now() + GUARD;
    loop {
        if let Some(pid) = std::fs::read_to_string(out.join("step.pid"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "the step never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` is gone (or a zombie its parent has yet to reap), within the guard.
fn gone(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        });
        if !alive {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn saves_during_a_run_make_one_more_run_and_sigint_mid_run_leaves_no_process() {
    let p = project_with_a_held_step();
    let out = p.root().join("out");
    let mut watch = Watch::start(&p, &[]);
    append(&p, "held.test.toml", "# saved\n");
    watch.wait_for("run 1 to start", |l| {
        l.starts_with("watch: run 1: held.test.toml changed")
    });
    held_step_pid(&out);
    // Three saves while the run is held: one more run for all of them.
    for n in 0..3 {
        append(&p, "held.test.toml", &format!("# saved again {n}\n"));
        std::thread::sleep(Duration::from_millis(300));
    }
    std::fs::write(out.join("release"), "").expect("release");
    let line = watch.run_ended(1);
    assert!(line.starts_with("watch: run 1 passed"), "{line}");
    let line = watch.run_ended(2);
    assert!(line.starts_with("watch: run 2 passed"), "{line}");
    assert!(line.ends_with("(held.test.toml changed)"), "{line}");
    // The next run is the config's: no run was left queued for the other saves.
    std::fs::remove_file(out.join("release")).expect("hold again");
    std::fs::remove_file(out.join("step.pid")).expect("a fresh pid");
    append(&p, "bugatti.config.toml", "\n");
    let line = watch.wait_for("run 3 to start", |l| l.starts_with("watch: run 3:"));
    assert!(line.contains("bugatti.config.toml changed"), "{line}");

    // SIGINT mid-step: the run is torn down as `start` tears it down, and the watch exits 130.
    let step = held_step_pid(&out);
    let live = fault::project_processes(&p);
    assert!(!live.is_empty(), "the server and the step run");
    let (code, rest) = watch.stop("INT");
    assert_eq!(code, Some(130), "{rest:?}");
    assert!(
        rest.iter()
            .any(|l| l.starts_with("watch: run 3 interrupted by SIGINT")),
        "{rest:?}"
    );
    for pid in live.iter().copied().chain([step]) {
        assert!(gone(pid), "process {pid} survived the watch");
    }
    let held = p
        .newest_run_by_test()
        .remove("held")
        .expect("a run of held");
    assert_eq!(held.outcome, Some(RunOutcome::Interrupted), "{held:?}");
    p.assert_nothing_survives();
}

#[test]
fn with_agent_a_drifted_step_goes_to_the_agent_which_records_it_anew() {
    let p = Project::with_directive_agent("\n[watch]\npaths = [\"app/*.sh\"]\n");
    // The agent checks that a price is shown, not which: a new price passes by the agent.
    write_check(&p, "price", "price 4.20", "price");
    crate::common::assert_exit(&p.start(), 0);
    let recording = p.root().join("bugatti.replay/price.replay.json");
    let before = std::fs::read_to_string(&recording).expect("a recording");

    let mut watch = Watch::start(&p, &["--agent"]);
    p.write("app/price.sh", "echo 'price 9.99'\n");
    let line = watch.run_ended(1);
    assert!(line.starts_with("watch: run 1 passed"), "{line}");
    let price = p
        .newest_run_by_test()
        .remove("price")
        .expect("a run of price");
    assert_eq!(price.steps[0].mode, Some(StepMode::Agent), "{price:?}");
    let after = std::fs::read_to_string(&recording).expect("the recording");
    assert!(
        after.contains("price 9.99") && !before.contains("price 9.99"),
        "recorded anew: {after}"
    );
    // The recording the agent renewed is the watch's own output: it started no run. The next
    // save replays it.
    append(&p, "price.test.toml", "# saved\n");
    let line = watch.run_ended(2);
    assert!(line.starts_with("watch: run 2 passed"), "{line}");
    assert!(line.ends_with("(price.test.toml changed)"), "{line}");
    let price = p
        .newest_run_by_test()
        .remove("price")
        .expect("a run of price");
    assert_eq!(price.steps[0].mode, Some(StepMode::Replayed), "{price:?}");
    let (code, _) = watch.stop("INT");
    assert_eq!(code, Some(130));
    p.assert_nothing_survives();
}
