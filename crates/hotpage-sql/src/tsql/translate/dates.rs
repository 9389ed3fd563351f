//! T-SQL's date functions, onto the SQL layer's: DATEDIFF and DATEDIFF_BIG
//! (`hotpage_datediff`), DATEADD (`hotpage_dateadd`), DATEPART, YEAR, MONTH and DAY
//! (`hotpage_datepart`), EOMONTH. Each converts its date argument at run time as SQL Server
//! converts a value to a datetime (`expr::tsql_datetime`): a variable's type is not known
//! where the T-SQL is translated.

use super::{Out, Resolve, matching_paren, rewrite};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::tsql::parse::{split_top_level, syntax_near, word};
use sqlparser::tokenizer::Token;

/// `DATEDIFF[_BIG](part, start, end)`: `hotpage_datediff` with the part's length in
/// microseconds, or for the parts of varying length (and nanosecond, finer than hotpage's
/// timestamps) the part's name. DATEDIFF's result is an int, as in SQL Server (a count
/// beyond it is error 535, 22003); DATEDIFF_BIG's a bigint.
pub(super) fn date_diff(
    toks: &[Token],
    i: usize,
    env: &dyn Resolve,
    out: &mut Out,
) -> SqlResult<usize> {
    let (close, args) = call_arguments(toks, i)?;
    let [[part], start, end] = args.as_slice() else {
        return Err(syntax_near(toks.get(close)));
    };
    let part_name = word(part).ok_or_else(|| syntax_near(Some(part)))?;
    let big = word(&toks[i]).is_some_and(|w| w == "DATEDIFF_BIG");
    let function = if big { "datediff_big" } else { "datediff" };
    if let Some(refused) = date_diff_refused_part(&part_name) {
        // SQL Server knows these parts (DATEPART and DATEADD take them) but its DATEDIFF
        // refuses them: PostgreSQL's code for a unit a function does not support.
        return Err(SqlError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            format!(
                "the datepart {refused} is not supported by date function {function} (SQL Server error 9806)"
            ),
        ));
    }
    let Some(unit) = date_diff_unit(&part_name) else {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("'{part_name}' is not a recognized {function} option (SQL Server error 155)"),
        ));
    };
    if !big {
        out.push("CAST(");
    }
    out.push(&format!("hotpage_datediff({unit}, "));
    date_diff_argument(start, env, out)?;
    out.push(", ");
    date_diff_argument(end, env, out)?;
    out.push(if big { ")" } else { ", 'int') AS int)" });
    Ok(close + 1)
}

/// A DATEDIFF date, as it is: `hotpage_datediff` converts it at run time as SQL Server
/// converts a value to a datetime (text parsed, a number as days since 1900-01-01, whether
/// a literal, an int variable or an expression: `DATEDIFF(month, 0, GETDATE())`). A cast
/// here could not tell an int variable from a datetime one: variables are parameters.
fn date_diff_argument(arg: &[Token], env: &dyn Resolve, out: &mut Out) -> SqlResult<()> {
    out.push("(");
    rewrite(arg, env, out)?;
    out.push(")");
    Ok(())
}

/// The parts SQL Server's DATEDIFF and DATEDIFF_BIG refuse with error 9806 (by their full
/// names), though DATEPART and DATEADD take them: `iso_week` (`isowk`, `isoww`) and
/// `tzoffset` (`tz`). Refused here as there, so a script behaves as on SQL Server;
/// `hotpage_datediff('iso_week', …)` in the PostgreSQL dialect counts Monday boundaries.
fn date_diff_refused_part(part: &str) -> Option<&'static str> {
    match part {
        "ISO_WEEK" | "ISOWK" | "ISOWW" => Some("iso_week"),
        "TZOFFSET" | "TZ" => Some("tzoffset"),
        _ => None,
    }
}

/// `hotpage_datediff`'s unit for a DATEDIFF part (SQL Server's names and abbreviations):
/// microseconds for the parts of fixed length, else the part's name as a string.
fn date_diff_unit(part: &str) -> Option<String> {
    let unit_us: i64 = match part {
        "MICROSECOND" | "MCS" => 1,
        "MILLISECOND" | "MS" => 1_000,
        "SECOND" | "SS" | "S" => 1_000_000,
        "MINUTE" | "MI" | "N" => 60_000_000,
        "HOUR" | "HH" => 3_600_000_000,
        // DATEDIFF counts weekday boundaries as day boundaries: each midnight is one.
        "DAY" | "DD" | "D" | "DAYOFYEAR" | "DY" | "Y" | "WEEKDAY" | "DW" | "W" => 86_400_000_000,
        "WEEK" | "WK" | "WW" => return Some("'week'".into()),
        "MONTH" | "MM" | "M" => return Some("'month'".into()),
        "QUARTER" | "QQ" | "Q" => return Some("'quarter'".into()),
        "YEAR" | "YY" | "YYYY" => return Some("'year'".into()),
        "NANOSECOND" | "NS" => return Some("'nanosecond'".into()),
        _ => return None,
    };
    Some(unit_us.to_string())
}

/// The arguments of the call whose name is at `i` (split on its top-level commas), and
/// where its `)` is.
fn call_arguments(toks: &[Token], i: usize) -> SqlResult<(usize, Vec<&[Token]>)> {
    let close = matching_paren(toks, i + 1)?;
    let args = split_top_level(&toks[i + 2..close], |t| matches!(t, Token::Comma));
    Ok((close, args))
}

/// A DATEADD or DATEPART part by SQL Server's names and abbreviations, as the one name
/// `hotpage_dateadd` and `hotpage_datepart` take; `None` for an unknown part.
fn part_name(part: &str) -> Option<&'static str> {
    Some(match part {
        "YEAR" | "YY" | "YYYY" => "year",
        "QUARTER" | "QQ" | "Q" => "quarter",
        "MONTH" | "MM" | "M" => "month",
        "DAYOFYEAR" | "DY" | "Y" => "dayofyear",
        "DAY" | "DD" | "D" => "day",
        "WEEK" | "WK" | "WW" => "week",
        "WEEKDAY" | "DW" | "W" => "weekday",
        "HOUR" | "HH" => "hour",
        "MINUTE" | "MI" | "N" => "minute",
        "SECOND" | "SS" | "S" => "second",
        "MILLISECOND" | "MS" => "millisecond",
        "MICROSECOND" | "MCS" => "microsecond",
        "NANOSECOND" | "NS" => "nanosecond",
        "ISO_WEEK" | "ISOWK" | "ISOWW" => "iso_week",
        "TZOFFSET" | "TZ" => "tzoffset",
        _ => return None,
    })
}

/// The part word of a date function's first argument, by its canonical name; SQL Server's
/// error 155 for an unknown one.
fn part_argument(part: &Token, function: &str) -> SqlResult<&'static str> {
    let written = word(part).ok_or_else(|| syntax_near(Some(part)))?;
    part_name(&written).ok_or_else(|| {
        SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("'{written}' is not a recognized {function} option (SQL Server error 155)"),
        )
    })
}

/// `DATEADD(part, number, date)`: `hotpage_dateadd('part', number, date)`.
pub(super) fn date_add(
    toks: &[Token],
    i: usize,
    env: &dyn Resolve,
    out: &mut Out,
) -> SqlResult<usize> {
    let (close, args) = call_arguments(toks, i)?;
    let [[part], number, date] = args.as_slice() else {
        return Err(syntax_near(toks.get(close)));
    };
    let part = part_argument(part, "dateadd")?;
    out.push(&format!("hotpage_dateadd('{part}', "));
    date_diff_argument(number, env, out)?;
    out.push(", ");
    date_diff_argument(date, env, out)?;
    out.push(")");
    Ok(close + 1)
}

/// `DATEPART(part, date)`: `hotpage_datepart('part', date)`, an int.
pub(super) fn date_part(
    toks: &[Token],
    i: usize,
    env: &dyn Resolve,
    out: &mut Out,
) -> SqlResult<usize> {
    let (close, args) = call_arguments(toks, i)?;
    let [[part], date] = args.as_slice() else {
        return Err(syntax_near(toks.get(close)));
    };
    let part = part_argument(part, "datepart")?;
    out.push(&format!("hotpage_datepart('{part}', "));
    date_diff_argument(date, env, out)?;
    out.push(")");
    Ok(close + 1)
}

/// `YEAR(date)`, `MONTH(date)`, `DAY(date)`: DATEPART of that part.
pub(super) fn part_call(
    toks: &[Token],
    i: usize,
    upper: &str,
    env: &dyn Resolve,
    out: &mut Out,
) -> SqlResult<usize> {
    let close = matching_paren(toks, i + 1)?;
    let part = upper.to_lowercase();
    out.push(&format!("hotpage_datepart('{part}', "));
    date_diff_argument(&toks[i + 2..close], env, out)?;
    out.push(")");
    Ok(close + 1)
}

/// `EOMONTH(date [, months])`: the last day of the month (`months` later), a date: the
/// month's first day, plus a month, less a day.
pub(super) fn end_of_month(
    toks: &[Token],
    i: usize,
    env: &dyn Resolve,
    out: &mut Out,
) -> SqlResult<usize> {
    let (close, args) = call_arguments(toks, i)?;
    let (date, months) = match args.as_slice() {
        [date] => (*date, None),
        [date, months] => (*date, Some(*months)),
        _ => return Err(syntax_near(toks.get(close))),
    };
    out.push("CAST(date_trunc('month', hotpage_dateadd('month', ");
    match months {
        Some(months) => date_diff_argument(months, env, out)?,
        None => out.push("0"),
    }
    out.push(", ");
    date_diff_argument(date, env, out)?;
    out.push(")) + interval '1 mon' - interval '1 day' AS date)");
    Ok(close + 1)
}
