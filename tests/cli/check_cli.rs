//! `supervisor check` / `start` tried as a new user would: each mistake gives one clear error
//! and exit 2, a valid project prints a plan a person can read. Runs nothing, writes nothing.

use crate::common;
use crate::common::assert_exit;
use std::fs;
use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use predicates::str::contains;

fn matches(re: &str) -> predicates::str::RegexPredicate {
    predicates::str::is_match(re).expect("regex")
}

fn project() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    fs::write(p, text).expect("write");
}

fn supervisor(dir: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("supervisor"));
    cmd.current_dir(dir)
        .env_remove("BUGATTI_PROVIDER")
        .env_remove("BUGATTI_BASE_URL")
        .env_remove("BUGATTI_STEP_TIMEOUT")
        // Keep the developer's global config out of the test.
        .env("BUGATTI_CONFIG_HOME", dir.join(".no-global"));
    cmd
}

/// Every file under `dir`, to prove `check` wrote nothing.
fn listing(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.path().display().to_string())
        .collect();
    out.sort();
    out
}

const VALID_CONFIG: &str = r#"
[provider]
name = "shell"

[ports]
APP_PORT = "auto"

[commands.migrate]
kind = "short_lived"
cmd = "python3 app/migrate.py"

[commands.server]
kind = "long_lived"
cmd = "python3 -m http.server ${APP_PORT}"
depends_on = ["migrate"]
readiness_url = "http://127.0.0.1:${APP_PORT}/"
"#;

fn valid_project(root: &Path) {
    write(root, "bugatti.config.toml", VALID_CONFIG);
    write(
        root,
        "tests/checkout.test.toml",
        r#"name = "Checkout"
tags = ["nightly"]

[overrides.commands.server]
cmd = "python3 -m http.server ${APP_PORT} --bind 127.0.0.1"

[[steps]]
instruction = """
Open http://127.0.0.1:${APP_PORT}/ and check that three products are listed.
Then stop.
"""
timeout_secs = 120

[[steps]]
include_path = "shared/_login.test.toml"

[[steps]]
instruction = "Upload {{path:cart.json}}"
"#,
    );
    write(root, "tests/checkout/cart.json", "{}");
    write(
        root,
        "tests/shared/_login.test.toml",
        "[[steps]]\ninstruction = \"Log in as `admin`\"\nsetup = true\n",
    );
    write(
        root,
        "tests/smoke.test.toml",
        "[[steps]]\ninstruction = \"Run `true`\"\n",
    );
}

#[test]
fn valid_project_prints_a_readable_plan_and_writes_nothing() {
    let d = project();
    valid_project(d.path());
    let before = listing(d.path());
    supervisor(d.path())
        .arg("check")
        .assert()
        .success()
        .stdout(contains("root tests:   2 selected of 2 discovered"))
        .stdout(contains("== tests/checkout.test.toml — \"Checkout\"  [tags: nightly]"))
        .stdout(contains("plan (3 steps):"))
        .stdout(matches(
            r"(?m)^ +1  tests/checkout\.test\.toml#1 +\[timeout: 120s\] Open http://127\.0\.0\.1:\$\{APP_PORT\}/ and check that three products are listed\. …$",
        ))
        .stdout(matches(
            r"(?m)^ +2  tests/shared/_login\.test\.toml#1 \(via tests/checkout\.test\.toml\)  \[setup\] Log in as `admin`$",
        ))
        .stdout(matches(r"(?m)^ +3  tests/checkout\.test\.toml#3 +Upload \{\{path:cart\.json\}\}$"))
        .stdout(contains("provider.name").and(contains("(project config)")))
        .stdout(contains("commands.server.cmd  python3 -m http.server ${APP_PORT} --bind 127.0.0.1  (test overrides)"))
        .stdout(contains("ok: 2 root tests, 4 steps; nothing was run"));
    assert_eq!(before, listing(d.path()), "check must write nothing");
}

#[test]
fn no_config_says_defaults_apply_in_one_line() {
    let d = project();
    write(d.path(), "a.test.toml", "[[steps]]\ninstruction = \"x\"\n");
    supervisor(d.path())
        .arg("check")
        .assert()
        .success()
        .stderr(contains("note: no bugatti.config.toml in").and(contains("using defaults")))
        .stdout(
            contains("provider.name")
                .and(contains("claude-code"))
                .and(contains("(default)")),
        )
        .stdout(matches(r"(?m)^ *provider\.console +true +\(default\)$"));
}

#[test]
fn typo_in_config_field_is_one_clear_error() {
    let d = project();
    valid_project(d.path());
    write(
        d.path(),
        "bugatti.config.toml",
        &VALID_CONFIG.replace("depends_on", "depend_on"),
    );
    supervisor(d.path())
        .arg("check")
        .assert()
        .code(2)
        .stdout("")
        .stderr(contains("error: unknown field `depend_on`"))
        .stderr(contains("--> bugatti.config.toml:15:1"))
        .stderr(contains("15 | depend_on = [\"migrate\"]"))
        .stderr(contains("did you mean `depends_on`?"))
        .stderr(contains("1 problem found; nothing was run"));
}

#[test]
fn include_cycle_prints_the_whole_chain() {
    let d = project();
    write(
        d.path(),
        "a.test.toml",
        "[[steps]]\ninclude_path = \"sub/_b.test.toml\"\n",
    );
    write(
        d.path(),
        "sub/_b.test.toml",
        "[[steps]]\ninclude_path = \"../a.test.toml\"\n",
    );
    supervisor(d.path())
        .arg("check")
        .assert()
        .code(2)
        .stderr(contains(
            "error: include cycle: a.test.toml -> sub/_b.test.toml -> a.test.toml",
        ))
        .stderr(contains("--> sub/_b.test.toml:1:1"))
        .stderr(contains("1 problem found"));
}

#[test]
fn missing_include_is_one_clear_error() {
    let d = project();
    write(
        d.path(),
        "a.test.toml",
        "[[steps]]\ninstruction = \"x\"\n\n[[steps]]\ninclude_path = \"shared/login.test.toml\"\n",
    );
    supervisor(d.path())
        .arg("check")
        .assert()
        .code(2)
        .stderr(contains(
            "error: include_path `shared/login.test.toml` not found",
        ))
        .stderr(contains("--> a.test.toml:4:1"))
        .stderr(contains("1 problem found"));
}

#[test]
fn glob_matching_nothing_is_one_clear_error() {
    let d = project();
    write(
        d.path(),
        "a.test.toml",
        "[[steps]]\ninclude_glob = \"smoke/*.test.toml\"\n",
    );
    supervisor(d.path())
        .arg("check")
        .assert()
        .code(2)
        .stderr(contains(
            "error: include_glob `smoke/*.test.toml` matches no file",
        ))
        .stderr(contains("1 problem found"));
}

#[test]
fn bad_shard_is_a_usage_error() {
    let d = project();
    valid_project(d.path());
    for sub in ["start", "check"] {
        supervisor(d.path())
            .args([sub, "--shard", "4/3"])
            .assert()
            .code(2)
            .stderr(contains("--shard `4/3`: K must be between 1 and N (3)"));
    }
}

#[test]
fn unknown_skip_cmd_is_exit_2_and_names_the_commands() {
    let d = project();
    valid_project(d.path());
    supervisor(d.path())
        .args(["start", "--skip-cmd", "sever"])
        .assert()
        .code(2)
        .stderr(contains(
            "error: --skip-cmd `sever`: no command of that name",
        ))
        .stderr(contains("commands defined: migrate, server"))
        .stderr(contains("not wired").not());
}

#[test]
fn every_problem_is_reported_not_just_the_first() {
    let d = project();
    write(
        d.path(),
        "bugatti.config.toml",
        "[ports]\nAPP_PORT = \"auto\"\n",
    );
    write(
        d.path(),
        "a.test.toml",
        "[[steps]]\ninstruction = \"open ${APP_PROT}\"\n[[steps]]\ninstruction = \"see [[asset:menu.txt]]\"\n",
    );
    write(
        d.path(),
        "b.test.toml",
        "[[steps]]\ninstruction = \"x\"\ninclude_path = \"a.test.toml\"\n",
    );
    supervisor(d.path())
        .arg("check")
        .assert()
        .code(2)
        .stderr(contains("instruction: unknown variable `${APP_PROT}`"))
        .stderr(contains("asset `menu.txt` not found"))
        .stderr(contains(
            "exactly one of `instruction`, `include_path`, `include_glob`",
        ))
        .stderr(contains("3 problems found; nothing was run"));
}

#[test]
fn short_names_and_tags_select_tests() {
    let d = project();
    valid_project(d.path());
    supervisor(d.path())
        .args([
            "check",
            "--tag",
            "nightly",
            "checkout",
            "--config",
            "bugatti.config.toml",
        ])
        .assert()
        .success()
        .stdout(contains("root tests:   1 selected of 1 discovered"))
        .stdout(contains("== tests/checkout.test.toml"));
    supervisor(d.path())
        .args(["check", "smoke"])
        .assert()
        .success()
        .stdout(contains("root tests:   1 selected of 1 discovered"))
        .stdout(contains("== tests/smoke.test.toml"));
    supervisor(d.path())
        .args(["check", "nope"])
        .assert()
        .code(2)
        .stderr(contains(
            "`nope` is not a file, a directory, or the short name of a test",
        ));
}

#[test]
fn missing_config_file_flag_is_an_error() {
    let d = project();
    supervisor(d.path())
        .args(["check", "--config", "missing.toml"])
        .assert()
        .code(2)
        .stderr(contains("missing.toml does not exist"));
}

#[test]
fn start_help_documents_exit_codes() {
    let d = project();
    supervisor(d.path())
        .args(["start", "--help"])
        .assert()
        .success()
        .stdout(contains("Exit codes:"))
        .stdout(contains("130/143"))
        .stdout(contains("--skip-cmd <NAME>"))
        .stdout(contains("--shard <K/N|auto>"))
        .stdout(contains("--shard-by <count|duration>"))
        .stdout(contains("--history <FILE>"));
}

#[test]
fn init_writes_a_starter_that_checks_clean_and_never_overwrites() {
    let d = project();
    write(d.path(), ".gitignore", "target/");
    supervisor(d.path())
        .arg("init")
        .assert()
        .success()
        .stdout(contains("wrote bugatti.config.toml"))
        .stdout(contains("added .bugatti/ to .gitignore"));
    assert_eq!(
        std::fs::read_to_string(d.path().join(".gitignore")).expect(".gitignore"),
        "target/\n.bugatti/\n",
        "the runs are ignored, the user's lines kept"
    );
    supervisor(d.path())
        .arg("check")
        .assert()
        .success()
        .stdout(contains("ok: 1 root test, 1 step; nothing was run"));
    supervisor(d.path())
        .arg("init")
        .assert()
        .code(2)
        .stderr(contains("already exists"));
    assert_eq!(
        fs::read_to_string(d.path().join(".gitignore")).expect(".gitignore written"),
        "target/\n.bugatti/\n",
        "a second init adds nothing to .gitignore"
    );
}

#[test]
fn init_appends_bugatti_to_an_existing_gitignore_once() {
    let d = project();
    write(d.path(), ".gitignore", "target");
    supervisor(d.path())
        .arg("init")
        .assert()
        .success()
        .stdout(contains("added .bugatti/ to .gitignore"));
    assert_eq!(
        fs::read_to_string(d.path().join(".gitignore")).expect("read"),
        "target\n.bugatti/\n"
    );
    // A project that already ignores it is left alone.
    let e = project();
    write(e.path(), ".gitignore", "/.bugatti\n");
    supervisor(e.path())
        .arg("init")
        .assert()
        .success()
        .stdout(contains(".gitignore").not());
    assert_eq!(
        fs::read_to_string(e.path().join(".gitignore")).expect("read"),
        "/.bugatti\n"
    );
}

#[test]
fn shell_default_syntax_in_a_command_says_how_to_pass_it_to_the_shell() {
    let d = project();
    write(
        d.path(),
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[commands.server]\nkind = \"long_lived\"\ncmd = \"serve --port ${PORT:-3000}\"\n",
    );
    write(
        d.path(),
        "a.test.toml",
        "[[steps]]\ninstruction = \"`true`\"\n",
    );
    supervisor(d.path())
        .arg("check")
        .assert()
        .code(2)
        .stderr(contains("`${PORT:-3000}` is shell syntax"))
        .stderr(contains("write `$${PORT:-3000}`"));
}

#[test]
fn doctor_reports_a_busy_port_and_a_missing_provider_program() {
    let d = project();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = busy.local_addr().expect("addr").port();
    write(
        d.path(),
        "bugatti.config.toml",
        &format!(
            "[provider]\nname = \"command\"\ncmd = \"no-such-agent-program --flag\"\n[ports]\nAPP_PORT = {port}\n"
        ),
    );
    write(d.path(), "a.test.toml", "[[steps]]\ninstruction = \"x\"\n");
    supervisor(d.path())
        .arg("doctor")
        .assert()
        .code(1)
        .stdout(contains("ok   config and tests: 1 root test(s)"))
        .stdout(contains(
            "FAIL provider command: `no-such-agent-program` not found on PATH",
        ))
        .stdout(contains(format!("FAIL port APP_PORT = {port}")))
        .stdout(contains("is writable"));
    drop(busy);
    write(
        d.path(),
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n",
    );
    supervisor(d.path())
        .arg("doctor")
        .assert()
        .success()
        .stdout(contains("ok   provider shell:"));
}

#[test]
fn doctor_on_invalid_input_is_exit_2() {
    let d = project();
    write(
        d.path(),
        "bugatti.config.toml",
        "[provider]\nnaem = \"shell\"\n",
    );
    supervisor(d.path())
        .arg("doctor")
        .assert()
        .code(2)
        .stderr(contains("unknown field `naem`"));
}

#[test]
fn quiet_check_prints_plans_only_and_verbose_prints_each_tests_whole_config() {
    let d = project();
    valid_project(d.path());
    supervisor(d.path())
        .args(["check", "-q"])
        .assert()
        .success()
        .stdout(contains("plan (3 steps):"))
        .stdout(contains("effective config").not());
    let out = supervisor(d.path())
        .args(["check", "-v"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).expect("utf8");
    assert_eq!(out.matches("  effective config:\n").count(), 2, "{out}");
    assert_eq!(
        out.matches("\n    provider.step_timeout_secs ").count(),
        2,
        "{out}"
    );
    // Every step's timeout, and where it comes from: the step's own, or the provider's.
    assert!(
        out.contains("[timeout: 120s from the step's timeout_secs] Open http://"),
        "{out}"
    );
    assert_eq!(
        out.matches("timeout: 300s from provider.step_timeout_secs (default)]")
            .count(),
        3,
        "{out}"
    );
}

/// Issue 51: Codex's `--full-auto` has been an argument error since Codex 0.147; `check` and
/// `doctor` refuse it at once, naming `--sandbox workspace-write`, instead of every step
/// failing on Codex's own refusal.
#[test]
fn codex_full_auto_is_refused_by_check_and_doctor_with_its_replacement() {
    let d = project();
    write(d.path(), "a.test.toml", "[[steps]]\ninstruction = \"x\"\n");
    write(
        d.path(),
        "bugatti.config.toml",
        "[provider]\nname = \"codex\"\nagent_args = [\"-m\", \"gpt-5.5\", \"--full-auto\"]\n",
    );
    for command in ["check", "doctor"] {
        supervisor(d.path())
            .arg(command)
            .assert()
            .code(2)
            .stderr(contains(
                "provider.agent_args: `--full-auto` is not a Codex flag",
            ))
            .stderr(contains("write `--sandbox workspace-write` instead"));
    }
    // Its replacement is accepted.
    write(
        d.path(),
        "bugatti.config.toml",
        "[provider]\nname = \"codex\"\nagent_args = [\"--sandbox\", \"workspace-write\"]\n",
    );
    supervisor(d.path()).arg("check").assert().code(0);
}

#[test]
fn doctor_starts_the_agent_cli_and_prints_its_version_or_why_not() {
    let d = project();
    write(d.path(), "a.test.toml", "[[steps]]\ninstruction = \"x\"\n");
    // A CLI that answers --version, and one that is present but broken.
    let good = d.path().join("bin/codex");
    let broken = d.path().join("bin/claude");
    write(
        d.path(),
        "bin/codex",
        "#!/bin/sh\n[ \"$1\" = --version ] && echo 'codex-cli 0.171.0' && exit 0\nexit 2\n",
    );
    write(
        d.path(),
        "bin/claude",
        "#!/bin/sh\necho 'Error: claude native binary not installed' >&2\nexit 1\n",
    );
    for script in [&good, &broken] {
        std::fs::set_permissions(script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
    }
    write(
        d.path(),
        "bugatti.config.toml",
        "[provider]\nname = \"codex\"\n",
    );
    supervisor(d.path())
        .arg("doctor")
        .env("BUGATTI_CODEX_BIN", &good)
        .assert()
        .code(0)
        .stdout(contains("ok   provider codex: codex-cli 0.171.0"));
    write(
        d.path(),
        "bugatti.config.toml",
        "[provider]\nname = \"claude-code\"\n",
    );
    supervisor(d.path())
        .arg("doctor")
        .env("BUGATTI_CLAUDE_BIN", &broken)
        .assert()
        .code(1)
        .stdout(contains("FAIL provider claude-code: `"))
        .stdout(contains(
            "--version` failed (exit code 1): Error: claude native binary not installed",
        ));
}

#[test]
fn a_browser_table_shows_in_the_plan_and_its_mistakes_point_at_the_line() {
    let d = project();
    valid_project(d.path());
    write(
        d.path(),
        "bugatti.config.toml",
        &format!("{VALID_CONFIG}\n[browser]\nviewport = \"390x844\"\ncapture = [\"screenshot\"]\n"),
    );
    supervisor(d.path())
        .arg("check")
        .assert()
        .success()
        .stdout(matches(r"browser\.viewport\s+390x844"))
        .stdout(matches(r"browser\.capture\s+screenshot\s"))
        .stdout(matches(r"browser\.headless\s+true"));
    let text = format!("{VALID_CONFIG}\n[browser]\nviewport = \"wide\"\ncapture = [\"video\"]\n");
    let line = |needle: &str| {
        text.lines()
            .position(|l| l.starts_with(needle))
            .map(|i| i + 1)
            .expect("line")
    };
    write(d.path(), "bugatti.config.toml", &text);
    supervisor(d.path())
        .arg("check")
        .assert()
        .code(2)
        .stderr(contains("`[browser] viewport` must be WIDTHxHEIGHT"))
        .stderr(contains(format!(
            "bugatti.config.toml:{}:",
            line("viewport")
        )))
        .stderr(contains("`[browser] capture` has \"video\""))
        .stderr(contains(format!(
            "bugatti.config.toml:{}:",
            line("capture")
        )))
        .stderr(contains("2 problems found; nothing was run"));
    write(
        d.path(),
        "bugatti.config.toml",
        &format!("{VALID_CONFIG}\n[browser]\nheadles = true\n"),
    );
    supervisor(d.path())
        .arg("check")
        .assert()
        .code(2)
        .stderr(contains("unknown field `headles`"))
        .stderr(contains("did you mean `headless`?"));
}

#[test]
fn doctor_names_the_browser_or_what_was_tried() {
    let d = project();
    write(d.path(), "a.test.toml", "[[steps]]\ninstruction = \"x\"\n");
    write(
        d.path(),
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[browser]\nexecutable = \"/no/such/chromium\"\n",
    );
    supervisor(d.path())
        .arg("doctor")
        .assert()
        .code(1)
        .stdout(contains(
            "FAIL browser: [browser] executable /no/such/chromium",
        ));
    let Some(chromium) = common::skip::chromium("doctor with a browser") else {
        return;
    };
    write(
        d.path(),
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[browser]\n",
    );
    supervisor(d.path())
        .arg("doctor")
        .env("PATH", chromium.parent().expect("dir"))
        .assert()
        .success()
        .stdout(matches(r"ok   browser: \S+ \d+\.\d+\.\d+"))
        .stdout(contains(
            "warn Playwright MCP: no playwright-mcp on PATH; sessions run `npx -y @playwright/mcp@",
        ));
}

#[test]
fn an_unknown_replay_mode_is_one_clear_error_in_config_and_flag() {
    let d = project();
    valid_project(d.path());
    write(
        d.path(),
        "bugatti.config.toml",
        &format!("{VALID_CONFIG}\n[replay]\nmode = \"recrod\"\n"),
    );
    let text = fs::read_to_string(d.path().join("bugatti.config.toml")).expect("config");
    let line = 1 + text
        .lines()
        .position(|l| l.starts_with("mode = "))
        .expect("the mode line");
    supervisor(d.path())
        .arg("check")
        .assert()
        .code(2)
        .stdout("")
        .stderr(contains("unknown variant `recrod`"))
        .stderr(contains(format!("--> bugatti.config.toml:{line}:8")))
        .stderr(contains("did you mean `record`?"));
    write(
        d.path(),
        "bugatti.config.toml",
        &format!("{VALID_CONFIG}\n[replay]\nignore = ['order (']\n"),
    );
    supervisor(d.path())
        .arg("check")
        .assert()
        .code(2)
        .stderr(contains("[replay] ignore: `order (` is not a valid regex"))
        .stderr(contains(format!("--> bugatti.config.toml:{line}:")));
    write(d.path(), "bugatti.config.toml", VALID_CONFIG);
    supervisor(d.path())
        .args(["start", "--replay", "autoo"])
        .assert()
        .code(2)
        .stderr(contains("unknown replay mode `autoo`"))
        .stderr(contains("did you mean `auto`?"));
    assert!(!d.path().join(".bugatti").exists(), "nothing may run");
}

#[test]
fn one_mistake_is_one_error_with_did_you_mean_for_values_and_variables() {
    let d = project();
    write(
        d.path(),
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[ports]\nAPP_PORT = \"auto\"\n\n[commands.api]\nkind = \"long-lived\"\ncmd = \"sleep 100\"\n",
    );
    write(
        d.path(),
        "a.test.toml",
        "[[steps]]\ninstruction = \"`echo ${APP_PRT}`\"\n",
    );
    let out = Command::cargo_bin("supervisor")
        .expect("binary")
        .current_dir(d.path())
        .env("BUGATTI_CONFIG_HOME", d.path().join(".no-global"))
        .arg("check")
        .output()
        .expect("check runs");
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    assert_exit(&out, 2);
    // Both mistakes in one pass, each once, each with its hint.
    assert!(text.contains("did you mean `long_lived`?"), "{text}");
    assert!(
        !text.contains("needs `kind`"),
        "a kind that could not be read is not also a missing kind: {text}"
    );
    assert!(
        text.contains("unknown variable `${APP_PRT}` (did you mean `APP_PORT`?)"),
        "{text}"
    );
    assert!(text.contains("2 problems found"), "{text}");
}

#[test]
fn a_misspelt_command_name_gets_did_you_mean() {
    let d = project();
    write(
        d.path(),
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[commands.migrate]\nkind = \"short_lived\"\ncmd = \"true\"\n\n[commands.server]\nkind = \"long_lived\"\ncmd = \"sleep 100\"\ndepends_on = [\"migrat\"]\n",
    );
    write(
        d.path(),
        "a.test.toml",
        "[[steps]]\ninstruction = \"`true`\"\n",
    );
    let out = Command::cargo_bin("supervisor")
        .expect("binary")
        .current_dir(d.path())
        .env("BUGATTI_CONFIG_HOME", d.path().join(".no-global"))
        .args(["check", "--skip-cmd", "servr"])
        .output()
        .expect("check runs");
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    assert_exit(&out, 2);
    assert!(
        text.contains("depends on `migrat`, which is not defined (did you mean `migrate`?"),
        "{text}"
    );
    assert!(text.contains("did you mean `server`?"), "{text}");
}

#[test]
fn shell_default_syntax_is_refused_with_the_escape_to_write() {
    let d = project();
    write(
        d.path(),
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n[commands.app]\nkind = \"short_lived\"\ncmd = \"echo ${GREETING:-hello}\"\n",
    );
    write(
        d.path(),
        "a.test.toml",
        "[[steps]]\ninstruction = \"`true`\"\n",
    );
    supervisor(d.path())
        .arg("check")
        .assert()
        .code(2)
        .stderr(contains("shell syntax"))
        .stderr(contains("$${GREETING:-hello}"))
        .stderr(contains("bugatti.config.toml"));
}

/// `[watch] paths` (docs/cli.md "supervisor watch"): `check` shows it with its layer, and a glob
/// that does not compile is one error pointing at the line.
#[test]
fn watch_paths_show_in_check_and_a_bad_glob_points_at_its_line() {
    let d = project();
    valid_project(d.path());
    let config = d.path().join("bugatti.config.toml");
    let text = fs::read_to_string(&config).expect("config");
    fs::write(
        &config,
        format!("{text}\n[watch]\npaths = [\"app/**/*.py\", \"Makefile\"]\n"),
    )
    .expect("write");
    supervisor(d.path())
        .arg("check")
        .assert()
        .success()
        .stdout(matches(
            r"\n  watch\.paths +app/\*\*/\*\.py, Makefile +\(project config\)\n",
        ));
    fs::write(&config, format!("{text}\n[watch]\npaths = [\"app/[x\"]\n")).expect("write");
    let out = supervisor(d.path()).arg("check").assert().code(2);
    out.stderr(contains("[watch] paths: `app/[x` is not a valid glob"))
        .stderr(contains("1 problem found"));
}
