//! Each type name is defined once in `src`: a struct, enum, union, type alias or trait of one
//! name in two places means a reader who finds `Verdict` must first find out which, and an
//! import of the wrong one may still compile, and a private `State` in one file read beside a
//! `pub State` in another is the same confusion. Counted: every item type, whatever its
//! visibility (associated types such as an actor's `type State` are the trait's words, not new
//! names). The names are read from the code itself (`syn`),
//! as the import-graph test reads it; test modules (`#[cfg(test)]`, `tests.rs` and `*_tests.rs`)
//! are left out: their fixtures are their own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The type names defined in one file, with the inline module each is in.
struct Defined {
    here: Vec<String>,
    found: Vec<(String, String)>,
}

impl Defined {
    fn add(&mut self, ident: &syn::Ident) {
        self.found.push((ident.to_string(), self.here.join("::")));
    }
}

/// `#[cfg(test)]` among `attrs`.
fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

impl<'ast> Visit<'ast> for Defined {
    fn visit_item_struct(&mut self, item: &'ast syn::ItemStruct) {
        self.add(&item.ident);
    }
    fn visit_item_enum(&mut self, item: &'ast syn::ItemEnum) {
        self.add(&item.ident);
    }
    fn visit_item_union(&mut self, item: &'ast syn::ItemUnion) {
        self.add(&item.ident);
    }
    fn visit_item_type(&mut self, item: &'ast syn::ItemType) {
        self.add(&item.ident);
    }
    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        self.add(&item.ident);
    }
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if is_cfg_test(&item.attrs) {
            return;
        }
        self.here.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
        self.here.pop();
    }
    /// A type declared inside a function body is that function's own.
    fn visit_block(&mut self, _: &'ast syn::Block) {}
}

/// Every type name defined under `src` outside test code, with where: `file (module)`.
fn type_names(src: &Path) -> BTreeMap<String, Vec<String>> {
    let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for entry in walkdir::WalkDir::new(src)
        .into_iter()
        .filter_map(Result::ok)
    {
        let path = entry.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let Some(name) = name.filter(|n| n.ends_with(".rs")) else {
            continue;
        };
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(path).expect("read a source file");
        let file =
            syn::parse_file(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()));
        let mut defined = Defined {
            here: Vec::new(),
            found: Vec::new(),
        };
        defined.visit_file(&file);
        let rel = path.strip_prefix(src).unwrap_or(path).display().to_string();
        for (ty, module) in defined.found {
            let at = if module.is_empty() {
                rel.clone()
            } else {
                format!("{rel} ({module})")
            };
            names.entry(ty).or_default().push(at);
        }
    }
    names
}

fn twice(names: BTreeMap<String, Vec<String>>) -> Vec<String> {
    names
        .into_iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(ty, at)| format!("    {ty}: {}", at.join(", ")))
        .collect()
}

#[test]
fn no_type_name_is_defined_twice_in_src() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = twice(type_names(&src));
    assert!(
        found.is_empty(),
        "type names defined more than once in src (rename one, after what it is):\n{}",
        found.join("\n")
    );
}

/// The check sees a name defined twice (a trait and a struct in two files) and leaves test code
/// and function bodies alone.
#[test]
fn the_check_finds_a_name_defined_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).expect("mkdir");
    std::fs::write(src.join("lib.rs"), "pub mod a;\npub trait Answer {}\n").expect("write");
    std::fs::write(
        src.join("a/mod.rs"),
        "pub struct Answer;\nstruct Private;\nfn f() { pub struct Local; }\n#[cfg(test)]\nmod tests { pub struct Local; pub struct Answer; }\nimpl Iterator for Private { type Item = u8; fn next(&mut self) -> Option<u8> { None } }\n",
    )
    .expect("write");
    std::fs::write(src.join("a/b_tests.rs"), "pub struct Answer;\n").expect("write");
    std::fs::write(
        src.join("a/c.rs"),
        "pub mod inner { pub enum Local {} }\nstruct Item;\n",
    )
    .expect("write");
    std::fs::write(src.join("a/d.rs"), "struct Private;\n").expect("write");
    assert_eq!(
        twice(type_names(src)),
        vec![
            "    Answer: lib.rs, a/mod.rs".to_string(),
            "    Private: a/d.rs, a/mod.rs".to_string()
        ]
    );
}
