//! `ALTER TABLE t ADD [CONSTRAINT c] PRIMARY KEY (columns)` on a table with no rows, what
//! `pgbench -i -I dtpgv` sends (primary keys before the data).
//!
//! A primary key is the engine's key, and the engine's table layout follows it (a heap
//! has none; a keyed table is a clustered B+tree). So adding one builds a new, empty table
//! from the old definition plus the key, planned as `CREATE TABLE` would plan it, and
//! swaps it in with one checkpoint (`Database::redefine_empty_table`). Rebuilding a table
//! that holds rows (copying them into the new layout, crash-safely) is not done yet: such
//! a table gets 0A000, and nothing changes.

use super::{SqlSession, engine_error, lock, parse};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::expr::object_name;
use crate::schema::KeyGen;
use crate::session::StatementResult;
use crate::{catalog, ddl};
use hotpage::Error as EngineError;
use sqlparser::ast::{AlterTable, AlterTableOperation, Statement, TableConstraint};
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
        let schema = plan.schema.encode();
        self.db.engine.redefine_empty_table(&plan.spec(&schema)).map_err(|e| match e {
            EngineError::TableNotEmpty(_) => SqlError::unsupported(format!(
                "ALTER TABLE … ADD PRIMARY KEY on \"{name}\", which has rows (hotpage builds the key only on an empty table)"
            ))
            .with_hint("Add the primary key before loading the rows: pgbench -i -I dtpgv."),
            other => engine_error(other),
        })?;
        self.db
            .tables
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&name);
        Ok(StatementResult::command("ALTER TABLE"))
    }
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
