//! Fuzz target: plan expansion over up to four `\0`-separated test files in a fresh project.
//! The checks are in [`bugatti::fuzzing::plan`].
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| bugatti::fuzzing::plan(data));
