//! Timestamps as microseconds since 2000-01-01 00:00:00 UTC (PostgreSQL's epoch): parsing
//! the ISO 8601 forms and printing PostgreSQL's ISO output style. The session time zone
//! is UTC, so `timestamp with time zone` prints with `+00`.

use crate::error::{SqlError, SqlResult, sqlstate};

/// Microseconds in a second.
pub(super) const USECS_PER_SEC: i64 = 1_000_000;

/// Microseconds in a day.
pub(super) const USECS_PER_DAY: i64 = 86_400 * USECS_PER_SEC;

/// Days from 1970-01-01 (the civil-date algorithm's epoch) to 2000-01-01.
pub(super) const PG_EPOCH_DAYS: i64 = 10_957;

/// PostgreSQL's `infinity` timestamp (its DT_NOEND).
pub(crate) const INFINITY: i64 = i64::MAX;

/// PostgreSQL's `-infinity` timestamp (its DT_NOBEGIN).
pub(crate) const NEG_INFINITY: i64 = i64::MIN;

/// The largest time-zone displacement PostgreSQL accepts, in seconds (15:59:59).
const ZONE_SECONDS_MAX: i64 = 15 * 3600 + 59 * 60 + 59;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub(super) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month = i64::from(month);
    let shifted_month = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * shifted_month + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The proleptic Gregorian (year, month, day) of a day count since 1970-01-01.
pub(super) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    // In range by construction: month 1..=12, day 1..=31.
    (year, month as u32, day as u32)
}

/// The calendar index of a timestamp in `part` (`year`, `quarter`, `month`, `week` or
/// `iso_week`), such that two timestamps' indexes differ by the part's boundaries between
/// them (T-SQL's DATEDIFF): years since year 0, quarters and months counted from year 0,
/// weeks that start on Sunday (DATEDIFF's weeks ignore `SET DATEFIRST`), and ISO weeks
/// that start on Monday. `None` for another part.
pub(crate) fn calendar_index(micros: i64, part: &str) -> Option<i64> {
    let days = micros.div_euclid(USECS_PER_DAY);
    match part {
        // 2000-01-01 (day 0) was a Saturday, so day 1 starts the first Sunday week.
        "week" => return Some((days + 6).div_euclid(7)),
        // ... and day 2 (2000-01-03) the first Monday week. An ISO week's boundary is its
        // Monday whatever ISO year it belongs to, so the count needs no week numbering.
        "iso_week" => return Some((days + 5).div_euclid(7)),
        _ => {}
    }
    let (year, month, _) = civil_from_days(days + PG_EPOCH_DAYS);
    let month0 = i64::from(month) - 1;
    match part {
        "year" => Some(year),
        "quarter" => Some(year * 4 + month0 / 3),
        "month" => Some(year * 12 + month0),
        _ => None,
    }
}

/// Whether `year` is a Gregorian leap year.
fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// Days in `month` (1..=12) of `year`.
pub(super) fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Why a timestamp text was refused.
enum Refusal {
    /// Not the syntax of a timestamp (22007).
    Syntax,
    /// A field out of range: month 13, February 30, hour 25 (22008).
    Range,
    /// A zone displacement past ±15:59:59.
    Zone,
}

/// A timestamp from the wire's binary format: the years text input takes (1..=9999) or
/// an infinity; any other is 22008, as PostgreSQL's timestamp_recv refuses what is past its
/// range (a value stored past 9999 could not be read back from its own text).
pub(crate) fn check_timestamp_range(micros: i64) -> SqlResult<i64> {
    let first = (days_from_civil(1, 1, 1) - PG_EPOCH_DAYS) * USECS_PER_DAY;
    let end = (days_from_civil(10_000, 1, 1) - PG_EPOCH_DAYS) * USECS_PER_DAY;
    if micros == INFINITY || micros == NEG_INFINITY || (first..end).contains(&micros) {
        return Ok(micros);
    }
    Err(SqlError::new(
        sqlstate::DATETIME_FIELD_OVERFLOW,
        "timestamp out of range",
    ))
}

/// Parses a timestamp: `YYYY-MM-DD`, then optionally ` HH:MM[:SS[.ffffff]]` (or with `T`),
/// then optionally a zone `Z`, `UTC`, `±HH`, `±HHMM` or `±HH:MM`; also `infinity`,
/// `-infinity` and `epoch`. With `with_zone` the zone converts the time to UTC; without
/// it the zone is ignored, as PostgreSQL ignores it for `timestamp without time zone`.
/// Years 1..=9999; fractions past microseconds round.
pub(crate) fn parse_timestamp(text: &str, with_zone: bool) -> SqlResult<i64> {
    let type_name = if with_zone {
        "timestamp with time zone"
    } else {
        "timestamp without time zone"
    };
    let trimmed = text.trim();
    match trimmed.to_ascii_lowercase().as_str() {
        "infinity" | "+infinity" => return Ok(INFINITY),
        "-infinity" => return Ok(NEG_INFINITY),
        "epoch" => return Ok(-PG_EPOCH_DAYS * USECS_PER_DAY),
        _ => {}
    }
    parse_fields(trimmed, with_zone).map_err(|refusal| match refusal {
        Refusal::Syntax => SqlError::new(
            sqlstate::INVALID_DATETIME_FORMAT,
            format!("invalid input syntax for type {type_name}: \"{text}\""),
        ),
        Refusal::Range => SqlError::new(
            sqlstate::DATETIME_FIELD_OVERFLOW,
            format!("date/time field value out of range: \"{text}\""),
        ),
        Refusal::Zone => SqlError::new(
            sqlstate::DATETIME_FIELD_OVERFLOW,
            format!("time zone displacement out of range: \"{text}\""),
        ),
    })
}

/// A cursor over the ASCII bytes of a timestamp text.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    /// The next byte, if any, without consuming it.
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Consumes `byte` if it is next.
    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.at += 1;
        }
        found
    }

    /// Consumes `byte` or refuses the syntax.
    fn require(&mut self, byte: u8) -> Result<(), Refusal> {
        if self.eat(byte) {
            Ok(())
        } else {
            Err(Refusal::Syntax)
        }
    }

    /// Consumes a run of `min..=max` digits and returns them.
    fn digits(&mut self, min: usize, max: usize) -> Result<&[u8], Refusal> {
        let start = self.at;
        while self.at - start < max && self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        let run = self.bytes.get(start..self.at).ok_or(Refusal::Syntax)?;
        if run.len() < min {
            return Err(Refusal::Syntax);
        }
        Ok(run)
    }

    /// Consumes `min..=max` digits as a number.
    fn number(&mut self, min: usize, max: usize) -> Result<i64, Refusal> {
        let run = self.digits(min, max)?;
        Ok(run
            .iter()
            .fold(0i64, |acc, b| acc * 10 + i64::from(b - b'0')))
    }

    /// Consumes spaces.
    fn skip_spaces(&mut self) {
        while self.eat(b' ') {}
    }

    /// Whether everything has been consumed.
    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }
}

/// The fields of a timestamp text (already trimmed), as microseconds since 2000-01-01.
fn parse_fields(text: &str, with_zone: bool) -> Result<i64, Refusal> {
    let mut cursor = Cursor {
        bytes: text.as_bytes(),
        at: 0,
    };
    let year = cursor.number(4, 6)?;
    cursor.require(b'-')?;
    let month = cursor.number(1, 2)?;
    cursor.require(b'-')?;
    let day = cursor.number(1, 2)?;
    if !(1..=9999).contains(&year) || !(1..=12).contains(&month) {
        return Err(Refusal::Range);
    }
    // In range by the checks just above.
    let (month, day) = (
        month as u32,
        u32::try_from(day).map_err(|_| Refusal::Range)?,
    );
    if day < 1 || day > days_in_month(year, month) {
        return Err(Refusal::Range);
    }
    let mut time_us = 0;
    let mut zone_seconds = 0;
    if !cursor.done() {
        if !(cursor.eat(b'T') || cursor.eat(b't') || cursor.eat(b' ')) {
            return Err(Refusal::Syntax);
        }
        cursor.skip_spaces();
        time_us = parse_time(&mut cursor)?;
        cursor.skip_spaces();
        zone_seconds = parse_zone(&mut cursor)?;
        if !cursor.done() {
            return Err(Refusal::Syntax);
        }
    }
    let days = days_from_civil(year, month, day) - PG_EPOCH_DAYS;
    let local = days * USECS_PER_DAY + time_us;
    Ok(if with_zone {
        local - zone_seconds * USECS_PER_SEC
    } else {
        local
    })
}

/// `HH:MM[:SS[.fff…]]` as microseconds into the day (24:00:00 allowed, as in PostgreSQL).
fn parse_time(cursor: &mut Cursor<'_>) -> Result<i64, Refusal> {
    let hour = cursor.number(1, 2)?;
    cursor.require(b':')?;
    let minute = cursor.number(2, 2)?;
    let mut second = 0;
    let mut fraction_us = 0;
    if cursor.eat(b':') {
        second = cursor.number(2, 2)?;
        if cursor.eat(b'.') {
            let digits = cursor.digits(1, usize::MAX)?;
            fraction_us = fraction_micros(digits);
        }
    }
    // Second 60 is a leap second: PostgreSQL rolls it into the next minute.
    if hour > 24 || minute > 59 || second > 60 {
        return Err(Refusal::Range);
    }
    let time_us = ((hour * 60 + minute) * 60 + second) * USECS_PER_SEC + fraction_us;
    if hour == 24 && time_us != 24 * 3600 * USECS_PER_SEC {
        return Err(Refusal::Range);
    }
    Ok(time_us)
}

/// A fraction's digits as microseconds, rounded as PostgreSQL rounds them.
fn fraction_micros(digits: &[u8]) -> i64 {
    // PostgreSQL reads the fraction as a double and rounds its microseconds with rint():
    // `.0000005` is just below a half as a double (0 µs), `.0000015` just above (2 µs).
    // The same operations here give the same microsecond.
    let text: String = std::iter::once('.')
        .chain(digits.iter().map(|&b| char::from(b)))
        .collect();
    let fraction: f64 = text.parse().unwrap_or(0.0);
    (fraction * 1_000_000.0).round_ties_even() as i64
}

/// An optional zone: `Z`, `UTC`, `±HH`, `±HHMM`, `±HH:MM` as seconds east of UTC.
fn parse_zone(cursor: &mut Cursor<'_>) -> Result<i64, Refusal> {
    let rest = cursor.bytes.get(cursor.at..).unwrap_or(&[]);
    if rest.eq_ignore_ascii_case(b"z") || rest.eq_ignore_ascii_case(b"utc") {
        cursor.at = cursor.bytes.len();
        return Ok(0);
    }
    let sign = match cursor.peek() {
        None => return Ok(0),
        Some(b'+') => 1,
        Some(b'-') => -1,
        Some(_) => return Err(Refusal::Syntax),
    };
    cursor.at += 1;
    let hours;
    let mut minutes = 0;
    let run = cursor.digits(1, 4)?;
    match run.len() {
        1 | 2 => {
            hours = run.iter().fold(0, |acc, b| acc * 10 + i64::from(b - b'0'));
            if cursor.eat(b':') {
                minutes = cursor.number(2, 2)?;
            }
        }
        4 => {
            let value = run.iter().fold(0, |acc, b| acc * 10 + i64::from(b - b'0'));
            (hours, minutes) = (value / 100, value % 100);
        }
        _ => return Err(Refusal::Syntax),
    }
    if minutes > 59 {
        return Err(Refusal::Range);
    }
    let seconds = hours * 3600 + minutes * 60;
    if seconds > ZONE_SECONDS_MAX {
        return Err(Refusal::Zone);
    }
    Ok(sign * seconds)
}

/// PostgreSQL's ISO output: `2024-01-02 03:04:05[.ffffff]` with trailing fraction zeros
/// trimmed, `+00` appended for `with_zone` (the session zone is UTC), ` BC` for years
/// before 1, `infinity`/`-infinity` for the two infinite timestamps.
pub(crate) fn format_timestamp(micros: i64, with_zone: bool) -> String {
    match micros {
        INFINITY => return "infinity".to_string(),
        NEG_INFINITY => return "-infinity".to_string(),
        _ => {}
    }
    let days = micros.div_euclid(USECS_PER_DAY) + PG_EPOCH_DAYS;
    let time_us = micros.rem_euclid(USECS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let seconds = time_us / USECS_PER_SEC;
    let fraction = time_us % USECS_PER_SEC;
    let (hour, minute, second) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    // Year 0 of the proleptic calendar is 1 BC.
    let (shown_year, era) = if year <= 0 {
        (1 - year, " BC")
    } else {
        (year, "")
    };
    let mut text = format!("{shown_year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}");
    if fraction != 0 {
        let digits = format!("{fraction:06}");
        text.push('.');
        text.push_str(digits.trim_end_matches('0'));
    }
    if with_zone {
        text.push_str("+00");
    }
    text.push_str(era);
    text
}

/// Whether a timestamp is neither `infinity` nor `-infinity`.
pub(super) fn is_finite_timestamp(micros: i64) -> bool {
    micros != INFINITY && micros != NEG_INFINITY
}

/// Whether a date is neither `infinity` nor `-infinity`.
pub(super) fn is_finite_date(days: i32) -> bool {
    days != DATE_INFINITY && days != DATE_NEG_INFINITY
}

/// PostgreSQL's `infinity` date (its DATEVAL_NOEND).
pub(crate) const DATE_INFINITY: i32 = i32::MAX;

/// PostgreSQL's `-infinity` date (its DATEVAL_NOBEGIN).
pub(crate) const DATE_NEG_INFINITY: i32 = i32::MIN;

/// The first and last finite dates hotpage holds, as days since 2000-01-01: years 1 to
/// 9999, the years its timestamps hold, so that every date is also a timestamp.
pub(crate) fn date_range() -> std::ops::RangeInclusive<i64> {
    (days_from_civil(1, 1, 1) - PG_EPOCH_DAYS)..=(days_from_civil(9999, 12, 31) - PG_EPOCH_DAYS)
}

/// A finite day count since 2000-01-01 as a date: a day outside years 1 to 9999 is 22008
/// `date out of range` (PostgreSQL's message; its range is wider). Never an infinity:
/// arithmetic that lands on `i32::MAX` is out of range, not `infinity`.
pub(crate) fn checked_date(days: i64) -> SqlResult<i32> {
    i32::try_from(days)
        .ok()
        .filter(|_| date_range().contains(&days))
        .ok_or_else(|| SqlError::new(sqlstate::DATETIME_FIELD_OVERFLOW, "date out of range"))
}

/// `make_date`'s date of a year, month and day: a day that does not exist, or a year
/// outside 1 to 9999 (PostgreSQL reads years below 1 as BC and goes past 9999), is 22008
/// `date field value out of range: 2023-02-29`, as PostgreSQL words it.
pub(crate) fn make_date(year: i64, month: i64, day: i64) -> SqlResult<i32> {
    let month_ok = u32::try_from(month).ok().filter(|m| (1..=12).contains(m));
    let day_ok = u32::try_from(day).ok();
    match (month_ok, day_ok) {
        (Some(m), Some(d))
            if (1..=9999).contains(&year) && d >= 1 && d <= days_in_month(year, m) =>
        {
            checked_date(days_from_civil(year, m, d) - PG_EPOCH_DAYS)
        }
        _ => Err(SqlError::new(
            sqlstate::DATETIME_FIELD_OVERFLOW,
            format!("date field value out of range: {year}-{month:02}-{day:02}"),
        )),
    }
}

/// Whether `days` is a date hotpage holds: finite in years 1 to 9999, or an infinity
/// (what the codecs accept from storage).
pub(crate) fn date_is_valid(days: i32) -> bool {
    days == DATE_INFINITY || days == DATE_NEG_INFINITY || date_range().contains(&i64::from(days))
}

/// Parses a date: a timestamp's text (`YYYY-MM-DD`, a time and zone after it are read,
/// checked and dropped, as PostgreSQL's date input drops them: the day is the one written,
/// so `2024-01-05 24:00` is January 5), `infinity`, `-infinity` or `epoch`. Bad text is
/// 22007 `invalid input syntax for type date`, a day that does not exist 22008.
pub(crate) fn parse_date(text: &str) -> SqlResult<i32> {
    let as_date = |mut err: SqlError| {
        err.message = err
            .message
            .replace("type timestamp without time zone", "type date");
        err
    };
    let micros = parse_timestamp(text, false).map_err(as_date)?;
    let trimmed = text.trim();
    // The written day alone: the text before a time (a time of 24:00 or a leap second
    // rolls the timestamp into the next day).
    let day_end = trimmed.find([' ', 'T', 't']).unwrap_or(trimmed.len());
    let day = match trimmed.get(..day_end) {
        Some(day) if day_end < trimmed.len() && micros != INFINITY && micros != NEG_INFINITY => {
            parse_timestamp(day, false).map_err(as_date)?
        }
        _ => micros,
    };
    timestamp_to_date(day)
}

/// The day of a timestamp (the session zone is UTC, so a timestamptz's day too); the
/// infinite timestamps are the infinite dates. A day outside years 1 to 9999 (a
/// timestamp's text can roll past 9999-12-31, and a zone back before 0001-01-01) is 22008
/// `date out of range`: no such date is ever stored, since the codecs refuse it.
pub(crate) fn timestamp_to_date(micros: i64) -> SqlResult<i32> {
    match micros {
        INFINITY => Ok(DATE_INFINITY),
        NEG_INFINITY => Ok(DATE_NEG_INFINITY),
        _ => checked_date(micros.div_euclid(USECS_PER_DAY)),
    }
}

/// The date's midnight as a timestamp; the infinite dates are the infinite timestamps.
pub(crate) fn date_to_timestamp(days: i32) -> i64 {
    match days {
        DATE_INFINITY => INFINITY,
        DATE_NEG_INFINITY => NEG_INFINITY,
        _ => i64::from(days) * USECS_PER_DAY,
    }
}

/// PostgreSQL's ISO output of a date: `2024-01-02`, `infinity`, `-infinity`.
pub(crate) fn format_date(days: i32) -> String {
    match days {
        DATE_INFINITY => "infinity".to_string(),
        DATE_NEG_INFINITY => "-infinity".to_string(),
        _ => {
            let (year, month, day) = civil_from_days(i64::from(days) + PG_EPOCH_DAYS);
            format!("{year:04}-{month:02}-{day:02}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> i64 {
        parse_timestamp(text, true).unwrap()
    }

    #[test]
    fn epoch_and_known_instants() {
        assert_eq!(parse("2000-01-01"), 0);
        assert_eq!(parse("2000-01-01 00:00:01"), USECS_PER_SEC);
        assert_eq!(parse("1999-12-31 23:59:59.5"), -USECS_PER_SEC / 2);
        assert_eq!(parse("epoch"), -946_684_800 * USECS_PER_SEC);
        assert_eq!(parse("1970-01-01 00:00:00Z"), -946_684_800 * USECS_PER_SEC);
        assert_eq!(parse("2024-01-02T03:04:05"), parse("2024-01-02 03:04:05"));
        assert_eq!(
            parse("2024-01-02 03:04:05+02"),
            parse("2024-01-02 01:04:05")
        );
        assert_eq!(
            parse("2024-01-02 03:04:05 -01:30"),
            parse("2024-01-02 04:34:05")
        );
        assert_eq!(
            parse("2024-01-02 03:04:05+0130"),
            parse("2024-01-02 01:34:05")
        );
        assert_eq!(
            parse("2024-01-02 03:04:05 UTC"),
            parse("2024-01-02 03:04:05")
        );
        assert_eq!(parse("2024-01-02 03:04"), parse("2024-01-02 03:04:00"));
        assert_eq!(parse("2024-01-01 24:00:00"), parse("2024-01-02"));
        // PostgreSQL 15.18 gives 03:04:05 here (see the fractions test).
        assert_eq!(
            parse("2024-01-02 03:04:05.0000005"),
            parse("2024-01-02 03:04:05")
        );
        assert_eq!(
            parse("2024-01-02 03:04:05.0000015"),
            parse("2024-01-02 03:04:05.000002")
        );
        assert_eq!(parse("infinity"), INFINITY);
        assert_eq!(parse("-infinity"), NEG_INFINITY);
        // Without a zone the displacement is ignored.
        assert_eq!(
            parse_timestamp("2024-01-02 03:04:05+02", false).unwrap(),
            parse("2024-01-02 03:04:05")
        );
    }

    #[test]
    fn formats_like_postgresql() {
        let at = parse("2024-01-02 03:04:05");
        assert_eq!(format_timestamp(at, false), "2024-01-02 03:04:05");
        assert_eq!(format_timestamp(at, true), "2024-01-02 03:04:05+00");
        assert_eq!(
            format_timestamp(at + 500_000, false),
            "2024-01-02 03:04:05.5"
        );
        assert_eq!(
            format_timestamp(at + 123_456, false),
            "2024-01-02 03:04:05.123456"
        );
        assert_eq!(
            format_timestamp(parse("0001-01-01"), false),
            "0001-01-01 00:00:00"
        );
        assert_eq!(
            format_timestamp(parse("0001-01-01") - 1, true),
            "0001-12-31 23:59:59.999999+00 BC"
        );
        assert_eq!(format_timestamp(INFINITY, true), "infinity");
        assert_eq!(format_timestamp(NEG_INFINITY, false), "-infinity");
        // Every i64 prints without panicking.
        format_timestamp(i64::MIN + 1, true);
        format_timestamp(i64::MAX - 1, true);
    }

    #[test]
    fn refuses_bad_text_with_postgresql_codes() {
        for bad in [
            "",
            "2024",
            "2024-01",
            "2024-01-02 03",
            "2024/01/02",
            "2024-01-02 03:04:05 PST",
            "2024-01-02x",
            "24-01-02",
            "2024-01-02 03:04:05.",
            "2024-01-02 03:04:05+",
        ] {
            let err = parse_timestamp(bad, true).unwrap_err();
            assert_eq!(err.sqlstate, sqlstate::INVALID_DATETIME_FORMAT, "{bad}");
        }
        let err = parse_timestamp("abc", false).unwrap_err();
        assert_eq!(
            err.message,
            "invalid input syntax for type timestamp without time zone: \"abc\""
        );
        for bad in [
            "2023-02-29",
            "2024-02-30",
            "2024-13-01",
            "2024-00-10",
            "0000-01-01",
            "2024-01-02 25:00:00",
            "2024-01-02 24:00:01",
            "2024-01-02 10:60:00",
            "2024-04-31",
            "2024-01-02 03:04:05+16",
        ] {
            let err = parse_timestamp(bad, true).unwrap_err();
            assert_eq!(err.sqlstate, sqlstate::DATETIME_FIELD_OVERFLOW, "{bad}");
        }
        assert_eq!(
            parse_timestamp("2023-02-29", true).unwrap_err().message,
            "date/time field value out of range: \"2023-02-29\""
        );
        assert!(parse_timestamp("2024-02-29", true).is_ok());
        assert!(parse_timestamp("2000-02-29", true).is_ok());
        assert!(parse_timestamp("1900-02-29", true).is_err());
    }

    /// Fractions past microseconds round as PostgreSQL 15.18 rounds them (its outputs, for
    /// the same inputs): half to even on the double the digits read as. Rounding half up
    /// at the seventh digit gave .000001 for .0000005 (PostgreSQL: .000000).
    #[test]
    fn fractions_past_microseconds_round_as_postgresql_rounds_them() {
        for (fraction, micros) in [
            ("0000005", 0),
            ("0000015", 2),
            ("0000025", 2),
            ("1234565", 123_456),
            ("9999995", 1_000_000),
            ("5", 500_000),
            ("123456", 123_456),
        ] {
            assert_eq!(fraction_micros(fraction.as_bytes()), micros, ".{fraction}");
        }
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(
            micros in parse("0001-01-01")..parse("9999-12-31 23:59:59.999999"),
        ) {
            let text = format_timestamp(micros, true);
            prop_assert_eq!(parse_timestamp(&text, true)?, micros);
            let text = format_timestamp(micros, false);
            prop_assert_eq!(parse_timestamp(&text, false)?, micros);
        }

        #[test]
        fn civil_days_round_trip(days in -4_000_000i64..4_000_000) {
            let (year, month, day) = civil_from_days(days);
            prop_assert!((1..=12).contains(&month));
            prop_assert!(day >= 1 && day <= days_in_month(year, month));
            prop_assert_eq!(days_from_civil(year, month, day), days);
        }

        #[test]
        fn parse_never_panics(text in "\\PC{0,40}") {
            let _ = parse_timestamp(&text, true);
            let _ = parse_date(&text);
        }

        #[test]
        fn dates_format_then_parse_round_trip(days in date_range()) {
            let days = i32::try_from(days).expect("in range");
            let text = format_date(days);
            prop_assert_eq!(parse_date(&text)?, days);
            prop_assert_eq!(timestamp_to_date(date_to_timestamp(days))?, days);
            prop_assert!(date_is_valid(days));
        }

        /// Any time of a day is that day, before and after 2000-01-01.
        #[test]
        fn a_timestamp_s_date_is_its_day(micros in parse("0001-01-01")..parse("9999-12-31 23:59:59.999999")) {
            let days = timestamp_to_date(micros)?;
            prop_assert!(date_to_timestamp(days) <= micros);
            prop_assert!(micros - date_to_timestamp(days) < USECS_PER_DAY);
        }
    }

    #[test]
    fn dates_read_and_print_as_postgresql_s() {
        assert_eq!(parse_date("2000-01-01").unwrap(), 0);
        assert_eq!(parse_date("1999-12-31 23:59:59").unwrap(), -1);
        assert_eq!(
            parse_date(" 2024-1-5 ").unwrap(),
            parse_date("2024-01-05").unwrap()
        );
        assert_eq!(format_date(parse_date("epoch").unwrap()), "1970-01-01");
        assert_eq!(format_date(parse_date("0001-01-01").unwrap()), "0001-01-01");
        assert_eq!(parse_date("Infinity").unwrap(), DATE_INFINITY);
        assert_eq!(format_date(DATE_NEG_INFINITY), "-infinity");
        let bad = parse_date("2024-02-30").unwrap_err();
        assert_eq!(bad.sqlstate, sqlstate::DATETIME_FIELD_OVERFLOW);
        let bad = parse_date("soon").unwrap_err();
        assert_eq!(bad.sqlstate, sqlstate::INVALID_DATETIME_FORMAT);
        assert_eq!(bad.message, "invalid input syntax for type date: \"soon\"");
    }

    #[test]
    fn dates_stop_at_years_1_and_9999() {
        let (first, last) = (*date_range().start(), *date_range().end());
        assert_eq!(format_date(first as i32), "0001-01-01");
        assert_eq!(format_date(last as i32), "9999-12-31");
        assert!(checked_date(first).is_ok() && checked_date(last).is_ok());
        for outside in [
            first - 1,
            last + 1,
            i64::from(DATE_INFINITY),
            i64::from(DATE_NEG_INFINITY),
        ] {
            let err = checked_date(outside).unwrap_err();
            assert_eq!(err.message, "date out of range");
            assert!(!date_is_valid(outside as i32) || outside.abs() >= i64::from(i32::MAX));
        }
        assert_eq!(make_date(9999, 12, 31).unwrap(), last as i32);
        assert_eq!(
            make_date(10_000, 1, 1).unwrap_err().message,
            "date field value out of range: 10000-01-01"
        );
        // The written day, not the day a time of 24:00 rolls into; past 9999 is refused.
        assert_eq!(
            parse_date("2024-01-05 24:00").unwrap(),
            parse_date("2024-01-05").unwrap()
        );
        assert_eq!(parse_date("9999-12-31 24:00").unwrap(), last as i32);
        let rolled = parse_timestamp("9999-12-31 24:00", false).unwrap();
        assert_eq!(
            timestamp_to_date(rolled).unwrap_err().message,
            "date out of range"
        );
        assert_eq!(
            make_date(2023, 2, 29).unwrap_err().message,
            "date field value out of range: 2023-02-29"
        );
        assert!(make_date(2024, 2, 29).is_ok());
    }
}
