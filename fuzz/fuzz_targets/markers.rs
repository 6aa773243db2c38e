//! Fuzz target: the result-marker scanner, input cut into chunks by its first bytes. The checks are in [`bugatti::fuzzing::markers`].
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| bugatti::fuzzing::markers(data));
