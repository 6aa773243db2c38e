//! Free loopback ports for `[ports] NAME = "auto"`: each session its own.
//!
//! A port is handed out some time before the server binds it (the server must first start), and
//! in that gap anything may take it. The commonest taker is the kernel itself: every outgoing
//! connection (a readiness probe, the agent's API calls, the app's own) gets an ephemeral port,
//! and a port picked by binding port 0 is an ephemeral one. So ports are picked at random *below*
//! the ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`), where the kernel never assigns
//! one on its own, and checked free by binding them; a process-wide set remembers every port
//! handed out, so two sessions of one invocation never get the same one. Only when there is no
//! room below the ephemeral range does the kernel pick (port 0).

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

/// How far below the ephemeral range ports are picked (ports under 1024 are never used).
const SPAN: u16 = 12_000;

fn handed_out() -> &'static Mutex<HashSet<u16>> {
    static PORTS: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    PORTS.get_or_init(|| Mutex::new(HashSet::new()))
}

/// The range auto ports are picked from: just below the kernel's ephemeral range; `None` when
/// that leaves too little room (the kernel then picks).
fn auto_range() -> Option<std::ops::Range<u16>> {
    static RANGE: OnceLock<Option<std::ops::Range<u16>>> = OnceLock::new();
    RANGE
        .get_or_init(|| {
            let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
            let low: u16 = text.split_whitespace().next()?.parse().ok()?;
            let start = low.saturating_sub(SPAN).max(1024);
            (low.saturating_sub(start) >= 1024).then_some(start..low)
        })
        .clone()
}

/// A pseudo-random number: the standard library's per-process random hash keys, stirred.
fn random(n: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(n);
    h.finish()
}

/// A loopback port that was free a moment ago and that this process has not handed out before.
pub fn allocate_loopback_port() -> Result<u16, PortError> {
    const ATTEMPTS: usize = 64;
    let mut ports = handed_out()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for attempt in 0..ATTEMPTS {
        let port = match auto_range() {
            Some(range) => {
                let width = u64::from(range.end - range.start);
                let offset = u16::try_from(random(attempt as u64) % width).unwrap_or(0);
                let port = range.start + offset;
                // Taken by someone: try another.
                if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_err() {
                    continue;
                }
                port
            }
            None => TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
                .local_addr()?
                .port(),
        };
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

    #[test]
    fn ports_come_from_below_the_ephemeral_range() {
        // Outgoing connections get ephemeral ports: an auto port among them could be taken
        // between its allocation and the server's bind.
        let Some(range) = auto_range() else {
            eprintln!("skipped: no room below the ephemeral port range on this machine");
            return;
        };
        for _ in 0..32 {
            let port = allocate_loopback_port().expect("port");
            assert!(range.contains(&port), "{port} not in {range:?}");
        }
    }
}
