//! Compiling expressions of a catalog query: names resolved against the scope levels
//! (the SELECT's FROM items, then each enclosing query's for correlated subqueries),
//! literals typed by their context as PostgreSQL types them (`c.relkind = 'r'` compares
//! `"char"`s; `c.oid = '16385'` reads the string as an OID), aggregates collected into the
//! SELECT's grouping.

use super::cte::CteName;
use super::expr::{AggFunc, AggSpec, ArithOp, CExpr, CmpOp, ExprKind, SubPlan};
use super::functions::{self, ScalarFunc};
use super::plan::{self, QueryPlan, SortBy, SortKey};
use super::set_funcs::SetFunc;
use super::types::{self, BOOL, CType, Datum, FLOAT8, INT4, INT8, TEXT};
use super::window::WindowSpec;
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::expr::{PureFunc, fold, object_name};
use crate::session::SqlDatabase;
use crate::table::SqlTable;
use crate::types::SqlType;
use sqlparser::ast::{
    BinaryOperator, CastKind, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments,
    Query, SelectItem, UnaryOperator, Value as AstValue, Visit, Visitor,
};
use std::ops::ControlFlow;
use std::sync::Arc;

/// A column in scope: the FROM item's name or alias, the column's name and type.
#[derive(Clone, Debug)]
pub(crate) struct ScopeCol {
    pub qualifier: String,
    pub name: String,
    pub ty: CType,
    /// The other side's copy of a `JOIN … USING` column: only a qualified name (or
    /// `q.*`) sees it.
    pub hidden: bool,
}

/// A grouped SELECT's keys and aggregates, collected while its output is compiled.
struct GroupState {
    key_texts: Vec<String>,
    /// The source column each key is, when it is a plain column.
    key_columns: Vec<Option<usize>>,
    keys: Vec<CExpr>,
    aggs: Vec<AggSpec>,
}

/// One query level: a SELECT's FROM columns.
#[derive(Default)]
struct Level {
    cols: Vec<ScopeCol>,
    /// `JOIN … USING`'s merged columns, each with the first column of its join's left
    /// side: `*` shows them there, before the join's other columns.
    merged: Vec<(usize, usize)>,
    group: Option<GroupState>,
    in_aggregate: bool,
    /// The window calls of the SELECT's list and ORDER BY, while those are compiled.
    windows: Option<Vec<WindowSpec>>,
    /// A window call's arguments are being compiled (another window there is 42P20).
    in_window: bool,
    /// The SELECT's `WINDOW name AS (…)` definitions, resolved.
    named_windows: Vec<(String, sqlparser::ast::WindowSpec)>,
    /// The set-returning calls of the SELECT's list, while that is compiled (the one
    /// place outside FROM where they run).
    set_calls: Option<Vec<SetCall>>,
    /// Why a set-returning call is refused here, though in the list: inside CASE or
    /// COALESCE (PostgreSQL's rule), or inside another one's arguments (hotpage's).
    set_blocked: Option<&'static str>,
}

/// `Level::set_blocked` inside a set-returning call's arguments.
const NESTED_SET_CALL: &str = "a set-returning call's arguments";

/// A set-returning function in a SELECT's list: its rows are made for each row the
/// SELECT makes, and the list is computed once per row of the longest call's, the
/// shorter calls giving NULL (PostgreSQL's rule since version 10).
#[derive(Debug)]
pub(crate) struct SetCall {
    pub func: SetFunc,
    pub args: Vec<CExpr>,
}

/// Compiles a query's expressions.
#[derive(Default)]
pub(crate) struct Compiler {
    levels: Vec<Level>,
    /// Each parameter's type, where the query decided one.
    pub params: Vec<Option<CType>>,
    next_subplan: usize,
    /// Every column reference resolved so far, as (level, column): a subquery's outer
    /// reads are those it added of levels above its own.
    read_log: Vec<(usize, usize)>,
    /// Where user tables are looked up (none: the query may read only the catalog).
    pub db: Option<Arc<SqlDatabase>>,
    /// The user tables the query reads, for the plan's staleness check.
    pub tables: Vec<Arc<SqlTable>>,
    /// The clause whose condition is being compiled (WHERE, HAVING, JOIN/ON), for
    /// errors that name it.
    clause: Option<String>,
    /// The WITH queries in scope, innermost last.
    pub ctes: Vec<CteName>,
    /// The next WITH query's number (unique in the statement).
    pub next_cte: usize,
    /// T-SQL's: values of different type groups meet in CASE, COALESCE and ARRAY, the
    /// first typed one's type converting the rest at run time (PostgreSQL's: 42804).
    pub implicit_conversions: bool,
}

/// SQL's functions written without parentheses, as PostgreSQL reads a bare word.
const NILADIC: &[&str] = &[
    "current_schema",
    "current_catalog",
    "current_role",
    "current_user",
    "session_user",
    "user",
];

impl Compiler {
    /// Starts a query level (a SELECT); returns its number.
    pub fn push_level(&mut self) -> usize {
        self.levels.push(Level::default());
        self.levels.len() - 1
    }

    pub fn pop_level(&mut self) {
        self.levels.pop();
    }

    pub fn top(&self) -> usize {
        self.levels.len().saturating_sub(1)
    }

    /// Adds a FROM item's columns to the current level; two items may not have one name
    /// (42712, as in PostgreSQL: `FROM t, t` needs an alias).
    pub fn add_columns(
        &mut self,
        qualifier: &str,
        columns: Vec<(String, CType)>,
        renamed: &[String],
    ) -> SqlResult<()> {
        let top = self.top();
        if let Some(level) = self.levels.get_mut(top) {
            if !qualifier.is_empty() && level.cols.iter().any(|c| c.qualifier == qualifier) {
                return Err(SqlError::new(
                    sqlstate::DUPLICATE_ALIAS,
                    format!("table name \"{qualifier}\" specified more than once"),
                ));
            }
            // More names than columns (`(SELECT 1) AS v(a, b)`): PostgreSQL's 42P10, where
            // the extra names were dropped without a word.
            if renamed.len() > columns.len() {
                let what = format!("table \"{qualifier}\"");
                return Err(too_many_names(&what, columns.len(), renamed.len()));
            }
            for (i, (name, ty)) in columns.into_iter().enumerate() {
                let name = renamed.get(i).cloned().unwrap_or(name);
                level.cols.push(plan::scope_col(qualifier, name, ty));
            }
        }
        Ok(())
    }

    /// The columns `*` (or `q.*`) stands for, in order: a USING join's merged columns
    /// where its left side starts (the outer join's first), then every other column `*`
    /// sees; `q.*` is all of `q`'s columns.
    fn star_columns(&self, qualifier: Option<&str>) -> Vec<usize> {
        let Some(level) = self.levels.last() else {
            return Vec::new();
        };
        if let Some(q) = qualifier {
            return (0..level.cols.len())
                .filter(|&i| level.cols[i].qualifier == q)
                .collect();
        }
        let merged: Vec<usize> = level.merged.iter().map(|&(_, m)| m).collect();
        let mut out = Vec::new();
        for (i, col) in level.cols.iter().enumerate() {
            for &(start, m) in level.merged.iter().rev() {
                if start == i {
                    out.push(m);
                }
            }
            if !col.hidden && !merged.contains(&i) {
                out.push(i);
            }
        }
        out
    }

    /// How many query levels enclose the point being planned: the level the next SELECT
    /// gets.
    pub fn depth(&self) -> usize {
        self.levels.len()
    }

    /// The current level (the innermost SELECT being planned).
    pub fn current_level(&self) -> usize {
        self.top()
    }

    /// A mark in the log of column reads, for [`Compiler::reads_since`].
    pub fn reads_mark(&self) -> usize {
        self.read_log.len()
    }

    /// The reads since `mark` of levels above `level` (a WITH query's outer reads).
    pub fn reads_since(&self, mark: usize, level: usize) -> Vec<(usize, usize)> {
        self.read_log[mark..]
            .iter()
            .copied()
            .filter(|(l, _)| *l < level)
            .collect()
    }

    /// Logs `reads` again: a reference to a WITH query reads what the query read, so a
    /// subquery that names it is correlated where the WITH query is.
    pub fn note_reads(&mut self, reads: &[(usize, usize)]) {
        self.read_log.extend_from_slice(reads);
    }

    /// How many columns the current level has so far.
    pub fn level_len(&self) -> usize {
        self.levels.last().map_or(0, |l| l.cols.len())
    }

    /// The names an unqualified reference sees among the current level's `range`.
    pub fn visible_names(&self, range: std::ops::Range<usize>) -> Vec<String> {
        self.levels.last().map_or_else(Vec::new, |level| {
            level.cols[range]
                .iter()
                .filter(|c| !c.hidden)
                .map(|c| c.name.clone())
                .collect()
        })
    }

    /// The one column named `name` that an unqualified reference sees in `range` (a
    /// USING join's `side`), with PostgreSQL's errors for none or several.
    pub fn using_column(
        &self,
        range: std::ops::Range<usize>,
        name: &str,
        side: &str,
    ) -> SqlResult<usize> {
        let found: Vec<usize> = self.levels.last().map_or_else(Vec::new, |level| {
            range
                .filter(|&i| !level.cols[i].hidden && level.cols[i].name == name)
                .collect()
        });
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(SqlError::new(
                sqlstate::UNDEFINED_COLUMN,
                format!(
                    "column \"{name}\" specified in USING clause does not exist in {side} table"
                ),
            )),
            _ => Err(SqlError::new(
                "42702",
                format!("common column name \"{name}\" appears more than once in {side} table"),
            )),
        }
    }

    /// Records a USING column: `keep` is the merged one (shown where the join's left side
    /// starts, at `left_start`), `hide` the other side's copy.
    pub fn merge_using(&mut self, left_start: usize, keep: usize, hide: usize) {
        if let Some(level) = self.levels.last_mut() {
            level.cols[hide].hidden = true;
            level.merged.retain(|&(_, m)| m != hide);
            level.merged.push((left_start, keep));
        }
    }

    /// Column `index` of the current level, as an expression.
    pub fn column_here(&mut self, index: usize) -> SqlResult<CExpr> {
        let top = self.top();
        let (ty, name) = match self.levels.get(top).and_then(|l| l.cols.get(index)) {
            Some(col) => (col.ty, col.name.clone()),
            None => return Err(SqlError::internal("a USING column out of its level")),
        };
        self.column_at(top, index, ty, &name)
    }

    /// `*` or `q.*`: every column of the level (of `q`).
    pub fn wildcard(&mut self, qualifier: Option<&str>) -> SqlResult<Vec<CExpr>> {
        let top = self.top();
        let cols: Vec<(usize, CType)> = self
            .star_columns(qualifier)
            .into_iter()
            .filter_map(|i| Some((i, self.levels.get(top)?.cols.get(i)?.ty)))
            .collect();
        if cols.is_empty() {
            return Err(SqlError::new(
                sqlstate::SYNTAX_ERROR,
                "SELECT * with no tables specified is not valid",
            ));
        }
        cols.into_iter()
            .map(|(index, ty)| self.column_at(top, index, ty, "*"))
            .collect()
    }

    pub fn wildcard_names(&self, qualifier: Option<&str>) -> Vec<String> {
        let Some(level) = self.levels.last() else {
            return Vec::new();
        };
        self.star_columns(qualifier)
            .into_iter()
            .map(|i| level.cols[i].name.clone())
            .collect()
    }

    /// A subquery in FROM. It reads the enclosing queries' rows; the FROM items before
    /// it only when it is LATERAL, and then it says so (it runs once per row of them).
    pub fn subquery(&mut self, query: &Query, lateral: bool) -> SqlResult<(QueryPlan, bool)> {
        let top = self.top();
        let reads_before = self.read_log.len();
        let plan = plan::plan_query(self, query)?;
        let beside = !self.levels.is_empty()
            && self.read_log[reads_before..]
                .iter()
                .any(|(level, _)| *level == top);
        if beside && !lateral {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_TABLE,
                "invalid reference to FROM-clause entry: a subquery in FROM cannot read the items beside it",
            )
            .with_hint("To read the items before it, write LATERAL before the subquery."));
        }
        Ok((plan, beside))
    }

    /// A subquery used in an expression, with what it reads of the enclosing levels.
    fn sub_plan(&mut self, query: &Query) -> SqlResult<SubPlan> {
        let top = self.top();
        let reads_before = self.read_log.len();
        let plan = plan::plan_query(self, query)?;
        let id = self.next_subplan;
        self.next_subplan += 1;
        let outer_reads = self.read_log[reads_before..]
            .iter()
            .copied()
            .filter(|(level, _)| *level <= top)
            .collect();
        Ok(SubPlan {
            plan,
            id,
            outer_reads,
        })
    }

    /// Compiles a condition (WHERE, ON, HAVING): aggregates are not allowed in WHERE or ON.
    pub fn condition(&mut self, e: &Expr, clause: &str) -> SqlResult<CExpr> {
        if clause != "HAVING" && has_aggregate(e) {
            return Err(SqlError::new(
                sqlstate::GROUPING_ERROR,
                format!("aggregate functions are not allowed in {clause}"),
            ));
        }
        let before = self.clause.replace(clause.to_string());
        let compiled = self.expr(e);
        self.clause = before;
        self.boolean(compiled?, clause)
    }

    fn boolean(&mut self, e: CExpr, what: &str) -> SqlResult<CExpr> {
        // This level's calls only: a subquery's own (`IN (SELECT generate_series(…))`)
        // give it rows, not this expression.
        let (top, mut set) = (self.top(), false);
        e.walk(&mut |node| {
            set |= matches!(node.kind, ExprKind::SetValue { level, .. } if level == top)
        });
        if set {
            // PostgreSQL's rule: NOT, AND and OR take one value a row.
            return Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!("argument of {what} must not return a set"),
            ));
        }
        match e.ty {
            CType::Unknown => Ok(e.cast_to(BOOL)),
            ty if ty == BOOL => Ok(e),
            other => Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!(
                    "argument of {what} must be type boolean, not type {}",
                    other.name()
                ),
            )),
        }
    }

    /// The highest column of level `level` that `e` reads (subqueries included), if any.
    pub fn highest_column_read(&self, e: &CExpr, level: usize) -> Option<usize> {
        let mut highest = None;
        visit_columns(e, &mut |l, i| {
            if l == level {
                highest = Some(highest.map_or(i, |h: usize| h.max(i)));
            }
        });
        highest
    }

    /// Starts a grouped SELECT: compiles its GROUP BY keys (a number is a select-list
    /// position) against the ungrouped scope.
    pub fn begin_grouping(
        &mut self,
        group_exprs: &[&Expr],
        projection: &[SelectItem],
    ) -> SqlResult<()> {
        let mut state = GroupState {
            key_texts: Vec::new(),
            key_columns: Vec::new(),
            keys: Vec::new(),
            aggs: Vec::new(),
        };
        let top = self.top();
        for e in group_exprs {
            let e = match e {
                Expr::Value(v) => match &v.value {
                    AstValue::Number(n, _) => {
                        let position: usize = n.parse().unwrap_or(0);
                        match projection.get(position.wrapping_sub(1)) {
                            Some(
                                SelectItem::UnnamedExpr(item)
                                | SelectItem::ExprWithAlias { expr: item, .. },
                            ) => item,
                            _ => {
                                return Err(SqlError::new(
                                    sqlstate::INVALID_COLUMN_REFERENCE,
                                    format!("GROUP BY position {n} is not in select list"),
                                ));
                            }
                        }
                    }
                    _ => e,
                },
                other => other,
            };
            let key = self.expr(e)?;
            state.key_columns.push(match key.kind {
                ExprKind::Column { level, index } if level == top => Some(index),
                _ => None,
            });
            state.key_texts.push(e.to_string());
            state.keys.push(key);
        }
        self.levels[top].group = Some(state);
        Ok(())
    }

    /// Ends a grouped SELECT: its keys and aggregates.
    pub fn end_grouping(&mut self) -> (Vec<CExpr>, Vec<AggSpec>) {
        let top = self.top();
        match self.levels[top].group.take() {
            Some(state) => (state.keys, state.aggs),
            None => (Vec::new(), Vec::new()),
        }
    }

    /// A reference to column `index` of level `level`, seen from the current level.
    fn column_at(&mut self, level: usize, index: usize, ty: CType, name: &str) -> SqlResult<CExpr> {
        let target = &self.levels[level];
        if let Some(group) = &target.group
            && !target.in_aggregate
        {
            let key = group.key_columns.iter().position(|k| *k == Some(index));
            return match key {
                Some(key) => {
                    self.read_log.push((level, key));
                    Ok(CExpr::new(ExprKind::Column { level, index: key }, ty))
                }
                None => Err(SqlError::new(
                    sqlstate::GROUPING_ERROR,
                    format!(
                        "column \"{name}\" must appear in the GROUP BY clause or be used in an aggregate function"
                    ),
                )),
            };
        }
        self.read_log.push((level, index));
        Ok(CExpr::new(ExprKind::Column { level, index }, ty))
    }

    /// Resolves `name` or `qualifier.name`, innermost level first.
    fn column(&mut self, parts: &[String]) -> SqlResult<Option<CExpr>> {
        let (qualifier, name) = match parts {
            [name] => (None, name),
            [.., qualifier, name] => (Some(qualifier.as_str()), name),
            [] => return Ok(None),
        };
        for level in (0..self.levels.len()).rev() {
            let matches: Vec<usize> = self.levels[level]
                .cols
                .iter()
                .enumerate()
                .filter(|(_, c)| {
                    c.name == *name && qualifier.map_or(!c.hidden, |q| c.qualifier == q)
                })
                .map(|(i, _)| i)
                .collect();
            match matches.as_slice() {
                [] => continue,
                [index] => {
                    let ty = self.levels[level].cols[*index].ty;
                    return self
                        .column_at(level, *index, ty, &parts.join("."))
                        .map(Some);
                }
                _ => {
                    return Err(SqlError::new(
                        "42702",
                        format!("column reference \"{}\" is ambiguous", parts.join(".")),
                    ));
                }
            }
        }
        if let Some(q) = qualifier {
            let known = self
                .levels
                .iter()
                .any(|l| l.cols.iter().any(|c| c.qualifier == q));
            if !known {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_TABLE,
                    format!("missing FROM-clause entry for table \"{q}\""),
                ));
            }
        }
        Ok(None)
    }

    /// Compiles an expression.
    pub fn expr(&mut self, e: &Expr) -> SqlResult<CExpr> {
        let top = self.top();
        if let Some(level) = self.levels.get(top)
            && let Some(group) = &level.group
            && !level.in_aggregate
        {
            let text = e.to_string();
            if let Some(key) = group.key_texts.iter().position(|k| *k == text) {
                let ty = group.keys[key].ty;
                self.read_log.push((top, key));
                return Ok(CExpr::new(
                    ExprKind::Column {
                        level: top,
                        index: key,
                    },
                    ty,
                ));
            }
        }
        self.expr_inner(e)
            .map_err(|err| err.at_line_column(crate::expr::position_of(e)))
    }

    fn expr_inner(&mut self, e: &Expr) -> SqlResult<CExpr> {
        Ok(match e {
            Expr::Identifier(ident) => self.name(&[fold(ident)])?,
            Expr::CompoundIdentifier(parts) => {
                self.name(&parts.iter().map(fold).collect::<Vec<_>>())?
            }
            Expr::Value(v) => literal(&v.value, &mut self.params)?,
            Expr::Nested(inner) => self.expr(inner)?,
            Expr::Collate {
                expr: inner,
                collation,
            } => self.collate(inner, collation)?,
            Expr::UnaryOp { op, expr } => self.unary(op, expr)?,
            Expr::BinaryOp { left, op, right } => self.binary(left, op, right)?,
            Expr::IsNull(inner) => {
                CExpr::new(ExprKind::IsNull(Box::new(self.expr(inner)?), false), BOOL)
            }
            Expr::IsNotNull(inner) => {
                CExpr::new(ExprKind::IsNull(Box::new(self.expr(inner)?), true), BOOL)
            }
            Expr::IsTrue(inner) => self.is_bool(inner, true, false)?,
            Expr::IsNotTrue(inner) => self.is_bool(inner, true, true)?,
            Expr::IsFalse(inner) => self.is_bool(inner, false, false)?,
            Expr::IsNotFalse(inner) => self.is_bool(inner, false, true)?,
            Expr::IsDistinctFrom(a, b) | Expr::IsNotDistinctFrom(a, b) => {
                let (a, b) = self.unified(a, b)?;
                // PostgreSQL looks for `=` between the two types, and names it.
                check_comparable(a.ty, &BinaryOperator::Eq, b.ty)?;
                let negated = matches!(e, Expr::IsNotDistinctFrom(..));
                CExpr::new(ExprKind::Distinct(Box::new(a), Box::new(b), negated), BOOL)
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => self.in_list(expr, list, *negated)?,
            Expr::InSubquery { .. } | Expr::Exists { .. } | Expr::Subquery(_) => {
                self.subquery_expr(e)?
            }
            Expr::Between {
                expr,
                negated,
                low,
                high,
            } => self.between(expr, *negated, low, high)?,
            Expr::Like {
                negated,
                expr,
                pattern,
                escape_char: None,
                any: false,
            } => self.like(expr, pattern, *negated, false)?,
            Expr::ILike {
                negated,
                expr,
                pattern,
                escape_char: None,
                any: false,
            } => self.like(expr, pattern, *negated, true)?,
            Expr::Cast {
                kind: CastKind::Cast | CastKind::DoubleColon,
                expr,
                data_type,
                format: None,
            } => {
                let ty = types::type_from_ast(data_type)?;
                self.expr(expr)?.cast_to(ty)
            }
            Expr::Function(f) => self.function(f)?,
            Expr::TypedString(_) | Expr::Interval(_) => typed_literal(e)?,
            Expr::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.refusing_sets("CASE", |c| {
                c.case(operand.as_deref(), conditions, else_result.as_deref())
            })?,
            Expr::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => self.any_all(left, compare_op, right, false)?,
            Expr::AllOp {
                left,
                compare_op,
                right,
            } => self.any_all(left, compare_op, right, true)?,
            Expr::Array(array) => self.array(&array.elem)?,
            Expr::CompoundFieldAccess { root, access_chain } => {
                self.subscript(root, access_chain)?
            }
            other => self.special_form(other)?,
        })
    }

    /// SUBSTRING, FLOOR, CEIL and TRIM, which sqlparser parses apart from function calls,
    /// as the SQL layer's functions (`substr`, `floor`, `ceil`, `btrim`/`ltrim`/`rtrim`);
    /// any other expression is not supported.
    fn special_form(&mut self, e: &Expr) -> SqlResult<CExpr> {
        use sqlparser::ast::{CeilFloorKind, DateTimeField, TrimWhereField as W};
        let plain = |field: &CeilFloorKind| {
            matches!(
                field,
                CeilFloorKind::DateTimeField(DateTimeField::NoDateTime)
            )
        };
        let (name, func, args) = match e {
            Expr::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } if substring_from.is_some() || substring_for.is_some() => {
                let mut args = vec![self.expr(expr)?];
                // SUBSTRING(s FOR n) starts at 1.
                args.push(match substring_from {
                    Some(from) => self.expr(from)?,
                    None => CExpr::constant(Datum::Int(1), INT4),
                });
                if let Some(count) = substring_for {
                    args.push(self.expr(count)?);
                }
                ("substr", PureFunc::Substr, args)
            }
            Expr::Position { expr, r#in } => (
                "position",
                PureFunc::Strpos,
                vec![self.expr(r#in)?, self.expr(expr)?],
            ),
            Expr::Extract { field, expr, .. } => {
                let unit = crate::expr::field_unit(field);
                let args = vec![CExpr::constant(Datum::Text(unit), TEXT), self.expr(expr)?];
                ("extract", PureFunc::Extract, args)
            }
            Expr::Floor { expr, field } if plain(field) => {
                ("floor", PureFunc::Floor, vec![self.expr(expr)?])
            }
            Expr::Ceil { expr, field } if plain(field) => {
                ("ceil", PureFunc::Ceil, vec![self.expr(expr)?])
            }
            Expr::Trim {
                trim_where,
                trim_what,
                expr,
                trim_characters: None,
            } => {
                let func = match trim_where {
                    Some(W::Leading) => PureFunc::Ltrim,
                    Some(W::Trailing) => PureFunc::Rtrim,
                    Some(W::Both) | None => PureFunc::Btrim,
                };
                let mut args = vec![self.expr(expr)?];
                if let Some(what) = trim_what {
                    args.push(self.expr(what)?);
                }
                ("trim", func, args)
            }
            other => return Err(SqlError::unsupported(format!("the expression {other}"))),
        };
        let mut args = args;
        let (func, ty) = ScalarFunc::resolve_pure(name, func, &mut args)?;
        Ok(CExpr::new(ExprKind::Call(func, args), ty))
    }

    /// `expr COLLATE name`: text compares by its bytes, the database's collation C (also
    /// named POSIX and "default"); another collation would order differently: refused.
    fn collate(
        &mut self,
        inner: &Expr,
        collation: &sqlparser::ast::ObjectName,
    ) -> SqlResult<CExpr> {
        let name = object_name(collation);
        if !matches!(
            name.as_str(),
            "default" | "C" | "c" | "POSIX" | "posix" | "ucs_basic"
        ) {
            return Err(SqlError::unsupported(format!(
                "the collation \"{name}\" (hotpage's text order is C)"
            )));
        }
        self.expr(inner)
    }

    /// `x IN (subquery)`, `EXISTS (subquery)` and `(subquery)`.
    fn subquery_expr(&mut self, e: &Expr) -> SqlResult<CExpr> {
        Ok(match e {
            Expr::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                let left = self.expr(expr)?;
                let sub = self.sub_plan(subquery)?;
                if sub.plan.columns.len() > 1 {
                    return Err(SqlError::new(
                        sqlstate::SYNTAX_ERROR,
                        "subquery has too many columns",
                    ));
                }
                let left = match sub.plan.columns.first() {
                    Some((_, ty)) if left.ty == CType::Unknown => left.cast_to(*ty),
                    Some((_, ty)) => {
                        // Refused when planned, as a comparison is (it failed at the first
                        // row, naming the values' kinds, or not at all over no rows).
                        check_comparable(left.ty, &BinaryOperator::Eq, *ty)?;
                        left
                    }
                    None => left,
                };
                let left = without_padding(left);
                CExpr::new(
                    ExprKind::InSubquery(Box::new(left), Box::new(sub), *negated),
                    BOOL,
                )
            }
            Expr::Exists { subquery, negated } => {
                let exists = CExpr::new(ExprKind::Exists(Box::new(self.sub_plan(subquery)?)), BOOL);
                if *negated {
                    CExpr::new(ExprKind::Not(Box::new(exists)), BOOL)
                } else {
                    exists
                }
            }
            Expr::Subquery(query) => {
                let sub = self.sub_plan(query)?;
                let ty = match sub.plan.columns.as_slice() {
                    [(_, ty)] => *ty,
                    _ => {
                        return Err(SqlError::new(
                            sqlstate::SYNTAX_ERROR,
                            "subquery must return only one column",
                        ));
                    }
                };
                CExpr::new(ExprKind::ScalarSubquery(Box::new(sub)), ty)
            }
            other => return Err(SqlError::internal(format!("{other} is no subquery"))),
        })
    }

    /// A bare or qualified name: a column, or one of SQL's parenthesis-free functions.
    fn name(&mut self, parts: &[String]) -> SqlResult<CExpr> {
        if let Some(column) = self.column(parts)? {
            return Ok(column);
        }
        if let [word] = parts
            && NILADIC.contains(&word.as_str())
        {
            let (func, ty) = ScalarFunc::resolve(word, &mut Vec::new(), false)?;
            return Ok(CExpr::new(ExprKind::Call(func, Vec::new()), ty));
        }
        Err(SqlError::new(
            sqlstate::UNDEFINED_COLUMN,
            format!("column \"{}\" does not exist", parts.join(".")),
        ))
    }

    fn unary(&mut self, op: &UnaryOperator, inner: &Expr) -> SqlResult<CExpr> {
        if *op == UnaryOperator::Minus
            && let Some(digits) = crate::expr::integer_literal_digits(inner)
        {
            let (value, ty) = crate::expr::number_value(&format!("-{digits}"))?;
            return Ok(CExpr::constant(Datum::from_value(value), CType::Sql(ty)));
        }
        let e = self.expr(inner)?;
        match op {
            UnaryOperator::Not => {
                let e = self.boolean(e, "NOT")?;
                Ok(CExpr::new(ExprKind::Not(Box::new(e)), BOOL))
            }
            UnaryOperator::Minus => match e.kind {
                ExprKind::Const(Datum::Int(i)) if i != i64::MIN => {
                    Ok(CExpr::constant(Datum::Int(-i), e.ty))
                }
                _ => {
                    let ty = e.ty;
                    Ok(CExpr::new(ExprKind::Neg(Box::new(e)), ty))
                }
            },
            UnaryOperator::Plus => Ok(e),
            other => Err(SqlError::unsupported(format!("the operator {other}"))),
        }
    }

    /// Both sides in one type: an untyped literal (or parameter) takes the other's type.
    fn unified(&mut self, a: &Expr, b: &Expr) -> SqlResult<(CExpr, CExpr)> {
        let (a, b) = (self.expr(a)?, self.expr(b)?);
        Ok(unify(a, b))
    }

    fn binary(&mut self, left: &Expr, op: &BinaryOperator, right: &Expr) -> SqlResult<CExpr> {
        use BinaryOperator as B;
        let op = match op {
            // OPERATOR(pg_catalog.~) is the operator ~ named with its schema.
            B::PGCustomBinaryOperator(parts) => match parts.last().map(String::as_str) {
                Some("~") => B::PGRegexMatch,
                Some("!~") => B::PGRegexNotMatch,
                Some("~*") => B::PGRegexIMatch,
                Some("!~*") => B::PGRegexNotIMatch,
                Some("=") => B::Eq,
                Some("<>") => B::NotEq,
                Some("<") => B::Lt,
                Some("<=") => B::LtEq,
                Some(">") => B::Gt,
                Some(">=") => B::GtEq,
                Some("||") => B::StringConcat,
                _ => return Err(SqlError::unsupported(format!("the operator {op}"))),
            },
            other => other.clone(),
        };
        let compare = |op: CmpOp| Some(op);
        let cmp = match op {
            B::Eq => compare(CmpOp::Eq),
            B::NotEq => compare(CmpOp::NotEq),
            B::Lt => compare(CmpOp::Lt),
            B::LtEq => compare(CmpOp::LtEq),
            B::Gt => compare(CmpOp::Gt),
            B::GtEq => compare(CmpOp::GtEq),
            _ => None,
        };
        if let Some(cmp) = cmp {
            let (a, b) = self.unified(left, right)?;
            check_comparable(a.ty, &op, b.ty)?;
            let (a, b) = (without_padding(a), without_padding(b));
            return Ok(CExpr::new(
                ExprKind::Compare(cmp, Box::new(a), Box::new(b)),
                BOOL,
            ));
        }
        match op {
            B::And | B::Or => {
                let what = if op == B::And { "AND" } else { "OR" };
                let a = self.expr(left)?;
                let a = self.boolean(a, what)?;
                let b = self.expr(right)?;
                let b = self.boolean(b, what)?;
                let kind = if op == B::And {
                    ExprKind::And(Box::new(a), Box::new(b))
                } else {
                    ExprKind::Or(Box::new(a), Box::new(b))
                };
                Ok(CExpr::new(kind, BOOL))
            }
            B::PGRegexMatch | B::PGRegexNotMatch | B::PGRegexIMatch | B::PGRegexNotIMatch => {
                let expr = self.expr(left)?.cast_to_text();
                let pattern = self.expr(right)?.cast_to_text();
                Ok(CExpr::new(
                    ExprKind::Regex {
                        expr: Box::new(expr),
                        pattern: Box::new(pattern),
                        negated: matches!(op, B::PGRegexNotMatch | B::PGRegexNotIMatch),
                        case_insensitive: matches!(op, B::PGRegexIMatch | B::PGRegexNotIMatch),
                    },
                    BOOL,
                ))
            }
            B::StringConcat => self.concat(left, right),
            B::Plus | B::Minus | B::Multiply | B::Divide | B::Modulo => {
                let arith = match op {
                    B::Plus => ArithOp::Add,
                    B::Minus => ArithOp::Sub,
                    B::Multiply => ArithOp::Mul,
                    B::Divide => ArithOp::Div,
                    _ => ArithOp::Mod,
                };
                let (a, b) = self.unified(left, right)?;
                let ty = match date_arith_type(arith, a.ty, b.ty) {
                    Some(ty) => ty?,
                    None => arith_type(a.ty, b.ty),
                };
                Ok(CExpr::new(
                    ExprKind::Arith(arith, Box::new(a), Box::new(b)),
                    ty,
                ))
            }
            other => Err(SqlError::unsupported(format!("the operator {other}"))),
        }
    }

    fn concat(&mut self, left: &Expr, right: &Expr) -> SqlResult<CExpr> {
        let (a, b) = (self.expr(left)?, self.expr(right)?);
        let array = match (a.ty.element(), b.ty.element()) {
            (Some(_), _) => Some(a.ty),
            (_, Some(_)) => Some(b.ty),
            _ => None,
        };
        let Some(array) = array else {
            // char(n) is concatenated as text, without its padding.
            let (a, b) = (without_padding(a), without_padding(b));
            return Ok(CExpr::new(
                ExprKind::Concat(Box::new(a), Box::new(b), true),
                TEXT,
            ));
        };
        // array || array, array || element, element || array; an untyped literal is an
        // array (as PostgreSQL reads `arr || '{…}'`).
        let side = |e: CExpr| match e.ty {
            CType::Unknown => e.cast_to(array),
            ty if ty.element().is_some() => e.cast_to(array),
            _ => e.cast_to(array.element().unwrap_or(TEXT)),
        };
        let (a, b) = (side(a), side(b));
        Ok(CExpr::new(
            ExprKind::Concat(Box::new(a), Box::new(b), false),
            array,
        ))
    }

    fn is_bool(&mut self, inner: &Expr, value: bool, negated: bool) -> SqlResult<CExpr> {
        let e = self.expr(inner)?;
        let e = self.boolean(e, "IS TRUE/FALSE")?;
        Ok(CExpr::new(
            ExprKind::IsBool(Box::new(e), value, negated),
            BOOL,
        ))
    }

    fn in_list(&mut self, expr: &Expr, list: &[Expr], negated: bool) -> SqlResult<CExpr> {
        let mut left = self.expr(expr)?;
        let mut items = list
            .iter()
            .map(|e| self.expr(e))
            .collect::<SqlResult<Vec<_>>>()?;
        if left.ty == CType::Unknown
            && let Some(ty) = items.iter().map(|i| i.ty).find(|t| *t != CType::Unknown)
        {
            left = left.cast_to(ty);
        }
        let ty = if left.ty == CType::Unknown {
            TEXT
        } else {
            left.ty
        };
        left = left.cast_to(ty);
        items = items
            .into_iter()
            .map(|i| {
                if i.ty == CType::Unknown {
                    i.cast_to(ty)
                } else {
                    i
                }
            })
            .collect();
        let items = items.into_iter().map(without_padding).collect();
        Ok(CExpr::new(
            ExprKind::InList(Box::new(without_padding(left)), items, negated),
            BOOL,
        ))
    }

    fn between(&mut self, expr: &Expr, negated: bool, low: &Expr, high: &Expr) -> SqlResult<CExpr> {
        let (a, lo) = self.unified(expr, low)?;
        let (b, hi) = self.unified(expr, high)?;
        let range = CExpr::new(
            ExprKind::And(
                Box::new(CExpr::new(
                    ExprKind::Compare(CmpOp::GtEq, Box::new(a), Box::new(lo)),
                    BOOL,
                )),
                Box::new(CExpr::new(
                    ExprKind::Compare(CmpOp::LtEq, Box::new(b), Box::new(hi)),
                    BOOL,
                )),
            ),
            BOOL,
        );
        Ok(if negated {
            CExpr::new(ExprKind::Not(Box::new(range)), BOOL)
        } else {
            range
        })
    }

    fn like(
        &mut self,
        expr: &Expr,
        pattern: &Expr,
        negated: bool,
        case_insensitive: bool,
    ) -> SqlResult<CExpr> {
        let expr = self.expr(expr)?.cast_to_text();
        let pattern = self.expr(pattern)?.cast_to_text();
        Ok(CExpr::new(
            ExprKind::Like {
                expr: Box::new(expr),
                pattern: Box::new(pattern),
                negated,
                case_insensitive,
            },
            BOOL,
        ))
    }

    fn function(&mut self, f: &Function) -> SqlResult<CExpr> {
        let name = function_name(f)?;
        if !f.within_group.is_empty() {
            return Err(SqlError::unsupported(format!("{name}() WITHIN GROUP")));
        }
        if f.filter.is_some() && f.over.is_some() && AggFunc::by_name(&name).is_none() {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "FILTER is not implemented for non-aggregate window functions",
            ));
        }
        if f.filter.is_some() && AggFunc::by_name(&name).is_none() {
            return Err(SqlError::new(
                sqlstate::WRONG_OBJECT_TYPE,
                format!("FILTER specified, but {name} is not an aggregate function"),
            ));
        }
        if f.over.is_some() {
            return self.window_call(&name, f);
        }
        super::window::refuse_without_over(&name)?;
        if SetFunc::is_set_function(&name) {
            return self.set_call(&name, f);
        }
        if let FunctionArguments::Subquery(query) = &f.args {
            if name != "array" {
                return Err(SqlError::unsupported(format!("{name}(subquery)")));
            }
            let sub = self.sub_plan(query)?;
            let ty = match sub.plan.columns.as_slice() {
                [(_, ty)] => ty.array_of(),
                _ => {
                    return Err(SqlError::new(
                        sqlstate::SYNTAX_ERROR,
                        "subquery must return only one column",
                    ));
                }
            };
            return Ok(CExpr::new(ExprKind::ArraySubquery(Box::new(sub)), ty));
        }
        if let Some(agg) = AggFunc::by_name(&name) {
            return self.aggregate(agg, &name, f);
        }
        if name == "pg_typeof" {
            return self.pg_typeof(f);
        }
        let mut args = match name.as_str() {
            "coalesce" => self.refusing_sets("COALESCE", |c| c.arguments(f))?,
            _ => self.arguments(f)?,
        };
        let (func, ty) = ScalarFunc::resolve(&name, &mut args, self.implicit_conversions)?;
        Ok(CExpr::new(ExprKind::Call(func, args), ty))
    }

    /// Starts a SELECT's list, where set-returning calls may appear.
    pub fn begin_set_calls(&mut self) {
        let top = self.top();
        if let Some(level) = self.levels.get_mut(top) {
            level.set_calls = Some(Vec::new());
        }
    }

    /// Ends it: the set-returning calls it made.
    pub fn end_set_calls(&mut self) -> Vec<SetCall> {
        let top = self.top();
        self.levels
            .get_mut(top)
            .and_then(|level| level.set_calls.take())
            .unwrap_or_default()
    }

    /// Compiles with set-returning calls refused as inside `what`.
    fn refusing_sets<T>(
        &mut self,
        what: &'static str,
        compile: impl FnOnce(&mut Self) -> SqlResult<T>,
    ) -> SqlResult<T> {
        let top = self.top();
        let before = self
            .levels
            .get_mut(top)
            .and_then(|l| l.set_blocked.replace(what));
        let compiled = compile(self);
        if let Some(level) = self.levels.get_mut(top) {
            level.set_blocked = before;
        }
        compiled
    }

    /// `generate_series(…)` or `unnest(…)` outside FROM: a SELECT list's set-returning
    /// call, read as `ExprKind::SetValue` (its row's value of the call).
    fn set_call(&mut self, name: &str, f: &Function) -> SqlResult<CExpr> {
        let top = self.top();
        let level = self.levels.get(top);
        let refused = match level {
            Some(l) if l.in_aggregate => {
                Some("aggregate function calls cannot contain set-returning function calls".into())
            }
            // PostgreSQL refuses them in a window call's arguments and runs them in its
            // OVER clause; hotpage refuses both.
            Some(l) if l.in_window => Some(
                "set-returning functions in a window function's arguments or OVER clause are not supported"
                    .into(),
            ),
            Some(l) if l.set_calls.is_some() => l.set_blocked.map(|what| match what {
                NESTED_SET_CALL => {
                    "a set-returning function in another's arguments is not supported yet".into()
                }
                what => format!("set-returning functions are not allowed in {what}"),
            }),
            _ => Some(match self.clause.as_deref() {
                Some("JOIN/ON") => {
                    "set-returning functions are not allowed in JOIN conditions".into()
                }
                Some(clause) => format!("set-returning functions are not allowed in {clause}"),
                // ORDER BY, GROUP BY, LIMIT: PostgreSQL runs some of these; hotpage not yet.
                None => {
                    "set-returning functions outside FROM are supported only in a SELECT's list"
                        .into()
                }
            }),
        };
        if let Some(message) = refused {
            return Err(SqlError::new(sqlstate::FEATURE_NOT_SUPPORTED, message)
                .with_hint("You might be able to move the set-returning function into a LATERAL FROM item."));
        }
        let mut args = self.refusing_sets(NESTED_SET_CALL, |c| c.arguments(f))?;
        let func = SetFunc::resolve(name, &mut args, false)?;
        let ty = match func.column_types(&args).as_slice() {
            [ty] => *ty,
            _ => {
                let types: Vec<String> = args.iter().map(|a| a.ty.name()).collect();
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    format!("function {name}({}) does not exist", types.join(", ")),
                )
                .with_hint("unnest of several arrays is a FROM item: FROM unnest(a, b)"));
            }
        };
        let Some(calls) = self.levels[top].set_calls.as_mut() else {
            return Err(SqlError::internal(
                "a set-returning call outside a SELECT's list",
            ));
        };
        calls.push(SetCall { func, args });
        let index = calls.len() - 1;
        Ok(CExpr::new(ExprKind::SetValue { level: top, index }, ty))
    }

    /// `pg_typeof(x)`: x's type as a regtype, a constant once the query is planned
    /// (`unknown` for an untyped literal, as in PostgreSQL; `model::type_of`'s OID). x is
    /// not evaluated.
    fn pg_typeof(&mut self, f: &Function) -> SqlResult<CExpr> {
        let args = self.arguments(f)?;
        let [arg] = args.as_slice() else {
            return Err(crate::expr::type_of_arity(args.len()));
        };
        let (oid, _) = super::model::type_of(arg.ty);
        Ok(CExpr::constant(Datum::oid(oid), CType::RegType))
    }

    pub(super) fn arguments(&mut self, f: &Function) -> SqlResult<Vec<CExpr>> {
        match &f.args {
            FunctionArguments::None => Ok(Vec::new()),
            FunctionArguments::List(list)
                if (!list.clauses.is_empty() || list.duplicate_treatment.is_some())
                    && AggFunc::by_name(&object_name(&f.name)).is_none() =>
            {
                Err(SqlError::unsupported(format!(
                    "the arguments of {}",
                    f.name
                )))
            }
            FunctionArguments::List(list) => list
                .args
                .iter()
                .map(|arg| match arg {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => self.expr(e),
                    other => Err(SqlError::unsupported(format!("the argument {other}"))),
                })
                .collect(),
            FunctionArguments::Subquery(_) => Err(SqlError::unsupported("a subquery argument")),
        }
    }

    /// An aggregate call: its arguments read the ungrouped rows; the call becomes a column
    /// of the grouped row (after the keys).
    fn aggregate(&mut self, func: AggFunc, name: &str, f: &Function) -> SqlResult<CExpr> {
        let top = self.top();
        let grouped = self
            .levels
            .get(top)
            .is_some_and(|l| l.group.is_some() && !l.in_aggregate);
        if !grouped {
            return Err(SqlError::new(
                sqlstate::GROUPING_ERROR,
                format!("aggregate function {name}() is not allowed here"),
            ));
        }
        self.levels[top].in_aggregate = true;
        let reads_before = self.read_log.len();
        let spec = self.aggregate_spec(func, name, f);
        self.levels[top].in_aggregate = false;
        let spec = spec?;
        let reads = &self.read_log[reads_before..];
        if !reads.is_empty() && reads.iter().all(|(level, _)| *level < top) {
            // PostgreSQL makes such an aggregate the outer query's (which it then groups);
            // computing it here, once per outer row, would answer something else.
            return Err(SqlError::unsupported(format!(
                "{name}() of only an outer query's columns inside a subquery"
            )));
        }
        let ty = spec.ty;
        let Some(group) = self.levels[top].group.as_mut() else {
            return Err(SqlError::internal("an aggregate outside a grouping"));
        };
        // One aggregate written twice (in the list and ORDER BY, say) is computed once
        // and is the same column, as DISTINCT's ORDER BY check needs.
        let text = format!("{spec:?}");
        let slot = match group.aggs.iter().position(|a| format!("{a:?}") == text) {
            Some(slot) => slot,
            None => {
                group.aggs.push(spec);
                group.aggs.len() - 1
            }
        };
        let index = group.keys.len() + slot;
        Ok(CExpr::new(ExprKind::Column { level: top, index }, ty))
    }

    /// An aggregate's function, arguments and type: PostgreSQL's arities, and sum/avg
    /// typed as a one-table query types them. For a grouped SELECT's aggregate the
    /// caller marks the level as inside one, so the arguments read the ungrouped row; a
    /// window's aggregate reads the row as its SELECT's list does.
    pub fn aggregate_spec(
        &mut self,
        mut func: AggFunc,
        name: &str,
        f: &Function,
    ) -> SqlResult<AggSpec> {
        let order = self.aggregate_order(name, f)?;
        let (distinct, star) = match &f.args {
            FunctionArguments::List(list) => (
                list.duplicate_treatment == Some(sqlparser::ast::DuplicateTreatment::Distinct),
                matches!(
                    list.args.as_slice(),
                    [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)]
                ),
            ),
            _ => (false, false),
        };
        let mut args = if star { Vec::new() } else { self.arguments(f)? };
        if star {
            func = AggFunc::CountStar;
        }
        let arity_ok = match func {
            AggFunc::CountStar => true,
            AggFunc::StringAgg => args.len() == 2,
            _ => args.len() == 1,
        };
        if !arity_ok {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!(
                    "function {name} with {} arguments does not exist",
                    args.len()
                ),
            ));
        }
        args = args
            .into_iter()
            .map(|a| match a.ty {
                CType::Unknown => a.cast_to(TEXT),
                // string_agg takes text: a char(n) without its padding, as PostgreSQL casts it.
                CType::Sql(SqlType::Char(_)) if func == AggFunc::StringAgg => a.cast_to(TEXT),
                _ => a,
            })
            .collect();
        let ty = match func {
            AggFunc::CountStar | AggFunc::Count => INT8,
            // sum and avg as a one-table query types them (select.rs): sum(bigint) and
            // avg(integer) are numeric.
            AggFunc::Sum | AggFunc::Avg if matches!(args[0].ty, CType::Sql(_)) => {
                let plain = if func == AggFunc::Sum {
                    crate::expr::AggFunc::Sum
                } else {
                    crate::expr::AggFunc::Avg
                };
                crate::select::check_sum_argument(plain, Some(args[0].ty.output_type()))?;
                CType::Sql(crate::select::agg_result_type(
                    plain,
                    Some(args[0].ty.output_type()),
                ))
            }
            AggFunc::Avg => FLOAT8,
            AggFunc::StringAgg => TEXT,
            AggFunc::ArrayAgg => args[0].ty.array_of(),
            AggFunc::BoolAnd | AggFunc::BoolOr => BOOL,
            // min and max of a name are text (PostgreSQL has them for text only).
            AggFunc::Min | AggFunc::Max if args[0].ty == super::types::NAME => TEXT,
            AggFunc::Sum | AggFunc::Min | AggFunc::Max => args[0].ty,
        };
        if distinct {
            distinct_order_in_arguments(&args, &order)?;
        }
        let filter = match &f.filter {
            Some(cond) => Some(self.condition(cond, "FILTER")?),
            None => None,
        };
        Ok(AggSpec {
            func,
            args,
            distinct,
            ty,
            order,
            filter,
        })
    }

    /// `agg(x ORDER BY k, …)`: the keys its rows are sorted by before they are fed. The
    /// other clauses sqlparser reads in a call's parentheses are other dialects'.
    fn aggregate_order(&mut self, name: &str, f: &Function) -> SqlResult<Vec<SortKey>> {
        let FunctionArguments::List(list) = &f.args else {
            return Ok(Vec::new());
        };
        let mut order = Vec::new();
        for clause in &list.clauses {
            let sqlparser::ast::FunctionArgumentClause::OrderBy(keys) = clause else {
                return Err(SqlError::new(
                    sqlstate::SYNTAX_ERROR,
                    format!("syntax error: {name}() does not take {clause}"),
                ));
            };
            for key in keys {
                let desc = crate::expr::sort_is_desc(key.options.sort.as_ref())?;
                order.push(SortKey {
                    by: SortBy::Expr(self.expr(&key.expr)?),
                    desc,
                    nulls_first: key.options.nulls_first.unwrap_or(desc),
                });
            }
        }
        Ok(order)
    }

    /// Starts a SELECT's list and ORDER BY, the places window calls may appear, with the
    /// SELECT's WINDOW definitions.
    pub fn begin_windows(
        &mut self,
        definitions: &[sqlparser::ast::NamedWindowDefinition],
    ) -> SqlResult<()> {
        let named = super::window::define_windows(definitions)?;
        let top = self.top();
        if let Some(level) = self.levels.get_mut(top) {
            level.windows = Some(Vec::new());
            level.named_windows = named;
        }
        Ok(())
    }

    /// The current SELECT's WINDOW definitions.
    pub fn named_windows(&self) -> &[(String, sqlparser::ast::WindowSpec)] {
        self.levels
            .get(self.top())
            .map_or(&[], |level| level.named_windows.as_slice())
    }

    /// Ends them: the window calls they made.
    pub fn end_windows(&mut self) -> Vec<WindowSpec> {
        let top = self.top();
        self.levels
            .get_mut(top)
            .and_then(|level| level.windows.take())
            .unwrap_or_default()
    }

    /// A call with OVER: a window of the current SELECT, read as `ExprKind::Window`.
    fn window_call(&mut self, name: &str, f: &Function) -> SqlResult<CExpr> {
        let top = self.top();
        let Some(level) = self.levels.get(top) else {
            return Err(window_misplaced("window functions are not allowed here"));
        };
        if level.in_aggregate {
            return Err(SqlError::new(
                sqlstate::GROUPING_ERROR,
                "aggregate function calls cannot contain window function calls",
            ));
        }
        if level.in_window {
            return Err(window_misplaced("window function calls cannot be nested"));
        }
        if level.windows.is_none() {
            return Err(window_misplaced("window functions are not allowed here"));
        }
        self.levels[top].in_window = true;
        let compiled = super::window::compile(self, name, f);
        self.levels[top].in_window = false;
        let (spec, ty) = compiled?;
        let Some(windows) = self.levels[top].windows.as_mut() else {
            return Err(SqlError::internal("a window call outside a SELECT's list"));
        };
        windows.push(spec);
        let index = windows.len() - 1;
        Ok(CExpr::new(ExprKind::Window { level: top, index }, ty))
    }

    fn case(
        &mut self,
        operand: Option<&Expr>,
        conditions: &[sqlparser::ast::CaseWhen],
        else_result: Option<&Expr>,
    ) -> SqlResult<CExpr> {
        let operand = operand.map(|o| self.expr(o)).transpose()?;
        let mut whens = Vec::new();
        for when in conditions {
            let condition = self.expr(&when.condition)?;
            let condition = match &operand {
                Some(o) if condition.ty == CType::Unknown => condition.cast_to(o.ty),
                Some(_) => condition,
                None => self.boolean(condition, "CASE/WHEN")?,
            };
            whens.push((condition, self.expr(&when.result)?));
        }
        let otherwise = else_result.map(|e| self.expr(e)).transpose()?;
        // PostgreSQL looks at ELSE first, then the THENs in order.
        let ty = functions::unify_types(
            "CASE",
            self.implicit_conversions,
            otherwise.iter().chain(whens.iter().map(|(_, r)| r)),
        )?;
        let whens = whens
            .into_iter()
            .map(|(c, r)| (c, functions::cast_to_common(r, ty)))
            .collect();
        let operand = operand.map(|o| {
            if o.ty == CType::Unknown {
                Box::new(o.cast_to(TEXT))
            } else {
                Box::new(o)
            }
        });
        Ok(CExpr::new(
            ExprKind::Case {
                operand,
                whens,
                otherwise: otherwise.map(|o| Box::new(functions::cast_to_common(o, ty))),
            },
            ty,
        ))
    }

    /// `x = ANY (subquery)` is `x IN (subquery)` and `x <> ALL (subquery)` is `x NOT IN
    /// (subquery)`, as PostgreSQL defines IN; the other comparisons over a subquery are
    /// not supported (0A000). Before, the subquery was taken as a scalar and refused as
    /// not an array.
    fn any_all_subquery(
        &mut self,
        left: &Expr,
        cmp: CmpOp,
        query: &sqlparser::ast::Query,
        all: bool,
    ) -> SqlResult<CExpr> {
        let negated = match (cmp, all) {
            (CmpOp::Eq, false) => false,
            (CmpOp::NotEq, true) => true,
            _ => {
                let which = if all { "ALL" } else { "ANY" };
                return Err(SqlError::unsupported(format!(
                    "{which} (subquery) with a comparison other than = ANY and <> ALL"
                )));
            }
        };
        self.subquery_expr(&Expr::InSubquery {
            expr: Box::new(left.clone()),
            subquery: Box::new(query.clone()),
            negated,
        })
    }

    fn any_all(
        &mut self,
        left: &Expr,
        op: &BinaryOperator,
        right: &Expr,
        all: bool,
    ) -> SqlResult<CExpr> {
        let cmp = match op {
            BinaryOperator::Eq => CmpOp::Eq,
            BinaryOperator::NotEq => CmpOp::NotEq,
            BinaryOperator::Lt => CmpOp::Lt,
            BinaryOperator::LtEq => CmpOp::LtEq,
            BinaryOperator::Gt => CmpOp::Gt,
            BinaryOperator::GtEq => CmpOp::GtEq,
            other => return Err(SqlError::unsupported(format!("{other} ANY/ALL"))),
        };
        if let Expr::Subquery(query) = strip_nested(right) {
            return self.any_all_subquery(left, cmp, query, all);
        }
        let mut a = self.expr(left)?;
        let mut array = self.expr(strip_nested(right))?;
        match array.ty.element() {
            Some(elem) => {
                if a.ty == CType::Unknown {
                    a = a.cast_to(elem);
                }
            }
            None if array.ty == CType::Unknown => {
                let elem = if a.ty == CType::Unknown { TEXT } else { a.ty };
                a = a.cast_to(elem);
                array = array.cast_to(elem.array_of());
            }
            None => {
                return Err(SqlError::new(
                    sqlstate::DATATYPE_MISMATCH,
                    format!(
                        "op ANY/ALL (array) requires array on right side, not {}",
                        array.ty.name()
                    ),
                ));
            }
        }
        Ok(CExpr::new(
            ExprKind::AnyArray(Box::new(a), cmp, Box::new(array), all),
            BOOL,
        ))
    }

    fn array(&mut self, elems: &[Expr]) -> SqlResult<CExpr> {
        let items = elems
            .iter()
            .map(|e| self.expr(e))
            .collect::<SqlResult<Vec<_>>>()?;
        let common = functions::unify_types("ARRAY", self.implicit_conversions, items.iter())?;
        if common.element().is_some() {
            // It was shown as an array of one text, {"{1,2}"}, not PostgreSQL's {{1,2}}.
            return Err(SqlError::unsupported(
                "multidimensional arrays (ARRAY[ARRAY[…]])",
            ));
        }
        let array = common.array_of();
        // Each element is cast to the common type: a numeric keeps its value and scale
        // (`ARRAY[1, 2.5]` was {1,3}), so `n = ANY (ARRAY[1.5, 2.25])` compares numbers.
        // A type with no array type of its own here gives a text[] column of those values.
        let items = items
            .into_iter()
            .map(|i| functions::cast_to_common(i, common))
            .collect();
        Ok(CExpr::new(ExprKind::Array(items), array))
    }

    fn subscript(&mut self, root: &Expr, chain: &[sqlparser::ast::AccessExpr]) -> SqlResult<CExpr> {
        let mut e = self.expr(root)?;
        for access in chain {
            let sqlparser::ast::AccessExpr::Subscript(sqlparser::ast::Subscript::Index { index }) =
                access
            else {
                return Err(SqlError::unsupported(format!("the access {access}")));
            };
            let elem = e.ty.element().ok_or_else(|| {
                SqlError::new(
                    sqlstate::DATATYPE_MISMATCH,
                    format!(
                        "cannot subscript type {} because it does not support subscripting",
                        e.ty.name()
                    ),
                )
            })?;
            let index = self.expr(index)?.cast_to(INT4);
            e = CExpr::new(ExprKind::Subscript(Box::new(e), Box::new(index)), elem);
        }
        Ok(e)
    }
}

impl CExpr {
    /// For operators on strings: an untyped literal is text; other types print as text.
    fn cast_to_text(self) -> CExpr {
        if self.ty.is_text_like() && self.ty != CType::Unknown {
            self
        } else {
            self.cast_to(TEXT)
        }
    }
}

fn strip_nested(e: &Expr) -> &Expr {
    match e {
        Expr::Nested(inner) => strip_nested(inner),
        other => other,
    }
}

/// `pg_catalog.f` and `f` are `f`; other schemas have no functions here.
fn function_name(f: &Function) -> SqlResult<String> {
    let parts: Vec<String> = f
        .name
        .0
        .iter()
        .filter_map(|p| p.as_ident())
        .map(fold)
        .collect();
    match parts.as_slice() {
        [name] => Ok(name.clone()),
        [schema, name] if schema == "pg_catalog" => Ok(name.clone()),
        _ => Err(SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!("function {}() does not exist", object_name(&f.name)),
        )),
    }
}

/// An untyped side takes the other side's type; two untyped sides are text.
/// A char(n) operand compared as text: PostgreSQL ignores char's trailing spaces in a
/// comparison (and in a join's hash, an IN list or set).
pub(crate) fn without_padding(e: CExpr) -> CExpr {
    match e.ty {
        CType::Sql(SqlType::Char(_)) => e.cast_to(TEXT),
        _ => e,
    }
}

pub(crate) fn unify(a: CExpr, b: CExpr) -> (CExpr, CExpr) {
    match (a.ty, b.ty) {
        (CType::Unknown, CType::Unknown) => (a.cast_to(TEXT), b.cast_to(TEXT)),
        (CType::Unknown, ty) => (a.cast_to(ty), b),
        (ty, CType::Unknown) => (a, b.cast_to(ty)),
        _ => (a, b),
    }
}

/// PostgreSQL has no comparison between a number and a string, or a boolean and either
/// (42883, at planning, with its hint); the catalog's own types (oid, regclass, name …)
/// compare as the catalog's queries need.
fn check_comparable(a: CType, op: &BinaryOperator, b: CType) -> SqlResult<()> {
    if comparable(a, b) {
        return Ok(());
    }
    Err(SqlError::new(
        sqlstate::UNDEFINED_FUNCTION,
        format!(
            "operator does not exist: {} {op} {}",
            operand_name(a),
            operand_name(b)
        ),
    )
    .with_hint(
        "No operator matches the given name and argument types. You might need to add explicit type casts.",
    ))
}

/// A type as PostgreSQL names an operand (no length, precision or scale).
fn operand_name(t: CType) -> String {
    match t {
        CType::Sql(ty) => ty.base_name(),
        other => other.name(),
    }
}

/// Whether values of types `a` and `b` may be compared: not a number with a string, or a
/// boolean with either; the catalog's own types (oid, regclass, name …) compare freely.
pub(crate) fn comparable(a: CType, b: CType) -> bool {
    let group = |t: CType| match t {
        CType::Sql(ty) => ty.comparison_group().map(|(group, _)| group),
        _ => None,
    };
    !matches!((group(a), group(b)), (Some(x), Some(y)) if x != y)
}

/// `date '…'` (a cast of the text) and `INTERVAL '…'`.
fn typed_literal(e: &Expr) -> SqlResult<CExpr> {
    Ok(match e {
        Expr::Interval(interval) => CExpr::constant(
            Datum::from_value(crate::expr::interval_literal(interval)?),
            CType::Sql(SqlType::Interval),
        ),
        Expr::TypedString(typed) => {
            let ty = types::type_from_ast(&typed.data_type)?;
            let text = typed.value.value.clone().into_string().unwrap_or_default();
            CExpr::constant(Datum::Text(text), CType::Unknown).cast_to(ty)
        }
        other => {
            return Err(SqlError::internal(format!(
                "{other} is not a typed literal"
            )));
        }
    })
}

/// The type of arithmetic with a date, a timestamp or an interval, `None` where neither
/// side is one (`types::datetime_operator_type`); a pair PostgreSQL has no operator for is
/// 42883.
fn date_arith_type(op: ArithOp, a: CType, b: CType) -> Option<SqlResult<CType>> {
    let sql = |t: CType| match t {
        CType::Sql(ty) => Some(ty),
        _ => None,
    };
    let symbol = match op {
        ArithOp::Add => '+',
        ArithOp::Sub => '-',
        ArithOp::Mul => '*',
        ArithOp::Div => '/',
        ArithOp::Mod => '%',
    };
    let found = crate::types::datetime_operator_type(symbol, sql(a), sql(b))?;
    Some(found.map(CType::Sql).ok_or_else(|| {
        SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!(
                "operator does not exist: {} {symbol} {}",
                operand_name(a),
                operand_name(b)
            ),
        )
        .with_hint(
            "No operator matches the given name and argument types. You might need to add explicit type casts.",
        )
    }))
}

/// The type of integer, float or numeric arithmetic.
fn arith_type(a: CType, b: CType) -> CType {
    let rank = |t: CType| match t {
        CType::Sql(SqlType::SmallInt) => 1,
        CType::Sql(SqlType::Int) => 2,
        t if t.is_integer_like() => 3,
        CType::Sql(t) if t.is_numeric() => 4,
        CType::Sql(SqlType::Real | SqlType::Double) => 5,
        _ => 3,
    };
    match rank(a).max(rank(b)) {
        1 => CType::Sql(SqlType::SmallInt),
        2 => INT4,
        3 => INT8,
        // PostgreSQL's numeric operators return numeric without a typmod: numeric(10,2)
        // plus numeric(10,2) need not fit numeric(10,2).
        4 => CType::Sql(SqlType::NumericUnconstrained),
        _ => FLOAT8,
    }
}

/// A literal: an integer is int4 (int8 past its range), a decimal numeric, a string (and
/// NULL) untyped until its context types it.
fn literal(value: &AstValue, params: &mut Vec<Option<CType>>) -> SqlResult<CExpr> {
    Ok(match value {
        AstValue::Number(text, _) => {
            // The one-table path's reading: integer, bigint, numeric or (past numeric's
            // digits) double precision.
            let (value, ty) = crate::expr::number_value(text)?;
            CExpr::constant(Datum::from_value(value), CType::Sql(ty))
        }
        AstValue::SingleQuotedString(s)
        | AstValue::EscapedStringLiteral(s)
        | AstValue::DollarQuotedString(sqlparser::ast::DollarQuotedString { value: s, .. }) => {
            CExpr::constant(Datum::Text(s.clone()), CType::Unknown)
        }
        AstValue::Boolean(b) => CExpr::constant(Datum::Bool(*b), BOOL),
        AstValue::Null => CExpr::constant(Datum::Null, CType::Unknown),
        AstValue::Placeholder(p) => {
            let index = p
                .strip_prefix('$')
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&n| (1..=65535).contains(&n))
                .ok_or_else(|| {
                    SqlError::new(
                        sqlstate::SYNTAX_ERROR,
                        format!("a parameter is $1 to $65535, not {p}"),
                    )
                })?;
            if params.len() < index {
                params.resize(index, None);
            }
            CExpr::new(ExprKind::Param(index - 1), CType::Unknown)
        }
        other => return Err(SqlError::unsupported(format!("the literal {other}"))),
    })
}

/// Calls `f(level, column)` for every column reference in `e`, subqueries' outer reads
/// included.
pub(crate) fn visit_columns(e: &CExpr, f: &mut dyn FnMut(usize, usize)) {
    use ExprKind as K;
    match &e.kind {
        K::Column { level, index } => f(*level, *index),
        K::Const(_) | K::Param(_) | K::Window { .. } | K::SetValue { .. } => {}
        K::Not(a) | K::IsNull(a, _) | K::IsBool(a, ..) | K::Neg(a) | K::Cast(a) => {
            visit_columns(a, f)
        }
        K::And(a, b)
        | K::Or(a, b)
        | K::Compare(_, a, b)
        | K::Distinct(a, b, _)
        | K::Arith(_, a, b)
        | K::Concat(a, b, _)
        | K::Subscript(a, b)
        | K::AnyArray(a, _, b, _) => {
            visit_columns(a, f);
            visit_columns(b, f);
        }
        K::Regex { expr, pattern, .. } | K::Like { expr, pattern, .. } => {
            visit_columns(expr, f);
            visit_columns(pattern, f);
        }
        K::InList(a, items, _) => {
            visit_columns(a, f);
            items.iter().for_each(|i| visit_columns(i, f));
        }
        K::InSubquery(a, sub, _) => {
            visit_columns(a, f);
            sub.outer_reads.iter().for_each(|(l, i)| f(*l, *i));
        }
        K::Exists(sub) | K::ScalarSubquery(sub) | K::ArraySubquery(sub) => {
            sub.outer_reads.iter().for_each(|(l, i)| f(*l, *i));
        }
        K::Array(items) | K::Call(_, items) => items.iter().for_each(|i| visit_columns(i, f)),
        K::Case {
            operand,
            whens,
            otherwise,
        } => {
            operand.iter().for_each(|o| visit_columns(o, f));
            for (c, r) in whens {
                visit_columns(c, f);
                visit_columns(r, f);
            }
            otherwise.iter().for_each(|o| visit_columns(o, f));
        }
    }
}

/// PostgreSQL's 42P10 for more column names than a FROM item or a WITH query has
/// (`what`: `table "v"`, `WITH query "t"`).
pub(crate) fn too_many_names(what: &str, available: usize, specified: usize) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_COLUMN_REFERENCE,
        format!("{what} has {available} columns available but {specified} columns specified"),
    )
}

fn window_misplaced(message: &str) -> SqlError {
    SqlError::new(sqlstate::WINDOWING_ERROR, message)
}

/// Whether `e` calls an aggregate outside any subquery.
pub(crate) fn has_aggregate(e: &Expr) -> bool {
    struct Finder {
        depth: usize,
        found: bool,
    }
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            // A call with OVER is a window, not an aggregate (its arguments may hold one).
            if self.depth == 0
                && let Expr::Function(f) = e
                && f.over.is_none()
                && !matches!(f.args, FunctionArguments::Subquery(_))
                && AggFunc::by_name(&object_name(&f.name)).is_some()
            {
                self.found = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    let mut finder = Finder {
        depth: 0,
        found: false,
    };
    let _ = e.visit(&mut finder);
    finder.found
}

/// PostgreSQL's rule for `agg(DISTINCT x ORDER BY k)`: each key must be one of the
/// arguments (its rows are made distinct before they are sorted).
fn distinct_order_in_arguments(args: &[CExpr], order: &[SortKey]) -> SqlResult<()> {
    let listed: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    for key in order {
        if let SortBy::Expr(e) = &key.by
            && !listed.contains(&format!("{e:?}"))
        {
            return Err(SqlError::new(
                sqlstate::INVALID_COLUMN_REFERENCE,
                "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
            ));
        }
    }
    Ok(())
}
