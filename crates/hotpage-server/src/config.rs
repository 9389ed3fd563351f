//! What `hotpage serve` is told: where to listen and its limits.

use crate::auth::Authentication;
use crate::error::ServerError;
use crate::tls::TlsConfig;
use std::net::SocketAddr;
use std::time::Duration;

/// The server's address and limits.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Sessions at once; one more is refused with FATAL 53300, as PostgreSQL's
    /// `max_connections`. Cancel requests do not take a slot.
    pub max_connections: usize,
    /// Close a connection that sends nothing for this long (FATAL 57P05 outside a
    /// transaction block, 25P03 inside one); `None` waits forever.
    pub idle_session_timeout: Option<Duration>,
    /// A statement still running after this long is cancelled where it can be (see
    /// docs/design.md: between the statements of a Query, and a read's rows); `None` for no
    /// limit.
    pub statement_timeout: Option<Duration>,
    /// The largest frontend message, in bytes: a longer one ends the connection with
    /// FATAL 54000, before its bytes are read.
    pub max_message_bytes: usize,
    /// The longest SQL text of a Query or Parse, in bytes: a longer one is ERROR 54000.
    pub max_statement_bytes: usize,
    /// How long a new connection may take to send its startup message, and then each
    /// message of its authentication exchange.
    pub startup_timeout: Duration,
    /// Who may connect: trust (loopback addresses only) or SCRAM-SHA-256.
    pub authentication: Authentication,
    /// TLS for clients that ask for it (SSLRequest); `None` refuses it and the client
    /// goes on in clear or gives up, as its sslmode says.
    pub tls: Option<TlsConfig>,
}

/// The smallest `max_message_bytes`: room for any startup-sized message and a short query.
pub const MESSAGE_BYTES_MIN: usize = 1024;

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 5433)),
            max_connections: 100,
            idle_session_timeout: None,
            statement_timeout: None,
            max_message_bytes: 64 << 20,
            max_statement_bytes: 1 << 20,
            startup_timeout: Duration::from_secs(10),
            authentication: Authentication::Trust,
            tls: None,
        }
    }
}

impl ServerConfig {
    /// Checks the limits.
    pub fn validate(&self) -> Result<(), ServerError> {
        if !(1..=10_000).contains(&self.max_connections) {
            return Err(ServerError::InvalidConfig(format!(
                "max connections must be from 1 to 10000, not {}",
                self.max_connections
            )));
        }
        // A frame's length is an i32 on the wire.
        if !(MESSAGE_BYTES_MIN..=i32::MAX as usize).contains(&self.max_message_bytes) {
            return Err(ServerError::InvalidConfig(format!(
                "max message bytes must be from {MESSAGE_BYTES_MIN} to {}, not {}",
                i32::MAX,
                self.max_message_bytes
            )));
        }
        if self.max_statement_bytes == 0 || self.max_statement_bytes > self.max_message_bytes {
            return Err(ServerError::InvalidConfig(format!(
                "max statement bytes must be from 1 to the max message bytes ({}), not {}",
                self.max_message_bytes, self.max_statement_bytes
            )));
        }
        if matches!(self.authentication, Authentication::Trust) && !self.listen.ip().is_loopback() {
            return Err(ServerError::InvalidConfig(format!(
                "{} is not a loopback address: other hosts may connect only with password authentication (--auth scram --password-file FILE)",
                self.listen
            )));
        }
        let zero = Some(Duration::ZERO);
        if self.idle_session_timeout == zero || self.statement_timeout == zero {
            return Err(ServerError::InvalidConfig(
                "a timeout of 0 ms: leave the option out for no timeout".to_string(),
            ));
        }
        Ok(())
    }
}
