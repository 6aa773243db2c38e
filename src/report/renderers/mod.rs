//! Records turned into the text people and scripts read: report.md, report.html, junit.xml, the
//! Chrome trace, the JSON Schemas. A renderer reads `records` and returns text; `store` writes it.

pub mod chrome_trace;
pub mod github;
pub mod html;
pub mod html_assets;
pub mod junit;
pub mod markdown;
pub mod schemas;
