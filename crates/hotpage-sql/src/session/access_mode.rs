//! Read-only transactions and chained commits: `BEGIN READ ONLY`, `START TRANSACTION READ
//! ONLY`, `SET TRANSACTION READ ONLY`, `SET default_transaction_read_only = on`, and
//! `COMMIT AND CHAIN` / `ROLLBACK AND CHAIN`.
//!
//! A write in a read-only transaction is 25006, as in PostgreSQL, before it changes
//! anything: INSERT (COPY FROM inserts through it), CREATE, DROP, ALTER and TRUNCATE.
//! `nextval()` in a SELECT is not refused (PostgreSQL refuses it).

use super::{Plan, SqlSession, StatementResult, TxnStatus};
use crate::error::{SqlError, SqlResult, sqlstate};
use sqlparser::ast::{ObjectType, Statement, TransactionAccessMode, TransactionMode};

/// The command a plan runs, where it writes.
fn write_of(plan: &Plan) -> Option<&'static str> {
    let Plan::Other(statement) = plan else {
        return matches!(plan, Plan::Insert(_)).then_some("INSERT");
    };
    Some(match statement.as_ref() {
        Statement::CreateTable(_) => "CREATE TABLE",
        Statement::CreateSequence { .. } => "CREATE SEQUENCE",
        Statement::Drop {
            object_type: ObjectType::Sequence,
            ..
        } => "DROP SEQUENCE",
        Statement::Drop { .. } => "DROP TABLE",
        Statement::AlterTable(_) => "ALTER TABLE",
        Statement::Truncate(_) => "TRUNCATE TABLE",
        _ => return None,
    })
}

/// The access mode `modes` name, if any: true for READ ONLY.
fn read_only_in(modes: &[TransactionMode]) -> Option<bool> {
    modes.iter().rev().find_map(|mode| match mode {
        TransactionMode::AccessMode(TransactionAccessMode::ReadOnly) => Some(true),
        TransactionMode::AccessMode(TransactionAccessMode::ReadWrite) => Some(false),
        TransactionMode::IsolationLevel(_) => None,
    })
}

fn is_on(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "on" | "true" | "yes" | "1" | "t" | "y"
    )
}

impl SqlSession {
    /// `default_transaction_read_only`: the access mode of blocks that name none, and of
    /// statements outside a block.
    fn default_read_only(&self) -> bool {
        self.state
            .settings
            .get("default_transaction_read_only")
            .is_some_and(|v| is_on(v))
    }

    /// Whether a statement now runs in a read-only transaction.
    pub(super) fn in_read_only_transaction(&self) -> bool {
        match self.txn {
            // No lookup while the session has SET nothing (a stress session).
            TxnStatus::Idle => !self.state.settings.is_empty() && self.default_read_only(),
            _ => self.read_only,
        }
    }

    /// 25006 if `plan` writes and the transaction it would run in is read-only.
    pub(super) fn refuse_write_if_read_only(&self, plan: &Plan) -> SqlResult<()> {
        // The plan first: a read looks up no setting (this runs for every statement).
        let Some(command) = write_of(plan) else {
            return Ok(());
        };
        if self.in_read_only_transaction() {
            return Err(SqlError::new(
                sqlstate::READ_ONLY_SQL_TRANSACTION,
                format!("cannot execute {command} in a read-only transaction"),
            ));
        }
        Ok(())
    }

    /// `BEGIN` / `START TRANSACTION [modes]`: a block opened now takes the access mode
    /// its modes name, or the default.
    pub(super) fn start_transaction(
        &mut self,
        modes: &[TransactionMode],
    ) -> SqlResult<StatementResult> {
        let outermost = self.txn == TxnStatus::Idle;
        let begun = self.begin()?;
        if outermost {
            self.read_only = read_only_in(modes).unwrap_or_else(|| self.default_read_only());
            // SQL Server's name for a transaction BEGIN opens (fn_dblog).
            self.name_transaction("user_transaction")?;
        }
        Ok(begun)
    }

    /// `SET TRANSACTION modes` changes the open block's access mode (outside a block it
    /// does nothing, as PostgreSQL only warns); `SET SESSION CHARACTERISTICS AS
    /// TRANSACTION` changes the default.
    pub(super) fn set_transaction(
        &mut self,
        modes: &[TransactionMode],
        session: bool,
    ) -> SqlResult<StatementResult> {
        if let Some(read_only) = read_only_in(modes) {
            if session {
                let value = if read_only { "on" } else { "off" };
                self.state
                    .settings
                    .insert("default_transaction_read_only".into(), value.into());
            } else if self.txn != TxnStatus::Idle {
                self.read_only = read_only;
            }
        }
        Ok(StatementResult::command("SET"))
    }

    /// `COMMIT` / `ROLLBACK`, `AND CHAIN` opening a new block with the same access mode
    /// at once (25P01 outside a block, as PostgreSQL).
    pub(super) fn end_transaction(
        &mut self,
        commit: bool,
        chain: bool,
    ) -> SqlResult<StatementResult> {
        let verb = if commit { "COMMIT" } else { "ROLLBACK" };
        if chain && self.txn == TxnStatus::Idle {
            return Err(SqlError::new(
                sqlstate::NO_ACTIVE_SQL_TRANSACTION,
                format!("{verb} AND CHAIN can only be used in transaction blocks"),
            ));
        }
        let read_only = self.read_only;
        let ended = if commit {
            self.commit()
        } else {
            self.rollback()
        };
        if chain {
            // Chained even after a failed commit, as PostgreSQL: the new block is open.
            self.begin()?;
            self.read_only = read_only;
            self.name_transaction("user_transaction")?;
        }
        ended
    }
}
