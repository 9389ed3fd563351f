//! What ends one session from outside its connection: the server's shutdown, or another
//! session's `pg_terminate_backend(pid)`.
//!
//! Each session has a token of its own, a child of the server's shutdown token: a shutdown
//! stops every session, a terminate only its own. A stopped session ends at its next wait
//! for the client with FATAL 57P01, PostgreSQL's message for both. Three waits must see
//! the stop:
//! - a read blocked on the client: a plain socket's read side is shut down to wake it
//!   ([`SessionStop::wake_reader`]); a TLS session's read selects on the token;
//! - a running statement: a terminate stops it with 57P01, as PostgreSQL's terminate
//!   interrupts the statement (the SQL session's statement clock reads a terminated flag
//!   that no statement's start clears); a shutdown lets it finish;
//! - a write to a client that does not read: a plain socket's write is given up when the
//!   client takes no byte for a whole [`WRITE_TICK`] after the stop (between one and two
//!   ticks); a TLS session's write, one chunk of a result through the runtime, must end
//!   within a tick of the stop. Without this a client that stopped reading held its
//!   session, its open transaction and the server's shutdown for ever. A plain client that
//!   keeps reading is not cut off: a shutdown still lets its statement finish.

use std::io::{Error, ErrorKind};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long a write to a client may make no progress, once the session is stopped, before
/// it is given up.
pub const WRITE_TICK: Duration = Duration::from_secs(1);

/// One session's stop: its token, its cancel flag, and its socket's reading handle.
#[derive(Clone)]
pub struct SessionStop {
    token: CancellationToken,
    cancel: Arc<AtomicBool>,
    /// A handle on a plain socket read with blocking calls (none for TLS, or before the
    /// session leaves the runtime).
    reader: Arc<Mutex<Option<TcpStream>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // An Option that is only ever replaced whole: consistent across a panic.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SessionStop {
    /// A session's stop under the server's `shutdown`; `cancel` is the flag its running
    /// statement polls.
    pub fn new(shutdown: &CancellationToken, cancel: Arc<AtomicBool>) -> SessionStop {
        SessionStop {
            token: shutdown.child_token(),
            cancel,
            reader: Arc::new(Mutex::new(None)),
        }
    }

    /// Whether the session is stopped (the server shuts down, or it was terminated).
    pub fn is_stopped(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Completes when the session is stopped.
    pub async fn stopped(&self) {
        self.token.cancelled().await;
    }

    /// Keeps a handle on the session's plain socket, whose read side a stop shuts down.
    /// The session's reads must check [`SessionStop::is_stopped`] before blocking: a stop
    /// that came before this call found no socket to wake.
    pub fn watch_reads(&self, stream: &TcpStream) -> std::io::Result<()> {
        *lock(&self.reader) = Some(stream.try_clone()?);
        Ok(())
    }

    /// `pg_terminate_backend`: cancels the running statement, stops the session and wakes
    /// its read.
    pub fn terminate(&self) {
        self.cancel.store(true, Ordering::Relaxed);
        // The token before the wake: the woken read must find it set.
        self.token.cancel();
        self.wake_reader();
    }

    /// Wakes a read blocked on the client: it then reads the end of the stream and finds
    /// the session stopped (and can still write its FATAL).
    pub fn wake_reader(&self) {
        debug_assert!(self.is_stopped(), "a reader is woken only for a stop");
        if let Some(stream) = lock(&self.reader).as_ref() {
            let _ = stream.shutdown(Shutdown::Read);
        }
    }
}

/// The error of a write given up because the session was stopped and its client took
/// nothing for a [`WRITE_TICK`].
pub fn write_given_up() -> Error {
    Error::new(
        ErrorKind::TimedOut,
        "the session was stopped and its client is not reading",
    )
}

/// Runs a write through a runtime, giving it up if, once the session is stopped, it does
/// not finish within a [`WRITE_TICK`] (a TLS session's writes). Not by progress, as the
/// plain socket's: a streamed chunk (at most 1 MB) reaches a client that reads within the
/// tick, but a held result is one write, and a TLS client reading it slower than its size
/// per second when a shutdown comes is cut off (docs/design.md).
pub async fn write_until_stopped<T>(
    stop: &SessionStop,
    write: impl Future<Output = std::io::Result<T>>,
) -> std::io::Result<T> {
    tokio::pin!(write);
    tokio::select! {
        biased;
        done = &mut write => return done,
        () = stop.stopped() => {}
    }
    match tokio::time::timeout(WRITE_TICK, write).await {
        Ok(done) => done,
        Err(_) => Err(write_given_up()),
    }
}
