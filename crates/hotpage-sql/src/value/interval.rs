//! PostgreSQL's `interval`: months, days and microseconds, kept apart because a month and a
//! day have no fixed length in time (a month is 28 to 31 days, a day 23 to 25 hours where
//! zones shift; the session zone here is UTC, so a day is always 24 hours). Reading the
//! PostgreSQL style (`1 year 2 mons 3 days 04:05:06`, `@ 1 day ago`, `1.5 weeks`), printing
//! it as PostgreSQL's default IntervalStyle does, the arithmetic with timestamps and numbers,
//! and `extract` of an interval.

use std::cmp::Ordering;

use super::datetime::{
    PG_EPOCH_DAYS, USECS_PER_DAY, USECS_PER_SEC, check_timestamp_range, civil_from_days,
    days_from_civil, days_in_month, is_finite_timestamp,
};
use crate::error::{SqlError, SqlResult, sqlstate};

/// Microseconds in an hour.
const USECS_PER_HOUR: i64 = 3_600 * USECS_PER_SEC;

/// Microseconds in a minute.
const USECS_PER_MINUTE: i64 = 60 * USECS_PER_SEC;

/// The days a month counts as where an interval's parts are compared or spilled into each
/// other (PostgreSQL's DAYS_PER_MONTH).
const DAYS_PER_MONTH: i64 = 30;

/// An interval: PostgreSQL's `Interval` struct, field for field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Interval {
    /// Whole months (a year is 12).
    pub months: i32,
    /// Whole days.
    pub days: i32,
    /// Microseconds: the time part.
    pub micros: i64,
}

/// 22008 `interval out of range`: a field past its integer's range.
fn out_of_range() -> SqlError {
    SqlError::new(sqlstate::DATETIME_FIELD_OVERFLOW, "interval out of range")
}

/// A whole-number field that must fit an `i32`.
fn fit_i32(value: f64) -> SqlResult<i32> {
    if value.is_finite() && value >= f64::from(i32::MIN) && value <= f64::from(i32::MAX) {
        Ok(value as i32)
    } else {
        Err(out_of_range())
    }
}

/// Microseconds that must fit an `i64` (within ±2^63, checked before the cast saturates).
fn fit_micros(value: f64) -> SqlResult<i64> {
    if value.is_finite() && value.abs() < 9.2e18 {
        Ok(value as i64)
    } else {
        Err(out_of_range())
    }
}

/// PostgreSQL's TSROUND: to six decimal places, so that a sum of fractions that should be
/// whole (a third of a month times three) is.
fn ts_round(value: f64) -> f64 {
    (value * 1e6).round_ties_even() / 1e6
}

impl Interval {
    /// The interval's length for comparison: a month as 30 days, a day as 24 hours
    /// (PostgreSQL's interval_cmp_value), so `1 mon` equals `30 days`.
    pub fn span(&self) -> i128 {
        (i128::from(self.months) * i128::from(DAYS_PER_MONTH) + i128::from(self.days))
            * i128::from(USECS_PER_DAY)
            + i128::from(self.micros)
    }

    /// SQL comparison, by [`Interval::span`].
    pub fn cmp_span(&self, other: &Interval) -> Ordering {
        self.span().cmp(&other.span())
    }

    /// `self + other` (`other` negated first for `-`), field by field.
    pub fn plus(&self, other: &Interval, negate: bool) -> SqlResult<Interval> {
        let sign = if negate { -1 } else { 1 };
        Ok(Interval {
            months: self
                .months
                .checked_add(other.months.checked_mul(sign).ok_or_else(out_of_range)?)
                .ok_or_else(out_of_range)?,
            days: self
                .days
                .checked_add(other.days.checked_mul(sign).ok_or_else(out_of_range)?)
                .ok_or_else(out_of_range)?,
            micros: self
                .micros
                .checked_add(
                    other
                        .micros
                        .checked_mul(i64::from(sign))
                        .ok_or_else(out_of_range)?,
                )
                .ok_or_else(out_of_range)?,
        })
    }

    /// The interval cut to whole `unit`s (`year`, `month`, `day`, `hour`, `minute`; any
    /// other unit keeps everything), as PostgreSQL cuts `INTERVAL '1.5' DAY` to `1 day`:
    /// toward zero, each field below the unit dropped.
    pub fn truncated_to(&self, unit: &str) -> Interval {
        let time_to = |per: i64| Interval {
            micros: self.micros / per * per,
            ..*self
        };
        match unit {
            "year" => Interval {
                months: self.months / 12 * 12,
                days: 0,
                micros: 0,
            },
            "month" => Interval {
                days: 0,
                micros: 0,
                ..*self
            },
            "day" => Interval { micros: 0, ..*self },
            "hour" => time_to(USECS_PER_HOUR),
            "minute" => time_to(USECS_PER_MINUTE),
            _ => *self,
        }
    }

    /// `-self`.
    pub fn negated(&self) -> SqlResult<Interval> {
        Interval::default().plus(self, true)
    }

    /// `self * factor` (`self / divisor` with `divide`), as PostgreSQL's interval_mul and
    /// interval_div compute it: each field scaled, the months' fraction spilled into days
    /// (30 a month) and the days' fraction into time. A zero divisor is 22012.
    pub fn scaled(&self, factor: f64, divide: bool) -> SqlResult<Interval> {
        if divide && factor == 0.0 {
            return Err(SqlError::new(
                sqlstate::DIVISION_BY_ZERO,
                "division by zero",
            ));
        }
        if factor.is_nan() {
            return Err(out_of_range());
        }
        let apply = |value: f64| {
            if divide {
                value / factor
            } else {
                value * factor
            }
        };
        let months_exact = apply(f64::from(self.months));
        let days_exact = apply(f64::from(self.days));
        let months = fit_i32(months_exact.trunc())?;
        let mut days = fit_i32(days_exact.trunc())?;
        let month_remainder_days = ts_round((months_exact - f64::from(months)) * 30.0);
        let mut sec_remainder = ts_round(
            (days_exact - f64::from(days) + month_remainder_days - month_remainder_days.trunc())
                * 86_400.0,
        );
        if sec_remainder.abs() >= 86_400.0 {
            let whole_days = (sec_remainder / 86_400.0).trunc();
            days = days
                .checked_add(fit_i32(whole_days)?)
                .ok_or_else(out_of_range)?;
            sec_remainder -= whole_days * 86_400.0;
        }
        days = days
            .checked_add(fit_i32(month_remainder_days.trunc())?)
            .ok_or_else(out_of_range)?;
        let micros = fit_micros(
            (apply(self.micros as f64) + sec_remainder * USECS_PER_SEC as f64).round_ties_even(),
        )?;
        Ok(Interval {
            months,
            days,
            micros,
        })
    }

    /// `justify_hours`: whole days of the time part moved into days, the signs made to
    /// agree.
    pub fn justify_hours(&self) -> SqlResult<Interval> {
        let whole_days = self.micros / USECS_PER_DAY;
        let days = self
            .days
            .checked_add(i32::try_from(whole_days).map_err(|_| out_of_range())?)
            .ok_or_else(out_of_range)?;
        let micros = self.micros - whole_days * USECS_PER_DAY;
        let (days, micros) = signs_agree(days, micros);
        Ok(Interval {
            days,
            micros,
            ..*self
        })
    }

    /// `justify_days`: whole 30-day months of the days moved into months, the signs made
    /// to agree.
    pub fn justify_days(&self) -> SqlResult<Interval> {
        let whole_months = self.days / DAYS_PER_MONTH as i32;
        let mut months = self
            .months
            .checked_add(whole_months)
            .ok_or_else(out_of_range)?;
        let mut days = self.days - whole_months * DAYS_PER_MONTH as i32;
        if months > 0 && days < 0 {
            days += DAYS_PER_MONTH as i32;
            months -= 1;
        } else if months < 0 && days > 0 {
            days -= DAYS_PER_MONTH as i32;
            months += 1;
        }
        Ok(Interval {
            months,
            days,
            ..*self
        })
    }

    /// `justify_interval`: whole days of the time part into days and whole 30-day months
    /// of the days into months, the signs of all three made to agree (PostgreSQL's
    /// interval_justify_interval, step for step).
    pub fn justify(&self) -> SqlResult<Interval> {
        const MONTH: i32 = DAYS_PER_MONTH as i32;
        let (mut months, mut days, mut micros) = (self.months, self.days, self.micros);
        let add = |a: i32, b: i64| -> SqlResult<i32> {
            i32::try_from(i64::from(a) + b).map_err(|_| out_of_range())
        };
        if (days > 0 && micros > 0) || (days < 0 && micros < 0) {
            months = add(months, i64::from(days / MONTH))?;
            days %= MONTH;
        }
        days = add(days, micros / USECS_PER_DAY)?;
        micros %= USECS_PER_DAY;
        months = add(months, i64::from(days / MONTH))?;
        days %= MONTH;
        if months > 0 && (days < 0 || (days == 0 && micros < 0)) {
            days += MONTH;
            months -= 1;
        } else if months < 0 && (days > 0 || (days == 0 && micros > 0)) {
            days -= MONTH;
            months += 1;
        }
        let (days, micros) = signs_agree(days, micros);
        Ok(Interval {
            months,
            days,
            micros,
        })
    }
}

/// Days and a time of less than a day, a day moved between them so their signs agree
/// (`1 day -01:00:00` is `23:00:00`), as justify_hours and justify_interval end.
fn signs_agree(days: i32, micros: i64) -> (i32, i64) {
    if days > 0 && micros < 0 {
        (days - 1, micros + USECS_PER_DAY)
    } else if days < 0 && micros > 0 {
        (days + 1, micros - USECS_PER_DAY)
    } else {
        (days, micros)
    }
}

/// A timestamp plus an interval (`negate`: minus), as PostgreSQL's timestamp_pl_interval:
/// the months first, on the calendar, a day past the new month's end becoming its last
/// day (January 31 plus a month is February 29 or 28); then the days; then the time. An
/// infinite timestamp stays infinite; a result past year 9999 is 22008.
pub(crate) fn timestamp_plus(micros: i64, interval: &Interval, negate: bool) -> SqlResult<i64> {
    if !is_finite_timestamp(micros) {
        return Ok(micros);
    }
    let sign = if negate { -1 } else { 1 };
    let out = || SqlError::new(sqlstate::DATETIME_FIELD_OVERFLOW, "timestamp out of range");
    let mut days = micros.div_euclid(USECS_PER_DAY) + PG_EPOCH_DAYS;
    let time = micros.rem_euclid(USECS_PER_DAY);
    if interval.months != 0 {
        let (year, month, day) = civil_from_days(days);
        let month_index = year * 12 + i64::from(month) - 1 + sign * i64::from(interval.months);
        let (year, month) = (
            month_index.div_euclid(12),
            month_index.rem_euclid(12) as u32 + 1,
        );
        if !(1..=9999).contains(&year) {
            return Err(out());
        }
        days = days_from_civil(year, month, day.min(days_in_month(year, month)));
    }
    let days = days + sign * i64::from(interval.days) - PG_EPOCH_DAYS;
    let total = i128::from(days) * i128::from(USECS_PER_DAY)
        + i128::from(time)
        + i128::from(sign) * i128::from(interval.micros);
    let total = i64::try_from(total).map_err(|_| out())?;
    check_timestamp_range(total).map_err(|_| out())
}

/// A timestamp's calendar fields: year, month, day, and the microseconds into the day.
fn fields_of(micros: i64) -> [i64; 4] {
    let (year, month, day) = civil_from_days(micros.div_euclid(USECS_PER_DAY) + PG_EPOCH_DAYS);
    [
        year,
        i64::from(month),
        i64::from(day),
        micros.rem_euclid(USECS_PER_DAY),
    ]
}

/// `age(a, b)`: the difference in years, months and days on the calendar, then time, as
/// PostgreSQL's timestamp_age forms it: each field subtracted, the later minus the
/// earlier, a negative field borrowing from the next (a day borrows the days of `a`'s
/// month where `a` is the earlier, else of `b`'s: PostgreSQL's day_tab lookup),
/// and the sign put back. Either timestamp infinite is 22008.
pub(crate) fn age(a: i64, b: i64) -> SqlResult<Interval> {
    if !is_finite_timestamp(a) || !is_finite_timestamp(b) {
        return Err(SqlError::new(
            sqlstate::DATETIME_FIELD_OVERFLOW,
            "age of an infinite timestamp (PostgreSQL's is a huge interval; hotpage's is not)",
        ));
    }
    let ([y1, m1, d1, t1], [y2, m2, d2, t2]) = (fields_of(a), fields_of(b));
    let sign = if a < b { -1 } else { 1 };
    let (mut years, mut months, mut days, mut time) = (
        sign * (y1 - y2),
        sign * (m1 - m2),
        sign * (d1 - d2),
        sign * (t1 - t2),
    );
    if time < 0 {
        time += USECS_PER_DAY;
        days -= 1;
    }
    while days < 0 {
        // timestamp_age's day_tab lookup: the month of the first argument when it is the
        // earlier one, else of the second.
        let (year, month) = if a < b { (y1, m1) } else { (y2, m2) };
        days += i64::from(days_in_month(year, month as u32));
        months -= 1;
    }
    while months < 0 {
        months += 12;
        years -= 1;
    }
    let months = i32::try_from(sign * (years * 12 + months)).map_err(|_| out_of_range())?;
    let days = i32::try_from(sign * days).map_err(|_| out_of_range())?;
    Ok(Interval {
        months,
        days,
        micros: sign * time,
    })
}

/// `a - b` of two timestamps: the microseconds between, with whole days as days
/// (PostgreSQL's timestamp_mi, which justifies the hours). Either infinite is 22008.
pub(crate) fn timestamp_minus(a: i64, b: i64) -> SqlResult<Interval> {
    if !is_finite_timestamp(a) || !is_finite_timestamp(b) {
        return Err(SqlError::new(
            sqlstate::DATETIME_FIELD_OVERFLOW,
            "cannot subtract infinite timestamps",
        ));
    }
    let micros = a.checked_sub(b).ok_or_else(out_of_range)?;
    Interval {
        months: 0,
        days: 0,
        micros,
    }
    .justify_hours()
}

/// The operators of timestamps and intervals, as PostgreSQL has them: `timestamp ±
/// interval` and `interval + timestamp` (a timestamp of the same type), `date ± interval`
/// (a timestamp), `interval ± interval`, `interval * number`, `number * interval`,
/// `interval / number`, and `timestamp - timestamp` (a date as its midnight: an interval).
/// NULL is handled by the caller; any other pair is 42883.
pub(super) fn datetime_arith(
    left: &super::Value,
    right: &super::Value,
    op: super::ArithOp,
) -> SqlResult<super::Value> {
    use super::ArithOp::{Add, Div, Mul, Sub};
    use super::Value as V;
    let as_timestamp = |v: &V| match v {
        V::Timestamp(t) => Some(*t),
        V::Date(d) => Some(super::datetime::date_to_timestamp(*d)),
        _ => None,
    };
    Ok(match (left, right, op) {
        (V::Timestamp(_) | V::Date(_), V::Interval(i), Add | Sub) => {
            let t = as_timestamp(left).unwrap_or_default();
            V::Timestamp(timestamp_plus(t, i, op == Sub)?)
        }
        (V::Interval(i), V::Timestamp(_) | V::Date(_), Add) => {
            let t = as_timestamp(right).unwrap_or_default();
            V::Timestamp(timestamp_plus(t, i, false)?)
        }
        (V::Interval(a), V::Interval(b), Add | Sub) => V::Interval(a.plus(b, op == Sub)?),
        (V::Interval(i), number, Mul | Div) | (number, V::Interval(i), Mul)
            if number.as_f64().is_some() =>
        {
            V::Interval(i.scaled(number.as_f64().unwrap_or_default(), op == Div)?)
        }
        (V::Timestamp(_) | V::Date(_), V::Timestamp(_) | V::Date(_), Sub) => {
            let (a, b) = (as_timestamp(left), as_timestamp(right));
            V::Interval(timestamp_minus(
                a.unwrap_or_default(),
                b.unwrap_or_default(),
            )?)
        }
        _ => return Err(super::no_operator(Some(left), op.symbol(), right)),
    })
}

/// The units an interval's text may name, as (spellings, what one of it is).
enum Unit {
    /// A length of time, in microseconds.
    Micros(i64),
    /// Days (a week is 7).
    Days(i64),
    /// Months (a year is 12, a decade 120 …).
    Months(i64),
}

/// A unit's spelling (lowercase), as PostgreSQL's datetktbl and deltatktbl read them.
fn unit_named(word: &str) -> Option<Unit> {
    Some(match word {
        "microsecond" | "microseconds" | "microsecon" | "us" | "usec" | "usecs" | "usecond"
        | "useconds" => Unit::Micros(1),
        "millisecond" | "milliseconds" | "millisecon" | "ms" | "msec" | "msecs" | "msecond"
        | "mseconds" => Unit::Micros(1_000),
        "second" | "seconds" | "sec" | "secs" | "s" => Unit::Micros(USECS_PER_SEC),
        "minute" | "minutes" | "min" | "mins" | "m" => Unit::Micros(USECS_PER_MINUTE),
        "hour" | "hours" | "hr" | "hrs" | "h" => Unit::Micros(USECS_PER_HOUR),
        "day" | "days" | "d" => Unit::Days(1),
        "week" | "weeks" | "w" => Unit::Days(7),
        "month" | "months" | "mon" | "mons" => Unit::Months(1),
        "year" | "years" | "yr" | "yrs" | "y" => Unit::Months(12),
        "decade" | "decades" | "dec" | "decs" => Unit::Months(120),
        "century" | "centuries" | "cent" | "c" => Unit::Months(1_200),
        "millennium" | "millennia" | "mil" | "mils" => Unit::Months(12_000),
        _ => return None,
    })
}

/// The words and numbers of an interval's text: a run of digits (with its sign and
/// fraction) and a run of letters are separate words even without a space between
/// (`1day`), and `hh:mm[:ss]` is one word.
fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let flush = |current: &mut String, out: &mut Vec<String>| {
        if !current.is_empty() {
            out.push(std::mem::take(current));
        }
    };
    for c in text.chars() {
        if c.is_whitespace() || c == ',' {
            flush(&mut current, &mut out);
            continue;
        }
        // A sign starts a number; letters after digits (or digits after letters) a word.
        let starts_word = c == '+'
            || c == '-'
            || current
                .chars()
                .last()
                .is_some_and(|last| last.is_alphabetic() != c.is_alphabetic());
        if starts_word {
            flush(&mut current, &mut out);
        }
        current.push(c);
    }
    flush(&mut current, &mut out);
    out
}

/// `[+-]hh:mm[:ss[.ffffff]]` as microseconds.
fn time_word(word: &str) -> Option<i64> {
    let (negative, body) = match word.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, word.strip_prefix('+').unwrap_or(word)),
    };
    let parts: Vec<&str> = body.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let whole = |p: &str| -> Option<i64> {
        (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse().ok())
            .flatten()
    };
    let hours = whole(parts[0])?;
    let minutes = whole(parts[1])?;
    let seconds: f64 = match parts.get(2) {
        Some(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.') => {
            s.parse().ok()?
        }
        Some(_) => return None,
        None => 0.0,
    };
    if minutes > 59 || seconds >= 60.0 {
        return None;
    }
    // In i128: the largest magnitude, i64::MIN's, is one past i64::MAX.
    let micros = i128::from(hours) * i128::from(USECS_PER_HOUR)
        + i128::from(minutes * USECS_PER_MINUTE)
        + (seconds * USECS_PER_SEC as f64).round_ties_even() as i128;
    i64::try_from(if negative { -micros } else { micros }).ok()
}

/// Why an interval text was refused.
enum Refusal {
    Syntax,
    Range,
}

/// A number of an interval's text, as PostgreSQL's DecodeInterval splits it: the whole
/// part exactly (an i64: `9007199254740993 us` keeps its last digit), the fraction as a
/// double of the same sign.
fn split_number(word: &str) -> Result<(i64, f64), Refusal> {
    let (negative, digits) = match word.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, word.strip_prefix('+').unwrap_or(word)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.len() + fraction.len() == 0 || !all_digits(whole) || !all_digits(fraction) {
        return Err(Refusal::Syntax);
    }
    let whole: i64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| Refusal::Range)?
    };
    let fraction: f64 = format!("0.{fraction}0")
        .parse()
        .map_err(|_| Refusal::Syntax)?;
    Ok(if negative {
        (-whole, -fraction)
    } else {
        (whole, fraction)
    })
}

/// PostgreSQL's AdjustFractMicroseconds: `fraction` of `per` microseconds, a remaining
/// fraction of a microsecond rounded, halves toward zero.
fn fraction_micros(fraction: f64, per: i64) -> i64 {
    let scaled = fraction * per as f64;
    let whole = scaled.trunc();
    let rest = scaled - whole;
    let whole = whole as i64;
    if rest > 0.5 {
        whole + 1
    } else if rest < -0.5 {
        whole - 1
    } else {
        whole
    }
}

/// Adds `whole` and `fraction` of `unit` to `into`, the fraction spilling down as
/// PostgreSQL's DecodeInterval spills it: a year's to whole months (rounded), a month's
/// to days (30 a month) and time, a day's or week's to time.
fn add_amount(
    into: &mut Interval,
    (whole, fraction): (i64, f64),
    unit: &Unit,
) -> Result<(), Refusal> {
    let add_i32 = |field: &mut i32, value: i64| -> Result<(), Refusal> {
        let value = i32::try_from(value).map_err(|_| Refusal::Range)?;
        *field = field.checked_add(value).ok_or(Refusal::Range)?;
        Ok(())
    };
    let add_micros = |field: &mut i64, value: i64| -> Result<(), Refusal> {
        *field = field.checked_add(value).ok_or(Refusal::Range)?;
        Ok(())
    };
    let times = |per: i64| whole.checked_mul(per).ok_or(Refusal::Range);
    // A fraction of `per` days: whole days, then the rest of a day as time.
    let fraction_days = |into: &mut Interval, per: i64| -> Result<(), Refusal> {
        let days = fraction * per as f64;
        add_i32(&mut into.days, days.trunc() as i64)?;
        add_micros(
            &mut into.micros,
            fraction_micros(days.fract(), USECS_PER_DAY),
        )
    };
    match *unit {
        Unit::Micros(per) => {
            add_micros(&mut into.micros, times(per)?)?;
            add_micros(&mut into.micros, fraction_micros(fraction, per))?;
        }
        Unit::Days(per) => {
            add_i32(&mut into.days, times(per)?)?;
            fraction_days(into, per)?;
        }
        Unit::Months(per) if per >= 12 => {
            // Years and longer: the fraction becomes whole months, rounded.
            add_i32(&mut into.months, times(per)?)?;
            add_i32(
                &mut into.months,
                (fraction * per as f64).round_ties_even() as i64,
            )?;
        }
        Unit::Months(per) => {
            add_i32(&mut into.months, times(per)?)?;
            fraction_days(into, DAYS_PER_MONTH * per)?;
        }
    }
    Ok(())
}

/// Parses an interval in PostgreSQL's own style: `[@] n unit [n unit …] [[+-]hh:mm[:ss]]
/// [ago]`, units singular, plural or abbreviated (`1 year 2 mons`, `3 days 04:05:06`,
/// `1.5 weeks`, `1day`), a bare number before a time being days and a bare number alone
/// seconds. Bad text is 22007 `invalid input syntax for type interval`, a field past its
/// range 22015.
pub(crate) fn parse_interval(text: &str) -> SqlResult<Interval> {
    parse_words(&text.to_lowercase()).map_err(|refusal| match refusal {
        Refusal::Syntax => SqlError::new(
            sqlstate::INVALID_DATETIME_FORMAT,
            format!("invalid input syntax for type interval: \"{text}\""),
        ),
        Refusal::Range => SqlError::new(
            sqlstate::INTERVAL_FIELD_OVERFLOW,
            format!("interval field value out of range: \"{text}\""),
        ),
    })
}

fn parse_words(text: &str) -> Result<Interval, Refusal> {
    let mut words = words(text);
    if words.first().is_some_and(|w| w == "@") {
        words.remove(0);
    }
    let ago = words.last().is_some_and(|w| w == "ago");
    if ago {
        words.pop();
    }
    if words.is_empty() {
        return Err(Refusal::Syntax);
    }
    let mut interval = Interval::default();
    let mut at = 0;
    while at < words.len() {
        let word = &words[at];
        if let Some(micros) = time_word(word) {
            interval.micros = interval.micros.checked_add(micros).ok_or(Refusal::Range)?;
            at += 1;
            continue;
        }
        let amount = split_number(word)?;
        let unit = match words.get(at + 1) {
            Some(next) if time_word(next).is_some() => Unit::Days(1),
            Some(next) => {
                at += 1;
                unit_named(next).ok_or(Refusal::Syntax)?
            }
            // A lone number at the end is seconds, but only where it is the only word.
            None if words.len() == 1 => Unit::Micros(USECS_PER_SEC),
            None => return Err(Refusal::Syntax),
        };
        add_amount(&mut interval, amount, &unit)?;
        at += 1;
    }
    if ago {
        interval = interval.negated().map_err(|_| Refusal::Range)?;
    }
    Ok(interval)
}

/// PostgreSQL's default output (IntervalStyle `postgres`): `1 year 2 mons 3 days
/// 04:05:06`, a part left out where it is zero, `00:00:00` for a zero interval; a part's
/// sign shown where it is negative, and a `+` on a positive part after a negative one.
pub(crate) fn format_interval(interval: &Interval) -> String {
    let mut out = String::new();
    let mut is_before = false;
    let parts = [
        (i64::from(interval.months / 12), "year"),
        (i64::from(interval.months % 12), "mon"),
        (i64::from(interval.days), "day"),
    ];
    for (value, unit) in parts {
        if value == 0 {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        let plus = if is_before && value > 0 { "+" } else { "" };
        let plural = if value != 1 { "s" } else { "" };
        out.push_str(&format!("{plus}{value} {unit}{plural}"));
        is_before = value < 0;
    }
    let micros = interval.micros;
    if out.is_empty() || micros != 0 {
        let sign = if micros < 0 {
            "-"
        } else if is_before {
            "+"
        } else {
            ""
        };
        let abs = micros.unsigned_abs();
        let hours = abs / USECS_PER_HOUR as u64;
        let minutes = abs / USECS_PER_MINUTE as u64 % 60;
        let seconds = abs / USECS_PER_SEC as u64 % 60;
        let fraction = abs % USECS_PER_SEC as u64;
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&format!("{sign}{hours:02}:{minutes:02}:{seconds:02}"));
        if fraction != 0 {
            let digits = format!("{fraction:06}");
            out.push('.');
            out.push_str(digits.trim_end_matches('0'));
        }
    }
    out
}

/// `extract(field FROM interval)`, as PostgreSQL 15 computes it: the fields of the
/// interval's own parts (months split into years and months, the time into hours,
/// minutes and seconds, each keeping its sign), as a numeric's digits and scale; the
/// epoch counts a year as 365.25 days and a month as 30. A field an interval has not
/// (`dow`, `week`, `timezone` …) is 0A000.
pub(crate) fn extract_interval(
    interval: &Interval,
    field: super::date_fields::DateField,
    unit: &str,
) -> SqlResult<(i128, u8)> {
    use super::date_fields::DateField as F;
    let years = i128::from(interval.months / 12);
    let months = i128::from(interval.months % 12);
    let hours = interval.micros / USECS_PER_HOUR;
    let minutes = interval.micros % USECS_PER_HOUR / USECS_PER_MINUTE;
    let second_micros = i128::from(interval.micros % USECS_PER_MINUTE);
    let whole = |n: i128| (n, 0);
    Ok(match field {
        F::Microseconds => whole(second_micros),
        F::Milliseconds => (second_micros, 3),
        F::Second => (second_micros, 6),
        F::Minute => whole(i128::from(minutes)),
        F::Hour => whole(i128::from(hours)),
        F::Day => whole(i128::from(interval.days)),
        F::Month => whole(months),
        F::Quarter => whole(months / 3 + 1),
        F::Year => whole(years),
        F::Decade => whole(years / 10),
        F::Century => whole(years / 100),
        F::Millennium => whole(years / 1000),
        F::Epoch => {
            const SECS_PER_YEAR: i128 = 31_557_600; // 365.25 days
            let seconds = SECS_PER_YEAR * years
                + i128::from(DAYS_PER_MONTH * 86_400) * months
                + 86_400 * i128::from(interval.days);
            (
                seconds * i128::from(USECS_PER_SEC) + i128::from(interval.micros),
                6,
            )
        }
        _ => {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!("unit \"{unit}\" not supported for type interval"),
            ));
        }
    })
}

/// `date_part(field, interval)`: [`extract_interval`]'s field as a double, computed in
/// double as PostgreSQL's float path computes it (the seconds' fraction divided, then
/// added), so its last digits are PostgreSQL's (`37015506.789000005`, not the exact
/// numeric's nearest double).
pub(crate) fn date_part_interval(
    interval: &Interval,
    field: super::date_fields::DateField,
    unit: &str,
) -> SqlResult<f64> {
    use super::date_fields::DateField as F;
    let whole_seconds = (interval.micros % USECS_PER_MINUTE / USECS_PER_SEC) as f64;
    let fraction_micros = (interval.micros % USECS_PER_SEC) as f64;
    Ok(match field {
        F::Second => whole_seconds + fraction_micros / 1e6,
        F::Milliseconds => whole_seconds * 1000.0 + fraction_micros / 1000.0,
        F::Microseconds => whole_seconds * 1e6 + fraction_micros,
        // Left to right, each term rounded as PostgreSQL's sum rounds it.
        F::Epoch => {
            interval.micros as f64 / 1e6
                + 31_557_600.0 * f64::from(interval.months / 12)
                + (DAYS_PER_MONTH * 86_400) as f64 * f64::from(interval.months % 12)
                + 86_400.0 * f64::from(interval.days)
        }
        _ => {
            let (value, scale) = extract_interval(interval, field, unit)?;
            super::numeric::to_f64(value, scale)
        }
    })
}

#[cfg(test)]
mod tests;
