//! What a saved file touches for `supervisor watch` (docs/cli.md "supervisor watch"): the root
//! tests that use it, the whole selection (the config, an app file `[watch] paths` names), or
//! nothing; and the watch's own outputs, which never count. Pure: the watcher itself (files,
//! signals, runs) is `cli::watch`.

use std::path::{Path, PathBuf};

use super::assets::asset_dir;
use super::load::{RootTest, Suite};
use super::paths::{is_inside, normalize};
use super::watch::{app_glob, glob_base};

/// What a watch run re-runs for a set of changed files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Touched {
    /// No root test of the selection uses any of them.
    Nothing,
    /// These root tests (indices into `Suite::tests`, in order) use one of them.
    Tests(Vec<usize>),
    /// The config or an app file (`[watch] paths`) changed: every root test of the selection.
    All,
}

/// The files a watch never reacts to, and the app files it does: what `touched` needs besides
/// the suite, all absolute.
#[derive(Debug, Clone)]
pub struct WatchScope {
    /// The artifact directory, the recordings' directory, the copies and the history file: the
    /// watch's own outputs, never a trigger (a run writes them).
    pub outputs: Vec<PathBuf>,
    /// `[watch] paths`, made absolute (joined to the project root), matched against absolute paths.
    pub app: globset::GlobSet,
}

impl WatchScope {
    /// The scope of `suite`: its outputs (`extra` adds the copies and `--history`), its app
    /// globs. A glob that does not compile was refused when the config was loaded; one here is
    /// skipped.
    pub fn of(suite: &Suite, extra: &[PathBuf]) -> Self {
        let root = &suite.project_root;
        let within = |p: &Path| normalize(&root.join(p));
        let mut outputs = vec![
            within(Path::new(&suite.base.supervisor.artifact_dir.value)),
            suite.base.replay.dir_in(root),
            within(&suite.history_file),
        ];
        outputs.extend(extra.iter().map(|p| within(p)));
        let mut app = globset::GlobSetBuilder::new();
        for glob in &suite.base.watch.paths.value {
            if let Ok(g) = app_glob(&absolute_glob(root, glob)) {
                app.add(g);
            }
        }
        Self {
            outputs,
            app: app.build().unwrap_or_else(|_| globset::GlobSet::empty()),
        }
    }

    /// Whether `path` is one of the watch's own outputs (or inside one).
    pub fn is_output(&self, path: &Path) -> bool {
        self.outputs.iter().any(|o| is_inside(o, path))
    }

    /// Whether `path` (absolute, normalised) is an app file `[watch] paths` names.
    pub fn is_app(&self, path: &Path) -> bool {
        self.app.is_match(path)
    }
}

/// `glob` (relative to `root`) as an absolute glob: its literal folders joined to the root and
/// normalised (`../server/*.go` leaves the root), escaped, then the rest as written.
fn absolute_glob(root: &Path, glob: &str) -> String {
    let glob = glob.trim_start_matches("./");
    let base = glob_base(glob);
    let rest: PathBuf = Path::new(glob)
        .components()
        .skip(base.components().count())
        .collect();
    let base = globset::escape(&normalize(&root.join(&base)).to_string_lossy());
    if rest.as_os_str().is_empty() {
        base
    } else {
        format!("{}/{}", base.trim_end_matches('/'), rest.display())
    }
}

/// Whether root test `test` uses `path`: the test file itself, a file it includes (at any
/// depth), or a file of its asset folder.
pub fn uses(test: &RootTest, root: &Path, path: &Path) -> bool {
    test.path == path
        || test.plan.iter().any(|step| {
            root.join(&step.source_file) == path
                || step.include_chain.iter().any(|f| root.join(f) == path)
        })
        // Both are the loader's and the watcher's normalised paths under the project root: a
        // prefix is enough, and no file system call is made for each test at each event.
        || path.starts_with(asset_dir(&test.path))
}

/// What `changed` (absolute, normalised paths; the outputs already left out) touches in `suite`.
pub fn touched(suite: &Suite, scope: &WatchScope, changed: &[PathBuf]) -> Touched {
    let root = &suite.project_root;
    let config = suite.config_path.as_deref().map(normalize);
    if changed
        .iter()
        .any(|p| config.as_deref() == Some(p.as_path()) || scope.is_app(p))
    {
        return Touched::All;
    }
    let tests: Vec<usize> = suite
        .tests
        .iter()
        .enumerate()
        .filter(|(_, t)| changed.iter().any(|p| uses(t, root, p)))
        .map(|(i, _)| i)
        .collect();
    if tests.is_empty() {
        Touched::Nothing
    } else {
        Touched::Tests(tests)
    }
}

/// Whether a change of `path` may matter before the suite is read again: a TOML file (a test
/// file, an include, the config; a new test file is not in the suite yet), a file some root test
/// uses, or an app file. The outputs never.
pub fn may_matter(suite: &Suite, scope: &WatchScope, path: &Path) -> bool {
    if scope.is_output(path) {
        return false;
    }
    let root = &suite.project_root;
    path.extension().is_some_and(|e| e == "toml")
        || scope.is_app(path)
        || suite.tests.iter().any(|t| uses(t, root, path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::load::load_suite_with;
    use crate::model::load::HostEnv;
    use crate::model::options::RunOptions;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    /// A project of two tests, one including a shared file, one with an asset folder.
    fn suite(watch: &str) -> (tempfile::TempDir, Suite) {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().canonicalize().expect("canonical");
        write(
            &root,
            "bugatti.config.toml",
            &format!("[provider]\nname = \"shell\"\n{watch}"),
        );
        write(
            &root,
            "a.test.toml",
            "[[steps]]\ninclude_path = \"shared/_login.test.toml\"\n\n[[steps]]\ninstruction = \"Run `true`\"\n",
        );
        write(
            &root,
            "shared/_login.test.toml",
            "include_only = true\n[[steps]]\ninstruction = \"Run `true`\"\n",
        );
        write(
            &root,
            "b.test.toml",
            "[[steps]]\ninstruction = \"Run `cat {{path:order.json}}`\"\n",
        );
        write(&root, "b/order.json", "{}\n");
        let host = HostEnv {
            cwd: root.clone(),
            ..HostEnv::default()
        };
        let suite = load_suite_with(&RunOptions::default(), &host).expect("loads");
        (dir, suite)
    }

    #[test]
    fn a_test_file_its_includes_and_assets_touch_that_test_the_config_and_app_files_all() {
        let (_dir, suite) = suite("[watch]\npaths = [\"app/**/*.py\", \"../server/*.go\"]\n");
        let root = suite.project_root.clone();
        let scope = WatchScope::of(&suite, &[]);
        let at = |rel: &str| vec![root.join(rel)];
        let index = |name: &str| {
            suite
                .tests
                .iter()
                .position(|t| t.rel_path == Path::new(name))
                .expect("test")
        };
        assert_eq!(
            touched(&suite, &scope, &at("a.test.toml")),
            Touched::Tests(vec![index("a.test.toml")])
        );
        assert_eq!(
            touched(&suite, &scope, &at("shared/_login.test.toml")),
            Touched::Tests(vec![index("a.test.toml")])
        );
        assert_eq!(
            touched(&suite, &scope, &at("b/order.json")),
            Touched::Tests(vec![index("b.test.toml")])
        );
        assert_eq!(
            touched(&suite, &scope, &at("bugatti.config.toml")),
            Touched::All
        );
        assert_eq!(
            touched(&suite, &scope, &at("app/shop/server.py")),
            Touched::All
        );
        assert_eq!(
            touched(&suite, &scope, &at("app/README.md")),
            Touched::Nothing
        );
        let beside = normalize(&root.join("../server/main.go"));
        assert_eq!(touched(&suite, &scope, &[beside]), Touched::All);
    }

    #[test]
    fn the_watch_own_outputs_never_matter_even_when_an_app_glob_names_them() {
        let (_dir, suite) = suite("[watch]\npaths = [\"**\"]\n");
        let root = suite.project_root.clone();
        let scope = WatchScope::of(&suite, &[root.join("junit.xml")]);
        for rel in [
            ".bugatti/runs/x/run.json",
            "bugatti.replay/a.replay.json",
            ".bugatti/history.jsonl",
            "junit.xml",
        ] {
            assert!(!may_matter(&suite, &scope, &root.join(rel)), "{rel}");
        }
        assert!(may_matter(&suite, &scope, &root.join("src/main.rs")));
        assert!(may_matter(&suite, &scope, &root.join("new.test.toml")));
    }
}
