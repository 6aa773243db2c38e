//! Plan expansion: a root test's steps with every `include_path` / `include_glob` inlined,
//! recursively, into one flat list. Each planned step keeps its provenance and gets a stable
//! 1-based `step_id` in plan order. Cycles, missing includes, globs matching nothing and
//! includes leaving the project root are problems naming the file, line and chain.

use crate::model::ids::StepId;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use walkdir::WalkDir;

use super::diagnostics::{Problem, Problems};
use super::discovery::glob_matcher;
use super::layers::step_timeout::out_of_range as step_timeout_out_of_range;
use super::layers::{Sourced, DEFAULT_STEP_TIMEOUT_SECS};
use super::paths::{is_inside, is_skipped_dir, normalize, relative_to};
use super::test_file::{parse_test_file_all, StepKind, TestFile};

/// One step to hand to the agent, with where it came from. Serializes to the step fields of
/// `run.json` (docs/reports.md "What a run leaves behind").
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlannedStep {
    /// 1-based, in plan order.
    pub step_id: StepId,
    /// The file that wrote the instruction, relative to the project root.
    pub source_file: PathBuf,
    /// 1-based index of the step in that file's `[[steps]]`.
    pub source_index: usize,
    /// Files from the root test down to the one that included `source_file` (relative to the
    /// project root); empty for the root test's own steps.
    pub include_chain: Vec<PathBuf>,
    /// Raw text, before `${NAME}` and asset substitution.
    pub instruction: String,
    /// The step's own `timeout_secs`, as written.
    pub timeout_secs: Option<u64>,
    /// The step's timeout, resolved once by the loader: its own, else the provider's
    /// `step_timeout_secs` from its layer (`ProviderSettings::step_timeout`).
    #[serde(skip)]
    pub timeout: Sourced<Duration>,
    pub checkpoint: Option<String>,
    pub setup: bool,
    /// Bugatti 0.7 `skip = true`: not sent to the agent, counts as passed.
    pub skip: bool,
    /// `false` (`replay = false` on the step or its file): never replayed, always the agent.
    #[serde(skip)]
    pub replay: bool,
    /// Byte span of the step's table in `source_file`, for error positions.
    #[serde(skip)]
    pub source_span: std::ops::Range<usize>,
}

impl PlannedStep {
    /// `tests/a.test.toml#2 (via tests/root.test.toml)`, for consoles and reports.
    pub fn provenance(&self) -> String {
        let mut s = format!("{}#{}", self.source_file.display(), self.source_index);
        if !self.include_chain.is_empty() {
            let chain: Vec<String> = self
                .include_chain
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            s.push_str(&format!(" (via {})", chain.join(" -> ")));
        }
        s
    }
}

/// Test files read and parsed once each, with their text kept for error positions.
#[derive(Debug, Default)]
pub struct TestFiles {
    texts: BTreeMap<PathBuf, String>,
    parsed: BTreeMap<PathBuf, Option<TestFile>>,
    /// Problems from reading and parsing, each reported once however often the file is used.
    pub problems: Problems,
    /// Include cycles already reported (as the sorted set of their files), so a cycle
    /// reachable from several root tests is reported once.
    reported_cycles: std::collections::BTreeSet<Vec<PathBuf>>,
}

impl TestFiles {
    /// The parsed file at absolute `path`, or None if it could not be read or parsed (the
    /// reason is in `problems`).
    pub fn get(&mut self, path: &Path) -> Option<&TestFile> {
        if !self.parsed.contains_key(path) {
            let read =
                crate::model::user_file::read_to_string(path, crate::model::user_file::TEST_MAX);
            let parsed = match read {
                Err(e) => {
                    self.problems.push(Problem::in_file(
                        path,
                        format!("cannot read test file: {}", e.reason()),
                    ));
                    None
                }
                Ok(text) => {
                    let r = parse_test_file_all(path, &text);
                    self.texts.insert(path.to_path_buf(), text);
                    match r {
                        Ok(f) => Some(f),
                        Err(ps) => {
                            ps.into_iter().for_each(|p| self.problems.push(p));
                            None
                        }
                    }
                }
            };
            self.parsed.insert(path.to_path_buf(), parsed);
        }
        self.parsed.get(path).and_then(Option::as_ref)
    }

    /// The text of a file already read.
    pub fn text(&self, path: &Path) -> &str {
        self.texts.get(path).map(String::as_str).unwrap_or("")
    }
}

/// Steps one root test may expand to. Includes may repeat a file, so a few small files that each
/// include the next twice would otherwise expand exponentially and exhaust memory.
pub const MAX_PLAN_STEPS: usize = 10_000;

struct Expander<'a> {
    root: &'a Path,
    files: &'a mut TestFiles,
    steps: Vec<PlannedStep>,
    problems: Problems,
    /// [`MAX_PLAN_STEPS`] was reached (and reported): expansion stops.
    too_big: bool,
    /// How many files being expanded say `replay = false` (their steps and includes opt out).
    replay_off: usize,
}

/// Expand the root test at absolute `file` into its flat plan. With problems, the plan holds
/// the steps that could be expanded, so later checks still see them.
pub fn expand(root: &Path, file: &Path, files: &mut TestFiles) -> (Vec<PlannedStep>, Problems) {
    let mut ex = Expander {
        root,
        files,
        steps: Vec::new(),
        problems: Problems::default(),
        too_big: false,
        replay_off: 0,
    };
    ex.file(file, &mut Vec::new());
    (ex.steps, ex.problems)
}

impl Expander<'_> {
    fn rel(&self, p: &Path) -> PathBuf {
        relative_to(self.root, p)
    }

    /// Inline `file`'s steps; `stack` holds the files currently being expanded (the chain).
    fn file(&mut self, file: &Path, stack: &mut Vec<PathBuf>) {
        let Some(test) = self.files.get(file).cloned() else {
            return; // parse problem already recorded in `files`
        };
        let text = self.files.text(file).to_string();
        if test.steps.is_empty() {
            self.problems.push(
                Problem::in_file(file, "test file has no steps")
                    .with_help("add at least one [[steps]] table with an `instruction`"),
            );
            return;
        }
        stack.push(file.to_path_buf());
        let opts_out = test.replay == Some(false);
        self.replay_off += usize::from(opts_out);
        let dir = file.parent().unwrap_or(self.root).to_path_buf();
        for (i, step) in test.steps.iter().enumerate() {
            if self.too_big {
                break;
            }
            let span = step.span();
            let at = |msg: String| Problem::at(file, &text, span.clone(), msg);
            match step.get_ref().kind() {
                Err(msg) => self.problems.push(at(msg)),
                Ok(StepKind::Instruction {
                    text: instruction,
                    timeout_secs,
                    checkpoint,
                    setup,
                    skip,
                    replay,
                }) => {
                    if self.steps.len() == MAX_PLAN_STEPS {
                        self.too_big = true;
                        self.problems.push(at(format!(
                            "the plan grows past {MAX_PLAN_STEPS} steps here: includes repeat files too often"
                        )));
                        break;
                    }
                    if let Some(why) = timeout_secs.and_then(step_timeout_out_of_range) {
                        self.problems.push(at(format!("step `timeout_secs` {why}")));
                    }
                    let chain = stack[..stack.len() - 1]
                        .iter()
                        .map(|p| self.rel(p))
                        .collect();
                    self.steps.push(PlannedStep {
                        step_id: StepId::from_index(self.steps.len()),
                        source_file: self.rel(file),
                        source_index: i + 1,
                        include_chain: chain,
                        instruction,
                        timeout_secs,
                        timeout: Sourced::default_value(Duration::from_secs(
                            DEFAULT_STEP_TIMEOUT_SECS,
                        )),
                        checkpoint,
                        setup,
                        skip,
                        replay: replay && self.replay_off == 0,
                        source_span: span.clone(),
                    });
                }
                Ok(StepKind::IncludePath(p)) => {
                    let target = normalize(&dir.join(&p));
                    if !is_inside(self.root, &target) {
                        self.problems.push(at(format!(
                            "include_path `{p}` leaves the project root ({})",
                            self.root.display()
                        )));
                    } else if !target.is_file() {
                        self.problems.push(at(format!(
                            "include_path `{p}` not found (looked for {})",
                            target.display()
                        )));
                    } else {
                        self.include(&target, stack, &at);
                    }
                }
                Ok(StepKind::IncludeGlob(g)) => match self.glob(&dir, &g) {
                    Err(msg) => self.problems.push(at(msg)),
                    Ok(targets) => {
                        for t in targets {
                            self.include(&t, stack, &at);
                        }
                    }
                },
            }
        }
        self.replay_off -= usize::from(opts_out);
        stack.pop();
    }

    fn include(&mut self, target: &Path, stack: &mut Vec<PathBuf>, at: &dyn Fn(String) -> Problem) {
        if stack.iter().any(|s| s == target) {
            let mut chain: Vec<String> = stack
                .iter()
                .skip_while(|s| *s != target)
                .map(|s| self.rel(s).display().to_string())
                .collect();
            chain.push(self.rel(target).display().to_string());
            let mut members: Vec<PathBuf> =
                stack.iter().skip_while(|s| *s != target).cloned().collect();
            members.sort();
            if self.files.reported_cycles.insert(members) {
                self.problems
                    .push(at(format!("include cycle: {}", chain.join(" -> "))));
            }
            return;
        }
        self.file(target, stack);
    }

    /// Files matching `glob` relative to `dir`, sorted; `_` files included (they are meant
    /// to be included), skipped directories not entered.
    fn glob(&self, dir: &Path, glob: &str) -> Result<Vec<PathBuf>, String> {
        // The glob's leading literal segments (`..` included) name the folder to walk; the
        // rest is matched below it. The folder is escaped: its name may contain `[` or `*`.
        let segments: Vec<&str> = glob.split('/').filter(|s| !s.is_empty()).collect();
        let literal = segments
            .iter()
            .take_while(|s| !s.contains(['*', '?', '[', '{']))
            .count()
            .min(segments.len().saturating_sub(1));
        let base = normalize(&dir.join(segments[..literal].join("/")));
        let rest = segments[literal..].join("/");
        let pattern_str = format!(
            "{}/{rest}",
            globset::escape(&base.to_string_lossy()).trim_end_matches('/')
        );
        let matcher = glob_matcher(&pattern_str).map_err(|e| format!("include_glob {e}"))?;
        if !is_inside(self.root, &base) {
            return Err(format!(
                "include_glob `{glob}` leaves the project root ({})",
                self.root.display()
            ));
        }
        let mut hits = Vec::new();
        let walker = WalkDir::new(&base).follow_links(true).into_iter();
        for entry in walker.filter_entry(|e| {
            e.depth() == 0
                || !e.file_type().is_dir()
                || !is_skipped_dir(&e.file_name().to_string_lossy())
        }) {
            let Ok(entry) = entry else { continue };
            if entry.file_type().is_file() && matcher.is_match(entry.path()) {
                hits.push(entry.path().to_path_buf());
            }
        }
        hits.sort();
        if let Some(outside) = hits.iter().find(|h| !is_inside(self.root, h)) {
            return Err(format!(
                "include_glob `{glob}` matches {}, outside the project root ({})",
                outside.display(),
                self.root.display()
            ));
        }
        if hits.is_empty() {
            return Err(format!(
                "include_glob `{glob}` matches no file (pattern {pattern_str})"
            ));
        }
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(&p, text).expect("write");
        p
    }

    fn step(i: &str) -> String {
        format!("[[steps]]\ninstruction = \"{i}\"\n")
    }
    fn inc(p: &str) -> String {
        format!("[[steps]]\ninclude_path = \"{p}\"\n")
    }

    fn expand_at(root: &Path, file: &Path) -> Result<Vec<PlannedStep>, Problems> {
        let mut files = TestFiles::default();
        let (steps, p) = expand(root, file, &mut files);
        let mut problems = files.problems;
        problems.extend(p);
        if problems.is_empty() {
            Ok(steps)
        } else {
            Err(problems)
        }
    }

    #[test]
    fn nested_includes_flatten_with_provenance_and_ids() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().canonicalize().unwrap();
        let root = write(
            &r,
            "root.test.toml",
            &format!(
                "{}{}{}",
                step("one"),
                inc("shared/_login.test.toml"),
                step("four")
            ),
        );
        write(
            &r,
            "shared/_login.test.toml",
            &format!("{}{}", step("two"), inc("_deeper.test.toml")),
        );
        write(&r, "shared/_deeper.test.toml", &step("three"));
        let plan = expand_at(&r, &root).unwrap();
        let got: Vec<(u32, &str, String, usize, usize)> = plan
            .iter()
            .map(|s| {
                (
                    s.step_id.get(),
                    s.instruction.as_str(),
                    s.source_file.display().to_string(),
                    s.source_index,
                    s.include_chain.len(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (1, "one", "root.test.toml".into(), 1, 0),
                (2, "two", "shared/_login.test.toml".into(), 1, 1),
                (3, "three", "shared/_deeper.test.toml".into(), 1, 2),
                (4, "four", "root.test.toml".into(), 3, 0),
            ]
        );
        assert_eq!(
            plan[2].provenance(),
            "shared/_deeper.test.toml#1 (via root.test.toml -> shared/_login.test.toml)"
        );
    }

    #[test]
    fn exponential_includes_stop_at_the_step_limit() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().canonicalize().unwrap();
        for i in 0..40 {
            let next = format!("f{}.test.toml", i + 1);
            write(
                &r,
                &format!("f{i}.test.toml"),
                &format!("{}{}", inc(&next), inc(&next)),
            );
        }
        write(&r, "f40.test.toml", &step("leaf"));
        let mut files = TestFiles::default();
        let (steps, problems) = expand(&r, &r.join("f0.test.toml"), &mut files);
        assert_eq!(steps.len(), MAX_PLAN_STEPS);
        assert_eq!(problems.len(), 1, "{problems}");
        let e = problems.to_string();
        assert!(e.contains("grows past 10000 steps"), "{e}");
        assert!(e.contains("f40.test.toml:1:1"), "{e}");
    }

    #[test]
    fn planned_steps_serialize_with_spec_field_names() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().canonicalize().unwrap();
        let root = write(&r, "a.test.toml", &step("x"));
        let plan = expand_at(&r, &root).unwrap();
        let json = serde_json::to_value(&plan[0]).unwrap();
        assert_eq!(json["step_id"], 1);
        assert_eq!(json["source_file"], "a.test.toml");
        assert_eq!(json["source_index"], 1);
        assert_eq!(json["include_chain"], serde_json::json!([]));
        assert_eq!(json["instruction"], "x");
        assert!(json.get("source_span").is_none());
        assert_eq!(
            serde_json::to_value(crate::model::layers::Layer::Project).unwrap(),
            "project"
        );
    }

    #[test]
    fn glob_includes_are_sorted() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().canonicalize().unwrap();
        let root = write(
            &r,
            "root.test.toml",
            "[[steps]]\ninclude_glob = \"smoke/*.test.toml\"\n",
        );
        write(&r, "smoke/b.test.toml", &step("b"));
        write(&r, "smoke/a.test.toml", &step("a"));
        write(&r, "smoke/_c.test.toml", &step("c"));
        let plan = expand_at(&r, &root).unwrap();
        let texts: Vec<&str> = plan.iter().map(|s| s.instruction.as_str()).collect();
        assert_eq!(texts, vec!["c", "a", "b"]); // `_` sorts before letters
    }

    #[test]
    fn glob_in_a_folder_whose_name_has_glob_characters() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().canonicalize().unwrap().join("we[ir]d *dir");
        let root = write(
            &r,
            "root.test.toml",
            "[[steps]]\ninclude_glob = \"./inc/*.test.toml\"\n",
        );
        write(&r, "inc/a.test.toml", &step("a"));
        let plan = expand_at(&r, &root).unwrap();
        assert_eq!(plan[0].instruction, "a");
        let root2 = write(
            &r,
            "two.test.toml",
            "[[steps]]\ninclude_glob = \"inc/a.test.toml\"\n",
        );
        assert_eq!(expand_at(&r, &root2).unwrap().len(), 1);
    }

    #[test]
    fn direct_and_indirect_cycles_print_the_chain() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().canonicalize().unwrap();
        let a = write(&r, "a.test.toml", &inc("b.test.toml"));
        write(&r, "b.test.toml", &inc("a.test.toml"));
        let e = expand_at(&r, &a).unwrap_err().to_string();
        assert!(
            e.contains("include cycle: a.test.toml -> b.test.toml -> a.test.toml"),
            "{e}"
        );
        assert!(e.contains("b.test.toml:1:1"), "{e}");
        let s = write(&r, "self.test.toml", &inc("self.test.toml"));
        let e = expand_at(&r, &s).unwrap_err().to_string();
        assert!(
            e.contains("include cycle: self.test.toml -> self.test.toml"),
            "{e}"
        );
    }

    #[test]
    fn missing_include_outside_root_and_empty_glob_are_errors() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().canonicalize().unwrap().join("proj");
        write(r.parent().unwrap(), "outside.test.toml", &step("x"));
        let t = write(
            &r,
            "t.test.toml",
            &format!(
                "{}{}{}{}",
                inc("missing.test.toml"),
                inc("../outside.test.toml"),
                "[[steps]]\ninclude_glob = \"none/*.test.toml\"\n",
                "[[steps]]\ninclude_glob = \"../*.test.toml\"\n"
            ),
        );
        let e = expand_at(&r, &t).unwrap_err();
        let all = e.to_string();
        assert_eq!(e.len(), 4, "{all}");
        assert!(
            all.contains("include_path `missing.test.toml` not found"),
            "{all}"
        );
        assert!(
            all.contains("include_path `../outside.test.toml` leaves the project root"),
            "{all}"
        );
        assert!(
            all.contains("include_glob `none/*.test.toml` matches no file"),
            "{all}"
        );
        assert!(
            all.contains("include_glob `../*.test.toml` leaves the project root"),
            "{all}"
        );
    }

    #[test]
    fn bad_steps_and_parse_errors_in_included_files_are_reported() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().canonicalize().unwrap();
        let t = write(
            &r,
            "t.test.toml",
            &format!(
                "{}[[steps]]\n\n{}",
                inc("bad.test.toml"),
                inc("empty.test.toml")
            ),
        );
        write(&r, "bad.test.toml", "[[steps]]\ninstruction = 3\n");
        write(&r, "empty.test.toml", "name = \"e\"\n");
        let e = expand_at(&r, &t).unwrap_err().to_string();
        assert!(
            e.contains("wrong kind of value: found the number `3`"),
            "{e}"
        );
        assert!(e.contains("bad.test.toml:2:15"), "{e}");
        assert!(e.contains("exactly one of"), "{e}");
        assert!(e.contains("test file has no steps"), "{e}");
    }
}
