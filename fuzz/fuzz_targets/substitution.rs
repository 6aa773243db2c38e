//! Fuzz target: the ${NAME} substitution, references, escapes, [env] resolution. The checks are in [`bugatti::fuzzing::substitution`].
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| bugatti::fuzzing::substitution(data));
