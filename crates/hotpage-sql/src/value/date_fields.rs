//! The fields of a timestamp that `extract(field FROM ts)`, `date_part('field', ts)` and
//! `date_trunc('field', ts)` name, as PostgreSQL computes them. The session time zone is
//! UTC (`datetime.rs`), so a timestamp with time zone has the same fields as one without,
//! and its zone fields are 0.

use super::datetime::{
    INFINITY, NEG_INFINITY, PG_EPOCH_DAYS, USECS_PER_DAY, USECS_PER_SEC, civil_from_days,
    days_from_civil,
};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::value::Value;

/// Seconds from 1970-01-01 (the Unix epoch, `extract(epoch …)`'s) to 2000-01-01.
const UNIX_TO_PG_EPOCH_SECS: i64 = 946_684_800;

const USECS_PER_MINUTE: i64 = 60 * USECS_PER_SEC;

/// A field of a timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DateField {
    Microseconds,
    Milliseconds,
    Second,
    Minute,
    Hour,
    Day,
    /// The ISO 8601 week number (weeks start on Monday; week 1 holds January 4th).
    Week,
    Month,
    Quarter,
    Year,
    Decade,
    Century,
    Millennium,
    /// Day of the week, Sunday 0 to Saturday 6.
    Dow,
    /// Day of the week, Monday 1 to Sunday 7.
    IsoDow,
    /// Day of the year, 1 to 366.
    Doy,
    /// Seconds since 1970-01-01 00:00:00 UTC.
    Epoch,
    /// The ISO 8601 week-numbering year.
    IsoYear,
    Julian,
    Timezone,
    TimezoneHour,
    TimezoneMinute,
}

impl DateField {
    /// The field a unit names, in any case, with PostgreSQL's plurals and abbreviations
    /// (`years`, `mon`, `hr`, `secs`, `ms`, `us`, …).
    pub(crate) fn by_name(name: &str) -> Option<DateField> {
        use DateField as F;
        Some(match name.to_ascii_lowercase().as_str() {
            "microsecond" | "microseconds" | "microsecon" | "us" | "usec" | "usecs" | "usecond"
            | "useconds" => F::Microseconds,
            "millisecond" | "milliseconds" | "millisecon" | "ms" | "msec" | "msecs" | "msecond"
            | "mseconds" => F::Milliseconds,
            "second" | "seconds" | "s" | "sec" | "secs" => F::Second,
            // PostgreSQL reads `mm` as minutes too.
            "minute" | "minutes" | "m" | "mm" | "min" | "mins" => F::Minute,
            "hour" | "hours" | "h" | "hr" | "hrs" => F::Hour,
            "day" | "days" | "d" => F::Day,
            "week" | "weeks" | "w" => F::Week,
            "month" | "months" | "mon" | "mons" => F::Month,
            "quarter" | "qtr" => F::Quarter,
            "year" | "years" | "y" | "yr" | "yrs" => F::Year,
            "decade" | "decades" | "dec" | "decs" => F::Decade,
            "century" | "centuries" | "c" | "cent" => F::Century,
            "millennium" | "millennia" | "millenniums" | "mil" | "mils" | "millenium" => {
                F::Millennium
            }
            "dow" => F::Dow,
            "isodow" => F::IsoDow,
            "doy" => F::Doy,
            "epoch" => F::Epoch,
            "isoyear" => F::IsoYear,
            "julian" | "j" | "jd" => F::Julian,
            "timezone" => F::Timezone,
            "timezone_h" | "timezone_hour" => F::TimezoneHour,
            "timezone_m" | "timezone_minute" => F::TimezoneMinute,
            _ => return None,
        })
    }

    /// Whether the field grows with time, so that an infinite timestamp's is infinite
    /// (PostgreSQL's rule; the other fields of an infinite timestamp are NULL).
    fn grows_with_time(self) -> bool {
        use DateField as F;
        matches!(
            self,
            F::Year | F::Decade | F::Century | F::Millennium | F::IsoYear | F::Epoch | F::Julian
        )
    }
}

/// 22023, as PostgreSQL names a unit it does not know for the type.
fn unit_not_recognized(unit: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!("unit \"{unit}\" not recognized for type timestamp"),
    )
}

/// A finite timestamp's calendar: days since 1970-01-01, the civil date, and the
/// microseconds since midnight.
struct Calendar {
    days: i64,
    year: i64,
    month: u32,
    day: u32,
    time_us: i64,
}

impl Calendar {
    fn of(micros: i64) -> Calendar {
        let days = micros.div_euclid(USECS_PER_DAY) + PG_EPOCH_DAYS;
        let (year, month, day) = civil_from_days(days);
        Calendar {
            days,
            year,
            month,
            day,
            time_us: micros.rem_euclid(USECS_PER_DAY),
        }
    }

    /// Monday 1 to Sunday 7 (1970-01-01 was a Thursday).
    fn iso_dow(&self) -> i64 {
        (self.days + 3).rem_euclid(7) + 1
    }

    /// The ISO week-numbering year and week: the week's Thursday decides the year.
    fn iso_week(&self) -> (i64, i64) {
        let thursday = self.days - self.iso_dow() + 4;
        let (year, _, _) = civil_from_days(thursday);
        (year, (thursday - days_from_civil(year, 1, 1)) / 7 + 1)
    }
}

/// `extract(field FROM micros)`: the field as a numeric's digits and scale (seconds
/// with 6 decimals, milliseconds with 3, the rest whole). `None` where PostgreSQL's is
/// NULL (a field of an infinite timestamp that does not grow with time).
pub(crate) fn extract_field(
    micros: i64,
    field: DateField,
    unit: &str,
) -> SqlResult<Option<(i128, u8)>> {
    if micros == INFINITY || micros == NEG_INFINITY {
        if field.grows_with_time() {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!("extract({unit} from an infinite timestamp) is Infinity, which hotpage's numeric does not hold"),
            )
            .with_hint(format!("date_part('{unit}', …) gives it as a double precision; or leave out the infinite rows.")));
        }
        return Ok(None);
    }
    if field == DateField::Julian {
        return Err(SqlError::unsupported("extract(julian …)")
            .with_hint("date_part('julian', …) gives it as a double precision."));
    }
    Ok(Some(finite_field(micros, field)))
}

/// `extract(field FROM date)`: PostgreSQL's extract of a date, a whole numeric. The
/// fields finer than a day and the zone's are 0A000 (`unit "hour" not supported for type
/// date`); the others are those of the date's midnight, the epoch in whole seconds.
pub(crate) fn extract_date_field(days: i32, field: DateField, unit: &str) -> SqlResult<Value> {
    use DateField as F;
    if matches!(
        field,
        F::Microseconds
            | F::Milliseconds
            | F::Second
            | F::Minute
            | F::Hour
            | F::Timezone
            | F::TimezoneHour
            | F::TimezoneMinute
    ) {
        return Err(SqlError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            format!("unit \"{unit}\" not supported for type date"),
        ));
    }
    let micros = super::datetime::date_to_timestamp(days);
    Ok(match extract_field(micros, field, unit)? {
        // Every field left is whole at midnight: the scale goes, not a digit.
        Some((scaled, scale)) => Value::Numeric {
            scaled: scaled / 10i128.pow(u32::from(scale)),
            scale: 0,
        },
        None => Value::Null,
    })
}

/// A finite timestamp's field, as `extract_field` gives it.
fn finite_field(micros: i64, field: DateField) -> (i128, u8) {
    use DateField as F;
    let c = Calendar::of(micros);
    let in_minute_us = i128::from(c.time_us % USECS_PER_MINUTE);
    let whole = |n: i64| (i128::from(n), 0);
    match field {
        F::Microseconds => (in_minute_us, 0),
        F::Milliseconds => (in_minute_us, 3),
        F::Second => (in_minute_us, 6),
        F::Minute => whole(c.time_us / USECS_PER_MINUTE % 60),
        F::Hour => whole(c.time_us / (60 * USECS_PER_MINUTE)),
        F::Day => whole(i64::from(c.day)),
        F::Week => whole(c.iso_week().1),
        F::Month => whole(i64::from(c.month)),
        F::Quarter => whole((i64::from(c.month) - 1) / 3 + 1),
        F::Year => whole(c.year),
        F::Decade => whole(c.year.div_euclid(10)),
        F::Century => whole((c.year + 99).div_euclid(100)),
        F::Millennium => whole((c.year + 999).div_euclid(1000)),
        F::Dow => whole(c.iso_dow() % 7),
        F::IsoDow => whole(c.iso_dow()),
        F::Doy => whole(c.days - days_from_civil(c.year, 1, 1) + 1),
        F::Epoch => (
            i128::from(micros) + i128::from(UNIX_TO_PG_EPOCH_SECS) * i128::from(USECS_PER_SEC),
            6,
        ),
        F::IsoYear => whole(c.iso_week().0),
        F::Timezone | F::TimezoneHour | F::TimezoneMinute | F::Julian => whole(0),
    }
}

/// `date_part('field', micros)`: the field as a double precision; an infinite timestamp's
/// growing fields are ±Infinity, its others NULL (`None`).
pub(crate) fn date_part(micros: i64, field: DateField) -> Option<f64> {
    match micros {
        INFINITY | NEG_INFINITY if field.grows_with_time() => Some(if micros == INFINITY {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        }),
        INFINITY | NEG_INFINITY => None,
        _ if field == DateField::Julian => {
            // Days since noon, 4714-11-24 BC: the Unix epoch is Julian day 2440587.5.
            let seconds = micros as f64 / USECS_PER_SEC as f64 + UNIX_TO_PG_EPOCH_SECS as f64;
            Some(seconds / 86_400.0 + 2_440_588.0)
        }
        _ => {
            let (scaled, scale) = finite_field(micros, field);
            Some(scaled as f64 / 10f64.powi(i32::from(scale)))
        }
    }
}

/// `date_trunc('field', micros)`: the timestamp with every smaller field at its first
/// value (weeks start on Monday; a century at its year 1, as 2001). An infinite timestamp
/// stays as it is; a field that is not a unit of time (dow, epoch, …) is 22023.
pub(crate) fn truncate(micros: i64, field: DateField, unit: &str) -> SqlResult<i64> {
    use DateField as F;
    if micros == INFINITY || micros == NEG_INFINITY {
        return Ok(micros);
    }
    let floor = |unit_us: i64| micros.div_euclid(unit_us) * unit_us;
    let c = Calendar::of(micros);
    let year_start = |year: i64| (year, 1);
    let (year, month) = match field {
        F::Microseconds => return Ok(micros),
        F::Milliseconds => return Ok(floor(1000)),
        F::Second => return Ok(floor(USECS_PER_SEC)),
        F::Minute => return Ok(floor(USECS_PER_MINUTE)),
        F::Hour => return Ok(floor(60 * USECS_PER_MINUTE)),
        F::Day => return Ok(floor(USECS_PER_DAY)),
        F::Week => return Ok((c.days - c.iso_dow() + 1 - PG_EPOCH_DAYS) * USECS_PER_DAY),
        F::Month => (c.year, c.month),
        F::Quarter => (c.year, (c.month - 1) / 3 * 3 + 1),
        F::Year => year_start(c.year),
        F::Decade => year_start(c.year.div_euclid(10) * 10),
        F::Century => year_start(((c.year + 99).div_euclid(100) - 1) * 100 + 1),
        F::Millennium => year_start(((c.year + 999).div_euclid(1000) - 1) * 1000 + 1),
        F::Timezone | F::TimezoneHour | F::TimezoneMinute => {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!("unit \"{unit}\" not supported for type timestamp"),
            ));
        }
        _ => return Err(unit_not_recognized(unit)),
    };
    Ok((days_from_civil(year, month, 1) - PG_EPOCH_DAYS) * USECS_PER_DAY)
}

/// The field `unit` names, or 22023.
pub(crate) fn field_named(unit: &str) -> SqlResult<DateField> {
    DateField::by_name(unit).ok_or_else(|| unit_not_recognized(unit))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::datetime::parse_timestamp;

    fn at(text: &str) -> i64 {
        parse_timestamp(text, false).expect("a timestamp")
    }

    #[test]
    fn iso_weeks_cross_years_as_iso_8601_has_them() {
        // 2021-01-03 (a Sunday) is in week 53 of 2020; 2024-12-30 (a Monday) in week 1 of 2025.
        assert_eq!(finite_field(at("2021-01-03"), DateField::Week), (53, 0));
        assert_eq!(
            finite_field(at("2021-01-03"), DateField::IsoYear),
            (2020, 0)
        );
        assert_eq!(finite_field(at("2024-12-30"), DateField::Week), (1, 0));
        assert_eq!(
            finite_field(at("2024-12-30"), DateField::IsoYear),
            (2025, 0)
        );
        assert_eq!(finite_field(at("2024-12-30"), DateField::Dow), (1, 0));
        assert_eq!(finite_field(at("2024-12-29"), DateField::IsoDow), (7, 0));
    }

    #[test]
    fn truncation_is_idempotent_and_never_later() {
        let instants = [
            "2024-08-17 13:14:15.678912",
            "1999-12-31 23:59:59.999999",
            "0001-01-01",
            "2000-02-29 12:00",
        ];
        let fields = [
            DateField::Microseconds,
            DateField::Milliseconds,
            DateField::Second,
            DateField::Minute,
            DateField::Hour,
            DateField::Day,
            DateField::Week,
            DateField::Month,
            DateField::Quarter,
            DateField::Year,
            DateField::Decade,
            DateField::Century,
            DateField::Millennium,
        ];
        for text in instants {
            for field in fields {
                let t = truncate(at(text), field, "x").expect("a unit");
                assert!(t <= at(text), "{text} {field:?}");
                assert_eq!(
                    truncate(t, field, "x").expect("a unit"),
                    t,
                    "{text} {field:?}"
                );
            }
        }
    }
}
