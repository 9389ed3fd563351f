//! The server's error type.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The listening address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The async runtime or the signal handlers could not be set up.
    #[error("cannot start the server: {0}")]
    Start(#[source] std::io::Error),
    /// The password file could not be read or is not valid.
    #[error("password file {}: {reason}", path.display())]
    PasswordFile { path: PathBuf, reason: String },
    /// The TLS certificate or key could not be used.
    #[error("TLS: {0}")]
    Tls(String),
    /// A limit or option is out of range.
    #[error("{0}")]
    InvalidConfig(String),
    /// A second SIGINT/SIGTERM came while connections were still finishing: the server
    /// stopped without waiting for them (the database is not closed; the next open
    /// recovers it from its log).
    #[error("a second signal stopped the server before {0} connections had finished")]
    ForcedShutdown(usize),
}
