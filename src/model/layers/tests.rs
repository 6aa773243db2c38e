use super::*;
use crate::model::config::parse_config;

fn cfg(text: &str) -> ConfigFile {
    parse_config(Path::new("c.toml"), text).expect("parses")
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn apply(text: &str) -> (EffectiveConfig, Vec<String>) {
    let mut e = EffectiveConfig::default();
    let mut ps = e.apply_file(&cfg(text), Path::new("c.toml"), Layer::Project, &no_env);
    ps.extend(e.validate());
    (e, ps.into_iter().map(|p| p.message).collect())
}

#[test]
fn defaults_when_nothing_is_set() {
    let e = EffectiveConfig::default();
    assert_eq!(e.provider.name.value, DEFAULT_PROVIDER);
    assert_eq!(e.provider.name.value.as_str(), "claude-code");
    assert_eq!(e.provider.step_timeout_secs.value, 300);
    assert_eq!(e.supervisor.jobs.value, 4);
    assert_eq!(e.supervisor.artifact_dir.value, ".bugatti");
    assert!(e.rows().iter().all(|r| r.2 == Layer::Default));
}

#[test]
fn each_layer_wins_over_the_one_below_field_by_field() {
    let mut e = EffectiveConfig::default();
    let global =
        cfg("[provider]\nname = \"codex\"\nstep_timeout_secs = 10\nextra_system_prompt = \"g\"\n");
    let project = cfg("[provider]\nstep_timeout_secs = 20\nbase_url = \"http://p\"\n[commands.s]\nkind = \"long_lived\"\ncmd = \"a\"\n");
    assert!(e
        .apply_file(&global, Path::new("g.toml"), Layer::Global, &no_env)
        .is_empty());
    assert!(e
        .apply_file(&project, Path::new("p.toml"), Layer::Project, &no_env)
        .is_empty());
    let env = |k: &str| match k {
        "BUGATTI_BASE_URL" => Some("http://env".to_string()),
        "BUGATTI_PROVIDER" => Some("shell".to_string()),
        _ => None,
    };
    assert!(e.apply_env(&env).is_empty());
    let over = crate::model::test_file::parse_test_file(
        Path::new("t.test.toml"),
        "[overrides.provider]\nextra_system_prompt = \"t\"\n[overrides.commands.s]\ncmd = \"b\"\n",
    )
    .expect("parses");
    assert!(e
        .apply_test_overrides(
            &over.overrides.provider,
            &over.overrides.commands,
            Path::new("t.test.toml")
        )
        .is_empty());
    let flags = RunOptions {
        step_timeout: Some(30),
        jobs: Some(2),
        ..Default::default()
    };
    assert!(e.apply_flags(&flags).is_empty());
    let p = &e.provider;
    assert_eq!(
        (p.name.value.as_str(), p.name.source),
        ("shell", Layer::Env)
    );
    assert_eq!(
        (p.step_timeout_secs.value, p.step_timeout_secs.source),
        (30, Layer::Flag)
    );
    assert_eq!(p.base_url.value.as_deref(), Some("http://env"));
    assert_eq!(p.extra_system_prompt.source, Layer::Test);
    assert_eq!(p.agent_args.source, Layer::Default);
    assert_eq!(e.supervisor.jobs.source, Layer::Flag);
    let s = &e.commands["s"];
    assert_eq!((s.cmd.as_str(), s.source_of("cmd")), ("b", Layer::Test));
    assert_eq!(s.source_of("kind"), Layer::Project);
    assert_eq!(s.source_of("stop_signal"), Layer::Default);
    let rows = e.rows();
    assert!(
        rows.contains(&("commands.s.cmd".into(), "b".into(), Layer::Test)),
        "{rows:?}"
    );
    assert!(rows.contains(&("provider.name".into(), "shell".into(), Layer::Env)));
}

#[test]
fn the_console_is_on_by_default_and_a_test_can_turn_it_off() {
    let mut e = EffectiveConfig::default();
    assert!(e.provider.console.value);
    let project = cfg("[provider]\nconsole = false\n");
    assert!(e
        .apply_file(&project, Path::new("p.toml"), Layer::Project, &no_env)
        .is_empty());
    assert_eq!(
        (e.provider.console.value, e.provider.console.source),
        (false, Layer::Project)
    );
    let over = crate::model::test_file::parse_test_file(
        Path::new("t.test.toml"),
        "[overrides.provider]\nconsole = true\n",
    )
    .expect("parses");
    assert!(e
        .apply_test_overrides(
            &over.overrides.provider,
            &over.overrides.commands,
            Path::new("t.test.toml")
        )
        .is_empty());
    assert_eq!(
        (e.provider.console.value, e.provider.console.source),
        (true, Layer::Test)
    );
    assert!(e
        .rows()
        .contains(&("provider.console".into(), "true".into(), Layer::Test)));
}

#[test]
fn bad_env_and_flag_values_are_problems() {
    let mut e = EffectiveConfig::default();
    let env = |k: &str| match k {
        "BUGATTI_STEP_TIMEOUT" => Some("soon".to_string()),
        "BUGATTI_PROVIDER" => Some("gpt".to_string()),
        _ => None,
    };
    let ps: Vec<String> = e.apply_env(&env).into_iter().map(|p| p.message).collect();
    assert!(
        ps.iter()
            .any(|m| m.contains("BUGATTI_STEP_TIMEOUT=`soon` is not a whole number")),
        "{ps:?}"
    );
    assert!(
        ps.iter()
            .any(|m| m.contains("BUGATTI_PROVIDER=`gpt` is not a provider")),
        "{ps:?}"
    );
    let flags = RunOptions {
        provider: Some("nope".into()),
        jobs: Some(0),
        step_timeout: Some(0),
        timeout: Some(0),
        ..Default::default()
    };
    let ps: Vec<String> = e
        .apply_flags(&flags)
        .into_iter()
        .map(|p| p.message)
        .collect();
    assert_eq!(ps.len(), 3, "{ps:?}");
    assert!(ps[0].starts_with("--provider `nope` is not a provider"));
    // The step timeout's range is checked once, on the effective value, naming the flag.
    let ps: Vec<String> = e.validate().into_iter().map(|p| p.message).collect();
    assert_eq!(
        ps,
        vec!["--step-timeout must be from 1 to 604800 seconds (a week), not 0"]
    );
}

#[test]
fn unknown_provider_and_command_provider_without_cmd() {
    let (_, ps) = apply("[provider]\nname = \"gpt\"\n");
    assert!(ps[0].starts_with("unknown provider `gpt`"), "{ps:?}");
    let (_, ps) = apply("[provider]\nname = \"codex\"\n");
    assert_eq!(ps, Vec::<String>::new(), "codex is available");
    let (_, ps) = apply("[provider]\nname = \"command\"\n");
    assert_eq!(
        ps,
        vec!["provider `command` needs `[provider] cmd`, the program to run"]
    );
    let (_, ps) = apply("[supervisor]\nmax_parallel = 0\n");
    assert_eq!(ps, vec!["`max_parallel` must be at least 1"]);
}

#[test]
fn max_log_bytes_is_a_whole_number_of_at_least_4096() {
    let (e, ps) = apply("");
    assert_eq!(e.supervisor.max_log_bytes.value, 256 * 1024 * 1024);
    assert!(ps.is_empty());
    let (e, ps) = apply("[supervisor]\nmax_log_bytes = 65536\n");
    assert_eq!((e.supervisor.max_log_bytes.value, ps.len()), (65536, 0));
    for bad in ["100", "-1", "0"] {
        let (_, ps) = apply(&format!("[supervisor]\nmax_log_bytes = {bad}\n"));
        assert_eq!(ps.len(), 1, "{bad}: {ps:?}");
        assert!(
            ps[0].starts_with(&format!(
                "`[supervisor] max_log_bytes` must be a whole number of bytes, at least 4096 (found {bad};"
            )),
            "{ps:?}"
        );
    }
}

#[test]
fn secrets_resolve_from_env_and_missing_ones_are_named() {
    let mut e = EffectiveConfig::default();
    let c = cfg(
        "[secrets]\nA = { from_env = \"HAVE\" }\nB = { from_env = \"MISSING\" }\nC = \"lit\"\n",
    );
    let env = |k: &str| (k == "HAVE").then(|| "s3cret".to_string());
    let ps = e.apply_file(&c, Path::new("c.toml"), Layer::Project, &env);
    assert_eq!(ps.len(), 1);
    assert_eq!(
        ps[0].message,
        "secret `B` is read from environment variable `MISSING`, which is not set"
    );
    assert!(ps[0].origin.is_some());
    assert_eq!(e.secrets["A"].value.value, "s3cret");
    assert_eq!(e.secrets["C"].value.value, "lit");
    let shown = format!("{:?} {:?}", e.secrets, e.rows());
    assert!(
        !shown.contains("s3cret") && !shown.contains("lit\""),
        "{shown}"
    );
}

#[test]
fn ports_env_and_secrets_share_one_namespace_without_builtins() {
    let (_, ps) = apply("[ports]\nX = \"auto\"\n[env]\nX = \"1\"\nBUGATTI_WORKDIR = \"/tmp\"\n[secrets]\n\"my-key\" = \"v\"\n");
    assert_eq!(
        ps,
        vec![
            "[env] may not define `BUGATTI_WORKDIR`: the harness sets it",
            "`X` is defined in both [ports] and [env]",
            "[secrets] name `my-key` is not usable as an environment variable and `${my-key}` (letters, digits and `_`, not starting with a digit)",
        ]
    );
}

#[test]
fn session_vars_combine_builtins_ports_secrets_and_env() {
    let mut e = EffectiveConfig::default();
    let c = cfg("[ports]\nP = \"auto\"\n[secrets]\nT = \"tok\"\n[env]\nURL = \"http://127.0.0.1:${P}/?t=${T}&w=${BUGATTI_WORKDIR}\"\n");
    assert!(e
        .apply_file(&c, Path::new("c.toml"), Layer::Project, &no_env)
        .is_empty());
    let builtins = [("BUGATTI_WORKDIR".to_string(), "/w".to_string())].into();
    let ports = [("P".to_string(), 4321u16)].into();
    let vars = e.session_vars(&builtins, &ports).unwrap();
    assert_eq!(vars["URL"], "http://127.0.0.1:4321/?t=tok&w=/w");
    assert_eq!(vars["P"], "4321");
    assert_eq!(e.secret_pairs(), vec![("T".to_string(), "tok".to_string())]);
}

#[test]
fn suite_scoped_commands_cannot_be_overridden_per_test() {
    for (config, over) in [
        ("scope = \"suite\"\n", "cmd = \"y\"\n"),
        ("", "scope = \"suite\"\n"),
    ] {
        let mut e = EffectiveConfig::default();
        let c = cfg(&format!(
            "[commands.s]\nkind = \"long_lived\"\ncmd = \"x\"\n{config}"
        ));
        assert!(e
            .apply_file(&c, Path::new("c.toml"), Layer::Project, &no_env)
            .is_empty());
        let t = crate::model::test_file::parse_test_file(
            Path::new("t.test.toml"),
            &format!("[overrides.commands.s]\n{over}"),
        )
        .expect("parses");
        let ps = e.apply_test_overrides(
            &t.overrides.provider,
            &t.overrides.commands,
            Path::new("t.test.toml"),
        );
        assert_eq!(ps.len(), 1);
        assert!(
            ps[0]
                .message
                .contains("cannot override a suite-scoped command"),
            "{}",
            ps[0].message
        );
    }
}

#[test]
fn overriding_an_undefined_command_is_refused() {
    let mut e = EffectiveConfig::default();
    let t = crate::model::test_file::parse_test_file(
        Path::new("t.test.toml"),
        "[overrides.commands.ghost]\ncmd = \"x\"\n",
    )
    .expect("parses");
    let ps = e.apply_test_overrides(
        &t.overrides.provider,
        &t.overrides.commands,
        Path::new("t.test.toml"),
    );
    assert_eq!(
        ps[0].message,
        "`[overrides.commands.ghost]` overrides a command that is not defined in the config (no commands are defined)"
    );
}

#[test]
fn browser_is_off_until_a_layer_has_the_table_then_merges_field_by_field() {
    let (e, ps) = apply("");
    assert!(e.browser.is_none() && ps.is_empty());
    let mut e = EffectiveConfig::default();
    let global = cfg("[browser]\nexecutable = \"/opt/chrome/chrome\"\n");
    assert!(e
        .apply_file(&global, Path::new("g.toml"), Layer::Global, &no_env)
        .is_empty());
    let project = cfg("[browser]\nviewport = \"390x844\"\n");
    assert!(e
        .apply_file(&project, Path::new("c.toml"), Layer::Project, &no_env)
        .is_empty());
    let b = e.browser.as_ref().expect("on");
    assert_eq!(b.value.executable.as_deref(), Some("/opt/chrome/chrome"));
    assert_eq!(b.value.viewport, (390, 844));
    assert_eq!(b.source, Layer::Project);
    let rows = e.rows();
    let row = |key: &str| {
        rows.iter()
            .find(|r| r.0 == key)
            .map(|r| r.1.clone())
            .unwrap_or_else(|| panic!("no row {key}"))
    };
    assert_eq!(row("browser.viewport"), "390x844");
    assert_eq!(row("browser.capture"), "screenshot, console, network");
}

#[test]
fn browser_problems_point_at_the_value() {
    let text = "[browser]\nheadless = true\nviewport = \"wide\"\n";
    let mut e = EffectiveConfig::default();
    let ps = e.apply_file(&cfg(text), Path::new("c.toml"), Layer::Project, &no_env);
    assert_eq!(ps.len(), 1, "{ps:?}");
    assert!(ps[0].message.contains("WIDTHxHEIGHT"), "{ps:?}");
    let at = ps[0].origin.as_ref().expect("origin");
    assert_eq!(&text[at.span.clone()], "\"wide\"");
}

#[test]
fn watch_paths_of_the_project_replace_the_global_ones_and_a_bad_glob_is_refused() {
    let mut e = EffectiveConfig::default();
    assert!(e
        .apply_file(
            &cfg("[watch]\npaths = [\"lib/**\"]\n"),
            Path::new("g.toml"),
            Layer::Global,
            &no_env
        )
        .is_empty());
    assert!(e
        .apply_file(
            &cfg("[watch]\npaths = [\"app/**/*.py\", \"Makefile\"]\n"),
            Path::new("p.toml"),
            Layer::Project,
            &no_env
        )
        .is_empty());
    assert_eq!(e.watch.paths.value, ["app/**/*.py", "Makefile"]);
    assert_eq!(e.watch.paths.source, Layer::Project);
    let row = e.rows().into_iter().find(|r| r.0 == "watch.paths");
    assert_eq!(
        row,
        Some((
            "watch.paths".to_string(),
            "app/**/*.py, Makefile".to_string(),
            Layer::Project
        ))
    );
    let (_, problems) = apply("[watch]\npaths = [\"app/[x\"]\n");
    assert!(
        problems
            .iter()
            .any(|p| p.contains("[watch] paths: `app/[x`")),
        "{problems:?}"
    );
}
