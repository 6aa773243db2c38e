//! Nothing a project writes can make the supervisor read outside the project root: include paths
//! with `..`, includes through a symlinked folder, include globs reaching a symlinked folder, asset
//! names with `..` or absolute, asset symlinks to `/etc/passwd`, asset folders linked to `/etc`,
//! test files symlinked from outside. Each is a clear error naming the file and line, `check` and
//! `start` exit 2, nothing runs, and no byte of the outside file shows up anywhere.

use crate::common::assert_exit;
use crate::common::{stderr, stdout, Project};
use std::os::unix::fs::symlink;
use std::path::Path;

/// A folder outside the project holding test files that would print a marker if they ran.
struct Outside {
    dir: tempfile::TempDir,
}

const OUTSIDE_MARK: &str = "outside-file-was-read-4e1f";

impl Outside {
    fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("bugatti-outside-")
            .tempdir()
            .expect("outside dir");
        let step = format!("[[steps]]\ninstruction = \"`echo {OUTSIDE_MARK}`\"\n");
        std::fs::create_dir_all(dir.path().join("sub")).expect("mkdir");
        std::fs::write(dir.path().join("x.test.toml"), &step).expect("write");
        std::fs::write(dir.path().join("sub/y.test.toml"), &step).expect("write");
        std::fs::write(dir.path().join("secret.txt"), OUTSIDE_MARK).expect("write");
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

fn shell_project() -> Project {
    let p = Project::new();
    p.write("bugatti.config.toml", "[provider]\nname = \"shell\"\n");
    p
}

/// Runs `check`, then `start`: both refuse with exit 2; returns check's console.
fn refused(p: &Project) -> String {
    let check = p.check();
    let console = format!("{}{}", stdout(&check), stderr(&check));
    assert_eq!(check.status.code(), Some(2), "check:\n{console}");
    assert!(!console.contains(OUTSIDE_MARK), "{console}");
    let start = p.start();
    let start_console = format!("{}{}", stdout(&start), stderr(&start));
    assert_eq!(start.status.code(), Some(2), "start:\n{start_console}");
    assert!(!start_console.contains(OUTSIDE_MARK), "{start_console}");
    assert!(
        p.run_records_json().is_empty(),
        "nothing may run when a path escapes"
    );
    console
}

#[test]
fn includes_cannot_leave_the_root_by_dots_or_symlinks() {
    let outside = Outside::new();
    let p = shell_project();
    symlink(outside.path(), p.root().join("linked")).expect("symlink");
    let rel_out = format!(
        "../{}/x.test.toml",
        outside.path().file_name().unwrap().to_string_lossy()
    );
    p.write(
        "tests/inc.test.toml",
        &format!(
            "[[steps]]\ninclude_path = \"../linked/x.test.toml\"\n\n\
             [[steps]]\ninclude_path = \"../{rel_out}\"\n\n\
             [[steps]]\ninclude_glob = \"../linked/*.test.toml\"\n\n\
             [[steps]]\ninclude_glob = \"../**/y.test.toml\"\n\n\
             [[steps]]\ninclude_path = \"/etc/passwd\"\n"
        ),
    );
    let console = refused(&p);
    for (line, what) in [
        (
            1,
            "include_path `../linked/x.test.toml` leaves the project root",
        ),
        (4, "leaves the project root"),
        (
            7,
            "include_glob `../linked/*.test.toml` leaves the project root",
        ),
        (10, "outside the project root"),
        (13, "include_path `/etc/passwd` leaves the project root"),
    ] {
        assert!(console.contains(what), "{what}:\n{console}");
        assert!(
            console.contains(&format!("tests/inc.test.toml:{line}:1")),
            "line {line}:\n{console}"
        );
    }
}

#[test]
fn assets_cannot_leave_their_folder() {
    let outside = Outside::new();
    let p = shell_project();
    p.write("tests/t/ok.txt", "fine");
    symlink("/etc/passwd", p.root().join("tests/t/passwd")).expect("symlink");
    symlink("/etc", p.root().join("tests/t/etc")).expect("symlink");
    symlink(
        outside.path().join("secret.txt"),
        p.root().join("tests/t/secret.txt"),
    )
    .expect("symlink");
    p.write(
        "tests/t.test.toml",
        "[[steps]]\ninstruction = \"\"\"\n[[asset:ok.txt]]\n[[asset:passwd]]\n{{path:etc/passwd}}\n\
         [[asset:../../../../../../etc/passwd]]\n{{path:/etc/passwd}}\n[[asset:secret.txt]]\n\"\"\"\n",
    );
    let console = refused(&p);
    for what in [
        "asset `passwd` resolves to /etc/passwd, outside its folder",
        "asset `etc/passwd` resolves to /etc/passwd, outside its folder",
        "asset name `../../../../../../etc/passwd` must be a relative path inside",
        "asset name `/etc/passwd` must be a relative path inside",
        "asset `secret.txt` resolves to",
    ] {
        assert!(console.contains(what), "{what}:\n{console}");
    }
    assert!(console.contains("tests/t.test.toml:1:1"), "{console}");
    assert!(!console.contains("root:x:0:0"), "{console}");
}

#[test]
fn test_files_symlinked_from_outside_are_not_read() {
    let outside = Outside::new();
    let p = shell_project();
    p.write(
        "tests/mine.test.toml",
        "[[steps]]\ninstruction = \"`true`\"\n",
    );
    symlink(
        outside.path().join("x.test.toml"),
        p.root().join("tests/evil.test.toml"),
    )
    .expect("symlink");
    let console = refused(&p);
    assert!(
        console.contains("is outside the project root") && console.contains("tests/evil.test.toml"),
        "{console}"
    );

    // A symlinked folder leading out is not entered at all (a project may link to /etc or a
    // data folder): its tests are not discovered, and the project's own still run.
    std::fs::remove_file(p.root().join("tests/evil.test.toml")).expect("rm");
    symlink(outside.path(), p.root().join("tests/linked")).expect("symlink");
    symlink("/etc", p.root().join("tests/etc")).expect("symlink");
    let check = p.check();
    let console = stdout(&check);
    assert_exit(&check, 0);
    assert!(console.contains("1 root test"), "{console}");
    assert!(!console.contains(OUTSIDE_MARK), "{console}");
    let start = p.start();
    assert_exit(&start, 0);
    let records = p.run_records();
    assert_eq!(records.len(), 1);
    assert!(records[0].identity.test_file.ends_with("mine.test.toml"));
}
