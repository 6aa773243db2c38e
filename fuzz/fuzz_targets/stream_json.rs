//! Fuzz target: the claude-code stream-json reader. The checks are in [`bugatti::fuzzing::stream_json`].
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| bugatti::fuzzing::stream_json(data));
