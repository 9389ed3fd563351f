//! SELECT over one table, a system view, or nothing: WHERE (a range on the first key column
//! goes to the index, the whole predicate is still applied to every row), aggregates with
//! GROUP BY and HAVING, DISTINCT, ORDER BY (output names, positions or expressions),
//! LIMIT and OFFSET. Rows stream through a sink, so `count(*)` over a large table holds
//! one group, not every row.

use crate::error::{SqlError, SqlResult, sqlstate};
use crate::expr::{self, AggFunc, EvalContext, Scalar, Typing, aggregate_of, fold, object_name};
use crate::limits::{self, MemoryBudget};
use crate::session::{ColumnInfo, Ctx, ScanCtx, SqlDatabase, StatementResult};
use crate::table::SqlTable;
use crate::types::SqlType;
use crate::value::Value;
use crate::{key_codec, param_types, views};
use hotpage::Key;
use sqlparser::ast::{
    BinaryOperator, Distinct, Expr, GroupByExpr, Ident, LimitClause, OrderByKind, Query, Select,
    SelectItem, SetExpr, TableFactor, VisitMut, VisitorMut,
};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

mod window;

/// Compiled output expressions and their columns.
#[derive(Clone, Debug)]
pub(crate) struct Projection {
    pub items: Vec<Scalar>,
    pub columns: Vec<ColumnInfo>,
}

impl Projection {
    pub fn eval(&self, row: &[Value], ctx: &mut dyn EvalContext) -> SqlResult<Vec<Value>> {
        self.items.iter().map(|s| s.eval(row, ctx)).collect()
    }
}

/// Compiles a select list (`*` and `t.*` included) against `scope`.
pub(crate) fn project(items: &[SelectItem], scope: &[(String, SqlType)]) -> SqlResult<Projection> {
    project_named(items, items, scope)
}

/// Compiles `items` against `scope`, naming the columns after `original` (the same list
/// before aggregates were rewritten).
fn project_named(
    items: &[SelectItem],
    original: &[SelectItem],
    scope: &[(String, SqlType)],
) -> SqlResult<Projection> {
    let mut projection = Projection {
        items: Vec::new(),
        columns: Vec::new(),
    };
    for (item, named) in items.iter().zip(original) {
        match item {
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                for (i, (name, ty)) in scope.iter().enumerate() {
                    if name.starts_with("__") {
                        continue;
                    }
                    projection.items.push(Scalar::Column(i, *ty));
                    projection.columns.push(ColumnInfo {
                        name: name.clone(),
                        ty: *ty,
                    });
                }
            }
            SelectItem::UnnamedExpr(e) => {
                let scalar = expr::compile(e, scope)?;
                let name = match named {
                    SelectItem::UnnamedExpr(original) => {
                        crate::catalog::plan::column_name(original)
                    }
                    _ => crate::catalog::plan::column_name(e),
                };
                push(&mut projection, scalar, name);
            }
            SelectItem::ExprWithAlias { expr: e, alias } => {
                push(&mut projection, expr::compile(e, scope)?, fold(alias));
            }
            other => return Err(SqlError::unsupported(format!("the select item {other}"))),
        }
    }
    Ok(projection)
}

fn push(projection: &mut Projection, scalar: Scalar, name: String) {
    let ty = scalar.ty().unwrap_or(SqlType::Text);
    projection.items.push(scalar);
    projection.columns.push(ColumnInfo { name, ty });
}

/// Receives each row that passes WHERE; returns false to stop the scan.
type RowSink<'a> = dyn FnMut(Vec<Value>, &mut dyn EvalContext) -> SqlResult<bool> + 'a;

/// Where rows come from.
#[derive(Clone)]
enum Source {
    /// `SELECT` without FROM: one empty row.
    Nothing,
    /// A hash-partitioned table still waiting for partitions: no rows yet.
    Empty,
    Table(Arc<SqlTable>),
    View(String, Vec<Scalar>),
}

/// Bounds on the first key column, from WHERE.
#[derive(Clone, Default)]
struct KeyRange {
    lower: Option<(Scalar, bool)>,
    upper: Option<(Scalar, bool)>,
}

#[derive(Clone)]
struct Grouping {
    keys: Vec<Scalar>,
    aggs: Vec<Aggregate>,
    having: Option<Scalar>,
}

/// One aggregate call: the function, its argument (none for `count(*)`) and its
/// `FILTER (WHERE …)`, which picks the rows the aggregate sees.
#[derive(Clone)]
struct Aggregate {
    func: AggFunc,
    arg: Option<Scalar>,
    filter: Option<Scalar>,
}

/// An aggregate call as the rewriter found it, before compiling.
type AggregateCall = (AggFunc, Option<Expr>, Option<Expr>);

#[derive(Clone)]
enum OrderBy {
    Output(usize),
    Expr(Scalar),
}

#[derive(Clone)]
struct OrderKey {
    by: OrderBy,
    desc: bool,
    nulls_first: bool,
}

/// A planned SELECT.
pub(crate) struct SelectPlan {
    source: Source,
    filter: Option<Scalar>,
    range: KeyRange,
    grouping: Option<Grouping>,
    projection: Projection,
    order: Vec<OrderKey>,
    limit: Option<Scalar>,
    offset: Option<Scalar>,
    distinct: bool,
    /// `row_number() OVER (…)` calls: hidden columns after the source's.
    windows: Vec<window::Window>,
    pub columns: Vec<ColumnInfo>,
    params: usize,
}

impl SelectPlan {
    /// Every expression the plan evaluates, for checks made once it is planned.
    fn scalars(&self) -> Vec<&Scalar> {
        let mut all: Vec<&Scalar> = self.filter.iter().collect();
        if let Source::View(_, args) = &self.source {
            all.extend(args);
        }
        if let Some(grouping) = &self.grouping {
            all.extend(&grouping.keys);
            all.extend(&grouping.having);
            for agg in &grouping.aggs {
                all.extend(agg.arg.iter().chain(&agg.filter));
            }
        }
        all.extend(&self.projection.items);
        for key in &self.order {
            if let OrderBy::Expr(e) = &key.by {
                all.push(e);
            }
        }
        for window in &self.windows {
            all.extend(window.scalars());
        }
        all.extend(self.limit.iter().chain(&self.offset));
        all
    }

    /// True if the table the plan reads was dropped or replaced after it was planned.
    pub fn is_stale(&self) -> bool {
        matches!(&self.source, Source::Table(table) if table.handle.is_dropped())
    }
}

/// Plans a one-table SELECT under `typing`'s rules (`expr::Typing`).
pub(crate) fn plan(db: &SqlDatabase, query: &Query, typing: Typing) -> SqlResult<SelectPlan> {
    let plan = expr::with_typing(typing, || plan_query(db, query))?;
    if typing == Typing::Postgres {
        plan.scalars()
            .into_iter()
            .try_for_each(expr::refuse_mixed_types)?;
    }
    Ok(plan)
}

fn plan_query(db: &SqlDatabase, query: &Query) -> SqlResult<SelectPlan> {
    if query.with.is_some() || !query.locks.is_empty() {
        return Err(SqlError::unsupported("WITH and FOR UPDATE"));
    }
    let select = match query.body.as_ref() {
        SetExpr::Select(select) => select,
        SetExpr::Query(inner) => return plan_query(db, inner),
        _ => {
            return Err(SqlError::unsupported(
                "UNION, INTERSECT, EXCEPT and VALUES as a query",
            ));
        }
    };
    let (source, scope) = plan_source(db, select)?;
    let filter = match &select.selection {
        Some(e) => Some(expr::compile(e, &scope).map_err(|err| {
            if err.sqlstate == sqlstate::GROUPING_ERROR {
                SqlError {
                    message: "aggregate functions are not allowed in WHERE".into(),
                    ..err
                }
            } else {
                err
            }
        })?),
        None => None,
    };
    let range = match (&source, &select.selection) {
        (Source::Table(t), Some(e)) if t.scans_in_key_order() => key_range(t, e, &scope)?,
        _ => KeyRange::default(),
    };
    let (grouping, projection, order, windows) = plan_output(select, query, &scope)?;
    let distinct = matches!(select.distinct, Some(Distinct::Distinct));
    if distinct && order.iter().any(|k| matches!(k.by, OrderBy::Expr(_))) {
        // The general engine compares the ORDER BY expression with the listed ones
        // (`SELECT DISTINCT a AS x … ORDER BY a` is listed), and gives 42P10 otherwise.
        return Err(SqlError::unsupported(
            "SELECT DISTINCT with ORDER BY an expression in this path",
        ));
    }
    let (limit, offset) = limits(query)?;
    let columns = projection.columns.clone();
    let mut plan = SelectPlan {
        source,
        filter,
        range,
        grouping,
        projection,
        order,
        limit,
        offset,
        distinct,
        windows,
        columns,
        params: 0,
    };
    plan.params = count_params(query);
    Ok(plan)
}

fn plan_source(db: &SqlDatabase, select: &Select) -> SqlResult<(Source, Vec<(String, SqlType)>)> {
    refuse_clauses(select)?;
    for from in &select.from {
        crate::catalog::refuse_ordinality(&from.relation)?;
    }
    match select.from.as_slice() {
        [] => Ok((Source::Nothing, Vec::new())),
        [from] if from.joins.is_empty() => match &from.relation {
            // Renamed columns (`FROM t AS x(a, b)`) are the general engine's: this one
            // read the table's own names and dropped the new ones.
            TableFactor::Table {
                alias: Some(alias), ..
            } if !alias.columns.is_empty() => {
                Err(SqlError::unsupported("a table alias with column names"))
            }
            TableFactor::Table { name, args, .. } => {
                let name = object_name(name);
                if let Some(columns) = views::columns(&name) {
                    let empty: &[(String, SqlType)] = &[];
                    let args = match args {
                        Some(a) => a
                            .args
                            .iter()
                            .map(|arg| match arg {
                                sqlparser::ast::FunctionArg::Unnamed(
                                    sqlparser::ast::FunctionArgExpr::Expr(e),
                                ) => expr::compile(e, empty),
                                other => {
                                    Err(SqlError::unsupported(format!("the argument {other}")))
                                }
                            })
                            .collect::<SqlResult<_>>()?,
                        None => Vec::new(),
                    };
                    return Ok((Source::View(name, args), columns));
                }
                if let Some(scope) = db.pending_partitioned_scope(&name)? {
                    return Ok((Source::Empty, scope));
                }
                let table = db.table(&name)?;
                let scope = table.scope.clone();
                Ok((Source::Table(table), scope))
            }
            other => Err(SqlError::unsupported(format!("FROM {other}"))),
        },
        _ => Err(SqlError::unsupported("joins")),
    }
}

fn refuse_clauses(select: &Select) -> SqlResult<()> {
    if select.top.is_some()
        || select.into.is_some()
        || !select.lateral_views.is_empty()
        || select.qualify.is_some()
        || !select.named_window.is_empty()
        || matches!(select.distinct, Some(Distinct::On(_)))
    {
        return Err(SqlError::unsupported(format!("the query {select}")));
    }
    Ok(())
}

/// Bounds on the first key column from WHERE's AND-ed comparisons with constants or
/// parameters.
fn key_range(table: &SqlTable, e: &Expr, scope: &[(String, SqlType)]) -> SqlResult<KeyRange> {
    let first = table.schema.columns[table.schema.key[0].0].name.clone();
    let mut range = KeyRange::default();
    let mut conjuncts = Vec::new();
    split_and(e, &mut conjuncts);
    let empty: &[(String, SqlType)] = &[];
    let _ = scope;
    for c in conjuncts {
        match c {
            Expr::BinaryOp { left, op, right } => {
                let (column, value, op) = match (left.as_ref(), right.as_ref()) {
                    (Expr::Identifier(i), other) if fold(i) == first => (true, other, op.clone()),
                    (other, Expr::Identifier(i)) if fold(i) == first => (true, other, flip(op)),
                    _ => (false, left.as_ref(), op.clone()),
                };
                let Ok(bound) = expr::compile(value, empty) else {
                    continue;
                };
                if !column || !bound.is_row_independent() {
                    continue;
                }
                match op {
                    BinaryOperator::Eq => {
                        range.lower = Some((bound.clone(), true));
                        range.upper = Some((bound, true));
                    }
                    BinaryOperator::Gt => range.lower = Some((bound, false)),
                    BinaryOperator::GtEq => range.lower = Some((bound, true)),
                    BinaryOperator::Lt => range.upper = Some((bound, false)),
                    BinaryOperator::LtEq => range.upper = Some((bound, true)),
                    _ => {}
                }
            }
            Expr::Between {
                expr: inner,
                negated: false,
                low,
                high,
            } if matches!(inner.as_ref(), Expr::Identifier(i) if fold(i) == first) => {
                if let (Ok(lo), Ok(hi)) = (expr::compile(low, empty), expr::compile(high, empty)) {
                    range.lower = Some((lo, true));
                    range.upper = Some((hi, true));
                }
            }
            _ => {}
        }
    }
    Ok(range)
}

fn split_and<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_and(left, out);
            split_and(right, out);
        }
        Expr::Nested(inner) => split_and(inner, out),
        other => out.push(other),
    }
}

fn flip(op: &BinaryOperator) -> BinaryOperator {
    match op {
        BinaryOperator::Lt => BinaryOperator::Gt,
        BinaryOperator::LtEq => BinaryOperator::GtEq,
        BinaryOperator::Gt => BinaryOperator::Lt,
        BinaryOperator::GtEq => BinaryOperator::LtEq,
        other => other.clone(),
    }
}

/// Replaces GROUP BY expressions and aggregate calls with placeholder columns `__gN` and
/// `__aN`, collecting the aggregates.
struct Rewriter {
    group_texts: Vec<String>,
    aggs: Vec<AggregateCall>,
    error: Option<SqlError>,
}

impl VisitorMut for Rewriter {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        let text = e.to_string();
        if let Some(i) = self.group_texts.iter().position(|g| *g == text) {
            *e = Expr::Identifier(Ident::with_quote('"', format!("__g{i}")));
            return ControlFlow::Continue(());
        }
        if let Expr::Function(f) = e {
            match aggregate_of(f) {
                Ok(Some((func, arg))) => {
                    let arg = arg.cloned();
                    let filter = f.filter.as_deref().cloned();
                    if arg.iter().chain(&filter).any(contains_aggregate) {
                        self.error = Some(SqlError::new(
                            sqlstate::GROUPING_ERROR,
                            "aggregate function calls cannot be nested",
                        ));
                        return ControlFlow::Break(());
                    }
                    let k = self.aggs.len();
                    self.aggs.push((func, arg, filter));
                    *e = Expr::Identifier(Ident::with_quote('"', format!("__a{k}")));
                }
                Ok(None) => {}
                Err(error) => {
                    self.error = Some(error);
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    }
}

fn contains_aggregate(e: &Expr) -> bool {
    let mut found = false;
    let _ = sqlparser::ast::visit_expressions(e, |inner| {
        if let Expr::Function(f) = inner
            && matches!(aggregate_of(f), Ok(Some(_)))
        {
            found = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    found
}

type OutputPlan = (
    Option<Grouping>,
    Projection,
    Vec<OrderKey>,
    Vec<window::Window>,
);

fn plan_output(
    select: &Select,
    query: &Query,
    scope: &[(String, SqlType)],
) -> SqlResult<OutputPlan> {
    let group_exprs: Vec<Expr> = match &select.group_by {
        GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => exprs
            .iter()
            .map(|e| group_expr_by_output(e, &select.projection, scope))
            .collect::<SqlResult<_>>()?,
        _ => return Err(SqlError::unsupported("GROUP BY ALL, ROLLUP, CUBE")),
    };
    let order_exprs: Vec<sqlparser::ast::OrderByExpr> =
        match query.order_by.as_ref().map(|o| &o.kind) {
            None => Vec::new(),
            Some(OrderByKind::Expressions(list)) => list.clone(),
            Some(OrderByKind::All(_)) => return Err(SqlError::unsupported("ORDER BY ALL")),
        };
    let mut items = select.projection.clone();
    let mut having = select.having.clone();
    let mut order_rewritten: Vec<Expr> = order_exprs.iter().map(|o| o.expr.clone()).collect();
    let mut rewriter = Rewriter {
        group_texts: group_exprs.iter().map(|e| e.to_string()).collect(),
        aggs: Vec::new(),
        error: None,
    };
    let _ = items.visit(&mut rewriter);
    let _ = having.visit(&mut rewriter);
    let _ = order_rewritten.visit(&mut rewriter);
    if let Some(error) = rewriter.error {
        return Err(error);
    }
    let grouped = !group_exprs.is_empty() || !rewriter.aggs.is_empty();
    if !grouped {
        return plan_ungrouped(select, &order_exprs, scope);
    }
    let keys: Vec<Scalar> = group_exprs
        .iter()
        .map(|e| expr::compile(e, scope))
        .collect::<SqlResult<_>>()?;
    let mut aggs = Vec::with_capacity(rewriter.aggs.len());
    let mut grouped_scope: Vec<(String, SqlType)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (format!("__g{i}"), k.ty().unwrap_or(SqlType::Text)))
        .collect();
    for (i, (func, arg, filter)) in rewriter.aggs.iter().enumerate() {
        let arg = match arg {
            Some(e) => Some(expr::compile(e, scope)?),
            None => None,
        };
        let filter = match filter {
            Some(e) => Some(expr::compile(e, scope)?),
            None => None,
        };
        check_sum_argument(*func, arg.as_ref().and_then(Scalar::ty))?;
        grouped_scope.push((format!("__a{i}"), agg_type(*func, arg.as_ref())));
        aggs.push(Aggregate {
            func: *func,
            arg,
            filter,
        });
    }
    let grouping_error = |e: SqlError| {
        if e.sqlstate == sqlstate::UNDEFINED_COLUMN
            && let Some(name) = e.message.split('"').nth(1)
            && scope.iter().any(|(n, _)| n == name)
        {
            return SqlError::new(
                sqlstate::GROUPING_ERROR,
                format!("column \"{name}\" must appear in the GROUP BY clause or be used in an aggregate function"),
            )
            .at(e.position)
            .at_line_column(e.line_column.map(|at| *at));
        }
        e
    };
    let projection =
        project_named(&items, &select.projection, &grouped_scope).map_err(grouping_error)?;
    let having = match &having {
        Some(h) => Some(expr::compile(h, &grouped_scope).map_err(grouping_error)?),
        None => None,
    };
    let order = plan_order(&order_exprs, &order_rewritten, &projection, &grouped_scope)
        .map_err(grouping_error)?;
    Ok((
        Some(Grouping { keys, aggs, having }),
        projection,
        order,
        Vec::new(),
    ))
}

/// The output of a SELECT without GROUP BY or aggregates: its `row_number() OVER (…)`
/// calls become hidden columns after the source's.
fn plan_ungrouped(
    select: &Select,
    order_exprs: &[sqlparser::ast::OrderByExpr],
    scope: &[(String, SqlType)],
) -> SqlResult<OutputPlan> {
    let mut items = select.projection.clone();
    let windows = window::extract(&mut items, scope)?;
    let mut scope = scope.to_vec();
    scope.extend(window::columns(&windows, scope.len()));
    let projection = project_named(&items, &select.projection, &scope)?;
    let exprs: Vec<Expr> = order_exprs.iter().map(|o| o.expr.clone()).collect();
    let order = plan_order(order_exprs, &exprs, &projection, &scope)?;
    Ok((None, projection, order, windows))
}

/// `GROUP BY 2`: the second select item's expression; `GROUP BY x`, where `x` is no input
/// column but a select item's alias: that item's expression (PostgreSQL's rule: an input
/// column's name wins over an alias).
fn group_expr_by_output(
    e: &Expr,
    projection: &[SelectItem],
    scope: &[(String, SqlType)],
) -> SqlResult<Expr> {
    if let Expr::Identifier(ident) = e {
        let name = fold(ident);
        if !scope.iter().any(|(column, _)| *column == name) {
            let aliased = projection.iter().find_map(|item| match item {
                SelectItem::ExprWithAlias { expr, alias } if fold(alias) == name => Some(expr),
                _ => None,
            });
            if let Some(expr) = aliased {
                return Ok(expr.clone());
            }
        }
        return Ok(e.clone());
    }
    if let Expr::Value(v) = e
        && let sqlparser::ast::Value::Number(n, _) = &v.value
    {
        let position: usize = n.parse().unwrap_or(0);
        return match projection.get(position.wrapping_sub(1)) {
            Some(SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }) => {
                Ok(e.clone())
            }
            _ => Err(SqlError::new(
                sqlstate::INVALID_COLUMN_REFERENCE,
                format!("GROUP BY position {n} is not in select list"),
            )),
        };
    }
    Ok(e.clone())
}

fn agg_type(func: AggFunc, arg: Option<&Scalar>) -> SqlType {
    agg_result_type(func, arg.and_then(Scalar::ty))
}

/// sum and avg take numbers and intervals only, as PostgreSQL's (42883 `function
/// sum(text) does not exist`, found when the query is planned: a sum of one text or date
/// row gave the value back, and of two an operator's error).
pub(crate) fn check_sum_argument(func: AggFunc, arg_ty: Option<SqlType>) -> SqlResult<()> {
    let name = match func {
        AggFunc::Sum => "sum",
        AggFunc::Avg => "avg",
        _ => return Ok(()),
    };
    match arg_ty {
        Some(ty) if !(ty.is_numeric_family() && ty != SqlType::Oid || ty == SqlType::Interval) => {
            Err(SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", ty.base_name()),
            )
            .with_hint(
                "No function matches the given name and argument types. You might need to add explicit type casts.",
            ))
        }
        _ => Ok(()),
    }
}

/// An aggregate's result type from its argument's, as PostgreSQL types it (shared with the
/// general engine, `catalog/`).
pub(crate) fn agg_result_type(func: AggFunc, arg_ty: Option<SqlType>) -> SqlType {
    match func {
        AggFunc::CountStar | AggFunc::Count => SqlType::BigInt,
        AggFunc::Min | AggFunc::Max => arg_ty.unwrap_or(SqlType::Text),
        AggFunc::Sum => match arg_ty {
            // sum(real) is real in PostgreSQL (avg(real) is double).
            Some(SqlType::Real) => SqlType::Real,
            Some(t) if t.is_float() => SqlType::Double,
            Some(SqlType::SmallInt | SqlType::Int) => SqlType::BigInt,
            Some(SqlType::Numeric { scale, .. }) => SqlType::Numeric {
                precision: 38,
                scale,
            },
            Some(SqlType::NumericUnconstrained) => SqlType::NumericUnconstrained,
            Some(SqlType::Interval) => SqlType::Interval,
            _ => SqlType::Numeric {
                precision: 38,
                scale: 0,
            },
        },
        AggFunc::Avg => match arg_ty {
            Some(t) if t.is_float() => SqlType::Double,
            Some(SqlType::Interval) => SqlType::Interval,
            _ => SqlType::Numeric {
                precision: 38,
                scale: AVG_SCALE,
            },
        },
    }
}

/// avg() of integers and numerics: PostgreSQL shows 16 fraction digits for integer input.
const AVG_SCALE: u8 = 16;

fn plan_order(
    original: &[sqlparser::ast::OrderByExpr],
    rewritten: &[Expr],
    projection: &Projection,
    scope: &[(String, SqlType)],
) -> SqlResult<Vec<OrderKey>> {
    let mut keys = Vec::with_capacity(original.len());
    for (o, e) in original.iter().zip(rewritten) {
        let by = match &o.expr {
            Expr::Value(v) if matches!(v.value, sqlparser::ast::Value::Number(..)) => {
                let n: usize = v.value.to_string().parse().unwrap_or(0);
                if n == 0 || n > projection.items.len() {
                    return Err(SqlError::new(
                        sqlstate::INVALID_COLUMN_REFERENCE,
                        format!("ORDER BY position {n} is not in select list"),
                    )
                    .at_line_column(expr::position_of(&o.expr)));
                }
                OrderBy::Output(n - 1)
            }
            Expr::Identifier(ident) if projection.columns.iter().any(|c| c.name == fold(ident)) => {
                OrderBy::Output(
                    projection
                        .columns
                        .iter()
                        .position(|c| c.name == fold(ident))
                        .unwrap_or(0),
                )
            }
            _ => OrderBy::Expr(expr::compile(e, scope)?),
        };
        let desc = expr::sort_is_desc(o.options.sort.as_ref())?;
        // PostgreSQL: NULLs sort as if larger than every value (last ascending, first
        // descending) unless told otherwise.
        let nulls_first = o.options.nulls_first.unwrap_or(desc);
        keys.push(OrderKey {
            by,
            desc,
            nulls_first,
        });
    }
    Ok(keys)
}

fn limits(query: &Query) -> SqlResult<(Option<Scalar>, Option<Scalar>)> {
    let empty: &[(String, SqlType)] = &[];
    match &query.limit_clause {
        None => Ok((
            fetch_count(query)?
                .map(|e| expr::compile(e, empty))
                .transpose()?,
            None,
        )),
        Some(LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) => {
            if !limit_by.is_empty() {
                return Err(SqlError::unsupported("LIMIT BY"));
            }
            let limit = limit
                .as_ref()
                .or(fetch_count(query)?)
                .map(|e| expr::compile(e, empty))
                .transpose()?;
            let offset = offset
                .as_ref()
                .map(|o| expr::compile(&o.value, empty))
                .transpose()?;
            Ok((limit, offset))
        }
        Some(LimitClause::OffsetCommaLimit { .. }) => {
            Err(SqlError::unsupported("LIMIT offset, count"))
        }
    }
}

/// `FETCH { FIRST | NEXT } [n] { ROW | ROWS } ONLY`, the standard's LIMIT: its count (1
/// when it has none). WITH TIES and PERCENT are 0A000; with a LIMIT too, 42601 as in
/// PostgreSQL.
pub(crate) fn fetch_count(query: &Query) -> SqlResult<Option<&Expr>> {
    static ONE: std::sync::LazyLock<Expr> =
        std::sync::LazyLock::new(|| Expr::value(sqlparser::ast::Value::Number("1".into(), false)));
    let Some(fetch) = &query.fetch else {
        return Ok(None);
    };
    if fetch.with_ties || fetch.percent {
        return Err(SqlError::unsupported(format!("FETCH … {fetch}")));
    }
    if matches!(
        &query.limit_clause,
        Some(LimitClause::LimitOffset { limit: Some(_), .. })
    ) {
        return Err(SqlError::new(
            sqlstate::SYNTAX_ERROR,
            "multiple LIMIT clauses not allowed",
        ));
    }
    Ok(Some(fetch.quantity.as_ref().unwrap_or(&ONE)))
}

fn count_params(query: &Query) -> usize {
    let mut max = 0usize;
    let _ = sqlparser::ast::visit_expressions(query, |e| {
        if let Expr::Value(v) = e
            && let sqlparser::ast::Value::Placeholder(p) = &v.value
            && let Some(n) = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok())
        {
            max = max.max(n);
        }
        ControlFlow::<()>::Continue(())
    });
    max
}

impl SelectPlan {
    /// The parameters' types, as WHERE, HAVING, LIMIT and OFFSET imply them, then the
    /// select list (`SELECT $1::bigint`, `SELECT id + $1 FROM t`).
    pub fn param_types(&self) -> Vec<Option<SqlType>> {
        let mut types = vec![None; self.params];
        let having = self.grouping.as_ref().and_then(|g| g.having.as_ref());
        for condition in self.filter.iter().chain(having) {
            param_types::infer_condition(condition, &mut types);
        }
        for count in self.limit.iter().chain(&self.offset) {
            param_types::infer_count(count, &mut types);
        }
        for item in &self.projection.items {
            param_types::infer(item, &mut types);
        }
        types
    }

    pub fn execute(&self, ctx: &mut Ctx<'_>) -> SqlResult<StatementResult> {
        let limit = count_value(self.limit.as_ref(), ctx, "LIMIT")?;
        let offset = count_value(self.offset.as_ref(), ctx, "OFFSET")?.unwrap_or(0);
        let mut out: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
        // The rows read, then the rows made, count toward hotpage.query_memory.
        let mut memory = MemoryBudget::new(limits::query_memory_bytes(&ctx.state.settings));
        match &self.grouping {
            Some(grouping) => {
                let groups = self.group_rows(grouping, ctx, &mut memory)?;
                for row in groups {
                    self.emit(&row, ctx, &mut out, &mut memory)?;
                }
            }
            None => {
                // Without ORDER BY or DISTINCT, stop once the page of rows is complete.
                let enough = (self.order.is_empty() && !self.distinct && self.windows.is_empty())
                    .then_some(limit.map(|l| l.saturating_add(offset)))
                    .flatten();
                let mut collected = Vec::new();
                self.for_each_row(ctx, &mut |row, _: &mut dyn EvalContext| {
                    // LIMIT 0 keeps (and projects) no row, as PostgreSQL and the streamed
                    // path.
                    if enough == Some(0) {
                        return Ok(false);
                    }
                    memory.charge(limits::row_bytes(&row))?;
                    collected.push(row);
                    Ok(enough.is_none_or(|n| collected.len() < n))
                })?;
                window::number(&self.windows, &mut collected, ctx)?;
                for row in collected {
                    // The row read is dropped as its output row is made.
                    memory.release(limits::row_bytes(&row));
                    self.emit(&row, ctx, &mut out, &mut memory)?;
                }
            }
        }
        self.finish(out, limit, offset)
    }

    /// True if each output row can go to the client as it is made, none held: no GROUP BY,
    /// aggregate, ORDER BY, DISTINCT or window (each needs every row first), and no
    /// `nextval()` in the output (the scan holds the engine session it needs).
    pub fn streams(&self) -> bool {
        self.grouping.is_none()
            && self.order.is_empty()
            && !self.distinct
            && self.windows.is_empty()
            && !self.projection.items.iter().any(Scalar::calls_nextval)
    }

    /// Runs a plan that [`SelectPlan::streams`]: each output row goes to `emit` as it is
    /// made, and nothing is held, so no row counts toward `hotpage.query_memory`.
    /// Returns the number of rows emitted (the command tag's count).
    pub fn execute_streamed(
        &self,
        ctx: &mut Ctx<'_>,
        emit: &mut dyn FnMut(Vec<Value>) -> SqlResult<()>,
    ) -> SqlResult<u64> {
        assert!(self.streams(), "execute_streamed on a plan that holds rows");
        let limit = count_value(self.limit.as_ref(), ctx, "LIMIT")?.map(|l| l as u64);
        let offset = count_value(self.offset.as_ref(), ctx, "OFFSET")?.unwrap_or(0) as u64;
        if limit == Some(0) {
            return Ok(0);
        }
        let (mut skipped, mut emitted) = (0u64, 0u64);
        self.for_each_row(ctx, &mut |row, ctx: &mut dyn EvalContext| {
            // Skipped rows are projected too, as in the held path: an error in one is the
            // statement's.
            let projected = self.projection.eval(&row, ctx)?;
            if skipped < offset {
                skipped += 1;
                return Ok(true);
            }
            emit(projected)?;
            emitted += 1;
            Ok(limit.is_none_or(|l| emitted < l))
        })?;
        Ok(emitted)
    }

    /// Projects a row (and its ORDER BY keys) if it passes HAVING.
    fn emit(
        &self,
        row: &[Value],
        ctx: &mut Ctx<'_>,
        out: &mut Vec<(Vec<Value>, Vec<Value>)>,
        memory: &mut MemoryBudget,
    ) -> SqlResult<()> {
        if let Some(having) = self.grouping.as_ref().and_then(|g| g.having.as_ref())
            && expr::truth(&having.eval(row, ctx)?)? != Some(true)
        {
            return Ok(());
        }
        let projected = self.projection.eval(row, ctx)?;
        let mut keys = Vec::with_capacity(self.order.len());
        for key in &self.order {
            keys.push(match &key.by {
                OrderBy::Output(i) => projected[*i].clone(),
                OrderBy::Expr(s) => s.eval(row, ctx)?,
            });
        }
        memory.charge(limits::row_bytes(&projected) + limits::row_bytes(&keys))?;
        out.push((projected, keys));
        Ok(())
    }

    fn finish(
        &self,
        mut out: Vec<(Vec<Value>, Vec<Value>)>,
        limit: Option<usize>,
        offset: usize,
    ) -> SqlResult<StatementResult> {
        if !self.order.is_empty() {
            out.sort_by(|a, b| self.compare_keys(&a.1, &b.1));
        }
        let mut rows: Vec<Vec<Value>> = out.into_iter().map(|(row, _)| row).collect();
        if self.distinct {
            let mut seen = std::collections::HashSet::new();
            rows.retain(|row| seen.insert(crate::value::group_key(row)));
        }
        let rows: Vec<Vec<Value>> = rows
            .into_iter()
            .skip(offset)
            .take(limit.unwrap_or(usize::MAX))
            .collect();
        Ok(StatementResult {
            tag: format!("SELECT {}", rows.len()),
            columns: self.columns.clone(),
            rows,
        })
    }

    fn compare_keys(&self, a: &[Value], b: &[Value]) -> Ordering {
        for ((x, y), key) in a.iter().zip(b).zip(&self.order) {
            let ordering = order_by_key(
                (x == &Value::Null, y == &Value::Null),
                key.nulls_first,
                key.desc,
                || x.order_cmp(y),
            );
            if ordering != Ordering::Equal {
                return ordering;
            }
        }
        Ordering::Equal
    }

    /// Every source row that passes WHERE, to `sink` until it returns false. Expressions
    /// evaluated meanwhile (WHERE, the sink's) get a context without the engine session,
    /// which the scan holds: everything but `nextval()`.
    fn for_each_row(&self, ctx: &mut Ctx<'_>, sink: &mut RowSink<'_>) -> SqlResult<()> {
        match &self.source {
            Source::Nothing => self.offer(Vec::new(), ctx, sink).map(|_| ()),
            Source::Empty => Ok(()),
            Source::View(name, args) => {
                let args = args
                    .iter()
                    .map(|a| a.eval(&[], ctx))
                    .collect::<SqlResult<Vec<_>>>()?;
                for row in views::rows(name, ctx.db, &args)? {
                    ctx.state.clock.poll()?;
                    if !self.offer(row, ctx, sink)? {
                        break;
                    }
                }
                Ok(())
            }
            Source::Table(table) => self.scan_table(table, ctx, sink),
        }
    }

    /// Applies WHERE; true to go on.
    fn offer(
        &self,
        row: Vec<Value>,
        ctx: &mut dyn EvalContext,
        sink: &mut RowSink<'_>,
    ) -> SqlResult<bool> {
        if let Some(filter) = &self.filter
            && expr::truth(&filter.eval(&row, ctx)?)? != Some(true)
        {
            return Ok(true);
        }
        sink(row, ctx)
    }

    /// One pass over the table (from the lower key bound, to the upper one, when WHERE
    /// gives them), each row decoded and offered as it comes.
    fn scan_table(
        &self,
        table: &SqlTable,
        ctx: &mut Ctx<'_>,
        sink: &mut RowSink<'_>,
    ) -> SqlResult<()> {
        let first = table.key_columns.first().cloned();
        let lower = self.bound(&self.range.lower, first.as_ref(), ctx)?;
        let upper = self.bound(&self.range.upper, first.as_ref(), ctx)?;
        let from = match (&lower, &first) {
            (Some((v, _)), Some(column)) => {
                let mut bytes = Vec::new();
                key_codec::encode_key(
                    std::slice::from_ref(column),
                    std::slice::from_ref(v),
                    &mut bytes,
                )
                .ok()
                .and_then(|()| Key::from_bytes(&bytes).ok())
            }
            _ => None,
        };
        let first_column = table.schema.key.first().map(|&(c, _)| c);
        let Ctx {
            db,
            engine,
            state,
            params,
        } = ctx;
        let mut scan_ctx = ScanCtx { db, state, params };
        let mut failure = None;
        let visit = |key: &[u8], row: &[u8]| -> bool {
            if let Err(e) = scan_ctx.state.clock.poll() {
                failure = Some(e);
                return false;
            }
            let values = match table.decode(key, row) {
                Ok(values) => values,
                Err(e) => {
                    failure = Some(e);
                    return false;
                }
            };
            if let (Some((hi, inclusive)), Some(c)) = (&upper, first_column) {
                match values[c].order_cmp(hi) {
                    Ordering::Greater => return false,
                    Ordering::Equal if !inclusive => return false,
                    _ => {}
                }
            }
            match self.offer(values, &mut scan_ctx, sink) {
                Ok(go_on) => go_on,
                Err(e) => {
                    failure = Some(e);
                    false
                }
            }
        };
        table.visit_rows(engine, from.as_ref(), visit)?;
        failure.map_or(Ok(()), Err)
    }

    /// A key bound's value in the key column's type; `None` (no bound: WHERE alone decides)
    /// when it is NULL or does not convert exactly (`id < 2.4` on an integer key must not
    /// become `id < 2`).
    fn bound(
        &self,
        bound: &Option<(Scalar, bool)>,
        column: Option<&key_codec::KeyColumn>,
        ctx: &mut Ctx<'_>,
    ) -> SqlResult<Option<(Value, bool)>> {
        let (Some((scalar, inclusive)), Some(column)) = (bound, column) else {
            return Ok(None);
        };
        let value = scalar.eval(&[], ctx)?;
        let Ok(converted) = value.clone().coerce(&column.ty) else {
            return Ok(None);
        };
        let exact =
            converted != Value::Null && expr::compare(&converted, &value) == Some(Ordering::Equal);
        Ok(exact.then_some((converted, *inclusive)))
    }

    /// Runs the rows through the aggregates; returns one row per group (keys, then
    /// aggregate results).
    fn group_rows(
        &self,
        grouping: &Grouping,
        ctx: &mut Ctx<'_>,
        memory: &mut MemoryBudget,
    ) -> SqlResult<Vec<Vec<Value>>> {
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut groups: Vec<(Vec<Value>, Vec<Accumulator>)> = Vec::new();
        self.for_each_row(ctx, &mut |row, ctx: &mut dyn EvalContext| {
            let keys = grouping
                .keys
                .iter()
                .map(|k| k.eval(&row, ctx))
                .collect::<SqlResult<Vec<_>>>()?;
            let id = crate::value::group_key(&keys);
            let slot = match index.get(&id) {
                Some(&slot) => slot,
                None => {
                    memory.charge(id.len() + limits::row_bytes(&keys))?;
                    index.insert(id, groups.len());
                    groups.push((
                        keys,
                        grouping
                            .aggs
                            .iter()
                            .map(|a| Accumulator::new(a.func))
                            .collect(),
                    ));
                    groups.len() - 1
                }
            };
            for (agg, acc) in grouping.aggs.iter().zip(groups[slot].1.iter_mut()) {
                // FILTER (WHERE …): only rows where it is true reach the aggregate.
                if let Some(filter) = &agg.filter
                    && expr::truth(&filter.eval(&row, ctx)?)? != Some(true)
                {
                    continue;
                }
                let value = match &agg.arg {
                    Some(a) => a.eval(&row, ctx)?,
                    None => Value::Int(1),
                };
                acc.add(value)?;
            }
            Ok(true)
        })?;
        if groups.is_empty() && grouping.keys.is_empty() {
            groups.push((
                Vec::new(),
                grouping
                    .aggs
                    .iter()
                    .map(|a| Accumulator::new(a.func))
                    .collect(),
            ));
        }
        groups
            .into_iter()
            .map(|(mut keys, accs)| {
                for (acc, agg) in accs.into_iter().zip(&grouping.aggs) {
                    keys.push(acc.finish(agg.arg.as_ref())?);
                }
                Ok(keys)
            })
            .collect()
    }
}

fn count_value(s: Option<&Scalar>, ctx: &mut Ctx<'_>, what: &str) -> SqlResult<Option<usize>> {
    let Some(s) = s else {
        return Ok(None);
    };
    match s.eval(&[], ctx)? {
        Value::Null => Ok(None),
        Value::Int(n) if n >= 0 => Ok(Some(n as usize)),
        Value::Int(_) => Err(SqlError::new(
            if what == "LIMIT" { "2201W" } else { "2201X" },
            format!("{what} must not be negative"),
        )),
        other => Err(SqlError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!(
                "argument of {what} must be type bigint, not type {}",
                other.type_name()
            ),
        )),
    }
}

/// One aggregate's running state.
enum Accumulator {
    Count(i64),
    Sum(Option<Value>),
    Avg(Option<Value>, i64),
    Min(Option<Value>),
    Max(Option<Value>),
}

impl Accumulator {
    fn new(func: AggFunc) -> Accumulator {
        match func {
            AggFunc::CountStar | AggFunc::Count => Accumulator::Count(0),
            AggFunc::Sum => Accumulator::Sum(None),
            AggFunc::Avg => Accumulator::Avg(None, 0),
            AggFunc::Min => Accumulator::Min(None),
            AggFunc::Max => Accumulator::Max(None),
        }
    }

    fn add(&mut self, value: Value) -> SqlResult<()> {
        if value == Value::Null {
            return Ok(());
        }
        match self {
            Accumulator::Count(n) => *n += 1,
            Accumulator::Sum(sum) | Accumulator::Avg(sum, _) => {
                let widened = widen(value);
                *sum = Some(match sum.take() {
                    None => widened,
                    Some(s) => s.add(&widened)?,
                });
                if let Accumulator::Avg(_, n) = self {
                    *n += 1;
                }
            }
            Accumulator::Min(best) => {
                if best
                    .as_ref()
                    .is_none_or(|b| replaces(&value, b, Ordering::Less))
                {
                    *best = Some(value);
                }
            }
            Accumulator::Max(best) => {
                if best
                    .as_ref()
                    .is_none_or(|b| replaces(&value, b, Ordering::Greater))
                {
                    *best = Some(value);
                }
            }
        }
        Ok(())
    }

    fn finish(self, arg: Option<&Scalar>) -> SqlResult<Value> {
        Ok(match self {
            Accumulator::Count(n) => Value::Int(n),
            Accumulator::Sum(sum) => match (sum, arg.and_then(Scalar::ty)) {
                (Some(v), Some(SqlType::SmallInt | SqlType::Int)) => v.coerce(&SqlType::BigInt)?,
                // Summed in double, rounded to real once (PostgreSQL rounds at each step).
                (Some(v), Some(SqlType::Real)) => v.coerce(&SqlType::Real)?,
                (Some(v), _) => v,
                (None, _) => Value::Null,
            },
            Accumulator::Avg(sum, n) => sum.map_or(Ok(Value::Null), |s| average(s, n))?,
            Accumulator::Min(v) | Accumulator::Max(v) => v.unwrap_or(Value::Null),
        })
    }
}

/// Whether min's (`Less`) or max's (`Greater`) `candidate` replaces the value kept. Of two
/// intervals of one length (`1 mon` and `30 days`) the later is kept, as PostgreSQL's
/// interval_smaller and interval_larger keep it; of other equal values the first.
pub(crate) fn replaces(candidate: &Value, kept: &Value, wanted: Ordering) -> bool {
    let order = candidate.order_cmp(kept);
    order == wanted || order == Ordering::Equal && matches!(candidate, Value::Interval(_))
}

/// avg(): a sum of `n` values divided by `n`; numeric at PostgreSQL's division scale.
pub(crate) fn average(sum: Value, n: i64) -> SqlResult<Value> {
    match sum {
        Value::Float(f) => Ok(Value::Float(f / n as f64)),
        s => s.div(&Value::Numeric {
            scaled: i128::from(n),
            scale: 0,
        }),
    }
}

/// Sums of integers are kept as numeric, so a bigint sum cannot overflow.
pub(crate) fn widen(v: Value) -> Value {
    match v {
        Value::Int(i) => Value::Numeric {
            scaled: i128::from(i),
            scale: 0,
        },
        other => other,
    }
}

/// One ORDER BY key's order of two values, given which are NULL: NULLs first or last as
/// the key says, the others by `compare` (reversed for DESC). Shared by SELECT's sort and
/// the catalog evaluator's.
pub(crate) fn order_by_key(
    (x_null, y_null): (bool, bool),
    nulls_first: bool,
    desc: bool,
    compare: impl FnOnce() -> Ordering,
) -> Ordering {
    match (x_null, y_null) {
        (true, true) => Ordering::Equal,
        (true, false) if nulls_first => Ordering::Less,
        (true, false) => Ordering::Greater,
        (false, true) if nulls_first => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) if desc => compare().reverse(),
        (false, false) => compare(),
    }
}
