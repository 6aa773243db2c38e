//! `supervisor check`: each root test's plan and effective config, printed; nothing runs, nothing
//! is written.

use super::{load, print_notes, restore_default_sigpipe, Exit};
use crate::model::layers::Layer;
use crate::model::load::{Suite, CONFIG_FILE_NAME};
use crate::model::options::{RunOptions, Verbosity};

/// Parse, expand and validate; print each root test's plan and effective config. Exit 0, or 2
/// with every problem found.
pub fn check(options: &RunOptions) -> Exit {
    restore_default_sigpipe();
    let Some(suite) = load(options) else {
        return Exit::USAGE;
    };
    if suite.config_path.is_none() {
        eprintln!("note: {}", suite.config_summary());
    }
    print_notes(&suite);
    print_check(&suite, options.verbosity);
    Exit::SUCCESS
}

fn first_line(text: &str) -> String {
    let mut lines = text.trim().lines();
    let first = lines.next().unwrap_or("").trim().to_string();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first
    }
}

/// `writeln!` into a String, which cannot fail.
macro_rules! outln {
    ($out:expr) => {
        $out.push('\n')
    };
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}

fn print_rows(out: &mut String, rows: &[(String, String, Layer)], indent: &str) {
    let kw = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let vw = rows
        .iter()
        .map(|r| r.1.chars().count())
        .max()
        .unwrap_or(0)
        .min(60);
    for (k, v, l) in rows {
        outln!(out, "{indent}{k:kw$}  {v:vw$}  ({l})");
    }
}

/// `-q`: plans only; default: the shared config once, then what each test changes; `-v`: every
/// test's whole effective config.
fn print_check(suite: &Suite, verbosity: Verbosity) {
    let text = check_text(suite, verbosity);
    // A closed stdout (`| head`) is not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
}

/// What `check` prints on stdout for `suite`.
pub(super) fn check_text(suite: &Suite, verbosity: Verbosity) -> String {
    let mut text = String::new();
    let out = &mut text;
    print_check_header(out, suite);
    let base_rows = suite.base.rows();
    if verbosity == Verbosity::Normal {
        outln!(out);
        outln!(out, "effective config (before test overrides):");
        print_rows(out, &base_rows, "  ");
    }
    print_agent_facts(out, suite);
    let mut steps = 0;
    for test in &suite.tests {
        // Which steps have a recording this run could replay (see docs/replay.md).
        let replay = &test.effective.replay;
        let replays =
            crate::model::replay::applies(replay.mode.value, test.effective.provider.name.value);
        let recording_path = crate::replay::store::recording_path(
            &replay.dir_in(&suite.project_root),
            &test.rel_path,
        );
        let test_path = test.rel_path.to_string_lossy().into_owned();
        // The steps whose re-recording waits for review (an unreadable file: none to show).
        let pending = replays
            .then(|| {
                let path = crate::replay::store::pending_path(
                    &replay.dir_in(&suite.project_root),
                    &test.rel_path,
                );
                crate::replay::store::load(&path, &test_path).ok().flatten()
            })
            .flatten()
            .map(|p| p.steps.iter().map(|s| s.step).collect())
            .unwrap_or_default();
        let recording = replays
            .then(|| crate::replay::store::load(&recording_path, &test_path))
            // No file at all: one line for the test rather than a mark on every step.
            .filter(|loaded| !matches!(loaded, Ok(None)));
        let shown_path = recording_path
            .strip_prefix(&suite.project_root)
            .unwrap_or(&recording_path)
            .display()
            .to_string();
        print_test_heading(out, test, replays, &recording, &shown_path);
        let shown = PlanShown {
            replays,
            max_age_days: replay.max_age_days.value,
            timeouts: verbosity == Verbosity::Verbose,
            pending,
        };
        print_plan(out, test, &recording, &shown);
        steps += test.plan.len();
        print_test_config(out, test, &base_rows, verbosity);
    }
    outln!(out);
    outln!(
        out,
        "ok: {} root test{}, {steps} step{}; nothing was run",
        suite.tests.len(),
        if suite.tests.len() == 1 { "" } else { "s" },
        if steps == 1 { "" } else { "s" }
    );
    text
}

/// Where the project and its configs are, and how many root tests were selected.
fn print_check_header(out: &mut String, suite: &Suite) {
    outln!(out, "project root: {}", suite.project_root.display());
    match &suite.config_path {
        Some(p) => outln!(out, "config:       {}", p.display()),
        None => outln!(
            out,
            "config:       none ({CONFIG_FILE_NAME} not found; defaults apply)"
        ),
    }
    if let Some(g) = &suite.global_config_path {
        outln!(out, "global:       {}", g.display());
    }
    outln!(
        out,
        "root tests:   {} selected of {} discovered",
        suite.tests.len(),
        suite.discovered
    );
}

/// What the agent will have that `check` can tell now: Codex's price (it reports tokens only,
/// so whether max_cost_usd can stop it), the MCP servers a claude-code agent gets.
fn print_agent_facts(out: &mut String, suite: &Suite) {
    let p = &suite.base.provider;
    if p.name.value.info().prices_tokens {
        let config = crate::providers::codex_home::user_home().map(|h| h.dir.join("config.toml"));
        match crate::providers::pricing::codex_price(
            p.price_per_mtok.value,
            &p.agent_args.value,
            config.as_deref(),
        ) {
            Ok((price, from)) => outln!(out, "codex price:  {price} ({from})"),
            Err(why) => outln!(
                out,
                "codex price:  unknown, so cost_usd stays empty and max_cost_usd cannot stop Codex: {why}"
            ),
        }
    }
    // docs/browser.md: the MCP servers a claude-code agent gets.
    if p.name.value.info().mcp.reads_project_mcp_json() {
        let mut servers = Vec::new();
        if p.console.value {
            servers.push("bugatti (the console)".to_string());
        }
        if suite.base.browser.as_ref().is_some_and(|b| b.value.mcp) {
            servers.push("browser (Playwright MCP on the session's browser)".to_string());
        }
        let cwd = match p.cwd.value.as_deref() {
            Some(dir) => suite.project_root.join(dir),
            None => suite.project_root.clone(),
        };
        if let Ok(Some(project)) = crate::model::mcp_json::read(&cwd, &[]) {
            let file = project.path.display();
            servers.extend(project.names().iter().map(|n| format!("{n} ({file})")));
        }
        if !servers.is_empty() {
            outln!(out, "mcp servers:  {}", servers.join(", "));
        }
    }
}

/// What the replay check found for one test: `None` when it does not replay or has no file.
type Loaded =
    Option<Result<Option<crate::replay::format::Recording>, crate::replay::store::LoadError>>;

/// A test's heading: its path, name and tags, its plan's size, and its recording's state.
fn print_test_heading(
    out: &mut String,
    test: &crate::model::load::RootTest,
    replays: bool,
    recording: &Loaded,
    shown_path: &str,
) {
    outln!(out);
    let tags = if test.tags.is_empty() {
        String::new()
    } else {
        format!("  [tags: {}]", test.tags.join(", "))
    };
    outln!(
        out,
        "== {} — \"{}\"{tags}{}",
        test.rel_path.display(),
        test.name,
        if test.quarantined {
            "  [quarantined: runs, never decides the exit code]"
        } else {
            ""
        }
    );
    outln!(
        out,
        "  plan ({} step{}):",
        test.plan.len(),
        if test.plan.len() == 1 { "" } else { "s" }
    );
    if replays && recording.is_none() {
        outln!(
            out,
            "  replay: no recording yet ({shown_path} is written when the agent passes a step)"
        );
    }
    if let Some(Err(e)) = recording {
        outln!(
            out,
            "  replay: {shown_path} is unusable, the agent will run every step: {e}"
        );
    }
}

/// What a plan's lines say besides each step.
struct PlanShown {
    replays: bool,
    max_age_days: u32,
    /// Every step's timeout and where it comes from (`-v`), not only a step's own.
    timeouts: bool,
    /// The steps with a re-recording waiting for review (docs/replay.md).
    pending: Vec<crate::model::ids::StepId>,
}

/// A test's steps, one line each, with their marks (setup, skip, checkpoint, timeout, replay).
fn print_plan(
    out: &mut String,
    test: &crate::model::load::RootTest,
    recording: &Loaded,
    shown: &PlanShown,
) {
    let PlanShown {
        replays,
        max_age_days,
        ..
    } = *shown;
    let pw = test
        .plan
        .iter()
        .map(|s| s.provenance().chars().count())
        .max()
        .unwrap_or(0);
    for s in &test.plan {
        let mut marks = Vec::new();
        if s.setup {
            marks.push("setup".to_string());
        }
        if s.skip {
            marks.push("skip".to_string());
        }
        if let Some(c) = &s.checkpoint {
            marks.push(format!("checkpoint: {c}"));
        }
        let t = s.timeout.value.as_secs();
        match (s.timeout.source, shown.timeouts) {
            (Layer::Step, false) => marks.push(format!("timeout: {t}s")),
            (Layer::Step, true) => {
                marks.push(format!("timeout: {t}s from the step's timeout_secs"))
            }
            (layer, true) => marks.push(format!(
                "timeout: {t}s from provider.step_timeout_secs ({layer})"
            )),
            (_, false) => {}
        }
        if replays && !s.replay {
            marks.push("replay = false: always the agent".to_string());
        } else if let (Some(Ok(Some(loaded))), false) = (recording, s.skip) {
            marks.push(format!(
                "replay: {}",
                crate::replay::store::check_status(
                    loaded,
                    &crate::replay::store::StepKey {
                        step: s.step_id,
                        provenance: s.provenance(),
                        instruction_hash: String::new(),
                        provider: test.effective.provider.name.value,
                    },
                    chrono::Utc::now(),
                    max_age_days,
                )
            ));
        }
        if replays && shown.pending.contains(&s.step_id) {
            marks.push("a weaker re-recording waits for review (supervisor replay review)".into());
        }
        let marks = if marks.is_empty() {
            String::new()
        } else {
            format!("[{}] ", marks.join(", "))
        };
        outln!(
            out,
            "  {:>3}  {:pw$}  {marks}{}",
            s.step_id,
            s.provenance(),
            first_line(&s.instruction)
        );
    }
}

/// A test's effective config: whole (`-v`), or what differs from the shared one (default).
fn print_test_config(
    out: &mut String,
    test: &crate::model::load::RootTest,
    base_rows: &[(String, String, Layer)],
    verbosity: Verbosity,
) {
    match verbosity {
        Verbosity::Quiet => {}
        Verbosity::Verbose => {
            outln!(out, "  effective config:");
            print_rows(out, &test.effective.rows(), "    ");
        }
        Verbosity::Normal => {
            let own: Vec<(String, String, Layer)> = test
                .effective
                .rows()
                .into_iter()
                .filter(|r| !base_rows.contains(r))
                .collect();
            if own.is_empty() {
                outln!(out, "  effective config: as above");
            } else {
                outln!(out, "  effective config: as above, except");
                print_rows(out, &own, "    ");
            }
        }
    }
}
