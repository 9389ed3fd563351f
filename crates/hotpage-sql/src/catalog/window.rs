//! Window functions in the general engine: `row_number()`, `rank()`, `dense_rank()` and
//! the aggregates (`count`, `sum`, `avg`, `min`, `max`, …) `OVER ([PARTITION BY …]
//! [ORDER BY …])`, with PostgreSQL's default frame: the whole partition without ORDER BY;
//! with it, the partition's rows up to the current row and its peers (rows equal on
//! the ORDER BY keys). Explicit frames and named windows are 0A000.
//!
//! A SELECT computes its windows after WHERE and GROUP BY/HAVING and before DISTINCT,
//! ORDER BY and LIMIT, as PostgreSQL does: each row's inputs (arguments, partition and
//! order keys) are evaluated, the rows are put in each window's order, and the values are
//! appended to the rows, where `ExprKind::Window` reads them.

use super::compile::Compiler;
use super::exec::Accumulator;
use super::expr::{AggFunc, AggSpec, CExpr};
use super::types::{CType, Datum, INT8};
use crate::error::{SqlError, SqlResult, sqlstate};
use sqlparser::ast::{DuplicateTreatment, Function, FunctionArguments, OrderBySort, WindowType};
use std::cmp::Ordering;

/// What a window call computes.
#[derive(Debug)]
pub(crate) enum WindowFunc {
    RowNumber,
    /// The position of the row's first peer (gaps after ties).
    Rank,
    /// The number of peer groups so far (no gaps).
    DenseRank,
    /// An aggregate over the frame.
    Aggregate(AggSpec),
}

/// One ORDER BY key of a window.
#[derive(Debug)]
pub(crate) struct WindowKey {
    pub expr: CExpr,
    pub desc: bool,
    pub nulls_first: bool,
}

/// One window call of a SELECT.
#[derive(Debug)]
pub(crate) struct WindowSpec {
    pub func: WindowFunc,
    pub partition: Vec<CExpr>,
    pub order: Vec<WindowKey>,
}

impl WindowSpec {
    /// Calls `f` on every expression the window evaluates.
    pub fn walk(&self, f: &mut dyn FnMut(&CExpr)) {
        if let WindowFunc::Aggregate(agg) = &self.func {
            agg.args.iter().for_each(|e| e.walk(f));
        }
        self.partition.iter().for_each(|e| e.walk(f));
        self.order.iter().for_each(|k| k.expr.walk(f));
    }
}

/// Compiles call `name` with OVER (the caller checked it may be here): its function,
/// partition and order keys, and its type.
pub(super) fn compile(
    c: &mut Compiler,
    name: &str,
    f: &Function,
) -> SqlResult<(WindowSpec, CType)> {
    let Some(WindowType::WindowSpec(over)) = &f.over else {
        return Err(SqlError::unsupported("a window named in OVER"));
    };
    if over.window_name.is_some() {
        return Err(SqlError::unsupported("a window named in OVER"));
    }
    if over.window_frame.is_some() {
        return Err(SqlError::unsupported("a window frame (ROWS, RANGE or GROUPS)")
            .with_hint("Without a frame, a window with ORDER BY reads the partition up to the current row and its peers; without ORDER BY, the whole partition."));
    }
    let partition = over
        .partition_by
        .iter()
        .map(|e| c.expr(e))
        .collect::<SqlResult<_>>()?;
    let order = over
        .order_by
        .iter()
        .map(|o| {
            let desc = matches!(o.options.sort, Some(OrderBySort::Desc));
            Ok(WindowKey {
                expr: c.expr(&o.expr)?,
                desc,
                nulls_first: o.options.nulls_first.unwrap_or(desc),
            })
        })
        .collect::<SqlResult<_>>()?;
    let (func, ty) = match name {
        "row_number" | "rank" | "dense_rank" => {
            if !matches!(&f.args, FunctionArguments::List(l) if l.args.is_empty())
                && !matches!(f.args, FunctionArguments::None)
            {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    format!("function {name} with arguments does not exist"),
                ));
            }
            let func = match name {
                "row_number" => WindowFunc::RowNumber,
                "rank" => WindowFunc::Rank,
                _ => WindowFunc::DenseRank,
            };
            (func, INT8)
        }
        _ => window_aggregate(c, name, f)?,
    };
    let spec = WindowSpec {
        func,
        partition,
        order,
    };
    Ok((spec, ty))
}

/// An aggregate over a window frame, or PostgreSQL's error for a function that is
/// neither (42809) or a window function hotpage lacks (0A000).
fn window_aggregate(c: &mut Compiler, name: &str, f: &Function) -> SqlResult<(WindowFunc, CType)> {
    let Some(agg) = AggFunc::by_name(name) else {
        if matches!(
            name,
            "lag"
                | "lead"
                | "ntile"
                | "first_value"
                | "last_value"
                | "nth_value"
                | "percent_rank"
                | "cume_dist"
        ) {
            return Err(SqlError::unsupported(format!(
                "the window function {name}()"
            )));
        }
        // PostgreSQL's aggregates that hotpage lacks as window functions.
        if matches!(
            name,
            "stddev"
                | "stddev_pop"
                | "stddev_samp"
                | "variance"
                | "var_pop"
                | "var_samp"
                | "bit_and"
                | "bit_or"
                | "bit_xor"
                | "json_agg"
                | "jsonb_agg"
                | "json_object_agg"
                | "jsonb_object_agg"
                | "corr"
                | "covar_pop"
                | "covar_samp"
                | "regr_slope"
                | "regr_intercept"
        ) {
            return Err(SqlError::unsupported(format!(
                "{name}() as a window function"
            )));
        }
        return Err(SqlError::new(
            sqlstate::WRONG_OBJECT_TYPE,
            format!(
                "OVER specified, but {name} is not a window function nor an aggregate function"
            ),
        ));
    };
    if matches!(&f.args, FunctionArguments::List(l) if l.duplicate_treatment == Some(DuplicateTreatment::Distinct))
    {
        return Err(SqlError::unsupported("DISTINCT in a window function"));
    }
    let spec = c.aggregate_spec(agg, name, f)?;
    let ty = spec.ty;
    Ok((WindowFunc::Aggregate(spec), ty))
}

/// One row's inputs to a window: its partition key, order key and aggregate arguments.
pub(crate) struct WindowInput {
    pub partition: Vec<Datum>,
    pub order: Vec<Datum>,
    pub args: Vec<Datum>,
}

/// The window's value for each row, in the rows' own order.
pub(crate) fn window_values(spec: &WindowSpec, inputs: &[WindowInput]) -> SqlResult<Vec<Datum>> {
    let mut sorted: Vec<usize> = (0..inputs.len()).collect();
    // Stable: rows equal on every key keep the order they came in, as PostgreSQL's sort
    // of equal rows is unspecified anyway.
    sorted.sort_by(|&a, &b| {
        keys_cmp(&inputs[a].partition, &inputs[b].partition, None)
            .then_with(|| keys_cmp(&inputs[a].order, &inputs[b].order, Some(&spec.order)))
    });
    let mut values = vec![Datum::Null; inputs.len()];
    let mut start = 0;
    while start < sorted.len() {
        let first = &inputs[sorted[start]].partition;
        let end = start
            + sorted[start..]
                .iter()
                .take_while(|&&i| keys_cmp(&inputs[i].partition, first, None) == Ordering::Equal)
                .count();
        partition_values(spec, inputs, &sorted[start..end], &mut values)?;
        start = end;
    }
    Ok(values)
}

/// Fills `values` for one partition's rows, given in the window's order.
fn partition_values(
    spec: &WindowSpec,
    inputs: &[WindowInput],
    rows: &[usize],
    values: &mut [Datum],
) -> SqlResult<()> {
    let mut accumulator = match &spec.func {
        WindowFunc::Aggregate(agg) => Some((agg, Accumulator::new(agg))),
        _ => None,
    };
    if spec.order.is_empty()
        && let Some((agg, acc)) = accumulator.as_mut()
    {
        // No ORDER BY: every row's frame is the whole partition.
        for &i in rows {
            acc.add(agg, inputs[i].args.clone())?;
        }
        let whole = acc.clone().finish(agg)?;
        rows.iter().for_each(|&i| values[i] = whole.clone());
        return Ok(());
    }
    let (mut peer_start, mut groups) = (0, 0);
    while peer_start < rows.len() {
        let key = &inputs[rows[peer_start]].order;
        let peer_end = peer_start
            + rows[peer_start..]
                .iter()
                .take_while(|&&i| {
                    keys_cmp(&inputs[i].order, key, Some(&spec.order)) == Ordering::Equal
                })
                .count();
        groups += 1;
        let peers = &rows[peer_start..peer_end];
        let frame_value = match accumulator.as_mut() {
            Some((agg, acc)) => {
                for &i in peers {
                    acc.add(agg, inputs[i].args.clone())?;
                }
                Some(acc.clone().finish(agg)?)
            }
            None => None,
        };
        for (offset, &i) in peers.iter().enumerate() {
            values[i] = match (&spec.func, &frame_value) {
                (WindowFunc::RowNumber, _) => Datum::Int((peer_start + offset + 1) as i64),
                (WindowFunc::Rank, _) => Datum::Int((peer_start + 1) as i64),
                (WindowFunc::DenseRank, _) => Datum::Int(groups),
                (WindowFunc::Aggregate(_), value) => value.clone().unwrap_or(Datum::Null),
            };
        }
        peer_start = peer_end;
    }
    Ok(())
}

/// Compares two rows' keys: partition keys ascending (only equality matters), order keys
/// by their directions, NULLs last ascending and first descending unless told.
fn keys_cmp(a: &[Datum], b: &[Datum], order: Option<&[WindowKey]>) -> Ordering {
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        let (desc, nulls_first) = order
            .and_then(|o| o.get(k))
            .map_or((false, false), |key| (key.desc, key.nulls_first));
        let ordering =
            crate::select::order_by_key((x.is_null(), y.is_null()), nulls_first, desc, || {
                x.order_cmp(y)
            });
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}
