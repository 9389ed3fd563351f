//! INSERT: `VALUES` (one or many rows), `DEFAULT VALUES`, `SELECT …` (a query's rows),
//! `RETURNING`. Planned once (columns resolved, expressions compiled, a query planned),
//! executed per call with its parameters.
//!
//! A row's key is either given (every key column has a value: the engine proves it unique
//! before it logs the row) or made by the engine's key generator (identity, sequence, GUID,
//! hash-prefix), which returns it; the key columns' values are then decoded from it for
//! `RETURNING` and `lastval()`.

use crate::catalog::{self, CatalogPlan};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::expr::{self, Scalar, Typing, object_name};
use crate::schema::KeyGen;
use crate::select::{self, Projection, SelectPlan};
use crate::session::{ColumnInfo, Ctx, StatementResult, engine_error};
use crate::table::SqlTable;
use crate::types::SqlType;
use crate::value::Value;
use hotpage::{Error as EngineError, Key};
use sqlparser::ast::{Expr, Insert, Query, SelectItem, SetExpr, TableObject, Value as AstValue};
use std::sync::Arc;

pub(crate) struct InsertPlan {
    table: Arc<SqlTable>,
    source: RowSource,
    returning: Option<Projection>,
    params: Vec<Option<SqlType>>,
}

/// Where an INSERT's rows come from.
enum RowSource {
    /// Per VALUES row, per table column: the given expression (None: its default).
    Values(Vec<Vec<Option<Scalar>>>),
    /// A query's rows: its column `i` goes into table column `targets[i]`, and every
    /// other column takes its default.
    Query {
        query: QuerySource,
        targets: Vec<usize>,
    },
}

/// An `INSERT … SELECT`'s query: one table's (`select.rs`), or one with joins, subqueries
/// or set operations (the general engine, `catalog/`), chosen as for a plain SELECT.
enum QuerySource {
    Select(Box<SelectPlan>),
    General(Box<CatalogPlan>),
}

impl QuerySource {
    fn plan(
        db: &Arc<crate::session::SqlDatabase>,
        query: &Query,
        typing: Typing,
    ) -> SqlResult<QuerySource> {
        if catalog::handles(query) || catalog::joins_or_nests(query) {
            return Ok(QuerySource::General(Box::new(catalog::plan(
                Some(db),
                query,
                typing,
            )?)));
        }
        match select::plan(db, query, typing) {
            Ok(plan) => Ok(QuerySource::Select(Box::new(plan))),
            Err(e) if e.sqlstate == sqlstate::FEATURE_NOT_SUPPORTED => Ok(QuerySource::General(
                Box::new(catalog::plan(Some(db), query, typing)?),
            )),
            Err(e) => Err(e),
        }
    }

    fn columns(&self) -> &[ColumnInfo] {
        match self {
            QuerySource::Select(plan) => &plan.columns,
            QuerySource::General(plan) => &plan.columns,
        }
    }

    fn param_types(&self) -> Vec<Option<SqlType>> {
        match self {
            QuerySource::Select(plan) => plan.param_types(),
            QuerySource::General(plan) => plan.param_types.clone(),
        }
    }

    fn is_stale(&self) -> bool {
        match self {
            QuerySource::Select(plan) => plan.is_stale(),
            QuerySource::General(plan) => plan.is_stale(),
        }
    }

    fn rows(&self, ctx: &mut Ctx<'_>) -> SqlResult<Vec<Vec<Value>>> {
        match self {
            QuerySource::Select(plan) => Ok(plan.execute(ctx)?.rows),
            QuerySource::General(plan) => Ok(plan.execute(ctx)?.rows),
        }
    }
}

/// One row's given values, per table column (None: its default).
enum Given<'a> {
    Exprs(&'a [Option<Scalar>]),
    Values(Vec<Option<Value>>),
}

impl Given<'_> {
    /// The value given for `column`, evaluated now.
    fn take(&mut self, column: usize, ctx: &mut Ctx<'_>) -> SqlResult<Option<Value>> {
        match self {
            Given::Exprs(exprs) => exprs[column]
                .as_ref()
                .map(|scalar| scalar.eval(&[], ctx))
                .transpose(),
            Given::Values(values) => Ok(values[column].take()),
        }
    }
}

pub(crate) fn plan(
    db: &Arc<crate::session::SqlDatabase>,
    ins: &Insert,
    typing: Typing,
) -> SqlResult<InsertPlan> {
    crate::expr::with_typing(typing, || plan_typed(db, ins, typing))
}

/// [`plan`], under `typing`'s rules.
fn plan_typed(
    db: &Arc<crate::session::SqlDatabase>,
    ins: &Insert,
    typing: Typing,
) -> SqlResult<InsertPlan> {
    let TableObject::TableName(name) = &ins.table else {
        return Err(SqlError::unsupported("INSERT into a table function"));
    };
    if ins.on.is_some() {
        return Err(SqlError::unsupported("INSERT ... ON CONFLICT"));
    }
    let table = db.table(&object_name(name))?;
    let mut targets = target_columns(&table, &ins.columns)?;
    if ins.columns.is_empty() && typing == Typing::Postgres {
        // PostgreSQL: with no column list, N values go to the first N columns and the
        // rest take their defaults (`INSERT INTO t VALUES (1)`). SQL Server refuses it.
        let supplied = match ins.source.as_deref().map(|q| q.body.as_ref()) {
            Some(SetExpr::Values(values)) => values.rows.first().map(|r| r.content.len()),
            Some(_) => None,
            None => Some(targets.len()),
        };
        if let Some(supplied) = supplied {
            targets.truncate(supplied);
        }
    }
    let returning = match &ins.returning {
        Some(items) => Some(select::project(items, &table.scope)?),
        None => None,
    };
    let (source, params) = match ins.source.as_deref() {
        None => plan_values(&table, &targets, &[Vec::new()], false)?,
        Some(query) => match query.body.as_ref() {
            SetExpr::Values(values) => {
                let rows: Vec<Vec<Expr>> = values.rows.iter().map(|r| r.content.clone()).collect();
                plan_values(&table, &targets, &rows, true)?
            }
            _ => {
                let implied = ins.columns.is_empty() && typing == Typing::Postgres;
                plan_query(db, &table, targets, implied, query, typing)?
            }
        },
    };
    if typing == Typing::Postgres {
        let values = match &source {
            RowSource::Values(rows) => rows.iter().flatten().flatten().collect(),
            RowSource::Query { .. } => Vec::new(),
        };
        let returned = returning.iter().flat_map(|r| &r.items);
        values
            .into_iter()
            .chain(returned)
            .try_for_each(expr::refuse_mixed_types)?;
    }
    Ok(InsertPlan {
        table,
        source,
        returning,
        params,
    })
}

/// The VALUES rows (or DEFAULT VALUES' one empty row, `counted` false), each as many
/// expressions as target columns.
fn plan_values(
    table: &SqlTable,
    targets: &[usize],
    given_rows: &[Vec<Expr>],
    counted: bool,
) -> SqlResult<(RowSource, Vec<Option<SqlType>>)> {
    let mut params = Vec::new();
    let mut rows = Vec::with_capacity(given_rows.len());
    for given in given_rows {
        if counted && given.len() != given_rows[0].len() {
            return Err(SqlError::new(
                sqlstate::SYNTAX_ERROR,
                "VALUES lists must all be the same length",
            ));
        }
        if counted {
            check_count(given.len(), targets.len())?;
        }
        rows.push(plan_row(table, targets, given, &mut params)?);
    }
    Ok((RowSource::Values(rows), params))
}

/// PostgreSQL's error when the expressions and the target columns differ in number.
fn check_count(expressions: usize, targets: usize) -> SqlResult<()> {
    let message = match expressions.cmp(&targets) {
        std::cmp::Ordering::Equal => return Ok(()),
        std::cmp::Ordering::Greater => "INSERT has more expressions than target columns",
        std::cmp::Ordering::Less => "INSERT has more target columns than expressions",
    };
    Err(SqlError::new(sqlstate::SYNTAX_ERROR, message))
}

/// `INSERT … SELECT`: the query planned as any SELECT, its columns matched to the
/// targets by position, and their types checked as PostgreSQL's assignment casts allow
/// (so a mismatch fails at plan time, not at the first row). `implied_targets`: the
/// statement named no columns.
fn plan_query(
    db: &Arc<crate::session::SqlDatabase>,
    table: &SqlTable,
    mut targets: Vec<usize>,
    implied_targets: bool,
    query: &Query,
    typing: Typing,
) -> SqlResult<(RowSource, Vec<Option<SqlType>>)> {
    let plan = QuerySource::plan(db, query, typing)?;
    if implied_targets {
        // No column list: the query's N columns go to the table's first N (PostgreSQL).
        targets.truncate(plan.columns().len());
    }
    check_count(plan.columns().len(), targets.len())?;
    let untyped = untyped_items(query);
    for (i, (&column, source)) in targets.iter().zip(plan.columns()).enumerate() {
        refuse_generated_always(table, column)?;
        let target = &table.schema.columns[column];
        if !untyped.get(i).copied().unwrap_or(false) && !assignable(&source.ty, &target.ty) {
            return Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!(
                    "column \"{}\" is of type {} but expression is of type {}",
                    target.name,
                    target.ty.name(),
                    source.ty.name()
                ),
            )
            .with_hint("You will need to rewrite or cast the expression."));
        }
    }
    let params = plan.param_types();
    Ok((
        RowSource::Query {
            query: plan,
            targets,
        },
        params,
    ))
}

/// Per item of the query's select list: true for a bare string literal or NULL, whose
/// type PostgreSQL takes from the column it goes into (`INSERT … SELECT '42', NULL`).
fn untyped_items(query: &Query) -> Vec<bool> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return Vec::new();
    };
    select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(Expr::Value(v))
            | SelectItem::ExprWithAlias {
                expr: Expr::Value(v),
                ..
            } => {
                matches!(v.value, AstValue::SingleQuotedString(_) | AstValue::Null)
            }
            _ => false,
        })
        .collect()
}

/// Whether a value of type `from` may be stored in a column of type `to` without an
/// explicit cast: PostgreSQL's implicit and assignment casts among the types hotpage
/// has (numbers among themselves, anything into text, timestamp and timestamptz).
fn assignable(from: &SqlType, to: &SqlType) -> bool {
    from == to
        || to.is_text_like()
        || (from.is_text_like() && matches!(to, SqlType::Name))
        || (from.is_numeric_family() && to.is_numeric_family())
        || (datetime(from) && datetime(to))
}

/// date, timestamp and timestamptz, which PostgreSQL's assignment casts convert among.
fn datetime(ty: &SqlType) -> bool {
    ty.is_timestamp() || *ty == SqlType::Date
}

fn target_columns(
    table: &SqlTable,
    columns: &[sqlparser::ast::ObjectName],
) -> SqlResult<Vec<usize>> {
    if columns.is_empty() {
        return Ok((0..table.schema.columns.len()).collect());
    }
    let mut targets = Vec::with_capacity(columns.len());
    for column in columns {
        let name = object_name(column);
        let index = table.schema.column_index(&name).ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_COLUMN,
                format!(
                    "column \"{name}\" of relation \"{}\" does not exist",
                    table.name
                ),
            )
        })?;
        if targets.contains(&index) {
            return Err(SqlError::new(
                sqlstate::DUPLICATE_COLUMN,
                format!("column \"{name}\" specified more than once"),
            ));
        }
        targets.push(index);
    }
    Ok(targets)
}

fn is_default_keyword(e: &Expr) -> bool {
    matches!(e, Expr::Identifier(ident) if ident.quote_style.is_none() && ident.value.eq_ignore_ascii_case("default"))
}

fn plan_row(
    table: &SqlTable,
    targets: &[usize],
    given: &[Expr],
    params: &mut Vec<Option<SqlType>>,
) -> SqlResult<Vec<Option<Scalar>>> {
    let mut row: Vec<Option<Scalar>> = vec![None; table.schema.columns.len()];
    let empty: &[(String, SqlType)] = &[];
    for (&column, e) in targets.iter().zip(given) {
        if is_default_keyword(e) {
            continue;
        }
        refuse_generated_always(table, column)
            .map_err(|err| err.at_line_column(expr::position_of(e)))?;
        let scalar = expr::compile(e, empty)?;
        if let Scalar::Param(i) = scalar {
            if params.len() <= i {
                params.resize(i + 1, None);
            }
            params[i] = Some(table.schema.columns[column].ty);
        } else {
            // `$1::bigint`, `$1 + 1`: as the expression implies.
            crate::param_types::infer_growing(&scalar, params);
        }
        // A real or timestamptz stored in a text column is its type's text (0.1, not the
        // double 0.10000000149011612; a timestamptz with its +00).
        let scalar = match table.schema.columns[column].ty.is_text_like() {
            true => expr::typed_text(scalar),
            false => scalar,
        };
        row[column] = Some(scalar);
    }
    Ok(row)
}

/// A value given for a `GENERATED ALWAYS` column (identity or stored expression).
fn refuse_generated_always(table: &SqlTable, column: usize) -> SqlResult<()> {
    let schema = &table.schema;
    let name = &schema.columns[column].name;
    let in_key = schema.key.iter().any(|&(c, _)| c == column);
    if schema.columns[column].generated.is_some() {
        return Err(SqlError::new(
            sqlstate::GENERATED_ALWAYS,
            format!("cannot insert a non-DEFAULT value into column \"{name}\""),
        )
        .with_detail(format!("Column \"{name}\" is a generated column.")));
    }
    let always = match schema.keygen {
        KeyGen::Identity { always } | KeyGen::HashPrefix { always, .. } => always,
        _ => false,
    };
    if in_key && always {
        return Err(SqlError::new(
            sqlstate::GENERATED_ALWAYS,
            format!("cannot insert a non-DEFAULT value into column \"{name}\""),
        )
        .with_detail(format!(
            "Column \"{name}\" is an identity column defined as GENERATED ALWAYS."
        ))
        .with_hint("Use a table whose identity is GENERATED BY DEFAULT to give key values."));
    }
    Ok(())
}

impl InsertPlan {
    /// True if the table was dropped or replaced after the plan was made.
    pub fn is_stale(&self) -> bool {
        let query_stale = match &self.source {
            RowSource::Query { query, .. } => query.is_stale(),
            RowSource::Values(_) => false,
        };
        self.table.handle.is_dropped() || query_stale
    }

    pub fn table_name(&self) -> &str {
        &self.table.name
    }

    pub fn columns(&self) -> Vec<ColumnInfo> {
        self.returning
            .as_ref()
            .map(|p| p.columns.clone())
            .unwrap_or_default()
    }

    pub fn param_types(&self) -> Vec<Option<SqlType>> {
        self.params.clone()
    }

    /// Inserts every row. A statement of several rows (or a query's, however many)
    /// outside a transaction block is its own transaction: all its rows or none
    /// (PostgreSQL's statement atomicity).
    pub fn execute(&self, ctx: &mut Ctx<'_>) -> SqlResult<StatementResult> {
        // One row with RETURNING is its own transaction too: RETURNING can fail after the
        // row is in.
        let many = match &self.source {
            RowSource::Values(rows) => rows.len() > 1,
            RowSource::Query { .. } => true,
        };
        let own_transaction = (many || self.returning.is_some()) && !ctx.engine.in_transaction();
        if own_transaction {
            ctx.engine.begin().map_err(engine_error)?;
        }
        let (inserted, returned) = match self.insert_rows(ctx) {
            Ok(done) => done,
            Err(error) => {
                if own_transaction {
                    ctx.engine.rollback().map_err(engine_error)?;
                }
                return Err(error);
            }
        };
        if own_transaction {
            ctx.engine
                .commit()
                .map_err(|e| self.insert_error(e, None))?;
        }
        Ok(StatementResult {
            tag: insert_tag(inserted),
            columns: self.columns(),
            rows: returned,
        })
    }

    /// Inserts every row; returns how many, and what RETURNING made of them.
    fn insert_rows(&self, ctx: &mut Ctx<'_>) -> SqlResult<(usize, Vec<Vec<Value>>)> {
        let mut returned = Vec::new();
        let mut row_bytes = Vec::with_capacity(64);
        let mut insert = |given: Given<'_>, ctx: &mut Ctx<'_>| -> SqlResult<()> {
            let values = self.insert_row(given, ctx, &mut row_bytes)?;
            if let Some(projection) = &self.returning {
                returned.push(projection.eval(&values, ctx)?);
            }
            Ok(())
        };
        let inserted = match &self.source {
            RowSource::Values(rows) => {
                for given in rows {
                    insert(Given::Exprs(given), ctx)?;
                }
                rows.len()
            }
            RowSource::Query { query, targets } => {
                // The query's rows first, then the inserts: the statement never reads
                // its own rows (they are staged until commit in any case).
                let rows = query.rows(ctx)?;
                let (count, width) = (rows.len(), self.table.schema.columns.len());
                let sources = query.columns();
                for row in rows {
                    let mut given = vec![None; width];
                    for ((&column, value), source) in targets.iter().zip(row).zip(sources) {
                        given[column] = Some(self.typed_for_text(column, value, source.ty));
                    }
                    insert(Given::Values(given), ctx)?;
                }
                count
            }
        };
        Ok((inserted, returned))
    }

    /// `value`, of the query's column type `source`, as column `column` takes it: a real
    /// or timestamptz going into a text column as its type's text, which the value (an
    /// f64, a microsecond count) cannot tell by itself.
    fn typed_for_text(&self, column: usize, value: Value, source: SqlType) -> Value {
        let into_text = self.table.schema.columns[column].ty.is_text_like();
        match (&value, source) {
            (Value::Float(_) | Value::Timestamp(_), SqlType::Real | SqlType::TimestampTz)
                if into_text =>
            {
                value
                    .to_pg_text(Some(&source))
                    .map_or(Value::Null, Value::Text)
            }
            _ => value,
        }
    }

    /// Inserts one row; returns all its values (the generated key's included).
    fn insert_row(
        &self,
        mut given: Given<'_>,
        ctx: &mut Ctx<'_>,
        row_bytes: &mut Vec<u8>,
    ) -> SqlResult<Vec<Value>> {
        let table = &self.table;
        let schema = &table.schema;
        let width = schema.columns.len();
        let mut values = Vec::with_capacity(width);
        let mut key_missing = false;
        for column in 0..width {
            let in_key = schema.key.iter().any(|&(c, _)| c == column);
            let value = match given.take(column, ctx)? {
                Some(value) => value,
                None if in_key && schema.columns[column].generated.is_some() => Value::Null,
                None if in_key && schema.keygen != KeyGen::Supplied => {
                    key_missing = true;
                    Value::Null
                }
                None => match &table.defaults[column] {
                    Some(default) => default.eval(&[], ctx)?,
                    None => Value::Null,
                },
            };
            values.push(assign(table, column, value)?);
        }
        let generated = table.generated.as_ref().map_err(Clone::clone)?;
        for (column, expression) in generated {
            let value = expression.eval(&values, ctx)?;
            values[*column] = assign(table, *column, value)?;
        }
        if !key_missing {
            fill_hash_bucket(table, &mut values)?;
            table.fill_key_buckets(&mut values);
        }
        check_not_null(table, &values, key_missing)?;
        table.encode_row(&values, row_bytes)?;
        if key_missing || schema.keygen == KeyGen::RowId {
            let key = self.insert_generated(ctx, row_bytes)?;
            self.fill_generated_key(&key, &mut values, ctx)?;
            table.fill_key_buckets(&mut values);
        } else {
            let key_bytes = table.encode_key(&values)?;
            let key = Key::from_bytes(&key_bytes).map_err(engine_error)?;
            ctx.engine
                .insert_keyed(&table.handle, &key, row_bytes)
                .map_err(|e| self.insert_error(e, Some(&values)))?;
        }
        Ok(values)
    }

    fn fill_generated_key(
        &self,
        key: &Key,
        values: &mut [Value],
        ctx: &mut Ctx<'_>,
    ) -> SqlResult<()> {
        let table = &self.table;
        if !table.key_columns.is_empty() {
            let decoded = crate::key_codec::decode_key(&table.key_columns, key.as_bytes())?;
            for (&(c, _), v) in table.schema.key.iter().zip(decoded) {
                values[c] = v;
            }
        }
        if let Some(value) = table.handle.key_kind().value_of(key) {
            ctx.state.lastval = Some(value);
            let sequence = match &table.schema.keygen {
                KeyGen::Sequence { name, .. } => name.clone(),
                _ => format!(
                    "{}_{}_seq",
                    table.name,
                    table
                        .schema
                        .key
                        .last()
                        .map_or("id", |&(c, _)| table.schema.columns[c].name.as_str())
                ),
            };
            ctx.state.currval.insert(sequence, value);
        }
        Ok(())
    }

    /// Inserts a row whose key the engine makes. Near the end of a narrow key column's
    /// range the key is made one at a time and checked first (a key past it would be
    /// stored and then unreadable). No lock of this layer is held while the engine may
    /// wait for another session's key lock: such a wait has no timeout, and the holder
    /// may need this layer's lock next (a deadlock).
    fn insert_generated(&self, ctx: &mut Ctx<'_>, row_bytes: &[u8]) -> SqlResult<Key> {
        let handle = &self.table.handle;
        let Some(serial) = self.check_generated_range()? else {
            return ctx
                .engine
                .insert(handle, row_bytes)
                .map_err(|e| self.insert_error(e, None));
        };
        if !handle.takes_supplied_keys() {
            // No key locks on this table: the engine's insert waits only for latches and
            // the log, never for another session's statement.
            let key = ctx.engine.insert(handle, row_bytes);
            drop(serial);
            return key.map_err(|e| self.insert_error(e, None));
        }
        let key = ctx.engine.next_key(handle).map_err(engine_error)?;
        drop(serial);
        ctx.engine
            .insert_keyed(handle, &key, row_bytes)
            .map_err(|e| self.insert_error(e, None))?;
        Ok(key)
    }

    /// For a generated key in a column narrower than bigint: within [`NARROW_KEY_MARGIN`]
    /// of the column's range end, takes the table's key mutex and refuses a next value past
    /// it (2200H, as a sequence at its maximum). Elsewhere, nothing.
    fn check_generated_range(&self) -> SqlResult<Option<std::sync::MutexGuard<'_, ()>>> {
        let table = &self.table;
        let Some(&(column, _)) = table.schema.key.last() else {
            return Ok(None);
        };
        let ty = table.schema.columns[column].ty;
        let Some((min, max)) = ty.integer_range().filter(|_| ty != SqlType::BigInt) else {
            return Ok(None);
        };
        // Values a sequence's sessions may hold in their caches beyond the high water.
        let cache = match table.handle.key_kind() {
            hotpage::KeyKind::Sequence { cache, .. } => i64::from(cache),
            _ => 1,
        };
        let near = |next: i64| {
            next.saturating_add(cache) > max.saturating_sub(NARROW_KEY_MARGIN)
                || next < min.saturating_add(NARROW_KEY_MARGIN)
        };
        if !near(table.handle.key_high_water()) {
            return Ok(None);
        }
        let guard = crate::session::lock(&table.narrow_keys);
        let next = table.handle.key_high_water();
        if next.saturating_add(cache - 1) > max || next < min {
            let column_name = &table.schema.columns[column].name;
            return Err(SqlError::new(
                "2200H",
                format!(
                    "nextval: reached maximum value of sequence \"{}_{column_name}_seq\" ({max})",
                    table.name
                ),
            ));
        }
        Ok(Some(guard))
    }

    fn insert_error(&self, e: EngineError, values: Option<&[Value]>) -> SqlError {
        match e {
            EngineError::DuplicateKey { key, .. } => {
                let detail = match values {
                    Some(values) => self.table.describe_key(values),
                    None => format!("Key {key} already exists."),
                };
                SqlError::new(
                    sqlstate::UNIQUE_VIOLATION,
                    format!(
                        "duplicate key value violates unique constraint \"{}\"",
                        self.table.pkey_name()
                    ),
                )
                .with_detail(detail)
            }
            other => engine_error(other),
        }
    }
}

/// Generated keys this close to a narrow column's range end are made one at a time.
/// Larger than the sessions that can hold a value between the check and the insert.
const NARROW_KEY_MARGIN: i64 = 1 << 20;

/// A value assigned to column `column`: coerced to its type, with the column named in
/// the error.
fn assign(table: &SqlTable, column: usize, value: Value) -> SqlResult<Value> {
    let c = &table.schema.columns[column];
    value.coerce_to_column(&c.ty, &c.name)
}

/// The hash-prefix bucket of a row whose id was given: `id % buckets`, as the generated
/// column says.
fn fill_hash_bucket(table: &SqlTable, values: &mut [Value]) -> SqlResult<()> {
    let KeyGen::HashPrefix { buckets, .. } = table.schema.keygen else {
        return Ok(());
    };
    let [(bucket, _), (id, _)] = table.schema.key.as_slice() else {
        return Ok(());
    };
    if let Value::Int(v) = values[*id] {
        values[*bucket] = Value::Int(v % i64::from(buckets));
    }
    Ok(())
}

fn check_not_null(table: &SqlTable, values: &[Value], key_missing: bool) -> SqlResult<()> {
    for (column, value) in values.iter().enumerate() {
        let c = &table.schema.columns[column];
        let in_key = table.schema.key.iter().any(|&(k, _)| k == column);
        // A key bucket is computed from the key the engine is about to make.
        let from_key = key_missing && table.key_buckets.iter().any(|&(b, _, _)| b == column);
        if *value == Value::Null && c.not_null && !(in_key && key_missing) && !from_key {
            return Err(SqlError::new(
                sqlstate::NOT_NULL_VIOLATION,
                format!(
                    "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                    c.name, table.name
                ),
            ));
        }
    }
    Ok(())
}

/// The command tag of an INSERT. One row is the common case (an autocommit insert per
/// round trip), and formatting its count was 1.4 % of the server's CPU under pgbench.
fn insert_tag(rows: usize) -> String {
    if rows == 1 {
        "INSERT 0 1".to_owned()
    } else {
        format!("INSERT 0 {rows}")
    }
}
