//! Codex's own sandbox around the commands it runs itself. `codex exec` defaults to a read-only
//! sandbox without network, where the agent's `curl http://127.0.0.1:…` fails as if the app were
//! down. The supervised agent already has an unsandboxed shell (the agent console, docs/console.md), so
//! that sandbox protects nothing here and only breaks the step: the supervisor lifts it
//! (`--dangerously-bypass-approvals-and-sandbox`) unless the user chose a sandbox themselves, in
//! `agent_args` or in their Codex `config.toml`. `--full-auto` is not among them: Codex 0.147
//! removed it (a hard argument error since), so `check` and `doctor` refuse it, naming
//! its replacement (`model::load::checks`).

use std::path::Path;

/// The flag that runs Codex's commands without its sandbox or approvals.
pub const BYPASS: &str = "--dangerously-bypass-approvals-and-sandbox";

/// Whether `agent_args` or the Codex `config.toml` choose a sandbox (or the bypass) already.
pub fn chosen_by_user(agent_args: &[String], config_toml: &Path) -> bool {
    chosen_in_args(agent_args) || chosen_in_config(config_toml)
}

fn chosen_in_args(args: &[String]) -> bool {
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let word = word.as_str();
        if matches!(word, "-s" | "--sandbox" | BYPASS) || word.starts_with("--sandbox=") {
            return true;
        }
        if (word == "-c" || word == "--config")
            && words
                .next()
                .is_some_and(|kv| kv.trim_start().starts_with("sandbox_mode"))
        {
            return true;
        }
    }
    false
}

fn chosen_in_config(config_toml: &Path) -> bool {
    std::fs::read_to_string(config_toml)
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .is_some_and(|table| table.contains_key("sandbox_mode"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn a_sandbox_the_user_chose_is_kept() {
        let none = Path::new("/nonexistent/config.toml");
        assert!(!chosen_by_user(
            &args(&["-m", "gpt-5.5", "-c", "model_provider=x"]),
            none
        ));
        for chosen in [
            &["-s", "read-only"][..],
            &["--sandbox", "workspace-write"],
            &["--sandbox=workspace-write"],
            &[BYPASS],
            &["-c", "sandbox_mode=\"workspace-write\""],
        ] {
            assert!(chosen_by_user(&args(chosen), none), "{chosen:?}");
        }
        let dir = tempfile::tempdir().expect("tmp");
        let config = dir.path().join("config.toml");
        std::fs::write(&config, "model = \"gpt-5.5\"\n").expect("write");
        assert!(!chosen_by_user(&[], &config));
        std::fs::write(
            &config,
            "model = \"gpt-5.5\"\nsandbox_mode = \"read-only\"\n",
        )
        .expect("write");
        assert!(chosen_by_user(&[], &config));
    }
}
