//! Makes the supervisor a child subreaper, so that descendants which escape their process group
//! (`setsid`, double fork) re-parent to us when their parent dies, and teardown can still find them.

use std::sync::atomic::{AtomicBool, Ordering};

static IS_SUBREAPER: AtomicBool = AtomicBool::new(false);

/// Asks the kernel to re-parent orphaned descendants to this process. Linux only; elsewhere a no-op
/// that reports `false`.
pub fn become_child_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument and touches no memory.
    let done = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 };
    #[cfg(not(target_os = "linux"))]
    let done = false;
    if done {
        IS_SUBREAPER.store(true, Ordering::Relaxed);
    }
    done
}

/// Whether every process this one started stays its descendant (orphans included).
pub fn is_child_subreaper() -> bool {
    IS_SUBREAPER.load(Ordering::Relaxed)
}

/// The last net at the supervisor's exit, after every group was torn down and the registry swept:
/// SIGKILLs every live descendant still left — processes that escaped both their process group
/// (`setsid`, a double fork) and their environment marker (`env -i`), which only their ancestry
/// (re-parented to us, the subreaper) shows as ours — then reaps them, so that no zombie is
/// handed to a container's PID 1 that may never reap it. Only our descendants are touched.
/// Must run when no child is waited for elsewhere (the async runtime is shut down). Returns the
/// pids killed.
pub fn sweep_descendants() -> Vec<i32> {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    // No child at all: no descendant either, and nothing to reap (the common end of a suite).
    if super::group::no_descendants() {
        return Vec::new();
    }
    let own = std::process::id() as i32;
    let mut killed: Vec<i32> = Vec::new();
    // A few rounds: a process may fork while its siblings are being killed.
    for _ in 0..5 {
        let procs = super::group::all_processes();
        let live: Vec<i32> = super::group::descendants_of(own, &procs)
            .into_iter()
            .filter(|p| !p.is_zombie())
            .map(|p| p.pid)
            .collect();
        if live.is_empty() {
            break;
        }
        for pid in live {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            if !killed.contains(&pid) {
                killed.push(pid);
            }
        }
    }
    reap_children(std::time::Duration::from_secs(2));
    killed
}

/// Reaps every exited child of ours until none is left or `limit` has passed; only at exit (it
/// takes statuses that a runtime might be waiting for).
fn reap_children(limit: std::time::Duration) {
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    let own = std::process::id() as i32;
    let deadline = std::time::Instant::now() + limit;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => {
                // Children left: killed ones need a moment to become zombies.
                let procs = super::group::all_processes();
                if !procs.iter().any(|p| p.ppid == own) || std::time::Instant::now() >= deadline {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Ok(_) => {}
            // ECHILD: no child at all.
            Err(_) => return,
        }
    }
}
