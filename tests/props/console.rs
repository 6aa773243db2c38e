//! Properties of the agent console's text handling: middle truncation of any bytes to any budget,
//! and `read_log` cursors while the log is being written.

use bugatti::console::logs::read_at;
use bugatti::console::truncate::{
    decode, marker, truncate_around_gap, truncate_middle, BYTES_PER_TOKEN,
};
use proptest::prelude::*;
use std::io::Write;

/// Bytes biased towards what breaks truncation: multi-byte characters, newlines, broken UTF-8.
fn output_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..8),
            prop::sample::select(vec![
                "\n".as_bytes().to_vec(),
                b"\r\n".to_vec(),
                "é".as_bytes().to_vec(),
                "😀".as_bytes().to_vec(),
                "…".as_bytes().to_vec(),
                b"\xe2\x80".to_vec(),
                b"\xff".to_vec(),
                b"line of text\n".to_vec(),
            ]),
        ],
        0..200,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn truncation_keeps_head_and_tail_and_marks_every_cut(bytes in output_bytes(), max_tokens in 0usize..120) {
        let (mut text, partial) = decode(&bytes);
        for b in partial {
            text.push_str(&format!("\\x{b:02x}"));
        }
        let had_fffd = text.contains('\u{fffd}');
        let t = truncate_middle(&text, max_tokens);
        let budget = max_tokens * BYTES_PER_TOKEN;
        // `t.text` is a String: valid UTF-8 by construction; no replacement character is made.
        let made_fffd = !had_fffd && t.text.contains(char::REPLACEMENT_CHARACTER);
        prop_assert!(!made_fffd, "U+FFFD made: {:?}", t.text);
        if text.len() <= budget {
            prop_assert!(!t.cut);
            prop_assert_eq!(&t.text, &text);
        } else {
            prop_assert!(t.cut);
            let m = marker(t.tail_start - t.head_len);
            let expected = format!("{}{}{}", &text[..t.head_len], m, &text[t.tail_start..]);
            prop_assert_eq!(&t.text, &expected);
            prop_assert!(t.text.len() <= budget.max(m.len()), "{} > {}", t.text.len(), budget);
            // Room for a character on each side: both ends are kept.
            if budget >= m.len() + 2 * 8 {
                prop_assert!(t.head_len > 0, "head lost: {:?}", t.text);
                prop_assert!(t.tail_start < text.len(), "tail lost: {:?}", t.text);
            }
        }
    }

    #[test]
    fn a_gap_is_always_marked_and_counted(head in output_bytes(), tail in output_bytes(), dropped in 1usize..1_000_000, max_tokens in 0usize..120) {
        let (h, _) = decode(&head);
        let (t, _) = decode(&tail);
        let joined = format!("{h}{t}");
        let cut = truncate_around_gap(&joined, Some((h.len(), dropped)), max_tokens);
        prop_assert!(cut.cut);
        prop_assert!(cut.head_len <= h.len() && cut.tail_start >= h.len());
        let m = marker(cut.tail_start - cut.head_len + dropped);
        prop_assert_eq!(cut.text, format!("{}{}{}", &joined[..cut.head_len], m, &joined[cut.tail_start..]));
    }

}

proptest! {
    // Each case makes a file and a writer thread: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn read_log_cursors_give_every_byte_once_under_concurrent_writes(
        chunks in prop::collection::vec(output_bytes(), 1..30),
        window in 1usize..64,
    ) {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("server.log");
        std::fs::File::create(&path).expect("create");
        let expected: Vec<u8> = chunks.concat();
        let writer_path = path.clone();
        let writer = std::thread::spawn(move || {
            let mut file = std::fs::OpenOptions::new().append(true).open(&writer_path).expect("open");
            for chunk in chunks {
                file.write_all(&chunk).expect("write");
                std::thread::yield_now();
            }
        });
        let mut got = Vec::new();
        let mut cursor = 0u64;
        loop {
            let finished = writer.is_finished();
            let chunk = read_at(&path, cursor, window).expect("read");
            prop_assert_eq!(chunk.next_offset, cursor + chunk.bytes.len() as u64);
            prop_assert!(chunk.bytes.len() <= window);
            got.extend_from_slice(&chunk.bytes);
            cursor = chunk.next_offset;
            if finished && cursor == chunk.len {
                break;
            }
        }
        writer.join().expect("writer");
        prop_assert_eq!(got, expected);
    }
}

/// A number at a type's limit, or one its type cannot hold (negative, a fraction, too big).
fn edge_number() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::json;
    prop::sample::select(vec![
        json!(0),
        json!(1),
        json!(249),
        json!(30_001),
        json!(u32::MAX),
        json!(u64::from(u32::MAX) + 1),
        json!(10_000_000_000u64),
        json!(i64::MAX),
        json!(u64::MAX),
        json!(-1),
        json!(i64::MIN),
        json!(1.5),
        json!(1e300),
        json!("12"),
        json!(null),
    ])
}

/// A string a hostile agent might send: empty, a NUL, a regex that explodes, a megabyte.
fn edge_string() -> impl Strategy<Value = serde_json::Value> {
    prop::sample::select(vec![
        String::new(),
        "\0".into(),
        "web".into(),
        "(a*)*b{1000}{1000}".into(),
        "[".into(),
        "../../../../etc/passwd".into(),
        "x".repeat(1 << 20),
        "\u{3}\u{4}\u{1b}[31m".into(),
    ])
    .prop_map(serde_json::Value::String)
}

/// A command that ends quickly, or floods: the calls must answer on the process's exit.
fn quick_cmd() -> impl Strategy<Value = serde_json::Value> {
    prop::sample::select(vec![
        "true",
        "printf 'a\\nb'",
        "exit 3",
        "head -c 3000000 /dev/zero | tr '\\0' x",
        "printf '\\377\\376 \\342\\202'",
    ])
    .prop_map(|c| serde_json::Value::String(c.into()))
}

/// One tool call: a tool name (or an unknown one) and arguments whose every field is an edge.
fn tool_call() -> impl Strategy<Value = (String, serde_json::Value)> {
    let field = || prop_oneof![edge_number(), edge_string()];
    let tool = prop::sample::select(vec![
        "exec_command",
        "write_stdin",
        "list_sessions",
        "kill_session",
        "list_logs",
        "read_log",
        "wait_for_log",
        "no_such_tool",
    ]);
    (
        tool,
        quick_cmd(),
        prop::option::of(edge_number()),
        prop::option::of(edge_number()),
        prop::option::of(field()),
        prop::option::of(field()),
        prop::option::of(edge_number()),
    )
        .prop_map(|(tool, cmd, size, number, text, offset, tail)| {
            let mut args = serde_json::Map::new();
            let mut put = |k: &str, v: Option<serde_json::Value>| {
                if let Some(v) = v {
                    args.insert(k.into(), v);
                }
            };
            match tool {
                "exec_command" => {
                    put("cmd", Some(cmd));
                    put("tty", Some(serde_json::json!(false)));
                    put("max_output_tokens", size);
                    put("yield_time_ms", number);
                    put("workdir", text);
                }
                "write_stdin" | "kill_session" => {
                    put("session_id", number);
                    put("chars", text);
                    put("max_output_tokens", size);
                    // An unknown session answers at once; a wait is capped anyway.
                    put("yield_time_ms", Some(serde_json::json!(0)));
                }
                "read_log" => {
                    put("name", Some(serde_json::json!("web")));
                    put("offset", offset.or(number));
                    put("tail_lines", tail);
                    put("grep", text);
                    put("max_output_tokens", size);
                }
                "wait_for_log" => {
                    // From offset 0 the log's existing line matches at once; a pattern that
                    // does not match waits at most timeout_ms (0 here, or clamped).
                    put("name", Some(serde_json::json!("web")));
                    put("pattern", text.or(Some(serde_json::json!("ready"))));
                    put("from_offset", Some(serde_json::json!(0)));
                    put("timeout_ms", Some(serde_json::json!(0)));
                }
                _ => put("session_id", number),
            }
            (tool.to_string(), serde_json::Value::Object(args))
        })
}

/// The console's tools under hostile arguments (sizes, timeouts, ids at their type's limits,
/// values their type cannot hold): every call answers, within the 30 s every call is allowed,
/// with no panic or abort, and no console process outlives the console.
#[test]
fn console_tools_answer_any_arguments_without_panic_or_hang() {
    use bugatti::console::logs::LogSource;
    use bugatti::console::{Console, ConsoleSetup};
    use bugatti::model::redact::Secrets;
    use proptest::test_runner::{Config, TestRunner};
    use std::sync::Arc;
    use std::time::Duration;

    let dir = tempfile::tempdir().expect("dir");
    let workdir = dir.path().join("ws");
    std::fs::create_dir_all(&workdir).expect("ws");
    let log = dir.path().join("web.log");
    std::fs::write(&log, "booting\nready on 8080\n".repeat(1000)).expect("log");
    let run_id = format!("prop-console-{}", uuid::Uuid::new_v4());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let console = runtime.block_on(async {
        Arc::new(Console::new(ConsoleSetup {
            run_id: run_id.clone().into(),
            run_dir: dir.path().join("run"),
            workdir,
            env: vec![("BUGATTI_RUN_ID".into(), run_id.clone())],
            secrets: Arc::new(Secrets::default()),
            logs: vec![LogSource {
                name: "web".into(),
                kind: "long-lived".into(),
                path: log,
                hub: None,
            }],
        }))
    });
    let mut runner = TestRunner::new(Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&tool_call(), |(tool, args)| {
            let c = Arc::clone(&console);
            let call = runtime.spawn(async move { c.call(&tool, args).await });
            let answer = runtime
                .block_on(async { tokio::time::timeout(Duration::from_secs(35), call).await });
            let answer = answer.map_err(|_| TestCaseError::fail("the call did not answer"))?;
            let answer = answer.map_err(|e| TestCaseError::fail(format!("panicked: {e}")))?;
            // An answer is bounded whatever the budget asked: 1 MiB of output and its header.
            // (An argument echoed in a refusal, like a 1 MiB workdir, comes on top.)
            prop_assert!(
                answer.text.len() <= (2 << 20) + 4096,
                "{} bytes",
                answer.text.len()
            );
            Ok(())
        })
        .expect("every call answers");
    runtime.block_on(console.shutdown());
    let marker = format!("BUGATTI_RUN_ID={run_id}");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !processes_with_entry(&marker).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "console processes survived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Live processes whose environment holds `entry`.
fn processes_with_entry(entry: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            });
            !zombie
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|e| e == entry.as_bytes()))
        })
        .collect()
}
