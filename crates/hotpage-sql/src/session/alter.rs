//! `ALTER TABLE t ADD [CONSTRAINT c] PRIMARY KEY (columns)`, what plain `pgbench -i` sends
//! after loading its tables (and `pgbench -i -I dtpgv` before).
//!
//! A primary key is the engine's key, and the engine's table layout follows it (a heap
//! has none; a keyed table is a clustered B+tree). So adding one builds a new table from
//! the old definition plus the key, planned as `CREATE TABLE` would plan it, holding the
//! old table's rows re-encoded under the key, and swaps it in atomically, crashes
//! included (`Session::rebuild_table`: a pending truncation whose transaction carries the
//! rows). A NULL in a key column is 23502 and a duplicate key 23505, as in PostgreSQL, and
//! either leaves the table as it was.

use super::{SqlSession, engine_error, lock, parse};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::expr::object_name;
use crate::schema::{KeyGen, TableSchema};
use crate::session::StatementResult;
use crate::table::SqlTable;
use crate::value::Value;
use crate::{catalog, ddl, key_codec, row_codec};
use hotpage::Key;
use sqlparser::ast::{AlterTable, AlterTableOperation, Statement, TableConstraint};
use std::collections::HashSet;
use std::sync::Arc;

impl SqlSession {
    pub(super) fn alter_table(&mut self, alter: &AlterTable) -> SqlResult<StatementResult> {
        self.refuse_in_transaction("ALTER TABLE")?;
        let constraint = match alter.operations.as_slice() {
            [
                AlterTableOperation::AddConstraint {
                    constraint: constraint @ TableConstraint::PrimaryKey(_),
                    ..
                },
            ] => constraint,
            _ => {
                return Err(SqlError::unsupported(
                    "ALTER TABLE other than one ADD PRIMARY KEY",
                ));
            }
        };
        let db = Arc::clone(&self.db);
        let _ddl = lock(&db.ddl);
        let name = object_name(&alter.name);
        let table = match self.db.table(&name) {
            Err(error) if error.sqlstate == sqlstate::UNDEFINED_TABLE && alter.if_exists => {
                return Ok(StatementResult::command("ALTER TABLE"));
            }
            other => other?,
        };
        if !table.schema.key.is_empty() || table.raw_row {
            return Err(SqlError::new(
                sqlstate::INVALID_TABLE_DEFINITION,
                format!("multiple primary keys for table \"{name}\" are not allowed"),
            ));
        }
        if table.schema.keygen != KeyGen::RowId {
            return Err(SqlError::unsupported(format!(
                "ADD PRIMARY KEY to table \"{name}\", whose rows have an identity row id"
            )));
        }
        let create = create_with_key(
            &name,
            &table.schema.columns,
            constraint,
            table.handle.is_unlogged(),
        );
        let Some(Statement::CreateTable(ct)) = parse(&create)?.into_iter().next() else {
            return Err(SqlError::internal("the rebuilt CREATE TABLE did not parse"));
        };
        let plan = ddl::plan_table(&ct, &self.db.metadata(), self.db.engine.data_files(), None)?;
        if plan.adopts_sequence.is_some() {
            return Err(SqlError::unsupported(
                "ADD PRIMARY KEY on a column whose default is a sequence",
            ));
        }
        if !plan.user_keys {
            return Err(SqlError::unsupported(format!(
                "ADD PRIMARY KEY to table \"{name}\" with a key hotpage would generate"
            )));
        }
        let rows = self.rows_under_key(&table, &plan.schema)?;
        let schema = plan.schema.encode();
        self.engine
            .rebuild_table(&table.handle, &plan.spec(&schema), &rows)
            .map_err(engine_error)?;
        self.db
            .tables
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&name);
        Ok(StatementResult::command("ALTER TABLE"))
    }

    /// Every committed row of `table`, as the engine's (key, row) pair under `keyed` (the
    /// same columns plus a primary key). 23502 for a NULL in a key column, 23505 for a
    /// key two rows share: PostgreSQL's errors, before anything changes.
    fn rows_under_key(
        &self,
        table: &SqlTable,
        keyed: &TableSchema,
    ) -> SqlResult<Vec<(Key, Vec<u8>)>> {
        let key_columns = keyed.key_columns();
        let row_columns = keyed.row_columns();
        let row_types: Vec<_> = row_columns.iter().map(|&c| keyed.columns[c].ty).collect();
        let mut rows = Vec::new();
        let mut seen = HashSet::new();
        let mut failure = None;
        let mut convert = |key: &[u8], row: &[u8]| -> SqlResult<()> {
            let values = table.decode(key, row)?;
            let key_values: Vec<Value> =
                keyed.key.iter().map(|&(c, _)| values[c].clone()).collect();
            if let Some(&(column, _)) = keyed.key.iter().find(|&&(c, _)| values[c] == Value::Null) {
                return Err(SqlError::new(
                    sqlstate::NOT_NULL_VIOLATION,
                    format!(
                        "column \"{}\" of relation \"{}\" contains null values",
                        keyed.columns[column].name, table.name
                    ),
                ));
            }
            let mut key_bytes = Vec::with_capacity(16);
            key_codec::encode_key(&key_columns, &key_values, &mut key_bytes)?;
            if !seen.insert(key_bytes.clone()) {
                return Err(duplicated(table, keyed, &key_values));
            }
            let row_values: Vec<Value> = row_columns.iter().map(|&c| values[c].clone()).collect();
            let mut row_bytes = Vec::with_capacity(row.len());
            row_codec::encode_row(&row_types, &row_values, &mut row_bytes)?;
            rows.push((
                Key::from_bytes(&key_bytes).map_err(engine_error)?,
                row_bytes,
            ));
            Ok(())
        };
        self.engine
            .scan(&table.handle, None, |key, row| match convert(key, row) {
                Ok(()) => true,
                Err(error) => {
                    failure = Some(error);
                    false
                }
            })
            .map_err(engine_error)?;
        failure.map_or(Ok(rows), Err)
    }
}

/// PostgreSQL's error for a key two rows share when a unique index is built.
fn duplicated(table: &SqlTable, keyed: &TableSchema, key_values: &[Value]) -> SqlError {
    let names: Vec<&str> = keyed
        .key
        .iter()
        .map(|&(c, _)| keyed.columns[c].name.as_str())
        .collect();
    let shown: Vec<String> = keyed
        .key
        .iter()
        .zip(key_values)
        .map(|(&(c, _), v)| v.to_pg_text(Some(&keyed.columns[c].ty)).unwrap_or_default())
        .collect();
    SqlError::new(
        sqlstate::UNIQUE_VIOLATION,
        format!("could not create unique index \"{}_pkey\"", table.name),
    )
    .with_detail(format!(
        "Key ({})=({}) is duplicated.",
        names.join(", "),
        shown.join(", ")
    ))
}

/// The table's CREATE TABLE with `constraint` added.
fn create_with_key(
    name: &str,
    columns: &[crate::schema::Column],
    constraint: &TableConstraint,
    unlogged: bool,
) -> String {
    let mut parts: Vec<String> = columns
        .iter()
        .map(|c| {
            let mut part = format!(
                "{} {}",
                quote_ident(&c.name),
                catalog::format_type(c.ty.pg_oid(), Some(c.ty.pg_type_modifier()))
            );
            if c.not_null {
                part.push_str(" NOT NULL");
            }
            if let Some(default) = &c.default {
                part.push_str(&format!(" DEFAULT {default}"));
            }
            if let Some(generated) = &c.generated {
                part.push_str(&format!(" GENERATED ALWAYS AS ({generated}) STORED"));
            }
            part
        })
        .collect();
    parts.push(constraint.to_string());
    format!(
        "CREATE {}TABLE {} ({})",
        if unlogged { "UNLOGGED " } else { "" },
        quote_ident(name),
        parts.join(", ")
    )
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
