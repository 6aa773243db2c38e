//! A disk that fills up mid-suite (docs/signals.md, "Exit codes"): the artifact directory on a
//! small tmpfs in a private mount namespace (`unshare -rm`), twelve tests each writing 60 KB of
//! output into it. Whatever could not be written, no run.json is left saying `outcome: null`
//! without the run being named as unrecorded, and the exit code (3) and the summary agree.
//! Skips loudly where unprivileged mount namespaces are not allowed (a failure under `CI=true`).

use crate::common;
use crate::common::records::*;

use common::Project;
use std::path::Path;
use std::process::Command;

const TEST: &str = "full_disk";

/// `unshare -rm` works here: a private mount namespace as a mapped root.
fn namespaces_allowed() -> Result<(), String> {
    match Command::new("unshare").args(["-rm", "true"]).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "`unshare -rm` is not permitted here: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("`unshare` cannot be run: {e}")),
    }
}

/// Every run.json under `runs`, read as the records they are.
fn records_on_disk(runs: &Path) -> Vec<RunRecord> {
    let Ok(dirs) = std::fs::read_dir(runs) else {
        return Vec::new();
    };
    dirs.filter_map(Result::ok)
        .map(|d| d.path().join("run.json"))
        .filter(|p| p.is_file())
        .map(|p| common::read_run_record(&p))
        .collect()
}

#[test]
fn a_full_disk_names_every_run_it_could_not_record_and_exits_3() {
    if common::skip::require(TEST, namespaces_allowed()).is_none() {
        return;
    }
    let p = Project::new();
    p.write(
        "bugatti.config.toml",
        "[provider]\nname = \"shell\"\n\n[supervisor]\ntests = [\"tests/*.test.toml\"]\n",
    );
    for i in 1..=12 {
        p.write(
            &format!("tests/t{i:02}.test.toml"),
            &format!(
                "name = \"T{i}\"\n\n[[steps]]\ninstruction = \"Run `head -c 60000 /dev/zero | tr \
                 '\\\\0' x; echo`\"\n"
            ),
        );
    }
    let artifacts = p.root().join(".bugatti");
    let kept = p.root().join("kept");
    let copy = p.root().join("out/summary.json");
    std::fs::create_dir_all(&artifacts).expect(".bugatti");
    std::fs::create_dir_all(&kept).expect("kept");
    // The tmpfs lives as long as the namespace: what it held is copied out before it goes.
    let script = "mount -t tmpfs -o size=400k tmpfs \"$1\" || exit 97; a=$1; k=$2; shift 2; \
                  \"$@\"; rc=$?; cp -a \"$a/.\" \"$k/\"; exit $rc";
    let supervisor = p.supervisor();
    let out = Command::new("unshare")
        .args(["-rm", "sh", "-c", script, "sh"])
        .arg(&artifacts)
        .arg(&kept)
        .arg(supervisor.get_program())
        .args(["start", "-j", "2", "--json"])
        .arg(&copy)
        .current_dir(p.root())
        .envs(
            supervisor
                .get_envs()
                .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))),
        )
        .output()
        .expect("unshare");
    p.assert_nothing_survives();
    let said = format!("{}\n{}", common::stdout(&out), common::stderr(&out));
    assert_ne!(
        out.status.code(),
        Some(97),
        "the tmpfs was not mounted: {said}"
    );
    let summary: SuiteSummary =
        serde_json::from_str(&std::fs::read_to_string(&copy).expect("the --json copy"))
            .expect("summary.json");
    assert!(
        !summary.unrecorded.is_empty(),
        "the disk never filled up: nothing was tested\n{said}"
    );
    // The exit code and the summary agree: records were lost, and the suite exits 3.
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        summary.records_lost >= summary.unrecorded.len(),
        "{summary:#?}"
    );
    assert!(said.contains("NOT RECORDED"), "{said}");
    // No run.json says `outcome: null` without its run being named.
    let on_disk = records_on_disk(&kept.join("runs"));
    assert!(
        !on_disk.is_empty(),
        "no run.json was written at all\n{said}"
    );
    for record in &on_disk {
        let named = summary
            .unrecorded
            .iter()
            .find(|u| u.run_id == record.identity.run_id);
        if record.outcome.is_none() {
            assert!(
                named.is_some(),
                "{record:#?} is silently open\n{summary:#?}"
            );
        }
    }
    // Each unrecorded run is one of the suite's tests, with the outcome the summary counts.
    for run in &summary.unrecorded {
        let test = summary
            .tests
            .iter()
            .find(|t| t.run_id == run.run_id)
            .unwrap_or_else(|| panic!("{run:?} is no test of the summary"));
        assert_eq!(test.outcome, run.outcome, "{summary:#?}");
    }
    let t = &summary.totals;
    assert_eq!(t.total, 12, "{summary:#?}");
    assert_eq!(
        t.passed + t.warned + t.failed + t.error + t.interrupted + t.not_run,
        12,
        "{summary:#?}"
    );
}
