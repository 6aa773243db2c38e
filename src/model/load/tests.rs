use super::*;
use crate::model::options::Shard;
use std::fs;

struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    host: HostEnv,
}

impl Project {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let host = HostEnv {
            cwd: root.clone(),
            // No HOME: the developer's own global config must not leak into tests.
            vars: BTreeMap::new(),
        };
        Project {
            _dir: dir,
            root,
            host,
        }
    }
    fn write(&self, rel: &str, text: &str) -> &Self {
        let p = self.root.join(rel);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, text).expect("write");
        self
    }
    fn load(&self, o: &RunOptions) -> Result<Suite, Problems> {
        load_suite_with(o, &self.host)
    }
    fn errors(&self, o: &RunOptions) -> String {
        match self.load(o) {
            Ok(s) => panic!("expected problems, got {} tests", s.tests.len()),
            Err(p) => p.to_string(),
        }
    }
}

const STEP: &str = "[[steps]]\ninstruction = \"do it\"\n";

#[test]
fn the_nearest_config_upward_is_the_project_root() {
    let mut p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n")
        .write("tests/a.test.toml", STEP)
        .write("tests/deep/more/keep", "");
    p.host.cwd = p.root.join("tests/deep/more");
    let s = p.load(&RunOptions::default()).unwrap();
    assert_eq!(s.project_root, p.root);
    assert_eq!(s.config_path, Some(p.root.join("bugatti.config.toml")));
    assert_eq!(s.tests[0].rel_path, PathBuf::from("tests/a.test.toml"));
    assert_eq!(s.base.provider.name.value.as_str(), "shell");
}

#[test]
fn a_symlink_loop_under_the_root_is_skipped_with_a_note() {
    let p = Project::new();
    p.write("tests/a.test.toml", STEP);
    std::os::unix::fs::symlink("..", p.root.join("tests/loop")).expect("symlink");
    let s = p.load(&RunOptions::default()).unwrap();
    assert_eq!(s.tests.len(), 1);
    assert!(
        s.notes
            .iter()
            .any(|n| n.contains("tests/loop") && n.contains("symlink loop")),
        "{:?}",
        s.notes
    );
}

#[test]
fn the_agent_cmd_cannot_use_the_step_id_and_its_cwd_must_exist() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"command\"\ncmd = \"a ${BUGATTI_STEP_ID}\"\ncwd = \"agents\"\nagent_args = [\"${NOPE}\"]\n",
    )
    .write("a.test.toml", STEP);
    let e = p.errors(&RunOptions::default());
    assert!(
        e.contains("provider.cmd: `${BUGATTI_STEP_ID}` is not defined here"),
        "{e}"
    );
    assert!(
        e.contains("provider.cwd: `agents` is not a directory"),
        "{e}"
    );
    assert!(
        e.contains("provider.agent_args[0]: unknown variable `${NOPE}`"),
        "{e}"
    );
}

#[test]
fn no_config_means_defaults_and_a_note() {
    let p = Project::new();
    p.write("a.test.toml", STEP);
    let s = p.load(&RunOptions::default()).unwrap();
    assert_eq!(s.config_path, None);
    let summary = s.config_summary();
    assert!(
        summary.starts_with("no bugatti.config.toml in ")
            && summary.contains("or its parents: using defaults"),
        "{summary}"
    );
    assert_eq!(s.tests.len(), 1);
    assert_eq!(s.tests[0].name, "a");
    assert_eq!(s.tests[0].rel_path, PathBuf::from("a.test.toml"));
    assert_eq!(s.tests[0].plan[0].instruction, "do it");
}

#[test]
fn missing_config_flag_file_is_an_error() {
    let p = Project::new();
    let e = p.errors(&RunOptions {
        config: Some("nope.toml".into()),
        ..Default::default()
    });
    assert!(
        e.contains("config file") && e.contains("nope.toml does not exist"),
        "{e}"
    );
}

#[test]
fn config_dir_is_the_project_root_and_global_config_is_a_layer() {
    let p = Project::new();
    p.write("proj/cfg.toml", "[provider]\nname = \"shell\"\n")
        .write("proj/t/a.test.toml", STEP)
        .write(
            "home/config.toml",
            "[provider]\nname = \"codex\"\nstep_timeout_secs = 9\n",
        );
    let mut host = p.host.clone();
    host.vars.insert(
        "BUGATTI_CONFIG_HOME".into(),
        p.root.join("home").display().to_string(),
    );
    let s = load_suite_with(
        &RunOptions {
            config: Some("proj/cfg.toml".into()),
            ..Default::default()
        },
        &host,
    )
    .unwrap();
    assert_eq!(s.project_root, p.root.join("proj"));
    assert_eq!(s.global_config_path, Some(p.root.join("home/config.toml")));
    assert_eq!(s.base.provider.name.value.as_str(), "shell");
    assert_eq!(s.base.provider.name.source, Layer::Project);
    assert_eq!(s.base.provider.step_timeout_secs.value, 9);
    assert_eq!(s.base.provider.step_timeout_secs.source, Layer::Global);
    assert_eq!(s.tests[0].rel_path, PathBuf::from("t/a.test.toml"));
}

#[test]
fn config_problems_and_test_problems_come_in_one_pass() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nnmae = \"shell\"\nstep_timeout_secs = \"20\"\n[commands.a]\nkind = \"long_lived\"\ncmd = \"x\"\ndepends_on = [\"nope\"]\n",
    )
    .write("a.test.toml", "[[steps]]\ninstruction = \"${UNKNOWN}\"\n");
    let e = p.load(&RunOptions::default()).unwrap_err();
    let text = e.to_string();
    assert_eq!(e.len(), 4, "{text}");
    assert!(text.contains("unknown field `nmae`"), "{text}");
    assert!(text.contains("--> bugatti.config.toml:2:1"), "{text}");
    assert!(text.contains("did you mean `name`?"), "{text}");
    assert!(text.contains("expected a whole number"), "{text}");
    assert!(text.contains("depends on `nope`"), "{text}");
    assert!(text.contains("unknown variable `${UNKNOWN}`"), "{text}");
    assert!(!text.contains("no root tests found"), "{text}");
}

#[test]
fn a_config_that_is_not_toml_stops_before_tests_are_judged() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider\nname = \"shell\"\n")
        .write("a.test.toml", "[[steps]]\ninstruction = \"${UNKNOWN}\"\n");
    let e = p.load(&RunOptions::default()).unwrap_err();
    assert_eq!(e.len(), 1, "{e}");
}

#[test]
fn include_only_and_underscore_files_are_not_root_tests() {
    let p = Project::new();
    p.write("a.test.toml", STEP)
        .write("_b.test.toml", STEP)
        .write("c.test.toml", &format!("include_only = true\n{STEP}"));
    let s = p.load(&RunOptions::default()).unwrap();
    let names: Vec<&str> = s.tests.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["a"]);
    let e = p.errors(&RunOptions {
        paths: vec!["c.test.toml".into()],
        ..Default::default()
    });
    assert!(
        e.contains("`include_only = true`: it can only be included"),
        "{e}"
    );
}

#[test]
fn nothing_to_run_is_an_error() {
    let p = Project::new();
    let e = p.errors(&RunOptions::default());
    assert!(e.contains("no root tests found under"), "{e}");
    p.write("_only.test.toml", STEP)
        .write("inc.test.toml", &format!("include_only = true\n{STEP}"));
    let e = p.errors(&RunOptions::default());
    assert!(e.contains("no root tests found under"), "{e}");
}

#[test]
fn tags_then_shards_select_deterministically() {
    let p = Project::new();
    for n in ["a", "b", "c", "d"] {
        p.write(
            &format!("{n}.test.toml"),
            &format!(
                "tags = [\"{}\"]\n{STEP}",
                if n == "d" { "slow" } else { "fast" }
            ),
        );
    }
    let names = |o: RunOptions| -> Vec<String> {
        p.load(&o)
            .unwrap()
            .tests
            .iter()
            .map(|t| t.name.clone())
            .collect()
    };
    assert_eq!(
        names(RunOptions {
            tags: vec!["fast".into()],
            ..Default::default()
        }),
        vec!["a", "b", "c"]
    );
    let shard = |k| RunOptions {
        shard: Some(Shard { index: k, count: 2 }),
        ..Default::default()
    };
    assert_eq!(names(shard(1)), vec!["a", "c"]);
    assert_eq!(names(shard(2)), vec!["b", "d"]);
    let e = p.errors(&RunOptions {
        tags: vec!["none".into()],
        ..Default::default()
    });
    assert!(
        e.contains("no root test carries any of the tags none"),
        "{e}"
    );
}

#[test]
fn tests_globs_from_config_and_a_glob_matching_nothing() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[supervisor]\ntests = [\"e2e/*.test.toml\", \"nothing/*.test.toml\"]\n",
    )
    .write("e2e/a.test.toml", STEP)
    .write("other/b.test.toml", STEP);
    let e = p.errors(&RunOptions::default());
    assert!(
        e.contains("[supervisor] tests: tests glob `nothing/*.test.toml` matches no file"),
        "{e}"
    );
    assert!(e.contains("bugatti.config.toml:2:"), "{e}");
    p.write(
        "bugatti.config.toml",
        "[supervisor]\ntests = [\"e2e/*.test.toml\"]\n",
    );
    let s = p.load(&RunOptions::default()).unwrap();
    assert_eq!(s.tests.len(), 1);
    assert_eq!(s.tests[0].rel_path, PathBuf::from("e2e/a.test.toml"));
}

#[test]
fn unknown_names_are_reported_with_field_and_place() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[ports]\nAPP_PORT = \"auto\"\n[env]\nURL = \"http://x:${APP_PORT}/${BUGATTI_WORKDIR}\"\nBAD = \"${NOPE}\"\n[commands.s]\nkind = \"long_lived\"\ncmd = \"run --port ${APP_PROT} $${HOME}\"\nreadiness = { tcp = \"127.0.0.1:${PORT}\" }\n",
    )
    .write("a.test.toml", "[[steps]]\ninstruction = \"open ${URL} ${MISSING}\"\n");
    let e = p.errors(&RunOptions::default());
    assert!(e.contains("env.BAD: unknown variable `${NOPE}`"), "{e}");
    assert!(
        e.contains("commands.s.cmd: unknown variable `${APP_PROT}`"),
        "{e}"
    );
    assert!(
        e.contains("commands.s.readiness (tcp): unknown variable `${PORT}`"),
        "{e}"
    );
    assert!(
        e.contains("instruction: unknown variable `${MISSING}`"),
        "{e}"
    );
    assert!(e.contains("--> a.test.toml:1:1"), "{e}");
    assert!(!e.contains("HOME"), "escaped $${{ must not be checked: {e}");
    assert!(e.ends_with("4 problems found; nothing was run"), "{e}");
}

#[test]
fn env_values_may_chain_but_not_cycle() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[env]\nA = \"${B}/x\"\nB = \"${BUGATTI_WORKDIR}\"\n",
    )
    .write("a.test.toml", STEP);
    assert!(p.load(&RunOptions::default()).is_ok());
    p.write("bugatti.config.toml", "[env]\nA = \"${B}\"\nB = \"${A}\"\n");
    let e = p.errors(&RunOptions::default());
    assert!(
        e.contains("[env] values refer to each other in a cycle: A -> B -> A"),
        "{e}"
    );
    assert!(e.contains("--> bugatti.config.toml:2:"), "{e}");
}

#[test]
fn a_command_cwd_must_exist_unless_it_uses_variables() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[commands.a]\nkind = \"short_lived\"\ncmd = \"x\"\ncwd = \"app\"\n[commands.b]\nkind = \"short_lived\"\ncmd = \"x\"\ncwd = \"${BUGATTI_WORKDIR}\"\n")
        .write("a.test.toml", STEP);
    let e = p.errors(&RunOptions::default());
    assert!(
        e.contains("commands.a.cwd: `app` is not a directory under the project root"),
        "{e}"
    );
    assert!(e.ends_with("1 problem found; nothing was run"), "{e}");
    p.write("app/keep", "");
    assert!(p.load(&RunOptions::default()).is_ok());
}

#[test]
fn base_config_names_are_checked_even_when_no_test_is_selected() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[env]\nA = \"${NOPE}\"\n")
        .write("a.test.toml", STEP);
    let e = p.errors(&RunOptions {
        shard: Some(Shard { index: 2, count: 2 }),
        ..Default::default()
    });
    assert!(e.contains("env.A: unknown variable `${NOPE}`"), "{e}");
    assert!(e.ends_with("1 problem found; nothing was run"), "{e}");
}

#[test]
fn skip_flags_must_name_commands() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[commands.s]\nkind = \"long_lived\"\ncmd = \"x\"\n",
    )
    .write("a.test.toml", STEP);
    let e = p.errors(&RunOptions {
        skip_cmd: vec!["web".into()],
        skip_readiness: vec!["db".into()],
        ..Default::default()
    });
    assert!(
        e.contains("--skip-cmd `web`: no command of that name"),
        "{e}"
    );
    assert!(
        e.contains("--skip-readiness `db`: no command of that name"),
        "{e}"
    );
    assert!(e.contains("commands defined: s"), "{e}");
    assert!(p
        .load(&RunOptions {
            skip_cmd: vec!["s".into()],
            ..Default::default()
        })
        .is_ok());
}

#[test]
fn a_skipped_command_that_nothing_could_answer_for_is_refused() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[ports]\nWEB_PORT = \"auto\"\nDB_PORT = 5432\n\n\
         [commands.web]\nkind = \"long_lived\"\ncmd = \"x\"\nreadiness_url = \"http://127.0.0.1:${WEB_PORT}/\"\n\n\
         [commands.db]\nkind = \"long_lived\"\ncmd = \"x\"\nreadiness = { tcp = \"127.0.0.1:${DB_PORT}\" }\n\n\
         [commands.queue]\nkind = \"long_lived\"\ncmd = \"x\"\nreadiness = { log = \"ready\" }\n",
    )
    .write("a.test.toml", STEP);
    let skip = |names: &[&str], readiness: &[&str]| RunOptions {
        skip_cmd: names.iter().map(|n| n.to_string()).collect(),
        skip_readiness: readiness.iter().map(|n| n.to_string()).collect(),
        ..Default::default()
    };
    let e = p.errors(&skip(&["web", "queue"], &[]));
    assert!(
        e.contains("--skip-cmd `web`: its readiness probe uses ${WEB_PORT}, an `auto` port"),
        "{e}"
    );
    assert!(e.contains("--skip-readiness web"), "{e}");
    assert!(
        e.contains("--skip-cmd `queue`: its readiness waits for a line of its own output"),
        "{e}"
    );
    // A fixed port your own server listens on, or no waiting: fine.
    assert!(p.load(&skip(&["db"], &[])).is_ok());
    assert!(p.load(&skip(&["web"], &["web"])).is_ok());
}

#[test]
fn checkpoints_need_the_table_are_unique_and_resume_names_exist() {
    let p = Project::new();
    let test = "[[steps]]\ninstruction = \"a\"\ncheckpoint = \"in\"\n[[steps]]\ninstruction = \"b\"\ncheckpoint = \"in\"\n";
    p.write("a.test.toml", test);
    let e = p.errors(&RunOptions::default());
    assert!(
        e.contains("`checkpoint = \"in\"` needs a [checkpoint] table"),
        "{e}"
    );
    assert!(
        e.contains("checkpoint `in` is set by both step 1 and step 2"),
        "{e}"
    );
    p.write("bugatti.config.toml", "[checkpoint]\nsave = \"s ${BUGATTI_CHECKPOINT_ID}\"\nrestore = \"r\"\n")
        .write("a.test.toml", "[[steps]]\ninstruction = \"a\"\nsetup = true\n[[steps]]\ninstruction = \"b\"\ncheckpoint = \"in\"\n");
    let resume = RunOptions {
        from_checkpoint: Some("in".into()),
        ..Default::default()
    };
    // Never saved: an error naming the folder expected.
    let e = p.errors(&resume);
    let dir = p.root.join(".bugatti/checkpoints/a/in");
    assert!(
        e.contains("--from-checkpoint `in`: no saved checkpoint")
            && e.contains(&dir.display().to_string()),
        "{e}"
    );
    // A folder whose save did not succeed is not a checkpoint either.
    fs::create_dir_all(&dir).unwrap();
    let e = p.errors(&resume);
    assert!(e.contains("was never saved successfully"), "{e}");
    fs::write(p.root.join(".bugatti/checkpoints/a/in.saved.json"), "{}").unwrap();
    let s = p
        .load(&RunOptions {
            from_checkpoint: Some("in".into()),
            ..Default::default()
        })
        .unwrap();
    let cp = s.tests[0].effective.checkpoint.as_ref().unwrap();
    assert_eq!(cp.value.timeout_secs, 120);
    assert!(s.tests[0].plan[0].setup);
    let e = p.errors(&RunOptions {
        from_checkpoint: Some("out".into()),
        ..Default::default()
    });
    assert!(
        e.contains(
            "--from-checkpoint `out`: this test has no step with that checkpoint (it has: in)"
        ),
        "{e}"
    );
}

#[test]
fn checkpoint_names_must_be_folder_names_and_own_their_log() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[checkpoint]\nsave = \"s\"\nrestore = \"r\"\n[commands.checkpoint]\nkind = \"short_lived\"\ncmd = \"true\"\n",
    )
    .write(
        "a.test.toml",
        "[[steps]]\ninstruction = \"a\"\ncheckpoint = \"../up\"\n",
    );
    let e = p.errors(&RunOptions::default());
    assert!(
        e.contains("`checkpoint = \"../up\"` cannot name a checkpoint folder"),
        "{e}"
    );
    assert!(e.contains("a harness command named `checkpoint`"), "{e}");
}

#[test]
fn missing_assets_are_errors_and_present_ones_pass() {
    let p = Project::new();
    p.write(
        "t/a.test.toml",
        "[[steps]]\ninstruction = \"use [[asset:data.json]] and {{path:pic.png}}\"\n",
    )
    .write("t/a/data.json", "{}");
    let e = p.errors(&RunOptions::default());
    assert!(e.contains("asset `pic.png` not found"), "{e}");
    assert!(!e.contains("data.json"), "{e}");
    p.write("t/a/pic.png", "png");
    assert!(p.load(&RunOptions::default()).is_ok());
}

#[test]
fn test_overrides_apply_per_test_and_flags_win() {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n[commands.s]\nkind = \"long_lived\"\ncmd = \"serve\"\n")
        .write("a.test.toml", &format!("[overrides.provider]\nstep_timeout_secs = 7\n[overrides.commands.s]\ncmd = \"serve --big\"\n{STEP}"))
        .write("b.test.toml", STEP);
    let s = p
        .load(&RunOptions {
            provider: Some("command".into()),
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
    assert!(
        s.contains("provider `command` needs `[provider] cmd`"),
        "{s}"
    );
    assert_eq!(
        s.matches("provider `command` needs").count(),
        1,
        "deduped: {s}"
    );
    let s = p
        .load(&RunOptions {
            step_timeout: Some(3),
            ..Default::default()
        })
        .unwrap();
    let a = &s.tests[0].effective;
    let b = &s.tests[1].effective;
    assert_eq!(a.commands["s"].cmd, "serve --big");
    assert_eq!(b.commands["s"].cmd, "serve");
    assert_eq!(a.provider.step_timeout_secs.value, 3);
    assert_eq!(a.provider.step_timeout_secs.source, Layer::Flag);
}

#[test]
fn env_layer_sits_between_project_and_test() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nbase_url = \"http://project\"\nstep_timeout_secs = 50\n",
    )
    .write(
        "a.test.toml",
        &format!("[overrides.provider]\nbase_url = \"http://test\"\n{STEP}"),
    )
    .write("b.test.toml", STEP);
    let mut host = p.host.clone();
    host.vars
        .insert("BUGATTI_BASE_URL".into(), "http://env".into());
    host.vars.insert("BUGATTI_STEP_TIMEOUT".into(), "40".into());
    let s = load_suite_with(&RunOptions::default(), &host).unwrap();
    assert_eq!(
        s.tests[0].effective.provider.base_url.value.as_deref(),
        Some("http://test")
    );
    assert_eq!(
        s.tests[1].effective.provider.base_url.value.as_deref(),
        Some("http://env")
    );
    assert_eq!(s.tests[1].effective.provider.base_url.source, Layer::Env);
    assert_eq!(s.base.provider.step_timeout_secs.value, 40);
}

#[test]
fn a_cycle_reachable_from_two_roots_is_reported_once() {
    let p = Project::new();
    p.write("a.test.toml", "[[steps]]\ninclude_path = \"b.test.toml\"\n")
        .write("b.test.toml", "[[steps]]\ninclude_path = \"a.test.toml\"\n");
    let e = p.load(&RunOptions::default()).unwrap_err();
    assert_eq!(e.len(), 1, "{e}");
    assert!(e
        .to_string()
        .contains("include cycle: a.test.toml -> b.test.toml -> a.test.toml"));
}

#[test]
fn bugatti_07_project_loads_as_is() {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"claude-code\"\nstrict_warnings = true\nbase_url = \"http://localhost:3000\"\n[commands.server]\nkind = \"long_lived\"\ncmd = \"npm start\"\nreadiness_urls = [\"http://localhost:3000/health\"]\nreadiness_timeout_secs = 60\n[checkpoint]\nsave = \"./cp.sh save\"\nrestore = \"./cp.sh restore\"\n",
    )
    .write("_setup.test.toml", "name = \"setup\"\n[[steps]]\ninstruction = \"seed\"\ncheckpoint = \"seeded\"\n")
    .write("ui.test.toml", "name = \"UI\"\n[overrides.provider]\nstep_timeout_secs = 600\n[[steps]]\ninclude_path = \"_setup.test.toml\"\n[[steps]]\ninstruction = \"click\"\nstep_timeout_secs = 30\nskip = true\n");
    let s = p
        .load(&RunOptions {
            paths: vec!["ui".into()],
            ..Default::default()
        })
        .unwrap();
    let t = &s.tests[0];
    assert_eq!(t.name, "UI");
    assert_eq!(t.plan.len(), 2);
    assert_eq!(t.plan[0].checkpoint.as_deref(), Some("seeded"));
    assert_eq!(t.plan[0].include_chain, vec![PathBuf::from("ui.test.toml")]);
    assert_eq!((t.plan[1].timeout_secs, t.plan[1].skip), (Some(30), true));
    assert!(t.effective.provider.strict_warnings.value);
    assert_eq!(t.effective.provider.step_timeout_secs.value, 600);
}
