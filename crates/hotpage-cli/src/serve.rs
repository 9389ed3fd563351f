//! `hotpage serve`: the database behind PostgreSQL's wire protocol, for psql, pgbench and
//! PostgreSQL's drivers (the server itself is the `hotpage-server` crate).

use crate::CliError;
use crate::sql_shell::{close, open_options};
use anyhow::Context;
use hotpage::Database;
use hotpage_server::{Server, ServerConfig, ServerError};
use hotpage_sql::SqlDatabase;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// `hotpage serve --help`, after the one-line summary.
pub const LONG_ABOUT: &str = "Serve a hotpage database over PostgreSQL's wire protocol (v3).

psql, pgbench and PostgreSQL drivers (tested: the Rust postgres crate, Python's psycopg2)
connect to it as to PostgreSQL; the SQL is hotpage's (see hotpage sql). The database is opened, or
created if missing; after a crash (kill -9) the open recovers it from its log.

Each connection is a session with its own thread. The simple protocol (several statements
in one Query) and the extended protocol (Parse, Bind, Describe, Execute, Close, Sync;
named and unnamed statements and portals; text and binary formats) are served. Any user
and database name are accepted (trust), on loopback addresses only: password
authentication and TLS are not built yet.

SIGINT (Ctrl-C) or SIGTERM: stop accepting, let each connection finish its statement,
end the connections (FATAL 57P01), then close the database cleanly (a checkpoint). A
second signal stops at once without closing; the next open recovers.

Limits and the errors they give:
  --max-connections N        one more session: FATAL 53300 sorry, too many clients already
  --max-message-bytes B      a longer protocol message: FATAL 54000, the connection ends
  --max-statement-bytes B    longer SQL in a Query or Parse: ERROR 54000
  --idle-session-timeout-ms  no message for that long: FATAL 57P05 (25P03 inside a
                             transaction block)
  --statement-timeout-ms     ERROR 57014. The engine cannot stop a statement midway: the
                             timeout is checked before each further statement of a Query
                             and before a read's rows are sent (a write that ended is
                             reported as done). A cancel request (psql's Ctrl-C) does the
                             same.";

/// `hotpage serve --help`'s closing part.
pub const AFTER_HELP: &str = "Examples:
  hotpage serve --db ./mydb
  psql -h 127.0.0.1 -p 5433 -c 'CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)'
  echo \"INSERT INTO t (v) VALUES ('x');\" > insert.sql
  pgbench -h 127.0.0.1 -p 5433 -n -M prepared -f insert.sql -c 8 -T 10

Exit codes: 0 stopped by a signal and closed cleanly; 1 failure (cannot listen, a second
signal before the connections finished); 2 bad command line; 3 the path is not a hotpage
database; 5 the database is in use by another process; 7 corruption found.";

/// The options of `hotpage serve`.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Database directory (created if missing)
    #[arg(long)]
    pub db: PathBuf,
    /// Address and port to listen on: a loopback address (127.0.0.1, ::1); port 0 picks a
    /// free port, printed at start
    #[arg(long, default_value = "127.0.0.1:5433")]
    pub listen: SocketAddr,
    /// Sessions at once (1 to 10000); cancel requests do not count
    #[arg(long, default_value_t = 100)]
    pub max_connections: usize,
    /// Close a connection that sends nothing for this many milliseconds (default: never)
    #[arg(long, value_name = "MS")]
    pub idle_session_timeout_ms: Option<u64>,
    /// Cancel a statement still running after this many milliseconds, where it can be
    /// stopped (default: never; see above)
    #[arg(long, value_name = "MS")]
    pub statement_timeout_ms: Option<u64>,
    /// The largest protocol message accepted, in bytes (1024 to 2147483647)
    #[arg(long, default_value_t = 64 << 20)]
    pub max_message_bytes: usize,
    /// The longest SQL text of one Query or Parse message, in bytes (at most
    /// --max-message-bytes)
    #[arg(long, default_value_t = 1 << 20)]
    pub max_statement_bytes: usize,
    /// When a commit returns: sync (after an fdatasync, group commit), async (at once,
    /// durable within 10 ms) or none (no log: a crash empties the tables)
    #[arg(long, default_value = "sync")]
    pub durability: String,
    /// Buffer-pool size in MiB (1 to 1048576)
    #[arg(long, default_value_t = 256)]
    pub pool_mib: usize,
}

/// Checks the options and turns them into the server's.
fn server_config(args: &ServeArgs) -> Result<ServerConfig, CliError> {
    if !args.listen.ip().is_loopback() {
        return Err(CliError::usage(format!(
            "--listen {} is not a loopback address: without password authentication (not built yet) hotpage serve listens on 127.0.0.1 or ::1 only",
            args.listen
        )));
    }
    let millis = |ms: Option<u64>, name: &str| match ms {
        Some(0) => Err(CliError::usage(format!(
            "--{name} must be at least 1 (leave it out for no timeout)"
        ))),
        other => Ok(other.map(Duration::from_millis)),
    };
    let config = ServerConfig {
        listen: args.listen,
        max_connections: args.max_connections,
        idle_session_timeout: millis(args.idle_session_timeout_ms, "idle-session-timeout-ms")?,
        statement_timeout: millis(args.statement_timeout_ms, "statement-timeout-ms")?,
        max_message_bytes: args.max_message_bytes,
        max_statement_bytes: args.max_statement_bytes,
        ..ServerConfig::default()
    };
    config
        .validate()
        .map_err(|e| CliError::usage(format!("{e}")))?;
    Ok(config)
}

/// Runs `hotpage serve` until a signal.
pub fn run(args: &ServeArgs) -> Result<(), CliError> {
    let config = server_config(args)?;
    let options = open_options(&args.durability, args.pool_mib)?;
    let db = Arc::new(
        Database::open(&args.db, options)
            .with_context(|| format!("cannot open database {}", args.db.display()))?,
    );
    let recovery = db.recovery_report();
    if recovery.records > 0 {
        errln!(
            "hotpage serve: recovered the database: {} log records, {} committed rows reapplied, in {:.1} s",
            recovery.records,
            recovery.rows_reapplied,
            recovery.elapsed.as_secs_f64()
        );
    }
    match serve(&db, config, args) {
        Ok(Stopped::Cleanly) => {
            close(db)?;
            errln!("hotpage serve: the database is closed cleanly");
            Ok(())
        }
        // Sessions may still hold the database: the next open's recovery takes over.
        Ok(Stopped::Forced(message)) => Err(CliError::failure(message)),
        Err(error) => {
            // The server never ran (cannot listen, ...): the database was not used.
            let _ = close(db);
            Err(error)
        }
    }
}

/// How the server stopped.
enum Stopped {
    /// After every session ended: the database can be closed.
    Cleanly,
    /// A second signal: sessions were still running.
    Forced(String),
}

/// Serves until a signal; every SQL handle is dropped when it returns.
fn serve(db: &Arc<Database>, config: ServerConfig, args: &ServeArgs) -> Result<Stopped, CliError> {
    let sql = SqlDatabase::new(Arc::clone(db))
        .map_err(|e| CliError::failure(format!("cannot read the SQL catalog: {e}")))?;
    let server = Server::bind(sql, config).map_err(|e| CliError::failure(e.to_string()))?;
    errln!(
        "hotpage serve: listening on {} (database {}, durability {}, at most {} connections); stop with Ctrl-C or SIGTERM",
        server.local_addr(),
        args.db.display(),
        args.durability,
        args.max_connections
    );
    match server.run() {
        Ok(summary) => {
            errln!(
                "hotpage serve: stopped after {} sessions; closing the database",
                summary.sessions
            );
            Ok(Stopped::Cleanly)
        }
        Err(error @ ServerError::ForcedShutdown(_)) => Ok(Stopped::Forced(format!(
            "{error}; the database was not closed (the next open recovers it from its log)"
        ))),
        Err(error) => Err(CliError::failure(error.to_string())),
    }
}
