//! Properties of the result-marker scanner beyond its in-module ones (which cover structured
//! replies cut anywhere): fully arbitrary bytes, lines around the kept-length limit, one byte per
//! chunk, and a scanner reused across replies.

use bugatti::fuzzing::{self, reference_markers, scan_chunked};
use bugatti::model::markers::{Marker, MarkerScanner, ResultVerdict, MAX_MARKER_LINE};
use proptest::prelude::*;

/// Bytes biased towards the scanner's interesting parts: keywords, decorations, newlines, `\r`
/// and broken UTF-8.
fn hostile_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..6),
            prop::sample::select(vec![
                &b"RESULT"[..],
                b" OK",
                b" WARN: ",
                b" ERROR - ",
                b"BUGATTI_LOG ",
                b"BUGATTI_EVIDENCE screenshot a.png",
                b"\n",
                b"\r\n",
                b"**",
                b"> ",
                b"`",
                b"\xc3",
                b"\xa9",
                b"\xe2\x80",
                b"\xff",
                "\u{2003}".as_bytes(),
            ])
            .prop_map(<[u8]>::to_vec),
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The fuzz body: arbitrary bytes, cut where the first bytes say, then one byte at a time.
    #[test]
    fn arbitrary_bytes_match_the_plain_definition(bytes in prop_oneof![prop::collection::vec(any::<u8>(), 0..300), hostile_bytes()]) {
        fuzzing::markers(&bytes);
    }

    #[test]
    fn any_cuts_of_hostile_bytes_match(bytes in hostile_bytes(), cuts in prop::collection::vec(0usize..400, 0..30)) {
        let (out, scanner) = scan_chunked(&bytes, &cuts);
        prop_assert_eq!(&out, &reference_markers(&bytes));
        prop_assert_eq!(scanner.bytes_seen(), bytes.len() as u64);
    }

    /// A marker whose line is near the kept-length limit: found when the whole keyword and verdict
    /// fit, never invented from a cut-off one; the next line always counts.
    #[test]
    fn lines_around_the_length_limit(pad in (MAX_MARKER_LINE - 24)..(MAX_MARKER_LINE + 24), cuts in prop::collection::vec(0usize..(MAX_MARKER_LINE + 200), 0..6)) {
        let mut bytes = vec![b' '; pad];
        bytes.extend_from_slice(b"RESULT ERROR: late\nRESULT WARN: next\n");
        let (out, _) = scan_chunked(&bytes, &cuts);
        prop_assert_eq!(&out, &reference_markers(&bytes));
        let kept_whole = pad + "RESULT ERROR".len() <= MAX_MARKER_LINE;
        let first_is_error = matches!(out.first(), Some(Marker::Result(r)) if r.verdict == ResultVerdict::Error);
        prop_assert_eq!(first_is_error, kept_whole);
        prop_assert!(matches!(out.last(), Some(Marker::Result(r)) if r.verdict == ResultVerdict::Warn && r.text == "next"));
    }

    /// `reset` between replies: the second reply's markers and verdict are its own.
    #[test]
    fn a_reset_scanner_forgets_the_previous_reply(first in hostile_bytes(), second in hostile_bytes()) {
        let mut scanner = MarkerScanner::new();
        let mut out = Vec::new();
        scanner.push(&first, &mut out);
        scanner.reset();
        let mut again = Vec::new();
        scanner.push(&second, &mut again);
        scanner.finish(&mut again);
        prop_assert_eq!(&again, &reference_markers(&second));
        let last = again.iter().rev().find_map(|m| match m { Marker::Result(r) => Some(r), _ => None });
        prop_assert_eq!(scanner.last_result(), last);
        prop_assert_eq!(scanner.bytes_seen(), second.len() as u64);
    }
}
