//! The step timeout, set in every layer (the step's own `timeout_secs`, a test's overrides, the
//! config, `--step-timeout`), reads the same in `check -v` and in run.json; a value past the
//! limit is a usage error (exit 2) naming where it was written and the limit, never a panic.

use crate::common::{assert_exit, stderr, stdout, Project};

const CONFIG: &str = "[provider]\nname = \"shell\"\nstep_timeout_secs = 41\n";
/// The longest step timeout the supervisor accepts (docs/config.md).
const LIMIT: &str = "604800";

fn project() -> Project {
    let p = Project::new();
    p.write("bugatti.config.toml", CONFIG);
    p.write("config.test.toml", "[[steps]]\ninstruction = \"`true`\"\n");
    p.write(
        "overrides.test.toml",
        "[overrides.provider]\nstep_timeout_secs = 42\n[[steps]]\ninstruction = \"`true`\"\n",
    );
    p.write(
        "own.test.toml",
        "[[steps]]\ninstruction = \"`true`\"\ntimeout_secs = 44\n",
    );
    p
}

/// The `[timeout: …]` mark `check -v` prints on the one step of `test_file`.
fn check_mark(out: &str, test_file: &str) -> String {
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("1 ") && l.contains(&format!("{test_file}#1")))
        .unwrap_or_else(|| panic!("no plan line for {test_file}:\n{out}"));
    let start = line.find("[timeout: ").expect("a timeout mark") + 1;
    let end = start + line[start..].find(']').expect("the mark's end");
    line[start..end].to_string()
}

/// Each test's step timeout in run.json, with the effective `provider.step_timeout_secs` row.
fn recorded(p: &Project, test_file: &str) -> (Option<u64>, String) {
    let newest = p.newest_run_by_test();
    let record = &newest[test_file.trim_end_matches(".test.toml")];
    let row = record
        .effective_config
        .iter()
        .find(|r| r.key == "provider.step_timeout_secs")
        .expect("the step timeout row");
    (record.steps[0].timeout_secs, row.value.clone())
}

#[test]
fn every_layer_reads_the_same_in_check_and_run_json() {
    let p = project();
    for (flags, expected) in [
        (
            &[][..],
            [
                (
                    "config.test.toml",
                    41,
                    "41s from provider.step_timeout_secs (project config)",
                ),
                (
                    "overrides.test.toml",
                    42,
                    "42s from provider.step_timeout_secs (test overrides)",
                ),
                ("own.test.toml", 44, "44s from the step's timeout_secs"),
            ],
        ),
        (
            &["--step-timeout", "43"][..],
            [
                (
                    "config.test.toml",
                    43,
                    "43s from provider.step_timeout_secs (command line)",
                ),
                (
                    "overrides.test.toml",
                    43,
                    "43s from provider.step_timeout_secs (command line)",
                ),
                ("own.test.toml", 44, "44s from the step's timeout_secs"),
            ],
        ),
    ] {
        let check = p.run(&[&["check", "-v"][..], flags].concat());
        assert_exit(&check, 0);
        let start = p.run(&[&["start"][..], flags].concat());
        assert_exit(&start, 0);
        for (test_file, secs, mark) in expected {
            assert_eq!(
                check_mark(&stdout(&check), test_file),
                format!("timeout: {mark}"),
                "{flags:?}"
            );
            let (step, row) = recorded(&p, test_file);
            assert_eq!(step, Some(secs), "{test_file} {flags:?}: run.json's step");
            if !mark.contains("the step's") {
                assert_eq!(
                    row,
                    secs.to_string(),
                    "{test_file} {flags:?}: run.json's row"
                );
            }
        }
    }
    p.assert_nothing_survives();
}

#[test]
fn a_huge_timeout_is_a_usage_error_naming_where_and_the_limit() {
    let huge = u64::MAX.to_string();
    // A step's own `timeout_secs`, for `check` and for `start` (which panicked adding it once).
    let p = project();
    p.write(
        "own.test.toml",
        &format!("[[steps]]\ninstruction = \"`true`\"\ntimeout_secs = {huge}\n"),
    );
    for command in ["check", "start"] {
        let out = p.run(&[command]);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains("own.test.toml") && err.contains(LIMIT) && !err.contains("panicked"),
            "{command}: {err}"
        );
    }
    // `--step-timeout`, and the config's `step_timeout_secs`.
    let p = project();
    let out = p.run(&["start", "--step-timeout", &huge]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("--step-timeout") && err.contains(LIMIT) && !err.contains("panicked"),
        "{err}"
    );
    p.write("bugatti.config.toml", &CONFIG.replace("41", &huge));
    let out = p.check();
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("bugatti.config.toml") && err.contains(LIMIT),
        "{err}"
    );
    assert!(p.run_records().is_empty(), "nothing ran");
    p.assert_nothing_survives();
}
