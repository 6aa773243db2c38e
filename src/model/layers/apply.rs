//! The layers applied, lowest first: a config file (global or project), the provider section, the
//! `BUGATTI_*` environment, a test's `[overrides]`, the command-line flags; each value set with the
//! layer and place it came from, each bad value a problem naming where it was written.

use super::*;

impl EffectiveConfig {
    /// Apply one config file (global or project) over this config.
    pub fn apply_file(
        &mut self,
        cfg: &ConfigFile,
        file: &Path,
        layer: Layer,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<LayerProblem> {
        let mut problems = self.apply_provider(&cfg.provider, file, layer);
        problems.extend(self.apply_supervisor(&cfg.supervisor, file, layer));
        problems.extend(self.apply_values(cfg, file, layer, env));
        for (name, section) in &cfg.commands {
            // A command redefined by a higher config layer replaces the lower one whole.
            match new_command(name, section, file, layer) {
                Ok(c) => {
                    self.commands.insert(name.clone(), c);
                }
                Err(mut ps) => problems.append(&mut ps),
            }
        }
        problems.extend(self.apply_sections(cfg, file, layer));
        problems.extend(self.apply_replay(&cfg.replay, file, layer));
        problems.extend(self.apply_watch(&cfg.watch, file, layer));
        problems
    }

    /// `[watch]` of one config file: `paths` replaces the lower layer's, each glob checked.
    fn apply_watch(
        &mut self,
        w: &crate::model::watch::WatchSection,
        file: &Path,
        layer: Layer,
    ) -> Vec<LayerProblem> {
        let mut problems = Vec::new();
        if let Some(paths) = &w.paths {
            for glob in paths.get_ref() {
                if let Err(e) = crate::model::watch::app_glob(glob) {
                    problems.push(problem(
                        format!("[watch] paths: `{glob}` is not a valid glob: {}", e.kind()),
                        origin(file, paths.span()),
                    ));
                }
            }
            self.watch
                .set_paths(paths.get_ref().clone(), layer, origin(file, paths.span()));
        }
        problems
    }

    /// `[supervisor]` of one config file.
    fn apply_supervisor(
        &mut self,
        s: &crate::model::config::SupervisorSection,
        file: &Path,
        layer: Layer,
    ) -> Vec<LayerProblem> {
        let mut problems = Vec::new();
        if let Some(v) = &s.max_parallel {
            if *v.get_ref() == 0 {
                problems.push(problem(
                    "`max_parallel` must be at least 1",
                    origin(file, v.span()),
                ));
            }
            self.supervisor
                .jobs
                .set(*v.get_ref(), layer, origin(file, v.span()));
        }
        if let Some(v) = &s.tests {
            self.supervisor
                .tests
                .set(v.get_ref().clone(), layer, origin(file, v.span()));
        }
        if let Some(v) = &s.artifact_dir {
            self.supervisor.artifact_dir.set(v.clone(), layer, None);
        }
        if let Some(v) = &s.retries {
            problems.extend(self.apply_retries(v, layer));
        }
        if let Some(v) = s.keep_workspace {
            self.supervisor.keep_workspace.set(v, layer, None);
        }
        if let Some(v) = s.fail_fast {
            self.supervisor.fail_fast.set(v, layer, None);
        }
        if let Some(v) = s.max_fail {
            if v == 0 {
                problems.push(problem(
                    "`[supervisor] max_fail` must be at least 1 (leave it out for no limit)",
                    None,
                ));
            }
            self.supervisor.max_fail.set(Some(v), layer, None);
        }
        if let Some(v) = s.repeat {
            if v == 0 {
                problems.push(problem("`[supervisor] repeat` must be at least 1", None));
            }
            self.supervisor.repeat.set(v, layer, None);
        }
        if let Some(v) = s.auto_quarantine {
            self.supervisor.auto_quarantine.set(v, layer, None);
        }
        if let Some(v) = &s.grep {
            self.supervisor.grep.set(Some(v.clone()), layer, None);
        }
        if let Some(v) = &s.grep_invert {
            self.supervisor
                .grep_invert
                .set(Some(v.clone()), layer, None);
        }
        if let Some(v) = s.flaky {
            self.supervisor.flaky.set(v, layer, None);
        }
        if let Some(v) = &s.quarantine {
            self.supervisor
                .quarantine
                .set(v.get_ref().clone(), layer, origin(file, v.span()));
        }
        if let Some(v) = &s.on_finish {
            if v.trim().is_empty() {
                problems.push(problem(
                    format!(
                        "`[supervisor] on_finish` is empty (in {}): name a command, or leave it out",
                        file.display()
                    ),
                    None,
                ));
            }
            self.supervisor.on_finish.set(Some(v.clone()), layer, None);
        }
        if let Some(v) = s.on_finish_timeout_secs {
            if v == 0 {
                problems.push(problem(
                    format!(
                        "`[supervisor] on_finish_timeout_secs` must be at least 1 (in {})",
                        file.display()
                    ),
                    None,
                ));
            }
            self.supervisor.on_finish_timeout_secs.set(v, layer, None);
        }
        if let Some(v) = s.timeout_secs {
            self.supervisor.timeout_secs.set(Some(v), layer, None);
        }
        if let Some(v) = s.max_cost_usd {
            if !(v.is_finite() && v > 0.0) {
                problems.push(problem(
                    format!(
                        "`[supervisor] max_cost_usd` must be a positive number of dollars (in {})",
                        file.display()
                    ),
                    None,
                ));
            }
            self.supervisor.max_cost_usd.set(Some(v), layer, None);
        }
        if let Some(v) = s.keep_runs {
            self.supervisor.keep_runs.set(v, layer, None);
        }
        if let Some(v) = &s.max_log_bytes {
            let at = origin(file, v.span());
            match u64::try_from(*v.get_ref()) {
                Ok(n) if n >= MIN_MAX_LOG_BYTES => self.supervisor.max_log_bytes.set(n, layer, at),
                _ => problems.push(problem(
                    format!(
                        "`[supervisor] max_log_bytes` must be a whole number of bytes, at least {MIN_MAX_LOG_BYTES} (found {}; the default is {DEFAULT_MAX_LOG_BYTES}, 256 MiB)",
                        v.get_ref()
                    ),
                    at,
                )),
            }
        }
        problems
    }

    /// `[env]`, `[secrets]` (a `from_env` one read through `env` now) and `[ports]` of one
    /// config file: each name replaces the lower layer's.
    fn apply_values(
        &mut self,
        cfg: &ConfigFile,
        file: &Path,
        layer: Layer,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<LayerProblem> {
        let mut problems = Vec::new();
        for (k, v) in &cfg.env {
            self.env.insert(
                k.clone(),
                Sourced {
                    value: v.get_ref().clone(),
                    source: layer,
                    origin: origin(file, v.span()),
                },
            );
        }
        for (k, v) in &cfg.secrets {
            let at = origin(file, v.span());
            let secret = match v.get_ref() {
                SecretSpec::Literal(value) => Secret {
                    from_env: None,
                    value: value.clone(),
                },
                SecretSpec::FromEnv(f) => match env(&f.from_env) {
                    Some(value) => Secret {
                        from_env: Some(f.from_env.clone()),
                        value,
                    },
                    None => {
                        problems.push(problem(
                            format!(
                                "secret `{k}` is read from environment variable `{}`, which is not set",
                                f.from_env
                            ),
                            at,
                        ));
                        continue;
                    }
                },
            };
            self.secrets.insert(
                k.clone(),
                Sourced {
                    value: secret,
                    source: layer,
                    origin: at,
                },
            );
        }
        for (k, v) in &cfg.ports {
            self.ports.insert(
                k.clone(),
                Sourced {
                    value: *v.get_ref(),
                    source: layer,
                    origin: origin(file, v.span()),
                },
            );
        }
        problems
    }

    /// `[checkpoint]` (replaces the lower layer's) and `[browser]` (field by field over it) of
    /// one config file.
    fn apply_sections(&mut self, cfg: &ConfigFile, file: &Path, layer: Layer) -> Vec<LayerProblem> {
        let mut problems = Vec::new();
        if let Some(cp) = &cfg.checkpoint {
            let CheckpointSection {
                save,
                restore,
                timeout_secs,
            } = cp.get_ref();
            self.checkpoint = Some(Sourced {
                value: CheckpointConfig {
                    save: save.clone(),
                    restore: restore.clone(),
                    timeout_secs: timeout_secs.unwrap_or(DEFAULT_CHECKPOINT_TIMEOUT_SECS),
                },
                source: layer,
                origin: origin(file, cp.span()),
            });
        }
        if let Some(table) = &cfg.browser {
            // Field by field over the lower layers' table: a global config may name the
            // executable, a project its viewport.
            let mut value = self
                .browser
                .as_ref()
                .map(|b| b.value.clone())
                .unwrap_or_default();
            for p in value.apply(table.get_ref()) {
                problems.push(problem(p.message, origin(file, p.span)));
            }
            self.browser = Some(Sourced {
                value,
                source: layer,
                origin: origin(file, table.span()),
            });
        }
        problems
    }

    /// `[replay]` of one config file: each field set is checked and replaces the lower layer's.
    fn apply_replay(
        &mut self,
        r: &crate::model::replay::ReplaySection,
        file: &Path,
        layer: Layer,
    ) -> Vec<LayerProblem> {
        let mut problems = Vec::new();
        let replay = &mut self.replay;
        if let Some(v) = &r.mode {
            replay.mode.set(*v.get_ref(), layer, origin(file, v.span()));
        }
        if let Some(v) = &r.dir {
            if v.get_ref().trim().is_empty() {
                problems.push(problem(
                    "[replay] dir is empty (leave it out for the default `bugatti.replay`)",
                    origin(file, v.span()),
                ));
            }
            replay
                .dir
                .set(v.get_ref().clone(), layer, origin(file, v.span()));
        }
        if let Some(patterns) = &r.ignore {
            for p in patterns {
                if let Err(e) = regex::Regex::new(p.get_ref()) {
                    let reason = e.to_string();
                    let reason = reason.lines().last().unwrap_or_default().trim().to_string();
                    problems.push(problem(
                        format!(
                            "[replay] ignore: `{}` is not a valid regex: {reason}",
                            p.get_ref()
                        ),
                        origin(file, p.span()),
                    ));
                }
            }
            let at = patterns.first().and_then(|p| origin(file, p.span()));
            let values = patterns.iter().map(|p| p.get_ref().clone()).collect();
            replay.ignore.set(values, layer, at);
        }
        if let Some(v) = &r.max_age_days {
            replay
                .max_age_days
                .set(*v.get_ref(), layer, origin(file, v.span()));
        }
        if let Some(v) = &r.audit {
            match crate::model::replay::AuditShare::new(*v.get_ref()) {
                Some(share) => replay.audit.set(share, layer, origin(file, v.span())),
                None => problems.push(problem(
                    format!(
                        "[replay] audit = {} is not a share: write 0.0 to 1.0",
                        v.get_ref()
                    ),
                    origin(file, v.span()),
                )),
            }
        }
        problems
    }

    pub(super) fn apply_provider(
        &mut self,
        p: &ProviderSection,
        file: &Path,
        layer: Layer,
    ) -> Vec<LayerProblem> {
        let mut problems = Vec::new();
        let pr = &mut self.provider;
        if let Some(v) = &p.name {
            let at = origin(file, v.span());
            match v.get_ref().parse() {
                Ok(kind) => pr.name.set(kind, layer, at),
                Err(expected) => problems.push(problem(
                    format!("unknown provider `{}` ({expected})", v.get_ref()),
                    at,
                )),
            }
        }
        if let Some(v) = &p.extra_system_prompt {
            pr.extra_system_prompt.set(Some(v.clone()), layer, None);
        }
        if let Some(v) = &p.agent_args {
            pr.agent_args.set(v.clone(), layer, None);
        }
        if let Some(v) = &p.cmd {
            pr.cmd
                .set(Some(v.get_ref().clone()), layer, origin(file, v.span()));
        }
        if let Some(v) = &p.step_timeout_secs {
            pr.step_timeout_secs
                .set(*v.get_ref(), layer, origin(file, v.span()));
        }
        if let Some(v) = &p.cwd {
            pr.cwd
                .set(Some(v.get_ref().clone()), layer, origin(file, v.span()));
        }
        if let Some(v) = p.no_output_timeout_secs {
            if v == 0 {
                problems.push(problem("`no_output_timeout_secs` must be at least 1", None));
            }
            pr.no_output_timeout_secs.set(v, layer, None);
        }
        if let Some(v) = p.max_turns_per_step {
            if v == 0 {
                problems.push(problem("`max_turns_per_step` must be at least 1", None));
            }
            pr.max_turns_per_step.set(Some(v), layer, None);
        }
        if let Some(v) = p.max_cost_usd {
            if !(v.is_finite() && v > 0.0) {
                problems.push(problem(
                    "`max_cost_usd` must be a positive number of dollars",
                    None,
                ));
            }
            pr.max_cost_usd.set(Some(v), layer, None);
        }
        if let Some(v) = p.price_per_mtok {
            let prices = [Some(v.input), v.cached_input, Some(v.output)];
            if prices
                .into_iter()
                .flatten()
                .any(|x| !(x.is_finite() && x >= 0.0))
            {
                problems.push(problem(
                    "`price_per_mtok` prices must be dollars per million tokens, 0 or more",
                    None,
                ));
            }
            pr.price_per_mtok.set(Some(v), layer, None);
        }
        if let Some(v) = &p.base_url {
            pr.base_url
                .set(Some(v.get_ref().clone()), layer, origin(file, v.span()));
        }
        if let Some(v) = p.strict_warnings {
            pr.strict_warnings.set(v, layer, None);
        }
        if let Some(v) = p.console {
            pr.console.set(v, layer, None);
        }
        problems
            .into_iter()
            .map(|mut p| {
                if p.origin.is_none() {
                    p.message = format!("{} (in {})", p.message, file.display());
                }
                p
            })
            .collect()
    }

    /// The `BUGATTI_PROVIDER`, `BUGATTI_BASE_URL`, `BUGATTI_STEP_TIMEOUT` layer.
    pub fn apply_env(&mut self, env: &dyn Fn(&str) -> Option<String>) -> Vec<LayerProblem> {
        let mut problems = Vec::new();
        if let Some(v) = env("BUGATTI_PROVIDER").filter(|v| !v.is_empty()) {
            match v.parse() {
                Ok(kind) => self.provider.name.set(kind, Layer::Env, None),
                Err(expected) => problems.push(problem(
                    format!("BUGATTI_PROVIDER=`{v}` is not a provider ({expected})"),
                    None,
                )),
            }
        }
        // Each agent CLI's program (`BUGATTI_CLAUDE_BIN`, …), as its provider's row names it.
        for row in super::super::provider::rows() {
            let Some(cli) = row.cli() else { continue };
            if let Some(v) = env(cli.env).filter(|v| !v.is_empty()) {
                self.provider
                    .programs
                    .entry(row.kind)
                    .or_insert_with(|| Sourced::default_value(cli.default.to_string()))
                    .set(v, Layer::Env, None);
            }
        }
        if let Some(v) = env("BUGATTI_BASE_URL").filter(|v| !v.is_empty()) {
            self.provider.base_url.set(Some(v), Layer::Env, None);
        }
        if let Some(v) = env("BUGATTI_STEP_TIMEOUT").filter(|v| !v.is_empty()) {
            match v.trim().parse::<u64>() {
                Ok(n) => self.provider.step_timeout_secs.set(n, Layer::Env, None),
                Err(_) => problems.push(problem(
                    format!("BUGATTI_STEP_TIMEOUT=`{v}` is not a whole number of seconds"),
                    None,
                )),
            }
        }
        problems
    }

    /// `retries` as written in a config (`[supervisor]`) or a test file, over the layer below.
    pub fn apply_retries(
        &mut self,
        setting: &crate::model::retries::RetriesSetting,
        layer: Layer,
    ) -> Vec<LayerProblem> {
        match crate::model::retries::RetryPolicy::from_setting(setting) {
            Ok(policy) => {
                self.supervisor.retries.set(policy, layer, None);
                Vec::new()
            }
            Err(e) => vec![problem(e, None)],
        }
    }

    /// A test file's `[overrides]`: provider fields and command fields (any but `kind`).
    pub fn apply_test_overrides(
        &mut self,
        provider: &ProviderSection,
        commands: &BTreeMap<String, Spanned<CommandSection>>,
        file: &Path,
    ) -> Vec<LayerProblem> {
        let mut problems = self.apply_provider(provider, file, Layer::Test);
        for (name, section) in commands {
            let at = origin(file, section.span());
            match self.commands.get_mut(name) {
                None => problems.push(problem(
                    format!(
                        "`[overrides.commands.{name}]` overrides a command that is not defined in the config{}",
                        known_list(name, self.commands.keys())
                    ),
                    at,
                )),
                Some(cmd) if cmd.scope == CommandScope::Suite || section.get_ref().scope.is_some() => {
                    problems.push(problem(
                        format!(
                            "`[overrides.commands.{name}]`: a test cannot override a suite-scoped command or change `scope` (suite commands are shared by every test)"
                        ),
                        at,
                    ))
                }
                Some(cmd) => {
                    let mut ps = apply_command_fields(cmd, section.get_ref(), Layer::Test, &at);
                    if ps.is_empty() {
                        cmd.origin = at;
                    }
                    problems.append(&mut ps);
                }
            }
        }
        problems
    }

    /// The command line, the top layer.
    pub fn apply_flags(&mut self, o: &RunOptions) -> Vec<LayerProblem> {
        let mut problems = Vec::new();
        if let Some(mode) = o.replay {
            self.replay.mode.set(mode, Layer::Flag, None);
        }
        if let Some(v) = &o.provider {
            match v.parse() {
                Ok(kind) => self.provider.name.set(kind, Layer::Flag, None),
                Err(expected) => problems.push(problem(
                    format!("--provider `{v}` is not a provider ({expected})"),
                    None,
                )),
            }
        }
        if let Some(v) = o.step_timeout {
            self.provider.step_timeout_secs.set(v, Layer::Flag, None);
        }
        if o.strict_warnings {
            self.provider.strict_warnings.set(true, Layer::Flag, None);
        }
        if let Some(v) = o.jobs {
            if v == 0 {
                problems.push(problem("--jobs must be at least 1", None));
            }
            self.supervisor.jobs.set(v, Layer::Flag, None);
        }
        if let Some(v) = o.retries {
            // The count only: the wait between retries stays as the files set it.
            let policy = crate::model::retries::RetryPolicy {
                count: v,
                ..self.supervisor.retries.value
            };
            self.supervisor.retries.set(policy, Layer::Flag, None);
        }
        if o.fail_fast {
            self.supervisor.fail_fast.set(true, Layer::Flag, None);
        }
        if let Some(v) = o.max_fail {
            if v == 0 {
                problems.push(problem("--max-fail must be at least 1", None));
            }
            self.supervisor.max_fail.set(Some(v), Layer::Flag, None);
        }
        if let Some(v) = &o.grep {
            self.supervisor.grep.set(Some(v.clone()), Layer::Flag, None);
        }
        if let Some(v) = &o.grep_invert {
            self.supervisor
                .grep_invert
                .set(Some(v.clone()), Layer::Flag, None);
        }
        if let Some(v) = o.repeat {
            if v == 0 {
                problems.push(problem("--repeat must be at least 1", None));
            }
            self.supervisor.repeat.set(v, Layer::Flag, None);
        }
        if o.headed {
            // A window over whatever [browser] the lower layers set; no [browser]: no browser.
            if let Some(browser) = &mut self.browser {
                browser.value.headless = false;
                browser.source = Layer::Flag;
            }
        }
        if o.fail_on_flaky {
            self.supervisor
                .flaky
                .set(crate::model::config::FlakyPolicy::Fail, Layer::Flag, None);
        }
        if let Some(v) = o.timeout {
            if v == 0 {
                problems.push(problem("--timeout must be at least 1 second", None));
            }
            self.supervisor.timeout_secs.set(Some(v), Layer::Flag, None);
        }
        problems
    }
}
