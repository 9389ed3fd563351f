//! Tests of the wire formats: PostgreSQL's numeric_send layout on known values, round
//! trips in both formats for every type, and decoders that never panic on any bytes.

use proptest::prelude::*;

use super::*;
use crate::value::tests::{same_value, small_sql_type, typed_value};

fn binary(value: &Value, ty: &SqlType) -> Vec<u8> {
    value
        .to_wire(ty, WireFormat::Binary)
        .unwrap()
        .expect("not NULL")
}

/// numeric_send's header and digits as 16-bit words.
fn numeric_words(bytes: &[u8]) -> Vec<i32> {
    bytes
        .chunks(2)
        .map(|w| i32::from(u16::from_be_bytes([w[0], w[1]])))
        .collect()
}

#[test]
fn numeric_binary_matches_postgresql_layout() {
    let ty = SqlType::Numeric {
        precision: 38,
        scale: 3,
    };
    // SELECT 12345.678::numeric sent in binary by PostgreSQL: 3 digits, weight 1, positive,
    // dscale 3, digits 1 2345 6780.
    let v = Value::Numeric {
        scaled: 12_345_678,
        scale: 3,
    };
    assert_eq!(numeric_words(&binary(&v, &ty)), [3, 1, 0, 3, 1, 2345, 6780]);
    // 0.0001: one digit at weight -1.
    let v = Value::Numeric {
        scaled: 1,
        scale: 4,
    };
    assert_eq!(numeric_words(&binary(&v, &ty)), [1, 0xffff, 0, 4, 1]);
    // -1 at scale 0, and zero at scale 2 (no digits, the scale kept).
    let v = Value::Numeric {
        scaled: -1,
        scale: 0,
    };
    assert_eq!(numeric_words(&binary(&v, &ty)), [1, 0, 0x4000, 0, 1]);
    let v = Value::Numeric {
        scaled: 0,
        scale: 2,
    };
    assert_eq!(numeric_words(&binary(&v, &ty)), [0, 0, 0, 2]);
    // 10000000 (trailing zero digits dropped, weight 1).
    let v = Value::Numeric {
        scaled: 10_000_000,
        scale: 0,
    };
    assert_eq!(numeric_words(&binary(&v, &ty)), [1, 1, 0, 0, 1000]);
}

#[test]
fn fixed_size_types_take_their_width() {
    let ty = SqlType::Int;
    assert_eq!(binary(&Value::Int(-2), &ty), (-2i32).to_be_bytes());
    assert_eq!(
        binary(&Value::Int(7), &SqlType::SmallInt),
        7i16.to_be_bytes()
    );
    assert_eq!(binary(&Value::Int(7), &SqlType::BigInt), 7i64.to_be_bytes());
    assert_eq!(binary(&Value::Bool(true), &SqlType::Bool), [1]);
    assert_eq!(
        binary(&Value::Float(1.5), &SqlType::Real),
        1.5f32.to_be_bytes()
    );
    // An integer in a numeric column is cast first.
    let numeric = SqlType::Numeric {
        precision: 10,
        scale: 2,
    };
    assert_eq!(
        numeric_words(&binary(&Value::Int(5), &numeric)),
        [1, 0, 0, 2, 5]
    );
    // NULL is no bytes at all.
    assert_eq!(Value::Null.to_wire(&ty, WireFormat::Binary).unwrap(), None);
    // A value that does not fit the column's width is an error, not a wrap.
    let err = Value::Int(70_000)
        .to_wire(&SqlType::SmallInt, WireFormat::Binary)
        .unwrap_err();
    assert_eq!(err.sqlstate, sqlstate::NUMERIC_VALUE_OUT_OF_RANGE);
}

#[test]
fn bad_parameter_bytes_get_postgresqls_codes() {
    let err = Value::from_wire(&[0, 1, 2], WireFormat::Binary, &SqlType::Int).unwrap_err();
    assert_eq!(err.sqlstate, "22P03");
    assert!(err.message.contains("4 bytes"), "{}", err.message);
    let err = Value::from_wire(b"a\0b", WireFormat::Text, &SqlType::Text).unwrap_err();
    assert_eq!(err.sqlstate, "22021");
    let err = Value::from_wire(&[0xff, 0xfe], WireFormat::Binary, &SqlType::Text).unwrap_err();
    assert_eq!(err.sqlstate, "22021");
    assert!(err.message.contains("0xff"), "{}", err.message);
    let err = Value::from_wire(b"12x", WireFormat::Text, &SqlType::Int).unwrap_err();
    assert_eq!(err.sqlstate, sqlstate::INVALID_TEXT_REPRESENTATION);
    // NaN: ndigits 0, weight 0, sign 0xC000, dscale 0.
    let err = Value::numeric_from_binary(&[0, 0, 0, 0, 0xC0, 0, 0, 0]).unwrap_err();
    assert_eq!(err.sqlstate, sqlstate::FEATURE_NOT_SUPPORTED);
    // A digit above 9999.
    let err = Value::numeric_from_binary(&[0, 1, 0, 0, 0, 0, 0, 0, 0x27, 0x10]).unwrap_err();
    assert_eq!(err.sqlstate, "22P03");
    // 10^40 does not fit 38 digits.
    let err = Value::numeric_from_binary(&[0, 1, 0, 10, 0, 0, 0, 0, 0, 1]).unwrap_err();
    assert_eq!(err.sqlstate, sqlstate::NUMERIC_VALUE_OUT_OF_RANGE);
    // varchar(2) refuses a longer value sent in binary, as on assignment.
    let err = Value::from_wire(b"abc", WireFormat::Binary, &SqlType::Varchar(Some(2))).unwrap_err();
    assert_eq!(err.sqlstate, sqlstate::STRING_DATA_RIGHT_TRUNCATION);
}

#[test]
fn numeric_digits_past_the_display_scale_are_truncated() {
    // 1.23456 sent with dscale 2 (digits 1 2345 6000, weight 0): numeric_recv keeps 1.23.
    let bytes = [0, 3, 0, 0, 0, 0, 0, 2, 0, 1, 0x09, 0x29, 0x17, 0x70];
    assert_eq!(
        Value::numeric_from_binary(&bytes).unwrap(),
        Value::Numeric {
            scaled: 123,
            scale: 2
        }
    );
}

#[test]
fn oids_name_the_types_back() {
    for ty in [
        SqlType::SmallInt,
        SqlType::Int,
        SqlType::BigInt,
        SqlType::Bool,
        SqlType::Text,
        SqlType::Uuid,
        SqlType::Timestamp,
        SqlType::TimestampTz,
        SqlType::Date,
        SqlType::Real,
        SqlType::Double,
        SqlType::Bytea,
    ] {
        assert_eq!(SqlType::from_pg_oid(ty.pg_oid()), Some(ty));
    }
    assert_eq!(SqlType::from_pg_oid(1043), Some(SqlType::Varchar(None)));
    assert_eq!(
        SqlType::from_pg_oid(NUMERIC_OID),
        Some(SqlType::NumericUnconstrained)
    );
    assert_eq!(SqlType::from_pg_oid(1186), Some(SqlType::Interval));
    assert_eq!(SqlType::from_pg_oid(114), None, "json");
    assert_eq!(SqlType::Varchar(Some(10)).pg_type_modifier(), 14);
    assert_eq!(
        SqlType::Numeric {
            precision: 10,
            scale: 2
        }
        .pg_type_modifier(),
        (10 << 16 | 2) + 4
    );
    assert_eq!(SqlType::BigInt.pg_type_size(), 8);
    assert_eq!(SqlType::Text.pg_type_size(), -1);
}

/// date_send's layout: the days since 2000-01-01 as a big-endian int4, infinity INT_MAX;
/// date_recv refuses a day outside the years held.
#[test]
fn date_binary_is_postgresql_s_int4_of_days() {
    let date = |text: &str| Value::from_text(text, &SqlType::Date).unwrap();
    assert_eq!(binary(&date("2000-01-02"), &SqlType::Date), [0, 0, 0, 1]);
    assert_eq!(binary(&date("1999-12-31"), &SqlType::Date), [0xff; 4]);
    assert_eq!(
        binary(&date("infinity"), &SqlType::Date),
        [0x7f, 0xff, 0xff, 0xff]
    );
    let far = 4_000_000i32.to_be_bytes();
    let error = Value::from_wire(&far, WireFormat::Binary, &SqlType::Date).unwrap_err();
    assert_eq!(
        (error.sqlstate, error.message.as_str()),
        ("22008", "date out of range")
    );
    assert_eq!(SqlType::Date.pg_type_size(), 4);
}

/// interval_send's layout: the microseconds as an int8, then the days and the months as
/// int4s.
#[test]
fn interval_binary_is_postgresql_s() {
    let interval =
        Value::from_text("1 year 2 mons 3 days 00:00:00.000004", &SqlType::Interval).unwrap();
    let bytes = binary(&interval, &SqlType::Interval);
    assert_eq!(bytes, [0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 14]);
    assert_eq!(
        Value::from_wire(&bytes, WireFormat::Binary, &SqlType::Interval).unwrap(),
        interval
    );
    let short = Value::from_wire(&bytes[..12], WireFormat::Binary, &SqlType::Interval).unwrap_err();
    assert_eq!(short.sqlstate, INVALID_BINARY_REPRESENTATION);
    assert_eq!(SqlType::Interval.pg_type_size(), 16);
}

/// Whether a decoded value is the one sent: NaNs by bits in binary; in text any NaN (the
/// text form has no sign or payload).
fn same_after(format: WireFormat, sent: &Value, got: &Value) -> bool {
    match (format, sent, got) {
        (WireFormat::Text, Value::Float(a), Value::Float(b)) if a.is_nan() => b.is_nan(),
        _ => same_value(sent, got),
    }
}

/// Whether the input functions read the output back: timestamps only within years 1 to
/// 9999 (hotpage's text input reads no BC years and no five-digit years, and the binary
/// input refuses them too, 22008, so that no value is stored that its text cannot
/// carry).
fn text_input_reads(value: &Value) -> bool {
    let Value::Timestamp(t) = value else {
        return true;
    };
    let bound = |text: &str| match Value::from_text(text, &SqlType::Timestamp) {
        Ok(Value::Timestamp(t)) => t,
        other => panic!("{text}: {other:?}"),
    };
    let first = bound("0001-01-01 00:00:00");
    let last = bound("9999-12-31 23:59:59.999999");
    (first..=last).contains(t) || *t == i64::MAX || *t == i64::MIN
}

/// Text with a NUL cannot be a parameter (PostgreSQL's text has none).
fn has_nul(value: &Value) -> bool {
    matches!(value, Value::Text(s) if s.contains('\0'))
}

proptest! {
    #[test]
    fn every_type_round_trips_in_both_formats((ty, value) in typed_value()) {
        prop_assume!(!has_nul(&value));
        for format in [WireFormat::Binary, WireFormat::Text] {
            let bytes = value.to_wire(&ty, format).unwrap().expect("not NULL");
            let back = Value::from_wire(&bytes, format, &ty);
            if !text_input_reads(&value) {
                if format == WireFormat::Binary {
                    let error = back.expect_err("an out-of-range timestamp was taken");
                    prop_assert_eq!(error.sqlstate, "22008");
                }
                continue;
            }
            let back = back.map_err(|e| TestCaseError::fail(format!("{format:?}: {e:?}")))?;
            prop_assert!(same_after(format, &value, &back), "{:?}: {:?} came back as {:?}", format, value, back);
        }
    }

    #[test]
    fn decoders_never_panic(ty in small_sql_type(), bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        let _ = Value::from_wire(&bytes, WireFormat::Binary, &ty);
        let _ = Value::from_wire(&bytes, WireFormat::Text, &ty);
        let _ = Value::numeric_from_binary(&bytes);
    }

    #[test]
    fn numeric_headers_never_panic(
        ndigits in any::<i16>(),
        weight in any::<i16>(),
        sign in prop_oneof![Just(0u16), Just(0x4000u16), any::<u16>()],
        dscale in prop_oneof![0u16..40, any::<u16>()],
        digits in proptest::collection::vec(prop_oneof![0u16..10000, any::<u16>()], 0..12),
    ) {
        let mut bytes = Vec::new();
        for word in [ndigits as u16, weight as u16, sign, dscale].into_iter().chain(digits) {
            bytes.extend_from_slice(&word.to_be_bytes());
        }
        if let Ok(Value::Numeric { scaled, scale }) = Value::numeric_from_binary(&bytes) {
            // Whatever decodes re-encodes to the same value.
            let again = encode_numeric(scaled, scale);
            prop_assert_eq!(decode_numeric(&again).unwrap(), (scaled, scale));
        }
    }
}
