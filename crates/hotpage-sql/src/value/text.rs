//! PostgreSQL's text input and output functions for the scalar types: integers, booleans,
//! floats, uuid and bytea (numeric and timestamps have their own modules).

use std::fmt::Write as _;

use crate::error::{SqlError, SqlResult, sqlstate};

/// 22P02 `invalid input syntax for type T: "text"`, PostgreSQL's wording.
pub(crate) fn invalid_syntax(type_name: &str, text: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_TEXT_REPRESENTATION,
        format!("invalid input syntax for type {type_name}: \"{text}\""),
    )
}

/// 22003 `value "text" is out of range for type T` (integer input).
fn int_out_of_range(type_name: &str, text: &str) -> SqlError {
    SqlError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        format!("value \"{text}\" is out of range for type {type_name}"),
    )
}

/// Parses an integer as int2in/int4in/int8in do: surrounding whitespace, an optional
/// sign, decimal digits; out of `min..=max` is 22003.
pub(crate) fn parse_int(text: &str, type_name: &str, min: i64, max: i64) -> SqlResult<i64> {
    let trimmed = text.trim();
    let (negative, digits) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, trimmed.get(1..).unwrap_or("")),
        Some(b'+') => (false, trimmed.get(1..).unwrap_or("")),
        _ => (false, trimmed),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid_syntax(type_name, text));
    }
    let mut magnitude: i128 = 0;
    for b in digits.bytes() {
        magnitude = magnitude * 10 + i128::from(b - b'0');
        // Past every i64 already: stop before the i128 could overflow.
        if magnitude > i128::from(u64::MAX) {
            return Err(int_out_of_range(type_name, text));
        }
    }
    let value = if negative { -magnitude } else { magnitude };
    i64::try_from(value)
        .ok()
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| int_out_of_range(type_name, text))
}

/// Parses a boolean as boolin does: surrounding whitespace, case-insensitive, any unique
/// prefix of `true`/`false`/`yes`/`no`, `on`/`off` (`of` at least), `1`/`0`.
pub(crate) fn parse_bool(text: &str) -> SqlResult<bool> {
    let word = text.trim().to_ascii_lowercase();
    let is_prefix_of =
        |full: &str, min_len: usize| word.len() >= min_len && full.starts_with(&word);
    if is_prefix_of("true", 1) || is_prefix_of("yes", 1) || word == "on" || word == "1" {
        Ok(true)
    } else if is_prefix_of("false", 1)
        || is_prefix_of("no", 1)
        || is_prefix_of("off", 2)
        || word == "0"
    {
        Ok(false)
    } else {
        Err(invalid_syntax("boolean", text))
    }
}

/// Parses a float as float4in/float8in do: surrounding whitespace, decimal or exponent
/// form, `NaN`, `Infinity`/`inf` with optional sign (case-insensitive). A finite text whose
/// value overflows to infinity, or underflows to zero, is 22003 as in PostgreSQL.
pub(crate) fn parse_float(text: &str, real: bool) -> SqlResult<f64> {
    let type_name = if real { "real" } else { "double precision" };
    let trimmed = text.trim();
    let value = if real {
        trimmed.parse::<f32>().map(f64::from)
    } else {
        trimmed.parse::<f64>()
    }
    .map_err(|_| invalid_syntax(type_name, text))?;
    let lower = trimmed.to_ascii_lowercase();
    let names_special = lower.contains("inf") || lower.contains("nan");
    let mantissa = lower.split('e').next().unwrap_or("");
    let nonzero_mantissa = mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
    if !names_special && (value.is_infinite() || (value == 0.0 && nonzero_mantissa)) {
        return Err(SqlError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            format!("\"{trimmed}\" is out of range for type {type_name}"),
        ));
    }
    Ok(value)
}

/// float4out/float8out (PostgreSQL 12+): the shortest digits that read back exactly, in
/// exponent form (`1e+21`, `1.5e-05`) when the decimal exponent is below -4 or at least
/// 15 (6 for real), else plain (`0.0001`, `123456`); `NaN`, `Infinity`, `-Infinity`.
pub(crate) fn format_float(value: f64, real: bool) -> String {
    if value.is_nan() {
        return "NaN".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    // `{:e}` and `{}` both print the shortest round-trip digits.
    let (exponent_form, plain) = if real {
        let narrow = value as f32;
        (format!("{narrow:e}"), format!("{narrow}"))
    } else {
        (format!("{value:e}"), format!("{value}"))
    };
    let Some((mantissa, exponent)) = exponent_form.split_once('e') else {
        return plain;
    };
    let Ok(exponent) = exponent.parse::<i32>() else {
        return plain;
    };
    let plain_limit = if real { 6 } else { 15 };
    if (-4..plain_limit).contains(&exponent) {
        return plain;
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
}

/// Parses a uuid as uuid_in does: 32 hex digits (either case), optionally in braces, with
/// an optional hyphen after any group of four digits.
pub(crate) fn parse_uuid(text: &str) -> SqlResult<[u8; 16]> {
    let refuse = || invalid_syntax("uuid", text);
    let mut rest = text.as_bytes();
    let braces = rest.first() == Some(&b'{');
    if braces {
        rest = rest.get(1..).unwrap_or(&[]);
    }
    let mut uuid = [0u8; 16];
    for (i, byte) in uuid.iter_mut().enumerate() {
        let [hi, lo, tail @ ..] = rest else {
            return Err(refuse());
        };
        *byte = (hex_value(*hi).ok_or_else(refuse)? << 4) | hex_value(*lo).ok_or_else(refuse)?;
        rest = tail;
        if i % 2 == 1 && i < 15 && rest.first() == Some(&b'-') {
            rest = rest.get(1..).unwrap_or(&[]);
        }
    }
    if braces {
        rest = rest.strip_prefix(b"}").ok_or_else(refuse)?;
    }
    if !rest.is_empty() {
        return Err(refuse());
    }
    Ok(uuid)
}

/// uuid_out: lowercase, hyphenated 8-4-4-4-12.
pub(crate) fn format_uuid(uuid: &[u8; 16]) -> String {
    let mut text = String::with_capacity(36);
    for (i, byte) in uuid.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            text.push('-');
        }
        // Writing to a String cannot fail.
        let _ = write!(text, "{byte:02x}");
    }
    text
}

/// The value of a hex digit.
fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// Parses bytea input: the hex format `\x0102` (whitespace allowed between digit pairs),
/// or else the escape format (bytes as is, `\\` for a backslash, `\ooo` octal).
pub(crate) fn parse_bytea(text: &str) -> SqlResult<Vec<u8>> {
    match text.strip_prefix("\\x") {
        Some(hex) => parse_hex_bytea(hex),
        None => parse_escaped_bytea(text),
    }
}

/// The digits after `\x`, as PostgreSQL's hex_decode reads them.
fn parse_hex_bytea(hex: &str) -> SqlResult<Vec<u8>> {
    let bad_digit = |c: char| {
        SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("invalid hexadecimal digit: \"{c}\""),
        )
    };
    let mut bytes = Vec::with_capacity(hex.len() / 2);
    let mut chars = hex.chars();
    while let Some(c) = chars.next() {
        if matches!(c, ' ' | '\n' | '\t' | '\r') {
            continue;
        }
        let hi = u8::try_from(c)
            .ok()
            .and_then(hex_value)
            .ok_or_else(|| bad_digit(c))?;
        let Some(c2) = chars.next() else {
            return Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                "invalid hexadecimal data: odd number of digits",
            ));
        };
        let lo = u8::try_from(c2)
            .ok()
            .and_then(hex_value)
            .ok_or_else(|| bad_digit(c2))?;
        bytes.push((hi << 4) | lo);
    }
    Ok(bytes)
}

/// The escape format: a backslash starts `\\` or three octal digits `\ooo` (first 0-3).
fn parse_escaped_bytea(text: &str) -> SqlResult<Vec<u8>> {
    let input = text.as_bytes();
    let mut bytes = Vec::with_capacity(input.len());
    let mut at = 0;
    while let Some(&byte) = input.get(at) {
        if byte != b'\\' {
            bytes.push(byte);
            at += 1;
            continue;
        }
        match input.get(at + 1..at + 4) {
            _ if input.get(at + 1) == Some(&b'\\') => {
                bytes.push(b'\\');
                at += 2;
            }
            Some([a @ b'0'..=b'3', b @ b'0'..=b'7', c @ b'0'..=b'7']) => {
                bytes.push(((a - b'0') << 6) | ((b - b'0') << 3) | (c - b'0'));
                at += 4;
            }
            _ => return Err(invalid_syntax("bytea", text)),
        }
    }
    Ok(bytes)
}

/// byteaout in the hex format: `\x` and lowercase hex digits.
pub(crate) fn format_bytea(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(2 + bytes.len() * 2);
    text.push_str("\\x");
    for byte in bytes {
        let _ = write!(text, "{byte:02x}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn integers() {
        assert_eq!(parse_int(" -42 ", "integer", -100, 100), Ok(-42));
        assert_eq!(parse_int("+7", "integer", -100, 100), Ok(7));
        let err = parse_int("abc", "integer", -100, 100).unwrap_err();
        assert_eq!(err.sqlstate, sqlstate::INVALID_TEXT_REPRESENTATION);
        assert_eq!(
            err.message,
            "invalid input syntax for type integer: \"abc\""
        );
        let err = parse_int("99999", "smallint", -32768, 32767).unwrap_err();
        assert_eq!(err.sqlstate, sqlstate::NUMERIC_VALUE_OUT_OF_RANGE);
        assert_eq!(
            err.message,
            "value \"99999\" is out of range for type smallint"
        );
        let huge = "9".repeat(100);
        assert!(parse_int(&huge, "bigint", i64::MIN, i64::MAX).is_err());
        assert_eq!(
            parse_int("-9223372036854775808", "bigint", i64::MIN, i64::MAX),
            Ok(i64::MIN)
        );
        for bad in ["", "-", "1.5", "1e3", "1 2", "--1"] {
            assert!(
                parse_int(bad, "bigint", i64::MIN, i64::MAX).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn booleans() {
        for yes in ["t", "true", "TRUE", "tr", "y", "yes", "on", "1", " On "] {
            assert_eq!(parse_bool(yes), Ok(true), "{yes}");
        }
        for no in ["f", "false", "n", "no", "off", "of", "0", "FALSE"] {
            assert_eq!(parse_bool(no), Ok(false), "{no}");
        }
        for bad in ["", "o", "2", "truee", "yess", "onn"] {
            assert!(parse_bool(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_bool("maybe").unwrap_err().message,
            "invalid input syntax for type boolean: \"maybe\""
        );
    }

    #[test]
    fn floats_print_like_postgresql() {
        let cases = [
            (1e21, "1e+21"),
            (1e-5, "1e-05"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (1e14, "100000000000000"),
            (1e15, "1e+15"),
            (123.456, "123.456"),
            (0.1, "0.1"),
            (-0.0, "-0"),
            (0.0, "0"),
            (1e100, "1e+100"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (f64::MAX, "1.7976931348623157e+308"),
        ];
        for (value, text) in cases {
            assert_eq!(format_float(value, false), text);
        }
        assert_eq!(format_float(f64::from(0.1f32), true), "0.1");
        assert_eq!(format_float(123456.0, true), "123456");
        assert_eq!(format_float(1_000_000.0, true), "1e+06");
        assert_eq!(format_float(f64::from(1.5e-5f32), true), "1.5e-05");
    }

    #[test]
    fn floats_parse_like_postgresql() {
        assert_eq!(parse_float(" 1.5 ", false), Ok(1.5));
        assert_eq!(parse_float("-Infinity", false), Ok(f64::NEG_INFINITY));
        assert_eq!(parse_float("inf", true), Ok(f64::INFINITY));
        assert!(parse_float("NaN", false).unwrap().is_nan());
        assert_eq!(parse_float("0.1", true), Ok(f64::from(0.1f32)));
        assert_eq!(parse_float("1e3", false), Ok(1000.0));
        assert_eq!(parse_float("0", false), Ok(0.0));
        assert_eq!(parse_float("0e500", false), Ok(0.0));
        let err = parse_float("1e400", false).unwrap_err();
        assert_eq!(err.sqlstate, sqlstate::NUMERIC_VALUE_OUT_OF_RANGE);
        assert_eq!(
            err.message,
            "\"1e400\" is out of range for type double precision"
        );
        assert!(parse_float("1e-400", false).is_err());
        assert!(parse_float("1e39", true).is_err());
        assert_eq!(
            parse_float("abc", true).unwrap_err().message,
            "invalid input syntax for type real: \"abc\""
        );
    }

    #[test]
    fn uuids() {
        let want = [
            0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38,
            0x0a, 0x11,
        ];
        for text in [
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
        ] {
            assert_eq!(parse_uuid(text), Ok(want), "{text}");
        }
        assert_eq!(format_uuid(&want), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
        for bad in [
            "",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc9-99c0b-4ef8-bb6d-6bb9bd380a11",
            "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
        ] {
            let err = parse_uuid(bad).unwrap_err();
            assert_eq!(
                err.message,
                format!("invalid input syntax for type uuid: \"{bad}\"")
            );
        }
    }

    #[test]
    fn byteas() {
        assert_eq!(parse_bytea("\\x0102ff"), Ok(vec![1, 2, 255]));
        assert_eq!(parse_bytea("\\x01 02\nFF"), Ok(vec![1, 2, 255]));
        assert_eq!(parse_bytea("\\x"), Ok(vec![]));
        assert_eq!(parse_bytea("abc"), Ok(b"abc".to_vec()));
        assert_eq!(parse_bytea("a\\\\b\\001"), Ok(vec![b'a', b'\\', b'b', 1]));
        assert_eq!(
            parse_bytea("\\x0g").unwrap_err().message,
            "invalid hexadecimal digit: \"g\""
        );
        assert_eq!(
            parse_bytea("\\x012").unwrap_err().message,
            "invalid hexadecimal data: odd number of digits"
        );
        assert!(parse_bytea("\\x0é").is_err());
        assert!(parse_bytea("a\\9").is_err());
        assert!(parse_bytea("a\\").is_err());
        assert_eq!(format_bytea(&[1, 2, 0xab]), "\\x0102ab");
    }

    proptest! {
        #[test]
        fn float_text_round_trips(bits in any::<u64>()) {
            let value = f64::from_bits(bits);
            let back = parse_float(&format_float(value, false), false)?;
            prop_assert!(back.to_bits() == value.to_bits() || (value.is_nan() && back.is_nan()));
            let narrow = f64::from(f32::from_bits(bits as u32));
            let back = parse_float(&format_float(narrow, true), true)?;
            prop_assert!(back.to_bits() == narrow.to_bits() || (narrow.is_nan() && back.is_nan()));
        }

        #[test]
        fn uuid_and_bytea_round_trip(
            uuid in any::<[u8; 16]>(),
            bytes in proptest::collection::vec(any::<u8>(), 0..40),
        ) {
            prop_assert_eq!(parse_uuid(&format_uuid(&uuid))?, uuid);
            prop_assert_eq!(parse_bytea(&format_bytea(&bytes))?, bytes);
        }

        #[test]
        fn parsers_never_panic(text in "\\PC{0,40}") {
            let _ = parse_int(&text, "bigint", i64::MIN, i64::MAX);
            let _ = parse_bool(&text);
            let _ = parse_float(&text, false);
            let _ = parse_float(&text, true);
            let _ = parse_uuid(&text);
            let _ = parse_bytea(&text);
        }
    }
}
