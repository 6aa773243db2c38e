//! Where an agent's program is, checked before anything runs (`supervisor doctor`): the program
//! itself (on `PATH`, or a path from the agent's cwd) and, for an interpreter, the script it is
//! given (`python3 agents/my_agent.py`). The same resolution as the providers use at spawn time.

use crate::model::layers::ProviderSettings;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub use crate::process::version::{program_version, VERSION_LIMIT};

/// Interpreters whose first non-option argument is a script file that must exist.
const INTERPRETERS: &[&str] = &[
    "python", "python3", "node", "deno", "bun", "sh", "bash", "zsh", "ruby", "perl", "php",
];

/// One finding of the check: `ok` or not, and a line for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub ok: bool,
    pub message: String,
}

impl Finding {
    fn ok(message: String) -> Self {
        Self { ok: true, message }
    }
    fn fail(message: String) -> Self {
        Self { ok: false, message }
    }
}

/// Checks the agent program of `provider` as the session will start it: its CLI (or `sh`), or
/// the program of its `cmd` line.
pub fn check_agent_program(provider: &ProviderSettings, project_root: &Path) -> Vec<Finding> {
    let name = provider.name.value.as_str();
    let cwd = agent_cwd(provider, project_root);
    if let Some(bin) = provider.program() {
        return vec![program(name, bin, &cwd)];
    }
    let program_line = provider.cmd.value.clone().unwrap_or_default();
    let line = program_line.replace(
        "${BUGATTI_PROJECT_ROOT}",
        &project_root.display().to_string(),
    );
    let words = match shell_words::split(&line) {
        Ok(words) if !words.is_empty() => words,
        Ok(_) => return vec![Finding::fail(format!("provider {name}: `cmd` is empty"))],
        Err(e) => {
            return vec![Finding::fail(format!(
                "provider {name}: cannot split `cmd = {program_line:?}` into words: {e}"
            ))]
        }
    };
    if words.iter().any(|w| w.contains("${")) {
        return vec![Finding::ok(format!(
            "provider {name}: `{program_line}` uses session variables; checked when a session starts"
        ))];
    }
    let mut findings = vec![program(name, &words[0], &cwd)];
    let interpreter = Path::new(&words[0])
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| INTERPRETERS.contains(&n));
    if interpreter {
        // `python3 -u agents/a.py`: the first word that is not an option is the script (`-c` /
        // `-m` mean there is none to check).
        let script = words[1..]
            .iter()
            .take_while(|w| !matches!(w.as_str(), "-c" | "-m" | "-e" | "--eval"))
            .find(|w| !w.starts_with('-'));
        if let Some(script) = script {
            let path = cwd.join(script);
            findings.push(if path.is_file() {
                Finding::ok(format!("provider {name}: script {}", path.display()))
            } else {
                Finding::fail(format!(
                    "provider {name}: script `{script}` not found at {} (relative paths start at the agent's cwd {})",
                    path.display(),
                    cwd.display()
                ))
            });
        }
    }
    findings
}

/// The agent's working directory as the session resolves it (without session variables).
pub fn agent_cwd(provider: &ProviderSettings, project_root: &Path) -> PathBuf {
    match &provider.cwd.value {
        Some(cwd) if !cwd.contains("${") => project_root.join(cwd),
        _ => project_root.to_path_buf(),
    }
}

fn program(provider: &str, program: &str, cwd: &Path) -> Finding {
    match find_program(program, cwd) {
        Ok(path) => Finding::ok(format!("provider {provider}: {}", path.display())),
        Err(why) => Finding::fail(format!("provider {provider}: {why}")),
    }
}

/// `program` as the spawn will find it: a path with a `/` from `cwd`, else on `PATH`; it must
/// be an executable file.
pub fn find_program(program: &str, cwd: &Path) -> Result<PathBuf, String> {
    let executable = |p: &Path| {
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.contains('/') {
        let path = cwd.join(program);
        return if executable(&path) {
            Ok(path)
        } else if path.is_file() {
            Err(format!(
                "`{program}` at {} is not executable (chmod +x, or run it through its interpreter)",
                path.display()
            ))
        } else {
            Err(format!(
                "`{program}` not found at {} (relative paths start at the agent's cwd {})",
                path.display(),
                cwd.display()
            ))
        };
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
        .ok_or_else(|| format!("`{program}` not found on PATH"))
}

/// Runs `<program> --version` (claude-code and codex) through the one spawn path, bounded by
/// [`VERSION_LIMIT`]: the CLI's first line, or why it did not start. Its output goes to a
/// temporary log.
pub async fn agent_version(program: &Path, cwd: &Path) -> Result<String, String> {
    program_version(program, cwd, |_| true).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::layers::EffectiveConfig;

    fn command(cmd: &str) -> ProviderSettings {
        let mut p = EffectiveConfig::default().provider;
        p.name.value = super::super::ProviderKind::Command;
        p.cmd.value = Some(cmd.into());
        p
    }

    #[test]
    fn a_script_given_to_an_interpreter_must_exist_from_the_agent_cwd() {
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(root.path().join("agents")).expect("dir");
        std::fs::write(root.path().join("agents/a.py"), "").expect("script");
        let found = check_agent_program(&command("python3 -u agents/a.py"), root.path());
        assert!(found.iter().all(|f| f.ok), "{found:?}");
        let missing = check_agent_program(&command("python3 agents/b.py"), root.path());
        assert!(
            !missing[1].ok && missing[1].message.contains("agents/b.py"),
            "{missing:?}"
        );
        let not_exec = check_agent_program(&command("agents/a.py"), root.path());
        assert!(
            !not_exec[0].ok && not_exec[0].message.contains("not executable"),
            "{not_exec:?}"
        );
        let rooted = check_agent_program(
            &command("python3 ${BUGATTI_PROJECT_ROOT}/agents/a.py"),
            root.path(),
        );
        assert!(rooted.iter().all(|f| f.ok), "{rooted:?}");
    }
}
