//! A piped group's stdout read to the group's exit: each chunk handed on as it arrives, the
//! reading ended when the leader has exited and its pipe closed — or, when a background job it
//! left holds the pipe open, once a short drain after the exit is over — or when `stop` comes
//! first. The provider's `shell` steps and replay's shell actions read their commands so.

use super::exit::ExitStatus;
use super::handle::Group;
use std::future::Future;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

/// Reads `group`'s stdout until it exits (`Ok`), or until `stop` resolves first (`Err` with its
/// value; `stop` is not polled after the exit). `drain`: how long after the exit a pipe still
/// held open by something the command left behind is read.
pub async fn read_to_exit<T>(
    group: &mut Group,
    drain: Duration,
    mut on_chunk: impl FnMut(&[u8]),
    stop: impl Future<Output = T>,
) -> Result<ExitStatus, T> {
    let mut stdout = group.take_stdout();
    let mut buf = vec![0u8; 64 * 1024];
    let mut status: Option<ExitStatus> = None;
    let mut drain_until: Option<Instant> = None;
    let far = Instant::now() + Duration::from_secs(86_400 * 365);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            read = async { match stdout.as_mut() {
                Some(out) => out.read(&mut buf).await,
                None => std::future::pending().await,
            } } => match read {
                Ok(0) | Err(_) => {
                    stdout = None;
                    if let Some(s) = status.take() { return Ok(s); }
                }
                Ok(n) => on_chunk(&buf[..n]),
            },
            s = group.wait(), if status.is_none() => {
                if stdout.is_none() { return Ok(s); }
                status = Some(s);
                drain_until = Some(Instant::now() + drain);
            }
            _ = tokio::time::sleep_until(drain_until.unwrap_or(far)), if drain_until.is_some() => {
                if let Some(s) = status.take() { return Ok(s); }
            }
            stopped = &mut stop, if status.is_none() => return Err(stopped),
        }
    }
}
