//! `[browser]` (docs/browser.md) as the session will use it: defaults, the values each config layer
//! sets, and the checks of what was written (a viewport that is not `WIDTHxHEIGHT`, a capture
//! kind that does not exist). Pure: finding and starting the browser is `crate::browser`'s job.
//!
//! Layers merge field by field: a global config may name the executable and a project its
//! viewport. A `[browser]` table in any layer turns the browser on.

use super::config::BrowserSection;
use std::ops::Range;

/// The default window size, in CSS pixels.
pub const DEFAULT_VIEWPORT: (u32, u32) = (1280, 800);
/// The capture kinds, as written in `capture = [...]`.
pub const CAPTURE_KINDS: [&str; 3] = ["screenshot", "console", "network"];
/// The largest side a viewport may have (Chromium's own limit on a window is near this).
const MAX_SIDE: u32 = 16_384;

/// What is captured at the end of every step (`[browser] capture`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureSet {
    /// A PNG of each open page.
    pub screenshot: bool,
    /// The console's errors and warnings.
    pub console: bool,
    /// The failed requests.
    pub network: bool,
}

impl CaptureSet {
    /// Everything (the default).
    pub fn all() -> Self {
        Self {
            screenshot: true,
            console: true,
            network: true,
        }
    }

    /// The kinds as written, in [`CAPTURE_KINDS`] order (for `check`).
    pub fn names(&self) -> Vec<&'static str> {
        let on = [self.screenshot, self.console, self.network];
        CAPTURE_KINDS
            .iter()
            .zip(on)
            .filter_map(|(name, on)| on.then_some(*name))
            .collect()
    }
}

/// The browser's own request for `/favicon.ico` finding nothing (a console line of source
/// `network` about that URL): the page never asked for it and most local apps have none, so it
/// is neither a console error of the step's verdict nor one the reports list.
pub fn is_favicon_miss(source: &str, url: Option<&str>) -> bool {
    source == "network"
        && url.is_some_and(|url| {
            url.split(['?', '#'])
                .next()
                .unwrap_or(url)
                .ends_with("/favicon.ico")
        })
}

/// The effective `[browser]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserConfig {
    /// A name on `PATH` or a path; `None`: the first of chromium, chromium-browser,
    /// google-chrome on `PATH`.
    pub executable: Option<String>,
    /// Headless (the default) or a window.
    pub headless: bool,
    /// The window size.
    pub viewport: (u32, u32),
    /// Give the agent Playwright MCP attached to the browser.
    pub mcp: bool,
    /// The Playwright MCP command instead of `playwright-mcp` / `npx -y @playwright/mcp@…`.
    pub mcp_cmd: Option<String>,
    /// The evidence taken at the end of every step.
    pub capture: CaptureSet,
    /// A passing step whose page logged console errors fails (otherwise: a warning).
    pub fail_on_console_errors: bool,
    /// A kept workspace keeps the browser's profile (its cookies, its storage): off by default,
    /// the profile holds the app's session.
    pub keep_profile: bool,
    /// Agent sessions too take a kept browser of the pool, in a fresh context of their own
    /// (replay sessions always do): docs/browser.md, "One browser per worker".
    pub reuse: bool,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        Self {
            executable: None,
            headless: true,
            viewport: DEFAULT_VIEWPORT,
            mcp: true,
            mcp_cmd: None,
            capture: CaptureSet::all(),
            fail_on_console_errors: false,
            keep_profile: false,
            reuse: false,
        }
    }
}

/// A problem in a `[browser]` table: the message and the span (in the file) it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionProblem {
    /// What is wrong, naming the field and what is accepted.
    pub message: String,
    /// Where, in the file's text.
    pub span: Range<usize>,
}

impl BrowserConfig {
    /// Sets what `section` (one layer's table) sets; returns the problems of the fields that were
    /// not taken, in file order.
    pub fn apply(&mut self, section: &BrowserSection) -> Vec<SectionProblem> {
        let mut problems = Vec::new();
        let mut bad = |message: String, span: Range<usize>| {
            problems.push(SectionProblem { message, span });
        };
        if let Some(v) = &section.executable {
            let text = v.get_ref().trim();
            if text.is_empty() {
                bad(
                    "`[browser] executable` is empty: name a browser on PATH (chromium, chromium-browser, google-chrome) or give its path, or leave it out to look for those".to_string(),
                    v.span(),
                );
            } else {
                self.executable = Some(text.to_string());
            }
        }
        if let Some(v) = section.headless {
            self.headless = v;
        }
        if let Some(v) = &section.viewport {
            match parse_viewport(v.get_ref()) {
                Ok(size) => self.viewport = size,
                Err(message) => bad(message, v.span()),
            }
        }
        if let Some(v) = section.mcp {
            self.mcp = v;
        }
        if let Some(v) = &section.mcp_cmd {
            match shell_words::split(v.get_ref()) {
                Ok(words) if !words.is_empty() => self.mcp_cmd = Some(v.get_ref().clone()),
                Ok(_) => bad(
                    "`[browser] mcp_cmd` is empty: give the command that starts Playwright MCP, or leave it out for `playwright-mcp` on PATH (else npx)".to_string(),
                    v.span(),
                ),
                Err(e) => bad(
                    format!("`[browser] mcp_cmd` is not a command line ({e}): {:?}", v.get_ref()),
                    v.span(),
                ),
            }
        }
        if let Some(v) = &section.capture {
            match capture_from_names(v.get_ref()) {
                Ok(set) => self.capture = set,
                Err(message) => bad(message, v.span()),
            }
        }
        if let Some(v) = section.fail_on_console_errors {
            self.fail_on_console_errors = v;
        }
        if let Some(v) = section.keep_profile {
            self.keep_profile = v;
        }
        if let Some(v) = section.reuse {
            self.reuse = v;
        }
        // In file order, like every other problem of a config file.
        problems.sort_by_key(|p| p.span.start);
        problems
    }
}

/// `"1280x800"` → `(1280, 800)`.
pub fn parse_viewport(text: &str) -> Result<(u32, u32), String> {
    let invalid = || {
        format!(
            "`[browser] viewport` must be WIDTHxHEIGHT in pixels, each 1 to {MAX_SIDE}, like \"1280x800\" (found {text:?})"
        )
    };
    let (w, h) = text.trim().split_once(['x', 'X']).ok_or_else(invalid)?;
    let side = |s: &str| {
        s.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_SIDE).contains(n))
    };
    match (side(w), side(h)) {
        (Some(w), Some(h)) => Ok((w, h)),
        _ => Err(invalid()),
    }
}

/// `["screenshot", "console"]` → the set; an unknown kind is an error naming the known ones.
pub fn capture_from_names(names: &[String]) -> Result<CaptureSet, String> {
    let mut set = CaptureSet {
        screenshot: false,
        console: false,
        network: false,
    };
    for name in names {
        match name.as_str() {
            "screenshot" => set.screenshot = true,
            "console" => set.console = true,
            "network" => set.network = true,
            other => {
                return Err(format!(
                    "`[browser] capture` has {other:?}: the kinds are {}",
                    CAPTURE_KINDS.map(|k| format!("\"{k}\"")).join(", ")
                ))
            }
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::parse_config;
    use std::path::Path;

    fn section(text: &str) -> BrowserSection {
        let file = parse_config(Path::new("bugatti.config.toml"), text).expect("parses");
        file.browser.expect("a [browser] table").into_inner()
    }

    #[test]
    fn an_empty_table_is_every_default() {
        let s = section("[browser]\n");
        let mut c = BrowserConfig::default();
        assert!(c.apply(&s).is_empty());
        assert_eq!(c, BrowserConfig::default());
        assert_eq!(c.viewport, (1280, 800));
        assert!(c.headless && c.mcp && !c.fail_on_console_errors);
        assert_eq!(c.capture.names(), ["screenshot", "console", "network"]);
    }

    #[test]
    fn the_specs_example_is_read_as_written() {
        let text = r#"[browser]
executable = "chromium"
headless = false
viewport = "800x600"
mcp = false
mcp_cmd = "npx -y @playwright/mcp@0.0.40"
capture = ["screenshot", "network"]
fail_on_console_errors = true
"#;
        let s = section(text);
        let mut c = BrowserConfig::default();
        assert!(c.apply(&s).is_empty());
        assert_eq!(c.executable.as_deref(), Some("chromium"));
        assert!(!c.headless && !c.mcp && c.fail_on_console_errors);
        assert_eq!(c.viewport, (800, 600));
        assert_eq!(c.mcp_cmd.as_deref(), Some("npx -y @playwright/mcp@0.0.40"));
        assert_eq!(c.capture.names(), ["screenshot", "network"]);
    }

    #[test]
    fn a_later_layer_overrides_only_what_it_sets() {
        let mut c = BrowserConfig::default();
        let global =
            section("[browser]\nexecutable = \"/opt/chrome/chrome\"\nviewport = \"1024x768\"\n");
        assert!(c.apply(&global).is_empty());
        let project = section("[browser]\nviewport = \"390x844\"\n");
        assert!(c.apply(&project).is_empty());
        assert_eq!(c.executable.as_deref(), Some("/opt/chrome/chrome"));
        assert_eq!(c.viewport, (390, 844));
    }

    #[test]
    fn bad_values_say_what_is_accepted_and_point_at_the_value() {
        let text = "[browser]\nviewport = \"big\"\ncapture = [\"screenshot\", \"video\"]\nexecutable = \" \"\nmcp_cmd = \"npx 'unclosed\"\n";
        let s = section(text);
        let mut c = BrowserConfig::default();
        let problems = c.apply(&s);
        assert_eq!(problems.len(), 4, "{problems:?}");
        let at = |p: &SectionProblem| &text[p.span.clone()];
        assert!(problems[0].message.contains("WIDTHxHEIGHT"), "{problems:?}");
        assert!(problems[1].message.contains("\"video\""), "{problems:?}");
        assert!(problems[1]
            .message
            .contains("\"screenshot\", \"console\", \"network\""));
        assert_eq!(at(&problems[0]), "\"big\"");
        assert!(at(&problems[1]).contains("video"));
        assert!(problems[2].message.contains("executable"), "{problems:?}");
        assert!(problems[3].message.contains("mcp_cmd"), "{problems:?}");
        // Nothing bad was taken.
        assert_eq!(c, BrowserConfig::default());
    }

    #[test]
    fn viewports() {
        assert_eq!(parse_viewport("1280x800"), Ok((1280, 800)));
        assert_eq!(parse_viewport(" 390X844 "), Ok((390, 844)));
        for bad in [
            "1280", "0x800", "1280x", "x800", "-1x5", "99999x10", "12.5x10",
        ] {
            assert!(parse_viewport(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_fields_in_the_table_are_refused_with_their_line() {
        let err = parse_config(
            Path::new("bugatti.config.toml"),
            "[browser]\nheadles = true\n",
        )
        .expect_err("unknown field");
        let text = format!("{err:?}");
        assert!(text.contains("headles"), "{text}");
    }
}
