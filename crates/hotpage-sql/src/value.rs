//! SQL values: the assignment casts PostgreSQL applies when storing into a column, its text
//! output, SQL comparison and the arithmetic operators.

mod date_fields;
mod datetime;
mod interval;
pub(crate) use date_fields::{date_part, extract_date_field, extract_field, field_named, truncate};
pub(crate) use datetime::{
    calendar_index, date_is_valid, date_to_timestamp, make_date, timestamp_to_date,
};
pub use interval::Interval;
pub(crate) use interval::{age, date_part_interval, extract_interval, parse_interval};
pub(crate) mod numeric;
mod text;
mod wire;

pub use wire::{NUMERIC_OID, WireFormat};

use std::cmp::Ordering;

use crate::error::{SqlError, SqlResult, sqlstate};
use crate::types::SqlType;

/// One SQL value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// boolean.
    Bool(bool),
    /// smallint, integer and bigint.
    Int(i64),
    /// real and double precision (a real holds an `f32`-exact value).
    Float(f64),
    /// numeric: the value is `scaled / 10^scale`, at most 38 digits.
    Numeric {
        /// The value times 10^scale.
        scaled: i128,
        /// Digits after the decimal point.
        scale: u8,
    },
    /// text, varchar and char (a char value is padded with spaces to its length).
    Text(String),
    /// bytea.
    Bytes(Vec<u8>),
    /// uuid, its 16 bytes in the printed order.
    Uuid([u8; 16]),
    /// timestamp and timestamptz: microseconds since 2000-01-01 00:00:00 UTC
    /// (PostgreSQL's epoch); `i64::MAX`/`i64::MIN` are `infinity`/`-infinity`.
    Timestamp(i64),
    /// date: days since 2000-01-01 (PostgreSQL's epoch); `i32::MAX`/`i32::MIN` are
    /// `infinity`/`-infinity`. A variant of its own, not a midnight timestamp, so that the
    /// operators can tell `date - date` (an integer) from `timestamp - timestamp`.
    Date(i32),
    /// interval: PostgreSQL's months, days and microseconds.
    Interval(Interval),
}

/// An arithmetic operator, for dispatch and for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl ArithOp {
    /// The operator as SQL writes it.
    fn symbol(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Rem => "%",
        }
    }
}

/// 22003 "bigint out of range" and friends.
fn int_out_of_range(type_name: &str) -> SqlError {
    SqlError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        format!("{type_name} out of range"),
    )
}

/// 22003 for a float result that overflowed (`"overflow"`) or underflowed to zero.
fn float_out_of_range(what: &str) -> SqlError {
    SqlError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        format!("value out of range: {what}"),
    )
}

/// 42883 `operator does not exist: text + bigint`.
fn no_operator(left: Option<&Value>, op: &str, right: &Value) -> SqlError {
    let message = match left {
        Some(left) => format!(
            "operator does not exist: {} {op} {}",
            left.type_name(),
            right.type_name()
        ),
        None => format!("operator does not exist: {op} {}", right.type_name()),
    };
    SqlError::new(sqlstate::UNDEFINED_FUNCTION, message).with_hint(
        "No operator matches the given name and argument types. You might need to add \
         explicit type casts.",
    )
}

/// A key for `values` that is equal exactly where the values are equal as SQL compares
/// them in GROUP BY and DISTINCT: numbers by value (10 = 10.0 = 10.00, -0 = 0), other
/// values as they are. One `Debug` text of the row told 10.0 from 10 and -0 from 0, so
/// such a GROUP BY made two groups where PostgreSQL makes one.
/// A real (float4) on its way to numeric: PostgreSQL's cast keeps its 6 significant
/// digits (FLT_DIG), not the double's 15 (`1.2345678::real::numeric` is 1.23457). The
/// digits as text, which numeric's input reads; a NaN or infinity as it was.
pub(crate) fn real_for_numeric(f: f64) -> Value {
    if f.is_finite() {
        // `%g`'s form: trailing zeros of the digits dropped (0.1 has scale 1, not 6).
        let text = format!("{f:.5e}");
        let (digits, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let digits = match digits.contains('.') {
            true => digits.trim_end_matches('0').trim_end_matches('.'),
            false => digits,
        };
        Value::Text(format!("{digits}e{exponent}"))
    } else {
        Value::Float(f)
    }
}

pub(crate) fn group_key(values: &[Value]) -> String {
    let mut key = String::new();
    for value in values {
        push_value_key(value, &mut key);
        key.push('\u{1f}');
    }
    key
}

/// One value's part of [`group_key`]. Text goes in as `Debug` writes it (quoted, with
/// control characters escaped), so no text can pass for a separator.
pub(crate) fn push_value_key(value: &Value, key: &mut String) {
    use std::fmt::Write;
    let _ = match value {
        Value::Int(i) => write!(key, "n{i}e0"),
        Value::Numeric { scaled, scale } => {
            let (mut scaled, mut scale) = (*scaled, *scale);
            while scale > 0 && scaled % 10 == 0 {
                scaled /= 10;
                scale -= 1;
            }
            write!(key, "n{scaled}e{scale}")
        }
        Value::Float(f) if *f == 0.0 => write!(key, "f0"),
        // Intervals group by their length: `1 mon` and `30 days` are one group.
        Value::Interval(i) => write!(key, "i{}", i.span()),
        // A date is keyed as its midnight, which it equals (a join of a date with a
        // timestamp may hash both sides).
        Value::Date(d) => write!(key, "ts{}", datetime::date_to_timestamp(*d)),
        Value::Timestamp(t) => write!(key, "ts{t}"),
        other => write!(key, "{other:?}"),
    };
}

impl Value {
    /// Whether this is SQL NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The name of the value's own type, for messages: `bigint` for every integer, `double
    /// precision`, `numeric`, `text`, `bytea`, `uuid`, `timestamp`, `boolean`; `unknown`
    /// for NULL (PostgreSQL's type of an untyped NULL).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "unknown",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "bigint",
            Value::Float(_) => "double precision",
            Value::Numeric { .. } => "numeric",
            Value::Text(_) => "text",
            Value::Bytes(_) => "bytea",
            Value::Uuid(_) => "uuid",
            Value::Timestamp(_) => "timestamp",
            Value::Date(_) => "date",
            Value::Interval(_) => "interval",
        }
    }

    /// The assignment cast PostgreSQL applies when storing this value into a column of type
    /// `ty`: range and precision checks, float→int rounding half to even (`rint`),
    /// numeric→int rounding half away from zero, text parsed by the type's input function,
    /// any value into a text column through its text output (PostgreSQL's I/O assignment
    /// cast), varchar/char length rules. NULL stays NULL. A value no cast reaches is 42804
    /// `column is of type X but expression is of type Y`; [`Value::coerce_to_column`] puts
    /// the column's name in it.
    pub fn coerce(self, ty: &SqlType) -> SqlResult<Value> {
        match self {
            Value::Null => Ok(Value::Null),
            Value::Text(text) => Value::from_text_owned(text, ty),
            // PostgreSQL's boolean-to-text cast spells the words out, unlike boolout.
            Value::Bool(b) if ty.is_text_like() => fit_text(b.to_string(), ty),
            value if ty.is_text_like() => {
                let text = value.to_pg_text(None).unwrap_or_default();
                fit_text(text, ty)
            }
            Value::Int(v) => coerce_int(v, ty),
            Value::Float(v) => coerce_float(v, ty),
            Value::Numeric { scaled, scale } => coerce_numeric(scaled, scale, ty),
            Value::Bool(b) if *ty == SqlType::Bool => Ok(Value::Bool(b)),
            Value::Bytes(b) if *ty == SqlType::Bytea => Ok(Value::Bytes(b)),
            Value::Uuid(u) if *ty == SqlType::Uuid => Ok(Value::Uuid(u)),
            Value::Timestamp(t) if ty.is_timestamp() => Ok(Value::Timestamp(t)),
            // PostgreSQL's assignment casts between date and the timestamps.
            Value::Timestamp(t) if *ty == SqlType::Date => {
                datetime::timestamp_to_date(t).map(Value::Date)
            }
            Value::Date(d) if *ty == SqlType::Date => Ok(Value::Date(d)),
            Value::Date(d) if ty.is_timestamp() => {
                Ok(Value::Timestamp(datetime::date_to_timestamp(d)))
            }
            Value::Interval(i) if *ty == SqlType::Interval => Ok(Value::Interval(i)),
            other => Err(mismatch(ty, &other)),
        }
    }

    /// [`Value::coerce`] for a named column: a type mismatch reads `column "name" is of
    /// type X but expression is of type Y`, as PostgreSQL words it.
    pub fn coerce_to_column(self, ty: &SqlType, column: &str) -> SqlResult<Value> {
        self.coerce(ty).map_err(|mut err| {
            if err.sqlstate == sqlstate::DATATYPE_MISMATCH {
                err.message = err
                    .message
                    .replacen("column ", &format!("column \"{column}\" "), 1);
            }
            err
        })
    }

    /// The value of `text` read by type `ty`'s input function (`'42'` as an integer,
    /// `'2024-01-02 03:04:05'` as a timestamp, ...), with the type's length and precision
    /// rules. Bad text is 22P02 `invalid input syntax for type T: "text"` (22007/22008 for
    /// timestamps), out-of-range text 22003.
    pub fn from_text(text: &str, ty: &SqlType) -> SqlResult<Value> {
        Value::from_text_owned(text.to_string(), ty)
    }

    /// [`Value::from_text`] taking the string, so text types need not copy it.
    fn from_text_owned(text: String, ty: &SqlType) -> SqlResult<Value> {
        match ty {
            SqlType::SmallInt | SqlType::Int | SqlType::BigInt => {
                let (min, max) = ty.integer_range().unwrap_or((i64::MIN, i64::MAX));
                text::parse_int(&text, &ty.name(), min, max).map(Value::Int)
            }
            SqlType::Bool => text::parse_bool(&text).map(Value::Bool),
            SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_) => fit_text(text, ty),
            SqlType::Uuid => text::parse_uuid(&text).map(Value::Uuid),
            SqlType::Timestamp => datetime::parse_timestamp(&text, false).map(Value::Timestamp),
            SqlType::TimestampTz => datetime::parse_timestamp(&text, true).map(Value::Timestamp),
            SqlType::Date => datetime::parse_date(&text).map(Value::Date),
            SqlType::Interval => interval::parse_interval(&text).map(Value::Interval),
            SqlType::Numeric { precision, scale } => fitted_numeric(
                parse_numeric_text(&text)?.to_scaled(*scale),
                *precision,
                *scale,
            ),
            SqlType::NumericUnconstrained => {
                let (scaled, scale) = parse_numeric_text(&text)?.at_own_scale()?;
                Ok(Value::Numeric { scaled, scale })
            }
            SqlType::Real => text::parse_float(&text, true).map(Value::Float),
            SqlType::Double => text::parse_float(&text, false).map(Value::Float),
            SqlType::Bytea => text::parse_bytea(&text).map(Value::Bytes),
            SqlType::Oid => text::parse_int(&text, "oid", 0, i64::from(u32::MAX)).map(Value::Int),
            // name: at most 63 bytes (NAMEDATALEN - 1), cut at a character boundary.
            SqlType::Name => {
                let mut end = text.len().min(63);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                Ok(Value::Text(text[..end].to_string()))
            }
            // "char": the first byte's character (ASCII; PostgreSQL keeps one byte).
            SqlType::InternalChar => Ok(Value::Text(text.chars().take(1).collect())),
        }
    }

    /// PostgreSQL's text output of the value (`None` for NULL): `t`/`f`; floats in
    /// float4out/float8out style (`ty` = real picks the `f32` digits); numeric with exactly
    /// its scale's fraction digits; bytea as `\x` hex; uuid hyphenated lowercase;
    /// timestamps in ISO style, with `+00` when `ty` is timestamptz.
    pub fn to_pg_text(&self, ty: Option<&SqlType>) -> Option<String> {
        let text = match self {
            Value::Null => return None,
            Value::Bool(b) => if *b { "t" } else { "f" }.to_string(),
            Value::Int(v) => v.to_string(),
            Value::Float(v) => text::format_float(*v, ty == Some(&SqlType::Real)),
            Value::Numeric { scaled, scale } => numeric::format(*scaled, *scale),
            Value::Text(s) => s.clone(),
            Value::Bytes(b) => text::format_bytea(b),
            Value::Uuid(u) => text::format_uuid(u),
            Value::Timestamp(t) => {
                datetime::format_timestamp(*t, ty == Some(&SqlType::TimestampTz))
            }
            Value::Date(d) => datetime::format_date(*d),
            Value::Interval(i) => interval::format_interval(i),
        };
        Some(text)
    }

    /// SQL comparison (`<`, `=`, ORDER BY, min/max): `None` when either side is NULL or the
    /// types are not comparable. Numbers compare across kinds (integer and numeric exactly;
    /// with a float, as PostgreSQL does, in `f64`); NaN equals NaN and is above every other
    /// number; -0 equals 0. Text compares by its UTF-8 bytes (the "C" collation), trailing
    /// spaces included, so char values compare as they are stored (padded).
    pub fn sql_cmp(&self, other: &Value) -> Option<Ordering> {
        use Value::*;
        match (self, other) {
            (Bool(a), Bool(b)) => Some(a.cmp(b)),
            (Int(a), Int(b)) => Some(a.cmp(b)),
            (Float(a), Float(b)) => Some(float_cmp(*a, *b)),
            (Int(a), Float(b)) => Some(float_cmp(*a as f64, *b)),
            (Float(a), Int(b)) => Some(float_cmp(*a, *b as f64)),
            (Numeric { scaled, scale }, Float(b)) => {
                Some(float_cmp(numeric::to_f64(*scaled, *scale), *b))
            }
            (Float(a), Numeric { scaled, scale }) => {
                Some(float_cmp(*a, numeric::to_f64(*scaled, *scale)))
            }
            (Int(_) | Numeric { .. }, Int(_) | Numeric { .. }) => {
                Some(numeric::cmp(self.as_numeric()?, other.as_numeric()?))
            }
            (Text(a), Text(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
            (Bytes(a), Bytes(b)) => Some(a.cmp(b)),
            (Uuid(a), Uuid(b)) => Some(a.cmp(b)),
            (Timestamp(a), Timestamp(b)) => Some(a.cmp(b)),
            (Date(a), Date(b)) => Some(a.cmp(b)),
            // A date meets a timestamp as its midnight, as PostgreSQL's cross-type
            // comparisons do.
            (Date(a), Timestamp(b)) => Some(datetime::date_to_timestamp(*a).cmp(b)),
            (Timestamp(a), Date(b)) => Some(a.cmp(&datetime::date_to_timestamp(*b))),
            (Interval(a), Interval(b)) => Some(a.cmp_span(b)),
            _ => None,
        }
    }

    /// A total order for ORDER BY (ascending): [`Value::sql_cmp`], NULLs last, values of
    /// incomparable types grouped by a fixed rank of their type.
    pub fn order_cmp(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Greater,
            (_, Value::Null) => Ordering::Less,
            _ => self
                .sql_cmp(other)
                .unwrap_or_else(|| self.type_rank().cmp(&other.type_rank())),
        }
    }

    /// The rank that orders values of incomparable types in [`Value::order_cmp`].
    fn type_rank(&self) -> u8 {
        match self {
            Value::Bool(_) => 0,
            Value::Int(_) | Value::Float(_) | Value::Numeric { .. } => 1,
            Value::Text(_) => 2,
            Value::Bytes(_) => 3,
            Value::Uuid(_) => 4,
            Value::Timestamp(_) | Value::Date(_) => 5,
            Value::Interval(_) => 6,
            Value::Null => 7,
        }
    }

    /// An integer or numeric as (scaled, scale).
    pub(crate) fn as_numeric(&self) -> Option<(i128, u8)> {
        match self {
            Value::Int(v) => Some((i128::from(*v), 0)),
            Value::Numeric { scaled, scale } => Some((*scaled, *scale)),
            _ => None,
        }
    }

    /// Any number as an `f64`.
    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(v) => Some(*v as f64),
            Value::Float(v) => Some(*v),
            Value::Numeric { scaled, scale } => Some(numeric::to_f64(*scaled, *scale)),
            _ => None,
        }
    }

    /// `self + other` (see [`Value::div`] for the typing rules).
    pub fn add(&self, other: &Value) -> SqlResult<Value> {
        self.arith(other, ArithOp::Add)
    }

    /// `self - other`.
    pub fn sub(&self, other: &Value) -> SqlResult<Value> {
        self.arith(other, ArithOp::Sub)
    }

    /// `self * other`.
    pub fn mul(&self, other: &Value) -> SqlResult<Value> {
        self.arith(other, ArithOp::Mul)
    }

    /// `self / other`. As in PostgreSQL: NULL with anything is NULL; integer with integer
    /// is an integer (truncating toward zero; overflow 22003 "bigint out of range");
    /// anything with a float is a float; integer with numeric is numeric (a quotient gets
    /// scale max(16, s1, s2), lowered to fit 38 digits); a zero divisor is 22012.
    pub fn div(&self, other: &Value) -> SqlResult<Value> {
        self.arith(other, ArithOp::Div)
    }

    /// `self % other`: integers and numerics only (the sign of the dividend); PostgreSQL
    /// has no `%` for floats.
    pub fn rem(&self, other: &Value) -> SqlResult<Value> {
        self.arith(other, ArithOp::Rem)
    }

    /// Unary minus.
    pub fn neg(&self) -> SqlResult<Value> {
        match self {
            Value::Null => Ok(Value::Null),
            Value::Int(v) => v
                .checked_neg()
                .map(Value::Int)
                .ok_or_else(|| int_out_of_range("bigint")),
            Value::Float(v) => Ok(Value::Float(-v)),
            Value::Numeric { scaled, scale } => Ok(Value::Numeric {
                scaled: scaled.checked_neg().ok_or_else(numeric::overflow)?,
                scale: *scale,
            }),
            Value::Interval(i) => i.negated().map(Value::Interval),
            other => Err(no_operator(None, "-", other)),
        }
    }

    /// Dispatches a binary operator on the operands' kinds.
    fn arith(&self, other: &Value, op: ArithOp) -> SqlResult<Value> {
        match (self, other) {
            (Value::Null, _) | (_, Value::Null) => Ok(Value::Null),
            (Value::Int(a), Value::Int(b)) => int_arith(*a, *b, op),
            (Value::Date(_), Value::Int(_))
            | (Value::Int(_), Value::Date(_))
            | (Value::Date(_), Value::Date(_)) => date_arith(self, other, op),
            (Value::Date(_) | Value::Timestamp(_) | Value::Interval(_), _)
            | (_, Value::Date(_) | Value::Timestamp(_) | Value::Interval(_)) => {
                interval::datetime_arith(self, other, op)
            }
            (Value::Float(_), _) | (_, Value::Float(_)) => match (self.as_f64(), other.as_f64()) {
                (Some(a), Some(b)) if op != ArithOp::Rem => float_arith(a, b, op),
                _ => Err(no_operator(Some(self), op.symbol(), other)),
            },
            _ => match (self.as_numeric(), other.as_numeric()) {
                (Some(a), Some(b)) => numeric_arith(a, b, op),
                _ => Err(no_operator(Some(self), op.symbol(), other)),
            },
        }
    }
}

/// 42804 for a value no assignment cast takes to `ty`.
fn mismatch(ty: &SqlType, value: &Value) -> SqlError {
    SqlError::new(
        sqlstate::DATATYPE_MISMATCH,
        format!(
            "column is of type {} but expression is of type {}",
            ty.name(),
            value.type_name()
        ),
    )
    .with_hint("You will need to rewrite or cast the expression.")
}

/// Fits text to a text-like type: varchar(n) refuses more than n characters unless the
/// excess is spaces (which are cut), char(n) does the same and pads to n (PostgreSQL's
/// rules, counting characters, not bytes).
fn fit_text(mut text: String, ty: &SqlType) -> SqlResult<Value> {
    let limit = match ty {
        SqlType::Varchar(Some(n)) | SqlType::Char(n) => usize::try_from(*n).unwrap_or(usize::MAX),
        _ => return Ok(Value::Text(text)),
    };
    let mut chars = text.char_indices();
    let length_end = chars.nth(limit).map(|(at, _)| at);
    let char_count = match length_end {
        Some(at) => {
            if !text.get(at..).unwrap_or("").bytes().all(|b| b == b' ') {
                return Err(SqlError::new(
                    sqlstate::STRING_DATA_RIGHT_TRUNCATION,
                    format!("value too long for type {}", ty.name()),
                ));
            }
            text.truncate(at);
            limit
        }
        None => text.chars().count(),
    };
    if matches!(ty, SqlType::Char(_)) {
        text.extend(std::iter::repeat_n(' ', limit - char_count));
    }
    Ok(Value::Text(text))
}

/// An integer into a column of type `ty`.
fn coerce_int(v: i64, ty: &SqlType) -> SqlResult<Value> {
    match ty {
        SqlType::SmallInt | SqlType::Int | SqlType::BigInt => int_in_range(v, ty),
        SqlType::Real => Ok(Value::Float(f64::from(v as f32))),
        SqlType::Double => Ok(Value::Float(v as f64)),
        SqlType::Numeric { precision, scale } => fitted_numeric(
            numeric::rescale(i128::from(v), 0, *scale),
            *precision,
            *scale,
        ),
        SqlType::NumericUnconstrained => Ok(Value::Numeric {
            scaled: i128::from(v),
            scale: 0,
        }),
        _ => Err(mismatch(ty, &Value::Int(v))),
    }
}

/// Checks `v` against an integer type's range: 22003 "smallint out of range" etc.
fn int_in_range(v: i64, ty: &SqlType) -> SqlResult<Value> {
    let (min, max) = ty.integer_range().unwrap_or((i64::MIN, i64::MAX));
    if (min..=max).contains(&v) {
        Ok(Value::Int(v))
    } else {
        Err(int_out_of_range(&ty.name()))
    }
}

/// A float into a column of type `ty`: to integers by `rint` (half to even), to real with
/// PostgreSQL's overflow/underflow checks, to numeric through its 15 significant digits.
fn coerce_float(v: f64, ty: &SqlType) -> SqlResult<Value> {
    match ty {
        SqlType::SmallInt | SqlType::Int | SqlType::BigInt => {
            let rounded = v.round_ties_even();
            // 2^63 is exact in f64; every finite value below it (and >= -2^63) fits an i64.
            if !rounded.is_finite()
                || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&rounded)
            {
                return Err(int_out_of_range(&ty.name()));
            }
            int_in_range(rounded as i64, ty)
        }
        SqlType::Real => {
            let narrow = v as f32;
            if narrow.is_infinite() && v.is_finite() {
                return Err(float_out_of_range("overflow"));
            }
            if narrow == 0.0 && v != 0.0 {
                return Err(float_out_of_range("underflow"));
            }
            Ok(Value::Float(f64::from(narrow)))
        }
        SqlType::Double => Ok(Value::Float(v)),
        SqlType::Numeric { precision, scale } => {
            fitted_numeric(numeric::from_f64(v, *scale)?, *precision, *scale)
        }
        SqlType::NumericUnconstrained => {
            let (scaled, scale) = numeric::from_f64_own_scale(v)?;
            Ok(Value::Numeric { scaled, scale })
        }
        _ => Err(mismatch(ty, &Value::Float(v))),
    }
}

/// A numeric into a column of type `ty`: to integers rounding half away from zero, to
/// floats correctly rounded, to numeric(p,s) rescaled with the precision check.
fn coerce_numeric(scaled: i128, scale: u8, ty: &SqlType) -> SqlResult<Value> {
    match ty {
        SqlType::SmallInt | SqlType::Int | SqlType::BigInt => {
            let whole = numeric::rescale(scaled, scale, 0)
                .and_then(|v| i64::try_from(v).ok())
                .ok_or_else(|| int_out_of_range(&ty.name()))?;
            int_in_range(whole, ty)
        }
        SqlType::Real => Ok(Value::Float(f64::from(numeric::to_f32(scaled, scale)))),
        SqlType::Double => Ok(Value::Float(numeric::to_f64(scaled, scale))),
        SqlType::Numeric {
            precision,
            scale: to,
        } => fitted_numeric(numeric::rescale(scaled, scale, *to), *precision, *to),
        SqlType::NumericUnconstrained => Ok(Value::Numeric { scaled, scale }),
        _ => Err(mismatch(ty, &Value::Numeric { scaled, scale })),
    }
}

/// `scaled` (`None`: past an i128) as a numeric(precision, scale) value, or PostgreSQL's
/// 22003 "numeric field overflow" where it does not fit.
fn fitted_numeric(scaled: Option<i128>, precision: u8, scale: u8) -> SqlResult<Value> {
    let scaled = scaled.ok_or_else(|| numeric::field_overflow(precision, scale))?;
    numeric::check_precision(scaled, precision, scale)?;
    Ok(Value::Numeric { scaled, scale })
}

/// numeric input's syntax: a decimal number (22P02 otherwise; NaN and the infinities,
/// which PostgreSQL's numeric has, are 0A000).
fn parse_numeric_text(text: &str) -> SqlResult<numeric::Decimal> {
    let Some(decimal) = numeric::parse_decimal(text) else {
        let word = text.trim().to_ascii_lowercase();
        if matches!(
            word.as_str(),
            "nan" | "infinity" | "+infinity" | "-infinity" | "inf" | "+inf" | "-inf"
        ) {
            return Err(SqlError::unsupported(format!(
                "numeric value \"{}\"",
                text.trim()
            )));
        }
        return Err(text::invalid_syntax("numeric", text));
    };
    Ok(decimal)
}

/// Float order with NaN equal to NaN and above everything (PostgreSQL's), -0 equal to 0.
fn float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        // Neither is NaN, so partial_cmp answers.
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// bigint arithmetic with PostgreSQL's errors.
fn int_arith(a: i64, b: i64, op: ArithOp) -> SqlResult<Value> {
    let result = match op {
        ArithOp::Add => a.checked_add(b),
        ArithOp::Sub => a.checked_sub(b),
        ArithOp::Mul => a.checked_mul(b),
        ArithOp::Div if b == 0 => return Err(numeric::division_by_zero()),
        ArithOp::Div => a.checked_div(b),
        ArithOp::Rem if b == 0 => return Err(numeric::division_by_zero()),
        // Only i64::MIN % -1 fails, and its remainder is 0 (PostgreSQL returns 0 too).
        ArithOp::Rem => Some(a.checked_rem(b).unwrap_or(0)),
    };
    result
        .map(Value::Int)
        .ok_or_else(|| int_out_of_range("bigint"))
}

/// PostgreSQL's date operators: `date + integer` and `integer + date` (a date),
/// `date - integer` (a date) and `date - date` (the days between, an integer). An infinite
/// date plus or minus days stays infinite; two dates of which one is infinite cannot be
/// subtracted (22008), and a result outside years 1 to 9999 is 22008.
fn date_arith(left: &Value, right: &Value, op: ArithOp) -> SqlResult<Value> {
    let shifted = |date: i32, days: i64| -> SqlResult<Value> {
        if !datetime::is_finite_date(date) {
            return Ok(Value::Date(date));
        }
        let days = i64::from(date)
            .checked_add(days)
            .ok_or_else(|| SqlError::new(sqlstate::DATETIME_FIELD_OVERFLOW, "date out of range"))?;
        datetime::checked_date(days).map(Value::Date)
    };
    match (left, right, op) {
        (Value::Date(d), Value::Int(n), ArithOp::Add)
        | (Value::Int(n), Value::Date(d), ArithOp::Add) => shifted(*d, *n),
        (Value::Date(d), Value::Int(n), ArithOp::Sub) => {
            shifted(*d, n.checked_neg().unwrap_or(i64::MAX))
        }
        (Value::Date(a), Value::Date(b), ArithOp::Sub) => {
            if !datetime::is_finite_date(*a) || !datetime::is_finite_date(*b) {
                return Err(SqlError::new(
                    sqlstate::DATETIME_FIELD_OVERFLOW,
                    "cannot subtract infinite dates",
                ));
            }
            Ok(Value::Int(i64::from(*a) - i64::from(*b)))
        }
        _ => Err(no_operator(Some(left), op.symbol(), right)),
    }
}

/// double precision arithmetic with PostgreSQL's checks: a finite-operand result that
/// overflows to infinity, or (for `*` and `/`) underflows to zero, is 22003.
fn float_arith(a: f64, b: f64, op: ArithOp) -> SqlResult<Value> {
    let result = match op {
        ArithOp::Add => a + b,
        ArithOp::Sub => a - b,
        ArithOp::Mul => a * b,
        ArithOp::Div if b == 0.0 => return Err(numeric::division_by_zero()),
        ArithOp::Div => a / b,
        ArithOp::Rem => return Err(no_operator(Some(&Value::Float(a)), "%", &Value::Float(b))),
    };
    if result.is_infinite() && a.is_finite() && b.is_finite() {
        return Err(float_out_of_range("overflow"));
    }
    let underflowed = match op {
        ArithOp::Mul => result == 0.0 && a != 0.0 && b != 0.0,
        ArithOp::Div => result == 0.0 && a != 0.0 && b.is_finite(),
        _ => false,
    };
    if underflowed {
        return Err(float_out_of_range("underflow"));
    }
    Ok(Value::Float(result))
}

/// numeric arithmetic (integers taken at scale 0).
fn numeric_arith(a: (i128, u8), b: (i128, u8), op: ArithOp) -> SqlResult<Value> {
    let (scaled, scale) = match op {
        ArithOp::Add => numeric::add(a, b)?,
        ArithOp::Sub => numeric::sub(a, b)?,
        ArithOp::Mul => numeric::mul(a, b)?,
        ArithOp::Div => numeric::div(a, b)?,
        ArithOp::Rem => numeric::rem(a, b)?,
    };
    Ok(Value::Numeric { scaled, scale })
}

#[cfg(test)]
pub(crate) mod tests;
