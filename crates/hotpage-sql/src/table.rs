//! A table as the SQL layer sees it: the engine's handle plus its decoded schema, with
//! what every statement needs precomputed (the key and row codecs' column lists, the
//! column scope, the compiled defaults).
//!
//! A table made without SQL (`hotpage stress --design …`) has no schema bytes: it is shown
//! with an implicit schema from its key kind (`id`, or `bucket, id` for hash-prefix), plus
//! its row bytes as `row bytea`.

use crate::error::{SqlError, SqlResult, sqlstate};
use crate::expr::{self, Scalar};
use crate::key_codec::{self, KeyColumn, KeyEncoding};
use crate::row_codec;
use crate::schema::{Column, KeyGen, TableSchema};
use crate::session::engine_error;
use crate::types::SqlType;
use crate::value::Value;
use hotpage::{Key, KeyKind, Layout, Session, TableHandle};

pub(crate) struct SqlTable {
    pub name: String,
    pub handle: TableHandle,
    pub schema: TableSchema,
    /// A table made without SQL: its last column, `row`, is the raw row bytes.
    pub raw_row: bool,
    /// Every column's name and type, in order: the scope expressions compile against.
    pub scope: Vec<(String, SqlType)>,
    pub key_columns: Vec<KeyColumn>,
    pub row_columns: Vec<usize>,
    pub row_types: Vec<SqlType>,
    /// Each column's compiled DEFAULT (None: NULL, or the key generator's).
    pub defaults: Vec<Option<Scalar>>,
    /// Serialises generated keys near the end of a narrow key column's range (insert.rs).
    pub narrow_keys: std::sync::Mutex<()>,
    /// Non-key columns `GENERATED ALWAYS AS (k % n) STORED` of an integer key column `k`
    /// (a T-SQL hash-partition table's `HashID`): (column, k, n). The engine makes the key
    /// after the row bytes are built, so the value is computed from the key when a row is
    /// read (and filled in after an insert), not taken from the row bytes.
    pub key_buckets: Vec<(usize, usize, i64)>,
    /// The other stored generated columns outside the key, computed from the row's
    /// values on insert ([`generated_columns`]); an error for a table whose expression
    /// this layer cannot compute (made before it refused those), reported on insert.
    pub generated: SqlResult<Vec<(usize, Scalar)>>,
}

impl SqlTable {
    /// Builds the SQL view of an engine table.
    pub fn new(handle: TableHandle) -> SqlResult<SqlTable> {
        let (schema, raw_row) = if handle.schema().is_empty() {
            (implicit_schema(handle.key_kind(), handle.layout()), true)
        } else {
            (TableSchema::decode(handle.schema())?, false)
        };
        let scope: Vec<(String, SqlType)> = schema
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.ty))
            .collect();
        let row_columns = schema.row_columns();
        let row_types = row_columns.iter().map(|&c| schema.columns[c].ty).collect();
        let defaults = schema
            .columns
            .iter()
            .map(|c| compile_default(c, &scope))
            .collect::<SqlResult<_>>()?;
        let key_buckets = key_buckets(&schema);
        let generated = generated_columns(&schema);
        Ok(SqlTable {
            key_buckets,
            generated,
            name: handle.name().to_string(),
            key_columns: schema.key_columns(),
            handle,
            schema,
            raw_row,
            scope,
            row_columns,
            row_types,
            defaults,
            narrow_keys: std::sync::Mutex::new(()),
        })
    }

    /// Sets the [`key_buckets`](Self::key_buckets) columns from the key columns' values.
    pub fn fill_key_buckets(&self, values: &mut [Value]) {
        for &(column, key, n) in &self.key_buckets {
            if let Value::Int(v) = values[key] {
                values[column] = Value::Int(v % n);
            }
        }
    }

    /// The whole row's values from an engine (key, row) pair.
    pub fn decode(&self, key: &[u8], row: &[u8]) -> SqlResult<Vec<Value>> {
        let mut values = vec![Value::Null; self.schema.columns.len()];
        if !self.key_columns.is_empty() {
            let key_values = key_codec::decode_key(&self.key_columns, key)?;
            for (&(column, _), value) in self.schema.key.iter().zip(key_values) {
                values[column] = value;
            }
        }
        if self.raw_row {
            if let Some(&last) = self.row_columns.last() {
                values[last] = Value::Bytes(row.to_vec());
            }
        } else {
            let row_values = row_codec::decode_row(&self.row_types, row)?;
            for (&column, value) in self.row_columns.iter().zip(row_values) {
                values[column] = value;
            }
        }
        self.fill_key_buckets(&mut values);
        Ok(values)
    }

    /// The row bytes of a whole row's values.
    pub fn encode_row(&self, values: &[Value], out: &mut Vec<u8>) -> SqlResult<()> {
        out.clear();
        if self.raw_row {
            if let Some(Value::Bytes(bytes)) = self.row_columns.last().map(|&c| &values[c]) {
                out.extend_from_slice(bytes);
            }
            return Ok(());
        }
        let row_values: Vec<Value> = self
            .row_columns
            .iter()
            .map(|&c| values[c].clone())
            .collect();
        row_codec::encode_row(&self.row_types, &row_values, out)
    }

    /// The key bytes of a whole row's values.
    pub fn encode_key(&self, values: &[Value]) -> SqlResult<Vec<u8>> {
        let key_values: Vec<Value> = self
            .schema
            .key
            .iter()
            .map(|&(c, _)| values[c].clone())
            .collect();
        let mut out = Vec::with_capacity(16);
        key_codec::encode_key(&self.key_columns, &key_values, &mut out)?;
        Ok(out)
    }

    /// The constraint name PostgreSQL would give the primary key.
    pub fn pkey_name(&self) -> String {
        format!("{}_pkey", self.name)
    }

    /// `Key (a, b)=(1, 2)`, for a duplicate-key error's detail.
    pub fn describe_key(&self, values: &[Value]) -> String {
        let names: Vec<&str> = self
            .schema
            .key
            .iter()
            .map(|&(c, _)| self.schema.columns[c].name.as_str())
            .collect();
        let shown: Vec<String> = self
            .schema
            .key
            .iter()
            .map(|&(c, _)| {
                values[c]
                    .to_pg_text(Some(&self.schema.columns[c].ty))
                    .unwrap_or_default()
            })
            .collect();
        format!(
            "Key ({})=({}) already exists.",
            names.join(", "),
            shown.join(", ")
        )
    }

    /// True if scans come back in key order (every layout but a plain heap).
    pub fn scans_in_key_order(&self) -> bool {
        !matches!(self.handle.layout(), Layout::Heap { .. }) && !self.key_columns.is_empty()
    }

    /// Calls `visit` with each (key, row) a read by `engine`'s session sees, from `from`
    /// on (every row when `None`), until it returns false: the table's committed rows and
    /// the open transaction's own (PostgreSQL's read of your own writes; they are never in
    /// the table yet), merged in key order where the table scans in key order. A table
    /// this transaction truncated shows only its own rows since the TRUNCATE.
    pub fn visit_rows(
        &self,
        engine: &mut Session,
        from: Option<&Key>,
        mut visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> SqlResult<()> {
        let ordered = self.scans_in_key_order();
        let mut pending = engine.pending_rows(&self.handle);
        pending.retain(|(k, _)| from.is_none_or(|f| k >= f));
        pending.sort_by_key(|(key, _)| *key);
        let mut next_pending = 0;
        let mut stopped = false;
        if !engine.truncates(&self.handle) {
            engine
                .scan(&self.handle, from, |key, row| {
                    while ordered
                        && next_pending < pending.len()
                        && pending[next_pending].0.as_bytes() < key
                    {
                        let (k, r) = &pending[next_pending];
                        next_pending += 1;
                        if !visit(k.as_bytes(), r) {
                            stopped = true;
                            return false;
                        }
                    }
                    stopped = !visit(key, row);
                    !stopped
                })
                .map_err(engine_error)?;
        }
        if !stopped {
            for (k, r) in &pending[next_pending..] {
                if !visit(k.as_bytes(), r) {
                    break;
                }
            }
        }
        Ok(())
    }
}

/// The non-key columns generated as `key_column % n` (see [`SqlTable::key_buckets`]).
fn key_buckets(schema: &TableSchema) -> Vec<(usize, usize, i64)> {
    use sqlparser::ast::{BinaryOperator, Expr};
    let mut out = Vec::new();
    for (column, c) in schema.columns.iter().enumerate() {
        let in_key = schema.key.iter().any(|&(k, _)| k == column);
        let Some(text) = c.generated.as_deref().filter(|_| !in_key) else {
            continue;
        };
        let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
            .try_with_sql(text)
            .and_then(|mut p| p.parse_expr());
        let Ok(parsed) = parsed else { continue };
        let Expr::BinaryOp {
            left,
            op: BinaryOperator::Modulo,
            right,
        } = crate::ddl::strip_nested(&parsed)
        else {
            continue;
        };
        let Expr::Identifier(ident) = crate::ddl::strip_nested(left) else {
            continue;
        };
        let name = expr::fold(ident);
        let key = schema
            .key
            .iter()
            .map(|&(k, _)| k)
            .find(|&k| schema.columns[k].name == name && schema.columns[k].ty.is_integer());
        let n = crate::ddl::integer_literal(right).ok().filter(|&n| n != 0);
        if let (Some(key), Some(n)) = (key, n) {
            out.push((column, key, n));
        }
    }
    out
}

/// The stored generated columns outside the key other than the `k % n` key buckets,
/// compiled against the table's columns: the insert computes each from the row's other
/// values. An expression that reads a key column the engine generates (its value is made
/// after the row is built), or another generated column, is 0A000 naming the column.
pub(crate) fn generated_columns(schema: &TableSchema) -> SqlResult<Vec<(usize, Scalar)>> {
    let scope: Vec<(String, SqlType)> = schema
        .columns
        .iter()
        .map(|c| (c.name.clone(), c.ty))
        .collect();
    let buckets: Vec<usize> = key_buckets(schema).iter().map(|b| b.0).collect();
    let in_key = |column: usize| schema.key.iter().any(|&(k, _)| k == column);
    let engine_made =
        |column: usize| in_key(column) && schema.keygen != crate::schema::KeyGen::Supplied;
    let mut out = Vec::new();
    for (column, c) in schema.columns.iter().enumerate() {
        let Some(text) = c.generated.as_deref() else {
            continue;
        };
        if in_key(column) || buckets.contains(&column) {
            continue;
        }
        let parsed = parse_stored_expr(text, &format!("the generated column \"{}\"", c.name))?;
        let mut read = None;
        let _ = sqlparser::ast::visit_expressions(&parsed, |e| {
            let name = match e {
                sqlparser::ast::Expr::Identifier(i) => Some(expr::fold(i)),
                sqlparser::ast::Expr::CompoundIdentifier(parts) => parts.last().map(expr::fold),
                _ => None,
            };
            let at = name.and_then(|n| scope.iter().position(|(s, _)| *s == n));
            if let Some(at) =
                at.filter(|&at| engine_made(at) || schema.columns[at].generated.is_some())
            {
                read = Some(at);
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        });
        if let Some(at) = read {
            let what = if engine_made(at) {
                "a key the engine generates after the row is built"
            } else {
                "another generated column"
            };
            return Err(SqlError::unsupported(format!(
                "the generated column \"{}\": its expression reads \"{}\", {what} (hotpage computes a stored generated column from the row's given and default values, or key % n of the key)",
                c.name, schema.columns[at].name
            )));
        }
        out.push((column, expr::compile(&parsed, &scope)?));
    }
    Ok(out)
}

/// An expression stored in a table's schema (a DEFAULT or a generated column's), parsed
/// again; `what` names it in the syntax error.
fn parse_stored_expr(text: &str, what: &str) -> SqlResult<sqlparser::ast::Expr> {
    sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::new(sqlstate::SYNTAX_ERROR, format!("{what}: {e}")))
}

/// A DEFAULT compiled against the table's columns (a default may not read columns).
fn compile_default(column: &Column, scope: &[(String, SqlType)]) -> SqlResult<Option<Scalar>> {
    let Some(text) = &column.default else {
        return Ok(None);
    };
    let parsed = parse_stored_expr(text, &format!("default of \"{}\"", column.name))?;
    let empty: &[(String, SqlType)] = &[];
    let compiled = expr::compile(&parsed, empty).or_else(|_| expr::compile(&parsed, scope))?;
    if !compiled.is_row_independent() && !matches!(compiled, Scalar::Call(..)) {
        return Err(SqlError::new(
            sqlstate::INVALID_TABLE_DEFINITION,
            format!(
                "cannot use column reference in DEFAULT expression of \"{}\"",
                column.name
            ),
        ));
    }
    Ok(Some(compiled))
}

/// The schema of a table made by `--design`: its key columns by key kind, then `row`.
fn implicit_schema(kind: KeyKind, layout: Layout) -> TableSchema {
    let column = |name: &str, ty| Column {
        name: name.to_string(),
        ty,
        not_null: true,
        default: None,
        generated: None,
    };
    let (mut columns, key, keygen) = match kind {
        KeyKind::GuidV4 | KeyKind::GuidV7 => (
            vec![column("id", SqlType::Uuid)],
            vec![(0, KeyEncoding::Natural)],
            KeyGen::Uuid {
                v7: kind == KeyKind::GuidV7,
            },
        ),
        KeyKind::HashPrefix { buckets } => (
            vec![
                column("bucket", SqlType::SmallInt),
                column("id", SqlType::BigInt),
            ],
            vec![(0, KeyEncoding::BucketU16), (1, KeyEncoding::Natural)],
            KeyGen::HashPrefix {
                buckets,
                always: true,
            },
        ),
        _ => (
            vec![column("id", SqlType::BigInt)],
            vec![(0, KeyEncoding::Natural)],
            KeyGen::Identity { always: true },
        ),
    };
    let _ = layout;
    columns.push(Column {
        not_null: false,
        ..column("row", SqlType::Bytea)
    });
    TableSchema {
        columns,
        key,
        keygen,
    }
}
