//! Planning a catalog query: sqlparser's `Query` into a [`QueryPlan`] whose names are
//! resolved (relations to the catalog's, columns to positions in a scope level, with outer
//! levels for correlated subqueries) and whose expressions are typed.
//!
//! A query is a tree of SELECTs and set operations. A SELECT's FROM is a left-deep chain of
//! items (relations, set-returning functions, subqueries, and joins of them); WHERE is split
//! into its AND-ed conjuncts and each is applied as soon as the items it reads are joined,
//! so `FROM pg_class c, pg_index i WHERE c.oid = '…' AND …` filters `c` before it meets `i`.
//! Relations are materialised once per execution and joined by nested loops, with a hash
//! of the inner side where a conjunct is an equality between the two sides.

use super::compile::{Compiler, ScopeCol, SetCall};
use super::cte::{self, CteBody, CtePlan};
use super::expr::{AggSpec, CExpr, ExprKind};
use super::functions::ScalarFunc;
use super::set_funcs::SetFunc;
use super::types::CType;
use super::window::WindowSpec;
use super::{RelationDef, Schema, defs};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::expr::{fold, object_name};
use crate::table::SqlTable;
use crate::types::SqlType;
use sqlparser::ast::{
    Distinct, Expr, GroupByExpr, Join, JoinConstraint, JoinOperator, LimitClause, ObjectName,
    OrderByKind, Query, Select, SelectItem, SetExpr, SetOperator, SetQuantifier, TableFactor,
    TableWithJoins, Values,
};
use std::collections::HashSet;
use std::sync::Arc;

/// A planned query: a SELECT or a set operation, then ORDER BY, OFFSET and LIMIT.
#[derive(Debug)]
pub(crate) struct QueryPlan {
    pub body: Body,
    /// ORDER BY of a set operation: over its output columns.
    pub order: Vec<SortKey>,
    pub limit: Option<CExpr>,
    pub offset: Option<CExpr>,
    pub columns: Vec<(String, CType)>,
    /// Its WITH queries, computed before its body on each run.
    pub ctes: Vec<CtePlan>,
}

#[derive(Debug)]
pub(crate) enum Body {
    Select(Box<SelectPlan>),
    /// `VALUES (…), (…)`: each row's expressions, cast to the columns' common types, read
    /// at scope `level` (which has no columns of its own: a VALUES list may read an outer
    /// query's).
    Values {
        level: usize,
        rows: Vec<Vec<CExpr>>,
    },
    SetOp {
        op: SetOperator,
        all: bool,
        left: Box<QueryPlan>,
        right: Box<QueryPlan>,
    },
}

/// What one ORDER BY key sorts by.
#[derive(Debug)]
pub(crate) enum SortBy {
    /// An output column.
    Output(usize),
    /// An expression over the SELECT's row (or its group).
    Expr(CExpr),
}

#[derive(Debug)]
pub(crate) struct SortKey {
    pub by: SortBy,
    pub desc: bool,
    pub nulls_first: bool,
}

/// A planned SELECT.
#[derive(Debug)]
pub(crate) struct SelectPlan {
    /// Its scope level (0 for the outermost query): column references name it.
    pub level: usize,
    /// FROM's items in order; none: one empty row.
    pub from: Vec<FromStep>,
    /// WHERE conjuncts that read no FROM item (constants, parameters, outer columns).
    pub prefilter: Vec<CExpr>,
    pub grouping: Option<Grouping>,
    pub items: Vec<CExpr>,
    /// Window calls, computed after grouping; the items and ORDER BY read their values.
    pub windows: Vec<WindowSpec>,
    /// The list's set-returning calls, run after the windows: each row gives as many
    /// output rows as its longest call.
    pub set_calls: Vec<SetCall>,
    pub distinct: bool,
    /// `DISTINCT ON (…)`: the first row (in ORDER BY's order) of each set of these values.
    pub distinct_on: Vec<SortKey>,
    pub order: Vec<SortKey>,
}

/// One FROM item, and the WHERE conjuncts that can run once it is joined.
#[derive(Debug)]
pub(crate) struct FromStep {
    pub item: FromItem,
    pub filters: Vec<CExpr>,
}

#[derive(Debug)]
pub(crate) enum FromItem {
    Relation(&'static RelationDef),
    /// A system view (`pg_stat_activity`, `hotpage_wait_stats`, …) from `views.rs`.
    View(&'static str, usize),
    /// A set-returning function; its arguments may read the items before it (LATERAL).
    Function(SetFunc, Vec<CExpr>),
    Subquery(Box<QueryPlan>),
    /// A LATERAL subquery that reads the items before it: run once per row of them.
    Lateral(Box<QueryPlan>),
    /// A WITH query's rows, by its number.
    Cte {
        id: usize,
        width: usize,
    },
    /// A user table: its rows are read once per execution, the open transaction's own
    /// included.
    Table(TableRef),
    Join {
        left: Box<FromItem>,
        right: Box<FromItem>,
        kind: JoinKind,
        on: Option<CExpr>,
        left_width: usize,
        right_width: usize,
    },
}

/// A user table a plan reads (shown by name in a plan's debug text).
pub(crate) struct TableRef(pub Arc<SqlTable>);

impl std::fmt::Debug for TableRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Table({})", self.0.name)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
}

impl QueryPlan {
    /// Calls `f` on every expression of the query, its subqueries' included.
    pub fn walk(&self, f: &mut dyn FnMut(&CExpr)) {
        match &self.body {
            Body::Select(s) => s.walk(f),
            Body::SetOp { left, right, .. } => {
                left.walk(f);
                right.walk(f);
            }
            Body::Values { rows, .. } => rows.iter().flatten().for_each(|e| e.walk(f)),
        }
        for cte in &self.ctes {
            match &cte.body {
                CteBody::Plain(q) => q.walk(f),
                CteBody::Recursive { base, step, .. } => {
                    base.walk(f);
                    step.walk(f);
                }
            }
        }
        for key in &self.order {
            if let SortBy::Expr(e) = &key.by {
                e.walk(f);
            }
        }
        self.limit
            .iter()
            .chain(&self.offset)
            .for_each(|e| e.walk(f));
    }
}

impl SelectPlan {
    fn walk(&self, f: &mut dyn FnMut(&CExpr)) {
        for step in &self.from {
            step.item.walk(f);
            step.filters.iter().for_each(|e| e.walk(f));
        }
        self.prefilter
            .iter()
            .chain(&self.items)
            .for_each(|e| e.walk(f));
        if let Some(g) = &self.grouping {
            g.keys.iter().chain(&g.having).for_each(|e| e.walk(f));
            g.aggs.iter().for_each(|a| a.walk(f));
        }
        self.windows.iter().for_each(|w| w.walk(f));
        self.set_calls
            .iter()
            .flat_map(|call| &call.args)
            .for_each(|e| e.walk(f));
        for key in &self.order {
            if let SortBy::Expr(e) = &key.by {
                e.walk(f);
            }
        }
    }
}

impl FromItem {
    fn walk(&self, f: &mut dyn FnMut(&CExpr)) {
        match self {
            FromItem::Relation(_)
            | FromItem::View(..)
            | FromItem::Table(_)
            | FromItem::Cte { .. } => {}
            FromItem::Function(_, args) => args.iter().for_each(|e| e.walk(f)),
            FromItem::Subquery(q) | FromItem::Lateral(q) => q.walk(f),
            FromItem::Join {
                left, right, on, ..
            } => {
                left.walk(f);
                right.walk(f);
                on.iter().for_each(|e| e.walk(f));
            }
        }
    }

    /// Whether its rows depend on the row of the items before it (a set function's
    /// arguments, a LATERAL subquery), so they are made once per such row.
    pub fn is_lateral(&self) -> bool {
        matches!(self, FromItem::Function(..) | FromItem::Lateral(_))
    }

    /// How many columns the item contributes.
    pub fn width(&self) -> usize {
        match self {
            FromItem::Relation(def) => def.columns.len(),
            FromItem::View(_, width) => *width,
            FromItem::Function(func, _) => func.width(),
            FromItem::Subquery(q) | FromItem::Lateral(q) => q.columns.len(),
            FromItem::Cte { width, .. } => *width,
            FromItem::Table(t) => t.0.scope.len(),
            FromItem::Join {
                left_width,
                right_width,
                ..
            } => left_width + right_width,
        }
    }
}

/// GROUP BY keys and the aggregates computed per group; a grouped row is the keys, then
/// the aggregates' results.
#[derive(Debug)]
pub(crate) struct Grouping {
    pub keys: Vec<CExpr>,
    pub aggs: Vec<AggSpec>,
    pub having: Option<CExpr>,
}

/// Plans a query at scope level `compiler.depth()`; its WITH queries are in scope in its
/// body only.
pub(crate) fn plan_query(c: &mut Compiler, query: &Query) -> SqlResult<QueryPlan> {
    let ctes_before = c.ctes.len();
    let planned = match &query.with {
        Some(with) => cte::plan_with(c, with).and_then(|ctes| {
            let mut plan = plan_body(c, query)?;
            plan.ctes.splice(0..0, ctes);
            Ok(plan)
        }),
        None => plan_body(c, query),
    };
    c.ctes.truncate(ctes_before);
    planned
}

fn plan_body(c: &mut Compiler, query: &Query) -> SqlResult<QueryPlan> {
    if !query.locks.is_empty() {
        return Err(SqlError::unsupported("FOR UPDATE"));
    }
    let (limit, offset) = limits(c, query)?;
    let order_exprs = match query.order_by.as_ref().map(|o| &o.kind) {
        None => Vec::new(),
        Some(OrderByKind::Expressions(list)) => list.clone(),
        Some(OrderByKind::All(_)) => return Err(SqlError::unsupported("ORDER BY ALL")),
    };
    match query.body.as_ref() {
        SetExpr::Select(select) => {
            let (plan, columns) = plan_select(c, select, &order_exprs)?;
            if limit.is_some() || offset.is_some() {
                refuse_signals_before_limit(&plan.items)?;
            }
            Ok(QueryPlan {
                body: Body::Select(Box::new(plan)),
                order: Vec::new(),
                limit,
                offset,
                columns,
                ctes: Vec::new(),
            })
        }
        SetExpr::Query(inner) if order_exprs.is_empty() && limit.is_none() => plan_query(c, inner),
        body => {
            let (body, columns) = plan_set_body(c, query, body)?;
            let order = order_exprs
                .iter()
                .map(|o| output_sort_key(&o.expr, &columns, o))
                .collect::<SqlResult<_>>()?;
            Ok(QueryPlan {
                body,
                order,
                limit,
                offset,
                columns,
                ctes: Vec::new(),
            })
        }
    }
}

/// `SELECT pg_terminate_backend(pid) FROM pg_stat_activity … LIMIT 1` would end every
/// session the WHERE lets through, not one: the select list is computed for each row
/// before ORDER BY and LIMIT pick the rows (PostgreSQL computes volatile calls after
/// them). Refused rather than done to more sessions than asked.
fn refuse_signals_before_limit(items: &[CExpr]) -> SqlResult<()> {
    let mut signals = false;
    for item in items {
        item.walk(&mut |e| {
            signals |= matches!(
                e.kind,
                ExprKind::Call(ScalarFunc::CancelBackend | ScalarFunc::TerminateBackend, _)
            );
        });
    }
    if signals {
        return Err(SqlError::unsupported(
            "pg_cancel_backend or pg_terminate_backend in a select list with LIMIT or OFFSET (every row's call would run before LIMIT picks rows): choose the sessions in WHERE, or SELECT their pids first",
        ));
    }
    Ok(())
}

fn plan_set_body(
    c: &mut Compiler,
    query: &Query,
    body: &SetExpr,
) -> SqlResult<(Body, Vec<(String, CType)>)> {
    if let SetExpr::Values(values) = body {
        return plan_values(c, values);
    }
    let SetExpr::SetOperation {
        op,
        set_quantifier,
        left,
        right,
    } = body
    else {
        return Err(SqlError::unsupported(format!("the query {body}")));
    };
    // Each side is a query of its own, without the outer WITH (in scope already), ORDER
    // BY and LIMIT.
    let as_query = |body: &SetExpr| Query {
        body: Box::new(body.clone()),
        with: None,
        order_by: None,
        limit_clause: None,
        ..query.clone()
    };
    let left = plan_query(c, &as_query(left))?;
    let right = plan_query(c, &as_query(right))?;
    set_operation(
        *op,
        matches!(set_quantifier, SetQuantifier::All),
        left,
        right,
    )
}

/// `VALUES (…), (…)` as a query: PostgreSQL's columns `column1`, `column2`, … in the
/// rows' common types, resolved as a UNION's are (42804 where there is none, text for a
/// column of untyped literals); rows of different lengths are 42601.
fn plan_values(c: &mut Compiler, values: &Values) -> SqlResult<(Body, Vec<(String, CType)>)> {
    if values.explicit_row {
        return Err(SqlError::unsupported("VALUES ROW(…)"));
    }
    let width = values.rows.first().map_or(0, |row| row.content.len());
    if values.rows.iter().any(|row| row.content.len() != width) {
        return Err(SqlError::new(
            sqlstate::SYNTAX_ERROR,
            "VALUES lists must all be the same length",
        ));
    }
    let level = c.push_level();
    let compiled = values
        .rows
        .iter()
        .map(|row| {
            row.content
                .iter()
                .map(|e| c.expr(e))
                .collect::<SqlResult<Vec<_>>>()
        })
        .collect::<SqlResult<Vec<_>>>();
    c.pop_level();
    let mut rows = compiled?;
    let mut columns = Vec::with_capacity(width);
    for i in 0..width {
        let mut ty = CType::Unknown;
        for row in &rows {
            ty = set_column_type("VALUES", ty, row[i].ty)?;
        }
        if ty == CType::Unknown {
            ty = super::types::TEXT;
        }
        columns.push((format!("column{}", i + 1), ty));
    }
    for row in &mut rows {
        let typed = std::mem::take(row)
            .into_iter()
            .zip(&columns)
            .map(|(e, (_, ty))| super::functions::cast_to_common(e, *ty))
            .collect();
        *row = typed;
    }
    Ok((Body::Values { level, rows }, columns))
}

/// A set operation's side's column types as the operation sees them: a SELECT's untyped
/// literals are still untyped (`SELECT 1 UNION SELECT NULL`, `… UNION SELECT '2'` take
/// the other side's type, as in PostgreSQL); any other side's columns are resolved (a
/// subquery's or an inner set operation's literals are text by then).
fn side_types(side: &QueryPlan) -> Vec<CType> {
    match &side.body {
        Body::Select(select) if select.items.len() == side.columns.len() => {
            select.items.iter().map(|item| item.ty).collect()
        }
        _ => side.columns.iter().map(|(_, ty)| *ty).collect(),
    }
}

/// `left op right` over two planned queries, in their columns' common types.
pub(crate) fn set_operation(
    op: SetOperator,
    all: bool,
    left: QueryPlan,
    right: QueryPlan,
) -> SqlResult<(Body, Vec<(String, CType)>)> {
    if left.columns.len() != right.columns.len() {
        return Err(SqlError::new(
            sqlstate::SYNTAX_ERROR,
            format!("each {op} query must have the same number of columns"),
        ));
    }
    let what = op.to_string().to_uppercase();
    let columns = left
        .columns
        .iter()
        .zip(side_types(&left))
        .zip(side_types(&right))
        .map(|(((name, _), l), r)| {
            let ty = match set_column_type(&what, l, r)? {
                CType::Unknown => super::types::TEXT,
                ty => ty,
            };
            Ok((name.clone(), ty))
        })
        .collect::<SqlResult<_>>()?;
    Ok((
        Body::SetOp {
            op,
            all,
            left: Box::new(left),
            right: Box::new(right),
        },
        columns,
    ))
}

/// An ORDER BY key over output columns: a position or an output column's name.
fn output_sort_key(
    e: &Expr,
    columns: &[(String, CType)],
    o: &sqlparser::ast::OrderByExpr,
) -> SqlResult<SortKey> {
    let index = match e {
        Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::Number(n, _) => n
                .parse::<usize>()
                .ok()
                .filter(|&n| n >= 1 && n <= columns.len())
                .map(|n| n - 1),
            _ => None,
        },
        Expr::Identifier(ident) => columns.iter().position(|(name, _)| *name == fold(ident)),
        _ => None,
    };
    let index = index.ok_or_else(|| {
        SqlError::new(
            sqlstate::UNDEFINED_COLUMN,
            format!("ORDER BY on a UNION/INTERSECT/EXCEPT result must be an output column: {e}"),
        )
    })?;
    sort_key(SortBy::Output(index), o)
}

fn sort_key(by: SortBy, o: &sqlparser::ast::OrderByExpr) -> SqlResult<SortKey> {
    let desc = crate::expr::sort_is_desc(o.options.sort.as_ref())?;
    Ok(SortKey {
        by,
        desc,
        nulls_first: o.options.nulls_first.unwrap_or(desc),
    })
}

fn limits(c: &mut Compiler, query: &Query) -> SqlResult<(Option<CExpr>, Option<CExpr>)> {
    // `LIMIT $1`: the parameter is a bigint, as PostgreSQL infers it.
    let count = |c: &mut Compiler, e: &Expr| {
        c.expr(e).map(|x| match x.ty {
            CType::Unknown => x.cast_to(super::types::INT8),
            _ => x,
        })
    };
    let fetch = crate::select::fetch_count(query)?;
    match &query.limit_clause {
        None => Ok((fetch.map(|e| count(c, e)).transpose()?, None)),
        Some(LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) if limit_by.is_empty() => {
            let limit = limit.as_ref().or(fetch).map(|e| count(c, e)).transpose()?;
            let offset = offset.as_ref().map(|o| count(c, &o.value)).transpose()?;
            Ok((limit, offset))
        }
        Some(other) => Err(SqlError::unsupported(format!("{other}"))),
    }
}

fn plan_select(
    c: &mut Compiler,
    select: &Select,
    order_exprs: &[sqlparser::ast::OrderByExpr],
) -> SqlResult<(SelectPlan, Vec<(String, CType)>)> {
    if select.top.is_some()
        || select.into.is_some()
        || !select.lateral_views.is_empty()
        || select.qualify.is_some()
    {
        return Err(SqlError::unsupported(format!("the query {select}")));
    }
    let level = c.push_level();
    // The output columns' names are read while the SELECT's scope is still there (`*`).
    let planned = plan_select_at(c, select, order_exprs, level).and_then(|plan| {
        let columns = plan_columns(c, select, &plan)?;
        Ok((plan, columns))
    });
    c.pop_level();
    planned
}

fn plan_select_at(
    c: &mut Compiler,
    select: &Select,
    order_exprs: &[sqlparser::ast::OrderByExpr],
    level: usize,
) -> SqlResult<SelectPlan> {
    let mut from = Vec::new();
    for table in &select.from {
        let item = plan_table_with_joins(c, table)?;
        from.push(FromStep {
            item,
            filters: Vec::new(),
        });
    }
    let mut prefilter = Vec::new();
    if let Some(selection) = &select.selection {
        let mut conjuncts = Vec::new();
        split_and(selection, &mut conjuncts);
        for conjunct in conjuncts {
            let compiled = c.condition(conjunct, "WHERE")?;
            // The conjunct runs once every column it reads is joined in.
            match c.highest_column_read(&compiled, level) {
                None => prefilter.push(compiled),
                Some(column) => {
                    let mut end = 0;
                    let step = from.iter().position(|s| {
                        end += s.item.width();
                        column < end
                    });
                    match step {
                        Some(step) => from[step].filters.push(compiled),
                        None => prefilter.push(compiled),
                    }
                }
            }
        }
    }
    let group_exprs: Vec<&Expr> = match &select.group_by {
        GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => {
            exprs.iter().collect()
        }
        _ => return Err(SqlError::unsupported("GROUP BY ALL, ROLLUP, CUBE")),
    };
    let grouped = !group_exprs.is_empty()
        || select.having.is_some()
        || select.projection.iter().any(item_has_aggregate)
        || order_exprs
            .iter()
            .any(|o| super::compile::has_aggregate(&o.expr));
    if grouped {
        c.begin_grouping(&group_exprs, &select.projection)?;
    }
    c.begin_windows(&select.named_window)?;
    c.begin_set_calls();
    let items = select_items(c, &select.projection);
    let set_calls = c.end_set_calls();
    let order = items.and_then(|items| {
        let order = order_exprs
            .iter()
            .map(|o| select_sort_key(c, o, select, &items, "ORDER BY"))
            .collect::<SqlResult<Vec<_>>>()?;
        let distinct_on = distinct_on_keys(c, select, &items, &order)?;
        Ok((items, order, distinct_on))
    });
    let windows = c.end_windows();
    let (items, order, distinct_on) = order?;
    let grouping = if grouped {
        let having = select
            .having
            .as_ref()
            .map(|h| c.condition(h, "HAVING"))
            .transpose()?;
        let (keys, aggs) = c.end_grouping();
        Some(Grouping { keys, aggs, having })
    } else {
        None
    };
    Ok(SelectPlan {
        level,
        from,
        prefilter,
        grouping,
        items,
        windows,
        set_calls,
        distinct: matches!(select.distinct, Some(Distinct::Distinct)),
        distinct_on,
        order,
    })
}

/// `SELECT DISTINCT ON (e, …)`: each e is read as an ORDER BY key is (a position, an
/// output column's name or an expression), and an ORDER BY must begin with them, in any
/// order (PostgreSQL's 42P10), so that the first row of each set of values is the one
/// the ORDER BY puts first.
fn distinct_on_keys(
    c: &mut Compiler,
    select: &Select,
    items: &[CExpr],
    order: &[SortKey],
) -> SqlResult<Vec<SortKey>> {
    let Some(Distinct::On(exprs)) = &select.distinct else {
        return Ok(Vec::new());
    };
    let mut keys = Vec::with_capacity(exprs.len());
    for e in exprs {
        let o = sqlparser::ast::OrderByExpr {
            expr: e.clone(),
            options: sqlparser::ast::OrderByOptions {
                sort: None,
                nulls_first: None,
            },
            with_fill: None,
        };
        keys.push(select_sort_key(c, &o, select, items, "DISTINCT ON")?);
    }
    let wanted: HashSet<String> = keys.iter().map(|k| sorted_by(k, items)).collect();
    let mut covered = HashSet::new();
    for key in order {
        if covered.len() == wanted.len() {
            break;
        }
        let by = sorted_by(key, items);
        if !wanted.contains(&by) {
            return Err(SqlError::new(
                sqlstate::INVALID_COLUMN_REFERENCE,
                "SELECT DISTINCT ON expressions must match initial ORDER BY expressions",
            ));
        }
        covered.insert(by);
    }
    Ok(keys)
}

/// What a sort key sorts by, as a comparable text: an output column is its expression.
fn sorted_by(key: &SortKey, items: &[CExpr]) -> String {
    match &key.by {
        SortBy::Output(i) => items.get(*i).map_or_else(String::new, |e| format!("{e:?}")),
        SortBy::Expr(e) => format!("{e:?}"),
    }
}

fn item_has_aggregate(item: &SelectItem) -> bool {
    match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
            super::compile::has_aggregate(e)
        }
        _ => false,
    }
}

fn split_and<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: sqlparser::ast::BinaryOperator::And,
            right,
        } => {
            split_and(left, out);
            split_and(right, out);
        }
        Expr::Nested(inner) => split_and(inner, out),
        other => out.push(other),
    }
}

/// The select list: `*` expands to the scope's columns.
fn select_items(c: &mut Compiler, projection: &[SelectItem]) -> SqlResult<Vec<CExpr>> {
    let mut items = Vec::new();
    for item in projection {
        match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                items.push(c.expr(e)?);
            }
            SelectItem::Wildcard(_) => items.extend(c.wildcard(None)?),
            SelectItem::QualifiedWildcard(kind, _) => {
                items.extend(c.wildcard(Some(&wildcard_qualifier(kind)?))?);
            }
            other => return Err(SqlError::unsupported(format!("the select item {other}"))),
        }
    }
    Ok(items)
}

/// The FROM item `q.*` names.
fn wildcard_qualifier(kind: &sqlparser::ast::SelectItemQualifiedWildcardKind) -> SqlResult<String> {
    match kind {
        sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(name) => Ok(object_name(name)),
        other => Err(SqlError::unsupported(format!("{other}.*"))),
    }
}

/// The output columns' names (as PostgreSQL names them) and types.
fn plan_columns(
    c: &Compiler,
    select: &Select,
    plan: &SelectPlan,
) -> SqlResult<Vec<(String, CType)>> {
    let mut names = Vec::new();
    for item in &select.projection {
        match item {
            SelectItem::UnnamedExpr(e) => names.push(column_name(e)),
            SelectItem::ExprWithAlias { alias, .. } => names.push(fold(alias)),
            SelectItem::Wildcard(_) => names.extend(c.wildcard_names(None)),
            SelectItem::QualifiedWildcard(kind, _) => {
                names.extend(c.wildcard_names(Some(&wildcard_qualifier(kind)?)));
            }
            other => return Err(SqlError::unsupported(format!("the select item {other}"))),
        }
    }
    Ok(names
        .into_iter()
        .zip(&plan.items)
        .map(|(name, item)| {
            let ty = match item.ty {
                CType::Unknown => super::types::TEXT,
                other => other,
            };
            (name, ty)
        })
        .collect())
}

/// The name PostgreSQL gives an unnamed output column (its FigureColname).
pub(crate) fn column_name(e: &Expr) -> String {
    let (name, strength) = figure_name(e);
    if strength == 0 {
        "?column?".to_string()
    } else {
        name
    }
}

/// The first number in a type's parentheses: `float(3)`'s 3.
fn precision_of(written: &str) -> Option<u32> {
    let (_, inside) = written.split_once('(')?;
    inside.split([',', ')']).next()?.trim().parse().ok()
}

/// A cast's column name: its type's internal name, as PostgreSQL's FigureColname gives it
/// (`1::int` is `int4`, `'a'::char(2)` `bpchar`, `x::numeric(5,1)` `numeric`); an array
/// type is named after its element type. Was the type as written (`int`, `numeric(5,1)`).
fn cast_column_name(data_type: &sqlparser::ast::DataType) -> String {
    let written = data_type.to_string().to_lowercase();
    let element = written.trim_end_matches("[]");
    let base = element.split('(').next().unwrap_or(element).trim();
    let last = base
        .rsplit('.')
        .next()
        .unwrap_or_default()
        .trim_matches('"');
    // `char(n)` and `character` are bpchar; the one-byte "char" is written quoted.
    let last = match last {
        "char" | "character" if !base.ends_with("\"char\"") => "bpchar",
        "decimal" | "dec" => "numeric",
        // float(p) is real up to 24 binary digits of precision.
        "float" if precision_of(&written).is_some_and(|p| p <= 24) => "float4",
        "float" => "float8",
        "char varying" => "varchar",
        other => other,
    };
    super::builtin::type_oid_named(last)
        .and_then(super::builtin::type_def)
        .map_or_else(|| last.to_string(), |t| t.name.to_string())
}

/// A name and how strong it is: 2 for a column's or function's name, 1 for a type's (a
/// cast of a constant) or `case`, 0 for none.
fn figure_name(e: &Expr) -> (String, u8) {
    match e {
        Expr::Identifier(ident) => (fold(ident), 2),
        Expr::CompoundIdentifier(parts) => (parts.last().map(fold).unwrap_or_default(), 2),
        Expr::Function(f) => (object_name(&f.name), 2),
        Expr::Cast {
            expr, data_type, ..
        } => match figure_name(expr) {
            strong @ (_, 2) => strong,
            _ => (cast_column_name(data_type), 1),
        },
        // `date '…'` and `INTERVAL '…'` are casts of a constant to PostgreSQL's parser.
        Expr::TypedString(typed) => (cast_column_name(&typed.data_type), 1),
        Expr::Interval(_) => ("interval".into(), 1),
        Expr::Nested(inner) | Expr::Collate { expr: inner, .. } => figure_name(inner),
        Expr::Case { else_result, .. } => match else_result.as_deref().map(figure_name) {
            Some(strong @ (_, 2)) => strong,
            _ => ("case".into(), 1),
        },
        Expr::Exists { .. } => ("exists".into(), 2),
        // Functions with a syntax of their own take the name of the function they call.
        Expr::Extract { .. } => ("extract".into(), 2),
        Expr::Substring { shorthand, .. } => {
            let name = if *shorthand { "substr" } else { "substring" };
            (name.into(), 2)
        }
        Expr::Position { .. } => ("position".into(), 2),
        Expr::Floor { .. } => ("floor".into(), 2),
        Expr::Ceil { .. } => ("ceil".into(), 2),
        Expr::Trim { trim_where, .. } => {
            let name = match trim_where {
                Some(sqlparser::ast::TrimWhereField::Leading) => "ltrim",
                Some(sqlparser::ast::TrimWhereField::Trailing) => "rtrim",
                _ => "btrim",
            };
            (name.into(), 2)
        }
        Expr::Array(_) => ("array".into(), 2),
        Expr::Subquery(q) => match q.body.as_ref() {
            SetExpr::Select(s) => match s.projection.first() {
                Some(SelectItem::ExprWithAlias { alias, .. }) => (fold(alias), 2),
                Some(SelectItem::UnnamedExpr(e)) => figure_name(e),
                _ => (String::new(), 0),
            },
            _ => (String::new(), 0),
        },
        // TRUE and FALSE are constants since PostgreSQL 15 (`?column?`), no longer casts
        // to boolean (`bool`) as in 14.
        Expr::CompoundFieldAccess { root, .. } => figure_name(root),
        _ => (String::new(), 0),
    }
}

/// An ORDER BY key of a SELECT: a position, an output column's name, or an expression
/// (under DISTINCT, only one the select list has, as PostgreSQL requires: 42P10). `items`
/// is the compiled select list, `*` expanded.
fn select_sort_key(
    c: &mut Compiler,
    o: &sqlparser::ast::OrderByExpr,
    select: &Select,
    items: &[CExpr],
    clause: &str,
) -> SqlResult<SortKey> {
    let projection = &select.projection[..];
    if let Expr::Value(v) = &o.expr
        && let sqlparser::ast::Value::Number(n, _) = &v.value
    {
        let index = n
            .parse::<usize>()
            .ok()
            .filter(|&i| i >= 1 && i <= items.len())
            .ok_or_else(|| {
                SqlError::new(
                    sqlstate::INVALID_COLUMN_REFERENCE,
                    format!("{clause} position {n} is not in select list"),
                )
            })?;
        return sort_key(SortBy::Output(index - 1), o);
    }
    if let Expr::Identifier(ident) = &o.expr {
        let name = fold(ident);
        let aliased = projection.iter().position(
            |item| matches!(item, SelectItem::ExprWithAlias { alias, .. } if fold(alias) == name),
        );
        if let Some(index) = aliased {
            return sort_key(SortBy::Output(index), o);
        }
    }
    let key = c.expr(&o.expr)?;
    if matches!(select.distinct, Some(Distinct::Distinct)) {
        // Compiled forms compare `a`, `t.a`, `"a"` and `(t.a)` as the one column they
        // name, and `*`'s columns as what it expands to.
        let wanted = format!("{key:?}");
        let listed = items.iter().position(|item| format!("{item:?}") == wanted);
        return match listed {
            Some(index) => sort_key(SortBy::Output(index), o),
            None => Err(SqlError::new(
                sqlstate::INVALID_COLUMN_REFERENCE,
                "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
            )),
        };
    }
    sort_key(SortBy::Expr(key), o)
}

fn plan_table_with_joins(c: &mut Compiler, table: &TableWithJoins) -> SqlResult<FromItem> {
    let mut item = plan_factor(c, &table.relation)?;
    for join in &table.joins {
        item = plan_join(c, item, join)?;
    }
    Ok(item)
}

fn plan_join(c: &mut Compiler, left: FromItem, join: &Join) -> SqlResult<FromItem> {
    let (kind, constraint) = match &join.join_operator {
        JoinOperator::Join(k) | JoinOperator::Inner(k) => (JoinKind::Inner, Some(k)),
        JoinOperator::Left(k) | JoinOperator::LeftOuter(k) => (JoinKind::Left, Some(k)),
        JoinOperator::Right(k) | JoinOperator::RightOuter(k) => (JoinKind::Right, Some(k)),
        JoinOperator::FullOuter(k) => (JoinKind::Full, Some(k)),
        JoinOperator::CrossJoin(_) => (JoinKind::Inner, None),
        other => {
            let text = format!("{other:?}");
            let name = text.split('(').next().unwrap_or("this kind of join");
            return Err(SqlError::unsupported(format!("the join kind {name}")));
        }
    };
    let left_width = left.width();
    let left_end = c.level_len();
    let right = plan_factor(c, &join.relation)?;
    let right_width = right.width();
    if matches!(kind, JoinKind::Right | JoinKind::Full) && reads_left(c, &right) {
        // Its rows are made per left row: there are none for a right row no left row
        // matched.
        return Err(SqlError::new(
            sqlstate::INVALID_COLUMN_REFERENCE,
            "invalid reference to FROM-clause entry",
        )
        .with_detail("The combining JOIN type must be INNER or LEFT for a LATERAL reference."));
    }
    let on = match constraint {
        Some(JoinConstraint::On(e)) => Some(c.condition(e, "JOIN/ON")?),
        None => None,
        Some(JoinConstraint::None) => {
            // `a JOIN b` with no condition: PostgreSQL's grammar refuses it.
            return Err(SqlError::new(
                sqlstate::SYNTAX_ERROR,
                "syntax error: this JOIN has no ON or USING condition",
            )
            .with_hint("Write JOIN … ON condition, JOIN … USING (columns), or CROSS JOIN."));
        }
        Some(JoinConstraint::Using(names)) => {
            let names: Vec<String> = names.iter().map(object_name).collect();
            let left_range = left_end - left_width..left_end;
            using(c, kind, &names, left_range, right_width)?
        }
        Some(JoinConstraint::Natural) => {
            let left_range = left_end - left_width..left_end;
            let right_names = c.visible_names(left_end..left_end + right_width);
            let names: Vec<String> = c
                .visible_names(left_range.clone())
                .into_iter()
                .filter(|n| right_names.contains(n))
                .collect();
            using(c, kind, &names, left_range, right_width)?
        }
    };
    Ok(FromItem::Join {
        left: Box::new(left),
        right: Box::new(right),
        kind,
        on,
        left_width,
        right_width,
    })
}

/// `JOIN … USING (names)` (and NATURAL JOIN's common names): the condition that each
/// name's column on the left equals the right's, and one merged column per name, which an
/// unqualified name and `*` (first, before the two sides' other columns) see: the left
/// side's for an inner or left join, the right side's for a right join. A full join's
/// merged column would be COALESCE of the two: not supported.
fn using(
    c: &mut Compiler,
    kind: JoinKind,
    names: &[String],
    left: std::ops::Range<usize>,
    right_width: usize,
) -> SqlResult<Option<CExpr>> {
    if kind == JoinKind::Full {
        return Err(SqlError::unsupported("FULL JOIN with USING or NATURAL")
            .with_hint("Write the join as FULL JOIN … ON a.column = b.column."));
    }
    let right = left.end..left.end + right_width;
    let mut condition: Option<CExpr> = None;
    let mut merges = Vec::new();
    for name in names {
        let l = c.using_column(left.clone(), name, "left")?;
        let r = c.using_column(right.clone(), name, "right")?;
        let (keep, hide) = if kind == JoinKind::Right {
            (r, l)
        } else {
            (l, r)
        };
        merges.push((keep, hide));
        let (a, b) = super::compile::unify(c.column_here(l)?, c.column_here(r)?);
        if !super::compile::comparable(a.ty, b.ty) {
            return Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!(
                    "JOIN/USING types {} and {} cannot be matched",
                    a.ty.name(),
                    b.ty.name()
                ),
            ));
        }
        let (a, b) = (
            super::compile::without_padding(a),
            super::compile::without_padding(b),
        );
        let equal = CExpr::new(
            super::expr::ExprKind::Compare(super::expr::CmpOp::Eq, Box::new(a), Box::new(b)),
            super::types::BOOL,
        );
        condition = Some(match condition {
            None => equal,
            Some(before) => CExpr::new(
                super::expr::ExprKind::And(Box::new(before), Box::new(equal)),
                super::types::BOOL,
            ),
        });
    }
    // `*` shows merged columns from the last recorded (an enclosing join's before an
    // inner one's), so one join's are recorded last to first to show in USING's order.
    for (keep, hide) in merges.into_iter().rev() {
        c.merge_using(left.start, keep, hide);
    }
    Ok(condition)
}

/// A set operation's (or a VALUES list's) column type from its two sides': numbers widen
/// to the wider (integer < numeric < double precision), and text types meet as text.
/// Values of different kinds (a number and a text or a boolean; a timestamp, a uuid or a
/// bytea and anything else) never meet: 42804, as PostgreSQL says it (`what types
/// integer and boolean cannot be matched`). Otherwise the left side's type.
pub(crate) fn set_column_type(what: &str, l: CType, r: CType) -> SqlResult<CType> {
    let number = |t: CType| {
        t.is_integer_like() && !matches!(t, CType::Sql(SqlType::Oid))
            || matches!(
                t,
                CType::Sql(
                    SqlType::Numeric { .. }
                        | SqlType::NumericUnconstrained
                        | SqlType::Real
                        | SqlType::Double
                )
            )
    };
    // The kinds of value that never meet: a number and a boolean, a text and a uuid (oid,
    // the reg* types and arrays are left to the first side's type, as before).
    let kind = |t: CType| match t {
        _ if number(t) => Some(0),
        _ if t.is_text_like() => Some(1),
        CType::Sql(SqlType::Bool) => Some(2),
        CType::Sql(SqlType::Timestamp | SqlType::TimestampTz | SqlType::Date) => Some(3),
        CType::Sql(SqlType::Uuid) => Some(4),
        CType::Sql(SqlType::Bytea) => Some(5),
        _ => None,
    };
    Ok(match (l, r) {
        (CType::Unknown, other) | (other, CType::Unknown) => other,
        _ if l == r => l,
        // PostgreSQL prefers timestamptz (in the session's UTC the instant is the same).
        (CType::Sql(SqlType::Timestamp), CType::Sql(SqlType::TimestampTz))
        | (CType::Sql(SqlType::TimestampTz), CType::Sql(SqlType::Timestamp)) => {
            CType::Sql(SqlType::TimestampTz)
        }
        // A date meets a timestamp as its midnight, of the timestamp's type.
        (CType::Sql(SqlType::Date), ts @ CType::Sql(SqlType::Timestamp | SqlType::TimestampTz))
        | (ts @ CType::Sql(SqlType::Timestamp | SqlType::TimestampTz), CType::Sql(SqlType::Date)) => {
            ts
        }
        _ if number(l) && number(r) => super::functions::common_type([l, r].into_iter()),
        _ if l.is_text_like() && r.is_text_like() => super::types::TEXT,
        _ if matches!((kind(l), kind(r)), (Some(a), Some(b)) if a != b) => {
            return Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!(
                    "{what} types {} and {} cannot be matched",
                    l.name(),
                    r.name()
                ),
            ));
        }
        _ => l,
    })
}

/// Whether a join's right item reads its left side's rows (LATERAL).
fn reads_left(c: &Compiler, right: &FromItem) -> bool {
    match right {
        FromItem::Lateral(_) => true,
        FromItem::Function(_, args) => args
            .iter()
            .any(|a| c.highest_column_read(a, c.top()).is_some()),
        _ => false,
    }
}

/// `… WITH ORDINALITY`: the one-table engine (select.rs) leaves every such FROM item to
/// this one, which numbers a set function's rows (`SetFunc`) and refuses a table's.
pub(crate) fn refuse_ordinality(factor: &TableFactor) -> SqlResult<()> {
    match factor {
        TableFactor::Table {
            with_ordinality: true,
            ..
        }
        | TableFactor::Function {
            with_ordinality: true,
            ..
        }
        | TableFactor::UNNEST {
            with_ordinality: true,
            ..
        } => Err(SqlError::unsupported("WITH ORDINALITY")),
        _ => Ok(()),
    }
}

/// One FROM factor: its columns join the current level's scope under its alias.
fn plan_factor(c: &mut Compiler, factor: &TableFactor) -> SqlResult<FromItem> {
    if let TableFactor::Table {
        args: None,
        with_ordinality: true,
        ..
    } = factor
    {
        return Err(SqlError::unsupported("WITH ORDINALITY on a table"));
    }
    match factor {
        TableFactor::Table {
            name,
            alias,
            args: None,
            with_hints,
            ..
        } if with_hints.is_empty() => {
            let (item, columns) = relation(c, name)?;
            let qualifier = alias
                .as_ref()
                .map_or_else(|| object_name(name), |a| fold(&a.name));
            let renamed = alias
                .as_ref()
                .map(|a| a.columns.iter().map(|c| fold(&c.name)).collect::<Vec<_>>())
                .unwrap_or_default();
            c.add_columns(&qualifier, columns, &renamed)?;
            Ok(item)
        }
        TableFactor::Table {
            name,
            alias,
            args: Some(args),
            with_ordinality,
            ..
        } => {
            let func_name = object_name(name);
            let exprs = function_arguments(c, &args.args)?;
            set_function(c, &func_name, exprs, alias.as_ref(), *with_ordinality)
        }
        TableFactor::Function {
            name,
            args,
            alias,
            with_ordinality,
            ..
        } => {
            let exprs = function_arguments(c, args)?;
            set_function(
                c,
                &object_name(name),
                exprs,
                alias.as_ref(),
                *with_ordinality,
            )
        }
        TableFactor::UNNEST {
            alias,
            array_exprs,
            with_offset: false,
            with_offset_alias: None,
            with_ordinality,
        } => {
            let exprs = array_exprs
                .iter()
                .map(|e| c.expr(e))
                .collect::<SqlResult<Vec<_>>>()?;
            set_function(c, "unnest", exprs, alias.as_ref(), *with_ordinality)
        }
        TableFactor::Derived {
            subquery,
            alias,
            lateral,
            ..
        } => {
            let (plan, reads_beside) = c.subquery(subquery, *lateral)?;
            let qualifier = alias.as_ref().map(|a| fold(&a.name)).unwrap_or_default();
            let renamed = alias
                .as_ref()
                .map(|a| a.columns.iter().map(|c| fold(&c.name)).collect::<Vec<_>>())
                .unwrap_or_default();
            let columns: Vec<(String, CType)> = plan.columns.clone();
            c.add_columns(&qualifier, columns, &renamed)?;
            if reads_beside {
                Ok(FromItem::Lateral(Box::new(plan)))
            } else {
                Ok(FromItem::Subquery(Box::new(plan)))
            }
        }
        TableFactor::NestedJoin {
            table_with_joins,
            alias: None,
        } => plan_table_with_joins(c, table_with_joins),
        other => Err(SqlError::unsupported(format!("FROM {other}"))),
    }
}

/// A set function's arguments in FROM: expressions, unnamed.
fn function_arguments(
    c: &mut Compiler,
    args: &[sqlparser::ast::FunctionArg],
) -> SqlResult<Vec<CExpr>> {
    args.iter()
        .map(|a| match a {
            sqlparser::ast::FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Expr(e)) => {
                c.expr(e)
            }
            other => Err(SqlError::unsupported(format!("the argument {other}"))),
        })
        .collect()
}

fn set_function(
    c: &mut Compiler,
    name: &str,
    mut args: Vec<CExpr>,
    alias: Option<&sqlparser::ast::TableAlias>,
    ordinality: bool,
) -> SqlResult<FromItem> {
    let func = SetFunc::resolve(name, &mut args, ordinality)?;
    let qualifier = alias.map_or_else(|| name.to_string(), |a| fold(&a.name));
    let renamed: Vec<String> = alias
        .map(|a| a.columns.iter().map(|c| fold(&c.name)).collect())
        .unwrap_or_default();
    let columns = func
        .column_names(name, &qualifier)
        .into_iter()
        .zip(func.column_types(&args))
        .collect();
    c.add_columns(&qualifier, columns, &renamed)?;
    Ok(FromItem::Function(func, args))
}

/// A relation by name: the catalog's (`pg_class`, `pg_catalog.pg_class`,
/// `information_schema.tables`), a system view, or a user table.
fn relation(c: &mut Compiler, name: &ObjectName) -> SqlResult<(FromItem, Vec<(String, CType)>)> {
    let parts: Vec<String> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident())
        .map(fold)
        .collect();
    if let [relname] = parts.as_slice()
        && let Some(found) = cte::reference(c, relname)?
    {
        return Ok(found);
    }
    let (schema, relname) = match parts.as_slice() {
        [relname] => (None, relname.as_str()),
        [schema, relname] => (Some(schema.as_str()), relname.as_str()),
        [_, schema, relname] => (Some(schema.as_str()), relname.as_str()),
        _ => return Err(SqlError::unsupported(format!("the relation name {name}"))),
    };
    let wanted = |def: &RelationDef| match schema {
        None | Some("pg_catalog") => def.schema == Schema::PgCatalog,
        Some("information_schema") => def.schema == Schema::InformationSchema,
        Some(_) => false,
    };
    if let Some(def) = defs::RELATIONS
        .iter()
        .find(|d| d.name == relname && wanted(d))
    {
        let columns = def
            .columns
            .iter()
            .map(|(n, t)| (n.to_string(), *t))
            .collect();
        return Ok((FromItem::Relation(def), columns));
    }
    if matches!(schema, None | Some("pg_catalog"))
        && let Some(view) = crate::views::plain_views().find(|v| *v == relname)
        && let Some(columns) = crate::views::columns(view)
    {
        let columns: Vec<(String, CType)> = columns
            .into_iter()
            .map(|(n, t)| (n, CType::Sql(t)))
            .collect();
        return Ok((FromItem::View(view, columns.len()), columns));
    }
    if let (None | Some("public"), Some(db)) = (schema, c.db.clone()) {
        let table = db.table(relname)?;
        let columns = table
            .scope
            .iter()
            .map(|(n, t)| (n.clone(), CType::Sql(*t)))
            .collect();
        c.tables.push(Arc::clone(&table));
        return Ok((FromItem::Table(TableRef(table)), columns));
    }
    match schema {
        Some("pg_catalog" | "information_schema") => Err(SqlError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            format!("{name} is not in hotpage's catalog"),
        )
        .with_hint("hotpage provides the part of pg_catalog and information_schema that psql's \\d, \\dt, \\l and \\dn and the common drivers read")),
        // A table in another schema (hotpage's are all in public).
        _ => Err(SqlError::new(
            sqlstate::UNDEFINED_TABLE,
            format!("relation \"{name}\" does not exist"),
        )),
    }
}

/// A scope column of a FROM item.
pub(crate) fn scope_col(qualifier: &str, name: String, ty: CType) -> ScopeCol {
    ScopeCol {
        qualifier: qualifier.to_string(),
        name,
        ty,
        hidden: false,
    }
}
