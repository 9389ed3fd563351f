//! What a wire-protocol server needs of a session beyond [`SqlSession::execute_batch`]:
//! each statement's result handed over as soon as the statement ends (so a client sees it
//! while the next runs), a say between statements (so a cancel or a statement timeout stops
//! a batch there), the columns a statement will return before it runs (Describe), and a
//! way for an error the server itself raised (a bad Bind) to fail the transaction block.

use super::{Plan, Prepared, SqlSession, parse};
use crate::error::{SqlError, SqlResult};
use crate::session::{ColumnInfo, StatementResult};
use crate::types::SqlType;
use sqlparser::ast::Statement;

/// Receives a batch's results statement by statement, and may stop the batch between two.
pub trait BatchObserver {
    /// Statement `index` (0-based) is about to start. An error stops the batch before it:
    /// that error is the batch's, and fails the transaction block as any error does.
    fn before_statement(&mut self, index: usize) -> SqlResult<()>;

    /// A statement ended with `result`. An error stops the batch after it (the
    /// statement's effects stay) and is the batch's error.
    fn statement_done(&mut self, result: StatementResult) -> SqlResult<()>;
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
        let statements = match parse(sql) {
            Ok(statements) => statements,
            Err(error) => return Some(self.fail(error)),
        };
        let single = statements.len() == 1;
        for (index, statement) in statements.into_iter().enumerate() {
            if let Err(error) = observer.before_statement(index) {
                return Some(self.fail(error));
            }
            // pg_stat_activity shows the text as sent (one statement), else the statement.
            if single {
                self.activity.begin(sql.trim());
            } else {
                self.activity.begin(&statement.to_string());
            }
            let outcome = self.run_statement(statement, &[]);
            self.activity.end();
            let done = match outcome {
                Ok(result) => observer.statement_done(result),
                Err(error) => Err(error.resolve_position(sql)),
            };
            if let Err(error) = done {
                return Some(self.fail(error));
            }
        }
        None
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

    /// True for COMMIT and ROLLBACK, which a failed transaction block still runs.
    pub fn ends_transaction(&self) -> bool {
        matches!(
            &self.plan,
            Plan::Other(statement)
                if matches!(statement.as_ref(), Statement::Commit { .. } | Statement::Rollback { .. })
        )
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
