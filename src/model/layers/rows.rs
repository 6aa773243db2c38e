//! Every effective value as a (key, value, layer) row, for `supervisor check` and the reports;
//! secret values never shown.

use super::*;

impl EffectiveConfig {
    /// Every effective value as (key, value, source) rows, for `check` and the reports.
    /// Secret values are never shown.
    pub fn rows(&self) -> Vec<(String, String, Layer)> {
        let mut rows = Vec::new();
        self.provider_rows(&mut rows);
        self.supervisor_rows(&mut rows);
        self.value_rows(&mut rows);
        for c in self.commands.values() {
            command_rows(&mut rows, c);
        }
        self.section_rows(&mut rows);
        let watch = &self.watch.paths;
        row(
            &mut rows,
            "watch.paths",
            if watch.value.is_empty() {
                "(none)".to_string()
            } else {
                watch.value.join(", ")
            },
            watch.source,
        );
        rows
    }

    /// `provider.*`.
    fn provider_rows(&self, rows: &mut Rows) {
        let p = &self.provider;
        row(
            rows,
            "provider.name",
            p.name.value.to_string(),
            p.name.source,
        );
        row(
            rows,
            "provider.extra_system_prompt",
            opt(&p.extra_system_prompt.value),
            p.extra_system_prompt.source,
        );
        row(
            rows,
            "provider.agent_args",
            format!("{:?}", p.agent_args.value),
            p.agent_args.source,
        );
        row(rows, "provider.cmd", opt(&p.cmd.value), p.cmd.source);
        row(
            rows,
            "provider.cwd",
            p.cwd.value.clone().unwrap_or_else(|| ".".to_string()),
            p.cwd.source,
        );
        for provider in super::super::provider::rows() {
            let (Some(cli), Some(program)) = (provider.cli(), p.programs.get(&provider.kind))
            else {
                continue;
            };
            row(
                rows,
                &format!("provider.{}", cli.key),
                program.value.clone(),
                program.source,
            );
        }
        row(
            rows,
            "provider.step_timeout_secs",
            p.step_timeout_secs.value.to_string(),
            p.step_timeout_secs.source,
        );
        row(
            rows,
            "provider.no_output_timeout_secs",
            p.no_output_timeout_secs.value.to_string(),
            p.no_output_timeout_secs.source,
        );
        row(
            rows,
            "provider.max_turns_per_step",
            p.max_turns_per_step
                .value
                .map_or("none".to_string(), |n| n.to_string()),
            p.max_turns_per_step.source,
        );
        row(
            rows,
            "provider.max_cost_usd",
            p.max_cost_usd
                .value
                .map_or("none".to_string(), |c| c.to_string()),
            p.max_cost_usd.source,
        );
        row(
            rows,
            "provider.price_per_mtok",
            p.price_per_mtok.value.map_or_else(
                || "none (codex: the built-in price of its model)".to_string(),
                |v| v.to_string(),
            ),
            p.price_per_mtok.source,
        );
        row(
            rows,
            "provider.base_url",
            opt(&p.base_url.value),
            p.base_url.source,
        );
        row(
            rows,
            "provider.strict_warnings",
            p.strict_warnings.value.to_string(),
            p.strict_warnings.source,
        );
        row(
            rows,
            "provider.console",
            p.console.value.to_string(),
            p.console.source,
        );
    }

    /// `supervisor.*`.
    fn supervisor_rows(&self, rows: &mut Rows) {
        let s = &self.supervisor;
        row(
            rows,
            "supervisor.max_parallel",
            s.jobs.value.to_string(),
            s.jobs.source,
        );
        row(
            rows,
            "supervisor.tests",
            format!("{:?}", s.tests.value),
            s.tests.source,
        );
        row(
            rows,
            "supervisor.artifact_dir",
            s.artifact_dir.value.clone(),
            s.artifact_dir.source,
        );
        row(
            rows,
            "supervisor.retries",
            s.retries.value.describe(),
            s.retries.source,
        );
        row(
            rows,
            "supervisor.keep_workspace",
            s.keep_workspace.value.as_str().to_string(),
            s.keep_workspace.source,
        );
        row(
            rows,
            "supervisor.keep_runs",
            s.keep_runs.value.to_string(),
            s.keep_runs.source,
        );
        row(
            rows,
            "supervisor.max_cost_usd",
            s.max_cost_usd
                .value
                .map_or("none".to_string(), |c| c.to_string()),
            s.max_cost_usd.source,
        );
        row(
            rows,
            "supervisor.max_log_bytes",
            s.max_log_bytes.value.to_string(),
            s.max_log_bytes.source,
        );
        row(
            rows,
            "supervisor.fail_fast",
            s.fail_fast.value.to_string(),
            s.fail_fast.source,
        );
        if let Some(n) = s.max_fail.value {
            row(
                rows,
                "supervisor.max_fail",
                n.to_string(),
                s.max_fail.source,
            );
        }
        row(
            rows,
            "supervisor.repeat",
            s.repeat.value.to_string(),
            s.repeat.source,
        );
        for (key, v) in [
            ("supervisor.grep", &s.grep),
            ("supervisor.grep_invert", &s.grep_invert),
        ] {
            if let Some(pattern) = &v.value {
                row(rows, key, pattern.clone(), v.source);
            }
        }
        row(
            rows,
            "supervisor.auto_quarantine",
            s.auto_quarantine.value.to_string(),
            s.auto_quarantine.source,
        );
        row(
            rows,
            "supervisor.flaky",
            s.flaky.value.as_str().to_string(),
            s.flaky.source,
        );
        row(
            rows,
            "supervisor.quarantine",
            if s.quarantine.value.is_empty() {
                "(none)".to_string()
            } else {
                s.quarantine.value.join(", ")
            },
            s.quarantine.source,
        );
        row(
            rows,
            "supervisor.on_finish",
            s.on_finish.value.clone().unwrap_or_else(|| "(none)".into()),
            s.on_finish.source,
        );
        row(
            rows,
            "supervisor.on_finish_timeout_secs",
            s.on_finish_timeout_secs.value.to_string(),
            s.on_finish_timeout_secs.source,
        );
        row(
            rows,
            "supervisor.timeout_secs",
            s.timeout_secs
                .value
                .map(|t| t.to_string())
                .unwrap_or_else(|| "(none)".into()),
            s.timeout_secs.source,
        );
    }

    /// `env.*`, `secrets.*` (never their values) and `ports.*`.
    fn value_rows(&self, rows: &mut Rows) {
        for (k, v) in &self.env {
            row(rows, &format!("env.{k}"), v.value.clone(), v.source);
        }
        for (k, v) in &self.secrets {
            let shown = match &v.value.from_env {
                Some(var) => format!("[REDACTED] (from ${var})"),
                None => "[REDACTED]".to_string(),
            };
            row(rows, &format!("secrets.{k}"), shown, v.source);
        }
        for (k, v) in &self.ports {
            let shown = match v.value {
                PortSpec::Auto => "auto".to_string(),
                PortSpec::Fixed(n) => n.to_string(),
            };
            row(rows, &format!("ports.{k}"), shown, v.source);
        }
    }

    /// `checkpoint.*` and `browser.*`, when configured.
    fn section_rows(&self, rows: &mut Rows) {
        if let Some(cp) = &self.checkpoint {
            row(rows, "checkpoint.save", cp.value.save.clone(), cp.source);
            row(
                rows,
                "checkpoint.restore",
                cp.value.restore.clone(),
                cp.source,
            );
            row(
                rows,
                "checkpoint.timeout_secs",
                cp.value.timeout_secs.to_string(),
                cp.source,
            );
        }
        if let Some(b) = &self.browser {
            let v = &b.value;
            row(rows, "browser.executable", opt(&v.executable), b.source);
            row(rows, "browser.headless", v.headless.to_string(), b.source);
            row(
                rows,
                "browser.viewport",
                format!("{}x{}", v.viewport.0, v.viewport.1),
                b.source,
            );
            row(rows, "browser.mcp", v.mcp.to_string(), b.source);
            row(rows, "browser.mcp_cmd", opt(&v.mcp_cmd), b.source);
            row(
                rows,
                "browser.capture",
                v.capture.names().join(", "),
                b.source,
            );
            row(
                rows,
                "browser.fail_on_console_errors",
                v.fail_on_console_errors.to_string(),
                b.source,
            );
            row(
                rows,
                "browser.keep_profile",
                v.keep_profile.to_string(),
                b.source,
            );
            row(rows, "browser.reuse", v.reuse.to_string(), b.source);
        }
    }
}

/// (key, value, source) rows.
type Rows = Vec<(String, String, Layer)>;

fn row(rows: &mut Rows, key: &str, value: String, layer: Layer) {
    rows.push((key.to_string(), value, layer));
}

/// `commands.NAME.*`: the fields a command of its kind has.
fn command_rows(rows: &mut Rows, c: &CommandConfig) {
    let key = |f: &str| format!("commands.{}.{f}", c.name);
    let src = |f: &str| c.source_of(f);
    row(rows, &key("kind"), c.kind.as_str().into(), src("kind"));
    row(rows, &key("cmd"), c.cmd.clone(), src("cmd"));
    if let Some(cwd) = &c.cwd {
        row(rows, &key("cwd"), cwd.clone(), src("cwd"));
    }
    if !c.depends_on.is_empty() {
        row(
            rows,
            &key("depends_on"),
            format!("{:?}", c.depends_on),
            src("depends_on"),
        );
    }
    if let Some(t) = c.timeout_secs {
        row(
            rows,
            &key("timeout_secs"),
            t.to_string(),
            src("timeout_secs"),
        );
    }
    for (i, probe) in c.readiness.iter().enumerate() {
        let what = match &probe.kind {
            ProbeKind::Http(u) => format!("http {u}"),
            ProbeKind::Tcp(a) => format!("tcp {a}"),
            ProbeKind::Log(r) => format!("log /{r}/"),
            ProbeKind::Exec(e) => format!("exec {e}"),
        };
        row(
            rows,
            &key(&format!("readiness[{}]", i + 1)),
            format!(
                "{what} (every {} ms, up to {} s)",
                probe.interval_ms, probe.timeout_secs
            ),
            src("readiness"),
        );
    }
    if c.kind == CommandKind::LongLived {
        row(
            rows,
            &key("restart"),
            c.restart.as_str().into(),
            src("restart"),
        );
        row(
            rows,
            &key("max_restarts"),
            c.max_restarts.to_string(),
            src("max_restarts"),
        );
        row(
            rows,
            &key("restart_window_secs"),
            c.restart_window_secs.to_string(),
            src("restart_window_secs"),
        );
        row(
            rows,
            &key("backoff_ms"),
            c.backoff_ms.to_string(),
            src("backoff_ms"),
        );
    }
    row(
        rows,
        &key("stop_signal"),
        c.stop_signal.clone(),
        src("stop_signal"),
    );
    row(
        rows,
        &key("stop_timeout_secs"),
        c.stop_timeout_secs.to_string(),
        src("stop_timeout_secs"),
    );
    row(rows, &key("pty"), c.pty.to_string(), src("pty"));
    row(rows, &key("scope"), c.scope.as_str().into(), src("scope"));
}

pub(super) fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "(none)".to_string())
}
