//! `hotpage serve`: the database behind PostgreSQL's wire protocol, for psql, pgbench and
//! PostgreSQL's drivers (the server itself is the `hotpage-server` crate).

use crate::CliError;
use crate::sql_shell::{OpenArgs, close, open_options};
use anyhow::Context;
use hotpage::Database;
use hotpage_server::{
    Authentication, PasswordFile, Server, ServerConfig, ServerError, TlsConfig, scram_verifier,
};
use hotpage_sql::SqlDatabase;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// `hotpage serve --help`, after the one-line summary.
pub const LONG_ABOUT: &str = "Serve a hotpage database over PostgreSQL's wire protocol (v3).

psql, pgbench and PostgreSQL drivers (tested: the Rust postgres crate, Python's psycopg2)
connect to it as to PostgreSQL; the SQL is hotpage's (see hotpage sql). The database is opened, or
created if missing; after a crash (kill -9) the open recovers it from its log.

Each connection is a session with its own thread. The simple protocol (several statements
in one Query run as one transaction, as in PostgreSQL) and the extended protocol (Parse, Bind, Describe, Execute, Close, Sync;
named and unnamed statements and portals; text and binary formats) are served.

Who may connect:
  --auth trust (the default without --password-file): any user and database name, no
      password; only on loopback addresses (127.0.0.1, ::1).
  --auth scram --password-file F: SCRAM-SHA-256, as PostgreSQL's scram-sha-256. Needed
      to listen on any other address. F holds one line per user,
      user:SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> (PostgreSQL's
      pg_authid.rolpassword format; '#' lines are comments), and must be readable by
      its owner only (chmod 600). Make a line with
      hotpage serve --hash-password USER < file-with-the-password
      A wrong password or an unknown user: FATAL 28P01 password authentication failed.
  --tls-cert C --tls-key K: offer TLS (rustls) to clients that ask (sslmode=require).
      PEM files; the key readable by its owner only. With scram, SCRAM-SHA-256-PLUS
      (channel binding) is offered too. Clients that do not ask are still served in
      clear.

SIGINT (Ctrl-C) or SIGTERM: stop accepting, let each connection finish its statement,
end the connections (FATAL 57P01), then close the database cleanly (a checkpoint). A
connection whose client has not read for a second or two is closed without waiting. A second
signal stops at once without closing; the next open recovers.

One session ends another with SELECT pg_terminate_backend(pid) (pids are
pg_stat_activity.pid) and cancels its statement with SELECT pg_cancel_backend(pid).

Limits and the errors they give:
  --max-connections N        one more session: FATAL 53300 sorry, too many clients already
  --max-message-bytes B      a longer protocol message: FATAL 54000, the connection ends
  --max-statement-bytes B    longer SQL in a Query or Parse: ERROR 54000
  --idle-session-timeout-ms  no message for that long: FATAL 57P05 (25P03 inside a
                             transaction block)
  --statement-timeout-ms     ERROR 57014 once a statement has run that long: a scan, a
                             loop or pg_sleep stops within about a millisecond, and what
                             it was writing is not applied. It is the sessions' default
                             statement_timeout; SET statement_timeout overrides it. A
                             cancel request (psql's Ctrl-C) stops a statement the same
                             way, a wait for another session's key included. A statement
                             that has begun its commit finishes first.";

/// `hotpage serve --help`'s closing part.
pub const AFTER_HELP: &str = "Examples:
  hotpage serve --db ./mydb
  psql -h 127.0.0.1 -p 5433 -c 'CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)'
  echo \"INSERT INTO t (v) VALUES ('x');\" > insert.sql
  pgbench -h 127.0.0.1 -p 5433 -n -M prepared -f insert.sql -c 8 -T 10

Exit codes: 0 stopped by a signal and closed cleanly; 1 failure (cannot listen, a second
signal before the connections finished); 2 bad command line; 3 the path is not a hotpage
database; 5 the database is in use by another process; 7 corruption found.";

/// How clients authenticate.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    /// No password: loopback addresses only
    Trust,
    /// SCRAM-SHA-256 against --password-file
    Scram,
}

/// The options of `hotpage serve`.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Database directory (created if missing)
    #[arg(long, required_unless_present = "hash_password")]
    pub db: Option<PathBuf>,
    /// Address and port to listen on; port 0 picks a free port, printed at start. An
    /// address other than loopback (127.0.0.1, ::1) needs --auth scram
    #[arg(long, default_value = "127.0.0.1:5433")]
    pub listen: SocketAddr,
    /// trust (no password, loopback only) or scram (SCRAM-SHA-256 against
    /// --password-file); default: scram when --password-file is given, else trust
    #[arg(long, value_enum)]
    pub auth: Option<AuthMethod>,
    /// The users and their SCRAM verifiers, one user:SCRAM-SHA-256$... line each (see
    /// above); readable by its owner only
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// TLS certificate chain, PEM (the server's certificate first); needs --tls-key
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key, PEM (PKCS#8, PKCS#1 or SEC1), readable by its owner only; needs
    /// --tls-cert
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// Print a password-file line for USER, from the password read on standard input
    /// (its first line), and exit; nothing else is done
    #[arg(long, value_name = "USER", conflicts_with = "db")]
    pub hash_password: Option<String>,
    /// Sessions at once (1 to 10000); cancel requests do not count. Each connection has
    /// its own thread, at most twice this many (the rest are refused at once, 53300)
    #[arg(long, default_value_t = 100)]
    pub max_connections: usize,
    /// Close a connection that sends nothing for this many milliseconds (default: never)
    #[arg(long, value_name = "MS")]
    pub idle_session_timeout_ms: Option<u64>,
    /// Cancel a statement still running after this many milliseconds (default: never;
    /// sessions may SET statement_timeout; see above)
    #[arg(long, value_name = "MS")]
    pub statement_timeout_ms: Option<u64>,
    /// The largest protocol message accepted, in bytes (1024 to 2147483647)
    #[arg(long, default_value_t = 64 << 20)]
    pub max_message_bytes: usize,
    /// The longest SQL text of one Query or Parse message, in bytes (at most
    /// --max-message-bytes)
    #[arg(long, default_value_t = 1 << 20)]
    pub max_statement_bytes: usize,
    #[command(flatten)]
    pub open: OpenArgs,
}

/// Checks the options and turns them into the server's.
fn server_config(args: &ServeArgs) -> Result<ServerConfig, CliError> {
    let authentication = authentication(args)?;
    if matches!(authentication, Authentication::Trust) && !args.listen.ip().is_loopback() {
        return Err(CliError::usage(format!(
            "--listen {} is not a loopback address: other hosts may connect only with a password; pass --auth scram --password-file FILE (or listen on 127.0.0.1 or ::1)",
            args.listen
        )));
    }
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            Some(TlsConfig::load(cert, key).map_err(|e| CliError::usage(e.to_string()))?)
        }
        (None, None) => None,
        _ => {
            return Err(CliError::usage(
                "TLS needs both --tls-cert FILE and --tls-key FILE",
            ));
        }
    };
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
        authentication,
        tls,
        ..ServerConfig::default()
    };
    config
        .validate()
        .map_err(|e| CliError::usage(format!("{e}")))?;
    Ok(config)
}

/// `--auth` and `--password-file`, checked and the file read.
fn authentication(args: &ServeArgs) -> Result<Authentication, CliError> {
    let method = args.auth.unwrap_or(if args.password_file.is_some() {
        AuthMethod::Scram
    } else {
        AuthMethod::Trust
    });
    match (method, &args.password_file) {
        (AuthMethod::Trust, None) => Ok(Authentication::Trust),
        (AuthMethod::Trust, Some(_)) => Err(CliError::usage(
            "--password-file is used only with --auth scram (leave out --auth trust)",
        )),
        (AuthMethod::Scram, None) => Err(CliError::usage(
            "--auth scram needs --password-file FILE (make its lines with hotpage serve --hash-password USER)",
        )),
        (AuthMethod::Scram, Some(path)) => {
            let file = PasswordFile::load(path).map_err(|e| CliError::usage(e.to_string()))?;
            Ok(Authentication::Scram(Arc::new(file)))
        }
    }
}

/// `--hash-password USER`: reads the password (the first line of standard input) and
/// prints the password-file line.
fn hash_password(user: &str) -> Result<(), CliError> {
    if user.is_empty() || user.contains(':') {
        return Err(CliError::usage(
            "--hash-password needs a user name, without ':' (the file's separator)",
        ));
    }
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).map_err(|e| {
        CliError::failure(format!("cannot read the password from standard input: {e}"))
    })?;
    let password = line.strip_suffix('\n').unwrap_or(&line);
    let password = password.strip_suffix('\r').unwrap_or(password);
    if password.is_empty() {
        return Err(CliError::usage(
            "--hash-password read an empty password: give it on standard input, e.g. hotpage serve --hash-password alice < password.txt",
        ));
    }
    outln!("{user}:{}", scram_verifier(password))
}

/// Runs `hotpage serve` until a signal.
pub fn run(args: &ServeArgs) -> Result<(), CliError> {
    if let Some(user) = &args.hash_password {
        return hash_password(user);
    }
    let Some(path) = &args.db else {
        return Err(CliError::usage("hotpage serve needs --db PATH"));
    };
    let config = server_config(args)?;
    let options = open_options(&args.open)?;
    // The address first: a taken port must not leave a new database behind.
    let listener = Server::listen(&config).map_err(|e| CliError::failure(e.to_string()))?;
    let db = Arc::new(
        Database::open(path, options)
            .with_context(|| format!("cannot open database {}", path.display()))?,
    );
    crate::warn_rows_missing(&db);
    let recovery = db.recovery_report();
    if recovery.records > 0 {
        errln!(
            "hotpage serve: recovered the database: {} log records, {} committed rows reapplied, in {:.1} s",
            recovery.records,
            recovery.rows_reapplied,
            recovery.elapsed.as_secs_f64()
        );
    }
    match serve(&db, (config, listener), args, path) {
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
fn serve(
    db: &Arc<Database>,
    (config, listener): (ServerConfig, std::net::TcpListener),
    args: &ServeArgs,
    path: &Path,
) -> Result<Stopped, CliError> {
    let sql = SqlDatabase::new(Arc::clone(db))
        .map_err(|e| CliError::failure(format!("cannot read the SQL catalog: {e}")))?;
    let auth_label = match &config.authentication {
        Authentication::Trust => "trust".to_string(),
        Authentication::Scram(file) => format!("scram, {} users", file.len()),
    };
    let tls = config.tls.is_some();
    let server = Server::with_listener(sql, config, listener)
        .map_err(|e| CliError::failure(e.to_string()))?;
    errln!(
        "hotpage serve: listening on {} (database {}, durability {}, auth {}, TLS {}, at most {} connections); stop with Ctrl-C or SIGTERM",
        server.local_addr(),
        path.display(),
        args.open.durability,
        auth_label,
        if tls { "on" } else { "off" },
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
