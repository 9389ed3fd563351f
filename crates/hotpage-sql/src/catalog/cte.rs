//! WITH queries (common table expressions), planned where their WITH is and read by
//! name as FROM items. Each is computed once per run of the query that holds it (as
//! PostgreSQL's materialised CTEs are), so a WITH query that calls `nextval` gives
//! every reference the same rows.
//!
//! `WITH RECURSIVE`'s `base UNION [ALL] step` is PostgreSQL's working-table iteration:
//! the base's rows, then the step run on the rows the last round made, until a round
//! makes none (with UNION, rows already made do not count). A runaway recursion stops at
//! the memory bound (54000) or the statement timeout, as any long query does.

use super::compile::Compiler;
use super::plan::{self, Body, FromItem, JoinKind, QueryPlan};
use super::types::CType;
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::expr::fold;
use sqlparser::ast::{Query, SetExpr, SetOperator, SetQuantifier, With};

/// A planned WITH query.
#[derive(Debug)]
pub(crate) struct CtePlan {
    /// Its number in the statement: `FromItem::Cte` names it by this.
    pub id: usize,
    pub columns: Vec<(String, CType)>,
    pub body: CteBody,
}

/// A relation's columns: names and types, in order.
type Columns = Vec<(String, CType)>;

#[derive(Debug)]
pub(crate) enum CteBody {
    Plain(QueryPlan),
    /// `base UNION [ALL] step`, where `step` reads the rows the last round made.
    Recursive {
        base: QueryPlan,
        step: Box<QueryPlan>,
        all: bool,
    },
}

/// What naming a WITH query means at the point being planned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum CteState {
    /// Planned: its rows may be read anywhere in its scope.
    Ready,
    /// Its own non-recursive term is being planned.
    InBase,
    /// Its recursive term, whose SELECT is at `level`, is being planned; `refs` so far.
    InStep { level: usize, refs: usize },
    /// A recursive WITH query not of the form `base UNION [ALL] step` is being planned.
    NotUnion,
    /// A recursive `base UNION [ALL] step` with its own ORDER BY or LIMIT is being planned.
    Ordered,
}

/// A WITH query's name in scope.
pub(crate) struct CteName {
    pub name: String,
    pub id: usize,
    pub columns: Vec<(String, CType)>,
    /// What its query read of the levels enclosing its WITH: a reference reads the same.
    pub outer_reads: Vec<(usize, usize)>,
    pub state: CteState,
}

/// Plans a WITH clause's queries, in order, and brings their names into scope (the
/// caller drops them after the query that holds the WITH).
pub(crate) fn plan_with(c: &mut Compiler, with: &With) -> SqlResult<Vec<CtePlan>> {
    let first = c.ctes.len();
    let mut plans = Vec::new();
    for cte in &with.cte_tables {
        let name = fold(&cte.alias.name);
        if c.ctes[first..].iter().any(|n| n.name == name) {
            return Err(SqlError::new(
                sqlstate::DUPLICATE_ALIAS,
                format!("WITH query name \"{name}\" specified more than once"),
            ));
        }
        if cte.from.is_some() {
            return Err(SqlError::unsupported("WITH … FROM"));
        }
        let renamed: Vec<String> = cte.alias.columns.iter().map(|c| fold(&c.name)).collect();
        let id = c.next_cte;
        c.next_cte += 1;
        let level = c.depth();
        let mark = c.reads_mark();
        let (body, columns) = if with.recursive {
            plan_recursive(c, &name, id, &cte.query, &renamed)?
        } else {
            let query = plan::plan_query(c, &cte.query)?;
            let columns = renamed_columns(&name, &query.columns, &renamed)?;
            (CteBody::Plain(query), columns)
        };
        let outer_reads = c.reads_since(mark, level);
        c.ctes.push(CteName {
            name,
            id,
            columns: columns.clone(),
            outer_reads,
            state: CteState::Ready,
        });
        plans.push(CtePlan { id, columns, body });
    }
    Ok(plans)
}

/// The FROM item a name stands for when it is a WITH query's in scope (innermost first),
/// with PostgreSQL's errors for the places a recursive query may not name itself.
pub(crate) fn reference(c: &mut Compiler, name: &str) -> SqlResult<Option<(FromItem, Columns)>> {
    let current = c.current_level();
    let Some(entry) = c.ctes.iter_mut().rev().find(|n| n.name == name) else {
        return Ok(None);
    };
    let misplaced = |place: &str| {
        Err(SqlError::new(
            sqlstate::INVALID_RECURSION,
            format!("recursive reference to query \"{name}\" must not appear {place}"),
        ))
    };
    match &mut entry.state {
        CteState::Ready => {}
        CteState::InBase => return misplaced("within its non-recursive term"),
        CteState::NotUnion => return Err(not_recursive_form(name)),
        CteState::Ordered => {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "ORDER BY or LIMIT in a recursive query is not implemented",
            ));
        }
        CteState::InStep { level, .. } if *level != current => {
            return misplaced("within a subquery");
        }
        CteState::InStep { refs, .. } if *refs > 0 => return misplaced("more than once"),
        CteState::InStep { refs, .. } => *refs += 1,
    }
    let (id, columns, reads) = (entry.id, entry.columns.clone(), entry.outer_reads.clone());
    c.note_reads(&reads);
    let item = FromItem::Cte {
        id,
        width: columns.len(),
    };
    Ok(Some((item, columns)))
}

fn not_recursive_form(name: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_RECURSION,
        format!(
            "recursive query \"{name}\" does not have the form non-recursive-term UNION [ALL] recursive-term"
        ),
    )
}

/// A query's output columns under a WITH query's column list (`WITH t(a, b) AS …`).
fn renamed_columns(
    name: &str,
    columns: &[(String, CType)],
    renamed: &[String],
) -> SqlResult<Vec<(String, CType)>> {
    if renamed.len() > columns.len() {
        let what = format!("WITH query \"{name}\"");
        return Err(super::compile::too_many_names(
            &what,
            columns.len(),
            renamed.len(),
        ));
    }
    Ok(columns
        .iter()
        .enumerate()
        .map(|(i, (n, ty))| (renamed.get(i).cloned().unwrap_or_else(|| n.clone()), *ty))
        .collect())
}

/// Runs `plan` with `name` in scope in `state`, and gives back the state it ended in.
fn with_name<T>(
    c: &mut Compiler,
    name: &CteName,
    plan: impl FnOnce(&mut Compiler) -> SqlResult<T>,
) -> SqlResult<(T, CteState)> {
    c.ctes.push(CteName {
        name: name.name.clone(),
        id: name.id,
        columns: name.columns.clone(),
        outer_reads: Vec::new(),
        state: name.state,
    });
    let planned = plan(c);
    let state = c.ctes.pop().map_or(CteState::Ready, |n| n.state);
    Ok((planned?, state))
}

/// A `WITH RECURSIVE` query: `base UNION [ALL] step` where the step names the query
/// once, or any query that does not name itself.
fn plan_recursive(
    c: &mut Compiler,
    name: &str,
    id: usize,
    query: &Query,
    renamed: &[String],
) -> SqlResult<(CteBody, Vec<(String, CType)>)> {
    let entry = |state, columns| CteName {
        name: name.to_string(),
        id,
        columns,
        outer_reads: Vec::new(),
        state,
    };
    let (
        SetExpr::SetOperation {
            op: SetOperator::Union,
            set_quantifier,
            left,
            right,
        },
        None,
        None,
        None,
        None,
    ) = (
        query.body.as_ref(),
        &query.with,
        &query.order_by,
        &query.limit_clause,
        &query.fetch,
    )
    else {
        let ordered = matches!(
            query.body.as_ref(),
            SetExpr::SetOperation {
                op: SetOperator::Union,
                ..
            }
        ) && query.with.is_none();
        let state = if ordered {
            CteState::Ordered
        } else {
            CteState::NotUnion
        };
        let (plan, _) = with_name(c, &entry(state, Vec::new()), |c| plan::plan_query(c, query))?;
        let columns = renamed_columns(name, &plan.columns, renamed)?;
        return Ok((CteBody::Plain(plan), columns));
    };
    let side = |body: &SetExpr| Query {
        body: Box::new(body.clone()),
        ..query.clone()
    };
    let (base, _) = with_name(c, &entry(CteState::InBase, Vec::new()), |c| {
        plan::plan_query(c, &side(left))
    })?;
    let columns = renamed_columns(name, &base.columns, renamed)?;
    let in_step = CteState::InStep {
        level: c.depth(),
        refs: 0,
    };
    let (step, state) = with_name(c, &entry(in_step, columns.clone()), |c| {
        plan::plan_query(c, &side(right))
    })?;
    let all = matches!(set_quantifier, SetQuantifier::All);
    if state == in_step {
        // A plain UNION that never names its own query.
        let (body, union_columns) = plan::set_operation(SetOperator::Union, all, base, step)?;
        let columns = renamed_columns(name, &union_columns, renamed)?;
        let plan = QueryPlan {
            body,
            order: Vec::new(),
            limit: None,
            offset: None,
            columns: union_columns,
            ctes: Vec::new(),
        };
        return Ok((CteBody::Plain(plan), columns));
    }
    check_step(name, id, &columns, &step)?;
    Ok((
        CteBody::Recursive {
            base,
            step: Box::new(step),
            all,
        },
        columns,
    ))
}

/// PostgreSQL's rules for a recursive term: the base's column count and types, no
/// aggregate, and no reference on the side of an outer join that may be all NULLs.
fn check_step(
    name: &str,
    id: usize,
    columns: &[(String, CType)],
    step: &QueryPlan,
) -> SqlResult<()> {
    if step.columns.len() != columns.len() {
        return Err(SqlError::new(
            sqlstate::SYNTAX_ERROR,
            "each UNION query must have the same number of columns",
        ));
    }
    let select = match &step.body {
        Body::Select(select) => Some(select),
        Body::SetOp { .. } | Body::Values { .. } => None,
    };
    // GROUP BY alone is allowed, as in PostgreSQL; an aggregate is not.
    if select.is_some_and(|s| s.grouping.as_ref().is_some_and(|g| !g.aggs.is_empty())) {
        return Err(SqlError::new(
            sqlstate::INVALID_RECURSION,
            "aggregate functions are not allowed in a recursive query's recursive term",
        ));
    }
    for (i, ((_, base), (_, stepped))) in columns.iter().zip(&step.columns).enumerate() {
        let overall = plan::set_column_type("UNION", *base, *stepped)?;
        if overall != *base {
            return Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!(
                    "recursive query \"{name}\" column {} has type {} in non-recursive term but type {} overall",
                    i + 1,
                    base.name(),
                    overall.name()
                ),
            )
            .with_hint("Cast the output of the non-recursive term to the correct type."));
        }
    }
    let from = select.map_or(&[][..], |s| &s.from[..]);
    if from.iter().any(|s| nullable_reference(&s.item, id, false)) {
        return Err(SqlError::new(
            sqlstate::INVALID_RECURSION,
            format!("recursive reference to query \"{name}\" must not appear within an outer join"),
        ));
    }
    Ok(())
}

/// Whether WITH query `id` is read on a side of an outer join that may be all NULLs
/// (`nullable`: the item is on such a side).
fn nullable_reference(item: &FromItem, id: usize, nullable: bool) -> bool {
    match item {
        FromItem::Cte { id: read, .. } => nullable && *read == id,
        FromItem::Join {
            left, right, kind, ..
        } => {
            let (left_nullable, right_nullable) = match kind {
                JoinKind::Inner => (false, false),
                JoinKind::Left => (false, true),
                JoinKind::Right => (true, false),
                JoinKind::Full => (true, true),
            };
            nullable_reference(left, id, nullable || left_nullable)
                || nullable_reference(right, id, nullable || right_nullable)
        }
        _ => false,
    }
}
