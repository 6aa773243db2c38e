//! Properties of the config and test-file parsers: any text gives a parsed file or one problem
//! naming the file and a line inside it (never a panic), valid structures parse back to what was
//! written, and a bad key is reported on the line it sits on.

use bugatti::fuzzing;
use bugatti::model::config::parse_config;
use bugatti::model::test_file::{parse_test_file, StepKind};
use proptest::prelude::*;
use std::path::Path;

/// A TOML string literal for any text.
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Lines that look like TOML and mostly use the real table and key names, so the parsers get past
/// the syntax and into the field checks.
fn tomlish() -> impl Strategy<Value = String> {
    let header = prop::sample::select(vec![
        "[provider]",
        "[supervisor]",
        "[env]",
        "[secrets]",
        "[ports]",
        "[commands.server]",
        "[commands.server.readiness]",
        "[checkpoint]",
        "[[steps]]",
        "[overrides.provider]",
        "[overrides.commands.server]",
        "[[commands]]",
        "[steps]",
        "[",
    ])
    .prop_map(str::to_string);
    let key = prop::sample::select(vec![
        "name",
        "cmd",
        "kind",
        "instruction",
        "include_path",
        "include_glob",
        "timeout_secs",
        "step_timeout_secs",
        "max_parallel",
        "tests",
        "depends_on",
        "readiness_url",
        "APP_PORT",
        "TOKEN",
        "from_env",
        "skip",
        "setup",
        "save",
        "restore",
        "tags",
        "bogus",
        "é",
        "a.b",
    ]);
    let value = prop_oneof![
        any::<String>().prop_map(|s| quoted(&s)),
        any::<i64>().prop_map(|n| n.to_string()),
        Just("true".to_string()),
        Just("\"auto\"".to_string()),
        Just("\"long_lived\"".to_string()),
        Just("{ from_env = \"X\" }".to_string()),
        Just("[\"a\", 1]".to_string()),
        Just("[]".to_string()),
        Just("\"unterminated".to_string()),
        Just("1979-05-27T07:32:00Z".to_string()),
        "[ -~]{0,12}",
    ];
    let line = prop_oneof![
        header,
        (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
        "[ -~]{0,20}",
        Just(String::new()),
    ];
    (prop::collection::vec(line, 0..16), any::<bool>())
        .prop_map(|(lines, crlf)| lines.join(if crlf { "\r\n" } else { "\n" }))
}

fn instruction_text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[a-zA-Z0-9 ${}\\[\\]:._-]{1,40}"]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn config_parser_never_panics_on_any_text(text in any::<String>()) {
        fuzzing::config(text.as_bytes());
    }

    #[test]
    fn config_parser_never_panics_on_tomlish_text(text in tomlish()) {
        fuzzing::config(text.as_bytes());
    }

    #[test]
    fn test_file_parser_never_panics_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        fuzzing::test_file(&bytes);
    }

    #[test]
    fn test_file_parser_never_panics_on_tomlish_text(text in tomlish()) {
        fuzzing::test_file(text.as_bytes());
    }

    /// Arbitrary valid test files parse back to what was written, strings of any content included.
    #[test]
    fn valid_test_files_round_trip(
        name in prop::option::of(any::<String>()),
        steps in prop::collection::vec((instruction_text(), prop::option::of(1u64..100_000), any::<bool>()), 1..8),
    ) {
        let mut text = String::new();
        if let Some(n) = &name {
            text.push_str(&format!("name = {}\n", quoted(n)));
        }
        for (instruction, timeout, skip) in &steps {
            text.push_str(&format!("\n[[steps]]\ninstruction = {}\n", quoted(instruction)));
            if let Some(t) = timeout {
                text.push_str(&format!("timeout_secs = {t}\n"));
            }
            if *skip {
                text.push_str("skip = true\n");
            }
        }
        let file = Path::new("/p/t.test.toml");
        let parsed = parse_test_file(file, &text).map_err(|p| TestCaseError::fail(p.to_string()))?;
        prop_assert_eq!(&parsed.name, &name);
        prop_assert_eq!(parsed.steps.len(), steps.len());
        for (got, (instruction, timeout, skip)) in parsed.steps.iter().zip(&steps) {
            let kind = got.get_ref().kind();
            if instruction.trim().is_empty() {
                prop_assert!(kind.is_err());
                continue;
            }
            match kind {
                Ok(StepKind::Instruction { text, timeout_secs, skip: s, .. }) => {
                    prop_assert_eq!(&text, instruction);
                    prop_assert_eq!(timeout_secs, *timeout);
                    prop_assert_eq!(s, *skip);
                }
                other => prop_assert!(false, "{:?}", other),
            }
        }
    }

    /// Arbitrary valid configs parse, keep their values, and layer without a panic.
    #[test]
    fn valid_configs_round_trip(
        provider in prop::sample::select(vec!["shell", "command", "claude-code"]),
        timeout in 1u64..1_000_000,
        env in prop::collection::btree_map("[A-Z_][A-Z0-9_]{0,8}", any::<String>(), 0..5),
        commands in prop::collection::btree_map("[a-z][a-z0-9_-]{0,8}", (any::<String>(), any::<bool>()), 0..4),
    ) {
        let mut text = format!("[provider]\nname = \"{provider}\"\nstep_timeout_secs = {timeout}\n\n[env]\n");
        for (k, v) in &env {
            text.push_str(&format!("{k} = {}\n", quoted(v)));
        }
        for (name, (cmd, long)) in &commands {
            let kind = if *long { "long_lived" } else { "short_lived" };
            text.push_str(&format!("\n[commands.{name}]\nkind = \"{kind}\"\ncmd = {}\n", quoted(cmd)));
        }
        let file = Path::new("/p/bugatti.config.toml");
        let cfg = parse_config(file, &text).map_err(|p| TestCaseError::fail(p.to_string()))?;
        prop_assert_eq!(cfg.provider.step_timeout_secs.map(|t| *t.get_ref()), Some(timeout));
        prop_assert_eq!(cfg.provider.name.as_ref().map(|n| n.get_ref().as_str()), Some(provider));
        let got: Vec<(&String, &String)> = cfg.env.iter().map(|(k, v)| (k, v.get_ref())).collect();
        let want: Vec<(&String, &String)> = env.iter().collect();
        prop_assert_eq!(got, want);
        prop_assert_eq!(
            cfg.commands.iter().map(|(k, c)| (k.clone(), c.get_ref().cmd.clone())).collect::<Vec<_>>(),
            commands.iter().map(|(k, (c, _))| (k.clone(), Some(c.clone()))).collect::<Vec<_>>()
        );
        fuzzing::config(text.as_bytes());
    }

    /// An unknown key put on any line of a valid file is reported on exactly that line.
    #[test]
    fn an_unknown_key_is_reported_on_its_line(
        steps in prop::collection::vec("[a-z ]{1,20}", 1..6),
        pick in any::<prop::sample::Index>(),
        key in "zz[a-z]{1,6}",
    ) {
        let mut lines: Vec<String> = Vec::new();
        let mut slots = Vec::new();
        for s in &steps {
            lines.push("[[steps]]".into());
            lines.push(format!("instruction = {}", quoted(s)));
            slots.push(lines.len());
            lines.push(String::new());
        }
        let at = slots[pick.index(slots.len())];
        lines.insert(at, format!("{key} = 1"));
        let text = lines.join("\n");
        let file = Path::new("/p/t.test.toml");
        let problem = parse_test_file(file, &text).expect_err("unknown key");
        prop_assert!(problem.message.contains(&format!("unknown field `{key}`")), "{}", problem.message);
        let location = problem.location.expect("a position");
        prop_assert_eq!(location.line, at + 1);
        prop_assert_eq!(location.file.as_path(), file);
        let config_problem = parse_config(Path::new("/p/c.toml"), &format!("[provider]\nname = \"shell\"\n{key} = 2\n"))
            .expect_err("unknown key");
        prop_assert_eq!(config_problem.location.expect("a position").line, 3);
    }
}
