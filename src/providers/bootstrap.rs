//! What the harness tells the agent: the bootstrap (what Bugatti is, the result contract, the
//! marker formats, the run's facts) and the text of each step message. One wording for every
//! provider, so a test behaves the same whichever agent runs it.

use super::{AgentSpec, SessionFacts, StepRequest};
use std::fmt::Write;

/// The bootstrap / system prompt of a session.
pub fn system_prompt(spec: &AgentSpec, facts: &SessionFacts) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "You are the verification agent of Bugatti, a test harness for local applications. \
         The harness has started the application under test; you will receive one message per test \
         step, each with an instruction in plain English. Carry out the instruction against the \
         running application (use your tools: run commands, fetch pages, read files), then judge it.\n\n\
         RESULT CONTRACT. End every reply with exactly one result marker on its own line:\n\
         RESULT OK                      the step did what the instruction expects\n\
         RESULT WARN: <short reason>    it works, with a problem worth a human's look\n\
         RESULT ERROR: <short reason>   it does not work, or you could not check it\n\
         If a reply contains several markers, the last one decides. A reply without a marker is a \
         protocol error. Never claim a check you did not perform.\n\n\
         LOGS AND EVIDENCE. Anywhere in a reply you may write lines\n\
         BUGATTI_LOG <message>                 a progress note shown live to the user\n\
         BUGATTI_EVIDENCE <kind> <path>        a file you saved as evidence; kind is one of \
         screenshot, log, console, network, sql, cli, other; path is relative to the run directory\n\
         Save screenshots under {run_dir}/screenshots/ and other evidence files under {run_dir}/.\n",
        run_dir = facts.run_dir.display()
    );
    let _ = writeln!(text, "RUN FACTS");
    let _ = writeln!(
        text,
        "- test: {} ({})",
        facts.test_name,
        facts.test_file.display()
    );
    let _ = writeln!(text, "- run id: {}", facts.run_id);
    let _ = writeln!(text, "- session id: {}", facts.session_id);
    let _ = writeln!(text, "- project root: {}", facts.project_root.display());
    let _ = writeln!(text, "- run directory: {}", facts.run_dir.display());
    let _ = writeln!(
        text,
        "- your working directory: {} (relative paths in the instructions start here)",
        spec.cwd.display()
    );
    let _ = writeln!(
        text,
        "- workspace for your scratch files (this session only): {}",
        facts.workdir.display()
    );
    if let Some(url) = &spec.base_url {
        let _ = writeln!(text, "- the application's base URL: {url}");
    }
    let _ = writeln!(
        text,
        "- environment variables BUGATTI_RUN_ID, BUGATTI_SESSION_ID, BUGATTI_RUN_DIR, \
         BUGATTI_WORKDIR, BUGATTI_PROJECT_ROOT and the session's ports are set for your commands."
    );
    if facts.console.is_some() {
        let _ = writeln!(text, "\n{}", crate::providers::console_wiring::BOOTSTRAP);
    }
    if facts.mcp.browser.is_some() {
        let _ = writeln!(text, "\n{}", BROWSER);
    }
    if let Some(extra) = spec
        .extra_system_prompt
        .as_deref()
        .filter(|e| !e.trim().is_empty())
    {
        let _ = writeln!(text, "\nPROJECT INSTRUCTIONS\n{}", extra.trim());
    }
    text
}

/// What the bootstrap tells the agent about the session's browser (docs/browser.md).
pub const BROWSER: &str = "THE BROWSER. A headless Chromium runs for this session; the MCP \
server `browser` (Playwright MCP, tools mcp__browser__* in Claude Code and pi 1.x) drives it: \
browser_navigate opens a URL, browser_snapshot reads the page as text with a ref for each \
element, browser_click / browser_type act on an element by its ref. Check web pages through it, \
as a user sees them. Its DevTools endpoint is BUGATTI_CDP_URL. After every step the supervisor \
itself takes a screenshot of each page, the console errors and the failed requests.";

/// Where a step comes from, in one line: `checkout.test.toml step 2 (via a.test.toml -> b.test.toml)`.
pub fn provenance(request: &StepRequest) -> String {
    let mut text = format!("{} step {}", request.source_file, request.source_index);
    if !request.include_chain.is_empty() {
        let _ = write!(text, " (via {})", request.include_chain.join(" -> "));
    }
    text
}

/// The user message of one step, for providers that take free text.
pub fn step_message(facts: &SessionFacts, request: &StepRequest) -> String {
    format!(
        "Bugatti step {step} (run {run}, session {session}; from {prov}).\n\n{context}\
         {instruction}\n\n\
         Finish your reply with a line RESULT OK, RESULT WARN: <reason> or RESULT ERROR: <reason>.",
        step = request.step_id,
        run = facts.run_id,
        session = facts.session_id,
        prov = provenance(request),
        context = replayed_context(&request.replayed),
        instruction = request.instruction.trim(),
    )
}

/// The steps replayed before this one, framed as context and set apart from the instruction: an
/// agent that ran their commands again would repeat what they did (a POST, a write) on a system
/// that already shows it. Empty when nothing was replayed.
pub fn replayed_context(replayed: &[crate::model::replay::ReplayedStep]) -> String {
    if replayed.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "<replayed-context>\n\
         Context only, not instructions: do not run these commands again. Before this step, the \
         supervisor ran again, without you, the actions recorded when an agent last passed the \
         steps below (commands, file checks, browser calls); each output listed matched its \
         recording. The system (and the browser's page) is in the state they left it in. They \
         are shown so you know that state; running them again would repeat their effects.\n",
    );
    for step in replayed {
        let _ = write!(text, "- step {}", step.step_id);
        if let Some(instruction) = &step.instruction {
            let _ = write!(text, ": {}", instruction.trim());
        }
        let _ = writeln!(text, " ({})", step.status);
        for action in &step.actions {
            let _ = writeln!(text, "  $ {}", action.what);
            for line in action.output.lines() {
                let _ = writeln!(text, "    {line}");
            }
        }
    }
    text.push_str("</replayed-context>\n\nThe step to carry out now:\n");
    text
}
