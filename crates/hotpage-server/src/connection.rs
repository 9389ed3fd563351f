//! One connection: TLS negotiation (when the server has a certificate), the startup
//! message or a cancel request, authentication (trust, or SCRAM-SHA-256), then the
//! message loop. Messages go to the session
//! thread in batches (all that a client pipelined, up to a Sync, Query or Flush); the
//! answers come back and are written. Limits: the connection slots (FATAL 53300), the
//! message size (FATAL 54000), the idle timeout (FATAL 57P05 / 25P03); a shutdown ends the
//! connection after its batch (FATAL 57P01).

use crate::auth::{self, Outcome};
use crate::client::Client;
use crate::encode::{self, code};
use crate::frame::{FrameCodec, FrameError};
use crate::server::Shared;
use crate::session::{Reply, SessionThread, StatementLimits};
use futures::{FutureExt, SinkExt, StreamExt};
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
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::codec::{Framed, FramedParts};

/// The most messages handed to the session thread at once.
const BATCH_MESSAGES_MAX: usize = 256;

/// Serves one accepted socket until it closes. Errors end the connection quietly: the
/// client has gone or broke the protocol, and was told so where it could be.
pub async fn serve(socket: TcpStream, shared: Arc<Shared>) {
    let _ = run(socket, &shared).await;
}

async fn run(socket: TcpStream, shared: &Arc<Shared>) -> std::io::Result<()> {
    let timeout = shared.config.startup_timeout;
    let Ok(Ok(Some(framed))) =
        tokio::time::timeout(timeout, negotiate_tls::<()>(socket, shared.tls.clone())).await
    else {
        return Ok(());
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
            Ok(())
        }
        Ok(Some(Ok(PgWireFrontendMessage::Startup(startup)))) => {
            start_session(client, &startup, shared).await
        }
        Ok(Some(Err(error))) => send_fatal(&mut client, frame_error(&error)).await,
        // A timeout, a closed socket, or a message that cannot come first.
        _ => Ok(()),
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

/// The parameters reported at startup (ParameterStatus), as PostgreSQL 16 reports them.
struct ServerParameters;

impl ServerParameterProvider for ServerParameters {
    fn server_parameters<C: ClientInfo>(&self, client: &C) -> Option<HashMap<String, String>> {
        let mut params: HashMap<String, String> = [
            ("server_version", "16.0"),
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

/// After a startup message: a slot, the password exchange (SCRAM), the session and its
/// thread, the end of startup, then the message loop.
async fn start_session(
    mut client: Client,
    startup: &Startup,
    shared: &Arc<Shared>,
) -> std::io::Result<()> {
    if shared.shutdown.is_cancelled() {
        let fatal = encode::fatal("57P03", "the database system is shutting down");
        return send_fatal(&mut client, fatal).await;
    }
    let Ok(_slot) = Arc::clone(&shared.slots).try_acquire_owned() else {
        let fatal = encode::fatal(
            code::TOO_MANY_CONNECTIONS,
            "sorry, too many clients already",
        );
        return send_fatal(&mut client, fatal).await;
    };
    if let Err(error) = protocol_negotiation(&mut client, startup).await {
        let fatal = encode::fatal(code::PROTOCOL_VIOLATION, error.to_string());
        return send_fatal(&mut client, fatal).await;
    }
    save_startup_parameters_to_metadata(&mut client, startup);
    if let Some(pair) = &shared.scram {
        let scram = pair.for_connection(client.is_secure());
        let timeout = shared.config.startup_timeout;
        match auth::scram_exchange(&mut client, scram, timeout).await? {
            Outcome::Authenticated => {}
            Outcome::Refused(fatal) => return send_fatal(&mut client, fatal).await,
            Outcome::Gone => return Ok(()),
        }
    }
    let session = shared.sql.session();
    // BackendKeyData's pid (what a cancel request names) is pg_stat_activity.pid.
    let pid = i32::try_from(session.pid()).unwrap_or(i32::MAX);
    let secret: i32 = rand::random();
    let cancel = Arc::new(AtomicBool::new(false));
    let limits = StatementLimits {
        timeout: shared.config.statement_timeout,
        max_statement_bytes: shared.config.max_statement_bytes,
    };
    let Ok((thread, replies)) = SessionThread::spawn(session, limits, Arc::clone(&cancel)) else {
        let fatal = encode::fatal(
            code::INSUFFICIENT_RESOURCES,
            "could not start a thread for the session",
        );
        return send_fatal(&mut client, fatal).await;
    };
    let _registration = shared.register_cancel(pid, secret, cancel);
    client.set_pid_and_secret_key(pid, SecretKey::I32(secret));
    shared.connections.fetch_add(1, Ordering::Relaxed);
    let outcome = match finish_authentication(&mut client, &ServerParameters).await {
        Ok(()) => message_loop(&mut client, &thread, replies, shared).await,
        Err(_) => Ok(()),
    };
    // The session is dropped before the slot is given back and before a shutdown
    // closes the database.
    thread.finish().await;
    outcome
}

/// What ended the wait for the next message.
enum Next {
    Message(PgWireFrontendMessage),
    Closed,
    Failed(FrameError),
    IdleTimeout,
    Shutdown,
}

async fn next_message(client: &mut Client, shared: &Shared) -> Next {
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
        () = shared.shutdown.cancelled() => Next::Shutdown,
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

/// `first` and every message the client pipelined after it that is already read, up to
/// one that wants an answer before the client sends more (Sync, Query, Flush).
fn collect_batch(
    client: &mut Client,
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
        next = match client.next().now_or_never() {
            Some(Some(Ok(message))) => Some(message),
            Some(Some(Err(error))) => return (batch, BatchEnd::Failed(error)),
            Some(None) => return (batch, BatchEnd::Terminate),
            // Nothing more read yet: answer what came.
            None => None,
        };
    }
    (batch, BatchEnd::Open)
}

/// Writes a batch's answers as they come, flushing each chunk; returns the status of the
/// last ReadyForQuery (or `status` if none), or None if the session thread is gone.
async fn write_replies(
    client: &mut Client,
    replies: &mut UnboundedReceiver<Reply>,
    mut status: TransactionStatus,
) -> std::io::Result<Option<TransactionStatus>> {
    loop {
        match replies.recv().await {
            Some(Reply::Messages(messages)) => {
                for message in messages {
                    if let PgWireBackendMessage::ReadyForQuery(ready) = &message {
                        status = ready.status;
                    }
                    client.feed(message).await?;
                }
                client.flush().await?;
            }
            Some(Reply::Done) => return Ok(Some(status)),
            None => return Ok(None),
        }
    }
}

/// Reads, hands over and answers batches until the connection ends.
async fn message_loop(
    client: &mut Client,
    thread: &SessionThread,
    mut replies: UnboundedReceiver<Reply>,
    shared: &Shared,
) -> std::io::Result<()> {
    let mut status = TransactionStatus::Idle;
    loop {
        let first = match next_message(client, shared).await {
            Next::Message(message) => message,
            Next::Closed => return Ok(()),
            Next::Failed(error) => return send_fatal(client, frame_error(&error)).await,
            Next::IdleTimeout => return send_fatal(client, idle_timeout(status)).await,
            Next::Shutdown => {
                let fatal = encode::fatal(
                    code::ADMIN_SHUTDOWN,
                    "terminating connection due to administrator command",
                );
                return send_fatal(client, fatal).await;
            }
        };
        let (batch, end) = collect_batch(client, first);
        if !batch.is_empty() {
            let answered = if thread.send(batch) {
                write_replies(client, &mut replies, status).await?
            } else {
                None
            };
            let Some(now) = answered else {
                let fatal = encode::fatal("XX000", "the session's thread ended unexpectedly");
                return send_fatal(client, fatal).await;
            };
            status = now;
        }
        match end {
            BatchEnd::Open => {}
            BatchEnd::Terminate => return Ok(()),
            BatchEnd::Failed(error) => return send_fatal(client, frame_error(&error)).await,
        }
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
