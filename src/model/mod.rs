//! Pure data and pure functions: what the user wrote, validated and expanded.

pub mod markers;
pub mod outcome;
