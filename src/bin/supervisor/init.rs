//! `supervisor init`: a starter config and test in the current directory (never overwriting),
//! and `.bugatti/` in `.gitignore`.

use super::*;

const STARTER_CONFIG: &str = r#"# bugatti.config.toml — see config/bugatti.config.toml in the bugatti repository for every field.

[provider]
name = "shell"                  # claude-code | codex | command | shell (shell: no model, runs `commands`)

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
pub fn init() -> ExitCode {
    let files = [
        (CONFIG_FILE_NAME, STARTER_CONFIG),
        ("example.test.toml", STARTER_TEST),
    ];
    for (name, _) in &files {
        if std::path::Path::new(name).exists() {
            eprintln!("error: {name} already exists; supervisor init does not overwrite files");
            return ExitCode::from(2);
        }
    }
    for (name, text) in &files {
        if let Err(e) = std::fs::write(name, text) {
            eprintln!("error: cannot write {name}: {e}");
            return ExitCode::from(2);
        }
        println!("wrote {name}");
    }
    match ignore_artifacts(std::path::Path::new(".gitignore")) {
        Ok(true) => println!("added .bugatti/ to .gitignore (runs, reports and workspaces)"),
        Ok(false) => {}
        Err(e) => eprintln!("warning: cannot add .bugatti/ to .gitignore: {e}"),
    }
    println!("next: `supervisor check` to see the plan, `supervisor start` to run it");
    ExitCode::SUCCESS
}

/// Adds `.bugatti/` (the default artifact directory) to `.gitignore`, creating it, unless a line
/// already ignores it. `true` when the file changed.
fn ignore_artifacts(gitignore: &std::path::Path) -> std::io::Result<bool> {
    let text = match std::fs::read_to_string(gitignore) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let ignored = text.lines().any(|l| {
        matches!(
            l.trim(),
            ".bugatti" | ".bugatti/" | "/.bugatti" | "/.bugatti/" | "**/.bugatti/"
        )
    });
    if ignored {
        return Ok(false);
    }
    let mut text = text;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# supervisor runs, reports and workspaces\n.bugatti/\n");
    std::fs::write(gitignore, text)?;
    Ok(true)
}
