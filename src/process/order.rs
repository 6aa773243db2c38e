//! The order harness commands start in: layers of commands whose dependencies are all satisfied,
//! started together. Setup (short-lived) commands come first: a long-lived command implicitly
//! waits for every short-lived command that does not itself depend on it, so `migrate` runs before
//! `server` unless `migrate` needs a database server started by the harness.

use super::error::HarnessError;
use super::spec::{CommandKind, CommandSpec};
use std::collections::{HashMap, HashSet};

/// Indices into `specs`, layer by layer.
pub fn start_layers(specs: &[CommandSpec]) -> Result<Vec<Vec<usize>>, HarnessError> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, spec) in specs.iter().enumerate() {
        if index.insert(spec.name.as_str(), i).is_some() {
            return Err(HarnessError::DuplicateName(spec.name.clone()));
        }
    }
    let mut explicit: Vec<Vec<usize>> = Vec::with_capacity(specs.len());
    for spec in specs {
        let mut deps = Vec::new();
        for dep in &spec.depends_on {
            let &d = index
                .get(dep.as_str())
                .ok_or_else(|| HarnessError::UnknownDependency {
                    command: spec.name.clone(),
                    dependency: dep.clone(),
                })?;
            deps.push(d);
        }
        explicit.push(deps);
    }
    if let Some(chain) = find_cycle(&explicit) {
        return Err(HarnessError::DependencyCycle {
            chain: chain.iter().map(|&i| specs[i].name.clone()).collect(),
        });
    }
    let mut effective: Vec<HashSet<usize>> = explicit
        .iter()
        .map(|d| d.iter().copied().collect())
        .collect();
    for (l, spec) in specs.iter().enumerate() {
        if spec.kind != CommandKind::LongLived {
            continue;
        }
        for (s, other) in specs.iter().enumerate() {
            if other.kind == CommandKind::ShortLived && !reaches(&explicit, s, l) {
                effective[l].insert(s);
            }
        }
    }
    let mut done: HashSet<usize> = HashSet::new();
    let mut layers = Vec::new();
    while done.len() < specs.len() {
        let layer: Vec<usize> = (0..specs.len())
            .filter(|i| !done.contains(i) && effective[*i].iter().all(|d| done.contains(d)))
            .collect();
        if layer.is_empty() {
            // Only the implicit setup-first edges can close a cycle here: name what is stuck.
            return Err(HarnessError::DependencyCycle {
                chain: (0..specs.len())
                    .filter(|i| !done.contains(i))
                    .map(|i| specs[i].name.clone())
                    .collect(),
            });
        }
        done.extend(&layer);
        layers.push(layer);
    }
    Ok(layers)
}

/// Whether `from` depends on `to`, directly or not.
fn reaches(deps: &[Vec<usize>], from: usize, to: usize) -> bool {
    let mut stack = vec![from];
    let mut seen = HashSet::new();
    while let Some(n) = stack.pop() {
        if n == to {
            return true;
        }
        if seen.insert(n) {
            stack.extend(&deps[n]);
        }
    }
    false
}

/// A dependency cycle as a chain that starts and ends with the same command.
fn find_cycle(deps: &[Vec<usize>]) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(
        n: usize,
        deps: &[Vec<usize>],
        marks: &mut [Mark],
        path: &mut Vec<usize>,
    ) -> Option<Vec<usize>> {
        marks[n] = Mark::Open;
        path.push(n);
        for &d in &deps[n] {
            match marks[d] {
                Mark::Open => {
                    let start = path.iter().position(|&p| p == d).unwrap_or(0);
                    let mut chain = path[start..].to_vec();
                    chain.push(d);
                    return Some(chain);
                }
                Mark::New => {
                    if let Some(c) = visit(d, deps, marks, path) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks[n] = Mark::Done;
        None
    }
    let mut marks = vec![Mark::New; deps.len()];
    for n in 0..deps.len() {
        if marks[n] == Mark::New {
            if let Some(c) = visit(n, deps, &mut marks, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, kind: CommandKind, deps: &[&str]) -> CommandSpec {
        let mut s = CommandSpec::new(name, kind, "true", "/", "/tmp/x.log");
        s.depends_on = deps.iter().map(|d| d.to_string()).collect();
        s
    }

    fn names(specs: &[CommandSpec], layers: &[Vec<usize>]) -> Vec<Vec<String>> {
        layers
            .iter()
            .map(|l| l.iter().map(|&i| specs[i].name.clone()).collect())
            .collect()
    }

    #[test]
    fn setup_first_then_servers_in_dependency_order() {
        use CommandKind::*;
        let specs = vec![
            spec("server", LongLived, &["db"]),
            spec("db", LongLived, &[]),
            spec("migrate", ShortLived, &["db"]),
            spec("seed", ShortLived, &["migrate"]),
            spec("assets", ShortLived, &[]),
        ];
        let layers = start_layers(&specs).expect("orders");
        assert_eq!(
            names(&specs, &layers),
            vec![
                vec!["assets".to_string()],
                vec!["db".to_string()],
                vec!["migrate".to_string()],
                vec!["seed".to_string()],
                vec!["server".to_string()],
            ]
        );
    }

    #[test]
    fn cycles_and_unknown_dependencies_are_named() {
        use CommandKind::*;
        let specs = vec![
            spec("a", LongLived, &["b"]),
            spec("b", LongLived, &["c"]),
            spec("c", LongLived, &["a"]),
        ];
        let err = start_layers(&specs).expect_err("cycle").to_string();
        assert!(err.contains("a -> b -> c -> a"), "{err}");
        let specs = vec![spec("a", LongLived, &["nope"])];
        let err = start_layers(&specs).expect_err("unknown").to_string();
        assert!(err.contains("`a` depends on `nope`"), "{err}");
    }
}
