//! The registry sweep kills every registered group. Its own test binary: a sweep is process-wide.

use bugatti::process::{group, registry, Owner, Role, Scope};
use std::os::unix::process::CommandExt;

#[test]
fn sweep_kills_every_registered_group() {
    let mut child = std::process::Command::new("sh")
        .args(["-c", "sleep 30 & sleep 30; wait"])
        .process_group(0)
        .spawn()
        .expect("spawn sh");
    let pgid = child.id() as i32;
    let owner = Owner::new(Scope::run("sweep-test"), Role::Other("test sleeper".into()));
    registry::register(pgid, pgid, &owner, Some("sweep-test"), None);
    assert!(registry::leader_pids().contains(&pgid));
    let swept = registry::sweep();
    assert!(swept
        .iter()
        .any(|g| g.pgid == pgid && g.owner == owner && g.label == "test sleeper (sweep-test)"));
    let status = child.wait().expect("wait");
    assert!(!status.success());
    // SIGKILLed members need a moment to leave /proc (the background `sleep` is not our child).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while group::group_is_alive(pgid) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        !group::group_is_alive(pgid),
        "survivors: {:?}",
        group::live_members(pgid)
    );
    assert!(registry::registered().is_empty());
}

/// Teardown finds what an ended group left among our orphans only (`group::adopted`), read from
/// the kernel's children list of our main thread: an orphan of a child started on another thread
/// must be listed there, or a step's escapee would be missed.
#[test]
fn an_orphan_of_a_child_started_on_another_thread_is_adopted_by_the_main_thread() {
    assert!(bugatti::process::subreaper::become_child_subreaper());
    // The child starts a background sleep and exits at once: the sleep is orphaned to us.
    let orphan: i32 = std::thread::scope(|s| {
        s.spawn(|| {
            let out = std::process::Command::new("sh")
                .args(["-c", "sleep 300 > /dev/null 2>&1 & echo $!"])
                .output()
                .expect("sh");
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .expect("pid")
        })
        .join()
        .expect("thread")
    });
    let adopted = group::adopted().expect("the kernel lists our main thread's children");
    let found = adopted.iter().any(|p| p.pid == orphan);
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(orphan),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(orphan), None);
    assert!(found, "orphan {orphan} not in {adopted:?}");
}
