//! [`PgTarget`]: a PostgreSQL-wire server as the workload's [`Target`]. Opening it
//! connects once to find the server (`SELECT version()`), run the setup script and check
//! that the statement prepares; then each session is a connection of its own, and the
//! server's waits come from the source its kind has (see the crate documentation).

use crate::error::{PgClientError, ServerMessage};
use crate::sampler::{Sampler, text_rows};
use crate::waits::{TextRow, view_hot_pages, view_waits};
use hotpage_workload::report::{ServerFigures, TargetFigures, Wait, WaitTime};
use hotpage_workload::{Target, TargetSession};
use postgres::config::Host;
use postgres::{Client, Config, NoTls, Statement};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// How long a connection may take when the URL sets no `connect_timeout`: a server that
/// never answers must not hang the command.
const CONNECT_TIMEOUT_DEFAULT: Duration = Duration::from_secs(10);

/// The `application_name` of every connection (unless the URL sets one): the run's
/// backends are easy to find in `pg_stat_activity`.
const APPLICATION_NAME: &str = "hotpage stress";

/// What a `hotpage serve` answers to `SELECT version()` contains this.
const HOTPAGE_VERSION_MARK: &str = "(hotpage ";

/// What kind of server the URL reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerKind {
    /// PostgreSQL, or any other server (its waits are sampled from `pg_stat_activity`).
    PostgreSql,
    /// `hotpage serve` (its waits come from `hotpage_wait_stats`).
    Hotpage,
}

impl ServerKind {
    /// What `SELECT version()` says about the server.
    pub fn from_version(version: &str) -> ServerKind {
        if version.contains(HOTPAGE_VERSION_MARK) {
            ServerKind::Hotpage
        } else {
            ServerKind::PostgreSql
        }
    }

    /// `postgresql` or `hotpage`.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::PostgreSql => "postgresql",
            ServerKind::Hotpage => "hotpage",
        }
    }
}

/// What to measure.
#[derive(Clone, Copy, Debug)]
pub struct PgTargetConfig<'a> {
    /// `postgres://user[:password]@host[:port]/database`, or a `key=value` string.
    pub url: &'a str,
    /// Run once, on one connection, before the sessions open (several statements may be
    /// separated by `;`).
    pub setup_sql: Option<&'a str>,
    /// Prepared once per session and executed for every row, with no parameters.
    pub statement: &'a str,
}

/// Where the waits come from.
enum WaitSource {
    /// PostgreSQL: `pg_stat_activity`, sampled on a connection of its own.
    Sampled(Sampler),
    /// hotpage: its views, read on the first connection (`error` keeps why a reset or a
    /// read failed, for the report). Boxed: a client is large, and there is one target.
    View {
        control: Box<Mutex<Client>>,
        error: Mutex<Option<String>>,
    },
}

/// A PostgreSQL-wire server, measured through one prepared statement.
pub struct PgTarget {
    config: Config,
    statement: String,
    server: String,
    url_label: String,
    kind: ServerKind,
    version: String,
    synchronous_commit: Option<String>,
    waits: WaitSource,
}

/// `host:port` of the first host (or the socket directory), for messages.
fn server_label(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => name.clone(),
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}")
}

/// The URL as the report shows it: user, server and database, never the password.
fn url_label(config: &Config) -> String {
    let user = config.get_user().map_or(String::new(), |u| format!("{u}@"));
    let database = config.get_dbname().unwrap_or("");
    format!("postgres://{user}{}/{database}", server_label(config))
}

/// Parses `url`, adding a connect timeout and an application name where it sets none.
fn parse_url(url: &str) -> Result<Config, PgClientError> {
    let mut config: Config = url.parse().map_err(|error: postgres::Error| {
        let message = ServerMessage::from_postgres(&error);
        PgClientError::BadUrl {
            url: without_password(url),
            reason: message.text,
        }
    })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT_DEFAULT);
    }
    if config.get_application_name().is_none() {
        config.application_name(APPLICATION_NAME);
    }
    Ok(config)
}

/// `url` with the password of a `scheme://user:password@` prefix replaced by `***`.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((credentials, host)) = rest.split_once('@') else {
        return url.to_string();
    };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_string(),
    }
}

fn connect(config: &Config, server: &str) -> Result<Client, PgClientError> {
    config
        .connect(NoTls)
        .map_err(|error| PgClientError::Connect {
            server: server.to_string(),
            message: ServerMessage::from_postgres(&error),
        })
}

/// The first column of the first row of `sql`'s result.
fn query_text(client: &mut Client, sql: &str) -> Result<Option<String>, postgres::Error> {
    let rows = text_rows(client.simple_query(sql)?);
    Ok(rows
        .into_iter()
        .next()
        .and_then(|row| row.into_iter().next().flatten()))
}

fn lock(client: &Mutex<Client>) -> MutexGuard<'_, Client> {
    // A session thread that panicked cannot leave a connection half-used: the client's
    // calls complete or fail before they return.
    client.lock().unwrap_or_else(|e| e.into_inner())
}

impl PgTarget {
    /// Connects, finds the server's kind, runs the setup script, checks that the statement
    /// prepares with no parameters, and starts the wait source.
    pub fn connect(config: PgTargetConfig<'_>) -> Result<PgTarget, PgClientError> {
        let pg_config = parse_url(config.url)?;
        let server = server_label(&pg_config);
        let mut control = connect(&pg_config, &server)?;
        let statement_error =
            |e: postgres::Error| PgClientError::Statement(ServerMessage::from_postgres(&e));
        let version = query_text(&mut control, "SELECT version()")
            .map_err(statement_error)?
            .unwrap_or_default();
        let kind = ServerKind::from_version(&version);
        if let Some(setup) = config.setup_sql {
            control
                .batch_execute(setup)
                .map_err(|e| PgClientError::Setup(ServerMessage::from_postgres(&e)))?;
        }
        let prepared = control
            .prepare(config.statement)
            .map_err(|e| PgClientError::Prepare(ServerMessage::from_postgres(&e)))?;
        if !prepared.params().is_empty() {
            return Err(PgClientError::Parameters(prepared.params().len()));
        }
        // Not every server has the setting (nor SHOW): then the report says nothing.
        let synchronous_commit = query_text(&mut control, "SHOW synchronous_commit")
            .ok()
            .flatten();
        let waits = match kind {
            ServerKind::PostgreSql => {
                drop(control);
                let sampler_client = connect(&pg_config, &server)?;
                WaitSource::Sampled(Sampler::start(sampler_client).map_err(|e| {
                    PgClientError::Waits(ServerMessage {
                        sqlstate: None,
                        text: format!("cannot start the sampler thread: {e}"),
                    })
                })?)
            }
            ServerKind::Hotpage => WaitSource::View {
                control: Box::new(Mutex::new(control)),
                error: Mutex::new(None),
            },
        };
        Ok(PgTarget {
            url_label: url_label(&pg_config),
            config: pg_config,
            statement: config.statement.to_string(),
            server,
            kind,
            version,
            synchronous_commit,
            waits,
        })
    }

    /// The server's kind, from `SELECT version()`.
    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// The server's `synchronous_commit`, if it has the setting.
    pub fn synchronous_commit(&self) -> Option<&str> {
        self.synchronous_commit.as_deref()
    }
}

/// A hotpage server's views: `(waits, hot pages)` after the run.
fn read_views(
    client: &mut Client,
) -> Result<(Vec<Wait>, Vec<hotpage_workload::report::HotPage>), String> {
    let query = |client: &mut Client, sql: &str| -> Result<Vec<TextRow>, String> {
        client
            .simple_query(sql)
            .map(text_rows)
            .map_err(|e| ServerMessage::from_postgres(&e).text)
    };
    let waits = view_waits(&query(
        client,
        "SELECT wait_type, waiting_tasks_count, wait_time_ms, max_wait_time_ms FROM hotpage_wait_stats",
    )?)?;
    let total_ms: f64 = waits.iter().map(|w| w.wait_ms).sum();
    let pages = view_hot_pages(
        &query(
            client,
            "SELECT page, page_type, level, table_name, waits, wait_time_ms FROM hotpage_hot_pages",
        )?,
        total_ms,
        hotpage_workload::engine::HOT_PAGES_REPORTED,
    )?;
    Ok((waits, pages))
}

impl Target for PgTarget {
    type Error = PgClientError;
    type Session<'a> = PgSession;

    fn session(&self, _index: usize) -> Result<PgSession, PgClientError> {
        let mut client = connect(&self.config, &self.server)?;
        let statement = client
            .prepare(&self.statement)
            .map_err(|e| PgClientError::Prepare(ServerMessage::from_postgres(&e)))?;
        Ok(PgSession {
            client,
            statement,
            in_transaction: false,
        })
    }

    fn reset_waits(&self) {
        match &self.waits {
            WaitSource::Sampled(sampler) => sampler.reset(),
            WaitSource::View { control, error } => {
                if let Err(e) = lock(control).simple_query("SELECT hotpage_reset_wait_stats()") {
                    *error.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!(
                        "SELECT hotpage_reset_wait_stats() failed: {}",
                        ServerMessage::from_postgres(&e)
                    ));
                }
            }
        }
    }

    fn waits(&self) -> Option<Vec<WaitTime>> {
        match &self.waits {
            WaitSource::Sampled(sampler) => Some(sampler.wait_times()),
            WaitSource::View { control, .. } => {
                let (waits, _) = read_views(&mut lock(control)).ok()?;
                Some(
                    waits
                        .iter()
                        .map(|w| WaitTime {
                            name: w.wait_type.clone(),
                            wait_ns: (w.wait_ms * 1e6) as u64,
                        })
                        .collect(),
                )
            }
        }
    }

    fn figures(&self) -> Result<TargetFigures, PgClientError> {
        let mut server = ServerFigures {
            kind: self.kind.name().to_string(),
            version: self.version.clone(),
            url: self.url_label.clone(),
            synchronous_commit: self.synchronous_commit.clone(),
            ..ServerFigures::default()
        };
        let (waits, hot_pages) = match &self.waits {
            WaitSource::Sampled(sampler) => {
                let summary = sampler.finish();
                server.waits_source = "pg_stat_activity".into();
                server.sample_interval_ms = summary.interval_ms;
                server.sample_rounds = summary.rounds;
                server.waits_error = summary.error;
                (summary.waits, Vec::new())
            }
            WaitSource::View { control, error } => {
                server.waits_source = "hotpage_wait_stats".into();
                server.waits_error = error.lock().unwrap_or_else(|e| e.into_inner()).clone();
                match read_views(&mut lock(control)) {
                    Ok(found) => found,
                    Err(e) => {
                        server
                            .waits_error
                            .get_or_insert(format!("reading hotpage_wait_stats: {e}"));
                        (Vec::new(), Vec::new())
                    }
                }
            }
        };
        Ok(TargetFigures {
            design: format!("{} (sql)", self.kind.name()),
            waits,
            hot_pages,
            server: Some(server),
            ..TargetFigures::default()
        })
    }
}

/// One connection with the statement prepared on it.
pub struct PgSession {
    client: Client,
    statement: Statement,
    in_transaction: bool,
}

impl PgSession {
    fn simple(&mut self, sql: &str) -> Result<(), PgClientError> {
        self.client
            .batch_execute(sql)
            .map_err(|e| PgClientError::Statement(ServerMessage::from_postgres(&e)))
    }
}

impl TargetSession for PgSession {
    type Error = PgClientError;

    fn begin(&mut self) -> Result<(), PgClientError> {
        self.simple("BEGIN")?;
        self.in_transaction = true;
        Ok(())
    }

    /// The row comes from the statement: the driver's row bytes are not used.
    fn insert(&mut self, _row: &[u8]) -> Result<(), PgClientError> {
        self.client
            .execute(&self.statement, &[])
            .map_err(|e| PgClientError::Statement(ServerMessage::from_postgres(&e)))?;
        Ok(())
    }

    fn commit(&mut self) -> Result<(), PgClientError> {
        if self.in_transaction {
            self.in_transaction = false;
            self.simple("COMMIT")?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), PgClientError> {
        if self.in_transaction {
            self.in_transaction = false;
            self.simple("ROLLBACK")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hotpage_is_told_from_postgresql_by_its_version() {
        assert_eq!(
            ServerKind::from_version("PostgreSQL 16.0 (hotpage 0.1.0) on Rust"),
            ServerKind::Hotpage
        );
        assert_eq!(
            ServerKind::from_version(
                "PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu"
            ),
            ServerKind::PostgreSql
        );
    }

    #[test]
    fn a_bad_url_is_an_error_that_hides_the_password() {
        let error = parse_url("postgres://u:secret@host:notaport/db").expect_err("bad port");
        let text = error.to_string();
        assert!(matches!(error, PgClientError::BadUrl { .. }), "{text}");
        assert!(!text.contains("secret"), "{text}");
        assert!(text.contains("u:***@host"), "{text}");
        assert!(error.is_bad_input());
    }

    #[test]
    fn the_label_names_user_server_and_database_but_no_password() {
        let config = parse_url("postgres://alice:pw@db.example:6543/shop").expect("parses");
        assert_eq!(url_label(&config), "postgres://alice@db.example:6543/shop");
        assert_eq!(
            config.get_connect_timeout(),
            Some(&CONNECT_TIMEOUT_DEFAULT),
            "a default timeout so a silent server cannot hang the run"
        );
        assert_eq!(config.get_application_name(), Some(APPLICATION_NAME));
        let timed = parse_url("postgres://a@h/db?connect_timeout=3").expect("parses");
        assert_eq!(timed.get_connect_timeout(), Some(&Duration::from_secs(3)));
    }
}
