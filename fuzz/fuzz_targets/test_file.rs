//! Fuzz target: the test-file parser and each step's kind. The checks are in [`bugatti::fuzzing::test_file`].
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| bugatti::fuzzing::test_file(data));
