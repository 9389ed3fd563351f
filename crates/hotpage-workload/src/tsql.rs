//! T-SQL through the embedded SQL layer as a [`Target`], shaped like `ostress -Q`: a setup
//! script runs once (its GO batches in order), then each session parses the workload's
//! batch once and runs it for every "row" of the plan. A batch with a WHILE loop runs
//! whole in each call (seed 000's `-n 120` sessions each running the loop once: `-r 1`),
//! so for such a batch the report's rows are runs of the batch, as ostress counts its
//! iterations; the table's own figures count the rows it holds.

use crate::engine::{EngineError, engine_waits, table_figures};
use crate::report::{TargetFigures, WaitTime};
use crate::target::{Target, TargetSession};
use hotpage::{Database, TableHandle};
use hotpage_sql::{SqlDatabase, SqlError, TsqlBatch, TsqlSession, TxnStatus, sqlstate};
use std::sync::Arc;

/// Why the T-SQL target failed.
#[derive(Debug, thiserror::Error)]
pub enum TsqlTargetError {
    /// The setup script failed.
    #[error("the setup T-SQL failed: {0}")]
    Setup(SqlError),
    /// The batch inserts into no table.
    #[error(
        "--sql with --dialect tsql must be a batch that INSERTs into a table, or EXECs a procedure that does (the report is that table's)"
    )]
    NotAnInsert,
    /// The batch does not parse, or failed during the run.
    #[error("{0}")]
    Sql(SqlError),
    /// The engine refused an operation (reading the figures after the run).
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// The SQL layer over one database, running one T-SQL batch per call.
pub struct TsqlTarget {
    db: Arc<Database>,
    sql: Arc<SqlDatabase>,
    batch: TsqlBatch,
    table: TableHandle,
    db_label: Option<String>,
}

impl TsqlTarget {
    /// Runs `setup` (a T-SQL script of GO batches) in one session, then parses `batch`
    /// and finds the table it inserts into.
    pub fn new(
        db: Database,
        setup: Option<&str>,
        batch: &str,
        db_label: Option<String>,
    ) -> Result<TsqlTarget, TsqlTargetError> {
        let db = Arc::new(db);
        let sql = SqlDatabase::new(Arc::clone(&db)).map_err(TsqlTargetError::Setup)?;
        if let Some(setup) = setup {
            let mut session = TsqlSession::new(sql.session());
            if let (_, Some(error)) = session.execute_script(setup) {
                return Err(TsqlTargetError::Setup(error));
            }
        }
        let batch = TsqlBatch::parse(batch).map_err(TsqlTargetError::Sql)?;
        let table_name = batch
            .insert_table_in(&sql)
            .ok_or(TsqlTargetError::NotAnInsert)?;
        let table = db.table(&table_name).map_err(|e| match e {
            // The batch names a table that is not there: the statement's error, as the
            // batch would fail with it (SQL Server's 208).
            hotpage::Error::NoSuchTable(_) => TsqlTargetError::Sql(SqlError::new(
                sqlstate::UNDEFINED_TABLE,
                format!("relation \"{table_name}\" does not exist (SQL Server error 208)"),
            )),
            other => TsqlTargetError::Engine(EngineError::Engine(other)),
        })?;
        Ok(TsqlTarget {
            db,
            sql,
            batch,
            table,
            db_label,
        })
    }

    /// The database, once the run is over and every session is gone.
    pub fn into_database(self) -> Option<Database> {
        let TsqlTarget { db, sql, table, .. } = self;
        drop(table);
        drop(sql);
        Arc::try_unwrap(db).ok()
    }
}

impl Target for TsqlTarget {
    type Error = TsqlTargetError;
    type Session<'a> = TsqlTargetSession;

    fn session(&self, _index: usize) -> Result<TsqlTargetSession, TsqlTargetError> {
        Ok(TsqlTargetSession {
            session: TsqlSession::new(self.sql.session()),
            batch: self.batch.clone(),
        })
    }

    fn reset_waits(&self) {
        self.db.reset_stats();
    }

    fn waits(&self) -> Option<Vec<WaitTime>> {
        Some(engine_waits(&self.db))
    }

    fn figures(&self) -> Result<TargetFigures, TsqlTargetError> {
        let design = format!("{} (tsql)", self.table.design());
        Ok(table_figures(
            &self.db,
            &self.table,
            design,
            self.db_label.clone(),
        )?)
    }
}

/// One T-SQL session with its parsed batch.
pub struct TsqlTargetSession {
    session: TsqlSession,
    batch: TsqlBatch,
}

impl TsqlTargetSession {
    fn run_sql(&mut self, text: &str) -> Result<(), TsqlTargetError> {
        self.session
            .sql_session()
            .execute(text)
            .map_err(TsqlTargetError::Sql)?;
        Ok(())
    }

    fn in_transaction(&mut self) -> bool {
        self.session.sql_session().txn_status() != TxnStatus::Idle
    }
}

impl TargetSession for TsqlTargetSession {
    type Error = TsqlTargetError;

    fn begin(&mut self) -> Result<(), TsqlTargetError> {
        self.run_sql("BEGIN")
    }

    /// One run of the batch: the driver's row bytes are not used.
    fn insert(&mut self, _row: &[u8]) -> Result<(), TsqlTargetError> {
        match self.session.execute_prepared_batch(&self.batch) {
            (_, Some(error)) => Err(TsqlTargetError::Sql(error)),
            (_, None) => Ok(()),
        }
    }

    fn commit(&mut self) -> Result<(), TsqlTargetError> {
        if self.in_transaction() {
            self.run_sql("COMMIT")?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), TsqlTargetError> {
        if self.in_transaction() {
            self.run_sql("ROLLBACK")?;
        }
        Ok(())
    }
}
