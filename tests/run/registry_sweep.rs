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
    registry::register(pgid, pgid, &owner, Some("sweep-test"));
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
