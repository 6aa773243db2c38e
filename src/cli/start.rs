//! `supervisor start` (and `test`): a validated suite handed to the actors, after the checks
//! that must hold before anything runs.

use super::selection::{empty_selection, select_failed};
use super::{check_outputs, load, print_notes, Exit};
use crate::model::options::RunOptions;
use crate::report::store::artifact_dir;

/// Load and validate; check that every file the run writes can be written; apply
/// `--rerun-failed`; run the suite under the actors. Its exit code is docs/signals.md's.
pub fn start(options: RunOptions) -> Exit {
    if let Err(e) = check_outputs(&options) {
        eprintln!("error: {e}");
        return Exit::USAGE;
    }
    let Some(mut suite) = load(&options) else {
        return Exit::USAGE;
    };
    say!("supervisor: {}", suite.config_summary());
    print_notes(&suite);
    let artifacts = crate::actors::run::artifact_dir_path(&suite);
    // Made here when missing (owner-only, as the run makes it) and kept for the run; removed
    // again when the command ends before the run begins.
    let made = match artifact_dir::prepare_dir("the artifact directory", &artifacts) {
        Ok(made) => made,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::USAGE;
        }
    };
    if let Some(code) = empty_selection(&suite, &options) {
        return code;
    }
    if options.rerun_failed {
        match select_failed(&mut suite, &options, false) {
            Ok(true) => {}
            Ok(false) => return Exit::SUCCESS,
            Err(code) => return code,
        }
    }
    made.keep();
    Exit::from(crate::actors::run::run_suite(suite, &options))
}
