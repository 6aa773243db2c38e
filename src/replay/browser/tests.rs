use super::action::*;
use super::client::*;
use super::tools::*;
use crate::browser::mcp::McpCommand;
use crate::model::ids::StepId;
use crate::process::owner::Owner;
use crate::replay::browser_refs::*;
use crate::replay::context::ActionAt;
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};

// A real `browser_click` answer of Playwright MCP 0.0.83 and the snapshot file it linked.
const CLICK: &str = "### Ran Playwright code\n```js\nawait page.getByRole('button', { name: 'Add to basket' }).click();\n```\n### Page\n- Page URL: http://127.0.0.1:8765/page.html\n- Page Title: Shop\n- Console: 1 errors, 0 warnings\n### Snapshot\n- [Snapshot](out/page-2026-11-25T15-19-12-597Z.yml)\n### Events\n- New console entries: out/console-2026-11-25T15-19-11-703Z.log#L1\n";
const FILE: &str = "- main [ref=e2]:\n  - heading \"Products\" [level=1] [ref=e3]\n  - list [ref=e4]:\n    - listitem [ref=e5]:\n      - text: Red mug\n      - button \"Add to basket\" [active] [ref=e6]\n  - paragraph [ref=e7]: \"Basket: Red mug\"\n";

#[test]
fn a_linked_snapshot_is_put_inline_and_compared_without_refs_files_or_counters() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("page-2026-11-25T15-19-12-597Z.yml"), FILE).expect("w");
    let inlined = inline_snapshots(CLICK, Some(dir.path()));
    assert!(
        inlined.contains("paragraph [ref=e7]: \"Basket: Red mug\""),
        "{inlined}"
    );
    let seen = compared(&inlined);
    assert!(!seen.contains("e7") && seen.contains("[ref=…]"), "{seen}");
    assert!(
        !seen.contains("Console:") && !seen.contains("New console"),
        "{seen}"
    );
    // Another run: other refs, other file names, another console count: the same.
    let other = inlined
        .replace("e7]", "e9]")
        .replace("1 errors", "0 errors");
    assert_eq!(compared(&other), seen);
    // Another basket: different.
    let changed = inlined.replace("Basket: Red mug", "Basket: Blue mug");
    assert_ne!(compared(&changed), seen);
    // The agent was shown 1 error: as many or fewer replay; more is a drift.
    assert_eq!(console_errors(&inlined), Some(1));
    assert_eq!(console_errors(&other), Some(0));
    assert_eq!(
        console_errors(&inlined.replace("- Console: 1 errors, 0 warnings\n", "")),
        Some(0)
    );
    assert_eq!(console_errors("### Result\nok\n"), None);
    let seen_so_far = std::sync::Mutex::new(Default::default());
    let at = ActionAt {
        index: 0,
        what: "browser_click".into(),
        recorded: None,
        volatile: &[],
        relations: &[],
        seen: &seen_so_far,
        previous_began: None,
    };
    assert!(console_check(&at, &inlined, &other).is_ok());
    assert!(console_check(&at, &other, &inlined).is_err());
    // A link without its file stays a link, its name masked.
    let kept = compared(&inline_snapshots(CLICK, Some(&dir.path().join("none"))));
    assert!(kept.contains("- [Snapshot](<file>)"), "{kept}");
}

#[test]
fn a_settled_page_takes_the_place_of_the_unsettled_one() {
    let snapshot =
        "### Page\n- Page URL: http://x/\n### Snapshot\n```yaml\n- paragraph: \"Basket: 1\"\n```\n";
    let merged = with_page_of(CLICK, snapshot, true);
    assert!(merged.starts_with("### Ran Playwright code"), "{merged}");
    assert!(
        merged.contains("Basket: 1") && !merged.contains("[Snapshot]"),
        "{merged}"
    );
    let evaluate = "### Result\n42\n### Ran Playwright code\n```js\nx\n```\n";
    assert_eq!(with_page_of(evaluate, snapshot, false), evaluate);
    // With `--snapshot-mode none` a click's answer shows no page when its header did not
    // change: the settled page is put after what the click ran, tabs included; what it
    // shows of a dialog goes with the page as the snapshot shows it.
    let ran = "### Ran Playwright code\n```js\nawait page.click();\n```\n";
    let none = format!("{ran}### Events\n- New console entries: out/c.log#L1\n");
    assert_eq!(
        with_page_of(&none, snapshot, true),
        format!("{ran}{snapshot}")
    );
    let tabs = format!("### Open tabs\n- 0: (current) [Shop]\n- 1: [Other]\n{snapshot}");
    assert_eq!(with_page_of(ran, &tabs, true), format!("{ran}{tabs}"));
    let modal = format!("{ran}### Modal state\n- [\"alert\" dialog]\n");
    let page_with_modal =
        "### Page\n- Page URL: http://x/\n### Modal state\n- [\"alert\" dialog]\n";
    assert_eq!(
        with_page_of(&modal, page_with_modal, true),
        format!("{ran}{page_with_modal}")
    );
    // Which answers the client shows no page in, and when it must show them.
    assert!(!needs_action_pages(
        [
            "browser_navigate",
            "browser_click",
            "browser_snapshot",
            "browser_evaluate"
        ]
        .into_iter()
    ));
    assert!(needs_action_pages(
        ["browser_click", "browser_wait_for"].into_iter()
    ));
    assert!(needs_action_pages(["browser_tabs"].into_iter()));
}

#[test]
fn only_an_idle_answer_counts_as_idle() {
    let answer = |v: &str| format!("### Result\n{v}\n### Ran Playwright code\n```js\n```");
    assert_eq!(
        idle_of(&answer("{\"idle\": true, \"mutations\": 3}")),
        Some(3)
    );
    assert_eq!(
        idle_of(&answer("{\"idle\": false, \"mutations\": 3}")),
        None
    );
    assert_eq!(idle_of(&answer("{\"idle\": false}")), None);
    assert_eq!(idle_of("### Result\nnot json"), None);
}

#[test]
fn a_proven_page_answers_only_the_snapshot_right_after_its_action_while_its_proof_holds() {
    let replay = || {
        BrowserReplay::new(
            McpCommand {
                program: "playwright-mcp".into(),
                args: Vec::new(),
                source: crate::browser::mcp::McpSource::Configured,
                cdp_endpoint: None,
            },
            Owner::new(
                crate::process::owner::Scope::run("run"),
                crate::process::owner::Role::Other("test".into()),
            ),
            PathBuf::from("."),
            Vec::new(),
            PathBuf::from("."),
            false,
        )
    };
    let later = Instant::now() + Duration::from_secs(60);
    let b = replay();
    b.keep_settled((StepId::from(2), 0), later, "page");
    // Not the next action, another step: not answered, and the page is not kept.
    assert_eq!(b.settled_before(StepId::from(2), 2), None);
    assert_eq!(b.settled_before(StepId::from(2), 1), None);
    b.keep_settled((StepId::from(2), 0), later, "page");
    assert_eq!(b.settled_before(StepId::from(3), 1), None);
    // The next action of the same step: answered, once.
    b.keep_settled((StepId::from(2), 0), later, "page");
    assert_eq!(
        b.settled_before(StepId::from(2), 1).as_deref(),
        Some("page")
    );
    assert_eq!(b.settled_before(StepId::from(2), 1), None);
    // Any call since: the page may have changed.
    b.keep_settled((StepId::from(2), 0), later, "page");
    b.forget_snapshot();
    assert_eq!(b.settled_before(StepId::from(2), 1), None);
    // The proof ran out: nothing says the page is still so.
    b.keep_settled((StepId::from(2), 0), Instant::now(), "page");
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(b.settled_before(StepId::from(2), 1), None);
}

#[test]
fn the_client_waits_the_settle_time_the_agent_had() {
    let command = |args: &[&str]| McpCommand {
        program: "playwright-mcp".into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        source: crate::browser::mcp::McpSource::Configured,
        cdp_endpoint: None,
    };
    let none: &[(String, String)] = &[];
    assert_eq!(settle_of(&command(&[]), none), DEFAULT_SETTLE);
    assert_eq!(
        settle_of(&command(&["--timeout-settle", "200"]), none),
        Duration::from_millis(200)
    );
    assert_eq!(
        settle_of(&command(&["--timeout-settle=0"]), none),
        Duration::ZERO
    );
    // Its environment, then its config file, as Playwright MCP reads them.
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"timeouts": {"settle": 3000}}"#).expect("write");
    let config = config.display().to_string();
    let env = vec![(
        "PLAYWRIGHT_MCP_TIMEOUT_SETTLE".to_string(),
        "1500".to_string(),
    )];
    assert_eq!(
        settle_of(&command(&["--config", &config]), none),
        Duration::from_secs(3)
    );
    assert_eq!(
        settle_of(&command(&["--config", &config]), &env),
        Duration::from_millis(1500)
    );
    assert_eq!(
        settle_of(
            &command(&["--config", &config, "--timeout-settle", "200"]),
            &env
        ),
        Duration::from_millis(200)
    );
}

#[test]
fn a_link_never_reads_outside_the_output_folder() {
    let dir = tempfile::tempdir().expect("dir");
    let answer = "- [Snapshot](../../etc/passwd.yml)\n- [Snapshot](/etc/x/.hidden.yml)\n";
    assert_eq!(inline_snapshots(answer, Some(dir.path())), answer);
}

#[test]
fn only_the_listed_tools_of_the_browser_server_are_recorded() {
    assert_eq!(
        recorded_tool("mcp__browser__browser_click"),
        Some("browser_click")
    );
    assert_eq!(recorded_tool("mcp__browser__browser_run_code"), None);
    assert_eq!(recorded_tool("mcp__browser__browser_file_upload"), None);
    assert_eq!(recorded_tool("mcp__shop__browser_click"), None);
    assert!(is_browser_tool("mcp__browser__browser_run_code"));
}

#[test]
fn a_ref_is_kept_with_its_path_from_the_latest_snapshot_that_has_it() {
    let older = Snapshot::parse("- button \"Old\" [ref=e6]\n");
    let newer = Snapshot::parse(FILE);
    let paths = element_paths(&json!({"target": "e6"}), &[older, newer]).expect("found");
    assert_eq!(
        describe_path(&paths["e6"]),
        "main > list > listitem (Red mug) > button \"Add to basket\""
    );
    let missing = element_paths(&json!({"target": "e99"}), &[Snapshot::parse(FILE)]);
    assert!(missing.expect_err("no such ref").contains("e99"));
    // Same element, other refs: the same call.
    let p = element_paths(&json!({"target": "e6"}), &[Snapshot::parse(FILE)]).expect("p");
    let q = element_paths(
        &json!({"target": "e16"}),
        &[Snapshot::parse(&FILE.replace("e6]", "e16]"))],
    )
    .expect("q");
    assert!(same_call(
        &json!({"target": "e6"}),
        &p,
        &json!({"target": "e16"}),
        &q
    ));
    assert!(!same_call(
        &json!({"target": "e6", "doubleClick": true}),
        &p,
        &json!({"target": "e16"}),
        &q
    ));
}
