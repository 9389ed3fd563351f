//! Primary keys as byte strings whose `memcmp` order (then length) is the SQL order of the
//! key's values, column by column, as the engine compares keys.
//!
//! Natural encodings:
//!
//! | type                       | bytes  | encoding                                          |
//! |----------------------------|--------|---------------------------------------------------|
//! | smallint, integer, bigint  | 8      | i64 big-endian, sign bit flipped (`Key::from_i64`) |
//! | timestamp, timestamptz     | 8      | i64 microseconds, as bigint                       |
//! | date                       | 4      | i32 days big-endian, sign bit flipped             |
//! | boolean                    | 1      | 0 or 1                                            |
//! | real                       | 4      | f32 bits big-endian, flipped (below)              |
//! | double precision           | 8      | f64 bits big-endian, flipped (below)              |
//! | numeric(p,s)               | 16     | scaled i128 big-endian, sign bit flipped          |
//! | uuid                       | 16     | the 16 bytes (as the engine's GUID keys)          |
//! | text, varchar, char, bytea | n + 2+ | the bytes, 0x00 as 0x00 0xFF; then 0x00 0x00      |
//!
//! A float's bits are all flipped if it is negative, else only its sign bit, so
//! -inf < ... < -0 < +0 < ... < +inf < NaN. Floats are normalized first: -0 to +0 and every
//! NaN to one NaN (SQL: -0 = 0, NaN = NaN), which then sorts above +infinity, as PostgreSQL
//! sorts NaN. The string terminator 0x00 0x00 sorts below every byte and every escaped zero,
//! so a string sorts before its extensions and the columns after it stay ordered. Text order
//! is UTF-8 byte order: the "C" collation.
//!
//! [`KeyEncoding::BucketU16`] writes a non-negative bucket as a 2-byte big-endian `u16`.
//!
//! A nullable column gets a leading tag byte: 0x01 a value follows, 0x02 NULL (so NULLs sort
//! last, PostgreSQL's default for ascending order). NOT NULL columns have no tag.

// Until the executor and DDL layer call everything here, some items are used by tests only.
#![cfg_attr(not(test), allow(dead_code))]

use crate::error::{SqlError, SqlResult, sqlstate};
use crate::row_codec::fits_precision;
use crate::types::SqlType;
use crate::value::Value;

/// The longest key the engine stores (`hotpage::Key::from_bytes` refuses longer).
pub(crate) const KEY_BYTES_MAX: usize = 32;

/// Tag before a nullable column's value.
const TAG_VALUE: u8 = 0x01;

/// Tag for a nullable column's NULL; above [`TAG_VALUE`], so NULLs sort last.
const TAG_NULL: u8 = 0x02;

/// Flipping the sign bit maps two's-complement order onto unsigned byte order.
const SIGN_BIT_64: u64 = 1 << 63;

/// [`SIGN_BIT_64`] for the 32-bit values (a date's day count).
const SIGN_BIT_32: u32 = 1 << 31;

/// How a key column's value becomes bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyEncoding {
    /// The column's natural order-preserving encoding (see the module doc).
    Natural,
    /// A non-negative smallint bucket as 2 bytes big-endian u16 (unsigned): the engine's
    /// hash-prefix design encodes its bucket this way, and a SQL table in that design must
    /// produce the same bytes. Values outside 0..=65535 → error.
    BucketU16,
}

/// One column of a key.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KeyColumn {
    /// The column's SQL type.
    pub ty: SqlType,
    /// How its values are encoded.
    pub encoding: KeyEncoding,
    /// Whether it may be NULL (then it carries a tag byte).
    pub nullable: bool,
}

/// Appends the key of `values` (already coerced to the columns' types) to `out`. More than
/// [`KEY_BYTES_MAX`] bytes is 54000 (program_limit_exceeded); a NULL in a NOT NULL column is
/// 23502; a value not of its column's type is an internal error. On error `out` is left as
/// it was.
pub(crate) fn encode_key(
    columns: &[KeyColumn],
    values: &[Value],
    out: &mut Vec<u8>,
) -> SqlResult<()> {
    if columns.len() != values.len() {
        return Err(SqlError::internal(format!(
            "key has {} values for {} columns",
            values.len(),
            columns.len()
        )));
    }
    let start = out.len();
    let mut widths = Vec::with_capacity(columns.len());
    for (column, value) in columns.iter().zip(values) {
        let before = out.len();
        if let Err(err) = encode_column(column, value, out) {
            out.truncate(start);
            return Err(err);
        }
        widths.push(out.len() - before);
    }
    let len = out.len() - start;
    if len > KEY_BYTES_MAX {
        out.truncate(start);
        return Err(too_long(columns, &widths, len));
    }
    Ok(())
}

/// 54000 for a key past [`KEY_BYTES_MAX`], with each column's width in the hint.
fn too_long(columns: &[KeyColumn], widths: &[usize], len: usize) -> SqlError {
    let parts: Vec<String> = columns
        .iter()
        .zip(widths)
        .map(|(column, width)| {
            let variable = if is_variable(column) {
                ", variable"
            } else {
                ""
            };
            format!("{} {width} bytes{variable}", column.ty.name())
        })
        .collect();
    SqlError::new(
        sqlstate::PROGRAM_LIMIT_EXCEEDED,
        format!("index row requires {len} bytes, maximum size is {KEY_BYTES_MAX}"),
    )
    .with_hint(format!(
        "The key's columns take {}; a string takes its length plus 2 (plus 1 per zero byte).",
        parts.join(", ")
    ))
}

/// Whether the column's encoded width depends on the value.
fn is_variable(column: &KeyColumn) -> bool {
    column.encoding == KeyEncoding::Natural
        && (column.ty.is_text_like() || column.ty == SqlType::Bytea)
}

/// Appends one column's tag (if nullable) and value.
fn encode_column(column: &KeyColumn, value: &Value, out: &mut Vec<u8>) -> SqlResult<()> {
    if value.is_null() {
        if !column.nullable {
            return Err(SqlError::new(
                sqlstate::NOT_NULL_VIOLATION,
                "null value in a key column violates not-null constraint",
            ));
        }
        out.push(TAG_NULL);
        return Ok(());
    }
    if column.nullable {
        out.push(TAG_VALUE);
    }
    match column.encoding {
        KeyEncoding::Natural => encode_natural(&column.ty, value, out),
        KeyEncoding::BucketU16 => {
            let bucket = match value {
                Value::Int(v) if column.ty.is_integer() => u16::try_from(*v).map_err(|_| {
                    SqlError::new(
                        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                        format!("key bucket {v} is outside 0..=65535"),
                    )
                })?,
                _ => return Err(out_of_type(&column.ty, value)),
            };
            out.extend_from_slice(&bucket.to_be_bytes());
            Ok(())
        }
    }
}

/// Appends a value in its type's natural encoding.
fn encode_natural(ty: &SqlType, value: &Value, out: &mut Vec<u8>) -> SqlResult<()> {
    match (ty, value) {
        (SqlType::SmallInt | SqlType::Int | SqlType::BigInt, Value::Int(v)) => {
            let (min, max) = ty.integer_range().unwrap_or((i64::MIN, i64::MAX));
            if !(min..=max).contains(v) {
                return Err(out_of_type(ty, value));
            }
            out.extend_from_slice(&encode_i64(*v));
        }
        (SqlType::Timestamp | SqlType::TimestampTz, Value::Timestamp(t)) => {
            out.extend_from_slice(&encode_i64(*t));
        }
        (SqlType::Date, Value::Date(d)) if crate::value::date_is_valid(*d) => {
            out.extend_from_slice(&((*d as u32) ^ SIGN_BIT_32).to_be_bytes());
        }
        (SqlType::Bool, Value::Bool(b)) => out.push(u8::from(*b)),
        (SqlType::Real, Value::Float(v)) => out.extend_from_slice(&encode_f32(*v as f32)),
        (SqlType::Double, Value::Float(v)) => out.extend_from_slice(&encode_f64(*v)),
        (SqlType::Numeric { precision, scale }, Value::Numeric { scaled, scale: own })
            if scale == own && fits_precision(*scaled, *precision) =>
        {
            out.extend_from_slice(&((*scaled as u128) ^ (1 << 127)).to_be_bytes());
        }
        (SqlType::Uuid, Value::Uuid(u)) => out.extend_from_slice(u),
        (SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_), Value::Text(s)) => {
            encode_string(s.as_bytes(), out);
        }
        (SqlType::Bytea, Value::Bytes(b)) => encode_string(b, out),
        _ => return Err(out_of_type(ty, value)),
    }
    Ok(())
}

/// An `i64` as the engine's `Key::from_i64` writes it.
fn encode_i64(v: i64) -> [u8; 8] {
    ((v as u64) ^ SIGN_BIT_64).to_be_bytes()
}

/// The inverse of [`encode_i64`].
fn decode_i64(raw: [u8; 8]) -> i64 {
    (u64::from_be_bytes(raw) ^ SIGN_BIT_64) as i64
}

/// An `f64` in total SQL order: normalized, then negative → all bits flipped (so larger
/// magnitudes sort first), non-negative → sign bit flipped (above every negative).
fn encode_f64(v: f64) -> [u8; 8] {
    let v = if v.is_nan() {
        f64::NAN
    } else if v == 0.0 {
        0.0
    } else {
        v
    };
    let bits = v.to_bits();
    let ordered = if bits & SIGN_BIT_64 != 0 {
        !bits
    } else {
        bits ^ SIGN_BIT_64
    };
    ordered.to_be_bytes()
}

/// The inverse of [`encode_f64`].
fn decode_f64(raw: [u8; 8]) -> f64 {
    let ordered = u64::from_be_bytes(raw);
    let bits = if ordered & SIGN_BIT_64 != 0 {
        ordered ^ SIGN_BIT_64
    } else {
        !ordered
    };
    f64::from_bits(bits)
}

/// An `f32` in total SQL order, as [`encode_f64`].
fn encode_f32(v: f32) -> [u8; 4] {
    const SIGN: u32 = 1 << 31;
    let v = if v.is_nan() {
        f32::NAN
    } else if v == 0.0 {
        0.0
    } else {
        v
    };
    let bits = v.to_bits();
    let ordered = if bits & SIGN != 0 { !bits } else { bits ^ SIGN };
    ordered.to_be_bytes()
}

/// The inverse of [`encode_f32`].
fn decode_f32(raw: [u8; 4]) -> f32 {
    const SIGN: u32 = 1 << 31;
    let ordered = u32::from_be_bytes(raw);
    let bits = if ordered & SIGN != 0 {
        ordered ^ SIGN
    } else {
        !ordered
    };
    f32::from_bits(bits)
}

/// A byte string with each 0x00 escaped as 0x00 0xFF, then the terminator 0x00 0x00.
fn encode_string(bytes: &[u8], out: &mut Vec<u8>) {
    for &byte in bytes {
        out.push(byte);
        if byte == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// Decodes a key written by [`encode_key`] for `columns`. Malformed bytes are
/// `DATA_CORRUPTED`; it never panics.
pub(crate) fn decode_key(columns: &[KeyColumn], bytes: &[u8]) -> SqlResult<Vec<Value>> {
    let mut reader = KeyReader { bytes, at: 0 };
    let mut values = Vec::with_capacity(columns.len());
    for (index, column) in columns.iter().enumerate() {
        let value = reader.column(column).map_err(|err| {
            err.with_detail(format!("key column {index} of type {}", column.ty.name()))
        })?;
        values.push(value);
    }
    if reader.at != bytes.len() {
        return Err(SqlError::corrupted(format!(
            "key has {} trailing bytes",
            bytes.len().saturating_sub(reader.at)
        )));
    }
    Ok(values)
}

/// A cursor over a stored key.
struct KeyReader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl KeyReader<'_> {
    /// The next `N` bytes.
    fn array<const N: usize>(&mut self, what: &str) -> SqlResult<[u8; N]> {
        let raw = self
            .at
            .checked_add(N)
            .and_then(|end| self.bytes.get(self.at..end))
            .and_then(|slice| <[u8; N]>::try_from(slice).ok())
            .ok_or_else(|| SqlError::corrupted(format!("key is truncated in {what}")))?;
        self.at += N;
        Ok(raw)
    }

    /// One column: its tag if nullable, then its value.
    fn column(&mut self, column: &KeyColumn) -> SqlResult<Value> {
        if column.nullable {
            match self.array::<1>("a null tag")? {
                [TAG_VALUE] => {}
                [TAG_NULL] => return Ok(Value::Null),
                [other] => {
                    return Err(SqlError::corrupted(format!("key null tag is {other:#04x}")));
                }
            }
        }
        match column.encoding {
            KeyEncoding::Natural => self.natural(&column.ty),
            KeyEncoding::BucketU16 => {
                let bucket = i64::from(u16::from_be_bytes(self.array("a bucket")?));
                check_int_range(&column.ty, bucket)
            }
        }
    }

    /// A value in its type's natural encoding.
    fn natural(&mut self, ty: &SqlType) -> SqlResult<Value> {
        let value = match ty {
            SqlType::SmallInt | SqlType::Int | SqlType::BigInt => {
                return check_int_range(ty, decode_i64(self.array("an integer")?));
            }
            SqlType::Timestamp | SqlType::TimestampTz => {
                Value::Timestamp(decode_i64(self.array("a timestamp")?))
            }
            SqlType::Date => {
                let days = (u32::from_be_bytes(self.array("a date")?) ^ SIGN_BIT_32) as i32;
                if !crate::value::date_is_valid(days) {
                    return Err(SqlError::corrupted(format!(
                        "key date {days} is outside years 1 to 9999"
                    )));
                }
                Value::Date(days)
            }
            SqlType::Bool => match self.array::<1>("a boolean")? {
                [0] => Value::Bool(false),
                [1] => Value::Bool(true),
                [other] => {
                    return Err(SqlError::corrupted(format!(
                        "key boolean byte is {other}, not 0 or 1"
                    )));
                }
            },
            SqlType::Real => Value::Float(f64::from(decode_f32(self.array("a real")?))),
            SqlType::Double => Value::Float(decode_f64(self.array("a double")?)),
            SqlType::Numeric { precision, scale } => {
                let raw = u128::from_be_bytes(self.array("a numeric")?);
                let scaled = (raw ^ (1 << 127)) as i128;
                if !fits_precision(scaled, *precision) {
                    return Err(SqlError::corrupted(format!(
                        "key numeric has more than {precision} digits"
                    )));
                }
                Value::Numeric {
                    scaled,
                    scale: *scale,
                }
            }
            SqlType::Uuid => Value::Uuid(self.array("a uuid")?),
            SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_) => {
                let bytes = self.string()?;
                let text = String::from_utf8(bytes)
                    .map_err(|err| SqlError::corrupted(format!("key text is not UTF-8: {err}")))?;
                Value::Text(text)
            }
            SqlType::Bytea => Value::Bytes(self.string()?),
            SqlType::Oid
            | SqlType::Name
            | SqlType::InternalChar
            | SqlType::NumericUnconstrained
            | SqlType::Interval => {
                return Err(SqlError::corrupted(format!(
                    "a key column of type {}, which no table has",
                    ty.name()
                )));
            }
        };
        Ok(value)
    }

    /// An escaped, terminated byte string.
    fn string(&mut self) -> SqlResult<Vec<u8>> {
        let mut bytes = Vec::new();
        loop {
            let [byte] = self.array::<1>("a string (no terminator)")?;
            if byte != 0 {
                bytes.push(byte);
                continue;
            }
            match self.array::<1>("a string (no terminator)")? {
                [0] => return Ok(bytes),
                [0xFF] => bytes.push(0),
                [other] => {
                    return Err(SqlError::corrupted(format!(
                        "key string has 0x00 followed by {other:#04x}"
                    )));
                }
            }
        }
    }
}

/// An integer checked against its column type's range.
fn check_int_range(ty: &SqlType, v: i64) -> SqlResult<Value> {
    let Some((min, max)) = ty.integer_range() else {
        return Err(SqlError::corrupted(format!(
            "key integer for a {} column",
            ty.name()
        )));
    };
    if (min..=max).contains(&v) {
        Ok(Value::Int(v))
    } else {
        Err(SqlError::corrupted(format!(
            "key value {v} is out of range for {}",
            ty.name()
        )))
    }
}

/// A value that is not of its key column's type.
fn out_of_type(ty: &SqlType, value: &Value) -> SqlError {
    SqlError::internal(format!(
        "key value {value:?} does not fit a {} column",
        ty.name()
    ))
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;
    use std::slice::from_ref;

    use super::*;
    use crate::value::tests::{nullable_value_of, same_value, small_sql_type, value_of};
    use proptest::prelude::*;

    fn natural(ty: SqlType) -> KeyColumn {
        KeyColumn {
            ty,
            encoding: KeyEncoding::Natural,
            nullable: false,
        }
    }

    fn key(columns: &[KeyColumn], values: &[Value]) -> SqlResult<Vec<u8>> {
        let mut out = Vec::new();
        encode_key(columns, values, &mut out)?;
        Ok(out)
    }

    /// A type a key column can have: DDL refuses an unconstrained numeric key (its values
    /// have no one scale).
    fn key_type() -> impl Strategy<Value = SqlType> {
        small_sql_type().prop_filter("a key type", |ty| {
            !matches!(ty, SqlType::NumericUnconstrained | SqlType::Interval)
        })
    }

    /// A key column of a random type: nullable one time in four, a bucket sometimes.
    fn key_column() -> impl Strategy<Value = KeyColumn> {
        prop_oneof![
            6 => (key_type(), 0..4u8).prop_map(|(ty, roll)| KeyColumn {
                ty,
                encoding: KeyEncoding::Natural,
                nullable: roll == 0,
            }),
            1 => (prop_oneof![Just(SqlType::SmallInt), Just(SqlType::Int)], any::<bool>())
                .prop_map(|(ty, nullable)| KeyColumn {
                    ty,
                    encoding: KeyEncoding::BucketU16,
                    nullable,
                }),
        ]
    }

    /// A value fit for a key column.
    fn key_value(column: &KeyColumn) -> BoxedStrategy<Value> {
        let values = match column.encoding {
            KeyEncoding::Natural => value_of(column.ty),
            KeyEncoding::BucketU16 => {
                let max = column
                    .ty
                    .integer_range()
                    .map_or(0, |(_, max)| max.min(65_535));
                prop_oneof![0..=max, Just(0), Just(max)]
                    .prop_map(Value::Int)
                    .boxed()
            }
        };
        if column.nullable {
            prop_oneof![1 => Just(Value::Null), 3 => values].boxed()
        } else {
            values
        }
    }

    fn tuple_of(columns: &[KeyColumn]) -> Vec<BoxedStrategy<Value>> {
        columns.iter().map(key_value).collect()
    }

    /// A key schema of 1..4 columns and two value tuples for it; the second is sometimes
    /// a copy of the first with only the last columns changed, so equal prefixes occur.
    fn schema_and_two_tuples() -> impl Strategy<Value = (Vec<KeyColumn>, Vec<Value>, Vec<Value>)> {
        proptest::collection::vec(key_column(), 1..4).prop_flat_map(|columns| {
            let a = tuple_of(&columns);
            let b = tuple_of(&columns);
            (Just(columns), a, b, any::<usize>()).prop_map(|(columns, a, mut b, keep)| {
                let keep = keep % (a.len() + 1);
                b[..keep].clone_from_slice(&a[..keep]);
                (columns, a, b)
            })
        })
    }

    /// NOT NULL natural columns of random types and a tuple for them.
    fn natural_schema_and_tuple() -> impl Strategy<Value = (Vec<KeyColumn>, Vec<Value>)> {
        proptest::collection::vec(key_type(), 1..5).prop_flat_map(|types| {
            let values: Vec<_> = types.iter().map(|ty| value_of(*ty)).collect();
            (
                Just(types.into_iter().map(natural).collect::<Vec<_>>()),
                values,
            )
        })
    }

    /// A type and a value of it or NULL.
    fn nullable_typed_value() -> impl Strategy<Value = (SqlType, Value)> {
        key_type().prop_flat_map(|ty| (Just(ty), nullable_value_of(ty)))
    }

    /// Key bytes biased toward the tags, the escape and the terminator.
    fn key_byte() -> impl Strategy<Value = u8> {
        prop_oneof![any::<u8>(), Just(0u8), Just(0xFFu8), Just(1u8), Just(2u8)]
    }

    /// The SQL order of two tuples, column by column.
    fn sql_order(a: &[Value], b: &[Value]) -> Ordering {
        a.iter()
            .zip(b)
            .map(|(x, y)| x.order_cmp(y))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }

    /// The encoded width of a NOT NULL value in its natural encoding.
    fn natural_width(ty: &SqlType, value: &Value) -> usize {
        let string = |b: &[u8]| b.len() + b.iter().filter(|x| **x == 0).count() + 2;
        match value {
            Value::Bool(_) => 1,
            Value::Float(_) if *ty == SqlType::Real => 4,
            Value::Date(_) => 4,
            Value::Float(_) => 8,
            Value::Numeric { .. } | Value::Uuid(_) => 16,
            Value::Text(s) => string(s.as_bytes()),
            Value::Bytes(b) => string(b),
            _ => 8,
        }
    }

    /// -0 and NaN as decoding gives them back.
    fn normalized(value: &Value) -> Value {
        match value {
            Value::Float(v) if v.is_nan() => Value::Float(f64::NAN),
            Value::Float(v) if *v == 0.0 => Value::Float(0.0),
            other => other.clone(),
        }
    }

    #[test]
    fn integers_match_the_engine_key() {
        for v in [i64::MIN, -1, 0, 1, 42, i64::MAX] {
            let bytes = key(&[natural(SqlType::BigInt)], &[Value::Int(v)]).unwrap();
            assert_eq!(bytes, hotpage::Key::from_i64(v).as_bytes());
        }
        let bytes = key(&[natural(SqlType::SmallInt)], &[Value::Int(-7)]).unwrap();
        assert_eq!(bytes, hotpage::Key::from_i64(-7).as_bytes());
        let bytes = key(&[natural(SqlType::TimestampTz)], &[Value::Timestamp(99)]).unwrap();
        assert_eq!(bytes, hotpage::Key::from_i64(99).as_bytes());
    }

    #[test]
    fn bucket_is_big_endian_u16() {
        let bucket = KeyColumn {
            ty: SqlType::Int,
            encoding: KeyEncoding::BucketU16,
            nullable: false,
        };
        for v in [0u16, 1, 0x1234, 40_000, u16::MAX] {
            let bytes = key(
                &[bucket.clone(), natural(SqlType::BigInt)],
                &[Value::Int(i64::from(v)), Value::Int(5)],
            )
            .unwrap();
            assert_eq!(bytes[..2], v.to_be_bytes());
            assert_eq!(bytes[2..], *hotpage::Key::from_i64(5).as_bytes());
        }
        for bad in [-1, 65_536] {
            let err = key(from_ref(&bucket), &[Value::Int(bad)]).unwrap_err();
            assert_eq!(err.sqlstate, sqlstate::NUMERIC_VALUE_OUT_OF_RANGE);
        }
        // A smallint bucket column cannot decode a bucket past 32767.
        let small = KeyColumn {
            ty: SqlType::SmallInt,
            ..bucket
        };
        let err = decode_key(&[small], &40_000u16.to_be_bytes()).unwrap_err();
        assert_eq!(err.sqlstate, sqlstate::DATA_CORRUPTED);
    }

    #[test]
    fn encodings_are_pinned() {
        let text = key(
            &[natural(SqlType::Text), natural(SqlType::Bool)],
            &[Value::Text("a\0b".into()), Value::Bool(true)],
        )
        .unwrap();
        assert_eq!(text, [b'a', 0, 0xFF, b'b', 0, 0, 1]);
        let nullable = KeyColumn {
            nullable: true,
            ..natural(SqlType::Int)
        };
        assert_eq!(
            key(from_ref(&nullable), &[Value::Null]).unwrap(),
            [TAG_NULL]
        );
        assert_eq!(
            key(&[nullable], &[Value::Int(0)]).unwrap(),
            [TAG_VALUE, 0x80, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(
            key(&[natural(SqlType::Double)], &[Value::Float(-0.0)]).unwrap(),
            [0x80, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(
            key(&[natural(SqlType::Real)], &[Value::Float(1.0)]).unwrap(),
            [0xBF, 0x80, 0, 0]
        );
        let numeric = SqlType::Numeric {
            precision: 5,
            scale: 2,
        };
        let mut want = vec![0x7F; 1];
        want.extend_from_slice(&[0xFF; 15]);
        assert_eq!(
            key(
                &[natural(numeric)],
                &[Value::Numeric {
                    scaled: -1,
                    scale: 2
                }]
            )
            .unwrap(),
            want
        );
        let uuid = [7u8; 16];
        assert_eq!(
            key(&[natural(SqlType::Uuid)], &[Value::Uuid(uuid)]).unwrap(),
            uuid
        );
    }

    #[test]
    fn keys_past_32_bytes_are_refused() {
        let columns = [natural(SqlType::BigInt), natural(SqlType::Text)];
        let fits = [Value::Int(1), Value::Text("x".repeat(22))];
        assert_eq!(key(&columns, &fits).unwrap().len(), 32);
        let mut out = vec![0xAA];
        let long = [Value::Int(1), Value::Text("x".repeat(23))];
        let err = encode_key(&columns, &long, &mut out).unwrap_err();
        assert_eq!(err.sqlstate, sqlstate::PROGRAM_LIMIT_EXCEEDED);
        assert_eq!(
            err.message,
            "index row requires 33 bytes, maximum size is 32"
        );
        let hint = err.hint.unwrap();
        assert!(
            hint.contains("bigint 8 bytes, text 25 bytes, variable"),
            "{hint}"
        );
        assert_eq!(out, [0xAA], "a failed encode leaves `out` as it was");
        let two_uuids = [
            natural(SqlType::Uuid),
            natural(SqlType::Uuid),
            natural(SqlType::Bool),
        ];
        let err = key(
            &two_uuids,
            &[
                Value::Uuid([0; 16]),
                Value::Uuid([0; 16]),
                Value::Bool(true),
            ],
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            "index row requires 33 bytes, maximum size is 32"
        );
    }

    #[test]
    fn contract_breaches_are_errors_not_panics() {
        let int = natural(SqlType::Int);
        assert_eq!(
            key(from_ref(&int), &[Value::Null]).unwrap_err().sqlstate,
            sqlstate::NOT_NULL_VIOLATION
        );
        assert_eq!(
            key(from_ref(&int), &[Value::Text("1".into())])
                .unwrap_err()
                .sqlstate,
            sqlstate::INTERNAL_ERROR
        );
        assert_eq!(
            key(from_ref(&int), &[Value::Int(1 << 40)])
                .unwrap_err()
                .sqlstate,
            sqlstate::INTERNAL_ERROR
        );
        assert_eq!(
            key(&[int], &[]).unwrap_err().sqlstate,
            sqlstate::INTERNAL_ERROR
        );
        let numeric = natural(SqlType::Numeric {
            precision: 3,
            scale: 1,
        });
        let wide = Value::Numeric {
            scaled: 1000,
            scale: 1,
        };
        assert_eq!(
            key(&[numeric], &[wide]).unwrap_err().sqlstate,
            sqlstate::INTERNAL_ERROR
        );
    }

    #[test]
    fn malformed_keys_are_data_corrupted() {
        let cases: [(KeyColumn, &[u8]); 9] = [
            (natural(SqlType::BigInt), &[0x80, 0]),
            (natural(SqlType::Int), &encode_i64(1 << 40)),
            (natural(SqlType::Bool), &[2]),
            (natural(SqlType::Text), &[b'a', 0]),
            (natural(SqlType::Text), b"a"),
            (natural(SqlType::Text), &[0, 1, 0, 0]),
            (natural(SqlType::Text), &[0xFF, 0, 0]),
            (
                KeyColumn {
                    nullable: true,
                    ..natural(SqlType::Bool)
                },
                &[3, 1],
            ),
            (natural(SqlType::Bool), &[1, 0]),
        ];
        for (column, bytes) in cases {
            let err = decode_key(from_ref(&column), bytes).unwrap_err();
            assert_eq!(
                err.sqlstate,
                sqlstate::DATA_CORRUPTED,
                "{column:?} {bytes:?}"
            );
        }
        let numeric = natural(SqlType::Numeric {
            precision: 3,
            scale: 0,
        });
        let raw = ((1000i128 as u128) ^ (1 << 127)).to_be_bytes();
        assert_eq!(
            decode_key(&[numeric], &raw).unwrap_err().sqlstate,
            sqlstate::DATA_CORRUPTED
        );
    }

    #[test]
    fn float_order_edges() {
        let double = [natural(SqlType::Double)];
        let ordered = [
            f64::NEG_INFINITY,
            -1e300,
            -1.0,
            -f64::MIN_POSITIVE,
            -5e-324,
            0.0,
            5e-324,
            1.0,
            f64::INFINITY,
            f64::NAN,
        ];
        let keys: Vec<_> = ordered
            .iter()
            .map(|v| key(&double, &[Value::Float(*v)]).unwrap())
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            key(&double, &[Value::Float(-0.0)]),
            key(&double, &[Value::Float(0.0)])
        );
        assert_eq!(
            key(&double, &[Value::Float(-f64::NAN)]),
            key(&double, &[Value::Float(f64::NAN)])
        );
    }

    proptest! {
        // Order preservation is the property the engine's correctness rests on: test hard.
        #![proptest_config(ProptestConfig::with_cases(ProptestConfig::default().cases.max(2048)))]

        #[test]
        fn encoding_order_is_sql_order((columns, a, b) in schema_and_two_tuples()) {
            let (Ok(ka), Ok(kb)) = (key(&columns, &a), key(&columns, &b)) else {
                // Past 32 bytes: nothing to compare.
                return Ok(());
            };
            prop_assert_eq!(ka.cmp(&kb), sql_order(&a, &b), "{:?} vs {:?}", a, b);
        }

        #[test]
        fn round_trip((columns, a, _b) in schema_and_two_tuples()) {
            let Ok(bytes) = key(&columns, &a) else {
                return Ok(());
            };
            prop_assert!(bytes.len() <= KEY_BYTES_MAX);
            prop_assert!(hotpage::Key::from_bytes(&bytes).is_ok());
            let back = decode_key(&columns, &bytes)?;
            prop_assert_eq!(back.len(), a.len());
            for (got, want) in back.iter().zip(&a) {
                prop_assert!(same_value(got, &normalized(want)), "{:?} became {:?}", want, got);
            }
        }

        #[test]
        fn refused_exactly_when_past_32_bytes(
            (columns, values) in natural_schema_and_tuple(),
        ) {
            let widths = columns.iter().zip(&values).map(|(c, v)| natural_width(&c.ty, v));
            let expected: usize = widths.sum();
            match key(&columns, &values) {
                Ok(bytes) => prop_assert!(bytes.len() == expected && expected <= KEY_BYTES_MAX),
                Err(err) => {
                    prop_assert_eq!(err.sqlstate, sqlstate::PROGRAM_LIMIT_EXCEEDED);
                    prop_assert!(expected > KEY_BYTES_MAX);
                    let want = format!("index row requires {expected} bytes, maximum size is 32");
                    prop_assert_eq!(err.message, want);
                }
            }
        }

        #[test]
        fn decode_of_arbitrary_bytes_never_panics(
            columns in proptest::collection::vec(key_column(), 0..5),
            bytes in proptest::collection::vec(key_byte(), 0..40),
        ) {
            let decoded = decode_key(&columns, &bytes);
            if let (Ok(values), true) = (decoded, bytes.len() <= KEY_BYTES_MAX) {
                // What decodes re-encodes to the same bytes (the encoding is canonical)
                // unless the decoded floats were a non-canonical NaN.
                let has_float = values.iter().any(|v| matches!(v, Value::Float(_)));
                if !has_float {
                    prop_assert_eq!(key(&columns, &values)?, bytes);
                }
            }
        }

        #[test]
        fn nullable_values_round_trip((ty, value) in nullable_typed_value()) {
            let column = KeyColumn { ty, encoding: KeyEncoding::Natural, nullable: true };
            if let Ok(bytes) = key(from_ref(&column), from_ref(&value)) {
                let back = decode_key(&[column], &bytes)?;
                let back = &back[0];
                let want = normalized(&value);
                prop_assert!(same_value(back, &want), "{:?} became {:?}", value, back);
            }
        }

        #[test]
        fn values_of_another_type_are_refused(
            ty in small_sql_type(),
            value in small_sql_type().prop_flat_map(value_of),
        ) {
            // Never mis-encoded: either it is this type's value or encoding refuses it.
            let column = natural(ty);
            if let Ok(bytes) = key(from_ref(&column), from_ref(&value)) {
                prop_assert!(decode_key(&[column], &bytes).is_ok());
            }
        }
    }
}
