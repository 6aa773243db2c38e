//! The project's `[secrets]` handed to Playwright MCP (`--secrets FILE`), which then replaces each
//! value by `<secret>NAME</secret>` in everything it returns to the agent: a page that shows a
//! secret does not hand it to the model. The file is dotenv, owner-only (0600), in the run
//! directory (`browser/.secrets.env`, named in `model::artifacts`), and removed when the session
//! ends.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Writes `secrets` (name, value) as a dotenv file at `path`, readable by its owner only.
pub fn write(path: &Path, secrets: &[(String, String)]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(dotenv(secrets).as_bytes())?;
    file.sync_all()
}

/// `NAME='value'` lines; a value holding a single quote or a newline goes in double quotes (the
/// dotenv reader turns `\n` back into a newline there).
fn dotenv(secrets: &[(String, String)]) -> String {
    let mut text = String::new();
    for (name, value) in secrets {
        if value.contains('\'') || value.contains('\n') {
            let escaped = value.replace('\n', "\\n");
            text.push_str(&format!("{name}=\"{escaped}\"\n"));
        } else {
            text.push_str(&format!("{name}='{value}'\n"));
        }
    }
    text
}

/// Removes the run's secrets file (`RunPaths::browser_secrets`), if any.
pub fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_file_is_dotenv_and_owner_only() {
        let dir = tempfile::tempdir().expect("dir");
        let file = crate::model::artifacts::RunPaths::new(dir.path()).browser_secrets();
        let secrets = [
            ("API_TOKEN".to_string(), "s3cr#t value".to_string()),
            ("QUOTED".to_string(), "it's".to_string()),
        ];
        write(&file, &secrets).expect("written");
        let text = std::fs::read_to_string(&file).expect("read");
        assert_eq!(text, "API_TOKEN='s3cr#t value'\nQUOTED=\"it's\"\n");
        let mode = std::fs::metadata(&file).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        remove(&file);
        assert!(!file.exists());
    }
}
