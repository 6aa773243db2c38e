//! Issue 15 through the real binary on temp projects (`[provider] name = "shell"`): history and
//! what changed, `--rerun-failed`, shard suites merged, `report`, `clean` and `keep_runs`,
//! `--html`, and report.html opened in a real headless Chromium when one is installed.

use crate::common;
use crate::common::assert_exit;
use std::path::{Path, PathBuf};

use crate::common::records::SuiteSummary;
use crate::common::{read_json_file, stdout, Project};

const CONFIG: &str = "[provider]\nname = \"shell\"\n\n[commands.srv]\nkind = \"long_lived\"\ncmd = \"sh -c 'echo server says hello; echo SERVER-LINE-42; while true; do sleep 1; done'\"\nreadiness = { log = \"SERVER-LINE-42\" }\n";

/// A project of `n` root tests `t1..tn`; `flip.test.toml` fails while the file `broken` exists.
fn project(n: usize) -> Project {
    let p = Project::new();
    p.write("bugatti.config.toml", CONFIG);
    for i in 1..=n {
        p.write(
            &format!("t{i}.test.toml"),
            &format!("name = \"T{i}\"\n\n[[steps]]\ninstruction = \"Passes: `echo BUGATTI_LOG step of t{i}`\"\n"),
        );
    }
    p.write(
        "flip.test.toml",
        "name = \"Flip\"\n\n[[steps]]\ninstruction = \"Warm up: `true`\"\n\n[[steps]]\ninstruction = \"Fails while broken exists: `test ! -f \\\"$BUGATTI_PROJECT_ROOT/broken\\\" || { echo '<b>FLIP-BROKE</b>'; exit 7; }`\"\n",
    );
    p
}

fn latest_suite(p: &Project) -> PathBuf {
    p.suite_dir()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn three_suites_pass_fail_pass_say_new_failure_then_fixed() {
    let p = project(1);
    let first = p.start();
    assert_exit(&first, 0);
    assert!(
        !read(&latest_suite(&p).join("summary.md")).contains("## Since the previous suite"),
        "the first suite has nothing to compare with"
    );

    p.write("broken", "");
    let second = p.start();
    assert_exit(&second, 1);
    let out = stdout(&second);
    assert!(
        out.contains("new failure: flip.test.toml (was passed, now failed)"),
        "{out}"
    );
    let dir = latest_suite(&p);
    let md = read(&dir.join("summary.md"));
    assert!(md.contains("- new failure: flip.test.toml"), "{md}");
    let summary: SuiteSummary = read_json_file(&dir.join("summary.json"));
    let new_failures = summary.changes.map(|c| c.new_failures).unwrap_or_default();
    assert_eq!(
        new_failures.first().map(|c| c.test_file.as_str()),
        Some("flip.test.toml")
    );
    let html = read(&dir.join("report.html"));
    assert!(html.contains("new failure: flip.test.toml"));
    // Hostile output is escaped, never markup.
    assert!(html.contains("&lt;b&gt;FLIP-BROKE&lt;/b&gt;") && !html.contains("<b>FLIP-BROKE"));

    std::fs::remove_file(p.root().join("broken")).unwrap();
    let third = p.start();
    assert_exit(&third, 0);
    let out = stdout(&third);
    assert!(
        out.contains("fixed: flip.test.toml (was failed, now passed)"),
        "{out}"
    );
    assert!(read(&latest_suite(&p).join("summary.md")).contains("- fixed: flip.test.toml"));

    let history = bugatti::report::records::history::read(&p.root().join(".bugatti/history.jsonl"));
    assert_eq!(history.len(), 3, "{history:?}");
    let test = &history[1].tests[0];
    assert_eq!(
        (test.test_file.as_str(), test.outcome.as_str()),
        ("flip.test.toml", "failed")
    );

    // `report last` names the files and prints the summary.
    let report = p.run(&["report", "last"]);
    let out = stdout(&report);
    assert!(
        out.contains("report.html:") && out.contains("fixed: flip.test.toml"),
        "{out}"
    );
    assert_exit(&report, 0);
}

#[test]
fn rerun_failed_runs_only_what_did_not_pass() {
    let p = project(2);
    let none = p.run(&["start", "--rerun-failed"]);
    assert_eq!(
        none.status.code(),
        Some(2),
        "no previous suite is invalid input"
    );
    p.write("broken", "");
    assert_eq!(p.start().status.code(), Some(1));
    std::fs::remove_file(p.root().join("broken")).unwrap();
    let again = p.run(&["start", "--last-failed"]);
    assert_exit(&again, 0);
    let summary = p.suite_summary();
    let files: Vec<&str> = summary.tests.iter().map(|t| t.test_file.as_str()).collect();
    assert_eq!(files, vec!["flip.test.toml"]);
    let nothing = p.run(&["start", "--rerun-failed"]);
    assert_exit(&nothing, 0);
    assert!(stdout(&nothing).contains("nothing to run"));
}

fn testcases(junit: &str) -> Vec<String> {
    let report = quick_junit::Report::deserialize_from_str(junit).expect("junit parses");
    let mut names: Vec<String> = report
        .test_suites
        .iter()
        .flat_map(|s| s.test_cases.iter().map(|c| c.name.to_string()))
        .collect();
    names.sort();
    names
}

#[test]
fn two_shards_merged_match_one_unsharded_run() {
    let p = project(4);
    p.write("broken", "");
    assert_eq!(p.start().status.code(), Some(1));
    let whole = latest_suite(&p);
    let whole_summary: SuiteSummary = read_json_file(&whole.join("summary.json"));

    // Two CI shards, each in its own checkout; the merge job gets their .bugatti folders.
    let mut shard_dirs = Vec::new();
    let ci = tempfile::tempdir().unwrap();
    for k in 1..=2 {
        let shard = project(4);
        shard.write("broken", "");
        let out = shard.run(&["start", "--shard", &format!("{k}/2")]);
        assert!(out.status.code() == Some(0) || out.status.code() == Some(1));
        let artifact = ci.path().join(format!("shard-{k}"));
        copy_dir(&shard.root().join(".bugatti"), &artifact);
        let suite = std::fs::read_dir(artifact.join("suites"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        shard_dirs.push(suite);
    }
    let merged_dir = ci.path().join("merged");
    let mut args = vec!["merge".to_string()];
    args.extend(shard_dirs.iter().map(|d| d.display().to_string()));
    args.extend(["--out".to_string(), merged_dir.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = p.run(&args);
    assert_exit(&out, 1);
    let merged: SuiteSummary = read_json_file(&merged_dir.join("summary.json"));
    assert_eq!(merged.totals, whole_summary.totals);
    assert_eq!(
        testcases(&read(&merged_dir.join("junit.xml"))),
        testcases(&read(&whole.join("junit.xml")))
    );
    let html = read(&merged_dir.join("report.html"));
    assert!(html.contains("merged from 2 suites"));
    assert!(
        html.contains("FLIP-BROKE"),
        "the failing step's message is in the merged page"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let target = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn count(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

#[test]
fn keep_runs_and_clean_prune_old_suites() {
    let p = project(1); // two root tests: two runs a suite
    p.write(
        "bugatti.config.toml",
        &format!("{CONFIG}\n[supervisor]\nkeep_runs = 4\n"),
    );
    for _ in 0..4 {
        assert_eq!(p.run(&["start", "-q"]).status.code(), Some(0));
    }
    let bugatti = p.root().join(".bugatti");
    // keep_runs = 4 runs after the suite: before the 4th suite (2 runs) started, only the newest
    // suite (2 runs) of the 3 was kept, so 4 runs remain, not 6.
    assert_eq!(count(&bugatti.join("suites")), 2);
    assert_eq!(count(&bugatti.join("runs")), 4);
    // history.jsonl keeps every suite: later ones compare with it.
    assert_eq!(read(&bugatti.join("history.jsonl")).lines().count(), 4);

    let out = p.run(&["clean", "--keep", "2"]);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("removed 1 suite(s), 2 run(s)"),
        "{}",
        stdout(&out)
    );
    assert_eq!(count(&bugatti.join("suites")), 1);
    assert_eq!(count(&bugatti.join("runs")), 2);
    let out = p.run(&["clean", "--older-than", "0"]);
    assert!(
        stdout(&out).contains("removed 0 suite(s)"),
        "the newest suite always stays"
    );
    // The remaining suite's report still works.
    assert_eq!(p.run(&["report"]).status.code(), Some(0));
}

#[test]
fn html_copy_is_written_and_checked_before_anything_runs() {
    let p = project(0);
    let bad = p.run(&["start", "--html", "/proc/version/report.html"]);
    assert_exit(&bad, 2);
    assert!(!p.root().join(".bugatti/runs").exists(), "nothing ran");
    let out = p.run(&["start", "--html", "out/page.html"]);
    assert_exit(&out, 0);
    let page = read(&p.root().join("out/page.html"));
    assert!(page.contains("flip.test.toml") && page.contains("<script>"));
}

/// Chromium of the OS packages (`.ci/run` installs it), or why not.
fn chromium() -> Option<PathBuf> {
    let path = PathBuf::from("/usr/bin/chromium");
    if path.exists() {
        Some(path)
    } else {
        common::skip::skip(
            "report.html in a real headless browser",
            "/usr/bin/chromium is not installed (Debian package `chromium`; .ci/run installs it)",
        );
        None
    }
}

fn dump_dom(chromium: &Path, url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--dump-dom", url])
        .output()
        .expect("run chromium");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn report_html_in_a_real_headless_browser() {
    let Some(chromium) = chromium() else { return };
    let p = project(2);
    p.write("broken", "");
    assert_eq!(p.start().status.code(), Some(1));
    let page = latest_suite(&p).join("report.html");
    let text = read(&page);
    assert!(
        !text.contains("http://") && !text.contains("https://"),
        "no URL the page could fetch"
    );
    assert!(text.contains("Content-Security-Policy"));
    let url = format!("file://{}", page.display());

    let dom = dump_dom(&chromium, &format!("{url}#first-failure"));
    assert!(
        dom.contains("data-landed=\"t"),
        "the script ran and landed: {dom:.400}"
    );
    let landed = dom
        .split("data-landed=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let step = dom
        .split(&format!("id=\"{landed}\""))
        .nth(1)
        .expect("the landed element")
        .split("</div>\n")
        .next()
        .unwrap();
    assert!(landed.ends_with("-s2"), "first failure is step 2: {landed}");
    assert!(
        step.contains("exited 7"),
        "the failing step's message: {step}"
    );
    assert!(
        step.contains("SERVER-LINE-42"),
        "the harness log excerpt: {step}"
    );
    assert!(
        dom.contains(&format!("class=\"step bad target\" id=\"{landed}\"")),
        "the landed step is marked"
    );

    let dom = dump_dom(&chromium, &format!("{url}#filter=failures"));
    assert!(dom.contains("data-filter=\"failures\""));
    for test in dom.split("<details class=\"test").skip(1) {
        let head = test.split('>').next().unwrap();
        if head.starts_with(" bad") {
            assert!(!head.contains("hidden"), "a failing test stays: {head}");
        } else {
            assert!(head.contains("hidden"), "a passing test is hidden: {head}");
        }
    }

    let dom = dump_dom(&chromium, &format!("{url}#test=t2.test.toml&step=1"));
    assert!(dom.contains("data-landed=\"t"), "deep link");
    let landed = dom
        .split("data-landed=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    // A passing step is given its id when a link lands on it.
    let landed_step = dom
        .split("<div ")
        .find(|tag| tag.contains(&format!("id=\"{landed}\"")))
        .unwrap_or_else(|| panic!("no element {landed}"));
    let tag = landed_step.split('>').next().unwrap_or_default();
    assert!(
        tag.contains("data-step=\"1\"") && tag.contains("target"),
        "{landed}: {tag}"
    );
}

/// `report --open` where no browser can be opened: one line naming the page and why, never the
/// opener's own errors, and the exit code still the suite's.
#[cfg(target_os = "linux")]
#[test]
fn report_open_without_a_display_or_opener_says_where_the_page_is() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p.write("t.test.toml", "[[steps]]\ninstruction = \"`true`\"\n");
    assert_eq!(p.run(&["start", "-q"]).status.code(), Some(0));
    let page = latest_suite(&p).join("report.html");
    let open = |display: Option<&str>, path: &Path| {
        let mut cmd = p.supervisor();
        cmd.args(["report", "--open"])
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env("PATH", path);
        if let Some(d) = display {
            cmd.env("DISPLAY", d);
        }
        let out = cmd.output().expect("report runs");
        assert_eq!(out.status.code(), Some(0), "the suite passed");
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    // An opener that fails loudly, as xdg-open does without a desktop.
    let bin = p.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("xdg-open");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'xdg-open: no method available for opening RAW-OPENER-NOISE' >&2\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let empty = p.root().join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();

    let cases = [
        (
            None,
            bin.as_path(),
            "no display: neither DISPLAY nor WAYLAND_DISPLAY is set",
        ),
        (
            Some(":99"),
            empty.as_path(),
            "xdg-open is not installed or not on PATH",
        ),
        (
            Some(":99"),
            bin.as_path(),
            "xdg-open failed (exit status: 3)",
        ),
    ];
    for (display, path, why) in cases {
        let err = open(display, path);
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(why), "{err}");
        assert!(err.contains(&page.display().to_string()), "{err}");
        assert!(!err.contains("RAW-OPENER-NOISE"), "{err}");
    }
}

/// The suite's comparison with the previous one of its selection, read back typed.
fn compared_with(p: &Project) -> Option<(String, String)> {
    p.suite_summary()
        .changes
        .map(|c| (c.previous_suite_id.as_str().to_string(), c.selection))
}

#[test]
fn comparisons_compare_like_with_like() {
    let p = project(2);
    assert_exit(&p.start(), 0);
    let whole = p.suite_summary().suite_id;
    // A subset by name, its inverse and a stress run are selections of their own: none of
    // them is compared with the whole suite.
    for args in [
        &["start", "-g", "t1"][..],
        &["start", "--grep-invert", "t1"],
        &["start", "--repeat", "2"],
    ] {
        assert_exit(&p.run(args), 0);
        assert_eq!(compared_with(&p), None, "{args:?}");
    }
    // The same subset again compares with its own earlier suite, and says which it is.
    assert_exit(&p.run(&["start", "-g", "t1"]), 0);
    let (_, selection) = compared_with(&p).expect("compared with the earlier -g t1");
    assert_eq!(selection, "-g t1");
    // Both shards of a CI run merged are the whole suite: compared with the unsharded run.
    let mut shards = Vec::new();
    for k in 1..=2 {
        assert_exit(&p.run(&["start", "--shard", &format!("{k}/2")]), 0);
        shards.push(p.suite_dir().display().to_string());
    }
    let out = p.root().join(".bugatti/suites/zz-merged");
    let out_arg = out.display().to_string();
    let merge = p.run(&["merge", &shards[0], &shards[1], "--out", &out_arg]);
    assert_exit(&merge, 0);
    let merged: bugatti::report::records::suite::SuiteSummary =
        common::read_json_file(&out.join("summary.json"));
    let changes = merged
        .changes
        .expect("a full merge compares with the unsharded run");
    assert_eq!(changes.previous_suite_id, whole, "{}", stdout(&merge));
    p.assert_nothing_survives();
}
