//! hotpage-server: the PostgreSQL wire protocol (version 3) over hotpage's SQL layer, so
//! that psql, pgbench and PostgreSQL's drivers reach a hotpage database.
//!
//! ```text
//! server      bind, accept, the connection slots, cancel keys, shutdown on a signal
//! connection  one connection's async loop: startup, reading messages, limits, timeouts
//! frame       the message framing: exact frames, a size limit, a structural check first
//! client      the connection as pgwire's startup handlers see it (ClientInfo + Sink)
//! auth        SCRAM-SHA-256: the password file of verifiers, pgwire's exchange driven
//! tls         rustls: the certificate and key files, the acceptor
//! session     the thread that owns a connection's SqlSession and answers its messages
//! extended    Parse, Bind, Describe, Execute, Close, Sync: statements and portals
//! encode      results and errors as backend messages, text and binary formats
//! ```
//!
//! Threading: tokio runs the sockets; each connection's SQL session lives on its own OS
//! thread, because the engine is synchronous and a commit waits for an fsync (group
//! commit). The async side never calls the engine, so no wait blocks the runtime.

mod auth;
mod client;
mod config;
mod connection;
mod encode;
mod error;
mod extended;
mod frame;
mod server;
mod session;
mod tls;

pub use auth::{Authentication, PasswordFile, scram_verifier};
pub use config::ServerConfig;
pub use error::ServerError;
pub use server::{Server, ServerSummary, ShutdownHandle};
pub use tls::TlsConfig;
