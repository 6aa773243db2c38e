//! Free loopback ports for `[ports] NAME = "auto"`: each session its own.
//!
//! The kernel picks a free port (bind to port 0); a process-wide set remembers every port handed
//! out, so two sessions of one invocation never get the same port even if the first has not bound
//! it yet. Across invocations the kernel's ephemeral allocation already avoids recently used ports.

use std::collections::HashSet;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::{Mutex, OnceLock};

#[derive(Debug, thiserror::Error)]
pub enum PortError {
    #[error("could not bind a free loopback port on 127.0.0.1: {0}")]
    Bind(#[from] std::io::Error),
    #[error("no free loopback port found after {0} attempts")]
    Exhausted(usize),
}

fn handed_out() -> &'static Mutex<HashSet<u16>> {
    static PORTS: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    PORTS.get_or_init(|| Mutex::new(HashSet::new()))
}

/// A loopback port that was free a moment ago and that this process has not handed out before.
pub fn allocate_loopback_port() -> Result<u16, PortError> {
    const ATTEMPTS: usize = 64;
    for _ in 0..ATTEMPTS {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        let mut ports = handed_out()
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if ports.insert(port) {
            return Ok(port);
        }
    }
    Err(PortError::Exhausted(ATTEMPTS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_allocations_are_distinct_and_bindable() {
        let threads: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(|| {
                    (0..16)
                        .map(|_| allocate_loopback_port().expect("port"))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all = HashSet::new();
        for t in threads {
            for port in t.join().expect("thread") {
                assert!(all.insert(port), "port {port} handed out twice");
            }
        }
        let port = allocate_loopback_port().expect("port");
        TcpListener::bind((Ipv4Addr::LOCALHOST, port)).expect("allocated port is bindable");
    }
}
