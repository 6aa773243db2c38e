//! `supervisor init`: a starter config and example test in the current directory, never
//! overwriting a file, and `.bugatti/` (every run's record) added to the project's `.gitignore`.

use super::Exit;
use crate::model::load::CONFIG_FILE_NAME;

const STARTER_CONFIG: &str = r#"# bugatti.config.toml — see config/bugatti.config.toml in the bugatti repository for every field.

[provider]
name = "shell"                  # claude-code | codex | pi | command | shell (shell: no model, runs `commands`)

[ports]
APP_PORT = "auto"

[commands.server]
kind = "long_lived"
cmd = "python3 -m http.server ${APP_PORT} --bind 127.0.0.1"
readiness_url = "http://127.0.0.1:${APP_PORT}/"
"#;

const STARTER_TEST: &str = r#"name = "Example"

[[steps]]
instruction = "Check that the server answers: `curl -fsS http://127.0.0.1:${APP_PORT}/ > /dev/null`"
"#;

/// Write a starter config and example test; never overwrite.
pub fn init() -> Exit {
    let files = [
        (CONFIG_FILE_NAME, STARTER_CONFIG),
        ("example.test.toml", STARTER_TEST),
    ];
    for (name, _) in &files {
        if std::path::Path::new(name).exists() {
            eprintln!("error: {name} already exists; supervisor init does not overwrite files");
            return Exit::USAGE;
        }
    }
    for (name, text) in &files {
        if let Err(e) = std::fs::write(name, text) {
            eprintln!("error: cannot write {name}: {e}");
            return Exit::USAGE;
        }
        println!("wrote {name}");
    }
    match ignore_runs(std::path::Path::new(".gitignore")) {
        Ok(true) => println!("added .bugatti/ to .gitignore (each run's record is written there)"),
        Ok(false) => {}
        Err(e) => eprintln!("warning: cannot add .bugatti/ to .gitignore: {e}"),
    }
    println!("next: `supervisor check` to see the plan, `supervisor start` to run it");
    Exit::SUCCESS
}

/// The line that keeps run records out of version control.
const IGNORE_LINE: &str = ".bugatti/";

/// Add `.bugatti/` to `path` (created if missing) unless a line already ignores it; says
/// whether it wrote. Appends, so the user's own lines and order stay as they were.
fn ignore_runs(path: &std::path::Path) -> std::io::Result<bool> {
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let Some(text) = with_ignore_line(&existing) else {
        return Ok(false);
    };
    std::fs::write(path, text)?;
    Ok(true)
}

/// `existing` with `.bugatti/` appended, or `None` when a line already ignores the folder
/// (`.bugatti`, `.bugatti/`, `/.bugatti`, `/.bugatti/`).
fn with_ignore_line(existing: &str) -> Option<String> {
    let ignored = existing
        .lines()
        .map(|l| l.trim().trim_start_matches('/').trim_end_matches('/'))
        .any(|l| l == ".bugatti");
    if ignored {
        return None;
    }
    let mut out = existing.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(IGNORE_LINE);
    out.push('\n');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::with_ignore_line;

    #[test]
    fn the_ignore_line_is_added_once_after_the_users_lines() {
        assert_eq!(with_ignore_line("").as_deref(), Some(".bugatti/\n"));
        assert_eq!(
            with_ignore_line("target").as_deref(),
            Some("target\n.bugatti/\n")
        );
        assert_eq!(with_ignore_line("target\n/.bugatti\n"), None);
        assert_eq!(with_ignore_line(".bugatti/\n"), None);
        assert_eq!(
            with_ignore_line("# .bugatti\n").as_deref(),
            Some("# .bugatti\n.bugatti/\n")
        );
    }
}
