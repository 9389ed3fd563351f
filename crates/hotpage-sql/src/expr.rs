//! Expressions: sqlparser's `Expr` compiled once into a [`Scalar`] whose column references
//! are resolved to positions (a prepared statement is planned once), then evaluated per
//! row. Typing is light: each scalar knows its result type where it can ([`Scalar::ty`]), for
//! the column types a result reports; values carry their own type at run time.

use crate::error::{SqlError, SqlResult, sqlstate};
use crate::types::SqlType;
use crate::value::Value;
use sqlparser::ast::{
    BinaryOperator, CastKind, DataType, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArguments, Ident, ObjectName, UnaryOperator, Value as AstValue,
};
use std::cmp::Ordering;
use std::sync::Arc;

mod builtin;
mod more_funcs;
mod tsql_dates;
mod typecheck;

pub(crate) use builtin::PureFunc;
pub(crate) use more_funcs::{quote_literal, regex_with_flags, regexp_split};
pub(crate) use typecheck::{Typing, refuse_mixed_types};

/// A built-in function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Func {
    /// `current_date`: today in the session's zone (UTC).
    CurrentDate,
    Now,
    GenRandomUuid,
    UuidV7,
    BitReverse,
    Abs,
    Lower,
    Upper,
    Length,
    Coalesce,
    LastVal,
    CurrVal,
    NextVal,
    Version,
    CurrentDatabase,
    ResetWaitStats,
    /// T-SQL's OBJECT_NAME: the name of the object whose `sys.objects` id is the argument.
    ObjectName,
    /// `hotpage_datediff(unit, a, b)`: how many unit boundaries lie between timestamps `a`
    /// and `b` (T-SQL's DATEDIFF); the unit is a length in microseconds or a calendar
    /// part's name (`'week'`, `'iso_week'`, `'month'`, `'quarter'`, `'year'`,
    /// `'nanosecond'`); `a` and `b` may also be text or day numbers (`tsql_datetime`).
    DateDiff,
    /// `hotpage_dateadd(part, number, date)`: T-SQL's DATEADD (`expr/tsql_dates.rs`).
    DateAdd,
    /// `hotpage_datepart(part, date)`: T-SQL's DATEPART, YEAR, MONTH, DAY.
    DatePart,
    /// `pg_sleep(seconds)`: waits, stopped by a cancel or the statement's timeout.
    Sleep,
    /// A char(n) value as text, its trailing spaces dropped (no SQL name: the compiler
    /// puts it where char(n) becomes text).
    CharToText,
    /// A value as text, printed as its type prints it: a real's text and a timestamptz's
    /// depend on the type, which the value (an f64, a microsecond count) does not carry
    /// (no SQL name: the compiler puts it where such a value becomes text).
    TextOf(SqlType),
    /// A function of its arguments alone (`substr`, `round`, `greatest`, …).
    Pure(PureFunc),
}

impl Func {
    pub(crate) fn by_name(name: &str) -> Option<Func> {
        Some(match name {
            "now"
            | "current_timestamp"
            | "localtimestamp"
            | "transaction_timestamp"
            | "statement_timestamp"
            | "clock_timestamp" => Func::Now,
            "current_date" => Func::CurrentDate,
            "gen_random_uuid" | "uuid_generate_v4" => Func::GenRandomUuid,
            "uuidv7" | "uuid_generate_v7" => Func::UuidV7,
            "bit_reverse" => Func::BitReverse,
            "abs" => Func::Abs,
            "lower" => Func::Lower,
            "upper" => Func::Upper,
            "length" | "char_length" | "character_length" => Func::Length,
            "coalesce" => Func::Coalesce,
            "lastval" => Func::LastVal,
            "currval" => Func::CurrVal,
            "nextval" => Func::NextVal,
            "version" => Func::Version,
            "current_database" => Func::CurrentDatabase,
            "hotpage_reset_wait_stats" => Func::ResetWaitStats,
            "hotpage_object_name" => Func::ObjectName,
            "hotpage_datediff" => Func::DateDiff,
            "hotpage_dateadd" => Func::DateAdd,
            "hotpage_datepart" => Func::DatePart,
            "pg_sleep" => Func::Sleep,
            _ => return PureFunc::by_name(name).map(Func::Pure),
        })
    }

    fn ty(self, args: &[Scalar]) -> Option<SqlType> {
        self.result_type(&args.iter().map(Scalar::ty).collect::<Vec<_>>())
    }

    /// The result type, from the arguments' types where it follows them.
    pub(crate) fn result_type(self, args: &[Option<SqlType>]) -> Option<SqlType> {
        Some(match self {
            Func::Now => SqlType::TimestampTz,
            Func::CurrentDate => SqlType::Date,
            Func::GenRandomUuid | Func::UuidV7 => SqlType::Uuid,
            Func::BitReverse | Func::LastVal | Func::CurrVal | Func::NextVal => SqlType::BigInt,
            Func::Length => SqlType::Int,
            Func::Lower
            | Func::Upper
            | Func::Version
            | Func::CurrentDatabase
            | Func::ObjectName
            | Func::Sleep
            | Func::CharToText
            | Func::TextOf(_) => SqlType::Text,
            Func::Abs => return args.first().copied().flatten(),
            Func::Pure(pure) => return pure.ty(args),
            Func::Coalesce => return typecheck::common_type(args.iter().copied()),
            Func::ResetWaitStats | Func::DateDiff => SqlType::BigInt,
            Func::DatePart => SqlType::Int,
            // A date stays a date; anything else becomes a datetime.
            Func::DateAdd => match args.get(2).copied().flatten() {
                Some(SqlType::Date) => SqlType::Date,
                _ => SqlType::Timestamp,
            },
        })
    }
}

/// Whether `name` is a function this module evaluates (the catalog has the others).
pub(crate) fn is_builtin_function(name: &str) -> bool {
    Func::by_name(name).is_some()
}

/// An aggregate function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum AggFunc {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
}

/// A compiled expression.
#[derive(Clone, Debug)]
pub(crate) enum Scalar {
    Const(Value, Option<SqlType>),
    /// A column of the input row, with its type.
    Column(usize, SqlType),
    /// `$n` (0-based here), with the type it was inferred to have, if any.
    Param(usize),
    Neg(Box<Scalar>),
    Not(Box<Scalar>),
    Binary(BinaryOperator, Box<Scalar>, Box<Scalar>),
    IsNull(Box<Scalar>, bool),
    /// `e [NOT] IN (list)`, with a hash set of the list where it is long and constant.
    InList(Box<Scalar>, Vec<Scalar>, bool, Option<Arc<ConstLookup>>),
    Between(Box<Scalar>, Box<Scalar>, Box<Scalar>, bool),
    Like(Box<Scalar>, Box<Scalar>, bool),
    Cast(Box<Scalar>, SqlType),
    Call(Func, Vec<Scalar>),
    /// `CASE [operand] WHEN … THEN … [ELSE …] END`: the arms are tried in order, and only
    /// the chosen result is evaluated (`CASE WHEN x = 0 THEN 0 ELSE 1 / x END`).
    Case(
        Option<Box<Scalar>>,
        Vec<(Scalar, Scalar)>,
        Option<Box<Scalar>>,
    ),
    /// A node [`DEEP_EVERY_LEVELS`] levels down a deep expression: its evaluation makes
    /// sure of the stack the next levels need (see `compile_inner`).
    Deep(Box<Scalar>),
}

/// Every this many levels of nesting, an expression's node is wrapped in [`Scalar::Deep`].
/// Evaluation takes about 2 KiB of stack a level, so a chain of 1,000 operators (the depth
/// limit) needs 2 MiB, more than a default thread has; a check at every node cost 7 % of
/// an expression-heavy scan, a check every 64 levels costs an ordinary expression nothing.
const DEEP_EVERY_LEVELS: usize = 64;

/// The stack a [`Scalar::Deep`] node makes sure of before it evaluates, and the size of
/// a stack grown on the heap where less is left: room for [`DEEP_EVERY_LEVELS`] levels.
const DEEP_STACK_BYTES: usize = 512 << 10;

thread_local! {
    /// How deep the compile under way on this thread is.
    static COMPILE_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The rules the compile under way on this thread types untyped literals by
    /// ([`with_typing`]): PostgreSQL's unless a T-SQL statement is being planned.
    static COMPILE_TYPING: std::cell::Cell<Typing> = const { std::cell::Cell::new(Typing::Postgres) };
}

/// Runs `compile_all` (which compiles a statement's expressions) under `typing`'s rules
/// for untyped literals: PostgreSQL gives a literal among a CASE's results the common
/// type when the statement is planned (`THEN 'x' ELSE 1` is 22P02 even where that branch
/// never runs); SQL Server converts only the values a row uses (`ISNULL(i, 'N/A')` is
/// fine where i is never NULL). A thread-local, as the compile depth is, so that every
/// compile function need not carry it; the previous rules come back after, on a panic
/// too.
pub(crate) fn with_typing<T>(typing: Typing, compile_all: impl FnOnce() -> T) -> T {
    struct Restore(Typing);
    impl Drop for Restore {
        fn drop(&mut self) {
            COMPILE_TYPING.with(|rules| rules.set(self.0));
        }
    }
    let _restore = Restore(COMPILE_TYPING.with(|rules| rules.replace(typing)));
    compile_all()
}

/// One level of [`COMPILE_DEPTH`], given back when dropped.
struct CompileLevel(usize);

impl CompileLevel {
    fn enter() -> CompileLevel {
        COMPILE_DEPTH.with(|depth| {
            depth.set(depth.get() + 1);
            CompileLevel(depth.get())
        })
    }
}

impl Drop for CompileLevel {
    fn drop(&mut self) {
        COMPILE_DEPTH.with(|depth| depth.set(depth.get() - 1));
    }
}

/// What an expression may refer to: the input row's columns, by name, in order.
pub(crate) type Scope = [(String, SqlType)];

/// What evaluation may need beyond the row: parameters and the session's functions.
pub(crate) trait EvalContext {
    fn param(&self, index: usize) -> SqlResult<Value>;
    /// Runs a session function (now, nextval, lastval, ...).
    fn call(&mut self, func: Func, args: &[Value]) -> SqlResult<Value>;
    /// Whether `\` escapes the next character of a LIKE pattern: PostgreSQL's default
    /// escape. SQL Server has none, so a T-SQL session's patterns take `\` literally
    /// (`path LIKE 'C:\temp\%'`).
    fn like_escapes(&self) -> bool {
        true
    }
}

/// The name of an identifier as PostgreSQL folds it: unquoted names to lower case.
pub(crate) fn fold(ident: &Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}

/// The last part of a possibly qualified name, folded (`public.t` and `t` are `t`).
pub(crate) fn object_name(name: &ObjectName) -> String {
    name.0
        .last()
        .and_then(|part| part.as_ident())
        .map(fold)
        .unwrap_or_default()
}

/// The 1-based (line, column) of an expression's first token, for error carets.
pub(crate) fn position_of(expr: &Expr) -> Option<(u32, u32)> {
    use sqlparser::ast::Spanned;
    // An operator chain starts where its leftmost operand does: found by a loop, since
    // `span()` recurses through the whole tree (a 1,000-operator chain overflowed a 2 MiB
    // stack when an error was placed at its top).
    let mut first = expr;
    while let Expr::BinaryOp { left: inner, .. }
    | Expr::Cast {
        expr: inner,
        kind: CastKind::DoubleColon,
        ..
    }
    | Expr::IsNull(inner)
    | Expr::IsNotNull(inner) = first
    {
        first = inner;
    }
    let start = first.span().start;
    let line = u32::try_from(start.line).ok()?;
    let column = u32::try_from(start.column).ok()?;
    (line > 0).then_some((line, column))
}

/// Compiles `expr` against `scope`. Aggregates are refused here (the SELECT planner
/// replaces them before it compiles what is left).
pub(crate) fn compile(expr: &Expr, scope: &Scope) -> SqlResult<Scalar> {
    compile_inner(expr, scope).map_err(|e| match e.has_place() {
        // The innermost expression's place is the one kept: not looked for again at
        // every level on the way out.
        true => e,
        false => e.at_line_column(position_of(expr)),
    })
}

/// [`compile_node`], with a [`Scalar::Deep`] every [`DEEP_EVERY_LEVELS`] levels. Grows
/// its own stack where it runs short (`recursive`): planning is not per row.
#[recursive::recursive]
fn compile_inner(expr: &Expr, scope: &Scope) -> SqlResult<Scalar> {
    let level = CompileLevel::enter();
    let scalar = range_checked(widen_to_common(compile_node(expr, scope)?)?);
    let leaf = matches!(
        scalar,
        Scalar::Const(..) | Scalar::Column(..) | Scalar::Param(_)
    );
    Ok(match level.0.is_multiple_of(DEEP_EVERY_LEVELS) && !leaf {
        true => Scalar::Deep(Box::new(scalar)),
        false => scalar,
    })
}

/// COALESCE's, GREATEST's and LEAST's arguments and a CASE's results, converted to
/// their common number type as PostgreSQL converts them: each row's value was left in its
/// own type, so `coalesce(int_col, 2.5) / 2` divided as integers where the integer was
/// chosen, and `CASE … THEN 1 ELSE 3000000000 END + 1` was range-checked as integer.
/// An untyped string literal among them takes the common type when the query is planned,
/// as PostgreSQL's unknown literal does (`CASE … THEN 'x' ELSE 1 END` is 22P02; it gave
/// the text x in an integer result).
fn widen_to_common(scalar: Scalar) -> SqlResult<Scalar> {
    use builtin::PureFunc::{Greatest, Least};
    Ok(match scalar {
        Scalar::Call(func @ (Func::Coalesce | Func::Pure(Greatest | Least)), args) => {
            let target = typecheck::common_type(args.iter().map(Scalar::ty));
            let args = args.into_iter().map(|a| widen(a, target));
            Scalar::Call(func, args.collect::<SqlResult<_>>()?)
        }
        Scalar::Case(operand, arms, otherwise) => {
            let results = otherwise.iter().map(|e| e.ty());
            let target =
                typecheck::common_type(results.chain(arms.iter().map(|(_, result)| result.ty())));
            let arms = arms
                .into_iter()
                .map(|(when, result)| Ok((when, widen(result, target)?)));
            Scalar::Case(
                operand,
                arms.collect::<SqlResult<_>>()?,
                otherwise
                    .map(|e| widen(*e, target).map(Box::new))
                    .transpose()?,
            )
        }
        other => other,
    })
}

/// A negation or `abs` of a smallint or integer, checked against its type's range as
/// PostgreSQL's is (`-i` and `abs(i)` of -2147483648 are 22003; values are computed as
/// bigint here, so they were 2147483648).
fn range_checked(scalar: Scalar) -> Scalar {
    match (&scalar, scalar.ty()) {
        (
            Scalar::Neg(_) | Scalar::Call(Func::Abs, _),
            Some(ty @ (SqlType::SmallInt | SqlType::Int)),
        ) => Scalar::Cast(Box::new(scalar), ty),
        _ => scalar,
    }
}

/// `arg` converted to the number type `target`, where it is a narrower number: to double
/// or real, or an integer to numeric (scale 0: a plain numeric keeps each value's scale).
fn widen(arg: Scalar, target: Option<SqlType>) -> SqlResult<Scalar> {
    if let (Scalar::Const(Value::Text(text), None), Some(target)) = (&arg, target)
        && (target.is_numeric_family() && target != SqlType::Oid
            || matches!(
                target,
                SqlType::Bool
                    | SqlType::Date
                    | SqlType::Timestamp
                    | SqlType::TimestampTz
                    | SqlType::Interval
            ))
        && COMPILE_TYPING.with(|rules| rules.get()) == Typing::Postgres
    {
        // A numeric literal keeps its own scale, as under PostgreSQL's typmod-less common
        // numeric (`coalesce('7.125', 2.5)` is 7.125). Not strings: a string type has no
        // length to cut the literal to (the common type of varchar(1) and a literal is
        // varchar). A timestamp's text is read here too; hotpage's timestamp input has no
        // words such as `'now'` to read later.
        let ty = if target.is_numeric() {
            SqlType::NumericUnconstrained
        } else {
            target
        };
        return Ok(Scalar::Const(Value::from_text(text, &ty)?, Some(ty)));
    }
    let (Some(target), Some(ty)) = (target, arg.ty()) else {
        return Ok(arg);
    };
    Ok(match target {
        SqlType::Real | SqlType::Double if ty != target && ty.is_numeric_family() => {
            Scalar::Cast(Box::new(arg), target)
        }
        target if target.is_numeric() && ty.is_integer() => {
            Scalar::Cast(Box::new(arg), SqlType::NumericUnconstrained)
        }
        // A date among timestamps is its midnight.
        target if target.is_timestamp() && ty == SqlType::Date => {
            Scalar::Cast(Box::new(arg), target)
        }
        _ => arg,
    })
}

fn compile_node(expr: &Expr, scope: &Scope) -> SqlResult<Scalar> {
    let boxed = |e: &Expr| compile(e, scope).map(Box::new);
    Ok(match expr {
        Expr::Identifier(ident) => column_ref(&fold(ident), scope)?,
        Expr::CompoundIdentifier(parts) => {
            let last = parts.last().map(fold).unwrap_or_default();
            column_ref(&last, scope)?
        }
        Expr::Value(v) => literal(&v.value)?,
        Expr::Nested(inner) => compile_inner(inner, scope)?,
        Expr::UnaryOp { op, expr } => match op {
            UnaryOperator::Minus if let Some(digits) = integer_literal_digits(expr) => {
                number(&format!("-{digits}"))?
            }
            UnaryOperator::Minus => match compile(expr, scope)? {
                Scalar::Const(v, ty) => Scalar::Const(v.neg()?, ty),
                other => Scalar::Neg(Box::new(other)),
            },
            UnaryOperator::Plus => compile_inner(expr, scope)?,
            UnaryOperator::Not => Scalar::Not(boxed(expr)?),
            other => return Err(SqlError::unsupported(format!("the operator {other}"))),
        },
        Expr::BinaryOp { left, op, right } => binary(op, boxed(left)?, boxed(right)?)?,
        Expr::IsNull(e) => Scalar::IsNull(boxed(e)?, false),
        Expr::IsNotNull(e) => Scalar::IsNull(boxed(e)?, true),
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            let value = boxed(expr)?;
            // A string literal takes the value's type, as in `id = '7'` (`id IN ('x')` is
            // 22P02, not false for every row).
            let items: Vec<Scalar> = list
                .iter()
                .map(|e| {
                    Ok(*number_literal(
                        compile(e, scope).map(Box::new)?,
                        value.ty(),
                    )?)
                })
                .collect::<SqlResult<Vec<_>>>()?;
            let mut items = char_operands(std::iter::once(*value).chain(items).collect());
            let value = Box::new(items.remove(0));
            let lookup = ConstLookup::of(&items).map(Arc::new);
            Scalar::InList(value, items, *negated, lookup)
        }
        Expr::Between {
            expr,
            negated,
            low,
            high,
        } => {
            let operands = [expr, low, high].map(|e| compile(e, scope));
            let [value, low, high]: [Scalar; 3] =
                char_operands(operands.into_iter().collect::<SqlResult<_>>()?)
                    .try_into()
                    .map_err(|_| SqlError::internal("BETWEEN has three operands"))?;
            Scalar::Between(Box::new(value), Box::new(low), Box::new(high), *negated)
        }
        Expr::Like {
            negated,
            expr,
            pattern,
            escape_char: None,
            any: false,
        } => Scalar::Like(boxed(expr)?, boxed(pattern)?, *negated),
        Expr::Cast {
            kind: CastKind::Cast | CastKind::DoubleColon,
            expr,
            data_type,
            format: None,
        } => cast(compile(expr, scope)?, data_type)?,
        Expr::TypedString(typed) => {
            let text = typed.value.value.clone().into_string().unwrap_or_default();
            cast(
                Scalar::Const(Value::Text(text), Some(SqlType::Text)),
                &typed.data_type,
            )?
        }
        Expr::Function(function) => call(function, scope)?,
        Expr::Interval(interval) => {
            Scalar::Const(interval_literal(interval)?, Some(SqlType::Interval))
        }
        other => compile_special(other, scope)?,
    })
}

/// `INTERVAL '…'`: the text read as an interval; with a unit after it (`INTERVAL '2' DAY`)
/// the text is a number of that unit. Field ranges (`DAY TO SECOND`) and precisions are
/// 0A000.
pub(crate) fn interval_literal(interval: &sqlparser::ast::Interval) -> SqlResult<Value> {
    let text = match interval.value.as_ref() {
        Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::SingleQuotedString(s) => s.clone(),
            _ => {
                return Err(SqlError::unsupported(
                    "an INTERVAL whose value is not a string",
                ));
            }
        },
        _ => {
            return Err(SqlError::unsupported(
                "an INTERVAL whose value is not a string",
            ));
        }
    };
    if interval.last_field.is_some()
        || interval.leading_precision.is_some()
        || interval.fractional_seconds_precision.is_some()
    {
        return Err(
            SqlError::unsupported("an interval's field range or precision")
                .with_hint("write the units in the text: INTERVAL '1 day 02:00:00'"),
        );
    }
    match &interval.leading_field {
        Some(unit) if text.trim().parse::<f64>().is_ok() => {
            let unit = unit.to_string().to_lowercase();
            let value = crate::value::parse_interval(&format!("{} {unit}", text.trim()))?;
            Ok(Value::Interval(value.truncated_to(&unit)))
        }
        Some(_) => Err(SqlError::unsupported(
            "an INTERVAL with a unit after it and units in its text",
        )),
        None => Value::from_text(&text, &SqlType::Interval),
    }
}

/// The expressions sqlparser parses apart from function calls: CASE, and SUBSTRING,
/// POSITION, EXTRACT, TRIM, FLOOR and CEIL in their SQL-standard forms.
fn compile_special(expr: &Expr, scope: &Scope) -> SqlResult<Scalar> {
    let boxed = |e: &Expr| compile(e, scope).map(Box::new);
    Ok(match expr {
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => compile_case(
            operand.as_deref(),
            conditions,
            else_result.as_deref(),
            scope,
        )?,
        Expr::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => {
            if substring_from.is_none() && substring_for.is_none() {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    "function substr takes a start position: substr(text, from [, count])",
                ));
            }
            let mut args = vec![*char_as_text(boxed(expr)?)];
            // SUBSTRING(s FOR n) starts at 1.
            args.push(match substring_from {
                Some(from) => compile(from, scope)?,
                None => Scalar::Const(Value::Int(1), Some(SqlType::Int)),
            });
            if let Some(count) = substring_for {
                args.push(compile(count, scope)?);
            }
            Scalar::Call(Func::Pure(PureFunc::Substr), args)
        }
        // POSITION(x IN s) is strpos(s, x).
        Expr::Position { expr, r#in } => Scalar::Call(
            Func::Pure(PureFunc::Strpos),
            vec![*char_as_text(boxed(r#in)?), *char_as_text(boxed(expr)?)],
        ),
        // EXTRACT(field FROM ts) is date_part's numeric twin.
        Expr::Extract { field, expr, .. } => Scalar::Call(
            Func::Pure(PureFunc::Extract),
            vec![
                Scalar::Const(Value::Text(field_unit(field)), Some(SqlType::Text)),
                compile(expr, scope)?,
            ],
        ),
        // sqlparser parses FLOOR and CEIL apart; `floor(x)` is all PostgreSQL has.
        Expr::Floor {
            expr,
            field:
                sqlparser::ast::CeilFloorKind::DateTimeField(sqlparser::ast::DateTimeField::NoDateTime),
        } => Scalar::Call(Func::Pure(PureFunc::Floor), vec![compile(expr, scope)?]),
        Expr::Ceil {
            expr,
            field:
                sqlparser::ast::CeilFloorKind::DateTimeField(sqlparser::ast::DateTimeField::NoDateTime),
        } => Scalar::Call(Func::Pure(PureFunc::Ceil), vec![compile(expr, scope)?]),
        Expr::Trim {
            trim_where,
            trim_what,
            expr,
            trim_characters: None,
        } => {
            use sqlparser::ast::TrimWhereField as W;
            let func = match trim_where {
                Some(W::Leading) => PureFunc::Ltrim,
                Some(W::Trailing) => PureFunc::Rtrim,
                Some(W::Both) | None => PureFunc::Btrim,
            };
            let mut args = vec![*char_as_text(boxed(expr)?)];
            if let Some(what) = trim_what {
                args.push(compile(what, scope)?);
            }
            Scalar::Call(Func::Pure(func), args)
        }
        other => {
            return Err(SqlError::unsupported(format!("the expression {other}")));
        }
    })
}

/// `CASE [operand] WHEN … THEN … [ELSE …] END`.
fn compile_case(
    operand: Option<&Expr>,
    conditions: &[sqlparser::ast::CaseWhen],
    else_result: Option<&Expr>,
    scope: &Scope,
) -> SqlResult<Scalar> {
    let mut whens = conditions
        .iter()
        .map(|arm| compile(&arm.condition, scope))
        .collect::<SqlResult<Vec<_>>>()?;
    let operand = match operand {
        Some(operand) => {
            // `CASE c WHEN 'a'` compares as `c = 'a'` does.
            whens = char_operands(
                std::iter::once(compile(operand, scope)?)
                    .chain(whens)
                    .collect(),
            );
            Some(Box::new(whens.remove(0)))
        }
        None => None,
    };
    let results = conditions.iter().map(|arm| compile(&arm.result, scope));
    Ok(Scalar::Case(
        operand,
        whens
            .into_iter()
            .zip(results)
            .map(|(w, r)| Ok((w, r?)))
            .collect::<SqlResult<_>>()?,
        else_result
            .map(|e| compile(e, scope).map(Box::new))
            .transpose()?,
    ))
}

/// The unit an EXTRACT names, as `date_part` takes it (`YEAR` is `year`).
pub(crate) fn field_unit(field: &sqlparser::ast::DateTimeField) -> String {
    match field {
        sqlparser::ast::DateTimeField::Custom(name) => name.value.to_lowercase(),
        other => other.to_string().to_lowercase(),
    }
}

fn column_ref(name: &str, scope: &Scope) -> SqlResult<Scalar> {
    match scope.iter().position(|(n, _)| n == name) {
        Some(index) => Ok(Scalar::Column(index, scope[index].1)),
        None => Err(SqlError::new(
            sqlstate::UNDEFINED_COLUMN,
            format!("column \"{name}\" does not exist"),
        )),
    }
}

/// A literal: integers are bigint (int when they fit, as PostgreSQL types them), decimals
/// numeric, strings text of unknown type (they take a column's type on assignment).
pub(crate) fn literal(value: &AstValue) -> SqlResult<Scalar> {
    Ok(match value {
        AstValue::Number(text, _) => number(text)?,
        AstValue::SingleQuotedString(s)
        | AstValue::EscapedStringLiteral(s)
        | AstValue::DollarQuotedString(sqlparser::ast::DollarQuotedString { value: s, .. }) => {
            Scalar::Const(Value::Text(s.clone()), None)
        }
        AstValue::Boolean(b) => Scalar::Const(Value::Bool(*b), Some(SqlType::Bool)),
        AstValue::Null => Scalar::Const(Value::Null, None),
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
            Scalar::Param(index - 1)
        }
        other => return Err(SqlError::unsupported(format!("the literal {other}"))),
    })
}

/// A literal with an exponent (`1.5e3`, `25E-1`) written out as a decimal, with the scale
/// PostgreSQL gives it (its fraction's digits less the exponent, at least 0): ("1500", 0),
/// ("2.5", 1). None for text that is not such a literal, or whose exponent is past 100.
pub(crate) fn exponent_as_decimal(text: &str) -> Option<(String, u8)> {
    let (mantissa, exponent) = text.split_once(['e', 'E'])?;
    let exponent: i64 = exponent.parse().ok().filter(|e: &i64| e.abs() <= 100)?;
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty() || !all_digits(whole) || !all_digits(fraction) {
        return None;
    }
    let scale = u8::try_from((fraction.len() as i64 - exponent).max(0)).ok()?;
    let digits = format!("{whole}{fraction}");
    // Where the decimal point falls in `digits`.
    let point = whole.len() as i64 + exponent;
    let len = digits.len() as i64;
    let written = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point >= len {
        format!("{digits}{}", "0".repeat((point - len) as usize))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    Some((written, scale))
}

/// The digits of an integer literal, parentheses around it included: PostgreSQL's parser
/// folds a minus into such a literal, so `-2147483648` is an integer (and `-(1)` too),
/// while `-2147483648::bigint` negates a cast.
pub(crate) fn integer_literal_digits(e: &Expr) -> Option<&str> {
    match e {
        Expr::Nested(inner) => integer_literal_digits(inner),
        Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::Number(text, _) if text.bytes().all(|b| b.is_ascii_digit()) => {
                Some(text)
            }
            _ => None,
        },
        _ => None,
    }
}

fn number(text: &str) -> SqlResult<Scalar> {
    let (value, ty) = number_value(text)?;
    Ok(Scalar::Const(value, Some(ty)))
}

/// A number literal's value and type: integer (bigint past its range), numeric (without
/// a typmod, the value at its written scale) for a decimal point or an exponent, double
/// precision past numeric's 38 digits.
pub(crate) fn number_value(text: &str) -> SqlResult<(Value, SqlType)> {
    if let Ok(v) = text.parse::<i64>() {
        let ty = if i32::try_from(v).is_ok() {
            SqlType::Int
        } else {
            SqlType::BigInt
        };
        return Ok((Value::Int(v), ty));
    }
    if let Some((digits, scale)) = exponent_as_decimal(text)
        && scale <= 38
        && let Ok(value) = Value::Text(digits).coerce(&SqlType::Numeric {
            precision: 38,
            scale,
        })
    {
        // PostgreSQL's numeric, as a decimal literal is: `0.1e0 + 0.2e0` is 0.3.
        return Ok((value, SqlType::NumericUnconstrained));
    }
    if text.contains(['e', 'E']) {
        // Past numeric's 38 digits or scale here: double precision (PostgreSQL's numeric
        // goes on; a scale past 38 overflowed the first arithmetic on it).
        let v: f64 = text.parse().map_err(|_| bad_number(text))?;
        // Past double precision's range: PostgreSQL's 22003, not inf or 0 (`1e400`
        // became inf, `1e-400` 0, and an INSERT stored the 0).
        let mantissa = text.split(['e', 'E']).next().unwrap_or_default();
        let nonzero = mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
        if v.is_infinite() || (v == 0.0 && nonzero) {
            return Err(SqlError::new(
                sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                format!("\"{text}\" is out of range for type double precision"),
            ));
        }
        return Ok((Value::Float(v), SqlType::Double));
    }
    // A decimal literal is numeric at the scale it was written with, its type numeric
    // without a typmod, as PostgreSQL types it. Past 38 places it is rounded to 38
    // (hotpage's numeric holds no more; PostgreSQL's keeps them): an error there would
    // refuse `real_col < 0.333…` with 41 threes, which PostgreSQL answers.
    let scale = text
        .split_once('.')
        .map_or(0, |(_, frac)| frac.len())
        .min(38) as u8;
    let value = Value::Text(text.to_string()).coerce(&SqlType::Numeric {
        precision: 38,
        scale,
    })?;
    Ok((value, SqlType::NumericUnconstrained))
}

fn bad_number(text: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_TEXT_REPRESENTATION,
        format!("invalid number: \"{text}\""),
    )
}

fn binary(op: &BinaryOperator, left: Box<Scalar>, right: Box<Scalar>) -> SqlResult<Scalar> {
    use BinaryOperator::*;
    // A string literal takes the other side's number type, in arithmetic too (`1 + '2.5'`
    // is 22P02, as in PostgreSQL, where it was read as a number and rounded).
    let (left, right) = if matches!(
        op,
        Eq | NotEq | Lt | LtEq | Gt | GtEq | Plus | Minus | Multiply | Divide | Modulo
    ) {
        let (left_ty, right_ty) = (left.ty(), right.ty());
        (
            datetime_literal(op, number_literal(left, right_ty)?, right_ty)?,
            datetime_literal(op, number_literal(right, left_ty)?, left_ty)?,
        )
    } else {
        (left, right)
    };
    match op {
        // Arithmetic on integer or smallint operands stays in that type, so it overflows
        // where PostgreSQL's does (values are computed as bigint, then range-checked).
        Plus | Minus | Multiply | Divide | Modulo | BitwiseAnd | BitwiseOr | PGBitwiseXor => {
            let ty = binary_type(op, left.ty(), right.ty());
            let scalar = Scalar::Binary(op.clone(), left, right);
            Ok(match ty {
                // real with real is real (PostgreSQL's float4 operators): the double result
                // of two reals, rounded to real, is what float4 arithmetic gives.
                Some(ty @ (SqlType::SmallInt | SqlType::Int | SqlType::Real)) => {
                    Scalar::Cast(Box::new(scalar), ty)
                }
                _ => scalar,
            })
        }
        StringConcat => Ok(Scalar::Binary(
            op.clone(),
            Box::new(typed_text(*char_as_text(left))),
            Box::new(typed_text(*char_as_text(right))),
        )),
        Eq | NotEq | Lt | LtEq | Gt | GtEq if is_char(&left) || is_char(&right) => Ok(
            Scalar::Binary(op.clone(), char_operand(left), char_operand(right)),
        ),
        Eq | NotEq | Lt | LtEq | Gt | GtEq | And | Or => {
            Ok(Scalar::Binary(op.clone(), left, right))
        }
        other => Err(SqlError::unsupported(format!("the operator {other}"))),
    }
}

/// A char(n) operand as text: without its padding, as PostgreSQL's char-to-text cast
/// gives it (`'ab'::char(4) || 'c'` is `abc`).
fn char_as_text(scalar: Box<Scalar>) -> Box<Scalar> {
    match scalar.ty() {
        Some(SqlType::Char(_)) => Box::new(Scalar::Call(Func::CharToText, vec![*scalar])),
        _ => scalar,
    }
}

/// A real or timestamptz operand where it becomes text, printed as its type prints it
/// (`0.1::real::text` is 0.1, not the double 0.10000000149011612; a timestamptz keeps its
/// `+00`).
pub(crate) fn typed_text(scalar: Scalar) -> Scalar {
    match scalar.ty() {
        Some(ty @ (SqlType::Real | SqlType::TimestampTz)) => {
            Scalar::Call(Func::TextOf(ty), vec![scalar])
        }
        _ => scalar,
    }
}

fn is_char(scalar: &Scalar) -> bool {
    matches!(scalar.ty(), Some(SqlType::Char(_)))
}

/// One side of a comparison with a char(n) value: char(n) values, varchar values and
/// string literals (which PostgreSQL casts to char(n) there) compare without their
/// trailing spaces (`'ab'::char(4) = 'ab  '::varchar` is true); a text value keeps them.
fn char_operand(scalar: Box<Scalar>) -> Box<Scalar> {
    let Scalar::Const(Value::Text(s), None) = scalar.as_ref() else {
        return match scalar.ty() {
            Some(SqlType::Varchar(_)) => Box::new(Scalar::Call(Func::CharToText, vec![*scalar])),
            _ => char_as_text(scalar),
        };
    };
    Box::new(Scalar::Const(
        Value::Text(s.trim_end_matches(' ').to_string()),
        None,
    ))
}

/// A tested value and what it is compared with (IN's list, BETWEEN's bounds, a simple
/// CASE's WHENs) where char(n) is among them, as PostgreSQL compares each pair: a char(n)
/// value against a literal or a varchar as char(n) (both without trailing spaces, by
/// [`char_operand`]), against a text as text; a char(n) compared with a value of another
/// string type as text, without its padding. Before, only `=` and its kin did this, so
/// `c IN ('a')` was false for a char(3) 'a'.
fn char_operands(operands: Vec<Scalar>) -> Vec<Scalar> {
    if operands.first().is_some_and(is_char) {
        return operands
            .into_iter()
            .map(|o| *char_operand(Box::new(o)))
            .collect();
    }
    operands
        .into_iter()
        .map(|o| *char_as_text(Box::new(o)))
        .collect()
}

fn cast(inner: Scalar, data_type: &DataType) -> SqlResult<Scalar> {
    let ty = SqlType::from_sql(data_type)?;
    let inner = match ty {
        SqlType::Text | SqlType::Varchar(_) => typed_text(*char_as_text(Box::new(inner))),
        SqlType::Char(_) => typed_text(inner),
        _ => inner,
    };
    Ok(match inner {
        Scalar::Const(Value::Float(f), Some(SqlType::Real)) if ty.is_numeric() => Scalar::Const(
            cast_value(crate::value::real_for_numeric(f), &ty, None)?,
            Some(ty),
        ),
        Scalar::Const(v, from) => Scalar::Const(cast_value(v, &ty, from)?, Some(ty)),
        other => Scalar::Cast(Box::new(other), ty),
    })
}

/// The arguments of a plain function call: `f(a, b)`; `f` with no parentheses has none.
pub(crate) fn plain_args(function: &Function) -> SqlResult<Vec<&Expr>> {
    match &function.args {
        FunctionArguments::None => Ok(Vec::new()),
        FunctionArguments::List(list) => list
            .args
            .iter()
            .map(|arg| match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e),
                other => Err(SqlError::unsupported(format!("the argument {other}"))),
            })
            .collect(),
        FunctionArguments::Subquery(_) => Err(SqlError::unsupported("a subquery argument")),
    }
}

fn call(function: &Function, scope: &Scope) -> SqlResult<Scalar> {
    let name = object_name(&function.name);
    if matches!(name.as_str(), "count" | "sum" | "avg" | "min" | "max") {
        return Err(SqlError::new(
            sqlstate::GROUPING_ERROR,
            format!("aggregate function {name}() is not allowed here"),
        ));
    }
    if name == "pg_typeof" {
        return type_of(function, scope);
    }
    crate::catalog::refuse_without_over(&name)?;
    let func = Func::by_name(&name).ok_or_else(|| {
        SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!("function {name}() does not exist"),
        )
    })?;
    if function.filter.is_some() {
        return Err(SqlError::new(
            sqlstate::WRONG_OBJECT_TYPE,
            format!("FILTER specified, but {name} is not an aggregate function"),
        ));
    }
    // Text functions take char(n) as text, its padding dropped (length('ab'::char(4)) is 2).
    let text_args = match func {
        Func::Lower | Func::Upper | Func::Length => true,
        Func::Pure(pure) => pure.takes_text(),
        _ => false,
    };
    // concat_ws's separator is text (its other arguments are "any", padding kept).
    let separator = func == Func::Pure(PureFunc::ConcatWs);
    let concat = separator || func == Func::Pure(PureFunc::Concat);
    let args = plain_args(function)?
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            let arg = compile(e, scope)?;
            Ok(if func == Func::Pure(PureFunc::QuoteLiteral) {
                // quote_literal casts any value to text: a char(n) without its padding, a
                // real as a real (not as the double it is held in), a boolean as a word.
                match arg.ty() {
                    Some(SqlType::Bool) => Scalar::Cast(Box::new(arg), SqlType::Text),
                    _ => typed_text(*char_as_text(Box::new(arg))),
                }
            } else if text_args || (separator && i == 0) {
                *char_as_text(Box::new(arg))
            } else if concat {
                typed_text(arg)
            } else {
                arg
            })
        })
        .collect::<SqlResult<Vec<_>>>()?;
    let arity_ok = match func {
        Func::BitReverse | Func::Abs | Func::Lower | Func::Upper | Func::Length => args.len() == 1,
        Func::CurrVal | Func::NextVal | Func::ObjectName | Func::Sleep => args.len() == 1,
        Func::Coalesce => !args.is_empty(),
        Func::DateDiff => args.len() == 3 || args.len() == 4,
        Func::DateAdd => args.len() == 3,
        Func::DatePart => args.len() == 2,
        Func::Pure(pure) => pure.takes(args.len()),
        _ => args.is_empty(),
    };
    if !arity_ok {
        return Err(SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!("function {name} does not take {} arguments", args.len()),
        ));
    }
    if func == Func::Pure(PureFunc::NullIf) && args.iter().any(is_char) {
        // Compared as char(n) (`nullif('a'::char(3), 'a')` is NULL), the first returned
        // as it is, padding and all.
        let first = args[0].clone();
        let equal = Scalar::Binary(
            sqlparser::ast::BinaryOperator::Eq,
            char_operand(Box::new(args[0].clone())),
            char_operand(Box::new(args[1].clone())),
        );
        return Ok(Scalar::Case(
            None,
            vec![(equal, Scalar::Const(Value::Null, None))],
            Some(Box::new(first)),
        ));
    }
    Ok(Scalar::Call(func, args))
}

/// `pg_typeof(x)` where this compiler meets it (an INSERT's values, a DEFAULT): the name
/// of x's type, known when the statement is planned (`unknown` for an untyped literal).
/// A query that calls it goes to the general engine, whose answer is a regtype.
fn type_of(function: &Function, scope: &Scope) -> SqlResult<Scalar> {
    let args = plain_args(function)?;
    let [arg] = args.as_slice() else {
        return Err(type_of_arity(args.len()));
    };
    let arg = compile(arg, scope)?;
    let name = match (arg.ty(), &arg) {
        (Some(ty), _) => ty.base_name(),
        (None, Scalar::Const(..) | Scalar::Param(_)) => "unknown".to_string(),
        // A CASE or COALESCE of untyped literals alone is text, as PostgreSQL resolves it.
        (None, _) => "text".to_string(),
    };
    Ok(Scalar::Const(Value::Text(name), Some(SqlType::Text)))
}

/// pg_typeof called with `n` arguments, not one (both engines' error).
pub(crate) fn type_of_arity(n: usize) -> SqlError {
    SqlError::new(
        sqlstate::UNDEFINED_FUNCTION,
        format!("function pg_typeof with {n} arguments does not exist"),
    )
}

/// The aggregate a function call is, if it is one.
pub(crate) fn aggregate_of(function: &Function) -> SqlResult<Option<(AggFunc, Option<&Expr>)>> {
    let name = object_name(&function.name);
    let func = match name.as_str() {
        "count" => AggFunc::Count,
        "sum" => AggFunc::Sum,
        "avg" => AggFunc::Avg,
        "min" => AggFunc::Min,
        "max" => AggFunc::Max,
        _ => return Ok(None),
    };
    if let FunctionArguments::List(list) = &function.args
        && list.duplicate_treatment.is_some()
    {
        return Err(SqlError::unsupported(format!("{name}(DISTINCT ...)")));
    }
    // A window (OVER) would need a different executor: refused, not run as a plain
    // aggregate.
    if function.over.is_some() || !function.within_group.is_empty() {
        return Err(SqlError::unsupported(format!(
            "{name}() as a window function (OVER) or WITHIN GROUP"
        )));
    }
    if let FunctionArguments::List(list) = &function.args
        && let [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] = list.args.as_slice()
    {
        return match func {
            AggFunc::Count => Ok(Some((AggFunc::CountStar, None))),
            _ => Err(SqlError::new(
                sqlstate::SYNTAX_ERROR,
                format!("{name}(*) is only valid as count(*)"),
            )),
        };
    }
    let args = plain_args(function)?;
    match args.as_slice() {
        [arg] => Ok(Some((func, Some(*arg)))),
        _ => Err(SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!("function {name} takes one argument"),
        )),
    }
}

impl Scalar {
    /// The result type, where it is known before running.
    pub fn ty(&self) -> Option<SqlType> {
        match self {
            Scalar::Const(_, ty) => *ty,
            Scalar::Column(_, ty) | Scalar::Cast(_, ty) => Some(*ty),
            Scalar::Param(_) => None,
            Scalar::Neg(inner) | Scalar::Deep(inner) => inner.ty(),
            Scalar::Not(_)
            | Scalar::IsNull(..)
            | Scalar::InList(..)
            | Scalar::Between(..)
            | Scalar::Like(..) => Some(SqlType::Bool),
            Scalar::Binary(op, l, r) => binary_type(op, l.ty(), r.ty()),
            Scalar::Call(func, args) => func.ty(args),
            Scalar::Case(_, arms, otherwise) => typecheck::common_type(
                otherwise
                    .iter()
                    .map(|e| e.ty())
                    .chain(arms.iter().map(|(_, result)| result.ty())),
            ),
        }
    }

    /// Evaluates against one input row.
    pub fn eval(&self, row: &[Value], ctx: &mut dyn EvalContext) -> SqlResult<Value> {
        Ok(match self {
            Scalar::Const(v, _) => v.clone(),
            Scalar::Column(i, _) => row.get(*i).cloned().unwrap_or(Value::Null),
            Scalar::Param(i) => ctx.param(*i)?,
            Scalar::Deep(inner) => {
                stacker::maybe_grow(DEEP_STACK_BYTES, DEEP_STACK_BYTES, || inner.eval(row, ctx))?
            }
            Scalar::Neg(e) => e.eval(row, ctx)?.neg()?,
            Scalar::Not(e) => match truth(&e.eval(row, ctx)?)? {
                Some(b) => Value::Bool(!b),
                None => Value::Null,
            },
            Scalar::Binary(op, l, r) => eval_binary(op, l, r, row, ctx)?,
            Scalar::IsNull(e, negated) => {
                Value::Bool((e.eval(row, ctx)? == Value::Null) != *negated)
            }
            Scalar::InList(e, list, negated, lookup) => {
                eval_in(e, list, *negated, lookup.as_deref(), row, ctx)?
            }
            Scalar::Between(e, lo, hi, negated) => {
                let v = e.eval(row, ctx)?;
                let (low, high) = (lo.eval(row, ctx)?, hi.eval(row, ctx)?);
                let ge = compare_or_refuse(&v, &">=", &low)?.map(|o| o != Ordering::Less);
                let le = compare_or_refuse(&v, &"<=", &high)?.map(|o| o != Ordering::Greater);
                match (ge, le) {
                    (Some(a), Some(b)) => Value::Bool((a && b) != *negated),
                    (Some(false), None) | (None, Some(false)) => Value::Bool(*negated),
                    _ => Value::Null,
                }
            }
            Scalar::Like(e, pattern, negated) => {
                match (e.eval(row, ctx)?, pattern.eval(row, ctx)?) {
                    (Value::Text(s), Value::Text(p)) => {
                        Value::Bool(like(&s, &p, ctx.like_escapes())? != *negated)
                    }
                    (Value::Null, _) | (_, Value::Null) => Value::Null,
                    _ => return Err(mismatch("LIKE needs text")),
                }
            }
            Scalar::Cast(e, ty) => match e.eval(row, ctx)? {
                Value::Float(f) if ty.is_numeric() && e.ty() == Some(SqlType::Real) => {
                    cast_value(crate::value::real_for_numeric(f), ty, None)?
                }
                value => cast_value(value, ty, e.ty())?,
            },
            // Lazily, as PostgreSQL: `coalesce(x, 1 / 0)` is x where x is not NULL.
            Scalar::Call(Func::Coalesce, args) => {
                for arg in args {
                    let value = arg.eval(row, ctx)?;
                    if value != Value::Null {
                        return Ok(value);
                    }
                }
                Value::Null
            }
            Scalar::Call(func, args) => {
                let values = args
                    .iter()
                    .map(|a| a.eval(row, ctx))
                    .collect::<SqlResult<Vec<_>>>()?;
                match eval_call(*func, values, ctx)? {
                    // These compute in i64 and take their arguments' type, so a result past
                    // int's range (`abs` or `gcd` of its minimum) is checked against it.
                    Value::Int(i)
                        if i16::try_from(i).is_err()
                            && matches!(
                                func,
                                Func::Abs
                                    | Func::Pure(PureFunc::Mod | PureFunc::Gcd | PureFunc::Lcm)
                            ) =>
                    {
                        fit_integer(i, self.ty())?
                    }
                    result => result,
                }
            }
            Scalar::Case(operand, arms, otherwise) => {
                eval_case(operand.as_deref(), arms, otherwise.as_deref(), row, ctx)?
            }
        })
    }

    /// The nodes directly below this one.
    pub fn children(&self) -> Vec<&Scalar> {
        match self {
            Scalar::Const(..) | Scalar::Column(..) | Scalar::Param(_) => Vec::new(),
            Scalar::Neg(e)
            | Scalar::Not(e)
            | Scalar::Cast(e, _)
            | Scalar::IsNull(e, _)
            | Scalar::Deep(e) => vec![e],
            Scalar::Binary(_, l, r) | Scalar::Like(l, r, _) => vec![l, r],
            Scalar::InList(e, list, _, _) => std::iter::once(e.as_ref()).chain(list).collect(),
            Scalar::Between(a, b, c, _) => vec![a, b, c],
            Scalar::Call(_, args) => args.iter().collect(),
            Scalar::Case(operand, arms, otherwise) => operand
                .iter()
                .chain(otherwise)
                .map(|e| e.as_ref())
                .chain(arms.iter().flat_map(|(w, r)| [w, r]))
                .collect(),
        }
    }

    /// True if this node or any below it passes `test`.
    pub fn any_node(&self, test: &dyn Fn(&Scalar) -> bool) -> bool {
        test(self) || self.children().into_iter().any(|c| c.any_node(test))
    }

    /// True if evaluating this calls `nextval()`, which needs the engine session that a
    /// table scan holds.
    pub fn calls_nextval(&self) -> bool {
        self.any_node(&|s| matches!(s, Scalar::Call(Func::NextVal, _)))
    }

    /// True if the expression reads no column (a constant, a parameter, a function of them).
    pub fn is_row_independent(&self) -> bool {
        match self {
            Scalar::Const(..) | Scalar::Param(_) => true,
            Scalar::Column(..) => false,
            Scalar::Neg(e)
            | Scalar::Not(e)
            | Scalar::Cast(e, _)
            | Scalar::IsNull(e, _)
            | Scalar::Deep(e) => e.is_row_independent(),
            Scalar::Binary(_, l, r) | Scalar::Like(l, r, _) => {
                l.is_row_independent() && r.is_row_independent()
            }
            Scalar::InList(e, list, _, _) => {
                e.is_row_independent() && list.iter().all(Scalar::is_row_independent)
            }
            Scalar::Between(a, b, c, _) => {
                a.is_row_independent() && b.is_row_independent() && c.is_row_independent()
            }
            // nextval and friends change state: never treat them as constants.
            Scalar::Call(..) => false,
            Scalar::Case(operand, arms, otherwise) => {
                operand
                    .iter()
                    .chain(otherwise)
                    .all(|e| e.is_row_independent())
                    && arms
                        .iter()
                        .all(|(w, r)| w.is_row_independent() && r.is_row_independent())
            }
        }
    }
}

/// The chosen arm's result: with an operand, the first arm whose value equals it (NULL
/// equals nothing); without, the first whose condition is true; else ELSE, or NULL.
fn eval_case(
    operand: Option<&Scalar>,
    arms: &[(Scalar, Scalar)],
    otherwise: Option<&Scalar>,
    row: &[Value],
    ctx: &mut dyn EvalContext,
) -> SqlResult<Value> {
    let operand = operand.map(|e| e.eval(row, ctx)).transpose()?;
    for (when, result) in arms {
        let value = when.eval(row, ctx)?;
        let chosen = match &operand {
            Some(Value::Null) => false,
            Some(v) => compare_or_refuse(v, &"=", &value)? == Some(Ordering::Equal),
            None => match value {
                Value::Bool(b) => b,
                Value::Null => false,
                other => {
                    return Err(mismatch(&format!(
                        "argument of CASE/WHEN must be type boolean, not type {}",
                        other.type_name()
                    )));
                }
            },
        };
        if chosen {
            return result.eval(row, ctx);
        }
    }
    otherwise.map_or(Ok(Value::Null), |e| e.eval(row, ctx))
}

fn binary_type(op: &BinaryOperator, l: Option<SqlType>, r: Option<SqlType>) -> Option<SqlType> {
    use BinaryOperator::*;
    match op {
        Eq | NotEq | Lt | LtEq | Gt | GtEq | And | Or => Some(SqlType::Bool),
        StringConcat => Some(SqlType::Text),
        // Dates, timestamps and intervals: PostgreSQL's operators (a pair it has not
        // fails when evaluated, in Value::arith).
        _ => {
            let symbol = match op {
                Plus => Some('+'),
                Minus => Some('-'),
                Multiply => Some('*'),
                Divide => Some('/'),
                _ => None,
            };
            if let Some(found) =
                symbol.and_then(|symbol| crate::types::datetime_operator_type(symbol, l, r))
            {
                return found;
            }
            number_type(l, r)
        }
    }
}

/// The type of arithmetic on numbers (and of the other operators' operands).
fn number_type(l: Option<SqlType>, r: Option<SqlType>) -> Option<SqlType> {
    match (l, r) {
        (Some(SqlType::Real), Some(SqlType::Real)) => Some(SqlType::Real),
        (Some(a), Some(b)) if a.is_float() || b.is_float() => Some(SqlType::Double),
        // PostgreSQL's numeric operators return numeric without a typmod.
        (Some(a), _) | (_, Some(a)) if a.is_numeric() => Some(SqlType::NumericUnconstrained),
        (Some(SqlType::BigInt), _) | (_, Some(SqlType::BigInt)) => Some(SqlType::BigInt),
        // smallint with integer is integer, either side (PostgreSQL's int24 and int42
        // operators): `s + 5000` was computed, and overflowed, in smallint.
        (Some(SqlType::Int), Some(b)) | (Some(b), Some(SqlType::Int)) if b.is_integer() => {
            Some(SqlType::Int)
        }
        (Some(a), Some(_)) => Some(a),
        (a, None) => a,
        (None, b) => b,
    }
}

/// A string literal compared with a number (or a date) takes its type when the query is
/// planned, as PostgreSQL's unknown literal does: `id = 'x'` is 22P02 (invalid input
/// syntax for type integer), `id = '7'` compares 7. A numeric column's literal is plain
/// numeric, without the column's precision and scale (`n = '12345'` on a numeric(3,0)
/// is false, not 22003; `n = '1.234'` is not rounded to 1.23).
fn number_literal(side: Box<Scalar>, other: Option<SqlType>) -> SqlResult<Box<Scalar>> {
    match (side.as_ref(), other) {
        (Scalar::Const(Value::Text(text), None), Some(ty)) if ty.is_numeric() => {
            number(text.trim()).map(Box::new).map_err(|_| {
                SqlError::new(
                    sqlstate::INVALID_TEXT_REPRESENTATION,
                    format!("invalid input syntax for type numeric: \"{text}\""),
                )
            })
        }
        (Scalar::Const(text @ Value::Text(_), None), Some(ty))
            if ty.is_numeric_family() && ty != SqlType::Oid || ty == SqlType::Date =>
        {
            Ok(Box::new(Scalar::Const(text.clone().coerce(&ty)?, Some(ty))))
        }
        _ => Ok(side),
    }
}

/// A string literal beside a timestamp or an interval takes the type PostgreSQL's operator
/// resolution gives it: an interval beside an interval, and added to a timestamp
/// (`ts + '1 day'`); a timestamp subtracted from or compared with one (`ts - '2024-01-01'`
/// is an interval, `ts - '1 day'` 22007, as there).
fn datetime_literal(
    op: &BinaryOperator,
    side: Box<Scalar>,
    other: Option<SqlType>,
) -> SqlResult<Box<Scalar>> {
    use BinaryOperator::Plus;
    let Scalar::Const(text @ Value::Text(_), None) = side.as_ref() else {
        return Ok(side);
    };
    if COMPILE_TYPING.with(|rules| rules.get()) != Typing::Postgres {
        return Ok(side);
    }
    let target = match (op, other) {
        (Plus, Some(SqlType::Timestamp | SqlType::TimestampTz)) | (_, Some(SqlType::Interval)) => {
            SqlType::Interval
        }
        (_, Some(ts @ (SqlType::Timestamp | SqlType::TimestampTz))) => ts,
        _ => return Ok(side),
    };
    Ok(Box::new(Scalar::Const(
        text.clone().coerce(&target)?,
        Some(target),
    )))
}

fn mismatch(what: &str) -> SqlError {
    SqlError::new(sqlstate::DATATYPE_MISMATCH, what.to_string())
}

/// SQL's three-valued truth of a value: NULL is unknown.
pub(crate) fn truth(v: &Value) -> SqlResult<Option<bool>> {
    match v {
        Value::Bool(b) => Ok(Some(*b)),
        Value::Null => Ok(None),
        other => Err(mismatch(&format!(
            "argument of WHERE/AND/OR/NOT must be type boolean, not type {}",
            other.type_name()
        ))),
    }
}

/// Compares two values, with text given to a typed value parsed as that type (a literal
/// `'42'` compared with an integer column).
pub(crate) fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Text(t), other) if !matches!(other, Value::Text(_) | Value::Null) => {
            let coerced = Value::Text(t.clone()).coerce(&natural_type(other)).ok()?;
            coerced.sql_cmp(other)
        }
        (other, Value::Text(t)) if !matches!(other, Value::Text(_) | Value::Null) => {
            let coerced = Value::Text(t.clone()).coerce(&natural_type(other)).ok()?;
            other.sql_cmp(&coerced)
        }
        _ => a.sql_cmp(b),
    }
}

/// [`compare`] where a comparison must not pass in silence: None only where a side is
/// NULL. Values that do not compare (text that does not read as the other side's number,
/// a boolean with a number) are 42883, as `op` between their types is in PostgreSQL; an
/// IN list, a CASE operand or BETWEEN took such a pair as "not equal" and went on.
pub(crate) fn compare_or_refuse(
    a: &Value,
    op: &dyn std::fmt::Display,
    b: &Value,
) -> SqlResult<Option<Ordering>> {
    if *a == Value::Null || *b == Value::Null {
        return Ok(None);
    }
    compare(a, b).map(Some).ok_or_else(|| {
        SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!(
                "operator does not exist: {} {op} {}",
                a.type_name(),
                b.type_name()
            ),
        )
    })
}

/// The type a value's text would be parsed as, to compare with it.
fn natural_type(v: &Value) -> SqlType {
    match v {
        Value::Bool(_) => SqlType::Bool,
        Value::Int(_) => SqlType::BigInt,
        Value::Float(_) => SqlType::Double,
        Value::Numeric { scale, .. } => SqlType::Numeric {
            precision: 38,
            scale: *scale,
        },
        Value::Bytes(_) => SqlType::Bytea,
        Value::Uuid(_) => SqlType::Uuid,
        Value::Timestamp(_) => SqlType::TimestampTz,
        Value::Date(_) => SqlType::Date,
        Value::Interval(_) => SqlType::Interval,
        Value::Text(_) | Value::Null => SqlType::Text,
    }
}

fn eval_binary(
    op: &BinaryOperator,
    l: &Scalar,
    r: &Scalar,
    row: &[Value],
    ctx: &mut dyn EvalContext,
) -> SqlResult<Value> {
    use BinaryOperator::*;
    if matches!(op, And | Or) {
        let a = truth(&l.eval(row, ctx)?)?;
        // Short-circuit where SQL's three-valued logic allows.
        match (op, a) {
            (And, Some(false)) => return Ok(Value::Bool(false)),
            (Or, Some(true)) => return Ok(Value::Bool(true)),
            _ => {}
        }
        let b = truth(&r.eval(row, ctx)?)?;
        return Ok(match (op, a, b) {
            (And, _, Some(false)) => Value::Bool(false),
            (Or, _, Some(true)) => Value::Bool(true),
            (_, Some(x), Some(y)) => Value::Bool(if *op == And { x && y } else { x || y }),
            _ => Value::Null,
        });
    }
    let (a, b) = (l.eval(row, ctx)?, r.eval(row, ctx)?);
    if a == Value::Null || b == Value::Null {
        return Ok(Value::Null);
    }
    // A number meets a text here, at run time, and compares if the text reads as a
    // number: T-SQL converts so (its statements run here too); PostgreSQL would refuse
    // the two types when planning, with this SQLSTATE (docs/design.md).
    let ordered = |test: fn(Ordering) -> bool| -> SqlResult<Value> {
        let order = compare_or_refuse(&a, op, &b)?;
        Ok(order.map_or(Value::Null, |o| Value::Bool(test(o))))
    };
    match op {
        Eq => ordered(|o| o == Ordering::Equal),
        NotEq => ordered(|o| o != Ordering::Equal),
        Lt => ordered(|o| o == Ordering::Less),
        LtEq => ordered(|o| o != Ordering::Greater),
        Gt => ordered(|o| o == Ordering::Greater),
        GtEq => ordered(|o| o != Ordering::Less),
        Plus => as_number(a)?.add(&as_number(b)?),
        Minus => as_number(a)?.sub(&as_number(b)?),
        Multiply => as_number(a)?.mul(&as_number(b)?),
        Divide => as_number(a)?.div(&as_number(b)?),
        Modulo => as_number(a)?.rem(&as_number(b)?),
        BitwiseAnd | BitwiseOr | PGBitwiseXor => bitwise(op, &a, &b),
        StringConcat => {
            let (left, right) = (
                cast_text(&a).unwrap_or_default(),
                cast_text(&b).unwrap_or_default(),
            );
            // Checked before the joined text is made: past 1 GB it never exists.
            crate::limits::check_text_len(left.len().saturating_add(right.len()))?;
            Ok(Value::Text(left + &right))
        }
        other => Err(SqlError::unsupported(format!("the operator {other}"))),
    }
}

/// `&`, `|`, `#` on integers (T-SQL's `&`, `|`, `^`).
fn bitwise(op: &BinaryOperator, a: &Value, b: &Value) -> SqlResult<Value> {
    let (Value::Int(x), Value::Int(y)) = (a, b) else {
        return Err(mismatch(&format!(
            "operator does not exist: {} {op} {}",
            a.type_name(),
            b.type_name()
        )));
    };
    Ok(Value::Int(match op {
        BinaryOperator::BitwiseAnd => x & y,
        BinaryOperator::BitwiseOr => x | y,
        _ => x ^ y,
    }))
}

/// An arithmetic operand: text literals are read as numbers.
fn as_number(v: Value) -> SqlResult<Value> {
    match v {
        Value::Text(t) => {
            let trimmed = t.trim();
            if let Ok(i) = trimmed.parse::<i64>() {
                Ok(Value::Int(i))
            } else {
                trimmed
                    .parse::<f64>()
                    .map(Value::Float)
                    .map_err(|_| bad_number(trimmed))
            }
        }
        other => Ok(other),
    }
}

/// An IN list's constants as a hash set, for a list long enough that searching it row
/// by row costs more than hashing (an IN of 20,000 values over 50,000 rows took 14 s).
/// Only a list of integers (and NULLs) or of strings (and NULLs): a value of the same kind
/// is equal to a member exactly when `compare` says so (integers by value, strings byte
/// for byte). Any other value is compared with each item, as without the set.
#[derive(Debug)]
pub(crate) struct ConstLookup {
    ints: std::collections::HashSet<i64>,
    texts: std::collections::HashSet<String>,
    has_null: bool,
}

/// Lists shorter than this are searched item by item.
const LOOKUP_ITEMS_MIN: usize = 16;

impl ConstLookup {
    fn of(items: &[Scalar]) -> Option<ConstLookup> {
        if items.len() < LOOKUP_ITEMS_MIN {
            return None;
        }
        let mut lookup = ConstLookup {
            ints: Default::default(),
            texts: Default::default(),
            has_null: false,
        };
        for item in items {
            match item {
                Scalar::Const(Value::Int(v), _) => lookup.ints.insert(*v),
                Scalar::Const(Value::Text(t), _) => lookup.texts.insert(t.clone()),
                Scalar::Const(Value::Null, _) => {
                    lookup.has_null = true;
                    true
                }
                _ => return None,
            };
        }
        // One kind only: an integer list holds no string that compare would parse.
        (lookup.ints.is_empty() || lookup.texts.is_empty()).then_some(lookup)
    }

    /// The IN's answer for `v` (not NULL), or None where the set cannot tell.
    fn find(&self, v: &Value, negated: bool) -> Option<Value> {
        let found = match v {
            Value::Int(i) if self.texts.is_empty() => self.ints.contains(i),
            Value::Text(t) if self.ints.is_empty() => self.texts.contains(t),
            _ => return None,
        };
        Some(match (found, self.has_null) {
            (true, _) => Value::Bool(!negated),
            (false, true) => Value::Null,
            (false, false) => Value::Bool(negated),
        })
    }
}

fn eval_in(
    e: &Scalar,
    list: &[Scalar],
    negated: bool,
    lookup: Option<&ConstLookup>,
    row: &[Value],
    ctx: &mut dyn EvalContext,
) -> SqlResult<Value> {
    let v = e.eval(row, ctx)?;
    if v == Value::Null {
        return Ok(Value::Null);
    }
    if let Some(answer) = lookup.and_then(|l| l.find(&v, negated)) {
        return Ok(answer);
    }
    let mut saw_null = false;
    for item in list {
        let candidate = item.eval(row, ctx)?;
        match compare_or_refuse(&v, &if negated { "<>" } else { "=" }, &candidate)? {
            Some(Ordering::Equal) => return Ok(Value::Bool(!negated)),
            None => saw_null = true,
            _ => {}
        }
    }
    Ok(if saw_null {
        Value::Null
    } else {
        Value::Bool(negated)
    })
}

/// `s LIKE pattern`: `%` is any run of characters, `_` any one, and `\` makes the next
/// character literal (PostgreSQL's default escape: `'a%c' LIKE 'a\%c'`). A `%` in the
/// pattern is a wildcard even where the text has a `%` at that place (`'a%b' LIKE 'a%'`
/// was false: the pattern's `%` was taken as the text's literal `%`). A pattern ending in
/// a lone `\` is 22025 when the match reaches it with text left, as in PostgreSQL. The
/// general engine (`catalog/exec.rs`) matches through a regex built by `like_to_regex`;
/// this one is used per row of a one-table scan, without building anything. Without
/// `escapes` (a T-SQL session: SQL Server has no default escape) `\` is literal.
fn like(s: &str, pattern: &str, escapes: bool) -> SqlResult<bool> {
    let (s, p): (Vec<char>, Vec<char>) = (s.chars().collect(), pattern.chars().collect());
    // Iterative matching with backtracking to the last `%`.
    let (mut si, mut pi, mut star, mut mark) = (0usize, 0usize, None::<usize>, 0usize);
    while si < s.len() {
        let step = match p.get(pi) {
            Some('%') => {
                star = Some(pi);
                mark = si;
                pi += 1;
                continue;
            }
            Some('\\') if escapes => match p.get(pi + 1) {
                Some(&literal) => (literal == s[si]).then_some(2),
                None => {
                    return Err(SqlError::new(
                        sqlstate::INVALID_ESCAPE_SEQUENCE,
                        "LIKE pattern must not end with escape character",
                    ));
                }
            },
            Some('_') => Some(1),
            Some(&c) => (c == s[si]).then_some(1),
            None => None,
        };
        match (step, star) {
            (Some(width), _) => {
                si += 1;
                pi += width;
            }
            (None, Some(star_at)) => {
                pi = star_at + 1;
                mark += 1;
                si = mark;
            }
            (None, None) => return Ok(false),
        }
    }
    Ok(p[pi..].iter().all(|&c| c == '%'))
}

/// `v::ty`, `v` of static type `from` where it is known. A cast PostgreSQL has not is 42846
/// `cannot cast type integer to date`, naming `from` (else the value's own type).
fn cast_value(v: Value, ty: &SqlType, from: Option<SqlType>) -> SqlResult<Value> {
    match (&v, ty) {
        // Explicit casts to text print the value the way PostgreSQL does; an explicit cast
        // to varchar(n) or char(n) cuts the text to n characters (assignment refuses it).
        (Value::Text(_), SqlType::Varchar(_) | SqlType::Char(_)) => {
            truncate_for_cast(v, ty).coerce(ty)
        }
        (Value::Text(_) | Value::Null, _) => v.coerce(ty),
        // PostgreSQL's explicit casts between integer and boolean (int4 only there; an
        // integer literal is bigint here, so every integer type is taken).
        (Value::Int(i), SqlType::Bool) => Ok(Value::Bool(*i != 0)),
        (Value::Bool(b), SqlType::SmallInt | SqlType::Int | SqlType::BigInt) => {
            Ok(Value::Int(i64::from(*b)))
        }
        (_, SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_)) => {
            truncate_for_cast(Value::Text(cast_text(&v).unwrap_or_default()), ty).coerce(ty)
        }
        _ => {
            let from_name = from.map_or_else(|| v.type_name().to_string(), |t| t.name());
            v.coerce(ty).map_err(|err| {
                if err.sqlstate == sqlstate::DATATYPE_MISMATCH {
                    SqlError::new(
                        sqlstate::CANNOT_COERCE,
                        format!("cannot cast type {from_name} to {}", ty.name()),
                    )
                } else {
                    err
                }
            })
        }
    }
}

/// A value as its cast to text gives it (None for NULL): the output function's text,
/// but for booleans, whose cast to text spells the word (`true`), where their output
/// function prints `t`.
fn cast_text(v: &Value) -> Option<String> {
    match v {
        Value::Bool(b) => Some(b.to_string()),
        other => other.to_pg_text(None),
    }
}

/// Text cut to a varchar(n)/char(n) length, as an explicit cast does.
fn truncate_for_cast(v: Value, ty: &SqlType) -> Value {
    let limit = match ty {
        SqlType::Varchar(Some(n)) | SqlType::Char(n) => *n as usize,
        _ => return v,
    };
    match v {
        Value::Text(s) if s.chars().count() > limit => Value::Text(s.chars().take(limit).collect()),
        other => other,
    }
}

/// `i` as a value of `ty`, or 22003 where `ty` is a smaller integer type than it fits.
fn fit_integer(i: i64, ty: Option<SqlType>) -> SqlResult<Value> {
    match ty {
        Some(ty @ (SqlType::SmallInt | SqlType::Int)) => Value::Int(i).coerce(&ty),
        _ => Ok(Value::Int(i)),
    }
}

pub(crate) fn eval_call(
    func: Func,
    args: Vec<Value>,
    ctx: &mut dyn EvalContext,
) -> SqlResult<Value> {
    let first = args.first().cloned().unwrap_or(Value::Null);
    Ok(match func {
        Func::BitReverse => match first {
            Value::Int(v) if v >= 0 => Value::Int(hotpage::reverse_bits_63(v as u64) as i64),
            Value::Null => Value::Null,
            other => {
                return Err(SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    format!(
                        "bit_reverse() takes a non-negative bigint, not {}",
                        other.to_pg_text(None).unwrap_or_default()
                    ),
                ));
            }
        },
        Func::Abs => match first {
            Value::Null => Value::Null,
            v if compare(&v, &Value::Int(0)) == Some(Ordering::Less) => v.neg()?,
            v => v,
        },
        Func::Lower | Func::Upper | Func::Length => match first {
            Value::Null => Value::Null,
            Value::Text(s) => match func {
                Func::Lower => Value::Text(s.to_lowercase()),
                Func::Upper => Value::Text(s.to_uppercase()),
                _ => Value::Int(s.chars().count() as i64),
            },
            _ => return Err(mismatch("the function needs text")),
        },
        Func::CharToText => match first {
            Value::Text(s) => Value::Text(s.trim_end_matches(' ').to_string()),
            other => other,
        },
        Func::TextOf(ty) => first.to_pg_text(Some(&ty)).map_or(Value::Null, Value::Text),
        Func::Coalesce => args
            .into_iter()
            .find(|v| *v != Value::Null)
            .unwrap_or(Value::Null),
        Func::DateDiff => date_diff(&args)?,
        Func::DateAdd => tsql_dates::date_add(&args)?,
        Func::DatePart => tsql_dates::date_part(&args)?,
        Func::Pure(pure) => pure.eval(args)?,
        _ => ctx.call(func, &args)?,
    })
}

/// `hotpage_datediff(unit, a, b [, 'int'])`: boundaries crossed, as SQL Server counts them
/// (`DATEDIFF(second, '…:00.9', '…:01.1')` is 1). A unit in microseconds: the difference
/// of the two timestamps each floored to the unit (day boundaries fall at midnight, since
/// the timestamps' epoch is a midnight). A calendar part by name (`'week'`, `'iso_week'`, `'month'`,
/// `'quarter'`, `'year'`): the difference of the two timestamps' calendar indexes
/// (`value::calendar_index`); `'nanosecond'`: the microseconds between them times 1,000.
fn date_diff(args: &[Value]) -> SqlResult<Value> {
    match args {
        // T-SQL's DATEDIFF, whose count is an int (DATEDIFF_BIG's is a bigint).
        [unit, a, b, Value::Text(kind)] if kind.eq_ignore_ascii_case("int") => {
            match date_diff_big(&[unit.clone(), a.clone(), b.clone()])? {
                Value::Int(count) if i32::try_from(count).is_err() => Err(date_diff_overflow()),
                count => Ok(count),
            }
        }
        [_, _, _] => date_diff_big(args),
        _ => Err(mismatch(
            "hotpage_datediff's fourth argument is 'int' (a count that must fit an int)",
        )),
    }
}

fn date_diff_overflow() -> SqlError {
    SqlError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        "the datediff function resulted in an overflow (SQL Server error 535)",
    )
}

/// A value as SQL Server converts one to a datetime (a DATEDIFF date, a datetime
/// variable's value): a timestamp as it is, a date as its midnight, text
/// through the timestamp input (`'2026-11-25 10:00'`), and a number, literal or not (an
/// int variable, `@d + 1`, a column), as days since 1900-01-01 with a fraction of a day
/// for a float or decimal (the idiom `DATEDIFF(month, 0, GETDATE())`). The conversion is
/// made here, at run time, because a variable's type is not known where the T-SQL is
/// translated. Anything else is 42804.
pub(crate) fn tsql_datetime(value: &Value) -> SqlResult<Value> {
    /// Days from 1900-01-01 to 2000-01-01, the timestamps' epoch.
    const DAYS_1900_TO_2000: i64 = 36_524;
    const USECS_PER_DAY: i64 = 86_400_000_000;
    let out_of_range = |days: &dyn std::fmt::Display| {
        SqlError::new(
            sqlstate::DATETIME_FIELD_OVERFLOW,
            format!("{days} days from 1900-01-01 is out of the datetime range"),
        )
    };
    match value {
        Value::Null | Value::Timestamp(_) => Ok(value.clone()),
        Value::Date(days) => Ok(Value::Timestamp(crate::value::date_to_timestamp(*days))),
        Value::Text(_) => value.clone().coerce(&SqlType::Timestamp),
        Value::Int(days) => days
            .checked_sub(DAYS_1900_TO_2000)
            .and_then(|d| d.checked_mul(USECS_PER_DAY))
            .map(Value::Timestamp)
            .ok_or_else(|| out_of_range(days)),
        Value::Float(_) | Value::Numeric { .. } => {
            let days = match value.clone().coerce(&SqlType::Double)? {
                Value::Float(days) => days,
                _ => return Err(mismatch("a date number must be a number of days")),
            };
            let micros = ((days - DAYS_1900_TO_2000 as f64) * USECS_PER_DAY as f64).round();
            // Within ±2^62 µs (±146,000 years): a real date, and no saturating cast.
            if micros.is_finite() && micros.abs() < 4.6e18 {
                Ok(Value::Timestamp(micros as i64))
            } else {
                Err(out_of_range(&days))
            }
        }
        other => Err(mismatch(&format!(
            "{} does not convert to a datetime",
            other.to_pg_text(None).unwrap_or_default()
        ))),
    }
}

/// [`date_diff`]'s count as a bigint.
fn date_diff_big(args: &[Value]) -> SqlResult<Value> {
    let overflow = date_diff_overflow;
    let (a, b) = match args {
        [_, a, b] => (tsql_datetime(a)?, tsql_datetime(b)?),
        _ => return Err(mismatch("hotpage_datediff takes a unit and two timestamps")),
    };
    match [args[0].clone(), a, b].as_slice() {
        [Value::Null, _, _] | [_, Value::Null, _] | [_, _, Value::Null] => Ok(Value::Null),
        [Value::Int(unit), Value::Timestamp(a), Value::Timestamp(b)] if *unit > 0 => b
            .div_euclid(*unit)
            .checked_sub(a.div_euclid(*unit))
            .map(Value::Int)
            .ok_or_else(overflow),
        [Value::Text(part), Value::Timestamp(a), Value::Timestamp(b)] => {
            let part = part.to_ascii_lowercase();
            if part == "nanosecond" {
                return b
                    .checked_sub(*a)
                    .and_then(|us| us.checked_mul(1_000))
                    .map(Value::Int)
                    .ok_or_else(overflow);
            }
            match (
                crate::value::calendar_index(*a, &part),
                crate::value::calendar_index(*b, &part),
            ) {
                (Some(a), Some(b)) => b.checked_sub(a).map(Value::Int).ok_or_else(overflow),
                _ => Err(SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    format!(
                        "hotpage_datediff: unknown part \"{part}\" (a unit in microseconds, or week, iso_week, month, quarter, year, nanosecond)"
                    ),
                )),
            }
        }
        _ => Err(mismatch(
            "hotpage_datediff takes a unit (microseconds above 0, or a part's name) and two timestamps",
        )),
    }
}

/// Whether an ORDER BY key sorts descending: `DESC`, or `USING >`; `USING <` is `ASC`.
/// Another operator is 0A000 (it was once read as `ASC` without a word).
pub(crate) fn sort_is_desc(sort: Option<&sqlparser::ast::OrderBySort>) -> SqlResult<bool> {
    use sqlparser::ast::OrderBySort;
    match sort {
        None | Some(OrderBySort::Asc) => Ok(false),
        Some(OrderBySort::Desc) => Ok(true),
        Some(OrderBySort::Using(op)) => match op.to_string().as_str() {
            "<" | "<=" => Ok(false),
            ">" | ">=" => Ok(true),
            other => Err(SqlError::unsupported(format!("ORDER BY … USING {other}"))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_diff_counts_unit_boundaries() {
        let second = Value::Int(1_000_000);
        let at = |us: i64| Value::Timestamp(us);
        let diff = |a: i64, b: i64| date_diff(&[second.clone(), at(a), at(b)]).unwrap();
        assert_eq!(diff(900_000, 1_100_000), Value::Int(1));
        assert_eq!(diff(1_100_000, 900_000), Value::Int(-1));
        assert_eq!(diff(0, 999_999), Value::Int(0));
        assert_eq!(diff(-1, 0), Value::Int(1));
        assert_eq!(
            date_diff(&[second.clone(), Value::Null, at(1)]).unwrap(),
            Value::Null
        );
        assert!(date_diff(&[Value::Int(0), at(0), at(1)]).is_err());
        let overflow = date_diff(&[Value::Int(1), at(i64::MIN), at(i64::MAX)]);
        assert_eq!(overflow.unwrap_err().sqlstate, "22003");
    }

    /// Days from 0001-01-01 to `(year, month, day)`, counted the slow way: a reference
    /// for DATEDIFF that shares no code with `value::datetime`'s civil-date algorithm.
    fn naive_days(year: i64, month: u32, day: u32) -> i64 {
        let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let mut days = 0;
        for y in 1..year {
            days += if leap(y) { 366 } else { 365 };
        }
        let lengths = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        for m in 1..month {
            days += lengths[m as usize - 1] + i64::from(m == 2 && leap(year));
        }
        days + i64::from(day) - 1
    }

    /// A timestamp at a date and second of the day, through the SQL layer's parser.
    fn timestamp_at(year: i64, month: u32, day: u32, second: u32) -> Value {
        let text = format!(
            "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
            second / 3600,
            second / 60 % 60,
            second % 60
        );
        Value::from_text(&text, &SqlType::Timestamp).unwrap()
    }

    fn calendar_date() -> impl proptest::strategy::Strategy<Value = (i64, u32, u32, u32)> {
        // Day 1..=28 is in every month; leap days come in through the day counts.
        (1i64..=9999, 1u32..=12, 1u32..=28, 0u32..86_400)
    }

    proptest::proptest! {
        #[test]
        fn date_diff_agrees_with_a_naive_calendar(a in calendar_date(), b in calendar_date()) {
            let (ta, tb) = (timestamp_at(a.0, a.1, a.2, a.3), timestamp_at(b.0, b.1, b.2, b.3));
            let diff = |unit: Value| date_diff(&[unit, ta.clone(), tb.clone()]).unwrap();
            let (da, db) = (naive_days(a.0, a.1, a.2), naive_days(b.0, b.1, b.2));
            proptest::prop_assert_eq!(diff(Value::Int(86_400_000_000)), Value::Int(db - da));
            // 0001-01-01 was a Monday: day 6 is the first Sunday.
            let week = |d: i64| (d + 1).div_euclid(7);
            proptest::prop_assert_eq!(diff(Value::Text("week".into())), Value::Int(week(db) - week(da)));
            // ... and day 0 the first Monday: ISO weeks are whole weeks from it.
            let iso_week = |d: i64| d.div_euclid(7);
            proptest::prop_assert_eq!(
                diff(Value::Text("iso_week".into())),
                Value::Int(iso_week(db) - iso_week(da))
            );
            let months = (b.0 * 12 + i64::from(b.1)) - (a.0 * 12 + i64::from(a.1));
            proptest::prop_assert_eq!(diff(Value::Text("month".into())), Value::Int(months));
            let quarters = (b.0 * 4 + i64::from((b.1 - 1) / 3)) - (a.0 * 4 + i64::from((a.1 - 1) / 3));
            proptest::prop_assert_eq!(diff(Value::Text("QUARTER".into())), Value::Int(quarters));
            proptest::prop_assert_eq!(diff(Value::Text("year".into())), Value::Int(b.0 - a.0));
            let seconds = (db * 86_400 + i64::from(b.3)) - (da * 86_400 + i64::from(a.3));
            proptest::prop_assert_eq!(diff(Value::Int(1_000_000)), Value::Int(seconds));
        }
    }

    #[test]
    fn date_diff_as_an_int_overflows_past_an_int() {
        let ms = Value::Int(1_000);
        let span = |us: i64| {
            date_diff(&[
                ms.clone(),
                Value::Timestamp(0),
                Value::Timestamp(us),
                Value::Text("int".into()),
            ])
        };
        assert_eq!(
            span(2_147_483_647_000).unwrap(),
            Value::Int(i64::from(i32::MAX))
        );
        let error = span(2_147_483_648_000).unwrap_err();
        assert_eq!(error.sqlstate, "22003");
        assert!(error.message.contains("535"), "{}", error.message);
    }

    #[test]
    fn date_diff_takes_integers_as_days_since_1900() {
        let month = Value::Text("month".into());
        // 2026-11-25 is 46,349 days after 1900-01-01: 126 years and 10 months.
        let date = timestamp_at(2026, 11, 25, 0);
        let months = date_diff(&[month.clone(), Value::Int(0), date.clone()]).unwrap();
        assert_eq!(months, Value::Int(126 * 12 + 10));
        let days = date_diff(&[Value::Int(86_400_000_000), Value::Int(0), date]).unwrap();
        assert_eq!(days, Value::Int(46_349));
        let far = date_diff(&[month, Value::Int(i64::MIN), Value::Int(0)]);
        assert_eq!(far.unwrap_err().sqlstate, "22008");
    }

    /// Numbers that are not literals (an int variable, a column) reach `hotpage_datediff`
    /// as values: days since 1900-01-01, a float's fraction a part of a day, text parsed.
    #[test]
    fn date_diff_converts_numbers_and_text_to_dates() {
        let hour = Value::Int(3_600_000_000);
        let diff = |a: Value, b: Value| date_diff(&[hour.clone(), a, b]);
        assert_eq!(
            diff(Value::Int(0), Value::Float(1.5)).unwrap(),
            Value::Int(36)
        );
        let quarter_day = Value::Numeric {
            scaled: 25,
            scale: 2,
        };
        assert_eq!(diff(quarter_day, Value::Int(1)).unwrap(), Value::Int(18));
        let text = Value::Text("1900-01-02 06:00".into());
        assert_eq!(diff(Value::Int(1), text).unwrap(), Value::Int(6));
        let bad = diff(Value::Text("soon".into()), Value::Int(0)).unwrap_err();
        assert_eq!(bad.sqlstate, "22007");
        let far = diff(Value::Float(f64::INFINITY), Value::Int(0)).unwrap_err();
        assert_eq!(far.sqlstate, "22008");
        let uuid = diff(Value::Uuid([0; 16]), Value::Int(0)).unwrap_err();
        assert_eq!(uuid.sqlstate, "42804");
    }

    #[test]
    fn date_diff_refuses_an_unknown_part() {
        let at = Value::Timestamp(0);
        let error = date_diff(&[Value::Text("fortnight".into()), at.clone(), at]).unwrap_err();
        assert_eq!(error.sqlstate, "22023");
    }

    #[test]
    fn like_matches_percent_and_underscore() {
        let like = |s: &str, p: &str| like(s, p, true).expect("a pattern");
        assert!(like("CREATED", "CRE%"));
        assert!(like("CREATED", "%ATE_"));
        assert!(!like("CREATED", "%X%"));
        assert!(like("", "%"));
        assert!(!like("a", ""));
        // PostgreSQL 15's answers: a `%` in the text does not stop the pattern's `%`,
        // and `\` escapes the next character.
        assert!(like("a%b", "a%"));
        assert!(like("x%yz", "x%z"));
        assert!(like("a%c", "a\\%c"));
        assert!(!like("abc", "a\\%c"));
        assert!(like("a_c", "a\\_c"));
        assert!(!like("abc", "a\\_c"));
        assert!(like("ab", "a\\b"));
        assert!(like("a\\", "a\\\\"));
        assert!(!like("b", "a\\"));
        assert!(!like("", "\\"));
        let error = super::like("x", "%\\", true).expect_err("a lone escape at the end");
        assert_eq!(error.sqlstate, sqlstate::INVALID_ESCAPE_SEQUENCE);
        // Without the escape (T-SQL), `\` is a character like any other.
        assert!(super::like("C:\\temp\\a.txt", "C:\\temp\\%", false).expect("a pattern"));
        assert!(super::like("x\\", "%\\", false).expect("a pattern"));
        assert!(!super::like("a%c", "a\\%c", false).expect("a pattern"));
    }
}
