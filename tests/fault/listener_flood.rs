//! Another local process floods the supervisor's loopback listeners (the agent console, and the
//! browser's DevTools endpoint during a `[browser]` step) with thousands of idle connections
//! mid-step, the supervisor's open-files limit lowered to 600: the run still writes every record
//! and exits as its test decides, because each listener serves a bounded number of connections
//! and closes the rest (docs/troubleshooting.md).

use crate::common::assert_exit;
use crate::common::records::*;
use crate::common::Project;
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::Output;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The loopback TCP ports `pid` listens on.
fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|t| {
            let t = t.to_string_lossy().into_owned();
            Some(t.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    let text = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.get(3) != Some(&"0A") || !inodes.contains(*f.get(9)?) {
                return None;
            }
            u16::from_str_radix(f.get(1)?.rsplit(':').next()?, 16).ok()
        })
        .collect()
}

const FLOOD: &str = r#"
import resource, socket, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
ports = [int(p) for p in sys.argv[2:]]
held = []
for i in range(int(sys.argv[1])):
    try:
        s = socket.create_connection(("127.0.0.1", ports[i % len(ports)]), timeout=2)
        held.append(s)
    except OSError:
        pass
print("FLOODING", len(held), flush=True)
time.sleep(120)
"#;

/// `supervisor start` in `p` with its open-files limit at 600; once it listens on `listeners`
/// loopback ports, another process opens 2000 idle connections spread over them and holds them.
/// Its output, and how many connections the flood held.
fn start_flooded(p: &Project, listeners: usize) -> (Output, usize) {
    let mut cmd = p.supervisor();
    cmd.arg("start")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 600,
                rlim_max: 600,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().expect("supervisor");
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(30);
    let ports = loop {
        let ports = listening_ports(pid);
        if ports.len() >= listeners {
            break ports;
        }
        assert!(
            Instant::now() < deadline,
            "the supervisor never listened on {listeners} port(s): {ports:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut flood = std::process::Command::new("python3")
        .args(["-c", FLOOD, "2000"])
        .args(ports.iter().map(u16::to_string))
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("flood");
    let mut line = String::new();
    BufReader::new(flood.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("flood said");
    let out = child.wait_with_output().expect("supervisor");
    let _ = flood.kill();
    let _ = flood.wait();
    p.assert_nothing_survives();
    assert!(line.starts_with("FLOODING"), "{line}");
    let held: usize = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    (out, held)
}

#[test]
fn thousands_of_idle_connections_leave_the_records_and_the_exit_code() {
    let p = Project::with_directive_agent("");
    p.write(
        "flood.test.toml",
        "[[steps]]\ninstruction = '''\nsleep 6\nmcp list_logs {}\n'''\n",
    );
    let (out, held) = start_flooded(&p, 1);
    assert!(held >= 1000, "the flood held {held} connections");
    assert_exit(&out, 0);
    let record = p.record_for("flood.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Passed), "{record:?}");
    assert!(p.suite_dir().join("summary.json").is_file());
    assert!(p.suite_dir().join("report.html").is_file());
}

/// The same flood over the console and the browser's DevTools endpoint (the supervisor's two
/// listeners of a `[browser]` session) during a step. The step opens a page through the endpoint
/// and asks it for the browser's version once the flood's silent connections were closed, and
/// passes; the step's capture (through the same endpoint) takes the page's screenshot; every
/// record is written; exit 0.
#[test]
fn a_flood_of_the_devtools_endpoint_and_the_console_leaves_the_records_and_the_exit_code() {
    if crate::common::skip::chromium("a flood of the DevTools endpoint").is_none() {
        return;
    }
    let p = Project::with_directive_agent("\n[browser]\nmcp = false\n");
    // The flood's silent connections are closed after the listeners' first-byte limit (5 s):
    // the step speaks to both listeners after that.
    p.write(
        "flood.test.toml",
        "[[steps]]\ninstruction = '''\nsleep 9\n\
         get $BUGATTI_CDP_HTTP/json/new?data:text/html,%3Ch1%3Eflooded%3C/h1%3E\n\
         get $BUGATTI_CDP_HTTP/json/version\nexpect webSocketDebuggerUrl\n\
         mcp list_logs {}\n'''\n",
    );
    let (out, held) = start_flooded(&p, 2);
    assert!(held >= 1000, "the flood held {held} connections");
    assert_exit(&out, 0);
    let record = p.record_for("flood.test.toml");
    assert_eq!(record.outcome, Some(RunOutcome::Passed), "{record:?}");
    let step = &record.steps[0];
    assert!(
        step.evidence.iter().any(|x| x.kind == "screenshot"),
        "the step's capture went through the flooded endpoint: {step:#?}"
    );
    assert!(p.suite_dir().join("summary.json").is_file());
    assert!(p.suite_dir().join("report.html").is_file());
}
