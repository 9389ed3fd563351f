//! `hotpage_dateadd` and `hotpage_datepart`, what T-SQL's DATEADD, DATEPART, YEAR, MONTH,
//! DAY and EOMONTH become (`tsql/translate/dates.rs`), with SQL Server's rules: the date
//! argument converted as SQL Server converts a value to a datetime
//! ([`super::tsql_datetime`]), a `date` kept a date by DATEADD, the week parts counted as
//! `SET DATEFIRST 7` (us_english, weeks from Sunday) counts them.

use crate::error::{SqlError, SqlResult, sqlstate};
use crate::value::{Interval, Value};

/// Microseconds in a day.
const USECS_PER_DAY: i64 = 86_400_000_000;

/// The parts finer than a day, which a `date` has not (SQL Server's error 9810).
fn is_time_part(part: &str) -> bool {
    matches!(
        part,
        "hour" | "minute" | "second" | "millisecond" | "microsecond" | "nanosecond" | "tzoffset"
    )
}

/// SQL Server's error 9810 for a time part of a `date`.
fn not_for_date(part: &str, function: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!(
            "The datepart {part} is not supported by date function {function} for data type date (SQL Server error 9810)"
        ),
    )
}

/// DATEADD's number: an int, a decimal or float truncated toward zero (SQL Server
/// truncates it); past an int's range error 8115.
fn whole_number(number: &Value) -> SqlResult<i64> {
    let overflow = || {
        SqlError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            "Arithmetic overflow error converting expression to data type int (SQL Server error 8115)",
        )
    };
    let whole = match number {
        Value::Int(n) => *n,
        Value::Text(_) | Value::Float(_) | Value::Numeric { .. } => {
            let f = number.clone().coerce(&crate::types::SqlType::Double)?;
            match f {
                Value::Float(f) if f.is_finite() && f.abs() < 9.2e18 => f.trunc() as i64,
                _ => return Err(overflow()),
            }
        }
        other => {
            return Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!("DATEADD's number cannot be a {}", other.type_name()),
            ));
        }
    };
    i32::try_from(whole).map(i64::from).map_err(|_| overflow())
}

/// The interval `number` parts make.
fn part_interval(part: &str, number: i64) -> SqlResult<Interval> {
    let months = |m: i64| Interval {
        months: (m as i32),
        ..Interval::default()
    };
    let micros = |per: i64| -> SqlResult<Interval> {
        Ok(Interval {
            micros: number.checked_mul(per).ok_or_else(overflow)?,
            ..Interval::default()
        })
    };
    Ok(match part {
        "year" if number.abs() <= 9999 => months(number * 12),
        "quarter" if number.abs() <= 4 * 9999 => months(number * 3),
        "month" if number.abs() <= 12 * 9999 => months(number),
        "year" | "quarter" | "month" => return Err(overflow()),
        "dayofyear" | "day" | "weekday" => Interval {
            days: number as i32,
            ..Interval::default()
        },
        "week" => micros(7 * USECS_PER_DAY)?,
        "hour" => micros(3_600_000_000)?,
        "minute" => micros(60_000_000)?,
        "second" => micros(1_000_000)?,
        "millisecond" => micros(1_000)?,
        "microsecond" => micros(1)?,
        // hotpage's timestamps hold microseconds: a nanosecond count is cut to them.
        "nanosecond" => Interval {
            micros: number / 1_000,
            ..Interval::default()
        },
        other => {
            return Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!("The datepart {other} is not supported by date function dateadd"),
            ));
        }
    })
}

/// SQL Server's error 517 for a date past the type's range.
fn overflow() -> SqlError {
    SqlError::new(
        sqlstate::DATETIME_FIELD_OVERFLOW,
        "Adding a value to a 'datetime' column caused an overflow (SQL Server error 517)",
    )
}

/// `hotpage_dateadd(part, number, date)`: `date` plus `number` parts, months on the
/// calendar (January 31 plus a month is February's last day). A `date` stays a date and
/// takes no time part (error 9810); anything else is converted to a datetime first.
pub(super) fn date_add(args: &[Value]) -> SqlResult<Value> {
    let [Value::Text(part), number, date] = args else {
        return Err(SqlError::internal(
            "hotpage_dateadd takes a part, a number and a date",
        ));
    };
    if number.is_null() || date.is_null() {
        return Ok(Value::Null);
    }
    let interval = part_interval(part, whole_number(number)?)?;
    if let Value::Date(days) = date {
        if is_time_part(part) {
            return Err(not_for_date(part, "dateadd"));
        }
        let midnight = Value::Date(*days).coerce(&crate::types::SqlType::Timestamp)?;
        return match midnight.add(&Value::Interval(interval)) {
            Ok(Value::Timestamp(t)) => crate::value::timestamp_to_date(t)
                .map(Value::Date)
                .map_err(|_| overflow()),
            _ => Err(overflow()),
        };
    }
    let at = super::tsql_datetime(date)?;
    at.add(&Value::Interval(interval)).map_err(|_| overflow())
}

/// `hotpage_datepart(part, date)`: the part as an int, as SQL Server's DATEPART gives it:
/// `week` counts weeks from Sunday with January 1 in week 1, `weekday` is 1 for Sunday,
/// `iso_week` is ISO 8601's, `millisecond` and `microsecond` are within the second,
/// `tzoffset` 0 (no offset is kept). A `date` has no time part (error 9810).
pub(super) fn date_part(args: &[Value]) -> SqlResult<Value> {
    let [Value::Text(part), date] = args else {
        return Err(SqlError::internal(
            "hotpage_datepart takes a part and a date",
        ));
    };
    if date.is_null() {
        return Ok(Value::Null);
    }
    if matches!(date, Value::Date(_)) && is_time_part(part) {
        return Err(not_for_date(part, "datepart"));
    }
    let Value::Timestamp(micros) = super::tsql_datetime(date)? else {
        return Ok(Value::Null);
    };
    let field = |name: &str| -> SqlResult<i64> {
        let field = crate::value::field_named(name)?;
        Ok(crate::value::date_part(micros, field).unwrap_or_default() as i64)
    };
    let in_second = micros.rem_euclid(1_000_000);
    Ok(Value::Int(match part.as_str() {
        "year" | "quarter" | "month" | "day" | "hour" | "minute" => field(part)?,
        "dayofyear" => field("doy")?,
        "second" => field("second")?,
        "millisecond" => in_second / 1_000,
        "microsecond" => in_second,
        "nanosecond" => in_second * 1_000,
        "weekday" => field("dow")? + 1,
        "week" => {
            // January 1's weekday (0 Sunday) shifts the day of the year into weeks.
            let day_of_year = field("doy")?;
            let weekday = field("dow")?;
            let january_first = (weekday - (day_of_year - 1)).rem_euclid(7);
            (day_of_year - 1 + january_first) / 7 + 1
        }
        "iso_week" => field("week")?,
        "tzoffset" => 0,
        other => {
            return Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!("'{other}' is not a recognized datepart option (SQL Server error 155)"),
            ));
        }
    }))
}
