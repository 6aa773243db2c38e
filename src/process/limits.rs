#![warn(missing_docs)]
//! Process limits the supervisor sets for itself at start. Each session holds a few pipes, log
//! files and sockets, so `-j 16` and more can exhaust the usual soft limit of 1024 open files long
//! before the hard limit; the soft limit is raised to the hard one (children inherit it).

use nix::sys::resource::{getrlimit, setrlimit, Resource};

/// Raises the soft `RLIMIT_NOFILE` to the hard limit. Returns the limit now in force.
pub fn raise_open_files() -> nix::Result<u64> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    }
    Ok(getrlimit(Resource::RLIMIT_NOFILE)?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_open_files_limit_ends_at_the_hard_one() {
        let limit = raise_open_files().expect("getrlimit/setrlimit");
        let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
        assert_eq!((limit, soft), (hard, hard));
    }
}
