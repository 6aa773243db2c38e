//! The checks of an effective config as a whole, after every layer: values that only make sense
//! together, and the names of ports, env, secrets and commands sharing one namespace.

use super::*;

impl EffectiveConfig {
    /// Whole-config checks once every layer is applied: provider needs, command graph.
    pub fn validate(&self) -> Vec<LayerProblem> {
        let mut problems = Vec::new();
        let needs_cmd =
            self.provider.name.value.info().program == super::super::provider::Program::Cmd;
        if needs_cmd && self.provider.cmd.value.is_none() {
            problems.push(problem(
                format!(
                    "provider `{}` needs `[provider] cmd`, the program to run",
                    self.provider.name.value
                ),
                self.provider.name.origin.clone(),
            ));
        }
        problems.extend(self.provider.check_step_timeout());
        problems.extend(validate_commands(&self.commands));
        problems.extend(self.validate_names());
        if let (Some(browser), Some(command)) = (&self.browser, self.commands.get("browser")) {
            // Their logs, setup lines and run.json entries would share one name.
            problems.push(problem(
                "a command may not be named `browser` when [browser] is set: the session's browser goes by that name",
                command.origin.clone().or_else(|| browser.origin.clone()),
            ));
        }
        problems
    }

    /// `[ports]`, `[env]` and `[secrets]` share one namespace (they all become env vars and
    /// `${NAME}`s), which the harness's own `BUGATTI_*` names are not part of.
    pub(super) fn validate_names(&self) -> Vec<LayerProblem> {
        let mut problems = Vec::new();
        let tables: [(&str, NamedOrigins); 3] = [
            (
                "ports",
                self.ports
                    .iter()
                    .map(|(k, v)| (k, v.origin.clone()))
                    .collect(),
            ),
            (
                "env",
                self.env
                    .iter()
                    .map(|(k, v)| (k, v.origin.clone()))
                    .collect(),
            ),
            (
                "secrets",
                self.secrets
                    .iter()
                    .map(|(k, v)| (k, v.origin.clone()))
                    .collect(),
            ),
        ];
        let mut seen: BTreeMap<&String, &str> = BTreeMap::new();
        for (table, names) in &tables {
            for (name, at) in names {
                if BUILTIN_NAMES.contains(&name.as_str())
                    || CHECKPOINT_NAMES.contains(&name.as_str())
                {
                    problems.push(problem(
                        format!("[{table}] may not define `{name}`: the harness sets it"),
                        at.clone(),
                    ));
                }
                if !valid_env_name(name) {
                    problems.push(problem(
                        format!("[{table}] name `{name}` is not usable as an environment variable and `${{{name}}}` (letters, digits and `_`, not starting with a digit)"),
                        at.clone(),
                    ));
                }
                if let Some(other) = seen.insert(name, table) {
                    problems.push(problem(
                        format!("`{name}` is defined in both [{other}] and [{table}]"),
                        at.clone(),
                    ));
                }
            }
        }
        problems
    }
}
