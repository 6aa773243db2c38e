//! Fuzz target: the config parser, then layering and validation. The checks are in [`bugatti::fuzzing::config`].
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| bugatti::fuzzing::config(data));
