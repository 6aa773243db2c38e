//! What every other room of `report` stands on: errors that name their file, reads confined to a
//! run's directory, redaction, and text made safe to print or to put in HTML. It imports nothing
//! else of `report`. (Writes a reader never sees half done are `crate::atomic`, below both
//! `report` and `replay`.)

pub mod confined;
pub mod error;
pub mod html_escape;
pub mod printable;
pub mod scrub;
