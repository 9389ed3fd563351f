//! T-SQL, SQL Server's dialect, as a front end to the PostgreSQL-dialect session: a script
//! is split into batches at `GO` lines ([`batch`]), each batch into statements on
//! sqlparser's tokens (`MsSqlDialect`, [`parse`]); control flow and variables run here, and
//! every other statement is translated to PostgreSQL text ([`translate`], [`ddl`]) and run
//! by the [`SqlSession`] underneath, so both dialects share one planner and executor.

mod batch;
mod cache;
mod dbcc;
mod ddl;
mod objects;
mod parse;
mod procedures;
mod translate;

pub use batch::{Batch, split_batches};

use crate::error::{SqlError, SqlResult, sqlstate};
use crate::session::{SqlSession, StatementResult};
use crate::value::Value;
use ddl::TableDef;
use parse::{Stmt, is_word, word};
use sqlparser::tokenizer::Token;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// A batch parsed once: its statements, ready to run many times
/// ([`TsqlSession::execute_prepared_batch`]).
#[derive(Clone, Debug)]
pub struct TsqlBatch {
    stmts: Arc<Vec<Stmt>>,
}

impl TsqlBatch {
    /// Parses one batch (no `GO` lines).
    pub fn parse(text: &str) -> SqlResult<TsqlBatch> {
        Ok(TsqlBatch {
            stmts: Arc::new(parse::parse_batch(text)?),
        })
    }

    /// The table the batch's first INSERT writes to, if it has one (inside WHILE, IF and
    /// BEGIN … END too): the table a workload reports on.
    pub fn insert_table(&self) -> Option<String> {
        let none = |_: &str| None;
        self.stmts.iter().find_map(|s| insert_table_of(s, &none, 0))
    }

    /// [`insert_table`](Self::insert_table), following `EXEC` into the database's stored
    /// procedures (seed 002's `EXEC dbo.InsertCustomerData …` reports on the table the
    /// procedure inserts into).
    pub fn insert_table_in(&self, sql: &crate::SqlDatabase) -> Option<String> {
        let tsql = sql.metadata().tsql;
        let procedure = |name: &str| {
            let object = tsql
                .iter()
                .find(|o| o.kind == crate::schema::TsqlKind::Procedure && o.name == name)?;
            procedures::parse_procedure(&object.text).ok()
        };
        self.stmts
            .iter()
            .find_map(|s| insert_table_of(s, &procedure, 0))
    }
}

/// The first INSERT's table in `stmt`; `procedure` gives an EXEC's procedure.
fn insert_table_of(
    stmt: &Stmt,
    procedure: &dyn Fn(&str) -> Option<parse::Procedure>,
    depth: u32,
) -> Option<String> {
    let find = |stmts: &[Stmt]| {
        stmts
            .iter()
            .find_map(|s| insert_table_of(s, procedure, depth))
    };
    match stmt {
        Stmt::Plain(toks) if is_word(toks.first(), "INSERT") => {
            let at = if is_word(toks.get(1), "INTO") { 2 } else { 1 };
            translate::name_of(toks.get(at..parse::name_end(toks, at))?).ok()
        }
        Stmt::Plain(toks)
            if (is_word(toks.first(), "EXEC") || is_word(toks.first(), "EXECUTE"))
                && depth < MAX_NESTING =>
        {
            let returns = parse::is_variable(toks.get(1)) && matches!(toks.get(2), Some(Token::Eq));
            let at = if returns { 3 } else { 1 };
            let name = translate::name_of(toks.get(at..parse::name_end(toks, at))?).ok()?;
            insert_table_of(&procedure(&name)?.body, procedure, depth + 1)
        }
        Stmt::While { body, .. } => insert_table_of(body, procedure, depth),
        Stmt::If {
            then, otherwise, ..
        } => insert_table_of(then, procedure, depth).or_else(|| {
            otherwise
                .as_deref()
                .and_then(|o| insert_table_of(o, procedure, depth))
        }),
        Stmt::Block(body) => find(body),
        Stmt::TryCatch { body, handler } => find(body).or_else(|| find(handler)),
        Stmt::At { stmt, .. } => insert_table_of(stmt, procedure, depth),
        _ => None,
    }
}

/// Makes a statement's PostgreSQL text from its tokens (variables as the resolver gives
/// them: literals, or parameters when it is prepared).
type Translation<'a> = dyn Fn(&[Token], &dyn translate::Resolve) -> SqlResult<String> + 'a;

/// How a statement ended: on to the next, a RETURN (with a function's value), or a BREAK
/// or CONTINUE for the WHILE around it.
enum Flow {
    Next,
    Return(Option<Value>),
    Break,
    Continue,
}

impl Flow {
    /// The flow where a batch, routine or dynamic string ends: BREAK and CONTINUE must be
    /// inside a WHILE (SQL Server errors 135, 136).
    fn outside_loop(self) -> SqlResult<Flow> {
        let (what, number) = match self {
            Flow::Break => ("BREAK", 135),
            Flow::Continue => ("CONTINUE", 136),
            other => return Ok(other),
        };
        Err(SqlError::new(
            sqlstate::SYNTAX_ERROR,
            format!(
                "cannot use a {what} statement outside the scope of a WHILE statement (SQL Server error {number})"
            ),
        ))
    }
}

/// The most values an `IN (SELECT …)` takes (it is run first, its values held in memory).
const MAX_SUBQUERY_VALUES: usize = 100_000;

/// `IN (SELECT …)` of no rows.
const EMPTY_IN: &str = "IN (NULL) IS NOT NULL";

/// Whether `toks` have an `EXISTS (SELECT …)` or `IN (SELECT …)` the session runs first.
fn has_subquery(toks: &[Token]) -> bool {
    (0..toks.len()).any(|i| is_subquery(toks, i))
}

fn is_subquery(toks: &[Token], i: usize) -> bool {
    // Checked on every statement a loop runs: no allocation before the `(`.
    let operator = matches!(toks.get(i), Some(Token::Word(w)) if w.quote_style.is_none()
        && (w.value.eq_ignore_ascii_case("EXISTS") || w.value.eq_ignore_ascii_case("IN")));
    operator
        && matches!(toks.get(i + 1), Some(Token::LParen))
        && is_word(toks.get(i + 2), "SELECT")
        && translate::sys_view(toks, i + 1).is_none()
}

/// A qualifier in `query` (`o` of `o.name`) that the query itself never names otherwise
/// (as a table or an alias): a reference to an outer query's table.
fn outer_reference(query: &[Token]) -> Option<String> {
    let plain = |t: Option<&Token>| match t {
        Some(Token::Word(w)) => Some(w.value.to_lowercase()),
        _ => None,
    };
    let mut named = std::collections::HashSet::new();
    let mut qualifiers = Vec::new();
    for (i, token) in query.iter().enumerate() {
        let Some(name) = plain(Some(token)) else {
            continue;
        };
        let qualifies =
            matches!(query.get(i + 1), Some(Token::Period)) && plain(query.get(i + 2)).is_some();
        let after_period = i > 0 && matches!(query.get(i - 1), Some(Token::Period));
        if qualifies && !after_period {
            qualifiers.push(name);
        } else {
            named.insert(name);
        }
    }
    qualifiers
        .into_iter()
        .find(|q| !named.contains(q) && q != "dbo" && q != "sys")
}

/// Where an error happened: the line of the statement that failed, in its batch or in its
/// routine's text, and that routine.
#[derive(Clone, Debug, PartialEq)]
struct ErrorPlace {
    line: u32,
    routine: Option<String>,
}

/// An error a CATCH block handles, and where it happened.
struct Caught {
    error: SqlError,
    place: Option<ErrorPlace>,
}

/// SQL Server's limit on nested function calls (error 217).
const MAX_NESTING: u32 = 32;

/// What a T-SQL batch produced, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum TsqlOutput {
    /// A statement's result (rows, or a tag such as `INSERT 0 1`).
    Result(StatementResult),
    /// A `PRINT` message.
    Print(String),
}

/// Loops stop after this many iterations without an end: a bad condition is an error,
/// not a hang.
const MAX_LOOP_ITERATIONS: u64 = 1 << 32;

/// A session that speaks T-SQL: a [`SqlSession`] plus the batch's variables, `@@IDENTITY`,
/// `@@ROWCOUNT`, `SET NOCOUNT` and the T-SQL definitions of the tables it made.
pub struct TsqlSession {
    sql: SqlSession,
    /// Variables of the running batch: name (lower case, with `@`) -> (value, type).
    vars: HashMap<String, (Value, String)>,
    rowcount: i64,
    nocount: bool,
    /// User functions, partition functions and schemes: the database's, as last loaded.
    objects: objects::Objects,
    depth: u32,
    /// The errors the CATCH blocks running now handle, innermost last.
    caught: Vec<Caught>,
    /// Where the error being raised now happened (the innermost statement that failed),
    /// until a CATCH block or the batch takes it.
    failed_at: Option<ErrorPlace>,
    /// The user function or procedure running now (lower case), for ERROR_PROCEDURE().
    routine: Option<String>,
    output: Vec<TsqlOutput>,
    /// Translated statements prepared once (see [`cache`]).
    cache: cache::StatementCache,
    /// The trace flags this session turned on (`DBCC TRACEON(n)`); the global ones
    /// (`DBCC TRACEON(n, -1)`) are the database's.
    trace_flags: BTreeSet<u32>,
}

impl TsqlSession {
    /// Wraps a session.
    pub fn new(mut sql: SqlSession) -> TsqlSession {
        sql.set_typing(crate::expr::Typing::Implicit);
        TsqlSession {
            sql,
            vars: HashMap::new(),
            rowcount: 0,
            nocount: false,
            objects: objects::Objects::default(),
            depth: 0,
            caught: Vec::new(),
            failed_at: None,
            routine: None,
            output: Vec::new(),
            cache: cache::StatementCache::default(),
            trace_flags: BTreeSet::new(),
        }
    }

    /// The PostgreSQL-dialect session underneath.
    pub fn sql_session(&mut self) -> &mut SqlSession {
        &mut self.sql
    }

    /// Runs a script: its batches in order (`GO n` runs one n times), stopping at the
    /// first error (as `sqlcmd -b`). Returns what ran before the error with it.
    pub fn execute_script(&mut self, script: &str) -> (Vec<TsqlOutput>, Option<SqlError>) {
        let batches = match split_batches(script) {
            Ok(batches) => batches,
            Err(error) => return (Vec::new(), Some(error)),
        };
        let mut all = Vec::new();
        for batch in &batches {
            for _ in 0..batch.repeat {
                let (outputs, error) = self.execute_batch(&batch.text);
                all.extend(outputs);
                if let Some(mut error) = error {
                    let at = format!("the batch begins at line {} of the script", batch.line);
                    let detail = match error.detail.take() {
                        Some(detail) => format!("{detail}; {at}"),
                        None => at,
                    };
                    let error = error.with_detail(detail);
                    return (all, Some(error));
                }
            }
        }
        (all, None)
    }

    /// Runs one batch (no `GO` lines); its variables end with it.
    pub fn execute_batch(&mut self, batch: &str) -> (Vec<TsqlOutput>, Option<SqlError>) {
        match TsqlBatch::parse(batch) {
            Ok(batch) => self.execute_prepared_batch(&batch),
            Err(error) => (Vec::new(), Some(error)),
        }
    }

    /// Runs a batch parsed once with [`TsqlBatch::parse`] (a workload's sessions run the
    /// same batch many times); its variables end with it.
    pub fn execute_prepared_batch(
        &mut self,
        batch: &TsqlBatch,
    ) -> (Vec<TsqlOutput>, Option<SqlError>) {
        self.vars.clear();
        self.output.clear();
        self.failed_at = None;
        self.sql.hold_statement_clock();
        let mut outcome = Ok(());
        for stmt in batch.stmts.iter() {
            match self.run(stmt).and_then(Flow::outside_loop) {
                // RETURN in a batch ends the batch.
                Ok(Flow::Return(_)) => break,
                Ok(_) => {}
                Err(error) => {
                    outcome = Err(error);
                    break;
                }
            }
        }
        self.sql.release_statement_clock();
        self.vars.clear();
        let error = outcome.err().map(|error| match self.failed_at.take() {
            Some(place) => with_place(error, &place),
            None => error,
        });
        (std::mem::take(&mut self.output), error)
    }

    fn run(&mut self, stmt: &Stmt) -> SqlResult<Flow> {
        match stmt {
            Stmt::While { cond, body } => {
                let mut iterations = 0u64;
                while self.condition(cond)? {
                    self.sql.poll_interrupt()?;
                    match self.run(body)? {
                        flow @ Flow::Return(_) => return Ok(flow),
                        Flow::Break => break,
                        Flow::Next | Flow::Continue => {}
                    }
                    iterations += 1;
                    if iterations >= MAX_LOOP_ITERATIONS {
                        return Err(SqlError::new(
                            sqlstate::PROGRAM_LIMIT_EXCEEDED,
                            format!("a WHILE loop ran {MAX_LOOP_ITERATIONS} times"),
                        ));
                    }
                }
                Ok(Flow::Next)
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                if self.condition(cond)? {
                    self.run(then)
                } else if let Some(otherwise) = otherwise {
                    self.run(otherwise)
                } else {
                    Ok(Flow::Next)
                }
            }
            Stmt::Block(body) => {
                for stmt in body {
                    match self.run(stmt)? {
                        Flow::Next => {}
                        flow => return Ok(flow),
                    }
                }
                Ok(Flow::Next)
            }
            Stmt::TryCatch { body, handler } => self.try_catch(body, handler),
            Stmt::At { line, stmt } => {
                let outcome = self.run(stmt);
                // The innermost statement's place: the one that failed (ERROR_LINE()).
                if outcome.is_err() && self.failed_at.is_none() {
                    self.failed_at = Some(ErrorPlace {
                        line: *line,
                        routine: self.routine.clone(),
                    });
                }
                outcome
            }
            Stmt::Return(expr) => {
                let value = match expr {
                    Some(expr) => Some(self.eval(expr)?),
                    None => None,
                };
                Ok(Flow::Return(value))
            }
            Stmt::Plain(toks) if toks.len() == 1 && is_word(toks.first(), "BREAK") => {
                Ok(Flow::Break)
            }
            Stmt::Plain(toks) if toks.len() == 1 && is_word(toks.first(), "CONTINUE") => {
                Ok(Flow::Continue)
            }
            other => self.run_simple(other).map(|()| Flow::Next),
        }
    }

    /// A statement that does not change the flow.
    fn run_simple(&mut self, stmt: &Stmt) -> SqlResult<()> {
        match stmt {
            Stmt::Declare(vars) => self.declare(vars),
            Stmt::SetVar { var, op, expr } => self.set_var(var, *op, expr),
            Stmt::SelectAssign {
                items,
                top,
                from: None,
            } if top.is_empty() => {
                for (var, expr) in items {
                    self.set_var(var, None, expr)?;
                }
                Ok(())
            }
            Stmt::SelectAssign { items, top, from } => {
                self.select_assign_from(items, top, from.as_deref().unwrap_or_default())
            }
            Stmt::SetOption(toks) => self.set_option(toks),
            Stmt::BeginTran(name) => {
                let outermost = self.sql.txn_status() == crate::TxnStatus::Idle;
                self.pg("BEGIN")?;
                match name {
                    // A nested BEGIN TRAN's name is not the transaction's (SQL Server).
                    Some(name) if outermost => self.sql.name_transaction(name),
                    _ => Ok(()),
                }
            }
            Stmt::Commit => self.pg("COMMIT").map(drop),
            Stmt::Rollback => self.pg("ROLLBACK").map(drop),
            Stmt::Print(expr) => {
                let value = self.eval(expr)?;
                let text = value.to_pg_text(None).unwrap_or_default();
                self.output.push(TsqlOutput::Print(text));
                Ok(())
            }
            Stmt::CreateFunction(function) => self.create_function(function),
            Stmt::CreateProcedure(procedure) => self.create_procedure(procedure),
            Stmt::Plain(toks) => self.plain(toks),
            Stmt::While { .. }
            | Stmt::If { .. }
            | Stmt::Block(_)
            | Stmt::Return(_)
            | Stmt::TryCatch { .. }
            | Stmt::At { .. } => self.run(stmt).map(drop),
        }
    }

    /// Runs PostgreSQL text on the session underneath; returns its last result.
    fn pg(&mut self, text: &str) -> SqlResult<StatementResult> {
        let mut results = self
            .sql
            .execute(text)
            .map_err(|error| translated_error(error, text))?;
        results
            .pop()
            .ok_or_else(|| SqlError::new(sqlstate::INTERNAL_ERROR, "a statement without a result"))
    }

    /// An expression's value (`SELECT expr` on the session).
    fn eval(&mut self, expr: &[Token]) -> SqlResult<Value> {
        let build = |toks: &[Token], env: &dyn translate::Resolve| {
            Ok(format!("SELECT {}", translate::expr(toks, env)?))
        };
        single_value(self.run_translated(cache::Kind::Value, "", expr, &build)?)
    }

    /// Runs the text `build` makes of `toks`: prepared once and executed with the
    /// variables' values where it can be ([`cache`]), else translated with the values as
    /// literals (user function calls made first) and run as text.
    fn run_translated(
        &mut self,
        kind: cache::Kind,
        extra: &str,
        toks: &[Token],
        build: &Translation<'_>,
    ) -> SqlResult<StatementResult> {
        self.sync_objects()?;
        if !self.calls_user_function(toks)
            && !has_subquery(toks)
            && let Some(result) = self.run_prepared(kind, extra, toks, build)?
        {
            return Ok(result);
        }
        let toks = self.inline_calls(toks)?;
        let text = build(&toks, self)?;
        self.pg(&text)
    }

    /// The cached path of [`run_translated`](Self::run_translated); None: run it as text.
    fn run_prepared(
        &mut self,
        kind: cache::Kind,
        extra: &str,
        toks: &[Token],
        build: &Translation<'_>,
    ) -> SqlResult<Option<StatementResult>> {
        let entry = match self.cache.get(kind, extra, toks) {
            Some(entry) if entry.matches(&self.vars) => entry,
            _ => {
                let params = cache::Parameters::new(self, &self.vars);
                let text = build(toks, &params)?;
                let (vars, preparable) = params.finish();
                let plan = match preparable.then(|| self.sql.prepare(&text)) {
                    Some(Ok(prepared)) => cache::Plan::Prepared {
                        prepared,
                        vars,
                        text,
                    },
                    // The text path gives the error (or runs what does not prepare).
                    _ => cache::Plan::Unprepared,
                };
                self.cache.insert(kind, extra, toks, plan)
            }
        };
        let cache::Plan::Prepared {
            prepared,
            vars,
            text,
        } = &entry.plan
        else {
            return Ok(None);
        };
        let params = cache::bind(vars, &self.vars)?;
        match self.sql.execute_prepared(prepared, &params) {
            Ok(result) => Ok(Some(result)),
            Err(error) => {
                self.cache.clear();
                Err(translated_error(error, text))
            }
        }
    }

    /// Whether `toks` call a user function (its value is computed before translation).
    fn calls_user_function(&self, toks: &[Token]) -> bool {
        !self.objects.functions.is_empty()
            && toks.windows(2).any(|w| {
                matches!((&w[0], &w[1]), (Token::Word(f), Token::LParen)
                    if self.objects.functions.contains_key(&f.value.to_lowercase()))
            })
    }

    fn condition(&mut self, cond: &[Token]) -> SqlResult<bool> {
        match self.eval(cond)? {
            Value::Bool(b) => Ok(b),
            Value::Null => Ok(false),
            other => Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!(
                    "an expression of non-boolean type ({}) where a condition is expected (SQL Server error 4145)",
                    other.type_name()
                ),
            )),
        }
    }

    fn declare(&mut self, vars: &[parse::Declared]) -> SqlResult<()> {
        for (name, ty, init) in vars {
            // A name declared twice is refused when the batch is parsed (error 134); here
            // the same DECLARE runs again (in a loop): as in SQL Server, its `= expr` is
            // assigned again, and without one the variable keeps its value.
            let again = self.vars.get(name).map(|(value, _)| value.clone());
            let ty = translate::pg_type(ty)?;
            let value = match (init, again) {
                (Some(expr), _) => self.typed_value(expr, &ty)?,
                (None, Some(value)) => value,
                (None, None) => Value::Null,
            };
            self.vars.insert(name.clone(), (value, ty));
        }
        Ok(())
    }

    /// A value in a variable's, parameter's or function result's type `ty`, as T-SQL
    /// converts it: a number into a datetime is days since 1900-01-01 (an int argument
    /// for a datetime parameter; a cast to timestamp refuses it), anything else a cast.
    fn converted(&mut self, value: Value, ty: &str) -> SqlResult<Value> {
        if ty == "timestamp" {
            return crate::expr::tsql_datetime(&value);
        }
        let cast = format!("SELECT CAST({} AS {ty})", literal(&value, ty));
        single_value(self.pg(&cast)?)
    }

    /// `CAST((expr) AS ty)`'s value. A datetime variable takes a number as SQL Server
    /// converts one (days since 1900-01-01: `DECLARE @d datetime = 5`), which a cast to
    /// timestamp refuses: its value is converted here, after the expression runs.
    fn typed_value(&mut self, expr: &[Token], ty: &str) -> SqlResult<Value> {
        if ty == "timestamp" {
            let build = |toks: &[Token], env: &dyn translate::Resolve| {
                Ok(format!("SELECT ({})", translate::expr(toks, env)?))
            };
            let kind = cache::Kind::Typed;
            let value = single_value(self.run_translated(kind, "datetime", expr, &build)?)?;
            return crate::expr::tsql_datetime(&value);
        }
        let build = |toks: &[Token], env: &dyn translate::Resolve| {
            Ok(format!(
                "SELECT CAST(({}) AS {ty})",
                translate::expr(toks, env)?
            ))
        };
        single_value(self.run_translated(cache::Kind::Typed, ty, expr, &build)?)
    }

    fn set_var(&mut self, var: &str, op: Option<char>, expr: &[Token]) -> SqlResult<()> {
        let ty = self
            .vars
            .get(var)
            .map(|(_, ty)| ty.clone())
            .ok_or_else(|| undeclared(var))?;
        let value = match op {
            None => self.typed_value(expr, &ty)?,
            Some(op) => {
                let build = |toks: &[Token], env: &dyn translate::Resolve| {
                    let current = env.variable(var)?;
                    let text = translate::expr(toks, env)?;
                    Ok(format!("SELECT CAST(({current}) {op} ({text}) AS {ty})"))
                };
                let extra = format!("{var} {ty}");
                let kind = cache::Kind::Compound(op);
                single_value(self.run_translated(kind, &extra, expr, &build)?)?
            }
        };
        self.vars.insert(var.to_string(), (value, ty));
        Ok(())
    }

    /// `SELECT [TOP (n)] @a = e, … FROM …`: the query's last row gives each variable its
    /// value (in the variable's type); no row leaves them as they were, as in SQL Server.
    fn select_assign_from(
        &mut self,
        items: &[(String, Vec<Token>)],
        top: &[Token],
        from: &[Token],
    ) -> SqlResult<()> {
        if let Some((var, _)) = items.iter().find(|(var, _)| !self.vars.contains_key(var)) {
            return Err(undeclared(var));
        }
        let mut query = vec![Token::make_keyword("SELECT")];
        query.extend(top.iter().cloned());
        for (i, (_, expr)) in items.iter().enumerate() {
            if i > 0 {
                query.push(Token::Comma);
            }
            query.extend(expr.iter().cloned());
        }
        query.extend(from.iter().cloned());
        let kind = cache::Kind::Statement;
        let result = self.run_translated(kind, "", &query, &translate::statement)?;
        self.rowcount = result.rows.len() as i64;
        if let Some(last) = result.rows.into_iter().last() {
            for ((var, _), value) in items.iter().zip(last) {
                self.assign_output(var, value)?;
            }
        }
        Ok(())
    }

    fn variable_literal(&self, var: &str) -> SqlResult<String> {
        let (value, ty) = self.vars.get(var).ok_or_else(|| undeclared(var))?;
        Ok(literal(value, ty))
    }

    fn set_option(&mut self, toks: &[Token]) -> SqlResult<()> {
        let option = toks.get(1).and_then(word).unwrap_or_default();
        let value = toks.get(2).and_then(word).unwrap_or_default();
        match (option.as_str(), value.as_str()) {
            ("NOCOUNT", "ON" | "OFF") => {
                self.nocount = value == "ON";
                Ok(())
            }
            // Settings whose only value here is the one SQL Server's default sets.
            (
                "ANSI_NULLS"
                | "QUOTED_IDENTIFIER"
                | "ANSI_PADDING"
                | "ANSI_WARNINGS"
                | "ARITHABORT"
                | "XACT_ABORT"
                | "CONCAT_NULL_YIELDS_NULL",
                "ON" | "OFF",
            ) => Ok(()),
            _ => Err(SqlError::unsupported(format!(
                "SET {option} (T-SQL; hotpage takes SET NOCOUNT, ANSI_NULLS, QUOTED_IDENTIFIER …)"
            ))),
        }
    }

    /// Any other statement: DDL through [`ddl`], the rest translated and run.
    fn plain(&mut self, toks: &[Token]) -> SqlResult<()> {
        let first = word(&toks[0]).unwrap_or_default();
        if matches!(first.as_str(), "CREATE" | "ALTER" | "DROP") {
            // Prepared plans name tables this may drop or re-make.
            self.cache.clear();
        }
        match first.as_str() {
            "CREATE" => return self.create(toks),
            "ALTER" => return self.alter(toks),
            "DROP" => return self.drop(toks),
            "DBCC" => return self.dbcc(toks),
            "KILL" => return self.kill(toks),
            "USE" => return Ok(()),
            // A real checkpoint: fn_dblog then shows the log from its redo point on.
            "CHECKPOINT" => {
                let engine = Arc::clone(self.sql.database().engine());
                return engine.checkpoint().map_err(crate::session::engine_error);
            }
            "EXEC" | "EXECUTE" => return self.exec(toks),
            "THROW" => return self.throw(toks),
            "RAISERROR" => return self.raiserror(toks),
            // BREAK and CONTINUE alone are flow (`run`); with more they are not T-SQL.
            "BREAK" | "CONTINUE" => return Err(parse::syntax_near(toks.get(1))),
            "RETURN" | "UPDATE" | "DELETE" | "TRUNCATE" => {
                return Err(SqlError::unsupported(format!("{first} (T-SQL)")));
            }
            "WITH" => {
                if let Some(body) = with_body_word(toks).filter(|w| w != "SELECT" && w != "INSERT")
                {
                    return Err(SqlError::unsupported(format!("{body} (T-SQL)")));
                }
            }
            _ => {}
        }
        let result = if let Some(select) =
            translate::insert_select_from(toks).filter(|_| first == "INSERT")
        {
            self.insert_select(toks, select)?
        } else if matches!(first.as_str(), "INSERT" | "SELECT" | "WITH") {
            let kind = cache::Kind::Statement;
            self.run_translated(kind, "", toks, &translate::statement)?
        } else {
            let toks = self.inline_calls(toks)?;
            let text = translate::statement(&toks, self)?;
            self.pg(&text)?
        };
        self.count(&result);
        if result.has_rows() || !self.nocount {
            self.output.push(TsqlOutput::Result(result));
        }
        Ok(())
    }

    /// `INSERT … SELECT … FROM`: the SELECT's rows first (so a table that reads itself
    /// sees none of its new rows), then each inserted by one prepared INSERT, all in one
    /// transaction (the statement's own unless one is open). The SQL layer has no INSERT …
    /// SELECT; the rows are held in memory meanwhile.
    fn insert_select(&mut self, toks: &[Token], select: usize) -> SqlResult<StatementResult> {
        let query = &toks[select..];
        let rows = self.run_translated(cache::Kind::Statement, "", query, &translate::statement)?;
        let head = self.inline_calls(&toks[..select])?;
        let text = translate::insert_with_parameters(&head, rows.columns.len(), self)?;
        let own = self.sql.txn_status() == crate::TxnStatus::Idle;
        if own {
            self.pg("BEGIN")?;
            // The statement's own transaction: SQL Server names it after the statement.
            self.sql.name_transaction("INSERT")?;
        }
        let outcome = self.insert_rows(&text, rows.rows);
        match (&outcome, own) {
            (Ok(_), true) => {
                self.pg("COMMIT")?;
            }
            (Err(_), true) => {
                self.pg("ROLLBACK")?;
            }
            _ => {}
        }
        outcome
    }

    fn insert_rows(&mut self, text: &str, rows: Vec<Vec<Value>>) -> SqlResult<StatementResult> {
        let prepared = self
            .sql
            .prepare(text)
            .map_err(|e| translated_error(e, text))?;
        let mut out = StatementResult {
            tag: String::new(),
            columns: prepared.columns.clone(),
            rows: Vec::new(),
        };
        let inserted = rows.len();
        for row in rows {
            let result = self
                .sql
                .execute_prepared(&prepared, &row)
                .map_err(|e| translated_error(e, text))?;
            out.rows.extend(result.rows);
        }
        out.tag = format!("INSERT 0 {inserted}");
        Ok(out)
    }

    /// `@@ROWCOUNT` after a statement.
    fn count(&mut self, result: &StatementResult) {
        self.rowcount = if result.has_rows() {
            result.rows.len() as i64
        } else if result.tag.starts_with("INSERT") {
            result
                .tag
                .rsplit(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        } else {
            0
        };
    }
}

/// `error` with where it happened in its DETAIL (`at line 3 of the batch`, or of a
/// routine's text).
fn with_place(mut error: SqlError, place: &ErrorPlace) -> SqlError {
    let at = match &place.routine {
        Some(routine) => format!("at line {} of {routine}", place.line),
        None => format!("at line {} of the batch", place.line),
    };
    let detail = match error.detail.take() {
        Some(detail) => format!("{detail}; {at}"),
        None => at,
    };
    error.with_detail(detail)
}

/// An error of a translated statement: its position is in the translated text, not in the
/// batch, so it names that text.
fn translated_error(mut error: SqlError, text: &str) -> SqlError {
    if error.position.take().is_some() && error.detail.is_none() {
        error.detail = Some(format!("in the statement as translated: {text}"));
    }
    error
}

fn single_value(result: StatementResult) -> SqlResult<Value> {
    result
        .rows
        .into_iter()
        .next()
        .and_then(|row| row.into_iter().next())
        .ok_or_else(|| SqlError::new(sqlstate::INTERNAL_ERROR, "an expression without a value"))
}

fn undeclared(var: &str) -> SqlError {
    SqlError::new(
        sqlstate::UNDEFINED_OBJECT,
        format!("must declare the scalar variable \"{var}\" (SQL Server error 137)"),
    )
}

/// A value as a literal of type `ty`.
fn literal(value: &Value, ty: &str) -> String {
    match value {
        Value::Null => format!("CAST(NULL AS {ty})"),
        Value::Int(n) if *n < 0 => format!("({n})"),
        Value::Int(n) => n.to_string(),
        Value::Bool(b) => b.to_string().to_uppercase(),
        Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
        other => {
            let text = other.to_pg_text(None).unwrap_or_default();
            format!("CAST('{}' AS {ty})", text.replace('\'', "''"))
        }
    }
}

impl translate::Resolve for TsqlSession {
    fn variable(&self, name: &str) -> SqlResult<String> {
        self.variable_literal(name)
    }

    fn is_text_variable(&self, name: &str) -> bool {
        self.vars.get(name).is_some_and(|(_, ty)| {
            ty == "text" || ty.starts_with("varchar") || ty.starts_with("char")
        })
    }

    fn global(&self, name: &str) -> SqlResult<String> {
        match name {
            "@@IDENTITY" => Ok(self
                .sql
                .last_value()
                .map_or_else(|| "CAST(NULL AS bigint)".to_string(), |v| v.to_string())),
            "@@ROWCOUNT" => Ok(self.rowcount.to_string()),
            "@@TRANCOUNT" => {
                Ok(i32::from(self.sql.txn_status() != crate::TxnStatus::Idle).to_string())
            }
            "@@SPID" => Ok(self.sql.pid().to_string()),
            // XACT_STATE(): 1 in a transaction, -1 in one an error failed, 0 outside one.
            "XACT_STATE" => Ok(match self.sql.txn_status() {
                crate::TxnStatus::Idle => "0",
                crate::TxnStatus::InTransaction => "1",
                crate::TxnStatus::Failed => "-1",
            }
            .to_string()),
            name if name.starts_with("ERROR_") => self.error_function(name),
            other => Err(SqlError::unsupported(format!("{other} (T-SQL)"))),
        }
    }

    fn object_id(&self, name: &str, object_type: Option<&str>) -> Option<i64> {
        let types: Vec<String> = object_type
            .map(|t| vec![t.trim().to_ascii_uppercase()])
            .unwrap_or_default();
        self.object_exists(name, &types)
            .then(|| object_number(name))
    }

    fn object_exists(&self, name: &str, types: &[String]) -> bool {
        let wants = |t: &str| types.is_empty() || types.iter().any(|x| x == t);
        let db = self.sql.database();
        (wants("U") && db.engine().table(name).is_ok())
            || (wants("SO") && db.metadata().sequences.iter().any(|s| s.name == name))
            || (["FN", "IF", "TF", "FS", "FT"].iter().any(|t| wants(t))
                && self.objects.functions.contains_key(name))
            || ((wants("P") || wants("PC")) && self.objects.procedures.contains_key(name))
            // Not in sys.objects in SQL Server: in sys.partition_schemes / _functions.
            || (types == ["PS"] && self.objects.schemes.contains_key(name))
            || (types == ["PF"] && self.objects.partition_functions.contains_key(name))
    }

    fn session_trace_flag(&self, flag: u32) -> bool {
        self.trace_flags.contains(&flag)
    }
}

/// An object's id for OBJECT_ID: the one `sys.objects` shows.
fn object_number(name: &str) -> i64 {
    crate::views::objects::object_id(name)
}

/// Statements with table DDL.
impl TsqlSession {
    fn create(&mut self, toks: &[Token]) -> SqlResult<()> {
        let mut at = 1;
        let mut clustered = None;
        while let Some(w) = toks.get(at).and_then(word) {
            match w.as_str() {
                "UNIQUE" => {}
                "CLUSTERED" => clustered = Some(true),
                "NONCLUSTERED" => clustered = Some(false),
                _ => break,
            }
            at += 1;
        }
        let what = toks.get(at).and_then(word).unwrap_or_default();
        match what.as_str() {
            "TABLE" => {
                let mut def = ddl::parse_create_table(&toks[at + 1..], self)?;
                if let Some((scheme, column)) = def.on_scheme.clone() {
                    let function = self.scheme_function(&scheme)?;
                    def.partition_on(&scheme, &column, &function)?;
                }
                self.pg(&def.to_postgres()?)?;
                self.note_table_scheme(&def.name, def.scheme())?;
                self.store_table_def(&def)?;
                self.push_tag("CREATE TABLE");
                Ok(())
            }
            "PARTITION" if at == 1 => self.create_partition(toks, &toks[at + 1..]),
            "INDEX" if clustered == Some(true) => self.clustered_index(&toks[at + 1..]),
            "INDEX" => Err(SqlError::unsupported(
                "a nonclustered index (hotpage tables have one index, the clustered key)",
            )),
            "SEQUENCE" => self.create_sequence(&toks[at + 1..]),
            other => Err(SqlError::unsupported(format!("CREATE {other} (T-SQL)"))),
        }
    }

    /// `KILL session_id`: ends another session's connection, as `pg_terminate_backend`
    /// does, with SQL Server's errors for the session's own id (6104) and for an id that
    /// is no session (6106).
    fn kill(&mut self, toks: &[Token]) -> SqlResult<()> {
        let spid = match toks {
            [_, Token::Number(n, _)] => n.parse::<u32>().ok(),
            _ => None,
        }
        .ok_or_else(|| {
            SqlError::new(
                sqlstate::SYNTAX_ERROR,
                "KILL takes a session id (the spid of sys.dm_exec_requests), as KILL 53; hotpage has no KILL … WITH STATUSONLY",
            )
        })?;
        if spid == self.sql.pid() {
            return Err(SqlError::new(
                sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
                "Cannot use KILL to kill your own process. (SQL Server error 6104)",
            ));
        }
        let Some(session) = self.sql.database().activity_of(spid) else {
            return Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!("Process ID {spid} is not an active process ID. (SQL Server error 6106)"),
            ));
        };
        if !session.terminate() {
            return Err(SqlError::unsupported(format!(
                "KILL {spid}: session {spid} has no connection to end (an embedded session, which its program ends); sessions of hotpage serve can be killed"
            )));
        }
        self.push_tag("KILL");
        Ok(())
    }

    fn push_tag(&mut self, tag: &str) {
        if !self.nocount {
            self.output.push(TsqlOutput::Result(StatementResult {
                tag: tag.to_string(),
                columns: Vec::new(),
                rows: Vec::new(),
            }));
        }
    }

    /// `CREATE [UNIQUE] CLUSTERED INDEX name ON table (cols) [WITH (…)] [ON …]`.
    fn clustered_index(&mut self, toks: &[Token]) -> SqlResult<()> {
        let on = toks
            .iter()
            .position(|t| is_word(Some(t), "ON"))
            .ok_or_else(|| parse::syntax_near(toks.last()))?;
        let open = on
            + toks[on..]
                .iter()
                .position(|t| matches!(t, Token::LParen))
                .ok_or_else(|| parse::syntax_near(toks.last()))?;
        let table = translate::name_of(&toks[on + 1..open])?;
        let close = translate::matching_paren(toks, open)?;
        let columns = ddl::column_list(&toks[open + 1..close])?;
        let (options, end) = ddl::index_options(toks, close + 1)?;
        if end != toks.len() {
            return Err(parse::syntax_near(toks.get(end)));
        }
        let optimized = options.optimize_for_sequential_key;
        let partitioning = match options.on_scheme {
            Some((scheme, column)) => {
                let function = self.scheme_function(&scheme)?;
                Some((scheme, column, function))
            }
            None => None,
        };
        self.remake(&table, |def| {
            def.add_clustered_index(columns, optimized)?;
            match &partitioning {
                Some((scheme, column, function)) => def.partition_on(scheme, column, function),
                None => Ok(()),
            }
        })?;
        let scheme = self
            .objects
            .tables
            .get(&table)
            .and_then(|d| d.scheme().map(str::to_string));
        self.note_table_scheme(&table, scheme.as_deref())?;
        self.push_tag("CREATE INDEX");
        Ok(())
    }

    /// Re-makes a table made by T-SQL's CREATE TABLE (in any session: its definition is
    /// the database's), from its amended definition: only while it is empty, since the
    /// engine fixes a table's design when it is made.
    fn remake(
        &mut self,
        table: &str,
        amend: impl FnOnce(&mut TableDef) -> SqlResult<()>,
    ) -> SqlResult<()> {
        self.sync_objects()?;
        let mut def = self.objects.tables.get(table).cloned().ok_or_else(|| {
            SqlError::unsupported(format!(
                "changing table \"{table}\", which was not created by T-SQL's CREATE TABLE (its design is fixed)"
            ))
        })?;
        amend(&mut def)?;
        let count = single_value(self.pg(&format!("SELECT count(*) FROM \"{table}\""))?)?;
        if count != Value::Int(0) {
            return Err(SqlError::unsupported(format!(
                "changing table \"{table}\" once it has rows (its design is fixed when it is made)"
            )));
        }
        let create = def.to_postgres()?;
        self.pg(&format!("DROP TABLE \"{table}\""))?;
        self.pg(&create)?;
        // The drop forgot the table's definition and its scheme: both are the new table's.
        self.store_table_def(&def)?;
        self.note_table_scheme(table, def.scheme())
    }

    /// `ALTER TABLE t ADD [CONSTRAINT n] DEFAULT (expr) FOR col`.
    fn alter(&mut self, toks: &[Token]) -> SqlResult<()> {
        let filegroup = toks.iter().any(|t| is_word(Some(t), "FILEGROUP"));
        if is_word(toks.get(1), "DATABASE") && is_word(toks.get(3), "ADD") && filegroup {
            // A filegroup (for memory-optimized tables too) is a no-op here: the data
            // files are the database's own (`--files`).
            return Ok(());
        }
        if is_word(toks.get(1), "INDEX") {
            return self.alter_index(toks);
        }
        if !is_word(toks.get(1), "TABLE") {
            return Err(SqlError::unsupported(format!(
                "ALTER {} (T-SQL)",
                toks.get(1).map(ToString::to_string).unwrap_or_default()
            )));
        }
        let add = toks
            .iter()
            .position(|t| is_word(Some(t), "ADD"))
            .ok_or_else(|| SqlError::unsupported("ALTER TABLE other than ADD … DEFAULT … FOR"))?;
        let table = translate::name_of(&toks[2..add])?;
        let mut at = add + 1;
        if is_word(toks.get(at), "CONSTRAINT") {
            at += 2;
        }
        let for_at = toks.iter().rposition(|t| is_word(Some(t), "FOR"));
        let (true, Some(for_at)) = (is_word(toks.get(at), "DEFAULT"), for_at) else {
            return Err(SqlError::unsupported(
                "ALTER TABLE … ADD other than [CONSTRAINT n] DEFAULT (expr) FOR column",
            ));
        };
        let default = translate::expr(translate::strip_parens(&toks[at + 1..for_at]), self)?;
        let column = translate::name_of(&toks[for_at + 1..])?;
        self.remake(&table, |def| def.add_default(&column, default))?;
        self.push_tag("ALTER TABLE");
        Ok(())
    }

    /// `ALTER INDEX name ON t SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON | OFF)`: re-makes the
    /// table as identity-flow-control (or back) while it is empty.
    fn alter_index(&mut self, toks: &[Token]) -> SqlResult<()> {
        let on = toks.iter().position(|t| is_word(Some(t), "ON"));
        let set = toks.iter().position(|t| is_word(Some(t), "SET"));
        let (Some(on), Some(set)) = (on, set) else {
            return Err(SqlError::unsupported(
                "ALTER INDEX other than name ON table SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON | OFF)",
            ));
        };
        let table = translate::name_of(toks.get(on + 1..set).unwrap_or_default())?;
        if !matches!(toks.get(set + 1), Some(Token::LParen)) {
            return Err(parse::syntax_near(toks.get(set + 1)));
        }
        let close = translate::matching_paren(toks, set + 1)?;
        if close + 1 != toks.len() {
            return Err(parse::syntax_near(toks.get(close + 1)));
        }
        let options = ddl::index_set_options(&toks[set + 2..close])?;
        self.remake(&table, |def| def.set_optimize_for_sequential_key(options))?;
        self.push_tag("ALTER INDEX");
        Ok(())
    }

    /// `DROP TABLE|SEQUENCE [IF EXISTS] name, …`.
    fn drop(&mut self, toks: &[Token]) -> SqlResult<()> {
        let what = toks.get(1).and_then(word).unwrap_or_default();
        if what == "FUNCTION" {
            return self.drop_function(toks);
        }
        if what == "PARTITION" {
            return self.drop_partition(toks);
        }
        if what == "PROC" || what == "PROCEDURE" {
            return self.drop_procedure(toks);
        }
        if what != "TABLE" && what != "SEQUENCE" {
            return Err(SqlError::unsupported(format!("DROP {what} (T-SQL)")));
        }
        let mut at = 2;
        let if_exists = is_word(toks.get(2), "IF") && is_word(toks.get(3), "EXISTS");
        if if_exists {
            at = 4;
        }
        let mut names = Vec::new();
        for part in parse::split_top_level(&toks[at..], |t| matches!(t, Token::Comma)) {
            names.push(format!("\"{}\"", translate::name_of(part)?));
        }
        let guard = if if_exists { "IF EXISTS " } else { "" };
        self.pg(&format!("DROP {what} {guard}{}", names.join(", ")))?;
        for name in &names {
            let name = name.trim_matches('"');
            if what == "TABLE" {
                self.note_table_scheme(name, None)?;
            }
        }
        self.push_tag(&format!("DROP {what}"));
        Ok(())
    }

    /// `CREATE SEQUENCE s [AS type] [START WITH n] [INCREMENT BY n] [CACHE n | NO CACHE]`,
    /// in any order.
    fn create_sequence(&mut self, toks: &[Token]) -> SqlResult<()> {
        const OPTIONS: &[&str] = &[
            "AS",
            "START",
            "INCREMENT",
            "CACHE",
            "NO",
            "MINVALUE",
            "MAXVALUE",
            "CYCLE",
        ];
        let end = toks
            .iter()
            .position(|t| word(t).is_some_and(|w| OPTIONS.contains(&w.as_str())))
            .unwrap_or(toks.len());
        let name = translate::name_of(&toks[..end])?;
        let (mut start, mut increment, mut cache) = (None, None, None);
        let mut i = end;
        while i < toks.len() {
            let w = word(&toks[i]).unwrap_or_default();
            let number = |at: usize| -> SqlResult<String> {
                let negative = matches!(toks.get(at), Some(Token::Minus));
                match toks.get(at + usize::from(negative)) {
                    Some(Token::Number(n, _)) => {
                        Ok(if negative { format!("-{n}") } else { n.clone() })
                    }
                    other => Err(parse::syntax_near(other)),
                }
            };
            match w.as_str() {
                "AS" => i += 2,
                "START" if is_word(toks.get(i + 1), "WITH") => {
                    start = Some(number(i + 2)?);
                    i += 3;
                }
                "INCREMENT" if is_word(toks.get(i + 1), "BY") => {
                    increment = Some(number(i + 2)?);
                    i += 3;
                }
                "CACHE" => {
                    cache = Some(number(i + 1)?);
                    i += 2;
                }
                "NO" if is_word(toks.get(i + 1), "CACHE") => i += 2,
                _ => {
                    return Err(SqlError::unsupported(format!(
                        "the sequence option {} (T-SQL)",
                        toks[i]
                    )));
                }
            }
        }
        let mut text = format!("CREATE SEQUENCE \"{name}\"");
        if let Some(n) = increment {
            text.push_str(&format!(" INCREMENT BY {n}"));
        }
        if let Some(n) = start {
            text.push_str(&format!(" START WITH {n}"));
        }
        if let Some(n) = cache {
            text.push_str(&format!(" CACHE {n}"));
        }
        self.pg(&text)?;
        self.push_tag("CREATE SEQUENCE");
        Ok(())
    }

    /// `DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR)`, `DBCC PAGE`, `DBCC
    /// TRACEON|TRACEOFF|TRACESTATUS`.
    fn dbcc(&mut self, toks: &[Token]) -> SqlResult<()> {
        let command = toks.get(1).and_then(word).unwrap_or_default();
        let args: Vec<String> = toks
            .iter()
            .skip(2)
            .filter_map(|t| match t {
                Token::SingleQuotedString(s) | Token::NationalStringLiteral(s) => {
                    Some(s.to_lowercase())
                }
                Token::Word(w) => Some(w.value.to_lowercase()),
                _ => None,
            })
            .collect();
        match (command.as_str(), args.as_slice()) {
            ("SQLPERF", [view, clear]) if view == "sys.dm_os_wait_stats" && clear == "clear" => {
                self.pg("SELECT hotpage_reset_wait_stats()")?;
                self.push_tag("DBCC");
                Ok(())
            }
            ("TRACEON" | "TRACEOFF", _) => self.dbcc_trace(&command, &toks[2..]),
            ("TRACESTATUS", _) => self.dbcc_trace_status(&toks[2..]),
            ("PAGE", _) => self.dbcc_page(&toks[2..]),
            _ => Err(SqlError::unsupported(format!(
                "DBCC {command} (hotpage has DBCC PAGE, DBCC TRACEON, TRACEOFF and TRACESTATUS, and DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR))"
            ))),
        }
    }
}

/// The statement word that follows a WITH's queries (`SELECT`, `INSERT`, `UPDATE` …):
/// the first one outside parentheses.
fn with_body_word(toks: &[Token]) -> Option<String> {
    let mut depth = 0usize;
    for token in toks.iter().skip(1) {
        match token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            _ if depth == 0 => {
                if let Some(w) = parse::word(token)
                    && matches!(
                        w.as_str(),
                        "SELECT" | "INSERT" | "UPDATE" | "DELETE" | "MERGE"
                    )
                {
                    return Some(w);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests;

/// User scalar functions: `CREATE FUNCTION` keeps one in the session; a call in any
/// expression is run by the interpreter, and its value goes into the statement as a
/// literal before the statement is translated.
impl TsqlSession {
    /// `toks` with each call of a user function replaced by its value.
    /// Also each uncorrelated `EXISTS (SELECT …)` and `IN (SELECT …)` by its value (the
    /// SQL layer has no subqueries): run first, as SQL Server would run them once.
    fn inline_calls(&mut self, toks: &[Token]) -> SqlResult<Vec<Token>> {
        self.sync_objects()?;
        if self.objects.functions.is_empty() && !has_subquery(toks) {
            return Ok(toks.to_vec());
        }
        let mut out: Vec<Token> = Vec::with_capacity(toks.len());
        let mut i = 0;
        while i < toks.len() {
            if is_subquery(toks, i) {
                let close = translate::matching_paren(toks, i + 1)?;
                let mut value = self.subquery_value(&toks[i], &toks[i + 2..close])?;
                if value == EMPTY_IN && is_word(out.last(), "NOT") {
                    // `x NOT IN (empty)` is true whatever x.
                    out.pop();
                    value = "IN (NULL) IS NULL".to_string();
                }
                out.extend(parse::tokens(&value)?);
                i = close + 1;
                continue;
            }
            let called = match (&toks[i], toks.get(i + 1)) {
                (Token::Word(w), Some(Token::LParen)) => {
                    (self.objects.functions.get(&w.value.to_lowercase())).map(Arc::clone)
                }
                _ => None,
            };
            let Some(function) = called else {
                out.push(toks[i].clone());
                i += 1;
                continue;
            };
            let close = translate::matching_paren(toks, i + 1)?;
            let mut args = Vec::new();
            for part in parse::split_top_level(&toks[i + 2..close], |t| matches!(t, Token::Comma)) {
                if !part.is_empty() {
                    let value = self.eval(part).map_err(|e| {
                        if e.sqlstate == sqlstate::UNDEFINED_COLUMN {
                            SqlError::unsupported(format!(
                                "a call of {} on a table's columns (user functions are called once per statement, on constants and variables)",
                                function.name
                            ))
                        } else {
                            e
                        }
                    })?;
                    args.push(value);
                }
            }
            let value = self.call(&function, args)?;
            if matches!(out.last(), Some(Token::Period)) && out.len() >= 2 {
                out.truncate(out.len() - 2); // `dbo.`
            }
            let ty = translate::pg_type(&function.returns)?;
            out.extend(parse::tokens(&literal(&value, &ty))?);
            i = close + 1;
        }
        Ok(out)
    }

    /// `EXISTS (query)` as TRUE or FALSE, `IN (query)` as `IN (v, …)`.
    fn subquery_value(&mut self, operator: &Token, query: &[Token]) -> SqlResult<String> {
        if let Some(outer) = outer_reference(query) {
            return Err(SqlError::unsupported(format!(
                "a correlated subquery (it names \"{outer}\", which its own FROM does not; T-SQL subqueries are run once, before their statement)"
            )));
        }
        let query = self.inline_calls(query)?;
        let text = translate::statement(&query, self)?;
        let result = self.pg(&text).map_err(|e| {
            if e.sqlstate == sqlstate::UNDEFINED_COLUMN {
                SqlError::unsupported(format!(
                    "a correlated subquery ({}; T-SQL subqueries are run once, before their statement)",
                    e.message
                ))
            } else {
                e
            }
        })?;
        if is_word(Some(operator), "EXISTS") {
            let found = if result.rows.is_empty() {
                "FALSE"
            } else {
                "TRUE"
            };
            return Ok(found.to_string());
        }
        if result.columns.len() != 1 {
            return Err(SqlError::new(
                sqlstate::SYNTAX_ERROR,
                "subquery has too many columns (SQL Server error 116)",
            ));
        }
        if result.rows.len() > MAX_SUBQUERY_VALUES {
            return Err(SqlError::new(
                sqlstate::PROGRAM_LIMIT_EXCEEDED,
                format!(
                    "an IN (SELECT …) of {} values: hotpage runs the subquery first and takes up to {MAX_SUBQUERY_VALUES}",
                    result.rows.len()
                ),
            ));
        }
        let values: Vec<String> = result
            .rows
            .iter()
            .filter_map(|row| row.first())
            .map(|v| match v {
                Value::Null => "NULL".to_string(),
                Value::Int(n) => n.to_string(),
                Value::Bool(b) => b.to_string().to_uppercase(),
                other => format!(
                    "'{}'",
                    other
                        .to_pg_text(None)
                        .unwrap_or_default()
                        .replace('\'', "''")
                ),
            })
            .collect();
        if values.is_empty() {
            // `x IN (empty)` is false whatever x (NULL too): `x IN (NULL)` is always NULL.
            return Ok(EMPTY_IN.to_string());
        }
        Ok(format!("IN ({})", values.join(", ")))
    }

    /// Runs a function with its own variables; the caller's are put back after.
    fn call(&mut self, function: &parse::Function, args: Vec<Value>) -> SqlResult<Value> {
        if args.len() != function.params.len() {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!(
                    "function {} takes {} arguments, not {} (SQL Server error 8144)",
                    function.name,
                    function.params.len(),
                    args.len()
                ),
            ));
        }
        self.nested("function", |s| {
            s.routine = Some(function.name.clone());
            s.call_body(function, args)
        })
    }

    /// Runs `body` one nesting level down, with variables of its own (the caller's are put
    /// back after, whatever the outcome); SQL Server's limit of 32 levels is error 217.
    fn nested<T>(
        &mut self,
        what: &str,
        body: impl FnOnce(&mut TsqlSession) -> SqlResult<T>,
    ) -> SqlResult<T> {
        if self.depth >= MAX_NESTING {
            return Err(SqlError::new(
                "54001",
                format!(
                    "maximum {what} nesting level exceeded (limit {MAX_NESTING}; SQL Server error 217)"
                ),
            ));
        }
        let saved = std::mem::take(&mut self.vars);
        let routine = self.routine.take();
        self.depth += 1;
        let outcome = body(self);
        self.depth -= 1;
        self.vars = saved;
        self.routine = routine;
        outcome
    }

    fn call_body(&mut self, function: &parse::Function, args: Vec<Value>) -> SqlResult<Value> {
        for ((name, ty), value) in function.params.iter().zip(args) {
            let ty = translate::pg_type(ty)?;
            let value = self.converted(value, &ty)?;
            self.vars.insert(name.clone(), (value, ty));
        }
        let Flow::Return(Some(value)) = self.run(&function.body)?.outside_loop()? else {
            return Err(SqlError::new(
                sqlstate::SYNTAX_ERROR,
                format!(
                    "function {} ended without RETURN of a value (SQL Server error 455)",
                    function.name
                ),
            ));
        };
        let ty = translate::pg_type(&function.returns)?;
        self.converted(value, &ty)
    }
}
