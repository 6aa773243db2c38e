//! Properties of plan expansion over random include graphs written to a temporary project: it
//! terminates, gives the steps a plain recursive model predicts with ids `1..=n`, reports every
//! cycle with its chain, and gives the same answer every time. Plus the fuzz body on random files.

use bugatti::fuzzing::{self, expand_checked, PLAN_FILES};
use proptest::prelude::*;
use std::path::PathBuf;

#[derive(Debug, Clone)]
enum Step {
    Say(String),
    /// include_path of file N (by index).
    Include(usize),
    /// include_glob matching exactly file N.
    Glob(usize),
}

/// File i lives at `f{i}.test.toml` (even) or `sub/f{i}.test.toml` (odd), so includes cross
/// folders and go back up with `..`.
fn rel_path(i: usize) -> String {
    if i.is_multiple_of(2) {
        format!("f{i}.test.toml")
    } else {
        format!("sub/f{i}.test.toml")
    }
}

fn reference_from(from: usize, to: usize) -> String {
    match (from % 2, to % 2) {
        (0, 0) | (1, 1) => format!("f{to}.test.toml"),
        (0, _) => format!("sub/f{to}.test.toml"),
        _ => format!("../f{to}.test.toml"),
    }
}

fn render(from: usize, steps: &[Step]) -> String {
    let mut text = format!("name = \"file {from}\"\n");
    for s in steps {
        text.push_str("\n[[steps]]\n");
        match s {
            Step::Say(t) => text.push_str(&format!("instruction = \"{t}\"\n")),
            Step::Include(to) => text.push_str(&format!(
                "include_path = \"{}\"\n",
                reference_from(from, *to)
            )),
            Step::Glob(to) => {
                // `./` and a `*` that only this file matches.
                let r = reference_from(from, *to);
                let (dir, name) = r.rsplit_once('/').map_or(("", r.as_str()), |(d, n)| (d, n));
                let pattern = name.replacen(".test", "*.test", 1);
                let glob = if dir.is_empty() {
                    format!("./{pattern}")
                } else {
                    format!("{dir}/{pattern}")
                };
                text.push_str(&format!("include_glob = \"{glob}\"\n"));
            }
        }
    }
    text
}

/// What expansion must give: the instructions in order, and whether a cycle was met.
fn model(
    files: &[Vec<Step>],
    i: usize,
    stack: &mut Vec<usize>,
    out: &mut Vec<String>,
    cycle: &mut bool,
    empty: &mut bool,
) {
    if files[i].is_empty() {
        *empty = true;
        return;
    }
    stack.push(i);
    for s in &files[i] {
        match s {
            Step::Say(t) => out.push(t.clone()),
            Step::Include(j) | Step::Glob(j) => {
                if stack.contains(j) {
                    *cycle = true;
                } else {
                    model(files, *j, stack, out, cycle, empty);
                }
            }
        }
    }
    stack.pop();
}

fn graph() -> impl Strategy<Value = Vec<Vec<Step>>> {
    (2usize..7).prop_flat_map(|n| {
        let step = prop_oneof![
            3 => "[a-z]{1,6}".prop_map(Step::Say),
            2 => (0..n).prop_map(Step::Include),
            1 => (0..n).prop_map(Step::Glob),
        ];
        prop::collection::vec(prop::collection::vec(step, 0..4), n)
    })
}

fn write_project(files: &[Vec<Step>]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir_all(root.join("sub")).expect("mkdir");
    for (i, steps) in files.iter().enumerate() {
        std::fs::write(root.join(rel_path(i)), render(i, steps)).expect("write");
    }
    (dir, root)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn random_include_graphs_expand_like_the_model(files in graph()) {
        let (_dir, root) = write_project(&files);
        let (mut want, mut cycle, mut empty) = (Vec::new(), false, false);
        model(&files, 0, &mut Vec::new(), &mut want, &mut cycle, &mut empty);

        let (steps, problems) = expand_checked(&root, &root.join(rel_path(0)));
        let got: Vec<String> = steps.iter().map(|s| s.instruction.clone()).collect();
        prop_assert_eq!(&got, &want, "problems: {:?}", problems);

        let cycles: Vec<&String> = problems.iter().filter(|p| p.contains("include cycle: ")).collect();
        prop_assert_eq!(!cycles.is_empty(), cycle, "{:?}", problems);
        for c in &cycles {
            // The chain starts and ends with the same file: `a -> b -> a`.
            let line = c.lines().find(|l| l.contains("include cycle: ")).unwrap_or_default();
            let chain: Vec<&str> = line.split("include cycle: ").nth(1).unwrap_or_default().split(" -> ").collect();
            prop_assert!(chain.len() >= 2, "{}", c);
            prop_assert_eq!(chain.first(), chain.last(), "{}", c);
            prop_assert!(chain.iter().all(|f| f.ends_with(".test.toml") && !f.starts_with('/')), "{}", c);
        }
        prop_assert_eq!(problems.iter().any(|p| p.contains("test file has no steps")), empty, "{:?}", problems);
        prop_assert!(problems.iter().all(|p| p.contains("include cycle: ") || p.contains("test file has no steps")), "{:?}", problems);

        // Provenance: the chain of each step leads from the root to its file.
        let root_file = PathBuf::from(rel_path(0));
        for s in &steps {
            let first = s.include_chain.first().unwrap_or(&s.source_file);
            prop_assert_eq!(first, &root_file);
        }
    }

    /// The fuzz body: up to four arbitrary files (`\0`-separated) expanded twice, same result.
    #[test]
    fn arbitrary_files_expand_without_panic(parts in prop::collection::vec(
        prop_oneof![
            any::<String>(),
            prop::sample::select(vec![
                "[[steps]]\ninstruction = \"x\"\n",
                "[[steps]]\ninclude_path = \"inc/a.test.toml\"\n",
                "[[steps]]\ninclude_path = \"_b.test.toml\"\n",
                "[[steps]]\ninclude_path = \"../root.test.toml\"\n",
                "[[steps]]\ninclude_path = \"../../../etc/passwd\"\n",
                "[[steps]]\ninclude_glob = \"inc/**\"\n",
                "[[steps]]\ninclude_glob = \"**/*.toml\"\n",
                "[[steps]]\ninclude_glob = \"[\"\n",
                "[[steps]]\ninclude_glob = \"\"\n",
                "[[steps]]\ninclude_glob = \"/\"\n",
                "[[steps]]\ninclude_path = \"\"\n",
                "[[steps]]\ninclude_path = \"inc\"\n",
            ]).prop_map(str::to_string),
        ],
        1..PLAN_FILES.len() + 1,
    ).prop_map(|parts| parts.iter().map(|p| p.replace('\0', "")).collect::<Vec<_>>().join("\0"))) {
        fuzzing::plan(parts.as_bytes());
    }
}
