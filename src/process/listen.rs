//! The supervisor's loopback listeners (the agent console, the browser's DevTools endpoint), bounded:
//! any local process can connect to a loopback port, and one that opens thousands of idle
//! connections must not take the descriptors the supervisor needs for its records. So a failed
//! accept (EMFILE, ECONNABORTED) is waited out instead of ending the listener, at most
//! [`MAX_CONNECTIONS`] connections are served at once (one past that is closed at once), a
//! connection that sends nothing within [`FIRST_BYTE_LIMIT`] is closed, and so is one silent for
//! its idle limit.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// Connections served at once by one listener: far more than its clients (the agent, Playwright
/// MCP, the capture) ever open, far fewer than the descriptors the supervisor has.
pub const MAX_CONNECTIONS: usize = 256;
/// A connection silent this long is closed: above the console's longest call (30 s), so a call
/// still being answered is never cut.
pub const IDLE_LIMIT: Duration = Duration::from_secs(120);
/// A connection that has sent nothing this long is closed (a flood's connections never do), so a
/// flood frees its slots for the clients that speak.
pub const FIRST_BYTE_LIMIT: Duration = Duration::from_secs(5);
/// After a failed accept (out of descriptors), before the next try.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// A listener that bounds its connections.
pub struct Bounded {
    listener: TcpListener,
    permits: Arc<Semaphore>,
    idle: Duration,
}

impl Bounded {
    /// `listener` with at most `max` connections, each closed after `idle` of silence.
    pub fn new(listener: TcpListener, max: usize, idle: Duration) -> Self {
        Self {
            listener,
            permits: Arc::new(Semaphore::new(max)),
            idle,
        }
    }

    /// The next connection within the bound; never fails.
    pub async fn next(&mut self) -> (Guarded, SocketAddr) {
        loop {
            match self.listener.accept().await {
                Ok((stream, addr)) => match Arc::clone(&self.permits).try_acquire_owned() {
                    Ok(permit) => return (Guarded::new(stream, permit, self.idle), addr),
                    // Past the bound: closed at once, its descriptor back.
                    Err(_) => drop(stream),
                },
                Err(e) => {
                    tracing::debug!("accept failed, trying again: {e}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            }
        }
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

impl axum::serve::Listener for Bounded {
    type Io = Guarded;
    type Addr = SocketAddr;

    fn accept(&mut self) -> impl Future<Output = (Self::Io, Self::Addr)> + Send {
        self.next()
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Bounded::local_addr(self)
    }
}

/// One connection: its slot under the bound, and its idle deadline.
pub struct Guarded {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
    idle: Option<Duration>,
    deadline: Pin<Box<Sleep>>,
}

/// The first deadline: the first byte's, unless the idle limit is shorter.
fn first_deadline(idle: Duration) -> Duration {
    idle.min(FIRST_BYTE_LIMIT)
}

impl Guarded {
    fn new(stream: TcpStream, permit: OwnedSemaphorePermit, idle: Duration) -> Self {
        Self {
            stream,
            _permit: permit,
            idle: Some(idle),
            deadline: Box::pin(tokio::time::sleep(first_deadline(idle))),
        }
    }

    /// No idle limit from now on: a client that proved it holds the secret may stay silent
    /// (Playwright MCP's DevTools connection while the model thinks).
    pub fn keep_while_silent(&mut self) {
        self.idle = None;
    }

    /// `TCP_NODELAY`.
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.stream.set_nodelay(on)
    }

    fn touched(&mut self) {
        if let Some(idle) = self.idle {
            self.deadline.as_mut().reset(Instant::now() + idle);
        }
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.stream).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    self.touched();
                }
                Poll::Ready(result)
            }
            Poll::Pending => {
                if self.idle.is_some() && self.deadline.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the connection was idle too long",
                    )));
                }
                Poll::Pending
            }
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            self.touched();
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn connections_past_the_bound_are_closed_and_idle_ones_end() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let mut bounded = Bounded::new(listener, 2, Duration::from_millis(300));
        let server = tokio::spawn(async move {
            loop {
                let (mut conn, _) = bounded.next().await;
                tokio::spawn(async move {
                    let mut buf = [0u8; 16];
                    // Echo until the peer closes or the idle limit ends it.
                    while let Ok(n) = conn.read(&mut buf).await {
                        if n == 0 || conn.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        let mut held = Vec::new();
        for _ in 0..2 {
            let mut c = TcpStream::connect(("127.0.0.1", port))
                .await
                .expect("connect");
            c.write_all(b"hi").await.expect("write");
            let mut buf = [0u8; 2];
            c.read_exact(&mut buf).await.expect("echo");
            held.push(c);
        }
        // A third while two are held: closed at once.
        let mut third = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        let mut buf = [0u8; 2];
        let read = tokio::time::timeout(Duration::from_secs(5), third.read(&mut buf))
            .await
            .expect("closed, not held");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        // The held ones end once idle, and their slots serve new connections.
        for c in &mut held {
            let read = tokio::time::timeout(Duration::from_secs(5), c.read(&mut buf))
                .await
                .expect("ended when idle");
            assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        }
        drop(held);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut again = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        again.write_all(b"ok").await.expect("write");
        again.read_exact(&mut buf).await.expect("served again");
        assert_eq!(&buf, b"ok");
        server.abort();
    }
}
