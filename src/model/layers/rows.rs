//! Every effective value as a (key, value, layer) row, for `supervisor check` and the reports;
//! secret values never shown.

use super::*;

impl EffectiveConfig {
    /// Every effective value as (key, value, source) rows, for `check` and the reports.
    /// Secret values are never shown.
    pub fn rows(&self) -> Vec<(String, String, Layer)> {
        let mut rows = Vec::new();
        let mut row = |k: &str, v: String, l: Layer| rows.push((k.to_string(), v, l));
        let p = &self.provider;
        row("provider.name", p.name.value.to_string(), p.name.source);
        row(
            "provider.extra_system_prompt",
            opt(&p.extra_system_prompt.value),
            p.extra_system_prompt.source,
        );
        row(
            "provider.agent_args",
            format!("{:?}", p.agent_args.value),
            p.agent_args.source,
        );
        row("provider.cmd", opt(&p.cmd.value), p.cmd.source);
        row(
            "provider.cwd",
            p.cwd.value.clone().unwrap_or_else(|| ".".to_string()),
            p.cwd.source,
        );
        row(
            "provider.claude_bin",
            p.claude_bin.value.clone(),
            p.claude_bin.source,
        );
        row(
            "provider.codex_bin",
            p.codex_bin.value.clone(),
            p.codex_bin.source,
        );
        row("provider.pi_bin", p.pi_bin.value.clone(), p.pi_bin.source);
        row(
            "provider.step_timeout_secs",
            p.step_timeout_secs.value.to_string(),
            p.step_timeout_secs.source,
        );
        row(
            "provider.no_output_timeout_secs",
            p.no_output_timeout_secs.value.to_string(),
            p.no_output_timeout_secs.source,
        );
        row(
            "provider.max_turns_per_step",
            p.max_turns_per_step
                .value
                .map_or("none".to_string(), |n| n.to_string()),
            p.max_turns_per_step.source,
        );
        row(
            "provider.max_cost_usd",
            p.max_cost_usd
                .value
                .map_or("none".to_string(), |c| c.to_string()),
            p.max_cost_usd.source,
        );
        row(
            "provider.price_per_mtok",
            p.price_per_mtok.value.map_or_else(
                || "none (codex: the built-in price of its model)".to_string(),
                |v| v.to_string(),
            ),
            p.price_per_mtok.source,
        );
        row(
            "provider.base_url",
            opt(&p.base_url.value),
            p.base_url.source,
        );
        row(
            "provider.strict_warnings",
            p.strict_warnings.value.to_string(),
            p.strict_warnings.source,
        );
        row(
            "provider.console",
            p.console.value.to_string(),
            p.console.source,
        );
        let s = &self.supervisor;
        row(
            "supervisor.max_parallel",
            s.jobs.value.to_string(),
            s.jobs.source,
        );
        row(
            "supervisor.tests",
            format!("{:?}", s.tests.value),
            s.tests.source,
        );
        row(
            "supervisor.artifact_dir",
            s.artifact_dir.value.clone(),
            s.artifact_dir.source,
        );
        row(
            "supervisor.retries",
            s.retries.value.to_string(),
            s.retries.source,
        );
        row(
            "supervisor.keep_workspace",
            s.keep_workspace.value.as_str().to_string(),
            s.keep_workspace.source,
        );
        row(
            "supervisor.keep_runs",
            s.keep_runs.value.to_string(),
            s.keep_runs.source,
        );
        row(
            "supervisor.max_cost_usd",
            s.max_cost_usd
                .value
                .map_or("none".to_string(), |c| c.to_string()),
            s.max_cost_usd.source,
        );
        row(
            "supervisor.max_log_bytes",
            s.max_log_bytes.value.to_string(),
            s.max_log_bytes.source,
        );
        row(
            "supervisor.fail_fast",
            s.fail_fast.value.to_string(),
            s.fail_fast.source,
        );
        row(
            "supervisor.on_finish",
            s.on_finish.value.clone().unwrap_or_else(|| "(none)".into()),
            s.on_finish.source,
        );
        row(
            "supervisor.on_finish_timeout_secs",
            s.on_finish_timeout_secs.value.to_string(),
            s.on_finish_timeout_secs.source,
        );
        row(
            "supervisor.timeout_secs",
            s.timeout_secs
                .value
                .map(|t| t.to_string())
                .unwrap_or_else(|| "(none)".into()),
            s.timeout_secs.source,
        );
        for (k, v) in &self.env {
            row(&format!("env.{k}"), v.value.clone(), v.source);
        }
        for (k, v) in &self.secrets {
            let shown = match &v.value.from_env {
                Some(var) => format!("[REDACTED] (from ${var})"),
                None => "[REDACTED]".to_string(),
            };
            row(&format!("secrets.{k}"), shown, v.source);
        }
        for (k, v) in &self.ports {
            let shown = match v.value {
                PortSpec::Auto => "auto".to_string(),
                PortSpec::Fixed(n) => n.to_string(),
            };
            row(&format!("ports.{k}"), shown, v.source);
        }
        for c in self.commands.values() {
            let key = |f: &str| format!("commands.{}.{f}", c.name);
            let src = |f: &str| c.source_of(f);
            row(&key("kind"), c.kind.as_str().into(), src("kind"));
            row(&key("cmd"), c.cmd.clone(), src("cmd"));
            if let Some(cwd) = &c.cwd {
                row(&key("cwd"), cwd.clone(), src("cwd"));
            }
            if !c.depends_on.is_empty() {
                row(
                    &key("depends_on"),
                    format!("{:?}", c.depends_on),
                    src("depends_on"),
                );
            }
            if let Some(t) = c.timeout_secs {
                row(&key("timeout_secs"), t.to_string(), src("timeout_secs"));
            }
            for (i, probe) in c.readiness.iter().enumerate() {
                let what = match &probe.kind {
                    ProbeKind::Http(u) => format!("http {u}"),
                    ProbeKind::Tcp(a) => format!("tcp {a}"),
                    ProbeKind::Log(r) => format!("log /{r}/"),
                    ProbeKind::Exec(e) => format!("exec {e}"),
                };
                row(
                    &key(&format!("readiness[{}]", i + 1)),
                    format!(
                        "{what} (every {} ms, up to {} s)",
                        probe.interval_ms, probe.timeout_secs
                    ),
                    src("readiness"),
                );
            }
            if c.kind == CommandKind::LongLived {
                row(&key("restart"), c.restart.as_str().into(), src("restart"));
                row(
                    &key("max_restarts"),
                    c.max_restarts.to_string(),
                    src("max_restarts"),
                );
                row(
                    &key("restart_window_secs"),
                    c.restart_window_secs.to_string(),
                    src("restart_window_secs"),
                );
                row(
                    &key("backoff_ms"),
                    c.backoff_ms.to_string(),
                    src("backoff_ms"),
                );
            }
            row(
                &key("stop_signal"),
                c.stop_signal.clone(),
                src("stop_signal"),
            );
            row(
                &key("stop_timeout_secs"),
                c.stop_timeout_secs.to_string(),
                src("stop_timeout_secs"),
            );
            row(&key("pty"), c.pty.to_string(), src("pty"));
            row(&key("scope"), c.scope.as_str().into(), src("scope"));
        }
        if let Some(cp) = &self.checkpoint {
            row("checkpoint.save", cp.value.save.clone(), cp.source);
            row("checkpoint.restore", cp.value.restore.clone(), cp.source);
            row(
                "checkpoint.timeout_secs",
                cp.value.timeout_secs.to_string(),
                cp.source,
            );
        }
        if let Some(b) = &self.browser {
            let v = &b.value;
            row("browser.executable", opt(&v.executable), b.source);
            row("browser.headless", v.headless.to_string(), b.source);
            row(
                "browser.viewport",
                format!("{}x{}", v.viewport.0, v.viewport.1),
                b.source,
            );
            row("browser.mcp", v.mcp.to_string(), b.source);
            row("browser.mcp_cmd", opt(&v.mcp_cmd), b.source);
            row("browser.capture", v.capture.names().join(", "), b.source);
            row(
                "browser.fail_on_console_errors",
                v.fail_on_console_errors.to_string(),
                b.source,
            );
        }
        rows
    }
}

pub(super) fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "(none)".to_string())
}
