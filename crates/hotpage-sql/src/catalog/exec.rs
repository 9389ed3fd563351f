//! Running a planned catalog query: FROM items materialised (each relation's rows made
//! once per execution), joined by nested loops with each WHERE conjunct applied as soon as
//! its columns are there, then grouping, projection, DISTINCT, ORDER BY, OFFSET and LIMIT.

use super::Catalog;
use super::compile::visit_columns;
use super::cte::{CteBody, CtePlan};
use super::expr::{AggFunc, AggSpec, ArithOp, CExpr, CmpOp, ExprKind, SubPlan};
use super::functions;
use super::plan::{Body, FromItem, FromStep, JoinKind, QueryPlan, SelectPlan, SortBy, SortKey};
use super::types::{self, CType, Datum};
use super::window::{WindowInput, WindowSpec, window_values};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::limits::{self, MemoryBudget};
use crate::session::SessionState;
use crate::session::SqlDatabase;
use crate::table::SqlTable;
use crate::types::SqlType;
use crate::value::Value;
use sqlparser::ast::SetOperator;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

type Rows = Vec<Vec<Datum>>;

/// A hash of rows on a join key: each key's rows, by position.
type Buckets = HashMap<String, Vec<usize>>;

/// The rows visible to an expression: its own level's row (whose first column is column
/// `offset` of that level), and the enclosing levels' rows.
pub(crate) struct Env<'e> {
    row: &'e [Datum],
    offset: usize,
    level: usize,
    parent: Option<&'e Env<'e>>,
    /// The values of its SELECT's set-returning calls for this output row.
    set_values: &'e [Datum],
}

impl<'e> Env<'e> {
    fn new(row: &'e [Datum], level: usize, parent: Option<&'e Env<'e>>) -> Env<'e> {
        Env {
            row,
            offset: 0,
            level,
            parent,
            set_values: &[],
        }
    }

    /// Set-returning call `index`'s value for this output row (`ExprKind::SetValue`).
    fn set_value(&self, level: usize, index: usize) -> SqlResult<Datum> {
        let mut env = Some(self);
        while let Some(e) = env {
            if e.level == level {
                return e.set_values.get(index).cloned().ok_or_else(|| {
                    SqlError::internal("a set-returning call's value read before it was made")
                });
            }
            env = e.parent;
        }
        Err(SqlError::internal(format!(
            "query: no row of level {level} in scope"
        )))
    }

    fn column(&self, level: usize, index: usize) -> SqlResult<Datum> {
        let mut env = Some(self);
        while let Some(e) = env {
            if e.level == level {
                return index
                    .checked_sub(e.offset)
                    .and_then(|i| e.row.get(i))
                    .cloned()
                    .ok_or_else(|| {
                        SqlError::unsupported("a reference to an earlier FROM item inside a JOIN")
                    });
            }
            env = e.parent;
        }
        Err(SqlError::internal(format!(
            "query: no row of level {level} in scope"
        )))
    }

    /// Window call `index`'s value: the row of `level` carries its SELECT's window values
    /// at its end, the last call first (`Exec::add_windows`).
    fn window(&self, level: usize, index: usize) -> SqlResult<Datum> {
        let mut env = Some(self);
        while let Some(e) = env {
            if e.level == level {
                return e
                    .row
                    .len()
                    .checked_sub(index + 1)
                    .and_then(|i| e.row.get(i))
                    .cloned()
                    .ok_or_else(|| SqlError::internal("a window value read before it was made"));
            }
            env = e.parent;
        }
        Err(SqlError::internal(format!(
            "query: no row of level {level} in scope"
        )))
    }
}

/// What reading user tables and calling the SQL layer's functions need: the engine
/// session (its scans, and the open transaction's own rows) and the SQL session's state
/// (its settings, which `set_config` changes; the statement's clock, which stops a long
/// read or join; `lastval`/`currval`).
pub(crate) struct SessionRefs<'a> {
    /// `None` only while a table read that tests conditions holds it.
    pub engine: Option<&'a mut hotpage::Session>,
    pub state: &'a mut SessionState,
}

/// One execution of a catalog query.
pub(crate) struct Exec<'a> {
    pub catalog: &'a Catalog,
    pub params: &'a [Value],
    pub pid: u32,
    pub db: &'a SqlDatabase,
    pub session: SessionRefs<'a>,
    relations: HashMap<(u8, &'static str), Rc<Rows>>,
    /// User tables' rows, by table: a table read twice (a self-join) is read once.
    tables: HashMap<usize, Rc<Rows>>,
    /// A table's rows that pass its FROM step's own conditions, by step (see
    /// `filtered_table_rows`).
    filtered: HashMap<usize, Rc<Rows>>,
    /// Hashes of such rows on a join key, by (key expression, rows): see `build_probe`.
    probes: HashMap<(usize, usize), Rc<Buckets>>,
    /// Uncorrelated IN subqueries' values as sets, by subquery.
    in_sets: HashMap<usize, Rc<InSet>>,
    /// Bytes held in the rows this execution keeps: tables read, join rows made, window
    /// values, output rows, WITH queries' rows; bounded by `hotpage.query_memory`
    /// (see `crate::limits`).
    memory: MemoryBudget,
    /// The part of `memory` in tables' rows, kept for the whole execution; the rest
    /// is join rows, given back when the SELECT that made them (or a correlated
    /// subquery's run) is done with them.
    table_bytes: usize,
    subplans: HashMap<usize, Rc<Rows>>,
    /// The rows of the WITH queries whose query is running, by number.
    ctes: HashMap<usize, Rc<Rows>>,
    regexes: HashMap<(String, bool), regex::Regex>,
}

impl<'a> Exec<'a> {
    pub fn new(
        catalog: &'a Catalog,
        params: &'a [Value],
        pid: u32,
        db: &'a SqlDatabase,
        session: SessionRefs<'a>,
    ) -> Exec<'a> {
        let memory_max = limits::query_memory_bytes(&session.state.settings);
        Exec {
            catalog,
            params,
            pid,
            db,
            session,
            relations: HashMap::new(),
            tables: HashMap::new(),
            filtered: HashMap::new(),
            probes: HashMap::new(),
            in_sets: HashMap::new(),
            memory: MemoryBudget::new(memory_max),
            table_bytes: 0,
            subplans: HashMap::new(),
            ctes: HashMap::new(),
            regexes: HashMap::new(),
        }
    }

    /// A set operation's side's rows in the operation's column types (`1` and `1.5` in
    /// one numeric column).
    fn cast_rows(
        &mut self,
        mut rows: Rows,
        from: &[(String, CType)],
        to: &[(String, CType)],
    ) -> SqlResult<Rows> {
        let changed: Vec<(usize, CType, CType)> = from
            .iter()
            .zip(to)
            .enumerate()
            // A numeric keeps its own scale in a numeric column of another typmod, as in
            // PostgreSQL, whose common numeric has none (`plan::set_column_type`).
            .filter(|(_, ((_, f), (_, t)))| f != t && !(is_numeric(*f) && is_numeric(*t)))
            .map(|(i, ((_, f), (_, t)))| match (*f, *t) {
                // An integer keeps its own scale in a numeric column (no typmod there,
                // as in PostgreSQL): `SELECT 1 UNION SELECT 1.0` shows 1.
                (f, t) if is_numeric(t) && f.is_integer_like() => {
                    (i, f, CType::Sql(SqlType::NumericUnconstrained))
                }
                (f, t) => (i, f, t),
            })
            .collect();
        if changed.is_empty() {
            return Ok(rows);
        }
        for row in &mut rows {
            for &(i, f, t) in &changed {
                if let Some(d) = row.get_mut(i) {
                    *d = types::cast(std::mem::replace(d, Datum::Null), f, t, self.catalog)?;
                }
            }
        }
        Ok(rows)
    }

    /// Counts `bytes` more held; 54000 past `hotpage.query_memory`. Also where a long
    /// join looks for a cancel or a timeout.
    fn hold(&mut self, bytes: usize) -> SqlResult<()> {
        self.session.state.clock.poll()?;
        self.memory.charge(bytes)
    }

    fn held(&self) -> usize {
        self.memory.held_bytes()
    }

    /// Sets what is held to `bytes` (a step is done with rows it made).
    fn set_held(&mut self, bytes: usize) {
        self.memory.set_held_bytes(bytes);
    }

    /// A user table's rows as this transaction sees them.
    fn table_rows(&mut self, table: &SqlTable) -> SqlResult<Rc<Rows>> {
        // The plan holds the table for the whole execution, so its address names it.
        let id = std::ptr::from_ref(table) as usize;
        if let Some(rows) = self.tables.get(&id) {
            return Ok(Rc::clone(rows));
        }
        let rows = self.read_table(table, &[], 0, 0)?;
        self.tables.insert(id, Rc::clone(&rows));
        Ok(rows)
    }

    /// A table's rows that pass `filters` (which read only its columns, as columns
    /// `offset…` of `level`), read once per execution for FROM step `step`.
    fn filtered_table_rows(
        &mut self,
        table: &SqlTable,
        step: usize,
        filters: &[&CExpr],
        offset: usize,
        level: usize,
    ) -> SqlResult<Rc<Rows>> {
        if let Some(rows) = self.filtered.get(&step) {
            return Ok(Rc::clone(rows));
        }
        let rows = self.read_table(table, filters, offset, level)?;
        self.filtered.insert(step, Rc::clone(&rows));
        Ok(rows)
    }

    /// Reads a table's rows that pass `filters` (all of them for none), counted as held
    /// for the whole execution.
    fn read_table(
        &mut self,
        table: &SqlTable,
        filters: &[&CExpr],
        offset: usize,
        level: usize,
    ) -> SqlResult<Rc<Rows>> {
        // The scan holds the engine session; the filters need none (see `pushable`).
        let engine = self
            .session
            .engine
            .take()
            .ok_or_else(|| SqlError::internal("a table read inside a table read"))?;
        let before = self.held();
        let read = self.visit_filtered(table, engine, filters, offset, level);
        self.session.engine = Some(engine);
        let rows = Rc::new(read?);
        self.table_bytes += self.held() - before;
        Ok(rows)
    }

    /// One pass over the table: each row decoded, tested, counted and kept, or dropped.
    fn visit_filtered(
        &mut self,
        table: &SqlTable,
        engine: &mut hotpage::Session,
        filters: &[&CExpr],
        offset: usize,
        level: usize,
    ) -> SqlResult<Rows> {
        let mut rows: Rows = Vec::new();
        let mut failure = None;
        table.visit_rows(engine, None, |key, row| {
            let kept = self.session.state.clock.poll().and_then(|()| {
                let values = table.decode(key, row)?;
                let row: Vec<Datum> = values.into_iter().map(Datum::from_value).collect();
                let env = Env {
                    row: &row,
                    offset,
                    level,
                    parent: None,
                    set_values: &[],
                };
                if !self.all_hold(filters.iter().copied(), &env)? {
                    return Ok(None);
                }
                self.memory.charge(row_bytes(&row))?;
                Ok(Some(row))
            });
            match kept {
                Ok(Some(row)) => {
                    rows.push(row);
                    true
                }
                Ok(None) => true,
                Err(e) => {
                    failure = Some(e);
                    false
                }
            }
        })?;
        failure.map_or(Ok(rows), Err)
    }

    /// A query's rows: its WITH queries first, kept while its body runs.
    pub fn run_query(&mut self, q: &QueryPlan, outer: Option<&Env>) -> SqlResult<Rows> {
        let cte_bytes = self.run_ctes(&q.ctes, outer)?;
        let rows = self.run_body(q, outer);
        for cte in &q.ctes {
            self.ctes.remove(&cte.id);
        }
        self.memory.release(cte_bytes);
        rows
    }

    /// Computes WITH queries, in order (a later one may read an earlier one); returns the
    /// bytes their rows hold.
    fn run_ctes(&mut self, ctes: &[CtePlan], outer: Option<&Env>) -> SqlResult<usize> {
        let mut bytes = 0;
        for cte in ctes {
            let (held, tables) = (self.held(), self.table_bytes);
            let rows = match &cte.body {
                CteBody::Plain(q) => self.run_query(q, outer)?,
                CteBody::Recursive { base, step, all } => {
                    self.recursive_rows(cte, base, step, *all, outer)?
                }
            };
            // Tables read meanwhile stay for the whole execution; the rows go with the query.
            bytes += (self.held().saturating_sub(held)).saturating_sub(self.table_bytes - tables);
            self.ctes.insert(cte.id, Rc::new(rows));
        }
        Ok(bytes)
    }

    /// `WITH RECURSIVE`'s rows: the base's, then the step's run on the rows the last round
    /// made, until a round makes none. With UNION, a row made before is not made again.
    fn recursive_rows(
        &mut self,
        cte: &CtePlan,
        base: &QueryPlan,
        step: &QueryPlan,
        all: bool,
        outer: Option<&Env>,
    ) -> SqlResult<Rows> {
        let mut seen = HashSet::new();
        let mut made = self.run_query(base, outer)?;
        let mut result: Rows = Vec::new();
        loop {
            let counted = rows_bytes(&made);
            if !all {
                made.retain(|row| seen.insert(row_key(row)));
            }
            // `made` stays counted as the next working table; `result` holds a copy, and
            // UNION's set of rows seen another.
            let working = rows_bytes(&made);
            self.memory.release(counted - working);
            let copies = if all { 1 } else { 2 };
            self.hold(copies * working)?;
            result.extend(made.iter().cloned());
            if made.is_empty() {
                return Ok(result);
            }
            self.ctes.insert(cte.id, Rc::new(made));
            let rows = self.run_query(step, outer)?;
            self.ctes.remove(&cte.id);
            self.memory.release(working);
            made = self.cast_rows(rows, &step.columns, &cte.columns)?;
        }
    }

    fn run_body(&mut self, q: &QueryPlan, outer: Option<&Env>) -> SqlResult<Rows> {
        let mut rows = match &q.body {
            Body::Select(s) => self.run_select(s, outer)?,
            Body::SetOp {
                op,
                all,
                left,
                right,
            } => {
                let l = self.run_query(left, outer)?;
                let l = self.cast_rows(l, &left.columns, &q.columns)?;
                let r = self.run_query(right, outer)?;
                let r = self.cast_rows(r, &right.columns, &q.columns)?;
                set_operation(*op, *all, l, r)
            }
            Body::Values { level, rows } => {
                let env = Env::new(&[], *level, outer);
                let mut made = Vec::with_capacity(rows.len());
                for row in rows {
                    let values = self.eval_all(row, &env)?;
                    self.hold(row_bytes(&values))?;
                    made.push(values);
                }
                made
            }
        };
        if !q.order.is_empty() {
            let keyed: Vec<(Vec<Datum>, Vec<Datum>)> =
                rows.into_iter().map(|r| (Vec::new(), r)).collect();
            rows = sort_rows(keyed, &q.order);
        }
        let empty = Env::new(&[], usize::MAX, outer);
        let offset = self
            .count(q.offset.as_ref(), &empty, "OFFSET")?
            .unwrap_or(0);
        let limit = self.count(q.limit.as_ref(), &empty, "LIMIT")?;
        Ok(rows
            .into_iter()
            .skip(offset)
            .take(limit.unwrap_or(usize::MAX))
            .collect())
    }

    fn count(&mut self, e: Option<&CExpr>, env: &Env, what: &str) -> SqlResult<Option<usize>> {
        let Some(e) = e else {
            return Ok(None);
        };
        match self.eval(e, env)? {
            Datum::Null => Ok(None),
            Datum::Int(n) if n >= 0 => Ok(Some(n as usize)),
            Datum::Int(_) => Err(SqlError::new(
                if what == "LIMIT" { "2201W" } else { "2201X" },
                format!("{what} must not be negative"),
            )),
            _ => Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!("argument of {what} must be type bigint"),
            )),
        }
    }

    fn run_select(&mut self, s: &SelectPlan, outer: Option<&Env>) -> SqlResult<Rows> {
        let held_before = self.held();
        let tables_before = self.table_bytes;
        let out = self.run_select_rows(s, outer)?;
        // The join rows are gone; what stays is the output and any table read meanwhile.
        self.set_held(held_before + (self.table_bytes - tables_before) + rows_bytes(&out));
        Ok(out)
    }

    fn run_select_rows(&mut self, s: &SelectPlan, outer: Option<&Env>) -> SqlResult<Rows> {
        let mut rows: Rows = vec![Vec::new()];
        let none = Env::new(&[], s.level, outer);
        for filter in &s.prefilter {
            if !self.holds(filter, &none)? {
                rows.clear();
            }
        }
        let mut width = 0;
        for step in &s.from {
            if rows.is_empty() {
                break;
            }
            rows = self.join_step(rows, step, width, s.level, outer)?;
            width += step.item.width();
        }
        if let Some(grouping) = &s.grouping {
            rows = self.group(&rows, grouping, s.level, outer)?;
        }
        if !s.windows.is_empty() {
            rows = self.add_windows(rows, &s.windows, s.level, outer)?;
        }
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let env = Env::new(row, s.level, outer);
            if s.set_calls.is_empty() {
                out.push(self.output_row(s, &env)?);
                continue;
            }
            let held_before = self.held();
            let sets = s
                .set_calls
                .iter()
                .map(|call| {
                    let args = self.eval_all(&call.args, &env)?;
                    call.func.rows(&args, &mut self.memory)
                })
                .collect::<SqlResult<Vec<_>>>()?;
            // The calls' rows are dropped after this row; the output rows stay charged.
            let sets_bytes = self.held() - held_before;
            let longest = sets.iter().map(Vec::len).max().unwrap_or(0);
            for n in 0..longest {
                let values: Vec<Datum> = sets
                    .iter()
                    .map(|set| {
                        set.get(n)
                            .and_then(|r| r.first())
                            .cloned()
                            .unwrap_or(Datum::Null)
                    })
                    .collect();
                let env = Env {
                    set_values: &values,
                    ..Env::new(row, s.level, outer)
                };
                out.push(self.output_row(s, &env)?);
            }
            self.memory.release(sets_bytes);
        }
        if s.distinct {
            let mut seen = HashSet::new();
            out.retain(|(_, items)| seen.insert(row_key(items)));
        }
        let mut sorted = sort_rows(out, &s.order);
        if !s.distinct_on.is_empty() {
            // The sort is stable: each set of values keeps its first row in ORDER BY's
            // order (or the rows' own where ORDER BY does not decide).
            let width = s.items.len();
            let mut seen = HashSet::new();
            sorted.retain(|items| seen.insert(row_key(&items[width..])));
            sorted.iter_mut().for_each(|items| items.truncate(width));
        }
        Ok(sorted)
    }

    /// One output row of a SELECT: its items, DISTINCT ON's values after them until the
    /// rows are sorted, and ORDER BY's keys.
    fn output_row(&mut self, s: &SelectPlan, env: &Env) -> SqlResult<(Vec<Datum>, Vec<Datum>)> {
        let mut items = s
            .items
            .iter()
            .map(|item| self.eval(item, env))
            .collect::<SqlResult<Vec<_>>>()?;
        for key in &s.distinct_on {
            let value = match &key.by {
                SortBy::Output(i) => items.get(*i).cloned().unwrap_or(Datum::Null),
                SortBy::Expr(e) => self.eval(e, env)?,
            };
            items.push(value);
        }
        let mut keys = Vec::with_capacity(s.order.len());
        for key in &s.order {
            if let SortBy::Expr(e) = &key.by {
                keys.push(self.eval(e, env)?);
            }
        }
        // The expressions looked at the clock; this only counts.
        self.memory.charge(row_bytes(&items) + row_bytes(&keys))?;
        Ok((keys, items))
    }

    /// Appends each row's window values, the last window first, where
    /// `ExprKind::Window` finds them.
    fn add_windows(
        &mut self,
        mut rows: Rows,
        windows: &[WindowSpec],
        level: usize,
        outer: Option<&Env>,
    ) -> SqlResult<Rows> {
        let mut columns = Vec::with_capacity(windows.len());
        for spec in windows {
            let Some(first) = rows.first() else {
                columns.push(Vec::new());
                continue;
            };
            // A frame's offsets read no column: any row's environment will do.
            let env = Env::new(first, level, outer);
            let frame = spec.frame.resolve(&mut |e| self.eval(e, &env))?;
            let mut inputs = Vec::with_capacity(rows.len());
            let order_exprs: Vec<&CExpr> = spec.order.iter().map(|k| &k.expr).collect();
            let filter = spec.aggregate.as_ref().and_then(|a| a.filter.as_ref());
            for row in &rows {
                let env = Env::new(row, level, outer);
                inputs.push(WindowInput {
                    partition: self.eval_all(spec.partition.iter(), &env)?,
                    order: self.eval_all(order_exprs.iter().copied(), &env)?,
                    args: self.eval_all(spec.arguments(), &env)?,
                    counted: match filter {
                        Some(filter) => self.holds(filter, &env)?,
                        None => true,
                    },
                });
            }
            let clock = &mut self.session.state.clock;
            let values = window_values(spec, &frame, &inputs, &mut || clock.poll())?;
            self.hold(values.iter().map(Datum::held_bytes).sum())?;
            columns.push(values);
        }
        for (i, row) in rows.iter_mut().enumerate() {
            row.extend(columns.iter().rev().map(|values| values[i].clone()));
        }
        Ok(rows)
    }

    /// Evaluates each expression of `exprs` in `env`.
    fn eval_all<'x>(
        &mut self,
        exprs: impl IntoIterator<Item = &'x CExpr>,
        env: &Env,
    ) -> SqlResult<Vec<Datum>> {
        exprs.into_iter().map(|e| self.eval(e, env)).collect()
    }

    /// Joins the rows so far with one more FROM item, keeping the combinations its WHERE
    /// conjuncts accept. An equality between the two sides is answered from a hash of the
    /// item's rows rather than by trying every pair.
    fn join_step(
        &mut self,
        rows: Rows,
        step: &FromStep,
        width: usize,
        level: usize,
        outer: Option<&Env>,
    ) -> SqlResult<Rows> {
        let lateral = step.item.is_lateral();
        let end = width + step.item.width();
        // A table's own conditions are tested as its rows are read: only the rows that
        // pass are kept (memory) and joined (time).
        let (pushed, conds): (Vec<&CExpr>, Vec<&CExpr>) = match &step.item {
            FromItem::Table(_) => step
                .filters
                .iter()
                .partition(|f| pushable(f, level, width, end)),
            _ => (Vec::new(), step.filters.iter().collect()),
        };
        let shared = match &step.item {
            _ if lateral => None,
            FromItem::Table(table) if !pushed.is_empty() => {
                let id = std::ptr::from_ref(step) as usize;
                Some(self.filtered_table_rows(&table.0, id, &pushed, width, level)?)
            }
            item => Some(self.item_rows(item, width, level, outer)?),
        };
        let probe = match &shared {
            Some(rights) => {
                let sides = Sides::new(&step.item, width, end, level);
                self.build_probe(&conds, rights, sides, outer)?
            }
            None => None,
        };
        let mut next = Vec::new();
        for left in rows {
            let right = match &shared {
                Some(right) => Rc::clone(right),
                None => {
                    let env = Env::new(&left, level, outer);
                    Rc::new(self.lateral_rows(&step.item, &env)?)
                }
            };
            let candidates =
                self.candidates(probe.as_ref(), &left, 0, right.len(), level, outer)?;
            for i in candidates {
                let mut combined = left.clone();
                combined.extend(right[i].iter().cloned());
                if self.all_hold(conds.iter().copied(), &Env::new(&combined, level, outer))? {
                    self.hold(row_bytes(&combined))?;
                    next.push(combined);
                } else {
                    self.session.state.clock.poll()?;
                }
            }
        }
        Ok(next)
    }

    /// A hash of `rights` on the right side of the first equality in `conds` whose sides
    /// read the left columns (`< split`) and the right ones (`split..end`) respectively.
    /// A correlated subquery runs once per outer row: where the right rows are a table's
    /// (read once per execution) and the right side reads no outer row, the hash is made
    /// once and kept, not made again for every outer row.
    fn build_probe<'p>(
        &mut self,
        conds: &[&'p CExpr],
        rights: &Rc<Rows>,
        sides: Sides,
        outer: Option<&Env>,
    ) -> SqlResult<Option<Probe<'p>>> {
        let Sides {
            split,
            end,
            level,
            stable,
        } = sides;
        for cond in conds {
            let ExprKind::Compare(CmpOp::Eq, a, b) = &cond.kind else {
                continue;
            };
            if !hashable(a.ty, b.ty) {
                continue;
            }
            let (left_key, right_key) =
                if reads_within(a, level, 0, split) && reads_within(b, level, split, end) {
                    (a.as_ref(), b.as_ref())
                } else if reads_within(b, level, 0, split) && reads_within(a, level, split, end) {
                    (b.as_ref(), a.as_ref())
                } else {
                    continue;
                };
            // The rows' address names them while `self` holds them (stable items only).
            let cache_key = (stable && reads_only_level(right_key, level)).then(|| {
                (
                    std::ptr::from_ref(right_key) as usize,
                    Rc::as_ptr(rights) as usize,
                )
            });
            if let Some(buckets) = cache_key.and_then(|k| self.probes.get(&k)) {
                let buckets = Rc::clone(buckets);
                return Ok(Some(Probe { left_key, buckets }));
            }
            let mut buckets = Buckets::new();
            for (i, row) in rights.iter().enumerate() {
                let env = Env {
                    row,
                    offset: split,
                    level,
                    parent: outer,
                    set_values: &[],
                };
                let key = self.eval(right_key, &env)?;
                if !key.is_null() {
                    buckets.entry(hash_key(&key)).or_default().push(i);
                }
            }
            let buckets = Rc::new(buckets);
            if let Some(k) = cache_key {
                self.probes.insert(k, Rc::clone(&buckets));
            }
            return Ok(Some(Probe { left_key, buckets }));
        }
        Ok(None)
    }

    /// The right rows a left row may join: those in its probe bucket, or all.
    fn candidates(
        &mut self,
        probe: Option<&Probe<'_>>,
        left: &[Datum],
        left_offset: usize,
        count: usize,
        level: usize,
        outer: Option<&Env>,
    ) -> SqlResult<Vec<usize>> {
        let Some(probe) = probe else {
            return Ok((0..count).collect());
        };
        let env = Env {
            row: left,
            offset: left_offset,
            level,
            parent: outer,
            set_values: &[],
        };
        let key = self.eval(probe.left_key, &env)?;
        Ok(probe
            .buckets
            .get(&hash_key(&key))
            .cloned()
            .unwrap_or_default())
    }

    fn holds(&mut self, e: &CExpr, env: &Env) -> SqlResult<bool> {
        Ok(truth(&self.eval(e, env)?)? == Some(true))
    }

    fn all_hold<'f>(
        &mut self,
        filters: impl IntoIterator<Item = &'f CExpr>,
        env: &Env,
    ) -> SqlResult<bool> {
        for f in filters {
            if !self.holds(f, env)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A FROM item's rows (a join's: its two sides' columns); `offset` is the level's
    /// column number of the item's first column.
    fn item_rows(
        &mut self,
        item: &FromItem,
        offset: usize,
        level: usize,
        outer: Option<&Env>,
    ) -> SqlResult<Rc<Rows>> {
        match item {
            FromItem::Relation(def) => {
                let key = (def.schema as u8, def.name);
                if let Some(rows) = self.relations.get(&key) {
                    return Ok(Rc::clone(rows));
                }
                let rows = Rc::new(super::rows::rows(def, self.catalog)?);
                self.relations.insert(key, Rc::clone(&rows));
                Ok(rows)
            }
            FromItem::View(name, _) => {
                let key = (u8::MAX, *name);
                if let Some(rows) = self.relations.get(&key) {
                    return Ok(Rc::clone(rows));
                }
                let rows: Rows = crate::views::rows(name, self.db, &[])?
                    .into_iter()
                    .map(|row| row.into_iter().map(Datum::from_value).collect())
                    .collect();
                let rows = Rc::new(rows);
                self.relations.insert(key, Rc::clone(&rows));
                Ok(rows)
            }
            FromItem::Function(..) | FromItem::Lateral(_) => {
                let env = Env {
                    row: &[],
                    offset,
                    level,
                    parent: outer,
                    set_values: &[],
                };
                Ok(Rc::new(self.lateral_rows(item, &env)?))
            }
            FromItem::Subquery(plan) => Ok(Rc::new(self.run_query(plan, outer)?)),
            FromItem::Cte { id, .. } => self
                .ctes
                .get(id)
                .cloned()
                .ok_or_else(|| SqlError::internal("a WITH query read before it ran")),
            FromItem::Table(table) => self.table_rows(&table.0),
            FromItem::Join { .. } => Ok(Rc::new(self.join_rows(item, offset, level, outer)?)),
        }
    }

    /// The rows of an item that may read the items before it (`env`'s row): a set
    /// function's for its arguments' values, a LATERAL subquery's.
    fn lateral_rows(&mut self, item: &FromItem, env: &Env) -> SqlResult<Rows> {
        match item {
            FromItem::Function(func, args) => {
                let values = args
                    .iter()
                    .map(|a| self.eval(a, env))
                    .collect::<SqlResult<Vec<_>>>()?;
                // Held while the join uses them, as a table read is not: given back at
                // once, so they count against the bound while they are made.
                let held_before = self.held();
                let rows = func.rows(&values, &mut self.memory)?;
                self.set_held(held_before);
                Ok(rows)
            }
            FromItem::Lateral(plan) => {
                // Used for this left row and dropped, as a correlated subquery's rows are
                // (`subquery_rows`): only tables read meanwhile stay held; the joined rows
                // are held as the join makes them.
                let (held_before, tables_before) = (self.held(), self.table_bytes);
                let rows = self.run_query(plan, Some(env))?;
                self.set_held(held_before + (self.table_bytes - tables_before));
                Ok(rows)
            }
            _ => Err(SqlError::internal("lateral rows of another FROM item")),
        }
    }

    fn join_rows(
        &mut self,
        item: &FromItem,
        offset: usize,
        level: usize,
        outer: Option<&Env>,
    ) -> SqlResult<Rows> {
        let FromItem::Join {
            left,
            right,
            kind,
            on,
            left_width,
            right_width,
        } = item
        else {
            return Err(SqlError::internal("join rows of a non-join"));
        };
        let lefts = self.item_rows(left, offset, level, outer)?;
        let lateral = right.is_lateral();
        let shared = if lateral {
            None
        } else {
            Some(self.item_rows(right, offset + left_width, level, outer)?)
        };
        let mut conds = Vec::new();
        if let Some(on) = on {
            conjuncts(on, &mut conds);
        }
        let (split, end) = (offset + left_width, offset + left_width + right_width);
        let probe = match &shared {
            Some(rights) => {
                let sides = Sides::new(right, split, end, level);
                self.build_probe(&conds, rights, sides, outer)?
            }
            None => None,
        };
        let mut out = Vec::new();
        let mut right_matched: Vec<bool> = shared
            .as_ref()
            .map_or_else(Vec::new, |r| vec![false; r.len()]);
        for l in lefts.iter() {
            let rights = match &shared {
                Some(r) => Rc::clone(r),
                None => {
                    let env = Env {
                        row: l,
                        offset,
                        level,
                        parent: outer,
                        set_values: &[],
                    };
                    Rc::new(self.lateral_rows(right, &env)?)
                }
            };
            let mut matched = false;
            let candidates =
                self.candidates(probe.as_ref(), l, offset, rights.len(), level, outer)?;
            for i in candidates {
                let mut combined = l.clone();
                combined.extend(rights[i].iter().cloned());
                let env = Env {
                    row: &combined,
                    offset,
                    level,
                    parent: outer,
                    set_values: &[],
                };
                self.session.state.clock.poll()?;
                let passes = match on {
                    Some(on) => self.holds(on, &env)?,
                    None => true,
                };
                if passes {
                    self.hold(row_bytes(&combined))?;
                    matched = true;
                    if let Some(m) = right_matched.get_mut(i) {
                        *m = true;
                    }
                    out.push(combined);
                }
            }
            if !matched && matches!(kind, JoinKind::Left | JoinKind::Full) {
                let mut padded = l.clone();
                padded.extend(std::iter::repeat_n(Datum::Null, *right_width));
                out.push(padded);
            }
        }
        if let (Some(rights), JoinKind::Right | JoinKind::Full) = (&shared, kind) {
            for (r, matched) in rights.iter().zip(&right_matched) {
                if !matched {
                    let mut padded = vec![Datum::Null; *left_width];
                    padded.extend(r.iter().cloned());
                    out.push(padded);
                }
            }
        }
        Ok(out)
    }

    /// Groups rows: one row per group, its keys then its aggregates' results.
    fn group(
        &mut self,
        rows: &Rows,
        grouping: &super::plan::Grouping,
        level: usize,
        outer: Option<&Env>,
    ) -> SqlResult<Rows> {
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut groups: Vec<(Vec<Datum>, Vec<Accumulator>)> = Vec::new();
        for row in rows {
            let env = Env::new(row, level, outer);
            let keys = grouping
                .keys
                .iter()
                .map(|k| self.eval(k, &env))
                .collect::<SqlResult<Vec<_>>>()?;
            // Equal values, one key (10 = 10.0, -0 = 0), as DISTINCT and set operations.
            let id = row_key(&keys);
            let slot = match index.get(&id) {
                Some(&slot) => slot,
                None => {
                    self.hold(id.len() + row_bytes(&keys))?;
                    index.insert(id, groups.len());
                    groups.push((keys, grouping.aggs.iter().map(Accumulator::new).collect()));
                    groups.len() - 1
                }
            };
            for (spec, acc) in grouping.aggs.iter().zip(groups[slot].1.iter_mut()) {
                if let Some(filter) = &spec.filter
                    && !self.holds(filter, &env)?
                {
                    continue;
                }
                let args = self.aggregate_inputs(spec, &env)?;
                let state_bytes = acc.add(spec, args)?;
                // Most aggregates keep nothing more: no count, no clock look per row.
                if state_bytes > 0 {
                    self.hold(state_bytes)?;
                }
            }
        }
        if groups.is_empty() && grouping.keys.is_empty() {
            groups.push((
                Vec::new(),
                grouping.aggs.iter().map(Accumulator::new).collect(),
            ));
        }
        let mut out = Vec::with_capacity(groups.len());
        for (mut keys, accs) in groups {
            for (acc, spec) in accs.into_iter().zip(&grouping.aggs) {
                keys.push(acc.finish(spec)?);
            }
            if let Some(having) = &grouping.having
                && !self.holds(having, &Env::new(&keys, level, outer))?
            {
                continue;
            }
            out.push(keys);
        }
        Ok(out)
    }

    /// One row's inputs to an aggregate: its arguments, then its ORDER BY keys (an
    /// ordered aggregate keeps both until it is finished).
    fn aggregate_inputs(&mut self, spec: &AggSpec, env: &Env) -> SqlResult<Vec<Datum>> {
        let mut inputs = Vec::with_capacity(spec.args.len() + spec.order.len());
        for arg in &spec.args {
            inputs.push(self.eval(arg, env)?);
        }
        for key in &spec.order {
            if let SortBy::Expr(e) = &key.by {
                inputs.push(self.eval(e, env)?);
            }
        }
        Ok(inputs)
    }

    /// A subquery's rows: once per execution when it reads no outer row.
    fn subquery_rows(&mut self, sub: &SubPlan, env: &Env) -> SqlResult<Rc<Rows>> {
        let correlated = !sub.outer_reads.is_empty();
        if !correlated && let Some(rows) = self.subplans.get(&sub.id) {
            return Ok(Rc::clone(rows));
        }
        let (held_before, tables_before) = (self.held(), self.table_bytes);
        let rows = Rc::new(self.run_query(&sub.plan, Some(env))?);
        if correlated {
            // Used for this outer row and dropped: only tables read meanwhile stay held.
            self.set_held(held_before + (self.table_bytes - tables_before));
        } else {
            // Kept for the whole execution, as a table's rows are: an enclosing SELECT
            // that is done with its own rows must not give these back.
            self.table_bytes += rows_bytes(&rows);
            self.subplans.insert(sub.id, Rc::clone(&rows));
        }
        Ok(rows)
    }

    /// An uncorrelated `x IN (SELECT …)`'s rows as a hash set, made once per execution,
    /// where equal values hash alike (integers with integers, text with text); `None`
    /// otherwise (each evaluation then compares with every row).
    fn in_set(&mut self, x: &CExpr, sub: &SubPlan, env: &Env) -> SqlResult<Option<Rc<InSet>>> {
        let column = sub.plan.columns.first().map(|(_, ty)| *ty);
        let alike = |t: CType| t.is_integer_like() || t.is_text_like();
        let usable = sub.outer_reads.is_empty()
            && column.is_some_and(|c| alike(c) && alike(x.ty) && hashable(x.ty, c));
        if !usable {
            return Ok(None);
        }
        if let Some(set) = self.in_sets.get(&sub.id) {
            return Ok(Some(Rc::clone(set)));
        }
        let rows = self.subquery_rows(sub, env)?;
        let padded = sub_column_is_char(sub);
        let mut set = InSet::default();
        let mut kept = 0;
        for row in rows.iter() {
            match row.first() {
                Some(d) if !d.is_null() => {
                    let key = hash_key(&unpadded(d.clone(), padded));
                    kept += std::mem::size_of::<String>() + key.len();
                    set.keys.insert(key);
                }
                _ => set.has_null = true,
            }
        }
        // The set is kept for the execution, beside the subquery's rows.
        self.hold(kept)?;
        self.table_bytes += kept;
        let set = Rc::new(set);
        self.in_sets.insert(sub.id, Rc::clone(&set));
        Ok(Some(set))
    }

    /// Evaluates an expression.
    pub fn eval(&mut self, e: &CExpr, env: &Env) -> SqlResult<Datum> {
        use ExprKind as K;
        Ok(match &e.kind {
            K::Const(d) => d.clone(),
            K::Column { level, index } => env.column(*level, *index)?,
            K::Param(i) => self.param(*i, e.ty)?,
            K::Not(a) => match truth(&self.eval(a, env)?)? {
                Some(b) => Datum::Bool(!b),
                None => Datum::Null,
            },
            K::And(a, b) => self.and_or(a, b, env, true)?,
            K::Or(a, b) => self.and_or(a, b, env, false)?,
            K::Compare(op, a, b) => {
                let (x, y) = (self.eval(a, env)?, self.eval(b, env)?);
                compare(*op, &x, &y)?
            }
            K::IsNull(a, negated) => Datum::Bool(self.eval(a, env)?.is_null() != *negated),
            K::IsBool(a, value, negated) => {
                let is = truth(&self.eval(a, env)?)? == Some(*value);
                Datum::Bool(is != *negated)
            }
            K::Distinct(a, b, negated) => {
                let (x, y) = (self.eval(a, env)?, self.eval(b, env)?);
                let same = match (x.is_null(), y.is_null()) {
                    (true, true) => true,
                    (false, false) => x.sql_cmp(&y) == Some(Ordering::Equal),
                    _ => false,
                };
                Datum::Bool(same == *negated)
            }
            K::Arith(op, a, b) => {
                let (x, y) = (self.eval(a, env)?, self.eval(b, env)?);
                arith(*op, x, y, e.ty)?
            }
            K::Neg(a) => negate(self.eval(a, env)?)?,
            K::Concat(a, b, strings) => self.concat(a, b, *strings, env)?,
            K::Regex {
                expr,
                pattern,
                negated,
                case_insensitive,
            } => {
                let (s, p) = (self.eval(expr, env)?, self.eval(pattern, env)?);
                self.regex_match(s, p, *negated, *case_insensitive, false)?
            }
            K::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
            } => {
                let (s, p) = (self.eval(expr, env)?, self.eval(pattern, env)?);
                self.regex_match(s, p, *negated, *case_insensitive, true)?
            }
            K::InList(..)
            | K::InSubquery(..)
            | K::Exists(_)
            | K::ScalarSubquery(_)
            | K::ArraySubquery(_)
            | K::Array(_)
            | K::AnyArray(..)
            | K::Case { .. } => self.eval_compound(e, env)?,
            K::Cast(inner) => {
                let value = self.eval(inner, env)?;
                types::cast(value, inner.ty, e.ty, self.catalog)?
            }
            K::Subscript(array, index) => {
                let (arr, i) = (self.eval(array, env)?, self.eval(index, env)?);
                match (arr, i) {
                    (Datum::Array(items), Datum::Int(i)) if i >= 1 => {
                        items.get(i as usize - 1).cloned().unwrap_or(Datum::Null)
                    }
                    _ => Datum::Null,
                }
            }
            K::Window { level, index } => env.window(*level, *index)?,
            K::SetValue { level, index } => env.set_value(*level, *index)?,
            K::Call(func, args) => {
                let mut values = Vec::with_capacity(args.len());
                for arg in args {
                    values.push(self.eval(arg, env)?);
                }
                let types: Vec<CType> = args.iter().map(|a| a.ty).collect();
                match functions::call(self, *func, values, &types)? {
                    // A function computes integers in i64: its result must fit its type
                    // (`abs` of int's minimum, `gcd` of it and 0 are 22003).
                    Datum::Int(i)
                        if matches!(e.ty, CType::Sql(SqlType::SmallInt | SqlType::Int)) =>
                    {
                        types::int_in_range(i, e.ty)?
                    }
                    result => result,
                }
            }
        })
    }

    /// IN, subqueries, arrays, ANY/ALL and CASE.
    fn eval_compound(&mut self, e: &CExpr, env: &Env) -> SqlResult<Datum> {
        use ExprKind as K;
        Ok(match &e.kind {
            K::InList(a, items, negated) => {
                let x = self.eval(a, env)?;
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    values.push(self.eval(item, env)?);
                }
                member(&x, &values, *negated)?
            }
            K::InSubquery(a, sub, negated) => {
                let x = self.eval(a, env)?;
                if let Some(set) = self.in_set(a, sub, env)? {
                    return Ok(set.member(&x, *negated));
                }
                let rows = self.subquery_rows(sub, env)?;
                let padded = sub_column_is_char(sub);
                let values: Vec<Datum> = rows
                    .iter()
                    .map(|r| unpadded(r.first().cloned().unwrap_or(Datum::Null), padded))
                    .collect();
                member(&x, &values, *negated)?
            }
            K::Exists(sub) => Datum::Bool(!self.subquery_rows(sub, env)?.is_empty()),
            K::ScalarSubquery(sub) => {
                let rows = self.subquery_rows(sub, env)?;
                match rows.as_slice() {
                    [] => Datum::Null,
                    [row] => row.first().cloned().unwrap_or(Datum::Null),
                    _ => {
                        return Err(SqlError::new(
                            "21000",
                            "more than one row returned by a subquery used as an expression",
                        ));
                    }
                }
            }
            K::ArraySubquery(sub) => {
                let rows = self.subquery_rows(sub, env)?;
                Datum::Array(
                    rows.iter()
                        .map(|r| r.first().cloned().unwrap_or(Datum::Null))
                        .collect(),
                )
            }
            K::Array(items) => {
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    values.push(self.eval(item, env)?);
                }
                Datum::Array(values)
            }
            K::AnyArray(a, op, array, all) => {
                let x = self.eval(a, env)?;
                let arr = self.eval(array, env)?;
                any_all(&x, *op, &arr, *all)?
            }
            K::Case {
                operand,
                whens,
                otherwise,
            } => self.case(operand.as_deref(), whens, otherwise.as_deref(), env)?,
            _ => return Err(SqlError::internal("eval_compound of a simple expression")),
        })
    }

    fn param(&self, index: usize, ty: CType) -> SqlResult<Datum> {
        let value = self.params.get(index).cloned().ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_PARAMETER,
                format!("there is no parameter ${}", index + 1),
            )
        })?;
        match Datum::from_value(value) {
            Datum::Text(text) if !ty.is_text_like() => types::from_text(&text, ty, self.catalog),
            other => Ok(other),
        }
    }

    fn and_or(&mut self, a: &CExpr, b: &CExpr, env: &Env, and: bool) -> SqlResult<Datum> {
        let x = truth(&self.eval(a, env)?)?;
        if x == Some(!and) {
            return Ok(Datum::Bool(!and));
        }
        let y = truth(&self.eval(b, env)?)?;
        Ok(match (x, y) {
            (_, Some(v)) if v != and => Datum::Bool(v),
            (Some(_), Some(v)) => Datum::Bool(v),
            _ => Datum::Null,
        })
    }

    fn concat(&mut self, a: &CExpr, b: &CExpr, strings: bool, env: &Env) -> SqlResult<Datum> {
        let (x, y) = (self.eval(a, env)?, self.eval(b, env)?);
        if strings {
            return Ok(
                match (
                    types::cast_to_text(&x, a.ty, self.catalog),
                    types::cast_to_text(&y, b.ty, self.catalog),
                ) {
                    (Some(l), Some(r)) => {
                        // Checked before the joined text is made: past 1 GB it never exists.
                        limits::check_text_len(l.len().saturating_add(r.len()))?;
                        Datum::Text(l + &r)
                    }
                    _ => Datum::Null,
                },
            );
        }
        let items = |d: &Datum| match d {
            Datum::Array(a) => a.len(),
            _ => 1,
        };
        limits::check_array_len(items(&x).saturating_add(items(&y)))?;
        Ok(match (x, y) {
            (Datum::Null, other) | (other, Datum::Null) => other,
            (Datum::Array(mut l), Datum::Array(r)) => {
                l.extend(r);
                Datum::Array(l)
            }
            (Datum::Array(mut l), item) => {
                l.push(item);
                Datum::Array(l)
            }
            (item, Datum::Array(r)) => {
                let mut items = vec![item];
                items.extend(r);
                Datum::Array(items)
            }
            _ => return Err(SqlError::internal("array concatenation of two scalars")),
        })
    }

    /// `~` (or LIKE, turned into a regular expression) on text.
    fn regex_match(
        &mut self,
        s: Datum,
        p: Datum,
        negated: bool,
        case_insensitive: bool,
        like: bool,
    ) -> SqlResult<Datum> {
        let (Datum::Text(s), Datum::Text(p)) = (s, p) else {
            return Ok(Datum::Null);
        };
        // A T-SQL session's LIKE has no escape character, as SQL Server's has none.
        let escapes = self.session.state.typing == crate::expr::Typing::Postgres;
        let (pattern, dangling) = if like {
            like_to_regex(&p, escapes)
        } else {
            (p, false)
        };
        let key = (pattern, case_insensitive);
        if !self.regexes.contains_key(&key) {
            let built = regex::RegexBuilder::new(&key.0)
                .case_insensitive(case_insensitive)
                // PostgreSQL's `.` matches a newline (its `n` flag is off by default).
                .dot_matches_new_line(true)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| SqlError::new("2201B", format!("invalid regular expression: {e}")))?;
            self.regexes.insert(key.clone(), built);
        }
        let matched = self.regexes.get(&key).is_some_and(|r| r.is_match(&s));
        if dangling {
            return match matched {
                true => Err(SqlError::new(
                    sqlstate::INVALID_ESCAPE_SEQUENCE,
                    "LIKE pattern must not end with escape character",
                )),
                false => Ok(Datum::Bool(negated)),
            };
        }
        Ok(Datum::Bool(matched != negated))
    }

    fn case(
        &mut self,
        operand: Option<&CExpr>,
        whens: &[(CExpr, CExpr)],
        otherwise: Option<&CExpr>,
        env: &Env,
    ) -> SqlResult<Datum> {
        let value = operand.map(|o| self.eval(o, env)).transpose()?;
        for (condition, result) in whens {
            let c = self.eval(condition, env)?;
            let hit = match &value {
                Some(v) => v.sql_cmp(&c) == Some(Ordering::Equal),
                None => truth(&c)? == Some(true),
            };
            if hit {
                return self.eval(result, env);
            }
        }
        match otherwise {
            Some(o) => self.eval(o, env),
            None => Ok(Datum::Null),
        }
    }

    /// The query's result rows as the SQL layer's values of the columns' output types.
    pub fn output(&self, rows: Rows, columns: &[(String, CType)]) -> Vec<Vec<Value>> {
        rows.into_iter()
            .map(|row| {
                row.into_iter()
                    .zip(columns)
                    .map(|(d, (_, ty))| match ty {
                        CType::Sql(_) if !matches!(d, Datum::Array(_)) => {
                            d.to_value().unwrap_or(Value::Null)
                        }
                        _ => types::to_text(&d, *ty, self.catalog).map_or(Value::Null, Value::Text),
                    })
                    .collect()
            })
            .collect()
    }
}

/// A hash of one side of an equi-join: the other side's key expression, and the rows of
/// this side by key.
struct Probe<'p> {
    left_key: &'p CExpr,
    buckets: Rc<Buckets>,
}

/// Where a join's right item's columns are in its level's row (`split..end`), and whether
/// its rows are read once per execution (a table, a catalog relation, a system view), so
/// that a hash of them can be kept.
#[derive(Clone, Copy)]
struct Sides {
    split: usize,
    end: usize,
    level: usize,
    stable: bool,
}

impl Sides {
    fn new(item: &FromItem, split: usize, end: usize, level: usize) -> Sides {
        let stable = matches!(
            item,
            FromItem::Table(_) | FromItem::Relation(_) | FromItem::View(..)
        );
        Sides {
            split,
            end,
            level,
            stable,
        }
    }
}

/// Whether `e` reads only columns of `level` (no outer row).
fn reads_only_level(e: &CExpr, level: usize) -> bool {
    let mut only = true;
    visit_columns(e, &mut |l, _| only &= l == level);
    only
}

/// Whether equal values of the two types hash alike (same kind of datum).
fn hashable(a: CType, b: CType) -> bool {
    a == b || (a.is_integer_like() && b.is_integer_like()) || (a.is_text_like() && b.is_text_like())
}

fn is_numeric(t: CType) -> bool {
    matches!(t, CType::Sql(ty) if ty.is_numeric())
}

/// A datum as a hash key: equal SQL values of hashable types give equal keys.
fn hash_key(d: &Datum) -> String {
    match d {
        // As an integral numeric's key: a set operation's column may hold both (1 = 1.0).
        Datum::Int(i) => format!("n{i}e0"),
        // Length first: no text can pass for a separator or for several values (a row's
        // keys are joined with U+001F, an array's items with commas).
        Datum::Text(s) => format!("t{}:{s}", s.len()),
        // -0 equals 0.
        Datum::Float(f) if *f == 0.0 => "f0".to_string(),
        Datum::Float(f) => format!("f{f:?}"),
        // 1.50 equals 1.5000: the digits without trailing fraction zeros; 1 mon equals
        // 30 days; a date equals the timestamp of its midnight (both keyed as a timestamp).
        Datum::Other(
            value @ (Value::Numeric { .. }
            | Value::Interval(_)
            | Value::Date(_)
            | Value::Timestamp(_)),
        ) => {
            let mut key = String::new();
            crate::value::push_value_key(value, &mut key);
            key
        }
        Datum::Array(items) => {
            let keys: Vec<String> = items.iter().map(hash_key).collect();
            format!("a[{}]", keys.join(","))
        }
        other => format!("{other:?}"),
    }
}

/// PostgreSQL's error for a `string_agg` past 1 GB.
fn string_agg_too_long(held: usize, more: usize) -> SqlError {
    SqlError::new(sqlstate::PROGRAM_LIMIT_EXCEEDED, "out of memory").with_detail(format!(
        "Cannot enlarge string buffer containing {held} bytes by {more} more bytes."
    ))
}

/// What `rows` weigh in memory.
fn rows_bytes(rows: &Rows) -> usize {
    rows.iter().map(|row| row_bytes(row)).sum()
}

/// What a row weighs in memory.
pub(super) fn row_bytes(row: &[Datum]) -> usize {
    std::mem::size_of::<Vec<Datum>>() + row.iter().map(Datum::held_bytes).sum::<usize>()
}

/// A row's key for DISTINCT, set operations and DISTINCT aggregates: equal SQL values
/// give equal keys (numerics of other scales, 0 and -0 included).
fn row_key(row: &[Datum]) -> String {
    let keys: Vec<String> = row.iter().map(hash_key).collect();
    keys.join("\u{1f}")
}

/// Whether a FROM step's condition can be tested on its table's rows as they are read:
/// it reads only that table's columns (`lo..hi` of `level`), no outer row, and calls no
/// function and runs no subquery (which might need the engine session the read holds,
/// or have effects, such as `nextval`, whose count would change).
fn pushable(e: &CExpr, level: usize, lo: usize, hi: usize) -> bool {
    let mut ok = true;
    e.walk(&mut |node| {
        ok &= match &node.kind {
            ExprKind::Column { level: l, index } => *l == level && (lo..hi).contains(index),
            ExprKind::Call(..)
            | ExprKind::Window { .. }
            | ExprKind::SetValue { .. }
            | ExprKind::InSubquery(..)
            | ExprKind::Exists(_)
            | ExprKind::ScalarSubquery(_)
            | ExprKind::ArraySubquery(_) => false,
            _ => true,
        }
    });
    ok
}

/// Whether every column of `level` that `e` reads is in `lo..hi`.
fn reads_within(e: &CExpr, level: usize, lo: usize, hi: usize) -> bool {
    let mut inside = true;
    visit_columns(e, &mut |l, i| inside &= l != level || (lo..hi).contains(&i));
    inside
}

/// The AND-ed parts of a condition.
fn conjuncts<'e>(e: &'e CExpr, out: &mut Vec<&'e CExpr>) {
    match &e.kind {
        ExprKind::And(a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        _ => out.push(e),
    }
}

/// Unary minus.
fn negate(d: Datum) -> SqlResult<Datum> {
    Ok(match d {
        Datum::Null => Datum::Null,
        Datum::Int(i) => Datum::Int(i.checked_neg().ok_or_else(|| {
            SqlError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, "integer out of range")
        })?),
        Datum::Float(f) => Datum::Float(-f),
        other => Datum::from_value(
            other
                .to_value()
                .ok_or_else(|| SqlError::unsupported("minus on an array"))?
                .neg()?,
        ),
    })
}

/// SQL's three-valued truth of a condition's value.
fn truth(d: &Datum) -> SqlResult<Option<bool>> {
    match d {
        Datum::Bool(b) => Ok(Some(*b)),
        Datum::Null => Ok(None),
        other => Err(SqlError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!("a condition evaluated to {other:?}, not a boolean"),
        )),
    }
}

fn compare(op: CmpOp, x: &Datum, y: &Datum) -> SqlResult<Datum> {
    if x.is_null() || y.is_null() {
        return Ok(Datum::Null);
    }
    let ordering = x.sql_cmp(y).ok_or_else(|| {
        SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!(
                "operator does not exist: {} {} {}",
                x.kind_name(),
                op.symbol(),
                y.kind_name()
            ),
        )
    })?;
    Ok(Datum::Bool(match op {
        CmpOp::Eq => ordering == Ordering::Equal,
        CmpOp::NotEq => ordering != Ordering::Equal,
        CmpOp::Lt => ordering == Ordering::Less,
        CmpOp::LtEq => ordering != Ordering::Greater,
        CmpOp::Gt => ordering == Ordering::Greater,
        CmpOp::GtEq => ordering != Ordering::Less,
    }))
}

/// `x IN (values)`, or NOT IN, with SQL's NULL rules.
/// Whether a subquery's (first) column is char(n), whose padding is not its value.
fn sub_column_is_char(sub: &SubPlan) -> bool {
    matches!(
        sub.plan.columns.first(),
        Some((_, CType::Sql(SqlType::Char(_))))
    )
}

/// A char(n) value without its trailing spaces (when `padded`), as it compares.
fn unpadded(d: Datum, padded: bool) -> Datum {
    match d {
        Datum::Text(s) if padded => Datum::Text(s.trim_end_matches(' ').to_string()),
        other => other,
    }
}

/// An IN subquery's values, hashed (see `Exec::in_set`).
#[derive(Default)]
struct InSet {
    keys: HashSet<String>,
    has_null: bool,
}

impl InSet {
    /// `x [NOT] IN (…)` with SQL's NULLs, as [`member`] answers it.
    fn member(&self, x: &Datum, negated: bool) -> Datum {
        if self.keys.is_empty() && !self.has_null {
            // Nothing to be in: false (true for NOT IN), whatever x is.
            Datum::Bool(negated)
        } else if x.is_null() {
            Datum::Null
        } else if self.keys.contains(&hash_key(x)) {
            Datum::Bool(!negated)
        } else if self.has_null {
            Datum::Null
        } else {
            Datum::Bool(negated)
        }
    }
}

fn member(x: &Datum, values: &[Datum], negated: bool) -> SqlResult<Datum> {
    if values.is_empty() {
        // Nothing to be in: false (true for NOT IN), whatever x is.
        return Ok(Datum::Bool(negated));
    }
    if x.is_null() {
        return Ok(Datum::Null);
    }
    let mut saw_null = false;
    for v in values {
        match compare(CmpOp::Eq, x, v)? {
            Datum::Bool(true) => return Ok(Datum::Bool(!negated)),
            Datum::Null => saw_null = true,
            _ => {}
        }
    }
    Ok(if saw_null {
        Datum::Null
    } else {
        Datum::Bool(negated)
    })
}

fn any_all(x: &Datum, op: CmpOp, array: &Datum, all: bool) -> SqlResult<Datum> {
    let Datum::Array(items) = array else {
        return Ok(Datum::Null);
    };
    let mut saw_null = false;
    for item in items {
        match compare(op, x, item)? {
            Datum::Bool(b) if b != all => return Ok(Datum::Bool(b)),
            Datum::Null => saw_null = true,
            _ => {}
        }
    }
    Ok(if saw_null {
        Datum::Null
    } else {
        Datum::Bool(all)
    })
}

fn arith(op: ArithOp, x: Datum, y: Datum, ty: CType) -> SqlResult<Datum> {
    if x.is_null() || y.is_null() {
        return Ok(Datum::Null);
    }
    if let (Datum::Int(a), Datum::Int(b)) = (&x, &y) {
        let (a, b) = (*a, *b);
        if matches!(op, ArithOp::Div | ArithOp::Mod) && b == 0 {
            return Err(SqlError::new(
                sqlstate::DIVISION_BY_ZERO,
                "division by zero",
            ));
        }
        let result = match op {
            ArithOp::Add => a.checked_add(b),
            ArithOp::Sub => a.checked_sub(b),
            ArithOp::Mul => a.checked_mul(b),
            ArithOp::Div => a.checked_div(b),
            ArithOp::Mod => Some(a.checked_rem(b).unwrap_or(0)),
        };
        let (min, max, name) = match ty {
            CType::Sql(SqlType::SmallInt) => (i64::from(i16::MIN), i64::from(i16::MAX), "smallint"),
            CType::Sql(SqlType::Int) => (i64::from(i32::MIN), i64::from(i32::MAX), "integer"),
            _ => (i64::MIN, i64::MAX, "bigint"),
        };
        return result
            .filter(|v| (min..=max).contains(v))
            .map(Datum::Int)
            .ok_or_else(|| {
                SqlError::new(
                    sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                    format!("{name} out of range"),
                )
            });
    }
    let (Some(a), Some(b)) = (x.to_value(), y.to_value()) else {
        return Err(SqlError::unsupported("arithmetic on arrays"));
    };
    let value = match op {
        ArithOp::Add => a.add(&b),
        ArithOp::Sub => a.sub(&b),
        ArithOp::Mul => a.mul(&b),
        ArithOp::Div => a.div(&b),
        ArithOp::Mod => a.rem(&b),
    }?;
    Ok(Datum::from_value(value))
}

/// A LIKE pattern as an anchored regular expression (`%` any run, `_` one character, `\`
/// escapes the next), and whether it ends in a lone `\`. Such a pattern matches nothing,
/// and PostgreSQL's matcher fails with 22025 when it reaches that `\` with text left: the
/// expression is then the text before it followed by at least one character. Without
/// `escapes` (T-SQL), `\` is an ordinary character.
fn like_to_regex(pattern: &str, escapes: bool) -> (String, bool) {
    let mut out = String::from("(?s)^");
    let mut chars = pattern.chars();
    let mut dangling = false;
    while let Some(c) = chars.next() {
        match c {
            '%' => out.push_str(".*"),
            '_' => out.push('.'),
            '\\' if escapes => match chars.next() {
                Some(next) => out.push_str(&regex::escape(&next.to_string())),
                None => {
                    out.push_str(".+");
                    dangling = true;
                }
            },
            other => out.push_str(&regex::escape(&other.to_string())),
        }
    }
    out.push('$');
    (out, dangling)
}

/// UNION, INTERSECT and EXCEPT (each without ALL removes duplicates).
fn set_operation(op: SetOperator, all: bool, left: Rows, right: Rows) -> Rows {
    let mut out = match op {
        SetOperator::Union => left.into_iter().chain(right).collect::<Rows>(),
        // A left row stays while the right side has a copy of it left to pair with
        // (INTERSECT ALL: min(m, n) copies) or none left to cancel it (EXCEPT ALL: m - n).
        _ => {
            let intersect = op == SetOperator::Intersect;
            let mut counts: HashMap<String, usize> = HashMap::new();
            for r in &right {
                *counts.entry(row_key(r)).or_default() += 1;
            }
            left.into_iter()
                .filter(|r| {
                    let left_in_right = match counts.get_mut(&row_key(r)) {
                        Some(n) if *n > 0 => {
                            if all {
                                *n -= 1;
                            }
                            true
                        }
                        _ => false,
                    };
                    left_in_right == intersect
                })
                .collect()
        }
    };
    if !all {
        let mut seen = HashSet::new();
        out.retain(|r| seen.insert(row_key(r)));
    }
    out
}

/// Sorts (expression keys, output row) pairs by ORDER BY; returns the rows. ASC puts
/// NULLs last and DESC first, unless NULLS FIRST/LAST says otherwise.
fn sort_rows(mut keyed: Vec<(Vec<Datum>, Vec<Datum>)>, order: &[SortKey]) -> Rows {
    if !order.is_empty() {
        keyed.sort_by(|(ka, a), (kb, b)| {
            let mut expr_key = 0;
            for key in order {
                let (x, y) = match &key.by {
                    SortBy::Output(i) => (a.get(*i), b.get(*i)),
                    SortBy::Expr(_) => {
                        let pair = (ka.get(expr_key), kb.get(expr_key));
                        expr_key += 1;
                        pair
                    }
                };
                let (x, y) = (x.unwrap_or(&Datum::Null), y.unwrap_or(&Datum::Null));
                let ordering = crate::select::order_by_key(
                    (x.is_null(), y.is_null()),
                    key.nulls_first,
                    key.desc,
                    || x.order_cmp(y),
                );
                if ordering != Ordering::Equal {
                    return ordering;
                }
            }
            Ordering::Equal
        });
    }
    keyed.into_iter().map(|(_, row)| row).collect()
}

/// One aggregate's running state (a window's frame clones it to read it midway).
#[derive(Clone)]
pub(super) enum Accumulator {
    Count(i64),
    /// sum and avg: the running sum (integers widened to numeric, select.rs's `widen`)
    /// and the count.
    Sum(Option<Value>, i64),
    Extreme(Option<Datum>),
    StringAgg(Option<String>),
    ArrayAgg(Option<Vec<Datum>>),
    Bool(Option<bool>),
    /// DISTINCT: the argument values seen, and the state they feed.
    Distinct(HashSet<String>, Box<Accumulator>),
    /// ORDER BY: every row's (keys, arguments), sorted and fed to the state at the end.
    Ordered(Vec<(Vec<Datum>, Vec<Datum>)>, Box<Accumulator>),
}

impl Accumulator {
    pub(super) fn new(spec: &AggSpec) -> Accumulator {
        let plain = match spec.func {
            AggFunc::CountStar | AggFunc::Count => Accumulator::Count(0),
            AggFunc::Sum | AggFunc::Avg => Accumulator::Sum(None, 0),
            AggFunc::Min | AggFunc::Max => Accumulator::Extreme(None),
            AggFunc::StringAgg => Accumulator::StringAgg(None),
            AggFunc::ArrayAgg => Accumulator::ArrayAgg(None),
            AggFunc::BoolAnd | AggFunc::BoolOr => Accumulator::Bool(None),
        };
        let unordered = if spec.distinct {
            Accumulator::Distinct(HashSet::new(), Box::new(plain))
        } else {
            plain
        };
        if spec.order.is_empty() {
            unordered
        } else {
            Accumulator::Ordered(Vec::new(), Box::new(unordered))
        }
    }

    /// Adds one row's arguments; returns the bytes the state keeps of them (string_agg's
    /// text, array_agg's items, DISTINCT's keys: the rest keep a value of fixed size).
    pub(super) fn add(&mut self, spec: &AggSpec, mut args: Vec<Datum>) -> SqlResult<usize> {
        if let Accumulator::Ordered(rows, _) = self {
            let keys = args.split_off(spec.args.len().min(args.len()));
            let kept = row_bytes(&keys) + row_bytes(&args);
            rows.push((keys, args));
            return Ok(kept);
        }
        let first = args.first().cloned().unwrap_or(Datum::Null);
        if spec.func == AggFunc::CountStar {
            if let Accumulator::Count(n) = self {
                *n += 1;
            }
            return Ok(0);
        }
        if first.is_null() && spec.func != AggFunc::ArrayAgg {
            return Ok(0);
        }
        let mut kept = 0;
        match self {
            Accumulator::Distinct(seen, inner) => {
                let key = row_key(&args);
                let key_bytes = std::mem::size_of::<String>() + key.len();
                if seen.insert(key) {
                    kept = key_bytes + inner.add(spec, args)?;
                }
            }
            Accumulator::Ordered(..) => {
                return Err(SqlError::internal(
                    "an ordered aggregate's rows fed unsorted",
                ));
            }
            Accumulator::Count(n) => *n += 1,
            Accumulator::Sum(sum, n) => {
                let Some(value) = first.to_value() else {
                    return Err(SqlError::new(
                        sqlstate::UNDEFINED_FUNCTION,
                        "sum() and avg() of an array do not exist",
                    ));
                };
                let widened = crate::select::widen(value);
                *sum = Some(match sum.take() {
                    None => widened,
                    Some(s) => s.add(&widened)?,
                });
                *n += 1;
            }
            Accumulator::Extreme(best) => {
                let better = match best {
                    None => true,
                    Some(b) => {
                        let o = first.order_cmp(b);
                        let wanted = if spec.func == AggFunc::Min {
                            Ordering::Less
                        } else {
                            Ordering::Greater
                        };
                        o == wanted
                            || o == Ordering::Equal
                                && matches!(first, Datum::Other(Value::Interval(_)))
                    }
                };
                if better {
                    *best = Some(first);
                }
            }
            Accumulator::StringAgg(acc) => {
                let separator = args.get(1).cloned().unwrap_or(Datum::Null);
                kept = string_agg_add(acc, first, separator)?;
            }
            Accumulator::ArrayAgg(items) => {
                let items = items.get_or_insert_with(Vec::new);
                limits::check_array_len(items.len() + 1)?;
                kept = first.held_bytes();
                items.push(first);
            }
            Accumulator::Bool(acc) => {
                let b = first == Datum::Bool(true);
                *acc = Some(match (*acc, spec.func) {
                    (None, _) => b,
                    (Some(a), AggFunc::BoolAnd) => a && b,
                    (Some(a), _) => a || b,
                });
            }
        }
        Ok(kept)
    }

    pub(super) fn finish(self, spec: &AggSpec) -> SqlResult<Datum> {
        Ok(match self {
            Accumulator::Distinct(_, inner) => inner.finish(spec)?,
            Accumulator::Ordered(rows, mut inner) => {
                // A stable sort: rows with equal keys keep the order they came in.
                for args in sort_rows(rows, &spec.order) {
                    inner.add(spec, args)?;
                }
                inner.finish(spec)?
            }
            Accumulator::Count(n) => Datum::Int(n),
            Accumulator::Sum(None, _) => Datum::Null,
            Accumulator::Sum(Some(sum), n) => {
                let value = if spec.func == AggFunc::Avg {
                    crate::select::average(sum, n)?
                } else {
                    sum
                };
                // The declared type: a sum of integers back to bigint (past its range:
                // 22003, as PostgreSQL's int8 sum), of reals to real.
                match spec.ty {
                    CType::Sql(ty @ (SqlType::BigInt | SqlType::Real)) => {
                        Datum::from_value(value.coerce(&ty)?)
                    }
                    _ => Datum::from_value(value),
                }
            }
            Accumulator::Extreme(best) => best.unwrap_or(Datum::Null),
            Accumulator::StringAgg(s) => s.map_or(Datum::Null, Datum::Text),
            Accumulator::ArrayAgg(items) => items.map_or(Datum::Null, Datum::Array),
            Accumulator::Bool(b) => b.map_or(Datum::Null, Datum::Bool),
        })
    }
}

/// string_agg's step: appends `value` (after `separator` unless it is the first); returns
/// the bytes the state grew by.
fn string_agg_add(acc: &mut Option<String>, value: Datum, separator: Datum) -> SqlResult<usize> {
    let Datum::Text(s) = value else {
        return Ok(0);
    };
    let Some(joined) = acc.as_mut() else {
        let kept = s.len();
        *acc = Some(s);
        return Ok(kept);
    };
    let sep = match &separator {
        Datum::Text(sep) => sep.as_str(),
        _ => "",
    };
    let len = joined.len().saturating_add(sep.len() + s.len());
    if len > limits::TEXT_BYTES_MAX {
        return Err(string_agg_too_long(joined.len(), len - joined.len()));
    }
    let kept = len - joined.len();
    joined.push_str(sep);
    joined.push_str(&s);
    Ok(kept)
}
