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
