//! `supervisor merge` and `supervisor report`: suites read back from disk (a project's
//! `.bugatti/suites/`, or any suite folder such as `merge --out`'s), their exit code, and the
//! trends of their history.

use std::path::{Path, PathBuf};

use crate::model::artifacts::SuitePaths;
use crate::model::ids::SuiteId;
use crate::report::records::suite::SuiteSummary;
use crate::report::{records::history, store::artifact_dir};

use super::{artifact_dir_of, restore_default_sigpipe, Exit};

/// 0 when the suite passed as its summary says (quarantined tests aside, flaky passes by the
/// suite's policy, missing shards by `--allow-partial`), else 1.
fn suite_exit(summary: &SuiteSummary) -> Exit {
    if summary.passed() {
        Exit::SUCCESS
    } else {
        Exit::FAILED
    }
}

/// The console's list of what the suite did not run and why, and of what fails it and why.
fn print_verdicts(summary: &SuiteSummary) {
    for file in &summary.not_run {
        if let Some(why) = summary.not_run_reasons.get(file) {
            say!("not run: {file} — {why}");
        }
    }
    for test in &summary.tests {
        if let Some(why) = summary.failure_reason(test) {
            if why.starts_with("flaky") {
                say!("fails the suite: {} — {why}", test.test_file);
            }
        }
    }
}

pub fn merge(
    dirs: &[PathBuf],
    out: Option<PathBuf>,
    config: Option<PathBuf>,
    history: Option<PathBuf>,
    allow_partial: bool,
) -> Exit {
    if let Some(file) = &history {
        if let Err(e) = artifact_dir::check_writable("--history", file) {
            eprintln!("error: {e}");
            return Exit::USAGE;
        }
    }
    let artifacts = artifact_dir_of(config).map(|(dir, _)| dir);
    // `--out` elsewhere than the project's suites: its history entry still goes to the
    // project's history, where `supervisor report --trends` looks by default.
    let history = match (&out, history) {
        (_, Some(file)) => Some(file),
        (Some(_), None) => artifacts.as_ref().ok().map(|d| history::history_path(d)),
        (None, None) => None,
    };
    let out = match (out, &artifacts) {
        (Some(out), _) => out,
        (None, Ok(dir)) => SuitePaths::under(dir, &SuiteId::fresh()).dir,
        (None, Err(e)) => {
            eprintln!("error: {e}");
            return Exit::USAGE;
        }
    };
    match artifact_dir::merge(dirs, &out, history.as_deref(), allow_partial) {
        Ok(merged) => {
            for note in &merged.notes {
                say!("note: {note}");
            }
            {
                use std::io::Write as _;
                let _ = write!(std::io::stdout(), "{}", merged.summary.to_markdown());
            }
            print_verdicts(&merged.summary);
            say!("Merged suite: {}", merged.out.display());
            say!(
                "HTML report: {}",
                SuitePaths::new(&merged.out).report_html().display()
            );
            suite_exit(&merged.summary)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Exit::USAGE
        }
    }
}

/// The suite `which` names: a suite folder (holding summary.json), else an id or `last` in the
/// artifact directory. `last` with `--history FILE`: the last whole suite FILE records (a merge,
/// wherever `merge --out` wrote it), not the newest shard of the artifact directory. `last`
/// without it: the newest of the artifact directory's last suite and the project history's last
/// whole suite (suite ids are UUIDv7: they sort by time).
fn find_suite(
    which: Option<&str>,
    artifacts: &Result<PathBuf, String>,
    history_file: Option<&Path>,
) -> Result<artifact_dir::LoadedSuite, String> {
    if let Some(dir) = which
        .map(Path::new)
        .filter(|d| SuitePaths::new(d).summary_json().is_file())
    {
        return load_suite(dir);
    }
    if !matches!(which, None | Some("last")) {
        let dir = artifacts.clone()?;
        return resolve_and_load(&dir, which);
    }
    let project_history = artifacts.as_ref().ok().map(|d| history::history_path(d));
    let file = history_file.map(Path::to_path_buf).or(project_history);
    let whole = file.as_deref().and_then(|f| last_whole_suite(f, artifacts));
    let stored = artifacts
        .as_ref()
        .ok()
        .and_then(|d| artifact_dir::list_suites(d).pop());
    match (whole, stored) {
        (Some(Err(e)), _) if history_file.is_some() => Err(e),
        (Some(Ok((id, dir))), Some(s)) if history_file.is_some() || id > s.suite_id => {
            load_suite(&dir)
        }
        (Some(Ok((_, dir))), None) => load_suite(&dir),
        _ => {
            let dir = artifacts.clone()?;
            resolve_and_load(&dir, which)
        }
    }
}

/// A suite folder read back, its error as the CLI prints it.
fn load_suite(dir: &Path) -> Result<artifact_dir::LoadedSuite, String> {
    artifact_dir::load_suite(dir).map_err(|e| e.to_string())
}

/// The suite `which` names in the artifact directory `dir`, read back.
fn resolve_and_load(dir: &Path, which: Option<&str>) -> Result<artifact_dir::LoadedSuite, String> {
    artifact_dir::resolve_suite(dir, which)
        .and_then(|s| artifact_dir::load_suite(&s.dir))
        .map_err(|e| e.to_string())
}

/// The id and folder of the last whole suite `file` records (not a shard's own entry), looked
/// for in the artifact directory and where `merge --out` wrote it. `None`: no whole suite in it;
/// `Some(Err)`: its folder is not here (said how to name it).
fn last_whole_suite(
    file: &Path,
    artifacts: &Result<PathBuf, String>,
) -> Option<Result<(SuiteId, PathBuf), String>> {
    let entries = history::read(file);
    let last = entries
        .iter()
        .rev()
        .find(|e| e.selection.is_whole_suite())?;
    let in_store = artifacts
        .as_ref()
        .ok()
        .and_then(|d| artifact_dir::resolve_suite(d, Some(last.suite_id.as_str())).ok())
        .map(|s| s.dir);
    let written = last.suite_dir.as_deref().map(PathBuf::from);
    let found = in_store
        .into_iter()
        .chain(written)
        .find(|d| SuitePaths::new(d).summary_json().is_file());
    Some(match found {
        Some(dir) => Ok((last.suite_id.clone(), dir)),
        None => Err(format!(
            "suite {} (the last whole suite in {}) is not here{}: name its folder, `supervisor report DIR --trends --history {}`",
            last.suite_id,
            file.display(),
            last.suite_dir
                .as_deref()
                .map_or(String::new(), |d| format!(" (it was written to {d})")),
            file.display()
        )),
    })
}

/// `trends`: `Some(history file)` to print them (`Some(None)`: the project's history).
pub fn report(
    which: Option<&str>,
    open: bool,
    trends: Option<Option<PathBuf>>,
    chrome_trace: Option<PathBuf>,
    otlp: Option<String>,
    config: Option<PathBuf>,
) -> Exit {
    restore_default_sigpipe();
    let artifacts = artifact_dir_of(config).map(|(dir, _)| dir);
    let history_file = trends.clone().flatten();
    let loaded = match find_suite(which, &artifacts, history_file.as_deref()) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::USAGE;
        }
    };
    let d = SuitePaths::new(&loaded.dir);
    if let Some(file) = &chrome_trace {
        let written = std::fs::File::create(file).and_then(|f| {
            let mut out = std::io::BufWriter::new(f);
            crate::report::renderers::chrome_trace::write(
                &loaded.summary,
                &loaded.records,
                &mut out,
            )
        });
        if let Err(e) = written {
            eprintln!("error: --chrome-trace {}: {e}", file.display());
            return Exit::USAGE;
        }
    }
    println!("suite:        {}", loaded.summary.suite_id);
    println!("report.html:  {}", d.report_html().display());
    println!("summary.md:   {}", d.summary_md().display());
    println!("summary.json: {}", d.summary_json().display());
    println!("junit.xml:    {}", d.junit().display());
    if let Some(file) = &chrome_trace {
        println!("chrome trace: {}", file.display());
    }
    if let Some(value) = &otlp {
        // A failed export is said, never the exit code (docs/reports.md, "OpenTelemetry").
        match crate::report::store::otlp_export::export_suite(
            &loaded.summary,
            &loaded.records,
            value,
        ) {
            Ok(target) => println!("otlp:         {target}"),
            Err(line) => eprintln!("warning: {line}"),
        }
    }
    println!();
    print!("{}", loaded.summary.to_markdown());
    let file = match (trends, &artifacts) {
        (Some(Some(file)), _) => Some(file),
        (Some(None), Ok(dir)) => Some(history::history_path(dir)),
        _ => None,
    };
    if let Some(file) = file {
        print_trends(&file, &loaded.summary.suite_id);
    }
    if open {
        let page = d.report_html();
        if let Err(why) = open_in_browser(&page) {
            eprintln!(
                "warning: report.html was not opened ({why}); open it yourself: {}",
                page.display()
            );
        }
    }
    suite_exit(&loaded.summary)
}

/// Hand `page` to the desktop's opener (`open` on macOS, `xdg-open` elsewhere), or say in a few
/// words why not. The opener's own output is kept off the terminal: without a display
/// `xdg-open` prints a screenful of tries that hides the one thing the user needs, the path.
fn open_in_browser(page: &Path) -> Result<(), String> {
    let macos = cfg!(target_os = "macos");
    let opener = if macos { "open" } else { "xdg-open" };
    let has_display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
    if !macos && !has_display {
        return Err("no display: neither DISPLAY nor WAYLAND_DISPLAY is set".to_string());
    }
    let status = std::process::Command::new(opener)
        .arg(page)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("{opener} failed ({s})")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(format!("{opener} is not installed or not on PATH"))
        }
        Err(e) => Err(format!("cannot run {opener}: {e}")),
    }
}

/// The trends of `suite_id`'s selection up to it, from `file`.
fn print_trends(file: &Path, suite_id: &SuiteId) {
    let entries = history::read(file);
    let at = entries.iter().position(|e| &e.suite_id == suite_id);
    let trend =
        at.and_then(|i| crate::report::records::trends::Trends::of(&entries[..i], &entries[i]));
    println!();
    match trend {
        Some(t) => print!("{}", t.text()),
        None => println!(
            "No trends: {} holds no earlier suite of this suite's selection{}",
            file.display(),
            if at.is_none() {
                " (nor this suite)"
            } else {
                ""
            }
        ),
    }
}
