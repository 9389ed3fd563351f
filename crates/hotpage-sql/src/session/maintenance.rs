//! VACUUM and TRUNCATE, which pgbench runs before a benchmark (without `-n`).
//!
//! - VACUUM has nothing to do here: hotpage never updates or deletes in place, so there
//!   are no dead rows to reclaim and no visibility map to set. It checks that the table
//!   exists (42P01 as in PostgreSQL) and answers `VACUUM`; ANALYZE's statistics do not
//!   exist either.
//! - TRUNCATE really empties each table: the engine swaps in an empty table with the same
//!   definition in one catalog write (`Database::truncate_table`). Inside a transaction
//!   block it is the transaction's (`Session::truncate_at_commit`): done at COMMIT,
//!   atomically with the commit record (after a crash too), undone by ROLLBACK.

use super::{SqlSession, TxnStatus, lock, undefined_table};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::expr::object_name;
use crate::session::{StatementResult, engine_error};
use sqlparser::ast::{Analyze, Truncate, TruncateIdentityOption, VacuumStatement};
use std::sync::Arc;

impl SqlSession {
    pub(super) fn vacuum(&mut self, vacuum: &VacuumStatement) -> SqlResult<StatementResult> {
        self.refuse_in_transaction("VACUUM")?;
        if let Some(name) = &vacuum.table_name {
            self.existing_table(&object_name(name))?;
        }
        Ok(StatementResult::command("VACUUM"))
    }

    /// ANALYZE [table]: there are no planner statistics to gather; the table is checked.
    pub(super) fn analyze(&mut self, analyze: &Analyze) -> SqlResult<StatementResult> {
        if let Some(name) = &analyze.table_name {
            self.existing_table(&object_name(name))?;
        }
        Ok(StatementResult::command("ANALYZE"))
    }

    pub(super) fn truncate(&mut self, truncate: &Truncate) -> SqlResult<StatementResult> {
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
        if self.txn != TxnStatus::Idle {
            return self.truncate_in_transaction(&names);
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

    /// TRUNCATE inside a transaction block (pgbench -i runs it so): the engine empties
    /// the tables at COMMIT, atomically with the rows inserted after the TRUNCATE;
    /// until then this transaction sees them empty, and ROLLBACK leaves them whole.
    fn truncate_in_transaction(&mut self, names: &[String]) -> SqlResult<StatementResult> {
        for name in names {
            let table = self.db.table(name)?;
            self.engine
                .truncate_at_commit(&table.handle)
                .map_err(engine_error)?;
            if !self.truncated.contains(name) {
                self.truncated.push(name.clone());
            }
        }
        Ok(StatementResult::command("TRUNCATE TABLE"))
    }

    /// After a commit that truncated tables: plans made from now on find the new ones.
    pub(super) fn forget_truncated(&mut self) {
        if self.truncated.is_empty() {
            return;
        }
        let mut tables = self.db.tables.write().unwrap_or_else(|p| p.into_inner());
        for name in self.truncated.drain(..) {
            tables.remove(&name);
        }
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

/// PostgreSQL's forms of VACUUM that sqlparser's (Redshift's) does not parse:
/// `VACUUM [FULL] [FREEZE] [VERBOSE] [ANALYZE] [table]` and `VACUUM (option, …) [table]`
/// (pgbench -i sends `vacuum analyze pgbench_branches`). FREEZE, VERBOSE, ANALYZE and the
/// rest change nothing here, so such a statement is read as `VACUUM [FULL] [table]`.
/// None for anything else, which the parser reads as it is.
pub(super) fn postgres_vacuum(sql: &str) -> Option<String> {
    let text = sql.trim().trim_end_matches(';').trim_end();
    let rest = text.get(..6).filter(|w| w.eq_ignore_ascii_case("vacuum"))?;
    let rest = text[rest.len()..].trim_start();
    if rest.contains(';') || text.len() == 6 {
        return None;
    }
    let mut full = false;
    let mut words: Vec<&str> = Vec::new();
    if let Some(list) = rest.strip_prefix('(') {
        let (options, after) = list.split_once(')')?;
        for option in options.split(',') {
            let name = option.split_whitespace().next()?.to_lowercase();
            let on = !matches!(
                option
                    .split_whitespace()
                    .nth(1)
                    .map(str::to_lowercase)
                    .as_deref(),
                Some("false" | "off" | "0")
            );
            match name.as_str() {
                "full" => full |= on,
                "freeze"
                | "verbose"
                | "analyze"
                | "skip_locked"
                | "disable_page_skipping"
                | "index_cleanup"
                | "process_toast"
                | "truncate"
                | "parallel" => {}
                _ => return None,
            }
        }
        words.extend(after.split_whitespace());
    } else {
        let mut all = rest.split_whitespace().peekable();
        let mut changed = false;
        while let Some(word) = all.peek() {
            match word.to_lowercase().as_str() {
                "full" => full = true,
                "freeze" | "verbose" | "analyze" => changed = true,
                _ => break,
            }
            all.next();
        }
        if !changed {
            // Nothing sqlparser cannot read.
            return None;
        }
        words.extend(all);
    }
    match words.as_slice() {
        [] => Some(format!("VACUUM{}", if full { " FULL" } else { "" })),
        [table] => Some(format!("VACUUM{} {table}", if full { " FULL" } else { "" })),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
