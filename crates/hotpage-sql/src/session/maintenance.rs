//! VACUUM and TRUNCATE, which pgbench runs before a benchmark (without `-n`).
//!
//! - VACUUM has nothing to do here: hotpage never updates or deletes in place, so there
//!   are no dead rows to reclaim and no visibility map to set. It checks that the table
//!   exists (42P01 as in PostgreSQL) and answers `VACUUM`; ANALYZE's statistics do not
//!   exist either.
//! - TRUNCATE really empties each table: the engine swaps in an empty table with the same
//!   definition in one catalog write (`Database::truncate_table`).

use super::{SqlSession, lock, undefined_table};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::expr::object_name;
use crate::session::{StatementResult, engine_error};
use sqlparser::ast::{Truncate, TruncateIdentityOption, VacuumStatement};
use std::sync::Arc;

impl SqlSession {
    pub(super) fn vacuum(&mut self, vacuum: &VacuumStatement) -> SqlResult<StatementResult> {
        self.refuse_in_transaction("VACUUM")?;
        if let Some(name) = &vacuum.table_name {
            self.existing_table(&object_name(name))?;
        }
        Ok(StatementResult::command("VACUUM"))
    }

    pub(super) fn truncate(&mut self, truncate: &Truncate) -> SqlResult<StatementResult> {
        self.refuse_in_transaction("TRUNCATE")?;
        if matches!(truncate.identity, Some(TruncateIdentityOption::Restart)) {
            return Err(SqlError::unsupported(
                "TRUNCATE … RESTART IDENTITY (the keys go on from where they were: CONTINUE IDENTITY)",
            ));
        }
        let db = Arc::clone(&self.db);
        let _ddl = lock(&db.ddl);
        let names: Vec<String> = truncate
            .table_names
            .iter()
            .map(|target| object_name(&target.name))
            .collect();
        // Every name is checked before any table is emptied.
        for name in &names {
            self.existing_table(name)?;
        }
        for name in &names {
            self.db.engine.truncate_table(name).map_err(engine_error)?;
            // Plans made from now on find the new table.
            self.db
                .tables
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .remove(name);
        }
        Ok(StatementResult::command("TRUNCATE TABLE"))
    }

    /// 42P01 unless `name` is a table (42809 for a system view).
    fn existing_table(&self, name: &str) -> SqlResult<()> {
        if self.db.engine.table(name).is_ok() {
            return Ok(());
        }
        if crate::views::is_view(name) {
            return Err(SqlError::new(
                sqlstate::WRONG_OBJECT_TYPE,
                format!("\"{name}\" is not a table"),
            ));
        }
        Err(undefined_table(name))
    }
}

#[cfg(test)]
mod tests;
