//! `row_number() OVER ([PARTITION BY …] [ORDER BY …])` in a SELECT's list (seed 002's
//! `ROW_NUMBER() OVER (ORDER BY [Current LSN]) [Step #]`). Each call becomes a hidden
//! column `__wN` after the source's columns: once every row that passes WHERE is
//! collected, the rows are sorted by the window's partition and order keys and numbered
//! from 1 in each partition, before the query's own ORDER BY and LIMIT. Other window
//! functions, frames and named windows are 0A000.

use super::{OrderBy, OrderKey, order_by_key};
use crate::error::{SqlError, SqlResult};
use crate::expr::{self, EvalContext, Scalar, object_name};
use crate::types::SqlType;
use crate::value::Value;
use sqlparser::ast::{
    Expr, FunctionArguments, Ident, OrderByExpr, SelectItem, VisitMut, VisitorMut, WindowType,
};
use std::cmp::Ordering;
use std::ops::ControlFlow;

/// One `row_number() OVER (…)`, compiled against the source's columns.
#[derive(Clone)]
pub(super) struct Window {
    partition: Vec<Scalar>,
    order: Vec<(Scalar, OrderKey)>,
}

impl Window {
    /// The expressions the window evaluates.
    pub(super) fn scalars(&self) -> impl Iterator<Item = &Scalar> {
        self.partition
            .iter()
            .chain(self.order.iter().map(|(scalar, _)| scalar))
    }
}

/// Replaces each window call in `items` with its hidden column (`__wN`, N from the
/// source's column count on); returns the windows.
pub(super) fn extract(
    items: &mut [SelectItem],
    scope: &[(String, SqlType)],
) -> SqlResult<Vec<Window>> {
    let mut finder = Finder {
        specs: Vec::new(),
        first: scope.len(),
        error: None,
    };
    for item in items.iter_mut() {
        let _ = item.visit(&mut finder);
    }
    if let Some(error) = finder.error {
        return Err(error);
    }
    finder
        .specs
        .iter()
        .map(|(partition, order)| {
            Ok(Window {
                partition: partition
                    .iter()
                    .map(|e| expr::compile(e, scope))
                    .collect::<SqlResult<_>>()?,
                order: order
                    .iter()
                    .map(|o| {
                        let desc = expr::sort_is_desc(o.options.sort.as_ref())?;
                        let key = OrderKey {
                            by: OrderBy::Output(0),
                            desc,
                            nulls_first: o.options.nulls_first.unwrap_or(desc),
                        };
                        Ok((expr::compile(&o.expr, scope)?, key))
                    })
                    .collect::<SqlResult<_>>()?,
            })
        })
        .collect()
}

/// The hidden columns' names and types, to add to the scope the select list sees.
pub(super) fn columns(windows: &[Window], first: usize) -> Vec<(String, SqlType)> {
    (0..windows.len())
        .map(|k| (format!("__w{}", first + k), SqlType::BigInt))
        .collect()
}

type Spec = (Vec<Expr>, Vec<OrderByExpr>);

struct Finder {
    specs: Vec<Spec>,
    /// The first hidden column's position (the source's column count).
    first: usize,
    error: Option<SqlError>,
}

impl VisitorMut for Finder {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        let Expr::Function(f) = e else {
            return ControlFlow::Continue(());
        };
        let Some(over) = &f.over else {
            return ControlFlow::Continue(());
        };
        let name = object_name(&f.name);
        let no_args = match &f.args {
            FunctionArguments::None => true,
            FunctionArguments::List(list) => list.args.is_empty(),
            FunctionArguments::Subquery(_) => false,
        };
        let spec = match over {
            WindowType::WindowSpec(spec)
                if name == "row_number"
                    && no_args
                    && spec.window_frame.is_none()
                    && spec.window_name.is_none()
                    && f.filter.is_none() =>
            {
                (spec.partition_by.clone(), spec.order_by.clone())
            }
            _ => {
                self.error = Some(SqlError::unsupported(format!(
                    "the window function call {e} (hotpage has row_number() OVER ([PARTITION BY …] [ORDER BY …]))"
                )));
                return ControlFlow::Break(());
            }
        };
        let k = self.first + self.specs.len();
        self.specs.push(spec);
        *e = Expr::Identifier(Ident::with_quote('"', format!("__w{k}")));
        ControlFlow::Continue(())
    }
}

/// Numbers `rows` for each window (appending one value per window to every row).
pub(super) fn number(
    windows: &[Window],
    rows: &mut [Vec<Value>],
    ctx: &mut dyn EvalContext,
) -> SqlResult<()> {
    for window in windows {
        let mut keyed = Vec::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            let partition = window
                .partition
                .iter()
                .map(|s| s.eval(row, ctx))
                .collect::<SqlResult<Vec<_>>>()?;
            let order = window
                .order
                .iter()
                .map(|(s, _)| s.eval(row, ctx))
                .collect::<SqlResult<Vec<_>>>()?;
            keyed.push((partition, order, i));
        }
        // A stable sort: rows equal in every key keep the order they came in.
        keyed.sort_by(|a, b| {
            compare(&a.0, &b.0, None).then_with(|| compare(&a.1, &b.1, Some(&window.order)))
        });
        let mut n = 0i64;
        for at in 0..keyed.len() {
            let same = at > 0 && compare(&keyed[at - 1].0, &keyed[at].0, None) == Ordering::Equal;
            n = if same { n + 1 } else { 1 };
            rows[keyed[at].2].push(Value::Int(n));
        }
    }
    Ok(())
}

/// Compares key lists: ascending with NULLs last, or as `keys` say.
fn compare(a: &[Value], b: &[Value], keys: Option<&[(Scalar, OrderKey)]>) -> Ordering {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let (desc, nulls_first) = keys
            .and_then(|k| k.get(i))
            .map_or((false, false), |(_, k)| (k.desc, k.nulls_first));
        let ordering = order_by_key(
            (x == &Value::Null, y == &Value::Null),
            nulls_first,
            desc,
            || x.order_cmp(y),
        );
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}
