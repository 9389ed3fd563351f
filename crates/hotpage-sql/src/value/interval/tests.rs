//! Intervals against PostgreSQL 15's answers for the same input.

use proptest::prelude::*;

use super::*;
use crate::value::datetime::INFINITY;

fn iv(text: &str) -> Interval {
    parse_interval(text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
}

fn shown(text: &str) -> String {
    format_interval(&iv(text))
}

#[test]
fn reads_and_prints_as_postgresql() {
    for (input, output) in [
        ("1.5 years", "1 year 6 mons"),
        ("1.5 mons", "1 mon 15 days"),
        ("1.5 days", "1 day 12:00:00"),
        ("1.5 weeks", "10 days 12:00:00"),
        ("5", "00:00:05"),
        ("1 2:03:04", "1 day 02:03:04"),
        ("-1 day +2 hours", "-1 days +02:00:00"),
        ("1 day ago", "-1 days"),
        ("@ 3 hours 2 mins ago", "-03:02:00"),
        ("1day", "1 day"),
        ("0", "00:00:00"),
        ("-00:00:01.5", "-00:00:01.5"),
        ("1 mon -1 day", "1 mon -1 days"),
        (
            "-1 year -2 mons +3 days -04:05:06",
            "-1 years -2 mons +3 days -04:05:06",
        ),
        ("100 hours", "100:00:00"),
        ("1 millennium 2 centuries 3 decades", "1230 years"),
        ("1 YEAR 2 Months", "1 year 2 mons"),
    ] {
        assert_eq!(shown(input), output, "{input}");
    }
}

#[test]
fn refuses_what_postgresql_refuses() {
    for bad in [
        "",
        "1 2",
        "day",
        "1 fortnight",
        "P1D",
        "1e3 days",
        "infinity",
    ] {
        let err = parse_interval(bad).expect_err(bad);
        assert_eq!(err.sqlstate, sqlstate::INVALID_DATETIME_FORMAT, "{bad}");
        assert_eq!(
            err.message,
            format!("invalid input syntax for type interval: \"{bad}\"")
        );
    }
    let err = parse_interval("3000000000 days").unwrap_err();
    assert_eq!(err.sqlstate, sqlstate::INTERVAL_FIELD_OVERFLOW);
}

#[test]
fn arithmetic_is_postgresql_s() {
    assert_eq!(iv("1 mon").cmp_span(&iv("30 days")), Ordering::Equal);
    assert_eq!(iv("1 day").cmp_span(&iv("23:59:59")), Ordering::Greater);
    let times = |text: &str, factor: f64| format_interval(&iv(text).scaled(factor, false).unwrap());
    let over = |text: &str, divisor: f64| format_interval(&iv(text).scaled(divisor, true).unwrap());
    assert_eq!(times("1 day", 1.5), "1 day 12:00:00");
    assert_eq!(over("1 mon", 3.0), "10 days");
    assert_eq!(over("1 day", 7.0), "03:25:42.857143");
    assert_eq!(iv("1 day").scaled(0.0, true).unwrap_err().sqlstate, "22012");
    assert_eq!(
        format_interval(&iv("1 day 2 hours").negated().unwrap()),
        "-1 days -02:00:00"
    );
    let at = |text: &str| super::super::datetime::parse_timestamp(text, false).unwrap();
    let plus = |ts: &str, i: &str, negate: bool| {
        super::super::datetime::format_timestamp(
            timestamp_plus(at(ts), &iv(i), negate).unwrap(),
            false,
        )
    };
    assert_eq!(plus("2024-01-31", "1 mon", false), "2024-02-29 00:00:00");
    assert_eq!(
        plus("2024-03-31 10:00", "1 mon 1 day 1 hour", true),
        "2024-02-28 09:00:00"
    );
    assert_eq!(plus("2023-01-31", "1 mon", false), "2023-02-28 00:00:00");
    let far = timestamp_plus(at("9999-12-31"), &iv("1 day"), false).unwrap_err();
    assert_eq!(far.message, "timestamp out of range");
    assert_eq!(
        timestamp_plus(INFINITY, &iv("1 day"), true).unwrap(),
        INFINITY
    );
    let between = timestamp_minus(at("2024-03-01"), at("2024-01-01 12:00")).unwrap();
    assert_eq!(format_interval(&between), "59 days 12:00:00");
    assert!(timestamp_minus(INFINITY, 0).is_err());
}

#[test]
fn age_as_postgresql() {
    let at = |text: &str| super::super::datetime::parse_timestamp(text, false).unwrap();
    let age_of = |a: &str, b: &str| format_interval(&age(at(a), at(b)).unwrap());
    assert_eq!(age_of("2024-03-15", "2023-01-20"), "1 year 1 mon 26 days");
    assert_eq!(
        age_of("2023-01-20", "2024-03-15"),
        "-1 years -1 mons -26 days"
    );
    assert_eq!(age_of("2024-03-01", "2024-01-31 12:00"), "1 mon 12:00:00");
    assert_eq!(
        age_of("2024-01-31", "2024-03-01 10:00:00.5"),
        "-1 mons -1 days -10:00:00.5"
    );
    assert!(age(INFINITY, 0).is_err());
}

#[test]
fn justify_as_postgresql() {
    let j = |text: &str, f: fn(&Interval) -> SqlResult<Interval>| {
        format_interval(&f(&iv(text)).unwrap())
    };
    assert_eq!(j("27 hours", Interval::justify_hours), "1 day 03:00:00");
    assert_eq!(j("35 days", Interval::justify_days), "1 mon 5 days");
    assert_eq!(j("1 mon -1 hour", Interval::justify), "29 days 23:00:00");
    assert_eq!(j("-1 mon 1 hour", Interval::justify), "-29 days -23:00:00");
}

#[test]
fn extract_as_postgresql_15() {
    use crate::value::date_fields::DateField;
    let e = |field: DateField, text: &str| extract_interval(&iv(text), field, "x").unwrap();
    assert_eq!(
        e(DateField::Epoch, "1 year 1 mon 1 day 1 hour"),
        (34_239_600_000_000, 6)
    );
    assert_eq!(e(DateField::Second, "-1 min -2.5 sec"), (-2_500_000, 6));
    assert_eq!(e(DateField::Month, "14 mons"), (2, 0));
    assert_eq!(e(DateField::Day, "40 days"), (40, 0));
    let err = extract_interval(&iv("1 day"), DateField::Dow, "dow").unwrap_err();
    assert_eq!(err.message, "unit \"dow\" not supported for type interval");
}

proptest! {
    #[test]
    fn printed_intervals_read_back(
        months in -100_000i32..100_000,
        days in -100_000i32..100_000,
        micros in -10_000_000_000_000i64..10_000_000_000_000,
    ) {
        let interval = Interval { months, days, micros };
        let text = format_interval(&interval);
        prop_assert_eq!(parse_interval(&text)?, interval, "{}", text);
    }

    #[test]
    fn parse_never_panics(text in "\\PC{0,30}") {
        let _ = parse_interval(&text);
    }

    #[test]
    fn scaling_never_panics(months in any::<i32>(), days in any::<i32>(), micros in any::<i64>(), factor in any::<f64>()) {
        let interval = Interval { months, days, micros };
        let _ = interval.scaled(factor, false);
        let _ = interval.scaled(factor, true);
        let _ = interval.justify();
        let _ = timestamp_plus(0, &interval, false);
    }
}
