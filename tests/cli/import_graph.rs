//! The house keeps its floor plan: among the files of one room (`src/model`, `src/replay`,
//! `src/report`) no import runs in a circle. A circle means no file of it can be read, tested or
//! moved without the others; the room's order (what is built on what) is lost. The graph is read
//! from the code itself (`syn`): every `use` and every path that names a module of the crate
//! (`crate::…`, `super::…`, `self::…`, or a child module by name). Test modules
//! (`#[cfg(test)]`, and `tests.rs` files) are left out: a test sits above everything it tests and
//! may build its fixtures from any sibling; it is not part of the order the room's code is built in.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The rooms whose files must not import in a circle.
const ROOMS: &[&str] = &["model", "replay", "report"];

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// A module of the crate, as its path from the crate root (`["replay", "format"]`).
type ModPath = Vec<String>;

/// Every module file of the library under `src` (the binaries' own files excluded).
fn module_files(src: &Path) -> BTreeMap<ModPath, PathBuf> {
    let mut files = BTreeMap::new();
    for entry in walkdir::WalkDir::new(src)
        .into_iter()
        .filter_map(Result::ok)
    {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let rel = path.strip_prefix(src).expect("under src");
        if rel.starts_with("bin") {
            continue;
        }
        let mut segments: ModPath = rel
            .with_extension("")
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        if matches!(segments.last().map(String::as_str), Some("mod" | "lib")) {
            segments.pop();
        }
        // A module's unit tests in a file of their own (`#[cfg(test)] mod tests;`).
        if segments.last().map(String::as_str) == Some("tests") {
            continue;
        }
        files.insert(segments, path.to_path_buf());
    }
    files
}

/// Collects the module paths one file names.
struct Names<'a> {
    /// The module the code being visited is in (the file's, then its inline modules').
    here: ModPath,
    /// The child modules declared (`mod x;`) at each inline depth: `x::f()` names them.
    children: Vec<BTreeSet<String>>,
    files: &'a BTreeMap<ModPath, PathBuf>,
    named: BTreeSet<ModPath>,
}

impl Names<'_> {
    /// `segments` made absolute from `self.here`, when it starts at a module of the crate.
    fn absolute(&self, segments: &[String]) -> Option<ModPath> {
        let first = segments.first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => self.here.clone(),
            "super" => self.here.clone(),
            // `x::f` names the child module `x`; a lone `x` is a value or a function.
            name if segments.len() > 1
                && self.children.last().is_some_and(|c| c.contains(name)) =>
            {
                let mut base = self.here.clone();
                base.push(name.to_string());
                return Some(
                    base.into_iter()
                        .chain(segments[1..].iter().cloned())
                        .collect(),
                );
            }
            _ => return None,
        };
        let mut rest = &segments[1..];
        if first == "super" {
            base.pop();
        }
        while rest.first().map(String::as_str) == Some("super") {
            base.pop();
            rest = &rest[1..];
        }
        Some(base.into_iter().chain(rest.iter().cloned()).collect())
    }

    /// The module file a path names: its longest prefix that is one.
    fn note(&mut self, segments: &[String]) {
        let Some(path) = self.absolute(segments) else {
            return;
        };
        for len in (1..=path.len()).rev() {
            if self.files.contains_key(&path[..len]) {
                self.named.insert(path[..len].to_vec());
                return;
            }
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.note(prefix);
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.note(prefix);
                prefix.pop();
            }
            syn::UseTree::Glob(_) => self.note(prefix),
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
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

/// The `mod x;` declarations among `items`.
fn declared_children(items: &[syn::Item]) -> BTreeSet<String> {
    items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Mod(m) if m.content.is_none() => Some(m.ident.to_string()),
            _ => None,
        })
        .collect()
}

impl<'ast> Visit<'ast> for Names<'_> {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        let Some((_, items)) = &item.content else {
            return;
        };
        if is_cfg_test(&item.attrs) {
            return;
        }
        self.here.push(item.ident.to_string());
        self.children.push(declared_children(items));
        for item in items {
            self.visit_item(item);
        }
        self.children.pop();
        self.here.pop();
    }

    /// `pub(super)` and `pub(in path)` name who may see an item, not what it uses.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.note(&segments);
        syn::visit::visit_path(self, path);
    }
}

/// Each module file of the crate and the module files it names (itself left out).
fn import_graph(src: &Path) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let files = module_files(src);
    let mut graph = BTreeMap::new();
    for (module, path) in &files {
        let text = std::fs::read_to_string(path).expect("read a source file");
        let file =
            syn::parse_file(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()));
        let mut names = Names {
            here: module.clone(),
            children: vec![declared_children(&file.items)],
            files: &files,
            named: BTreeSet::new(),
        };
        names.visit_file(&file);
        names.named.remove(module);
        graph.insert(module.clone(), names.named);
    }
    graph
}

/// The strongly connected components of `graph` with more than one member (Tarjan).
fn circles(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<&'g ModPath, usize>,
        low: BTreeMap<&'g ModPath, usize>,
        stack: Vec<&'g ModPath>,
        on_stack: BTreeSet<&'g ModPath>,
        found: Vec<Vec<ModPath>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, node: &'g ModPath) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.graph.get(node).into_iter().flatten() {
                let Some((next, _)) = self.graph.get_key_value(next) else {
                    continue;
                };
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    component.push(member.clone());
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node) {
            walk.visit(node);
        }
    }
    walk.found
}

/// The graph among the files of `room` alone.
fn room_graph(
    graph: &BTreeMap<ModPath, BTreeSet<ModPath>>,
    room: &str,
) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let inside = |m: &ModPath| m.first().map(String::as_str) == Some(room);
    graph
        .iter()
        .filter(|(m, _)| inside(m))
        .map(|(m, named)| {
            (
                m.clone(),
                named.iter().filter(|n| inside(n)).cloned().collect(),
            )
        })
        .collect()
}

fn show(component: &[ModPath]) -> String {
    component
        .iter()
        .map(|m| m.join("::"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn no_room_imports_in_a_circle() {
    let graph = import_graph(&src());
    let mut found = Vec::new();
    for room in ROOMS {
        let room_graph = room_graph(&graph, room);
        for component in circles(&room_graph) {
            // The edges inside the circle: one of them is to go.
            let edges: Vec<String> = component
                .iter()
                .flat_map(|from| {
                    room_graph[from]
                        .iter()
                        .filter(|to| component.contains(to))
                        .map(move |to| format!("    {} -> {}", from.join("::"), to.join("::")))
                })
                .collect();
            found.push(format!(
                "src/{room}: {{{}}}\n{}",
                show(&component),
                edges.join("\n")
            ));
        }
    }
    assert!(
        found.is_empty(),
        "import circles among a room's files (each file of a circle names another of it; \
         break it by moving the shared piece down into a file of its own):\n{}",
        found.join("\n")
    );
}

/// The check sees a circle: two files of a room that import each other, written to a scratch
/// crate tree, are found (a checker that finds nothing proves nothing).
#[test]
fn the_check_finds_a_circle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    std::fs::create_dir_all(src.join("replay")).expect("mkdir");
    std::fs::write(src.join("lib.rs"), "pub mod replay;\n").expect("write");
    std::fs::write(
        src.join("replay/mod.rs"),
        "pub mod cut;\npub mod format;\npub mod store;\npub mod verdict;\n",
    )
    .expect("write");
    std::fs::write(
        src.join("replay/format.rs"),
        "use super::store::Store;\npub struct Format;\npub fn f() { super::cut::cut() }\n",
    )
    .expect("write");
    std::fs::write(
        src.join("replay/store.rs"),
        "pub struct Store;\npub fn load() -> crate::replay::verdict::Verdict { todo!() }\n",
    )
    .expect("write");
    std::fs::write(
        src.join("replay/verdict.rs"),
        "pub struct Verdict(super::format::Format);\n#[cfg(test)]\nmod tests { use super::*; }\n",
    )
    .expect("write");
    // A test module may use any sibling: no circle of the code's.
    std::fs::write(
        src.join("replay/cut.rs"),
        "pub fn cut() {}\n#[cfg(test)]\nmod tests { use crate::replay::format::Format; }\n",
    )
    .expect("write");
    let found = circles(&room_graph(&import_graph(src), "replay"));
    assert_eq!(
        found.iter().map(|c| show(c)).collect::<Vec<_>>(),
        vec!["replay::format, replay::store, replay::verdict".to_string()]
    );
}

/// `report`'s rooms, bottom up: each may import only the rooms before it (docs: CONTRIBUTING's
/// map). A renderer that writes a file, or a record that draws itself in HTML, lands here.
const REPORT_FLOORS: &[&str] = &["ground", "records", "renderers", "store", "live"];

/// The imports between `report`'s rooms that run up (or sideways) instead of down.
fn report_floor_breaches(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<String> {
    let floor = |m: &ModPath| -> Option<usize> {
        (m.first().map(String::as_str) == Some("report"))
            .then(|| m.get(1))
            .flatten()
            .and_then(|room| REPORT_FLOORS.iter().position(|f| f == room))
    };
    let mut breaches = Vec::new();
    for (from, named) in graph {
        let Some(from_floor) = floor(from) else {
            continue;
        };
        for to in named {
            if let Some(to_floor) = floor(to) {
                if to_floor > from_floor {
                    breaches.push(format!("    {} -> {}", from.join("::"), to.join("::")));
                }
            }
        }
    }
    breaches
}

#[test]
fn report_rooms_import_only_the_rooms_below() {
    let breaches = report_floor_breaches(&import_graph(&src()));
    assert!(
        breaches.is_empty(),
        "imports that run up report's floors ({}; each room may use only those before it):\n{}",
        REPORT_FLOORS.join(" < "),
        breaches.join("\n")
    );
}

/// The floor check sees a record that imports a renderer.
#[test]
fn the_floor_check_finds_an_import_that_runs_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    for room in ["records", "renderers"] {
        std::fs::create_dir_all(src.join("report").join(room)).expect("mkdir");
    }
    std::fs::write(src.join("lib.rs"), "pub mod report;\n").expect("write");
    std::fs::write(
        src.join("report/mod.rs"),
        "pub mod records;\npub mod renderers;\n",
    )
    .expect("write");
    std::fs::write(src.join("report/records/mod.rs"), "pub mod suite;\n").expect("write");
    std::fs::write(src.join("report/renderers/mod.rs"), "pub mod html;\n").expect("write");
    std::fs::write(
        src.join("report/records/suite.rs"),
        "use crate::report::renderers::html::escape;\npub struct Suite;\n",
    )
    .expect("write");
    std::fs::write(
        src.join("report/renderers/html.rs"),
        "use crate::report::records::suite::Suite;\npub fn escape() {}\n",
    )
    .expect("write");
    assert_eq!(
        report_floor_breaches(&import_graph(src)),
        vec!["    report::records::suite -> report::renderers::html".to_string()]
    );
}

/// What the binary may import of the library: the subcommands, the runner and the plain data.
/// Anything else it needs belongs in `src/cli/`, where it can be tested.
const BIN_MAY_IMPORT: &[&[&str]] = &[&["cli"], &["actors", "run"], &["model"]];

/// Every library path (`bugatti::…`) the files under `bin` name, in `use`s and in code.
fn bin_imports(bin: &Path) -> BTreeSet<ModPath> {
    struct Crate(BTreeSet<ModPath>);
    fn flatten(prefix: &mut ModPath, tree: &syn::UseTree, out: &mut BTreeSet<ModPath>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                flatten(prefix, &p.tree, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut path = prefix.clone();
                if n.ident != "self" {
                    path.push(n.ident.to_string());
                }
                out.insert(path);
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                path.push(r.ident.to_string());
                out.insert(path);
            }
            syn::UseTree::Glob(_) => {
                out.insert(prefix.clone());
            }
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    flatten(prefix, tree, out);
                }
            }
        }
    }
    impl<'ast> Visit<'ast> for Crate {
        fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
            flatten(&mut Vec::new(), &item.tree, &mut self.0);
        }
        fn visit_path(&mut self, path: &'ast syn::Path) {
            self.0
                .insert(path.segments.iter().map(|s| s.ident.to_string()).collect());
            syn::visit::visit_path(self, path);
        }
    }
    let mut found = Crate(BTreeSet::new());
    for entry in walkdir::WalkDir::new(bin)
        .into_iter()
        .filter_map(Result::ok)
    {
        if entry.path().extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).expect("read a binary's file");
        let file = syn::parse_file(&text).expect("parse a binary's file");
        found.visit_file(&file);
    }
    found
        .0
        .into_iter()
        .filter(|p| p.first().map(String::as_str) == Some("bugatti"))
        .map(|p| p[1..].to_vec())
        .collect()
}

/// The library paths the binary names outside [`BIN_MAY_IMPORT`].
fn bin_breaches(bin: &Path) -> Vec<String> {
    bin_imports(bin)
        .into_iter()
        .filter(|path| {
            // `bugatti::actors` alone leads only on to `run`; `bugatti` alone to nothing.
            !BIN_MAY_IMPORT.iter().any(|allowed| {
                path.len() >= allowed.len() && allowed.iter().zip(path).all(|(a, p)| a == p)
            })
        })
        .map(|path| format!("    bugatti::{}", path.join("::")))
        .collect()
}

#[test]
fn the_binary_imports_only_the_cli_the_runner_and_the_model() {
    let breaches = bin_breaches(&src().join("bin"));
    assert!(
        breaches.is_empty(),
        "src/bin/ may import only bugatti::cli, bugatti::actors::run and bugatti::model; move \
         the rest into src/cli/:\n{}",
        breaches.join("\n")
    );
}

/// The binary check sees a reach past the CLI, in a `use` group and in a path in code.
#[test]
fn the_binary_check_finds_a_reach_past_the_cli() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("supervisor.rs"),
        "use bugatti::{cli, model::options::RunOptions, replay::store};\n\
         fn main() { cli::start(); bugatti::actors::run::run_suite(); \
         bugatti::providers::locate::find(); }\n",
    )
    .expect("write");
    assert_eq!(
        bin_breaches(dir.path()),
        vec![
            "    bugatti::providers::locate::find".to_string(),
            "    bugatti::replay::store".to_string()
        ]
    );
}

/// The imports from `actors` into `replay` that do not go through `replay::session`, the one
/// door replay gives the session (docs: CONTRIBUTING's map): a session that reaches replay's
/// browser, store or format itself has taken replay's work back into `actors`.
fn actor_replay_breaches(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<String> {
    let in_room = |m: &ModPath, room: &str| m.first().map(String::as_str) == Some(room);
    let through_session = |m: &ModPath| m.get(1).map(String::as_str) == Some("session");
    graph
        .iter()
        .filter(|(from, _)| in_room(from, "actors"))
        .flat_map(|(from, named)| {
            named
                .iter()
                .filter(|to| in_room(to, "replay") && !through_session(to))
                .map(move |to| format!("    {} -> {}", from.join("::"), to.join("::")))
        })
        .collect()
}

#[test]
fn actors_reach_replay_only_through_its_session() {
    let breaches = actor_replay_breaches(&import_graph(&src()));
    assert!(
        breaches.is_empty(),
        "actors import replay past `replay::session` (give the session what it needs there):\n{}",
        breaches.join("\n")
    );
}

/// The check sees an actor reaching past `replay::session`.
#[test]
fn the_replay_door_check_finds_an_actor_past_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    for room in ["actors", "replay"] {
        std::fs::create_dir_all(src.join(room)).expect("mkdir");
    }
    std::fs::write(src.join("lib.rs"), "pub mod actors;\npub mod replay;\n").expect("write");
    std::fs::write(
        src.join("replay/mod.rs"),
        "pub mod browser;\npub mod session;\n",
    )
    .expect("write");
    std::fs::write(src.join("replay/browser.rs"), "pub struct Client;\n").expect("write");
    std::fs::write(src.join("replay/session.rs"), "pub struct Session;\n").expect("write");
    std::fs::write(src.join("actors/mod.rs"), "pub mod session;\n").expect("write");
    std::fs::write(
        src.join("actors/session.rs"),
        "use crate::replay::session::Session;\npub fn f(_: crate::replay::browser::Client) {}\n",
    )
    .expect("write");
    assert_eq!(
        actor_replay_breaches(&import_graph(src)),
        vec!["    actors::session -> replay::browser".to_string()]
    );
}

/// What `replay` must not import: it is a stage the session calls, fed the agent's tool calls as
/// model data; it writes its recordings through `crate::atomic`, not through the reports.
const REPLAY_NEVER_IMPORTS: &[&str] = &["report", "providers"];

/// The imports from `room`'s files into any of `forbidden` (top-level modules of the crate).
fn imports_into(
    graph: &BTreeMap<ModPath, BTreeSet<ModPath>>,
    room: &str,
    forbidden: &[&str],
) -> Vec<String> {
    let first = |m: &ModPath| m.first().cloned().unwrap_or_default();
    graph
        .iter()
        .filter(|(from, _)| first(from) == room)
        .flat_map(|(from, named)| {
            named
                .iter()
                .filter(|to| forbidden.contains(&first(to).as_str()))
                .map(move |to| format!("    {} -> {}", from.join("::"), to.join("::")))
        })
        .collect()
}

#[test]
fn replay_imports_neither_report_nor_providers() {
    let found = imports_into(&import_graph(&src()), "replay", REPLAY_NEVER_IMPORTS);
    assert!(
        found.is_empty(),
        "replay ↛ {}: these imports cross it (move the shared piece below both):\n{}",
        REPLAY_NEVER_IMPORTS.join(", "),
        found.join("\n")
    );
}

/// The rule sees a replay file that writes through a report module.
#[test]
fn the_replay_rule_finds_an_import_of_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    for room in ["replay", "report/ground"] {
        std::fs::create_dir_all(src.join(room)).expect("mkdir");
    }
    std::fs::write(src.join("lib.rs"), "pub mod replay;\npub mod report;\n").expect("write");
    std::fs::write(src.join("replay/mod.rs"), "pub mod store;\n").expect("write");
    std::fs::write(src.join("report/mod.rs"), "pub mod ground;\n").expect("write");
    std::fs::write(src.join("report/ground/mod.rs"), "pub mod atomic;\n").expect("write");
    std::fs::write(src.join("report/ground/atomic.rs"), "pub fn write() {}\n").expect("write");
    std::fs::write(
        src.join("replay/store.rs"),
        "pub fn save() { crate::report::ground::atomic::write() }\n",
    )
    .expect("write");
    assert_eq!(
        imports_into(&import_graph(src), "replay", REPLAY_NEVER_IMPORTS),
        vec!["    replay::store -> report::ground::atomic".to_string()]
    );
}
