//! The live view: what a person (or a CI log) sees while the suite runs, one line per event or a
//! redrawn terminal. It reads `records` and writes only to the console.

pub mod console;
pub mod console_event;
pub mod console_text;
pub mod live_term;
pub mod terminal_echo;
