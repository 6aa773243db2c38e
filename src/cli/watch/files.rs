//! The files `supervisor watch` listens to, through `notify` (inotify on Linux): every folder of
//! the project root one by one (so that the folders discovery never enters, `.git`, `target`,
//! `node_modules`, and the watch's own outputs cost no watch and send no event), the folders of
//! `[watch] paths` that lie elsewhere, and each new folder as it appears. What it hears goes to
//! the watch loop as [`Heard`] on one channel, with the signals.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;

use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::model::load::Suite;
use crate::model::paths::{is_skipped_dir, normalize};
use crate::model::touched::WatchScope;
use crate::model::watch::glob_base;

/// What the watch loop waits on: a file system event or a signal.
#[derive(Debug)]
pub enum Heard {
    Files(notify::Result<Event>),
    /// An ending signal (its number): the watch stops.
    Signal(i32),
}

/// The watches in place.
pub struct Files {
    watcher: RecommendedWatcher,
    /// Folders watched one by one (not recursively).
    folders: BTreeSet<PathBuf>,
    /// Folders outside the project root watched with all below them (`[watch] paths`).
    trees: BTreeSet<PathBuf>,
}

impl Files {
    /// Watches the project root of `suite` and the folders `[watch] paths` need; events go to
    /// `to`.
    pub fn watch(suite: &Suite, scope: &WatchScope, to: Sender<Heard>) -> notify::Result<Self> {
        let watcher = notify::recommended_watcher(move |event| {
            let _ = to.send(Heard::Files(event));
        })?;
        let mut files = Self {
            watcher,
            folders: BTreeSet::new(),
            trees: BTreeSet::new(),
        };
        files.add_folder_tree(&suite.project_root, scope)?;
        files.add_app_folders(suite, scope)?;
        Ok(files)
    }

    /// How many folders are watched.
    pub fn count(&self) -> usize {
        self.folders.len() + self.trees.len()
    }

    /// Watches the folders a (possibly changed) `[watch] paths` needs beyond the project root.
    pub fn add_app_folders(&mut self, suite: &Suite, scope: &WatchScope) -> notify::Result<()> {
        for glob in &suite.base.watch.paths.value {
            let base = normalize(&suite.project_root.join(glob_base(glob)));
            let folder = if base.is_dir() {
                base
            } else {
                match base.parent() {
                    Some(parent) if parent.is_dir() => parent.to_path_buf(),
                    _ => continue,
                }
            };
            let covered =
                self.folders.contains(&folder) || self.trees.iter().any(|t| folder.starts_with(t));
            if !covered && !scope.is_output(&folder) {
                self.watcher.watch(&folder, RecursiveMode::Recursive)?;
                self.trees.insert(folder);
            }
        }
        Ok(())
    }

    /// Watches `top` and every folder below it that discovery would enter, one by one; answers
    /// the files found there (a folder that appeared may hold files written before its watch).
    fn add_folder_tree(&mut self, top: &Path, scope: &WatchScope) -> notify::Result<Vec<PathBuf>> {
        let mut found = Vec::new();
        let walk = walkdir::WalkDir::new(top)
            .follow_links(false)
            .into_iter()
            .filter_entry(|e| {
                e.depth() == 0
                    || !e.file_type().is_dir()
                    || !(is_skipped_dir(&e.file_name().to_string_lossy())
                        || scope.is_output(e.path()))
            });
        for entry in walk.filter_map(Result::ok) {
            if entry.file_type().is_dir() {
                if self.folders.insert(entry.path().to_path_buf()) {
                    self.watcher
                        .watch(entry.path(), RecursiveMode::NonRecursive)?;
                }
            } else {
                found.push(entry.path().to_path_buf());
            }
        }
        Ok(found)
    }

    /// The paths an event names that were written, made, renamed or removed (not only read, nor
    /// only touched in their metadata); a new folder under a watched one is watched too, and
    /// the files already in it count as made.
    pub fn written(&mut self, event: Event, scope: &WatchScope) -> Vec<PathBuf> {
        let counts = match event.kind {
            EventKind::Create(_) | EventKind::Remove(_) => true,
            EventKind::Modify(ModifyKind::Metadata(_)) => false,
            EventKind::Modify(_) => true,
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            EventKind::Access(_) | EventKind::Any | EventKind::Other => false,
        };
        if !counts {
            return Vec::new();
        }
        let mut paths = Vec::new();
        for path in event.paths {
            let path = normalize(&path);
            if scope.is_output(&path) {
                continue;
            }
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            let new_folder = matches!(
                event.kind,
                EventKind::Create(_) | EventKind::Modify(ModifyKind::Name(_))
            ) && path.is_dir()
                && !name.as_deref().is_some_and(is_skipped_dir)
                && path.parent().is_some_and(|p| self.folders.contains(p));
            if new_folder {
                match self.add_folder_tree(&path, scope) {
                    Ok(found) => paths.extend(found),
                    Err(e) => tracing::warn!("cannot watch {}: {e}", path.display()),
                }
            }
            if !path.exists() {
                // inotify drops the watch of a folder removed or renamed away: one made again
                // is watched anew.
                self.folders.remove(&path);
            }
            paths.push(path);
        }
        paths
    }
}
