//! SQLite (bundled, through rusqlite) as a workload target.
//!
//! - **One file in WAL mode**, a connection per session, opened on the session's thread.
//! - **Durability**: `PRAGMA synchronous = FULL` for [`Commit::Sync`] (in WAL mode every
//!   commit syncs the WAL; SQLite has no group commit, each writer syncs its own), `OFF`
//!   for [`Commit::NoSync`] (the WAL is written, never synced).
//! - **Keys**: identity is an `INTEGER PRIMARY KEY` (the rowid, SQLite's clustered key:
//!   a NULL id becomes the largest so far plus one, an 8-byte integer); guid is a 16-byte
//!   `BLOB PRIMARY KEY` of a `WITHOUT ROWID` table, so the rows are clustered on it as in
//!   hotpage's B+tree.
//! - **SQLITE_BUSY**: SQLite has one writer at a time. Every connection sets a busy
//!   timeout ([`BUSY_TIMEOUT`]), so a session that finds the write lock taken sleeps and
//!   retries inside SQLite instead of failing; only a wait past the timeout fails the run
//!   (with SQLite's "database is locked"). A batch starts with `BEGIN IMMEDIATE`, which
//!   takes the write lock at once: a deferred transaction that upgrades from reading to
//!   writing could get SQLITE_BUSY without the busy handler being called.

use crate::Commit;
use crate::error::PeerError;
use crate::key::{GuidKeys, KeyShape};
use hotpage_workload::report::{IndexFigures, TargetFigures};
use hotpage_workload::{Target, TargetSession};
use rusqlite::{Connection, params};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a session waits for SQLite's write lock before its insert fails. Long: at 64
/// sessions on 2 cores a writer can queue behind many others.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// The table every run inserts into.
const TABLE: &str = "hp_compare";

/// A SQLite database file with one table of the chosen key shape.
pub struct SqliteTarget {
    path: PathBuf,
    key: KeyShape,
    commit: Commit,
}

impl SqliteTarget {
    /// Creates `dir/compare.sqlite` (a new, empty file: the directory should be new) in WAL
    /// mode with the table for `key`.
    pub fn create(dir: &Path, key: KeyShape, commit: Commit) -> Result<SqliteTarget, PeerError> {
        let path = dir.join("compare.sqlite");
        let conn = Connection::open(&path).map_err(PeerError::sqlite("creating the database"))?;
        // WAL is a property of the file: set once, every later connection uses it.
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(PeerError::sqlite("setting journal_mode = WAL"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(PeerError::Io {
                what: format!(
                    "sqlite refused WAL mode for {} (got {mode})",
                    path.display()
                ),
                source: std::io::Error::other("journal_mode"),
            });
        }
        let ddl = match key {
            KeyShape::Identity => {
                format!("CREATE TABLE {TABLE} (id INTEGER PRIMARY KEY, payload BLOB NOT NULL)")
            }
            KeyShape::Guid => format!(
                "CREATE TABLE {TABLE} (id BLOB PRIMARY KEY, payload BLOB NOT NULL) WITHOUT ROWID"
            ),
        };
        conn.execute_batch(&ddl)
            .map_err(PeerError::sqlite("creating the table"))?;
        Ok(SqliteTarget { path, key, commit })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rows in the table, counted on a connection of its own.
    pub fn count_rows(&self) -> Result<u64, PeerError> {
        let conn = Connection::open(&self.path)
            .map_err(PeerError::sqlite("opening the database to count its rows"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(PeerError::sqlite("setting the busy timeout"))?;
        let rows: i64 = conn
            .query_row(&format!("SELECT count(*) FROM {TABLE}"), [], |row| {
                row.get(0)
            })
            .map_err(PeerError::sqlite("counting the rows"))?;
        Ok(u64::try_from(rows).unwrap_or(0))
    }
}

impl Target for SqliteTarget {
    type Error = PeerError;
    type Session<'a> = SqliteSession;

    fn session(&self, index: usize) -> Result<SqliteSession, PeerError> {
        let conn = Connection::open(&self.path).map_err(PeerError::sqlite("opening a session"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(PeerError::sqlite("setting the busy timeout"))?;
        let synchronous = match self.commit {
            Commit::Sync => "FULL",
            Commit::NoSync => "OFF",
        };
        conn.execute_batch(&format!("PRAGMA synchronous = {synchronous}"))
            .map_err(PeerError::sqlite("setting synchronous"))?;
        let sql = match self.key {
            KeyShape::Identity => format!("INSERT INTO {TABLE} (id, payload) VALUES (NULL, ?1)"),
            KeyShape::Guid => format!("INSERT INTO {TABLE} (id, payload) VALUES (?1, ?2)"),
        };
        // Prepared once here; each insert finds it in the connection's statement cache.
        conn.prepare_cached(&sql)
            .map_err(PeerError::sqlite("preparing the insert"))?;
        Ok(SqliteSession {
            conn,
            sql,
            guids: (self.key == KeyShape::Guid).then(|| GuidKeys::new(index)),
            in_transaction: false,
        })
    }

    fn figures(&self) -> Result<TargetFigures, PeerError> {
        Ok(TargetFigures {
            design: format!("sqlite {}", self.key),
            table: TABLE.to_string(),
            index: IndexFigures {
                rows_in_table: self.count_rows()?,
                ..IndexFigures::default()
            },
            db: Some(self.path.display().to_string()),
            ..TargetFigures::default()
        })
    }
}

/// One connection.
pub struct SqliteSession {
    conn: Connection,
    sql: String,
    guids: Option<GuidKeys>,
    in_transaction: bool,
}

impl TargetSession for SqliteSession {
    type Error = PeerError;

    fn begin(&mut self) -> Result<(), PeerError> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(PeerError::sqlite("BEGIN IMMEDIATE"))?;
        self.in_transaction = true;
        Ok(())
    }

    fn insert(&mut self, row: &[u8]) -> Result<(), PeerError> {
        let mut statement = self
            .conn
            .prepare_cached(&self.sql)
            .map_err(PeerError::sqlite("preparing the insert"))?;
        match &mut self.guids {
            Some(guids) => statement.execute(params![&guids.next_key()[..], row]),
            None => statement.execute(params![row]),
        }
        .map_err(PeerError::sqlite("inserting a row"))?;
        Ok(())
    }

    fn commit(&mut self) -> Result<(), PeerError> {
        // Outside a batch the insert committed on its own (autocommit).
        if self.in_transaction {
            self.in_transaction = false;
            self.conn
                .execute_batch("COMMIT")
                .map_err(PeerError::sqlite("COMMIT"))?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), PeerError> {
        // A partial batch is committed, as hotpage's engine target does.
        self.commit()
    }
}
