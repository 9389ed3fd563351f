//! The listener: binds, accepts, gives each connection a task, keeps the connection slots
//! and the cancel keys, and shuts down on SIGINT/SIGTERM.

use crate::auth::{Authentication, scram_auth};
use crate::config::ServerConfig;
use crate::connection;
use crate::encode::{self, code};
use crate::error::ServerError;
use crate::stop::SessionStop;
use crate::tls::TlsConfig;
use bytes::BytesMut;
use hotpage_sql::SqlDatabase;
use pgwire::api::auth::sasl::scram::ScramAuth;
use pgwire::messages::startup::SecretKey;
use pgwire::tokio::TlsAcceptor;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Threads of the shared async runtime: it only accepts connections and waits for signals
/// (each connection runs on its own thread, with its own runtime for its socket).
const NETWORK_THREADS: usize = 1;

/// Connection threads at once, per connection slot: room for the connections still in
/// startup or sending a cancel request while every slot is taken (PostgreSQL's
/// postmaster allows twice `max_connections` backends the same way).
const THREADS_PER_SLOT: usize = 2;

/// What every connection shares.
pub struct Shared {
    pub sql: Arc<SqlDatabase>,
    pub config: ServerConfig,
    /// One permit per session; cancel requests take none.
    pub slots: Arc<Semaphore>,
    /// One permit per connection thread (`THREADS_PER_SLOT` per slot).
    threads: Arc<Semaphore>,
    cancel_keys: Mutex<HashMap<i32, CancelKey>>,
    pub shutdown: CancellationToken,
    pub connections: AtomicU64,
    /// pgwire's SCRAM mechanism, when the server asks for passwords: for connections in
    /// clear, and for TLS connections (which are also offered SCRAM-SHA-256-PLUS, bound
    /// to the certificate; offering it in clear makes libpq refuse the server).
    pub scram: Option<ScramPair>,
    /// The TLS acceptor, when the server offers TLS.
    pub tls: Option<TlsAcceptor>,
    /// The stop of each session that reads its socket with blocking calls, by watch id:
    /// a shutdown shuts their read sides down, which wakes a read blocked on the client.
    read_watches: Mutex<HashMap<u64, SessionStop>>,
    next_watch: AtomicU64,
}

/// Keeps a socket in the shutdown's list (`Shared::watch_reads`) until dropped.
pub struct ReadWatch {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for ReadWatch {
    fn drop(&mut self) {
        lock(&self.shared.read_watches).remove(&self.id);
    }
}

struct CancelKey {
    secret: i32,
    flag: Arc<AtomicBool>,
}

/// The SCRAM mechanisms of a server that asks for passwords.
pub struct ScramPair {
    clear: ScramAuth,
    tls: Option<ScramAuth>,
}

impl ScramPair {
    /// The mechanism for a connection: with channel binding only over TLS.
    pub fn for_connection(&self, secure: bool) -> &ScramAuth {
        match &self.tls {
            Some(tls) if secure => tls,
            _ => &self.clear,
        }
    }
}

/// Removes a session's cancel key when its connection ends.
pub struct CancelRegistration {
    shared: Arc<Shared>,
    pid: i32,
}

impl Drop for CancelRegistration {
    fn drop(&mut self) {
        lock(&self.shared.cancel_keys).remove(&self.pid);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The map stays consistent across a panic (each change is one insert or remove).
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// Registers session `pid`'s cancel key; `flag` is set when a cancel request names it.
    pub fn register_cancel(
        self: &Arc<Self>,
        pid: i32,
        secret: i32,
        flag: Arc<AtomicBool>,
    ) -> CancelRegistration {
        lock(&self.cancel_keys).insert(pid, CancelKey { secret, flag });
        CancelRegistration {
            shared: Arc::clone(self),
            pid,
        }
    }

    /// A CancelRequest: sets the session's flag if the key matches (else nothing, and the
    /// requester is told nothing either way, as in PostgreSQL).
    pub fn cancel(&self, pid: i32, secret: &SecretKey) {
        if let Some(key) = lock(&self.cancel_keys).get(&pid)
            && secret.eq_value(&SecretKey::I32(key.secret))
        {
            key.flag.store(true, Ordering::Relaxed);
        }
    }

    /// Puts a session whose socket is read with blocking calls (its `stop` watches the
    /// socket: [`SessionStop::watch_reads`]) in the shutdown's list. Its reads must check
    /// the stop before blocking: a session watched after the shutdown's sweep
    /// (`end_blocked_reads`) is not woken by it, but then its stop is already set.
    pub fn watch_reads(self: &Arc<Self>, stop: &SessionStop) -> ReadWatch {
        let id = self.next_watch.fetch_add(1, Ordering::Relaxed);
        lock(&self.read_watches).insert(id, stop.clone());
        ReadWatch {
            shared: Arc::clone(self),
            id,
        }
    }

    /// After the shutdown token is set: wakes every read blocked on a client. A socket's
    /// read side shut down reads as the end of the stream; the reader then sees the token
    /// (and can still write its FATAL).
    fn end_blocked_reads(&self) {
        debug_assert!(self.shutdown.is_cancelled());
        for stop in lock(&self.read_watches).values() {
            stop.wake_reader();
        }
    }
}

/// Stops a running server from another thread (as a signal does).
#[derive(Clone)]
pub struct ShutdownHandle(CancellationToken);

impl ShutdownHandle {
    /// Stop accepting, let in-flight statements finish, end every connection.
    pub fn shutdown(&self) {
        self.0.cancel();
    }
}

/// What a server did, when it has stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerSummary {
    /// Sessions started (cancel requests and refused connections not counted).
    pub sessions: u64,
}

/// A bound server, not yet accepting.
pub struct Server {
    runtime: Runtime,
    listener: TcpListener,
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    signals: Vec<Signal>,
}

impl Server {
    /// Binds `config.listen` and installs the SIGINT/SIGTERM handlers (from here on a
    /// signal asks for a clean shutdown instead of killing the process).
    pub fn bind(sql: Arc<SqlDatabase>, config: ServerConfig) -> Result<Server, ServerError> {
        let listener = Server::listen(&config)?;
        Server::with_listener(sql, config, listener)
    }

    /// Binds `config.listen` alone, before there is a database to serve: `hotpage serve`
    /// learns that the address is taken before it opens (or creates) the database.
    pub fn listen(config: &ServerConfig) -> Result<std::net::TcpListener, ServerError> {
        config.validate()?;
        let addr = config.listen;
        let listener = std::net::TcpListener::bind(addr)
            .and_then(|listener| listener.set_nonblocking(true).map(|()| listener))
            .map_err(|source| ServerError::Bind { addr, source })?;
        Ok(listener)
    }

    /// [`Server::bind`] on a listener [`Server::listen`] bound.
    pub fn with_listener(
        sql: Arc<SqlDatabase>,
        config: ServerConfig,
        listener: std::net::TcpListener,
    ) -> Result<Server, ServerError> {
        config.validate()?;
        let scram = match &config.authentication {
            Authentication::Trust => None,
            Authentication::Scram(file) => Some(ScramPair {
                clear: scram_auth(file, None)?,
                tls: match &config.tls {
                    Some(tls) => Some(scram_auth(file, Some(tls.cert_pem()))?),
                    None => None,
                },
            }),
        };
        let tls = config.tls.as_ref().map(TlsConfig::acceptor);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(NETWORK_THREADS)
            .thread_name("hotpage-net")
            .enable_all()
            .build()
            .map_err(ServerError::Start)?;
        let addr = config.listen;
        let (listener, signals) = runtime.block_on(async {
            let listener = TcpListener::from_std(listener)
                .map_err(|source| ServerError::Bind { addr, source })?;
            let signals = [SignalKind::interrupt(), SignalKind::terminate()]
                .into_iter()
                .map(signal)
                .collect::<Result<Vec<_>, _>>()
                .map_err(ServerError::Start)?;
            Ok::<_, ServerError>((listener, signals))
        })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| ServerError::Bind { addr, source })?;
        let shared = Arc::new(Shared {
            sql,
            slots: Arc::new(Semaphore::new(config.max_connections)),
            threads: Arc::new(Semaphore::new(
                config.max_connections.saturating_mul(THREADS_PER_SLOT),
            )),
            config,
            cancel_keys: Mutex::new(HashMap::new()),
            shutdown: CancellationToken::new(),
            connections: AtomicU64::new(0),
            scram,
            tls,
            read_watches: Mutex::new(HashMap::new()),
            next_watch: AtomicU64::new(0),
        });
        Ok(Server {
            runtime,
            listener,
            local_addr,
            shared,
            signals,
        })
    }

    /// The address it listens on (the port the system chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle(self.shared.shutdown.clone())
    }

    /// Accepts connections until a signal or [`ShutdownHandle::shutdown`]; then stops
    /// accepting, lets each connection finish the statement it runs, ends the connections
    /// (FATAL 57P01) and waits until every session is dropped. The caller then closes
    /// the database. A second signal while waiting gives up waiting
    /// ([`ServerError::ForcedShutdown`]).
    pub fn run(self) -> Result<ServerSummary, ServerError> {
        let Server {
            runtime,
            listener,
            shared,
            mut signals,
            ..
        } = self;
        let tracker = TaskTracker::new();
        runtime.block_on(async {
            accept_until_shutdown(&listener, &shared, &tracker, &mut signals).await;
            shared.end_blocked_reads();
            drop(listener);
            tracker.close();
            tokio::select! {
                () = tracker.wait() => Ok(ServerSummary {
                    sessions: shared.connections.load(Ordering::Relaxed),
                }),
                () = any_signal(&mut signals) => Err(ServerError::ForcedShutdown(tracker.len())),
            }
        })
    }
}

/// Waits for the next SIGINT or SIGTERM.
async fn any_signal(signals: &mut [Signal]) {
    let (first, rest) = signals.split_at_mut(1);
    match (first.first_mut(), rest.first_mut()) {
        (Some(a), Some(b)) => {
            tokio::select! {
                _ = a.recv() => {}
                _ = b.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}

async fn accept_until_shutdown(
    listener: &TcpListener,
    shared: &Arc<Shared>,
    tracker: &TaskTracker,
    signals: &mut [Signal],
) {
    loop {
        tokio::select! {
            () = shared.shutdown.cancelled() => return,
            () = any_signal(signals) => {
                shared.shutdown.cancel();
                return;
            }
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => start_connection(socket, shared, tracker),
                // Out of file descriptors and the like: the condition may pass; do not spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
}

/// Gives an accepted socket its own thread (`connection::serve`), which the tracker
/// counts until the connection's session is dropped. Past the thread limit the socket is
/// refused at once (FATAL 53300), as PostgreSQL's postmaster refuses a connection when it
/// has too many children.
fn start_connection(socket: TcpStream, shared: &Arc<Shared>, tracker: &TaskTracker) {
    let Ok(permit) = Arc::clone(&shared.threads).try_acquire_owned() else {
        tracker.spawn(refuse(socket));
        return;
    };
    // As PostgreSQL: an answer goes out at once, not held back for more to send with it.
    let _ = socket.set_nodelay(true);
    let Ok(socket) = socket.into_std() else {
        return;
    };
    let shared = Arc::clone(shared);
    let token = tracker.token();
    // A thread that cannot start drops its closure: the socket closes, the client sees
    // the connection end.
    let _ = std::thread::Builder::new()
        .name("hotpage-conn".into())
        .spawn(move || {
            connection::serve(socket, &shared);
            // Every handle on the database goes before the tracker hears of the end: the
            // caller closes the database once the tracker is empty.
            drop(shared);
            drop(permit);
            drop(token);
        });
}

/// Refuses a connection without reading from it: one ErrorResponse, then close.
async fn refuse(socket: TcpStream) {
    let fatal = encode::fatal(
        code::TOO_MANY_CONNECTIONS,
        "sorry, too many clients already",
    );
    let mut bytes = BytesMut::new();
    if fatal.encode(&mut bytes).is_ok() {
        // A new socket's send buffer takes these few bytes at once; if not, it closes.
        let _ = socket.try_write(&bytes);
    }
}
