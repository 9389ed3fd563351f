//! Values on PostgreSQL's wire protocol: a bind parameter's bytes read as a value of a
//! type, in the text or the binary format, and a result value written in either format.
//!
//! The binary formats are PostgreSQL's `*send`/`*recv` ones: big-endian integers and
//! floats, one byte for boolean, UTF-8 for text, the 16 bytes of a uuid, microseconds since
//! 2000-01-01 for timestamps (`i64::MAX`/`i64::MIN` are the infinities, as in PostgreSQL),
//! the raw bytes of a bytea, and numeric as base-10000 digits with a weight, a sign and a
//! display scale.

use super::Value;
use super::numeric::{self, Decimal};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::types::SqlType;

/// A value's format on the wire (format code 0 or 1 in Bind and RowDescription).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireFormat {
    /// Format code 0: the type's text output and input.
    Text,
    /// Format code 1: the type's binary send and receive.
    Binary,
}

/// 22P03 invalid_binary_representation.
const INVALID_BINARY_REPRESENTATION: &str = "22P03";
/// 22021 character_not_in_repertoire (bad UTF-8, or a NUL byte, in text).
const CHARACTER_NOT_IN_REPERTOIRE: &str = "22021";

/// numeric's sign word: positive, negative, NaN, +infinity, -infinity.
const NUMERIC_POS: u16 = 0x0000;
const NUMERIC_NEG: u16 = 0x4000;

/// PostgreSQL's OID of `numeric`: a type the wire can name without its precision.
pub const NUMERIC_OID: u32 = 1700;

impl SqlType {
    /// The type PostgreSQL's OID `oid` names, where one type stands for it: `None` for OIDs
    /// hotpage has no type for. `numeric` (1700) is unconstrained: a value keeps the scale
    /// it was sent with. `varchar` and `bpchar` without a length read as unbounded text.
    pub fn from_pg_oid(oid: u32) -> Option<SqlType> {
        Some(match oid {
            21 => SqlType::SmallInt,
            23 => SqlType::Int,
            20 => SqlType::BigInt,
            16 => SqlType::Bool,
            25 => SqlType::Text,
            1043 | 1042 => SqlType::Varchar(None),
            2950 => SqlType::Uuid,
            1114 => SqlType::Timestamp,
            1184 => SqlType::TimestampTz,
            1082 => SqlType::Date,
            1186 => SqlType::Interval,
            700 => SqlType::Real,
            701 => SqlType::Double,
            17 => SqlType::Bytea,
            NUMERIC_OID => SqlType::NumericUnconstrained,
            _ => return None,
        })
    }

    /// The type's fixed size on the wire (RowDescription's `typlen`), or -1 when it varies.
    pub fn pg_type_size(&self) -> i16 {
        match self {
            SqlType::SmallInt => 2,
            SqlType::Int | SqlType::Real | SqlType::Date => 4,
            SqlType::BigInt | SqlType::Double | SqlType::Timestamp | SqlType::TimestampTz => 8,
            SqlType::Bool => 1,
            SqlType::Uuid | SqlType::Interval => 16,
            _ => -1,
        }
    }

    /// The type modifier (RowDescription's `atttypmod`): `n + 4` for `varchar(n)` and
    /// `char(n)`, `((p << 16) | s) + 4` for `numeric(p,s)`, else -1, as PostgreSQL sends.
    pub fn pg_type_modifier(&self) -> i32 {
        match self {
            SqlType::Varchar(Some(n)) | SqlType::Char(n) => {
                i32::try_from(*n).map_or(-1, |n| n.saturating_add(4))
            }
            SqlType::Numeric { precision, scale } => {
                ((i32::from(*precision) << 16) | i32::from(*scale)) + 4
            }
            _ => -1,
        }
    }
}

impl Value {
    /// A bind parameter's bytes read as a value of type `ty`: the text format through the
    /// type's input function ([`Value::from_text`]), the binary format as PostgreSQL's
    /// receive function reads it. Lengths and precisions of `ty` apply as on assignment.
    /// Bad bytes are 22P03 (binary) or the input function's error (text); bytes that are
    /// not UTF-8, or hold a NUL, are 22021 wherever text is expected.
    pub fn from_wire(bytes: &[u8], format: WireFormat, ty: &SqlType) -> SqlResult<Value> {
        match format {
            WireFormat::Text => Value::from_text(utf8(bytes)?, ty),
            WireFormat::Binary => from_binary(bytes, ty),
        }
    }

    /// A numeric in the binary format, at the scale it was sent with (for a parameter whose
    /// type is `numeric` with no precision). At most 38 digits; NaN and the infinities are
    /// refused (hotpage's numeric has neither).
    pub fn numeric_from_binary(bytes: &[u8]) -> SqlResult<Value> {
        let (scaled, scale) = decode_numeric(bytes)?;
        Ok(Value::Numeric { scaled, scale })
    }

    /// The value in `format` for a column of type `ty`: `None` for NULL. The text format
    /// is [`Value::to_pg_text`]. A value of another kind than the column's (an integer in
    /// a numeric column) is cast to it first; one that does not cast is an error.
    pub fn to_wire(&self, ty: &SqlType, format: WireFormat) -> SqlResult<Option<Vec<u8>>> {
        if self.is_null() {
            return Ok(None);
        }
        match format {
            WireFormat::Text => Ok(self.to_pg_text(Some(ty)).map(String::into_bytes)),
            WireFormat::Binary => match to_binary(self, ty)? {
                Some(bytes) => Ok(Some(bytes)),
                None => {
                    let cast = self.clone().coerce(ty)?;
                    to_binary(&cast, ty)?.map(Some).ok_or_else(|| {
                        SqlError::internal(format!(
                            "a {} value has no binary form as {}",
                            self.type_name(),
                            ty.name()
                        ))
                    })
                }
            },
        }
    }
}

/// UTF-8 text without NUL bytes, as PostgreSQL's text input requires.
fn utf8(bytes: &[u8]) -> SqlResult<&str> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        SqlError::new(
            CHARACTER_NOT_IN_REPERTOIRE,
            format!(
                "invalid byte sequence for encoding \"UTF8\": 0x{:02x}",
                bytes.get(at).copied().unwrap_or(0)
            ),
        )
    })?;
    if text.contains('\0') {
        return Err(SqlError::new(
            CHARACTER_NOT_IN_REPERTOIRE,
            "invalid byte sequence for encoding \"UTF8\": 0x00",
        ));
    }
    Ok(text)
}

/// 22P03 for `bytes` that are not `expected` bytes long.
fn wrong_length(ty: &SqlType, expected: usize, got: usize) -> SqlError {
    SqlError::new(
        INVALID_BINARY_REPRESENTATION,
        format!(
            "incorrect binary data format: {} takes {expected} bytes, not {got}",
            ty.name()
        ),
    )
}

/// The `N` bytes of a fixed-size binary value.
fn fixed<const N: usize>(bytes: &[u8], ty: &SqlType) -> SqlResult<[u8; N]> {
    bytes
        .try_into()
        .map_err(|_| wrong_length(ty, N, bytes.len()))
}

fn from_binary(bytes: &[u8], ty: &SqlType) -> SqlResult<Value> {
    Ok(match ty {
        SqlType::SmallInt => Value::Int(i64::from(i16::from_be_bytes(fixed(bytes, ty)?))),
        SqlType::Int => Value::Int(i64::from(i32::from_be_bytes(fixed(bytes, ty)?))),
        SqlType::BigInt => Value::Int(i64::from_be_bytes(fixed(bytes, ty)?)),
        // PostgreSQL's boolrecv: any non-zero byte is true.
        SqlType::Bool => Value::Bool(fixed::<1>(bytes, ty)?[0] != 0),
        SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_) => {
            Value::from_text(utf8(bytes)?, ty)?
        }
        SqlType::Uuid => Value::Uuid(fixed(bytes, ty)?),
        SqlType::Timestamp | SqlType::TimestampTz => {
            let micros = i64::from_be_bytes(fixed(bytes, ty)?);
            Value::Timestamp(super::datetime::check_timestamp_range(micros)?)
        }
        // PostgreSQL's date_recv: days since 2000-01-01, 22008 outside the range held.
        SqlType::Date => {
            let days = i32::from_be_bytes(fixed(bytes, ty)?);
            if !super::datetime::date_is_valid(days) {
                return Err(SqlError::new(
                    sqlstate::DATETIME_FIELD_OVERFLOW,
                    "date out of range",
                ));
            }
            Value::Date(days)
        }
        // interval_recv: the microseconds, then the days and the months.
        SqlType::Interval => {
            let raw: [u8; 16] = fixed(bytes, ty)?;
            let (mut micros, mut days, mut months) = ([0u8; 8], [0u8; 4], [0u8; 4]);
            micros.copy_from_slice(&raw[..8]);
            days.copy_from_slice(&raw[8..12]);
            months.copy_from_slice(&raw[12..]);
            Value::Interval(super::Interval {
                micros: i64::from_be_bytes(micros),
                days: i32::from_be_bytes(days),
                months: i32::from_be_bytes(months),
            })
        }
        SqlType::Real => Value::Float(f64::from(f32::from_be_bytes(fixed(bytes, ty)?))),
        SqlType::Double => Value::Float(f64::from_be_bytes(fixed(bytes, ty)?)),
        SqlType::Bytea => Value::Bytes(bytes.to_vec()),
        SqlType::Numeric { .. } | SqlType::NumericUnconstrained => {
            Value::numeric_from_binary(bytes)?.coerce(ty)?
        }
        // The catalog's types (never a table column's): oidrecv, namerecv, charrecv.
        SqlType::Oid => Value::Int(i64::from(u32::from_be_bytes(fixed(bytes, ty)?))),
        SqlType::Name => Value::Text(utf8(bytes)?.to_string()),
        SqlType::InternalChar => {
            let [byte] = fixed::<1>(bytes, ty)?;
            Value::Text(utf8(&[byte])?.to_string())
        }
    })
}

/// The binary form of `value` as a `ty`, or `None` if the value is not of that kind.
fn to_binary(value: &Value, ty: &SqlType) -> SqlResult<Option<Vec<u8>>> {
    let out_of_range = || {
        SqlError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            format!("{} out of range", ty.name()),
        )
    };
    Ok(Some(match (ty, value) {
        (SqlType::SmallInt, Value::Int(v)) => i16::try_from(*v)
            .map_err(|_| out_of_range())?
            .to_be_bytes()
            .to_vec(),
        (SqlType::Int, Value::Int(v)) => i32::try_from(*v)
            .map_err(|_| out_of_range())?
            .to_be_bytes()
            .to_vec(),
        (SqlType::BigInt, Value::Int(v)) => v.to_be_bytes().to_vec(),
        (SqlType::Bool, Value::Bool(b)) => vec![u8::from(*b)],
        (SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_), Value::Text(s)) => {
            s.as_bytes().to_vec()
        }
        (SqlType::Uuid, Value::Uuid(u)) => u.to_vec(),
        (SqlType::Timestamp | SqlType::TimestampTz, Value::Timestamp(t)) => {
            t.to_be_bytes().to_vec()
        }
        (SqlType::Date, Value::Date(d)) => d.to_be_bytes().to_vec(),
        (SqlType::Interval, Value::Interval(i)) => {
            let mut out = i.micros.to_be_bytes().to_vec();
            out.extend_from_slice(&i.days.to_be_bytes());
            out.extend_from_slice(&i.months.to_be_bytes());
            out
        }
        // A real holds an f32-exact value: the cast loses nothing.
        (SqlType::Real, Value::Float(f)) => (*f as f32).to_be_bytes().to_vec(),
        (SqlType::Double, Value::Float(f)) => f.to_be_bytes().to_vec(),
        (SqlType::Bytea, Value::Bytes(b)) => b.clone(),
        (
            SqlType::Numeric { .. } | SqlType::NumericUnconstrained,
            Value::Numeric { scaled, scale },
        ) => encode_numeric(*scaled, *scale),
        (SqlType::Oid, Value::Int(v)) => u32::try_from(*v)
            .map_err(|_| out_of_range())?
            .to_be_bytes()
            .to_vec(),
        (SqlType::Name, Value::Text(s)) => s.as_bytes().to_vec(),
        // PostgreSQL's "char" is one byte (its first; none for the empty string).
        (SqlType::InternalChar, Value::Text(s)) => s.as_bytes().iter().take(1).copied().collect(),
        _ => return Ok(None),
    }))
}

/// PostgreSQL's numeric_send: ndigits, weight, sign, dscale (each 16 bits), then the
/// base-10000 digits from the most significant, with leading and trailing zero digits
/// left out (the display scale keeps the value's scale).
fn encode_numeric(scaled: i128, scale: u8) -> Vec<u8> {
    let decimal = scaled.unsigned_abs().to_string();
    let scale = usize::from(scale);
    // At least one integer digit, so the split below is in range.
    let decimal = format!("{decimal:0>width$}", width = scale + 1);
    let (int_part, frac_part) = decimal.split_at(decimal.len() - scale);
    let int_pad = (4 - int_part.len() % 4) % 4;
    let frac_pad = (4 - frac_part.len() % 4) % 4;
    let aligned = format!(
        "{}{int_part}{frac_part}{}",
        "0".repeat(int_pad),
        "0".repeat(frac_pad)
    );
    let mut groups: Vec<i16> = aligned
        .as_bytes()
        .chunks(4)
        .map(|chunk| {
            chunk
                .iter()
                .fold(0i16, |acc, digit| acc * 10 + i16::from(digit - b'0'))
        })
        .collect();
    let mut weight = ((int_part.len() + int_pad) / 4) as i16 - 1;
    let leading = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..leading);
    weight -= leading as i16;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    let sign = if scaled < 0 { NUMERIC_NEG } else { NUMERIC_POS };
    let mut out = Vec::with_capacity(8 + 2 * groups.len());
    out.extend_from_slice(&(groups.len() as i16).to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&(scale as u16).to_be_bytes());
    for group in groups {
        out.extend_from_slice(&group.to_be_bytes());
    }
    out
}

/// PostgreSQL's numeric_recv, into (scaled, scale): digits past the display scale are
/// truncated away, as numeric_recv does.
fn decode_numeric(bytes: &[u8]) -> SqlResult<(i128, u8)> {
    let bad = |what: &str| {
        SqlError::new(
            INVALID_BINARY_REPRESENTATION,
            format!("invalid external \"numeric\" value: {what}"),
        )
    };
    let word = |at: usize| -> SqlResult<u16> {
        bytes
            .get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| bad("too short"))
    };
    let ndigits = i16::from_be_bytes(word(0)?.to_be_bytes());
    let weight = i16::from_be_bytes(word(2)?.to_be_bytes());
    let sign = word(4)?;
    let dscale = word(6)?;
    let ndigits = usize::try_from(ndigits).map_err(|_| bad("a negative digit count"))?;
    if bytes.len() != 8 + 2 * ndigits {
        return Err(bad("its length does not match its digit count"));
    }
    let negative = match sign {
        NUMERIC_POS => false,
        NUMERIC_NEG => true,
        0xC000 | 0xD000 | 0xF000 => {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "numeric NaN and infinity are not supported",
            ));
        }
        _ => return Err(bad("an invalid sign")),
    };
    let scale = u8::try_from(dscale)
        .ok()
        .filter(|s| *s <= numeric::DIGITS_MAX)
        .ok_or_else(numeric::overflow)?;
    let mut digits = Vec::with_capacity(4 * ndigits);
    for index in 0..ndigits {
        let group = word(8 + 2 * index)?;
        if group > 9999 {
            return Err(bad("a digit out of range"));
        }
        digits.extend(format!("{group:04}").bytes().map(|b| b - b'0'));
    }
    // The last group's units sit at 10000^(weight - ndigits + 1).
    let mut exponent = 4 * (i64::from(weight) - ndigits as i64 + 1);
    // Truncate digits below 10^-scale (to_scaled would round them).
    let below = (-exponent - i64::from(scale)).max(0);
    let keep = digits
        .len()
        .saturating_sub(usize::try_from(below).unwrap_or(usize::MAX));
    if keep < digits.len() {
        exponent += (digits.len() - keep) as i64;
        digits.truncate(keep);
    }
    let first = digits.iter().take_while(|d| **d == 0).count();
    digits.drain(..first);
    let decimal = Decimal {
        negative,
        digits,
        exponent,
    };
    let scaled = decimal.to_scaled(scale).ok_or_else(numeric::overflow)?;
    Ok((scaled, scale))
}

#[cfg(test)]
mod tests;
