//! A plain (not TLS) TCP connection after startup: its session reads and writes the
//! socket with blocking calls, on the connection's own thread, with no runtime between.
//!
//! Why: through a runtime, each wait for the client is a `recv` that finds nothing, an
//! `epoll_wait`, a second `recv`, and the runtime's bookkeeping around them (its clock, its
//! timer wheel, the shutdown token's future). A blocking `recv` sleeps in the kernel at
//! once. At 64 pgbench clients under `sync` the runtime's part was about a tenth of the
//! connection threads' CPU, and the server is CPU-bound there (docs/BENCHMARKS.md, "The
//! server's socket I/O without a runtime").
//!
//! What the runtime gave is kept: the idle timeout is the socket's read timeout; a
//! shutdown or a terminate wakes a blocked read by shutting down the socket's read side
//! ([`crate::server::Shared::watch_reads`], [`SessionStop::terminate`]), and the next read
//! sees the stop. Writes time out every [`WRITE_TICK`], so that a write to a client that
//! does not read is given up once the session is stopped (see `stop`).

use crate::client::PlainParts;
use crate::connection::{Buffered, Next, Wire};
use crate::frame::{FrameCodec, FrameError};
use crate::server::{ReadWatch, Shared};
use crate::stop::{SessionStop, WRITE_TICK, write_given_up};
use bytes::BytesMut;
use pgwire::messages::PgWireBackendMessage;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use tokio_util::codec::{Decoder, Encoder};

/// The most bytes one `recv` asks for (a batch of pgbench's messages is under 100).
const READ_CHUNK_BYTES: usize = 8192;

/// Encoded answers past this many bytes are written before more are encoded.
const WRITE_CHUNK_BYTES: usize = 64 * 1024;

/// A plain TCP connection's socket, read and written by blocking calls.
pub struct BlockingWire {
    stream: TcpStream,
    codec: FrameCodec,
    /// Bytes read and not yet decoded: at most a message's tail plus one read.
    read_buf: BytesMut,
    write_buf: BytesMut,
    /// Where each `recv` puts its bytes.
    chunk: Box<[u8; READ_CHUNK_BYTES]>,
    /// Whether reads time out (the idle timeout): a timed-out read is then idleness.
    timed: bool,
    stop: SessionStop,
    _watch: ReadWatch,
}

impl BlockingWire {
    /// Sets the idle timeout as the socket's read timeout, the write tick as its write
    /// timeout, and registers the socket for a shutdown or a terminate.
    pub fn new(
        parts: PlainParts,
        shared: &Arc<Shared>,
        stop: SessionStop,
    ) -> std::io::Result<BlockingWire> {
        let PlainParts {
            stream,
            codec,
            read_buf,
        } = parts;
        let idle = shared.config.idle_session_timeout;
        stream.set_read_timeout(idle)?;
        stream.set_write_timeout(Some(WRITE_TICK))?;
        stop.watch_reads(&stream)?;
        let watch = shared.watch_reads(&stop);
        Ok(BlockingWire {
            stream,
            codec,
            read_buf,
            write_buf: BytesMut::new(),
            chunk: Box::new([0; READ_CHUNK_BYTES]),
            timed: idle.is_some(),
            stop,
            _watch: watch,
        })
    }

    fn decode(&mut self) -> Result<Option<pgwire::messages::PgWireFrontendMessage>, FrameError> {
        self.codec.decode(&mut self.read_buf)
    }

    /// One blocking read into the buffer: the bytes read (0 at the end of the stream).
    /// Through `chunk`, not the buffer's spare room: that would be zeroed for each read.
    fn read_more(&mut self) -> std::io::Result<usize> {
        loop {
            match self.stream.read(&mut self.chunk[..]) {
                Err(error) if error.kind() == ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
                Ok(read) => {
                    self.read_buf.extend_from_slice(&self.chunk[..read]);
                    return Ok(read);
                }
            }
        }
    }
}

/// Writes all of `bytes`. A send the client leaves blocked for a whole tick (the socket's
/// write timeout) is tried again. Once the session is stopped, two such ticks in a row
/// with no byte taken give the write up: the first may have begun before the stop, so
/// the client is given at least one whole tick after it (at most two).
fn send(stream: &mut TcpStream, stop: &SessionStop, bytes: &[u8]) -> std::io::Result<()> {
    let mut sent = 0;
    let mut idle_ticks_stopped = 0;
    while sent < bytes.len() {
        match stream.write(&bytes[sent..]) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(written) => {
                sent += written;
                idle_ticks_stopped = 0;
            }
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if stop.is_stopped() {
                    idle_ticks_stopped += 1;
                    if idle_ticks_stopped >= 2 {
                        return Err(write_given_up());
                    }
                }
            }
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

impl Wire for BlockingWire {
    fn next_message(&mut self, _shared: &Shared) -> Next {
        loop {
            // As the runtime's wait: a stop comes before a message already read.
            if self.stop.is_stopped() {
                return Next::Shutdown;
            }
            match self.decode() {
                Ok(Some(message)) => return Next::Message(message),
                Err(error) => return Next::Failed(error),
                Ok(None) => {}
            }
            match self.read_more() {
                Ok(0) if self.stop.is_stopped() => return Next::Shutdown,
                Ok(0) => return Next::Closed,
                Ok(_) => {}
                Err(error)
                    if self.timed
                        && matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    return Next::IdleTimeout;
                }
                Err(error) => return Next::Failed(FrameError::Io(error)),
            }
        }
    }

    fn buffered(&mut self) -> Buffered {
        match self.decode() {
            Ok(Some(message)) => Buffered::Message(message),
            Ok(None) => Buffered::Nothing,
            Err(error) => Buffered::Failed(error),
        }
    }

    fn write_all(&mut self, messages: Vec<PgWireBackendMessage>) -> std::io::Result<()> {
        self.write_buf.clear();
        for message in messages {
            self.codec.encode(message, &mut self.write_buf)?;
            // A long result goes out as it is encoded, not encoded whole first.
            if self.write_buf.len() >= WRITE_CHUNK_BYTES {
                send(&mut self.stream, &self.stop, &self.write_buf)?;
                self.write_buf.clear();
            }
        }
        send(&mut self.stream, &self.stop, &self.write_buf)
    }

    fn fatal(&mut self, message: PgWireBackendMessage) {
        let _ = self.write_all(vec![message]);
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}
