//! Unit tests of the file kind: checks from Claude Code's real answers, made again over files.

use super::*;

/// What the check's tool answers now.
fn now(check: &FileCheck, cwd: &Path) -> String {
    observe(check, cwd, &AtomicBool::new(false))
        .expect("observe")
        .text
}

/// The stream of the real Claude Code 2.1.197 calling Grep (content, files), Glob, Read and
/// Grep (count) over a small project (`${PROJECT}` where it lived), against a scripted API.
const STREAM: &str = include_str!("file_tool_fixtures/claude-2.x-read-grep-glob.jsonl");

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("app")).expect("mkdir");
    std::fs::create_dir_all(dir.path().join("sub")).expect("mkdir");
    std::fs::write(
        dir.path().join("app/settings.txt"),
        "due 2026-12-31\nttl 30 minutes\nowner 1b4e28ba-2fa1-11d2-883f-0016d3cca427\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("sub/conf.ini"),
        "port=8080\n# due date here\n",
    )
    .expect("write");
    dir
}

/// The checks of the recorded stream, as the project now lives in `root`.
fn recorded(root: &Path) -> Vec<FileCheck> {
    let stream = STREAM.replace("${PROJECT}", &root.display().to_string());
    let events: Vec<Value> = stream
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let mut checks = Vec::new();
    for (i, event) in events.iter().enumerate() {
        let Some(tool_use) = event["message"]["content"]
            .as_array()
            .and_then(|c| c.iter().find(|b| b["type"] == "tool_use"))
        else {
            continue;
        };
        let result_event = &events[i + 1];
        let result = &result_event["message"]["content"][0];
        checks.push(
            from_claude(
                tool_use["name"].as_str().expect("name"),
                &tool_use["input"],
                result["content"].as_str().expect("content"),
                result_event.get("tool_use_result"),
                false,
                root,
            )
            .expect("a check"),
        );
    }
    checks
}

#[test]
fn every_recorded_call_of_the_real_cli_is_made_again_equal_on_an_unchanged_project() {
    let dir = project();
    let checks = recorded(dir.path());
    assert_eq!(checks.len(), 5);
    for check in &checks {
        assert_eq!(now(check, dir.path()), seen(check), "{}", describe(check));
    }
    assert_eq!(
        seen(&checks[0]),
        "app/settings.txt:1:due 2026-12-31\nsub/conf.ini:2:# due date here"
    );
    assert_eq!(
        seen(&checks[3]),
        "ttl 30 minutes\nowner 1b4e28ba-2fa1-11d2-883f-0016d3cca427"
    );
}

#[test]
fn a_changed_value_is_seen_where_the_agent_looked_and_only_there() {
    let dir = project();
    let checks = recorded(dir.path());
    std::fs::write(
        dir.path().join("app/settings.txt"),
        "due 2027-01-15\nttl 30 minutes\nowner 1b4e28ba-2fa1-11d2-883f-0016d3cca427\n",
    )
    .expect("write");
    let differs: Vec<bool> = checks
        .iter()
        .map(|c| now(c, dir.path()) != seen(c))
        .collect();
    // Grep content sees the new date; files/count/glob answers are the same; the Read of
    // lines 2-3 did not cover line 1.
    assert_eq!(differs, vec![true, false, false, false, false]);
}

#[test]
fn a_new_file_changes_the_sets() {
    let dir = project();
    let checks = recorded(dir.path());
    std::fs::write(dir.path().join("app/more.txt"), "due soon\n").expect("write");
    let differs: Vec<bool> = checks
        .iter()
        .map(|c| now(c, dir.path()) != seen(c))
        .collect();
    assert_eq!(differs, vec![true, true, true, false, true]);
}

#[test]
fn a_search_of_one_file_answers_without_its_name() {
    // The real Claude Code 2.1.197: Grep {"pattern":"due","path":"notes.txt",
    // "output_mode":"content","-n":true} answered `2:due: 2026-12-31`.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("notes.txt"), "title: r\ndue: 2026-12-31\n").expect("w");
    let input = serde_json::json!({"pattern": "due", "path": "notes.txt",
        "output_mode": "content", "-n": true});
    let check =
        from_claude("Grep", &input, "2:due: 2026-12-31", None, false, dir.path()).expect("a check");
    assert_eq!(now(&check, dir.path()), seen(&check));
    std::fs::write(dir.path().join("notes.txt"), "due: 2027-01-15\n").expect("w");
    assert_eq!(now(&check, dir.path()), "1:due: 2027-01-15");
}

#[test]
fn a_count_in_one_file_answers_with_its_name() {
    // The real Claude Code 2.1.197: Grep {"pattern":"due","path":"notes.txt",
    // "output_mode":"count"} answered `notes.txt:2` and "Found 2 total occurrences across
    // 1 file.", the structured `content` being `notes.txt:2`.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("notes.txt"), "due on Friday\ndue again\n").expect("w");
    let input = serde_json::json!({"pattern": "due", "path": "notes.txt",
        "output_mode": "count"});
    let structured = serde_json::json!({"mode": "count", "numFiles": 1, "filenames": [],
        "content": "notes.txt:2", "numMatches": 2});
    let answer = "notes.txt:2\n\nFound 2 total occurrences across 1 file.";
    let check =
        from_claude("Grep", &input, answer, Some(&structured), false, dir.path()).expect("a check");
    assert_eq!(now(&check, dir.path()), seen(&check));
}

#[test]
fn hidden_files_are_searched_but_not_vcs_folders_nor_gitignored_ones() {
    let dir = project();
    let checks = recorded(dir.path());
    std::fs::create_dir_all(dir.path().join(".git")).expect("a git repository");
    std::fs::write(dir.path().join(".git/due.txt"), "due\n").expect("write");
    std::fs::write(dir.path().join(".gitignore"), "build/\n").expect("write");
    std::fs::create_dir_all(dir.path().join("build")).expect("mkdir");
    std::fs::write(dir.path().join("build/out.txt"), "due\n").expect("write");
    for check in checks
        .iter()
        .filter(|c| matches!(c, FileCheck::Grep { .. }))
    {
        assert_eq!(now(check, dir.path()), seen(check), "{}", describe(check));
    }
    // Claude Code's Glob lists what is ignored and what is in .git (`--no-ignore --hidden`).
    assert_eq!(
        now(&checks[2], dir.path()),
        ".git/due.txt\napp/settings.txt\nbuild/out.txt"
    );
    // The agent's Grep sees a hidden file: so does its replay.
    std::fs::write(dir.path().join(".env"), "due KEY=k-123\n").expect("write");
    assert_eq!(
        now(&checks[0], dir.path()),
        ".env:1:due KEY=k-123\napp/settings.txt:1:due 2026-12-31\nsub/conf.ini:2:# due date here"
    );
}

fn grep(input: Value, cwd: &Path) -> FileCheck {
    from_claude("Grep", &input, "", None, false, cwd).expect("a check")
}

#[test]
fn a_file_that_is_not_utf8_is_searched_and_a_comma_glob_is_two_globs() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9 key-123\n").expect("write");
    std::fs::write(dir.path().join("a.md"), "key-123\n").expect("write");
    std::fs::create_dir_all(dir.path().join("sub")).expect("mkdir");
    std::fs::write(dir.path().join("sub/b.cfg"), "key-123\n").expect("write");
    std::fs::write(dir.path().join("c.txt"), "key-123\n").expect("write");
    let content = grep(
        serde_json::json!({"pattern": "key-123", "output_mode": "content"}),
        dir.path(),
    );
    assert_eq!(
        now(&content, dir.path()),
        "a.md:1:key-123\nc.txt:1:key-123\nlatin1.txt:1:caf\u{fffd} key-123\nsub/b.cfg:1:key-123"
    );
    let globbed = grep(
        serde_json::json!({"pattern": "key-123", "glob": "*.md,*.cfg"}),
        dir.path(),
    );
    assert_eq!(now(&globbed, dir.path()), "a.md\nsub/b.cfg");
    let braces = grep(
        serde_json::json!({"pattern": "key-123", "glob": "{*.md,*.txt} *.cfg"}),
        dir.path(),
    );
    assert_eq!(
        now(&braces, dir.path()),
        "a.md\nc.txt\nlatin1.txt\nsub/b.cfg"
    );
}

#[test]
fn a_read_of_a_file_with_a_final_newline_is_the_text_the_agent_got() {
    // The real Claude Code 2.1.197 read "line1\nkey-123 two\n" as this structured content.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("notes.md");
    std::fs::write(&file, "line1\r\nkey-123 two\n").expect("write");
    let structured = serde_json::json!({"type": "text", "file": {"filePath": file,
        "content": "line1\nkey-123 two\n", "numLines": 3, "startLine": 1, "totalLines": 3}});
    let input = serde_json::json!({"file_path": file});
    let check =
        from_claude("Read", &input, "", Some(&structured), false, dir.path()).expect("a check");
    assert_eq!(now(&check, dir.path()), seen(&check));
    let tail = serde_json::json!({"file_path": file, "offset": 2, "limit": 5});
    let structured = serde_json::json!({"type": "text", "file": {"content": "key-123 two\n"}});
    let check =
        from_claude("Read", &tail, "", Some(&structured), false, dir.path()).expect("a check");
    assert_eq!(now(&check, dir.path()), seen(&check));
}

#[test]
fn a_read_target_that_became_a_fifo_a_device_or_huge_is_a_drift_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("notes.md");
    std::fs::write(&file, "hello\n").expect("write");
    let structured = serde_json::json!({"type": "text", "file": {"content": "hello\n"}});
    let input = serde_json::json!({"file_path": file});
    let check =
        from_claude("Read", &input, "", Some(&structured), false, dir.path()).expect("a check");
    let check = measured(check, dir.path());
    assert_eq!(now(&check, dir.path()), "hello\n");
    let grep = measured(
        grep(serde_json::json!({"pattern": "hello"}), dir.path()),
        dir.path(),
    );
    let cancel = AtomicBool::new(false);
    std::fs::remove_file(&file).expect("rm");
    nix::unistd::mkfifo(&file, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let fifo = observe(&check, dir.path(), &cancel).err().expect("a drift");
    assert!(fifo.contains("a FIFO"), "{fifo}");
    // rg leaves a FIFO it finds in a folder alone: the search finds nothing.
    assert_eq!(observe(&grep, dir.path(), &cancel).expect("grep").text, "");
    std::fs::remove_file(&file).expect("rm");
    std::os::unix::fs::symlink("/dev/zero", &file).expect("symlink");
    let zero = observe(&check, dir.path(), &cancel).err().expect("a drift");
    assert!(zero.contains("a character device"), "{zero}");
    std::fs::remove_file(&file).expect("rm");
    std::fs::File::create(&file)
        .and_then(|f| f.set_len(1536 << 20))
        .expect("a sparse file of 1.5 GiB");
    let huge = observe(&check, dir.path(), &cancel).err().expect("a drift");
    assert!(huge.contains("over the"), "{huge}");
    let huge = observe(&grep, dir.path(), &cancel).err().expect("a drift");
    assert!(huge.contains("recorded size"), "{huge}");
}

#[test]
fn calls_whose_answer_cannot_be_made_again_are_not_checks() {
    let cwd = Path::new("/p");
    let context = serde_json::json!({"pattern": "x", "-C": 2, "output_mode": "content"});
    assert!(from_claude("Grep", &context, "a", None, false, cwd).is_err());
    let cut = serde_json::json!({"pattern": "x", "head_limit": 2});
    assert!(from_claude("Grep", &cut, "Found 2 files\na\nb", None, false, cwd).is_err());
    let truncated = serde_json::json!({"truncated": true, "filenames": ["a"]});
    assert!(from_claude(
        "Glob",
        &serde_json::json!({"pattern": "*"}),
        "a",
        Some(&truncated),
        false,
        cwd
    )
    .is_err());
    let read = serde_json::json!({"file_path": "/p/a"});
    assert!(from_claude("Read", &read, "File does not exist.", None, true, cwd).is_err());
    assert!(from_claude("Edit", &read, "", None, false, cwd).is_err());
}

#[test]
fn a_read_answer_without_structure_loses_its_gutter() {
    let check = from_claude(
        "Read",
        &serde_json::json!({"file_path": "/p/a", "offset": 2, "limit": 2}),
        "     2\tttl 30 minutes\n     3\towner x\n\n<system-reminder>\nbe careful\n</system-reminder>",
        None,
        false,
        Path::new("/p"),
    )
    .expect("check");
    assert_eq!(seen(&check), "ttl 30 minutes\nowner x");
}
