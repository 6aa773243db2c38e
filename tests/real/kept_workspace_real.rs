//! A kept workspace (`keep_workspace = "on-failure"`, the default) is private (0700, whatever the
//! umask) and leaves the browser's profile out (it holds the app's cookies) unless
//! `[browser] keep_profile = true` (docs/browser.md). Skips without Chromium.

use crate::common::assert_exit;
use crate::common::Project;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

fn kept_workspace(extra: &str) -> PathBuf {
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        &format!("[provider]\nname = \"shell\"\n\n[browser]\nmcp = false\n{extra}"),
    );
    p.write("fails.test.toml", "[[steps]]\ninstruction = \"`exit 1`\"\n");
    let mut cmd = p.supervisor();
    cmd.arg("start");
    // SAFETY: umask is async-signal-safe. A permissive umask: the workspace is private anyway.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::umask(0o022);
            Ok(())
        });
    }
    let out = cmd.output().expect("run");
    p.assert_nothing_survives();
    assert_exit(&out, 1);
    let record = p.record_for("fails.test.toml");
    let workspace = PathBuf::from(record.workspace.as_deref().expect("workspace"));
    assert!(workspace.is_dir(), "kept on failure");
    let mode = std::fs::metadata(&workspace)
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "{}", workspace.display());
    workspace
}

#[test]
fn a_kept_workspace_is_private_and_holds_no_browser_profile_unless_asked() {
    if crate::common::skip::chromium("a kept workspace's browser profile").is_none() {
        return;
    }
    let workspace = kept_workspace("");
    assert!(
        !workspace.join("browser-profile").exists(),
        "the profile is left out"
    );
    let _ = std::fs::remove_dir_all(&workspace);
    let workspace = kept_workspace("keep_profile = true\n");
    assert!(
        workspace.join("browser-profile").is_dir(),
        "kept when asked"
    );
    let _ = std::fs::remove_dir_all(&workspace);
}
