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

//! Window functions in the general engine, as PostgreSQL has them:
//! - ranking: `row_number()`, `rank()`, `dense_rank()`, `percent_rank()`, `cume_dist()`,
//!   `ntile(n)`;
//! - values of other rows: `lag`/`lead(value [, offset [, default]])` (by position in the
//!   partition), `first_value`, `last_value`, `nth_value(value, n)` (in the frame);
//! - the aggregates (`count`, `sum`, `avg`, `min`, `max`, …) over the frame.
//!
//! `OVER ([PARTITION BY …] [ORDER BY …] [frame])`. The frame is PostgreSQL's default
//! unless given: the whole partition without ORDER BY; with it, the partition's rows up to
//! the current row and its peers (rows equal on the ORDER BY keys). A written frame may be
//! `ROWS` with `UNBOUNDED PRECEDING`, `n PRECEDING`, `CURRENT ROW`, `n FOLLOWING` and
//! `UNBOUNDED FOLLOWING`, or `RANGE` with those but the offsets. `RANGE` with an offset,
//! `GROUPS` and named windows are 0A000 (`EXCLUDE` does not parse).
//!
//! A SELECT computes its windows after WHERE and GROUP BY/HAVING and before DISTINCT,
//! ORDER BY and LIMIT, as PostgreSQL does: each row's inputs (arguments, partition and
//! order keys) are evaluated, the rows are put in each window's order, and the values are
//! appended to the rows, where `ExprKind::Window` reads them.

use super::compile::Compiler;
use super::exec::Accumulator;
use super::expr::{AggFunc, AggSpec, CExpr, ExprKind};
use super::functions::cast_to_common;
use super::types::{CType, Datum, FLOAT8, INT2, INT4, INT8};
use crate::error::{SqlError, SqlResult, sqlstate};
use sqlparser::ast::{
    DuplicateTreatment, Expr, Function, FunctionArguments, Ident, NamedWindowDefinition,
    NamedWindowExpr, WindowFrame, WindowFrameBound, WindowFrameUnits, WindowSpec as AstWindowSpec,
    WindowType,
};
use std::cmp::Ordering;

/// What a window call computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WindowFunc {
    RowNumber,
    /// The position of the row's first peer (gaps after ties).
    Rank,
    /// The number of peer groups so far (no gaps).
    DenseRank,
    /// `(rank - 1) / (partition rows - 1)`, 0 for a partition of one row.
    PercentRank,
    /// The share of the partition's rows up to the row's last peer.
    CumeDist,
    /// `ntile(n)`: the bucket 1..n of the partition cut into n near-equal runs.
    Ntile,
    /// `lag` (`back`) or `lead`: the value `offset` rows away in the partition.
    Shift {
        back: bool,
    },
    /// The value at the frame's first row, last row, or `n`th row.
    FirstValue,
    LastValue,
    NthValue,
    /// An aggregate over the frame (its spec is the window's `aggregate`).
    Aggregate,
}

/// One end of a window frame; the offsets are expressions when compiled and row counts
/// when the query runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameBound<T> {
    UnboundedPreceding,
    Preceding(T),
    CurrentRow,
    Following(T),
    UnboundedFollowing,
}

impl<T> FrameBound<T> {
    fn offset(&self) -> Option<&T> {
        match self {
            FrameBound::Preceding(t) | FrameBound::Following(t) => Some(t),
            _ => None,
        }
    }

    fn try_map<U>(&self, f: impl FnOnce(&T) -> SqlResult<U>) -> SqlResult<FrameBound<U>> {
        Ok(match self {
            FrameBound::UnboundedPreceding => FrameBound::UnboundedPreceding,
            FrameBound::Preceding(t) => FrameBound::Preceding(f(t)?),
            FrameBound::CurrentRow => FrameBound::CurrentRow,
            FrameBound::Following(t) => FrameBound::Following(f(t)?),
            FrameBound::UnboundedFollowing => FrameBound::UnboundedFollowing,
        })
    }
}

/// A window's frame: `ROWS` (by position) or `RANGE` (by peer group), start and end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame<T> {
    pub rows: bool,
    pub start: FrameBound<T>,
    pub end: FrameBound<T>,
}

impl Frame<CExpr> {
    /// PostgreSQL's default: `RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW`.
    fn default_frame() -> Self {
        Frame {
            rows: false,
            start: FrameBound::UnboundedPreceding,
            end: FrameBound::CurrentRow,
        }
    }

    /// The frame with its offsets evaluated (`eval` runs a constant expression): NULL is
    /// 22004 and a negative count 22013, as in PostgreSQL.
    pub fn resolve(
        &self,
        eval: &mut dyn FnMut(&CExpr) -> SqlResult<Datum>,
    ) -> SqlResult<Frame<u64>> {
        let mut count = |e: &CExpr, which: &str| match eval(e)? {
            Datum::Int(n) if n >= 0 => Ok(n as u64),
            Datum::Null => Err(SqlError::new(
                sqlstate::NULL_VALUE_NOT_ALLOWED,
                format!("frame {which} offset must not be null"),
            )),
            _ => Err(SqlError::new(
                sqlstate::INVALID_PRECEDING_OR_FOLLOWING_SIZE,
                format!("frame {which} offset must not be negative"),
            )),
        };
        Ok(Frame {
            rows: self.rows,
            start: self.start.try_map(|e| count(e, "starting"))?,
            end: self.end.try_map(|e| count(e, "ending"))?,
        })
    }
}

impl Frame<u64> {
    /// The frame of the row at `at` of a partition of `len` rows, whose peers are
    /// `peers`: positions `start..end`, empty when `start >= end`.
    fn bounds(&self, at: usize, peers: (usize, usize), len: usize) -> (usize, usize) {
        let step = |k: u64| usize::try_from(k).unwrap_or(usize::MAX);
        let start = match self.start {
            FrameBound::UnboundedPreceding => 0,
            FrameBound::Preceding(k) => at.saturating_sub(step(k)),
            FrameBound::CurrentRow if self.rows => at,
            FrameBound::CurrentRow => peers.0,
            FrameBound::Following(k) => at.saturating_add(step(k)),
            FrameBound::UnboundedFollowing => len,
        };
        let end = match self.end {
            FrameBound::UnboundedPreceding => 0,
            FrameBound::Preceding(k) => (at + 1).saturating_sub(step(k)),
            FrameBound::CurrentRow if self.rows => at + 1,
            FrameBound::CurrentRow => peers.1,
            FrameBound::Following(k) => at.saturating_add(step(k)).saturating_add(1),
            FrameBound::UnboundedFollowing => len,
        };
        (start.min(len), end.min(len))
    }
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
    /// The aggregate, for `WindowFunc::Aggregate`.
    pub aggregate: Option<AggSpec>,
    /// Another function's arguments (an aggregate's are in its spec).
    pub args: Vec<CExpr>,
    pub partition: Vec<CExpr>,
    pub order: Vec<WindowKey>,
    pub frame: Frame<CExpr>,
}

impl WindowSpec {
    /// The expressions evaluated for each row as the function's arguments.
    pub fn arguments(&self) -> &[CExpr] {
        match &self.aggregate {
            Some(agg) => &agg.args,
            None => &self.args,
        }
    }

    /// Calls `f` on every expression the window evaluates.
    pub fn walk(&self, f: &mut dyn FnMut(&CExpr)) {
        match &self.aggregate {
            Some(agg) => agg.walk(f),
            None => self.args.iter().for_each(|e| e.walk(f)),
        }
        self.partition.iter().for_each(|e| e.walk(f));
        self.order.iter().for_each(|k| k.expr.walk(f));
        let offsets = [self.frame.start.offset(), self.frame.end.offset()];
        offsets.into_iter().flatten().for_each(|e| e.walk(f));
    }
}

/// Compiles call `name` with OVER (the caller checked it may be here): its function,
/// partition and order keys, frame, and its type.
pub(super) fn compile(
    c: &mut Compiler,
    name: &str,
    f: &Function,
) -> SqlResult<(WindowSpec, CType)> {
    let over = match &f.over {
        Some(WindowType::NamedWindow(name)) => named(c.named_windows(), name)?.clone(),
        Some(WindowType::WindowSpec(spec)) => copied(c.named_windows(), spec)?,
        None => return Err(SqlError::internal("a window call without OVER")),
    };
    if f.null_treatment.is_some() {
        return Err(SqlError::unsupported("IGNORE NULLS or RESPECT NULLS"));
    }
    let partition = over
        .partition_by
        .iter()
        .map(|e| c.expr(e))
        .collect::<SqlResult<_>>()?;
    let order: Vec<WindowKey> = over
        .order_by
        .iter()
        .map(|o| {
            let desc = crate::expr::sort_is_desc(o.options.sort.as_ref())?;
            Ok(WindowKey {
                expr: c.expr(&o.expr)?,
                desc,
                nulls_first: o.options.nulls_first.unwrap_or(desc),
            })
        })
        .collect::<SqlResult<_>>()?;
    let frame = match &over.window_frame {
        Some(frame) => compile_frame(c, frame, order.len())?,
        None => Frame::default_frame(),
    };
    let (func, aggregate, args, ty) = match window_function(c, name, f)? {
        Some((func, args, ty)) => (func, None, args, ty),
        None => {
            let (agg, ty) = window_aggregate(c, name, f)?;
            (WindowFunc::Aggregate, Some(agg), Vec::new(), ty)
        }
    };
    let spec = WindowSpec {
        func,
        aggregate,
        args,
        partition,
        order,
        frame,
    };
    Ok((spec, ty))
}

/// A SELECT's `WINDOW name AS (…)` definitions, each resolved against those before it
/// (PostgreSQL's rules: a name is defined once, and refers only to an earlier window).
pub(super) fn define_windows(
    definitions: &[NamedWindowDefinition],
) -> SqlResult<Vec<(String, AstWindowSpec)>> {
    let mut defined: Vec<(String, AstWindowSpec)> = Vec::with_capacity(definitions.len());
    for NamedWindowDefinition(name, expr) in definitions {
        let key = window_key(name);
        if defined.iter().any(|(k, _)| *k == key) {
            return Err(SqlError::new(
                sqlstate::WINDOWING_ERROR,
                format!("window \"{key}\" is already defined"),
            ));
        }
        let spec = match expr {
            NamedWindowExpr::NamedWindow(base) => named(&defined, base)?.clone(),
            NamedWindowExpr::WindowSpec(spec) => copied(&defined, spec)?,
        };
        defined.push((key, spec));
    }
    Ok(defined)
}

/// A window's name as PostgreSQL folds it: unquoted names in lower case.
fn window_key(name: &Ident) -> String {
    match name.quote_style {
        Some(_) => name.value.clone(),
        None => name.value.to_lowercase(),
    }
}

/// The window defined as `name` (42704 when there is none).
fn named<'a>(defined: &'a [(String, AstWindowSpec)], name: &Ident) -> SqlResult<&'a AstWindowSpec> {
    let key = window_key(name);
    defined
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, spec)| spec)
        .ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_OBJECT,
                format!("window \"{key}\" does not exist"),
            )
        })
}

/// `spec` with the window it names (`OVER (w ORDER BY …)`) copied in: the named window's
/// PARTITION BY and ORDER BY, which `spec` may not override (an ORDER BY only where the
/// named one has none), and `spec`'s own frame; a named window with a frame cannot be
/// copied (42P20, as in PostgreSQL).
fn copied(defined: &[(String, AstWindowSpec)], spec: &AstWindowSpec) -> SqlResult<AstWindowSpec> {
    let Some(base_name) = &spec.window_name else {
        return Ok(spec.clone());
    };
    let base = named(defined, base_name)?;
    let key = window_key(base_name);
    let refuse = |message: String| Err(SqlError::new(sqlstate::WINDOWING_ERROR, message));
    if !spec.partition_by.is_empty() {
        return refuse(format!(
            "cannot override PARTITION BY clause of window \"{key}\""
        ));
    }
    if !spec.order_by.is_empty() && !base.order_by.is_empty() {
        return refuse(format!(
            "cannot override ORDER BY clause of window \"{key}\""
        ));
    }
    if base.window_frame.is_some() {
        return refuse(format!(
            "cannot copy window \"{key}\" because it has a frame clause"
        ));
    }
    Ok(AstWindowSpec {
        window_name: None,
        partition_by: base.partition_by.clone(),
        order_by: if spec.order_by.is_empty() {
            base.order_by.clone()
        } else {
            spec.order_by.clone()
        },
        window_frame: spec.window_frame.clone(),
    })
}

/// A written frame, with PostgreSQL's errors for the impossible ones (42P20).
fn compile_frame(
    c: &mut Compiler,
    frame: &WindowFrame,
    order_keys: usize,
) -> SqlResult<Frame<CExpr>> {
    let misplaced = |message: &str| SqlError::new(sqlstate::WINDOWING_ERROR, message.to_string());
    let rows = match frame.units {
        WindowFrameUnits::Rows => true,
        WindowFrameUnits::Range => false,
        WindowFrameUnits::Groups => {
            return Err(SqlError::unsupported("a GROUPS window frame")
                .with_hint("ROWS frames and RANGE frames without an offset work."));
        }
    };
    let with_offset = [Some(&frame.start_bound), frame.end_bound.as_ref()]
        .into_iter()
        .flatten()
        .any(|b| {
            matches!(
                b,
                WindowFrameBound::Preceding(Some(_)) | WindowFrameBound::Following(Some(_))
            )
        });
    if !rows && with_offset {
        if order_keys != 1 {
            return Err(misplaced(
                "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
            ));
        }
        return Err(
            SqlError::unsupported("RANGE with an offset PRECEDING or FOLLOWING")
                .with_hint("ROWS frames with offsets work, and RANGE frames without one."),
        );
    }
    let start = frame_bound(c, &frame.start_bound)?;
    let end = match &frame.end_bound {
        Some(end) => frame_bound(c, end)?,
        None => FrameBound::CurrentRow,
    };
    use FrameBound as B;
    match (&start, &end, frame.end_bound.is_some()) {
        (B::UnboundedFollowing, _, _) => {
            Err(misplaced("frame start cannot be UNBOUNDED FOLLOWING"))
        }
        (B::Following(_), _, false) => Err(misplaced(
            "frame starting from following row cannot end with current row",
        )),
        (_, B::UnboundedPreceding, _) => Err(misplaced("frame end cannot be UNBOUNDED PRECEDING")),
        (B::CurrentRow, B::Preceding(_), _) => Err(misplaced(
            "frame starting from current row cannot have preceding rows",
        )),
        (B::Following(_), B::Preceding(_) | B::CurrentRow, _) => Err(misplaced(
            "frame starting from following row cannot have preceding rows",
        )),
        _ => Ok(Frame { rows, start, end }),
    }
}

/// One end of a written frame; an offset is a bigint without column references
/// (PostgreSQL's 42804 and 42P10), evaluated once when the query runs.
fn frame_bound(c: &mut Compiler, bound: &WindowFrameBound) -> SqlResult<FrameBound<CExpr>> {
    let offset = |c: &mut Compiler, e: &Expr| -> SqlResult<CExpr> {
        // sqlparser reads a quoted offset (`ROWS '2' PRECEDING`) as an interval literal.
        let e = match e {
            Expr::Interval(interval)
                if interval.leading_field.is_none()
                    && interval.last_field.is_none()
                    && interval.leading_precision.is_none()
                    && interval.fractional_seconds_precision.is_none() =>
            {
                interval.value.as_ref()
            }
            other => other,
        };
        let offset = c.expr(e)?;
        let number = matches!(offset.ty, CType::Unknown)
            || matches!(offset.ty, CType::Sql(t) if t.is_integer() || t.is_numeric() || t.is_float());
        if !number {
            return Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!(
                    "argument of ROWS must be type bigint, not type {}",
                    offset.ty.name()
                ),
            ));
        }
        // This query's columns or an outer one's; a subquery may read its own.
        let level = c.current_level();
        let mut reads_columns = false;
        offset.walk(&mut |node| {
            reads_columns |= matches!(node.kind, ExprKind::Column { level: l, .. } if l <= level)
        });
        if reads_columns {
            return Err(SqlError::new(
                sqlstate::INVALID_COLUMN_REFERENCE,
                "argument of ROWS must not contain variables",
            ));
        }
        Ok(offset.cast_to(INT8))
    };
    Ok(match bound {
        WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
        WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
        WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
        WindowFrameBound::Preceding(Some(e)) => FrameBound::Preceding(offset(c, e)?),
        WindowFrameBound::Following(Some(e)) => FrameBound::Following(offset(c, e)?),
    })
}

/// A window function that is not an aggregate: its arguments, typed as PostgreSQL types
/// them, and its result type; None for any other name.
fn window_function(
    c: &mut Compiler,
    name: &str,
    f: &Function,
) -> SqlResult<Option<(WindowFunc, Vec<CExpr>, CType)>> {
    use WindowFunc as W;
    let (func, arity) = match name {
        "row_number" => (W::RowNumber, 0..=0),
        "rank" => (W::Rank, 0..=0),
        "dense_rank" => (W::DenseRank, 0..=0),
        "percent_rank" => (W::PercentRank, 0..=0),
        "cume_dist" => (W::CumeDist, 0..=0),
        "ntile" => (W::Ntile, 1..=1),
        "lag" => (W::Shift { back: true }, 1..=3),
        "lead" => (W::Shift { back: false }, 1..=3),
        "first_value" => (W::FirstValue, 1..=1),
        "last_value" => (W::LastValue, 1..=1),
        "nth_value" => (W::NthValue, 2..=2),
        _ => return Ok(None),
    };
    if matches!(&f.args, FunctionArguments::List(l) if l.duplicate_treatment.is_some()) {
        return Err(SqlError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            "DISTINCT is not implemented for window functions",
        ));
    }
    let args = c.arguments(f)?;
    let no_such = |args: &[CExpr]| {
        let types: Vec<String> = args.iter().map(|a| a.ty.name()).collect();
        SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!("function {name}({}) does not exist", types.join(", ")),
        )
        .with_hint("No function matches the given name and argument types. You might need to add explicit type casts.")
    };
    if !arity.contains(&args.len()) {
        return Err(no_such(&args));
    }
    // ntile's count, lag/lead's offset and nth_value's n are integers.
    let count_at = match func {
        W::Ntile => Some(0),
        W::Shift { .. } | W::NthValue => Some(1),
        _ => None,
    };
    if let Some(at) = count_at
        && let Some(count) = args.get(at)
        && !matches!(count.ty, CType::Unknown | INT2 | INT4)
    {
        return Err(no_such(&args));
    }
    let ty = match func {
        W::RowNumber | W::Rank | W::DenseRank => INT8,
        W::PercentRank | W::CumeDist => FLOAT8,
        W::Ntile => INT4,
        _ => value_type(&args, no_such)?,
    };
    let args = typed_arguments(func, args, ty);
    Ok(Some((func, args, ty)))
}

/// The type of lag/lead/first_value/last_value/nth_value: their value's, or the common
/// type of lag's and lead's value and default (PostgreSQL's `anycompatible`).
/// A value and a default of different kinds (an integer and a text, a text and a
/// timestamp) is `no_such` function, as in PostgreSQL; an untyped value takes the
/// default's type (`lag(NULL, 1, 5)` is an integer), and with no typed one it is 42804.
fn value_type(args: &[CExpr], no_such: impl Fn(&[CExpr]) -> SqlError) -> SqlResult<CType> {
    let value = args.first().map_or(CType::Unknown, |a| a.ty);
    let ty = match args.get(2) {
        Some(default) => {
            super::plan::set_column_type("lag", value, default.ty).map_err(|_| no_such(args))?
        }
        None => value,
    };
    if ty == CType::Unknown {
        return Err(SqlError::new(
            sqlstate::DATATYPE_MISMATCH,
            "could not determine polymorphic type because input has type unknown",
        ));
    }
    Ok(ty)
}

/// PostgreSQL's 42809 for a window function called without OVER (`lag(x)` alone was
/// "function lag() does not exist").
pub(crate) fn refuse_without_over(name: &str) -> SqlResult<()> {
    let window_only = matches!(
        name,
        "row_number"
            | "rank"
            | "dense_rank"
            | "percent_rank"
            | "cume_dist"
            | "ntile"
            | "lag"
            | "lead"
            | "first_value"
            | "last_value"
            | "nth_value"
    );
    if window_only {
        return Err(SqlError::new(
            sqlstate::WRONG_OBJECT_TYPE,
            format!("window function {name} requires an OVER clause"),
        ));
    }
    Ok(())
}

/// The arguments cast to what the function takes: its value (and default) to `ty`, its
/// count to integer.
fn typed_arguments(func: WindowFunc, args: Vec<CExpr>, ty: CType) -> Vec<CExpr> {
    let value_function = matches!(
        func,
        WindowFunc::Shift { .. }
            | WindowFunc::FirstValue
            | WindowFunc::LastValue
            | WindowFunc::NthValue
    );
    args.into_iter()
        .enumerate()
        .map(|(i, a)| match (func, i) {
            (WindowFunc::Ntile, _) | (_, 1) => a.cast_to(INT4),
            _ if value_function => cast_to_common(a, ty),
            _ => a,
        })
        .collect()
}

/// An aggregate over a window frame, or PostgreSQL's error for a function that is
/// neither (42809) or an aggregate hotpage lacks as a window function (0A000).
fn window_aggregate(c: &mut Compiler, name: &str, f: &Function) -> SqlResult<(AggSpec, CType)> {
    let Some(agg) = AggFunc::by_name(name) else {
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
    if !spec.order.is_empty() {
        // PostgreSQL's own message and SQLSTATE.
        return Err(SqlError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            "aggregate ORDER BY is not implemented for window functions",
        ));
    }
    let ty = spec.ty;
    Ok((spec, ty))
}

/// One row's inputs to a window: its partition key, order key and aggregate arguments.
pub(crate) struct WindowInput {
    pub partition: Vec<Datum>,
    pub order: Vec<Datum>,
    pub args: Vec<Datum>,
    /// Whether an aggregate counts the row: false where its FILTER does not hold.
    pub counted: bool,
}

/// The window's value for each row, in the rows' own order, with the frame's offsets
/// evaluated (`Frame::resolve`); `poll` looks for a cancel or a timeout now and then.
pub(crate) fn window_values(
    spec: &WindowSpec,
    frame: &Frame<u64>,
    inputs: &[WindowInput],
    poll: &mut dyn FnMut() -> SqlResult<()>,
) -> SqlResult<Vec<Datum>> {
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
        let partition = Partition {
            spec,
            inputs,
            rows: &sorted[start..end],
            peers: peer_groups(spec, inputs, &sorted[start..end]),
        };
        partition.fill(frame, &mut values, poll)?;
        start = end;
    }
    Ok(values)
}

/// Each position's peer group in a partition's rows (in the window's order): the group's
/// first position, the position past its last, and the group's number from 1.
fn peer_groups(
    spec: &WindowSpec,
    inputs: &[WindowInput],
    rows: &[usize],
) -> Vec<(usize, usize, i64)> {
    let mut peers = Vec::with_capacity(rows.len());
    let mut group = 0;
    let mut first = 0;
    while first < rows.len() {
        let key = &inputs[rows[first]].order;
        let end = first
            + rows[first..]
                .iter()
                .take_while(|&&i| {
                    keys_cmp(&inputs[i].order, key, Some(&spec.order)) == Ordering::Equal
                })
                .count();
        group += 1;
        peers.extend((first..end).map(|_| (first, end, group)));
        first = end;
    }
    peers
}

/// A frame's positions in its partition, `start..end`.
type Bounds = (usize, usize);

/// One partition's rows, in the window's order, and their peer groups.
struct Partition<'a> {
    spec: &'a WindowSpec,
    inputs: &'a [WindowInput],
    rows: &'a [usize],
    peers: Vec<(usize, usize, i64)>,
}

impl Partition<'_> {
    /// Argument `arg` of the row at position `at`.
    fn arg(&self, at: usize, arg: usize) -> Datum {
        self.inputs[self.rows[at]]
            .args
            .get(arg)
            .cloned()
            .unwrap_or(Datum::Null)
    }

    /// Fills `values` for this partition's rows.
    fn fill(
        &self,
        frame: &Frame<u64>,
        values: &mut [Datum],
        poll: &mut dyn FnMut() -> SqlResult<()>,
    ) -> SqlResult<()> {
        if let Some(agg) = &self.spec.aggregate {
            return self.aggregate(agg, frame, values, poll);
        }
        let len = self.rows.len();
        let buckets = match self.spec.func {
            WindowFunc::Ntile => ntile_buckets(&self.arg(0, 0), len)?,
            _ => None,
        };
        for at in 0..len {
            let (peer_start, peer_end, group) = self.peers[at];
            let value = match self.spec.func {
                WindowFunc::RowNumber => Datum::Int(at as i64 + 1),
                WindowFunc::Rank => Datum::Int(peer_start as i64 + 1),
                WindowFunc::DenseRank => Datum::Int(group),
                WindowFunc::PercentRank if len > 1 => {
                    Datum::Float(peer_start as f64 / (len - 1) as f64)
                }
                WindowFunc::PercentRank => Datum::Float(0.0),
                WindowFunc::CumeDist => Datum::Float(peer_end as f64 / len as f64),
                WindowFunc::Ntile => buckets.as_ref().map_or(Datum::Null, |b| Datum::Int(b[at])),
                WindowFunc::Shift { back } => self.shifted(at, back),
                _ => {
                    let (start, end) = frame.bounds(at, (peer_start, peer_end), len);
                    self.in_frame(at, start, end)?
                }
            };
            values[self.rows[at]] = value;
            poll()?;
        }
        Ok(())
    }

    /// lag/lead: the value `offset` rows before (after) position `at`, or the default.
    fn shifted(&self, at: usize, back: bool) -> Datum {
        let offset = match self.spec.args.len() {
            1 => 1,
            _ => match self.arg(at, 1) {
                Datum::Int(n) => n,
                _ => return Datum::Null,
            },
        };
        let target = if back {
            (at as i64).checked_sub(offset)
        } else {
            (at as i64).checked_add(offset)
        };
        match target.and_then(|t| usize::try_from(t).ok()) {
            Some(t) if t < self.rows.len() => self.arg(t, 0),
            _ => self.arg(at, 2),
        }
    }

    /// first_value, last_value or nth_value over the frame `start..end` of position `at`.
    fn in_frame(&self, at: usize, start: usize, end: usize) -> SqlResult<Datum> {
        if start >= end {
            return Ok(Datum::Null);
        }
        Ok(match self.spec.func {
            WindowFunc::FirstValue => self.arg(start, 0),
            WindowFunc::LastValue => self.arg(end - 1, 0),
            _ => match self.arg(at, 1) {
                Datum::Int(n) if n <= 0 => {
                    return Err(SqlError::new(
                        sqlstate::INVALID_ARGUMENT_FOR_NTH_VALUE,
                        "argument of nth_value must be greater than zero",
                    ));
                }
                Datum::Int(n) => match start.checked_add(n as usize - 1) {
                    Some(nth) if nth < end => self.arg(nth, 0),
                    _ => Datum::Null,
                },
                _ => Datum::Null,
            },
        })
    }

    /// An aggregate over each row's frame. Where every frame starts at the partition's
    /// first row (the default frame and `UNBOUNDED PRECEDING`), the frames' ends only grow,
    /// so one running state serves them all. Otherwise each distinct frame is aggregated
    /// afresh: time proportional to the rows times the frame's length.
    fn aggregate(
        &self,
        agg: &AggSpec,
        frame: &Frame<u64>,
        values: &mut [Datum],
        poll: &mut dyn FnMut() -> SqlResult<()>,
    ) -> SqlResult<()> {
        let len = self.rows.len();
        let running = frame.start == FrameBound::UnboundedPreceding;
        let mut state = Accumulator::new(agg);
        // Rows the running state holds, and the last frame with its value.
        let mut added = 0;
        let mut last: Option<(Bounds, Datum)> = None;
        for at in 0..len {
            let (peer_start, peer_end, _) = self.peers[at];
            let (start, end) = frame.bounds(at, (peer_start, peer_end), len);
            let value = match &last {
                Some((bounds, value)) if *bounds == (start, end) => value.clone(),
                _ if running => {
                    for row in added..end {
                        let input = &self.inputs[self.rows[row]];
                        if input.counted {
                            state.add(agg, input.args.clone())?;
                        }
                    }
                    added = added.max(end);
                    state.clone().finish(agg)?
                }
                _ => {
                    let mut fresh = Accumulator::new(agg);
                    for row in start..end.max(start) {
                        let input = &self.inputs[self.rows[row]];
                        if input.counted {
                            fresh.add(agg, input.args.clone())?;
                        }
                        poll()?;
                    }
                    fresh.finish(agg)?
                }
            };
            values[self.rows[at]] = value.clone();
            last = Some(((start, end), value));
            poll()?;
        }
        Ok(())
    }
}

/// ntile's bucket for each position of a partition of `len` rows, cut into `count`
/// buckets whose sizes differ by at most one, the larger first (PostgreSQL reads the count
/// at the partition's first row). None when the count is NULL.
fn ntile_buckets(count: &Datum, len: usize) -> SqlResult<Option<Vec<i64>>> {
    let count = match count {
        Datum::Int(n) if *n > 0 => *n as usize,
        Datum::Null => return Ok(None),
        _ => {
            return Err(SqlError::new(
                sqlstate::INVALID_ARGUMENT_FOR_NTILE,
                "argument of ntile must be greater than zero",
            ));
        }
    };
    let (size, larger) = (len / count, len % count);
    let mut buckets = Vec::with_capacity(len);
    // At most `count` buckets and `len` rows: the first `larger` buckets take a row more.
    for bucket in 1..=count {
        let rows = size + usize::from(bucket <= larger);
        buckets.extend(std::iter::repeat_n(bucket as i64, rows));
        if buckets.len() >= len {
            break;
        }
    }
    assert_eq!(buckets.len(), len, "ntile placed every row once");
    Ok(Some(buckets))
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
