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
