//! The stored row format of a table's non-key columns (the key columns live in the key).
//!
//! Format version 1:
//!
//! ```text
//! byte 0        format version (1)
//! null bitmap   ceil(n/8) bytes; bit i (LSB first within byte i/8) set = column i is NULL;
//!               the unused high bits of the last byte are zero
//! then each non-NULL column, in column order:
//!   smallint     i16 little-endian        integer   i32 LE      bigint  i64 LE
//!   boolean      u8, 0 or 1               real      f32 LE      double  f64 LE
//!   numeric      i128 LE, scaled by the column's scale
//!   numeric without a precision   u8 scale (at most 38), then the i128 LE scaled by it
//!   timestamp, timestamptz   i64 LE microseconds since 2000-01-01
//!   date         i32 LE days since 2000-01-01 (i32::MAX / MIN: infinity / -infinity)
//!   interval     i32 LE months, i32 LE days, i64 LE microseconds
//!   uuid         16 bytes
//!   text, varchar, char, bytea   length as unsigned LEB128, then the bytes (UTF-8 for text)
//! ```
//!
//! Rows outlive the code that wrote them: change the layout only under a new version.

// Until the executor and DDL layer call everything here, some items are used by tests only.
#![cfg_attr(not(test), allow(dead_code))]

use crate::error::{SqlError, SqlResult};
use crate::types::{NUMERIC_PRECISION_MAX, SqlType};
use crate::value::Value;

/// The row format this code writes (and the only one it reads).
pub(crate) const ROW_FORMAT_VERSION: u8 = 1;

/// The most bytes an unsigned LEB128 `u64` takes.
const VARINT_BYTES_MAX: usize = 10;

/// Appends the row of `values` (already coerced to `types`) to `out`. A value that does not
/// match its column's type is an `INTERNAL_ERROR`: coercion should have caught it.
pub(crate) fn encode_row(types: &[SqlType], values: &[Value], out: &mut Vec<u8>) -> SqlResult<()> {
    if types.len() != values.len() {
        return Err(SqlError::internal(format!(
            "row has {} values for {} columns",
            values.len(),
            types.len()
        )));
    }
    let start = out.len();
    out.push(ROW_FORMAT_VERSION);
    let mut bitmap = vec![0u8; types.len().div_ceil(8)];
    for (i, value) in values.iter().enumerate() {
        if value.is_null()
            && let Some(byte) = bitmap.get_mut(i / 8)
        {
            *byte |= 1 << (i % 8);
        }
    }
    out.extend_from_slice(&bitmap);
    for (index, (ty, value)) in types.iter().zip(values).enumerate() {
        if let Err(err) = encode_value(ty, value, out) {
            out.truncate(start);
            return Err(err.with_detail(format!("column {index} of type {}", ty.name())));
        }
    }
    Ok(())
}

/// Appends one non-NULL-or-NULL column value (NULLs write nothing: the bitmap has them).
fn encode_value(ty: &SqlType, value: &Value, out: &mut Vec<u8>) -> SqlResult<()> {
    match (ty, value) {
        (_, Value::Null) => {}
        (SqlType::SmallInt, Value::Int(v)) => {
            let v = i16::try_from(*v).map_err(|_| out_of_type(ty, value))?;
            out.extend_from_slice(&v.to_le_bytes());
        }
        (SqlType::Int, Value::Int(v)) => {
            let v = i32::try_from(*v).map_err(|_| out_of_type(ty, value))?;
            out.extend_from_slice(&v.to_le_bytes());
        }
        (SqlType::BigInt, Value::Int(v)) => out.extend_from_slice(&v.to_le_bytes()),
        (SqlType::Bool, Value::Bool(b)) => out.push(u8::from(*b)),
        // A real column's values are f32-exact after coercion.
        (SqlType::Real, Value::Float(v)) => out.extend_from_slice(&(*v as f32).to_le_bytes()),
        (SqlType::Double, Value::Float(v)) => out.extend_from_slice(&v.to_le_bytes()),
        (SqlType::Numeric { precision, scale }, Value::Numeric { scaled, scale: own })
            if scale == own && fits_precision(*scaled, *precision) =>
        {
            out.extend_from_slice(&scaled.to_le_bytes());
        }
        (SqlType::NumericUnconstrained, Value::Numeric { scaled, scale })
            if *scale <= NUMERIC_PRECISION_MAX
                && fits_precision(*scaled, NUMERIC_PRECISION_MAX) =>
        {
            out.push(*scale);
            out.extend_from_slice(&scaled.to_le_bytes());
        }
        (SqlType::Timestamp | SqlType::TimestampTz, Value::Timestamp(t)) => {
            out.extend_from_slice(&t.to_le_bytes());
        }
        // Decoding refuses a day outside years 1 to 9999, so encoding must never write one.
        (SqlType::Date, Value::Date(d)) if crate::value::date_is_valid(*d) => {
            out.extend_from_slice(&d.to_le_bytes());
        }
        (SqlType::Interval, Value::Interval(i)) => {
            out.extend_from_slice(&i.months.to_le_bytes());
            out.extend_from_slice(&i.days.to_le_bytes());
            out.extend_from_slice(&i.micros.to_le_bytes());
        }
        (SqlType::Uuid, Value::Uuid(u)) => out.extend_from_slice(u),
        (SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_), Value::Text(s)) => {
            put_bytes(s.as_bytes(), out);
        }
        (SqlType::Bytea, Value::Bytes(b)) => put_bytes(b, out),
        _ => return Err(out_of_type(ty, value)),
    }
    Ok(())
}

/// A length-prefixed byte string.
fn put_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    // usize is at most 64 bits on every supported target.
    let mut len = bytes.len() as u64;
    while len >= 0x80 {
        out.push((len as u8 & 0x7F) | 0x80);
        len >>= 7;
    }
    out.push(len as u8);
    out.extend_from_slice(bytes);
}

/// Decodes a row written by [`encode_row`] for columns `types`. Any malformed input is
/// `DATA_CORRUPTED` with a message saying what was wrong; it never panics.
pub(crate) fn decode_row(types: &[SqlType], bytes: &[u8]) -> SqlResult<Vec<Value>> {
    let mut reader = Reader { bytes, at: 0 };
    let version = reader.take(1, "the format version")?;
    if version != [ROW_FORMAT_VERSION] {
        return Err(SqlError::corrupted(format!(
            "row format version {} is not {ROW_FORMAT_VERSION}",
            version.first().copied().unwrap_or(0)
        )));
    }
    let bitmap = reader.take(types.len().div_ceil(8), "the null bitmap")?;
    let is_null = |i: usize| {
        bitmap
            .get(i / 8)
            .is_some_and(|byte| byte & (1 << (i % 8)) != 0)
    };
    let used_bits = types.len() % 8;
    if used_bits != 0 && bitmap.last().is_some_and(|last| last >> used_bits != 0) {
        return Err(SqlError::corrupted(
            "row null bitmap has bits set past the last column".to_string(),
        ));
    }
    let mut values = Vec::with_capacity(types.len());
    for (i, ty) in types.iter().enumerate() {
        let value = if is_null(i) {
            Value::Null
        } else {
            reader
                .value(ty)
                .map_err(|err| err.with_detail(format!("column {i} of type {}", ty.name())))?
        };
        values.push(value);
    }
    if reader.at != bytes.len() {
        return Err(SqlError::corrupted(format!(
            "row has {} trailing bytes",
            bytes.len().saturating_sub(reader.at)
        )));
    }
    Ok(values)
}

/// A cursor over a stored row.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// The next `n` bytes, or `DATA_CORRUPTED` naming `what` was cut short.
    fn take(&mut self, n: usize, what: &str) -> SqlResult<&'a [u8]> {
        let slice = self
            .at
            .checked_add(n)
            .and_then(|end| self.bytes.get(self.at..end))
            .ok_or_else(|| {
                SqlError::corrupted(format!(
                    "row is truncated in {what}: needs {n} bytes, {} left",
                    self.bytes.len().saturating_sub(self.at)
                ))
            })?;
        self.at += n;
        Ok(slice)
    }

    /// The next `N` bytes as an array.
    fn array<const N: usize>(&mut self, what: &str) -> SqlResult<[u8; N]> {
        let slice = self.take(N, what)?;
        <[u8; N]>::try_from(slice)
            .map_err(|_| SqlError::corrupted(format!("row is truncated in {what}")))
    }

    /// An unsigned LEB128 length.
    fn varint(&mut self) -> SqlResult<u64> {
        let mut value: u64 = 0;
        for index in 0..VARINT_BYTES_MAX {
            let [byte] = self.array::<1>("a length")?;
            let payload = u64::from(byte & 0x7F);
            let shift = 7 * index as u32;
            // The tenth byte may only carry the top bit of a u64.
            if index == VARINT_BYTES_MAX - 1 && payload > 1 {
                return Err(SqlError::corrupted(
                    "row length varint overflows 64 bits".to_string(),
                ));
            }
            value |= payload << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(SqlError::corrupted(
            "row length varint overflows 64 bits".to_string(),
        ))
    }

    /// A length-prefixed byte string.
    fn bytes(&mut self) -> SqlResult<&'a [u8]> {
        let len = self.varint()?;
        let left = self.bytes.len().saturating_sub(self.at);
        match usize::try_from(len) {
            Ok(len) if len <= left => self.take(len, "a string"),
            _ => Err(SqlError::corrupted(format!(
                "row string length {len} runs past the end ({left} bytes left)"
            ))),
        }
    }

    /// One non-NULL value of type `ty`.
    fn value(&mut self, ty: &SqlType) -> SqlResult<Value> {
        let value = match ty {
            SqlType::SmallInt => {
                Value::Int(i64::from(i16::from_le_bytes(self.array("a smallint")?)))
            }
            SqlType::Int => Value::Int(i64::from(i32::from_le_bytes(self.array("an integer")?))),
            SqlType::BigInt => Value::Int(i64::from_le_bytes(self.array("a bigint")?)),
            SqlType::Bool => match self.array::<1>("a boolean")? {
                [0] => Value::Bool(false),
                [1] => Value::Bool(true),
                [other] => {
                    return Err(SqlError::corrupted(format!(
                        "row boolean byte is {other}, not 0 or 1"
                    )));
                }
            },
            SqlType::Real => Value::Float(f64::from(f32::from_le_bytes(self.array("a real")?))),
            SqlType::Double => Value::Float(f64::from_le_bytes(self.array("a double")?)),
            SqlType::Numeric { precision, scale } => {
                let scaled = i128::from_le_bytes(self.array("a numeric")?);
                if !fits_precision(scaled, *precision) {
                    return Err(SqlError::corrupted(format!(
                        "row numeric has more than {precision} digits"
                    )));
                }
                Value::Numeric {
                    scaled,
                    scale: *scale,
                }
            }
            SqlType::NumericUnconstrained => {
                let [scale] = self.array("a numeric's scale")?;
                let scaled = i128::from_le_bytes(self.array("a numeric")?);
                if scale > NUMERIC_PRECISION_MAX || !fits_precision(scaled, NUMERIC_PRECISION_MAX) {
                    return Err(SqlError::corrupted(format!(
                        "row numeric has scale {scale} or more than \
                         {NUMERIC_PRECISION_MAX} digits"
                    )));
                }
                Value::Numeric { scaled, scale }
            }
            SqlType::Timestamp | SqlType::TimestampTz => {
                Value::Timestamp(i64::from_le_bytes(self.array("a timestamp")?))
            }
            SqlType::Date => {
                let days = i32::from_le_bytes(self.array("a date")?);
                if !crate::value::date_is_valid(days) {
                    return Err(SqlError::corrupted(format!(
                        "row date {days} is outside years 1 to 9999"
                    )));
                }
                Value::Date(days)
            }
            SqlType::Interval => Value::Interval(crate::value::Interval {
                months: i32::from_le_bytes(self.array("an interval's months")?),
                days: i32::from_le_bytes(self.array("an interval's days")?),
                micros: i64::from_le_bytes(self.array("an interval's microseconds")?),
            }),
            SqlType::Uuid => Value::Uuid(self.array("a uuid")?),
            SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_) => {
                let bytes = self.bytes()?;
                let text = std::str::from_utf8(bytes)
                    .map_err(|err| SqlError::corrupted(format!("row text is not UTF-8: {err}")))?;
                Value::Text(text.to_string())
            }
            SqlType::Bytea => Value::Bytes(self.bytes()?.to_vec()),
            SqlType::Oid | SqlType::Name | SqlType::InternalChar => {
                return Err(SqlError::corrupted(format!(
                    "a row column of type {}, which no table has",
                    ty.name()
                )));
            }
        };
        Ok(value)
    }
}

/// Whether a scaled numeric has at most `precision` digits.
pub(crate) fn fits_precision(scaled: i128, precision: u8) -> bool {
    10u128
        .checked_pow(u32::from(precision))
        .is_none_or(|limit| scaled.unsigned_abs() < limit)
}

/// A value that is not of its column's type (coercion should have made it so).
fn out_of_type(ty: &SqlType, value: &Value) -> SqlError {
    SqlError::internal(format!(
        "row value {value:?} does not fit a {} column",
        ty.name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::sqlstate;
    use crate::value::tests::{nullable_value_of, same_value, small_sql_type};
    use proptest::prelude::*;

    /// A schema and one row for it.
    fn schema_and_row() -> impl Strategy<Value = (Vec<SqlType>, Vec<Value>)> {
        proptest::collection::vec(small_sql_type(), 1..20).prop_flat_map(|types| {
            let values: Vec<_> = types.iter().map(|ty| nullable_value_of(*ty)).collect();
            (Just(types), values)
        })
    }

    fn encoded(types: &[SqlType], values: &[Value]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_row(types, values, &mut out).unwrap();
        out
    }

    fn corruption(types: &[SqlType], bytes: &[u8]) -> String {
        let err = decode_row(types, bytes).unwrap_err();
        assert_eq!(err.sqlstate, sqlstate::DATA_CORRUPTED, "{err:?}");
        err.message
    }

    #[test]
    fn example_row_bytes_are_pinned() {
        let types = [
            SqlType::SmallInt,
            SqlType::Int,
            SqlType::Text,
            SqlType::Bool,
            SqlType::Numeric {
                precision: 5,
                scale: 2,
            },
            SqlType::Bytea,
            SqlType::Timestamp,
            SqlType::Double,
            SqlType::Real,
        ];
        let values = [
            Value::Int(-2),
            Value::Null,
            Value::Text("hé".to_string()),
            Value::Bool(true),
            Value::Numeric {
                scaled: 150,
                scale: 2,
            },
            Value::Bytes(vec![0; 130]),
            Value::Timestamp(1),
            Value::Float(1.5),
            Value::Float(-2.0),
        ];
        let bytes = encoded(&types, &values);
        let mut want = vec![1, 0b0000_0010, 0b0000_0000];
        want.extend_from_slice(&[0xFE, 0xFF]);
        want.extend_from_slice(&[3, b'h', 0xC3, 0xA9]);
        want.push(1);
        want.extend_from_slice(&150i128.to_le_bytes());
        want.extend_from_slice(&[0x82, 0x01]);
        want.extend_from_slice(&[0; 130]);
        want.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0xF8, 0x3F]);
        want.extend_from_slice(&[0, 0, 0, 0xC0]);
        assert_eq!(bytes, want);
        assert_eq!(decode_row(&types, &bytes).unwrap(), values);
    }

    #[test]
    fn unconstrained_numeric_stores_its_scale_before_the_value() {
        let types = [SqlType::NumericUnconstrained, SqlType::NumericUnconstrained];
        let values = [
            Value::Numeric {
                scaled: -150,
                scale: 2,
            },
            Value::Numeric {
                scaled: 7,
                scale: 0,
            },
        ];
        let bytes = encoded(&types, &values);
        let mut want = vec![1, 0, 2];
        want.extend_from_slice(&(-150i128).to_le_bytes());
        want.push(0);
        want.extend_from_slice(&7i128.to_le_bytes());
        assert_eq!(bytes, want);
        assert_eq!(decode_row(&types, &bytes).unwrap(), values);
        let too_fine = Value::Numeric {
            scaled: 1,
            scale: 39,
        };
        let err = encode_row(&types[..1], &[too_fine], &mut Vec::new()).unwrap_err();
        assert_eq!(err.sqlstate, sqlstate::INTERNAL_ERROR);
    }

    #[test]
    fn empty_schema_is_the_version_byte() {
        assert_eq!(encoded(&[], &[]), [ROW_FORMAT_VERSION]);
        assert_eq!(decode_row(&[], &[ROW_FORMAT_VERSION]), Ok(vec![]));
    }

    #[test]
    fn malformed_rows_are_data_corrupted() {
        let text = [SqlType::Text];
        let int = [SqlType::Int];
        assert!(corruption(&int, &[]).contains("format version"));
        assert!(corruption(&int, &[2, 0, 0, 0, 0, 0]).contains("version 2"));
        assert!(corruption(&int, &[1]).contains("null bitmap"));
        assert!(corruption(&int, &[1, 0, 1, 2, 3]).contains("integer"));
        assert!(corruption(&int, &[1, 0, 1, 2, 3, 4, 5]).contains("1 trailing bytes"));
        assert!(corruption(&int, &[1, 0b10]).contains("past the last column"));
        assert!(corruption(&[SqlType::Bool], &[1, 0, 2]).contains("not 0 or 1"));
        assert!(corruption(&text, &[1, 0, 2, 0xFF, 0xFE]).contains("UTF-8"));
        assert!(corruption(&text, &[1, 0, 5, b'a']).contains("past the end"));
        assert!(corruption(&text, &[1, 0, 0x80]).contains("a length"));
        let mut overflow = vec![1, 0];
        overflow.extend_from_slice(&[0xFF; 9]);
        overflow.push(0x02);
        assert!(corruption(&text, &overflow).contains("overflows"));
        let mut long = vec![1, 0];
        long.extend_from_slice(&[0x80; 11]);
        assert!(corruption(&text, &long).contains("overflows"));
        let mut huge_len = vec![1, 0];
        huge_len.extend_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]);
        assert!(corruption(&text, &huge_len).contains("past the end"));
        let numeric = [SqlType::Numeric {
            precision: 2,
            scale: 0,
        }];
        let mut wide = vec![1, 0];
        wide.extend_from_slice(&100i128.to_le_bytes());
        assert!(corruption(&numeric, &wide).contains("more than 2 digits"));
        let unconstrained = [SqlType::NumericUnconstrained];
        let mut scale_39 = vec![1, 0, 39];
        scale_39.extend_from_slice(&1i128.to_le_bytes());
        assert!(corruption(&unconstrained, &scale_39).contains("scale 39"));
        let mut digits_39 = vec![1, 0, 2];
        digits_39.extend_from_slice(&10i128.pow(38).to_le_bytes());
        assert!(corruption(&unconstrained, &digits_39).contains("more than 38 digits"));
        assert!(corruption(&unconstrained, &[1, 0]).contains("scale"));
        assert!(corruption(&[SqlType::Uuid], &[1, 0, 1, 2]).contains("uuid"));
    }

    #[test]
    fn values_of_the_wrong_type_are_internal_errors() {
        let mut out = vec![9];
        let err =
            encode_row(&[SqlType::Int], &[Value::Text("x".to_string())], &mut out).unwrap_err();
        assert_eq!(err.sqlstate, sqlstate::INTERNAL_ERROR);
        assert_eq!(out, [9], "a failed encode leaves `out` as it was");
        let bad = [
            (SqlType::SmallInt, Value::Int(1 << 20)),
            (SqlType::Int, Value::Int(1 << 40)),
            (
                SqlType::Numeric {
                    precision: 5,
                    scale: 2,
                },
                Value::Numeric {
                    scaled: 1,
                    scale: 1,
                },
            ),
            (
                SqlType::Numeric {
                    precision: 5,
                    scale: 2,
                },
                Value::Numeric {
                    scaled: 100_000,
                    scale: 2,
                },
            ),
            (SqlType::Bytea, Value::Text(String::new())),
        ];
        for (ty, value) in bad {
            let err = encode_row(&[ty], &[value], &mut Vec::new()).unwrap_err();
            assert_eq!(err.sqlstate, sqlstate::INTERNAL_ERROR, "{ty:?}");
        }
        let err = encode_row(&[SqlType::Int], &[], &mut Vec::new()).unwrap_err();
        assert_eq!(err.sqlstate, sqlstate::INTERNAL_ERROR);
    }

    proptest! {
        #[test]
        fn round_trip((types, values) in schema_and_row()) {
            let bytes = encoded(&types, &values);
            let back = decode_row(&types, &bytes)?;
            prop_assert_eq!(back.len(), values.len());
            for (got, want) in back.iter().zip(&values) {
                prop_assert!(same_value(got, want), "{:?} came back as {:?}", want, got);
            }
        }

        #[test]
        fn decode_of_arbitrary_bytes_never_panics(
            types in proptest::collection::vec(small_sql_type(), 0..20),
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let _ = decode_row(&types, &bytes);
        }

        #[test]
        fn decode_of_damaged_rows_never_panics(
            (types, values) in schema_and_row(),
            damage in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
            cut in any::<usize>(),
        ) {
            let mut bytes = encoded(&types, &values);
            for (at, byte) in damage {
                let len = bytes.len();
                if let Some(slot) = bytes.get_mut(at % len) {
                    *slot = byte;
                }
            }
            let _ = decode_row(&types, &bytes);
            bytes.truncate(cut % (bytes.len() + 1));
            let _ = decode_row(&types, &bytes);
        }
    }
}
