//! hotpage-server: the PostgreSQL wire protocol (version 3) over hotpage's SQL layer, so
//! that psql, pgbench and PostgreSQL's drivers reach a hotpage database.
//!
//! ```text
//! server      bind, accept (a thread per connection), the slots, cancel keys, signals
//! connection  one connection on its own thread: startup, reading batches, limits, timeouts
//! blocking    a plain TCP session's socket, read and written by blocking calls
//! frame       the message framing: exact frames, a size limit, a structural check first
//! client      the connection as pgwire's startup handlers see it (ClientInfo + Sink)
//! auth        SCRAM-SHA-256: the password file of verifiers, pgwire's exchange driven
//! tls         rustls: the certificate and key files, the acceptor
//! session     a connection's SqlSession and protocol state: answers its messages in order
//! stop        what ends a session from outside: a shutdown, pg_terminate_backend
//! extended    Parse, Bind, Describe, Execute, Close, Sync: statements and portals
//! encode      results and errors as backend messages, text and binary formats
//! ```
//!
//! Threading: each connection has its own OS thread, as a PostgreSQL backend has its own
//! process. Its startup (TLS, authentication) runs on a tokio runtime of the thread's own,
//! with timeouts. Then a plain TCP session reads and writes its socket with blocking calls
//! (the idle timeout is the socket's read timeout; a shutdown shuts the read side down to
//! wake it), and a TLS session goes on through the runtime. Its SQL session runs on the
//! same thread between those waits: the engine is synchronous and a commit waits for an
//! fsync (group commit), which blocks only that connection. A shared runtime only accepts.

mod auth;
mod blocking;
mod client;
mod config;
mod connection;
mod encode;
mod error;
mod extended;
mod frame;
mod server;
mod session;
mod stop;
mod tls;

#[cfg(test)]
mod panic_tests;

pub use auth::{Authentication, PasswordFile, scram_verifier};
pub use config::ServerConfig;
pub use error::ServerError;
pub use server::{Server, ServerSummary, ShutdownHandle};
pub use tls::TlsConfig;
