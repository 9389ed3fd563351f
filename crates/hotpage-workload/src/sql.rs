//! SQL through the embedded SQL layer as a [`Target`]: each session prepares one
//! statement (an INSERT, ostress's `-Q`) once and executes it for every row. The report
//! is the engine's, for the table the statement inserts into, so a design measured
//! through SQL and through `--design` read the same way.

use crate::engine::{EngineError, engine_waits, table_figures};
use crate::report::{TargetFigures, WaitTime};
use crate::target::{Target, TargetSession};
use hotpage::{Database, TableHandle};
use hotpage_sql::{Prepared, SqlDatabase, SqlError, SqlSession, TxnStatus};
use std::sync::Arc;

/// Why the SQL target failed.
#[derive(Debug, thiserror::Error)]
pub enum SqlTargetError {
    /// The setup script failed.
    #[error("the setup SQL failed: {0}")]
    Setup(SqlError),
    /// The statement is not an INSERT into a table.
    #[error("--sql must be one INSERT statement (it is prepared once and run for every row)")]
    NotAnInsert,
    /// A statement failed during the run.
    #[error("{0}")]
    Sql(SqlError),
    /// The engine refused an operation (reading the figures after the run).
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// The SQL layer over one database, inserting with one statement.
pub struct SqlTarget {
    db: Arc<Database>,
    sql: Arc<SqlDatabase>,
    statement: String,
    table: TableHandle,
    db_label: Option<String>,
}

impl SqlTarget {
    /// Runs `setup_sql` (if any) in one session, then checks that `statement` prepares as
    /// an INSERT and finds its table.
    pub fn new(
        db: Database,
        setup_sql: Option<&str>,
        statement: &str,
        db_label: Option<String>,
    ) -> Result<SqlTarget, SqlTargetError> {
        let db = Arc::new(db);
        let sql = SqlDatabase::new(Arc::clone(&db)).map_err(SqlTargetError::Setup)?;
        let mut session = sql.session();
        if let Some(setup) = setup_sql {
            session.execute(setup).map_err(SqlTargetError::Setup)?;
        }
        let prepared = session.prepare(statement).map_err(SqlTargetError::Sql)?;
        let table_name = prepared.insert_table().ok_or(SqlTargetError::NotAnInsert)?;
        let table = db
            .table(&table_name)
            .map_err(|e| SqlTargetError::Engine(EngineError::Engine(e)))?;
        Ok(SqlTarget {
            db,
            sql,
            statement: statement.to_string(),
            table,
            db_label,
        })
    }

    /// The database, once the run is over and every session is gone.
    pub fn into_database(self) -> Option<Database> {
        let SqlTarget { db, sql, table, .. } = self;
        drop(table);
        drop(sql);
        Arc::try_unwrap(db).ok()
    }
}

impl Target for SqlTarget {
    type Error = SqlTargetError;
    type Session<'a> = SqlTargetSession;

    fn session(&self, _index: usize) -> Result<SqlTargetSession, SqlTargetError> {
        let mut session = self.sql.session();
        let prepared = session
            .prepare(&self.statement)
            .map_err(SqlTargetError::Sql)?;
        Ok(SqlTargetSession { session, prepared })
    }

    fn reset_waits(&self) {
        self.db.reset_stats();
    }

    fn waits(&self) -> Option<Vec<WaitTime>> {
        Some(engine_waits(&self.db))
    }

    fn figures(&self) -> Result<TargetFigures, SqlTargetError> {
        let design = format!("{} (sql)", self.table.design());
        Ok(table_figures(
            &self.db,
            &self.table,
            design,
            self.db_label.clone(),
        )?)
    }
}

/// One SQL session with its prepared statement.
pub struct SqlTargetSession {
    session: SqlSession,
    prepared: Prepared,
}

impl TargetSession for SqlTargetSession {
    type Error = SqlTargetError;

    fn begin(&mut self) -> Result<(), SqlTargetError> {
        self.session.execute("BEGIN").map_err(SqlTargetError::Sql)?;
        Ok(())
    }

    /// The row comes from the statement: the driver's row bytes are not used.
    fn insert(&mut self, _row: &[u8]) -> Result<(), SqlTargetError> {
        self.session
            .execute_prepared(&self.prepared, &[])
            .map_err(SqlTargetError::Sql)?;
        Ok(())
    }

    fn commit(&mut self) -> Result<(), SqlTargetError> {
        if self.session.txn_status() != TxnStatus::Idle {
            self.session
                .execute("COMMIT")
                .map_err(SqlTargetError::Sql)?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SqlTargetError> {
        if self.session.txn_status() != TxnStatus::Idle {
            self.session
                .execute("ROLLBACK")
                .map_err(SqlTargetError::Sql)?;
        }
        Ok(())
    }
}
