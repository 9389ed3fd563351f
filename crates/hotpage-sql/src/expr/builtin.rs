//! PostgreSQL's common scalar functions that need nothing but their arguments: text
//! (`substr`, `replace`, `concat`, `trim`, …), numbers (`round`, `floor`, `mod`, …) and
//! comparisons (`nullif`, `greatest`, `least`). Each follows PostgreSQL 15's results,
//! NULLs included (checked against it: `tests/slt/functions.slt`).

use crate::error::{SqlError, SqlResult, sqlstate};
use crate::types::SqlType;
use crate::value::Value;
use crate::value::numeric;
use std::cmp::Ordering;

use crate::limits::{TEXT_BYTES_MAX, text_too_long as too_long};

/// A function of this module.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum PureFunc {
    Substr,
    Replace,
    Concat,
    ConcatWs,
    Left,
    Right,
    Repeat,
    Reverse,
    Strpos,
    Btrim,
    Ltrim,
    Rtrim,
    Lpad,
    Rpad,
    SplitPart,
    Round,
    Floor,
    Ceil,
    Trunc,
    Mod,
    Sqrt,
    Power,
    NullIf,
    Greatest,
    Least,
    /// `date_part('field', ts)`: a double precision.
    DatePart,
    /// `extract(field FROM ts)` (its own syntax, no name): a numeric.
    Extract,
    /// `date_trunc('field', ts)`: a timestamp of the argument's type.
    DateTrunc,
    Md5,
    Initcap,
    Translate,
    Chr,
    Ascii,
    OctetLength,
    BitLength,
    QuoteLiteral,
    /// `regexp_replace(s, pattern, replacement [, flags])`.
    RegexpReplace,
    /// `div(y, x)`: the integer quotient, truncated, as a numeric.
    Div,
    Gcd,
    Lcm,
    Sign,
    /// `ln`, `log` (base 10), `log10`, `exp`, `degrees`, `radians`: in double precision.
    Ln,
    Log10,
    Exp,
    Cbrt,
    Degrees,
    Radians,
    Pi,
    /// `make_date(year, month, day)`.
    MakeDate,
    /// `justify_hours`, `justify_days`, `justify_interval` of an interval.
    JustifyHours,
    JustifyDays,
    JustifyInterval,
    /// `age(a, b)` and `age(a)` (from today's midnight): an interval on the calendar.
    Age,
    /// `num_nulls(…)` / `num_nonnulls(…)`: how many arguments are (not) NULL.
    NumNulls,
    NumNonNulls,
}

impl PureFunc {
    pub(crate) fn by_name(name: &str) -> Option<PureFunc> {
        use PureFunc as F;
        Some(match name {
            "substr" | "substring" => F::Substr,
            "replace" => F::Replace,
            "concat" => F::Concat,
            "concat_ws" => F::ConcatWs,
            "left" => F::Left,
            "right" => F::Right,
            "repeat" => F::Repeat,
            "reverse" => F::Reverse,
            "strpos" => F::Strpos,
            "btrim" => F::Btrim,
            "ltrim" => F::Ltrim,
            "rtrim" => F::Rtrim,
            "lpad" => F::Lpad,
            "rpad" => F::Rpad,
            "split_part" => F::SplitPart,
            "round" => F::Round,
            "floor" => F::Floor,
            "ceil" | "ceiling" => F::Ceil,
            "trunc" => F::Trunc,
            "mod" => F::Mod,
            "sqrt" => F::Sqrt,
            "power" | "pow" => F::Power,
            "nullif" => F::NullIf,
            "greatest" => F::Greatest,
            "least" => F::Least,
            "date_part" => F::DatePart,
            "date_trunc" => F::DateTrunc,
            "md5" => F::Md5,
            "initcap" => F::Initcap,
            "translate" => F::Translate,
            "chr" => F::Chr,
            "ascii" => F::Ascii,
            "octet_length" => F::OctetLength,
            "bit_length" => F::BitLength,
            "quote_literal" => F::QuoteLiteral,
            "regexp_replace" => F::RegexpReplace,
            "div" => F::Div,
            "gcd" => F::Gcd,
            "lcm" => F::Lcm,
            "sign" => F::Sign,
            "ln" => F::Ln,
            "log" | "log10" => F::Log10,
            "exp" => F::Exp,
            "cbrt" => F::Cbrt,
            "make_date" => F::MakeDate,
            "justify_hours" => F::JustifyHours,
            "justify_days" => F::JustifyDays,
            "justify_interval" => F::JustifyInterval,
            "age" => F::Age,
            "degrees" => F::Degrees,
            "radians" => F::Radians,
            "pi" => F::Pi,
            "num_nulls" => F::NumNulls,
            "num_nonnulls" => F::NumNonNulls,
            _ => return None,
        })
    }

    /// Whether `n` arguments is a form the function has.
    pub(crate) fn takes(self, n: usize) -> bool {
        use PureFunc as F;
        match self {
            F::Reverse | F::Floor | F::Ceil | F::Sqrt => n == 1,
            F::Substr | F::Lpad | F::Rpad => n == 2 || n == 3,
            F::Btrim | F::Ltrim | F::Rtrim | F::Round | F::Trunc => n == 1 || n == 2,
            F::Replace | F::SplitPart => n == 3,
            F::DatePart | F::Extract | F::DateTrunc => n == 2,
            F::Left | F::Right | F::Repeat | F::Strpos | F::Mod | F::Power | F::NullIf => n == 2,
            F::Concat | F::Greatest | F::Least | F::NumNulls | F::NumNonNulls => n >= 1,
            F::ConcatWs => n >= 2,
            F::Md5 | F::Initcap | F::Chr | F::Ascii | F::OctetLength | F::BitLength => n == 1,
            F::JustifyHours | F::JustifyDays | F::JustifyInterval => n == 1,
            F::Age => n == 1 || n == 2,
            F::QuoteLiteral
            | F::Sign
            | F::Ln
            | F::Log10
            | F::Exp
            | F::Cbrt
            | F::Degrees
            | F::Radians => n == 1,
            F::Translate | F::MakeDate => n == 3,
            F::RegexpReplace => n == 3 || n == 4,
            F::Div | F::Gcd | F::Lcm => n == 2,
            F::Pi => n == 0,
        }
    }

    /// Whether the first argument is text (a `$1` there is inferred as text).
    pub(crate) fn takes_text(self) -> bool {
        use PureFunc as F;
        // concat and concat_ws take any type and write each as its output does: a char(n)
        // with its padding (`concat('a'::char(3), '|')` is `a  |`).
        !matches!(
            self,
            F::Concat
                | F::ConcatWs
                | F::Round
                | F::Floor
                | F::Ceil
                | F::Trunc
                | F::Mod
                | F::Sqrt
                | F::Power
                | F::NullIf
                | F::Greatest
                | F::Least
                | F::Chr
                | F::QuoteLiteral
                | F::Div
                | F::Gcd
                | F::Lcm
                | F::Sign
                | F::Ln
                | F::Log10
                | F::Exp
                | F::Cbrt
                | F::Degrees
                | F::Radians
                | F::Pi
                | F::NumNulls
                | F::NumNonNulls
                | F::MakeDate
                | F::JustifyHours
                | F::JustifyDays
                | F::JustifyInterval
                | F::Age
        )
    }

    /// The result type, from the arguments' types where it follows them.
    pub(crate) fn ty(self, args: &[Option<SqlType>]) -> Option<SqlType> {
        use PureFunc as F;
        let first = args.first().copied().flatten();
        Some(match self {
            F::Strpos => SqlType::Int,
            F::Sqrt | F::Power => SqlType::Double,
            F::Round | F::Trunc | F::Floor | F::Ceil => match first {
                Some(t) if t.is_float() => SqlType::Double,
                // PostgreSQL picks the double precision forms of floor and ceil for an
                // integer, the numeric ones of round and trunc.
                Some(t) if t.is_integer() && matches!(self, F::Floor | F::Ceil) => SqlType::Double,
                _ => SqlType::Numeric {
                    precision: 38,
                    scale: 0,
                },
            },
            F::NullIf => return first,
            // PostgreSQL has int2, int4 and int8 forms of mod, int4 and int8 of gcd and
            // lcm: the arguments meet at their common type.
            F::Mod | F::Gcd | F::Lcm => {
                return match super::typecheck::common_type(args.iter().copied()) {
                    Some(SqlType::SmallInt) if self != F::Mod => Some(SqlType::Int),
                    common => common,
                };
            }
            F::Ascii | F::OctetLength | F::BitLength | F::NumNulls | F::NumNonNulls => SqlType::Int,
            F::Div => SqlType::Numeric {
                precision: 38,
                scale: 0,
            },
            F::Sign => match first {
                Some(t @ (SqlType::Numeric { .. } | SqlType::NumericUnconstrained)) => t,
                _ => SqlType::Double,
            },
            F::Ln | F::Log10 | F::Exp | F::Cbrt | F::Degrees | F::Radians | F::Pi => {
                SqlType::Double
            }
            F::DatePart => SqlType::Double,
            F::MakeDate => SqlType::Date,
            F::JustifyHours | F::JustifyDays | F::JustifyInterval | F::Age => SqlType::Interval,
            F::Extract => SqlType::NumericUnconstrained,
            // timestamp or timestamptz, as it came (a text is refused when called); a date
            // is truncated as a timestamptz, as PostgreSQL casts it.
            F::DateTrunc => match args.get(1).copied().flatten() {
                Some(t) if t.is_timestamp() => t,
                Some(SqlType::Date) => SqlType::TimestampTz,
                _ => SqlType::Timestamp,
            },
            F::Greatest | F::Least => return super::typecheck::common_type(args.iter().copied()),
            _ => SqlType::Text,
        })
    }

    pub(crate) fn eval(self, args: Vec<Value>) -> SqlResult<Value> {
        use PureFunc as F;
        match self {
            F::Concat => return concat(&args, None),
            F::ConcatWs => {
                return match &args[0] {
                    Value::Null => Ok(Value::Null),
                    sep => concat(&args[1..], Some(&text_of(sep))),
                };
            }
            F::NullIf => {
                let equal = crate::expr::compare(&args[0], &args[1]) == Some(Ordering::Equal);
                return Ok(if equal { Value::Null } else { args[0].clone() });
            }
            F::Greatest | F::Least => return extreme(self, args),
            F::NumNulls | F::NumNonNulls => {
                let nulls = args.iter().filter(|v| **v == Value::Null).count();
                let counted = if self == F::NumNulls {
                    nulls
                } else {
                    args.len() - nulls
                };
                return Ok(Value::Int(counted as i64));
            }
            F::Pi => return Ok(Value::Float(std::f64::consts::PI)),
            _ => {}
        }
        // Every other function is strict: NULL in, NULL out.
        if args.contains(&Value::Null) {
            return Ok(Value::Null);
        }
        match self {
            F::Round | F::Trunc | F::Floor | F::Ceil | F::Mod | F::Sqrt | F::Power => {
                number_func(self, &args)
            }
            F::DatePart | F::Extract | F::DateTrunc => datetime_func(self, &args),
            F::MakeDate => make_date(&args),
            F::JustifyHours | F::JustifyDays | F::JustifyInterval => justify(self, &args[0]),
            F::Age => age(&args),
            F::Div | F::Gcd | F::Lcm | F::Sign => super::more_funcs::integer_like(self, &args),
            F::Ln | F::Log10 | F::Exp | F::Cbrt | F::Degrees | F::Radians => {
                super::more_funcs::float_func(self, &args)
            }
            F::Md5
            | F::Initcap
            | F::Translate
            | F::Chr
            | F::Ascii
            | F::OctetLength
            | F::BitLength
            | F::QuoteLiteral
            | F::RegexpReplace => super::more_funcs::text_func(self, &args),
            _ => text_func(self, &args),
        }
    }
}

/// A value as a text argument (PostgreSQL's output text; text as it is).
pub(super) fn text_of(v: &Value) -> String {
    match v {
        Value::Text(s) => s.clone(),
        other => other.to_pg_text(None).unwrap_or_default(),
    }
}

pub(super) fn int_arg(v: &Value, what: &str) -> SqlResult<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Text(t) => t.trim().parse().map_err(|_| {
            SqlError::new(
                sqlstate::INVALID_TEXT_REPRESENTATION,
                format!("invalid input syntax for type integer: \"{t}\""),
            )
        }),
        other => Err(SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!("{what} takes an integer, not {}", other.type_name()),
        )),
    }
}

/// `concat` (no separator) and `concat_ws`: NULLs are skipped.
fn concat(args: &[Value], separator: Option<&str>) -> SqlResult<Value> {
    let parts: Vec<String> = args
        .iter()
        .filter(|v| **v != Value::Null)
        .map(text_of)
        .collect();
    let separator = separator.unwrap_or("");
    // Checked before the joined text is made: past 1 GB it never exists.
    let len = parts.iter().map(String::len).sum::<usize>()
        + separator.len() * parts.len().saturating_sub(1);
    if len > TEXT_BYTES_MAX {
        return Err(too_long());
    }
    Ok(Value::Text(parts.join(separator)))
}

/// `greatest` / `least`: NULLs are skipped; NULL only if every argument is. Values
/// that do not compare are PostgreSQL's errors: text that is not the other's type
/// (22P02 for `greatest(1, 'a')`), else 42804.
fn extreme(func: PureFunc, args: Vec<Value>) -> SqlResult<Value> {
    let (wanted, name) = if func == PureFunc::Greatest {
        (Ordering::Greater, "GREATEST")
    } else {
        (Ordering::Less, "LEAST")
    };
    let mut best: Option<Value> = None;
    for v in args.into_iter().filter(|v| *v != Value::Null) {
        let Some(current) = &best else {
            best = Some(v);
            continue;
        };
        match super::compare(&v, current) {
            Some(o) if o == wanted => best = Some(v),
            Some(_) => {}
            None => return Err(unmatched(name, &v, current)),
        }
    }
    Ok(best.unwrap_or(Value::Null))
}

/// Why two arguments of GREATEST or LEAST do not compare.
fn unmatched(name: &str, a: &Value, b: &Value) -> SqlError {
    let text_into = |text: &Value, other: &Value| text.clone().coerce(&super::natural_type(other));
    let coerced = match (a, b) {
        (Value::Text(_), other) => text_into(a, other),
        (other, Value::Text(_)) => text_into(b, other),
        _ => Ok(Value::Null),
    };
    coerced.err().unwrap_or_else(|| {
        SqlError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!(
                "{name} types {} and {} cannot be matched",
                b.type_name(),
                a.type_name()
            ),
        )
    })
}

fn text_func(func: PureFunc, args: &[Value]) -> SqlResult<Value> {
    use PureFunc as F;
    let s = text_of(&args[0]);
    let text = |v: String| Ok(Value::Text(v));
    match func {
        F::Substr => substr(&s, &args[1..]),
        F::Replace => {
            let from = text_of(&args[1]);
            if from.is_empty() {
                return text(s);
            }
            let replaced = s.replace(&from, &text_of(&args[2]));
            if replaced.len() > TEXT_BYTES_MAX {
                return Err(too_long());
            }
            text(replaced)
        }
        F::Left | F::Right => {
            let n = int_arg(&args[1], "left and right")?;
            let chars: Vec<char> = s.chars().collect();
            let len = chars.len() as i64;
            // A negative n counts from the other end: all but |n| characters.
            let keep = if n >= 0 { n.min(len) } else { (len + n).max(0) } as usize;
            let kept = if func == F::Left {
                &chars[..keep]
            } else {
                &chars[chars.len() - keep..]
            };
            text(kept.iter().collect())
        }
        F::Repeat => {
            let n = int_arg(&args[1], "repeat")?.max(0);
            let bytes = (s.len() as u128) * (n as u128);
            if bytes > TEXT_BYTES_MAX as u128 {
                return Err(too_long());
            }
            text(s.repeat(n as usize))
        }
        F::Reverse => text(s.chars().rev().collect()),
        F::Strpos => {
            let found = s.find(&text_of(&args[1]));
            Ok(Value::Int(
                found.map_or(0, |at| s[..at].chars().count() as i64 + 1),
            ))
        }
        F::Btrim | F::Ltrim | F::Rtrim => {
            let set = args.get(1).map_or_else(|| " ".to_string(), text_of);
            let strip = |c: char| set.contains(c);
            text(
                match func {
                    F::Ltrim => s.trim_start_matches(strip),
                    F::Rtrim => s.trim_end_matches(strip),
                    _ => s.trim_matches(strip),
                }
                .to_string(),
            )
        }
        F::Lpad | F::Rpad => pad(func, &s, args),
        F::SplitPart => split_part(&s, &text_of(&args[1]), int_arg(&args[2], "split_part")?),
        _ => unreachable!("{func:?} is a number function"),
    }
}

/// `substr(s, from [, count])`: characters from position `from` (1-based; positions before
/// 1 count but hold nothing), `count` of them.
fn substr(s: &str, args: &[Value]) -> SqlResult<Value> {
    let from = int_arg(&args[0], "substr")?;
    let end = match args.get(1) {
        None => i64::MAX,
        Some(count) => {
            let count = int_arg(count, "substr")?;
            if count < 0 {
                return Err(SqlError::new(
                    "22011",
                    "negative substring length not allowed",
                ));
            }
            from.saturating_add(count)
        }
    };
    let start = from.max(1);
    Ok(Value::Text(
        s.chars()
            .enumerate()
            .filter(|(i, _)| {
                let position = *i as i64 + 1;
                position >= start && position < end
            })
            .map(|(_, c)| c)
            .collect(),
    ))
}

/// `lpad` / `rpad (s, length [, fill])`: to `length` characters, cut or filled (with
/// spaces by default; an empty fill leaves the text as it is, cut).
fn pad(func: PureFunc, s: &str, args: &[Value]) -> SqlResult<Value> {
    let length = int_arg(&args[1], "lpad and rpad")?.max(0) as usize;
    if length.saturating_mul(4) > TEXT_BYTES_MAX {
        return Err(too_long());
    }
    let fill: Vec<char> = args
        .get(2)
        .map_or_else(|| vec![' '], |f| text_of(f).chars().collect());
    let chars: Vec<char> = s.chars().collect();
    if chars.len() >= length || fill.is_empty() {
        return Ok(Value::Text(chars.iter().take(length).collect()));
    }
    let filler: String = fill.iter().cycle().take(length - chars.len()).collect();
    let s: String = chars.iter().collect();
    Ok(Value::Text(if func == PureFunc::Lpad {
        filler + &s
    } else {
        s + &filler
    }))
}

/// `split_part(s, delimiter, n)`: the n-th field (from the end for a negative n; an
/// empty text past the last).
fn split_part(s: &str, delimiter: &str, n: i64) -> SqlResult<Value> {
    if n == 0 {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            "field position must not be zero",
        ));
    }
    if delimiter.is_empty() {
        // The whole text is the one field.
        let only = n == 1 || n == -1;
        return Ok(Value::Text(if only {
            s.to_string()
        } else {
            String::new()
        }));
    }
    let fields: Vec<&str> = s.split(delimiter).collect();
    let index = if n > 0 {
        usize::try_from(n - 1).ok()
    } else {
        fields.len().checked_sub(n.unsigned_abs() as usize)
    };
    Ok(Value::Text(
        index
            .and_then(|i| fields.get(i))
            .copied()
            .unwrap_or("")
            .to_string(),
    ))
}

/// `date_part`, `extract` and `date_trunc` of a timestamp (`value::date_fields`), or of a
/// date, which is its midnight (extract takes a date's own fields only, whole).
fn datetime_func(func: PureFunc, args: &[Value]) -> SqlResult<Value> {
    let unit = text_of(&args[0]);
    let field = crate::value::field_named(&unit)?;
    if let Value::Interval(interval) = &args[1] {
        return match func {
            PureFunc::Extract => crate::value::extract_interval(interval, field, &unit)
                .map(|(scaled, scale)| Value::Numeric { scaled, scale }),
            PureFunc::DatePart => {
                crate::value::date_part_interval(interval, field, &unit).map(Value::Float)
            }
            _ => Err(SqlError::unsupported("date_trunc of an interval")
                .with_hint("justify_interval, or extract its fields")),
        };
    }
    if let Value::Date(days) = args[1] {
        let midnight = Value::Timestamp(crate::value::date_to_timestamp(days));
        if func != PureFunc::Extract {
            return datetime_func(func, &[args[0].clone(), midnight]);
        }
        return crate::value::extract_date_field(days, field, &unit);
    }
    let Value::Timestamp(micros) = args[1] else {
        let name = match func {
            PureFunc::DatePart => "date_part",
            PureFunc::Extract => "extract",
            _ => "date_trunc",
        };
        return Err(SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!(
                "function {name}(text, {}) does not exist",
                args[1].type_name()
            ),
        )
        .with_hint("It takes a timestamp: cast the value (x::timestamp)."));
    };
    Ok(match func {
        PureFunc::DatePart => {
            crate::value::date_part(micros, field).map_or(Value::Null, Value::Float)
        }
        PureFunc::Extract => match crate::value::extract_field(micros, field, &unit)? {
            Some((scaled, scale)) => Value::Numeric { scaled, scale },
            None => Value::Null,
        },
        _ => Value::Timestamp(crate::value::truncate(micros, field, &unit)?),
    })
}

/// `make_date(year, month, day)`: 22008 naming the fields where no such day exists,
/// `date out of range` outside years 1 to 9999.
fn make_date(args: &[Value]) -> SqlResult<Value> {
    let [Value::Int(year), Value::Int(month), Value::Int(day)] = args else {
        let types: Vec<&str> = args.iter().map(Value::type_name).collect();
        return Err(SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!("function make_date({}) does not exist", types.join(", ")),
        )
        .with_hint("It takes three integers: year, month and day."));
    };
    crate::value::make_date(*year, *month, *day).map(Value::Date)
}

/// `age(a, b)`, and `age(a)` from today's midnight: the calendar difference of two
/// timestamps (a date is its midnight).
fn age(args: &[Value]) -> SqlResult<Value> {
    let instant = |v: &Value| match v {
        Value::Timestamp(t) => Ok(*t),
        Value::Date(d) => Ok(crate::value::date_to_timestamp(*d)),
        other => Err(SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!("function age({}) does not exist", other.type_name()),
        )
        .with_hint("It takes timestamps.")),
    };
    let (a, b) = match args {
        [a, b] => (instant(a)?, instant(b)?),
        [b] => {
            let today = crate::value::timestamp_to_date(crate::session::now_micros())?;
            (crate::value::date_to_timestamp(today), instant(b)?)
        }
        _ => return Err(SqlError::internal("age takes one or two timestamps")),
    };
    crate::value::age(a, b).map(Value::Interval)
}

/// `justify_hours`, `justify_days` and `justify_interval` (`value::Interval`).
fn justify(func: PureFunc, arg: &Value) -> SqlResult<Value> {
    let Value::Interval(interval) = arg else {
        return Err(SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!(
                "function {}({}) does not exist",
                format!("{func:?}")
                    .to_lowercase()
                    .replace("justify", "justify_"),
                arg.type_name()
            ),
        )
        .with_hint("It takes an interval."));
    };
    let justified = match func {
        PureFunc::JustifyHours => interval.justify_hours(),
        PureFunc::JustifyDays => interval.justify_days(),
        _ => interval.justify(),
    };
    justified.map(Value::Interval)
}

fn number_func(func: PureFunc, args: &[Value]) -> SqlResult<Value> {
    use PureFunc as F;
    let float = |v: &Value| {
        v.as_f64().ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!("{func:?} takes a number, not {}", v.type_name()).to_lowercase(),
            )
        })
    };
    match func {
        F::Mod => args[0].rem(&args[1]),
        F::Sqrt => {
            let x = float(&args[0])?;
            if x < 0.0 {
                return Err(SqlError::new(
                    "2201F",
                    "cannot take square root of a negative number",
                ));
            }
            Ok(Value::Float(x.sqrt()))
        }
        F::Power => {
            let (x, y) = (float(&args[0])?, float(&args[1])?);
            if x == 0.0 && y < 0.0 {
                return Err(SqlError::new(
                    "2201F",
                    "zero raised to a negative power is undefined",
                ));
            }
            if x < 0.0 && y.fract() != 0.0 {
                return Err(SqlError::new(
                    "2201F",
                    "a negative number raised to a non-integer power yields a complex result",
                ));
            }
            let result = x.powf(y);
            if result.is_infinite() {
                return Err(SqlError::new(
                    sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                    "value out of range: overflow",
                ));
            }
            Ok(Value::Float(result))
        }
        _ => round_like(func, args),
    }
}

/// `round`, `trunc`, `floor`, `ceil`: doubles stay doubles (round halves to even, as
/// PostgreSQL's rint); numerics and integers are numeric, round halves away from zero.
fn round_like(func: PureFunc, args: &[Value]) -> SqlResult<Value> {
    use PureFunc as F;
    let places = match args.get(1) {
        None => 0,
        Some(v) => int_arg(v, "round and trunc")?,
    };
    match &args[0] {
        Value::Float(x) => {
            if args.len() == 2 {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    "function round(double precision, integer) does not exist",
                )
                .with_hint("Cast the first argument to numeric: round(x::numeric, n)."));
            }
            Ok(Value::Float(match func {
                F::Round => x.round_ties_even(),
                F::Trunc => x.trunc(),
                F::Floor => x.floor(),
                _ => x.ceil(),
            }))
        }
        Value::Int(i) if matches!(func, F::Floor | F::Ceil) => Ok(Value::Float(*i as f64)),
        Value::Int(i) => numeric_round(func, i128::from(*i), 0, places),
        Value::Numeric { scaled, scale } => numeric_round(func, *scaled, *scale, places),
        other => Err(SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!(
                "round, trunc, floor and ceil take a number, not {}",
                other.type_name()
            ),
        )),
    }
}

/// A numeric `scaled / 10^scale` rounded (or cut, floored, ceiled) to `places` digits
/// after the point (0 to 38; a negative count rounds to tens, hundreds, …).
fn numeric_round(func: PureFunc, scaled: i128, scale: u8, places: i64) -> SqlResult<Value> {
    use PureFunc as F;
    if !(-38..=38).contains(&places) {
        return Err(numeric::overflow());
    }
    // Work at `keep` digits after the point, then give the result `shown` of them.
    let shown = places.max(0) as u8;
    let drop_digits = i64::from(scale) - places;
    if drop_digits <= 0 {
        let scaled = numeric::rescale(scaled, scale, shown).ok_or_else(numeric::overflow)?;
        return Ok(Value::Numeric {
            scaled,
            scale: shown,
        });
    }
    let unit = numeric::pow10(u8::try_from(drop_digits).map_err(|_| numeric::overflow())?)
        .ok_or_else(numeric::overflow)?;
    let (quotient, remainder) = (scaled / unit, scaled % unit);
    let step = match func {
        F::Round if remainder.unsigned_abs() * 2 >= unit.unsigned_abs() => scaled.signum(),
        F::Floor if remainder < 0 => -1,
        F::Ceil if remainder > 0 => 1,
        _ => 0,
    };
    let rounded = quotient + step;
    // Back up to `shown` digits: a negative `places` leaves zeros before the point.
    let lift = numeric::pow10(u8::try_from((-places).max(0)).unwrap_or(0))
        .ok_or_else(numeric::overflow)?;
    let scaled = rounded.checked_mul(lift).ok_or_else(numeric::overflow)?;
    Ok(Value::Numeric {
        scaled,
        scale: shown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ALL: [PureFunc; 46] = [
        PureFunc::Substr,
        PureFunc::Replace,
        PureFunc::Concat,
        PureFunc::ConcatWs,
        PureFunc::Left,
        PureFunc::Right,
        PureFunc::Repeat,
        PureFunc::Reverse,
        PureFunc::Strpos,
        PureFunc::Btrim,
        PureFunc::Ltrim,
        PureFunc::Rtrim,
        PureFunc::Lpad,
        PureFunc::Rpad,
        PureFunc::SplitPart,
        PureFunc::Round,
        PureFunc::Floor,
        PureFunc::Ceil,
        PureFunc::Trunc,
        PureFunc::Mod,
        PureFunc::Sqrt,
        PureFunc::Power,
        PureFunc::NullIf,
        PureFunc::Greatest,
        PureFunc::Least,
        PureFunc::Md5,
        PureFunc::Initcap,
        PureFunc::Translate,
        PureFunc::Chr,
        PureFunc::Ascii,
        PureFunc::OctetLength,
        PureFunc::BitLength,
        PureFunc::QuoteLiteral,
        PureFunc::RegexpReplace,
        PureFunc::Div,
        PureFunc::Gcd,
        PureFunc::Lcm,
        PureFunc::Sign,
        PureFunc::Ln,
        PureFunc::Log10,
        PureFunc::Exp,
        PureFunc::Degrees,
        PureFunc::Radians,
        PureFunc::Pi,
        PureFunc::NumNulls,
        PureFunc::NumNonNulls,
    ];

    fn any_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::Int),
            (-50i64..50).prop_map(Value::Int),
            any::<f64>().prop_map(Value::Float),
            "[a-cé ,]{0,8}".prop_map(Value::Text),
            (any::<i64>(), 0u8..39).prop_map(|(v, scale)| Value::Numeric {
                scaled: i128::from(v),
                scale
            }),
        ]
    }

    proptest! {
        /// Any arguments give a value or an error, never a panic (the slicing, the
        /// counts and the rounding meet extreme integers and scales here).
        #[test]
        fn no_arguments_make_a_function_panic(
            index in 0..ALL.len(),
            args in proptest::collection::vec(any_value(), 1..4),
        ) {
            let func = ALL[index];
            prop_assume!(func.takes(args.len()));
            let _ = func.eval(args);
        }
    }

    #[test]
    fn every_function_is_found_by_its_name() {
        for func in ALL {
            let name = format!("{func:?}").to_lowercase();
            let name = match name.as_str() {
                "nullif" => "nullif".to_string(),
                "concatws" => "concat_ws".to_string(),
                "splitpart" => "split_part".to_string(),
                "octetlength" => "octet_length".to_string(),
                "bitlength" => "bit_length".to_string(),
                "quoteliteral" => "quote_literal".to_string(),
                "regexpreplace" => "regexp_replace".to_string(),
                "numnulls" => "num_nulls".to_string(),
                "numnonnulls" => "num_nonnulls".to_string(),
                _ => name,
            };
            assert_eq!(PureFunc::by_name(&name), Some(func), "{name}");
        }
    }
}
