//! One connection, on its own thread: TLS negotiation (when the server has a
//! certificate), the startup message or a cancel request, authentication (trust, or
//! SCRAM-SHA-256), then the session's message loop. Until the session starts, the
//! socket's I/O is async (tokio, on a runtime of this thread's own, with timeouts). Then a
//! plain TCP session leaves the runtime and uses blocking calls ([`BlockingWire`]); a TLS
//! session stays on it ([`AsyncWire`]). The session's statements run between the waits
//! for the client, on the same thread, with no hand-off to another. Messages are read in
//! batches (all that a client pipelined, up to a Sync, Query or Flush) and each batch's
//! answers are written with one flush. Limits: the connection slots (FATAL 53300), the
//! message size (FATAL 54000), the idle timeout (FATAL 57P05 / 25P03); a shutdown ends the
//! connection after its batch, and `pg_terminate_backend` ends it after cancelling its
//! statement (FATAL 57P01 for both: see `stop`).

use crate::auth::{self, Outcome};
use crate::blocking::BlockingWire;
use crate::client::Client;
use crate::encode::{self, code};
use crate::frame::{FrameCodec, FrameError};
use crate::server::{CancelRegistration, Shared};
use crate::session::{self, Output, SessionState, StatementLimits, Transport};
use crate::stop::{SessionStop, write_until_stopped};
use futures::{FutureExt, SinkExt, StreamExt};
use hotpage_sql::SqlSession;
use pgwire::api::auth::{
    ServerParameterProvider, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::{ClientInfo, METADATA_APPLICATION_NAME, METADATA_USER};
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::startup::{SecretKey, Startup};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::negotiate_tls;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::codec::{Framed, FramedParts};

/// The most messages handed to the session at once.
const BATCH_MESSAGES_MAX: usize = 256;

/// Serves one accepted socket until it closes; runs on the connection's own thread.
/// Errors end the connection quietly: the client has gone or broke the protocol, and was
/// told so where it could be.
pub fn serve(socket: std::net::TcpStream, shared: &Arc<Shared>) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let started = runtime.block_on(async {
        let socket = TcpStream::from_std(socket).ok()?;
        start(socket, shared).await.ok().flatten()
    });
    let Some(Started {
        client,
        session,
        cancel,
        stop,
        _slot,
        _registration,
    }) = started
    else {
        return;
    };
    let limits = StatementLimits {
        timeout: shared.config.statement_timeout,
        max_statement_bytes: shared.config.max_statement_bytes,
    };
    let mut state = SessionState::new(session, limits, cancel);
    let mut out = Output::new(transport(client, runtime, shared, stop));
    session::run(&mut state, &mut out);
    // The session (and its engine session) is dropped before the slot is given back, and
    // before the caller's tracker token lets a shutdown close the database.
    drop(state);
}

/// The session's transport: blocking calls on a plain TCP socket (see `blocking`), else
/// the connection's runtime.
fn transport(
    client: Client,
    runtime: Runtime,
    shared: &Arc<Shared>,
    stop: SessionStop,
) -> Box<dyn Transport> {
    let client = {
        // Taking the socket off the runtime's reactor needs the reactor.
        let _entered = runtime.enter();
        match client.into_plain() {
            Ok(plain) => {
                match plain.and_then(|plain| BlockingWire::new(plain, shared, stop.clone())) {
                    Ok(wire) => return Box::new(Socket::new(wire, shared)),
                    // The socket could not be set up: the client sees the connection end.
                    Err(_) => return Box::new(Closed),
                }
            }
            Err(client) => *client,
        }
    };
    Box::new(Socket::new(
        AsyncWire {
            runtime,
            client,
            stop,
        },
        shared,
    ))
}

/// A connection that ended before its session could begin.
struct Closed;

impl Transport for Closed {
    fn read_batch(&mut self) -> Option<Vec<PgWireFrontendMessage>> {
        None
    }

    fn write(&mut self, _messages: Vec<PgWireBackendMessage>) {}
}

/// A session that has started: its socket, its SQL session, and what it holds.
struct Started {
    client: Client,
    session: SqlSession,
    cancel: Arc<AtomicBool>,
    stop: SessionStop,
    _slot: OwnedSemaphorePermit,
    _registration: CancelRegistration,
}

/// TLS, then the first message: a cancel request (done here) or a startup message (a
/// session, if it is let in).
async fn start(socket: TcpStream, shared: &Arc<Shared>) -> std::io::Result<Option<Started>> {
    let timeout = shared.config.startup_timeout;
    let Ok(Ok(Some(framed))) =
        tokio::time::timeout(timeout, negotiate_tls::<()>(socket, shared.tls.clone())).await
    else {
        return Ok(None);
    };
    let parts = framed.into_parts();
    let mut limited = FramedParts::new(
        parts.io,
        FrameCodec::new(parts.codec, shared.config.max_message_bytes),
    );
    limited.read_buf = parts.read_buf;
    limited.write_buf = parts.write_buf;
    let mut client = Client::new(Framed::from_parts(limited));
    match tokio::time::timeout(timeout, client.next()).await {
        Ok(Some(Ok(PgWireFrontendMessage::CancelRequest(cancel)))) => {
            shared.cancel(cancel.pid, &cancel.secret_key);
            Ok(None)
        }
        Ok(Some(Ok(PgWireFrontendMessage::Startup(startup)))) => {
            start_session(client, &startup, shared).await
        }
        Ok(Some(Err(error))) => {
            send_fatal(&mut client, frame_error(&error)).await?;
            Ok(None)
        }
        // A timeout, a closed socket, or a message that cannot come first.
        _ => Ok(None),
    }
}

/// The FATAL a framing error deserves.
pub fn frame_error(error: &FrameError) -> PgWireBackendMessage {
    match error {
        FrameError::TooLarge { .. } => encode::fatal(
            code::PROGRAM_LIMIT_EXCEEDED,
            format!("{error} (hotpage serve --max-message-bytes)"),
        ),
        _ => encode::fatal(code::PROTOCOL_VIOLATION, error.to_string()),
    }
}

async fn send_fatal(client: &mut Client, message: PgWireBackendMessage) -> std::io::Result<()> {
    client.send(message).await?;
    client.close().await
}

/// The parameters reported at startup (ParameterStatus), as PostgreSQL reports them;
/// `server_version` is the one `SHOW server_version` and `version()` give (it said 16.0
/// here and 15.0 there, and psql 15 warned of a mismatch at every connect).
struct ServerParameters;

impl ServerParameterProvider for ServerParameters {
    fn server_parameters<C: ClientInfo>(&self, client: &C) -> Option<HashMap<String, String>> {
        let mut params: HashMap<String, String> = [
            ("server_version", hotpage_sql::SERVER_VERSION),
            ("server_encoding", "UTF8"),
            ("client_encoding", "UTF8"),
            ("DateStyle", "ISO, MDY"),
            ("IntervalStyle", "postgres"),
            ("TimeZone", "UTC"),
            ("integer_datetimes", "on"),
            ("standard_conforming_strings", "on"),
            ("is_superuser", "on"),
            ("in_hot_standby", "off"),
            ("default_transaction_read_only", "off"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let metadata = client.metadata();
        for (key, name) in [
            (METADATA_USER, "session_authorization"),
            (METADATA_APPLICATION_NAME, "application_name"),
        ] {
            params.insert(
                name.to_string(),
                metadata.get(key).cloned().unwrap_or_default(),
            );
        }
        Some(params)
    }
}

/// After a startup message: a slot, the password exchange (SCRAM), the session, the end
/// of startup.
async fn start_session(
    mut client: Client,
    startup: &Startup,
    shared: &Arc<Shared>,
) -> std::io::Result<Option<Started>> {
    if shared.shutdown.is_cancelled() {
        let fatal = encode::fatal("57P03", "the database system is shutting down");
        send_fatal(&mut client, fatal).await?;
        return Ok(None);
    }
    let Ok(slot) = Arc::clone(&shared.slots).try_acquire_owned() else {
        let fatal = encode::fatal(
            code::TOO_MANY_CONNECTIONS,
            "sorry, too many clients already",
        );
        send_fatal(&mut client, fatal).await?;
        return Ok(None);
    };
    if let Err(error) = protocol_negotiation(&mut client, startup).await {
        let fatal = encode::fatal(code::PROTOCOL_VIOLATION, error.to_string());
        send_fatal(&mut client, fatal).await?;
        return Ok(None);
    }
    save_startup_parameters_to_metadata(&mut client, startup);
    if let Some(pair) = &shared.scram {
        let scram = pair.for_connection(client.is_secure());
        let timeout = shared.config.startup_timeout;
        match auth::scram_exchange(&mut client, scram, timeout).await? {
            Outcome::Authenticated => {}
            Outcome::Refused(fatal) => {
                send_fatal(&mut client, fatal).await?;
                return Ok(None);
            }
            Outcome::Gone => return Ok(None),
        }
    }
    let mut session = shared.sql.session();
    // BackendKeyData's pid (what a cancel request names) is pg_stat_activity.pid.
    let pid = i32::try_from(session.pid()).unwrap_or(i32::MAX);
    let secret: i32 = rand::random();
    let cancel = Arc::new(AtomicBool::new(false));
    let registration = shared.register_cancel(pid, secret, Arc::clone(&cancel));
    let stop = SessionStop::new(&shared.shutdown, Arc::clone(&cancel));
    let terminate = stop.clone();
    session.set_terminate_hook(Arc::new(move || terminate.terminate()));
    client.set_pid_and_secret_key(pid, SecretKey::I32(secret));
    shared.connections.fetch_add(1, Ordering::Relaxed);
    if finish_authentication(&mut client, &ServerParameters)
        .await
        .is_err()
    {
        return Ok(None);
    }
    Ok(Some(Started {
        client,
        session,
        cancel,
        stop,
        _slot: slot,
        _registration: registration,
    }))
}

/// What ended the wait for the next message.
pub enum Next {
    Message(PgWireFrontendMessage),
    Closed,
    Failed(FrameError),
    IdleTimeout,
    Shutdown,
}

async fn next_message(client: &mut Client, shared: &Shared, stop: &SessionStop) -> Next {
    let read = async {
        let next = match shared.config.idle_session_timeout {
            Some(idle) => match tokio::time::timeout(idle, client.next()).await {
                Ok(next) => next,
                Err(_) => return Next::IdleTimeout,
            },
            None => client.next().await,
        };
        match next {
            Some(Ok(message)) => Next::Message(message),
            Some(Err(error)) => Next::Failed(error),
            None => Next::Closed,
        }
    };
    tokio::select! {
        biased;
        () = stop.stopped() => Next::Shutdown,
        next = read => next,
    }
}

/// How a batch ended, besides its messages.
enum BatchEnd {
    /// More may follow.
    Open,
    /// Terminate, or the socket closed: end after answering the batch.
    Terminate,
    /// Bytes that are not a message: answer the batch, then end with a FATAL.
    Failed(FrameError),
}

/// A message that is already read, asked for without waiting.
pub enum Buffered {
    Message(PgWireFrontendMessage),
    Failed(FrameError),
    /// The client closed its end after the messages before.
    Closed,
    /// No whole message is read yet.
    Nothing,
}

/// How a connection's bytes move between its socket and its session.
pub trait Wire {
    /// Waits for the next message; the idle timeout and a shutdown end the wait.
    fn next_message(&mut self, shared: &Shared) -> Next;
    /// The next message if it is already read, without waiting for the client.
    fn buffered(&mut self) -> Buffered;
    /// Writes the messages and flushes them.
    fn write_all(&mut self, messages: Vec<PgWireBackendMessage>) -> std::io::Result<()>;
    /// Writes a FATAL and closes the socket (errors: the client is gone anyway).
    fn fatal(&mut self, message: PgWireBackendMessage);
}

/// `first` and every message the client pipelined after it that is already read, up to
/// one that wants an answer before the client sends more (Sync, Query, Flush).
fn collect_batch(
    wire: &mut impl Wire,
    first: PgWireFrontendMessage,
) -> (Vec<PgWireFrontendMessage>, BatchEnd) {
    use PgWireFrontendMessage as M;
    let mut batch = Vec::new();
    let mut next = Some(first);
    while let Some(message) = next.take() {
        if matches!(message, M::Terminate(_)) {
            return (batch, BatchEnd::Terminate);
        }
        let ends = matches!(message, M::Sync(_) | M::Query(_) | M::Flush(_));
        batch.push(message);
        if ends || batch.len() >= BATCH_MESSAGES_MAX {
            break;
        }
        next = match wire.buffered() {
            Buffered::Message(message) => Some(message),
            Buffered::Failed(error) => return (batch, BatchEnd::Failed(error)),
            Buffered::Closed => return (batch, BatchEnd::Terminate),
            // Nothing more read yet: answer what came.
            Buffered::Nothing => None,
        };
    }
    (batch, BatchEnd::Open)
}

/// A TLS connection's session: its socket I/O goes on through the connection's runtime
/// (rustls is driven by tokio-rustls here).
struct AsyncWire {
    runtime: Runtime,
    client: Client,
    stop: SessionStop,
}

impl Wire for AsyncWire {
    fn next_message(&mut self, shared: &Shared) -> Next {
        let client = &mut self.client;
        self.runtime
            .block_on(next_message(client, shared, &self.stop))
    }

    fn buffered(&mut self) -> Buffered {
        // Polling the socket needs the runtime's reactor.
        let _entered = self.runtime.enter();
        match self.client.next().now_or_never() {
            Some(Some(Ok(message))) => Buffered::Message(message),
            Some(Some(Err(error))) => Buffered::Failed(error),
            Some(None) => Buffered::Closed,
            None => Buffered::Nothing,
        }
    }

    fn write_all(&mut self, messages: Vec<PgWireBackendMessage>) -> std::io::Result<()> {
        let client = &mut self.client;
        let write = async {
            for message in messages {
                client.feed(message).await?;
            }
            client.flush().await
        };
        self.runtime
            .block_on(write_until_stopped(&self.stop, write))
    }

    fn fatal(&mut self, message: PgWireBackendMessage) {
        let fatal = send_fatal(&mut self.client, message);
        let _ = self
            .runtime
            .block_on(write_until_stopped(&self.stop, fatal));
    }
}

/// The connection's socket as the session's [`Transport`], over either [`Wire`].
struct Socket<W: Wire> {
    wire: W,
    shared: Arc<Shared>,
    /// The status of the last ReadyForQuery written (which idle timeout applies).
    status: TransactionStatus,
    /// How the last batch read ended.
    end: BatchEnd,
    /// The connection has ended: nothing more is read or written.
    closed: bool,
}

impl<W: Wire> Socket<W> {
    fn new(wire: W, shared: &Arc<Shared>) -> Socket<W> {
        Socket {
            wire,
            shared: Arc::clone(shared),
            status: TransactionStatus::Idle,
            end: BatchEnd::Open,
            closed: false,
        }
    }

    /// Ends the connection with a FATAL.
    fn fatal(&mut self, message: PgWireBackendMessage) {
        self.closed = true;
        self.wire.fatal(message);
    }
}

impl<W: Wire> Transport for Socket<W> {
    fn read_batch(&mut self) -> Option<Vec<PgWireFrontendMessage>> {
        if self.closed {
            return None;
        }
        match std::mem::replace(&mut self.end, BatchEnd::Open) {
            BatchEnd::Open => {}
            BatchEnd::Terminate => {
                self.closed = true;
                return None;
            }
            BatchEnd::Failed(error) => {
                self.fatal(frame_error(&error));
                return None;
            }
        }
        match self.wire.next_message(&self.shared) {
            Next::Message(first) => {
                let (batch, end) = collect_batch(&mut self.wire, first);
                if !batch.is_empty() {
                    self.end = end;
                    return Some(batch);
                }
                // Only a Terminate comes with no message before it.
                self.closed = true;
            }
            Next::Closed => self.closed = true,
            Next::Failed(error) => self.fatal(frame_error(&error)),
            Next::IdleTimeout => self.fatal(idle_timeout(self.status)),
            Next::Shutdown => self.fatal(encode::fatal(
                code::ADMIN_SHUTDOWN,
                "terminating connection due to administrator command",
            )),
        }
        None
    }

    fn write(&mut self, mut messages: Vec<PgWireBackendMessage>) {
        if self.closed {
            return;
        }
        // A FATAL ends the connection: what follows it (ReadyForQuery) is not sent.
        if let Some(at) = messages.iter().position(encode::is_fatal) {
            let fatal = messages.swap_remove(at);
            messages.truncate(at);
            if self.wire.write_all(messages).is_ok() {
                self.fatal(fatal);
            }
            self.closed = true;
            return;
        }
        let last_ready = messages.iter().rev().find_map(|message| match message {
            PgWireBackendMessage::ReadyForQuery(ready) => Some(ready.status),
            _ => None,
        });
        if let Some(status) = last_ready {
            self.status = status;
        }
        // A client that is gone: its session ends at the next read.
        if self.wire.write_all(messages).is_err() {
            self.closed = true;
        }
    }

    fn client_gone(&self) -> bool {
        self.closed
    }
}

/// The FATAL for a connection idle past the timeout: PostgreSQL's two codes, inside a
/// transaction block or not.
fn idle_timeout(status: TransactionStatus) -> PgWireBackendMessage {
    if status == TransactionStatus::Idle {
        encode::fatal(
            code::IDLE_SESSION_TIMEOUT,
            "terminating connection due to idle-session timeout",
        )
    } else {
        encode::fatal(
            code::IDLE_IN_TRANSACTION_TIMEOUT,
            "terminating connection due to idle-in-transaction timeout",
        )
    }
}
