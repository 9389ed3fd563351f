//! Errors of the PostgreSQL-wire target. A server's error keeps what the server said
//! (severity, SQLSTATE, message, detail, hint) so that the command prints it as psql
//! would; anything else (a refused connection, a closed socket) keeps its cause chain.

use std::fmt;

/// What a server (or the connection to it) said when something failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerMessage {
    /// The SQLSTATE, when the server sent an error (`23505`, `42P01`, …); `None` for a
    /// failure of the connection itself.
    pub sqlstate: Option<String>,
    /// One line: `ERROR 42P01: relation "x" does not exist` (with `; DETAIL: …` and
    /// `; HINT: …` when the server sent them), or the client's cause chain.
    pub text: String,
}

impl ServerMessage {
    /// What `error` says, on one line.
    pub fn from_postgres(error: &postgres::Error) -> ServerMessage {
        if let Some(db) = error.as_db_error() {
            let mut text = format!("{} {}: {}", db.severity(), db.code().code(), db.message());
            if let Some(detail) = db.detail() {
                text.push_str(&format!("; DETAIL: {detail}"));
            }
            if let Some(hint) = db.hint() {
                text.push_str(&format!("; HINT: {hint}"));
            }
            return ServerMessage {
                sqlstate: Some(db.code().code().to_string()),
                text,
            };
        }
        // "error connecting to server: Connection refused (os error 111)".
        let mut text = error.to_string();
        let mut cause = std::error::Error::source(error);
        while let Some(inner) = cause {
            text.push_str(&format!(": {inner}"));
            cause = inner.source();
        }
        ServerMessage {
            sqlstate: None,
            text,
        }
    }
}

impl fmt::Display for ServerMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Why the PostgreSQL-wire target failed.
#[derive(Debug, thiserror::Error)]
pub enum PgClientError {
    /// `--url` is not a connection string the client understands.
    #[error(
        "bad --url {url:?}: {reason} (expected postgres://user[:password]@host[:port]/database)"
    )]
    BadUrl {
        /// The URL as given, without its password.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A connection could not be opened (refused, timed out, refused by the server).
    #[error("cannot connect to {server}: {message}")]
    Connect {
        /// `host:port` (or the socket directory).
        server: String,
        /// What failed.
        message: ServerMessage,
    },
    /// The setup script failed.
    #[error("the setup SQL failed: {0}")]
    Setup(ServerMessage),
    /// The server could not prepare the statement.
    #[error("the statement cannot be prepared: {0}")]
    Prepare(ServerMessage),
    /// The statement has parameters (`$1`), which the driver has no values for.
    #[error(
        "--sql must take no parameters, but the statement has {0} ($1 ...): it is executed as it is for every row"
    )]
    Parameters(usize),
    /// A statement failed during the run.
    #[error("{0}")]
    Statement(ServerMessage),
    /// Reading the server's wait statistics failed.
    #[error("reading the server's waits: {0}")]
    Waits(ServerMessage),
}

impl PgClientError {
    /// The SQLSTATE the server sent with the error, if it sent one.
    pub fn sqlstate(&self) -> Option<&str> {
        match self {
            PgClientError::Connect { message, .. }
            | PgClientError::Setup(message)
            | PgClientError::Prepare(message)
            | PgClientError::Statement(message)
            | PgClientError::Waits(message) => message.sqlstate.as_deref(),
            PgClientError::BadUrl { .. } | PgClientError::Parameters(_) => None,
        }
    }

    /// Whether the error is in what the user gave (the URL, the setup script, the
    /// statement) rather than in running it: the command exits 2 for these.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            PgClientError::BadUrl { .. }
                | PgClientError::Setup(_)
                | PgClientError::Prepare(_)
                | PgClientError::Parameters(_)
        )
    }
}
