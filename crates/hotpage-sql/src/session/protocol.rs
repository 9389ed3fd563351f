//! What a wire-protocol server needs of a session beyond [`SqlSession::execute_batch`]:
//! each statement's result handed over as soon as the statement ends (so a client sees it
//! while the next runs), a say between statements (so a cancel or a statement timeout stops
//! a batch there), the columns a statement will return before it runs (Describe), and a
//! way for an error the server itself raised (a bad Bind) to fail the transaction block.

use super::{Plan, Prepared, SqlSession, TxnStatus, parse};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::session::{ColumnInfo, StatementResult};
use crate::types::SqlType;
use crate::value::Value;
use sqlparser::ast::Statement;

/// Receives a batch's results statement by statement, and may stop the batch between two.
pub trait BatchObserver {
    /// Statement `index` (0-based) is about to start. An error stops the batch before it:
    /// that error is the batch's, and fails the transaction block as any error does.
    fn before_statement(&mut self, index: usize) -> SqlResult<()>;

    /// A statement ended with `result`. An error stops the batch after it (the
    /// statement's effects stay) and is the batch's error.
    fn statement_done(&mut self, result: StatementResult) -> SqlResult<()>;

    /// `COPY … FROM STDIN` is about to read its data: the client is to send `columns`
    /// columns in the text format (a wire server sends CopyInResponse). The default
    /// refuses: only a client connection has a STDIN to read.
    fn copy_in_start(&mut self, columns: usize) -> SqlResult<()> {
        let _ = columns;
        Err(SqlError::new(
            crate::error::sqlstate::FEATURE_NOT_SUPPORTED,
            "COPY FROM STDIN needs a client connection (hotpage serve)",
        ))
    }

    /// The next chunk of COPY data (a CopyData message's bytes), or None at its end
    /// (CopyDone). A CopyFail is an error (57014), and so is a cancel.
    fn copy_in_next(&mut self) -> SqlResult<Option<Vec<u8>>> {
        Ok(None)
    }

    /// `COPY … TO STDOUT` is about to send records of `columns` columns in the text format
    /// (a wire server sends CopyOutResponse). The default refuses, as
    /// [`BatchObserver::copy_in_start`] does.
    fn copy_out_start(&mut self, columns: usize) -> SqlResult<()> {
        let _ = columns;
        Err(SqlError::new(
            crate::error::sqlstate::FEATURE_NOT_SUPPORTED,
            "COPY TO STDOUT needs a client connection (hotpage serve)",
        ))
    }

    /// The next records of `COPY … TO STDOUT`, each with its line end (a CopyData message
    /// each). They come a chunk at a time as the query makes them, so an error (the client
    /// went away, a cancel) stops the COPY there.
    fn copy_out_records(&mut self, records: Vec<Vec<u8>>) -> SqlResult<()> {
        let _ = records;
        Ok(())
    }

    /// The end of `COPY … TO STDOUT`'s records (CopyDone).
    fn copy_out_end(&mut self) -> SqlResult<()> {
        Ok(())
    }

    /// True if this observer takes a query's rows as they are made
    /// ([`BatchObserver::statement_rows`]), so that a result of any size takes memory for
    /// one chunk of rows. The default, false, collects them into the statement's result.
    fn streams_rows(&self) -> bool {
        false
    }

    /// Rows of the statement now running, in order, a chunk at a time (only if
    /// [`BatchObserver::streams_rows`]). Its [`BatchObserver::statement_done`] then has
    /// the columns and the tag, and no rows. An error stops the statement.
    fn statement_rows(&mut self, columns: &[ColumnInfo], rows: Vec<Vec<Value>>) -> SqlResult<()> {
        let _ = (columns, rows);
        Ok(())
    }
}

impl SqlSession {
    /// [`SqlSession::execute_batch`] with each result given to `observer` as its statement
    /// ends. Returns the error that stopped the batch, if any: a statement's, or the
    /// observer's.
    pub fn execute_batch_observed(
        &mut self,
        sql: &str,
        observer: &mut dyn BatchObserver,
    ) -> Option<SqlError> {
        self.run_batch(sql, observer, false)
    }

    /// A simple-protocol Query message, by PostgreSQL's rule: outside a transaction block,
    /// several statements run as one implicit transaction. If one fails, the ones before
    /// it roll back with it, unless an explicit BEGIN … COMMIT inside the message took
    /// them. One statement alone is its own transaction, as in
    /// [`SqlSession::execute_batch_observed`]. hotpage's DDL (CREATE, DROP, ALTER) is not
    /// transactional: in such a message it is refused (25001) after a write, else it
    /// commits the reads before it and runs on its own; the statements after it start a
    /// new implicit transaction. VACUUM is refused in such a message, as in PostgreSQL.
    pub fn execute_query_message(
        &mut self,
        sql: &str,
        observer: &mut dyn BatchObserver,
    ) -> Option<SqlError> {
        self.run_batch(sql, observer, true)
    }

    fn run_batch(
        &mut self,
        sql: &str,
        observer: &mut dyn BatchObserver,
        implicit_transaction: bool,
    ) -> Option<SqlError> {
        let statements = match parse(sql) {
            Ok(statements) => statements,
            Err(error) => return Some(self.fail(error)),
        };
        let single = statements.len() == 1;
        let mut implicit = Implicit {
            wanted: implicit_transaction && !single,
            open: false,
            wrote: false,
        };
        for (index, statement) in statements.into_iter().enumerate() {
            if let Err(error) = observer.before_statement(index) {
                return Some(self.fail_batch(error, &mut implicit));
            }
            if let Err(error) = self.enter_statement(&statement, &mut implicit) {
                return Some(self.fail_batch(error, &mut implicit));
            }
            // pg_stat_activity shows the text as sent (one statement), else the statement.
            // The clock first: once pg_stat_activity shows the statement running, a
            // cancel sent for it is not forgotten by the clock's start.
            self.start_statement_clock();
            if single {
                self.activity.begin(sql.trim());
            } else {
                self.activity.begin(&statement.to_string());
            }
            let outcome = match self.run_copy(&statement, observer) {
                Some(outcome) => outcome,
                None => self.run_observed(statement, observer),
            };
            self.activity.end();
            let done = match outcome {
                Ok(result) => observer.statement_done(result),
                Err(error) => Err(error.resolve_position(sql)),
            };
            if let Err(error) = done {
                return Some(self.fail_batch(error, &mut implicit));
            }
        }
        if implicit.open && self.txn == TxnStatus::InTransaction {
            return self.commit().err();
        }
        None
    }

    /// Runs a batch's statement; a query's rows go to `observer` as they are made if it
    /// [`BatchObserver::streams_rows`].
    fn run_observed(
        &mut self,
        statement: Statement,
        observer: &mut dyn BatchObserver,
    ) -> SqlResult<StatementResult> {
        if !observer.streams_rows() {
            return self.run_statement(statement, &[]);
        }
        let mut stream = |columns: &[ColumnInfo], rows| observer.statement_rows(columns, rows);
        self.run_statement_streamed(statement, &[], Some(&mut stream))
    }

    /// Before a statement of a Query message: opens the implicit transaction, or hands it
    /// over to an explicit BEGIN, or commits it before DDL.
    fn enter_statement(&mut self, statement: &Statement, implicit: &mut Implicit) -> SqlResult<()> {
        if !implicit.wanted {
            return Ok(());
        }
        match statement {
            // BEGIN inside the implicit transaction makes it the explicit block (the
            // statements before it are in the block); COMMIT or ROLLBACK ends it.
            Statement::StartTransaction { .. }
            | Statement::Commit { .. }
            | Statement::Rollback { .. } => {
                implicit.open = false;
                implicit.wrote = false;
            }
            // PostgreSQL refuses these in a multi-statement Query too.
            Statement::Vacuum(_) => {
                return Err(SqlError::new(
                    sqlstate::ACTIVE_SQL_TRANSACTION,
                    "VACUUM cannot run inside a transaction block",
                ));
            }
            statement if is_non_transactional(statement) => {
                if implicit.wrote {
                    // It would have to commit those writes first (PostgreSQL would
                    // roll them back with the DDL if a later statement failed).
                    return Err(SqlError::new(
                        sqlstate::ACTIVE_SQL_TRANSACTION,
                        format!(
                            "{} cannot run after a write in the same Query in hotpage: its DDL is not transactional",
                            ddl_name(statement)
                        ),
                    )
                    .with_hint("Send the DDL as its own Query, or first in the Query."));
                }
                if implicit.open && self.txn == TxnStatus::InTransaction {
                    implicit.open = false;
                    self.commit()?;
                }
            }
            _ => {
                if self.txn == TxnStatus::Idle {
                    self.begin()?;
                    implicit.open = true;
                }
                if matches!(
                    statement,
                    Statement::Insert(_) | Statement::Copy { .. } | Statement::Truncate(_)
                ) {
                    implicit.wrote = true;
                }
            }
        }
        Ok(())
    }

    /// The error that stopped a batch: an implicit transaction rolls back (the session is
    /// idle again, as in PostgreSQL); an explicit block is failed.
    fn fail_batch(&mut self, error: SqlError, implicit: &mut Implicit) -> SqlError {
        if implicit.open {
            implicit.open = false;
            if let Err(rollback) = self.rollback() {
                return rollback;
            }
            return error;
        }
        self.fail(error)
    }

    /// Plans a statement again from its text, as PostgreSQL re-plans a cached plan after
    /// DDL changed what it uses. The statement must keep its shape: 0A000 if its result
    /// columns or its parameters' types changed (a client holds the old ones).
    pub fn replan(&mut self, prepared: &Prepared) -> SqlResult<Prepared> {
        let fresh = self.prepare(&prepared.text)?;
        if fresh.result_columns() != prepared.result_columns() {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "cached plan must not change result type",
            ));
        }
        if fresh.param_types != prepared.param_types {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "cached plan must not change its parameters' types",
            )
            .with_hint("Prepare the statement again."));
        }
        Ok(fresh)
    }

    /// An error raised outside the session for this session's statement (a parameter
    /// that does not decode, a cancel): inside a transaction block the block is now
    /// failed, as after any error in PostgreSQL.
    pub fn fail_transaction_block(&mut self) {
        let _ = self.fail(SqlError::internal("failed outside the session"));
    }
}

impl Prepared {
    /// The columns the statement will return (empty for none), as Describe reports them
    /// before it runs: the plan's, and for `SHOW name` the one text column it returns.
    pub fn result_columns(&self) -> Vec<ColumnInfo> {
        match &self.plan {
            Plan::Other(statement) => match statement.as_ref() {
                Statement::ShowVariable { variable } => vec![ColumnInfo {
                    name: variable
                        .iter()
                        .map(crate::expr::fold)
                        .collect::<Vec<_>>()
                        .join("."),
                    ty: SqlType::Text,
                }],
                _ => Vec::new(),
            },
            _ => self.columns.clone(),
        }
    }

    /// True if a table the plan reads or writes was dropped or replaced after it was
    /// planned (DROP and CREATE again, TRUNCATE, ADD PRIMARY KEY): running the plan would
    /// reach the old table. [`SqlSession::replan`] makes a fresh one.
    pub fn is_stale(&self) -> bool {
        match &self.plan {
            Plan::Insert(plan) => plan.is_stale(),
            Plan::Select(plan) => plan.is_stale(),
            Plan::Catalog(plan) => plan.is_stale(),
            Plan::Other(_) => false,
        }
    }

    /// True for COMMIT and ROLLBACK, which a failed transaction block still runs.
    pub fn ends_transaction(&self) -> bool {
        matches!(
            &self.plan,
            Plan::Other(statement)
                if matches!(statement.as_ref(), Statement::Commit { .. } | Statement::Rollback { .. })
        )
    }
}

/// A Query message's implicit transaction.
struct Implicit {
    /// Several statements, outside a block, in a Query message.
    wanted: bool,
    /// This batch began the engine transaction now open.
    open: bool,
    /// A statement in that transaction wrote (INSERT, COPY, TRUNCATE).
    wrote: bool,
}

/// Statements hotpage runs outside any transaction (its DDL is not transactional).
fn is_non_transactional(statement: &Statement) -> bool {
    matches!(
        statement,
        Statement::CreateTable(_)
            | Statement::CreateSequence { .. }
            | Statement::Drop { .. }
            | Statement::AlterTable(_)
    )
}

/// The DDL's name in an error message.
fn ddl_name(statement: &Statement) -> &'static str {
    match statement {
        Statement::CreateTable(_) => "CREATE TABLE",
        Statement::CreateSequence { .. } => "CREATE SEQUENCE",
        Statement::Drop { .. } => "DROP",
        Statement::AlterTable(_) => "ALTER TABLE",
        _ => "DDL",
    }
}

/// True if a result is a read (SELECT or SHOW), whose rows a server may drop on a cancel
/// or a timeout without hiding a write from the client. (A `nextval()` in a SELECT is
/// spent either way, as in PostgreSQL, where sequences are not transactional.)
pub fn is_read_result(result: &StatementResult) -> bool {
    result.tag.starts_with("SELECT") || result.tag == "SHOW"
}

#[cfg(test)]
mod tests;
