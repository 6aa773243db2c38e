//! The artifact directory as a store of suites: list them, load one back from disk (summary.json
//! and its runs' run.json), merge shard suites into one, prune old ones (`supervisor clean`,
//! `[supervisor] keep_runs`). (That `--junit` / `--json` / `--html` targets are writable before
//! anything runs is `writable.rs`'s check, named here too.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::model::artifacts::{self, RunPaths, SuitePaths};
use crate::model::ids::{RunId, SuiteId};
use crate::model::user_file::UserFileError;
use crate::report::ground::confined;
use crate::report::ground::error::ReportError;
use crate::report::records::history::{self, HistoryEntry, Selection};
use crate::report::records::run_record::RunRecord;
use crate::report::records::suite::SuiteSummary;
use crate::report::store::suite_files::{RenderedSuite, SuiteInput};
pub use crate::report::store::writable::{
    check_dir_writable, check_writable, prepare_dir, MadeFolders, Unwritable,
};

/// Makes `dir` and its missing parents owner-only (0700), as every folder of the artifact
/// directory is: transcripts, logs and reports hold what the app and the agent printed.
pub fn create_owner_only(dir: &Path) -> std::io::Result<()> {
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(dir)
}

/// Why a suite could not be read back (`report`) or shard suites merged (`merge`). Users and
/// scripts read these messages: they are the ones these errors always had.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// summary.json could not be opened or read (also: not a regular file, too big).
    #[error(transparent)]
    Unreadable(#[from] UserFileError),
    #[error("{} is not a suite summary: {source}", path.display())]
    NotASummary {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("no suite in {}: run `supervisor start` first", suites.display())]
    NoSuite { suites: PathBuf },
    #[error("no suite `{id}` in {}", suites.display())]
    NoSuchSuite { id: String, suites: PathBuf },
    #[error("`{id}` names {count} suites; give more of the id")]
    Ambiguous { id: String, count: usize },
    #[error("merge needs at least one suite directory")]
    NothingToMerge,
    /// Two whole suites are no CI run: their tests would read as retries of each other.
    /// `one`, `two`: a suite as `<suite id> (<folder>)`, as are the suites named below.
    #[error("merge joins the shards of one CI run, and these suites are not shards: {one} and {two} ran without --shard")]
    NotShards { one: String, two: String },
    #[error("cannot merge a shard with a suite that is not one: {sharded} is shard {shard}, {plain} ran without --shard")]
    ShardWithWhole {
        sharded: String,
        shard: String,
        plain: String,
    },
    /// `first_is`, `other_is`: `shard K/N of paths [...] tags [...]`.
    #[error("these suites are shards of different selections: {first} is {first_is}, {other} is {other_is}")]
    DifferentSelections {
        first: String,
        first_is: String,
        other: String,
        other_is: String,
    },
    #[error(
        "{file} ran in two shards, {before} and {after}{}",
        if *split_differently {
            ": the shards split the suite differently (their histories differed; give every shard the same --history)"
        } else {
            ""
        }
    )]
    RanTwice {
        file: String,
        before: String,
        after: String,
        /// The shards' split digests differ.
        split_differently: bool,
    },
    #[error("cannot create {}: {source}", path.display())]
    CreateOut {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A merged suite file could not be written.
    #[error(transparent)]
    Write(#[from] ReportError),
}

/// One suite directory found under `<artifact_dir>/suites`.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteDir {
    pub suite_id: SuiteId,
    pub dir: PathBuf,
    /// From summary.json, when it is readable.
    pub started_at: Option<DateTime<Utc>>,
}

/// The suites under `artifact_dir`, oldest first (suite ids are UUIDv7: they sort by time).
pub fn list_suites(artifact_dir: &Path) -> Vec<SuiteDir> {
    let Ok(entries) = std::fs::read_dir(artifacts::suites_dir(artifact_dir)) else {
        return Vec::new();
    };
    let mut suites: Vec<SuiteDir> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| {
            let dir = e.path();
            let started_at = std::fs::read(SuitePaths::new(&dir).summary_json())
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .and_then(|v| v["started_at"].as_str().map(str::to_string))
                .and_then(|t| t.parse().ok());
            SuiteDir {
                suite_id: SuiteId::new(e.file_name().to_string_lossy()),
                dir,
                started_at,
            }
        })
        .collect();
    suites.sort_by(|a, b| a.suite_id.cmp(&b.suite_id));
    suites
}

/// A suite read back from disk.
#[derive(Debug, Clone)]
pub struct LoadedSuite {
    pub dir: PathBuf,
    pub summary: SuiteSummary,
    /// Every attempt whose run.json was found, `run_dir` pointing where it was found.
    pub records: Vec<RunRecord>,
    /// Runs named by summary.json whose run.json was not found.
    pub missing_runs: Vec<RunId>,
}

/// Where run `run_id` of the suite in `suite_dir` is: beside it (`../../runs/<id>`, the layout
/// of `.bugatti/` and of a CI artifact that copied it), else where summary.json says. The suite
/// may come from an untrusted shard artifact: the id must be a plain id and every candidate stay
/// inside the artifact directory the suite is in (`<root>/suites/<id>`; a suite folder elsewhere
/// is its own root), with no symbolic link on the way (see docs/ci.md).
fn find_run(suite_dir: &Path, run_id: &RunId, report: &str) -> Option<PathBuf> {
    use std::ffi::OsString;
    if !confined::is_plain_id(run_id.as_str()) {
        return None;
    }
    let stored = suite_dir
        .parent()
        .filter(|parent| parent.file_name().is_some_and(artifacts::is_suites_folder))
        .and_then(|parent| Some((parent.parent()?, suite_dir.file_name()?)));
    let (root, from): (PathBuf, Vec<OsString>) = match stored {
        Some((root, name)) => (root.to_path_buf(), artifacts::suite_dir_parts(name).into()),
        None => (suite_dir.to_path_buf(), Vec::new()),
    };
    let in_runs = |mut at: Vec<OsString>| {
        at.extend(artifacts::run_dir_parts(run_id));
        at
    };
    let mut candidates = vec![in_runs(Vec::new()), in_runs(from.clone())];
    // summary.json's `report` is relative to the suite folder.
    if let Ok(mut at) = confined::walk_within(&from, report) {
        at.pop();
        candidates.push(at);
    }
    candidates
        .into_iter()
        .filter_map(|parts| confined::dir_below(&root, &parts).ok())
        .find(|d| confined::open_file(d, artifacts::RUN_JSON).is_ok())
        .map(|d| std::path::absolute(&d).unwrap_or(d))
}

/// The largest summary.json read (a suite of thousands of tests is a few megabytes).
const SUMMARY_MAX: u64 = 256 * 1024 * 1024;

/// Reads summary.json of `dir` and the run.json of every attempt it names.
pub fn load_suite(dir: &Path) -> Result<LoadedSuite, SuiteError> {
    let path = SuitePaths::new(dir).summary_json();
    // A shard's artifact is shaped by whoever shaped the pull request: a FIFO or a huge file
    // there is refused at once.
    let bytes = crate::model::user_file::read(&path, SUMMARY_MAX)?;
    let summary: SuiteSummary = serde_json::from_slice(&bytes)
        .map_err(|source| SuiteError::NotASummary { path, source })?;
    let mut records = Vec::new();
    let mut missing_runs = Vec::new();
    for test in &summary.tests {
        for attempt in &test.history {
            let found = find_run(dir, &attempt.run_id, &attempt.report).and_then(|run_dir| {
                let bytes = confined::read(&run_dir, artifacts::RUN_JSON).ok()?;
                let mut record: RunRecord = serde_json::from_slice(&bytes).ok()?;
                // The record is the attempt's own, and its directory is where it was found,
                // never where it says it is.
                (record.identity.run_id == attempt.run_id).then_some(())?;
                record.identity.run_dir = run_dir.display().to_string();
                Some(record)
            });
            match found {
                Some(r) => records.push(r),
                None => missing_runs.push(attempt.run_id.clone()),
            }
        }
    }
    Ok(LoadedSuite {
        dir: std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
        summary,
        records,
        missing_runs,
    })
}

/// The suite `which` names under `artifact_dir`: `last` (or none), a suite id, or a unique prefix.
pub fn resolve_suite(artifact_dir: &Path, which: Option<&str>) -> Result<SuiteDir, SuiteError> {
    let suites = list_suites(artifact_dir);
    match which {
        None | Some("last") => suites.last().cloned().ok_or_else(|| SuiteError::NoSuite {
            suites: artifacts::suites_dir(artifact_dir),
        }),
        Some(id) => {
            let hits: Vec<&SuiteDir> = suites
                .iter()
                .filter(|s| s.suite_id.as_str().starts_with(id))
                .collect();
            match hits.as_slice() {
                [one] => Ok((*one).clone()),
                [] => Err(SuiteError::NoSuchSuite {
                    id: id.to_string(),
                    suites: artifacts::suites_dir(artifact_dir),
                }),
                _ => Err(SuiteError::Ambiguous {
                    id: id.to_string(),
                    count: hits.len(),
                }),
            }
        }
    }
}

/// What `merge` wrote.
#[derive(Debug, Clone)]
pub struct Merged {
    pub summary: SuiteSummary,
    pub out: PathBuf,
    pub notes: Vec<String>,
}

/// Merges shard suites into one suite directory `out`: summary.json, summary.md, junit.xml,
/// report.html (links into each shard's runs). A root test present in several inputs keeps the
/// attempts of all of them, in input order (as retries would be).
pub fn merge(
    dirs: &[PathBuf],
    out: &Path,
    history_file: Option<&Path>,
    allow_partial: bool,
) -> Result<Merged, SuiteError> {
    if dirs.is_empty() {
        return Err(SuiteError::NothingToMerge);
    }
    let mut loaded = Vec::new();
    for d in dirs {
        loaded.push(load_suite(d)?);
    }
    let (mut notes, gaps) = shards_belong_together(&loaded)?;
    let mut records: Vec<RunRecord> = Vec::new();
    let mut not_run: Vec<String> = Vec::new();
    let mut strict = false;
    let mut ids = Vec::new();
    for l in &loaded {
        strict |= l.summary.strict_warnings;
        ids.push(l.summary.suite_id.clone());
        not_run.extend(l.summary.not_run.iter().cloned());
        for id in &l.missing_runs {
            notes.push(format!(
                "run {id} of suite {} was not found beside {}: its test is shown from the shard's summary only",
                l.summary.suite_id,
                l.dir.display()
            ));
        }
        // A shard's later attempts number on after the attempts already merged for that test.
        for r in &l.records {
            let before = records
                .iter()
                .filter(|x| x.identity.test_file == r.identity.test_file)
                .map(|x| x.identity.attempt)
                .max()
                .unwrap_or(0);
            let mut r = r.clone();
            if before > 0 {
                r.identity.attempt += before;
            }
            records.push(r);
        }
    }
    let started = loaded
        .iter()
        .map(|l| l.summary.started_at)
        .min()
        .unwrap_or_else(Utc::now);
    let finished = loaded
        .iter()
        .map(|l| l.summary.finished_at)
        .max()
        .unwrap_or_else(Utc::now);
    // In an artifact directory (`.bugatti/suites/<id>`) the folder names the suite; else a new id.
    let in_store = out
        .parent()
        .and_then(Path::file_name)
        .is_some_and(artifacts::is_suites_folder);
    let merged_id = match out.file_name() {
        Some(name) if in_store => SuiteId::new(name.to_string_lossy()),
        _ => SuiteId::fresh(),
    };
    not_run.extend(gaps.not_run.keys().cloned());
    let mut summary =
        SuiteSummary::build(&merged_id, started, finished, strict, &records, &not_run);
    summary.fail_on_flaky = loaded.iter().any(|l| l.summary.fail_on_flaky);
    summary.cost_cap_usd = loaded.iter().find_map(|l| l.summary.cost_cap_usd);
    if let Some(cap) = summary.cost_cap_usd {
        let total = summary.cost_usd.unwrap_or(0.0);
        notes.push(format!(
            "cost: the run spent ${total:.4} of its [supervisor] max_cost_usd ${cap:.4}{}",
            if total > cap {
                " (over: the steps in flight when the cap was reached)"
            } else {
                ""
            }
        ));
    }
    summary.partial_allowed = allow_partial;
    (summary.commit, summary.dirty) = common_revision(loaded.iter().map(|l| &l.summary));
    add_what_only_the_shards_say(&mut summary, &loaded, gaps);
    for shard in &summary.missing_shards {
        notes.push(format!(
            "shard {shard} missing: its tests were not run{}",
            if allow_partial {
                " (--allow-partial: the merge exits by the tests that ran)"
            } else {
                ""
            }
        ));
    }
    // Shards of one selection: the merge is that selection, whole.
    let of_shards = loaded.iter().find_map(|l| l.summary.shard.as_ref());
    let selection = Selection {
        merged: ids.clone(),
        paths: of_shards.map(|s| s.paths.clone()).unwrap_or_default(),
        tags: of_shards.map(|s| s.tags.clone()).unwrap_or_default(),
        grep: of_shards.and_then(|s| s.grep.clone()),
        grep_invert: of_shards.and_then(|s| s.grep_invert.clone()),
        filter: of_shards.and_then(|s| s.filter.clone()),
        only_changed: of_shards.and_then(|s| s.only_changed.clone()),
        // The shards ran each test as many times as the selection asked.
        repeat: records.iter().map(|r| r.identity.repeat).max().unwrap_or(1),
        partial: !summary.missing_shards.is_empty(),
        ..Selection::default()
    };
    std::fs::create_dir_all(out).map_err(|source| SuiteError::CreateOut {
        path: out.to_path_buf(),
        source,
    })?;
    let out = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
    let mut entry = HistoryEntry::of(&summary, &records, &selection);
    entry.suite_dir = Some(out.display().to_string());
    // One history entry for the whole CI run, compared with the previous merge: in `--history
    // FILE`, else beside `--out` when it is a project's suites folder.
    let history_file = history_file
        .map(Path::to_path_buf)
        .or_else(|| in_store.then(|| history::history_path(&SuitePaths::new(&out).artifact_dir())));
    let mut trends = None;
    if let Some(file) = history_file {
        let earlier = history::read(&file);
        summary.changes = history::compare(&earlier, &entry);
        trends = crate::report::records::trends::Trends::of(&earlier, &entry);
        if let Err(e) = history::append(&file, &entry) {
            notes.push(e.to_string());
        }
    }
    let ids: Vec<&str> = ids.iter().map(SuiteId::as_str).collect();
    notes.insert(
        0,
        format!("merged from {} suites: {}", ids.len(), ids.join(", ")),
    );
    write_merged(&SuiteInput {
        dir: &out,
        summary: &summary,
        records: &records,
        notes: &notes,
        trends: trends.as_ref(),
        // No secret of the shards' runs is known here: theirs were redacted when they wrote.
        redactor: &crate::report::ground::scrub::Redactor::new([]),
    })?;
    Ok(Merged {
        summary,
        out,
        notes,
    })
}

/// What the merged records cannot tell: a test whose run.json was not found still counts, as its
/// shard's summary says; the tests of a missing shard are listed as not run, with why (see
/// docs/ci.md).
fn add_what_only_the_shards_say(
    summary: &mut SuiteSummary,
    loaded: &[LoadedSuite],
    gaps: crate::report::records::merge_gaps::Gaps,
) {
    for l in loaded {
        for test in &l.summary.tests {
            if !summary.tests.iter().any(|t| t.test_file == test.test_file) {
                summary.totals.count(test.outcome);
                if test.flaky {
                    summary.totals.flaky += 1;
                }
                summary.tests.push(test.clone());
            }
        }
    }
    summary.tests.sort_by(|a, b| a.test_file.cmp(&b.test_file));
    // Tests of a missing shard listed as not run, with why (see docs/ci.md).
    summary
        .not_run
        .retain(|f| !summary.tests.iter().any(|t| &t.test_file == f));
    summary.totals.total -= summary.totals.not_run;
    summary.totals.not_run = summary.not_run.len();
    summary.totals.total += summary.totals.not_run;
    summary.not_run_reasons = gaps
        .not_run
        .into_iter()
        .filter(|(f, _)| summary.not_run.contains(f))
        .collect();
    summary.missing_shards = gaps.missing_shards;
}

/// The merged suite's files; the first that could not be written ends the merge.
fn write_merged(input: &SuiteInput<'_>) -> Result<(), SuiteError> {
    for (_, written) in RenderedSuite::render(input).write(input.dir) {
        written?;
    }
    Ok(())
}

/// docs/ci.md: suites that are shards (`--shard`) merge only with shards of the same selection
/// and N, each test in one of them. Returns notes (a shard missing, splits made from different
/// histories); an error when they cannot be one CI run.
fn shards_belong_together(
    loaded: &[LoadedSuite],
) -> Result<(Vec<String>, crate::report::records::merge_gaps::Gaps), SuiteError> {
    let mut notes = Vec::new();
    let sharded: Vec<(&LoadedSuite, &crate::model::shard::ShardInfo)> = loaded
        .iter()
        .filter_map(|l| l.summary.shard.as_ref().map(|s| (l, s)))
        .collect();
    let name = |l: &LoadedSuite| format!("{} ({})", l.summary.suite_id, l.dir.display());
    let Some((first, info)) = sharded.first() else {
        // Two whole suites are no CI run: their tests would read as retries of each other.
        if let [one, two, ..] = loaded {
            return Err(SuiteError::NotShards {
                one: name(one),
                two: name(two),
            });
        }
        return Ok((notes, Default::default()));
    };
    if let Some(plain) = loaded.iter().find(|l| l.summary.shard.is_none()) {
        return Err(SuiteError::ShardWithWhole {
            sharded: name(first),
            shard: info.shard.to_string(),
            plain: name(plain),
        });
    }
    for (l, other) in &sharded[1..] {
        if other.paths != info.paths || other.tags != info.tags || other.count() != info.count() {
            let describe = |s: &crate::model::shard::ShardInfo| {
                format!(
                    "shard {} of paths [{}] tags [{}]",
                    s.shard,
                    s.paths.join(" "),
                    s.tags.join(",")
                )
            };
            return Err(SuiteError::DifferentSelections {
                first: name(first),
                first_is: describe(info),
                other: name(l),
                other_is: describe(other),
            });
        }
    }
    let digests_differ = sharded.iter().any(|(_, s)| s.digest != info.digest);
    let mut owner: BTreeMap<&str, &LoadedSuite> = BTreeMap::new();
    for (l, _) in &sharded {
        let files = l
            .summary
            .tests
            .iter()
            .map(|t| t.test_file.as_str())
            .chain(l.summary.not_run.iter().map(String::as_str));
        for file in files {
            if let Some(before) = owner.insert(file, l) {
                return Err(SuiteError::RanTwice {
                    file: file.to_string(),
                    before: name(before),
                    after: name(l),
                    split_differently: digests_differ,
                });
            }
        }
    }
    if digests_differ {
        notes.push(
            "the shards split the suite from different histories (their split digests differ): a test may have run in no shard"
                .to_string(),
        );
    }
    let present = owner.keys().map(|f| f.to_string()).collect();
    let infos: Vec<&crate::model::shard::ShardInfo> = sharded.iter().map(|(_, s)| *s).collect();
    Ok((
        notes,
        crate::report::records::merge_gaps::find(&infos, &present),
    ))
}

/// What a prune removed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pruned {
    pub suites: Vec<SuiteId>,
    pub runs: usize,
    pub workspaces: usize,
    pub problems: Vec<String>,
}

/// One suite and the runs it owns, as retention sees them.
struct Unit {
    suite_id: SuiteId,
    suite_dir: Option<PathBuf>,
    runs: Vec<(PathBuf, Option<PathBuf>)>,
    at: Option<DateTime<Utc>>,
    /// A run of it has no outcome yet: a suite still running in another supervisor.
    running: bool,
}

/// Retention. Suites are removed whole (with their runs and the kept workspaces of those runs),
/// oldest first: `keep` (None or 0: no limit) counts run directories, and the newest suites
/// whose runs fit in it stay (the newest suite always stays); `older_than` removes suites that
/// started longer ago. Never a suite in `protect` or one still running. history.jsonl is kept:
/// a line per suite is small and is what later suites compare with.
pub fn prune(
    artifact_dir: &Path,
    keep: Option<usize>,
    older_than: Option<chrono::Duration>,
    protect: &[SuiteId],
) -> Pruned {
    let mut pruned = Pruned::default();
    // Fewer run directories than `keep` and no age limit: nothing can go, and reading every
    // run.json and summary.json to find that out cost each `start` time in proportion to the
    // history kept (200 runs by default).
    if older_than.is_none() {
        if let Some(keep) = keep.filter(|k| *k > 0) {
            let runs = std::fs::read_dir(artifacts::runs_dir(artifact_dir))
                .map(|entries| entries.count())
                .unwrap_or(0);
            if runs <= keep {
                return pruned;
            }
        }
    }
    let mut units: std::collections::BTreeMap<SuiteId, Unit> = std::collections::BTreeMap::new();
    for s in list_suites(artifact_dir) {
        units.insert(
            s.suite_id.clone(),
            Unit {
                suite_id: s.suite_id,
                suite_dir: Some(s.dir),
                runs: Vec::new(),
                at: s.started_at,
                running: false,
            },
        );
    }
    if let Ok(entries) = std::fs::read_dir(artifacts::runs_dir(artifact_dir)) {
        for e in entries.filter_map(Result::ok) {
            let dir = e.path();
            let value: Option<serde_json::Value> = std::fs::read(RunPaths::new(&dir).run_json())
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            let Some(value) = value else { continue };
            let Some(suite) = value["suite_id"].as_str().map(SuiteId::new) else {
                continue;
            };
            let started: Option<DateTime<Utc>> =
                value["started_at"].as_str().and_then(|t| t.parse().ok());
            let unit = units.entry(suite.clone()).or_insert_with(|| Unit {
                suite_id: suite,
                suite_dir: None,
                runs: Vec::new(),
                at: None,
                running: false,
            });
            unit.running |= value["outcome"].is_null();
            if unit.suite_dir.is_none() {
                unit.at = unit.at.max(started);
            }
            let ws = value["workspace"].as_str().map(PathBuf::from);
            unit.runs.push((dir, ws));
        }
    }
    let now = Utc::now();
    let keep = keep.filter(|k| *k > 0);
    let mut seen_runs = 0usize;
    let mut doomed: Vec<&Unit> = Vec::new();
    // Suite ids are UUIDv7: newest last.
    for (n, unit) in units.values().rev().enumerate() {
        seen_runs += unit.runs.len();
        if n == 0 || protect.contains(&unit.suite_id) || (unit.running && unit.suite_dir.is_none())
        {
            continue;
        }
        let too_many = keep.is_some_and(|k| seen_runs > k);
        let too_old = match (older_than, unit.at) {
            (Some(age), Some(at)) => now - at > age,
            _ => false,
        };
        if too_many || too_old {
            doomed.push(unit);
        }
    }
    for unit in doomed {
        for (dir, ws) in &unit.runs {
            if let Some(ws) = ws {
                let is_ours = artifacts::is_workspace(ws);
                if is_ours && ws.is_dir() && std::fs::remove_dir_all(ws).is_ok() {
                    pruned.workspaces += 1;
                }
            }
            match std::fs::remove_dir_all(dir) {
                Ok(()) => pruned.runs += 1,
                Err(err) => pruned
                    .problems
                    .push(format!("cannot remove {}: {err}", dir.display())),
            }
        }
        if let Some(dir) = &unit.suite_dir {
            if let Err(err) = std::fs::remove_dir_all(dir) {
                pruned
                    .problems
                    .push(format!("cannot remove {}: {err}", dir.display()));
                continue;
            }
        }
        pruned.suites.push(unit.suite_id.clone());
    }
    pruned
}

/// The shards' commit and dirty flag when they all agree (one CI run checks out one commit),
/// else unknown.
fn common_revision<'a>(
    mut summaries: impl Iterator<Item = &'a SuiteSummary>,
) -> (Option<String>, Option<bool>) {
    let Some(first) = summaries.next() else {
        return (None, None);
    };
    let revision = (first.commit.clone(), first.dirty);
    if summaries.all(|s| (s.commit.clone(), s.dirty) == revision) {
        revision
    } else {
        (None, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The errors read as they did when they were strings: users and scripts match on them.
    #[test]
    fn the_errors_say_what_they_always_said() {
        let dir = tempfile::tempdir().expect("tempdir");
        let artifacts = dir.path().join(".bugatti");
        let suites = artifacts::suites_dir(&artifacts);
        assert_eq!(
            resolve_suite(&artifacts, None).unwrap_err().to_string(),
            format!(
                "no suite in {}: run `supervisor start` first",
                suites.display()
            )
        );
        for id in ["0192a", "0192b"] {
            std::fs::create_dir_all(suites.join(id)).expect("suite dir");
        }
        assert_eq!(
            resolve_suite(&artifacts, Some("0192"))
                .unwrap_err()
                .to_string(),
            "`0192` names 2 suites; give more of the id"
        );
        assert_eq!(
            resolve_suite(&artifacts, Some("7"))
                .unwrap_err()
                .to_string(),
            format!("no suite `7` in {}", suites.display())
        );
        assert_eq!(
            merge(&[], dir.path(), None, false).unwrap_err().to_string(),
            "merge needs at least one suite directory"
        );
        let err = load_suite(&suites.join("0192a")).unwrap_err();
        assert!(matches!(err, SuiteError::Unreadable(_)), "{err}");
        std::fs::write(SuitePaths::new(suites.join("0192a")).summary_json(), "{").expect("write");
        let summary = SuitePaths::new(suites.join("0192a")).summary_json();
        let err = load_suite(&suites.join("0192a")).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("{} is not a suite summary: ", summary.display())),
            "{err}"
        );
        let err = SuiteError::RanTwice {
            file: "a.test.toml".into(),
            before: "s1 (d1)".into(),
            after: "s2 (d2)".into(),
            split_differently: true,
        };
        assert_eq!(
            err.to_string(),
            "a.test.toml ran in two shards, s1 (d1) and s2 (d2): the shards split the suite differently (their histories differed; give every shard the same --history)"
        );
        assert_eq!(
            check_writable("--junit", dir.path())
                .unwrap_err()
                .to_string(),
            format!("--junit {}: is a directory", dir.path().display())
        );
        let file = dir.path().join("file");
        std::fs::write(&file, "").expect("write");
        assert_eq!(
            check_writable("--json", &file.join("out.json"))
                .unwrap_err()
                .to_string(),
            format!(
                "--json {}: {} is not a directory",
                file.join("out.json").display(),
                file.display()
            )
        );
        assert_eq!(
            check_dir_writable("artifacts:", &file)
                .unwrap_err()
                .to_string(),
            format!("artifacts: {}: is not a directory", file.display())
        );
    }

    /// A new artifact directory is checked by making it, an existing one by a probe file in it;
    /// either way nothing is left, and an existing folder no one may write is refused.
    #[test]
    fn the_artifact_directory_check_leaves_nothing_and_refuses_a_read_only_folder() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let new = dir.path().join("a/.bugatti");
        check_dir_writable("artifacts:", &new).expect("a new folder is writable");
        assert!(
            !dir.path().join("a").exists(),
            "the folders it made are removed"
        );
        let existing = dir.path().join("existing");
        std::fs::create_dir(&existing).expect("mkdir");
        check_dir_writable("artifacts:", &existing).expect("an existing folder is writable");
        assert_eq!(std::fs::read_dir(&existing).expect("list").count(), 0);
        // root writes anywhere: the refusal is only checked for other users.
        if running_as_root() {
            return;
        }
        std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o500)).expect("chmod");
        let refused = check_dir_writable("artifacts:", &existing);
        std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        assert!(refused.is_err(), "a read-only folder is refused");
    }

    /// `start`'s artifact directory: made owner-only where missing and kept for the run, not
    /// removed only to be made again; removed when the command ends before the run.
    #[test]
    fn a_prepared_artifact_directory_is_owner_only_and_stays_only_when_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let new = dir.path().join("a/.bugatti");
        let made = prepare_dir("artifacts:", &new).expect("a new folder is writable");
        for folder in [dir.path().join("a"), new.clone()] {
            let mode = std::fs::metadata(&folder)
                .expect("made")
                .permissions()
                .mode();
            assert_eq!(
                mode & 0o077,
                0,
                "{} is owner-only: {mode:o}",
                folder.display()
            );
        }
        drop(made);
        assert!(
            !dir.path().join("a").exists(),
            "dropped: the folders it made are removed"
        );
        prepare_dir("artifacts:", &new).expect("writable").keep();
        assert!(new.is_dir(), "kept: the run fills it");
        assert_eq!(std::fs::read_dir(&new).expect("list").count(), 0);
        // An existing folder is probed and left as it was, kept or not.
        drop(prepare_dir("artifacts:", &new).expect("writable"));
        assert!(new.is_dir(), "an existing folder is never removed");
        assert_eq!(std::fs::read_dir(&new).expect("list").count(), 0);
    }

    fn running_as_root() -> bool {
        std::fs::metadata("/proc/self")
            .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
            .unwrap_or(false)
    }
}
