//! A learned mask is a bounded domain, never "any value there" (see docs/replay.md, "What is
//! masked"): the real supervisor on a project of one-step tests, each driven by the scripted
//! `command` agent (tests/support/directive_agent.py), which runs its commands through the
//! console and judges them as a model would (a latency under a second, an owner that is the
//! user just created, a copy whose checksum is the source's, a snapshot under three hours old, a
//! token that expires after it is issued). The agent records them, passes them again with other
//! values (which are learned), the replays pass values inside what was learned, and then each app
//! breaks in a way the learned mask used to pass: every one goes to the agent, which fails it.
//! Also: a date the instruction names, inside a longer timestamp and under a wide
//! `[replay] ignore`, is never masked. Each check states one weak fact (a word its output holds):
//! what is proven here is the masks' own bounds, not the facts' (tests/run/replay_facts.rs),
//! and an agent that stated no facts would get exact comparison only.

use crate::common;

use common::records::*;
use common::{stdout, Project};
use std::collections::BTreeMap;

fn project(extra: &str) -> Project {
    Project::with_directive_agent(extra)
}

/// A one-step test running each of `apps` (`app/<name>.sh`) through the console, then `judge`.
fn write_check(p: &Project, name: &str, apps: &[&str], judge: &str) {
    let calls: String = apps
        .iter()
        .map(|a| {
            format!(
                "mcp exec_command {{\"cmd\": \"sh ${{BUGATTI_PROJECT_ROOT}}/app/{a}.sh\", \"yield_time_ms\": 10000}}\n"
            )
        })
        .collect();
    p.write(
        &format!("{name}.test.toml"),
        &format!("[[steps]]\ninstruction = '''\n{calls}{judge}\n'''\n"),
    );
}

/// The first step of the newest run of each test, by test name.
fn latest(p: &Project) -> BTreeMap<String, StepRecord> {
    p.newest_run_by_test()
        .into_iter()
        .map(|(name, r)| (name, r.steps[0].clone()))
        .collect()
}

/// The step of test `name` among `records`.
fn of<'a>(records: &'a BTreeMap<String, StepRecord>, name: &str) -> &'a StepRecord {
    records
        .get(name)
        .unwrap_or_else(|| panic!("no run of {name}: {records:#?}"))
}

/// The first step of the newest run of test `name`.
fn latest_of(p: &Project, name: &str) -> StepRecord {
    of(&latest(p), name).clone()
}

fn start(p: &Project) -> (Option<i32>, String) {
    let out = p.start();
    (
        out.status.code(),
        format!("{}\n{}", stdout(&out), common::stderr(&out)),
    )
}

/// A UUID whose first group is `n`.
fn uuid(n: u32) -> String {
    format!("{n:08x}-3d4e-4f50-8a61-7b8c9d0e1f23")
}

/// The apps of one run: a latency in ms, the user created and the owner shown, the source's and
/// the copy's checksums, the snapshot's age (a `date -d` offset), and how long after it is issued
/// a token expires (seconds).
struct Apps {
    latency_ms: &'static str,
    user: String,
    owner: String,
    source: &'static str,
    copy: &'static str,
    snapshot: &'static str,
    expires_after: u32,
}

fn write_apps(p: &Project, a: &Apps) {
    p.write(
        "app/latency.sh",
        &format!("echo 'latency {}'", a.latency_ms),
    );
    p.write("app/user.sh", &format!("echo 'created user={}'", a.user));
    p.write("app/owner.sh", &format!("echo 'order 7 owner={}'", a.owner));
    p.write(
        "app/copy.sh",
        &format!("echo 'source {}'; echo 'copy {}'", a.source, a.copy),
    );
    p.write(
        "app/snapshot.sh",
        &format!(
            "echo \"snapshot $(date -u -d '{}' +%Y-%m-%dT%H:%M:%SZ)\"",
            a.snapshot
        ),
    );
    p.write(
        "app/token.sh",
        &format!(
            "now=$(date -u +%s)\necho \"issued $(date -u -d @$now +%Y-%m-%dT%H:%M:%SZ)\"\necho \"expires $(date -u -d @$((now + {})) +%Y-%m-%dT%H:%M:%SZ)\"",
            a.expires_after
        ),
    );
}

const NAMES: [&str; 5] = ["latency", "owner", "copy", "snapshot", "token"];

fn write_checks(p: &Project) {
    write_check(
        p,
        "latency",
        &["latency"],
        "Check the endpoint answers within a second.\nbelow latency\\s(\\d+)ms 1000\nfact 1 contains \"latency\"",
    );
    write_check(
        p,
        "owner",
        &["user", "owner"],
        "Create a user, then check the order's owner is that user.\nsame user=(\\S+) owner=(\\S+)\nfact 2 contains \"order 7\"",
    );
    write_check(
        p,
        "copy",
        &["copy"],
        "Copy the file and check the copy's checksum is the source's.\nsame source\\s(\\S+) copy\\s(\\S+)\nfact 1 contains \"copy\"",
    );
    write_check(
        p,
        "snapshot",
        &["snapshot"],
        "Check the last snapshot is under 3 hours old.\nage_under snapshot\\s(\\S+) 10800\nfact 1 contains \"snapshot\"",
    );
    write_check(
        p,
        "token",
        &["token"],
        "Check the token expires after it is issued.\nlater issued\\s(\\S+) expires\\s(\\S+)\nfact 1 contains \"expires\"",
    );
}

#[test]
fn a_learned_value_passes_only_inside_what_was_seen_and_with_its_ties_and_relations() {
    let p = project("");
    write_checks(&p);
    // 1. The agent passes every check; each is recorded.
    write_apps(
        &p,
        &Apps {
            latency_ms: "20ms",
            user: uuid(1),
            owner: uuid(1),
            source: "0xaaaa0001",
            copy: "0xaaaa0001",
            snapshot: "-1 hour",
            expires_after: 300,
        },
    );
    let (code, console) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    for (name, s) in latest(&p) {
        assert!(s.recorded, "{name}: {s:?}");
    }
    // The token's times are the clock's, to the second: a run within the second the recording
    // was made in would print the very times recorded (and rightly replay them).
    let second = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default()
    };
    let recorded_in = second();
    while second() == recorded_in {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    // 2. Other values, as a working app gives them: the tokens that changed go to the agent
    // once (a soft drift), which passes them, and they are learned with what it saw. The token
    // issued now that expires five minutes later too: its times are learned as offsets from the
    // run's clock (0 and five minutes), never passed as "current".
    write_apps(
        &p,
        &Apps {
            latency_ms: "35ms",
            user: uuid(2),
            owner: uuid(2),
            source: "0xbbbb0002",
            copy: "0xbbbb0002",
            snapshot: "-2 hours",
            expires_after: 300,
        },
    );
    let (code, console) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    let records = latest(&p);
    for name in NAMES {
        let s = of(&records, name);
        assert_eq!(s.mode, Some(StepMode::Agent), "{name}: {s:?}");
        assert!(
            s.replay_drift.as_ref().is_some_and(|d| d.soft),
            "{name}: {s:?}"
        );
        assert!(s.recorded, "{name}: {s:?}");
    }
    let owner = std::fs::read_to_string(p.root().join("bugatti.replay/owner.replay.json"))
        .expect("recording");
    assert!(owner.contains("\"tie\": [0, 0, 0]"), "{owner}");

    // 3. Values inside what was learned replay: the model is not asked.
    write_apps(
        &p,
        &Apps {
            latency_ms: "50ms",
            user: uuid(3),
            owner: uuid(3),
            source: "0xcccc0003",
            copy: "0xcccc0003",
            snapshot: "-90 minutes",
            expires_after: 300,
        },
    );
    let (code, console) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    for (name, s) in latest(&p) {
        assert_eq!(s.mode, Some(StepMode::Replayed), "{name}: {s:?}\n{console}");
    }

    // 4. The app breaks where a learned mask used to pass anything: a 4.5 s latency, a foreign
    // owner, a corrupted copy, a six-hour-old snapshot, a token that expires when issued. Each
    // goes to the agent, which fails it.
    write_apps(
        &p,
        &Apps {
            latency_ms: "4500ms",
            user: uuid(4),
            owner: uuid(9),
            source: "0xdddd0004",
            copy: "0xdddd0005",
            snapshot: "-6 hours",
            expires_after: 0,
        },
    );
    let (code, console) = start(&p);
    assert_eq!(code, Some(1), "{console}");
    let records = latest(&p);
    let passed: Vec<&str> = NAMES
        .into_iter()
        .filter(|name| of(&records, name).status != StepStatus::Error)
        .collect();
    assert!(
        passed.is_empty(),
        "passed a broken app: {passed:?}\n{records:#?}"
    );
    for name in NAMES {
        let s = of(&records, name);
        assert_eq!(
            s.mode,
            Some(StepMode::Agent),
            "{name} replayed a broken app: {s:?}"
        );
        assert!(s.replay_drift.is_some(), "{name}: {s:?}");
    }

    // 5. A backup from 1999 is no snapshot under three hours old either.
    write_apps(
        &p,
        &Apps {
            latency_ms: "50ms",
            user: uuid(3),
            owner: uuid(3),
            source: "0xcccc0003",
            copy: "0xcccc0003",
            snapshot: "1999-01-01T00:00:00Z",
            expires_after: 300,
        },
    );
    let (code, console) = start(&p);
    assert_eq!(code, Some(1), "{console}");
    let records = latest(&p);
    let s = of(&records, "snapshot");
    assert_eq!(s.mode, Some(StepMode::Agent), "{s:?}");
    assert_eq!(s.status, StepStatus::Error, "{s:?}");
    for name in ["latency", "owner", "copy", "token"] {
        assert_eq!(
            of(&records, name).mode,
            Some(StepMode::Replayed),
            "{name}: {:?}",
            of(&records, name)
        );
    }
}

#[test]
fn a_date_the_instruction_names_is_exact_inside_a_timestamp_and_under_a_wide_ignore() {
    let judge = "Check the due date is 2026-12-31.\nexpect due 2026-12-31";
    // The date inside a longer timestamp, whose time part is learned.
    let p = project("");
    write_check(&p, "due", &["due"], judge);
    p.write("app/due.sh", "echo 'due 2026-12-31T09:00:00.04Z'");
    let (code, console) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    p.write("app/due.sh", "echo 'due 2026-12-31T09:00:07.51Z'");
    let (code, console) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    let s = latest_of(&p, "due");
    assert!(s.replay_drift.as_ref().is_some_and(|d| d.soft), "{s:?}");
    p.write("app/due.sh", "echo 'due 2027-01-15T09:00:00.04Z'");
    let (code, console) = start(&p);
    assert_eq!(code, Some(1), "{console}");
    let s = latest_of(&p, "due");
    assert_eq!(s.mode, Some(StepMode::Agent), "{s:?}");
    assert_eq!(s.status, StepStatus::Error, "{s:?}");
    // The named date differs: a hard drift, whatever was learned of the timestamp.
    assert!(!s.replay_drift.as_ref().is_some_and(|d| d.soft), "{s:?}");

    // A wide `[replay] ignore` over whole timestamps masks their time, never the named date.
    let p = project("\n[replay]\nignore = ['\\d{4}-\\d{2}-\\d{2}T[0-9:.]+Z']\n");
    write_check(&p, "due", &["due"], judge);
    p.write("app/due.sh", "echo 'due 2026-12-31T09:00:00.04Z'");
    let (code, console) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    p.write("app/due.sh", "echo 'due 2026-12-31T17:45:12.9Z'");
    let (code, console) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    let s = latest_of(&p, "due");
    assert_eq!(s.mode, Some(StepMode::Replayed), "{s:?}\n{console}");
    p.write("app/due.sh", "echo 'due 2027-01-15T09:00:00.04Z'");
    let (code, console) = start(&p);
    assert_eq!(code, Some(1), "{console}");
    let s = latest_of(&p, "due");
    assert_eq!(s.mode, Some(StepMode::Agent), "{s:?}");
    assert_eq!(s.status, StepStatus::Error, "{s:?}");
}

/// A cache entry that must expire five minutes after it is written, with a fact that bounds it
/// (`cached`) and with none (`exact`). Each has been "current" in every run: that once matched
/// any other current time, so an entry that expires at once, or in four minutes, or one already
/// expired replayed as a pass. Now a current time is compared exactly until learned, then as
/// its learned offset from the run's clock.
#[test]
fn a_current_timestamp_is_no_pass_for_another_current_one() {
    let p = project("");
    let judge = "Check the cache entry expires five minutes after it is written.\n\
                 ahead expires\\s(\\S+) 285 315";
    write_check(
        &p,
        "cached",
        &["cache"],
        &format!("{judge}\nfact 1 /expires (\\S+)/ time between +4m and +6m of now"),
    );
    write_check(&p, "exact", &["cache"], judge);
    let write_cache = |secs: i64| {
        p.write(
            "app/cache.sh",
            &format!(
                "echo \"expires $(date -u -d @$(( $(date -u +%s) + {secs} )) +%Y-%m-%dT%H:%M:%SZ)\""
            ),
        )
    };
    // Each test's first step in its newest run: (mode, status).
    let steps =
        |p: &Project| -> std::collections::BTreeMap<String, (Option<StepMode>, StepStatus)> {
            p.newest_run_by_test()
                .into_iter()
                .map(|(name, r)| (name, (r.steps[0].mode, r.steps[0].status)))
                .collect()
        };
    write_cache(300);
    let (code, console) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    // Another healthy run, a second or more later: the stated fact lets `cached` learn the
    // offset; `exact` (no facts) goes to the agent whenever the time differs.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (code, console) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    for (name, (mode, _)) in steps(&p) {
        assert_eq!(mode, Some(StepMode::Agent), "{name}: {console}");
    }
    let (code, console) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(steps(&p)["cached"].0, Some(StepMode::Replayed), "{console}");

    // Broken: the entry expires at once, in four minutes, or expired a minute ago. Each is
    // inside what `time within 10m of now` or a "current" shortcut would pass; none replays.
    for secs in [0, 240, -60] {
        write_cache(secs);
        let (code, console) = start(&p);
        assert_eq!(code, Some(1), "expires in {secs} s: {console}");
        for (name, step) in steps(&p) {
            let expected = (Some(StepMode::Agent), StepStatus::Error);
            assert_eq!(step, expected, "{secs} s, {name}: {console}");
        }
    }
    p.assert_nothing_survives();
}

/// A nightly job's time that drifts a little further back every night: each pass of the agent
/// widens its learned offset, and once it has not settled after 10 passes it is no longer
/// learned: the next drift is no soft drift (which would widen it once more) but a drift that
/// says the timestamp is compared exactly.
#[test]
fn a_timestamp_that_never_settles_stops_being_learned_and_the_drift_says_so() {
    let p = project("");
    write_check(
        &p,
        "nightly",
        &["nightly"],
        "Check the nightly job ran.\nexpect job ran\nfact 1 contains \"job ran\"",
    );
    let hours_back = |n: u32| {
        p.write(
            "app/nightly.sh",
            &format!("echo \"job ran at $(date -u -d '-{n} hours' +%Y-%m-%dT%H:%M:%SZ)\"",),
        );
    };
    // Recorded, then 10 passes that each widen the offset (a soft drift each).
    for n in 1..=11 {
        hours_back(n);
        let (code, console) = start(&p);
        assert_eq!(code, Some(0), "{console}");
        let s = latest_of(&p, "nightly");
        assert_eq!(s.mode, Some(StepMode::Agent), "run {n}: {s:?}");
        assert!(s.recorded, "run {n}: {s:?}");
        if n > 1 {
            let note = s.replay_note.unwrap_or_default();
            assert!(note.starts_with("soft drift"), "run {n}: {note}");
        }
    }
    hours_back(12);
    let (code, console) = start(&p);
    assert_eq!(code, Some(0), "{console}");
    let s = latest_of(&p, "nightly");
    assert_eq!(s.mode, Some(StepMode::Agent), "{s:?}");
    let note = s.replay_note.unwrap_or_default();
    assert!(
        note.starts_with("drift") && note.contains("not settled after 10 passes"),
        "{note}"
    );
    p.assert_nothing_survives();
}

/// Two timestamps of two outputs of one step keep their order: an order placed (action 1) and
/// shipped (action 2), each learned over a wide range of offsets. Shipped before it was placed,
/// each inside its own range, replayed as a pass before relations across outputs were kept.
#[test]
fn a_timestamp_keeps_its_order_to_one_of_an_earlier_output() {
    let p = project("");
    write_check(
        &p,
        "shipping",
        &["placed", "shipped"],
        "Place an order, ship it, and check it shipped after it was placed.\n\
         later placed\\s(\\S+) shipped\\s(\\S+)\nfact 1 contains \"placed\"",
    );
    let ago = |placed: u32, shipped: u32| {
        let at = |s: u32| format!("$(date -u -d @$(( $(date -u +%s) - {s} )) +%Y-%m-%dT%H:%M:%SZ)");
        p.write("app/placed.sh", &format!("echo \"placed {}\"", at(placed)));
        p.write(
            "app/shipped.sh",
            &format!("echo \"shipped {}\"", at(shipped)),
        );
    };
    for (placed, shipped, mode) in [
        (600, 500, StepMode::Agent),
        (60, 10, StepMode::Agent),
        (300, 100, StepMode::Replayed),
    ] {
        ago(placed, shipped);
        let (code, console) = start(&p);
        assert_eq!(code, Some(0), "{console}");
        let s = latest_of(&p, "shipping");
        assert_eq!(s.mode, Some(mode), "{placed}/{shipped}: {s:?}");
    }
    // Each inside what was learned for it, but shipped before it was placed.
    ago(70, 90);
    let (code, console) = start(&p);
    assert_eq!(code, Some(1), "{console}");
    let s = latest_of(&p, "shipping");
    assert_eq!(s.mode, Some(StepMode::Agent), "{s:?}");
    assert_eq!(s.status, StepStatus::Error, "{s:?}");
    p.assert_nothing_survives();
}
