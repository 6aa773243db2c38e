//! Assets (docs/config.md "Substitution and assets"): `[[asset:NAME]]` in an instruction becomes the
//! content of the file NAME, `{{path:NAME}}` the absolute path of a copy of it in the session
//! workspace. NAME is looked up in the folder beside the test file named like it without
//! `.test.toml` (`tests/checkout.test.toml` → `tests/checkout/NAME`), and may not leave that
//! folder.
//!
//! Load time calls [`check_assets`]; the session calls [`render_assets`] and does the copying.

use crate::model::ids::StepId;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use std::collections::BTreeMap;

use super::plan::PlannedStep;
use super::substitute::{substitute, SubstError};
use super::test_file::file_stem;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssetError {
    #[error("asset name `{name}` must be a relative path inside {dir} (no `..`, not absolute)")]
    BadName { name: String, dir: String },
    #[error("asset `{name}` not found: no file {path}")]
    Missing { name: String, path: String },
    #[error("asset `{name}` resolves to {target}, outside its folder {dir}")]
    Escapes {
        name: String,
        target: String,
        dir: String,
    },
    #[error("asset `{name}` ({path}) is not UTF-8 text; use {{{{path:{name}}}}} to pass it by path instead")]
    NotText { name: String, path: String },
    #[error("cannot read asset `{name}` ({path}): {reason}")]
    Read {
        name: String,
        path: String,
        reason: String,
    },
}

/// How an instruction refers to an asset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssetUse {
    /// `[[asset:NAME]]`: inline the content.
    Content,
    /// `{{path:NAME}}`: the path of the workspace copy.
    Path,
}

/// One file for the session to copy before sending the step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssetCopy {
    pub from: PathBuf,
    pub to: PathBuf,
}

/// An instruction with its asset references replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedInstruction {
    pub text: String,
    pub copies: Vec<AssetCopy>,
}

fn pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\[\[asset:([^\]]*)\]\]|\{\{path:([^}]*)\}\}").expect("static regex")
    })
}

/// Whether `text` may hold an asset reference: most instructions hold none, and the check spares
/// building the pattern's automaton (a noticeable part of a one-test run's start).
fn may_refer(text: &str) -> bool {
    text.contains("[[asset:") || text.contains("{{path:")
}

/// Every asset reference in `instruction`, in order.
pub fn asset_refs(instruction: &str) -> Vec<(AssetUse, String)> {
    if !may_refer(instruction) {
        return Vec::new();
    }
    pattern()
        .captures_iter(instruction)
        .map(|c| match (c.get(1), c.get(2)) {
            (Some(n), _) => (AssetUse::Content, n.as_str().trim().to_string()),
            (_, Some(n)) => (AssetUse::Path, n.as_str().trim().to_string()),
            _ => (AssetUse::Content, String::new()),
        })
        .collect()
}

/// The asset folder of a test file: `tests/checkout.test.toml` → `tests/checkout`.
pub fn asset_dir(test_file: &Path) -> PathBuf {
    test_file
        .parent()
        .unwrap_or(Path::new(""))
        .join(file_stem(test_file))
}

/// The real path of asset `name` of `test_file`, checked to exist and to stay in its folder
/// (symlinks followed).
pub fn resolve_asset(test_file: &Path, name: &str) -> Result<PathBuf, AssetError> {
    let dir = asset_dir(test_file);
    let rel = Path::new(name);
    let clean = !name.is_empty()
        && rel
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !clean {
        return Err(AssetError::BadName {
            name: name.to_string(),
            dir: dir.display().to_string(),
        });
    }
    let path = dir.join(rel);
    if !path.is_file() {
        return Err(AssetError::Missing {
            name: name.to_string(),
            path: path.display().to_string(),
        });
    }
    let real = path.canonicalize().map_err(|e| AssetError::Read {
        name: name.to_string(),
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    let real_dir = dir.canonicalize().unwrap_or(dir.clone());
    if !real.starts_with(&real_dir) {
        return Err(AssetError::Escapes {
            name: name.to_string(),
            target: real.display().to_string(),
            dir: dir.display().to_string(),
        });
    }
    Ok(real)
}

/// Load-time check: every asset the instruction names resolves. One error per bad reference.
pub fn check_assets(instruction: &str, test_file: &Path) -> Vec<AssetError> {
    asset_refs(instruction)
        .into_iter()
        .filter_map(|(_, name)| resolve_asset(test_file, &name).err())
        .collect()
}

/// Run time: replace asset references in `instruction` (the step's text, after `${NAME}`
/// substitution) and list the copies to make under `workspace/assets/`.
pub fn render_assets(
    instruction: &str,
    test_file: &Path,
    workspace: &Path,
) -> Result<RenderedInstruction, AssetError> {
    if !may_refer(instruction) {
        return Ok(RenderedInstruction {
            text: instruction.to_string(),
            copies: Vec::new(),
        });
    }
    let mut copies: Vec<AssetCopy> = Vec::new();
    let mut text = String::with_capacity(instruction.len());
    let mut last = 0;
    for caps in pattern().captures_iter(instruction) {
        let Some(whole) = caps.get(0) else { continue };
        text.push_str(&instruction[last..whole.start()]);
        last = whole.end();
        let (kind, name) = match (caps.get(1), caps.get(2)) {
            (Some(n), _) => (AssetUse::Content, n.as_str().trim()),
            (_, Some(n)) => (AssetUse::Path, n.as_str().trim()),
            _ => continue,
        };
        let real = resolve_asset(test_file, name)?;
        match kind {
            AssetUse::Content => {
                let bytes = std::fs::read(&real).map_err(|e| AssetError::Read {
                    name: name.to_string(),
                    path: real.display().to_string(),
                    reason: e.to_string(),
                })?;
                let content = String::from_utf8(bytes).map_err(|_| AssetError::NotText {
                    name: name.to_string(),
                    path: real.display().to_string(),
                })?;
                text.push_str(&content);
            }
            AssetUse::Path => {
                let to = super::artifacts::WorkspacePaths::new(workspace)
                    .assets_dir()
                    .join(name);
                if !copies.iter().any(|c| c.to == to) {
                    copies.push(AssetCopy {
                        from: real,
                        to: to.clone(),
                    });
                }
                text.push_str(&to.to_string_lossy());
            }
        }
    }
    text.push_str(&instruction[last..]);
    Ok(RenderedInstruction { text, copies })
}

/// Why a step's instruction could not be prepared at run time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrepareError {
    #[error("step {step_id}: {source}")]
    Subst { step_id: StepId, source: SubstError },
    #[error("step {step_id}: {source}")]
    Asset { step_id: StepId, source: AssetError },
}

/// The session's one call per step: `${NAME}` replaced from `vars` (see
/// `EffectiveConfig::session_vars`, plus `BUGATTI_STEP_ID`), then the assets of the step's own
/// file rendered against `workspace`. Asset content is inserted after substitution, verbatim.
pub fn prepare_instruction(
    step: &PlannedStep,
    project_root: &Path,
    vars: &BTreeMap<String, String>,
    workspace: &Path,
) -> Result<RenderedInstruction, PrepareError> {
    let text = substitute(&step.instruction, vars).map_err(|source| PrepareError::Subst {
        step_id: step.step_id,
        source,
    })?;
    render_assets(&text, &project_root.join(&step.source_file), workspace).map_err(|source| {
        PrepareError::Asset {
            step_id: step.step_id,
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        fs::create_dir_all(root.join("tests/checkout/data")).unwrap();
        fs::write(root.join("tests/checkout.test.toml"), "").unwrap();
        fs::write(root.join("tests/checkout/cart.json"), "{\"n\":3}").unwrap();
        fs::write(root.join("tests/checkout/data/img.bin"), [0xff, 0xfe]).unwrap();
        fs::write(root.join("secret.txt"), "s").unwrap();
        (d, root)
    }

    #[test]
    fn folder_is_beside_the_test_file() {
        assert_eq!(
            asset_dir(Path::new("tests/checkout.test.toml")),
            PathBuf::from("tests/checkout")
        );
    }

    #[test]
    fn refs_are_found_in_order() {
        assert_eq!(
            asset_refs("a [[asset:x.txt]] b {{path: y/z.png }}"),
            vec![
                (AssetUse::Content, "x.txt".to_string()),
                (AssetUse::Path, "y/z.png".to_string())
            ]
        );
    }

    #[test]
    fn render_inlines_content_and_plans_copies() {
        let (_d, root) = setup();
        let t = root.join("tests/checkout.test.toml");
        let ws = root.join("ws");
        let r = render_assets(
            "Cart [[asset:cart.json]] upload {{path:data/img.bin}} and {{path:data/img.bin}}",
            &t,
            &ws,
        )
        .unwrap();
        let img = ws.join("assets/data/img.bin");
        assert_eq!(
            r.text,
            format!("Cart {{\"n\":3}} upload {0} and {0}", img.display())
        );
        assert_eq!(
            r.copies,
            vec![AssetCopy {
                from: root.join("tests/checkout/data/img.bin"),
                to: img
            }]
        );
    }

    #[test]
    fn missing_bad_escaping_and_binary_assets_are_errors() {
        let (_d, root) = setup();
        let t = root.join("tests/checkout.test.toml");
        let errs = check_assets(
            "[[asset:nope.txt]] {{path:../../secret.txt}} [[asset:/etc/passwd]] [[asset:]]",
            &t,
        );
        assert_eq!(errs.len(), 4, "{errs:?}");
        assert!(
            errs[0]
                .to_string()
                .starts_with("asset `nope.txt` not found: no file"),
            "{}",
            errs[0]
        );
        assert!(
            errs[1].to_string().contains("must be a relative path"),
            "{}",
            errs[1]
        );
        assert!(
            errs[2].to_string().contains("must be a relative path"),
            "{}",
            errs[2]
        );
        let e = render_assets("[[asset:data/img.bin]]", &t, &root).unwrap_err();
        assert!(e.to_string().contains("is not UTF-8 text"), "{e}");
    }

    #[test]
    fn prepare_substitutes_then_renders_the_steps_own_assets() {
        let (_d, root) = setup();
        fs::write(root.join("tests/checkout/note.txt"), "literal ${NOT_A_VAR}").unwrap();
        let step = PlannedStep {
            step_id: StepId::new(4),
            source_file: PathBuf::from("tests/checkout.test.toml"),
            source_index: 1,
            include_chain: vec![],
            instruction: "at ${P}: [[asset:note.txt]] {{path:cart.json}}".into(),
            timeout_secs: None,
            timeout: crate::model::layers::Sourced::default_value(std::time::Duration::from_secs(
                300,
            )),
            checkpoint: None,
            setup: false,
            skip: false,
            replay: true,
            source_span: 0..0,
        };
        let vars = [("P".to_string(), "9".to_string())].into();
        let ws = root.join("ws");
        let r = prepare_instruction(&step, &root, &vars, &ws).unwrap();
        assert_eq!(
            r.text,
            format!(
                "at 9: literal ${{NOT_A_VAR}} {}",
                ws.join("assets/cart.json").display()
            )
        );
        let e = prepare_instruction(&step, &root, &BTreeMap::new(), &ws).unwrap_err();
        assert_eq!(e.to_string(), "step 4: unknown variable `${P}`");
    }

    #[test]
    fn symlink_out_of_the_folder_is_refused() {
        let (_d, root) = setup();
        std::os::unix::fs::symlink(
            root.join("secret.txt"),
            root.join("tests/checkout/link.txt"),
        )
        .unwrap();
        let t = root.join("tests/checkout.test.toml");
        let e = resolve_asset(&t, "link.txt").unwrap_err().to_string();
        assert!(e.contains("outside its folder"), "{e}");
    }
}
