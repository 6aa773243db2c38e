//! The finished runs as the reporter keeps them until the suite's end. A finished run's record is
//! on disk, final, in its run.json: the reporter keeps where, and reads it back when the suite's
//! files are written, as `merge` reads a shard's. Held in memory, every record of a night of
//! thousands of tests made the supervisor grow with the night (docs/ci.md); only a record whose
//! run.json could not be written stays in memory, the one copy of it there is.

use crate::model::ids::RunId;
use crate::report::records::run_record::RunRecord;
use std::path::PathBuf;

/// One finished run.
#[derive(Debug)]
pub(super) enum FinishedRun {
    /// Its run.json holds the final record.
    OnDisk {
        run_id: RunId,
        /// The test file as the plan names it (which root tests were started).
        test_file: String,
        run_json: PathBuf,
    },
    /// Its run.json could not be written (nor its directory made): the record itself.
    Held(Box<RunRecord>),
}

impl FinishedRun {
    pub(super) fn test_file(&self) -> &str {
        match self {
            Self::OnDisk { test_file, .. } => test_file,
            Self::Held(record) => &record.identity.test_file,
        }
    }

    /// The run's final record: read back from its run.json (as its run's redactor wrote it), or
    /// the one held. `Err` says why it could not be read.
    pub(super) fn record(&self) -> Result<RunRecord, String> {
        let (run_id, path) = match self {
            Self::Held(record) => return Ok(RunRecord::clone(record)),
            Self::OnDisk {
                run_id, run_json, ..
            } => (run_id, run_json),
        };
        let fail = |why: String| format!("run {run_id}: {}: {why}", path.display());
        let bytes = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
        let record: RunRecord = serde_json::from_slice(&bytes).map_err(|e| fail(e.to_string()))?;
        if record.identity.run_id != *run_id || !record.is_finished() {
            return Err(fail(
                "not the run's final record any more (changed after it was written)".into(),
            ));
        }
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::outcome::RunOutcome;
    use crate::report::records::run_record::tests::plan;

    /// What the suite's files are made from is the record as it was: read back whole, a cost
    /// of seventeen digits to its last bit (the sum of a run's steps' costs is one).
    #[test]
    fn a_record_read_back_is_the_record_written() {
        let dir = tempfile::tempdir().expect("dir");
        let mut record = RunRecord::from_plan(&plan());
        record.cost_usd = Some(0.1 + 0.2 + 0.123_456_789_012_345_67);
        record.finish(
            RunOutcome::Failed,
            Some("it broke".into()),
            chrono::Utc::now(),
        );
        let run_json = dir.path().join("run.json");
        let text = serde_json::to_string_pretty(&record).expect("json");
        std::fs::write(&run_json, text).expect("write");
        let run = FinishedRun::OnDisk {
            run_id: record.identity.run_id.clone(),
            test_file: record.identity.test_file.clone(),
            run_json: run_json.clone(),
        };
        assert_eq!(run.test_file(), record.identity.test_file);
        assert_eq!(run.record(), Ok(record.clone()));
        // Another run's record in its place, or none, is said, not taken.
        let mut other = record.clone();
        other.identity.run_id = RunId::new("another-run");
        std::fs::write(&run_json, serde_json::to_string(&other).expect("json")).expect("write");
        assert!(run
            .record()
            .is_err_and(|why| why.contains("not the run's final record")));
        std::fs::remove_file(&run_json).expect("rm");
        assert!(run.record().is_err());
        assert_eq!(
            FinishedRun::Held(Box::new(record.clone())).record(),
            Ok(record)
        );
    }
}
